/*
 * The benchmark engine: for each strategy (lib/strategy/) it checks what
 * the strategy needs before anything runs, lets it prepare (a private MPS
 * daemon), lays its workers out (one process each, one at a time, or
 * threads of one process) and runs them in sessions (bench_workers.c: the
 * start barrier, the window, the stop), or searches the peak rate
 * (--find-peak) in steps of such runs; then settles each strategy's
 * struct gpushare_bench_result.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "sys.h"
#include "bench_cmd.h"
#include "bench_preload.h"
#include "gpushare/buf.h"
#include "gpushare/child.h"
#include "gpushare/bench.h"
#include "gpushare/gpu.h"
#include "gpushare/format.h"
#include "gpushare/gpushare.h"
#include "gpushare/region.h"
#include "gpu_select.h"
#include "openloop.h"
#include "bench_run.h"
#include "strategy.h"
#include "run_ctx.h"

#define PEAK_RETRIES 4                 /* find-peak: steps run again when gpushare ran late */

/* ---- small helpers ---- */


/* The worker program: the configuration's, $GPUSHARE_WORKER, next to this
 * program (a build tree), or ../libexec/gpushare/ from it (an install). */
static int find_worker(const struct gpushare_bench_config *c, char *buf, size_t len)
{
	const char *env = getenv("GPUSHARE_WORKER");
	char self[GPUSHARE_PATH_MAX];
	ssize_t n;
	char *slash;

	if (c->worker_path[0]) {
		snprintf(buf, len, "%s", c->worker_path);
	} else if (env && *env) {
		snprintf(buf, len, "%s", env);
	} else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			return gpushare_fail(GPUSHARE_E_WORKER, "cannot find gpushare-worker: readlink /proc/self/exe: %s",
					     strerror(errno));
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
		if ((size_t)snprintf(buf, len, "%s/gpushare-worker", self) >= len)
			return gpushare_fail(GPUSHARE_E_WORKER, "path of gpushare-worker too long");
		if (access(buf, X_OK) != 0 &&
		    (size_t)snprintf(buf, len, "%s/../libexec/gpushare/gpushare-worker", self) >= len)
			return gpushare_fail(GPUSHARE_E_WORKER, "path of gpushare-worker too long");
	}
	if (access(buf, X_OK) != 0)
		return gpushare_fail(GPUSHARE_E_WORKER, "cannot execute worker '%s': %s (set GPUSHARE_WORKER)", buf,
				     strerror(errno));
	return GPUSHARE_OK;
}

/* ---- strategies ---- */

/* The GPU worker i is pinned to: with --gpus, GPU i mod G by UUID; else ""
 * (the run's GPU). */
static const char *worker_device(const struct bench_ctx *x, int i)
{
	return x->r->n_gpus ? x->r->gpu_uuids[(size_t)i % x->r->n_gpus] : "";
}

static void procs_release(struct proc_spec *procs, size_t n)
{
	for (size_t i = 0; procs && i < n; i++)
		gpushare_strv_release(&procs[i].env);
	free(procs);
}

static void note_placement(struct gpushare_bench_worker *w, const struct gpushare_placement *p)
{
	snprintf(w->visible_devices, sizeof(w->visible_devices), "%s", p->visible);
	if (p->thread_percentage > 0)
		w->thread_percentage_set = p->thread_percentage;
	if (p->mem_limit_bytes)
		w->mem_limit_set_bytes = p->mem_limit_bytes;
	if (p->priority >= 0)
		w->priority_set = p->priority;
}

/* Run one strategy: its workers laid out as the table says. */
static int run_strategy(struct bench_ctx *x, const struct gpushare_strategy_ops *st, struct gpushare_bench_result *res,
			long batch)
{
	struct gpushare_placement pl;
	struct proc_spec *procs = NULL;
	int n = (int)res->n_workers, rc;
	size_t n_procs;

	x->run.sx.workers = n;
	rc = gpushare_run_ctx_start(&x->run, st->id);
	if (rc)
		return rc;
	if (st->uses_mps) {
		res->mps_daemon_started = x->run.sx.mps.started;
		snprintf(res->mps_pipe_dir, sizeof(res->mps_pipe_dir), "%s", x->run.sx.mps.m.pipe_dir);
	}
	n_procs = st->layout == GPUSHARE_LAYOUT_CONCURRENT ? (size_t)n : 1;
	procs = calloc(n_procs, sizeof(*procs));
	if (!procs)
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate worker specs");
	switch (rc ? -1 : (int)st->layout) {
	case GPUSHARE_LAYOUT_CONCURRENT:
		for (int i = 0; i < n && rc == GPUSHARE_OK; i++) {
			procs[i].first_slot = i;
			procs[i].batch = batch;
			rc = gpushare_run_ctx_env(&x->run, i, worker_device(x, i), &procs[i].env, &pl);
			note_placement(&res->workers[i], &pl);
		}
		if (rc == GPUSHARE_OK)
			rc = bench_session_run(x, st->id, 0, 1, procs, (size_t)n, (uint32_t)n, res, 0);
		break;
	case GPUSHARE_LAYOUT_ONE_AT_A_TIME:
		for (int i = 0; i < n && rc == GPUSHARE_OK && !res->partial; i++) {
			gpushare_strv_release(&procs[0].env);
			memset(&procs[0], 0, sizeof(procs[0]));
			procs[0].batch = batch;
			rc = gpushare_run_ctx_env(&x->run, i, worker_device(x, i), &procs[0].env, &pl);
			note_placement(&res->workers[i], &pl);
			if (rc == GPUSHARE_OK)
				rc = bench_session_run(x, st->id, i, n, procs, 1, 1, res, (size_t)i);
		}
		break;
	case GPUSHARE_LAYOUT_THREADS:
		procs[0].threads = n;
		procs[0].batch = batch;
		rc = gpushare_run_ctx_env(&x->run, 0, "", &procs[0].env, &pl);
		for (int i = 0; i < n; i++)
			note_placement(&res->workers[i], &pl);
		if (rc == GPUSHARE_OK)
			rc = bench_session_run(x, st->id, 0, 1, procs, 1, (uint32_t)n, res, 0);
		break;
	default:
		break;
	}
	procs_release(procs, n_procs);
	return gpushare_run_ctx_stop(&x->run, rc);
}

/* --find-peak: run the strategy at the rates the search asks for, each step
 * a full run of its own, and keep the best passing step as the result. A
 * step passes when it ran without a failed worker and its quantile, with
 * the requests left unserved counted as longer than any, is within the
 * bound. Each step's window offers at least min_requests arrivals on
 * average (lib/bench/openloop.c: gpushare_peak_min_requests). */
static int find_peak(struct bench_ctx *x, const struct gpushare_strategy_ops *st, struct gpushare_bench_result *res)
{
	const struct gpushare_bench_config *c0 = x->c;
	struct gpushare_bench_config *c = malloc(sizeof(*c));
	struct gpushare_bench_peak *pk;
	struct gpushare_peak_search ps;
	uint64_t min_requests = gpushare_peak_min_requests(c0->slo_quantile, c0->tail_samples);
	bool kept = false;
	double rate;
	int rc = GPUSHARE_OK;

	pk = calloc(1, sizeof(*pk));
	if (!c || !pk) {
		free(c);
		free(pk);
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate the peak search");
	}
	*c = *c0;
	pk->searched = true;
	pk->min_requests = min_requests;
	/* Halving stops where a step would need more than the step limit. */
	gpushare_peak_search_init(&ps, c0->rate, c0->resolution,
				  fmax(c0->rate / 1024, (double)min_requests / GPUSHARE_PEAK_STEP_MAX_SECONDS),
				  c0->rate_max);
	while (rc == GPUSHARE_OK && pk->n_steps < GPUSHARE_PEAK_MAX_STEPS && gpushare_peak_search_next(&ps, &rate)) {
		struct gpushare_bench_result step;
		struct gpushare_peak_step *ps_step = &pk->steps[pk->n_steps++];
		double need_s = (double)min_requests / rate;
		struct gpushare_bench_plan plan;
		uint64_t q;

		c->rate = rate;
		c->duration_ns = need_s * 1e9 > (double)c0->duration_ns ? (uint64_t)ceil(need_s * 1e9) : c0->duration_ns;
		/* The budget: a step that would end past it is not started. */
		if (c0->peak_deadline_ns && pk->n_steps > 1 && gpushare_bench_plan(c, &plan) == GPUSHARE_OK &&
		    (double)gpushare_now_ns() + plan.run_seconds * 1e9 > (double)c0->peak_deadline_ns) {
			char r[24];

			pk->n_steps--;
			snprintf(pk->note, sizeof(pk->note), "stopped: the budget ran out before the step at %s/s",
				 gpushare_fmt_si(rate, r, sizeof(r)));
			break;
		}
		rc = gpushare_bench_result_init(&step, st->id, res->n_workers);
		if (rc)
			break;
		x->c = c;
		x->peak_step = pk->n_steps;
		rc = run_strategy(x, st, &step, c->wl.batch);
		x->peak_step = 0;
		x->c = c0;
		gpushare_bench_result_compute(&step, 0);
		q = gpushare_openloop_quantile(&step.hist, step.open.unfinished, c0->slo_quantile);
		ps_step->rate = rate;
		ps_step->failed_run = step.partial || step.interrupted || rc != GPUSHARE_OK;
		ps_step->quantile_seconds = q == UINT64_MAX ? -1 : (double)q / 1e9;
		ps_step->achieved_rate = step.open.achieved_rate;
		ps_step->offered = step.open.offered;
		ps_step->unfinished = step.open.unfinished;
		ps_step->pass = !ps_step->failed_run && q != UINT64_MAX && q <= c0->slo_ns;
		if (rc == GPUSHARE_OK && gpushare_bench_interrupted())
			rc = gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted");
		/* gpushare could not keep the schedule (its dispatcher handed
		 * arrivals over later than a tenth of the bound at p99: the
		 * machine held it up): the step measured gpushare, not the
		 * strategy. Run it again, at most PEAK_RETRIES times in all. */
		if (rc == GPUSHARE_OK && !ps_step->failed_run &&
		    step.open.lateness_p99_seconds * 1e9 > (double)c0->slo_ns / 10 && pk->repeated < PEAK_RETRIES) {
			pk->repeated++;
			pk->n_steps--;
			gpushare_bench_result_release(&step);
			continue;
		}
		/* The result shown is the best passing step, or else the last. */
		if (!kept || !pk->found || (ps_step->pass && rate > pk->rate)) {
			gpushare_bench_result_release(res);
			*res = step;
			kept = true;
		} else {
			gpushare_bench_result_release(&step);
		}
		if (ps_step->pass && rate > pk->rate) {
			pk->found = true;
			pk->rate = rate;
		}
		if (!ps_step->pass && (pk->upper == 0 || rate < pk->upper))
			pk->upper = rate;
		if (ps_step->failed_run && rc == GPUSHARE_OK) {
			/* A worker failed mid-run: the search cannot trust more steps. */
			char r[24];

			snprintf(pk->note, sizeof(pk->note), "stopped: a worker failed at %s/s: %.100s",
				 gpushare_fmt_si(rate, r, sizeof(r)), res->failure);
			break;
		}
		gpushare_peak_search_result(&ps, rate, ps_step->pass);
	}
	if (!pk->note[0] && ps.why[0])
		snprintf(pk->note, sizeof(pk->note), "%s", ps.why);
	else if (!pk->note[0] && pk->n_steps >= GPUSHARE_PEAK_MAX_STEPS && !ps.done)
		snprintf(pk->note, sizeof(pk->note), "stopped after %d steps", GPUSHARE_PEAK_MAX_STEPS);
	res->peak = *pk;
	free(pk);
	free(c);
	return rc;
}

/* ---- the whole run ---- */

static void fill_metadata(struct bench_ctx *x)
{
	struct gpushare_bench_report *r = x->r;
	struct utsname u;
	time_t now = time(NULL);
	struct tm tm;

	snprintf(r->version, sizeof(r->version), "%s", gpushare_version());
	if (gmtime_r(&now, &tm))
		strftime(r->date, sizeof(r->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (uname(&u) == 0)
		snprintf(r->host, sizeof(r->host), "%s", u.nodename);
}

/* --gpus: the GPUs (lib/exec/launcher.c's rules), the first one's index as the
 * run's GPU (telemetry, mig), all their UUIDs for the MPS daemon. */
static int select_gpus(struct bench_ctx *x)
{
	struct gpushare_system_info sys;
	struct gpushare_gpu_ref *inv = NULL, sel[GPUSHARE_BENCH_MAX_GPUS];
	size_t n_inv = 0, n_sel = 0;
	int rc = gpushare_system_query_nvml(&sys);

	if (rc)
		return rc;
	rc = gpushare_run_gpu_inventory(&sys, &inv, &n_inv);
	gpushare_system_release(&sys);
	if (rc)
		return rc;
	if (n_inv > GPUSHARE_BENCH_MAX_GPUS)
		n_inv = GPUSHARE_BENCH_MAX_GPUS;
	rc = gpushare_gpu_select(inv, n_inv, x->c->gpus, gpushare_getenv_process, NULL, sel, &n_sel);
	free(inv);
	if (rc) {
		char detail[400];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		return gpushare_fail(rc, "--gpus %s: %s", x->c->gpus, detail);
	}
	for (size_t i = 0; i < n_sel; i++) {
		x->r->gpu_indices[i] = (int)sel[i].index;
		snprintf(x->r->gpu_uuids[i], sizeof(x->r->gpu_uuids[i]), "%s", sel[i].uuid);
	}
	gpushare_run_ctx_set_gpus(&x->run, sel, n_sel);
	x->r->n_gpus = n_sel;
	x->gpu_index = sel[0].index;
	x->r->gpu_index = (int)sel[0].index;
	return GPUSHARE_OK;
}

static int setup_gpu(struct bench_ctx *x)
{
	const struct gpushare_bench_config *c = x->c;
	bool need_driver = !c->command && c->wl.desc->needs_gpu;
	const char *needs = c->wl.desc->name;
	bool wl_needs;
	int rc;

	for (int i = 0; i < c->n_mix && !c->command; i++) {
		if (c->mix[i].wl.desc->needs_gpu && !need_driver)
			needs = c->mix[i].wl.desc->name;
		need_driver |= c->mix[i].wl.desc->needs_gpu;
	}
	wl_needs = need_driver;

	for (size_t i = 0; i < c->n_strategies; i++)
		need_driver |= gpushare_strategy_needs_driver(c->strategies[i]);
	snprintf(x->run.visible, sizeof(x->run.visible), "%s", c->gpu);
	rc = gpushare_nvml_open();
	if (rc && c->gpus[0]) {
		char detail[400];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		return gpushare_fail(GPUSHARE_E_NO_DRIVER, "--gpus needs the NVIDIA driver (NVML): %s", detail);
	}
	if (rc) {
		if (need_driver) {
			char detail[400];

			snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
			return gpushare_fail(GPUSHARE_E_NO_DRIVER, "workload '%s'%s needs an NVIDIA GPU%s%s",
					     needs, wl_needs ? "" : " under mig",
					     detail[0] ? ": " : "", detail);
		}
		gpushare_clear_error();
		return GPUSHARE_OK;
	}
	x->nvml = true;
	rc = gpushare_gpu_find(c->gpu, &x->gpu_index);
	if (rc) {
		char detail[400];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "no GPU '%s' (--gpu)%s%s", c->gpu, detail[0] ? ": " : "",
				     detail);
	}
	x->r->gpu_index = (int)x->gpu_index;
	if (c->gpus[0] && (rc = select_gpus(x)) != GPUSHARE_OK)
		return rc;
	if (gpushare_system_query(&x->sys) == GPUSHARE_OK) {
		x->have_sys = true;
		snprintf(x->r->driver_version, sizeof(x->r->driver_version), "%s", x->sys.driver_version);
		for (size_t i = 0; i < x->sys.n_gpus; i++) {
			const struct gpushare_gpu_info *g = &x->sys.gpus[i];

			if (g->index != x->gpu_index)
				continue;
			snprintf(x->r->gpu_name, sizeof(x->r->gpu_name), "%s", g->name);
			snprintf(x->r->gpu_uuid, sizeof(x->r->gpu_uuid), "%s", g->uuid);
			/* CUDA orders devices differently from NVML; a UUID
			 * names the same GPU for both. */
			if (g->uuid[0] && !x->r->n_gpus)
				snprintf(x->run.visible, sizeof(x->run.visible), "%s", g->uuid);
		}
	}
	gpushare_clear_error();
	return GPUSHARE_OK;
}

static int add_result(struct gpushare_bench_report *r, int strategy, size_t n, struct gpushare_bench_result **out)
{
	struct gpushare_bench_result *nr = realloc(r->results, (r->n_results + 1) * sizeof(*nr));
	int rc;

	if (!nr)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate a result");
	r->results = nr;
	rc = gpushare_bench_result_init(&nr[r->n_results], strategy, n);
	if (rc)
		return rc;
	nr[r->n_results].n_mix = r->config && r->config->n_mix >= 2 ? r->config->n_mix : 0;
	*out = &nr[r->n_results++];
	return GPUSHARE_OK;
}

/* What the strategies see of this run (beside its directories and GPUs). */
static void strategy_ctx(struct bench_ctx *x)
{
	const struct gpushare_bench_config *c = x->c;
	struct gpushare_strategy_ctx *sx = &x->run.sx;

	sx->sys = x->have_sys ? &x->sys : NULL;
	sx->gpu_index = x->gpu_index;
	sx->workers = c->workers;
	sx->thread_percentage = c->thread_percentage;
	sx->n_thread_percentage = c->n_thread_percentage;
	if (c->n_mix_share) {
		gpushare_bench_mix_thread_percentages(c, x->mix_tpct);
		sx->thread_percentage = x->mix_tpct;
		sx->n_thread_percentage = c->workers;
	}
	sx->mem_limit_bytes = c->mem_limit_bytes;
	sx->n_mem_limit = c->n_mem_limit;
	sx->priority = c->priority;
	sx->n_priority = c->n_priority;
}

/* Everything each strategy needs, before the first one runs. */
static int check_strategies(struct bench_ctx *x)
{
	const struct gpushare_bench_config *c = x->c;
	int rc = GPUSHARE_OK;

	for (size_t i = 0; i < c->n_strategies && !rc; i++) {
		const struct gpushare_strategy_ops *st;

		if ((rc = gpushare_run_strategy(c->strategies[i], &st)))
			return rc;
		if (c->command && !st->runs_commands)
			return gpushare_fail(GPUSHARE_E_INVAL,
					     "the %s strategy cannot run a command: it runs the workers as threads "
					     "inside one gpushare-worker process, and a command is a process of its own "
					     "(use timeslice, mps, mps-split, mig or sequential)", st->name);
		rc = gpushare_run_ctx_check(&x->run, st->id);
	}
	return rc;
}

static int run_ceiling(struct bench_ctx *x, struct gpushare_bench_report *r)
{
	const struct gpushare_bench_config *c = x->c;
	int rc;

	r->ceiling = calloc(1, sizeof(*r->ceiling));
	if (!r->ceiling)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate a result");
	rc = gpushare_bench_result_init(r->ceiling, GPUSHARE_STRATEGY_CEILING, 1);
	if (!rc)
		rc = run_strategy(x, gpushare_strategy_get(GPUSHARE_STRATEGY_CEILING), r->ceiling,
				  c->wl.batch * c->workers);
	gpushare_bench_result_compute(r->ceiling, 0);
	r->partial |= r->ceiling->partial;
	r->interrupted |= r->ceiling->interrupted;
	return rc;
}

int gpushare_bench_run(const struct gpushare_bench_config *c, struct gpushare_bench_report *r)
{
	struct gpushare_errsave e;
	struct bench_ctx x;
	double ceiling_ips = 0;
	int rc;

	gpushare_bench_report_init(r, c);
	memset(&x, 0, sizeof(x));
	x.c = c;
	x.r = r;
	/* A keeper always: it stops a daemon of this run's own after a kill,
	 * and removes the run directory even where there is none (a sweep or
	 * tune killed mid-run left it for the next run to reap). */
	gpushare_run_ctx_init(&x.run, &(struct gpushare_run_opts){ .prefix = "bench", .mps_pipe_dir = c->mps_pipe_dir,
									 .keeper = true, .account = c->account });
	fill_metadata(&x);
	rc = gpushare_bench_config_check(c);
	if (!rc)
		rc = c->command ? gpushare_bench_command_check(c) : find_worker(c, x.worker, sizeof(x.worker));
	x.preload_ctl = -1;
	if (!rc && c->command)
		rc = gpushare_cmd_resolve(c, x.command, sizeof(x.command));
	if (!rc && c->command && c->preload)
		x.preload_ctl = gpushare_preload_ensure(c, x.command);
	r->preloaded = x.preload_ctl >= 0;
	if (!rc)
		rc = setup_gpu(&x);
	strategy_ctx(&x);
	if (!rc)
		rc = check_strategies(&x);
	if (!rc)
		rc = gpushare_run_ctx_open(&x.run);
	if (!rc && c->metrics)
		x.metrics = c->metrics;  /* the caller's view; it outlives this run */
	else if (!rc)
		rc = gpushare_metrics_bench_start(c, &x.metrics);
	if (!rc && c->ceiling) {
		rc = run_ceiling(&x, r);
		ceiling_ips = r->ceiling->items_per_second;
	}
	for (size_t i = 0; i < c->n_strategies && !rc; i++) {
		const struct gpushare_strategy_ops *st = gpushare_strategy_get(c->strategies[i]);
		struct gpushare_bench_result *res = NULL;
		int n = c->workers;

		rc = st->workers(&x.run.sx, c->workers, c->workers_given, &n);
		/* A mix deals c->workers out in blocks (bench_mix_check). */
		if (!rc && c->n_mix >= 2 && n != c->workers)
			rc = gpushare_fail(GPUSHARE_E_INVAL, "%s runs %d workers, not the mix's %d", st->name, n,
					   c->workers);
		if (!rc)
			rc = add_result(r, st->id, (size_t)n, &res);
		if (rc)
			break;
		rc = c->find_peak ? find_peak(&x, st, res) : run_strategy(&x, st, res, c->wl.batch);
		gpushare_bench_result_compute(res, ceiling_ips);
		r->partial |= res->partial;
		r->interrupted |= res->interrupted;
		if (rc == GPUSHARE_OK && gpushare_bench_interrupted()) {
			r->interrupted = true;
			rc = gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted");
		}
	}
	if (rc == GPUSHARE_E_INTERRUPTED)
		r->interrupted = true;
	gpushare_error_save(&e);
	if (x.metrics != c->metrics)
		gpushare_metrics_bench_stop(x.metrics);
	gpushare_run_ctx_close(&x.run, rc);
	if (x.have_sys)
		gpushare_system_release(&x.sys);
	if (x.nvml)
		gpushare_nvml_close();
	return gpushare_error_restore(&e, rc);
}
