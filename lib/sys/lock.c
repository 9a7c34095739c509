/*
 * Exclusive locks on a lock file, with flock(): the lock belongs to the open
 * file description, so the kernel releases it when the holder exits, is
 * killed or crashes, and a dead owner never holds it. Used for a sweep's
 * results directory (one writer at a time) and around starting and stopping
 * an MPS daemon of a pipe directory. The holder's pid is kept in the file
 * only to name it in the message of whoever finds the lock taken.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"

static pid_t read_holder(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long pid;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, NULL, 10);
	return pid > 0 && pid < (1L << 30) ? (pid_t)pid : 0;
}

int gpushare_lock_acquire(const char *path, uint64_t wait_ns, int *fd, pid_t *holder)
{
	uint64_t deadline = gpushare_now_ns() + wait_ns;
	struct stat st;
	char pid[32];
	int e, n;

	*fd = -1;
	if (holder)
		*holder = 0;
	n = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0600);
	if (n < 0) {
		e = errno;
		if (e == ELOOP)
			return gpushare_fail(GPUSHARE_E_IO, "lock file '%s' is a symbolic link; refusing to use it", path);
		return gpushare_fail(GPUSHARE_E_IO, "cannot open lock file '%s': %s", path, strerror(e));
	}
	if (fstat(n, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(n);
		return gpushare_fail(GPUSHARE_E_IO, "lock file '%s' is not a regular file of this user; refusing to use it",
				     path);
	}
	for (;;) {
		if (flock(n, LOCK_EX | LOCK_NB) == 0)
			break;
		e = errno;
		if (e == EINTR)
			continue;
		if (e != EWOULDBLOCK || gpushare_now_ns() >= deadline) {
			pid_t h = e == EWOULDBLOCK ? read_holder(n) : 0;

			close(n);
			if (e != EWOULDBLOCK)
				return gpushare_fail(GPUSHARE_E_IO, "cannot lock '%s': %s", path, strerror(e));
			if (holder)
				*holder = h;
			if (h)
				return gpushare_fail(GPUSHARE_E_BUSY, "'%s' is locked by process %ld", path, (long)h);
			return gpushare_fail(GPUSHARE_E_BUSY, "'%s' is locked by another process", path);
		}
		gpushare_sleep_ns(10 * NS_PER_MS);
	}
	/* The pid is only for messages: the lock is held even if this fails. */
	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(n, 0) == 0 && pwrite(n, pid, strlen(pid), 0) < 0)
		gpushare_clear_error();
	*fd = n;
	return GPUSHARE_OK;
}

void gpushare_lock_release(int fd)
{
	if (fd < 0)
		return;
	flock(fd, LOCK_UN);
	close(fd);
}
