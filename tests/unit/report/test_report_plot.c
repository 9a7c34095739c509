/*
 * Unit tests of lib/report/report_plot.c: a plot's title as drawn, measured
 * with cairo at the title's font: a title that fits is drawn as it is; one
 * too wide for the image (a long workload shape or command) is cut in its
 * middle with an ellipsis, keeping its start and its end, and whole UTF-8
 * characters, so that it stays inside the image.
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
#include "gpushare/utf8.h"
#include "report_internal.h"

static const char ellipsis[] = "\u2026";

/* Lay out title as a plot's; skips the test in a build without cairo. */
static void lay_out(const char *title, char *out, size_t len, double *width, double *max_width)
{
	struct rplot *p = calloc(1, sizeof(*p));
	int rc;

	assert_non_null(p);
	snprintf(p->title, sizeof(p->title), "%s", title);
	rc = gpushare_report_plot_title(p, out, len, width, max_width);
	free(p);
	if (rc == GPUSHARE_E_UNSUPPORTED)
		skip();
	assert_int_equal(rc, GPUSHARE_OK);
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail);
}

static void test_fits(void **state)
{
	char out[sizeof(((struct rplot *)0)->title) + 8];
	double w, max_w;

	(void)state;
	lay_out("spin: throughput vs workers", out, sizeof(out), &w, &max_w);
	assert_string_equal(out, "spin: throughput vs workers");
	assert_true(w > 100 && w <= max_w);
	/* The image is 960 pixels wide and the title starts at its left margin. */
	assert_true(max_w > 600 && max_w < 960);
}

static void test_long_shape(void **state)
{
	static const char title[] = "command:python3 /work/main/examples/bert_worker.py --batch 8 --seq-len 512 "
				    "--model bert-large-uncased: latency percentiles vs workers";
	char out[sizeof(((struct rplot *)0)->title) + 8];
	double w, max_w;

	(void)state;
	lay_out(title, out, sizeof(out), &w, &max_w);
	assert_non_null(strstr(out, ellipsis));
	assert_true(w <= max_w);
	/* Cut no more than it must: most of the room is used. */
	assert_true(w > 0.9 * max_w);
	assert_true(strlen(out) < strlen(title));
	/* Its start (the shape) and its end (the plot's kind) stay. */
	assert_int_equal(strncmp(out, "command:python3 /work/main/", 27), 0);
	assert_true(ends_with(out, "percentiles vs workers"));
}

static void test_utf8(void **state)
{
	char title[160] = "", out[sizeof(title) + 8];
	double w, max_w;

	(void)state;
	for (int i = 0; i < 60; i++)
		strcat(title, "\u0428");     /* two bytes, a wide letter */
	strcat(title, ": fairness vs workers");
	lay_out(title, out, sizeof(out), &w, &max_w);
	assert_non_null(strstr(out, ellipsis));
	assert_true(w <= max_w);
	assert_true(gpushare_utf8_valid(out));
	assert_true(ends_with(out, "vs workers"));
}

/* A title that fills its array: the ellipsis still fits in out. */
static void test_full_array(void **state)
{
	char title[160], out[sizeof(title) + 8];
	double w, max_w;

	(void)state;
	memset(title, 'W', sizeof(title) - 1);
	title[sizeof(title) - 1] = '\0';
	lay_out(title, out, sizeof(out), &w, &max_w);
	assert_true(w <= max_w);
	assert_non_null(strstr(out, ellipsis));
	assert_int_equal(out[0], 'W');
	assert_true(ends_with(out, "W"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fits),
		cmocka_unit_test(test_long_shape),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_full_array),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
