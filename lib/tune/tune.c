/*
 * gpushare tune (include/gpushare/tune.h): successive halving over the
 * cells of a sweep. The sweep engine runs and records both phases: the
 * probe round (one short run per cell, into probes.jsonl) and the full
 * rounds (the survivors only, into the results file). After the probes,
 * tune_screen_probes() drops the cells clearly behind (below probe_cut of
 * the best probe) and keeps the best keep_fraction; after each full round,
 * tune_full_select() drops those significantly behind the leader by the
 * comparison of gpushare/stats.h and keeps the better half, so repeats go
 * only where the answer is open (both in tune_race.c). This file runs the
 * rounds and reads their records; tune_commands.c writes the pick's
 * commands.
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
#include "tune_internal.h"

/* The shortest probe window: below it the start of a run's window (the
 * stop reaching every worker) weighs on the rate measured. */
#define PROBE_MIN_NS 100000000ull

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

/* Tune's progress: a probe's run is handed on with repeat -1. */
static void progress(void *arg, const struct gpushare_sweep_progress *p)
{
	struct tune_ctx *x = arg;
	struct gpushare_sweep_progress q = *p;

	if (x->probing)
		q.repeat = -1;
	x->t->sweep.progress(x->t->sweep.progress_arg, &q);
}

void tune_probes_from_report(const struct gpushare_report *rep, struct gpushare_tune_result *res)
{
	for (int pass = 0; pass < 2; pass++) {
		struct gpushare_report_cursor cur;
		const struct gpushare_report_run *run;

		if (gpushare_report_cursor_open(rep, &cur) != GPUSHARE_OK)
			return;
		while ((run = gpushare_report_cursor_next(&cur))) {
			bool ok = run->status == GPUSHARE_RUN_OK;
			double v;

			if (run->repeat != 0 || (pass == 0 && !ok))
				continue;
			v = !ok ? 0 : !run->find_peak ? run->items_per_second : run->peak_found ? run->peak_rate : 0;
			if (!(isfinite(v) && v > 0))
				v = 0;   /* an ok run without a figure measured nothing */
			for (size_t k = 0; k < res->n_cands; k++) {
				struct gpushare_tune_candidate *c = &res->cands[k];

				if (!run->key || strcmp(run->key, c->cell.key) || !isnan(c->probe))
					continue;
				c->probe = v;
			}
		}
		gpushare_report_cursor_close(&cur);
	}
}

/* The probes recorded in probe_path (this invocation's and a resumed
 * one's): tune_probes_from_report(). */
static int read_probes(const char *probe_path, struct gpushare_tune_result *res)
{
	struct gpushare_report rep;
	int rc = gpushare_report_load(probe_path, &rep);

	if (!rc)
		tune_probes_from_report(&rep, res);
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
	/* Before the first probe: one probe must fit in the whole budget. */
	rc = gpushare_sweep_budget_check(p);
	if (rc) {
		free(p);
		return rc;
	}
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
	struct gpushare_sweep_config *p = round_sweep(x, tune_full_select);
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
	t->sweep.resume_same_grid = true;   /* the race reads every record of its files */
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
	/* Workers kept warm (--preload): the probes' carry over to the full
	 * rounds, on one MPS daemon. */
	if (t->sweep.bench.reuse_workers && gpushare_sweep_hold_new(&t->sweep.hold))
		return GPUSHARE_E_NOMEM;
	rc = probe_round(&x, probe_path);
	if (!rc && !tune_screen_probes(&x))
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	if (!rc && !res->probe_sum.budget_out && tune_n_active(res))
		rc = full_rounds(&x, results_path);
	if (!rc)
		rc = x.rc;
	rc = gpushare_sweep_hold_end(t->sweep.hold, rc);
	t->sweep.hold = NULL;
	tune_pick(res);
	tune_commands(t, results_path, res);
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
	       gpushare_json_num(o, "t_hi", c->t_hi) && gpushare_json_num(o, "p_value", c->p_value) &&
	       gpushare_json_bool(o, "underpowered", c->underpowered) &&
	       gpushare_json_num_if(o, "runs_needed", (double)c->runs_needed, c->underpowered && c->runs_needed) &&
	       gpushare_json_num_if(o, "settle_diff", c->settle_diff, c->underpowered && isfinite(c->settle_diff));
}

/* A tie's candidates (the pick first) and words: tie_between and
 * unsettled, null when the pick is no tie; false when out of memory. */
static bool json_tie(cJSON *doc, const struct gpushare_tune_result *res)
{
	char words[256];
	cJSON *a;
	bool ok;

	if (!res->tie)
		return gpushare_json_null(doc, "tie_between") && gpushare_json_null(doc, "unsettled");
	ok = (a = gpushare_json_arr(doc, "tie_between")) != NULL &&
	     gpushare_json_str(a, NULL, res->cands[res->best].cell.key);
	for (size_t i = 0; ok && i < res->n_tied; i++)
		if (res->cands[res->tied[i]].vs_best.underpowered)
			ok = gpushare_json_str(a, NULL, res->cands[res->tied[i]].cell.key);
	gpushare_tune_tie_text(res, words, sizeof(words));
	return ok && gpushare_json_str(doc, "unsettled", words);
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
	     gpushare_json_bool(doc, "tie", res->tie) && json_tie(doc, res) &&
	     gpushare_json_str_or_null(doc, "bench_command", res->bench_command) &&
	     gpushare_json_str_or_null(doc, "farm_command", res->farm_command) &&
	     gpushare_json_str_or_null(doc, "plan_command", res->plan_command) &&
	     gpushare_json_str_or_null(doc, "exec_command", res->exec_command) &&
	     (a = gpushare_json_arr(doc, "candidates")) != NULL;
	for (size_t k = 0; ok && k < res->n_cands; k++) {
		const struct gpushare_tune_candidate *c = &res->cands[k];
		cJSON *o = gpushare_json_obj(a, NULL);
		bool share = gpushare_strategy_client_share(c->cell.strategy);
		char split[32];

		ok = o && gpushare_json_str(o, "strategy", gpushare_strategy_name(c->cell.strategy)) &&
		     gpushare_json_int(o, "workers", c->cell.workers) && gpushare_json_int(o, "batch", c->cell.batch) &&
		     gpushare_json_num_if(o, "thread_percentage", gpushare_sweep_cell_thread_pct(&c->cell), share) &&
		     gpushare_json_str_or_null(o, "split", share && c->cell.n_mix >= 2
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
