/*
 * Unit tests: the processes of `gpushare exec` that outlive a rank
 * (lib/exec/exec_keeper.c). The job's keeper removes a job whose ranks have
 * all arrived and left, ends when the directory is gone, and is deaf to the
 * stop signals; the stopper stops the job's daemon (the stand-in MPS control
 * program's) and removes the directory. Every process a test starts is
 * killed and reaped by the teardown, pass or fail.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "children.h"
#include "clock.h"
#include "sys.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/util.h"
#include "jobdir.h"
#include "exec_keeper.h"

#define UNIT_TMPDIR "/tmp/gpushare-test-exec-keeper"
#include "mps_sandbox.h"

static int setup(void **state)
{
	if (sandbox_setup(state))
		return -1;
	setenv("GPUSHARE_MPS_CONTROL", fake, 1);
	/* A daemon the stopper leaves behind on failure is reaped here. */
	return prctl(PR_SET_CHILD_SUBREAPER, 1) == 0 ? 0 : -1;
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* A job directory <xdg>/gpushare/exec-<name>@n1, created under its lock
 * (held on return, in *lock_fd). */
static void make_job(const char *name, char *dir, size_t len, int *lock_fd)
{
	char user[GPUSHARE_PATH_MAX];

	assert_int_equal(gpushare_user_dir(user, sizeof(user)), GPUSHARE_OK);
	assert_int_equal(gpushare_private_dir(user), GPUSHARE_OK);
	assert_true((size_t)snprintf(dir, len, "%s/exec-%s@n1", user, name) < len);
	assert_int_equal(gpushare_jobdir_lock(dir, true, NS_PER_S, lock_fd), GPUSHARE_OK);
}

static void test_keeper_removes_a_finished_job(void **state)
{
	char dir[GPUSHARE_PATH_MAX];
	pid_t pid;
	int fd, st;

	(void)state;
	make_job("done", dir, sizeof(dir), &fd);
	gpushare_lock_release(fd);
	/* A node of no rank: every rank has arrived, none is alive. */
	pid = exec_keeper_start(dir, 0, -1, -1);
	track(pid);
	assert_true(pid > 0);
	st = reap(pid, 10000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_false(exists(dir));
}

static void test_keeper_ends_with_its_directory(void **state)
{
	char dir[GPUSHARE_PATH_MAX], cmd[GPUSHARE_PATH_MAX + 32];
	pid_t pid;
	int fd, st;

	(void)state;
	make_job("gone", dir, sizeof(dir), &fd);
	gpushare_lock_release(fd);
	/* Five ranks to come: it waits for them (the grace is 5 s). */
	pid = exec_keeper_start(dir, 5, -1, -1);
	track(pid);
	assert_true(pid > 0);
	assert_true(exec_keeper_alive(dir));
	kill(pid, SIGINT);
	kill(pid, SIGTERM);
	kill(pid, SIGHUP);
	kill(pid, SIGQUIT);
	gpushare_sleep_ns(300 * NS_PER_MS);
	assert_int_equal(waitpid(pid, &st, WNOHANG), 0);
	assert_true(exists(dir));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	st = reap(pid, 10000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_stopper(void **state)
{
	char dir[GPUSHARE_PATH_MAX], pipe[GPUSHARE_PATH_MAX], log[GPUSHARE_PATH_MAX];
	struct gpushare_mps_start_info info;
	struct gpushare_mps m;
	bool stopped = true;
	int fd;

	(void)state;
	/* No daemon: the directory goes, nothing stopped. */
	make_job("plain", dir, sizeof(dir), &fd);
	assert_int_equal(exec_stop_detached(dir, fd, &stopped), GPUSHARE_OK);
	assert_false(stopped);
	assert_false(exists(dir));
	/* A daemon: stopped, then the directory goes. */
	make_job("mps", dir, sizeof(dir), &fd);
	assert_int_equal(gpushare_jobdir_path(pipe, sizeof(pipe), dir, "mps/pipe"), GPUSHARE_OK);
	assert_int_equal(gpushare_jobdir_path(log, sizeof(log), dir, "mps/log"), GPUSHARE_OK);
	assert_int_equal(gpushare_mps_init(&m, pipe, log), GPUSHARE_OK);
	assert_int_equal(gpushare_mps_start(&m, NULL, &info), GPUSHARE_OK);
	track(info.pid);
	assert_true(gpushare_pid_alive(info.pid));
	assert_int_equal(exec_stop_detached(dir, fd, &stopped), GPUSHARE_OK);
	assert_true(stopped);
	assert_false(exists(dir));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_keeper_removes_a_finished_job, kill_started),
		cmocka_unit_test_teardown(test_keeper_ends_with_its_directory, kill_started),
		cmocka_unit_test_teardown(test_stopper, kill_started),
	};

	return cmocka_run_group_tests(tests, setup, sandbox_teardown);
}
