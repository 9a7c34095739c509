/*
 * gpushare tune (include/gpushare/tune.h): a race over the cells of a sweep.
 * The sweep engine runs and records the cells round by round; after each
 * round select() drops the candidates clearly behind the leader by the
 * comparison of gpushare/stats.h, so repeats go only where the answer is
 * open.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpushare/gpushare.h"
#include "gpushare/tune.h"

#include "json.h"

struct tune_ctx {
	struct gpushare_tune_config *t;
	struct gpushare_tune_result *res;
};

int gpushare_tune_config_init(struct gpushare_tune_config *t)
{
	int rc;

	memset(t, 0, sizeof(*t));
	rc = gpushare_sweep_config_init(&t->sweep);
	if (rc)
		return rc;
	t->sweep.strategies[0] = GPUSHARE_STRATEGY_TIMESLICE;
	t->sweep.strategies[1] = GPUSHARE_STRATEGY_MPS;
	t->sweep.strategies[2] = GPUSHARE_STRATEGY_MPS_SPLIT;
	t->sweep.n_strategies = 3;
	t->sweep.max_repeats = 6;
	t->min_runs = 2;
	return GPUSHARE_OK;
}

/* The geometric mean where there are logs, else the median: the order of
 * the race. */
static double centre(const struct gpushare_ci *ci)
{
	return isfinite(ci->log_mean) ? exp(ci->log_mean) : ci->median;
}

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

static void event(struct tune_ctx *x, int round, int cand, int lead, size_t active)
{
	struct gpushare_tune_event e = { round, cand, lead, active, x->res->cands };

	if (x->t->event)
		x->t->event(x->t->event_arg, &e);
}

static bool tune_select(void *arg, int round, const struct gpushare_sweep_cell *cells, size_t n_cells,
			const double *const *samples, const size_t *n_samples, bool *active)
{
	struct tune_ctx *x = arg;
	struct gpushare_tune_result *res = x->res;
	size_t n_active = 0;
	int lead;

	(void)cells;
	res->rounds = round + 1;
	for (size_t k = 0; k < n_cells && k < res->n_cands; k++) {
		gpushare_median_ci(samples[k], n_samples[k], 0.95, &res->cands[k].ci);
		res->cands[k].runs = n_samples[k];
	}
	if (round + 1 >= x->t->min_runs) {
		/* A candidate without a single ok run (or, searching peaks, without
		 * a rate that met the bound) after the first runs is out. */
		for (size_t k = 0; k < res->n_cands; k++) {
			struct gpushare_tune_candidate *c = &res->cands[k];
			bool any = false;

			for (size_t i = 0; i < n_samples[k]; i++)
				any |= samples[k][i] > 0;
			if (c->active && !any) {
				c->active = false;
				c->nothing = true;
				c->dropped_round = round;
				event(x, round, (int)k, -1, 0);
			}
		}
		lead = leader(res);
		for (size_t k = 0; lead >= 0 && k < res->n_cands; k++) {
			struct gpushare_tune_candidate *c = &res->cands[k];
			struct gpushare_comparison cmp;

			if (!c->active || (int)k == lead)
				continue;
			gpushare_compare(&c->ci, &res->cands[lead].ci, &cmp);
			if (cmp.verdict == GPUSHARE_VERDICT_LOWER && cmp.significant) {
				c->active = false;
				c->dropped_round = round;
				c->dropped_by = lead;
				c->at_drop = cmp;
				event(x, round, (int)k, lead, 0);
			}
		}
	}
	for (size_t k = 0; k < res->n_cands; k++) {
		active[k] = res->cands[k].active;
		n_active += active[k];
	}
	lead = leader(res);
	event(x, round, -1, lead, n_active);
	return n_active <= 1;
}

/* "spin:request-us=500" -> "--workload spin --request-us 500"; a command:
 * "-- ARGV..." (arguments with spaces or quotes single-quoted). */
static void workload_args(const struct gpushare_tune_config *t, char *buf, size_t len)
{
	const struct gpushare_sweep_shape *sh = &t->sweep.shapes[0];
	size_t l = 0;

	buf[0] = '\0';
	if (sh->command && t->sweep.bench.command) {
		if (t->sweep.bench.command_mode == GPUSHARE_CMD_JOB)
			l += (size_t)snprintf(buf + l, l < len ? len - l : 0, " --mode job");
		l += (size_t)snprintf(buf + l, l < len ? len - l : 0, " --");
		for (char **a = t->sweep.bench.command; *a && l < len; a++) {
			if (**a && !strpbrk(*a, " \t\n'\"\\$`*?[]{}()<>|&;#~!"))
				l += (size_t)snprintf(buf + l, len - l, " %s", *a);
			else {
				l += (size_t)snprintf(buf + l, l < len ? len - l : 0, " '");
				for (const char *p = *a; *p && l < len; p++)
					l += (size_t)snprintf(buf + l, len - l, *p == '\'' ? "'\\''" : "%c", *p);
				l += (size_t)snprintf(buf + l, l < len ? len - l : 0, "'");
			}
		}
		return;
	}
	{
		char label[sizeof(sh->label)], *save = NULL, *item;
		bool first = true;

		snprintf(label, sizeof(label), "%s", sh->label);
		for (item = strtok_r(label, ":", &save); item && l < len; item = strtok_r(NULL, ":", &save)) {
			char *eq = strchr(item, '=');

			if (first)
				l += (size_t)snprintf(buf + l, len - l, " --workload %s", item);
			else if (eq) {
				*eq = '\0';
				l += (size_t)snprintf(buf + l, len - l, " --%s %s", item, eq + 1);
			}
			first = false;
		}
	}
}

static void commands(const struct gpushare_tune_config *t, struct gpushare_tune_result *res)
{
	const struct gpushare_sweep_cell *c;
	char wl[1024];
	int s;

	if (res->best < 0)
		return;
	c = &res->cands[res->best].cell;
	s = c->strategy;
	workload_args(t, wl, sizeof(wl));
	snprintf(res->bench_command, sizeof(res->bench_command), "gpushare bench --strategy %s --workers %d --batch %ld%s%s",
		 gpushare_strategy_name(s), c->workers, c->batch, t->sweep.shapes[0].command ? t->bench_extra : wl,
		 t->sweep.shapes[0].command ? wl : t->bench_extra);
	if ((s == GPUSHARE_STRATEGY_MPS || s == GPUSHARE_STRATEGY_MPS_SPLIT || s == GPUSHARE_STRATEGY_TIMESLICE))
		snprintf(res->farm_command, sizeof(res->farm_command),
			 "gpushare farm --dir FARMDIR --slots %d --strategy %s JOBFILE", c->workers, gpushare_strategy_name(s));
}

int gpushare_tune_run(struct gpushare_tune_config *t, const char *results_path, struct gpushare_tune_result *res)
{
	struct tune_ctx x = { t, res };
	struct gpushare_sweep_cell *cells = NULL;
	size_t n = 0;
	int rc;

	memset(res, 0, sizeof(*res));
	res->best = -1;
	if (t->min_runs < 2)
		t->min_runs = 2;
	if (t->sweep.max_repeats < t->min_runs)
		return gpushare_fail(GPUSHARE_E_INVAL, "--max-repeats %d is below the %d runs every candidate gets",
				     t->sweep.max_repeats, t->min_runs);
	if (t->sweep.n_shapes != 1)
		return gpushare_fail(GPUSHARE_E_INVAL, "tune takes one workload shape, not %zu", t->sweep.n_shapes);
	t->sweep.repeats = t->min_runs;
	t->sweep.target_noise = 0;
	rc = gpushare_sweep_config_check(&t->sweep);
	if (!rc)
		rc = gpushare_sweep_cells(&t->sweep, &cells, &n);
	if (rc)
		return rc;
	if (n > GPUSHARE_TUNE_MAX_CANDIDATES) {
		free(cells);
		return gpushare_fail(GPUSHARE_E_INVAL, "%zu candidates; at most %d", n, GPUSHARE_TUNE_MAX_CANDIDATES);
	}
	res->cands = calloc(n, sizeof(*res->cands));
	if (!res->cands) {
		free(cells);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	res->n_cands = n;
	for (size_t k = 0; k < n; k++) {
		res->cands[k].cell = cells[k];
		res->cands[k].active = true;
		res->cands[k].dropped_round = -1;
		res->cands[k].dropped_by = -1;
		res->cands[k].ci.median = res->cands[k].ci.log_mean = NAN;
	}
	free(cells);
	t->sweep.select = tune_select;
	t->sweep.select_arg = &x;
	rc = gpushare_sweep_run(&t->sweep, results_path, &res->sum);
	t->sweep.select = NULL;

	res->best = leader(res);
	for (size_t k = 0; res->best >= 0 && k < n; k++) {
		struct gpushare_tune_candidate *c = &res->cands[k];

		if ((int)k == res->best || !c->runs || c->nothing)
			continue;
		gpushare_compare(&res->cands[res->best].ci, &c->ci, &c->vs_best);
		if (c->active && c->vs_best.verdict != GPUSHARE_VERDICT_HIGHER)
			res->tied[res->n_tied++] = (int)k;
	}
	commands(t, res);
	return rc;
}

void gpushare_tune_result_release(struct gpushare_tune_result *res)
{
	free(res->cands);
	res->cands = NULL;
	res->n_cands = 0;
}

/* A comparison's verdict and its t interval under k (null when not known);
 * false when out of memory. */
static bool json_cmp(cJSON *parent, const char *k, const struct gpushare_comparison *c, bool known)
{
	cJSON *o;

	if (!known)
		return gpushare_json_null(parent, k);
	return (o = gpushare_json_obj(parent, k)) != NULL && gpushare_json_num(o, "ratio", c->ratio) &&
	       gpushare_json_str(o, "verdict", gpushare_verdict_name(c->verdict)) &&
	       gpushare_json_str(o, "method", gpushare_method_name(c->method)) && gpushare_json_num(o, "t_lo", c->t_lo) &&
	       gpushare_json_num(o, "t_hi", c->t_hi) && gpushare_json_num(o, "p_value", c->p_value);
}

int gpushare_tune_json(const struct gpushare_tune_config *t, const struct gpushare_tune_result *res, char **out)
{
	cJSON *doc = cJSON_CreateObject(), *a = NULL;
	const char *unit = t->sweep.bench.find_peak ? "peak_rate_per_second" : "items_per_second";
	bool ok = doc != NULL;

	*out = NULL;
	ok = ok && gpushare_json_str(doc, "shape", t->sweep.shapes[0].label) && gpushare_json_str(doc, "goal", unit) &&
	     gpushare_json_int(doc, "rounds", res->rounds) && gpushare_json_int(doc, "runs_done", res->sum.runs_done) &&
	     gpushare_json_int(doc, "runs_skipped", res->sum.runs_skipped) &&
	     gpushare_json_bool(doc, "budget_out", res->sum.budget_out) &&
	     gpushare_json_str(doc, "best", res->best >= 0 ? res->cands[res->best].cell.key : NULL) &&
	     gpushare_json_str_or_null(doc, "bench_command", res->bench_command) &&
	     gpushare_json_str_or_null(doc, "farm_command", res->farm_command) &&
	     (a = gpushare_json_arr(doc, "candidates")) != NULL;
	for (size_t k = 0; ok && k < res->n_cands; k++) {
		const struct gpushare_tune_candidate *c = &res->cands[k];
		cJSON *o = gpushare_json_obj(a, NULL);

		ok = o && gpushare_json_str(o, "strategy", gpushare_strategy_name(c->cell.strategy)) &&
		     gpushare_json_int(o, "workers", c->cell.workers) && gpushare_json_int(o, "batch", c->cell.batch) &&
		     gpushare_json_int(o, "runs", (long long)c->runs) && gpushare_json_num(o, "median", c->ci.median) &&
		     gpushare_json_num(o, "geometric_mean", exp(c->ci.log_mean)) &&
		     gpushare_json_bool(o, "best", (int)k == res->best) && gpushare_json_bool(o, "racing", c->active) &&
		     gpushare_json_bool(o, "nothing_measured", c->nothing) &&
		     gpushare_json_num_if(o, "dropped_after_round", c->dropped_round + 1, c->dropped_round >= 0) &&
		     gpushare_json_str(o, "dropped_by", c->dropped_by >= 0 ? res->cands[c->dropped_by].cell.key : NULL) &&
		     json_cmp(o, "at_drop", &c->at_drop, c->dropped_by >= 0) &&
		     json_cmp(o, "best_vs_this", &c->vs_best, (int)k != res->best && c->runs && !c->nothing && res->best >= 0);
	}
	*out = gpushare_json_finish(doc, ok, false);
	return *out ? GPUSHARE_OK : gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
}
