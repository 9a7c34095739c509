/*
 * Unit tests of a sweep's results records (lib/sweep/sweep_record.c): a
 * record read back by the report's loader, a failed run recorded with its
 * error, a torn line refused, and the settings of a peak search.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "gpushare/sweep.h"

static void test_record_round_trip(void **state)
{
	struct gpushare_bench_config c;
	struct gpushare_bench_report r;
	struct gpushare_sweep_cell cell = { .shape = 0, .strategy = GPUSHARE_STRATEGY_MPS, .workers = 2, .batch = 4 };
	struct gpushare_report_run run;
	char *argv[] = { "gpushare", "sweep", "--out", "x" };
	char *line;
	cJSON *doc;

	(void)state;
	snprintf(cell.key, sizeof(cell.key), "spin|mps|w2|b4");
	assert_int_equal(gpushare_bench_config_init(&c), GPUSHARE_OK);
	c.argc = 4;
	c.argv = argv;
	gpushare_bench_report_init(&r, &c);
	snprintf(r.date, sizeof(r.date), "2025-01-02T03:04:05Z");
	snprintf(r.host, sizeof(r.host), "box");
	r.results = calloc(1, sizeof(*r.results));
	assert_non_null(r.results);
	assert_int_equal(gpushare_bench_result_init(&r.results[0], GPUSHARE_STRATEGY_MPS, 2), GPUSHARE_OK);
	r.n_results = 1;
	for (int i = 0; i < 2; i++) {
		struct gpushare_bench_worker *w = &r.results[0].workers[i];

		w->requests = 1000;
		w->items_per_request = 4;
		w->window_seconds = 1.0;
		for (int k = 0; k < 1000; k++)
			gpushare_hist_record(&w->hist, 1000000 + (uint64_t)k * 1000);
	}
	gpushare_bench_result_compute(&r.results[0], 0);
	assert_int_equal(gpushare_sweep_record(&cell, "spin", 3, &r, GPUSHARE_OK, "", 13000, &line), GPUSHARE_OK);
	assert_null(strchr(line, '\n'));
	doc = cJSON_Parse(line);
	assert_non_null(doc);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "metadata"), "cuda_driver_version")->valueint, 13000);
	assert_string_equal(cJSON_GetObjectItem(doc, "status")->valuestring, "ok");
	assert_true(cJSON_IsObject(cJSON_GetObjectItem(doc, "bench")));
	cJSON_Delete(doc);
	assert_int_equal(gpushare_report_parse_line(line, strlen(line), &run), GPUSHARE_OK);
	assert_string_equal(run.key, "spin|mps|w2|b4");
	assert_int_equal(run.strategy, GPUSHARE_STRATEGY_MPS);
	assert_int_equal(run.workers, 2);
	assert_int_equal(run.batch, 4);
	assert_int_equal(run.repeat, 3);
	assert_int_equal(run.status, GPUSHARE_RUN_OK);
	assert_true(run.items_per_second > 7999 && run.items_per_second < 8001);
	assert_true(run.p99_seconds > 1.9e-3 && run.p99_seconds < 2.1e-3);
	/* The merged histogram travels with the record, for the report's CDFs. */
	assert_true(run.hist_n > 0 && run.hist_counts != NULL);
	gpushare_report_run_release(&run);
	free(line);
	/* A failed run is recorded with its error and read back as failed. */
	r.partial = false;
	assert_int_equal(gpushare_sweep_record(&cell, "spin", 4, &r, GPUSHARE_E_WORKER, "worker 1 died", -1, &line),
			 GPUSHARE_OK);
	assert_non_null(strstr(line, "\"status\":\"failed\""));
	assert_non_null(strstr(line, "worker 1 died"));
	assert_int_equal(gpushare_report_parse_line(line, strlen(line), &run), GPUSHARE_OK);
	assert_int_equal(run.status, GPUSHARE_RUN_FAILED);
	assert_non_null(strstr(run.error, "worker 1 died"));
	assert_string_equal(run.key, "spin|mps|w2|b4");
	gpushare_report_run_release(&run);
	/* A torn line is refused, not misread. */
	assert_int_equal(gpushare_report_parse_line(line, strlen(line) / 2, &run), GPUSHARE_E_INVAL);
	free(line);
	gpushare_bench_report_release(&r);
}

/* The settings of a --find-peak search travel with its record; other runs
 * say null. */
static void test_peak_search(void **state)
{
	struct gpushare_bench_config c;
	struct gpushare_bench_report r;
	struct gpushare_sweep_cell cell = { .shape = 0, .strategy = GPUSHARE_STRATEGY_TIMESLICE, .workers = 1, .batch = 1 };
	char *line;
	cJSON *doc, *ps;

	(void)state;
	snprintf(cell.key, sizeof(cell.key), "spin|timeslice|w1|b1|peak");
	assert_int_equal(gpushare_bench_config_init(&c), GPUSHARE_OK);
	gpushare_bench_report_init(&r, &c);
	assert_int_equal(gpushare_sweep_record(&cell, "spin", 0, &r, GPUSHARE_E_WORKER, "", -1, &line), GPUSHARE_OK);
	doc = cJSON_Parse(line);
	assert_non_null(doc);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(doc, "peak_search")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "metadata"), "cuda_driver_version")));
	/* No message given: the error code's text stands in. */
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "error"), "message")->valuestring,
			    gpushare_strerror(GPUSHARE_E_WORKER));
	cJSON_Delete(doc);
	free(line);
	c.find_peak = true;
	c.slo_quantile = 0.99;
	c.slo_ns = 5000000;
	c.rate = 100;
	assert_int_equal(gpushare_sweep_record(&cell, "spin", 0, &r, GPUSHARE_E_WORKER, "x", -1, &line), GPUSHARE_OK);
	doc = cJSON_Parse(line);
	assert_non_null(doc);
	ps = cJSON_GetObjectItem(doc, "peak_search");
	assert_true(cJSON_IsObject(ps));
	assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(ps, "slo"), "quantile")->valuedouble == 0.99);
	assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(ps, "slo"), "bound_seconds")->valuedouble == 0.005);
	assert_true(cJSON_GetObjectItem(ps, "first_rate_per_second")->valuedouble == 100);
	cJSON_Delete(doc);
	free(line);
	gpushare_bench_report_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_round_trip),
		cmocka_unit_test(test_peak_search),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
