/*
 * The calibration of K, the slots per GPU (lib/farm/farm_calib.c), for a
 * farm without --slots: the first jobs of the queue run in rounds at K = 1,
 * 2, 4, ... (2 K jobs per GPU each, the slots drained between rounds so
 * that a round's rate is its own); the farm keeps the smallest K whose
 * jobs/s no larger K beat by CALIBRATION_GAIN or more. A round ends early
 * when the queue runs dry; K never passes the largest allowed (--max-slots,
 * Slurm's shards) nor what the GPUs' memory admits (--mem-per-job).
 *
 * It only counts: the dispatch tells it when jobs start and end, asks
 * whether it may start another, and asks for the next K when a round is
 * drained. Times are in nanoseconds of the farm's monotonic clock.
 */
#ifndef GPUSHARE_FARM_CALIB_H
#define GPUSHARE_FARM_CALIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpushare/farm.h"

#define CALIBRATION_GAIN 1.05             /* a larger K must beat the best by 5 % */

struct farm_calib {
	bool on;                           /* calibrating now */
	size_t n_gpus;
	unsigned max_k;                    /* the largest K it may try */
	unsigned min_mem_cap;              /* the fewest jobs a GPU's memory admits at once */
	uint64_t quota, started, ended;    /* this round's jobs: to start, started, ended */
	uint64_t ok;                       /* this round's jobs that ended ok: the only ones rated */
	uint64_t t0_ns, last_end_ns;       /* this round's first start, last ok end */
	double best_rate;                  /* jobs/s of best_k */
	unsigned best_k;                   /* 0 none yet */
};

/* Start calibrating at K = k (the first round). */
void farm_calib_begin(struct farm_calib *cb, unsigned k, unsigned max_k, size_t n_gpus, unsigned min_mem_cap);
/* This round has started all its jobs: no more until it is drained. */
bool farm_calib_full(const struct farm_calib *cb);
/* A job of the round started, or ended, ok or not (no-ops once
 * calibrated). A round's rate counts only its jobs that ended ok: a job
 * that fails or is refused at once says nothing of K. */
void farm_calib_started(struct farm_calib *cb, uint64_t start_ns);
void farm_calib_ended(struct farm_calib *cb, uint64_t end_ns, bool ok);
/* The round is over: all started and drained, or the queue ran dry. */
bool farm_calib_due(const struct farm_calib *cb, unsigned running, uint64_t queued);
/* After a drained round at K = k: its rate into r->calibration, and the K
 * to run at from now on (2 k for another round, or the best K when it
 * settles: calibrating ends and r->slots says it). A round with no job
 * ended ok settles it at the best K so far; with none at all the K is
 * the first round's and r->calibration_failed says it was not measured. */
unsigned farm_calib_step(struct farm_calib *cb, unsigned k, struct gpushare_farm_result *r);
/* The farm ends while calibrating (a stop, an empty queue): the round so
 * far counts; the K to report (the best one found, else k). */
unsigned farm_calib_finish(struct farm_calib *cb, unsigned k, struct gpushare_farm_result *r);

#endif
