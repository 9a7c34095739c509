/*
 * Unit tests of lib/worker/workload.c: the built-in workload tables, defaults, and
 * validation of every option type (int, choice, duration, bool), including
 * bad values, bounds, unknown names and cross-option checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "gpushare/workload.h"

static void params_for(struct gpushare_wl_params *p, const char *name)
{
	const struct gpushare_wl_desc *d = gpushare_workload_find(name);

	assert_non_null(d);
	assert_int_equal(gpushare_wl_params_init(p, d), GPUSHARE_OK);
}

/* Setting name=value fails with err, leaves the old value, and the detail
 * names the option. */
static void expect_bad(struct gpushare_wl_params *p, const char *name, const char *value, int err)
{
	char before[64];

	snprintf(before, sizeof(before), "%s", gpushare_wl_get(p, name));
	if (gpushare_wl_params_set(p, name, value) != err)
		fail_msg("%s=%s: expected error %d", name, value, err);
	assert_string_equal(gpushare_wl_get(p, name), before);
	if (!strstr(gpushare_errdetail(), name))
		fail_msg("%s=%s: detail '%s' does not name the option", name, value, gpushare_errdetail());
}

static void expect_set(struct gpushare_wl_params *p, const char *name, const char *value, const char *stored)
{
	if (gpushare_wl_params_set(p, name, value) != GPUSHARE_OK)
		fail_msg("%s=%s refused: %s", name, value, gpushare_errdetail());
	assert_string_equal(gpushare_wl_get(p, name), stored);
}

static void test_table(void **state)
{
	static const char *const names[] = { "matmul", "tiny", "hybrid", "transformer", "spin" };
	const struct gpushare_wl_desc *list;
	size_t n, i, j, k;

	(void)state;
	n = gpushare_workloads(&list);
	assert_int_equal(n, 5);
	for (i = 0; i < n; i++) {
		bool found = false;

		for (j = 0; j < 5; j++)
			found |= strcmp(list[i].name, names[j]) == 0;
		assert_true(found);
		assert_ptr_equal(gpushare_workload_find(list[i].name), &list[i]);
		assert_int_equal(list[i].needs_gpu, strcmp(list[i].name, "spin") != 0);
		assert_non_null(list[i].summary);
		assert_true(list[i].n_opts <= GPUSHARE_WL_MAX_OPTS);
		for (j = 0; j < list[i].n_opts; j++) {
			assert_non_null(list[i].opts[j].help);
			for (k = j + 1; k < list[i].n_opts; k++)
				assert_string_not_equal(list[i].opts[j].name, list[i].opts[k].name);
		}
	}
	assert_null(gpushare_workload_find("nope"));
	assert_null(gpushare_workload_find(NULL));
	assert_null(gpushare_workload_find("Spin"));
}

static void test_defaults(void **state)
{
	struct gpushare_wl_params p;

	(void)state;
	assert_int_equal(gpushare_wl_params_init(&p, NULL), GPUSHARE_E_INVAL);

	params_for(&p, "spin");
	assert_int_equal(p.batch, 1);
	assert_int_equal(gpushare_wl_get_duration_ns(&p, "request-us"), 100000);
	assert_int_equal(gpushare_wl_get_int(&p, "fail-after"), 0);
	assert_string_equal(gpushare_wl_get(&p, "fail-mode"), "error");
	assert_false(gpushare_wl_get_bool(&p, "init-fail"));
	assert_false(p.given[0]);
	assert_int_equal(gpushare_wl_params_check(&p), GPUSHARE_OK);

	params_for(&p, "matmul");
	assert_int_equal(gpushare_wl_get_int(&p, "size"), 1024);
	assert_int_equal(gpushare_wl_get_int(&p, "m"), 0);
	assert_int_equal(gpushare_wl_get_int(&p, "n"), 0);
	assert_int_equal(gpushare_wl_get_int(&p, "k"), 0);
	assert_string_equal(gpushare_wl_get(&p, "dtype"), "fp16");

	params_for(&p, "tiny");
	assert_int_equal(gpushare_wl_get_int(&p, "kernels"), 32);
	assert_int_equal(gpushare_wl_get_int(&p, "threads"), 128);
	assert_int_equal(gpushare_wl_get_int(&p, "iters"), 0);

	params_for(&p, "hybrid");
	assert_int_equal(gpushare_wl_get_duration_ns(&p, "cpu-us"), 500000);
	assert_int_equal(gpushare_wl_get_duration_ns(&p, "gpu-us"), 500000);
	assert_int_equal(gpushare_wl_get_int(&p, "gpu-size"), 0);

	params_for(&p, "transformer");
	assert_int_equal(gpushare_wl_get_int(&p, "layers"), 12);
	assert_int_equal(gpushare_wl_get_int(&p, "hidden"), 768);
	assert_int_equal(gpushare_wl_get_int(&p, "heads"), 12);
	assert_int_equal(gpushare_wl_get_int(&p, "seq"), 128);
	assert_true(gpushare_wl_get_bool(&p, "graph"));
	assert_int_equal(gpushare_wl_params_check(&p), GPUSHARE_OK);
}

static void test_int(void **state)
{
	struct gpushare_wl_params p;

	(void)state;
	params_for(&p, "matmul");
	expect_set(&p, "size", "2048", "2048");
	assert_int_equal(gpushare_wl_get_int(&p, "size"), 2048);
	assert_true(p.given[0]);
	expect_set(&p, "size", "16", "16");
	expect_set(&p, "size", "65536", "65536");
	expect_set(&p, "size", "+512", "512");
	expect_bad(&p, "size", "15", GPUSHARE_E_INVAL);
	expect_bad(&p, "size", "65537", GPUSHARE_E_INVAL);
	expect_bad(&p, "size", "abc", GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "not a whole number"));
	expect_bad(&p, "size", "0", GPUSHARE_E_INVAL);
	expect_bad(&p, "size", "-1", GPUSHARE_E_INVAL);
	expect_bad(&p, "size", "", GPUSHARE_E_INVAL);
	expect_bad(&p, "size", "12x", GPUSHARE_E_INVAL);
	expect_bad(&p, "size", " 12", GPUSHARE_E_INVAL);
	expect_bad(&p, "size", "1.5", GPUSHARE_E_INVAL);
	expect_bad(&p, "size", "99999999999999999999999", GPUSHARE_E_INVAL);
	expect_set(&p, "m", "0", "0");
	expect_bad(&p, "m", "-1", GPUSHARE_E_INVAL);

	params_for(&p, "tiny");
	expect_bad(&p, "kernels", "0", GPUSHARE_E_INVAL);
	expect_set(&p, "kernels", "100000", "100000");
	expect_bad(&p, "threads", "31", GPUSHARE_E_INVAL);
	expect_bad(&p, "threads", "1025", GPUSHARE_E_INVAL);
	expect_set(&p, "iters", "0", "0");

	params_for(&p, "spin");
	expect_set(&p, "fail-after", "5", "5");
	expect_bad(&p, "fail-after", "-1", GPUSHARE_E_INVAL);
}

static void test_choice(void **state)
{
	struct gpushare_wl_params p;

	(void)state;
	params_for(&p, "matmul");
	expect_set(&p, "dtype", "bf16", "bf16");
	expect_set(&p, "dtype", "TF32", "tf32");   /* stored as listed */
	expect_set(&p, "dtype", "fp32", "fp32");
	expect_bad(&p, "dtype", "fp64", GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "fp16,bf16,fp32,tf32"));
	expect_bad(&p, "dtype", "fp1", GPUSHARE_E_INVAL);
	expect_bad(&p, "dtype", "fp16,bf16", GPUSHARE_E_INVAL);
	expect_bad(&p, "dtype", "", GPUSHARE_E_INVAL);
	expect_bad(&p, "dtype", "0", GPUSHARE_E_INVAL);

	params_for(&p, "spin");
	expect_set(&p, "fail-mode", "crash", "crash");
	expect_set(&p, "fail-mode", "hang", "hang");
	expect_bad(&p, "fail-mode", "abc", GPUSHARE_E_INVAL);
}

static void test_duration(void **state)
{
	struct gpushare_wl_params p;

	(void)state;
	params_for(&p, "spin");
	expect_set(&p, "request-us", "250us", "250us");
	assert_int_equal(gpushare_wl_get_duration_ns(&p, "request-us"), 250000);
	expect_set(&p, "request-us", "2ms", "2ms");
	assert_int_equal(gpushare_wl_get_duration_ns(&p, "request-us"), 2000000);
	expect_set(&p, "request-us", "1.5ms", "1.5ms");
	assert_int_equal(gpushare_wl_get_duration_ns(&p, "request-us"), 1500000);
	expect_set(&p, "request-us", "0", "0");
	assert_int_equal(gpushare_wl_get_duration_ns(&p, "request-us"), 0);
	expect_set(&p, "request-us", "60s", "60s");
	expect_bad(&p, "request-us", "abc", GPUSHARE_E_INVAL);
	expect_bad(&p, "request-us", "-1", GPUSHARE_E_INVAL);
	expect_bad(&p, "request-us", "-1us", GPUSHARE_E_INVAL);
	/* A bare number means the unit the name states, and is stored with it. */
	expect_set(&p, "request-us", "200", "200us");
	assert_int_equal(gpushare_wl_get_duration_ns(&p, "request-us"), 200000);
	expect_set(&p, "request-us", "1.5", "1.5us");
	assert_int_equal(gpushare_wl_get_duration_ns(&p, "request-us"), 1500);
	expect_bad(&p, "request-us", "60000001", GPUSHARE_E_INVAL); /* above 60 s */
	/* A name that states no unit: a bare number is refused (100 seconds?). */
	expect_bad(&p, "stall", "100", GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "unit"));
	expect_bad(&p, "request-us", "2m", GPUSHARE_E_INVAL);    /* above 60 s */
	expect_bad(&p, "request-us", "10parsecs", GPUSHARE_E_INVAL);
	expect_bad(&p, "request-us", "", GPUSHARE_E_INVAL);

	params_for(&p, "hybrid");
	expect_set(&p, "cpu-us", "1ms", "1ms");
	expect_set(&p, "gpu-us", "20us", "20us");
	assert_int_equal(gpushare_wl_get_duration_ns(&p, "gpu-us"), 20000);
	expect_bad(&p, "gpu-us", "abc", GPUSHARE_E_INVAL);
}

static void test_bool(void **state)
{
	static const char *const yes[] = { "on", "true", "1", "yes", "ON", "True" };
	static const char *const no[] = { "off", "false", "0", "no", "OFF", "No" };
	struct gpushare_wl_params p;
	size_t i;

	(void)state;
	params_for(&p, "transformer");
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		expect_set(&p, "graph", no[i], "off");
		assert_false(gpushare_wl_get_bool(&p, "graph"));
		expect_set(&p, "graph", yes[i], "on");
		assert_true(gpushare_wl_get_bool(&p, "graph"));
	}
	expect_bad(&p, "graph", "maybe", GPUSHARE_E_INVAL);
	expect_bad(&p, "graph", "", GPUSHARE_E_INVAL);
	expect_bad(&p, "graph", "2", GPUSHARE_E_INVAL);

	params_for(&p, "spin");
	expect_set(&p, "init-fail", "yes", "on");
	assert_true(gpushare_wl_get_bool(&p, "init-fail"));
}

static void test_unknown_name(void **state)
{
	struct gpushare_wl_params p;

	(void)state;
	params_for(&p, "spin");
	assert_int_equal(gpushare_wl_params_set(&p, "size", "1024"), GPUSHARE_E_NOT_FOUND);
	assert_non_null(strstr(gpushare_errdetail(), "size"));
	assert_non_null(strstr(gpushare_errdetail(), "spin"));
	assert_int_equal(gpushare_wl_params_set(&p, "", "1"), GPUSHARE_E_NOT_FOUND);
	assert_int_equal(gpushare_wl_params_set(&p, "request-u", "1us"), GPUSHARE_E_NOT_FOUND);
	/* Unknown names read back as empty defaults, without failing. */
	assert_string_equal(gpushare_wl_get(&p, "nope"), "");
	assert_int_equal(gpushare_wl_get_int(&p, "nope"), 0);
	assert_int_equal(gpushare_wl_get_duration_ns(&p, "nope"), 0);
	assert_false(gpushare_wl_get_bool(&p, "nope"));
}

static void test_too_long(void **state)
{
	struct gpushare_wl_params p;
	char v[200];

	(void)state;
	memset(v, '1', sizeof(v) - 1);
	v[sizeof(v) - 1] = '\0';
	params_for(&p, "matmul");
	expect_bad(&p, "size", v, GPUSHARE_E_INVAL);
}

static void test_check(void **state)
{
	struct gpushare_wl_params p;

	(void)state;
	params_for(&p, "transformer");
	expect_set(&p, "heads", "16", "16");
	assert_int_equal(gpushare_wl_params_check(&p), GPUSHARE_OK);   /* 768 / 16 */
	expect_set(&p, "heads", "5", "5");                               /* accepted alone... */
	assert_int_equal(gpushare_wl_params_check(&p), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "heads"));
	expect_set(&p, "hidden", "1000", "1000");                        /* ...until hidden fits */
	assert_int_equal(gpushare_wl_params_check(&p), GPUSHARE_OK);
	expect_bad(&p, "heads", "65", GPUSHARE_E_INVAL);
	expect_bad(&p, "layers", "49", GPUSHARE_E_INVAL);
	expect_bad(&p, "hidden", "63", GPUSHARE_E_INVAL);
	expect_bad(&p, "seq", "4097", GPUSHARE_E_INVAL);

	p.batch = 0;
	assert_int_equal(gpushare_wl_params_check(&p), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "batch"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_int),
		cmocka_unit_test(test_choice),
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_bool),
		cmocka_unit_test(test_unknown_name),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
