/* Unit tests of lib/core/clock.c: the monotonic clock and the sleep. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "clock.h"
#include "gpushare/util.h"

static void test_units(void **state)
{
	(void)state;
	assert_true(NS_PER_US * 1000 == NS_PER_MS);
	assert_true(NS_PER_MS * 1000 == NS_PER_S);
}

static void test_monotonic(void **state)
{
	struct timespec ts;
	uint64_t a, b, mono;

	(void)state;
	a = gpushare_now_ns();
	b = gpushare_now_ns();
	assert_true(b >= a);
	/* The same clock as CLOCK_MONOTONIC. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	mono = (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
	assert_true(mono >= b);
	assert_true(mono - b < 10 * NS_PER_S);
}

static void test_sleep(void **state)
{
	uint64_t t0, dt;

	(void)state;
	t0 = gpushare_now_ns();
	gpushare_sleep_ns(20 * NS_PER_MS);
	dt = gpushare_now_ns() - t0;
	assert_true(dt >= 20 * NS_PER_MS);
	assert_true(dt < 5 * NS_PER_S);
	t0 = gpushare_now_ns();
	gpushare_sleep_ns(0);
	assert_true(gpushare_now_ns() - t0 < 5 * NS_PER_S);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_monotonic),
		cmocka_unit_test(test_sleep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
