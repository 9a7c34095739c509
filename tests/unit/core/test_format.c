/* Unit tests of lib/core/format.c: one number format for people. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gpushare/format.h"

static void test_seconds(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(gpushare_fmt_seconds(0.00391, b, sizeof(b)), "3.91 ms");
	assert_string_equal(gpushare_fmt_seconds(0.000812, b, sizeof(b)), "812 us");
	assert_string_equal(gpushare_fmt_seconds(4.52e-8, b, sizeof(b)), "45.2 ns");
	assert_string_equal(gpushare_fmt_seconds(1.2, b, sizeof(b)), "1.20 s");
	assert_string_equal(gpushare_fmt_seconds(120, b, sizeof(b)), "120 s");
	/* Rounding to 1000 moves to the next unit. */
	assert_string_equal(gpushare_fmt_seconds(0.0009996, b, sizeof(b)), "1.00 ms");
	assert_string_equal(gpushare_fmt_seconds(0.05, b, sizeof(b)), "50.0 ms");
	assert_string_equal(gpushare_fmt_seconds(0, b, sizeof(b)), "0 s");
	assert_string_equal(gpushare_fmt_seconds(NAN, b, sizeof(b)), "-");
}

static void test_si(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(gpushare_fmt_rate(34500, "items/s", b, sizeof(b)), "34.5k items/s");
	assert_string_equal(gpushare_fmt_si(812, b, sizeof(b)), "812");
	assert_string_equal(gpushare_fmt_si(999.7, b, sizeof(b)), "1.00k");
	assert_string_equal(gpushare_fmt_si(1234567, b, sizeof(b)), "1.23M");
	assert_string_equal(gpushare_fmt_si(0.5, b, sizeof(b)), "0.500");
	assert_string_equal(gpushare_fmt_si(-2500, b, sizeof(b)), "-2.50k");
	assert_string_equal(gpushare_fmt_sig(17.46, b, sizeof(b)), "17.5");
	assert_string_equal(gpushare_fmt_ratio(2.1649, b, sizeof(b)), "2.16x");
	assert_string_equal(gpushare_fmt_ratio(0.4321, b, sizeof(b)), "0.432x");
	assert_string_equal(gpushare_fmt_bytes(1.5 * 1073741824.0, b, sizeof(b)), "1.50 GiB");
	assert_string_equal(gpushare_fmt_bytes(512.0 * 1048576, b, sizeof(b)), "512 MiB");
	assert_string_equal(gpushare_fmt_percent(0.234, b, sizeof(b)), "23.4%");
	assert_string_equal(gpushare_fmt_percent(1, b, sizeof(b)), "100%");
}

static void test_coverage(void **state)
{
	char b[32];

	(void)state;
	/* Rounded down: never overstated. */
	assert_string_equal(gpushare_fmt_coverage(0.9375, b, sizeof(b)), "93.7%");
	assert_string_equal(gpushare_fmt_coverage(0.96875, b, sizeof(b)), "96.8%");
	assert_string_equal(gpushare_fmt_coverage(0.5, b, sizeof(b)), "50%");
	assert_string_equal(gpushare_fmt_coverage(0.95, b, sizeof(b)), "95%");
	assert_string_equal(gpushare_fmt_coverage(0.9499, b, sizeof(b)), "94.9%");
}

static void test_units(void **state)
{
	const char *name;
	double scale;

	(void)state;
	gpushare_seconds_unit(0.0042, &name, &scale);
	assert_string_equal(name, "ms");
	assert_true(fabs(scale - 1e3) < 1e-6);
	gpushare_seconds_unit(0.0009, &name, &scale);
	assert_string_equal(name, "us");
	gpushare_si_unit(34500, &name, &scale);
	assert_string_equal(name, "k");
	assert_true(scale == 1e3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seconds),
		cmocka_unit_test(test_si),
		cmocka_unit_test(test_coverage),
		cmocka_unit_test(test_units),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
