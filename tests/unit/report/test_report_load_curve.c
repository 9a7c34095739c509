/*
 * Unit tests of lib/report/report_load_curve.c: open-loop runs grouped into
 * curves, the medians at each offered rate, the peak (the highest rate whose
 * p99 is within the bound with nothing unserved), the recommendation's line,
 * the markdown section and load_curve.csv / the SVG figure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "report_internal.h"
#include "report_load_curve.h"

static struct gpushare_report_run runs[16];
static char shapes[2][GPUSHARE_REPORT_SHAPE_LEN] = { "spin", "other" };

static void add(size_t *n, const char *shape, enum gpushare_strategy s, double rate, double p99, double unfinished)
{
	struct gpushare_report_run *r = &runs[(*n)++];

	memset(r, 0, sizeof(*r));
	r->shape = shape;
	r->workload = r->key = r->error = r->peak_note = r->device_name = "";
	r->strategy = s;
	r->workers = 2;
	r->batch = 1;
	r->status = GPUSHARE_RUN_OK;
	r->rate = rate;
	r->offered_per_second = rate * 0.99;
	r->achieved_per_second = rate * 0.98;
	r->p50_seconds = p99 / 2;
	r->p99_seconds = p99;
	r->unfinished = unfinished;
}

/* timeslice meets a 10 ms bound up to 200/s, mps up to its highest rate
 * (400/s), except that at 300/s mps left requests unserved. */
static void make(struct gpushare_report *r, double slo)
{
	size_t n = 0;

	add(&n, "spin", GPUSHARE_STRATEGY_TIMESLICE, 400, 0.080, 0);
	add(&n, "spin", GPUSHARE_STRATEGY_TIMESLICE, 100, 0.001, 0);
	add(&n, "spin", GPUSHARE_STRATEGY_TIMESLICE, 200, 0.004, 0);
	add(&n, "spin", GPUSHARE_STRATEGY_TIMESLICE, 200, 0.006, 0); /* a second repeat: median 5 ms */
	add(&n, "spin", GPUSHARE_STRATEGY_MPS, 100, 0.001, 0);
	add(&n, "spin", GPUSHARE_STRATEGY_MPS, 400, 0.003, 0);
	add(&n, "spin", GPUSHARE_STRATEGY_MPS, 300, 0.002, 5);
	memset(r, 0, sizeof(*r));
	r->whole = runs;
	r->n_whole = r->n_runs = n;
	r->shapes = shapes;
	r->n_shapes = 1;
	r->slo_p99_seconds = slo;
}

static char *text_of(int (*fn)(const struct gpushare_report *, const char *, FILE *), const struct gpushare_report *r,
		     const char *shape)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	assert_int_equal(fn(r, shape, f), GPUSHARE_OK);
	fclose(f);
	return out;
}

static int markdown(const struct gpushare_report *r, const char *shape, FILE *f)
{
	(void)shape;
	return gpushare_report_load_curve_markdown(r, f);
}

static void test_any_only(void **state)
{
	struct gpushare_report r;

	(void)state;
	make(&r, 0.010);
	assert_true(gpushare_report_load_curve_any(&r));
	assert_true(gpushare_report_load_curve_only(&r, "spin"));
	assert_false(gpushare_report_load_curve_only(&r, "nothing"));
	runs[0].rate = 0; /* a closed-loop run of the shape */
	assert_false(gpushare_report_load_curve_only(&r, "spin"));
	r.n_whole = r.n_runs = 1;
	assert_false(gpushare_report_load_curve_any(&r));
}

static void test_recommend(void **state)
{
	struct gpushare_report r;
	char *t;

	(void)state;
	make(&r, 0.010);
	t = text_of(gpushare_report_load_curve_recommend, &r, "spin");
	assert_non_null(strstr(t, "**Highest rate within p99 under 10.0 ms:** mps, 2 workers (p99 3.00 ms) at 400 "
				  "requests/s offered (the highest rate measured: the peak may be higher)."));
	assert_non_null(strstr(t, "Others: timeslice, 2 workers 200/s"));
	free(t);
	/* A bound no rate meets. */
	make(&r, 0.0005);
	t = text_of(gpushare_report_load_curve_recommend, &r, "spin");
	assert_non_null(strstr(t, "none of the offered rates measured meets the bound"));
	free(t);
	/* No bound: how to get one. */
	make(&r, 0);
	t = text_of(gpushare_report_load_curve_recommend, &r, "spin");
	assert_non_null(strstr(t, "give --slo-p99"));
	free(t);
	/* A shape without open-loop runs: nothing. */
	t = text_of(gpushare_report_load_curve_recommend, &r, "other");
	assert_string_equal(t, "");
	free(t);
}

static void test_markdown(void **state)
{
	struct gpushare_report r;
	char *t;

	(void)state;
	make(&r, 0.010);
	t = text_of(markdown, &r, NULL);
	assert_non_null(strstr(t, "## Latency under offered load"));
	/* Rates in order, the median of two repeats, the peak marked. */
	assert_non_null(strstr(t, "| spin | timeslice | 2 | 1 | 198 (200) | 196 | 2.50 ms | 5.00 ms **peak** | 0 | 2 |"));
	assert_true(strstr(t, "| spin | timeslice | 2 | 1 | 99.0 (100)") < strstr(t, "| spin | timeslice | 2 | 1 | 198"));
	/* Unserved requests: within the bound but no peak. */
	assert_non_null(strstr(t, "| spin | mps | 2 | 1 | 297 (300) | 294 | 1.00 ms | 2.00 ms | 5 | 1 |"));
	assert_non_null(strstr(t, "| spin | mps | 2 | 1 | 396 (400) | 392 | 1.50 ms | 3.00 ms **peak** | 0 | 1 |"));
	free(t);
}

/* Whether this build draws plots (report_plot.c, not report_noplot.c). */
static bool have_cairo(void)
{
	struct rplot *p = calloc(1, sizeof(*p));
	char title[sizeof(p->title) + 8];
	double w, max_w;
	bool yes;

	assert_non_null(p);
	yes = gpushare_report_plot_title(p, title, sizeof(title), &w, &max_w) != GPUSHARE_E_UNSUPPORTED;
	free(p);
	return yes;
}

static void test_files(void **state)
{
	struct gpushare_report r;
	char dir[64], path[128], *data;
	size_t len;

	(void)state;
	make(&r, 0.010);
	snprintf(dir, sizeof(dir), "/tmp/gpushare-test-curve.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/plots", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(gpushare_report_load_curve_write(&r, dir), GPUSHARE_OK);
	snprintf(path, sizeof(path), "%s/load_curve.csv", dir);
	assert_int_equal(gpushare_read_file(path, 1 << 20, &data, &len), GPUSHARE_OK);
	assert_non_null(strstr(data, "shape,strategy,workers,batch,rate_per_second,"));
	assert_non_null(strstr(data, "\"spin\",timeslice,2,1,200,198,196,0.0025,0.005,0,2,true\n"));
	assert_non_null(strstr(data, "\"spin\",timeslice,2,1,400,396,392,0.04,0.08,0,1,false\n"));
	free(data);
	snprintf(path, sizeof(path), "%s/plots/load_curve-1.svg", dir);
	if (!have_cairo()) {
		/* A build without cairo draws no plots: the CSV only. */
		assert_int_not_equal(access(path, F_OK), 0);
		snprintf(path, sizeof(path), "rm -rf '%s'", dir);
		assert_int_equal(system(path), 0);
		return;
	}
	assert_int_equal(gpushare_read_file(path, 1 << 20, &data, &len), GPUSHARE_OK);
	assert_true(!strncmp(data, "<svg", 4) || strstr(data, "<svg") != NULL);
	/* The legend names each curve and its peak (report_plot.c may put the
	 * peak on a line of its own). */
	assert_non_null(strstr(data, "mps, 2 workers"));
	assert_non_null(strstr(data, "(peak 400/s)"));
	assert_non_null(strstr(data, "</svg>\n"));
	free(data);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

static void test_load_open(void **state)
{
	struct gpushare_report_run run;
	cJSON *res = cJSON_Parse("{\"open_loop\":{\"offered_per_second\":99.5,\"achieved_per_second\":97,"
				 "\"unfinished\":3}}");
	cJSON *bad = cJSON_Parse("{\"open_loop\":{\"offered_per_second\":-1,\"achieved_per_second\":97,"
				 "\"unfinished\":3}}");
	cJSON *none = cJSON_Parse("{}");

	(void)state;
	memset(&run, 0, sizeof(run));
	assert_int_equal(gpushare_report_load_open(res, &run), GPUSHARE_OK);
	assert_true(run.offered_per_second == 99.5 && run.achieved_per_second == 97 && run.unfinished == 3);
	assert_int_equal(gpushare_report_load_open(bad, &run), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_report_load_open(none, &run), GPUSHARE_E_INVAL);
	cJSON_Delete(res);
	cJSON_Delete(bad);
	cJSON_Delete(none);
	gpushare_clear_error();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_any_only),
		cmocka_unit_test(test_recommend),
		cmocka_unit_test(test_markdown),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_load_open),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
