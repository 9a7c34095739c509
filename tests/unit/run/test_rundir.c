/*
 * Unit tests: run directories and the clean-up after killed runs, with the
 * stand-in MPS control program playing a daemon left behind; the run's
 * keeper, finished, and cleaning up after an owner killed by SIGKILL. This
 * process is a child subreaper, so that what a killed owner leaves is
 * reaped here; the teardown kills and reaps what a failed test left.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "children.h"
#include "clock.h"
#include "sys.h"
#include "gpushare/child.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/util.h"
#include "rundir.h"

#define UNIT_TMPDIR "/tmp/gsrd"
#include "mps_sandbox.h"

static int setup(void **state)
{
	if (sandbox_setup(state))
		return -1;
	setenv("GPUSHARE_MPS_CONTROL", fake, 1);
	return prctl(PR_SET_CHILD_SUBREAPER, 1) == 0 ? 0 : -1;
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
	assert_int_equal(gpushare_rundir_create("bench", run, sizeof(run), NULL, NULL), GPUSHARE_OK);
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
	assert_int_equal(gpushare_rundir_create("sweep", run, sizeof(run), NULL, NULL), GPUSHARE_OK);
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
	assert_int_equal(gpushare_rundir_create("bench", run, sizeof(run), NULL, NULL), GPUSHARE_OK);
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

/* ---- the run's keeper ---- */

static void test_keeper_finish(void **state)
{
	struct gpushare_child ch;
	char run[GPUSHARE_PATH_MAX];
	int fd;

	(void)state;
	assert_int_equal(gpushare_rundir_create("bench", run, sizeof(run), &fd, &ch), GPUSHARE_OK);
	track(ch.pid);
	assert_true(fd >= 0);
	assert_true(ch.pid > 0);
	gpushare_rundir_keeper_finish(&fd, &ch);
	assert_int_equal(fd, -1);
	assert_true(ch.exited);
	assert_int_equal(gpushare_child_exit_code(ch.wstatus), 0);
	/* Told the run ended as it should: it touched nothing. */
	assert_true(exists(run));
	gpushare_rundir_remove(run);
}

struct owner_report {
	char run[GPUSHARE_PATH_MAX];
	pid_t daemon, keeper;
};

/* A run's owner: its directory, a daemon in it, its keeper; then it waits
 * to be killed. */
static _Noreturn void owner_main(void *arg)
{
	struct owner_report r;
	char pipe[GPUSHARE_PATH_MAX + 16], log[GPUSHARE_PATH_MAX + 16];
	struct gpushare_mps_start_info info;
	struct gpushare_child ch;
	struct gpushare_mps m;
	int fd;

	memset(&r, 0, sizeof(r));
	if (gpushare_rundir_create("bench", r.run, sizeof(r.run), &fd, &ch))
		_exit(2);
	snprintf(pipe, sizeof(pipe), "%s/mps/pipe", r.run);
	snprintf(log, sizeof(log), "%s/mps/log", r.run);
	if (gpushare_mps_init(&m, pipe, log) || gpushare_mps_start(&m, NULL, &info))
		_exit(3);
	r.daemon = info.pid;
	r.keeper = ch.pid;
	if (write(*(int *)arg, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(4);
	for (;;)
		pause();
}

static void test_keeper_owner_killed(void **state)
{
	struct gpushare_child owner;
	struct owner_report r;
	struct pollfd p;
	uint64_t end;
	int fds[2];

	(void)state;
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	gpushare_child_init(&owner);
	owner.fn = owner_main;
	owner.arg = &fds[1];
	assert_int_equal(gpushare_child_start(&owner), GPUSHARE_OK);
	track(owner.pid);
	close(fds[1]);
	p = (struct pollfd){ .fd = fds[0], .events = POLLIN };
	assert_int_equal(poll(&p, 1, 10000), 1);
	assert_int_equal(read(fds[0], &r, sizeof(r)), (ssize_t)sizeof(r));
	close(fds[0]);
	track(r.keeper);
	track(r.daemon);
	assert_true(r.keeper > 0);
	assert_true(gpushare_pid_alive(r.daemon));
	gpushare_child_signal(&owner, SIGKILL);
	assert_int_equal(gpushare_child_wait(&owner, 5 * NS_PER_S), GPUSHARE_OK);
	gpushare_child_release(&owner);
	/* The keeper stops the daemon, removes the directory and ends. */
	end = gpushare_now_ns() + 10 * NS_PER_S;
	while (exists(r.run) && gpushare_now_ns() < end)
		gpushare_sleep_ns(10 * NS_PER_MS);
	assert_false(exists(r.run));
	while (waitpid(r.keeper, NULL, WNOHANG) == 0 && gpushare_now_ns() < end)
		gpushare_sleep_ns(10 * NS_PER_MS);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		; /* the stopped daemon, orphaned to us */
	assert_false(gpushare_pid_alive(r.daemon));
	assert_false(gpushare_pid_alive(r.keeper));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_owner_kept),
		cmocka_unit_test(test_dead_owner_reaped),
		cmocka_unit_test(test_reused_pid_reaped),
		cmocka_unit_test(test_other_dirs_untouched),
		cmocka_unit_test_teardown(test_keeper_finish, kill_started),
		cmocka_unit_test_teardown(test_keeper_owner_killed, kill_started),
	};
	return cmocka_run_group_tests(tests, setup, sandbox_teardown);
}
