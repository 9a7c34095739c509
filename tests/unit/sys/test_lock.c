/* Unit tests of lib/sys/lock.c: flock() locks that name their holder,
 * that a holder killed with SIGKILL does not keep, and never through a link. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpushare/files.h"
#include "gpushare/gpushare.h"

#define UNIT_TMPDIR "/tmp/gpushare-test-lock"
#include "tmpdir.h"

static void test_lock(void **state)
{
	char path[128];
	pid_t holder, pid;
	int fd, fd2, status, p[2];
	char c;

	(void)state;
	snprintf(path, sizeof(path), "%s/lock", dir);
	assert_int_equal(gpushare_lock_acquire(path, 0, &fd, NULL), GPUSHARE_OK);
	assert_int_equal(gpushare_lock_acquire(path, 50000000, &fd2, &holder), GPUSHARE_E_BUSY);
	assert_int_equal(holder, getpid());
	gpushare_lock_release(fd);
	assert_int_equal(gpushare_lock_acquire(path, 0, &fd, NULL), GPUSHARE_OK);
	gpushare_lock_release(fd);
	/* A holder killed with SIGKILL holds nothing. */
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int cfd;

		if (gpushare_lock_acquire(path, 0, &cfd, NULL) != GPUSHARE_OK || write(p[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_int_equal(read(p[0], &c, 1), 1);
	assert_int_equal(gpushare_lock_acquire(path, 0, &fd, &holder), GPUSHARE_E_BUSY);
	assert_int_equal(holder, pid);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(gpushare_lock_acquire(path, 0, &fd, NULL), GPUSHARE_OK);
	gpushare_lock_release(fd);
	close(p[0]);
	close(p[1]);
	/* Never through a link. */
	snprintf(path, sizeof(path), "%s/lock-link", dir);
	assert_int_equal(symlink("/tmp", path), 0);
	assert_int_equal(gpushare_lock_acquire(path, 0, &fd, NULL), GPUSHARE_E_IO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lock),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
