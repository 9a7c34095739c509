/* Unit tests of lib/core/csv.c: CSV fields quoted as RFC 4180 says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "csv.h"

/* The field s as gpushare_csv_write_field writes it (malloc'ed). */
static char *field(const char *s)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	gpushare_csv_write_field(f, s);
	assert_int_equal(fclose(f), 0);
	return out;
}

static void check(const char *in, const char *want)
{
	char *got = field(in);

	assert_string_equal(got, want);
	free(got);
}

static void test_fields(void **state)
{
	(void)state;
	check("", "");
	check("plain", "plain");
	check("with space", "with space");
	check("a,b", "\"a,b\"");
	check("say \"hi\"", "\"say \"\"hi\"\"\"");
	check("two\nlines", "\"two\nlines\"");
	check("cr\r", "\"cr\r\"");
	check("\"", "\"\"\"\"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
