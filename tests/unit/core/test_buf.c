/* Unit tests of lib/core/buf.c: growable byte buffers and string lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpushare/buf.h"
#include "gpushare/gpushare.h"

static void test_bytes(void **state)
{
	struct gpushare_buf b = { 0 };
	char *s;

	(void)state;
	assert_string_equal(gpushare_buf_str(&b), "");
	assert_int_equal(gpushare_buf_add(&b, "ab", 2), GPUSHARE_OK);
	assert_int_equal(gpushare_buf_add(&b, "", 0), GPUSHARE_OK);
	assert_int_equal(gpushare_buf_addf(&b, "-%d-%s", 42, "x"), GPUSHARE_OK);
	assert_string_equal(gpushare_buf_str(&b), "ab-42-x");
	assert_int_equal(b.len, 7);
	/* Bytes with NULs are kept; the contents stay NUL-terminated. */
	assert_int_equal(gpushare_buf_add(&b, "\0z", 2), GPUSHARE_OK);
	assert_int_equal(b.len, 9);
	assert_memory_equal(b.s, "ab-42-x\0z", 10);
	s = gpushare_buf_take(&b);
	assert_memory_equal(s, "ab-42-x\0z", 10);
	assert_null(b.s);
	assert_int_equal(b.len, 0);
	free(s);
	/* An empty buffer hands over "" (never NULL). */
	s = gpushare_buf_take(&b);
	assert_non_null(s);
	assert_string_equal(s, "");
	free(s);
	gpushare_buf_release(&b);
}

static void test_grows(void **state)
{
	struct gpushare_buf b = { 0 };
	char big[3000];

	(void)state;
	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int i = 0; i < 100; i++)
		assert_int_equal(gpushare_buf_addf(&b, "%s", big), GPUSHARE_OK);
	assert_int_equal(b.len, 100 * (sizeof(big) - 1));
	assert_true(b.cap > b.len);
	assert_int_equal(strlen(gpushare_buf_str(&b)), b.len);
	assert_false(b.failed);
	gpushare_buf_release(&b);
	assert_null(b.s);
	assert_int_equal(b.cap, 0);
}

static void test_failed_sticks(void **state)
{
	struct gpushare_buf b = { 0 };

	(void)state;
	assert_int_equal(gpushare_buf_add(&b, "ok", 2), GPUSHARE_OK);
	/* A size that cannot be had: refused, the contents unchanged. */
	assert_int_equal(gpushare_buf_add(&b, "x", SIZE_MAX / 2), GPUSHARE_E_NOMEM);
	assert_true(b.failed);
	assert_string_equal(gpushare_buf_str(&b), "ok");
	/* Later appends do nothing and fail too. */
	assert_int_equal(gpushare_buf_add(&b, "more", 4), GPUSHARE_E_NOMEM);
	assert_int_equal(gpushare_buf_addf(&b, "%d", 1), GPUSHARE_E_NOMEM);
	assert_string_equal(gpushare_buf_str(&b), "ok");
	gpushare_buf_release(&b);
	assert_false(b.failed);
	assert_int_equal(gpushare_buf_add(&b, "again", 5), GPUSHARE_OK);
	assert_string_equal(gpushare_buf_str(&b), "again");
	gpushare_buf_release(&b);
	gpushare_clear_error();
}

static void test_strv(void **state)
{
	struct gpushare_strv l = { 0 };
	char *const *v;

	(void)state;
	v = gpushare_strv_list(&l);
	assert_non_null(v);
	assert_null(v[0]);
	for (int i = 0; i < 40; i++)
		assert_int_equal(gpushare_strv_addf(&l, "VAR%d=%s", i, i % 2 ? "odd" : "even"), GPUSHARE_OK);
	v = gpushare_strv_list(&l);
	assert_int_equal(l.n, 40);
	assert_string_equal(v[0], "VAR0=even");
	assert_string_equal(v[39], "VAR39=odd");
	assert_null(v[40]);
	gpushare_strv_release(&l);
	assert_int_equal(l.n, 0);
	assert_null(gpushare_strv_list(&l)[0]);
}

/* A fixed array: appends are cut to fit, a full array stays as it is. */
static void test_str_catf(void **state)
{
	char s[12] = "";

	(void)state;
	gpushare_str_catf(s, sizeof(s), "%d workers", 4);
	assert_string_equal(s, "4 workers");
	gpushare_str_catf(s, sizeof(s), ", %s", "mps");
	assert_string_equal(s, "4 workers, ");
	gpushare_str_catf(s, sizeof(s), "more");
	assert_string_equal(s, "4 workers, ");
	assert_int_equal(strlen(s), sizeof(s) - 1);
}

static void expect_sh(const char *w, const char *want)
{
	struct gpushare_buf b = { 0 };

	assert_int_equal(gpushare_buf_add_sh_word(&b, w), 0);
	assert_string_equal(gpushare_buf_str(&b), want);
	gpushare_buf_release(&b);
}

/* One shell word whatever the bytes: plain words as they are, the rest
 * single-quoted (a quote as '\''), the empty word ''. */
static void test_sh_word(void **state)
{
	(void)state;
	expect_sh("/run/gpushare/mps-1000-GPU-1/pipe", "/run/gpushare/mps-1000-GPU-1/pipe");
	expect_sh("a=b,c:d@e%f+g", "a=b,c:d@e%f+g");
	expect_sh("", "''");
	expect_sh("/tmp/state dir/pipe", "'/tmp/state dir/pipe'");
	expect_sh("it's", "'it'\\''s'");
	expect_sh("''", "''\\'''\\'''");
	expect_sh("$(reboot) `id` \\ * ; \n", "'$(reboot) `id` \\ * ; \n'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_grows),
		cmocka_unit_test(test_failed_sticks),
		cmocka_unit_test(test_strv),
		cmocka_unit_test(test_str_catf),
		cmocka_unit_test(test_sh_word),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
