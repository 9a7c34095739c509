/*
 * DIR/running.json, the farm's live file (lib/farm/farm_live.c): the jobs
 * running now, written about once a second by a running farm (a temporary
 * file renamed over it, so a reader never sees half of it) and removed at
 * its end, so that `farm status` can tell a running farm, and one that was
 * killed, from a stopped one. Best effort: the journal is the record; a
 * failure here changes nothing else.
 */
#ifndef GPUSHARE_FARM_LIVE_H
#define GPUSHARE_FARM_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpushare/farm.h"

#define FARM_LIVE_NAME "running.json"

/* The farm as a whole, beside its running jobs. */
struct farm_live_head {
	const char *host;
	double started_unix_s;
	unsigned slots;                    /* per GPU, now */
	uint64_t queued;
	unsigned running;
};

/* A job running now. */
struct farm_live_job {
	uint64_t job;                      /* index (the file says FARM_JOB_NUMBER) */
	unsigned attempt;
	int gpu;                           /* NVML index, -1 unplaced */
	unsigned slot;                     /* on its GPU */
	double start_unix_s;
};

/* Write DIR/running.json: h and the n jobs of run. */
void farm_live_write(const char *dir, const struct farm_live_head *h, const struct farm_live_job *run, size_t n);
void farm_live_remove(const char *dir);
/* DIR/running.json parsed (at most 16 MiB read, no link followed); NULL
 * when there is none or it is not JSON. */
struct cJSON;
struct cJSON *farm_live_parse(const char *dir);
/* DIR/running.json as the public summary has it (l->stale: its farm, on
 * this host, is dead); false when there is none. */
bool farm_live_read(const char *dir, struct gpushare_farm_live *l);

#endif
