/*
 * Run directories: private per-run state under the user directory
 * (rundir.c), and the reaping of killed runs' daemons and exec jobs.
 */
#ifndef GPUSHARE_RUNDIR_H
#define GPUSHARE_RUNDIR_H

#include <stddef.h>

/* Create a private run directory <user dir>/<prefix>-XXXXXX ("bench",
 * "sweep") holding an `owner` file that names this process. */
int gpushare_rundir_create(const char *prefix, char *out, size_t len);

/* Remove a run directory and everything in it. */
void gpushare_rundir_remove(const char *dir);

/* Stop any MPS daemon under the run directory `dir` (forced) and remove
 * it: what a run's keeper does when its run was killed. */
void gpushare_rundir_cleanup(const char *dir);

/* Clean up after killed runs: for every bench-* or sweep-* run directory
 * whose owner process is gone, stop any MPS daemon under it (forced) and
 * remove it. *reaped (may be NULL) counts the directories removed. */
int gpushare_rundir_reap(size_t *reaped);

#endif
