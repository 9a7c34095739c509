/*
 * The JSON document of benchmark results (docs/bench-schema.json): the
 * configuration, each strategy's result with its workers, telemetry and
 * open-loop figures, the repeats' summaries and the comparisons. It changes
 * only how results look, never what was measured; the CSV and the table
 * are bench_output.c's.
 *
 * Base units with the unit in the name (_seconds, _bytes); unknown values
 * are null. Only a result with status ok has figures: a failed or skipped
 * strategy prints null, never zeros.
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

#include "bench_mix.h"
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
	     gpushare_json_num_if(agg, "min_seconds", (double)res->hist.min_ns / 1e9, lat) &&
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

		bench_gpu_sum(r, res, g, &n, &rps, &ips);
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
