/*
 * Unit tests of lib/farm/metrics_farm.c: the live Prometheus view of a
 * farm, its totals and per-GPU families.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "metrics_farm.h"

static void test_metrics_text(void **state)
{
	struct gpushare_metrics_farm *m = NULL;
	char *text = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(gpushare_metrics_farm_new(2, &m), GPUSHARE_OK);
	gpushare_metrics_farm_gpu_name(m, 0, "GPU-a", 0);
	gpushare_metrics_farm_gpu_name(m, 1, "GPU-b", 3);
	gpushare_metrics_farm_gpu(m, 1, 2, 7, 1);
	gpushare_metrics_farm_totals(m, 11, 2, 7, 1, 4);
	assert_int_equal(gpushare_metrics_farm_text(m, &text, &len), GPUSHARE_OK);
	assert_int_equal(strlen(text), len);
	assert_non_null(strstr(text, "gpushare_farm_jobs_queued 11\n"));
	assert_non_null(strstr(text, "gpushare_farm_slots 4\n"));
	assert_non_null(strstr(text, "gpushare_farm_gpu_jobs_running{gpu=\"3\",uuid=\"GPU-b\"} 2\n"));
	assert_non_null(strstr(text, "gpushare_farm_gpu_jobs_done_total{gpu=\"3\",uuid=\"GPU-b\"} 7\n"));
	assert_non_null(strstr(text, "# TYPE gpushare_farm_gpu_jobs_failed_total counter\n"));
	free(text);
	gpushare_metrics_farm_stop(m);
	gpushare_metrics_farm_stop(NULL);
}

/* Numbers of a GPU out of range are ignored; a view of no GPU has no
 * per-GPU samples; families keep their order and every line ends in \n. */
static void test_metrics_edges(void **state)
{
	struct gpushare_metrics_farm *m = NULL;
	char *text = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(gpushare_metrics_farm_new(1, &m), GPUSHARE_OK);
	gpushare_metrics_farm_gpu_name(m, 0, NULL, 2);
	gpushare_metrics_farm_gpu_name(m, 5, "GPU-x", 9);
	gpushare_metrics_farm_gpu(m, 5, 9, 9, 9);
	gpushare_metrics_farm_gpu(m, 0, 1, 2, 3);
	assert_int_equal(gpushare_metrics_farm_text(m, &text, &len), GPUSHARE_OK);
	assert_null(strstr(text, "GPU-x"));
	assert_non_null(strstr(text, "gpushare_farm_gpu_jobs_failed_total{gpu=\"2\",uuid=\"\"} 3\n"));
	assert_true(strstr(text, "gpushare_farm_jobs_queued 0\n") < strstr(text, "gpushare_farm_gpu_jobs_running{"));
	assert_true(len > 0 && text[len - 1] == '\n');
	free(text);
	gpushare_metrics_farm_stop(m);
	assert_int_equal(gpushare_metrics_farm_new(0, &m), GPUSHARE_OK);
	gpushare_metrics_farm_totals(m, 1, 0, 0, 0, 1);
	assert_int_equal(gpushare_metrics_farm_text(m, &text, &len), GPUSHARE_OK);
	assert_non_null(strstr(text, "gpushare_farm_jobs_queued 1\n"));
	assert_null(strstr(text, "gpushare_farm_gpu_jobs_running{"));
	free(text);
	gpushare_metrics_farm_stop(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_text),
		cmocka_unit_test(test_metrics_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
