/*
 * Unit tests of a benchmark's live Prometheus view (lib/bench/metrics_bench.c):
 * the run labels of a view that serves several runs (the sweep), and the
 * workload label of a command run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"
#include "gpushare/region.h"

static int count_lines(const char *text, const char *prefix)
{
	int n = 0;

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		n += !strncmp(p, prefix, strlen(prefix));
	return n;
}

/* Two runs of one strategy attached to one view (as a sweep does): each
 * keeps its own series, told apart by the run labels; the first run's final
 * values stay while the second is live. */
static void test_bench_run_labels(void **state)
{
	static struct gpushare_bench_config c;
	struct gpushare_metrics_bench *m;
	struct gpushare_region_header *reg;
	struct gpushare_metrics_label l[2] = { { "workers", "1" }, { "repeat", "0" } };
	struct gpushare_metrics_label bad[1] = { { "worker", "1" } };
	char *text;
	size_t len;
	int fd;

	(void)state;
	assert_int_equal(gpushare_bench_config_init(&c), GPUSHARE_OK);
	snprintf(c.metrics_listen, sizeof(c.metrics_listen), "127.0.0.1:0");
	c.strategies[0] = GPUSHARE_STRATEGY_TIMESLICE;
	c.n_strategies = 1;
	assert_int_equal(gpushare_metrics_bench_start(&c, &m), GPUSHARE_OK);
	assert_non_null(m);
	assert_int_equal(gpushare_metrics_bench_set_run(m, "spin", bad, 1), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "'worker'"));
	assert_int_equal(gpushare_metrics_bench_set_run(NULL, "spin", l, 2), GPUSHARE_OK);
	assert_int_equal(gpushare_region_create(1, &reg, &fd), GPUSHARE_OK);
	close(fd);

	assert_int_equal(gpushare_metrics_bench_set_run(m, "spin", l, 2), GPUSHARE_OK);
	gpushare_metrics_bench_attach(m, GPUSHARE_STRATEGY_TIMESLICE, reg, 1, 0, NULL);
	__atomic_store_n(&gpushare_region_slot(reg, 0)->requests, 7, __ATOMIC_RELAXED);
	gpushare_metrics_bench_detach(m);

	l[1].value = "1";
	assert_int_equal(gpushare_metrics_bench_set_run(m, "spin", l, 2), GPUSHARE_OK);
	gpushare_metrics_bench_attach(m, GPUSHARE_STRATEGY_TIMESLICE, reg, 1, 0, NULL);
	__atomic_store_n(&gpushare_region_slot(reg, 0)->requests, 3, __ATOMIC_RELAXED);
	assert_int_equal(gpushare_metrics_bench_render(m, &text, &len), GPUSHARE_OK);
	assert_non_null(strstr(text, "gpushare_requests_total{strategy=\"timeslice\",workload=\"spin\",worker=\"0\","
				     "workers=\"1\",repeat=\"0\"} 7\n"));
	assert_non_null(strstr(text, "gpushare_requests_total{strategy=\"timeslice\",workload=\"spin\",worker=\"0\","
				     "workers=\"1\",repeat=\"1\"} 3\n"));
	assert_int_equal(count_lines(text, "gpushare_request_duration_seconds_count{"), 2);
	free(text);
	gpushare_metrics_bench_detach(m);
	gpushare_metrics_bench_stop(m);
	gpushare_region_unmap(reg);

	/* Without run labels (plain bench) a command run is labelled "command". */
	c.command = (char *[]){ "true", NULL };
	assert_int_equal(gpushare_metrics_bench_start(&c, &m), GPUSHARE_OK);
	assert_int_equal(gpushare_region_create(1, &reg, &fd), GPUSHARE_OK);
	close(fd);
	gpushare_metrics_bench_attach(m, GPUSHARE_STRATEGY_TIMESLICE, reg, 1, 0, NULL);
	assert_int_equal(gpushare_metrics_bench_render(m, &text, &len), GPUSHARE_OK);
	assert_non_null(strstr(text, "gpushare_requests_total{strategy=\"timeslice\",workload=\"command\",worker=\"0\"} 0\n"));
	free(text);
	gpushare_metrics_bench_detach(m);
	gpushare_metrics_bench_stop(m);
	gpushare_region_unmap(reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bench_run_labels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
