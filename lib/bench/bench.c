/*
 * The benchmark's configuration and result model: strategy names, parsing of
 * per-worker lists, defaults, and the statistics computed from the workers'
 * histograms (per worker and merged per strategy). The launcher lives in
 * bench_run.c, the printers in bench_output.c.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/region.h"
#include "gpushare/internal/bench.h"

#include "bench_mix.h"
#include "items.h"

const char *gpushare_result_status_name(int status)
{
	switch (status) {
	case GPUSHARE_RESULT_OK: return "ok";
	case GPUSHARE_RESULT_FAILED: return "failed";
	case GPUSHARE_RESULT_SKIPPED: return "skipped";
	}
	return "unknown";
}

/* ---- open loop: names ---- */

static const char *const load_names[] = { "closed", "open" };
static const char *const arrival_names[] = { "poisson", "uniform" };
static const char *const dispatch_names[] = { "shared", "round-robin" };

static const char *name_of(const char *const *names, size_t n, int v)
{
	return v >= 0 && (size_t)v < n ? names[v] : "unknown";
}

static int parse_name(const char *const *names, size_t n, const char *what, const char *s, int *out)
{
	for (size_t i = 0; s && i < n; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (int)i;
			return GPUSHARE_OK;
		}
	}
	return gpushare_fail(GPUSHARE_E_INVAL, "unknown %s '%s' (expected %s or %s)", what, s ? s : "", names[0], names[1]);
}

const char *gpushare_load_name(int load) { return name_of(load_names, 2, load); }
const char *gpushare_arrival_name(int arrival) { return name_of(arrival_names, 2, arrival); }
const char *gpushare_dispatch_name(int dispatch) { return name_of(dispatch_names, 2, dispatch); }

int gpushare_load_parse(const char *s, enum gpushare_load *out)
{
	int v = 0, rc = parse_name(load_names, 2, "load", s, &v);

	if (!rc)
		*out = (enum gpushare_load)v;
	return rc;
}

int gpushare_arrival_parse(const char *s, enum gpushare_arrival *out)
{
	int v = 0, rc = parse_name(arrival_names, 2, "arrival process", s, &v);

	if (!rc)
		*out = (enum gpushare_arrival)v;
	return rc;
}

int gpushare_dispatch_parse(const char *s, enum gpushare_dispatch *out)
{
	int v = 0, rc = parse_name(dispatch_names, 2, "dispatch", s, &v);

	if (!rc)
		*out = (enum gpushare_dispatch)v;
	return rc;
}

int gpushare_slo_parse(const char *s, double *quantile, uint64_t *bound_ns)
{
	const char *eq = s ? strchr(s, '=') : NULL;
	char pct[32], *end;
	double q;

	if (!s || (s[0] != 'p' && s[0] != 'P') || !eq || (size_t)(eq - s - 1) >= sizeof(pct) || eq == s + 1)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a latency bound (expected e.g. p99=50ms)", s ? s : "");
	memcpy(pct, s + 1, (size_t)(eq - s - 1));
	pct[eq - s - 1] = '\0';
	q = strtod(pct, &end);
	if (*end || end == pct || !(q > 0 && q < 100) || strspn(pct, "0123456789.") != strlen(pct))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s': the percentile must be a number above 0 and below 100 (p50, p99, p99.9)", s);
	if (gpushare_parse_duration(eq + 1, bound_ns) || *bound_ns == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s': the bound must be a positive duration (50ms, 1s)", s);
	*quantile = q / 100;
	return GPUSHARE_OK;
}

int gpushare_bench_config_init(struct gpushare_bench_config *c)
{
	const struct gpushare_wl_desc *d;
	int rc;

	memset(c, 0, sizeof(*c));
	d = gpushare_workload_find("matmul");
	if (!d)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "workload 'matmul' is not known");
	rc = gpushare_wl_params_init(&c->wl, d);
	if (rc)
		return rc;
	c->workers = 4;
	c->strategies[0] = GPUSHARE_STRATEGY_TIMESLICE;
	c->strategies[1] = GPUSHARE_STRATEGY_MPS;
	c->n_strategies = 2;
	c->duration_ns = 10ULL * 1000000000ULL;
	c->warmup_ns = 2ULL * 1000000000ULL;
	c->warmup_requests = 3;
	c->start_timeout_ns = 120ULL * 1000000000ULL;
	c->run_timeout_ns = 3600ULL * 1000000000ULL;
	c->grace_ns = 5ULL * 1000000000ULL;
	snprintf(c->gpu, sizeof(c->gpu), "0");
	c->load = GPUSHARE_LOAD_CLOSED;
	c->arrival = GPUSHARE_ARRIVAL_POISSON;
	c->seed = 1;
	c->dispatch = GPUSHARE_DISPATCH_SHARED;
	c->resolution = 0.05;
	c->tail_samples = 100;
	c->rate_max = 1e7;
	return GPUSHARE_OK;
}

int gpushare_bench_config_check(const struct gpushare_bench_config *c)
{
	if (!c->wl.desc)
		return gpushare_fail(GPUSHARE_E_INVAL, "no workload given");
	if (c->workers < 1 || c->workers > GPUSHARE_BENCH_MAX_WORKERS)
		return gpushare_fail(GPUSHARE_E_INVAL, "--workers %d is out of range (expected 1 to %d)", c->workers,
				     GPUSHARE_BENCH_MAX_WORKERS);
	if (c->wl.batch < 1)
		return gpushare_fail(GPUSHARE_E_INVAL, "--batch %ld must be at least 1", c->wl.batch);
	if (c->ceiling && (double)c->wl.batch * c->workers > 2147483647.0)
		return gpushare_fail(GPUSHARE_E_INVAL, "--ceiling: batch x workers is too large");
	if (c->n_strategies == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "no strategy given");
	if (c->requests == 0 && c->duration_ns == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "the measurement window is empty (give --duration or --requests)");
	if (c->n_thread_percentage > 1 && c->n_thread_percentage != c->workers)
		return gpushare_fail(GPUSHARE_E_INVAL, "--thread-percentage has %d values for %d workers (give one or %d)",
				     c->n_thread_percentage, c->workers, c->workers);
	if (c->n_mem_limit > 1 && c->n_mem_limit != c->workers)
		return gpushare_fail(GPUSHARE_E_INVAL, "--mem-limit has %d values for %d workers (give one or %d)",
				     c->n_mem_limit, c->workers, c->workers);
	if (c->n_priority > 1 && c->n_priority != c->workers)
		return gpushare_fail(GPUSHARE_E_INVAL, "--priority has %d values for %d workers (give one or %d)",
				     c->n_priority, c->workers, c->workers);
	if (c->preload && !c->command)
		return gpushare_fail(GPUSHARE_E_INVAL, "--preload forks workers from your own command: give one "
				     "after '--' (a built-in workload starts in milliseconds)");
	if (bench_mix_check(c))
		return GPUSHARE_E_INVAL;
	return gpushare_bench_open_check(c);
}

int gpushare_bench_open_check(const struct gpushare_bench_config *c)
{
	if (c->load != GPUSHARE_LOAD_OPEN) {
		if (c->find_peak)
			return gpushare_fail(GPUSHARE_E_INVAL, "--find-peak needs --load open");
		return GPUSHARE_OK;
	}
	if (!(c->rate > 0) || c->rate > c->rate_max)
		return gpushare_fail(GPUSHARE_E_INVAL, "--load open needs --rate R, above 0 and at most %.6g per second",
				     c->rate_max);
	if (c->requests)
		return gpushare_fail(GPUSHARE_E_INVAL, "--load open measures a window: give --duration, not --requests");
	if (c->ceiling)
		return gpushare_fail(GPUSHARE_E_INVAL, "--ceiling compares closed-loop throughput; it does not apply to --load open");
	if (c->command && c->command_mode == GPUSHARE_CMD_JOB)
		return gpushare_fail(GPUSHARE_E_INVAL, "--load open hands requests to a worker: it needs --mode request, not job");
	if (c->find_peak) {
		if (!(c->slo_quantile > 0 && c->slo_quantile < 1) || c->slo_ns == 0)
			return gpushare_fail(GPUSHARE_E_INVAL, "--find-peak needs --slo (e.g. p99=50ms)");
		if (!(c->resolution >= 0.001 && c->resolution <= 1))
			return gpushare_fail(GPUSHARE_E_INVAL, "--resolution must be from 0.1%% to 100%%");
		if (c->tail_samples < 1)
			return gpushare_fail(GPUSHARE_E_INVAL, "--tail-samples must be at least 1");
		/* The first step's window against the step limit. */
		struct gpushare_bench_plan plan;

		return gpushare_bench_plan(c, &plan);
	}
	return GPUSHARE_OK;
}

/* A per-worker list being parsed (parse_list). */
struct list_items {
	const char *s, *what;
	int workers, count;
	int (*parse)(const char *item, void *out, int i);
	void *out;
};

static int list_item(void *arg, const char *p, size_t len)
{
	struct list_items *x = arg;
	char item[64];

	if (x->count >= GPUSHARE_BENCH_MAX_WORKERS || (x->workers > 0 && x->count >= x->workers))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' has more %s values than the %d workers", x->s, x->what,
				     x->workers > 0 ? x->workers : GPUSHARE_BENCH_MAX_WORKERS);
	if (len >= sizeof(item))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a %s list (an overlong item)", x->s, x->what);
	memcpy(item, p, len);
	item[len] = '\0';
	return x->parse(item, x->out, x->count++);
}

/* Split s at commas into one value or `workers` values; parse(item) each. */
static int parse_list(const char *s, int workers, const char *what, int *n,
		      int (*parse)(const char *item, void *out, int i), void *out)
{
	struct list_items x = { s, what, workers, 0, parse, out };
	int rc;

	*n = 0;
	if (!s || !*s)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty %s list", what);
	rc = gpushare_each_item(s, ',', list_item, &x);
	if (rc)
		return rc;
	if (x.count > 1 && workers > 0 && x.count != workers)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' has %d %s values for %d workers (give one or %d)", s, x.count,
				     what, workers, workers);
	*n = x.count;
	return GPUSHARE_OK;
}

static int parse_percent_item(const char *item, void *out, int i)
{
	return gpushare_parse_percent(item, &((double *)out)[i]);
}

static int parse_size_item(const char *item, void *out, int i)
{
	char buf[32];
	int rc = gpushare_parse_size(item, &((uint64_t *)out)[i]);

	if (rc)
		return rc;
	/* The daemon's format must be able to express it (at least 1M). */
	return gpushare_format_mps_size(((uint64_t *)out)[i], buf, sizeof(buf));
}

static int parse_priority_item(const char *item, void *out, int i)
{
	long v;

	if (gpushare_parse_int(item, 0, 1, &v))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not an MPS client priority (expected 0 normal or 1 below normal)",
				     item);
	((int *)out)[i] = (int)v;
	return GPUSHARE_OK;
}

int gpushare_bench_parse_percent_list(const char *s, int workers, double *out, int *n)
{
	return parse_list(s, workers, "thread-percentage", n, parse_percent_item, out);
}

int gpushare_bench_parse_size_list(const char *s, int workers, uint64_t *out, int *n)
{
	return parse_list(s, workers, "memory-limit", n, parse_size_item, out);
}

int gpushare_bench_parse_priority_list(const char *s, int workers, int *out, int *n)
{
	return parse_list(s, workers, "priority", n, parse_priority_item, out);
}

/* ---- interruption ---- */

static volatile sig_atomic_t bench_stop_requested;

void gpushare_bench_interrupt(void)
{
	bench_stop_requested = 1;
}

bool gpushare_bench_interrupted(void)
{
	return bench_stop_requested != 0;
}

/* ---- results ---- */

int gpushare_bench_result_init(struct gpushare_bench_result *res, enum gpushare_strategy strategy, size_t n)
{
	memset(res, 0, sizeof(*res));
	res->strategy = strategy;
	res->failed_worker = -1;
	res->efficiency = -1;
	res->tflops = -1;
	gpushare_bench_telemetry_init(&res->telemetry);
	gpushare_hist_init(&res->hist);
	gpushare_hist_init(&res->open.queue_hist);
	gpushare_hist_init(&res->open.service_hist);
	gpushare_hist_init(&res->open.lateness);
	res->workers = calloc(n ? n : 1, sizeof(*res->workers));
	if (!res->workers)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate results for %zu workers", n);
	res->n_workers = n;
	for (size_t i = 0; i < n; i++) {
		struct gpushare_bench_worker *w = &res->workers[i];

		w->index = (int)i;
		w->sm_count = -1;
		w->device = -1;
		w->thread_percentage_seen = -1;
		w->thread_percentage_set = -1;
		w->priority_set = -1;
		w->exit_code = -1;
		gpushare_hist_init(&w->hist);
		gpushare_hist_init(&w->queue_hist);
		gpushare_hist_init(&w->service_hist);
	}
	return GPUSHARE_OK;
}

void gpushare_bench_result_release(struct gpushare_bench_result *res)
{
	free(res->workers);
	res->workers = NULL;
	res->n_workers = 0;
}

static void hist_stats(const struct gpushare_hist *h, double *mean, double *stddev, double *p50, double *p90,
		       double *p99, double *p999, double *max)
{
	if (h->count == 0) {
		*mean = *stddev = *p50 = *p90 = *p99 = *p999 = *max = 0;
		return;
	}
	*mean = gpushare_hist_mean(h) / 1e9;
	*stddev = gpushare_hist_stddev(h) / 1e9;
	*p50 = (double)gpushare_hist_quantile(h, 0.50) / 1e9;
	*p90 = (double)gpushare_hist_quantile(h, 0.90) / 1e9;
	*p99 = (double)gpushare_hist_quantile(h, 0.99) / 1e9;
	*p999 = (double)gpushare_hist_quantile(h, 0.999) / 1e9;
	*max = (double)h->max_ns / 1e9;
}

static double q_seconds(const struct gpushare_hist *h, double q)
{
	return h->count ? (double)gpushare_hist_quantile(h, q) / 1e9 : 0;
}

/* The open-loop figures from the workers' histograms and counts; the
 * dispatcher's (offered, queued, lateness) were added by the run. */
static void openloop_compute(struct gpushare_bench_result *res)
{
	struct gpushare_bench_openloop *o = &res->open;

	o->completed = 0;
	gpushare_hist_init(&o->queue_hist);
	gpushare_hist_init(&o->service_hist);
	for (size_t i = 0; i < res->n_workers; i++) {
		o->completed += res->workers[i].completed_in_window;
		gpushare_hist_merge(&o->queue_hist, &res->workers[i].queue_hist);
		gpushare_hist_merge(&o->service_hist, &res->workers[i].service_hist);
	}
	o->unfinished = o->offered > res->requests + res->errors ? o->offered - res->requests - res->errors : 0;
	o->offered_rate = res->window_seconds > 0 ? (double)o->offered / res->window_seconds : 0;
	o->achieved_rate = res->window_seconds > 0 ? (double)o->completed / res->window_seconds : 0;
	o->queue_p50_seconds = q_seconds(&o->queue_hist, 0.5);
	o->queue_p99_seconds = q_seconds(&o->queue_hist, 0.99);
	o->queue_max_seconds = (double)o->queue_hist.max_ns / 1e9;
	o->service_p50_seconds = q_seconds(&o->service_hist, 0.5);
	o->service_p99_seconds = q_seconds(&o->service_hist, 0.99);
	o->service_max_seconds = (double)o->service_hist.max_ns / 1e9;
	o->lateness_p50_seconds = q_seconds(&o->lateness, 0.5);
	o->lateness_p99_seconds = q_seconds(&o->lateness, 0.99);
	o->lateness_p999_seconds = q_seconds(&o->lateness, 0.999);
	o->lateness_max_seconds = (double)o->lateness.max_ns / 1e9;
}

void gpushare_bench_result_compute(struct gpushare_bench_result *res, double ceiling_items_per_second)
{
	struct bench_span all;
	double flops = 0;

	res->errors = 0;
	for (size_t i = 0; i < res->n_workers; i++) {
		struct gpushare_bench_worker *w = &res->workers[i];

		w->items = w->requests * (w->items_per_request ? w->items_per_request : 1);
		w->requests_per_second = w->window_seconds > 0 ? (double)w->requests / w->window_seconds : 0;
		w->items_per_second = w->window_seconds > 0 ? (double)w->items / w->window_seconds : 0;
		hist_stats(&w->hist, &w->mean_seconds, &w->stddev_seconds, &w->p50_seconds, &w->p90_seconds,
			   &w->p99_seconds, &w->p999_seconds, &w->max_seconds);
		w->min_seconds = w->hist.count ? (double)w->hist.min_ns / 1e9 : 0;
		res->errors += w->errors;
		flops += w->flops_per_request * (double)w->requests;
	}
	bench_span_sum(res, 0, res->n_workers, &all, &res->hist);
	res->requests = all.requests;
	res->items = all.items;
	res->window_seconds = all.window_seconds;
	res->requests_per_second = res->window_seconds > 0 ? (double)res->requests / res->window_seconds : 0;
	res->items_per_second = res->window_seconds > 0 ? (double)res->items / res->window_seconds : 0;
	hist_stats(&res->hist, &res->mean_seconds, &res->stddev_seconds, &res->p50_seconds, &res->p90_seconds,
		   &res->p99_seconds, &res->p999_seconds, &res->max_seconds);
	res->fairness = res->n_workers ? all.fairness : 0;
	if (res->n_mix >= 2) {
		/* Workers of different workloads: fairness within each. */
		bench_mix_compute(res);
		res->fairness = 1;
		for (int m = 0; m < res->n_mix; m++)
			res->fairness = fmin(res->fairness, res->mix[m].fairness);
	}
	res->efficiency = ceiling_items_per_second > 0 ? res->items_per_second / ceiling_items_per_second : -1;
	res->tflops = flops > 0 && res->window_seconds > 0 ? flops / res->window_seconds / 1e12 : -1;
	gpushare_bench_telemetry_finish(&res->telemetry);
	if (res->open.on)
		openloop_compute(res);
}

void gpushare_bench_telemetry_init(struct gpushare_bench_telemetry *t)
{
	memset(t, 0, sizeof(*t));
	t->util_mean_pct = t->util_max_pct = -1;
	t->sm_clock_mean_mhz = -1;
	t->throttled_fraction = -1;
	t->power_mean_watts = -1;
}

void gpushare_bench_telemetry_add(struct gpushare_bench_telemetry *t, const struct gpushare_gpu_sample *s)
{
	t->samples++;
	if (s->util_gpu_pct >= 0) {
		t->n_util++;
		t->sum_util += s->util_gpu_pct;
		if (s->util_gpu_pct > t->util_max_pct)
			t->util_max_pct = s->util_gpu_pct;
	}
	if (s->mem_used_bytes != GPUSHARE_UNKNOWN_U64 && s->mem_used_bytes > t->mem_used_max_bytes)
		t->mem_used_max_bytes = s->mem_used_bytes;
	if (s->clock_sm_mhz >= 0) {
		t->n_clock++;
		t->sum_clock += s->clock_sm_mhz;
	}
	if (s->power_mw >= 0) {
		t->n_power++;
		t->sum_power_w += s->power_mw / 1000.0;
	}
	if (s->throttled)
		t->n_throttled++;
}

void gpushare_bench_telemetry_finish(struct gpushare_bench_telemetry *t)
{
	t->util_mean_pct = t->n_util ? t->sum_util / t->n_util : -1;
	t->sm_clock_mean_mhz = t->n_clock ? t->sum_clock / t->n_clock : -1;
	t->power_mean_watts = t->n_power ? t->sum_power_w / t->n_power : -1;
	t->throttled_fraction = t->samples ? (double)t->n_throttled / t->samples : -1;
}

void gpushare_bench_report_init(struct gpushare_bench_report *r, const struct gpushare_bench_config *c)
{
	memset(r, 0, sizeof(*r));
	r->config = c;
	r->gpu_index = -1;
}

void gpushare_bench_report_release(struct gpushare_bench_report *r)
{
	for (size_t i = 0; i < r->n_results; i++)
		gpushare_bench_result_release(&r->results[i]);
	free(r->results);
	r->results = NULL;
	r->n_results = 0;
	if (r->ceiling) {
		gpushare_bench_result_release(r->ceiling);
		free(r->ceiling);
		r->ceiling = NULL;
	}
	free(r->summary);
	r->summary = NULL;
	r->n_summary = 0;
}

/* ---- how each strategy ended ---- */

/* A window in which no request ended has no throughput and no latency: a
 * run without a result, never "ok" with zeros. Applied after the run's own
 * error, which stays the reason of the strategy it stopped. */
static void settle_empty(struct gpushare_bench_result *res)
{
	if (res->status == GPUSHARE_RESULT_SKIPPED || res->failure[0] || res->requests || res->peak.searched)
		return;
	snprintf(res->failure, sizeof(res->failure), "no request ended in the measurement window%s",
		 res->open.on && res->open.offered == 0 ? " (no arrival was scheduled in it)" : "");
	res->status = GPUSHARE_RESULT_FAILED;
}

/* A mix is compared by the geometric mean of its workloads' items/s: one
 * that finished nothing leaves the run without a score, never a 0. */
static void settle_mix(struct gpushare_bench_result *res, const struct gpushare_bench_config *c)
{
	if (res->n_mix < 2 || res->status == GPUSHARE_RESULT_SKIPPED || res->failure[0] || !res->requests)
		return;
	for (int m = 0; m < res->n_mix; m++) {
		if (res->mix[m].requests)
			continue;
		snprintf(res->failure, sizeof(res->failure),
			 "workload '%s' of the mix ended no request in the measurement window (the mix has no score)",
			 c && m < c->n_mix ? c->mix[m].label : "?");
		res->status = GPUSHARE_RESULT_FAILED;
		return;
	}
}

static void settle_one(struct gpushare_bench_result *res)
{
	if (res->status == GPUSHARE_RESULT_SKIPPED)
		return;
	if (res->interrupted && !res->failure[0])
		snprintf(res->failure, sizeof(res->failure), "interrupted before the window ended");
	if (res->failed_worker >= 0 && (size_t)res->failed_worker < res->n_workers && !res->failed_with) {
		int cuda = res->workers[res->failed_worker].cuda_error;

		for (size_t i = 0; cuda && i < res->n_workers; i++)
			res->failed_with += (int)i != res->failed_worker && res->workers[i].cuda_error == cuda;
		if (res->failed_with) {
			size_t len = strlen(res->failure);

			snprintf(res->failure + len, sizeof(res->failure) - len,
				 "; %d other worker%s failed with CUDA error %d too%s", res->failed_with,
				 res->failed_with == 1 ? "" : "s", cuda,
				 cuda == 700 || (cuda >= 714 && cuda <= 719) ? " (a fatal GPU fault reaches every client of an MPS server)" : "");
		}
	}
	if (res->partial || res->interrupted || res->failed_worker >= 0 || res->failure[0])
		res->status = GPUSHARE_RESULT_FAILED;
}

int gpushare_bench_report_settle(struct gpushare_bench_report *r, int rc)
{
	const struct gpushare_bench_config *c = r->config;
	char detail[512];
	const char *failed_name = NULL;

	snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
	if (r->ceiling)
		settle_one(r->ceiling);
	for (size_t i = 0; i < r->n_results; i++)
		settle_one(&r->results[i]);
	if (rc == GPUSHARE_OK) {
		for (size_t i = 0; i < r->n_results; i++) {
			settle_empty(&r->results[i]);
			settle_mix(&r->results[i], c);
		}
		return GPUSHARE_OK;
	}
	if (rc != GPUSHARE_E_INTERRUPTED) {
		/* The strategy being set up when the error came (or the ceiling
		 * run, which comes first) did not run. */
		struct gpushare_bench_result *res = r->n_results ? &r->results[r->n_results - 1] : r->ceiling;

		if (res && res->status != GPUSHARE_RESULT_SKIPPED) {
			res->status = GPUSHARE_RESULT_FAILED;
			if (!res->failure[0])
				snprintf(res->failure, sizeof(res->failure), "%s",
					 detail[0] ? detail : gpushare_strerror(rc));
			failed_name = gpushare_strategy_name(res->strategy);
		}
	}
	for (size_t i = 0; i < r->n_results; i++) {
		settle_empty(&r->results[i]);
		settle_mix(&r->results[i], c);
	}
	if (!c)
		return GPUSHARE_OK;
	for (size_t i = r->n_results; i < c->n_strategies; i++) {
		struct gpushare_bench_result *nr = realloc(r->results, (r->n_results + 1) * sizeof(*nr));
		struct gpushare_bench_result *res;
		int erc;

		if (!nr)
			return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate a result");
		r->results = nr;
		res = &nr[r->n_results];
		erc = gpushare_bench_result_init(res, c->strategies[i], 0);
		if (erc)
			return erc;
		r->n_results++;
		res->status = GPUSHARE_RESULT_SKIPPED;
		res->n_mix = c->n_mix >= 2 ? c->n_mix : 0;   /* a mix's, without figures: not one workload */
		if (rc == GPUSHARE_E_INTERRUPTED)
			snprintf(res->failure, sizeof(res->failure), "not run: interrupted");
		else if (failed_name)
			snprintf(res->failure, sizeof(res->failure), "not run: %s failed first", failed_name);
		else
			snprintf(res->failure, sizeof(res->failure), "not run: %.480s",
				 detail[0] ? detail : gpushare_strerror(rc));
	}
	/* Keep the run's error for the caller. */
	gpushare_fail(rc, "%s", detail);
	return GPUSHARE_OK;
}
