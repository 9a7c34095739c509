/*
 * The sweep: a grid of bench runs (workload shape x strategy x workers x
 * batch), repeated and interleaved (round robin over the cells per repeat),
 * each finished run appended at once to a JSON Lines file with fsync, so an
 * interrupted sweep loses at most the run in progress and --resume carries
 * on where it stopped. One private MPS daemon serves every mps and mps-split
 * run, so its start-up is paid once. In command mode the one shape is the
 * user's program, run by each bench run as `gpushare bench -- CMD` would.
 * With --metrics-listen one Prometheus server serves every run, each run's
 * series labelled with its cell and repeat. With --find-peak each cell is
 * one bench peak search (the rate is then not an axis of the grid: the
 * search picks its rates, starting at the one --rate). The configuration
 * and the grid live in sweep_config.c, the results file (its lock, appends
 * and --resume) in sweep_results.c, the record format in sweep_record.c;
 * reading the file back is report_load.c's job.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys.h"
#include "json.h"
#include "gpushare/bench.h"
#include "gpushare/files.h"
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"
#include "gpushare/mps.h"
#include "gpushare/report.h"
#include "gpushare/sweep.h"
#include "run_ctx.h"
#include "sweep_internal.h"

/* ---- the run ---- */

struct gpushare_sweep_hold {
	struct gpushare_run_ctx run;   /* zeroed until a sweep starts the daemon in it */
};

int gpushare_sweep_hold_new(struct gpushare_sweep_hold **h)
{
	*h = calloc(1, sizeof(**h));
	return *h ? GPUSHARE_OK : gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
}

int gpushare_sweep_hold_end(struct gpushare_sweep_hold *h, int rc)
{
	if (!h)
		return rc;
	gpushare_bench_preload_drop();
	rc = gpushare_run_ctx_close(&h->run, rc);
	free(h);
	return rc;
}

static double eta(const struct sweep_ctx *x)
{
	unsigned done = x->sum->runs_done;

	if (done == 0 || x->planned < done)
		return -1;
	return x->run_seconds_sum / done * (x->planned - done);
}

static void report_progress(struct sweep_ctx *x, bool done, bool ok, double ips,
			    const struct gpushare_bench_progress *bp, const struct gpushare_bench_peak *peak)
{
	struct gpushare_sweep_progress p;

	if (!x->s->progress || !x->cur)
		return;
	memset(&p, 0, sizeof(p));
	p.cell = x->cur;
	p.shape_label = x->s->shapes[x->cur->shape].label;
	p.repeat = x->cur_repeat;
	p.runs_done = x->sum->runs_done;
	p.runs_planned = x->planned;
	p.runs_skipped = x->sum->runs_skipped;
	p.elapsed_seconds = (double)(gpushare_now_ns() - x->t0_ns) / 1e9;
	p.eta_seconds = eta(x);
	p.run_done = done;
	p.run_ok = ok;
	p.items_per_second = ips;
	p.bench = bp;
	p.peak = peak;
	x->s->progress(x->s->progress_arg, &p);
}

static void bench_progress(void *arg, const struct gpushare_bench_progress *bp)
{
	report_progress(arg, false, false, 0, bp, NULL);
}

/* One daemon for the whole sweep, started as the mps strategy starts its
 * own; the runs of mps cells use it (--mps-pipe-dir). */
static int start_daemon(struct sweep_ctx *x, const char *visible)
{
	int rc;

	if (x->run->sx.mps.open) {   /* the hold's, started by an earlier sweep */
		snprintf(x->sum->mps_pipe_dir, sizeof(x->sum->mps_pipe_dir), "%s", x->run->sx.mps.m.pipe_dir);
		return GPUSHARE_OK;
	}

	gpushare_run_ctx_init(x->run, &(struct gpushare_run_opts){ .prefix = "sweep", .visible = visible, .keeper = true });
	rc = gpushare_run_ctx_open(x->run);
	if (rc)
		return rc;
	rc = gpushare_run_ctx_start(x->run, GPUSHARE_STRATEGY_MPS);
	if (rc) {
		struct gpushare_errsave e;

		/* The run directory goes when the sweep ends: say so, so the
		 * paths in the message are not looked for. */
		gpushare_error_save(&e);
		return gpushare_fail(rc, "the sweep's MPS daemon: %s (its run directory '%s' is removed)", e.detail,
				     x->run->dir);
	}
	x->sum->mps_daemon_started = x->run->sx.mps.started;
	snprintf(x->sum->mps_pipe_dir, sizeof(x->sum->mps_pipe_dir), "%s", x->run->sx.mps.m.pipe_dir);
	return GPUSHARE_OK;
}

/* GPU facts once per sweep: the CUDA driver version for the records and the
 * UUID the daemon is pinned to (as bench pins its own daemon). NVML stays
 * open for the whole sweep so the runs do not load it again. */
static void query_gpu(struct sweep_ctx *x, char *visible, size_t len)
{
	struct gpushare_system_info sys;
	unsigned idx;

	snprintf(visible, len, "%s", x->s->bench.gpu);
	x->cuda_version = -1;
	if (gpushare_nvml_open() != GPUSHARE_OK) {
		gpushare_clear_error();
		return;
	}
	x->nvml = true;
	memset(&sys, 0, sizeof(sys));
	if (gpushare_system_query_nvml(&sys) == GPUSHARE_OK) {
		if (sys.cuda_driver_version > 0)
			x->cuda_version = sys.cuda_driver_version;
		if (gpushare_gpu_find(x->s->bench.gpu, &idx) == GPUSHARE_OK) {
			for (size_t i = 0; i < sys.n_gpus; i++) {
				if (sys.gpus[i].index == idx && sys.gpus[i].uuid[0])
					snprintf(visible, len, "%s", sys.gpus[i].uuid);
			}
		}
		gpushare_system_release(&sys);
	}
	gpushare_clear_error();
}

/* Errors of a run that concern that run only: recorded, and the sweep goes on. */
static bool run_error_recordable(int rc)
{
	return rc == GPUSHARE_E_WORKER || rc == GPUSHARE_E_MPS_MAX_CLIENTS || rc == GPUSHARE_E_TIMEOUT ||
	       rc == GPUSHARE_E_CUDA;
}

/* One server for the whole sweep: a view listing every strategy of the grid. */
static int start_metrics(struct sweep_ctx *x)
{
	const struct gpushare_sweep_config *s = x->s;
	int rc;

	if (s->bench.metrics) {
		x->metrics = s->bench.metrics;
		return GPUSHARE_OK;
	}
	if (!s->bench.metrics_listen[0])
		return GPUSHARE_OK;
	*x->c = s->bench;
	memcpy(x->c->strategies, s->strategies, s->n_strategies * sizeof(x->c->strategies[0]));
	x->c->n_strategies = s->n_strategies;
	x->c->ceiling = false;
	rc = gpushare_metrics_bench_start(x->c, &x->metrics);
	x->metrics_owned = rc == GPUSHARE_OK;
	return rc;
}

/* Label the series of the next run with its cell and repeat, so the series
 * of every run of the sweep stay apart (and keep their final values). */
static int label_metrics(struct sweep_ctx *x, const struct gpushare_sweep_cell *cell, int repeat)
{
	char workers[16], batch[24], rep[16], label[GPUSHARE_BENCH_MAX_MIX * GPUSHARE_BENCH_MIX_LABEL];
	struct gpushare_metrics_label l[] = {
		{ "shape", x->s->shapes[cell->shape].label }, { "workers", workers }, { "batch", batch },
		{ "repeat", rep },
	};

	if (!x->metrics)
		return GPUSHARE_OK;
	snprintf(workers, sizeof(workers), "%d", cell->workers);
	snprintf(batch, sizeof(batch), "%ld", cell->batch);
	snprintf(rep, sizeof(rep), "%d", repeat);
	return gpushare_metrics_bench_set_run(x->metrics, gpushare_bench_workload_label(x->c, label, sizeof(label)), l,
					      sizeof(l) / sizeof(l[0]));
}

/* Whether a worker failed in a step of the peak search. */
static bool peak_cut(const struct gpushare_bench_peak *pk)
{
	for (int i = 0; pk->searched && i < pk->n_steps; i++) {
		if (pk->steps[i].failed_run)
			return true;
	}
	return false;
}

/* GPUSHARE_TEST_INTERRUPT_AT=POINT:N, for the tests of interruption: a
 * SIGINT to this process at POINT of this invocation's Nth run, so that a
 * test provokes each moment of a run's end at will. POINT "run-end": the
 * bench run has returned, nothing is decided; "recorded": its record is
 * appended, the sweep has not counted it. */
static void test_interrupt(const struct sweep_ctx *x, const char *point)
{
	const char *at = gpushare_getenv_process(NULL, "GPUSHARE_TEST_INTERRUPT_AT");
	size_t len = strlen(point);
	char *end;
	unsigned long n;

	if (!at || strncmp(at, point, len) || at[len] != ':')
		return;
	n = strtoul(at + len + 1, &end, 10);
	if (!*end && n == x->runs_started)
		kill(getpid(), SIGINT);
}

static int run_one(struct sweep_ctx *x, size_t k, int repeat)
{
	const struct gpushare_sweep_cell *cell = &x->cells[k];
	struct gpushare_bench_report r;
	uint64_t t0 = gpushare_now_ns();
	char error[512] = "", *line = NULL;
	bool ok;
	int rc, wrc;

	sweep_cell_config(x->s, cell, x->c);
	/* A peak search starts no step past the budget. */
	if (x->s->budget_seconds > 0)
		x->c->peak_deadline_ns = x->t0_ns + (uint64_t)(x->s->budget_seconds * 1e9);
	if (gpushare_strategy_uses_mps(cell->strategy) && x->run->sx.mps.open && !x->s->bench.mps_pipe_dir[0])
		snprintf(x->c->mps_pipe_dir, sizeof(x->c->mps_pipe_dir), "%s", x->run->sx.mps.m.pipe_dir);
	x->c->progress = bench_progress;
	x->c->progress_arg = x;
	x->c->metrics = x->metrics;
	rc = label_metrics(x, cell, repeat);
	if (rc)
		return rc;
	x->cur = cell;
	x->cur_repeat = repeat;
	report_progress(x, false, false, 0, NULL, NULL);
	x->runs_started++;
	rc = gpushare_bench_run(x->c, &r);
	test_interrupt(x, "run-end");
	gpushare_bench_report_settle(&r, rc);
	if (rc == GPUSHARE_E_INTERRUPTED || r.interrupted || gpushare_bench_interrupted()) {
		gpushare_bench_report_release(&r);
		return gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted");
	}
	if (rc && !run_error_recordable(rc)) {
		gpushare_bench_report_release(&r);
		return rc;
	}
	if (rc)
		snprintf(error, sizeof(error), "%s", gpushare_errdetail());
	/* A peak search that a worker failing mid-step cut short keeps its
	 * best passing step, but that peak is not a search's answer: the run
	 * is partial, as any run a worker failed in. */
	if (rc == GPUSHARE_OK && r.n_results == 1 && peak_cut(&r.results[0].peak))
		r.partial = true;
	ok = rc == GPUSHARE_OK && !r.partial && r.n_results == 1 && r.results[0].status == GPUSHARE_RESULT_OK;
	wrc = gpushare_sweep_record(cell, x->s->shapes[cell->shape].label, repeat, &r, rc, error, x->cuda_version,
				    &line);
	if (!wrc)
		wrc = sweep_append_line(x, line);
	if (!wrc)
		test_interrupt(x, "recorded");
	free(line);
	if (!wrc) {
		double ips = ok ? gpushare_bench_result_score(&r.results[0]) : NAN;   /* a mix: its score */

		x->sum->runs_done++;
		if (!ok)
			x->sum->runs_failed++;
		if ((rc == GPUSHARE_OK || x->s->select) && repeat < x->rounds)
			x->st[k].recorded[repeat] = true;
		if (ok && !r.results[0].peak.searched)
			wrc = sweep_add_sample(&x->st[k], repeat, ips);
		else if (ok && r.results[0].peak.found)
			wrc = sweep_add_sample(&x->st[k], repeat, r.results[0].peak.rate);   /* the sample of a search: its peak */
		x->run_seconds_sum += (double)(gpushare_now_ns() - t0) / 1e9;
		report_progress(x, true, ok, ips, NULL, ok && r.results[0].peak.searched ? &r.results[0].peak : NULL);
	}
	gpushare_bench_report_release(&r);
	return wrc;
}

static bool converged(const struct sweep_ctx *x, size_t k)
{
	struct gpushare_ci ci;

	gpushare_median_ci(x->st[k].tput, x->st[k].n_tput, 0.95, &ci);
	return ci.n >= 2 && ci.coverage >= 0.95 && gpushare_ci_rel_halfwidth(&ci) <= x->s->target_noise;
}

/* No time for cell k's next run within the budget: the mean length of the
 * runs so far, and never less than that run's plan. */
static bool budget_spent(struct sweep_ctx *x, size_t k)
{
	double spent = (double)(gpushare_now_ns() - x->t0_ns) / 1e9;
	double per_run = x->sum->runs_done ? x->run_seconds_sum / x->sum->runs_done : x->s->budget_run_seconds;
	struct gpushare_bench_plan plan;

	sweep_cell_config(x->s, &x->cells[k], x->c);
	if (gpushare_bench_plan(x->c, &plan) == GPUSHARE_OK && plan.total_seconds > per_run)
		per_run = plan.total_seconds;
	gpushare_clear_error();

	if (x->s->budget_seconds <= 0 || spent + per_run <= x->s->budget_seconds)
		return false;
	x->sum->budget_out = true;
	return true;
}

/* --halt: enough runs of this invocation failed; start no more. */
static bool halted(struct sweep_ctx *x)
{
	if (!x->s->halt || x->sum->runs_failed < x->s->halt)
		return false;
	x->sum->halted = true;
	return true;
}

/* Keeping workers between runs (bench.reuse_workers): the cells whose
 * workers share one environment (shape, strategy, thread percentage,
 * batch) run next to each other, the most workers first, so that each run
 * finds its workers parked by the one before (7, then 5 of those 7, ...)
 * and a fresh worker starts only when the environment changes; every other
 * round runs that order backwards, so the round's last environment is the
 * next round's first. Otherwise the grid's order. */
static int order_cmp(const void *pa, const void *pb, void *arg)
{
	const struct gpushare_sweep_cell *cells = arg;
	const struct gpushare_sweep_cell *a = &cells[*(const size_t *)pa], *b = &cells[*(const size_t *)pb];

	if (a->shape != b->shape)
		return a->shape < b->shape ? -1 : 1;
	if (a->strategy != b->strategy)
		return a->strategy < b->strategy ? -1 : 1;
	if (a->thread_pct != b->thread_pct)
		return a->thread_pct < b->thread_pct ? -1 : 1;
	if (a->batch != b->batch)
		return a->batch < b->batch ? -1 : 1;
	if (a->workers != b->workers)
		return a->workers > b->workers ? -1 : 1;
	return *(const size_t *)pa < *(const size_t *)pb ? -1 : 1;   /* the grid's order: stable */
}

static int run_order(struct sweep_ctx *x)
{
	x->order = malloc(x->n_cells * sizeof(*x->order));
	if (!x->order)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t k = 0; k < x->n_cells; k++)
		x->order[k] = k;
	if (x->s->bench.reuse_workers && x->s->bench.preload)
		qsort_r(x->order, x->n_cells, sizeof(*x->order), order_cmp, x->cells);
	return GPUSHARE_OK;
}

/* The cell that runs i-th in round r. */
static size_t cell_at(const struct sweep_ctx *x, int r, size_t i)
{
	bool back = x->s->bench.reuse_workers && x->s->bench.preload && r % 2;

	return x->order[back ? x->n_cells - 1 - i : i];
}

/* Racing: each round runs the active cells, then select() narrows them. */
static int race_loop(struct sweep_ctx *x)
{
	const struct gpushare_sweep_config *s = x->s;
	bool *active = malloc(x->n_cells * sizeof(*active));
	const double **samples = malloc(x->n_cells * sizeof(*samples));
	size_t *n_samples = malloc(x->n_cells * sizeof(*n_samples));
	int rc = GPUSHARE_OK;

	if (!active || !samples || !n_samples) {
		free(active);
		free(samples);
		free(n_samples);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (size_t k = 0; k < x->n_cells; k++) {
		active[k] = true;
		samples[k] = x->st[k].val;
		n_samples[k] = 0;
	}
	/* Round -1: the caller chooses the cells that run at all. */
	int first = s->select(s->select_arg, -1, x->cells, x->n_cells, samples, n_samples, active) ? x->rounds : 0;

	/* The sweep's MPS daemon, when a cell that still runs needs one. */
	for (size_t k = 0; first < x->rounds && x->want_daemon && !x->run->sx.mps.open && !rc && k < x->n_cells; k++) {
		bool open = false;

		for (int r = 0; r < x->rounds; r++)
			open |= !x->st[k].recorded[r];
		if (active[k] && open && gpushare_strategy_uses_mps(x->cells[k].strategy))
			rc = start_daemon(x, x->visible);
	}
	for (int r = first; r < x->rounds && !rc; r++) {
		bool stop = false;

		for (size_t i = 0; i < x->n_cells && !rc && !stop; i++) {
			size_t k = cell_at(x, r, i);

			if (!active[k] || x->st[k].recorded[r])
				continue;
			if (gpushare_bench_interrupted()) {
				rc = gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted");
				break;
			}
			if (budget_spent(x, k) || halted(x)) {
				stop = true;
				break;
			}
			if (r >= s->repeats)
				x->planned++;
			rc = run_one(x, k, r);
		}
		if (rc || stop)
			break;
		for (size_t k = 0; k < x->n_cells; k++)
			n_samples[k] = (size_t)r + 1;
		if (s->select(s->select_arg, r, x->cells, x->n_cells, samples, n_samples, active))
			break;
	}
	free(active);
	free(samples);
	free(n_samples);
	return rc;
}

static int sweep_loop(struct sweep_ctx *x)
{
	const struct gpushare_sweep_config *s = x->s;
	bool adaptive = s->target_noise > 0;
	int rc = GPUSHARE_OK;

	if (s->select)
		return race_loop(x);

	for (int r = 0; r < x->rounds && !rc; r++) {
		bool any_open = false;

		for (size_t i = 0; i < x->n_cells && !rc; i++) {
			size_t k = cell_at(x, r, i);

			if (x->st[k].recorded[r])
				continue;
			if (r >= s->repeats) {
				if (!adaptive || converged(x, k))
					continue;
				x->planned++;
			}
			any_open = true;
			if (gpushare_bench_interrupted())
				return gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted");
			if (halted(x))
				return GPUSHARE_OK;
			rc = run_one(x, k, r);
		}
		if (r + 1 >= s->repeats && !adaptive)
			break;
		if (r + 1 >= s->repeats && adaptive && !any_open) {
			bool all = true;

			for (size_t k = 0; k < x->n_cells && all; k++)
				all = converged(x, k);
			if (all)
				break;
		}
	}
	return rc;
}

int gpushare_sweep_run(const struct gpushare_sweep_config *s, const char *results_path,
		       struct gpushare_sweep_summary *sum)
{
	struct sweep_ctx x;
	bool need_mps = false;
	int rc;

	memset(sum, 0, sizeof(*sum));
	memset(&x, 0, sizeof(x));
	x.s = s;
	x.sum = sum;
	x.fd = -1;
	x.lock_fd = -1;
	x.path = results_path;
	x.t0_ns = gpushare_now_ns();
	x.run = s->hold ? &s->hold->run : &x.own_run;
	x.rounds = s->target_noise > 0 || s->select ? s->max_repeats : s->repeats;
	rc = gpushare_sweep_config_check(s);
	if (!rc)
		rc = gpushare_sweep_cells(s, &x.cells, &x.n_cells);
	if (!rc) {
		x.st = calloc(x.n_cells, sizeof(*x.st));
		x.c = malloc(sizeof(*x.c));
		if (!x.st || !x.c)
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (size_t k = 0; k < x.n_cells && !rc; k++) {
		x.st[k].recorded = calloc((size_t)x.rounds, sizeof(bool));
		x.st[k].val = malloc((size_t)x.rounds * sizeof(double));
		if (!x.st[k].recorded || !x.st[k].val)
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		for (int r = 0; x.st[k].val && r < x.rounds; r++)
			x.st[k].val[r] = NAN;
	}
	if (!rc)
		rc = run_order(&x);
	if (!rc)
		rc = sweep_lock_results(&x);
	if (!rc)
		rc = sweep_load_existing(&x);
	if (!rc)
		rc = start_metrics(&x);  /* a taken port stops the sweep before the results file is touched */
	if (!rc)
		rc = sweep_open_results(&x);
	for (size_t k = 0; k < x.n_cells && !rc; k++) {
		for (int r = 0; r < (s->select ? x.rounds : s->repeats); r++) {
			if (x.st[k].recorded[r])
				sum->runs_skipped++;
			else if (r < s->repeats)
				x.planned++;
		}
		need_mps |= gpushare_strategy_uses_mps(x.cells[k].strategy);
	}
	if (!rc)
		query_gpu(&x, x.visible, sizeof(x.visible));
	/* A race knows which cells run only from its first choice (race_loop). */
	x.want_daemon = need_mps && !s->bench.mps_pipe_dir[0];
	if (!rc && x.want_daemon && x.planned > 0 && !s->select)
		rc = start_daemon(&x, x.visible);
	if (!rc)
		rc = sweep_loop(&x);

	/* Always: stop the daemon we started, keep the first error's detail. */
	{
		struct gpushare_errsave e;

		gpushare_error_save(&e);
		if (x.metrics_owned)
			gpushare_metrics_bench_stop(x.metrics);
		gpushare_error_restore(&e, rc);
		/* Parked workers hold contexts on the daemon: gone before it stops. */
		if (s->bench.reuse_workers && !s->hold)
			gpushare_bench_preload_drop();
		if (!s->hold)
			rc = gpushare_run_ctx_close(x.run, rc);
		if (x.nvml)
			gpushare_nvml_close();
		if (x.fd >= 0 && close(x.fd) != 0 && !rc)
			rc = gpushare_fail(GPUSHARE_E_IO, "cannot close '%s': %s", results_path, strerror(errno));
		gpushare_lock_release(x.lock_fd);
	}
	for (size_t k = 0; x.st && k < x.n_cells; k++) {
		free(x.st[k].recorded);
		free(x.st[k].val);
		free(x.st[k].tput);
	}
	free(x.st);
	free(x.order);
	free(x.c);
	free(x.cells);
	return rc;
}
