/*
 * Printers of benchmark results: the JSON document (docs/bench-schema.json),
 * CSV (one row per strategy x worker plus an aggregate row per strategy) and
 * the aligned table people read. They change only how results look, never
 * what was measured. Also the atomic file write used for --out.
 *
 * Machine output uses base units with the unit in the name (_seconds,
 * _bytes); unknown values are JSON null and empty CSV fields.
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
#include "gpushare/gpushare.h"
#include "gpushare/region.h"

#include "csv.h"
#include "openloop.h"

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

static bool json_latency(cJSON *o, double mean, double sd, double p50, double p90, double p99, double p999, double max)
{
	return jnum(o, "mean_seconds", mean) && jnum(o, "stddev_seconds", sd) && jnum(o, "p50_seconds", p50) &&
	       jnum(o, "p90_seconds", p90) && jnum(o, "p99_seconds", p99) && jnum(o, "p999_seconds", p999) &&
	       jnum(o, "max_seconds", max);
}

static cJSON *json_worker(const struct gpushare_bench_worker *w)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;

	ok = ok && jnum(o, "index", w->index) && jnum(o, "process", w->process) && jnum(o, "pid", w->pid);
	ok = ok && jnum(o, "requests", (double)w->requests) && jnum(o, "items", (double)w->items) &&
	     jnum(o, "items_per_request", (double)w->items_per_request) && jnum(o, "errors", (double)w->errors) &&
	     jnum(o, "total_requests", (double)w->total_requests) && jnum(o, "window_seconds", w->window_seconds) &&
	     jnum(o, "requests_per_second", w->requests_per_second) &&
	     jnum(o, "items_per_second", w->items_per_second) &&
	     jnum(o, "min_seconds", w->min_seconds) &&
	     json_latency(o, w->mean_seconds, w->stddev_seconds, w->p50_seconds, w->p90_seconds, w->p99_seconds,
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

	ok = ok && cJSON_AddStringToObject(o, "strategy", gpushare_strategy_name(res->strategy)) &&
	     cJSON_AddBoolToObject(o, "partial", res->partial) &&
	     cJSON_AddBoolToObject(o, "interrupted", res->interrupted);
	if (ok && res->failure[0]) {
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
	     jnum(agg, "workers", (double)res->n_workers) && jnum(agg, "requests", (double)res->requests) &&
	     jnum(agg, "items", (double)res->items) && jnum(agg, "errors", (double)res->errors) &&
	     jnum(agg, "window_seconds", res->window_seconds) &&
	     jnum(agg, "requests_per_second", res->requests_per_second) &&
	     jnum(agg, "items_per_second", res->items_per_second) &&
	     json_latency(agg, res->mean_seconds, res->stddev_seconds, res->p50_seconds, res->p90_seconds,
			  res->p99_seconds, res->p999_seconds, res->max_seconds) &&
	     gpushare_openloop_json_result(o, res, c) &&
	     jnum(agg, "fairness", res->fairness) &&
	     jnum_or_null(agg, "efficiency", res->efficiency, res->efficiency >= 0) &&
	     jnum_or_null(agg, "tflops", res->tflops, res->tflops >= 0);
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
	ok = ok && (results = cJSON_AddArrayToObject(doc, "results")) != NULL;
	for (size_t i = 0; ok && i < r->n_results; i++) {
		cJSON *res = json_result(&r->results[i], r->config);

		ok = res && cJSON_AddItemToArray(results, res);
	}
	if (ok)
		*text = cJSON_Print(doc);
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
	"offered_per_second,achieved_per_second,queued_at_end,unfinished,queue_p99_seconds,service_p99_seconds\n";

/* The open-loop columns (aggregate rows; empty in closed loop and on worker rows). */
static void csv_open(FILE *f, const struct gpushare_bench_result *res, bool aggregate)
{
	const struct gpushare_bench_openloop *o = &res->open;

	if (!aggregate || !o->on)
		fputs(",,,,,", f);
	else
		fprintf(f, "%.9g,%.9g,%" PRIu64 ",%" PRIu64 ",%.9g,%.9g", o->offered_rate, o->achieved_rate,
			o->queued_at_end, o->unfinished, o->queue_p99_seconds, o->service_p99_seconds);
	fputc('\n', f);
}

static void csv_result(FILE *f, const struct gpushare_bench_result *res)
{
	const char *name = gpushare_strategy_name(res->strategy);

	for (size_t i = 0; i < res->n_workers; i++) {
		const struct gpushare_bench_worker *w = &res->workers[i];

		fprintf(f, "%s,worker,%d,%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,",
			name, w->index, (int)w->pid, w->requests, w->items, w->errors, w->window_seconds,
			w->requests_per_second, w->items_per_second, w->mean_seconds, w->stddev_seconds, w->p50_seconds,
			w->p90_seconds, w->p99_seconds, w->p999_seconds, w->max_seconds);
		if (w->sm_count >= 0)
			fprintf(f, "%d", w->sm_count);
		fputc(',', f);
		if (w->mem_total_bytes > 0)
			fprintf(f, "%" PRIu64, w->mem_free_bytes);
		fputc(',', f);
		if (w->thread_percentage_seen >= 0)
			fprintf(f, "%g", w->thread_percentage_seen);
		fputc(',', f);
		csv_write_field(f, w->mem_limit_seen);
		fprintf(f, ",,,,%s,%s,", res->partial ? "true" : "false", w->failed ? "true" : "false");
		csv_open(f, res, false);
	}
	fprintf(f, "%s,aggregate,,,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,,,,,%.6g,",
		name, res->requests, res->items, res->errors, res->window_seconds, res->requests_per_second,
		res->items_per_second, res->mean_seconds, res->stddev_seconds, res->p50_seconds, res->p90_seconds,
		res->p99_seconds, res->p999_seconds, res->max_seconds, res->fairness);
	if (res->efficiency >= 0)
		fprintf(f, "%.6g", res->efficiency);
	fputc(',', f);
	if (res->tflops >= 0)
		fprintf(f, "%.6g", res->tflops);
	fprintf(f, ",%s,%s,", res->partial ? "true" : "false", res->failed_worker >= 0 ? "true" : "false");
	csv_open(f, res, true);
}

int gpushare_bench_write_csv(const struct gpushare_bench_report *r, FILE *f)
{
	fputs(csv_header, f);
	if (r->ceiling)
		csv_result(f, r->ceiling);
	for (size_t i = 0; i < r->n_results; i++)
		csv_result(f, &r->results[i]);
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write CSV: %s", strerror(errno));
	return GPUSHARE_OK;
}

/* ---- table ---- */

static const char *fmt_seconds(double s, char *buf, size_t len)
{
	if (s <= 0)
		snprintf(buf, len, "-");
	else if (s < 1e-6)
		snprintf(buf, len, "%.0fns", s * 1e9);
	else if (s < 1e-3)
		snprintf(buf, len, "%.1fus", s * 1e6);
	else if (s < 1)
		snprintf(buf, len, "%.2fms", s * 1e3);
	else
		snprintf(buf, len, "%.2fs", s);
	return buf;
}

static const char *fmt_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= (1ULL << 30))
		snprintf(buf, len, "%.1fGiB", (double)b / (double)(1ULL << 30));
	else
		snprintf(buf, len, "%.0fMiB", (double)b / (double)(1ULL << 20));
	return buf;
}

static void table_row(FILE *f, const struct gpushare_bench_result *res, bool verbose,
		      const struct gpushare_bench_config *cfg)
{
	char p50[16], p99[16], p999[16], en[16], status[16];

	if (res->efficiency >= 0)
		snprintf(en, sizeof(en), "%.2f", res->efficiency);
	else
		snprintf(en, sizeof(en), "-");
	snprintf(status, sizeof(status), "%s",
		 res->interrupted ? "interrupted" : res->partial ? "partial" : res->failed_worker >= 0 ? "failed" : "ok");
	fprintf(f, "%-11s %7zu %10" PRIu64 " %11.1f %11.1f %9s %9s %9s %8.2f %6s  %s\n",
		gpushare_strategy_name(res->strategy), res->n_workers, res->requests, res->requests_per_second,
		res->items_per_second, fmt_seconds(res->p50_seconds, p50, sizeof(p50)),
		fmt_seconds(res->p99_seconds, p99, sizeof(p99)), fmt_seconds(res->p999_seconds, p999, sizeof(p999)),
		res->fairness, en, status);
	if (res->failure[0])
		fprintf(f, "  ! %s\n", res->failure);
	if (res->tflops >= 0)
		fprintf(f, "  %.2f TFLOP/s\n", res->tflops);
	gpushare_openloop_table(f, res, cfg);
	if (res->telemetry.samples) {
		const struct gpushare_bench_telemetry *t = &res->telemetry;
		char mem[24];

		fprintf(f, "  gpu: util %.0f%% mean, %.0f%% max; memory %s max; SM clock %.0f MHz mean; throttled %.0f%%; power %.0f W mean\n",
			t->util_mean_pct, t->util_max_pct, fmt_bytes(t->mem_used_max_bytes, mem, sizeof(mem)),
			t->sm_clock_mean_mhz, t->throttled_fraction * 100, t->power_mean_watts);
	}
	if (!verbose)
		return;
	for (size_t i = 0; i < res->n_workers; i++) {
		const struct gpushare_bench_worker *w = &res->workers[i];
		char a[16], b[16], c[16], mean[16], mem[24] = "-", sm[16] = "-";

		if (w->sm_count >= 0)
			snprintf(sm, sizeof(sm), "%d", w->sm_count);
		if (w->mem_total_bytes > 0)
			fmt_bytes(w->mem_free_bytes, mem, sizeof(mem));
		fprintf(f, "  worker %-3d pid %-7d %9" PRIu64 " req %11.1f req/s  mean %s p50 %s p99 %s max %s  sm %s  free %s%s%s\n",
			w->index, (int)w->pid, w->requests, w->requests_per_second,
			fmt_seconds(w->mean_seconds, mean, sizeof(mean)), fmt_seconds(w->p50_seconds, a, sizeof(a)),
			fmt_seconds(w->p99_seconds, b, sizeof(b)), fmt_seconds(w->max_seconds, c, sizeof(c)), sm, mem,
			w->failed ? "  FAILED" : "", w->errors ? "  (errors)" : "");
	}
}

int gpushare_bench_write_table(const struct gpushare_bench_report *r, FILE *f, bool verbose)
{
	const struct gpushare_bench_config *c = r->config;

	bool jobs = c && c->command && c->command_mode == GPUSHARE_CMD_JOB;

	if (c && c->command)
		fprintf(f, "command '%s' in %s mode, batch %ld, %d workers, ", c->command[0],
			gpushare_cmd_mode_name(c->command_mode), c->wl.batch, c->workers);
	else if (c && c->wl.desc)
		fprintf(f, "workload %s, batch %ld, %d workers, ", c->wl.desc->name, c->wl.batch, c->workers);
	if (c && (c->wl.desc || c->command)) {
		if (c->load == GPUSHARE_LOAD_OPEN)
			fprintf(f, "open loop, %s arrivals at %.6g/s, %s dispatch%s, ", gpushare_arrival_name(c->arrival),
				c->rate, gpushare_dispatch_name(c->dispatch), c->find_peak ? " (first step of --find-peak)" : "");
		if (c->requests)
			fprintf(f, "%" PRIu64 " %s per worker", c->requests, jobs ? "jobs" : "requests");
		else
			fprintf(f, "%.3g s window", (double)c->duration_ns / 1e9);
		fprintf(f, " after %.3g s warm-up", (double)c->warmup_ns / 1e9);
		if (r->gpu_name[0])
			fprintf(f, ", GPU %d %s", r->gpu_index, r->gpu_name);
		fputc('\n', f);
	}
	fprintf(f, "%-11s %7s %10s %11s %11s %9s %9s %9s %8s %6s  %s\n", "strategy", "workers", "requests", "req/s",
		"items/s", "p50", "p99", "p99.9", "fairness", "E_N", "status");
	if (r->ceiling)
		table_row(f, r->ceiling, verbose, c);
	for (size_t i = 0; i < r->n_results; i++) {
		table_row(f, &r->results[i], verbose, c);
		/* Job mode: "requests" are jobs and the window of K jobs is the makespan. */
		if (jobs && c->requests)
			fprintf(f, "  jobs: %" PRIu64 " in a makespan of %.3f s, %.2f jobs/s\n", r->results[i].requests,
				r->results[i].window_seconds, r->results[i].requests_per_second);
	}
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the table: %s", strerror(errno));
	return GPUSHARE_OK;
}

/* ---- files ---- */

static int split_path(const char *path, char *dir, size_t dlen, char *base, size_t blen)
{
	char a[GPUSHARE_PATH_MAX], b[GPUSHARE_PATH_MAX];

	if (!path || !*path || strlen(path) >= sizeof(a))
		return gpushare_fail(GPUSHARE_E_IO, "invalid output path '%s'", path ? path : "");
	snprintf(a, sizeof(a), "%s", path);
	snprintf(b, sizeof(b), "%s", path);
	snprintf(dir, dlen, "%s", dirname(a));
	snprintf(base, blen, "%s", basename(b));
	return GPUSHARE_OK;
}

int gpushare_check_writable(const char *path)
{
	char dir[GPUSHARE_PATH_MAX], base[GPUSHARE_PATH_MAX];
	struct stat st;
	int rc = split_path(path, dir, sizeof(dir), base, sizeof(base));

	if (rc)
		return rc;
	if (path[strlen(path) - 1] == '/' || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': it is a directory", path);
	if (stat(dir, &st) != 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': directory '%s': %s", path, dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': '%s' is not a directory", path, dir);
	if (access(dir, W_OK | X_OK) != 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': directory '%s': %s", path, dir, strerror(errno));
	return GPUSHARE_OK;
}

int gpushare_write_file_atomic(const char *path, const char *data, size_t len)
{
	char dir[GPUSHARE_PATH_MAX], base[GPUSHARE_PATH_MAX], tmp[GPUSHARE_PATH_MAX + 32];
	size_t off = 0;
	int fd, dfd, rc = split_path(path, dir, sizeof(dir), base, sizeof(base));

	if (rc)
		return rc;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.tmp-XXXXXX", dir, base) >= sizeof(tmp))
		return gpushare_fail(GPUSHARE_E_IO, "output path '%s' is too long", path);
	fd = mkstemp(tmp);
	if (fd < 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot create a temporary file in '%s': %s", dir, strerror(errno));
	if (fchmod(fd, 0644) != 0)
		goto fail;
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			goto fail;
		off += (size_t)w;
	}
	if (fsync(fd) != 0)
		goto fail;
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) != 0)
		goto fail;
	/* Make the rename itself durable. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return GPUSHARE_OK;
fail:
	rc = gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rc;
}
