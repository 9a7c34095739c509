/*
 * Unit tests: run directories and the clean-up after killed runs, with the
 * stand-in MPS control program playing a daemon left behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "sys.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/util.h"
#include "rundir.h"

static char xdg[64];

static int setup(void **state)
{
	char fake[GPUSHARE_PATH_MAX];
	const char *helpers = getenv("GPUSHARE_TEST_HELPERS");

	(void)state;
	if (!helpers)
		return -1;
	snprintf(fake, sizeof(fake), "%s/fake_mps_control", helpers);
	setenv("GPUSHARE_MPS_CONTROL", fake, 1);
	strcpy(xdg, "/tmp/gsrdXXXXXX");
	if (!mkdtemp(xdg))
		return -1;
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", xdg);
	return system(cmd) == 0 ? 0 : -1;
}

static bool exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

static void write_owner(const char *run, const char *text)
{
	char path[GPUSHARE_PATH_MAX + 16];
	FILE *f;

	snprintf(path, sizeof(path), "%s/owner", run);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static pid_t dead_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

static void test_live_owner_kept(void **state)
{
	char run[GPUSHARE_PATH_MAX];
	size_t n = 99;

	(void)state;
	assert_int_equal(gpushare_rundir_create("bench", run, sizeof(run)), GPUSHARE_OK);
	assert_non_null(strstr(run, "/gpushare/bench-"));
	assert_true(exists(run));
	assert_int_equal(gpushare_rundir_reap(&n), GPUSHARE_OK);
	assert_int_equal(n, 0);
	assert_true(exists(run));
	gpushare_rundir_remove(run);
	assert_false(exists(run));
}

static void test_dead_owner_reaped(void **state)
{
	char run[GPUSHARE_PATH_MAX], pipe[GPUSHARE_PATH_MAX + 16], log[GPUSHARE_PATH_MAX + 16], text[64];
	struct gpushare_mps m;
	struct gpushare_mps_start_info info;
	size_t n = 0;

	(void)state;
	assert_int_equal(gpushare_rundir_create("sweep", run, sizeof(run)), GPUSHARE_OK);
	snprintf(pipe, sizeof(pipe), "%s/mps/pipe", run);
	snprintf(log, sizeof(log), "%s/mps/log", run);
	assert_int_equal(gpushare_mps_init(&m, pipe, log), GPUSHARE_OK);
	assert_int_equal(gpushare_mps_start(&m, NULL, &info), GPUSHARE_OK);
	assert_true(gpushare_pid_alive(info.pid));
	/* The run's owner dies without cleaning up. */
	snprintf(text, sizeof(text), "%d 12345\n", (int)dead_pid());
	write_owner(run, text);
	assert_int_equal(gpushare_rundir_reap(&n), GPUSHARE_OK);
	assert_int_equal(n, 1);
	assert_false(gpushare_pid_alive(info.pid));
	assert_false(exists(run));
}

static void test_reused_pid_reaped(void **state)
{
	char run[GPUSHARE_PATH_MAX], text[64];
	size_t n = 0;

	(void)state;
	assert_int_equal(gpushare_rundir_create("bench", run, sizeof(run)), GPUSHARE_OK);
	/* Our pid, but another start time: a process that reused the pid. */
	snprintf(text, sizeof(text), "%d 1\n", (int)getpid());
	write_owner(run, text);
	assert_int_equal(gpushare_rundir_reap(&n), GPUSHARE_OK);
	assert_int_equal(n, 1);
	assert_false(exists(run));
}

static void test_other_dirs_untouched(void **state)
{
	char other[GPUSHARE_PATH_MAX];
	size_t n = 0;

	(void)state;
	/* Not a run directory (no bench-/sweep- prefix): never touched, even
	 * with a dead owner. */
	snprintf(other, sizeof(other), "%s/gpushare/mps", xdg);
	assert_int_equal(gpushare_private_dir(other), GPUSHARE_OK);
	write_owner(other, "1 1\n");
	assert_int_equal(gpushare_rundir_reap(&n), GPUSHARE_OK);
	assert_int_equal(n, 0);
	assert_true(exists(other));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_owner_kept),
		cmocka_unit_test(test_dead_owner_reaped),
		cmocka_unit_test(test_reused_pid_reaped),
		cmocka_unit_test(test_other_dirs_untouched),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
