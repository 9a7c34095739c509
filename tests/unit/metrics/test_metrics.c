/*
 * Unit tests of the Prometheus metrics module: number formatting, the
 * listen-address and bucket parsers, the exposition writer (escaping,
 * cumulative buckets from a log-linear histogram, families without samples
 * left out) and promtool's verdict on what it writes. The HTTP server is
 * tests/unit/metrics/test_metrics_http.c; a benchmark's live view is
 * tests/unit/bench/test_metrics_bench.c.
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

#include "gpushare/gpushare.h"
#include "gpushare/hist.h"
#include "gpushare/metrics.h"
#include "gpushare/region.h"
#include "gpushare/internal/metrics.h"

static void test_format_double(void **state)
{
	char buf[40];

	(void)state;
	gpushare_metrics_format_double(0.005, buf, sizeof(buf));
	assert_string_equal(buf, "0.005");
	gpushare_metrics_format_double(60, buf, sizeof(buf));
	assert_string_equal(buf, "60");
	gpushare_metrics_format_double(1e-5, buf, sizeof(buf));
	assert_string_equal(buf, "1e-05");
	gpushare_metrics_format_double(0.1 + 0.2, buf, sizeof(buf));
	assert_true(strtod(buf, NULL) == 0.1 + 0.2);
	gpushare_metrics_format_double(1.0 / 0.0, buf, sizeof(buf));
	assert_string_equal(buf, "+Inf");
	gpushare_metrics_format_double(-1.0 / 0.0, buf, sizeof(buf));
	assert_string_equal(buf, "-Inf");
	gpushare_metrics_format_double(0.0 / 0.0, buf, sizeof(buf));
	assert_string_equal(buf, "NaN");
}

static void test_parse_listen(void **state)
{
	char addr[GPUSHARE_METRICS_ADDR_MAX];
	uint16_t port = 1;

	(void)state;
	assert_int_equal(gpushare_metrics_parse_listen("9400", addr, sizeof(addr), &port), GPUSHARE_OK);
	assert_string_equal(addr, "127.0.0.1");
	assert_int_equal(port, 9400);
	assert_int_equal(gpushare_metrics_parse_listen("0.0.0.0:0", addr, sizeof(addr), &port), GPUSHARE_OK);
	assert_string_equal(addr, "0.0.0.0");
	assert_int_equal(port, 0);
	assert_int_equal(gpushare_metrics_parse_listen("[::1]:65535", addr, sizeof(addr), &port), GPUSHARE_OK);
	assert_string_equal(addr, "::1");
	assert_int_equal(port, 65535);
	assert_int_equal(gpushare_metrics_parse_listen("localhost:80", addr, sizeof(addr), &port), GPUSHARE_OK);
	assert_string_equal(addr, "localhost");
	assert_int_equal(gpushare_metrics_parse_listen("", addr, sizeof(addr), &port), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_metrics_parse_listen("abc", addr, sizeof(addr), &port), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_metrics_parse_listen("1.2.3.4:", addr, sizeof(addr), &port), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_metrics_parse_listen(":80", addr, sizeof(addr), &port), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_metrics_parse_listen("65536", addr, sizeof(addr), &port), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_metrics_parse_listen("-1", addr, sizeof(addr), &port), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_metrics_parse_listen("::1:80", addr, sizeof(addr), &port), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "brackets"));
	assert_int_equal(gpushare_metrics_parse_listen("[::1]80", addr, sizeof(addr), &port), GPUSHARE_E_INVAL);
}

static void test_parse_buckets(void **state)
{
	double le[GPUSHARE_METRICS_MAX_BUCKETS + 8];
	char many[2048] = "";
	size_t n = 0;

	(void)state;
	assert_int_equal(gpushare_metrics_parse_buckets("0.001,0.005,1", le, &n), GPUSHARE_OK);
	assert_int_equal(n, 3);
	assert_true(le[0] == 0.001 && le[1] == 0.005 && le[2] == 1);
	assert_int_equal(gpushare_metrics_parse_buckets("0.005,0.001", le, &n), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "increase"));
	assert_int_equal(gpushare_metrics_parse_buckets("0.1,0.1", le, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_metrics_parse_buckets("0,1", le, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_metrics_parse_buckets("-1", le, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_metrics_parse_buckets("1,+Inf", le, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_metrics_parse_buckets("1,abc", le, &n), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "'abc'"));
	assert_int_equal(gpushare_metrics_parse_buckets("1,", le, &n), GPUSHARE_E_INVAL);
	assert_string_equal(gpushare_errdetail(), "bucket list '1,' ends with ','");
	assert_int_equal(gpushare_metrics_parse_buckets("1,,2", le, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_metrics_parse_buckets("1e,2", le, &n), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "'1e' is not a number"));
	assert_int_equal(gpushare_metrics_parse_buckets("0.5,2.5e1", le, &n), GPUSHARE_OK);
	assert_int_equal(n, 2);
	assert_true(le[1] == 25.0);
	assert_int_equal(gpushare_metrics_parse_buckets("", le, &n), GPUSHARE_E_INVAL);
	for (int i = 1; i <= GPUSHARE_METRICS_MAX_BUCKETS + 1; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s%d", i > 1 ? "," : "", i);
	assert_int_equal(gpushare_metrics_parse_buckets(many, le, &n), GPUSHARE_E_INVAL);
	n = gpushare_metrics_default_buckets(le, GPUSHARE_METRICS_MAX_BUCKETS);
	assert_true(n >= 10);
	for (size_t i = 1; i < n; i++)
		assert_true(le[i] > le[i - 1]);
}

/* Write text to a file and run `promtool check metrics` on it: 0 = valid,
 * -1 = promtool not installed. */
static int promtool(const char *text)
{
	char path[] = "/tmp/gpushare-test-metrics-XXXXXX", cmd[256];
	int fd = mkstemp(path), rc;
	FILE *f;

	if (system("command -v promtool >/dev/null 2>&1") != 0)
		return -1;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
	rc = system(cmd);
	unlink(path);
	return rc;
}

static void test_writer(void **state)
{
	struct gpushare_metrics_buf b;
	struct gpushare_hist *h = malloc(sizeof(*h));
	const double le[] = { 0.0001, 0.001, 0.01 };
	struct gpushare_metrics_label l[2] = { { "worker", "0" }, { "note", "a \"quoted\"\\path\nline" } };
	char *text;
	size_t len;
	int p;

	(void)state;
	assert_non_null(h);
	gpushare_hist_init(h);
	for (int i = 0; i < 10; i++)
		gpushare_hist_record(h, 50000);      /* 50 us */
	for (int i = 0; i < 5; i++)
		gpushare_hist_record(h, 500000);     /* 500 us */
	gpushare_hist_record(h, 2000000000ULL);     /* 2 s: only in +Inf */
	gpushare_metrics_buf_init(&b);
	gpushare_metrics_family(&b, "empty_family", "gauge", "never written");
	gpushare_metrics_family(&b, "test_seconds", "histogram", "A test\nhistogram \\ with escapes.");
	gpushare_metrics_histogram(&b, "test_seconds", l, 2, h, le, 3);
	gpushare_metrics_family(&b, "test_up", "gauge", "Up.");
	gpushare_metrics_sample(&b, "test_up", NULL, 0, 1);
	gpushare_metrics_family(&b, "test_total", "counter", "Counted.");
	gpushare_metrics_sample_u64(&b, "test_total", l, 1, 18446744073709551615ULL);
	assert_int_equal(gpushare_metrics_buf_finish(&b, &text, &len), GPUSHARE_OK);
	assert_int_equal(strlen(text), len);
	assert_null(strstr(text, "empty_family"));
	assert_non_null(strstr(text, "# HELP test_seconds A test\\nhistogram \\\\ with escapes.\n# TYPE test_seconds histogram\n"));
	assert_non_null(strstr(text, "test_seconds_bucket{worker=\"0\",note=\"a \\\"quoted\\\"\\\\path\\nline\",le=\"0.0001\"} 10\n"));
	assert_non_null(strstr(text, ",le=\"0.001\"} 15\n"));
	assert_non_null(strstr(text, ",le=\"0.01\"} 15\n"));
	assert_non_null(strstr(text, ",le=\"+Inf\"} 16\n"));
	assert_non_null(strstr(text, "test_seconds_count{worker=\"0\",note=\"a \\\"quoted\\\"\\\\path\\nline\"} 16\n"));
	assert_non_null(strstr(text, "test_seconds_sum{worker=\"0\",note=\"a \\\"quoted\\\"\\\\path\\nline\"} 2.003\n"));
	assert_non_null(strstr(text, "\ntest_up 1\n"));
	assert_non_null(strstr(text, "test_total{worker=\"0\"} 18446744073709551615\n"));
	assert_true(text[len - 1] == '\n');
	p = promtool(text);
	if (p >= 0)
		assert_int_equal(p, 0);
	else
		print_message("promtool not installed: exposition not linted\n");
	free(text);
	free(h);
}

/* gpushare_metrics_hist_cum counts the whole log-linear bucket holding le:
 * a value 1% above le is in le's bucket or the next, never more than 1/64
 * (one bucket) away. */
static void test_hist_cum_resolution(void **state)
{
	struct gpushare_hist *h = malloc(sizeof(*h));
	const double le[] = { 0.001 };
	uint64_t cum[1];

	(void)state;
	assert_non_null(h);
	gpushare_hist_init(h);
	gpushare_hist_record(h, 1000000);           /* exactly le */
	gpushare_hist_record(h, 1000000 + 1000000 / 32); /* two buckets above */
	assert_int_equal(gpushare_metrics_hist_cum(h, le, 1, cum), 2);
	assert_int_equal(cum[0], 1);
	free(h);
}

/* Lines of text that start with prefix. */
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_double),
		cmocka_unit_test(test_parse_listen),
		cmocka_unit_test(test_parse_buckets),
		cmocka_unit_test(test_writer),
		cmocka_unit_test(test_hist_cum_resolution),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
