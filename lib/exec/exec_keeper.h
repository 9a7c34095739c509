/*
 * The processes of `gpushare exec` that outlive a rank (lib/exec/exec_keeper.c):
 * the job's keeper, which cleans up after ranks that were killed, and the
 * stopper, which stops the job's daemon and removes its directory for the
 * node's last rank.
 */
#ifndef GPUSHARE_EXEC_KEEPER_H
#define GPUSHARE_EXEC_KEEPER_H

#include <stdbool.h>
#include <sys/types.h>

/* Is the keeper recorded in the job directory `dir` alive? */
bool exec_keeper_alive(const char *dir);

/* Start the job's keeper for a node of local_size ranks and record it in
 * `dir`; it closes every descriptor it inherits, this rank's file (rank_fd)
 * and the job's lock (lock_fd) among them, without unlocking them.
 * Its pid, or 0 when it could not be started (the ranks then stop the daemon
 * as they leave). */
pid_t exec_keeper_start(const char *dir, long local_size, int rank_fd, int lock_fd);

/* Stop the job's daemon and remove `dir` in a process of its own, which
 * takes over the job's lock (lock_fd, closed here). *stopped: a daemon was
 * stopped. */
int exec_stop_detached(const char *dir, int lock_fd, bool *stopped);

#endif
