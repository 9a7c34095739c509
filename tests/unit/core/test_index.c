/* Unit tests of lib/core/index.c: values found by content, the table at most
 * half full, every value found again after it grows, collisions probed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "index.h"

/* Values are 1-based positions in keys[]; the hash is the key itself, or a
 * constant to force every value into one probe chain. */
struct ctx {
	const uint64_t *keys;
	uint64_t want;
	bool collide;
};

static uint64_t hash_of(const void *arg, uint64_t value)
{
	const struct ctx *c = arg;

	return c->collide ? 7 : c->keys[value - 1];
}

static bool same(const void *arg, uint64_t value)
{
	const struct ctx *c = arg;

	return c->keys[value - 1] == c->want;
}

static void fill_and_find(bool collide)
{
	enum { N = 1000 };
	uint64_t *keys = calloc(N, sizeof(*keys));
	struct gpushare_index ix = { 0 };
	struct ctx c = { keys, 0, collide };
	size_t k;
	bool found;

	assert_non_null(keys);
	for (size_t i = 0; i < N; i++) {
		keys[i] = (uint64_t)i * 2654435761u + 1;
		c.want = keys[i];
		assert_int_equal(gpushare_index_room(&ix, 8, hash_of, &c), GPUSHARE_OK);
		assert_true((ix.n + 1) * 2 <= ix.size);
		k = gpushare_index_find(&ix, hash_of(&c, i + 1), same, &c, &found);
		assert_false(found);
		gpushare_index_put(&ix, k, i + 1);
	}
	assert_int_equal(ix.n, N);
	assert_int_equal(ix.size, 2048);   /* 8 doubled until 1000 fit at most half full */
	for (size_t i = 0; i < N; i++) {
		c.want = keys[i];
		k = gpushare_index_find(&ix, hash_of(&c, i + 1), same, &c, &found);
		assert_true(found);
		assert_int_equal(ix.slot[k], i + 1);
	}
	c.want = 4;   /* no key is even */
	gpushare_index_find(&ix, collide ? 7 : 4, same, &c, &found);
	assert_false(found);
	gpushare_index_release(&ix);
	assert_null(ix.slot);
	assert_int_equal(ix.n, 0);
	free(keys);
}

static void test_spread(void **state)
{
	(void)state;
	fill_and_find(false);
}

static void test_one_chain(void **state)
{
	(void)state;
	fill_and_find(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spread),
		cmocka_unit_test(test_one_chain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
