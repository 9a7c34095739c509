/*
 * The processes of `gpushare exec` that outlive a rank (exec_keeper.h): the
 * job's keeper and the stopper of the node's last rank. The job directory's
 * layout is described at the top of exec.c.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "loop.h"
#include "sys.h"
#include "gpushare/child.h"
#include "gpushare/exec.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "jobdir.h"
#include "exec_keeper.h"

/* ---- the keeper ---- */

/* The job's keeper: a process of its own, started by the first rank, that
 * outlives every rank (launchers send SIGKILL a second after SIGTERM when
 * they abort a job, too soon for a rank to be sure to clean up itself).
 * Every KEEPER_POLL_NS it looks at the rank files under the job's lock:
 * kills what is left of a dead rank's program, and once no rank is alive
 * and every rank of the node has arrived (or none has been alive for the
 * grace), stops the daemon and removes the directory. It ends when the
 * directory is gone. Its owner is the job directory, not the first rank:
 * it waits for no process, only for its deadlines. */
#define KEEPER_POLL_NS (200 * NS_PER_MS)

struct keeper {
	const char *dir;
	long local_size;
	uint64_t idle_since;
	int status;                /* its exit status, once it ends */
};

static int keeper_look(struct gpushare_loop *l, void *arg)
{
	struct keeper *k = arg;
	size_t arrived, alive;
	uint64_t now;
	int fd, rc = gpushare_jobdir_lock(k->dir, false, 0, &fd);

	if (rc == GPUSHARE_E_NOT_FOUND)
		return 1;
	if (!rc) {
		gpushare_jobdir_kill_orphans(k->dir);
		gpushare_jobdir_scan_ranks(k->dir, NULL, &arrived, &alive, NULL);
		now = gpushare_now_ns();
		if (alive) {
			k->idle_since = 0;
		} else {
			if (!k->idle_since)
				k->idle_since = now;
			if ((long)arrived >= k->local_size || now - k->idle_since >= GPUSHARE_EXEC_GRACE_MS * NS_PER_MS) {
				k->status = gpushare_jobdir_remove(k->dir, fd, NULL) ? 1 : 0;
				return 1;
			}
		}
		gpushare_lock_release(fd);
	}
	return gpushare_loop_add_deadline(l, gpushare_now_ns() + KEEPER_POLL_NS, keeper_look, k) < 0;
}

static int keeper_run(void *arg)
{
	struct keeper *k = arg;
	struct gpushare_loop l;

	gpushare_loop_init(&l);
	if (gpushare_loop_add_deadline(&l, gpushare_now_ns() + KEEPER_POLL_NS, keeper_look, k) < 0)
		return 1;
	gpushare_loop_run(&l);
	gpushare_loop_release(&l);
	return k->status;
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
	struct keeper a = { dir, local_size, 0, 0 };
	struct gpushare_keeper k;
	pid_t pid = 0;

	/* The keeper closes rank_fd and lock_fd with every other descriptor,
	 * without unlocking: the rank's own keep its locks. */
	(void)rank_fd;
	(void)lock_fd;
	gpushare_keeper_init(&k);
	k.cleanup = keeper_run;
	k.arg = &a;
	if (gpushare_keeper_start(&k) == GPUSHARE_OK) {
		char path[GPUSHARE_PATH_MAX], text[64];
		int n = snprintf(text, sizeof(text), "%d %llu\n", (int)k.ch.pid, gpushare_pid_start_time(k.ch.pid));

		/* Not waited for: it ends after this rank (or soon after the
		 * last rank leaves), and init reaps it. */
		pid = k.ch.pid;
		gpushare_keeper_release(&k);
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

struct stopper {
	const char *dir;
	int lock_fd;
};

/* A launcher that stops the job signals the whole step; the stop finishes
 * anyway (the keeper skeleton makes it deaf: only SIGKILL ends it). */
static int stopper_run(void *arg)
{
	const struct stopper *a = arg;
	bool stopped = false;
	int rc = gpushare_jobdir_remove(a->dir, a->lock_fd, &stopped);

	return rc ? 1 : stopped ? 0 : 2;
}

/* Stop the daemon and remove the job directory in a process of its own, one
 * that outlives this rank: a launcher that stops a job sends SIGKILL soon
 * after SIGTERM (Open MPI one second later), and a stop cut short would
 * leave the daemon running. It inherits the job's lock (flock() locks
 * belong to the open file, shared across fork), which this process then
 * closes without unlocking. */
int exec_stop_detached(const char *dir, int lock_fd, bool *stopped)
{
	struct stopper a = { dir, lock_fd };
	struct gpushare_keeper k;
	pid_t pid;
	int rc, ws;

	*stopped = false;
	gpushare_keeper_init(&k);
	k.cleanup = stopper_run;
	k.arg = &a;
	k.keep_fds[k.n_keep_fds++] = lock_fd;
	rc = gpushare_keeper_start(&k);
	if (rc) {
		/* Cannot fork: stop it here. */
		gpushare_clear_error();
		return gpushare_jobdir_remove(dir, lock_fd, stopped);
	}
	close(lock_fd);
	rc = gpushare_child_wait(&k.ch, (uint64_t)GPUSHARE_EXEC_LOCK_WAIT_MS * NS_PER_MS);
	ws = k.ch.wstatus;
	pid = k.ch.pid;
	gpushare_keeper_release(&k);
	if (rc)
		return gpushare_fail(GPUSHARE_E_TIMEOUT, "the stop of the job's MPS daemon under '%s' goes on in process %d",
				     dir, (int)pid);
	if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
		*stopped = true;
	else if (!(WIFEXITED(ws) && WEXITSTATUS(ws) == 2))
		return gpushare_fail(GPUSHARE_E_MPS_NOT_RUNNING,
				     "the job's MPS daemon under '%s' could not be stopped (the next gpushare run on this "
				     "node tries again)", dir);
	return GPUSHARE_OK;
}
