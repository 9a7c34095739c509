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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "gpushare/sweep.h"
#include "report_load_curve.h"

#define MAX_BAD_KEPT 1000

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

static int parse_root(const cJSON *root, struct gpushare_report_run *run)
{
	const cJSON *cell, *bench, *results, *res, *agg;
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
	snprintf(run->shape, sizeof(run->shape), "%s", shape);
	snprintf(run->workload, sizeof(run->workload), "%s", wl);
	snprintf(run->key, sizeof(run->key), "%s", key);
	run->workers = (int)workers;
	run->batch = (long)batch;
	run->repeat = (int)repeat;
	if (get_num(cell, "rate_per_second", &run->rate) && !(run->rate > 0 && run->rate <= 1e9))
		return gpushare_fail(GPUSHARE_E_INVAL, "'cell.rate_per_second' is not a rate");
	if (run->status == GPUSHARE_RUN_FAILED)
		return GPUSHARE_OK;
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
	if (run->rate > 0 && gpushare_report_load_open(res, run))
		return GPUSHARE_E_INVAL;
	return GPUSHARE_OK;
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
		snprintf(dst, len, "%s", s);
}

static void take_metadata(struct gpushare_report *r, const cJSON *root, bool first)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "metadata");
	const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(m, "gpu");
	const char *date = get_str(m, "date");

	if (date && strlen(date) < sizeof(r->first_date)) {
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
			off += (size_t)snprintf(r->command_line + off, sizeof(r->command_line) - off, "%s%s",
						off ? " " : "", a->valuestring);
			if (off >= sizeof(r->command_line))
				break;
		}
	}
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
	snprintf(r->bad[r->n_bad_kept].reason, sizeof(r->bad[0].reason), "%s", reason);
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

static int read_all(const char *path, char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	char *buf;

	*data = NULL;
	*len = 0;
	if (!f)
		return gpushare_fail(errno == ENOENT ? GPUSHARE_E_NOT_FOUND : GPUSHARE_E_IO, "cannot open '%s': %s", path,
				     strerror(errno));
	buf = malloc(cap);
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (n < cap)
			break;
		{
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (!buf) {
		fclose(f);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory reading '%s'", path);
	}
	if (ferror(f)) {
		int e = errno;

		fclose(f);
		free(buf);
		return gpushare_fail(GPUSHARE_E_IO, "cannot read '%s': %s", path, strerror(e));
	}
	fclose(f);
	*data = buf;
	*len = n;
	return GPUSHARE_OK;
}

int gpushare_report_load(const char *path, struct gpushare_report *r)
{
	char *data;
	size_t len, pos = 0, line = 0, cap = 0;
	bool have_meta = false;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = read_all(path, &data, &len);
	if (rc)
		return rc;
	while (pos < len && !rc) {
		const char *s = data + pos;
		const char *nl = memchr(s, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - s) : len - pos;
		struct gpushare_report_run run;
		cJSON *root;

		pos += l + (nl ? 1 : 0);
		line++;
		if (strspn(s, " \t\r") >= l)
			continue; /* blank line */
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
	free(data);
	gpushare_clear_error();
	return rc;
}
