/*
 * The processes of `gpushare exec` that outlive a rank (exec_keeper.h): the
 * job's keeper and the stopper of the node's last rank. The job directory's
 * layout is described at the top of exec.c.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "sys.h"
#include "gpushare/child.h"
#include "gpushare/exec.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "jobdir.h"
#include "exec_keeper.h"

/* ---- the keeper ---- */

struct keeper_arg {
	const char *dir;
	long local_size;
	int rank_fd, lock_fd;
};

/* The job's keeper: a process of its own, started by the first rank, that
 * outlives every rank (launchers send SIGKILL a second after SIGTERM when
 * they abort a job, too soon for a rank to be sure to clean up itself).
 * Every KEEPER_POLL_NS it looks at the rank files under the job's lock:
 * kills what is left of a dead rank's program, and once no rank is alive
 * and every rank of the node has arrived (or none has been alive for the
 * grace), stops the daemon and removes the directory. It ends when the
 * directory is gone. */
#define KEEPER_POLL_NS (200 * NS_PER_MS)

static _Noreturn void keeper_main(void *argp)
{
	const struct keeper_arg *a = argp;
	uint64_t idle_since = 0;

	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	/* Closed, not unlocked: the rank's own descriptors keep its locks. */
	close(a->rank_fd);
	close(a->lock_fd);
	for (;;) {
		size_t arrived, alive;
		uint64_t now;
		int fd, rc;

		gpushare_sleep_ns(KEEPER_POLL_NS);
		rc = gpushare_jobdir_lock(a->dir, false, 0, &fd);
		if (rc == GPUSHARE_E_NOT_FOUND)
			_exit(0);
		if (rc)
			continue;
		gpushare_jobdir_kill_orphans(a->dir);
		gpushare_jobdir_scan_ranks(a->dir, NULL, &arrived, &alive, NULL);
		now = gpushare_now_ns();
		if (alive) {
			idle_since = 0;
		} else {
			if (!idle_since)
				idle_since = now;
			if ((long)arrived >= a->local_size || now - idle_since >= GPUSHARE_EXEC_GRACE_MS * NS_PER_MS)
				_exit(gpushare_jobdir_remove(a->dir, fd, NULL) ? 1 : 0);
		}
		gpushare_lock_release(fd);
	}
}

bool exec_keeper_alive(const char *dir)
{
	char path[GPUSHARE_PATH_MAX];
	unsigned long long start = 0;
	int pid = 0;
	FILE *f;

	if (gpushare_jobdir_path(path, sizeof(path), dir, "keeper")) {
		gpushare_clear_error();
		return false;
	}
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fscanf(f, "%d %llu", &pid, &start) != 2)
		pid = 0;
	fclose(f);
	return pid > 0 && gpushare_pid_alive(pid) && gpushare_pid_start_time(pid) == start;
}

pid_t exec_keeper_start(const char *dir, long local_size, int rank_fd, int lock_fd)
{
	struct keeper_arg a = { dir, local_size, rank_fd, lock_fd };
	struct gpushare_child ch;
	pid_t pid = 0;

	if (gpushare_child_start_detached(&ch, keeper_main, &a) == GPUSHARE_OK) {
		char path[GPUSHARE_PATH_MAX], text[64];
		int n = snprintf(text, sizeof(text), "%d %llu\n", (int)ch.pid, gpushare_pid_start_time(ch.pid));

		/* Not waited for: it ends after this rank (or soon after the
		 * last rank leaves), and init reaps it. */
		pid = ch.pid;
		gpushare_child_release(&ch);
		if (gpushare_jobdir_path(path, sizeof(path), dir, "keeper") ||
		    gpushare_write_file_atomic(path, text, (size_t)n))
			gpushare_clear_error();
	} else {
		/* Without it the ranks still stop the daemon as they leave. */
		gpushare_clear_error();
	}
	return pid;
}

/* ---- the stopper ---- */

struct stopper_arg {
	const char *dir;
	int lock_fd;
};

static _Noreturn void stopper_main(void *arg)
{
	const struct stopper_arg *a = arg;
	bool stopped = false;
	int rc;

	/* A launcher that stops the job signals the whole step; the stop
	 * finishes anyway (only SIGKILL ends it). */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	rc = gpushare_jobdir_remove(a->dir, a->lock_fd, &stopped);
	_exit(rc ? 1 : stopped ? 0 : 2);
}

/* Stop the daemon and remove the job directory in a process of its own, one
 * that outlives this rank: a launcher that stops a job sends SIGKILL soon
 * after SIGTERM (Open MPI one second later), and a stop cut short would
 * leave the daemon running. It inherits the job's lock (flock() locks
 * belong to the open file, shared across fork), which this process then
 * closes without unlocking. */
int exec_stop_detached(const char *dir, int lock_fd, bool *stopped)
{
	struct stopper_arg a = { dir, lock_fd };
	struct gpushare_child ch;
	int rc;

	*stopped = false;
	rc = gpushare_child_start_detached(&ch, stopper_main, &a);
	if (rc) {
		/* Cannot fork: stop it here. */
		gpushare_clear_error();
		return gpushare_jobdir_remove(dir, lock_fd, stopped);
	}
	close(lock_fd);
	rc = gpushare_child_wait(&ch, (uint64_t)GPUSHARE_EXEC_LOCK_WAIT_MS * NS_PER_MS);
	if (rc) {
		gpushare_child_release(&ch);
		return gpushare_fail(GPUSHARE_E_TIMEOUT, "the stop of the job's MPS daemon under '%s' goes on in process %d",
				     dir, (int)ch.pid);
	}
	gpushare_child_release(&ch);
	if (WIFEXITED(ch.wstatus) && WEXITSTATUS(ch.wstatus) == 0)
		*stopped = true;
	else if (!(WIFEXITED(ch.wstatus) && WEXITSTATUS(ch.wstatus) == 2))
		return gpushare_fail(GPUSHARE_E_MPS_NOT_RUNNING,
				     "the job's MPS daemon under '%s' could not be stopped (the next gpushare run on this "
				     "node tries again)", dir);
	return GPUSHARE_OK;
}
