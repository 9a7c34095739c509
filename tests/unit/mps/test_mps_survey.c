/*
 * Unit tests of lib/mps/mps_survey.c: the pipe directories looked at (each
 * once, with every reason it is looked at) and what is found at one with
 * no daemon, a stale pid file or a pid file of a live process that is no
 * daemon.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "gpushare/mps.h"

#define UNIT_TMPDIR "/tmp/gpushare-test-survey"
#include "tmpdir.h"

static void test_add(void **state)
{
	struct gpushare_mps_survey d[3];
	int n = 0;

	(void)state;
	gpushare_mps_survey_add(d, &n, 3, "/a/pipe/", "given");
	gpushare_mps_survey_add(d, &n, 3, "/a/pipe", "env");
	gpushare_mps_survey_add(d, &n, 3, "/a/pipe//", "env");
	gpushare_mps_survey_add(d, &n, 3, "", "env");
	gpushare_mps_survey_add(d, &n, 3, NULL, "env");
	assert_int_equal(n, 1);
	assert_string_equal(d[0].pipe_dir, "/a/pipe");
	assert_int_equal(d[0].n_sources, 2);
	assert_string_equal(d[0].sources[0], "given");
	assert_string_equal(d[0].sources[1], "env");
	assert_int_equal(d[0].answers, GPUSHARE_UNKNOWN);
	gpushare_mps_survey_add(d, &n, 3, "/", "default");
	gpushare_mps_survey_add(d, &n, 3, "/b", "given");
	gpushare_mps_survey_add(d, &n, 3, "/c", "given"); /* full */
	assert_int_equal(n, 3);
	assert_string_equal(d[1].pipe_dir, "/");
	assert_string_equal(d[2].pipe_dir, "/b");
}

static void test_add_known(void **state)
{
	struct gpushare_mps_survey d[3];
	int n = 0;

	(void)state;
	/* $CUDA_MPS_PIPE_DIRECTORY naming the default directory: one entry, two reasons. */
	setenv("CUDA_MPS_PIPE_DIRECTORY", GPUSHARE_MPS_DEFAULT_PIPE_DIR "/", 1);
	gpushare_mps_survey_add_known(d, &n, 3);
	assert_int_equal(n, 2);
	assert_string_equal(d[0].sources[0], "gpushare");
	assert_string_equal(d[1].pipe_dir, GPUSHARE_MPS_DEFAULT_PIPE_DIR);
	assert_int_equal(d[1].n_sources, 2);
	assert_string_equal(d[1].sources[0], "env");
	assert_string_equal(d[1].sources[1], "default");
	n = 0;
	setenv("CUDA_MPS_PIPE_DIRECTORY", dir, 1);
	gpushare_mps_survey_add_known(d, &n, 3);
	assert_int_equal(n, 3);
	assert_string_equal(d[1].pipe_dir, dir);
	assert_string_equal(d[2].sources[0], "default");
	unsetenv("CUDA_MPS_PIPE_DIRECTORY");
}

static void write_pid(pid_t pid)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, GPUSHARE_MPS_PID_FILE);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%d\n", (int)pid);
	fclose(f);
}

static void test_look(void **state)
{
	struct gpushare_mps_survey d[1];
	struct gpushare_mps_survey_opts probe = { .max_timeout_ms = 3000 };
	int n = 0;

	(void)state;
	gpushare_mps_survey_add(d, &n, 1, dir, "given");
	/* Nothing there. */
	gpushare_mps_survey_look(&d[0], &probe);
	assert_int_equal(d[0].init_rc, GPUSHARE_OK);
	assert_int_equal(d[0].state, GPUSHARE_MPS_ABSENT);
	assert_int_equal(d[0].pid, 0);
	assert_int_equal(d[0].answers, GPUSHARE_UNKNOWN);
	assert_false(d[0].up);
	/* A pid file whose process is gone: stale, not probed. */
	write_pid(999999999);
	gpushare_mps_survey_look(&d[0], &probe);
	assert_int_equal(d[0].state, GPUSHARE_MPS_STALE);
	assert_int_equal(d[0].answers, GPUSHARE_UNKNOWN);
	gpushare_mps_survey_release(&d[0]);
	gpushare_clear_error();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_add_known),
		cmocka_unit_test(test_look),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
