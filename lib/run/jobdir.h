/*
 * The job directory of `gpushare exec` (lib/exec/exec.c): one per job and
 * node, <user dir>/exec-<job key>@<node>, with its lock beside it. Its
 * names, lock, rank files, the daemon under it, its removal, and the reaping
 * of jobs whose ranks here were all killed (called by every run's
 * gpushare_rundir_reap()). The layout is described at the top of exec.c.
 */
#ifndef GPUSHARE_JOBDIR_H
#define GPUSHARE_JOBDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum gpushare_rank_state { GPUSHARE_RANK_ABSENT, GPUSHARE_RANK_DEAD, GPUSHARE_RANK_ALIVE };

/* "exec-<key>@<node>" (long keys shortened with a hash). */
int gpushare_jobdir_name(const char *job_key, const char *node, char *out, size_t len);

/* Stop and remove the directories of this user's exec jobs whose ranks on
 * this node are all dead (except `skip`, a directory name); *reaped counts
 * them. */
int gpushare_jobdir_reap(const char *skip, size_t *reaped);

void gpushare_jobdir_node_name(char *out, size_t len);
int gpushare_jobdir_path(char *out, size_t len, const char *dir, const char *name);
int gpushare_jobdir_lock(const char *dir, bool create, uint64_t wait_ns, int *fd);
void gpushare_jobdir_remove_locked(const char *dir, int lock_fd);
enum gpushare_rank_state gpushare_jobdir_rank_state(const char *path);
void gpushare_jobdir_scan_ranks(const char *dir, const char *own, size_t *arrived, size_t *alive, pid_t *alive_pid);
void gpushare_jobdir_kill_orphans(const char *dir);
int gpushare_jobdir_stop_daemon(const char *dir, bool *stopped);
int gpushare_jobdir_remove(const char *dir, int lock_fd, bool *stopped);

#endif
