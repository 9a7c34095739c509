/*
 * Unit tests of sweep reports (lib/report*.c): the median and its
 * order-statistic confidence interval, loading a results file with corrupt
 * lines, grouping into cells, the recommendation (a clear winner, "no
 * significant difference", the p99 target) and the output files (PNG
 * signature, SVG root, HTML, CSV, JSON).
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
#include "gpushare/gpushare.h"
#include "gpushare/report.h"

static void test_median_ci(void **state)
{
	double x5[] = { 5, 1, 4, 2, 3 }, x10[] = { 10, 9, 8, 7, 6, 5, 4, 3, 2, 1 }, x1[] = { 7 };
	struct gpushare_ci ci;

	(void)state;
	gpushare_median_ci(x5, 5, 0.95, &ci);
	assert_true(ci.median == 3);
	/* Five samples: [min, max] covers 1 - 2/32 = 93.75% only. */
	assert_true(ci.lo == 1 && ci.hi == 5);
	assert_true(fabs(ci.coverage - 0.9375) < 1e-9);
	assert_true(x5[0] == 5); /* input untouched */
	gpushare_median_ci(x10, 10, 0.95, &ci);
	assert_true(ci.median == 5.5);
	/* n = 10: ranks 2 and 9, coverage 1 - 2 * 11/1024 = 97.9%. */
	assert_true(ci.lo == 2 && ci.hi == 9);
	assert_true(fabs(ci.coverage - (1 - 2 * 11.0 / 1024)) < 1e-9);
	assert_true(fabs(gpushare_ci_rel_halfwidth(&ci) - 3.5 / 5.5) < 1e-9);
	gpushare_median_ci(x1, 1, 0.95, &ci);
	assert_true(ci.median == 7 && ci.lo == 7 && ci.hi == 7);
	assert_true(isinf(gpushare_ci_rel_halfwidth(&ci)));
	gpushare_median_ci(NULL, 0, 0.95, &ci);
	assert_int_equal(ci.n, 0);
	assert_true(isnan(ci.median));
	{
		struct gpushare_ci a = { .n = 3, .median = 2, .lo = 1, .hi = 3 }, b = { .n = 3, .median = 4, .lo = 3.5, .hi = 5 };

		assert_false(gpushare_ci_overlap(&a, &b));
		b.lo = 2.5;
		assert_true(gpushare_ci_overlap(&a, &b));
	}
}

/* One record as the sweep writes it, reduced to what the report reads. */
static void record(FILE *f, const char *strategy, int workers, int repeat, double ips, double mean, double p99,
		   const char *status)
{
	fprintf(f,
		"{\"gpushare_sweep_record\":1,\"cell\":{\"key\":\"k\",\"shape\":\"spin\",\"workload\":\"spin\","
		"\"strategy\":\"%s\",\"workers\":%d,\"batch\":1},\"repeat\":%d,\"status\":\"%s\",\"error\":null,"
		"\"metadata\":{\"gpushare_version\":\"0.1.0\",\"date\":\"2025-01-01T00:00:%02dZ\",\"host\":\"box\","
		"\"gpu\":{\"index\":0,\"name\":\"Test GPU\",\"uuid\":\"GPU-1\"},\"driver_version\":\"580\","
		"\"command_line\":[\"gpushare\",\"sweep\"]},"
		"\"bench\":{\"results\":[{\"aggregate\":{\"items_per_second\":%g,\"requests_per_second\":%g,"
		"\"mean_seconds\":%g,\"p50_seconds\":%g,\"p99_seconds\":%g}}]}}\n",
		strategy, workers, repeat, status, repeat, ips, ips, mean, mean, p99);
}

static char dir[64];
static char path[128];

static void write_fixture(void)
{
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/gpushare-report-unit.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/results.jsonl", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	for (int r = 0; r < 6; r++) {
		/* mps clearly beats timeslice at 3 workers; at 1 worker they tie. */
		record(f, "timeslice", 1, r, 1000 + r, 1e-3, 2e-3, "ok");
		record(f, "mps", 1, r, 1002 + r, 1e-3, 2e-3, "ok");
		record(f, "timeslice", 3, r, 1000 + r * 2, 3e-3, 9.7e-3, "ok");
		record(f, "mps", 3, r, 2600 + r * 3, 1.1e-3, 3.9e-3, "ok");
		record(f, "sequential", 3, r, 990 + r, 1e-3, 1.5e-3, "ok");
		if (r == 2) {
			fputs("this is not json\n", f);
			fputs("{\"gpushare_sweep_record\":1,\"cell\":{}}\n", f);
			fputs("\n", f);
		}
	}
	record(f, "mps", 3, 6, 0, 0, 0, "failed");
	fputs("{\"gpushare_sweep_record\":1,\"cell\":{\"key\":\"k\",\"sha", f); /* torn last line */
	fclose(f);
}

static void remove_fixture(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_load_and_recommend(void **state)
{
	struct gpushare_report r;
	const struct gpushare_report_shape_rec *rec;
	int ts3 = -1, mps3 = -1;

	(void)state;
	write_fixture();
	assert_int_equal(gpushare_report_load(path, &r), GPUSHARE_OK);
	assert_int_equal(r.n_runs, 31);
	assert_int_equal(r.n_bad, 3);
	assert_int_equal(r.bad[0].line, 16);  /* "this is not json" after 3 rounds of 5 */
	assert_int_equal(r.bad[1].line, 17);
	assert_non_null(strstr(r.bad[1].reason, "cell"));
	assert_int_equal(r.bad[2].line, 35);
	assert_non_null(strstr(r.bad[2].reason, "torn"));
	assert_string_equal(r.gpu_name, "Test GPU");
	assert_string_equal(r.first_date, "2025-01-01T00:00:00Z");
	assert_string_equal(r.last_date, "2025-01-01T00:00:06Z");
	assert_int_equal(gpushare_report_summarise(&r, 5e-3), GPUSHARE_OK);
	assert_int_equal(r.n_cells, 5);
	assert_int_equal(r.n_shapes, 1);
	for (size_t i = 0; i < r.n_cells; i++) {
		if (r.cells[i].workers == 3 && r.cells[i].strategy == GPUSHARE_STRATEGY_TIMESLICE)
			ts3 = (int)i;
		if (r.cells[i].workers == 3 && r.cells[i].strategy == GPUSHARE_STRATEGY_MPS)
			mps3 = (int)i;
	}
	assert_true(ts3 >= 0 && mps3 >= 0);
	assert_int_equal(r.cells[mps3].n_ok, 6);
	assert_int_equal(r.cells[mps3].n_failed, 1);
	assert_true(r.cells[mps3].throughput.median == 2607.5);
	rec = &r.recs[0];
	assert_int_equal(rec->best_throughput.cell, mps3);
	assert_int_equal(rec->best_throughput.vs_timeslice, ts3);
	assert_non_null(strstr(rec->best_throughput.why, "mps at 3 workers, batch 1"));
	assert_non_null(strstr(rec->best_throughput.why, "the throughput of timeslice"));
	assert_non_null(strstr(rec->best_throughput.why, "p99 3.9 ms vs 9.7 ms"));
	assert_null(strstr(rec->best_throughput.why, "no significant"));
	/* Lowest p99: 1 worker (timeslice and mps tie at 2 ms) or sequential 1.5 ms. */
	assert_int_equal(r.cells[rec->best_p99.cell].strategy, GPUSHARE_STRATEGY_SEQUENTIAL);
	/* Under 5 ms: mps at 3 workers again; timeslice at 3 (9.7 ms) is out. */
	assert_int_equal(rec->best_slo.cell, mps3);
	/* Tie at one worker: no significant difference. */
	assert_int_equal(gpushare_report_summarise(&r, 2.5e-3), GPUSHARE_OK);
	rec = &r.recs[0];
	assert_int_equal(r.cells[rec->best_slo.cell].workers, 1);
	assert_int_equal(r.cells[rec->best_slo.cell].strategy, GPUSHARE_STRATEGY_MPS);
	assert_non_null(strstr(rec->best_slo.why, "no significant difference"));
	assert_int_equal(gpushare_report_summarise(&r, 1e-3), GPUSHARE_OK);
	assert_int_equal(r.recs[0].best_slo.cell, -1);
	assert_non_null(strstr(r.recs[0].best_slo.why, "no configuration"));
	gpushare_report_release(&r);
	remove_fixture();
}

static char *slurp(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = (size_t)n;
	}
	return buf;
}

static void test_outputs(void **state)
{
	struct gpushare_report r;
	char p[256], *data;
	size_t len;
	cJSON *doc;

	(void)state;
	write_fixture();
	assert_int_equal(gpushare_report_load(path, &r), GPUSHARE_OK);
	assert_int_equal(gpushare_report_summarise(&r, 5e-3), GPUSHARE_OK);
	assert_int_equal(gpushare_report_write(&r, dir), GPUSHARE_OK);

	snprintf(p, sizeof(p), "%s/plots/shape1-batch1-throughput-vs-workers.png", dir);
	data = slurp(p, &len);
	assert_non_null(data);
	assert_true(len > 5000);
	assert_memory_equal(data, "\x89PNG\r\n\x1a\n", 8);
	free(data);
	snprintf(p, sizeof(p), "%s/plots/shape1-batch1-latency-vs-workers.svg", dir);
	data = slurp(p, &len);
	assert_non_null(data);
	assert_non_null(strstr(data, "<svg"));
	free(data);
	snprintf(p, sizeof(p), "%s/plots/shape1-throughput-vs-batch.png", dir);
	assert_int_equal(access(p, R_OK), 0);

	snprintf(p, sizeof(p), "%s/report.md", dir);
	data = slurp(p, &len);
	assert_non_null(data);
	assert_non_null(strstr(data, "| strategy | 1 worker | 3 workers |"));
	assert_non_null(strstr(data, "| mps |"));
	assert_non_null(strstr(data, "3 corrupt lines skipped: line 16"));
	assert_non_null(strstr(data, "[1 failed]"));
	free(data);

	snprintf(p, sizeof(p), "%s/report.html", dir);
	data = slurp(p, &len);
	assert_non_null(data);
	assert_non_null(strstr(data, "data:image/png;base64,iVBORw0KGgo"));
	assert_non_null(strstr(data, "</html>"));
	assert_null(strstr(data, "http://"));
	free(data);

	snprintf(p, sizeof(p), "%s/summary.csv", dir);
	data = slurp(p, &len);
	assert_non_null(data);
	assert_non_null(strstr(data, "spin,spin,mps,3,1,6,1,"));
	free(data);

	snprintf(p, sizeof(p), "%s/summary.json", dir);
	data = slurp(p, &len);
	assert_non_null(data);
	doc = cJSON_Parse(data);
	assert_non_null(doc);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "cells")), 5);
	assert_int_equal(cJSON_GetObjectItem(doc, "corrupt_lines")->valueint, 3);
	{
		cJSON *rec = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "recommendation"), 0);
		cJSON *vs = cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "max_throughput"), "vs_timeslice");

		assert_true(cJSON_IsTrue(cJSON_GetObjectItem(vs, "throughput_significant")));
		assert_true(cJSON_GetObjectItem(vs, "throughput_ratio")->valuedouble > 2.5);
	}
	cJSON_Delete(doc);
	free(data);
	gpushare_report_release(&r);
	remove_fixture();
}

static void test_missing_file(void **state)
{
	struct gpushare_report r;

	(void)state;
	assert_int_equal(gpushare_report_load("/nonexistent/results.jsonl", &r), GPUSHARE_E_NOT_FOUND);
	gpushare_report_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_median_ci),
		cmocka_unit_test(test_load_and_recommend),
		cmocka_unit_test(test_outputs),
		cmocka_unit_test(test_missing_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
