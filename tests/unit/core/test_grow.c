/* Unit tests of lib/core/grow.c: one more item's room, the capacity doubling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "grow.h"
#include "gpushare/gpushare.h"

struct pair {
	uint64_t a;
	double b;
};

static void test_doubles(void **state)
{
	struct pair *p = NULL, *was;
	size_t n = 0, cap = 0;

	(void)state;
	for (size_t i = 0; i < 100; i++) {
		assert_int_equal(gpushare_grow(&p, n, &cap, sizeof(*p), 4), GPUSHARE_OK);
		assert_true(n < cap);
		p[n++] = (struct pair){ i, (double)i / 2 };
	}
	/* 4, 8, 16, 32, 64, 128: from first, doubled as it fills. */
	assert_int_equal(cap, 128);
	for (size_t i = 0; i < n; i++)
		assert_true(p[i].a == i && p[i].b == (double)i / 2);
	/* Room left: nothing moves. */
	was = p;
	assert_int_equal(gpushare_grow(&p, n, &cap, sizeof(*p), 4), GPUSHARE_OK);
	assert_ptr_equal(p, was);
	assert_int_equal(cap, 128);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doubles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
