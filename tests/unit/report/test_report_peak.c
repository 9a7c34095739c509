/*
 * Unit tests of lib/report/report_peak.c: the peak tables of --find-peak
 * sweeps read from a results file (medians over repeats, "none found",
 * failed runs, open-ended searches, ties by range and by resolution) in
 * markdown, JSON and the terminal's recommendation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare/bench.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"

static char dir[64];
static char path[128];

static void remove_fixture(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* One record of a --find-peak run: rate 0 with found false is "none
 * found"; missed_at 0 is a search that stopped without a miss. */
static void peak_record(FILE *f, const char *shape, const char *strategy, int workers, int repeat, const char *status,
			double rate, double missed_at, double resolution)
{
	char peak[512] = "null", error[128] = "null";

	if (!strcmp(status, "ok")) {
		char r[32] = "null", m[32] = "null";

		if (rate > 0)
			snprintf(r, sizeof(r), "%g", rate);
		if (missed_at > 0)
			snprintf(m, sizeof(m), "%g", missed_at);
		snprintf(peak, sizeof(peak),
			 "{\"slo\":{\"quantile\":0.99,\"bound_seconds\":0.05},\"found\":%s,\"rate_per_second\":%s,"
			 "\"missed_at_per_second\":%s,\"resolution\":%g,\"min_requests_per_step\":10000,"
			 "\"repeated_steps\":0,\"note\":null,\"steps\":[]}",
			 rate > 0 ? "true" : "false", r, m, resolution);
	}
	/* A failed run says why, with the repeat in it (the last one is shown). */
	if (strcmp(status, "ok"))
		snprintf(error, sizeof(error), "{\"code\":\"worker\",\"message\":\"worker 0 exited 3 | repeat %d\"}", repeat);
	fprintf(f,
		"{\"gpushare_sweep_record\":1,\"cell\":{\"key\":\"k\",\"shape\":\"%s\",\"workload\":\"spin\","
		"\"strategy\":\"%s\",\"workers\":%d,\"batch\":1},\"repeat\":%d,\"status\":\"%s\",\"error\":%s,"
		"\"metadata\":{\"gpushare_version\":\"0.1.0\",\"date\":\"2025-01-01T00:00:00Z\",\"host\":\"box\","
		"\"gpu\":{\"index\":null,\"name\":null,\"uuid\":null},\"driver_version\":null,\"command_line\":[]},"
		"\"peak_search\":{\"slo\":{\"quantile\":0.99,\"bound_seconds\":0.05},\"first_rate_per_second\":100,"
		"\"resolution\":%g,\"tail_samples\":100,\"rate_max_per_second\":1e7},"
		"\"bench\":{\"config\":{\"find_peak\":true},\"results\":[{\"aggregate\":{\"items_per_second\":%g,"
		"\"requests_per_second\":%g,\"mean_seconds\":0.01,\"p50_seconds\":0.01,\"p99_seconds\":0.02},"
		"\"peak\":%s}]}}\n",
		shape, strategy, workers, repeat, status, error, resolution, rate, rate, peak);
}

/* Peak tables: per strategy and worker count the median over repeats, a
 * failed run counted apart and never a zero, "none found" ranked below any
 * rate, a search without a miss marked, and the highest named with its ties. */
static void test_peak_tables(void **state)
{
	struct gpushare_report r;
	char p[256], *data;
	size_t len;
	cJSON *doc, *tables, *t, *cells;
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/gpushare-report-unit.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/results.jsonl", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	/* spin: timeslice 2 workers is highest; mps 2 workers within 5% of
	 * it (a tie by resolution, their ranges apart). */
	for (int k = 0; k < 3; k++) {
		static const double ts1[] = { 100, 102, 98 }, ts2[] = { 200, 205, 195 }, mps2[] = { 190, 194, 192 };

		peak_record(f, "spin", "timeslice", 1, k, "ok", ts1[k], ts1[k] * 1.04, 0.05);
		peak_record(f, "spin", "timeslice", 2, k, "ok", ts2[k], ts2[k] * 1.04, 0.05);
		peak_record(f, "spin", "mps", 2, k, "ok", mps2[k], mps2[k] * 1.04, 0.05);
		/* mps 1 worker: no rate met the bound in 2 of 3 searches. */
		peak_record(f, "spin", "mps", 1, k, "ok", k == 2 ? 150 : 0, k == 2 ? 156 : 50, 0.05);
	}
	/* sequential 1 worker: one search that never missed, two failed runs;
	 * 2 workers: failed only. */
	peak_record(f, "spin", "sequential", 1, 0, "ok", 100, 0, 0.05);
	peak_record(f, "spin", "sequential", 1, 1, "failed", 0, 0, 0.05);
	peak_record(f, "spin", "sequential", 1, 2, "failed", 0, 0, 0.05);
	peak_record(f, "spin", "sequential", 2, 0, "failed", 0, 0, 0.05);
	/* wide: at 1% resolution mps (120) is highest, timeslice (115)
	 * ties with it only because the ranges of their repeats overlap. */
	peak_record(f, "wide", "timeslice", 1, 0, "ok", 100, 101, 0.01);
	peak_record(f, "wide", "timeslice", 1, 1, "ok", 130, 131, 0.01);
	peak_record(f, "wide", "mps", 1, 0, "ok", 118, 119, 0.01);
	peak_record(f, "wide", "mps", 1, 1, "ok", 122, 123, 0.01);
	peak_record(f, "wide", "sequential", 1, 0, "ok", 50, 51, 0.01);
	fclose(f);

	assert_int_equal(gpushare_report_load(path, &r), GPUSHARE_OK);
	assert_int_equal(r.n_bad, 0);
	assert_int_equal(r.n_runs, 21);
	/* Peak searches are kept whole, none folded. */
	assert_int_equal(r.n_whole, 21);
	assert_int_equal(r.n_groups, 0);
	assert_true(r.whole[0].find_peak && r.whole[0].peak_found && r.whole[0].peak_rate == 100);
	assert_true(r.whole[0].peak_quantile == 0.99 && r.whole[0].peak_bound_seconds == 0.05);
	assert_true(r.whole[13].find_peak && r.whole[13].status == GPUSHARE_RUN_FAILED && r.whole[13].peak_bound_seconds == 0.05);
	assert_int_equal(gpushare_report_summarise(&r, 0), GPUSHARE_OK);
	/* Peak searches are not throughput cells. */
	assert_int_equal(r.n_cells, 0);
	assert_int_equal(gpushare_report_write(&r, dir), GPUSHARE_OK);

	snprintf(p, sizeof(p), "%s/report.md", dir);
	assert_int_equal(gpushare_read_file(p, 1 << 24, &data, &len), GPUSHARE_OK);
	assert_non_null(data);
	assert_non_null(strstr(data, "**spin, batch 1: highest rate within p99 <= 50.0 ms**"));
	assert_non_null(strstr(data, "| strategy | 1 worker | 2 workers |"));
	assert_non_null(strstr(data, "| timeslice | 100/s (98.0-102, 3 runs) | **200/s (195-205, 3 runs)** |"));
	assert_non_null(strstr(data, "| mps | none found (3 runs) [1 found one] | **192/s (190-194, 3 runs)** |"));
	/* Failed cells give the reason of their last failed run ('|' kept out of the table). */
	assert_non_null(strstr(data, "| sequential | 100/s+ (1 run) [2 failed: worker 0 exited 3 / repeat 2] | "
				     "failed (1): worker 0 exited 3 / repeat 0 |"));
	assert_non_null(strstr(data, "- **Highest rate within p99 <= 50.0 ms (batch 1, peak search):** timeslice, 2 workers "
				     "at 200/s and mps, 2 workers at 192/s, a tie (within the search resolution). Others: "
				     "timeslice, 1 worker 100/s; mps, 1 worker none found; sequential, 1 worker 100/s+; "
				     "sequential, 2 workers failed (+: stopped without a miss, may be higher)."));
	assert_non_null(strstr(data, "| mps | **120/s (118-122, 2 runs)** |"));
	assert_non_null(strstr(data, "| timeslice | **115/s (100-130, 2 runs)** |"));
	assert_non_null(strstr(data, "mps, 1 worker at 120/s and timeslice, 1 worker at 115/s, a tie (the ranges of their "
				     "repeats overlap). Others: sequential, 1 worker 50.0/s."));
	free(data);

	snprintf(p, sizeof(p), "%s/report.html", dir);
	assert_int_equal(gpushare_read_file(p, 1 << 24, &data, &len), GPUSHARE_OK);
	assert_non_null(data);
	assert_non_null(strstr(data, "<h2>Highest rate within the bound (peak search)</h2>"));
	assert_non_null(strstr(data, "<td class=\"win\">200/s (195-205, 3 runs)</td>"));
	free(data);

	snprintf(p, sizeof(p), "%s/summary.json", dir);
	assert_int_equal(gpushare_read_file(p, 1 << 24, &data, &len), GPUSHARE_OK);
	assert_non_null(data);
	doc = cJSON_Parse(data);
	assert_non_null(doc);
	tables = cJSON_GetObjectItem(doc, "peak_search");
	assert_int_equal(cJSON_GetArraySize(tables), 2);
	t = cJSON_GetArrayItem(tables, 0);
	assert_string_equal(cJSON_GetObjectItem(t, "shape")->valuestring, "spin");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "best"), "strategy")->valuestring, "timeslice");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "best"), "workers")->valueint, 2);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(t, "tied")), 1);
	cells = cJSON_GetObjectItem(t, "cells");
	assert_int_equal(cJSON_GetArraySize(cells), 6);
	for (int i = 0; i < cJSON_GetArraySize(cells); i++) {
		cJSON *c = cJSON_GetArrayItem(cells, i);
		const char *st = cJSON_GetObjectItem(c, "strategy")->valuestring;
		int w = cJSON_GetObjectItem(c, "workers")->valueint;

		if (!strcmp(st, "mps") && w == 1) {
			/* "none found" is null, never a zero. */
			assert_true(cJSON_IsNull(cJSON_GetObjectItem(c, "median_per_second")));
			assert_int_equal(cJSON_GetObjectItem(c, "runs_none_found")->valueint, 2);
		}
		if (!strcmp(st, "sequential") && w == 2) {
			assert_true(cJSON_IsNull(cJSON_GetObjectItem(c, "median_per_second")));
			assert_int_equal(cJSON_GetObjectItem(c, "runs")->valueint, 0);
			assert_int_equal(cJSON_GetObjectItem(c, "runs_failed")->valueint, 1);
			assert_string_equal(cJSON_GetObjectItem(c, "error")->valuestring, "worker 0 exited 3 / repeat 0");
		}
		if (!strcmp(st, "timeslice"))
			assert_true(cJSON_IsNull(cJSON_GetObjectItem(c, "error")));
		if (!strcmp(st, "sequential") && w == 1)
			assert_true(cJSON_IsTrue(cJSON_GetObjectItem(c, "may_be_higher")));
	}
	cJSON_Delete(doc);
	free(data);

	/* The terminal's recommendation names the highest too. */
	f = open_memstream(&data, &len);
	assert_non_null(f);
	assert_int_equal(gpushare_report_write_recommendation(&r, f), GPUSHARE_OK);
	fclose(f);
	assert_non_null(strstr(data, "spin, open loop\n  highest rate within p99 <= 50.0 ms (batch 1): timeslice, 2 workers at 200/s"));
	free(data);
	gpushare_report_release(&r);
	remove_fixture();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peak_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
