/* Unit tests of lib/core/hash.c: FNV-1a 64 with the published constants. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hash.h"

static void test_known_values(void **state)
{
	(void)state;
	/* The reference values of the FNV authors' test suite. */
	assert_true(gpushare_fnv1a_str("") == 0xcbf29ce484222325ULL);
	assert_true(gpushare_fnv1a_str("a") == 0xaf63dc4c8601ec8cULL);
	assert_true(gpushare_fnv1a_str("foobar") == 0x85944171f73967e8ULL);
	assert_true(GPUSHARE_FNV1A_OFFSET == 14695981039346656037ULL);
}

static void test_continues(void **state)
{
	uint64_t h;

	(void)state;
	/* Hashing in pieces is hashing the whole: farm list hashes rely on it. */
	h = gpushare_fnv1a(GPUSHARE_FNV1A_OFFSET, "foo", 3);
	h = gpushare_fnv1a(h, "bar", 3);
	assert_true(h == gpushare_fnv1a_str("foobar"));
	/* NULs count as bytes. */
	assert_true(gpushare_fnv1a(GPUSHARE_FNV1A_OFFSET, "a\0", 2) != gpushare_fnv1a_str("a"));
	assert_true(gpushare_fnv1a(h, "", 0) == h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_values),
		cmocka_unit_test(test_continues),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
