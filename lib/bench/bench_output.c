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
#include "json_util.h"

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

/* Each adder returns false when cJSON ran out of memory. */
static bool jnum(cJSON *o, const char *k, double v)
{
	return cJSON_AddNumberToObject(o, k, isfinite(v) ? v : 0) != NULL;
}

static bool jnum_or_null(cJSON *o, const char *k, double v, bool known)
{
	return known ? jnum(o, k, v) : cJSON_AddNullToObject(o, k) != NULL;
}

static bool jstr_or_null(cJSON *o, const char *k, const char *s)
{
	return s && *s ? cJSON_AddStringToObject(o, k, s) != NULL : cJSON_AddNullToObject(o, k) != NULL;
}

/* Latency figures; null when nothing was recorded (known false). */
static bool json_latency(cJSON *o, bool known, double mean, double sd, double p50, double p90, double p99,
			 double p999, double max)
{
	return jnum_or_null(o, "mean_seconds", mean, known) && jnum_or_null(o, "stddev_seconds", sd, known) &&
	       jnum_or_null(o, "p50_seconds", p50, known) && jnum_or_null(o, "p90_seconds", p90, known) &&
	       jnum_or_null(o, "p99_seconds", p99, known) && jnum_or_null(o, "p999_seconds", p999, known) &&
	       jnum_or_null(o, "max_seconds", max, known);
}

/* The histogram of a result as its non-empty buckets: upper bounds in
 * seconds and counts (what the report draws latency CDFs from). */
static cJSON *json_hist(const struct gpushare_hist *h)
{
	cJSON *o = cJSON_CreateObject(), *le, *counts;
	bool ok = o && (le = cJSON_AddArrayToObject(o, "le_seconds")) != NULL &&
		  (counts = cJSON_AddArrayToObject(o, "counts")) != NULL;

	for (size_t b = 0; ok && b < GPUSHARE_HIST_BUCKETS; b++) {
		cJSON *x, *y;

		if (!h->buckets[b])
			continue;
		x = cJSON_CreateNumber((double)gpushare_hist_bucket_high(b) / 1e9);
		y = cJSON_CreateNumber((double)h->buckets[b]);
		ok = x && y && cJSON_AddItemToArray(le, x) && cJSON_AddItemToArray(counts, y);
		if (!ok) {
			cJSON_Delete(x);
			cJSON_Delete(y);
		}
	}
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

	ok = ok && jnum(o, "index", w->index) && jnum(o, "process", w->process) &&
	     jnum_or_null(o, "pid", w->pid, w->pid > 0);
	ok = ok && jnum_or_null(o, "requests", (double)w->requests, ran) &&
	     jnum_or_null(o, "items", (double)w->items, ran) &&
	     jnum(o, "items_per_request", (double)w->items_per_request) &&
	     jnum_or_null(o, "errors", (double)w->errors, ran) &&
	     jnum_or_null(o, "total_requests", (double)w->total_requests, ran) &&
	     jnum_or_null(o, "window_seconds", w->window_seconds, tp) &&
	     jnum_or_null(o, "requests_per_second", w->requests_per_second, tp) &&
	     jnum_or_null(o, "items_per_second", w->items_per_second, tp) &&
	     jnum_or_null(o, "min_seconds", w->min_seconds, lat) &&
	     json_latency(o, lat, w->mean_seconds, w->stddev_seconds, w->p50_seconds, w->p90_seconds, w->p99_seconds,
			  w->p999_seconds, w->max_seconds);
	ok = ok && jnum_or_null(o, "flops_per_request", w->flops_per_request, w->flops_per_request > 0);
	/* Limits in effect, as read back by the worker. */
	ok = ok && jnum_or_null(o, "sm_count", w->sm_count, w->sm_count >= 0) &&
	     jnum_or_null(o, "device", w->device, w->device >= 0) &&
	     jnum_or_null(o, "mem_free_bytes", (double)w->mem_free_bytes, w->mem_total_bytes > 0) &&
	     jnum_or_null(o, "mem_total_bytes", (double)w->mem_total_bytes, w->mem_total_bytes > 0) &&
	     jnum_or_null(o, "thread_percentage", w->thread_percentage_seen, w->thread_percentage_seen >= 0) &&
	     jstr_or_null(o, "mem_limit", w->mem_limit_seen) && jstr_or_null(o, "device_name", w->device_name);
	/* What gpushare set. */
	ok = ok && jnum_or_null(o, "thread_percentage_set", w->thread_percentage_set, w->thread_percentage_set > 0) &&
	     jnum_or_null(o, "mem_limit_set_bytes", (double)w->mem_limit_set_bytes, w->mem_limit_set_bytes > 0) &&
	     jnum_or_null(o, "priority_set", w->priority_set, w->priority_set >= 0) &&
	     jstr_or_null(o, "visible_devices", w->visible_devices);
	/* How it ended. */
	ok = ok && cJSON_AddStringToObject(o, "state", state_name(w->state)) &&
	     cJSON_AddBoolToObject(o, "failed", w->failed) &&
	     jnum_or_null(o, "exit_code", w->exit_code, w->exit_code >= 0) &&
	     jnum_or_null(o, "signal", w->signal, w->signal > 0) &&
	     jnum_or_null(o, "cuda_error", w->cuda_error, w->cuda_error != 0) &&
	     jstr_or_null(o, "message", w->message);
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
	ok = o && jnum(o, "samples", t->samples) &&
	     jnum_or_null(o, "util_mean_percent", t->util_mean_pct, t->util_mean_pct >= 0) &&
	     jnum_or_null(o, "util_max_percent", t->util_max_pct, t->util_max_pct >= 0) &&
	     jnum_or_null(o, "mem_used_max_bytes", (double)t->mem_used_max_bytes, t->mem_used_max_bytes > 0) &&
	     jnum_or_null(o, "sm_clock_mean_mhz", t->sm_clock_mean_mhz, t->sm_clock_mean_mhz >= 0) &&
	     jnum_or_null(o, "throttled_fraction", t->throttled_fraction, t->throttled_fraction >= 0) &&
	     jnum_or_null(o, "power_mean_watts", t->power_mean_watts, t->power_mean_watts >= 0);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *json_result(const struct gpushare_bench_result *res, const struct gpushare_bench_config *c)
{
	cJSON *o = cJSON_CreateObject(), *agg, *fail, *mps, *tel, *workers;
	bool ok = o != NULL;

	bool fig = res->status == GPUSHARE_RESULT_OK, lat = fig && res->hist.count > 0;

	ok = ok && cJSON_AddStringToObject(o, "strategy", gpushare_strategy_name(res->strategy)) &&
	     jnum(o, "repeat", res->repeat) &&
	     cJSON_AddStringToObject(o, "status", gpushare_result_status_name(res->status)) &&
	     jstr_or_null(o, "reason", fig ? "" : res->failure) &&
	     cJSON_AddBoolToObject(o, "partial", res->partial) &&
	     cJSON_AddBoolToObject(o, "interrupted", res->interrupted);
	if (ok && res->failure[0] && res->status != GPUSHARE_RESULT_SKIPPED) {
		ok = (fail = cJSON_AddObjectToObject(o, "failure")) != NULL &&
		     jnum_or_null(fail, "worker", res->failed_worker, res->failed_worker >= 0) &&
		     cJSON_AddStringToObject(fail, "message", res->failure);
	} else if (ok) {
		ok = cJSON_AddNullToObject(o, "failure") != NULL;
	}
	if (ok && res->mps_pipe_dir[0]) {
		ok = (mps = cJSON_AddObjectToObject(o, "mps")) != NULL &&
		     cJSON_AddStringToObject(mps, "pipe_dir", res->mps_pipe_dir) &&
		     cJSON_AddBoolToObject(mps, "daemon_started", res->mps_daemon_started);
	} else if (ok) {
		ok = cJSON_AddNullToObject(o, "mps") != NULL;
	}
	ok = ok && (agg = cJSON_AddObjectToObject(o, "aggregate")) != NULL &&
	     jnum(agg, "workers", (double)res->n_workers) && jnum_or_null(agg, "requests", (double)res->requests, fig) &&
	     jnum_or_null(agg, "items", (double)res->items, fig) && jnum_or_null(agg, "errors", (double)res->errors, fig) &&
	     jnum_or_null(agg, "window_seconds", res->window_seconds, fig) &&
	     jnum_or_null(agg, "warmup_seconds", res->warmup_seconds, fig) &&
	     jnum_or_null(agg, "requests_per_second", res->requests_per_second, fig) &&
	     jnum_or_null(agg, "items_per_second", res->items_per_second, fig) &&
	     json_latency(agg, lat, res->mean_seconds, res->stddev_seconds, res->p50_seconds, res->p90_seconds,
			  res->p99_seconds, res->p999_seconds, res->max_seconds) &&
	     gpushare_openloop_json_result(o, res, c) &&
	     jnum_or_null(agg, "fairness", res->fairness, fig && res->n_workers > 0) &&
	     jnum_or_null(agg, "efficiency", res->efficiency, fig && res->efficiency >= 0) &&
	     jnum_or_null(agg, "tflops", res->tflops, fig && res->tflops >= 0);
	if (ok) {
		cJSON *h = lat ? json_hist(&res->hist) : cJSON_CreateNull();

		ok = h && cJSON_AddItemToObject(agg, "histogram", h);
		if (!ok)
			cJSON_Delete(h);
	}
	if (ok) {
		tel = json_telemetry(&res->telemetry);
		ok = tel && cJSON_AddItemToObject(o, "telemetry", tel);
		if (!ok)
			cJSON_Delete(tel);
	}
	ok = ok && (workers = cJSON_AddArrayToObject(o, "workers")) != NULL;
	for (size_t i = 0; ok && i < res->n_workers; i++) {
		cJSON *w = json_worker(&res->workers[i]);

		ok = w && cJSON_AddItemToArray(workers, w);
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *json_config(const struct gpushare_bench_config *c)
{
	cJSON *o = cJSON_CreateObject(), *opts, *strat, *arr;
	const struct gpushare_wl_desc *d = c->wl.desc;
	bool ok = o != NULL;

	if (c->command)
		d = NULL; /* command mode (lib/bench_cmd.c): no built-in workload */
	ok = ok && cJSON_AddStringToObject(o, "workload", d ? d->name : "command") &&
	     (opts = cJSON_AddObjectToObject(o, "workload_options")) != NULL;
	if (ok && c->command) {
		ok = (arr = cJSON_AddArrayToObject(o, "command")) != NULL &&
		     cJSON_AddStringToObject(o, "command_mode", gpushare_cmd_mode_name(c->command_mode));
		for (size_t i = 0; ok && c->command[i]; i++) {
			cJSON *v = cJSON_CreateString(c->command[i]);

			ok = v && cJSON_AddItemToArray(arr, v);
		}
	} else if (ok) {
		ok = cJSON_AddNullToObject(o, "command") && cJSON_AddNullToObject(o, "command_mode");
	}
	for (size_t i = 0; ok && d && i < d->n_opts && i < GPUSHARE_WL_MAX_OPTS; i++)
		ok = cJSON_AddStringToObject(opts, d->opts[i].name, c->wl.values[i]) != NULL;
	ok = ok && jnum(o, "batch", (double)c->wl.batch) && jnum(o, "workers", c->workers) &&
	     (strat = cJSON_AddArrayToObject(o, "strategies")) != NULL;
	for (size_t i = 0; ok && i < c->n_strategies; i++) {
		cJSON *s = cJSON_CreateString(gpushare_strategy_name(c->strategies[i]));

		ok = s && cJSON_AddItemToArray(strat, s);
	}
	ok = ok && cJSON_AddStringToObject(o, "mode", c->requests ? "requests" : "duration") &&
	     jnum_or_null(o, "duration_seconds", (double)c->duration_ns / 1e9, c->requests == 0) &&
	     jnum_or_null(o, "requests_per_worker", (double)c->requests, c->requests > 0) &&
	     jnum(o, "warmup_seconds", (double)c->warmup_ns / 1e9) &&
	     cJSON_AddBoolToObject(o, "warmup_adaptive", c->warmup_adaptive) &&
	     jnum(o, "warmup_requests", (double)c->warmup_requests) &&
	     jnum(o, "start_timeout_seconds", (double)c->start_timeout_ns / 1e9) &&
	     cJSON_AddStringToObject(o, "gpu", c->gpu) && jstr_or_null(o, "mps_pipe_dir", c->mps_pipe_dir) &&
	     cJSON_AddBoolToObject(o, "ceiling", c->ceiling) && gpushare_openloop_json_config(o, c);
	ok = ok && (arr = cJSON_AddArrayToObject(o, "thread_percentage")) != NULL;
	for (int i = 0; ok && i < c->n_thread_percentage; i++) {
		cJSON *v = cJSON_CreateNumber(c->thread_percentage[i]);

		ok = v && cJSON_AddItemToArray(arr, v);
	}
	ok = ok && (arr = cJSON_AddArrayToObject(o, "mem_limit_bytes")) != NULL;
	for (int i = 0; ok && i < c->n_mem_limit; i++) {
		cJSON *v = cJSON_CreateNumber((double)c->mem_limit_bytes[i]);

		ok = v && cJSON_AddItemToArray(arr, v);
	}
	ok = ok && (arr = cJSON_AddArrayToObject(o, "priority")) != NULL;
	for (int i = 0; ok && i < c->n_priority; i++) {
		cJSON *v = cJSON_CreateNumber(c->priority[i]);

		ok = v && cJSON_AddItemToArray(arr, v);
	}
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
	cJSON *arr = cJSON_AddArrayToObject(o, "gpus");
	bool ok = arr != NULL;

	for (size_t g = 0; ok && g < r->n_gpus; g++) {
		cJSON *e = cJSON_CreateObject();
		size_t n;
		double rps, ips;

		per_gpu(r, res, g, &n, &rps, &ips);
		ok = e && cJSON_AddItemToArray(arr, e) && jnum(e, "index", r->gpu_indices[g]) &&
		     cJSON_AddStringToObject(e, "uuid", r->gpu_uuids[g]) && jnum(e, "workers", (double)n) &&
		     jnum(e, "requests_per_second", rps) && jnum(e, "items_per_second", ips);
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
	ok = o && jnum(o, "n", (double)st->n) && jnum(o, "mean", st->mean) &&
	     jnum_or_null(o, "stddev", st->stddev, st->n >= 2) && jnum(o, "min", st->min) && jnum(o, "max", st->max) &&
	     jnum_or_null(o, "cv", st->cv, isfinite(st->cv)) && jnum(o, "median", st->median.median) &&
	     jnum_or_null(o, "lo", st->median.lo, iv) && jnum_or_null(o, "hi", st->median.hi, iv) &&
	     jnum_or_null(o, "coverage", st->median.coverage, iv);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *json_summary(const struct gpushare_bench_summary *s)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o && cJSON_AddStringToObject(o, "strategy", gpushare_strategy_name(s->strategy)) &&
		  cJSON_AddStringToObject(o, "status", gpushare_result_status_name(s->status)) &&
		  jstr_or_null(o, "reason", s->reason) && jnum(o, "runs", (double)s->n_runs) &&
		  jnum(o, "runs_ok", (double)s->n_ok) &&
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
	bool ok = o && jnum_or_null(o, "ratio", c->ratio, isfinite(c->ratio)) &&
		  jnum_or_null(o, "ratio_lo", c->ratio_lo, isfinite(c->ratio_lo)) &&
		  jnum_or_null(o, "ratio_hi", c->ratio_hi, isfinite(c->ratio_hi)) &&
		  cJSON_AddStringToObject(o, "verdict", gpushare_verdict_name(c->verdict)) &&
		  jnum_or_null(o, "confidence", c->confidence, apart) &&
		  (c->verdict == GPUSHARE_VERDICT_UNKNOWN ? cJSON_AddNullToObject(o, "significant") != NULL
							  : cJSON_AddBoolToObject(o, "significant", c->significant) != NULL) &&
		  gpushare_json_add_method(o, c);

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
	ok = o && cJSON_AddStringToObject(o, "reference", gpushare_strategy_name(r->summary[ref].strategy)) &&
	     (arr = cJSON_AddArrayToObject(o, "comparisons")) != NULL;
	for (size_t i = 0; ok && i < r->n_summary; i++) {
		struct gpushare_bench_relative rel;
		cJSON *c;

		if ((int)i == ref || !r->summary[i].n_ok)
			continue;
		gpushare_bench_relative(&r->summary[i], &r->summary[ref], &rel);
		c = cJSON_CreateObject();
		ok = c && cJSON_AddItemToArray(arr, c) &&
		     cJSON_AddStringToObject(c, "strategy", gpushare_strategy_name(rel.strategy)) &&
		     jnum_or_null(c, "throughput_ratio_mean", rel.ratio_mean, isfinite(rel.ratio_mean)) &&
		     jnum_or_null(c, "throughput_ratio_stddev", rel.ratio_stddev, isfinite(rel.ratio_stddev)) &&
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
	ok = ok && cJSON_AddStringToObject(doc, "$schema", SCHEMA_ID) &&
	     (meta = cJSON_AddObjectToObject(doc, "metadata")) != NULL &&
	     cJSON_AddStringToObject(meta, "gpushare_version", r->version) &&
	     cJSON_AddStringToObject(meta, "date", r->date) && cJSON_AddStringToObject(meta, "host", r->host) &&
	     jstr_or_null(meta, "driver_version", r->driver_version) &&
	     (gpu = cJSON_AddObjectToObject(meta, "gpu")) != NULL &&
	     jnum_or_null(gpu, "index", r->gpu_index, r->gpu_index >= 0) && jstr_or_null(gpu, "name", r->gpu_name) &&
	     jstr_or_null(gpu, "uuid", r->gpu_uuid) && (cmd = cJSON_AddArrayToObject(meta, "command_line")) != NULL;
	for (int i = 0; ok && r->config && i < r->config->argc; i++) {
		cJSON *a = cJSON_CreateString(r->config->argv[i]);

		ok = a && cJSON_AddItemToArray(cmd, a);
	}
	if (ok && r->config) {
		cfg = json_config(r->config);
		ok = cfg && cJSON_AddItemToObject(doc, "config", cfg);
		if (!ok)
			cJSON_Delete(cfg);
	}
	ok = ok && cJSON_AddBoolToObject(doc, "partial", r->partial) &&
	     cJSON_AddBoolToObject(doc, "interrupted", r->interrupted);
	if (ok) {
		ceil = r->ceiling ? json_result(r->ceiling, r->config) : cJSON_CreateNull();
		ok = ceil && cJSON_AddItemToObject(doc, "ceiling", ceil);
		if (!ok)
			cJSON_Delete(ceil);
	}
	ok = ok && jnum(doc, "repeats", r->repeats > 0 ? r->repeats : 1) &&
	     (results = cJSON_AddArrayToObject(doc, "results")) != NULL;
	for (size_t i = 0; ok && i < r->n_results; i++) {
		cJSON *res = json_result(&r->results[i], r->config);

		ok = res && cJSON_AddItemToArray(results, res) && (!r->n_gpus || json_gpus(res, r, &r->results[i]));
	}
	if (ok && r->n_summary) {
		cJSON *sum = cJSON_AddArrayToObject(doc, "summary");

		ok = sum != NULL;
		for (size_t i = 0; ok && i < r->n_summary; i++) {
			cJSON *one = json_summary(&r->summary[i]);

			ok = one && cJSON_AddItemToArray(sum, one);
			if (!ok)
				cJSON_Delete(one);
		}
		ok = ok && gpushare_json_add(doc, "relative", json_relative(r));
	} else if (ok) {
		ok = cJSON_AddNullToObject(doc, "summary") && cJSON_AddNullToObject(doc, "relative");
	}
	if (ok)
		*text = gpushare_utf8_fix(cJSON_Print(doc));
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
	"offered_per_second,achieved_per_second,queued_at_end,unfinished,queue_p99_seconds,service_p99_seconds\n";

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
	fputc('\n', f);
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
	char mem[24], util[16], umax[16], clk[24], thr[16], pw[24];

	if (!t->samples)
		return;
	gpushare_fmt_percent(t->util_mean_pct / 100, util, sizeof(util));
	gpushare_fmt_percent(t->util_max_pct / 100, umax, sizeof(umax));
	gpushare_fmt_bytes((double)t->mem_used_max_bytes, mem, sizeof(mem));
	snprintf(clk, sizeof(clk), "%.0f MHz", t->sm_clock_mean_mhz);
	gpushare_fmt_percent(t->throttled_fraction, thr, sizeof(thr));
	snprintf(pw, sizeof(pw), "%.0f W", t->power_mean_watts);
	fprintf(f, "  gpu: util %s mean, %s max; memory %s max; SM clock %s mean; throttled %s; power %s mean\n",
		known_or(t->util_mean_pct, util), known_or(t->util_max_pct, umax),
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
	if (fig && res->tflops >= 0)
		fprintf(f, "  %.2f TFLOP/s\n", res->tflops);
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
			cell_seconds(res->p99_seconds, res->status == GPUSHARE_RESULT_OK && res->hist.count, p99, sizeof(p99)),
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
			gpushare_fmt_seconds(s->p99_seconds.median.median, pa, sizeof(pa)),
			gpushare_fmt_seconds(b->p99_seconds.median.median, pb, sizeof(pb)), verdict);
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

	if (c && c->command)
		fprintf(f, "command '%s' in %s mode, batch %ld, %d worker%s, ", c->command[0],
			gpushare_cmd_mode_name(c->command_mode), c->wl.batch, c->workers, c->workers == 1 ? "" : "s");
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
				size_t n;
				double rps, ips;

				per_gpu(r, &r->results[i], g, &n, &rps, &ips);
				fprintf(f, "  GPU %d %s: %zu workers, %.4g req/s, %.4g items/s\n", r->gpu_indices[g],
					r->gpu_uuids[g], n, rps, ips);
			}
			/* Job mode: "requests" are jobs and the window of K jobs is the makespan. */
			if (jobs && c->requests && r->results[i].status == GPUSHARE_RESULT_OK)
				fprintf(f, "  jobs: %" PRIu64 " in a makespan of %.3f s, %.2f jobs/s\n",
					r->results[i].requests, r->results[i].window_seconds,
					r->results[i].requests_per_second);
		}
	}
	if (r->n_summary)
		gpushare_bench_write_relative(r, f);
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the table: %s", strerror(errno));
	return GPUSHARE_OK;
}

