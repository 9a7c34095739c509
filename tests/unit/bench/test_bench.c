/*
 * Unit tests of the benchmark's model and printers (lib/bench/bench.c,
 * lib/bench/bench_output.c): strategy and per-worker list parsing, statistics
 * computed from histograms, the JSON document, CSV rows and the atomic file
 * write. The launcher itself is tested end to end by tests/cli/test_bench.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushare/bench.h"
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/internal/bench.h"

static void test_strategy_list(void **state)
{
	int s[GPUSHARE_STRATEGY_COUNT];
	size_t n;

	(void)state;
	assert_int_equal(gpushare_strategy_parse_list("timeslice,mps-split,streams", s, &n), GPUSHARE_OK);
	assert_int_equal(n, 3);
	assert_int_equal(s[0], GPUSHARE_STRATEGY_TIMESLICE);
	assert_int_equal(s[1], GPUSHARE_STRATEGY_MPS_SPLIT);
	assert_int_equal(s[2], GPUSHARE_STRATEGY_STREAMS);
	assert_string_equal(gpushare_strategy_name(s[1]), "mps-split");
	assert_int_equal(gpushare_strategy_parse_list("mps,bogus", s, &n), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "'bogus'"));
	assert_int_equal(gpushare_strategy_parse_list("mps,mps", s, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_strategy_parse_list("", s, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_strategy_parse_list("mps,", s, &n), GPUSHARE_E_INVAL);
	/* A prefix of a name is not the name. */
	assert_int_equal(gpushare_strategy_parse_list("mps-s", s, &n), GPUSHARE_E_INVAL);
	assert_string_equal(gpushare_strategy_name(GPUSHARE_STRATEGY_CEILING), "ceiling");
}

static void test_lists(void **state)
{
	double pct[GPUSHARE_BENCH_MAX_WORKERS];
	uint64_t mem[GPUSHARE_BENCH_MAX_WORKERS];
	int prio[GPUSHARE_BENCH_MAX_WORKERS];
	int n;

	(void)state;
	assert_int_equal(gpushare_bench_parse_percent_list("25", 4, pct, &n), GPUSHARE_OK);
	assert_int_equal(n, 1);
	assert_true(pct[0] == 25.0);
	assert_int_equal(gpushare_bench_parse_percent_list("10,20,30.5,40", 4, pct, &n), GPUSHARE_OK);
	assert_int_equal(n, 4);
	assert_true(pct[2] == 30.5);
	assert_int_equal(gpushare_bench_parse_percent_list("10,20", 4, pct, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_bench_parse_percent_list("10,20,30,40,50", 4, pct, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_bench_parse_percent_list("0", 4, pct, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_bench_parse_percent_list("101", 4, pct, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_bench_parse_percent_list("abc", 4, pct, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_bench_parse_percent_list("10,,20", 3, pct, &n), GPUSHARE_E_INVAL);

	assert_int_equal(gpushare_bench_parse_size_list("4G,512M", 2, mem, &n), GPUSHARE_OK);
	assert_int_equal(n, 2);
	assert_true(mem[0] == 4ULL << 30 && mem[1] == 512ULL << 20);
	/* Below what the daemon can express. */
	assert_int_equal(gpushare_bench_parse_size_list("1K", 2, mem, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_bench_parse_size_list("lots", 2, mem, &n), GPUSHARE_E_INVAL);

	assert_int_equal(gpushare_bench_parse_priority_list("1,0", 2, prio, &n), GPUSHARE_OK);
	assert_int_equal(prio[0], 1);
	assert_int_equal(gpushare_bench_parse_priority_list("2", 2, prio, &n), GPUSHARE_E_INVAL);
}

static void test_config(void **state)
{
	static struct gpushare_bench_config c;

	(void)state;
	assert_int_equal(gpushare_bench_config_init(&c), GPUSHARE_OK);
	assert_string_equal(c.wl.desc->name, "matmul");
	assert_int_equal(c.workers, 4);
	assert_int_equal(c.n_strategies, 2);
	assert_true(c.duration_ns == 10ULL * 1000000000ULL && c.warmup_ns == 2ULL * 1000000000ULL);
	assert_int_equal(gpushare_bench_config_check(&c), GPUSHARE_OK);
	c.n_thread_percentage = 3;
	assert_int_equal(gpushare_bench_config_check(&c), GPUSHARE_E_INVAL);
	c.n_thread_percentage = 0;
	c.workers = 65;
	assert_int_equal(gpushare_bench_config_check(&c), GPUSHARE_E_INVAL);
}

/* A result of n workers; worker i recorded `reqs[i]` requests of `lat_ns`
 * each over `window` seconds. */
static void fill(struct gpushare_bench_result *r, const uint64_t *reqs, uint64_t lat_ns, double window)
{
	for (size_t i = 0; i < r->n_workers; i++) {
		struct gpushare_bench_worker *w = &r->workers[i];

		w->requests = reqs[i];
		w->pid = 100 + (pid_t)i;
		w->items_per_request = 2;
		w->window_seconds = window;
		for (uint64_t k = 0; k < reqs[i]; k++)
			gpushare_hist_record(&w->hist, lat_ns * (i + 1));
	}
}

static void test_compute(void **state)
{
	struct gpushare_bench_result r;
	const uint64_t reqs[3] = { 100, 200, 300 };

	(void)state;
	assert_int_equal(gpushare_bench_result_init(&r, GPUSHARE_STRATEGY_TIMESLICE, 3), GPUSHARE_OK);
	fill(&r, reqs, 1000000, 2.0);
	gpushare_bench_result_compute(&r, 600.0);
	assert_true(r.requests == 600 && r.items == 1200);
	assert_true(r.workers[1].requests_per_second == 100.0);
	assert_true(r.workers[1].items_per_second == 200.0);
	/* Concurrent: aggregate = sum of the workers. */
	assert_true(r.requests_per_second == 300.0);
	assert_true(r.items_per_second == 600.0);
	assert_true(fabs(r.fairness - 1.0 / 3.0) < 1e-9);
	assert_true(fabs(r.efficiency - 1.0) < 1e-9);
	assert_true(r.tflops < 0);
	/* Merged: half the requests at 3 ms, so p50 lies between 2 and 3 ms. */
	assert_true(r.hist.count == 600);
	assert_true(r.p50_seconds > 0.0019 && r.p50_seconds < 0.0031);
	assert_true(fabs(r.max_seconds - 0.003) < 0.003 * 0.01);
	assert_true(fabs(r.workers[0].p99_seconds - 0.001) < 0.001 * 0.01);
	gpushare_bench_result_release(&r);

	/* Sequential: total over the sum of the windows. */
	assert_int_equal(gpushare_bench_result_init(&r, GPUSHARE_STRATEGY_SEQUENTIAL, 3), GPUSHARE_OK);
	fill(&r, reqs, 1000000, 2.0);
	r.workers[0].flops_per_request = 1e12;
	gpushare_bench_result_compute(&r, 0);
	assert_true(r.window_seconds == 6.0);
	assert_true(r.requests_per_second == 100.0);
	assert_true(r.efficiency < 0);
	assert_true(fabs(r.tflops - 100.0 / 6.0) < 1e-9);
	gpushare_bench_result_release(&r);

	/* Nothing measured: zeros, no division by zero. */
	assert_int_equal(gpushare_bench_result_init(&r, GPUSHARE_STRATEGY_MPS, 2), GPUSHARE_OK);
	gpushare_bench_result_compute(&r, 0);
	assert_true(r.requests_per_second == 0 && r.fairness == 0 && r.p99_seconds == 0);
	gpushare_bench_result_release(&r);
}

static void test_telemetry(void **state)
{
	struct gpushare_bench_telemetry t;
	struct gpushare_gpu_sample s = { .util_gpu_pct = 50, .mem_used_bytes = 1000, .clock_sm_mhz = 1000,
					 .power_mw = 300000, .throttled = true };

	(void)state;
	gpushare_bench_telemetry_init(&t);
	gpushare_bench_telemetry_add(&t, &s);
	s = (struct gpushare_gpu_sample){ .util_gpu_pct = 100, .mem_used_bytes = 3000, .clock_sm_mhz = 2000,
					  .power_mw = GPUSHARE_UNKNOWN };
	gpushare_bench_telemetry_add(&t, &s);
	gpushare_bench_telemetry_finish(&t);
	assert_int_equal(t.samples, 2);
	assert_true(t.util_mean_pct == 75.0 && t.util_max_pct == 100.0);
	assert_true(t.mem_used_max_bytes == 3000);
	assert_true(t.sm_clock_mean_mhz == 1500.0);
	assert_true(t.throttled_fraction == 0.5);
	assert_true(t.power_mean_watts == 300.0);
}

/* A report with two strategies of 2 workers, the second partial. */
static void make_report(struct gpushare_bench_report *r, struct gpushare_bench_config *c)
{
	const uint64_t reqs[2] = { 10, 20 };
	static char *argv[] = { "gpushare", "bench", "--json" };

	assert_int_equal(gpushare_bench_config_init(c), GPUSHARE_OK);
	c->workers = 2;
	c->argc = 3;
	c->argv = argv;
	gpushare_bench_report_init(r, c);
	snprintf(r->version, sizeof(r->version), "0.1.0");
	snprintf(r->date, sizeof(r->date), "2026-01-01T00:00:00Z");
	snprintf(r->host, sizeof(r->host), "h");
	r->results = calloc(2, sizeof(*r->results));
	assert_non_null(r->results);
	r->n_results = 2;
	assert_int_equal(gpushare_bench_result_init(&r->results[0], GPUSHARE_STRATEGY_TIMESLICE, 2), GPUSHARE_OK);
	assert_int_equal(gpushare_bench_result_init(&r->results[1], GPUSHARE_STRATEGY_STREAMS, 2), GPUSHARE_OK);
	fill(&r->results[0], reqs, 500000, 1.0);
	fill(&r->results[1], reqs, 500000, 1.0);
	snprintf(r->results[1].workers[1].mem_limit_seen, 64, "0=1G,1=2G"); /* needs CSV quoting */
	r->results[1].partial = true;
	r->results[1].failed_worker = 1;
	snprintf(r->results[1].failure, sizeof(r->results[1].failure), "worker 1 (pid 7) was killed by signal 11");
	r->results[1].workers[1].failed = true;
	r->results[1].workers[1].signal = 11;
	r->partial = true;
	gpushare_bench_result_compute(&r->results[0], 0);
	gpushare_bench_result_compute(&r->results[1], 0);
	assert_int_equal(gpushare_bench_report_settle(r, GPUSHARE_OK), GPUSHARE_OK);
}

/* The blast radius of a failure: the other workers with the same CUDA
 * error (a fatal fault under MPS reaches every client of the server). */
static void test_blast_radius(void **state)
{
	static struct gpushare_bench_config c;
	struct gpushare_bench_report r;
	cJSON *doc, *fail;
	char *text;

	(void)state;
	make_report(&r, &c);
	assert_int_equal(r.results[1].failed_with, 0); /* a signal, no CUDA error */
	assert_string_equal(r.results[1].failure, "worker 1 (pid 7) was killed by signal 11");
	gpushare_bench_report_release(&r);

	assert_int_equal(gpushare_bench_config_init(&c), GPUSHARE_OK);
	c.workers = 3;
	gpushare_bench_report_init(&r, &c);
	r.results = calloc(1, sizeof(*r.results));
	assert_non_null(r.results);
	r.n_results = 1;
	assert_int_equal(gpushare_bench_result_init(&r.results[0], GPUSHARE_STRATEGY_MPS, 3), GPUSHARE_OK);
	r.results[0].partial = true;
	r.results[0].failed_worker = 1;
	snprintf(r.results[0].failure, sizeof(r.results[0].failure), "worker 1 (pid 8) failed: illegal address (CUDA error 700)");
	for (int i = 0; i < 3; i++) {
		r.results[0].workers[i].failed = true;
		r.results[0].workers[i].cuda_error = i == 2 ? 0 : 700; /* worker 2 was stopped */
	}
	gpushare_bench_result_compute(&r.results[0], 0);
	assert_int_equal(gpushare_bench_report_settle(&r, GPUSHARE_OK), GPUSHARE_OK);
	assert_int_equal(r.results[0].failed_with, 1);
	assert_non_null(strstr(r.results[0].failure, "; 1 other worker failed with CUDA error 700 too (a fatal GPU fault"));
	assert_int_equal(gpushare_bench_report_json(&r, &text), GPUSHARE_OK);
	doc = cJSON_Parse(text);
	fail = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "results"), 0), "failure");
	assert_int_equal(cJSON_GetObjectItem(fail, "worker")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(fail, "failed_with")->valueint, 1);
	cJSON_Delete(doc);
	free(text);
	gpushare_bench_report_release(&r);
}

static void test_json(void **state)
{
	static struct gpushare_bench_config c;
	struct gpushare_bench_report r;
	cJSON *doc, *res, *w, *agg;
	char *text;

	(void)state;
	make_report(&r, &c);
	assert_int_equal(gpushare_bench_report_json(&r, &text), GPUSHARE_OK);
	doc = cJSON_Parse(text);
	assert_non_null(doc);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(doc, "partial")));
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "metadata"), "date")->valuestring,
			    "2026-01-01T00:00:00Z");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "metadata"), "command_line")), 3);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "config"), "workload")->valuestring, "matmul");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(doc, "ceiling")));
	res = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "results"), 1);
	assert_string_equal(cJSON_GetObjectItem(res, "strategy")->valuestring, "streams");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "failure"), "worker")->valueint, 1);
	/* A strategy that did not finish: failed, no aggregate figures (never 0). */
	assert_string_equal(cJSON_GetObjectItem(res, "status")->valuestring, "failed");
	assert_string_equal(cJSON_GetObjectItem(res, "reason")->valuestring, "worker 1 (pid 7) was killed by signal 11");
	agg = cJSON_GetObjectItem(res, "aggregate");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(agg, "requests")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(agg, "requests_per_second")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(agg, "p50_seconds")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(agg, "fairness")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(agg, "histogram")));
	/* What its workers measured stays, per worker. */
	assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(res, "workers"), 0), "requests")->valuedouble == 10);
	/* The ok strategy has its figures and its histogram. */
	agg = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "results"), 0), "aggregate");
	assert_true(cJSON_GetObjectItem(agg, "requests")->valuedouble == 30);
	assert_true(cJSON_GetObjectItem(agg, "requests_per_second")->valuedouble == 30);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(agg, "efficiency")));
	assert_true(cJSON_GetObjectItem(agg, "p50_seconds")->valuedouble > 0.0004);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(agg, "histogram"), "counts")), 2);
	w = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "workers"), 1);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(w, "failed")));
	assert_int_equal(cJSON_GetObjectItem(w, "signal")->valueint, 11);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(w, "sm_count")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(res, "workers"), 0), "signal")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(res, "telemetry")));
	cJSON_Delete(doc);
	free(text);
	gpushare_bench_report_release(&r);
}

/* What the report's CSV writer (csv) or table writer (verbose or not)
 * prints, to free. */
static char *written(const struct gpushare_bench_report *r, bool csv, bool verbose)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	if (csv)
		assert_int_equal(gpushare_bench_write_csv(r, f), GPUSHARE_OK);
	else
		assert_int_equal(gpushare_bench_write_table(r, f, verbose), GPUSHARE_OK);
	fclose(f);
	return buf;
}

/* n repeats of the default config's first two strategies, summarised:
 * strategy s ran tput[s * n + k] items/s at repeat k, with a p99 of
 * p99[s] seconds. */
static void repeats_report(struct gpushare_bench_report *r, struct gpushare_bench_config *c, int n, const double *tput,
			   const double p99[2])
{
	assert_int_equal(gpushare_bench_config_init(c), GPUSHARE_OK);
	gpushare_bench_report_init(r, c);
	r->results = calloc((size_t)n * 2, sizeof(*r->results));
	assert_non_null(r->results);
	for (int k = 0; k < n; k++) {
		for (int s = 0; s < 2; s++) {
			struct gpushare_bench_result *res = &r->results[r->n_results++];

			assert_int_equal(gpushare_bench_result_init(res, c->strategies[s], 1), GPUSHARE_OK);
			res->repeat = k;
			res->items_per_second = tput[s * n + k];
			res->p99_seconds = p99[s];
			gpushare_hist_record(&res->hist, 1000);
		}
	}
	r->repeats = n;
	assert_int_equal(gpushare_bench_summarise(r), GPUSHARE_OK);
}

static void test_csv_and_table(void **state)
{
	static struct gpushare_bench_config c;
	struct gpushare_bench_report r;
	char *buf, *line, *save = NULL;
	int lines = 0, aggregates = 0;

	(void)state;
	make_report(&r, &c);
	buf = written(&r, true, false);
	assert_true(strncmp(buf, "strategy,row,worker,", 20) == 0);
	assert_non_null(strstr(buf, "\"0=1G,1=2G\""));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lines++;
		aggregates += strstr(line, ",aggregate,") != NULL;
	}
	assert_int_equal(lines, 1 + 2 * 3);
	assert_int_equal(aggregates, 2);
	free(buf);

	buf = written(&r, false, true);
	assert_non_null(strstr(buf, "timeslice "));
	/* The failed row has no figures, only its status and reason. */
	assert_non_null(strstr(buf, "streams           2                                                                               failed\n"));
	assert_non_null(strstr(buf, "  ! worker 1 (pid 7)"));
	free(buf);
	gpushare_bench_report_release(&r);
}

/* A run that stopped at mps (its control program missing): mps failed with
 * the error's detail, the strategy after it skipped, nothing summed. */
static void test_settle_error(void **state)
{
	static struct gpushare_bench_config c;
	struct gpushare_bench_report r;
	const uint64_t reqs[2] = { 10, 20 };
	char *text;
	cJSON *doc, *res;

	(void)state;
	assert_int_equal(gpushare_bench_config_init(&c), GPUSHARE_OK);
	c.workers = 2;
	c.strategies[0] = GPUSHARE_STRATEGY_TIMESLICE;
	c.strategies[1] = GPUSHARE_STRATEGY_MPS;
	c.strategies[2] = GPUSHARE_STRATEGY_SEQUENTIAL;
	c.n_strategies = 3;
	gpushare_bench_report_init(&r, &c);
	r.results = calloc(2, sizeof(*r.results));
	assert_non_null(r.results);
	r.n_results = 2;
	assert_int_equal(gpushare_bench_result_init(&r.results[0], GPUSHARE_STRATEGY_TIMESLICE, 2), GPUSHARE_OK);
	assert_int_equal(gpushare_bench_result_init(&r.results[1], GPUSHARE_STRATEGY_MPS, 2), GPUSHARE_OK);
	fill(&r.results[0], reqs, 500000, 1.0);
	gpushare_bench_result_compute(&r.results[0], 0);
	gpushare_bench_result_compute(&r.results[1], 0);
	gpushare_fail(GPUSHARE_E_NO_MPS_BINARY, "'nvidia-cuda-mps-control' not found");
	assert_int_equal(gpushare_bench_report_settle(&r, GPUSHARE_E_NO_MPS_BINARY), GPUSHARE_OK);
	assert_int_equal(r.n_results, 3);
	assert_int_equal(r.results[0].status, GPUSHARE_RESULT_OK);
	assert_int_equal(r.results[1].status, GPUSHARE_RESULT_FAILED);
	assert_string_equal(r.results[1].failure, "'nvidia-cuda-mps-control' not found");
	assert_int_equal(r.results[2].status, GPUSHARE_RESULT_SKIPPED);
	assert_string_equal(r.results[2].failure, "not run: mps failed first");
	assert_int_equal(gpushare_bench_summarise(&r), GPUSHARE_OK);
	assert_int_equal(r.n_summary, 3);
	assert_int_equal(r.summary[1].n_ok, 0);
	assert_int_equal(r.summary[1].status, GPUSHARE_RESULT_FAILED);
	assert_int_equal(gpushare_bench_reference(&r), 0);
	assert_int_equal(gpushare_bench_report_json(&r, &text), GPUSHARE_OK);
	doc = cJSON_Parse(text);
	res = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "results"), 1);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "aggregate"), "p99_seconds")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(res, "workers"), 0), "requests")));
	res = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "summary"), 1);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(res, "items_per_second")));
	assert_string_equal(cJSON_GetObjectItem(res, "status")->valuestring, "failed");
	/* No comparison with a strategy that has no ok run. */
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "relative"), "comparisons")), 0);
	cJSON_Delete(doc);
	free(text);
	gpushare_bench_report_release(&r);
}

/* Six repeats of two strategies: the spread and the relative summary. */
static void test_summary(void **state)
{
	static struct gpushare_bench_config c;
	struct gpushare_bench_report r;
	const double tput[2 * 6] = { 100, 102, 98, 101, 99, 100, /* mps: */ 200, 210, 190, 205, 195, 200 };
	char *buf;

	(void)state;
	repeats_report(&r, &c, 6, tput, (const double[2]){ 0.004, 0.001 });
	assert_int_equal(r.n_summary, 2);
	assert_int_equal(r.summary[1].n_ok, 6);
	assert_true(r.summary[1].items_per_second.mean == 200);
	assert_true(r.summary[1].items_per_second.min == 190 && r.summary[1].items_per_second.max == 210);
	assert_true(fabs(r.summary[1].items_per_second.median.coverage - 0.96875) < 1e-12);
	buf = written(&r, false, false);
	/* Two 96.8% intervals give only 93.8% together; the t test on logs
	 * calls the 2x gap of runs within 5% of each other. */
	assert_non_null(strstr(buf, "mps: 2.00 \u00b1 0.0"));
	assert_non_null(strstr(buf, "times the throughput of timeslice, p99 1.00 ms vs 4.00 ms (higher, significant: "));
	assert_non_null(strstr(buf, ", t test on logs, p < 0.001)"));
	assert_non_null(strstr(buf, "median 200, 96.8% interval 190-210"));
	free(buf);
	gpushare_bench_report_release(&r);
}

/* Two repeats 5% apart with a few percent of noise: a tie the runs cannot
 * settle reads as such, with the runs that would, not as a plain tie. */
static void test_summary_unsettled(void **state)
{
	static struct gpushare_bench_config c;
	struct gpushare_bench_report r;
	const double tput[2 * 2] = { 100, 106, /* mps: */ 97, 101 };
	char *buf;

	(void)state;
	repeats_report(&r, &c, 2, tput, (const double[2]){ 0.001, 0.001 });
	buf = written(&r, false, false);
	assert_non_null(strstr(buf, "(cannot tell mps from timeslice with 2 runs; "));
	assert_non_null(strstr(buf, " more runs a side would settle a difference of "));
	assert_null(strstr(buf, "(tie: "));
	free(buf);
	gpushare_bench_report_release(&r);
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.' || (e->d_name[1] && e->d_name[1] != '.');
	closedir(d);
	return n;
}

static void test_atomic_write(void **state)
{
	char dir[] = "/tmp/gpushare-test-bench.XXXXXX", path[128], bad[160], buf[64];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.json", dir);
	assert_int_equal(gpushare_check_writable(path), GPUSHARE_OK);
	assert_int_equal(gpushare_write_file_atomic(path, "{\"a\":1}\n", 8), GPUSHARE_OK);
	assert_int_equal(gpushare_write_file_atomic(path, "{}\n", 3), GPUSHARE_OK);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "{}\n");
	assert_int_equal(count_entries(dir), 1); /* no temporary file left */
	snprintf(bad, sizeof(bad), "%s/missing/out.json", dir);
	assert_int_equal(gpushare_check_writable(bad), GPUSHARE_E_IO);
	assert_int_equal(gpushare_write_file_atomic(bad, "x", 1), GPUSHARE_E_IO);
	assert_non_null(strstr(gpushare_errdetail(), "missing"));
	assert_int_equal(gpushare_check_writable(dir), GPUSHARE_E_IO); /* a directory */
	unlink(path);
	rmdir(dir);
}

/* A mix: its specs, the split's per-worker percentages, the members' figures
 * and the score, the geometric mean of their items/s. */
static void test_mix(void **state)
{
	struct gpushare_bench_config c;
	struct gpushare_bench_result res;
	double tp[GPUSHARE_BENCH_MAX_WORKERS];
	char buf[64];
	int n;

	(void)state;
	assert_int_equal(gpushare_bench_config_init(&c), GPUSHARE_OK);
	c.wl.batch = 8;
	assert_int_equal(gpushare_bench_set_workload(&c, "spin:request-us=1ms+spin+spin:sleep=on"), GPUSHARE_OK);
	assert_int_equal(c.n_mix, 3);
	assert_int_equal(c.wl.batch, 8);
	assert_string_equal(c.mix[2].label, "spin:sleep=on");
	assert_string_equal(gpushare_bench_workload_label(&c, buf, sizeof(buf)), "spin:request-us=1ms+spin+spin:sleep=on");
	/* An option for all: set where the spec did not give it, refused where it did. */
	assert_int_equal(gpushare_bench_set_wl_option(&c, "sleep", "on"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "'spin:sleep=on'"));
	assert_int_equal(gpushare_bench_set_workload(&c, "spin+spin:sleep=on"), GPUSHARE_OK);
	assert_int_equal(gpushare_bench_set_wl_option(&c, "request-us", "2ms"), GPUSHARE_OK);
	assert_string_equal(gpushare_wl_get(&c.mix[1].wl, "request-us"), "2ms");
	assert_int_equal(gpushare_bench_set_wl_option(&c, "size", "10"), GPUSHARE_E_NOT_FOUND);
	/* Blocks of workers; the split over each workload's workers. */
	c.workers = 6;
	assert_int_equal(gpushare_bench_mix_member_of(2, 6, 2), 0);
	assert_int_equal(gpushare_bench_mix_member_of(2, 6, 3), 1);
	assert_int_equal(gpushare_bench_parse_mix_shares("30/70", 2, c.mix_share, &c.n_mix_share), GPUSHARE_OK);
	gpushare_bench_mix_thread_percentages(&c, tp);
	assert_true(tp[0] == 10 && tp[2] == 10 && tp[3] == 23 && tp[5] == 23);
	assert_int_equal(gpushare_bench_parse_mix_shares("30/70/1", 2, c.mix_share, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_bench_parse_mix_shares("30", 2, c.mix_share, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_bench_parse_mix_shares("30/70", 1, c.mix_share, &n), GPUSHARE_E_INVAL);
	assert_string_equal(gpushare_bench_mix_split_text(3, 50, buf, sizeof(buf)), "50/25/25");
	assert_int_equal(gpushare_bench_mix_count("command:a+b"), 1);
	assert_int_equal(gpushare_bench_mix_count("a+b"), 2);
	assert_int_equal(gpushare_bench_config_check(&c), GPUSHARE_OK);
	c.workers = 5;
	assert_int_equal(gpushare_bench_config_check(&c), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_bench_set_workload(&c, "spin++spin"), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_bench_set_workload(&c, "spin+a+b+c+d"), GPUSHARE_E_INVAL);
	/* A workload spec: its name, then opt=value items, none empty or twice. */
	{
		struct gpushare_wl_params p;

		assert_int_equal(gpushare_bench_parse_workload_spec("spin:request-us=2ms:sleep=on", &p), GPUSHARE_OK);
		assert_string_equal(gpushare_wl_get(&p, "request-us"), "2ms");
		assert_string_equal(gpushare_wl_get(&p, "sleep"), "on");
		assert_int_equal(gpushare_bench_parse_workload_spec("spin::sleep=on", &p), GPUSHARE_E_INVAL);
		assert_string_equal(gpushare_errdetail(), "workload 'spin::sleep=on' has an empty item");
		assert_int_equal(gpushare_bench_parse_workload_spec("spin:", &p), GPUSHARE_E_INVAL);
		assert_string_equal(gpushare_errdetail(), "workload 'spin:' ends with ':'");
		assert_int_equal(gpushare_bench_parse_workload_spec(":spin", &p), GPUSHARE_E_INVAL);
		assert_int_equal(gpushare_bench_parse_workload_spec("spin:sleep", &p), GPUSHARE_E_INVAL);
		assert_string_equal(gpushare_errdetail(), "'sleep' is not opt=value");
		assert_int_equal(gpushare_bench_parse_workload_spec("spin:sleep=on:sleep=off", &p), GPUSHARE_E_INVAL);
		assert_string_equal(gpushare_errdetail(), "option 'sleep' is given twice");
		/* An option whose name begins another's is not the same option. */
		assert_int_equal(gpushare_bench_parse_workload_spec("spin:stall-after=3:stall=2s", &p), GPUSHARE_OK);
		assert_string_equal(gpushare_wl_get(&p, "stall"), "2s");
		assert_int_equal(gpushare_bench_parse_workload_spec("nosuch:x=1", &p), GPUSHARE_E_INVAL);
		assert_string_equal(gpushare_errdetail(), "unknown workload 'nosuch'");
		assert_int_equal(gpushare_bench_parse_workload_spec("spin:size=1", &p), GPUSHARE_E_INVAL);
		assert_string_equal(gpushare_errdetail(), "workload 'spin' has no option 'size'");
	}
	/* The figures: 2 workers of 400 and 2 of 100 items in a 1 s window. */
	assert_int_equal(gpushare_bench_result_init(&res, GPUSHARE_STRATEGY_TIMESLICE, 4), GPUSHARE_OK);
	res.n_mix = 2;
	for (int i = 0; i < 4; i++) {
		res.workers[i].requests = i < 2 ? 400 : 100;
		res.workers[i].items_per_request = 1;
		res.workers[i].window_seconds = 1;
		gpushare_hist_record(&res.workers[i].hist, i < 2 ? 1000000 : 4000000);
	}
	gpushare_bench_result_compute(&res, 0);
	assert_true(fabs(res.mix[0].items_per_second - 800) < 1e-9);
	assert_true(fabs(res.mix[1].items_per_second - 200) < 1e-9);
	assert_true(fabs(res.mix_score - 400) < 1e-9);   /* sqrt(800 x 200) */
	assert_true(fabs(gpushare_bench_result_score(&res) - 400) < 1e-9);
	assert_true(fabs(res.items_per_second - 1000) < 1e-9);
	assert_true(res.fairness == 1);                   /* even within each workload */
	res.workers[3].requests = 0;
	gpushare_bench_result_compute(&res, 0);
	assert_true(res.fairness == 0);
	res.workers[2].requests = 0;
	gpushare_bench_result_compute(&res, 0);
	assert_true(res.mix_score == 0);                  /* a workload that did nothing */
	gpushare_bench_result_release(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strategy_list),
		cmocka_unit_test(test_lists),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_compute),
		cmocka_unit_test(test_telemetry),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_blast_radius),
		cmocka_unit_test(test_csv_and_table),
		cmocka_unit_test(test_settle_error),
		cmocka_unit_test(test_summary), cmocka_unit_test(test_summary_unsettled),
		cmocka_unit_test(test_atomic_write),
		cmocka_unit_test(test_mix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
