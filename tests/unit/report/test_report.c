/*
 * Unit tests of sweep reports (lib/report*.c): the median and its
 * order-statistic confidence interval, loading a results file with corrupt
 * lines, grouping into cells, the recommendation (a clear winner, "no
 * significant difference", the p99 target), the output files (PNG
 * signature, SVG root, HTML, CSV, JSON). The peak tables are
 * tests/unit/report/test_report_peak.c, the load curves
 * tests/unit/report/test_report_load_curve.c.
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

#include <sys/stat.h>

#include "gpushare/bench.h"
#include "gpushare/files.h"
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
	assert_true(ci.median == 7 && isnan(ci.lo) && isnan(ci.hi) && ci.coverage == 0);
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

/* One record as the sweep writes it, reduced to what the report reads, of
 * a shape and cell key. */
static void record_of(FILE *f, const char *shape, const char *key, const char *strategy, int workers, int repeat,
		      double ips, double mean, double p99, const char *status)
{
	fprintf(f,
		"{\"gpushare_sweep_record\":1,\"cell\":{\"key\":\"%s\",\"shape\":\"%s\",\"workload\":\"spin\","
		"\"strategy\":\"%s\",\"workers\":%d,\"batch\":1},\"repeat\":%d,\"status\":\"%s\",\"error\":null,"
		"\"metadata\":{\"gpushare_version\":\"0.1.0\",\"date\":\"2025-01-01T00:00:%02dZ\",\"host\":\"box\","
		"\"gpu\":{\"index\":0,\"name\":\"Test GPU\",\"uuid\":\"GPU-1\"},\"driver_version\":\"580\","
		"\"command_line\":[\"gpushare\",\"sweep\"]},"
		"\"bench\":{\"results\":[{\"aggregate\":{\"items_per_second\":%g,\"requests_per_second\":%g,"
		"\"mean_seconds\":%g,\"p50_seconds\":%g,\"p90_seconds\":%g,\"p99_seconds\":%g,\"p999_seconds\":%g,"
		"\"fairness\":%g,\"histogram\":{\"le_seconds\":[%g,%g,%g],\"counts\":[50,40,10]}},"
		"\"telemetry\":{\"samples\":10,\"util_mean_percent\":%d,\"mem_used_max_bytes\":%d}}]}}\n",
		key, shape, strategy, workers, repeat, status, repeat, ips, ips, mean, mean, mean * 1.5, p99, p99 * 1.2,
		0.9 + 0.01 * repeat, mean * 0.9, mean, p99, 30 * workers, workers << 28);
}

/* One record of shape "spin", cell key "k". */
static void record(FILE *f, const char *strategy, int workers, int repeat, double ips, double mean, double p99,
		   const char *status)
{
	record_of(f, "spin", "k", strategy, workers, repeat, ips, mean, p99, status);
}

static char dir[64];
static char path[128];

/* Runs of 5 cells (timeslice, mps, mps-split at 3 workers, timeslice and
 * mps at 1 worker, sequential at 3 as a reference), `repeats` each:
 * - at 3 workers mps beats timeslice by far, and ties with mps-split;
 * - at 1 worker timeslice and mps tie;
 * after round 3 two corrupt lines and a blank one; at the end a failed mps
 * run and a torn line. */
static void write_fixture(int repeats)
{
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/gpushare-report-unit.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/results.jsonl", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	for (int r = 0; r < repeats; r++) {
		record(f, "timeslice", 1, r, 1000 + r, 1e-3, 2e-3, "ok");
		record(f, "mps", 1, r, 1002 + r, 1e-3, 2e-3, "ok");
		record(f, "timeslice", 3, r, 1000 + r * 2, 3e-3, 9.7e-3, "ok");
		record(f, "mps", 3, r, 2600 + r * 3, 1.1e-3, 3.9e-3, "ok");
		record(f, "mps-split", 3, r, 2598 + r * 3, 1.1e-3, 4.0e-3, "ok");
		record(f, "sequential", 3, r, 990 + r, 1e-3, 1.5e-3, "ok");
		if (r == 2) {
			fputs("this is not json\n", f);
			fputs("{\"gpushare_sweep_record\":1,\"cell\":{}}\n", f);
			fputs("\n", f);
		}
	}
	record(f, "mps", 3, repeats, 0, 0, 0, "failed");
	fputs("{\"gpushare_sweep_record\":1,\"cell\":{\"key\":\"k\",\"sha", f); /* torn last line */
	fclose(f);
}

static void remove_fixture(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static int cell_of(const struct gpushare_report *r, enum gpushare_strategy strategy, int workers)
{
	for (size_t i = 0; i < r->n_cells; i++) {
		if (r->cells[i].workers == workers && r->cells[i].strategy == strategy)
			return (int)i;
	}
	return -1;
}

static void test_load_and_recommend(void **state)
{
	struct gpushare_report r;
	const struct gpushare_report_rec *rec;
	const struct gpushare_report_at_workers *at1, *at3;
	int ts3, mps3, split3, seq3;

	(void)state;
	write_fixture(7);
	assert_int_equal(gpushare_report_load(path, &r), GPUSHARE_OK);
	assert_int_equal(r.n_runs, 43);
	assert_int_equal(r.n_bad, 3);
	assert_int_equal(r.bad[0].line, 19);  /* "this is not json" after 3 rounds of 6 */
	assert_int_equal(r.bad[1].line, 20);
	assert_non_null(strstr(r.bad[1].reason, "cell"));
	assert_int_equal(r.bad[2].line, 47);
	assert_non_null(strstr(r.bad[2].reason, "torn"));
	assert_string_equal(r.gpu_name, "Test GPU");
	assert_string_equal(r.first_date, "2025-01-01T00:00:00Z");
	assert_string_equal(r.last_date, "2025-01-01T00:00:07Z");
	assert_int_equal(gpushare_report_summarise(&r, 5e-3), GPUSHARE_OK);
	assert_int_equal(r.n_cells, 6);
	assert_int_equal(r.n_shapes, 1);
	assert_int_equal(r.n_recs, 1);
	ts3 = cell_of(&r, GPUSHARE_STRATEGY_TIMESLICE, 3);
	mps3 = cell_of(&r, GPUSHARE_STRATEGY_MPS, 3);
	split3 = cell_of(&r, GPUSHARE_STRATEGY_MPS_SPLIT, 3);
	seq3 = cell_of(&r, GPUSHARE_STRATEGY_SEQUENTIAL, 3);
	assert_true(ts3 >= 0 && mps3 >= 0 && split3 >= 0 && seq3 >= 0);
	assert_int_equal(r.cells[mps3].n_ok, 7);
	assert_int_equal(r.cells[mps3].n_failed, 1);
	assert_true(r.cells[mps3].throughput.median == 2609);
	assert_true(fabs(r.cells[mps3].throughput.coverage - (1 - 2.0 / 128)) < 1e-12);
	assert_true(fabs(r.cells[mps3].p999_latency.median - 3.9e-3 * 1.2) < 1e-12);
	assert_true(fabs(r.cells[mps3].util_pct.median - 90) < 1e-12);
	assert_non_null(r.cells[mps3].hist);
	assert_true(r.cells[mps3].hist->count == 7 * 100);

	rec = &r.recs[0];
	assert_int_equal(rec->n_at, 2);
	at1 = &rec->at[0];
	at3 = &rec->at[1];
	/* One worker: timeslice and mps tie; no winner is claimed. */
	assert_int_equal(at1->workers, 1);
	assert_int_equal(at1->n_tied, 2);
	assert_non_null(strstr(at1->throughput_text, "tie between mps and timeslice"));
	/* Three workers: mps and mps-split tie (always compared), both far above
	 * timeslice, significant at 96.9% (7 runs each). Sequential is only a
	 * reference, never the lowest-p99 answer. */
	assert_int_equal(at3->best, mps3);
	assert_int_equal(at3->n_tied, 2);
	assert_int_equal(at3->tied[1], split3);
	assert_int_equal(at3->mps_vs_split.verdict, GPUSHARE_VERDICT_TIE);
	assert_int_equal(at3->vs_timeslice.verdict, GPUSHARE_VERDICT_HIGHER);
	assert_true(at3->vs_timeslice.significant);
	assert_non_null(strstr(at3->throughput_text, "tie between mps and mps-split"));
	assert_non_null(strstr(at3->throughput_text, "the throughput of timeslice (2.58x-2.60x, t test on logs: significant, "
						     "p < 0.001; order statistics: 2.57x-2.62x, apart at 96.8% confidence)"));
	assert_non_null(strstr(at3->throughput_text, "Reference: sequential 993 items/s."));
	assert_int_equal(at3->lowest_p99, mps3);
	assert_string_equal(at3->latency_text, "mps, p99 3.90 ms.");
	assert_non_null(strstr(at1->latency_text, "(tie with mps 2.00 ms)"));
	/* How many workers: mps needs 3 (1 gives significantly less). */
	assert_int_equal(rec->n_scaling, 4);
	assert_int_equal(rec->scaling[1].strategy, GPUSHARE_STRATEGY_MPS);
	assert_int_equal(r.cells[rec->scaling[1].smallest].workers, 3);
	assert_non_null(strstr(rec->scaling[1].text, "fewer workers give less (t test on logs, 95%)"));
	assert_non_null(strstr(rec->scaling[0].text, "timeslice: 1 worker already reaches its best throughput within noise"));
	assert_non_null(strstr(rec->scaling[3].text, "the fewest measured. (a reference, not a way to share)"));
	/* Under 5 ms: mps at 3 workers, tied with mps-split at 3. */
	assert_int_equal(rec->slo, mps3);
	assert_non_null(strstr(rec->slo_text, "ties in throughput with mps-split at 3"));
	/* Under 2.5 ms: one worker, mps and timeslice tie. */
	assert_int_equal(gpushare_report_summarise(&r, 2.5e-3), GPUSHARE_OK);
	rec = &r.recs[0];
	assert_int_equal(r.cells[rec->slo].workers, 1);
	assert_int_equal(r.cells[rec->slo].strategy, GPUSHARE_STRATEGY_MPS);
	assert_non_null(strstr(rec->slo_text, "ties in throughput with timeslice at 1"));
	assert_int_equal(gpushare_report_summarise(&r, 1e-3), GPUSHARE_OK);
	assert_int_equal(r.recs[0].slo, -1);
	assert_non_null(strstr(r.recs[0].slo_text, "no sharing configuration"));
	gpushare_report_release(&r);
	remove_fixture();
}

/* One and two runs per cell: no interval, then 50% ones; never "95%" and
 * never "significant". */
static void test_few_repeats(void **state)
{
	struct gpushare_report r;
	char *buf = NULL, *json;
	size_t len = 0;
	FILE *f;
	cJSON *doc, *at, *c;

	(void)state;
	write_fixture(1);
	assert_int_equal(gpushare_report_load(path, &r), GPUSHARE_OK);
	assert_int_equal(gpushare_report_summarise(&r, 0), GPUSHARE_OK);
	f = open_memstream(&buf, &len);
	assert_int_equal(gpushare_report_write_markdown(&r, f), GPUSHARE_OK);
	fclose(f);
	assert_non_null(strstr(buf, "one run per cell: no interval"));
	assert_non_null(strstr(buf, "too few runs for an interval: no verdict"));
	assert_null(strstr(buf, "coverage 95%"));
	assert_null(strstr(buf, "; significant"));
	free(buf);
	assert_int_equal(gpushare_report_json(&r, &json), GPUSHARE_OK);
	doc = cJSON_Parse(json);
	c = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "cells"), 0), "throughput_items_per_second");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(c, "lo")) && cJSON_IsNull(cJSON_GetObjectItem(c, "coverage")));
	at = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "recommendation"), 0),
						  "per_workers"), 1);
	c = cJSON_GetObjectItem(at, "vs_timeslice");
	assert_string_equal(cJSON_GetObjectItem(c, "verdict")->valuestring, "unknown");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(c, "significant")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(c, "ratio_lo")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "recommendation")->child, "under_slo")));
	cJSON_Delete(doc);
	free(json);
	gpushare_report_release(&r);
	remove_fixture();

	write_fixture(2);
	assert_int_equal(gpushare_report_load(path, &r), GPUSHARE_OK);
	assert_int_equal(gpushare_report_summarise(&r, 0), GPUSHARE_OK);
	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_int_equal(gpushare_report_write_markdown(&r, f), GPUSHARE_OK);
	fclose(f);
	assert_non_null(strstr(buf, "median of 2 runs; in parentheses the interval of the median, coverage 50% (below 95%"));
	/* mps at 3 is 2.6x timeslice, each run within 0.3% of its cell's other:
	 * the t test on logs calls it at two runs a side, where the two 50%
	 * order-statistic intervals are only 25% together. mps and timeslice at 1
	 * (0.2% apart, as noisy as that) stay a tie. */
	assert_non_null(strstr(buf, "2.60x the throughput of timeslice (2.58x-2.62x, t test on logs: significant, p < 0.001; "
				    "order statistics: 2.59x-2.60x, apart at 25% confidence)"));
	assert_non_null(strstr(buf, "| 1 | tie between mps and timeslice"));
	free(buf);
	gpushare_report_release(&r);
	remove_fixture();
}

/* The whole of the report's file dir/name, to free (its length in *len,
 * unless NULL). */
static char *written(const char *name, size_t *len)
{
	char p[256];
	char *data = NULL;
	size_t n;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(gpushare_read_file(p, 1 << 24, &data, &n), GPUSHARE_OK);
	if (len)
		*len = n;
	return data;
}

static void test_outputs(void **state)
{
	struct gpushare_report r;
	char p[256], *data;
	size_t len;
	cJSON *doc;

	(void)state;
	write_fixture(7);
	assert_int_equal(gpushare_report_load(path, &r), GPUSHARE_OK);
	assert_int_equal(gpushare_report_summarise(&r, 5e-3), GPUSHARE_OK);
	assert_int_equal(gpushare_report_write(&r, dir), GPUSHARE_OK);

	data = written("plots/shape1-batch1-throughput-vs-workers.png", &len);
	assert_true(len > 5000);
	assert_memory_equal(data, "\x89PNG\r\n\x1a\n", 8);
	free(data);
	/* SVG text stays text. */
	data = written("plots/shape1-batch1-latency-vs-workers.svg", NULL);
	assert_non_null(strstr(data, "<svg"));
	assert_non_null(strstr(data, ">spin: latency percentiles vs workers</text>"));
	/* Four percentiles of several strategies would overlap: one panel per
	 * strategy (titled with its name), the percentiles in the legend. */
	assert_non_null(strstr(data, ">p99.9</text>"));
	assert_non_null(strstr(data, "font-weight=\"bold\" fill=\"rgb(26,26,26)\">mps</text>"));
	assert_non_null(strstr(data, "font-weight=\"bold\" fill=\"rgb(26,26,26)\">timeslice</text>"));
	assert_null(strstr(data, ">mps p99.9</text>"));
	assert_non_null(strstr(data, "transform=\"rotate(-90"));
	free(data);
	/* The new figures; none against batch size with one batch size. */
	snprintf(p, sizeof(p), "%s/plots/shape1-batch1-fairness-vs-workers.png", dir);
	assert_int_equal(access(p, R_OK), 0);
	snprintf(p, sizeof(p), "%s/plots/shape1-batch1-gpu-util-vs-workers.png", dir);
	assert_int_equal(access(p, R_OK), 0);
	snprintf(p, sizeof(p), "%s/plots/shape1-batch1-gpu-memory-vs-workers.svg", dir);
	assert_int_equal(access(p, R_OK), 0);
	snprintf(p, sizeof(p), "%s/plots/shape1-batch1-cdf-w3.png", dir);
	assert_int_equal(access(p, R_OK), 0);
	snprintf(p, sizeof(p), "%s/plots/shape1-throughput-vs-batch.png", dir);
	assert_int_equal(access(p, R_OK), -1);

	data = written("report.md", NULL);
	assert_non_null(strstr(data, "| strategy | 1 worker | 3 workers |"));
	assert_non_null(strstr(data, "| mps |"));
	assert_non_null(strstr(data, "| sequential (reference) |"));
	assert_non_null(strstr(data, "3 corrupt lines skipped: line 19"));
	assert_non_null(strstr(data, "[1 failed]"));
	assert_non_null(strstr(data, "median of 7 runs; in parentheses the interval of the median, coverage 98.4%"));
	/* The winners of a column in bold: mps and mps-split tie at 3 workers. */
	assert_non_null(strstr(data, "| **2.61k (2.60k-2.62k) [1 failed]** |"));
	assert_non_null(strstr(data, "| **2.61k (2.60k-2.62k)** |"));
	assert_non_null(strstr(data, "| 3 | tie between mps and mps-split"));
	free(data);

	data = written("report.html", NULL);
	assert_non_null(strstr(data, "data:image/png;base64,iVBORw0KGgo"));
	assert_non_null(strstr(data, "<td class=\"win\">"));
	assert_non_null(strstr(data, "</html>"));
	assert_null(strstr(data, "http://"));
	free(data);

	data = written("summary.csv", NULL);
	assert_non_null(strstr(data, "spin,spin,mps,3,1,7,1,0.984375,2609,2600,2618,"));
	free(data);

	data = written("summary.json", NULL);
	doc = cJSON_Parse(data);
	assert_non_null(doc);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "cells")), 6);
	assert_int_equal(cJSON_GetObjectItem(doc, "corrupt_lines")->valueint, 3);
	{
		cJSON *rec = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "recommendation"), 0);
		cJSON *at = cJSON_GetArrayItem(cJSON_GetObjectItem(rec, "per_workers"), 1);
		cJSON *vs = cJSON_GetObjectItem(at, "vs_timeslice");

		assert_true(cJSON_IsTrue(cJSON_GetObjectItem(vs, "significant")));
		assert_true(cJSON_GetObjectItem(vs, "ratio")->valuedouble > 2.5);
		assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(at, "mps_vs_mps_split"), "verdict")->valuestring,
				    "tie");
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(at, "tied")), 2);
		assert_string_equal(cJSON_GetObjectItem(at, "lowest_p99")->valuestring, "mps");
		assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "under_slo"), "cell"));
	}
	cJSON_Delete(doc);
	free(data);
	gpushare_report_release(&r);
	remove_fixture();
}

/* The file is streamed: loading it gives what loading its bytes from
 * memory gives (runs, bad lines, the merged histograms of the cells); runs
 * keep no histogram of their own; a duplicate's histogram is not merged;
 * what is not a regular file is refused without blocking. */
static void test_streamed_load(void **state)
{
	struct gpushare_report a, b;
	char *data, fifo[160];
	size_t len;
	int k;
	FILE *f;

	(void)state;
	write_fixture(3);
	/* The first record again: a duplicate, listed and left out. */
	f = fopen(path, "a");
	assert_non_null(f);
	fputs("\n", f);
	record(f, "timeslice", 1, 0, 5000, 1e-3, 2e-3, "ok");
	fclose(f);
	assert_int_equal(gpushare_report_load(path, &a), GPUSHARE_OK);
	assert_int_equal(gpushare_read_file(path, 1 << 24, &data, &len), GPUSHARE_OK);
	assert_int_equal(gpushare_report_load_buffer(data, len, &b), GPUSHARE_OK);
	free(data);
	assert_int_equal(a.n_runs, b.n_runs);
	assert_int_equal(a.n_runs, 6 * 3 + 1);
	assert_int_equal(a.n_bad, b.n_bad);
	for (size_t i = 0; i < a.n_bad; i++) {
		assert_int_equal(a.bad[i].line, b.bad[i].line);
		assert_string_equal(a.bad[i].reason, b.bad[i].reason);
	}
	/* Listed in the order of the file; the duplicate last. */
	assert_non_null(strstr(a.bad[a.n_bad - 1].reason, "is recorded already (line 1)"));
	for (size_t i = 0; i < a.n_whole; i++)
		assert_true(a.whole[i].hist_n == 0 && !a.whole[i].hist_le_ns);
	/* A run keeps no text of its own: every name is the report's one copy,
	 * shared by all the runs that have it, whole or folded. */
	{
		struct gpushare_report_cursor c;
		const struct gpushare_report_run *run;
		const char *shape = NULL, *key = NULL;
		size_t n = 0;

		assert_int_equal(gpushare_report_cursor_open(&a, &c), GPUSHARE_OK);
		while ((run = gpushare_report_cursor_next(&c))) {
			if (!n) {
				shape = run->shape;
				key = run->key;
			}
			assert_null(run->text);
			assert_true(run->hist_n == 0 && !run->hist_le_ns);
			assert_string_equal(run->shape, "spin");
			assert_string_equal(run->key, "k");
			assert_ptr_equal(run->shape, shape);
			assert_ptr_equal(run->workload, shape);
			assert_ptr_equal(run->key, key);
			assert_non_null(run->error);
			assert_non_null(run->peak_note);
			assert_non_null(run->device_name);
			n++;
		}
		gpushare_report_cursor_close(&c);
		assert_int_equal(n, a.n_runs);
	}
	assert_int_equal(gpushare_report_summarise(&a, 0), GPUSHARE_OK);
	assert_int_equal(gpushare_report_summarise(&b, 0), GPUSHARE_OK);
	assert_int_equal(a.n_cells, b.n_cells);
	for (size_t i = 0; i < a.n_cells; i++) {
		assert_non_null(a.cells[i].hist);
		assert_memory_equal(a.cells[i].hist, b.cells[i].hist, sizeof(*a.cells[i].hist));
	}
	/* 3 ok runs of 100 requests each; the duplicate's not counted. */
	k = cell_of(&a, GPUSHARE_STRATEGY_TIMESLICE, 1);
	assert_true(k >= 0);
	assert_int_equal(a.cells[k].hist->count, 300);
	assert_true(a.cells[k].throughput.median < 5000);
	/* Summarised twice: the same histograms, not twice the counts. */
	assert_int_equal(gpushare_report_summarise(&a, 0), GPUSHARE_OK);
	assert_int_equal(a.cells[k].hist->count, 300);
	gpushare_report_release(&a);
	gpushare_report_release(&b);

	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(gpushare_report_load(fifo, &a), GPUSHARE_E_IO);
	assert_non_null(strstr(gpushare_errdetail(), "not a regular file"));
	gpushare_report_release(&a);
	remove_fixture();
}

/* An ok closed-loop run is folded into its group (its cell's names once,
 * 80 bytes of figures); only the others stay whole. The cursor reads them
 * all back in file order as they were recorded; a duplicate of a folded run
 * is still a bad line; capping the shapes drops folded runs too, by the
 * shapes' first appearance in the file. */
static void test_folded_runs(void **state)
{
	struct gpushare_report r;
	struct gpushare_report_cursor c;
	const struct gpushare_report_run *run;
	size_t n = 0, last = 0, folded = 0;
	int k;
	FILE *f;

	(void)state;
	assert_true(sizeof(struct gpushare_report_sample) <= 80);
	write_fixture(5);
	f = fopen(path, "a");
	assert_non_null(f);
	fputs("\n", f); /* ends the torn line 35 */
	/* Line 36: a duplicate of timeslice 3 workers, repeat 2 (line 15),
	 * folded; line 37: that cell once more under another key. */
	record(f, "timeslice", 3, 2, 7777, 3e-3, 9.7e-3, "ok");
	record_of(f, "spin", "k2", "timeslice", 3, 5, 1010, 3e-3, 9.7e-3, "ok");
	fclose(f);
	assert_int_equal(gpushare_report_load(path, &r), GPUSHARE_OK);
	/* 6 cells x 5 repeats + the one under k2 folded, the failed run whole. */
	assert_int_equal(r.n_runs, 6 * 5 + 2);
	assert_int_equal(r.n_whole, 1);
	assert_int_equal(r.whole[0].status, GPUSHARE_RUN_FAILED);
	assert_int_equal(r.n_groups, 7);
	for (size_t i = 0; i < r.n_groups; i++) {
		const struct gpushare_report_group *g = &r.groups[i];

		folded += g->n_samples;
		assert_int_equal(g->n_samples, strcmp(g->key, "k") ? 1 : 5);
		for (size_t j = 1; j < g->n_samples; j++)
			assert_true(g->samples[j].line > g->samples[j - 1].line);
	}
	assert_int_equal(folded + r.n_whole, r.n_runs);
	assert_int_equal(r.n_bad, 4);
	assert_int_equal(r.bad[3].line, 36);
	assert_non_null(strstr(r.bad[3].reason, "cell spin|timeslice|w3|b1 repeat 2 is recorded already (line 15)"));
	/* Every run once, in file order, as recorded. */
	assert_int_equal(gpushare_report_cursor_open(&r, &c), GPUSHARE_OK);
	while ((run = gpushare_report_cursor_next(&c))) {
		assert_true(run->line > last);
		last = run->line;
		if (run->line == 15) {
			assert_int_equal(run->strategy, GPUSHARE_STRATEGY_TIMESLICE);
			assert_int_equal(run->workers, 3);
			assert_int_equal(run->repeat, 2);
			assert_true(run->items_per_second == 1004 && run->p99_seconds == 9.7e-3);
			assert_int_equal(run->status, GPUSHARE_RUN_OK);
			assert_string_equal(run->error, "");
		}
		if (run->line == 37)
			assert_string_equal(run->key, "k2");
		n++;
	}
	gpushare_report_cursor_close(&c);
	assert_int_equal(n, r.n_runs);
	assert_int_equal(last, 37);
	/* The two groups of timeslice at 3 workers are one cell of 6 runs. */
	assert_int_equal(gpushare_report_summarise(&r, 0), GPUSHARE_OK);
	assert_int_equal(r.n_cells, 6);
	k = cell_of(&r, GPUSHARE_STRATEGY_TIMESLICE, 3);
	assert_true(k >= 0);
	assert_int_equal(r.cells[k].n_ok, 6);
	assert_int_equal(r.cells[k].throughput.n, 6);
	k = cell_of(&r, GPUSHARE_STRATEGY_MPS, 3);
	assert_int_equal(r.cells[k].n_ok, 5);
	assert_int_equal(r.cells[k].n_failed, 1);
	gpushare_report_release(&r);
	remove_fixture();

	/* Shapes by first appearance in the file: "c" first (a failed run,
	 * whole), then "a", then "b"; capped at 2, "b"'s folded runs go. */
	snprintf(dir, sizeof(dir), "/tmp/gpushare-report-unit.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/results.jsonl", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	record_of(f, "c", "c", "mps", 1, 9, 0, 0, 0, "failed");
	for (int i = 0; i < 3; i++) {
		record_of(f, "a", "a", "mps", 1, i, 100 + i, 1e-3, 2e-3, "ok");
		record_of(f, "b", "b", "mps", 1, i, 200 + i, 1e-3, 2e-3, "ok");
		record_of(f, "b", "b2", "timeslice", 2, i, 300 + i, 1e-3, 2e-3, "ok");
		record_of(f, "c", "c", "mps", 1, i, 400 + i, 1e-3, 2e-3, "ok");
	}
	fclose(f);
	assert_int_equal(gpushare_report_load(path, &r), GPUSHARE_OK);
	assert_int_equal(r.n_runs, 13);
	assert_int_equal(r.n_whole, 1);
	assert_int_equal(r.n_groups, 4);
	assert_int_equal(gpushare_report_cap_shapes(&r, 2), GPUSHARE_OK);
	assert_int_equal(r.n_shapes_omitted, 1);
	assert_int_equal(r.n_runs_omitted, 6);
	assert_int_equal(r.n_runs, 7);
	assert_int_equal(r.n_whole, 1);
	assert_int_equal(r.n_groups, 2);
	for (size_t i = 0; i < r.n_groups; i++)
		assert_string_not_equal(r.groups[i].shape, "b");
	assert_int_equal(gpushare_report_summarise(&r, 0), GPUSHARE_OK);
	assert_int_equal(r.n_shapes, 2);
	assert_string_equal(r.shapes[0], "c");
	assert_string_equal(r.shapes[1], "a");
	gpushare_report_release(&r);
	remove_fixture();
}

/* Issue #34: 2 runs a side on a noisy machine, timeslice 2.79k items/s at 1
 * worker against 5.27k at 4, the order-statistic intervals apart, the t test
 * (about 1 degree of freedom) not significant. The report says it cannot
 * tell them apart and how many runs would, in text, HTML and JSON; never
 * "reaches its best"; the fewest workers stay those of the best. */
static void test_underpowered_scaling(void **state)
{
	const double one[] = { 2780, 2800 }, four[] = { 4300, 6240 };
	struct gpushare_report r;
	const struct gpushare_report_scaling *sc;
	char *buf = NULL, *json, sentence[320];
	size_t len = 0;
	FILE *f;
	cJSON *doc, *x;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/gpushare-report-unit.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/results.jsonl", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 2; i++) {
		record(f, "timeslice", 1, i, one[i], 1e-3, 2e-3, "ok");
		record(f, "timeslice", 4, i, four[i], 1e-3, 2e-3, "ok");
	}
	fclose(f);
	assert_int_equal(gpushare_report_load(path, &r), GPUSHARE_OK);
	assert_int_equal(gpushare_report_summarise(&r, 0), GPUSHARE_OK);
	assert_int_equal(r.recs[0].n_scaling, 1);
	sc = &r.recs[0].scaling[0];
	assert_int_equal(r.cells[sc->best].workers, 4);
	assert_int_equal(sc->smallest, sc->best);
	assert_int_equal(r.cells[sc->unsettled].workers, 1);
	assert_true(sc->vs_unsettled.underpowered);
	assert_true(gpushare_report_scaling_unsettled(&r, sc, sentence, sizeof(sentence)));
	assert_non_null(strstr(sentence, "timeslice: cannot tell 1 worker from 4 workers with 2 runs; "));
	assert_non_null(strstr(sentence, "more runs a side would settle a difference of 8"));
	assert_non_null(strstr(sc->text, sentence));
	assert_null(strstr(sc->text, "reaches its best"));

	f = open_memstream(&buf, &len);
	assert_int_equal(gpushare_report_write_markdown(&r, f), GPUSHARE_OK);
	fclose(f);
	assert_non_null(strstr(buf, sentence));
	assert_null(strstr(buf, "within noise ("));
	free(buf);

	assert_int_equal(gpushare_report_write(&r, dir), GPUSHARE_OK);
	buf = written("report.html", NULL);
	assert_non_null(strstr(buf, "timeslice: cannot tell 1 worker from 4 workers with 2 runs; "));
	assert_null(strstr(buf, "reaches its best"));
	free(buf);

	assert_int_equal(gpushare_report_json(&r, &json), GPUSHARE_OK);
	doc = cJSON_Parse(json);
	assert_non_null(doc);
	x = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "recommendation"), 0),
						 "scaling"), 0);
	assert_int_equal(cJSON_GetObjectItem(x, "unsettled_workers")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(x, "smallest_workers_within_noise")->valueint, 4);
	assert_non_null(strstr(cJSON_GetObjectItem(x, "text")->valuestring, "cannot tell 1 worker from 4 workers"));
	cJSON_Delete(doc);
	free(json);
	gpushare_report_release(&r);
	remove_fixture();
}

/* A mig run record over instances of several profiles: each worker's
 * device_name and visible device. */
static void record_mig(FILE *f, int repeat, double ips, const char *const *names, const char *const *vis, int n)
{
	fprintf(f,
		"{\"gpushare_sweep_record\":1,\"cell\":{\"key\":\"k\",\"shape\":\"spin\",\"workload\":\"spin\","
		"\"strategy\":\"mig\",\"workers\":%d,\"batch\":1},\"repeat\":%d,\"status\":\"ok\",\"error\":null,"
		"\"metadata\":{\"date\":\"2025-01-01T00:00:0%dZ\",\"host\":\"box\",\"gpu\":{\"index\":0,"
		"\"name\":\"NVIDIA H100 80GB HBM3\"}},\"bench\":{\"results\":[{\"aggregate\":{\"items_per_second\":%g,"
		"\"requests_per_second\":%g,\"mean_seconds\":0.001,\"p50_seconds\":0.001,\"p99_seconds\":0.002},"
		"\"workers\":[",
		n, repeat, repeat, ips, ips);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s{\"index\":%d,\"device_name\":\"%s\",\"visible_devices\":\"%s\"}", i ? "," : "", i, names[i],
			vis[i]);
	fputs("]}]}}\n", f);
}

/* Mixed MIG layouts: 1g.10gb x2 + 2g.20gb + 3g.40gb reach the run, its
 * group and the cell as a layout (profile -> count), whatever the order of
 * the workers; not only the first worker's profile. */
static void test_mig_layout(void **state)
{
	const char *names[] = { "NVIDIA H100 80GB HBM3 MIG 1g.10gb", "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
				"NVIDIA H100 80GB HBM3 MIG 1g.10gb", "NVIDIA H100 80GB HBM3 MIG 2g.20gb" };
	const char *vis[] = { "MIG-a", "MIG-d", "MIG-b", "MIG-c" };
	const char *names_rev[] = { names[3], names[2], names[1], names[0] }, *vis_rev[] = { vis[3], vis[2], vis[1], vis[0] };
	const char *one[] = { "NVIDIA H100 80GB HBM3 MIG 1g.10gb", "NVIDIA H100 80GB HBM3 MIG 1g.10gb" };
	const char *same[] = { "MIG-a", "MIG-a" };
	struct gpushare_report r;
	struct gpushare_report_cursor cur;
	const struct gpushare_report_run *run;
	struct gpushare_report_mig_layout l;
	const struct gpushare_report_cell *c;
	size_t n_runs = 0;
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/gpushare-report-unit.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/results.jsonl", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	record_mig(f, 0, 4000, names, vis, 4);
	record_mig(f, 1, 4010, names_rev, vis_rev, 4);
	record_mig(f, 0, 1000, one, same, 2); /* two workers on one instance */
	record(f, "timeslice", 4, 0, 3000, 1e-3, 2e-3, "ok");
	fclose(f);
	assert_int_equal(gpushare_report_load(path, &r), GPUSHARE_OK);
	assert_int_equal(gpushare_report_cursor_open(&r, &cur), GPUSHARE_OK);
	while ((run = gpushare_report_cursor_next(&cur))) {
		n_runs++;
		if (run->strategy == GPUSHARE_STRATEGY_MIG && run->workers == 4) {
			assert_string_equal(run->mig_layout, "1g.10gb x2 + 2g.20gb x1 + 3g.40gb x1");
			assert_int_equal(run->n_devices, 4);
		} else if (run->strategy == GPUSHARE_STRATEGY_MIG) {
			assert_string_equal(run->mig_layout, "1g.10gb x1");
		} else {
			assert_string_equal(run->mig_layout, "");
		}
	}
	gpushare_report_cursor_close(&cur);
	assert_int_equal(n_runs, 4);
	assert_int_equal(gpushare_report_summarise(&r, 0), GPUSHARE_OK);
	c = &r.cells[cell_of(&r, GPUSHARE_STRATEGY_MIG, 4)];
	assert_int_equal(c->n_ok, 2);
	assert_int_equal(c->mig_layout.n, 3);
	assert_string_equal(c->mig_layout.profile[0], "1g.10gb");
	assert_int_equal(c->mig_layout.count[0], 2);
	assert_string_equal(c->mig_layout.profile[1], "2g.20gb");
	assert_int_equal(c->mig_layout.count[1], 1);
	assert_string_equal(c->mig_layout.profile[2], "3g.40gb");
	assert_int_equal(c->mig_layout.count[2], 1);
	c = &r.cells[cell_of(&r, GPUSHARE_STRATEGY_MIG, 2)];
	assert_true(c->mig_layout.n == 1 && c->mig_layout.count[0] == 1);
	assert_int_equal(r.cells[cell_of(&r, GPUSHARE_STRATEGY_TIMESLICE, 4)].mig_layout.n, 0);
	gpushare_report_release(&r);
	remove_fixture();

	assert_int_equal(gpushare_report_mig_layout_parse("3g.40gb x2 + 1g.10gb+me x1", &l), GPUSHARE_OK);
	assert_true(l.n == 2 && !strcmp(l.profile[1], "1g.10gb+me") && l.count[0] == 2);
	assert_int_equal(gpushare_report_mig_layout_parse("", &l), GPUSHARE_OK);
	assert_int_equal(l.n, 0);
	assert_int_equal(gpushare_report_mig_layout_parse("1g.10gb", &l), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_report_mig_layout_parse("1g.10gb x0", &l), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_report_mig_layout_parse("1g.10gb x2 + ", &l), GPUSHARE_E_INVAL);
	assert_int_equal(l.n, 0);
	gpushare_clear_error();
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
		cmocka_unit_test(test_few_repeats),
		cmocka_unit_test(test_outputs),
		cmocka_unit_test(test_streamed_load),
		cmocka_unit_test(test_folded_runs),
		cmocka_unit_test(test_underpowered_scaling),
		cmocka_unit_test(test_mig_layout),
		cmocka_unit_test(test_missing_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
