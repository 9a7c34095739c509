/*
 * gpushare tune (include/gpushare/tune.h): successive halving over the
 * cells of a sweep. The sweep engine runs and records both phases: the
 * probe round (one short run per cell, into probes.jsonl) and the full
 * rounds (the survivors only, into the results file). After the probes,
 * probe_select() drops the cells clearly behind (below probe_cut of the
 * best probe) and keeps the best keep_fraction; after each full round,
 * full_select() drops those significantly behind the leader by the
 * comparison of gpushare/stats.h and keeps the better half, so repeats go
 * only where the answer is open.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "gpushare/tune.h"
#include "gpushare/util.h"

#include "json.h"

/* The shortest probe window: below it the start of a run's window (the
 * stop reaching every worker) weighs on the rate measured. */
#define PROBE_MIN_NS 100000000ull

struct tune_ctx {
	struct gpushare_tune_config *t;
	struct gpushare_tune_result *res;
	bool probing;                     /* the probe round's sweep runs */
	int rc;                           /* an error of a selection (out of memory) */
	uint64_t probe_window_ns;         /* a probe's window */
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
	/* mps-split's thread percentages: auto (docs/tune.md says why). */
	rc = gpushare_sweep_set_thread_pcts(&t->sweep, "auto");
	if (rc)
		return rc;
	t->min_runs = 2;
	t->probe_fraction = 0.125;
	t->probe_cut = 0.5;
	t->keep_fraction = 0.125;
	return GPUSHARE_OK;
}

const char *gpushare_tune_drop_name(enum gpushare_tune_drop why)
{
	switch (why) {
	case GPUSHARE_TUNE_DROP_NOTHING: return "nothing";
	case GPUSHARE_TUNE_DROP_PROBE_CUT: return "probe-cut";
	case GPUSHARE_TUNE_DROP_PROBE_RANK: return "probe-rank";
	case GPUSHARE_TUNE_DROP_CUT: return "cut";
	case GPUSHARE_TUNE_DROP_WELCH: return "welch";
	case GPUSHARE_TUNE_DROP_HALF: return "half";
	case GPUSHARE_TUNE_NOT_RUN: return "not-run";
	case GPUSHARE_TUNE_RACING: break;
	}
	return NULL;
}

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

static size_t n_active(const struct gpushare_tune_result *res)
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
 * dropped with reason why); returns false when out of memory. */
static bool keep_best(struct tune_ctx *x, const double *key, size_t keep, int round, enum gpushare_tune_drop why,
		      int lead, double lead_key)
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
		drop(x, v[i].k, round, why, lead, lead_key > 0 ? v[i].key / lead_key : NAN);
	free(v);
	return true;
}

/* The probe round: its sweep runs every cell once, then stops. */
static bool probe_select(void *arg, int round, const struct gpushare_sweep_cell *cells, size_t n_cells,
			 const double *const *samples, const size_t *n_samples, bool *active)
{
	(void)arg;
	(void)cells;
	(void)n_cells;
	(void)samples;
	(void)n_samples;
	(void)active;
	return round >= 0;
}

/* After the probes (all there are: the round may have been cut by the
 * budget): drop the candidates without one and those clearly behind; keep
 * the best keep_fraction. */
static bool screen_probes(struct tune_ctx *x)
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
	ok = lead < 0 || keep_best(x, key, keep, 0, GPUSHARE_TUNE_DROP_PROBE_RANK, lead, res->cands[lead].probe);
	free(key);
	event(x, 0, -1, lead, n_active(res));
	return ok;
}

/* The full rounds: round -1 keeps the survivors of the probes; after round
 * r (0-based) every survivor has had r + 1 full runs. */
static bool full_select(void *arg, int round, const struct gpushare_sweep_cell *cells, size_t n_cells,
			const double *const *samples, const size_t *n_samples, bool *active)
{
	struct tune_ctx *x = arg;
	struct gpushare_tune_result *res = x->res;
	const struct gpushare_tune_config *t = x->t;
	double *key, *v;
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
	}
	/* Then the better half goes on; not below two before both have
	 * min_runs runs (the last comparison needs them). */
	act = n_active(res);
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
		if (lead >= 0 && keep < act && !keep_best(x, key, keep, r1, GPUSHARE_TUNE_DROP_HALF, lead, key[lead]))
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
/* Append " WORD" to buf (l used of len), single-quoted when the shell
 * would read it otherwise. */
static size_t shell_word(char *buf, size_t l, size_t len, const char *w)
{
	if (l >= len)
		return l;
	if (*w && !strpbrk(w, " \t\n'\"\\$`*?[]{}()<>|&;#~!"))
		return l + (size_t)snprintf(buf + l, len - l, " %s", w);
	l += (size_t)snprintf(buf + l, len - l, " '");
	for (const char *p = w; *p && l < len; p++)
		l += (size_t)snprintf(buf + l, len - l, *p == '\'' ? "'\\''" : "%c", *p);
	return l < len ? l + (size_t)snprintf(buf + l, len - l, "'") : l;
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
		if (t->sweep.bench.command_mode == GPUSHARE_CMD_JOB && t->sweep.bench.requests)
			l += (size_t)snprintf(buf + l, l < len ? len - l : 0, " --jobs %llu",
					      (unsigned long long)t->sweep.bench.requests);
		if (t->sweep.bench.preload)
			l += (size_t)snprintf(buf + l, l < len ? len - l : 0, " --preload");
		l += (size_t)snprintf(buf + l, l < len ? len - l : 0, " --");
		for (char **a = t->sweep.bench.command; *a && l < len; a++)
			l = shell_word(buf, l, len, *a);
		return;
	}
	if (sh->n_mix >= 2) {
		/* A mix: its spec as it was given (bench takes the same). */
		snprintf(buf, len, " --workload %s", sh->label);
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

/* The pick's plan: `gpushare plan DIR --for TARGET` on the tune's results
 * for the pick's shape (with its set percentage), batch and strategy;
 * "" where plan has nothing to configure (see gpushare/tune.h). */
static void plan_command(const struct gpushare_tune_config *t, const struct gpushare_sweep_cell *c,
			 const char *results_path, struct gpushare_tune_result *res)
{
	char dir[GPUSHARE_PATH_MAX], shape[160], *slash;
	size_t l;
	int s = c->strategy;

	if (res->probes_only || t->sweep.bench.find_peak || t->sweep.bench.load == GPUSHARE_LOAD_OPEN ||
	    c->n_mix >= 2 || c->workers < 2 ||
	    (s != GPUSHARE_STRATEGY_TIMESLICE && s != GPUSHARE_STRATEGY_MPS && s != GPUSHARE_STRATEGY_MPS_SPLIT))
		return;
	snprintf(dir, sizeof(dir), "%s", results_path);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	gpushare_report_shape_label(t->sweep.shapes[0].label, s == GPUSHARE_STRATEGY_MPS_SPLIT ? c->thread_pct : 0, shape,
				    sizeof(shape));
	l = (size_t)snprintf(res->plan_command, sizeof(res->plan_command), "gpushare plan");
	l = shell_word(res->plan_command, l, sizeof(res->plan_command), dir);
	l += (size_t)snprintf(res->plan_command + l, l < sizeof(res->plan_command) ? sizeof(res->plan_command) - l : 0,
			      " --for TARGET --shape");
	l = shell_word(res->plan_command, l, sizeof(res->plan_command), shape);
	if (l < sizeof(res->plan_command))
		snprintf(res->plan_command + l, sizeof(res->plan_command) - l, " --batch %ld --strategy %s", c->batch,
			 gpushare_strategy_name(s));
}

/* A command's pick as MPI or srun ranks: `gpushare exec` with the pick's
 * strategy, ranks per GPU and percentage; its batch, as bench gives it,
 * in GPUSHARE_BATCH (exec sets none: Open MPI's -x exports it). */
static void exec_command(const struct gpushare_tune_config *t, const struct gpushare_sweep_cell *c,
			 struct gpushare_tune_result *res)
{
	char pct[32], tp[64] = "", batch[48] = "";
	size_t l;
	int s = c->strategy;

	if (!t->sweep.shapes[0].command || !t->sweep.bench.command || t->sweep.bench.command_mode != GPUSHARE_CMD_REQUEST ||
	    (s != GPUSHARE_STRATEGY_TIMESLICE && s != GPUSHARE_STRATEGY_MPS && s != GPUSHARE_STRATEGY_MPS_SPLIT))
		return;
	if (s == GPUSHARE_STRATEGY_MPS_SPLIT)
		snprintf(tp, sizeof(tp), " --thread-percentage %s", gpushare_sweep_cell_thread_pct_text(c, pct, sizeof(pct)));
	if (c->batch != 1)
		snprintf(batch, sizeof(batch), " -x GPUSHARE_BATCH=%ld", c->batch);
	l = (size_t)snprintf(res->exec_command, sizeof(res->exec_command),
			     "mpirun -np %d%s gpushare exec --strategy %s --ranks-per-gpu %d%s --", c->workers, batch,
			     gpushare_strategy_name(s), c->workers, tp);
	for (char **a = t->sweep.bench.command; *a && l < sizeof(res->exec_command); a++)
		l = shell_word(res->exec_command, l, sizeof(res->exec_command), *a);
}

static void commands(const struct gpushare_tune_config *t, const char *results_path, struct gpushare_tune_result *res)
{
	const struct gpushare_sweep_cell *c;
	char wl[1024], tp[64] = "", pct[32];
	int s;

	if (res->best < 0)
		return;
	c = &res->cands[res->best].cell;
	s = c->strategy;
	workload_args(t, wl, sizeof(wl));
	/* mps-split: the picked percentage, also when it is the default. */
	if (s == GPUSHARE_STRATEGY_MPS_SPLIT)
		snprintf(tp, sizeof(tp), " --thread-percentage %s",
			 gpushare_sweep_cell_thread_pct_text(c, pct, sizeof(pct)));
	snprintf(res->bench_command, sizeof(res->bench_command),
		 "gpushare bench --strategy %s --workers %d --batch %ld%s%s%s", gpushare_strategy_name(s), c->workers,
		 c->batch, tp, t->sweep.shapes[0].command ? t->bench_extra : wl,
		 t->sweep.shapes[0].command ? wl : t->bench_extra);
	/* farm's mps-split gives each of its slots the default share: no farm
	 * command for a pick at another percentage. */
	if ((s == GPUSHARE_STRATEGY_MPS || (s == GPUSHARE_STRATEGY_MPS_SPLIT && c->thread_pct <= 0) ||
	     s == GPUSHARE_STRATEGY_TIMESLICE))
		snprintf(res->farm_command, sizeof(res->farm_command),
			 "gpushare farm --dir FARMDIR --slots %d --strategy %s JOBFILE", c->workers, gpushare_strategy_name(s));
	plan_command(t, c, results_path, res);
	exec_command(t, c, res);
}

/* Tune's progress: a probe's run is handed on with repeat -1. */
static void progress(void *arg, const struct gpushare_sweep_progress *p)
{
	struct tune_ctx *x = arg;
	struct gpushare_sweep_progress q = *p;

	if (x->probing)
		q.repeat = -1;
	x->t->sweep.progress(x->t->sweep.progress_arg, &q);
}

/* The probes recorded in probe_path (this invocation's and a resumed
 * one's): each candidate's ok run; 0 when its runs there all failed (or
 * found no rate within the bound); NAN when it has none. */
static int read_probes(const char *probe_path, struct gpushare_tune_result *res)
{
	struct gpushare_report rep;
	int rc = gpushare_report_load(probe_path, &rep);

	for (int pass = 0; pass < 2 && !rc; pass++) {
		struct gpushare_report_cursor cur;
		const struct gpushare_report_run *run;

		rc = gpushare_report_cursor_open(&rep, &cur);
		while (!rc && (run = gpushare_report_cursor_next(&cur))) {
			bool ok = run->status == GPUSHARE_RUN_OK;

			if (run->repeat != 0 || (pass == 0 && !ok))
				continue;
			for (size_t k = 0; k < res->n_cands; k++) {
				struct gpushare_tune_candidate *c = &res->cands[k];

				if (strcmp(run->key, c->cell.key) || !isnan(c->probe))
					continue;
				if (!ok)
					c->probe = 0;
				else if (!run->find_peak)
					c->probe = run->items_per_second;
				else
					c->probe = run->peak_found ? run->peak_rate : 0;
			}
		}
		gpushare_report_cursor_close(&cur);
	}
	gpushare_report_release(&rep);
	return rc == GPUSHARE_E_NOT_FOUND ? GPUSHARE_OK : rc;
}

/* A round's sweep (freed by the caller): the tune's own, one repeat per
 * round, its cells chosen by select; NULL when out of memory (the error
 * set). */
static struct gpushare_sweep_config *round_sweep(struct tune_ctx *x, gpushare_sweep_select_fn select)
{
	struct gpushare_sweep_config *p = malloc(sizeof(*p));

	if (!p) {
		gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		return NULL;
	}
	*p = x->t->sweep;
	p->repeats = 1;
	p->select = select;
	p->select_arg = x;
	return p;
}

/* The probe round's sweep: every cell once, with probe_fraction of the
 * window. */
static int probe_round(struct tune_ctx *x, const char *probe_path)
{
	struct gpushare_tune_config *t = x->t;
	uint64_t t0 = gpushare_now_ns();
	struct gpushare_sweep_config *p = round_sweep(x, probe_select);
	int rc;

	if (!p)
		return GPUSHARE_E_NOMEM;
	p->max_repeats = 1;
	if (p->bench.requests) {
		p->bench.requests = (uint64_t)ceil((double)p->bench.requests * t->probe_fraction);
		if (p->bench.requests < 1)
			p->bench.requests = 1;
	} else {
		uint64_t ns = (uint64_t)((double)p->bench.duration_ns * t->probe_fraction);

		if (ns < PROBE_MIN_NS)
			ns = PROBE_MIN_NS;
		if (ns < p->bench.duration_ns)
			p->bench.duration_ns = ns;
	}
	x->probe_window_ns = p->bench.duration_ns;
	if (p->progress) {
		p->progress = progress;
		p->progress_arg = x;
	}
	x->probing = true;
	rc = gpushare_sweep_run(p, probe_path, &x->res->probe_sum);
	x->probing = false;
	free(p);
	x->res->probe_seconds = (double)(gpushare_now_ns() - t0) / 1e9;
	if (!rc || rc == GPUSHARE_E_INTERRUPTED) {
		int rrc = read_probes(probe_path, x->res);

		if (!rc)
			rc = rrc;
	}
	return rc;
}

/* The full rounds: the survivors, the whole window, into results_path,
 * within what is left of the budget. */
static int full_rounds(struct tune_ctx *x, const char *results_path)
{
	uint64_t t0 = gpushare_now_ns();
	struct gpushare_sweep_config *p = round_sweep(x, full_select);
	int rc;

	if (!p)
		return GPUSHARE_E_NOMEM;
	if (p->budget_seconds > 0) {
		p->budget_seconds -= x->res->probe_seconds;
		if (p->budget_seconds <= 0)
			p->budget_seconds = 1e-9;
	}
	/* Before its first full run, what a probe of this invocation took (its
	 * share of the round, the daemon's start included), with the rest of
	 * the window (or, counted in requests, as if in proportion). */
	if (x->res->probe_sum.runs_done) {
		double probe = x->res->probe_seconds / x->res->probe_sum.runs_done;

		p->budget_run_seconds = p->bench.requests ? probe / x->t->probe_fraction
					: probe + (double)(p->bench.duration_ns - x->probe_window_ns) / 1e9;
	}
	rc = gpushare_sweep_run(p, results_path, &x->res->sum);
	free(p);
	x->res->full_seconds = (double)(gpushare_now_ns() - t0) / 1e9;
	return rc;
}

/* The pick: the leader of the full runs; without any, the best probe
 * among those still racing. Then its comparison with every other. */
static void pick(struct gpushare_tune_result *res)
{
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
		    !gpushare_compare_clear(&c->vs_best, GPUSHARE_VERDICT_HIGHER))
			res->tied[res->n_tied++] = (int)k;
	}
}

int gpushare_tune_run(struct gpushare_tune_config *t, const char *results_path, struct gpushare_tune_result *res)
{
	struct tune_ctx x = { t, res, false, GPUSHARE_OK, 0 };
	struct gpushare_sweep_cell *cells = NULL;
	char probe_path[GPUSHARE_PATH_MAX + 64];
	const char *slash = strrchr(results_path, '/');
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
	if (!(t->probe_fraction > 0 && t->probe_fraction <= 1 && t->probe_cut >= 0 && t->probe_cut < 1 &&
	      t->keep_fraction > 0 && t->keep_fraction <= 1))
		return gpushare_fail(GPUSHARE_E_INVAL, "probe fraction, cut and keep fraction must lie in (0, 1]");
	if ((size_t)snprintf(probe_path, sizeof(probe_path), "%.*s%s", slash ? (int)(slash - results_path + 1) : 0,
			     results_path, GPUSHARE_TUNE_PROBES_FILE) >= sizeof(probe_path))
		return gpushare_fail(GPUSHARE_E_INVAL, "results path '%s' is too long", results_path);
	t->sweep.repeats = 1;
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
		res->cands[k].probe = NAN;
		res->cands[k].drop_ratio = NAN;
		res->cands[k].dropped_round = -1;
		res->cands[k].dropped_by = -1;
		res->cands[k].ci.median = res->cands[k].ci.log_mean = NAN;
	}
	free(cells);
	rc = probe_round(&x, probe_path);
	if (!rc && !screen_probes(&x))
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	if (!rc && !res->probe_sum.budget_out && n_active(res))
		rc = full_rounds(&x, results_path);
	if (!rc)
		rc = x.rc;
	pick(res);
	commands(t, results_path, res);
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
	const char *unit = t->sweep.bench.find_peak ? "peak_rate_per_second"
			   : t->sweep.shapes[0].n_mix >= 2 ? "score" : "items_per_second";
	bool ok = doc != NULL;

	*out = NULL;
	ok = ok && gpushare_json_str(doc, "shape", t->sweep.shapes[0].label) && gpushare_json_str(doc, "goal", unit) &&
	     gpushare_json_int(doc, "rounds", res->rounds) &&
	     gpushare_json_int(doc, "runs_done", res->probe_sum.runs_done + res->sum.runs_done) &&
	     gpushare_json_int(doc, "runs_skipped", res->probe_sum.runs_skipped + res->sum.runs_skipped) &&
	     gpushare_json_int(doc, "probes_done", res->probe_sum.runs_done) &&
	     gpushare_json_int(doc, "full_runs_done", res->sum.runs_done) &&
	     gpushare_json_num(doc, "probe_seconds", res->probe_seconds) &&
	     gpushare_json_num(doc, "full_seconds", res->full_seconds) &&
	     gpushare_json_num(doc, "probe_fraction", t->probe_fraction) &&
	     gpushare_json_num(doc, "probe_cut", t->probe_cut) &&
	     gpushare_json_num(doc, "keep_fraction", t->keep_fraction) &&
	     gpushare_json_int(doc, "kept_after_probes", (long long)res->keep) &&
	     gpushare_json_bool(doc, "budget_out", res->sum.budget_out || res->probe_sum.budget_out) &&
	     gpushare_json_bool(doc, "probes_only", res->probes_only) &&
	     gpushare_json_str(doc, "best", res->best >= 0 ? res->cands[res->best].cell.key : NULL) &&
	     gpushare_json_str_or_null(doc, "bench_command", res->bench_command) &&
	     gpushare_json_str_or_null(doc, "farm_command", res->farm_command) &&
	     gpushare_json_str_or_null(doc, "plan_command", res->plan_command) &&
	     gpushare_json_str_or_null(doc, "exec_command", res->exec_command) &&
	     (a = gpushare_json_arr(doc, "candidates")) != NULL;
	for (size_t k = 0; ok && k < res->n_cands; k++) {
		const struct gpushare_tune_candidate *c = &res->cands[k];
		cJSON *o = gpushare_json_obj(a, NULL);
		char split[32];

		ok = o && gpushare_json_str(o, "strategy", gpushare_strategy_name(c->cell.strategy)) &&
		     gpushare_json_int(o, "workers", c->cell.workers) && gpushare_json_int(o, "batch", c->cell.batch) &&
		     gpushare_json_num_if(o, "thread_percentage", gpushare_sweep_cell_thread_pct(&c->cell),
					  c->cell.strategy == GPUSHARE_STRATEGY_MPS_SPLIT) &&
		     gpushare_json_str_or_null(o, "split", c->cell.strategy == GPUSHARE_STRATEGY_MPS_SPLIT &&
								   c->cell.n_mix >= 2
							   ? gpushare_sweep_cell_thread_pct_text(&c->cell, split, sizeof(split))
							   : "") &&
		     gpushare_json_num_if(o, "probe", c->probe, c->probe > 0) &&   /* failed or none: null, never 0 */
		     gpushare_json_num_if(o, "probe_rank", c->probe_rank, c->probe_rank > 0) &&
		     gpushare_json_int(o, "runs", (long long)c->runs) && gpushare_json_num(o, "median", c->ci.median) &&
		     gpushare_json_num(o, "geometric_mean", exp(c->ci.log_mean)) &&
		     gpushare_json_bool(o, "best", (int)k == res->best) && gpushare_json_bool(o, "racing", c->active) &&
		     gpushare_json_bool(o, "nothing_measured", c->why == GPUSHARE_TUNE_DROP_NOTHING) &&
		     gpushare_json_str(o, "dropped_why", gpushare_tune_drop_name(c->why)) &&
		     gpushare_json_num_if(o, "drop_ratio", c->drop_ratio, isfinite(c->drop_ratio)) &&
		     gpushare_json_num_if(o, "dropped_after_round", c->dropped_round, c->dropped_round >= 0) &&
		     gpushare_json_str(o, "dropped_by", c->dropped_by >= 0 ? res->cands[c->dropped_by].cell.key : NULL) &&
		     json_cmp(o, "at_drop", &c->at_drop, c->why == GPUSHARE_TUNE_DROP_WELCH) &&
		     json_cmp(o, "best_vs_this", &c->vs_best,
			      (int)k != res->best && c->runs && c->why != GPUSHARE_TUNE_DROP_NOTHING && res->best >= 0 &&
				      !res->probes_only);
	}
	*out = gpushare_json_finish(doc, ok, false);
	return *out ? GPUSHARE_OK : gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
}
