/*
 * Printers of benchmark results: the JSON document (docs/bench-schema.json),
 * CSV (one row per strategy x worker plus an aggregate row per strategy) and
 * the aligned table people read. They change only how results look, never
 * what was measured. The atomic file write used for --out is in safefile.c.
 *
 * Machine output uses base units with the unit in the name (_seconds,
 * _bytes); unknown values are JSON null and empty CSV fields. Only a
 * result with status ok has figures: a failed or skipped strategy prints
 * null, empty fields and blank table cells, never zeros.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushare/bench.h"
#include "gpushare/format.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/region.h"

#include "csv.h"
#include "openloop.h"
#include "json.h"

#define SCHEMA_ID "https://gpushare.dev/schemas/bench-1.json"

static const char *state_name(int st)
{
	switch (st) {
	case GPUSHARE_SLOT_EMPTY: return "empty";
	case GPUSHARE_SLOT_STARTING: return "starting";
	case GPUSHARE_SLOT_READY: return "ready";
	case GPUSHARE_SLOT_RUNNING: return "running";
	case GPUSHARE_SLOT_DONE: return "done";
	case GPUSHARE_SLOT_FAILED: return "failed";
	}
	return "unknown";
}

/* ---- JSON ---- */

/* The adders are json.h's: false when out of memory, null for a figure
 * that is unknown or not finite. */

/* Latency figures; null when nothing was recorded (known false). */
static bool json_latency(cJSON *o, bool known, double mean, double sd, double p50, double p90, double p99,
			 double p999, double max)
{
	return gpushare_json_num_if(o, "mean_seconds", mean, known) &&
	       gpushare_json_num_if(o, "stddev_seconds", sd, known) &&
	       gpushare_json_num_if(o, "p50_seconds", p50, known) &&
	       gpushare_json_num_if(o, "p90_seconds", p90, known) &&
	       gpushare_json_num_if(o, "p99_seconds", p99, known) &&
	       gpushare_json_num_if(o, "p999_seconds", p999, known) &&
	       gpushare_json_num_if(o, "max_seconds", max, known);
}

/* The histogram of a result as its non-empty buckets: upper bounds in
 * seconds and counts (what the report draws latency CDFs from). */
static cJSON *json_hist(const struct gpushare_hist *h)
{
	cJSON *o = cJSON_CreateObject(), *le, *counts;
	bool ok = o && (le = gpushare_json_arr(o, "le_seconds")) != NULL &&
		  (counts = gpushare_json_arr(o, "counts")) != NULL;

	for (size_t b = 0; ok && b < GPUSHARE_HIST_BUCKETS; b++)
		ok = !h->buckets[b] || (gpushare_json_num(le, NULL, (double)gpushare_hist_bucket_high(b) / 1e9) &&
					gpushare_json_num(counts, NULL, (double)h->buckets[b]));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *json_worker(const struct gpushare_bench_worker *w)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;
	/* A worker that never started has no figures; one without a sample
	 * has no latencies. */
	bool ran = w->pid > 0, lat = ran && w->hist.count > 0, tp = ran && w->window_seconds > 0;

	ok = ok && gpushare_json_num(o, "index", w->index) && gpushare_json_num(o, "process", w->process) &&
	     gpushare_json_num_if(o, "pid", w->pid, w->pid > 0);
	ok = ok && gpushare_json_num_if(o, "requests", (double)w->requests, ran) &&
	     gpushare_json_num_if(o, "items", (double)w->items, ran) &&
	     gpushare_json_num(o, "items_per_request", (double)w->items_per_request) &&
	     gpushare_json_num_if(o, "errors", (double)w->errors, ran) &&
	     gpushare_json_num_if(o, "total_requests", (double)w->total_requests, ran) &&
	     gpushare_json_num_if(o, "window_seconds", w->window_seconds, tp) &&
	     gpushare_json_num_if(o, "requests_per_second", w->requests_per_second, tp) &&
	     gpushare_json_num_if(o, "items_per_second", w->items_per_second, tp) &&
	     gpushare_json_num_if(o, "min_seconds", w->min_seconds, lat) &&
	     json_latency(o, lat, w->mean_seconds, w->stddev_seconds, w->p50_seconds, w->p90_seconds, w->p99_seconds,
			  w->p999_seconds, w->max_seconds);
	ok = ok && gpushare_json_num_if(o, "flops_per_request", w->flops_per_request, w->flops_per_request > 0);
	/* Limits in effect, as read back by the worker. */
	ok = ok && gpushare_json_num_if(o, "sm_count", w->sm_count, w->sm_count >= 0) &&
	     gpushare_json_num_if(o, "device", w->device, w->device >= 0) &&
	     gpushare_json_num_if(o, "mem_free_bytes", (double)w->mem_free_bytes, w->mem_total_bytes > 0) &&
	     gpushare_json_num_if(o, "mem_total_bytes", (double)w->mem_total_bytes, w->mem_total_bytes > 0) &&
	     gpushare_json_num_if(o, "thread_percentage", w->thread_percentage_seen, w->thread_percentage_seen >= 0) &&
	     gpushare_json_str_or_null(o, "mem_limit", w->mem_limit_seen) &&
	     gpushare_json_str_or_null(o, "device_name", w->device_name);
	/* What gpushare set. */
	ok = ok &&
	     gpushare_json_num_if(o, "thread_percentage_set", w->thread_percentage_set, w->thread_percentage_set > 0) &&
	     gpushare_json_num_if(o, "mem_limit_set_bytes", (double)w->mem_limit_set_bytes, w->mem_limit_set_bytes > 0) &&
	     gpushare_json_num_if(o, "priority_set", w->priority_set, w->priority_set >= 0) &&
	     gpushare_json_str_or_null(o, "visible_devices", w->visible_devices);
	/* How it ended. */
	ok = ok && gpushare_json_str(o, "state", state_name(w->state)) &&
	     gpushare_json_bool(o, "failed", w->failed) &&
	     gpushare_json_num_if(o, "exit_code", w->exit_code, w->exit_code >= 0) &&
	     gpushare_json_num_if(o, "signal", w->signal, w->signal > 0) &&
	     gpushare_json_num_if(o, "cuda_error", w->cuda_error, w->cuda_error != 0) &&
	     gpushare_json_str_or_null(o, "message", w->message);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *json_telemetry(const struct gpushare_bench_telemetry *t)
{
	cJSON *o;
	bool ok;

	if (t->samples == 0)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	ok = o && gpushare_json_num(o, "samples", t->samples) &&
	     gpushare_json_num_if(o, "util_mean_percent", t->util_mean_pct, t->util_mean_pct >= 0) &&
	     gpushare_json_num_if(o, "util_max_percent", t->util_max_pct, t->util_max_pct >= 0) &&
	     gpushare_json_num_if(o, "mem_used_max_bytes", (double)t->mem_used_max_bytes, t->mem_used_max_bytes > 0) &&
	     gpushare_json_num_if(o, "sm_clock_mean_mhz", t->sm_clock_mean_mhz, t->sm_clock_mean_mhz >= 0) &&
	     gpushare_json_num_if(o, "throttled_fraction", t->throttled_fraction, t->throttled_fraction >= 0) &&
	     gpushare_json_num_if(o, "power_mean_watts", t->power_mean_watts, t->power_mean_watts >= 0);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* "mix": per member its workers' figures together, and "score", the
 * geometric mean of their items/s that a mix is compared by; both null for
 * one workload. */
static bool json_mix_result(cJSON *o, const struct gpushare_bench_result *res, const struct gpushare_bench_config *c,
			    bool fig)
{
	cJSON *arr;
	bool ok;

	if (res->n_mix < 2)
		return gpushare_json_null(o, "mix") && gpushare_json_null(o, "score");
	ok = (arr = gpushare_json_arr(o, "mix")) != NULL &&
	     gpushare_json_num_if(o, "score", res->mix_score, fig && res->mix_score > 0);
	for (int m = 0; ok && m < res->n_mix; m++) {
		const struct gpushare_bench_mix_result *x = &res->mix[m];
		cJSON *e = gpushare_json_obj(arr, NULL);
		bool lat = fig && x->requests > 0;

		ok = e && gpushare_json_str(e, "spec", c && m < c->n_mix ? c->mix[m].label : "") &&
		     gpushare_json_num(e, "workers", res->n_workers ? (double)res->n_workers / res->n_mix
						     : c ? (double)c->workers / res->n_mix : NAN) &&
		     gpushare_json_num_if(e, "requests", (double)x->requests, fig) &&
		     gpushare_json_num_if(e, "items", (double)x->items, fig) &&
		     gpushare_json_num_if(e, "requests_per_second", x->requests_per_second, fig) &&
		     gpushare_json_num_if(e, "items_per_second", x->items_per_second, fig) &&
		     gpushare_json_num_if(e, "p50_seconds", x->p50_seconds, lat) &&
		     gpushare_json_num_if(e, "p99_seconds", x->p99_seconds, lat) &&
		     gpushare_json_num_if(e, "fairness", x->fairness, fig) &&
		     gpushare_json_num_if(e, "thread_percentage_set", x->thread_percentage_set,
					  x->thread_percentage_set > 0);
	}
	return ok;
}

static cJSON *json_result(const struct gpushare_bench_result *res, const struct gpushare_bench_config *c)
{
	cJSON *o = cJSON_CreateObject(), *agg, *fail, *mps, *tel, *workers;
	bool ok = o != NULL;

	bool fig = res->status == GPUSHARE_RESULT_OK, lat = fig && res->hist.count > 0;

	ok = ok && gpushare_json_str(o, "strategy", gpushare_strategy_name(res->strategy)) &&
	     gpushare_json_num(o, "repeat", res->repeat) &&
	     gpushare_json_str(o, "status", gpushare_result_status_name(res->status)) &&
	     gpushare_json_str_or_null(o, "reason", fig ? "" : res->failure) &&
	     gpushare_json_bool(o, "partial", res->partial) &&
	     gpushare_json_bool(o, "interrupted", res->interrupted);
	if (ok && res->failure[0] && res->status != GPUSHARE_RESULT_SKIPPED) {
		ok = (fail = gpushare_json_obj(o, "failure")) != NULL &&
		     gpushare_json_num_if(fail, "worker", res->failed_worker, res->failed_worker >= 0) &&
		     gpushare_json_int(fail, "failed_with", res->failed_with) &&
		     gpushare_json_str(fail, "message", res->failure);
	} else if (ok) {
		ok = gpushare_json_null(o, "failure");
	}
	if (ok && res->mps_pipe_dir[0]) {
		ok = (mps = gpushare_json_obj(o, "mps")) != NULL &&
		     gpushare_json_str(mps, "pipe_dir", res->mps_pipe_dir) &&
		     gpushare_json_bool(mps, "daemon_started", res->mps_daemon_started);
	} else if (ok) {
		ok = gpushare_json_null(o, "mps");
	}
	ok = ok && (agg = gpushare_json_obj(o, "aggregate")) != NULL &&
	     gpushare_json_num(agg, "workers", (double)res->n_workers) &&
	     gpushare_json_num_if(agg, "requests", (double)res->requests, fig) &&
	     gpushare_json_num_if(agg, "items", (double)res->items, fig) &&
	     gpushare_json_num_if(agg, "errors", (double)res->errors, fig) &&
	     gpushare_json_num_if(agg, "window_seconds", res->window_seconds, fig) &&
	     gpushare_json_num_if(agg, "warmup_seconds", res->warmup_seconds, fig) &&
	     gpushare_json_num_if(agg, "requests_per_second", res->requests_per_second, fig) &&
	     gpushare_json_num_if(agg, "items_per_second", res->items_per_second, fig) &&
	     json_latency(agg, lat, res->mean_seconds, res->stddev_seconds, res->p50_seconds, res->p90_seconds,
			  res->p99_seconds, res->p999_seconds, res->max_seconds) &&
	     gpushare_openloop_json_result(o, res, c) &&
	     gpushare_json_num_if(agg, "fairness", res->fairness, fig && res->n_workers > 0) &&
	     gpushare_json_num_if(agg, "efficiency", res->efficiency, fig && res->efficiency >= 0) &&
	     gpushare_json_num_if(agg, "tflops", res->tflops, fig && res->tflops >= 0);
	if (ok) {
		cJSON *h = lat ? json_hist(&res->hist) : cJSON_CreateNull();

		ok = gpushare_json_add(agg, "histogram", h);
	}
	ok = ok && json_mix_result(o, res, c, fig);
	if (ok) {
		tel = json_telemetry(&res->telemetry);
		ok = gpushare_json_add(o, "telemetry", tel);
	}
	ok = ok && (workers = gpushare_json_arr(o, "workers")) != NULL;
	for (size_t i = 0; ok && i < res->n_workers; i++) {
		cJSON *w = json_worker(&res->workers[i]);

		ok = gpushare_json_add(workers, NULL, w);
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* "mix": per member of a mix its spec, workload, options, workers and share
 * (mps-split, given as a split); null for one workload. */
static bool json_mix_config(cJSON *o, const struct gpushare_bench_config *c)
{
	cJSON *arr;
	bool ok;

	if (c->n_mix < 2 || c->command)
		return gpushare_json_null(o, "mix");
	ok = (arr = gpushare_json_arr(o, "mix")) != NULL;
	for (int m = 0; ok && m < c->n_mix; m++) {
		const struct gpushare_wl_params *p = &c->mix[m].wl;
		cJSON *e = gpushare_json_obj(arr, NULL), *opts;

		ok = e && gpushare_json_str(e, "spec", c->mix[m].label) &&
		     gpushare_json_str(e, "workload", p->desc->name) &&
		     (opts = gpushare_json_obj(e, "workload_options")) != NULL;
		for (size_t i = 0; ok && i < p->desc->n_opts && i < GPUSHARE_WL_MAX_OPTS; i++)
			ok = gpushare_json_str(opts, p->desc->opts[i].name, p->values[i]);
		ok = ok && gpushare_json_num(e, "workers", c->workers / c->n_mix) &&
		     gpushare_json_num_if(e, "share_percent", c->mix_share[m], m < c->n_mix_share);
	}
	return ok;
}

static cJSON *json_config(const struct gpushare_bench_config *c)
{
	cJSON *o = cJSON_CreateObject(), *opts, *strat, *arr;
	const struct gpushare_wl_desc *d = c->wl.desc;
	bool ok = o != NULL;

	char label[GPUSHARE_BENCH_MAX_MIX * GPUSHARE_BENCH_MIX_LABEL];

	if (c->command)
		d = NULL; /* command mode (lib/bench/bench_cmd.c): no built-in workload */
	ok = ok && gpushare_json_str(o, "workload", gpushare_bench_workload_label(c, label, sizeof(label))) &&
	     (opts = gpushare_json_obj(o, "workload_options")) != NULL && json_mix_config(o, c);
	if (ok && c->command) {
		ok = (arr = gpushare_json_arr(o, "command")) != NULL &&
		     gpushare_json_str(o, "command_mode", gpushare_cmd_mode_name(c->command_mode));
		for (size_t i = 0; ok && c->command[i]; i++)
			ok = gpushare_json_str(arr, NULL, c->command[i]);
	} else if (ok) {
		ok = gpushare_json_null(o, "command") && gpushare_json_null(o, "command_mode");
	}
	/* A mix: each workload's options are in "mix". */
	for (size_t i = 0; ok && d && c->n_mix < 2 && i < d->n_opts && i < GPUSHARE_WL_MAX_OPTS; i++)
		ok = gpushare_json_str(opts, d->opts[i].name, c->wl.values[i]);
	ok = ok && gpushare_json_num(o, "batch", (double)c->wl.batch) && gpushare_json_num(o, "workers", c->workers) &&
	     (strat = gpushare_json_arr(o, "strategies")) != NULL;
	for (size_t i = 0; ok && i < c->n_strategies; i++)
		ok = gpushare_json_str(strat, NULL, gpushare_strategy_name(c->strategies[i]));
	ok = ok && gpushare_json_str(o, "mode", c->requests ? "requests" : "duration") &&
	     gpushare_json_num_if(o, "duration_seconds", (double)c->duration_ns / 1e9, c->requests == 0) &&
	     gpushare_json_num_if(o, "requests_per_worker", (double)c->requests, c->requests > 0) &&
	     gpushare_json_num(o, "warmup_seconds", (double)c->warmup_ns / 1e9) &&
	     gpushare_json_bool(o, "warmup_adaptive", c->warmup_adaptive) &&
	     gpushare_json_num(o, "warmup_requests", (double)c->warmup_requests) &&
	     gpushare_json_num(o, "start_timeout_seconds", (double)c->start_timeout_ns / 1e9) &&
	     gpushare_json_str(o, "gpu", c->gpu) && gpushare_json_str_or_null(o, "mps_pipe_dir", c->mps_pipe_dir) &&
	     gpushare_json_bool(o, "ceiling", c->ceiling) && gpushare_json_bool(o, "preload", c->preload) &&
	     gpushare_openloop_json_config(o, c);
	ok = ok && (arr = gpushare_json_arr(o, "thread_percentage")) != NULL;
	for (int i = 0; ok && i < c->n_thread_percentage; i++)
		ok = gpushare_json_num(arr, NULL, c->thread_percentage[i]);
	ok = ok && (arr = gpushare_json_arr(o, "mem_limit_bytes")) != NULL;
	for (int i = 0; ok && i < c->n_mem_limit; i++)
		ok = gpushare_json_num(arr, NULL, (double)c->mem_limit_bytes[i]);
	ok = ok && (arr = gpushare_json_arr(o, "priority")) != NULL;
	for (int i = 0; ok && i < c->n_priority; i++)
		ok = gpushare_json_num(arr, NULL, c->priority[i]);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* --gpus: the workers pinned to GPU g (by the UUID they were given). */
static void per_gpu(const struct gpushare_bench_report *r, const struct gpushare_bench_result *res, size_t g,
		    size_t *workers, double *rps, double *ips)
{
	*workers = 0;
	*rps = *ips = 0;
	for (size_t i = 0; i < res->n_workers; i++) {
		if (strcmp(res->workers[i].visible_devices, r->gpu_uuids[g]) != 0)
			continue;
		(*workers)++;
		*rps += res->workers[i].requests_per_second;
		*ips += res->workers[i].items_per_second;
	}
}

/* "gpus": per GPU of --gpus, its workers and their summed throughput (the
 * aggregate is the total). */
static bool json_gpus(cJSON *o, const struct gpushare_bench_report *r, const struct gpushare_bench_result *res)
{
	cJSON *arr = gpushare_json_arr(o, "gpus");
	bool ok = arr != NULL;

	for (size_t g = 0; ok && g < r->n_gpus; g++) {
		cJSON *e = gpushare_json_obj(arr, NULL);
		size_t n;
		double rps, ips;

		per_gpu(r, res, g, &n, &rps, &ips);
		ok = gpushare_json_num(e, "index", r->gpu_indices[g]) &&
		     gpushare_json_str(e, "uuid", r->gpu_uuids[g]) && gpushare_json_num(e, "workers", (double)n) &&
		     gpushare_json_num(e, "requests_per_second", rps) && gpushare_json_num(e, "items_per_second", ips);
	}
	return ok;
}

/* {n, mean, stddev, min, max, cv, median, lo, hi, coverage}; null when n == 0. */
static cJSON *json_stats(const struct gpushare_sample_stats *st)
{
	cJSON *o;
	bool ok, iv = gpushare_ci_has_interval(&st->median);

	if (st->n == 0)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	ok = o && gpushare_json_num(o, "n", (double)st->n) && gpushare_json_num(o, "mean", st->mean) &&
	     gpushare_json_num_if(o, "stddev", st->stddev, st->n >= 2) && gpushare_json_num(o, "min", st->min) &&
	     gpushare_json_num(o, "max", st->max) &&
	     gpushare_json_num_if(o, "cv", st->cv, isfinite(st->cv)) &&
	     gpushare_json_num(o, "median", st->median.median) &&
	     gpushare_json_num_if(o, "lo", st->median.lo, iv) && gpushare_json_num_if(o, "hi", st->median.hi, iv) &&
	     gpushare_json_num_if(o, "coverage", st->median.coverage, iv);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *json_summary(const struct gpushare_bench_summary *s)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o && gpushare_json_str(o, "strategy", gpushare_strategy_name(s->strategy)) &&
		  gpushare_json_str(o, "status", gpushare_result_status_name(s->status)) &&
		  gpushare_json_str_or_null(o, "reason", s->reason) &&
		  gpushare_json_num(o, "runs", (double)s->n_runs) &&
		  gpushare_json_num(o, "runs_ok", (double)s->n_ok) &&
		  gpushare_json_add(o, "items_per_second", json_stats(&s->items_per_second)) &&
		  gpushare_json_add(o, "requests_per_second", json_stats(&s->requests_per_second)) &&
		  gpushare_json_add(o, "mean_seconds", json_stats(&s->mean_seconds)) &&
		  gpushare_json_add(o, "p50_seconds", json_stats(&s->p50_seconds)) &&
		  gpushare_json_add(o, "p90_seconds", json_stats(&s->p90_seconds)) &&
		  gpushare_json_add(o, "p99_seconds", json_stats(&s->p99_seconds)) &&
		  gpushare_json_add(o, "p999_seconds", json_stats(&s->p999_seconds)) &&
		  gpushare_json_add(o, "fairness", json_stats(&s->fairness)) &&
		  gpushare_json_add(o, "efficiency", json_stats(&s->efficiency));

	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* {ratio, ratio_lo, ratio_hi, verdict, confidence, significant}. */
static cJSON *json_comparison(const struct gpushare_comparison *c)
{
	cJSON *o = cJSON_CreateObject();
	bool apart = c->verdict == GPUSHARE_VERDICT_HIGHER || c->verdict == GPUSHARE_VERDICT_LOWER;
	bool ok = o && gpushare_json_num_if(o, "ratio", c->ratio, isfinite(c->ratio)) &&
		  gpushare_json_num_if(o, "ratio_lo", c->ratio_lo, isfinite(c->ratio_lo)) &&
		  gpushare_json_num_if(o, "ratio_hi", c->ratio_hi, isfinite(c->ratio_hi)) &&
		  gpushare_json_str(o, "verdict", gpushare_verdict_name(c->verdict)) &&
		  gpushare_json_num_if(o, "confidence", c->confidence, apart) &&
		  (c->verdict == GPUSHARE_VERDICT_UNKNOWN ? gpushare_json_null(o, "significant")
							  : gpushare_json_bool(o, "significant", c->significant)) &&
		  gpushare_json_compare_method(o, c);

	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* The relative summary: every strategy with an OK run against the reference. */
static cJSON *json_relative(const struct gpushare_bench_report *r)
{
	int ref = gpushare_bench_reference(r);
	cJSON *o, *arr;
	bool ok;

	if (ref < 0)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	ok = o && gpushare_json_str(o, "reference", gpushare_strategy_name(r->summary[ref].strategy)) &&
	     (arr = gpushare_json_arr(o, "comparisons")) != NULL;
	for (size_t i = 0; ok && i < r->n_summary; i++) {
		struct gpushare_bench_relative rel;
		cJSON *c;

		if ((int)i == ref || !r->summary[i].n_ok)
			continue;
		gpushare_bench_relative(&r->summary[i], &r->summary[ref], &rel);
		c = gpushare_json_obj(arr, NULL);
		ok = gpushare_json_str(c, "strategy", gpushare_strategy_name(rel.strategy)) &&
		     gpushare_json_num_if(c, "throughput_ratio_mean", rel.ratio_mean, isfinite(rel.ratio_mean)) &&
		     gpushare_json_num_if(c, "throughput_ratio_stddev", rel.ratio_stddev, isfinite(rel.ratio_stddev)) &&
		     gpushare_json_add(c, "throughput", json_comparison(&rel.throughput)) &&
		     gpushare_json_add(c, "p99", json_comparison(&rel.p99));
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int gpushare_bench_report_json(const struct gpushare_bench_report *r, char **text)
{
	cJSON *doc = cJSON_CreateObject(), *meta, *gpu, *cmd, *cfg, *results, *ceil;
	bool ok = doc != NULL;

	*text = NULL;
	ok = ok && gpushare_json_str(doc, "$schema", SCHEMA_ID) &&
	     (meta = gpushare_json_obj(doc, "metadata")) != NULL &&
	     gpushare_json_str(meta, "gpushare_version", r->version) &&
	     gpushare_json_str(meta, "date", r->date) && gpushare_json_str(meta, "host", r->host) &&
	     gpushare_json_str_or_null(meta, "driver_version", r->driver_version) &&
	     (gpu = gpushare_json_obj(meta, "gpu")) != NULL &&
	     gpushare_json_num_if(gpu, "index", r->gpu_index, r->gpu_index >= 0) &&
	     gpushare_json_str_or_null(gpu, "name", r->gpu_name) &&
	     gpushare_json_str_or_null(gpu, "uuid", r->gpu_uuid) &&
	     (cmd = gpushare_json_arr(meta, "command_line")) != NULL;
	for (int i = 0; ok && r->config && i < r->config->argc; i++)
		ok = gpushare_json_str(cmd, NULL, r->config->argv[i]);
	if (ok && r->config) {
		cfg = json_config(r->config);
		ok = gpushare_json_add(doc, "config", cfg);
	}
	ok = ok && gpushare_json_bool(doc, "partial", r->partial) &&
	     gpushare_json_bool(doc, "interrupted", r->interrupted) &&
	     gpushare_json_bool(doc, "preloaded", r->preloaded);
	if (ok) {
		ceil = r->ceiling ? json_result(r->ceiling, r->config) : cJSON_CreateNull();
		ok = gpushare_json_add(doc, "ceiling", ceil);
	}
	ok = ok && gpushare_json_num(doc, "repeats", r->repeats > 0 ? r->repeats : 1) &&
	     (results = gpushare_json_arr(doc, "results")) != NULL;
	for (size_t i = 0; ok && i < r->n_results; i++) {
		cJSON *res = json_result(&r->results[i], r->config);

		ok = gpushare_json_add(results, NULL, res) && (!r->n_gpus || json_gpus(res, r, &r->results[i]));
	}
	if (ok && r->n_summary) {
		cJSON *sum = gpushare_json_arr(doc, "summary");

		ok = sum != NULL;
		for (size_t i = 0; ok && i < r->n_summary; i++) {
			cJSON *one = json_summary(&r->summary[i]);

			ok = gpushare_json_add(sum, NULL, one);
		}
		ok = ok && gpushare_json_add(doc, "relative", json_relative(r));
	} else if (ok) {
		ok = gpushare_json_null(doc, "summary") && gpushare_json_null(doc, "relative");
	}
	if (ok)
		*text = gpushare_json_print(doc, true);
	cJSON_Delete(doc);
	if (!*text)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory while building the JSON document");
	return GPUSHARE_OK;
}

/* ---- CSV ---- */

static const char csv_header[] =
	"strategy,row,worker,pid,requests,items,errors,window_seconds,requests_per_second,items_per_second,"
	"mean_seconds,stddev_seconds,p50_seconds,p90_seconds,p99_seconds,p999_seconds,max_seconds,"
	"sm_count,mem_free_bytes,thread_percentage,mem_limit,fairness,efficiency,tflops,partial,failed,"
	"repeat,status,"
	"offered_per_second,achieved_per_second,queued_at_end,unfinished,queue_p99_seconds,service_p99_seconds,"
	"workload,workers\n";

/* ",v" or "," when unknown. */
static void csv_num(FILE *f, double v, bool known)
{
	if (known && isfinite(v))
		fprintf(f, ",%.9g", v);
	else
		fputc(',', f);
}

static void csv_u64(FILE *f, uint64_t v, bool known)
{
	if (known)
		fprintf(f, ",%" PRIu64, v);
	else
		fputc(',', f);
}

/* The open-loop columns and the end of the line: known on the aggregate
 * row of an ok open-loop result, empty otherwise. */
/* The key columns every row ends with: "workload,workers" (the workload's
 * name, "command" for a command of one's own; the configured worker count),
 * so that CSVs of several runs can be joined. */
static char csv_key[GPUSHARE_BENCH_MAX_MIX * GPUSHARE_BENCH_MIX_LABEL + 32];

static void csv_open(FILE *f, const struct gpushare_bench_result *res, bool aggregate)
{
	static const struct gpushare_bench_openloop none;
	const struct gpushare_bench_openloop *o = res ? &res->open : &none;
	bool known = res && aggregate && o->on && res->status == GPUSHARE_RESULT_OK;

	csv_num(f, o->offered_rate, known);
	csv_num(f, o->achieved_rate, known);
	csv_u64(f, o->queued_at_end, known);
	csv_u64(f, o->unfinished, known);
	csv_num(f, o->queue_p99_seconds, known);
	csv_num(f, o->service_p99_seconds, known);
	fprintf(f, ",%s\n", csv_key);
}

static void csv_result(FILE *f, const struct gpushare_bench_result *res)
{
	const char *name = gpushare_strategy_name(res->strategy);
	bool fig = res->status == GPUSHARE_RESULT_OK, lat = fig && res->hist.count > 0;

	for (size_t i = 0; i < res->n_workers; i++) {
		const struct gpushare_bench_worker *w = &res->workers[i];
		bool ran = w->pid > 0, wl = ran && w->hist.count > 0, tp = ran && w->window_seconds > 0;

		fprintf(f, "%s,worker,%d,", name, w->index);
		if (ran)
			fprintf(f, "%d", (int)w->pid);
		csv_u64(f, w->requests, ran);
		csv_u64(f, w->items, ran);
		csv_u64(f, w->errors, ran);
		csv_num(f, w->window_seconds, tp);
		csv_num(f, w->requests_per_second, tp);
		csv_num(f, w->items_per_second, tp);
		csv_num(f, w->mean_seconds, wl);
		csv_num(f, w->stddev_seconds, wl);
		csv_num(f, w->p50_seconds, wl);
		csv_num(f, w->p90_seconds, wl);
		csv_num(f, w->p99_seconds, wl);
		csv_num(f, w->p999_seconds, wl);
		csv_num(f, w->max_seconds, wl);
		fputc(',', f);
		if (w->sm_count >= 0)
			fprintf(f, "%d", w->sm_count);
		fputc(',', f);
		if (w->mem_total_bytes > 0)
			fprintf(f, "%" PRIu64, w->mem_free_bytes);
		fputc(',', f);
		if (w->thread_percentage_seen >= 0)
			fprintf(f, "%g", w->thread_percentage_seen);
		fputc(',', f);
		gpushare_csv_write_field(f, w->mem_limit_seen);
		fprintf(f, ",,,,%s,%s,%d,%s", res->partial ? "true" : "false", w->failed ? "true" : "false",
			res->repeat, gpushare_result_status_name(res->status));
		csv_open(f, res, false);
	}
	fprintf(f, "%s,aggregate,,", name);
	csv_u64(f, res->requests, fig);
	csv_u64(f, res->items, fig);
	csv_u64(f, res->errors, fig);
	csv_num(f, res->window_seconds, fig);
	csv_num(f, res->requests_per_second, fig);
	csv_num(f, res->items_per_second, fig);
	csv_num(f, res->mean_seconds, lat);
	csv_num(f, res->stddev_seconds, lat);
	csv_num(f, res->p50_seconds, lat);
	csv_num(f, res->p90_seconds, lat);
	csv_num(f, res->p99_seconds, lat);
	csv_num(f, res->p999_seconds, lat);
	csv_num(f, res->max_seconds, lat);
	fputs(",,,,", f);
	csv_num(f, res->fairness, fig && res->n_workers > 0);
	csv_num(f, res->efficiency, fig && res->efficiency >= 0);
	csv_num(f, res->tflops, fig && res->tflops >= 0);
	fprintf(f, ",%s,%s,%d,%s", res->partial ? "true" : "false", fig ? "false" : "true", res->repeat,
		gpushare_result_status_name(res->status));
	csv_open(f, res, true);
	/* A mix: a row per member ("mix", the member's index in the worker
	 * column), its workers' figures together. */
	for (int m = 0; res->n_mix >= 2 && m < res->n_mix; m++) {
		const struct gpushare_bench_mix_result *x = &res->mix[m];
		bool ml = fig && x->requests > 0;

		fprintf(f, "%s,mix,%d,", name, m);
		csv_u64(f, x->requests, fig);
		csv_u64(f, x->items, fig);
		fputs(",,", f);
		csv_num(f, x->requests_per_second, fig);
		csv_num(f, x->items_per_second, fig);
		fputs(",,", f);
		csv_num(f, x->p50_seconds, ml);
		fputc(',', f);
		csv_num(f, x->p99_seconds, ml);
		fputs(",,,,", f);
		csv_num(f, x->thread_percentage_set, x->thread_percentage_set > 0);
		fputc(',', f);
		csv_num(f, x->fairness, fig);
		fprintf(f, ",,,%s,%s,%d,%s", res->partial ? "true" : "false", fig ? "false" : "true", res->repeat,
			gpushare_result_status_name(res->status));
		csv_open(f, NULL, false);
	}
}

/* Figure k (mean, stddev, min, max, median, lo, hi) of st; NaN unknown. */
static double stat_value(const struct gpushare_sample_stats *st, size_t k)
{
	if (!st->n)
		return NAN;
	switch (k) {
	case 0: return st->mean;
	case 1: return st->stddev;
	case 2: return st->min;
	case 3: return st->max;
	case 4: return st->median.median;
	case 5: return st->median.lo;
	default: return st->median.hi;
	}
}

/* Rows mean, stddev, min, max, median, lo, hi of a strategy over its
 * repeats, in the aggregate's columns. */
static void csv_summary(FILE *f, const struct gpushare_bench_summary *s)
{
	static const char *const rows[] = { "mean", "stddev", "min", "max", "median", "lo", "hi" };
	const struct gpushare_sample_stats *col[] = {
		&s->requests_per_second, &s->items_per_second, &s->mean_seconds, NULL, &s->p50_seconds,
		&s->p90_seconds, &s->p99_seconds, &s->p999_seconds, NULL,
	};

	for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
		fprintf(f, "%s,%s,,,,,,", gpushare_strategy_name(s->strategy), rows[k]);
		for (size_t c = 0; c < sizeof(col) / sizeof(col[0]); c++)
			csv_num(f, col[c] ? stat_value(col[c], k) : NAN, col[c] != NULL);
		fputs(",,,,", f);
		csv_num(f, stat_value(&s->fairness, k), true);
		csv_num(f, stat_value(&s->efficiency, k), true);
		fprintf(f, ",,,%s,,%s", s->n_ok ? "false" : "true", gpushare_result_status_name(s->status));
		csv_open(f, NULL, false);
	}
}

int gpushare_bench_write_csv(const struct gpushare_bench_report *r, FILE *f)
{
	const struct gpushare_bench_config *c = r->config;
	char label[GPUSHARE_BENCH_MAX_MIX * GPUSHARE_BENCH_MIX_LABEL];
	const char *wl = !c ? "" : gpushare_bench_workload_label(c, label, sizeof(label));

	snprintf(csv_key, sizeof(csv_key), "%s,", strpbrk(wl, ",\"\n") ? "" : wl);
	if (c)
		snprintf(csv_key + strlen(csv_key), sizeof(csv_key) - strlen(csv_key), "%d", c->workers);
	fputs(csv_header, f);
	if (r->ceiling)
		csv_result(f, r->ceiling);
	for (size_t i = 0; i < r->n_results; i++)
		csv_result(f, &r->results[i]);
	for (size_t i = 0; r->repeats >= 2 && i < r->n_summary; i++)
		csv_summary(f, &r->summary[i]);
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write CSV: %s", strerror(errno));
	return GPUSHARE_OK;
}

/* ---- table ---- */

/* A cell of the table: the formatted value, or "" when unknown. */
static const char *cell_seconds(double s, bool known, char *buf, size_t len)
{
	if (!known || !isfinite(s)) {
		buf[0] = '\0';
		return buf;
	}
	return gpushare_fmt_seconds(s, buf, len);
}

static const char *cell_si(double v, bool known, char *buf, size_t len)
{
	if (!known || !isfinite(v)) {
		buf[0] = '\0';
		return buf;
	}
	return gpushare_fmt_si(v, buf, len);
}

static const char *cell_sig(double v, bool known, char *buf, size_t len)
{
	if (!known || !isfinite(v)) {
		buf[0] = '\0';
		return buf;
	}
	return gpushare_fmt_sig(v, buf, len);
}

#define ROW_FMT "%-11s %7s %10s %9s %9s %9s %9s %9s %8s %6s  %s\n"

/* A telemetry value the driver did not give (negative) reads "unknown",
 * as JSON's null. */
static const char *known_or(double v, const char *text)
{
	return v >= 0 ? text : "unknown";
}

static void table_telemetry(FILE *f, const struct gpushare_bench_telemetry *t)
{
	char mem[24], util[16], umax[16], clk[24], thr[16], pw[24], num[24], ut[64];

	if (!t->samples)
		return;
	gpushare_fmt_percent(t->util_mean_pct / 100, util, sizeof(util));
	gpushare_fmt_percent(t->util_max_pct / 100, umax, sizeof(umax));
	gpushare_fmt_bytes((double)t->mem_used_max_bytes, mem, sizeof(mem));
	snprintf(clk, sizeof(clk), "%s MHz", gpushare_fmt_sig(t->sm_clock_mean_mhz, num, sizeof(num)));
	gpushare_fmt_percent(t->throttled_fraction, thr, sizeof(thr));
	snprintf(pw, sizeof(pw), "%s W", gpushare_fmt_sig(t->power_mean_watts, num, sizeof(num)));
	/* NVML gives no utilization under MIG: say so once, not "unknown" twice. */
	if (t->util_mean_pct < 0 && t->util_max_pct < 0)
		snprintf(ut, sizeof(ut), "utilization not measured");
	else
		snprintf(ut, sizeof(ut), "util %s mean, %s max", known_or(t->util_mean_pct, util),
			 known_or(t->util_max_pct, umax));
	fprintf(f, "  gpu: %s; memory %s max; SM clock %s mean; throttled %s; power %s mean\n", ut,
		t->mem_used_max_bytes > 0 ? mem : "unknown", known_or(t->sm_clock_mean_mhz, clk),
		known_or(t->throttled_fraction, thr), known_or(t->power_mean_watts, pw));
}

static void table_workers(FILE *f, const struct gpushare_bench_result *res, const char *indent)
{
	for (size_t i = 0; i < res->n_workers; i++) {
		const struct gpushare_bench_worker *w = &res->workers[i];
		char a[24], b[24], c[24], mean[24], tp[24], mem[24] = "-", sm[16] = "-";
		bool lat = w->pid > 0 && w->hist.count > 0;

		if (w->pid <= 0) {
			fprintf(f, "%sworker %-3d did not start\n", indent, w->index);
			continue;
		}
		if (w->sm_count >= 0)
			snprintf(sm, sizeof(sm), "%d", w->sm_count);
		if (w->mem_total_bytes > 0)
			gpushare_fmt_bytes((double)w->mem_free_bytes, mem, sizeof(mem));
		fprintf(f, "%sworker %-3d pid %-7d %9" PRIu64 " req %9s req/s  mean %s p50 %s p99 %s max %s  sm %s  free %s%s%s\n",
			indent, w->index, (int)w->pid, w->requests, cell_si(w->requests_per_second, w->window_seconds > 0, tp, sizeof(tp)),
			lat ? gpushare_fmt_seconds(w->mean_seconds, mean, sizeof(mean)) : "-",
			lat ? gpushare_fmt_seconds(w->p50_seconds, a, sizeof(a)) : "-",
			lat ? gpushare_fmt_seconds(w->p99_seconds, b, sizeof(b)) : "-",
			lat ? gpushare_fmt_seconds(w->max_seconds, c, sizeof(c)) : "-", sm, mem,
			w->failed ? "  FAILED" : "", w->errors ? "  (errors)" : "");
	}
}

/* A mix: a line per member, then the score. */
static void table_mix(FILE *f, const struct gpushare_bench_result *res, const struct gpushare_bench_config *cfg)
{
	bool fig = res->status == GPUSHARE_RESULT_OK;
	char a[24], b[24], c[24], d[24], share[48] = "";

	if (res->n_mix < 2 || !fig)
		return;
	for (int m = 0; m < res->n_mix; m++) {
		const struct gpushare_bench_mix_result *x = &res->mix[m];
		bool lat = x->requests > 0;

		if (x->thread_percentage_set > 0)
			snprintf(share, sizeof(share), ", threads %g%%", x->thread_percentage_set);
		fprintf(f, "  %s (%zu workers%s): %s, %s, p50 %s, p99 %s\n",
			cfg && m < cfg->n_mix ? cfg->mix[m].label : "?", res->n_workers / (size_t)res->n_mix, share,
			gpushare_fmt_rate(x->requests_per_second, "req/s", a, sizeof(a)),
			gpushare_fmt_rate(x->items_per_second, "items/s", b, sizeof(b)),
			lat ? gpushare_fmt_seconds(x->p50_seconds, c, sizeof(c)) : "-",
			lat ? gpushare_fmt_seconds(x->p99_seconds, d, sizeof(d)) : "-");
	}
	fprintf(f, "  score %s (the geometric mean of the workloads' items/s)\n",
		res->mix_score > 0 ? gpushare_fmt_sig(res->mix_score, a, sizeof(a)) : "none (a workload did nothing)");
}

static void table_row(FILE *f, const struct gpushare_bench_result *res, bool verbose,
		      const struct gpushare_bench_config *cfg)
{
	char workers[16], req[24], rps[24], ips[24], p50[24], p99[24], p999[24], fair[16], en[16];
	bool fig = res->status == GPUSHARE_RESULT_OK, lat = fig && res->hist.count > 0;
	const char *status = gpushare_result_status_name(res->status);

	if (fig && res->interrupted)
		status = "interrupted";
	snprintf(workers, sizeof(workers), "%zu", res->n_workers);
	if (fig)
		snprintf(req, sizeof(req), "%" PRIu64, res->requests);
	else
		req[0] = '\0';
	if (fig && res->efficiency < 0)
		snprintf(en, sizeof(en), "-");
	else
		cell_sig(res->efficiency, fig, en, sizeof(en));
	fprintf(f, ROW_FMT, gpushare_strategy_name(res->strategy), res->status == GPUSHARE_RESULT_SKIPPED ? "" : workers,
		req, cell_si(res->requests_per_second, fig, rps, sizeof(rps)),
		cell_si(res->items_per_second, fig, ips, sizeof(ips)), cell_seconds(res->p50_seconds, lat, p50, sizeof(p50)),
		cell_seconds(res->p99_seconds, lat, p99, sizeof(p99)),
		cell_seconds(res->p999_seconds, lat, p999, sizeof(p999)),
		cell_sig(res->fairness, fig && res->n_workers > 0, fair, sizeof(fair)), en, status);
	if (res->failure[0])
		fprintf(f, "  ! %s\n", res->failure);
	if (fig && res->tflops >= 0) {
		char tf[24];

		fprintf(f, "  %s TFLOP/s\n", gpushare_fmt_sig(res->tflops, tf, sizeof(tf)));
	}
	table_mix(f, res, cfg);
	gpushare_openloop_table(f, res, cfg);
	table_telemetry(f, &res->telemetry);
	if (verbose && res->status != GPUSHARE_RESULT_SKIPPED)
		table_workers(f, res, "  ");
}

/* "9.98k ± 120" (one run: "9.98k"). */
static const char *mean_pm(const struct gpushare_sample_stats *st, bool seconds, char *buf, size_t len)
{
	char m[24], sd[24];

	if (seconds) {
		gpushare_fmt_seconds(st->mean, m, sizeof(m));
		gpushare_fmt_seconds(st->stddev, sd, sizeof(sd));
	} else {
		gpushare_fmt_si(st->mean, m, sizeof(m));
		gpushare_fmt_si(st->stddev, sd, sizeof(sd));
	}
	if (st->n >= 2)
		snprintf(buf, len, "%s \u00b1 %s", m, sd);
	else
		snprintf(buf, len, "%s", m);
	return buf;
}

/* "min...max" of a figure. */
static const char *min_max(const struct gpushare_sample_stats *st, bool seconds, char *buf, size_t len)
{
	char a[24], b[24];

	if (seconds)
		snprintf(buf, len, "%s...%s", gpushare_fmt_seconds(st->min, a, sizeof(a)), gpushare_fmt_seconds(st->max, b, sizeof(b)));
	else
		snprintf(buf, len, "%s...%s", gpushare_fmt_si(st->min, a, sizeof(a)), gpushare_fmt_si(st->max, b, sizeof(b)));
	return buf;
}

/* "median 9.99k, 75% interval 9.85k-10.1k" or "no interval (1 run)". */
static const char *median_iv(const struct gpushare_ci *ci, bool seconds, char *buf, size_t len)
{
	char m[24], lo[24], hi[24], cov[16];

	if (seconds)
		gpushare_fmt_seconds(ci->median, m, sizeof(m));
	else
		gpushare_fmt_si(ci->median, m, sizeof(m));
	if (!gpushare_ci_has_interval(ci)) {
		snprintf(buf, len, "median %s, no interval (%zu run)", m, ci->n);
		return buf;
	}
	if (seconds) {
		gpushare_fmt_seconds(ci->lo, lo, sizeof(lo));
		gpushare_fmt_seconds(ci->hi, hi, sizeof(hi));
	} else {
		gpushare_fmt_si(ci->lo, lo, sizeof(lo));
		gpushare_fmt_si(ci->hi, hi, sizeof(hi));
	}
	snprintf(buf, len, "median %s, %s interval %s-%s", m, gpushare_fmt_coverage(ci->coverage, cov, sizeof(cov)), lo,
		 hi);
	return buf;
}

/* The table of repeated runs: one row per strategy of means over its OK
 * runs, each followed by its spread. */
static void summary_row(FILE *f, const struct gpushare_bench_report *r, const struct gpushare_bench_summary *s,
			bool verbose)
{
	char runs[24], rps[24], ips[24], p50[24], p99[24], p999[24], fair[16], en[16], a[64], b[64], c[96];
	bool fig = s->n_ok > 0;
	int workers = r->config ? r->config->workers : 0;
	char wk[16];

	snprintf(wk, sizeof(wk), "%d", workers);
	snprintf(runs, sizeof(runs), "%zu/%zu ok", s->n_ok, s->n_runs);
	if (fig && !s->efficiency.n)
		snprintf(en, sizeof(en), "-");
	else
		cell_sig(s->efficiency.mean, fig, en, sizeof(en));
	fprintf(f, ROW_FMT, gpushare_strategy_name(s->strategy), wk, runs,
		cell_si(s->requests_per_second.mean, fig, rps, sizeof(rps)),
		cell_si(s->items_per_second.mean, fig, ips, sizeof(ips)),
		cell_seconds(s->p50_seconds.mean, fig && s->p50_seconds.n, p50, sizeof(p50)),
		cell_seconds(s->p99_seconds.mean, fig && s->p99_seconds.n, p99, sizeof(p99)),
		cell_seconds(s->p999_seconds.mean, fig && s->p999_seconds.n, p999, sizeof(p999)),
		cell_sig(s->fairness.mean, fig && s->fairness.n, fair, sizeof(fair)), en,
		gpushare_result_status_name(s->status));
	if (fig) {
		fprintf(f, "  items/s %s, %s, %s\n", mean_pm(&s->items_per_second, false, a, sizeof(a)),
			min_max(&s->items_per_second, false, b, sizeof(b)),
			median_iv(&s->items_per_second.median, false, c, sizeof(c)));
		if (s->p99_seconds.n)
			fprintf(f, "  p99     %s, %s, %s\n", mean_pm(&s->p99_seconds, true, a, sizeof(a)),
				min_max(&s->p99_seconds, true, b, sizeof(b)),
				median_iv(&s->p99_seconds.median, true, c, sizeof(c)));
	}
	for (size_t i = 0; i < r->n_results; i++) {
		const struct gpushare_bench_result *res = &r->results[i];

		if (res->strategy != s->strategy)
			continue;
		if (res->failure[0])
			fprintf(f, "  ! repeat %d: %s: %s\n", res->repeat + 1, gpushare_result_status_name(res->status),
				res->failure);
		if (!verbose)
			continue;
		fprintf(f, "  repeat %d: %s items/s, p99 %s, %s\n", res->repeat + 1,
			cell_si(res->items_per_second, res->status == GPUSHARE_RESULT_OK, ips, sizeof(ips)),
			cell_seconds(res->p99_seconds, res->status == GPUSHARE_RESULT_OK &&
			res->hist.count, p99, sizeof(p99)),
			gpushare_result_status_name(res->status));
		table_telemetry(f, &res->telemetry);
		if (res->status != GPUSHARE_RESULT_SKIPPED)
			table_workers(f, res, "    ");
	}
}

int gpushare_bench_write_relative(const struct gpushare_bench_report *r, FILE *f)
{
	int ref = gpushare_bench_reference(r);

	for (size_t i = 0; ref >= 0 && i < r->n_summary; i++) {
		const struct gpushare_bench_summary *s = &r->summary[i], *b = &r->summary[ref];
		struct gpushare_bench_relative rel;
		char ratio[24], sd[24], pa[24], pb[24], conf[16], verdict[160];

		if ((int)i == ref || !s->n_ok)
			continue;
		gpushare_bench_relative(s, b, &rel);
		gpushare_fmt_sig(rel.ratio_mean, ratio, sizeof(ratio));
		if (isfinite(rel.ratio_stddev))
			snprintf(sd, sizeof(sd), " \u00b1 %s", gpushare_fmt_sig(rel.ratio_stddev, pa, sizeof(pa)));
		else
			sd[0] = '\0';
		switch (rel.throughput.verdict) {
		case GPUSHARE_VERDICT_TIE:
			if (rel.throughput.method == GPUSHARE_METHOD_WELCH_LOG)
				snprintf(verdict, sizeof(verdict), "tie: the 95%% t interval on logs holds 1");
			else
				snprintf(verdict, sizeof(verdict), "tie: the intervals of the medians overlap");
			break;
		case GPUSHARE_VERDICT_HIGHER:
		case GPUSHARE_VERDICT_LOWER:
			if (rel.throughput.method == GPUSHARE_METHOD_WELCH_LOG) {
				char lo[24], hi[24];

				snprintf(verdict, sizeof(verdict), "%s, significant: %s-%s, t test on logs, p %s %.2g",
					 rel.throughput.verdict == GPUSHARE_VERDICT_HIGHER ? "higher" : "lower",
					 gpushare_fmt_ratio(rel.throughput.t_lo, lo, sizeof(lo)),
					 gpushare_fmt_ratio(rel.throughput.t_hi, hi, sizeof(hi)),
					 rel.throughput.p_value < 0.001 ? "<" : "=",
					 rel.throughput.p_value < 0.001 ? 0.001 : rel.throughput.p_value);
				break;
			}
			gpushare_fmt_coverage(rel.throughput.confidence, conf, sizeof(conf));
			snprintf(verdict, sizeof(verdict), "%s at %s confidence%s",
				 rel.throughput.verdict == GPUSHARE_VERDICT_HIGHER ? "higher" : "lower", conf,
				 rel.throughput.significant ? "" : ", below 95%: not significant");
			break;
		default:
			snprintf(verdict, sizeof(verdict), "no interval with %zu run%s: give --repeats 2 or more for a verdict",
				 s->n_ok < b->n_ok ? s->n_ok : b->n_ok, (s->n_ok < b->n_ok ? s->n_ok : b->n_ok) == 1 ? "" : "s");
			break;
		}
		fprintf(f, "%s: %s%s times the throughput of %s, p99 %s vs %s (%s)\n", gpushare_strategy_name(s->strategy),
			ratio, sd, gpushare_strategy_name(b->strategy),
			/* The table's p99 (the mean over the repeats), so that one p99 is shown. */
			gpushare_fmt_seconds(s->p99_seconds.mean, pa, sizeof(pa)),
			gpushare_fmt_seconds(b->p99_seconds.mean, pb, sizeof(pb)), verdict);
	}
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the table: %s", strerror(errno));
	return GPUSHARE_OK;
}

int gpushare_bench_write_table(const struct gpushare_bench_report *r, FILE *f, bool verbose)
{
	const struct gpushare_bench_config *c = r->config;
	bool jobs = c && c->command && c->command_mode == GPUSHARE_CMD_JOB;
	bool repeated = r->repeats >= 2 && r->n_summary;
	char label[GPUSHARE_BENCH_MAX_MIX * GPUSHARE_BENCH_MIX_LABEL];

	if (c && c->command)
		fprintf(f, "command '%s' in %s mode, batch %ld, %d worker%s, ", c->command[0],
			gpushare_cmd_mode_name(c->command_mode), c->wl.batch, c->workers, c->workers == 1 ? "" : "s");
	else if (c && c->n_mix >= 2)
		fprintf(f, "a mix of %d workloads (%s), batch %ld, %d workers (%d each), ", c->n_mix,
			gpushare_bench_workload_label(c, label, sizeof(label)), c->wl.batch, c->workers,
			c->workers / c->n_mix);
	else if (c && c->wl.desc)
		fprintf(f, "workload %s, batch %ld, %d worker%s, ", c->wl.desc->name, c->wl.batch, c->workers,
			c->workers == 1 ? "" : "s");
	if (c && (c->wl.desc || c->command)) {
		char d[24], w[24], rate[32];

		if (c->load == GPUSHARE_LOAD_OPEN)
			fprintf(f, "open loop, %s arrivals at %s/s, %s dispatch%s, ", gpushare_arrival_name(c->arrival),
				gpushare_fmt_si(c->rate, rate, sizeof(rate)), gpushare_dispatch_name(c->dispatch),
				c->find_peak ? " (first step of --find-peak)" : "");
		if (c->requests)
			fprintf(f, "%" PRIu64 " %s per worker", c->requests, jobs ? "jobs" : "requests");
		else
			fprintf(f, "%s window", gpushare_fmt_seconds((double)c->duration_ns / 1e9, d, sizeof(d)));
		if (c->warmup_adaptive && !c->requests && c->load != GPUSHARE_LOAD_OPEN && !c->command)
			fprintf(f, " after a warm-up until the rate is stable (at most %s)",
				gpushare_fmt_seconds((double)c->warmup_ns / 1e9, w, sizeof(w)));
		else
			fprintf(f, " after %s warm-up", gpushare_fmt_seconds((double)c->warmup_ns / 1e9, w, sizeof(w)));
		if (repeated)
			fprintf(f, ", %d repeats (interleaved; figures are means)", r->repeats);
		if (r->gpu_name[0])
			fprintf(f, ", GPU %d %s", r->gpu_index, r->gpu_name);
		fputc('\n', f);
	}
	fprintf(f, ROW_FMT, "strategy", "workers", repeated ? "runs" : "requests", "req/s", "items/s", "p50", "p99",
		"p99.9", "fairness", "E_N", "status");
	if (r->ceiling)
		table_row(f, r->ceiling, verbose, c);
	if (repeated) {
		for (size_t i = 0; i < r->n_summary; i++)
			summary_row(f, r, &r->summary[i], verbose);
	} else {
		for (size_t i = 0; i < r->n_results; i++) {
			table_row(f, &r->results[i], verbose, c);
			for (size_t g = 0; r->n_gpus > 1 && g < r->n_gpus; g++) {
				char rb[24], ib[24];
				size_t n;
				double rps, ips;

				per_gpu(r, &r->results[i], g, &n, &rps, &ips);
				fprintf(f, "  GPU %d %s: %zu workers, %s, %s\n", r->gpu_indices[g], r->gpu_uuids[g], n,
					gpushare_fmt_rate(rps, "req/s", rb, sizeof(rb)),
					gpushare_fmt_rate(ips, "items/s", ib, sizeof(ib)));
			}
			/* Job mode: "requests" are jobs and the window of K jobs is the makespan. */
			if (jobs && c->requests && r->results[i].status == GPUSHARE_RESULT_OK) {
				char ms[24], jr[24];

				fprintf(f, "  jobs: %" PRIu64 " in a makespan of %s, %s\n", r->results[i].requests,
					gpushare_fmt_seconds(r->results[i].window_seconds, ms, sizeof(ms)),
					gpushare_fmt_rate(r->results[i].requests_per_second, "jobs/s", jr, sizeof(jr)));
			}
		}
	}
	if (c && c->n_mix >= 2 && (repeated || r->n_summary >= 2))
		fprintf(f, "(a mix: items/s over the repeats and the comparison below are of the score, the geometric "
			"mean of its workloads' items/s)\n");
	if (r->n_summary)
		gpushare_bench_write_relative(r, f);
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the table: %s", strerror(errno));
	return GPUSHARE_OK;
}

