/*
 * The farm's keeper (lib/farm/farm_keeper.c): a process of its own, started
 * when a farm has set up its strategy, that outlives a killed gpushare just
 * long enough to leave nothing behind and lose no finished job.
 *
 * Every job runs under a mirror (GPUSHARE_CHILD_MIRROR in lib/sys/child.c):
 * a process that shares gpushare's memory but outlives it, leads the job's
 * process group, tells the keeper when the job starts and how it ended, and
 * ends the same way. gpushare tells the keeper which attempts it has written
 * to the journal. When gpushare dies (any signal, SIGKILL too) the keeper
 * kills every job process of every running group (the mirrors excepted, so
 * that a job that had already ended is still reported), waits for the
 * mirrors, writes the journal records of the attempts that ended but were
 * not recorded yet (ok or failed: a finished job never runs again on
 * resume), stops the run directory's MPS daemon and removes the directory.
 * It holds the journal's lock (inherited) until then, so a --resume waits
 * for it.
 */
#ifndef GPUSHARE_FARM_KEEPER_H
#define GPUSHARE_FARM_KEEPER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "farm_journal.h"

struct farm;
struct slot;

/* Start the keeper (after the strategy, before any thread): an error when
 * it cannot be started, since the jobs then would not die with gpushare. */
int farm_keeper_start(struct farm *f);
/* The n attempts just written to the journal. */
void farm_keeper_recorded(struct farm *f, const struct farm_attempt *a, size_t n);
/* The farm ends normally: the keeper leaves without touching anything. */
void farm_keeper_finish(struct farm *f);
/* The mirror callbacks of a job's child (arg: its struct slot). */
void farm_keeper_job_started(void *slot);
void farm_keeper_job_ended(void *slot, int wstatus);

#endif
