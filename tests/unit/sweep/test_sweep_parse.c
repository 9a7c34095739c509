/*
 * Unit tests of the sweep's lists (lib/sweep/sweep_parse.c): the thread
 * percentage axis of mps-split (percentages and multiples Kx of the default
 * share), the default share, and what the axis makes of the grid: one cell
 * per distinct percentage of an mps-split cell (the default share keeps the
 * key without "|t"), one cell for the other strategies, the axis refused
 * without mps-split; a record's cell.thread_percentage read back (and its
 * absence meaning the default). The whole-number lists are tested in
 * test_sweep.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "gpushare/sweep.h"

static struct gpushare_sweep_config cfg;

static void test_parse(void **state)
{
	struct gpushare_sweep_tpct v[GPUSHARE_SWEEP_MAX_VALUES];
	size_t n;

	(void)state;
	assert_int_equal(gpushare_sweep_parse_thread_pcts("25,50%,100", v, &n), GPUSHARE_OK);
	assert_int_equal(n, 3);
	assert_true(v[1].value == 50 && !v[1].times);
	assert_true(v[2].value == 100 && !v[2].times);
	assert_int_equal(gpushare_sweep_parse_thread_pcts("1x,2x,100,1.5x", v, &n), GPUSHARE_OK);
	assert_int_equal(n, 4);
	assert_true(v[0].value == 1 && v[0].times);
	assert_true(v[1].value == 2 && v[1].times);
	assert_true(v[3].value == 1.5 && v[3].times);
	assert_int_equal(gpushare_sweep_parse_thread_pcts("auto", v, &n), GPUSHARE_OK);
	assert_int_equal(n, 3);
	assert_true(v[0].value == 1 && v[0].times && v[1].value == 2 && v[1].times && v[2].value == 100 && !v[2].times);
	assert_int_equal(gpushare_sweep_parse_thread_pcts("auto,50", v, &n), GPUSHARE_E_INVAL);
	/* 2 and 2x are different items. */
	assert_int_equal(gpushare_sweep_parse_thread_pcts("2,2x", v, &n), GPUSHARE_OK);
	assert_int_equal(n, 2);
	assert_int_equal(gpushare_sweep_parse_thread_pcts("50,50", v, &n), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "twice"));
	assert_int_equal(gpushare_sweep_parse_thread_pcts("0", v, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_parse_thread_pcts("101", v, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_parse_thread_pcts("x", v, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_parse_thread_pcts("0x", v, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_parse_thread_pcts("-2x", v, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_parse_thread_pcts("abc", v, &n), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "'abc'"));
	assert_int_equal(gpushare_sweep_parse_thread_pcts("", v, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_parse_thread_pcts("50,", v, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_parse_thread_pcts("50,,60", v, &n), GPUSHARE_E_INVAL);
}

static void test_default_share(void **state)
{
	struct gpushare_sweep_cell c = { .strategy = GPUSHARE_STRATEGY_MPS_SPLIT, .workers = 3 };

	(void)state;
	assert_true(gpushare_sweep_default_thread_pct(1) == 100);
	assert_true(gpushare_sweep_default_thread_pct(3) == 33);
	assert_true(gpushare_sweep_default_thread_pct(200) == 1);
	assert_true(gpushare_sweep_cell_thread_pct(&c) == 33);
	c.thread_pct = 70;
	assert_true(gpushare_sweep_cell_thread_pct(&c) == 70);
	c.strategy = GPUSHARE_STRATEGY_MPS;
	assert_true(gpushare_sweep_cell_thread_pct(&c) == 0);
}

static void test_cells(void **state)
{
	struct gpushare_sweep_cell *cells;
	size_t n;

	(void)state;
	assert_int_equal(gpushare_sweep_config_init(&cfg), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "spin"), GPUSHARE_OK);
	assert_int_equal(gpushare_strategy_parse_list("mps,mps-split", cfg.strategies, &cfg.n_strategies), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_parse_thread_pcts("1x,2x,100", cfg.thread_pcts, &cfg.n_thread_pcts), GPUSHARE_OK);
	/* workers 1,2,4: mps 3 cells; mps-split w1 1 (all three are 100),
	 * w2 2 (50 the default, 100), w4 3 (25 the default, 50, 100). */
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_cells(&cfg, &cells, &n), GPUSHARE_OK);
	assert_int_equal(n, 9);
	assert_string_equal(cells[0].key, "spin|mps|w1|b1");
	assert_true(cells[0].thread_pct == 0);
	assert_string_equal(cells[3].key, "spin|mps-split|w1|b1");
	assert_string_equal(cells[4].key, "spin|mps-split|w2|b1");
	assert_string_equal(cells[5].key, "spin|mps-split|w2|b1|t100");
	assert_true(cells[5].thread_pct == 100);
	assert_string_equal(cells[6].key, "spin|mps-split|w4|b1");
	assert_string_equal(cells[7].key, "spin|mps-split|w4|b1|t50");
	assert_string_equal(cells[8].key, "spin|mps-split|w4|b1|t100");
	free(cells);
	/* An absolute value equal to the default share is the default cell. */
	assert_int_equal(gpushare_sweep_parse_thread_pcts("50,30", cfg.thread_pcts, &cfg.n_thread_pcts), GPUSHARE_OK);
	cfg.workers[0] = 2;
	cfg.n_workers = 1;
	assert_int_equal(gpushare_sweep_cells(&cfg, &cells, &n), GPUSHARE_OK);
	assert_int_equal(n, 3);
	assert_string_equal(cells[1].key, "spin|mps-split|w2|b1");
	assert_string_equal(cells[2].key, "spin|mps-split|w2|b1|t30");
	free(cells);
	/* The axis without mps-split: refused. */
	assert_int_equal(gpushare_strategy_parse_list("timeslice,mps", cfg.strategies, &cfg.n_strategies), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "mps-split"));
	cfg.n_thread_pcts = 0;
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_OK);
}

/* A failed record (no bench document needed) with and without
 * cell.thread_percentage. */
#define RECORD_FMT                                                                                                \
	"{\"gpushare_sweep_record\":%d,\"cell\":{\"key\":\"spin|mps-split|w4|b1%s\",\"shape\":\"spin\","           \
	"\"workload\":\"spin\",\"strategy\":\"mps-split\",\"workers\":4,\"batch\":1%s},\"repeat\":0,"               \
	"\"status\":\"failed\",\"error\":{\"code\":\"x\",\"message\":\"boom\"}}"

static void test_read_back(void **state)
{
	struct gpushare_report_run run;
	char line[512];

	(void)state;
	snprintf(line, sizeof(line), RECORD_FMT, GPUSHARE_SWEEP_RECORD_VERSION, "|t50", ",\"thread_percentage\":50");
	assert_int_equal(gpushare_report_parse_line(line, strlen(line), &run), GPUSHARE_OK);
	assert_true(run.thread_pct == 50);
	assert_string_equal(run.shape, "spin (mps-split threads 50%)");
	gpushare_report_run_release(&run);
	snprintf(line, sizeof(line), RECORD_FMT, GPUSHARE_SWEEP_RECORD_VERSION, "", "");
	assert_int_equal(gpushare_report_parse_line(line, strlen(line), &run), GPUSHARE_OK);
	assert_true(run.thread_pct == 0);
	assert_string_equal(run.shape, "spin");
	gpushare_report_run_release(&run);
	snprintf(line, sizeof(line), RECORD_FMT, GPUSHARE_SWEEP_RECORD_VERSION, "|t50", ",\"thread_percentage\":150");
	assert_int_equal(gpushare_report_parse_line(line, strlen(line), &run), GPUSHARE_E_INVAL);
	gpushare_report_run_release(&run);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_default_share),
		cmocka_unit_test(test_cells),
		cmocka_unit_test(test_read_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
