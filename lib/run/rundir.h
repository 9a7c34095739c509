/*
 * Run directories: private per-run state under the user directory
 * (rundir.c), and the reaping of killed runs' daemons and exec jobs.
 */
#ifndef GPUSHARE_RUNDIR_H
#define GPUSHARE_RUNDIR_H

#include <stddef.h>

#include "gpushare/child.h"

/* Create a private run directory <user dir>/<prefix>-XXXXXX ("bench",
 * "sweep") holding an `owner` file that names this process. With `fd`
 * (may be NULL: no keeper) its keeper (below) is started before the
 * directory is made, so that no moment exists when
 * the directory is there and a kill would leave it to the next run's
 * reap; *fd is -1 when the keeper could not start. */
int gpushare_rundir_create(const char *prefix, char *out, size_t len, int *fd, struct gpushare_child *ch);

/* Remove a run directory and everything in it. */
void gpushare_rundir_remove(const char *dir);

/* Stop any MPS daemon under the run directory `dir` (forced) and remove
 * it: what a run's keeper does when its run was killed. */
void gpushare_rundir_cleanup(const char *dir);

/* A run's keeper (started by gpushare_rundir_create(); a keeper of
 * lib/sys/loop.h, with its link and its owner watched): a process that outlives a killed gpushare (SIGKILL
 * included) for the moment it takes to stop the MPS daemon under `dir` and
 * remove it. It holds one end of a socket pair whose other end, *fd, only
 * gpushare holds (close-on-exec); gpushare_rundir_keeper_finish() tells it
 * the run ended as it should ('D'), and it ends. Once gpushare has ended
 * without 'D' (its pidfd; the end of the socket alone waits up to 10 s for
 * it) it cleans up as gpushare_rundir_cleanup(). *fd is -1 and the keeper
 * absent when it could not start (the next run's gpushare_rundir_reap() is
 * then the only clean-up after a kill). */
void gpushare_rundir_keeper_finish(int *fd, struct gpushare_child *ch);

/* Clean up after killed runs: for every bench-* or sweep-* run directory
 * whose owner process is gone, stop any MPS daemon under it (forced) and
 * remove it. *reaped (may be NULL) counts the directories removed. */
int gpushare_rundir_reap(size_t *reaped);

#endif
