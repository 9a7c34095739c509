/*
 * Reading a sweep's results file (JSON Lines, one record per finished run;
 * format in docs/sweep.md). A line that is not JSON, lacks a field or has a
 * field of the wrong type is listed with its line number and skipped: a
 * sweep killed mid-write leaves at most one torn line, and a hand-edited
 * file must not crash the report.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "hash.h"
#include "report_load_curve.h"
#include "report_peak.h"

#define MAX_BAD_KEPT 1000
/* A results file larger than this is refused rather than read into memory
 * (about 100,000 runs; docs/sweep.md). */
#define GPUSHARE_REPORT_MAX_FILE_BYTES ((size_t)1 << 30)

static int strategy_from_name(const char *s)
{
	for (int i = 0; i < GPUSHARE_STRATEGY_COUNT; i++) {
		if (!strcmp(gpushare_strategy_name(i), s))
			return i;
	}
	return -1;
}

static const char *get_str(const cJSON *o, const char *k)
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

/* The workers' devices: the first device_name, and the number of distinct
 * visible_devices (a MIG run has one per instance). Optional: absent or
 * odd entries leave them unknown. */
static void load_devices(const cJSON *workers, struct gpushare_report_run *run)
{
	const char *seen[GPUSHARE_BENCH_MAX_WORKERS];
	const cJSON *w;
	size_t n = 0;

	cJSON_ArrayForEach(w, workers) {
		const char *name = get_str(w, "device_name"), *vis = get_str(w, "visible_devices");
		size_t i;

		if (name && !run->device_name[0] && strlen(name) < sizeof(run->device_name))
			gpushare_utf8_copy(run->device_name, sizeof(run->device_name), name);
		if (!vis)
			continue;
		for (i = 0; i < n && strcmp(seen[i], vis); i++)
			;
		if (i == n && n < GPUSHARE_BENCH_MAX_WORKERS)
			seen[n++] = vis;
	}
	run->n_devices = (int)n;
}

static int parse_root(const cJSON *root, struct gpushare_report_run *run)
{
	const cJSON *cell, *bench, *results, *res, *agg, *tel;
	const char *shape, *wl, *strat, *status, *key;
	double workers, batch, repeat, version;

	memset(run, 0, sizeof(*run));
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
	shape = get_str(cell, "shape");
	wl = get_str(cell, "workload");
	strat = get_str(cell, "strategy");
	key = get_str(cell, "key");
	if (!shape || !wl || !strat || !key)
		return gpushare_fail(GPUSHARE_E_INVAL, "'cell' lacks shape, workload, strategy or key");
	if (strlen(shape) >= sizeof(run->shape) || strlen(wl) >= sizeof(run->workload) || strlen(key) >= sizeof(run->key))
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
	status = get_str(root, "status");
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
		const char *why = err ? get_str(err, "message") : NULL;

		if (!why || !*why)
			why = err ? get_str(err, "code") : NULL;
		if (why && run->status != GPUSHARE_RUN_OK)
			gpushare_utf8_copy(run->error, sizeof(run->error), why);
	}
	/* Names reach HTML, plots and JSON: valid UTF-8 from here on. */
	gpushare_utf8_copy(run->shape, sizeof(run->shape), shape);
	gpushare_utf8_copy(run->workload, sizeof(run->workload), wl);
	gpushare_utf8_copy(run->key, sizeof(run->key), key);
	run->workers = (int)workers;
	run->batch = (long)batch;
	run->repeat = (int)repeat;
	if (get_num(cell, "rate_per_second", &run->rate) && !(run->rate > 0 && run->rate <= 1e9))
		return gpushare_fail(GPUSHARE_E_INVAL, "'cell.rate_per_second' is not a rate");
	/* Absent (older records, other strategies): the default 100/N. */
	if (get_num(cell, "thread_percentage", &run->thread_pct)) {
		if (!(run->thread_pct > 0 && run->thread_pct <= 100))
			return gpushare_fail(GPUSHARE_E_INVAL, "'cell.thread_percentage' is not a percentage");
		gpushare_report_shape_label(shape, run->thread_pct, run->shape, sizeof(run->shape));
	}
	/* Only an ok run has figures (a failed or partial one has nulls). */
	if (run->status != GPUSHARE_RUN_OK)
		return gpushare_report_load_peak(root, NULL, run);
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
	if (run->items_per_second < 0 || run->mean_seconds < 0 || run->p99_seconds < 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "negative throughput or latency");
	/* Optional figures: unknown (NaN) when absent or null. */
	run->p90_seconds = get_opt(agg, "p90_seconds", 0, INFINITY);
	run->p999_seconds = get_opt(agg, "p999_seconds", 0, INFINITY);
	run->fairness = get_opt(agg, "fairness", 0, 1);
	tel = cJSON_GetObjectItemCaseSensitive(res, "telemetry");
	run->util_mean_pct = get_opt(tel, "util_mean_percent", 0, 100);
	run->mem_used_max_bytes = get_opt(tel, "mem_used_max_bytes", 0, INFINITY);
	load_devices(cJSON_GetObjectItemCaseSensitive(res, "workers"), run);
	if (run->rate > 0 && gpushare_report_load_open(res, run))
		return GPUSHARE_E_INVAL;
	if (gpushare_report_load_peak(root, res, run))
		return GPUSHARE_E_INVAL;
	return parse_hist(cJSON_GetObjectItemCaseSensitive(agg, "histogram"), run);
}

void gpushare_report_shape_label(const char *shape, double thread_pct, char *out, size_t len)
{
	char buf[256];

	if (thread_pct > 0)
		snprintf(buf, sizeof(buf), "%s (mps-split threads %g%%)", shape, thread_pct);
	else
		snprintf(buf, sizeof(buf), "%s", shape);
	gpushare_utf8_copy(out, len, buf);
}

int gpushare_report_parse_line(const char *text, size_t len, struct gpushare_report_run *run)
{
	cJSON *root = cJSON_ParseWithLength(text, len);
	int rc;

	if (!root) {
		memset(run, 0, sizeof(*run));
		return gpushare_fail(GPUSHARE_E_INVAL, "not valid JSON (a torn or edited line)");
	}
	rc = parse_root(root, run);
	cJSON_Delete(root);
	return rc;
}

static void copy_str(char *dst, size_t len, const cJSON *o, const char *k)
{
	const char *s = get_str(o, k);

	if (s)
		gpushare_utf8_copy(dst, len, s);
}

static void take_metadata(struct gpushare_report *r, const cJSON *root, bool first)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "metadata");
	const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(m, "gpu");
	const char *date = get_str(m, "date");

	if (date && strlen(date) < sizeof(r->first_date) && gpushare_utf8_valid(date)) {
		if (!r->first_date[0] || strcmp(date, r->first_date) < 0)
			snprintf(r->first_date, sizeof(r->first_date), "%s", date);
		if (strcmp(date, r->last_date) > 0)
			snprintf(r->last_date, sizeof(r->last_date), "%s", date);
	}
	if (!first)
		return;
	copy_str(r->version, sizeof(r->version), m, "gpushare_version");
	copy_str(r->host, sizeof(r->host), m, "host");
	copy_str(r->driver_version, sizeof(r->driver_version), m, "driver_version");
	copy_str(r->gpu_name, sizeof(r->gpu_name), gpu, "name");
	copy_str(r->gpu_uuid, sizeof(r->gpu_uuid), gpu, "uuid");
	{
		const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(m, "command_line"), *a;
		size_t off = 0;

		cJSON_ArrayForEach(a, cmd) {
			if (!cJSON_IsString(a))
				continue;
			if (off && off + 2 < sizeof(r->command_line))
				r->command_line[off++] = ' ';
			if (off + 1 >= sizeof(r->command_line))
				break;
			off += gpushare_utf8_copy(r->command_line + off, sizeof(r->command_line) - off, a->valuestring);
		}
	}
}

/* Whether the l bytes at s are only spaces, tabs and carriage returns. */
static bool blank(const char *s, size_t l)
{
	for (size_t i = 0; i < l; i++) {
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	}
	return true;
}

static int add_bad(struct gpushare_report *r, size_t line, const char *reason)
{
	r->n_bad++;
	if (r->n_bad_kept >= MAX_BAD_KEPT)
		return GPUSHARE_OK;
	if (r->n_bad_kept % 64 == 0) {
		struct gpushare_report_bad_line *nb = realloc(r->bad, (r->n_bad_kept + 64) * sizeof(*nb));

		if (!nb)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		r->bad = nb;
	}
	r->bad[r->n_bad_kept].line = line;
	gpushare_utf8_copy(r->bad[r->n_bad_kept].reason, sizeof(r->bad[0].reason), reason);
	r->n_bad_kept++;
	return GPUSHARE_OK;
}

static int add_run(struct gpushare_report *r, const struct gpushare_report_run *run, size_t *cap)
{
	if (r->n_runs == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct gpushare_report_run *nr = realloc(r->runs, nc * sizeof(*nr));

		if (!nr)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		r->runs = nr;
		*cap = nc;
	}
	r->runs[r->n_runs++] = *run;
	return GPUSHARE_OK;
}


/* A (cell, repeat) recorded twice with status ok or partial (two sweeps
 * writing one file, a file appended to itself) would count twice: the later
 * records are listed as bad lines and left out. A failed run recorded before
 * its retry is not a duplicate. */
static int drop_duplicates(struct gpushare_report *r)
{
	size_t size = 16, kept = 0;
	size_t *slots;
	int rc = GPUSHARE_OK;

	while (size < r->n_runs * 2)
		size *= 2;
	slots = calloc(size, sizeof(*slots)); /* 1-based index of a run in the new runs[], 0 free */
	if (!slots)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t i = 0; i < r->n_runs && !rc; i++) {
		struct gpushare_report_run *run = &r->runs[i];
		uint64_t rate_bits, h;
		size_t slot;
		bool dup = false;

		memcpy(&rate_bits, &run->rate, sizeof(rate_bits));
		h = gpushare_fnv1a_str(run->shape) ^ ((uint64_t)run->strategy << 56) ^ ((uint64_t)run->workers << 40) ^
		    ((uint64_t)run->batch * 0x100000001b3ull) ^ ((uint64_t)run->repeat * 0x9e3779b97f4a7c15ull) ^
		    (rate_bits * 0xff51afd7ed558ccdull);
		slot = (size_t)h & (size - 1);
		/* The cell is its shape, strategy, workers, batch and, under open
		 * loop, offered rate (its "key" is only a label). */
		while (run->status != GPUSHARE_RUN_FAILED && slots[slot]) {
			const struct gpushare_report_run *o = &r->runs[slots[slot] - 1];

			if (o->repeat == run->repeat && o->strategy == run->strategy && o->workers == run->workers &&
			    o->batch == run->batch && o->rate == run->rate && !strcmp(o->shape, run->shape)) {
				char why[200], rate[40] = "";

				if (o->rate > 0)
					snprintf(rate, sizeof(rate), "|r%.9g", o->rate);
				snprintf(why, sizeof(why), "cell %.60s|%s|w%d|b%ld%s repeat %d is recorded already (line %zu); left out",
					 o->shape, gpushare_strategy_name(o->strategy), o->workers, o->batch, rate, run->repeat,
					 o->line);
				rc = add_bad(r, run->line, why);
				dup = true;
				break;
			}
			slot = (slot + 1) & (size - 1);
		}
		if (dup) {
			gpushare_report_run_release(run);
			continue;
		}
		r->runs[kept] = *run;
		if (run->status != GPUSHARE_RUN_FAILED)
			slots[slot] = kept + 1;
		kept++;
	}
	free(slots);
	if (!rc)
		r->n_runs = kept;
	return rc;
}

int gpushare_report_load(const char *path, struct gpushare_report *r)
{
	char *data;
	size_t len;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = gpushare_read_file(path, GPUSHARE_REPORT_MAX_FILE_BYTES, &data, &len);
	if (rc)
		return rc;
	rc = gpushare_report_load_buffer(data, len, r);
	free(data);
	return rc;
}

int gpushare_report_load_buffer(const char *data, size_t len, struct gpushare_report *r)
{
	size_t pos = 0, line = 0, cap = 0;
	bool have_meta = false;
	int rc = GPUSHARE_OK;

	memset(r, 0, sizeof(*r));
	while (pos < len && !rc) {
		const char *s = data + pos;
		const char *nl = memchr(s, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - s) : len - pos;
		struct gpushare_report_run run;
		cJSON *root;

		pos += l + (nl ? 1 : 0);
		line++;
		if (blank(s, l))
			continue;
		root = cJSON_ParseWithLength(s, l);
		if (!root) {
			rc = add_bad(r, line, nl ? "not valid JSON" : "not valid JSON (torn last line)");
			continue;
		}
		if (parse_root(root, &run) != GPUSHARE_OK) {
			rc = add_bad(r, line, gpushare_errdetail());
		} else {
			run.line = line;
			take_metadata(r, root, !have_meta);
			have_meta = true;
			rc = add_run(r, &run, &cap);
		}
		cJSON_Delete(root);
	}
	if (!rc)
		rc = drop_duplicates(r);
	gpushare_clear_error();
	return rc;
}

int gpushare_report_cap_shapes(struct gpushare_report *r, size_t max_shapes)
{
	size_t size = 16, n_ids = 0, kept = 0;
	const char **names;
	size_t *ids, *run_id;

	r->n_shapes_omitted = r->n_runs_omitted = 0;
	while (size < r->n_runs * 2)
		size *= 2;
	/* An open-addressing table of names (slot -> id in order of first
	 * appearance), filled before any run moves. */
	names = calloc(size, sizeof(*names));
	ids = calloc(size, sizeof(*ids));
	run_id = calloc(r->n_runs ? r->n_runs : 1, sizeof(*run_id));
	if (!names || !ids || !run_id) {
		free(names);
		free(ids);
		free(run_id);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < r->n_runs; i++) {
		size_t slot = (size_t)gpushare_fnv1a_str(r->runs[i].shape) & (size - 1);

		while (names[slot] && strcmp(names[slot], r->runs[i].shape) != 0)
			slot = (slot + 1) & (size - 1);
		if (!names[slot]) {
			names[slot] = r->runs[i].shape;
			ids[slot] = n_ids++;
		}
		run_id[i] = ids[slot];
	}
	for (size_t i = 0; i < r->n_runs; i++) {
		if (run_id[i] >= max_shapes) {
			r->n_runs_omitted++;
			gpushare_report_run_release(&r->runs[i]);
			continue;
		}
		if (kept != i)
			r->runs[kept] = r->runs[i];
		kept++;
	}
	r->n_shapes_omitted = n_ids > max_shapes ? n_ids - max_shapes : 0;
	r->n_runs = kept;
	free(names);
	free(ids);
	free(run_id);
	return GPUSHARE_OK;
}
