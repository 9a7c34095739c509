/*
 * Unit tests: parsing of user values (percentages, sizes, integers,
 * durations), the MPS size format, and the one walk of a list of items.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "getenv_fn.h"
#include "items.h"

static void test_percent(void **state)
{
	double v;

	(void)state;
	assert_int_equal(gpushare_parse_percent("30", &v), GPUSHARE_OK);
	assert_true(v == 30.0);
	assert_int_equal(gpushare_parse_percent("12.5", &v), GPUSHARE_OK);
	assert_int_equal(gpushare_parse_percent("100", &v), GPUSHARE_OK);
	assert_int_equal(gpushare_parse_percent("50%", &v), GPUSHARE_OK);
	assert_true(v == 50.0);
	assert_int_equal(gpushare_parse_percent("0", &v), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "'0'"));
	assert_int_equal(gpushare_parse_percent("101", &v), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_percent("abc", &v), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "'abc'"));
	assert_int_equal(gpushare_parse_percent("", &v), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_percent("nan", &v), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_percent("-5", &v), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_percent(" 5", &v), GPUSHARE_E_INVAL);
}

static void test_size(void **state)
{
	uint64_t b;

	(void)state;
	assert_int_equal(gpushare_parse_size("4G", &b), GPUSHARE_OK);
	assert_true(b == 4ULL << 30);
	assert_int_equal(gpushare_parse_size("512M", &b), GPUSHARE_OK);
	assert_true(b == 512ULL << 20);
	assert_int_equal(gpushare_parse_size("2GiB", &b), GPUSHARE_OK);
	assert_true(b == 2ULL << 30);
	assert_int_equal(gpushare_parse_size("1024", &b), GPUSHARE_OK);
	assert_true(b == 1024);
	assert_int_equal(gpushare_parse_size("3kb", &b), GPUSHARE_OK);
	assert_true(b == 3072);
	assert_int_equal(gpushare_parse_size("0", &b), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_size("4X", &b), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "'X'"));
	assert_int_equal(gpushare_parse_size("-1G", &b), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_size("G", &b), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_size("1.5G", &b), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_size("99999999999T", &b), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_size("", &b), GPUSHARE_E_INVAL);
}

static void test_mps_size(void **state)
{
	char buf[32];

	(void)state;
	assert_int_equal(gpushare_format_mps_size(4ULL << 30, buf, sizeof(buf)), GPUSHARE_OK);
	assert_string_equal(buf, "4G");
	assert_int_equal(gpushare_format_mps_size(1536ULL << 20, buf, sizeof(buf)), GPUSHARE_OK);
	assert_string_equal(buf, "1536M");
	assert_int_equal(gpushare_format_mps_size((1ULL << 20) + 5, buf, sizeof(buf)), GPUSHARE_OK);
	assert_string_equal(buf, "1M");
	assert_int_equal(gpushare_format_mps_size(4096, buf, sizeof(buf)), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_format_mps_size(4ULL << 30, buf, 2), GPUSHARE_E_INVAL);
}

static void test_int_duration(void **state)
{
	long v;
	uint64_t ns;

	(void)state;
	assert_int_equal(gpushare_parse_int("7", 1, 48, &v), GPUSHARE_OK);
	assert_int_equal(v, 7);
	assert_int_equal(gpushare_parse_int("0", 1, 48, &v), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_int("49", 1, 48, &v), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_int("4x", 1, 48, &v), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_int("", 1, 48, &v), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_int("99999999999999999999", 1, 48, &v), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_duration("10s", &ns), GPUSHARE_OK);
	assert_true(ns == 10000000000ULL);
	assert_int_equal(gpushare_parse_duration("500ms", &ns), GPUSHARE_OK);
	assert_true(ns == 500000000ULL);
	assert_int_equal(gpushare_parse_duration("2m", &ns), GPUSHARE_OK);
	assert_true(ns == 120000000000ULL);
	assert_int_equal(gpushare_parse_duration("100us", &ns), GPUSHARE_OK);
	assert_true(ns == 100000ULL);
	assert_int_equal(gpushare_parse_duration("3", &ns), GPUSHARE_OK);
	assert_true(ns == 3000000000ULL);
	assert_int_equal(gpushare_parse_duration("-1", &ns), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_duration("5x", &ns), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_duration("", &ns), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_parse_duration("1e30s", &ns), GPUSHARE_E_INVAL);
}

/* Collects the items it is given as "[item]" in a buffer; fails on "bad". */
static int collect(void *arg, const char *p, size_t len)
{
	char *out = arg;
	size_t o = strlen(out);

	if (len == 3 && !strncmp(p, "bad", 3))
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "item bad");
	snprintf(out + o, 128 - o, "[%.*s]", (int)len, p);
	return GPUSHARE_OK;
}

/* A NULL-terminated table of NAME, VALUE pairs as an environment. */
static const char *table_env(void *ctx, const char *name)
{
	const char *const *t = ctx;

	for (; t[0]; t += 2)
		if (!strcmp(t[0], name))
			return t[1];
	return NULL;
}

/* The one reader of numbers from the environment: unset is 0, anything but
 * digits within [min, max] refused with the variable named. */
static void test_env_number(void **state)
{
	static const char *const env[] = {
		"N", "42", "ZERO", "0", "EMPTY", "", "PLUS", "+1", "MINUS", "-1", "SPACE", " 1", "TAIL", "1x",
		"BIG", "99999999999999999999999", "HEX", "0x10", NULL,
	};
	static const char *const bad[] = { "EMPTY", "PLUS", "MINUS", "SPACE", "TAIL", "BIG", "HEX" };
	long v = -7;

	(void)state;
	assert_int_equal(gpushare_env_number(table_env, (void *)env, "N", 0, 100, &v), 1);
	assert_int_equal(v, 42);
	assert_int_equal(gpushare_env_number(table_env, (void *)env, "ZERO", 0, 100, &v), 1);
	assert_int_equal(v, 0);
	v = -7;
	assert_int_equal(gpushare_env_number(table_env, (void *)env, "UNSET", 0, 100, &v), 0);
	assert_int_equal(v, -7);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(gpushare_env_number(table_env, (void *)env, bad[i], 0, 100, &v), GPUSHARE_E_INVAL);
		assert_non_null(strstr(gpushare_errdetail(), bad[i]));
		assert_int_equal(v, -7);
	}
	assert_int_equal(gpushare_env_number(table_env, (void *)env, "N", 0, 41, &v), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "N='42' is out of range (at most 41)"));
	assert_int_equal(gpushare_env_number(table_env, (void *)env, "ZERO", 1, 41, &v), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "ZERO='0' is out of range (at least 1)"));
	assert_int_equal(gpushare_env_number(table_env, (void *)env, "EMPTY", 0, 1, &v), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "EMPTY is empty"));
}

static void test_items(void **state)
{
	char got[128];
	size_t len = 0;
	const char *hit;

	(void)state;
	got[0] = '\0';
	assert_int_equal(gpushare_each_item("1,22,333", ',', collect, got), GPUSHARE_OK);
	assert_string_equal(got, "[1][22][333]");
	got[0] = '\0';
	assert_int_equal(gpushare_each_item("a:b=1", ':', collect, got), GPUSHARE_OK);
	assert_string_equal(got, "[a][b=1]");
	/* The first error stops the walk and is returned as it is. */
	got[0] = '\0';
	assert_int_equal(gpushare_each_item("1,bad,3", ',', collect, got), GPUSHARE_E_NOT_FOUND);
	assert_string_equal(got, "[1]");
	/* Empty lists, empty items and a separator at the end. */
	assert_int_equal(gpushare_each_item("", ',', collect, got), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_each_item("1,,2", ',', collect, got), GPUSHARE_E_INVAL);
	assert_string_equal(gpushare_errdetail(), "'1,,2' has an empty item");
	assert_int_equal(gpushare_each_item("1,", ',', collect, got), GPUSHARE_E_INVAL);
	assert_string_equal(gpushare_errdetail(), "'1,' ends with ','");
	/* Named: the refusal says what the list is. */
	assert_int_equal(gpushare_each_item_named("--gpus ',0'", ",0", ',', collect, got), GPUSHARE_E_INVAL);
	assert_string_equal(gpushare_errdetail(), "--gpus ',0' has an empty item");
	assert_int_equal(gpushare_each_item_named("X", "", ',', collect, got), GPUSHARE_E_INVAL);
	assert_string_equal(gpushare_errdetail(), "X is empty");

	/* Membership: whole items only, case as asked, empty never matches. */
	hit = gpushare_find_item("fp32,FP16,bf16", ',', "fp16", true, &len);
	assert_non_null(hit);
	assert_int_equal(len, 4);
	assert_memory_equal(hit, "FP16", 4);
	assert_null(gpushare_find_item("fp32,FP16,bf16", ',', "fp16", false, NULL));
	assert_null(gpushare_find_item("fp32,fp16", ',', "fp", false, NULL));
	assert_null(gpushare_find_item("fp32,fp16", ',', "fp16,", false, NULL));
	assert_null(gpushare_find_item("a,,b", ',', "", false, NULL));
	assert_non_null(gpushare_find_item("GPU-a,GPU-b", ',', "GPU-b", false, NULL));
	assert_null(gpushare_find_item(NULL, ',', "x", false, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_percent),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_mps_size),
		cmocka_unit_test(test_int_duration),
		cmocka_unit_test(test_env_number),
		cmocka_unit_test(test_items),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
