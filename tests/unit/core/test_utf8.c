/* Unit tests of lib/core/utf8.c: validity, repair with U+FFFD and cutting
 * between characters, never inside one; the terminal sanitiser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpushare/files.h"

static void test_utf8(void **state)
{
	char out[16];
	char *d;

	(void)state;
	assert_true(gpushare_utf8_valid("plain ascii"));
	assert_true(gpushare_utf8_valid("\xe2\x82\xac \xf0\x9f\x98\x80"));
	assert_false(gpushare_utf8_valid("a\xff"));
	assert_false(gpushare_utf8_valid("\xc0\xaf"));          /* overlong '/' */
	assert_false(gpushare_utf8_valid("\xed\xa0\x80"));      /* a surrogate */
	assert_false(gpushare_utf8_valid("\xe2\x82"));          /* cut short */
	d = gpushare_utf8_dup("a\xffz");
	assert_string_equal(d, "a\xef\xbf\xbdz");
	free(d);
	/* 5 bytes of room: "ab" then a 3-byte euro fits, a second euro does not. */
	assert_int_equal(gpushare_utf8_copy(out, 6, "ab\xe2\x82\xac\xe2\x82\xac"), 5);
	assert_string_equal(out, "ab\xe2\x82\xac");
	assert_int_equal(gpushare_utf8_copy(out, 4, "ab\xe2\x82\xac"), 2); /* never half a character */
	assert_string_equal(out, "ab");
	assert_int_equal(gpushare_utf8_cut("ab\xe2\x82\xac", 4), 2);
	assert_int_equal(gpushare_utf8_cut("ab\xe2\x82\xac", 5), 5);
	assert_int_equal(gpushare_utf8_cut("abc", 2), 2);
	d = gpushare_utf8_fix(strdup("ok"));
	assert_string_equal(d, "ok");
	free(d);
}

static void expect_term(const char *in, const char *want)
{
	struct gpushare_buf b = { 0 };

	assert_int_equal(gpushare_utf8_term(&b, in), 0);
	assert_string_equal(gpushare_buf_str(&b), want);
	gpushare_buf_release(&b);
}

static void test_term(void **state)
{
	(void)state;
	expect_term("", "");
	expect_term("sh -c 'exit 3' x\\y \xe2\x82\xac", "sh -c 'exit 3' x\\y \xe2\x82\xac");
	/* CSI colour, OSC title ended by BEL: nothing reaches the terminal raw. */
	expect_term("\x1b[31mRED\x1b]0;t\x07", "\\x1B[31mRED\\x1B]0;t\\x07");
	expect_term("a\tb\nc\rd\x7f", "a\\tb\\nc\\rd\\x7F");
	expect_term("\xc2\x9b" "1m \xc2\x85 \xc2\xa0", "\\u009B1m \\u0085 \xc2\xa0");  /* C1 CSI, NEL; NBSP kept */
	expect_term("\xe2\x80\xae" "cba \xe2\x81\xa6", "\\u202Ecba \\u2066");             /* bidi overrides */
	expect_term("a\xff\xe2\x82", "a\\xFF\\xE2\\x82");                              /* invalid bytes */
}

/* The stream of terminal text: the same escapes, line breaks kept, a
 * character cut between two writes whole. */
static void test_term_stream(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len), *t;

	(void)state;
	assert_non_null(mem);
	t = gpushare_utf8_term_stream(mem);
	assert_non_null(t);
	fputs("a\x1b[31m\n\xe2\x82", t);
	fflush(t);                                   /* the euro sign cut in two */
	fputs("\xac b\xc2\x9b\tc\n", t);
	fputc('\0', t);
	fputs("\xff", t);
	assert_int_equal(fclose(t), 0);
	assert_int_equal(fclose(mem), 0);
	assert_string_equal(text, "a\\x1B[31m\n\xe2\x82\xac b\\u009B\\tc\n\\x00\\xFF");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_term),
		cmocka_unit_test(test_term_stream),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
