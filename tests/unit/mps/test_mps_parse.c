/*
 * Unit tests: parsing every reply shape of the MPS control daemon.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "mps_parse.h"

static void test_pid_list(void **state)
{
	pid_t *p;
	size_t n;

	(void)state;
	assert_int_equal(gpushare_mps_parse_pid_list("", &p, &n), GPUSHARE_OK);
	assert_int_equal(n, 0);
	assert_null(p);
	assert_int_equal(gpushare_mps_parse_pid_list("1234\n", &p, &n), GPUSHARE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(p[0], 1234);
	free(p);
	assert_int_equal(gpushare_mps_parse_pid_list("  11\n22\r\n33  \n\n", &p, &n), GPUSHARE_OK);
	assert_int_equal(n, 3);
	assert_int_equal(p[2], 33);
	free(p);
	assert_int_equal(gpushare_mps_parse_pid_list("Unknown command \"get_server_lst\"", &p, &n), GPUSHARE_E_MPS_REPLY);
	assert_non_null(strstr(gpushare_errdetail(), "Unknown command"));
	assert_int_equal(gpushare_mps_parse_pid_list("12a\n", &p, &n), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_parse_pid_list("-5\n", &p, &n), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_parse_pid_list("0\n", &p, &n), GPUSHARE_E_MPS_REPLY);
}

static void test_percentage(void **state)
{
	double v;

	(void)state;
	assert_int_equal(gpushare_mps_parse_percentage("100.0\n", &v), GPUSHARE_OK);
	assert_true(v == 100.0);
	assert_int_equal(gpushare_mps_parse_percentage("30", &v), GPUSHARE_OK);
	assert_true(v == 30.0);
	assert_int_equal(gpushare_mps_parse_percentage("12.5 \n", &v), GPUSHARE_OK);
	assert_true(v == 12.5);
	assert_int_equal(gpushare_mps_parse_percentage("", &v), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_parse_percentage("abc", &v), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_parse_percentage("101", &v), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_parse_percentage("50 extra", &v), GPUSHARE_E_MPS_REPLY);
}

static void test_mem_limit(void **state)
{
	char b[16];

	(void)state;
	assert_int_equal(gpushare_mps_parse_mem_limit("4G\n", b, sizeof(b)), GPUSHARE_OK);
	assert_string_equal(b, "4G");
	assert_int_equal(gpushare_mps_parse_mem_limit("900M", b, sizeof(b)), GPUSHARE_OK);
	assert_string_equal(b, "900M");
	assert_int_equal(gpushare_mps_parse_mem_limit("", b, sizeof(b)), GPUSHARE_OK);
	assert_string_equal(b, "");
	assert_int_equal(gpushare_mps_parse_mem_limit("0", b, sizeof(b)), GPUSHARE_OK);
	assert_string_equal(b, "");
	assert_int_equal(gpushare_mps_parse_mem_limit("G4", b, sizeof(b)), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_parse_mem_limit("4X", b, sizeof(b)), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_parse_mem_limit("Unknown command \"x\"", b, sizeof(b)), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_parse_mem_limit("123456789012345678G", b, 8), GPUSHARE_E_MPS_REPLY);
}

static void test_priority_status(void **state)
{
	int p;
	char s[16];

	(void)state;
	assert_int_equal(gpushare_mps_parse_priority("0\n", &p), GPUSHARE_OK);
	assert_int_equal(p, 0);
	assert_int_equal(gpushare_mps_parse_priority("1", &p), GPUSHARE_OK);
	assert_int_equal(p, 1);
	assert_int_equal(gpushare_mps_parse_priority("2", &p), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_parse_priority("", &p), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_parse_server_status("ACTIVE\n", s, sizeof(s)), GPUSHARE_OK);
	assert_string_equal(s, "ACTIVE");
	assert_int_equal(gpushare_mps_parse_server_status("FAULT", s, sizeof(s)), GPUSHARE_OK);
	assert_string_equal(s, "FAULT");
	assert_int_equal(gpushare_mps_parse_server_status("", s, sizeof(s)), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_parse_server_status("Unknown command \"x\"", s, sizeof(s)), GPUSHARE_E_MPS_REPLY);
}

static void test_setter_terminate(void **state)
{
	(void)state;
	assert_int_equal(gpushare_mps_check_setter_reply(""), GPUSHARE_OK);
	assert_int_equal(gpushare_mps_check_setter_reply("\n"), GPUSHARE_OK);
	assert_int_equal(gpushare_mps_check_setter_reply("30.0\n"), GPUSHARE_OK);
	assert_int_equal(gpushare_mps_check_setter_reply("4G"), GPUSHARE_OK);
	assert_int_equal(gpushare_mps_check_setter_reply("Unknown command \"set_x\""), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_check_setter_reply("Invalid value"), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_check_terminate_reply("0\n"), GPUSHARE_OK);
	assert_int_equal(gpushare_mps_check_terminate_reply("1"), GPUSHARE_E_MPS_REPLY);
	assert_int_equal(gpushare_mps_check_terminate_reply(""), GPUSHARE_E_MPS_REPLY);
	assert_true(gpushare_mps_reply_is_unknown("Unknown command \"help\""));
	assert_false(gpushare_mps_reply_is_unknown("100.0"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pid_list),
		cmocka_unit_test(test_percentage),
		cmocka_unit_test(test_mem_limit),
		cmocka_unit_test(test_priority_status),
		cmocka_unit_test(test_setter_terminate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
