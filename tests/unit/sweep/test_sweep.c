/*
 * Unit tests of the sweep's grid (lib/sweep/sweep_config.c): list and shape
 * parsing, cell order and keys, configuration checks (the records are
 * tests/unit/sweep/test_sweep_record.c). The
 * run loop itself (append, resume, interruption) is tested end to end by
 * tests/cli/test_sweep.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "gpushare/sweep.h"
#include "gpushare/internal/bench.h"
#include "gpushare/internal/sweep.h"

static struct gpushare_sweep_config cfg;

static void test_int_list(void **state)
{
	long v[GPUSHARE_SWEEP_MAX_VALUES];
	size_t n;

	(void)state;
	assert_int_equal(gpushare_sweep_parse_int_list("1,3,5,7", 1, 64, v, &n), GPUSHARE_OK);
	assert_int_equal(n, 4);
	assert_int_equal(v[3], 7);
	assert_int_equal(gpushare_sweep_parse_int_list("", 1, 64, v, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_parse_int_list("1,,3", 1, 64, v, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_parse_int_list("1,3,", 1, 64, v, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_parse_int_list("1,x", 1, 64, v, &n), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "'x'"));
	assert_int_equal(gpushare_sweep_parse_int_list("0", 1, 64, v, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_parse_int_list("65", 1, 64, v, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_parse_int_list("-1", 1, 64, v, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_parse_int_list("2,2", 1, 64, v, &n), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "twice"));
}

static void test_shapes(void **state)
{
	(void)state;
	assert_int_equal(gpushare_sweep_config_init(&cfg), GPUSHARE_OK);
	assert_int_equal(cfg.repeats, 5);
	assert_int_equal(cfg.n_strategies, 2);
	assert_int_equal(cfg.n_workers, 3);
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "spin:request-us=50us"), GPUSHARE_OK);
	assert_string_equal(gpushare_wl_get(&cfg.shapes[0].wl, "request-us"), "50us");
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "matmul:size=256:dtype=bf16"), GPUSHARE_OK);
	assert_string_equal(gpushare_wl_get(&cfg.shapes[1].wl, "dtype"), "bf16");
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "bogus"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "unknown workload 'bogus'"));
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "matmul:nosuch=1"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "'nosuch'"));
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "matmul:size"), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "matmul:size=huge"), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "spin:request-us=50us"), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_sweep_add_shape(&cfg, ""), GPUSHARE_E_INVAL);
	assert_int_equal(cfg.n_shapes, 2);
	/* An option reaches every shape that has it, and only those. */
	assert_int_equal(gpushare_sweep_set_option(&cfg, "k", "512"), GPUSHARE_OK);
	assert_string_equal(gpushare_wl_get(&cfg.shapes[1].wl, "k"), "512");
	assert_int_equal(gpushare_sweep_set_option(&cfg, "nosuch", "1"), GPUSHARE_E_NOT_FOUND);
	assert_int_equal(gpushare_sweep_set_option(&cfg, "n", "huge"), GPUSHARE_E_INVAL);
	/* One the shape's spec gave is refused, as bench refuses it: the
	 * shape's label would name a value that did not run. */
	assert_int_equal(gpushare_sweep_set_option(&cfg, "dtype", "fp32"), GPUSHARE_E_INVAL);
	assert_string_equal(gpushare_errdetail(),
			    "--dtype is given twice: as an option and in workload 'matmul:size=256:dtype=bf16'");
	assert_string_equal(gpushare_wl_get(&cfg.shapes[1].wl, "dtype"), "bf16");
	/* A mix: each workload that has the option, its first's as the shape's. */
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "spin:sleep=on+matmul:size=512"), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_set_option(&cfg, "dtype", "bf16"), GPUSHARE_E_INVAL);   /* shape 1 gave it */
	memmove(&cfg.shapes[0], &cfg.shapes[2], sizeof(cfg.shapes[0]));   /* the mix alone */
	cfg.n_shapes = 1;
	assert_int_equal(gpushare_sweep_set_option(&cfg, "request-us", "2ms"), GPUSHARE_OK);
	assert_string_equal(gpushare_wl_get(&cfg.shapes[0].mix[0].wl, "request-us"), "2ms");
	assert_string_equal(gpushare_wl_get(&cfg.shapes[0].wl, "request-us"), "2ms");
	assert_int_equal(gpushare_sweep_set_option(&cfg, "dtype", "fp32"), GPUSHARE_OK);
	assert_string_equal(gpushare_wl_get(&cfg.shapes[0].mix[1].wl, "dtype"), "fp32");
	assert_int_equal(gpushare_sweep_set_option(&cfg, "size", "1024"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "in workload 'matmul:size=512'"));
}

static void test_cells_and_check(void **state)
{
	struct gpushare_sweep_cell *cells;
	size_t n;

	(void)state;
	assert_int_equal(gpushare_sweep_config_init(&cfg), GPUSHARE_OK);
	cfg.n_strategies = 0;
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "spin"), GPUSHARE_OK);
	cfg.workers[0] = 1;
	cfg.workers[1] = 3;
	cfg.n_workers = 2;
	cfg.batches[0] = 1;
	cfg.batches[1] = 4;
	cfg.n_batches = 2;
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "no strategy"));
	assert_int_equal(gpushare_strategy_parse_list("timeslice,mps", cfg.strategies, &cfg.n_strategies), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_cells(&cfg, &cells, &n), GPUSHARE_OK);
	assert_int_equal(n, 8);
	/* Shape, strategy, workers, batch nested in that order. */
	assert_string_equal(cells[0].key, "spin|timeslice|w1|b1");
	assert_string_equal(cells[1].key, "spin|timeslice|w1|b4");
	assert_string_equal(cells[2].key, "spin|timeslice|w3|b1");
	assert_string_equal(cells[7].key, "spin|mps|w3|b4");
	assert_int_equal(cells[7].strategy, GPUSHARE_STRATEGY_MPS);
	free(cells);
	cfg.repeats = 0;
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_E_INVAL);
	cfg.repeats = 5;
	cfg.target_noise = 0.02;
	cfg.max_repeats = 3;
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "--max-repeats"));
	cfg.n_workers = 0;
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_E_INVAL);
}

/* Command mode: one shape named after the command, workloads refused, the
 * bench's checks (program found, no streams) run before any run, and the
 * record's workload is "command". */
static void test_command(void **state)
{
	static char long_arg[300];
	char *argv[] = { "/bin/true", "--flag", NULL };
	char *missing[] = { "/no/such/program", NULL };
	char *longv[] = { "/bin/true", long_arg, NULL };
	struct gpushare_bench_config c;
	struct gpushare_bench_report r;
	struct gpushare_sweep_cell cell = { .shape = 0, .strategy = GPUSHARE_STRATEGY_TIMESLICE, .workers = 1, .batch = 2 };
	char *line;

	(void)state;
	assert_int_equal(gpushare_sweep_config_init(&cfg), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_set_command(&cfg, argv, GPUSHARE_CMD_REQUEST), GPUSHARE_OK);
	assert_int_equal(cfg.n_shapes, 1);
	assert_string_equal(cfg.shapes[0].label, "command:/bin/true --flag");
	assert_true(cfg.shapes[0].command);
	assert_ptr_equal(cfg.bench.command, argv);
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "spin"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "not both"));
	assert_int_equal(gpushare_sweep_set_option(&cfg, "size", "256"), GPUSHARE_E_NOT_FOUND);
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_OK);
	cfg.strategies[1] = GPUSHARE_STRATEGY_STREAMS;
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "streams strategy cannot run a command"));
	cfg.strategies[1] = GPUSHARE_STRATEGY_MPS;

	/* The record of a command run. */
	snprintf(cell.key, sizeof(cell.key), "%s|timeslice|w1|b2", cfg.shapes[0].label);
	c = cfg.bench;
	gpushare_bench_report_init(&r, &c);
	assert_int_equal(gpushare_sweep_record(&cell, cfg.shapes[0].label, 0, &r, GPUSHARE_E_WORKER, "x", -1, &line),
			 GPUSHARE_OK);
	assert_non_null(strstr(line, "\"workload\":\"command\""));
	assert_non_null(strstr(line, "\"shape\":\"command:/bin/true --flag\""));
	free(line);
	gpushare_bench_report_release(&r);

	assert_int_equal(gpushare_sweep_config_init(&cfg), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_set_command(&cfg, missing, GPUSHARE_CMD_JOB), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "/no/such/program"));

	/* A long command line is cut to fit, visibly. */
	memset(long_arg, 'a', sizeof(long_arg) - 1);
	assert_int_equal(gpushare_sweep_config_init(&cfg), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_set_command(&cfg, longv, GPUSHARE_CMD_REQUEST), GPUSHARE_OK);
	assert_int_equal(strlen(cfg.shapes[0].label), sizeof(cfg.shapes[0].label) - 1);
	assert_string_equal(cfg.shapes[0].label + sizeof(cfg.shapes[0].label) - 4, "...");
	assert_int_equal(gpushare_sweep_set_command(&cfg, longv, GPUSHARE_CMD_REQUEST), GPUSHARE_E_INVAL);

	/* Workloads first, then a command: refused too. */
	assert_int_equal(gpushare_sweep_config_init(&cfg), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "spin"), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_set_command(&cfg, argv, GPUSHARE_CMD_REQUEST), GPUSHARE_E_INVAL);
}

/* --find-peak: one first rate, not a list; the rate is no axis of the grid
 * (keys end in "|peak"); the record keeps the search's settings, and a
 * failed search still reads back as a peak search with its bound. */
static void test_find_peak(void **state)
{
	struct gpushare_bench_report r;
	struct gpushare_sweep_cell *cells;
	struct gpushare_report_run run;
	size_t n;
	char *line;
	cJSON *doc, *ps;

	(void)state;
	assert_int_equal(gpushare_sweep_config_init(&cfg), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "spin"), GPUSHARE_OK);
	cfg.n_strategies = 1;
	cfg.n_workers = 2;
	cfg.bench.load = GPUSHARE_LOAD_OPEN;
	cfg.bench.find_peak = true;
	assert_int_equal(gpushare_slo_parse("p99=50ms", &cfg.bench.slo_quantile, &cfg.bench.slo_ns), GPUSHARE_OK);
	cfg.rates[0] = 50;
	cfg.rates[1] = 100;
	cfg.n_rates = 2;
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "--find-peak takes one --rate"));
	cfg.n_rates = 1;
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_OK);
	cfg.target_noise = 0.02;
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "--target-noise"));
	cfg.target_noise = 0;
	assert_int_equal(gpushare_sweep_cells(&cfg, &cells, &n), GPUSHARE_OK);
	assert_int_equal(n, 2);
	assert_string_equal(cells[1].key, "spin|timeslice|w2|b1|peak");
	assert_true(cells[1].rate == 0);
	/* Without --rate the search has no first rate: bench's own words. */
	cfg.n_rates = 0;
	assert_int_equal(gpushare_sweep_config_check(&cfg), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "--rate"));

	cfg.bench.rate = 50;
	gpushare_bench_report_init(&r, &cfg.bench);
	assert_int_equal(gpushare_sweep_record(&cells[1], "spin", 0, &r, GPUSHARE_E_WORKER, "x", -1, &line), GPUSHARE_OK);
	doc = cJSON_Parse(line);
	assert_non_null(doc);
	ps = cJSON_GetObjectItem(doc, "peak_search");
	assert_true(cJSON_IsObject(ps));
	assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(ps, "slo"), "quantile")->valuedouble == 0.99);
	assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(ps, "slo"), "bound_seconds")->valuedouble == 0.05);
	assert_true(cJSON_GetObjectItem(ps, "first_rate_per_second")->valuedouble == 50);
	assert_true(cJSON_GetObjectItem(ps, "resolution")->valuedouble == 0.05);
	assert_int_equal(cJSON_GetObjectItem(ps, "tail_samples")->valueint, 100);
	cJSON_Delete(doc);
	assert_int_equal(gpushare_report_parse_line(line, strlen(line), &run), GPUSHARE_OK);
	assert_true(run.find_peak && run.status == GPUSHARE_RUN_FAILED && run.peak_bound_seconds == 0.05);
	assert_false(run.peak_found);
	gpushare_report_run_release(&run);
	free(line);
	/* Closed loop: "peak_search" is null. */
	cfg.bench.find_peak = false;
	assert_int_equal(gpushare_sweep_record(&cells[1], "spin", 0, &r, GPUSHARE_E_WORKER, "x", -1, &line), GPUSHARE_OK);
	assert_non_null(strstr(line, "\"peak_search\":null"));
	free(line);
	gpushare_bench_report_release(&r);
	free(cells);
}

static void test_results_file_refused_without_resume(void **state)
{
	struct gpushare_sweep_summary sum;
	char dir[] = "/tmp/gpushare-sweep-unit.XXXXXX", path[128];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/results.jsonl", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{}\n", f);
	fclose(f);
	assert_int_equal(gpushare_sweep_config_init(&cfg), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "spin"), GPUSHARE_OK);
	cfg.workers[0] = 1;
	cfg.n_workers = 1;
	cfg.batches[0] = 1;
	cfg.n_batches = 1;
	assert_int_equal(gpushare_sweep_run(&cfg, path, &sum), GPUSHARE_E_BUSY);
	assert_non_null(strstr(gpushare_errdetail(), "--resume"));
	assert_int_equal(sum.runs_done, 0);
	unlink(path);
	/* The refusal came with the directory's lock held: its lock file stays,
	 * as after any sweep (docs/sweep.md). */
	snprintf(path, sizeof(path), "%s/%s", dir, GPUSHARE_SWEEP_LOCK_FILE);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* The plan of the grid's longest run, and a budget not one run fits in
 * refused before any starts. */
static void test_plan_and_budget(void **state)
{
	struct gpushare_bench_plan p;

	(void)state;
	assert_int_equal(gpushare_sweep_config_init(&cfg), GPUSHARE_OK);
	assert_int_equal(gpushare_sweep_add_shape(&cfg, "spin"), GPUSHARE_OK);
	cfg.bench.duration_ns = 3600ull * 1000000000ull;
	cfg.bench.warmup_ns = 2000000000ull;
	assert_int_equal(gpushare_sweep_plan(&cfg, &p), GPUSHARE_OK);
	assert_true(fabs(p.total_seconds - 3602.0) < 1e-6);   /* one strategy a cell */
	assert_int_equal(gpushare_sweep_budget_check(&cfg), GPUSHARE_OK);   /* no budget */
	cfg.budget_seconds = 5;
	assert_int_equal(gpushare_sweep_budget_check(&cfg), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "shorter than one run"));
	cfg.budget_seconds = 1e-9;
	assert_int_equal(gpushare_sweep_budget_check(&cfg), GPUSHARE_E_INVAL);
	cfg.budget_seconds = 3602;
	assert_int_equal(gpushare_sweep_budget_check(&cfg), GPUSHARE_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int_list),
		cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_cells_and_check),
		cmocka_unit_test(test_command),
		cmocka_unit_test(test_find_peak),
		cmocka_unit_test(test_results_file_refused_without_resume),
		cmocka_unit_test(test_plan_and_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
