/* Unit tests of lib/core/json.c: the one JSON dialect of gpushare. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpushare/exec.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/strategy.h"
#include "gpushare/utf8.h"

#include "json.h"

/* cJSON's allocations fail once `allowed` of them have been made (< 0: never). */
static int allowed = -1;

static void *failing_malloc(size_t n)
{
	if (allowed == 0)
		return NULL;
	if (allowed > 0)
		allowed--;
	return malloc(n);
}

static void use_failing_malloc(int n)
{
	cJSON_Hooks h = {failing_malloc, free};

	allowed = n;
	cJSON_InitHooks(&h);
}

static void test_numbers(void **state)
{
	cJSON *o = cJSON_CreateObject();
	char *text;

	(void)state;
	assert_true(gpushare_json_num(o, "a", 1.5));
	assert_true(gpushare_json_num(o, "nan", NAN));
	assert_true(gpushare_json_num(o, "inf", INFINITY));
	assert_true(gpushare_json_num(o, "ninf", -INFINITY));
	assert_true(gpushare_json_num_if(o, "unknown", 3, false));
	assert_true(gpushare_json_num_if(o, "known_nan", NAN, true));
	assert_true(gpushare_json_int(o, "i", -1));
	assert_true(gpushare_json_int_known(o, "unk", GPUSHARE_UNKNOWN));
	assert_true(gpushare_json_int_known(o, "zero", 0));
	assert_true(gpushare_json_u64_known(o, "unk64", GPUSHARE_UNKNOWN_U64));
	assert_true(gpushare_json_u64_known(o, "big", (uint64_t)1 << 40));
	assert_true(gpushare_json_bool(o, "b", true));
	assert_true(gpushare_json_null(o, "n"));
	text = gpushare_json_finish(o, true, false);
	assert_non_null(text);
	assert_string_equal(text, "{\"a\":1.5,\"nan\":null,\"inf\":null,\"ninf\":null,\"unknown\":null,"
				  "\"known_nan\":null,\"i\":-1,\"unk\":null,\"zero\":0,\"unk64\":null,"
				  "\"big\":1099511627776,\"b\":true,\"n\":null}");
	free(text);
}

static void test_strings(void **state)
{
	cJSON *o = cJSON_CreateObject(), *arr;
	char *text;

	(void)state;
	assert_true(gpushare_json_str(o, "dir", "d\xff\xfe"));
	assert_true(gpushare_json_str(o, "ok", "caf\xc3\xa9"));
	assert_true(gpushare_json_str(o, "null", NULL));
	assert_true(gpushare_json_str_or_null(o, "empty", ""));
	assert_true(gpushare_json_str(o, "k\xc0", "v")); /* keys are repaired too */
	arr = gpushare_json_arr(o, "list");
	assert_non_null(arr);
	assert_true(gpushare_json_str(arr, NULL, "\xed\xa0\x80")); /* a surrogate */
	assert_true(gpushare_json_num(arr, NULL, NAN));
	text = gpushare_json_finish(o, true, false);
	assert_non_null(text);
	assert_true(gpushare_utf8_valid(text));
	assert_string_equal(text, "{\"dir\":\"d\xef\xbf\xbd\xef\xbf\xbd\",\"ok\":\"caf\xc3\xa9\",\"null\":null,"
				  "\"empty\":null,\"k\xef\xbf\xbd\":\"v\",\"list\":[\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\",null]}");
	free(text);

	/* A string that did not come through the adders is repaired at print. */
	o = cJSON_CreateObject();
	assert_non_null(cJSON_AddStringToObject(o, "raw", "x\xff"));
	text = gpushare_json_finish(o, true, true);
	assert_non_null(text);
	assert_true(gpushare_utf8_valid(text));
	free(text);
}

/* A failed add is reported and everything after it fails: no document
 * comes out missing a field. */
static void test_failure(void **state)
{
	cJSON *o = cJSON_CreateObject(), *inner;
	bool ok;

	(void)state;
	/* A NULL parent (an add before it failed) fails, and frees nothing twice. */
	assert_false(gpushare_json_num(NULL, "a", 1));
	assert_false(gpushare_json_str(NULL, "a", "x"));
	assert_null(gpushare_json_obj(NULL, "a"));
	assert_false(gpushare_json_add(o, "a", NULL));
	/* A key on an array, no key on an object: refused, value freed. */
	assert_false(gpushare_json_add(o, NULL, cJSON_CreateNull()));
	inner = gpushare_json_arr(o, "arr");
	assert_false(gpushare_json_add(inner, "k", cJSON_CreateNull()));

	use_failing_malloc(0);
	assert_false(gpushare_json_num(o, "b", 1));
	assert_false(gpushare_json_str(o, "c", "x\xff"));
	assert_null(gpushare_json_obj(o, "d"));
	assert_null(gpushare_json_print(o, false));
	use_failing_malloc(1); /* the item, not its key */
	assert_false(gpushare_json_bool(o, "e", true));
	use_failing_malloc(-1);
	assert_int_equal(cJSON_GetArraySize(o), 1);

	/* A chain stops at its first failure; finish then frees and says NULL. */
	use_failing_malloc(3);
	ok = gpushare_json_num(o, "x", 1) && gpushare_json_num(o, "y", 2) && gpushare_json_num(o, "z", 3);
	use_failing_malloc(-1);
	assert_false(ok);
	assert_null(gpushare_json_finish(o, ok, false));
	assert_null(gpushare_json_finish(NULL, true, false));
	cJSON_InitHooks(NULL);
}

/* The documents the command line prints, built by the library. */
static void test_documents(void **state)
{
	struct gpushare_mps m;
	struct gpushare_exec x;
	char *const env[] = { "CUDA_VISIBLE_DEVICES=GPU-x", "CUDA_MPS_PIPE_DIRECTORY", NULL };
	cJSON *d;
	char *text;

	(void)state;
	memset(&m, 0, sizeof(m));
	snprintf(m.pipe_dir, sizeof(m.pipe_dir), "/tmp/p\xff");
	text = gpushare_mps_status_json(&m, GPUSHARE_MPS_ABSENT, NULL, NULL);
	assert_non_null(text);
	assert_true(gpushare_utf8_valid(text));
	d = cJSON_Parse(text);
	assert_string_equal(cJSON_GetObjectItem(d, "pipe_dir")->valuestring, "/tmp/p\xef\xbf\xbd");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(d, "log_dir")));
	assert_string_equal(cJSON_GetObjectItem(d, "state")->valuestring, "absent");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(d, "running")));
	assert_null(cJSON_GetObjectItem(d, "servers"));
	cJSON_Delete(d);
	free(text);

	memset(&x, 0, sizeof(x));
	x.launcher = "slurm";
	x.rank = 3;
	x.size = GPUSHARE_UNKNOWN;
	x.local_rank = 0;
	x.local_size = GPUSHARE_UNKNOWN;
	x.env = env;
	text = gpushare_exec_dry_run_json(&x, GPUSHARE_STRATEGY_TIMESLICE);
	assert_non_null(text);
	assert_null(strchr(text, '\n')); /* one line per rank */
	d = cJSON_Parse(text);
	assert_int_equal(cJSON_GetObjectItem(d, "rank")->valueint, 3);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(d, "size")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(d, "local_size")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(d, "daemon")));
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "set"), "CUDA_VISIBLE_DEVICES")->valuestring,
			    "GPU-x");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "unset"), 0)->valuestring,
			    "CUDA_MPS_PIPE_DIRECTORY");
	cJSON_Delete(d);
	free(text);
}

/* Reading whole numbers back, never through a conversion C leaves undefined. */
static void test_get_u64(void **state)
{
	cJSON *o = cJSON_Parse("{\"a\":42,\"big\":18446744073709551616,\"top\":18446744073709549568,"
			       "\"neg\":-1,\"frac\":1.5,\"s\":\"7\",\"huge\":9.28e23,\"nan\":null}");
	uint64_t v = 7;

	(void)state;
	assert_non_null(o);
	assert_true(gpushare_json_get_u64(o, "a", 100, &v));
	assert_int_equal(v, 42);
	assert_false(gpushare_json_get_u64(o, "a", 41, &v));       /* above max */
	assert_int_equal(v, 42);                                   /* untouched */
	assert_false(gpushare_json_get_u64(o, "big", UINT64_MAX, &v));   /* 2^64 */
	assert_true(gpushare_json_get_u64(o, "top", UINT64_MAX, &v));    /* the largest double below it */
	assert_true(v == 18446744073709549568ull);
	assert_false(gpushare_json_get_u64(o, "neg", UINT64_MAX, &v));
	assert_false(gpushare_json_get_u64(o, "frac", UINT64_MAX, &v));
	assert_false(gpushare_json_get_u64(o, "s", UINT64_MAX, &v));
	assert_false(gpushare_json_get_u64(o, "huge", UINT64_MAX, &v));
	assert_false(gpushare_json_get_u64(o, "nan", UINT64_MAX, &v));
	assert_false(gpushare_json_get_u64(o, "absent", UINT64_MAX, &v));
	cJSON_Delete(o);
}

static void test_get_int(void **state)
{
	cJSON *o = cJSON_Parse("{\"a\":-1,\"b\":3,\"huge\":-9.28e23,\"edge\":9223372036854775808}");
	long long v = 0;

	(void)state;
	assert_non_null(o);
	assert_true(gpushare_json_get_int(o, "a", -1, 10, &v));
	assert_int_equal(v, -1);
	assert_false(gpushare_json_get_int(o, "a", 0, 10, &v));
	assert_true(gpushare_json_get_int(o, "b", 0, 3, &v));
	assert_int_equal(v, 3);
	assert_false(gpushare_json_get_int(o, "b", 0, 2, &v));
	assert_false(gpushare_json_get_int(o, "huge", INT64_MIN, INT64_MAX, &v));
	assert_false(gpushare_json_get_int(o, "edge", INT64_MIN, INT64_MAX, &v));   /* 2^63 */
	assert_int_equal(v, 3);
	cJSON_Delete(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_failure),
		cmocka_unit_test(test_documents),
		cmocka_unit_test(test_get_u64),
		cmocka_unit_test(test_get_int),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
