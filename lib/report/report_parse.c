/*
 * One record of a sweep's results file (format in docs/sweep.md) into a
 * struct gpushare_report_run: its cell, status, figures, histogram,
 * devices and names, the open-loop and peak-search fields through
 * report_load_curve.c and report_peak.c. A record that lacks a field or has
 * one of the wrong type is refused with the reason; report_load.c lists it
 * with its line number and goes on.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushare/bench.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "grow.h"
#include "hash.h"
#include "index.h"
#include "report_internal.h"
#include "report_load_curve.h"
#include "report_peak.h"


static int strategy_from_name(const char *s)
{
	for (int i = 0; i < GPUSHARE_STRATEGY_COUNT; i++) {
		if (!strcmp(gpushare_strategy_name(i), s))
			return i;
	}
	return -1;
}

const char *gpushare_report_get_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool get_num(const cJSON *o, const char *k, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return false;
	*out = v->valuedouble;
	return true;
}

/* A number in [lo, hi], else NaN. */
static double get_opt(const cJSON *o, const char *k, double lo, double hi)
{
	double v;

	if (!o || !get_num(o, k, &v) || v < lo || v > hi)
		return NAN;
	return v;
}

/* aggregate.histogram: {"le_seconds": [...], "counts": [...]}, equal
 * lengths, bounds ascending. Absent or null: none. */
static int parse_hist(const cJSON *h, struct gpushare_report_run *run)
{
	const cJSON *le = cJSON_GetObjectItemCaseSensitive(h, "le_seconds");
	const cJSON *counts = cJSON_GetObjectItemCaseSensitive(h, "counts"), *a, *b;
	int n;
	size_t i = 0;
	double prev = 0;

	run->hist_le_ns = run->hist_counts = NULL;
	run->hist_n = 0;
	if (!h || cJSON_IsNull(h))
		return GPUSHARE_OK;
	if (!cJSON_IsArray(le) || !cJSON_IsArray(counts) || (n = cJSON_GetArraySize(le)) != cJSON_GetArraySize(counts) ||
	    n > (int)GPUSHARE_HIST_BUCKETS)
		return gpushare_fail(GPUSHARE_E_INVAL, "'aggregate.histogram' is not two arrays of the same length");
	if (n == 0)
		return GPUSHARE_OK;
	run->hist_le_ns = malloc((size_t)n * sizeof(uint64_t));
	run->hist_counts = malloc((size_t)n * sizeof(uint64_t));
	if (!run->hist_le_ns || !run->hist_counts) {
		free(run->hist_le_ns);
		free(run->hist_counts);
		run->hist_le_ns = run->hist_counts = NULL;
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (a = le->child, b = counts->child; a && b; a = a->next, b = b->next, i++) {
		if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || !(a->valuedouble > prev) || a->valuedouble > 1e4 ||
		    !(b->valuedouble >= 0) || b->valuedouble > 1e15) {
			free(run->hist_le_ns);
			free(run->hist_counts);
			run->hist_le_ns = run->hist_counts = NULL;
			return gpushare_fail(GPUSHARE_E_INVAL, "'aggregate.histogram' has a bad bucket");
		}
		prev = a->valuedouble;
		run->hist_le_ns[i] = (uint64_t)llround(a->valuedouble * 1e9);
		run->hist_counts[i] = (uint64_t)b->valuedouble;
	}
	run->hist_n = i;
	return GPUSHARE_OK;
}

/* The MIG profile in a device name ("NVIDIA H100 80GB HBM3 MIG 1g.10gb":
 * "1g.10gb"), into out; false when the name names none. */
static bool mig_profile_of(const char *name, char *out, size_t len)
{
	const char *m = name ? strstr(name, " MIG ") : NULL;
	size_t n = 0;

	if (!m || len == 0)
		return false;
	for (m += 5; *m && n + 1 < len; m++) {
		if (!(isalnum((unsigned char)*m) || *m == '.' || *m == '+'))
			break;
		out[n++] = *m;
	}
	out[n] = '\0';
	return n > 0 && !(isalnum((unsigned char)*m) || *m == '.' || *m == '+');
}

/* The layout: each distinct visible device (each worker, where none is
 * recorded) counted under its device_name's MIG profile, as text in
 * profile order. "" when no worker names a profile, a worker of the run
 * names none, or there are more than GPUSHARE_REPORT_MIG_PROFILES. */
static void mig_layout_of(const cJSON *workers, struct gpushare_report_text *t)
{
	struct gpushare_report_mig_layout l = { 0 };
	const char *seen[GPUSHARE_BENCH_MAX_WORKERS];
	const cJSON *w;
	size_t n_seen = 0, order[GPUSHARE_REPORT_MIG_PROFILES];

	cJSON_ArrayForEach(w, workers) {
		const char *vis = gpushare_report_get_str(w, "visible_devices");
		char prof[sizeof(l.profile[0])];
		size_t i;

		if (!mig_profile_of(gpushare_report_get_str(w, "device_name"), prof, sizeof(prof)))
			return;
		if (vis) {
			for (i = 0; i < n_seen && strcmp(seen[i], vis); i++)
				;
			if (i < n_seen)
				continue; /* an instance already counted */
			if (n_seen < GPUSHARE_BENCH_MAX_WORKERS)
				seen[n_seen++] = vis;
		}
		for (i = 0; i < l.n && strcmp(l.profile[i], prof); i++)
			;
		if (i == l.n) {
			if (l.n == GPUSHARE_REPORT_MIG_PROFILES)
				return;
			memcpy(l.profile[l.n], prof, sizeof(prof));
			l.count[l.n++] = 0;
		}
		l.count[i]++;
	}
	for (size_t i = 0; i < l.n; i++)
		order[i] = i;
	/* In profile name order, so one layout is one text whatever the workers' order. */
	for (size_t i = 1; i < l.n; i++)
		for (size_t j = i; j > 0 && strcmp(l.profile[order[j - 1]], l.profile[order[j]]) > 0; j--) {
			size_t x = order[j];

			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	t->mig_layout[0] = '\0';
	for (size_t i = 0; i < l.n; i++) {
		size_t used = strlen(t->mig_layout);
		int k = snprintf(t->mig_layout + used, sizeof(t->mig_layout) - used, "%s%s x%d", i ? " + " : "",
				 l.profile[order[i]], l.count[order[i]]);

		if (k < 0 || (size_t)k >= sizeof(t->mig_layout) - used) {
			t->mig_layout[0] = '\0';
			return;
		}
	}
}

int gpushare_report_mig_layout_parse(const char *text, struct gpushare_report_mig_layout *out)
{
	const char *p = text;

	memset(out, 0, sizeof(*out));
	if (!text || !*text)
		return GPUSHARE_OK;
	while (*p) {
		size_t n = 0;
		char *end;
		long c;

		if (out->n == GPUSHARE_REPORT_MIG_PROFILES)
			goto bad;
		while (isalnum((unsigned char)p[n]) || p[n] == '.' || p[n] == '+')
			n++;
		if (n == 0 || n >= sizeof(out->profile[0]) || strncmp(p + n, " x", 2))
			goto bad;
		memcpy(out->profile[out->n], p, n);
		out->profile[out->n][n] = '\0';
		p += n + 2;
		if (!isdigit((unsigned char)*p))
			goto bad;
		errno = 0;
		c = strtol(p, &end, 10);
		if (errno || c < 1 || c > 64)
			goto bad;
		out->count[out->n++] = (int)c;
		p = end;
		if (!strncmp(p, " + ", 3) && p[3])
			p += 3;
		else if (*p)
			goto bad;
	}
	return GPUSHARE_OK;
bad:
	memset(out, 0, sizeof(*out));
	return gpushare_fail(GPUSHARE_E_INVAL, "not a MIG layout: '%s'", text);
}

/* The workers' devices: the first device_name, and the number of distinct
 * visible_devices (a MIG run has one per instance). Optional: absent or
 * odd entries leave them unknown. */
static void load_devices(const cJSON *workers, struct gpushare_report_run *run, struct gpushare_report_text *t)
{
	const char *seen[GPUSHARE_BENCH_MAX_WORKERS];
	const cJSON *w;
	size_t n = 0;

	cJSON_ArrayForEach(w, workers) {
		const char *name = gpushare_report_get_str(w, "device_name"), *vis = gpushare_report_get_str(w, "visible_devices");
		size_t i;

		if (name && !t->device_name[0] && strlen(name) < sizeof(t->device_name))
			gpushare_utf8_copy(t->device_name, sizeof(t->device_name), name);
		if (!vis)
			continue;
		for (i = 0; i < n && strcmp(seen[i], vis); i++)
			;
		if (i == n && n < GPUSHARE_BENCH_MAX_WORKERS)
			seen[n++] = vis;
	}
	run->n_devices = (int)n;
	mig_layout_of(workers, t);
}

/* The record into run's figures and t's names (run's names are left NULL:
 * the caller points them at kept copies). */
int gpushare_report_parse_root(const cJSON *root, struct gpushare_report_run *run, struct gpushare_report_text *t)
{
	const cJSON *cell, *bench, *results, *res, *agg, *tel;
	const char *shape, *wl, *strat, *status, *key;
	double workers, batch, repeat, version;

	memset(run, 0, sizeof(*run));
	memset(t, 0, sizeof(*t));
	if (!cJSON_IsObject(root))
		return gpushare_fail(GPUSHARE_E_INVAL, "not a JSON object");
	if (!get_num(root, "gpushare_sweep_record", &version))
		return gpushare_fail(GPUSHARE_E_INVAL, "not a sweep record (no gpushare_sweep_record)");
	if (version != GPUSHARE_SWEEP_RECORD_VERSION)
		return gpushare_fail(GPUSHARE_E_INVAL, "record version %g is not supported (expected %d)", version,
				     GPUSHARE_SWEEP_RECORD_VERSION);
	cell = cJSON_GetObjectItemCaseSensitive(root, "cell");
	if (!cJSON_IsObject(cell))
		return gpushare_fail(GPUSHARE_E_INVAL, "missing 'cell'");
	shape = gpushare_report_get_str(cell, "shape");
	wl = gpushare_report_get_str(cell, "workload");
	strat = gpushare_report_get_str(cell, "strategy");
	key = gpushare_report_get_str(cell, "key");
	if (!shape || !wl || !strat || !key)
		return gpushare_fail(GPUSHARE_E_INVAL, "'cell' lacks shape, workload, strategy or key");
	/* A shape's name keeps room for its mps-split suffix (report.h). */
	if (strlen(shape) >= sizeof(t->shape) - 64 || strlen(wl) >= sizeof(t->workload) || strlen(key) >= sizeof(t->key))
		return gpushare_fail(GPUSHARE_E_INVAL, "'cell' has an overlong name");
	run->strategy = strategy_from_name(strat);
	if (run->strategy < 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "unknown strategy '%.40s'", strat);
	if (!get_num(cell, "workers", &workers) || workers < 1 || workers > GPUSHARE_BENCH_MAX_WORKERS ||
	    workers != floor(workers))
		return gpushare_fail(GPUSHARE_E_INVAL, "'cell.workers' is missing or not a worker count");
	if (!get_num(cell, "batch", &batch) || batch < 1 || batch > 1e12 || batch != floor(batch))
		return gpushare_fail(GPUSHARE_E_INVAL, "'cell.batch' is missing or not a batch size");
	if (!get_num(root, "repeat", &repeat) || repeat < 0 || repeat > 1e6 || repeat != floor(repeat))
		return gpushare_fail(GPUSHARE_E_INVAL, "'repeat' is missing or not a repeat index");
	status = gpushare_report_get_str(root, "status");
	if (!status)
		return gpushare_fail(GPUSHARE_E_INVAL, "missing 'status'");
	if (!strcmp(status, "ok"))
		run->status = GPUSHARE_RUN_OK;
	else if (!strcmp(status, "partial"))
		run->status = GPUSHARE_RUN_PARTIAL;
	else if (!strcmp(status, "failed"))
		run->status = GPUSHARE_RUN_FAILED;
	else
		return gpushare_fail(GPUSHARE_E_INVAL, "unknown status '%.40s'", status);
	{
		const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
		const char *why = err ? gpushare_report_get_str(err, "message") : NULL;

		if (!why || !*why)
			why = err ? gpushare_report_get_str(err, "code") : NULL;
		if (why && run->status != GPUSHARE_RUN_OK)
			gpushare_utf8_copy(t->error, sizeof(t->error), why);
	}
	/* Names reach HTML, plots and JSON: valid UTF-8 from here on. */
	gpushare_utf8_copy(t->shape, sizeof(t->shape), shape);
	gpushare_utf8_copy(t->workload, sizeof(t->workload), wl);
	gpushare_utf8_copy(t->key, sizeof(t->key), key);
	run->workers = (int)workers;
	run->batch = (long)batch;
	run->repeat = (int)repeat;
	if (get_num(cell, "rate_per_second", &run->rate) && !(run->rate > 0 && run->rate <= 1e9))
		return gpushare_fail(GPUSHARE_E_INVAL, "'cell.rate_per_second' is not a rate");
	/* Absent (older records, other strategies): the default 100/N. */
	if (get_num(cell, "thread_percentage", &run->thread_pct)) {
		if (!(run->thread_pct > 0 && run->thread_pct <= 100))
			return gpushare_fail(GPUSHARE_E_INVAL, "'cell.thread_percentage' is not a percentage");
		gpushare_report_shape_label(shape, run->thread_pct, t->shape, sizeof(t->shape));
	}
	/* Only an ok run has figures (a failed or partial one has nulls). */
	if (run->status != GPUSHARE_RUN_OK)
		return gpushare_report_load_peak(root, NULL, run, t);
	bench = cJSON_GetObjectItemCaseSensitive(root, "bench");
	results = cJSON_GetObjectItemCaseSensitive(bench, "results");
	res = cJSON_GetArrayItem(results, 0);
	agg = cJSON_GetObjectItemCaseSensitive(res, "aggregate");
	if (!cJSON_IsObject(agg))
		return gpushare_fail(GPUSHARE_E_INVAL, "missing 'bench.results[0].aggregate'");
	if (!get_num(agg, "items_per_second", &run->items_per_second) ||
	    !get_num(agg, "requests_per_second", &run->requests_per_second) ||
	    !get_num(agg, "mean_seconds", &run->mean_seconds) || !get_num(agg, "p50_seconds", &run->p50_seconds) ||
	    !get_num(agg, "p99_seconds", &run->p99_seconds))
		return gpushare_fail(GPUSHARE_E_INVAL, "'bench.results[0].aggregate' lacks a throughput or latency");
	/* A mix is compared by its score (docs/bench.md, "A mix of workloads"),
	 * never by items/s that add up different workloads' items. */
	if (!strcmp(wl, "mix") || cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(res, "mix"))) {
		if (!get_num(res, "score", &run->items_per_second) || !(run->items_per_second > 0))
			return gpushare_fail(GPUSHARE_E_INVAL, "an ok run of a mix without a score");
	}
	if (run->items_per_second < 0 || run->mean_seconds < 0 || run->p99_seconds < 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "negative throughput or latency");
	/* Optional figures: unknown (NaN) when absent or null. */
	run->p90_seconds = get_opt(agg, "p90_seconds", 0, INFINITY);
	run->p999_seconds = get_opt(agg, "p999_seconds", 0, INFINITY);
	run->fairness = get_opt(agg, "fairness", 0, 1);
	tel = cJSON_GetObjectItemCaseSensitive(res, "telemetry");
	run->util_mean_pct = get_opt(tel, "util_mean_percent", 0, 100);
	run->mem_used_max_bytes = get_opt(tel, "mem_used_max_bytes", 0, INFINITY);
	load_devices(cJSON_GetObjectItemCaseSensitive(res, "workers"), run, t);
	if (run->rate > 0 && gpushare_report_load_open(res, run))
		return GPUSHARE_E_INVAL;
	if (gpushare_report_load_peak(root, res, run, t))
		return GPUSHARE_E_INVAL;
	return parse_hist(cJSON_GetObjectItemCaseSensitive(agg, "histogram"), run);
}

void gpushare_report_shape_label(const char *shape, double thread_pct, char *out, size_t len)
{
	char buf[256];

	char split[64];

	if (thread_pct > 0 && gpushare_bench_mix_count(shape) >= 2)
		snprintf(buf, sizeof(buf), "%s (mps-split shares %s)", shape,
			 gpushare_bench_mix_split_text(gpushare_bench_mix_count(shape), thread_pct, split, sizeof(split)));
	else if (thread_pct > 0)
		snprintf(buf, sizeof(buf), "%s (mps-split threads %g%%)", shape, thread_pct);
	else
		snprintf(buf, sizeof(buf), "%s", shape);
	gpushare_utf8_copy(out, len, buf);
}

static const char empty_name[1] = "";

/* A run whose record could not be used: names "", nothing owned. */
void gpushare_report_run_blank(struct gpushare_report_run *run)
{
	run->shape = run->workload = run->key = run->error = run->peak_note = run->device_name = run->mig_layout =
		empty_name;
	run->text = NULL;
}

int gpushare_report_parse_line(const char *text, size_t len, struct gpushare_report_run *run)
{
	cJSON *root = cJSON_ParseWithLength(text, len);
	struct gpushare_report_text t;
	const char *src[7];
	const char **dst[7];
	size_t sz = 0, at = 0;
	int rc;

	if (!root) {
		memset(run, 0, sizeof(*run));
		gpushare_report_run_blank(run);
		return gpushare_fail(GPUSHARE_E_INVAL, "not valid JSON (a torn or edited line)");
	}
	rc = gpushare_report_parse_root(root, run, &t);
	cJSON_Delete(root);
	gpushare_report_run_blank(run);
	if (rc) {
		gpushare_report_run_release(run);
		return rc;
	}
	/* The run's own names, in one block. */
	src[0] = t.shape, src[1] = t.workload, src[2] = t.key, src[3] = t.error, src[4] = t.peak_note,
	src[5] = t.device_name, src[6] = t.mig_layout;
	dst[0] = &run->shape, dst[1] = &run->workload, dst[2] = &run->key, dst[3] = &run->error,
	dst[4] = &run->peak_note, dst[5] = &run->device_name, dst[6] = &run->mig_layout;
	for (size_t i = 0; i < 7; i++)
		sz += strlen(src[i]) + 1;
	run->text = malloc(sz);
	if (!run->text) {
		gpushare_report_run_release(run);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < 7; i++) {
		size_t l = strlen(src[i]) + 1;

		memcpy(run->text + at, src[i], l);
		*dst[i] = run->text + at;
		at += l;
	}
	return GPUSHARE_OK;
}
