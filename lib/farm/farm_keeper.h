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

struct farm_gpu_id;
struct slot;

/*
 * The keeper link: what the keeper needs of a farm, filled by the farm
 * (farm.c) before farm_keeper_start(), and the keeper's own descriptors.
 * The keeper is a fork: its copy of what these point to is the farm's at
 * that moment (the slots' array, whose contents the mirrors' messages
 * then give).
 */
struct farm_keeper_link {
	/* ---- filled by the farm ---- */
	struct farm_journal *journal;      /* its descriptor kept; the missing attempts written there */
	const struct slot *slots;          /* n_slots, indexed as the messages name them */
	size_t n_slots;
	const struct farm_gpu_id *gpu_ids; /* the GPU of each slot's gpu index */
	bool placed;                       /* jobs are pinned by UUID: records name it */
	const char *rundir;                /* the run directory to remove, or NULL (not the farm's) */

	/* ---- the keeper's (farm_keeper.c): its pipe, pid and pidfd; -1/0 none ---- */
	int fd;
	pid_t pid;
	int pidfd;
};

void farm_keeper_init(struct farm_keeper_link *k);
/* Start the keeper (after the strategy, before any thread): an error when
 * it cannot be started, since the jobs then would not die with gpushare. */
int farm_keeper_start(struct farm_keeper_link *k);
/* The keeper runs: each job then runs under a mirror (farm_keeper_job_*). */
bool farm_keeper_linked(const struct farm_keeper_link *k);
/* The n attempts just written to the journal. */
void farm_keeper_recorded(struct farm_keeper_link *k, const struct farm_attempt *a, size_t n);
/* The farm ends normally: the keeper leaves without touching anything. */
void farm_keeper_finish(struct farm_keeper_link *k);
/* The mirror callbacks of a job's child (arg: its struct slot). */
void farm_keeper_job_started(void *slot);
void farm_keeper_job_ended(void *slot, int wstatus);

#endif
