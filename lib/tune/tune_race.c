/*
 * gpushare tune's race (tune_internal.h): who leads, who is dropped and
 * why, after the probes and after each full round, and the pick. Every
 * decision follows from the candidates' recorded figures alone, so a
 * resumed tune takes the same ones, and a test can take them without
 * running anything.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpushare/gpushare.h"
#include "gpushare/stats.h"
#include "tune_internal.h"

/* The geometric mean where there are logs, else the median: the order of
 * the race. */
static double centre(const struct gpushare_ci *ci)
{
	return isfinite(ci->log_mean) ? exp(ci->log_mean) : ci->median;
}

/* The active candidate with the highest centre of its full runs; -1. */
static int leader(const struct gpushare_tune_result *res)
{
	int best = -1;

	for (size_t k = 0; k < res->n_cands; k++) {
		const struct gpushare_tune_candidate *c = &res->cands[k];

		if (c->active && c->runs && c->ci.median > 0 && (best < 0 || centre(&c->ci) > centre(&res->cands[best].ci)))
			best = (int)k;
	}
	return best;
}

/* The candidate with the best probe; -1. */
static int probe_leader(const struct gpushare_tune_result *res)
{
	int best = -1;

	for (size_t k = 0; k < res->n_cands; k++) {
		if (res->cands[k].probe > 0 && (best < 0 || res->cands[k].probe > res->cands[best].probe))
			best = (int)k;
	}
	return best;
}

static void event(struct tune_ctx *x, int round, int cand, int lead, size_t active)
{
	struct gpushare_tune_event e = { round, cand, lead, active, x->res->cands };

	if (x->t->event)
		x->t->event(x->t->event_arg, &e);
}

static void drop(struct tune_ctx *x, int k, int round, enum gpushare_tune_drop why, int lead, double ratio)
{
	struct gpushare_tune_candidate *c = &x->res->cands[k];

	c->active = false;
	c->why = why;
	c->dropped_round = round;
	c->dropped_by = lead;
	c->drop_ratio = ratio;
	event(x, round, k, why == GPUSHARE_TUNE_DROP_NOTHING ? -1 : lead, 0);
}

size_t tune_n_active(const struct gpushare_tune_result *res)
{
	size_t n = 0;

	for (size_t k = 0; k < res->n_cands; k++)
		n += res->cands[k].active;
	return n;
}

/* Order for the cuts by rank: by key descending, ties by index. */
struct ranked {
	double key;
	int k;
};

static int by_key_desc(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return x->k - y->k;
}

/* Keep the best `keep` of the active candidates by key[] (the rest are
 * dropped with reason why, but for those spare[] holds: their comparison
 * with the leader is not settled yet); returns false when out of memory. */
static bool keep_best(struct tune_ctx *x, const double *key, size_t keep, int round, enum gpushare_tune_drop why,
		      int lead, double lead_key, const bool *spare)
{
	struct gpushare_tune_result *res = x->res;
	struct ranked *v = malloc(res->n_cands * sizeof(*v));
	size_t n = 0;

	if (!v)
		return false;
	for (size_t k = 0; k < res->n_cands; k++)
		if (res->cands[k].active)
			v[n++] = (struct ranked){ key[k], (int)k };
	qsort(v, n, sizeof(*v), by_key_desc);
	for (size_t i = keep; i < n; i++)
		if (!spare || !spare[v[i].k])
			drop(x, v[i].k, round, why, lead, lead_key > 0 ? v[i].key / lead_key : NAN);
	free(v);
	return true;
}

/* After the probes (all there are: the round may have been cut by the
 * budget): drop the candidates without one and those clearly behind; keep
 * the best keep_fraction. */
bool tune_screen_probes(struct tune_ctx *x)
{
	struct gpushare_tune_result *res = x->res;
	const struct gpushare_tune_config *t = x->t;
	double *key = malloc(res->n_cands * sizeof(*key));
	size_t keep = (size_t)ceil(t->keep_fraction * (double)res->n_cands - 1e-9);
	int lead = probe_leader(res);
	struct ranked *v;
	size_t n = 0;
	bool ok;

	if (!key)
		return false;
	v = malloc(res->n_cands * sizeof(*v));
	if (!v) {
		free(key);
		return false;
	}
	for (size_t k = 0; k < res->n_cands; k++) {
		key[k] = res->cands[k].probe > 0 ? res->cands[k].probe : 0;
		if (res->cands[k].probe > 0)
			v[n++] = (struct ranked){ key[k], (int)k };
	}
	qsort(v, n, sizeof(*v), by_key_desc);
	for (size_t i = 0; i < n; i++)
		res->cands[v[i].k].probe_rank = (int)i + 1;
	free(v);
	for (size_t k = 0; k < res->n_cands; k++) {
		struct gpushare_tune_candidate *c = &res->cands[k];

		if (!(c->probe > 0))   /* NAN: never run (the budget); 0: failed or nothing done */
			drop(x, (int)k, 0, isnan(c->probe) ? GPUSHARE_TUNE_NOT_RUN : GPUSHARE_TUNE_DROP_NOTHING, -1, NAN);
		else if ((int)k != lead && c->probe < t->probe_cut * res->cands[lead].probe)
			drop(x, (int)k, 0, GPUSHARE_TUNE_DROP_PROBE_CUT, lead, c->probe / res->cands[lead].probe);
	}
	if (keep < 2)
		keep = 2;
	res->keep = keep;
	ok = lead < 0 || keep_best(x, key, keep, 0, GPUSHARE_TUNE_DROP_PROBE_RANK, lead, res->cands[lead].probe, NULL);
	free(key);
	event(x, 0, -1, lead, tune_n_active(res));
	return ok;
}

/* The full rounds: round -1 keeps the survivors of the probes; after round
 * r (0-based) every survivor has had r + 1 full runs. */
bool tune_full_select(void *arg, int round, const struct gpushare_sweep_cell *cells, size_t n_cells,
		      const double *const *samples, const size_t *n_samples, bool *active)
{
	struct tune_ctx *x = arg;
	struct gpushare_tune_result *res = x->res;
	const struct gpushare_tune_config *t = x->t;
	double *key, *v;
	bool spare[GPUSHARE_TUNE_MAX_CANDIDATES] = { false };
	size_t act, short_of_runs = 0;
	int lead, r1 = round + 1;   /* full rounds done; the event's round number */

	(void)cells;
	if (round < 0)
		goto out;
	v = malloc((size_t)r1 * sizeof(*v));
	if (!v) {
		x->rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		return true;
	}
	/* The samples of the rounds up to this one, by round (a resumed tune
	 * has later ones recorded already): the same decisions again. */
	for (size_t k = 0; k < n_cells && k < res->n_cands; k++) {
		size_t n = 0;

		for (size_t i = 0; i < n_samples[k] && i < (size_t)r1; i++)
			if (isfinite(samples[k][i]))
				v[n++] = samples[k][i];
		gpushare_median_ci(v, n, 0.95, &res->cands[k].ci);
		res->cands[k].runs = n;
	}
	free(v);
	res->rounds = r1;
	/* A candidate whose full run found nothing is out. */
	for (size_t k = 0; k < res->n_cands; k++) {
		struct gpushare_tune_candidate *c = &res->cands[k];
		if (c->active && !(c->runs && c->ci.median > 0))
			drop(x, (int)k, r1, GPUSHARE_TUNE_DROP_NOTHING, -1, NAN);
	}
	lead = leader(res);
	for (size_t k = 0; lead >= 0 && k < res->n_cands; k++) {
		struct gpushare_tune_candidate *c = &res->cands[k];
		struct gpushare_comparison cmp;

		if (!c->active || (int)k == lead)
			continue;
		if (c->runs < 2 || res->cands[lead].runs < 2) {
			/* One run: the probe's rule. */
			if (centre(&c->ci) < t->probe_cut * centre(&res->cands[lead].ci))
				drop(x, (int)k, r1, GPUSHARE_TUNE_DROP_CUT, lead,
				     centre(&c->ci) / centre(&res->cands[lead].ci));
			continue;
		}
		gpushare_compare(&c->ci, &res->cands[lead].ci, &cmp);
		if (gpushare_compare_clear(&cmp, GPUSHARE_VERDICT_LOWER)) {
			c->at_drop = cmp;
			drop(x, (int)k, r1, GPUSHARE_TUNE_DROP_WELCH, lead, cmp.ratio);
		}
		/* The runs cannot tell it from the leader yet: it gets more
		 * rounds (the budget and max_repeats still end the race). */
		spare[k] = cmp.underpowered;
	}
	/* Then the better half goes on; not below two before both have
	 * min_runs runs (the last comparison needs them), and never without
	 * one the leader cannot be told from yet. */
	act = tune_n_active(res);
	key = malloc(res->n_cands * sizeof(*key));
	if (!key) {
		x->rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		return true;
	}
	for (size_t k = 0; k < res->n_cands; k++) {
		key[k] = res->cands[k].runs ? centre(&res->cands[k].ci) : 0;
		short_of_runs += res->cands[k].active && res->cands[k].runs < (size_t)t->min_runs;
	}
	{
		size_t keep = (act + 1) / 2;

		if (keep < 2 && short_of_runs)
			keep = 2;
		if (lead >= 0 && keep < act && !keep_best(x, key, keep, r1, GPUSHARE_TUNE_DROP_HALF, lead, key[lead], spare))
			x->rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	free(key);
out:
	act = 0;
	for (size_t k = 0; k < res->n_cands; k++) {
		active[k] = res->cands[k].active;
		act += active[k];
	}
	if (round >= 0)
		event(x, r1, -1, leader(res), act);
	return act <= 1 && (round >= 0 || act == 0);
}
/* The pick: the leader of the full runs; without any, the best probe
 * among those still racing. Then its comparison with every other: a tie
 * the runs cannot settle makes the pick a tie (res->tie, tie_with). */
void tune_pick(struct gpushare_tune_result *res)
{
	res->n_tied = res->n_unsettled = 0;
	res->tie = false;
	res->tie_with = -1;
	res->best = leader(res);
	if (res->best < 0) {
		for (size_t k = 0; k < res->n_cands; k++)
			if (res->cands[k].active && res->cands[k].probe > 0 &&
			    (res->best < 0 || res->cands[k].probe > res->cands[res->best].probe))
				res->best = (int)k;
		res->probes_only = res->best >= 0;
	}
	for (size_t k = 0; res->best >= 0 && !res->probes_only && k < res->n_cands; k++) {
		struct gpushare_tune_candidate *c = &res->cands[k];

		if ((int)k == res->best || !c->runs || c->why == GPUSHARE_TUNE_DROP_NOTHING)
			continue;
		gpushare_compare(&res->cands[res->best].ci, &c->ci, &c->vs_best);
		/* A tie: compared, and not a clear win. */
		if (c->active && c->vs_best.method != GPUSHARE_METHOD_NONE &&
		    !gpushare_compare_clear(&c->vs_best, GPUSHARE_VERDICT_HIGHER)) {
			res->tied[res->n_tied++] = (int)k;
			if (c->vs_best.underpowered) {
				res->n_unsettled++;
				if (res->tie_with < 0 ||
				    c->vs_best.runs_needed > res->cands[res->tie_with].vs_best.runs_needed)
					res->tie_with = (int)k;
			}
		}
	}
	res->tie = res->n_unsettled > 0;
}

bool gpushare_tune_tie_text(const struct gpushare_tune_result *res, char *buf, size_t len)
{
	const struct gpushare_comparison *c;

	if (len)
		buf[0] = '\0';
	if (!res->tie || res->tie_with < 0)
		return false;
	c = &res->cands[res->tie_with].vs_best;
	if (c->runs_needed > c->runs && isfinite(c->settle_diff))
		snprintf(buf, len,
			 "cannot tell them apart with %zu run%s; %zu more run%s a side would settle a difference of %.*f%%",
			 c->runs, c->runs == 1 ? "" : "s", c->runs_needed - c->runs, c->runs_needed - c->runs == 1 ? "" : "s",
			 c->settle_diff < 0.1 ? 1 : 0, 100 * c->settle_diff);
	else
		snprintf(buf, len, "cannot tell them apart with %zu run%s", c->runs, c->runs == 1 ? "" : "s");
	return true;
}
