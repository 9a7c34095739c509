/*
 * What the farm watches while jobs run, beside their ends
 * (lib/farm/farm_stream.c): --tag's reading of each running attempt's
 * output files, line by line, to the caller's output callback; and
 * --timeout Nx, the deadline taken from the durations of this run's ok
 * attempts. Neither knows the farm: each is given the config and its own
 * state.
 */
#ifndef GPUSHARE_FARM_STREAM_H
#define GPUSHARE_FARM_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "gpushare/farm.h"
#include "gpushare/hist.h"

/* ---- --tag ---- */

#define TAIL_NS (50 * NS_PER_MS)          /* read the output files this often */

struct farm_tail;

/* With --tag (c->output): open the reading of an attempt's out and err
 * files (dir/out_rel, dir/err_rel; they exist already) into *t, its lines
 * passed as job index job's attempt. Without: nothing (*t stays NULL). */
int farm_tail_open(const struct gpushare_farm_config *c, const char *dir, const char *out_rel, const char *err_rel,
		   uint64_t job, unsigned attempt, struct farm_tail **t);
/* Pass the lines the files have gained; last (the job ended): the rest
 * too, and close (*t NULL). Nothing when *t is NULL. */
void farm_tail_read(const struct gpushare_farm_config *c, struct farm_tail **t, bool last);

/* ---- --timeout Nx ---- */

struct farm_timeout {
	struct gpushare_hist *ok_hist;     /* the ok attempts' durations (microseconds); NULL none yet */
	uint64_t rel_ns;                   /* the deadline they give; 0 none yet */
};

/* The deadline of an attempt that starts at start_ns; 0 none. */
uint64_t farm_deadline(const struct farm_timeout *t, const struct gpushare_farm_config *c, uint64_t start_ns);
/* An attempt ended ok after ns: 1 when the deadline changed (the running
 * attempts get the new one too, start + t->rel_ns), 0 when not, < 0 out of
 * memory. */
int farm_ok_duration(struct farm_timeout *t, const struct gpushare_farm_config *c, uint64_t ns);
void farm_timeout_release(struct farm_timeout *t);

#endif
