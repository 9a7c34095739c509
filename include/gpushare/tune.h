/*
 * gpushare tune: an adaptive search for the best configuration of one
 * workload (strategy x workers per GPU x batch), run by the sweep engine
 * (gpushare/sweep.h) as a race: every candidate gets short probes, two
 * runs at first, interleaved; after each round the candidates whose
 * throughput (or, under --find-peak, peak rate within the bound) is
 * significantly below the leader's by the report's verdict (Welch's t test
 * on logs, gpushare/stats.h) are dropped, and only the candidates still
 * open run again, up to max_repeats rounds or the budget. The runs are
 * recorded in a results file like a sweep's (readable by the report,
 * resumable: the same decisions follow from the same runs).
 */
#ifndef GPUSHARE_TUNE_H
#define GPUSHARE_TUNE_H

#include <stdbool.h>
#include <stddef.h>

#include "gpushare/stats.h"
#include "gpushare/sweep.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSHARE_TUNE_MAX_CANDIDATES 512

/* One configuration tried. */
struct gpushare_tune_candidate {
	struct gpushare_sweep_cell cell;
	struct gpushare_ci ci;            /* of its samples (items/s, or peak rates) */
	size_t runs;                      /* samples */
	bool active;                      /* still in the race at the end */
	int dropped_round;                /* 0-based round after which it was dropped; -1 not */
	int dropped_by;                   /* the leader it lost to, index; -1 */
	bool nothing;                     /* dropped: no ok run, or none finished an item
					   * (a peak search: none met the bound) */
	struct gpushare_comparison at_drop;   /* it against that leader when dropped */
	struct gpushare_comparison vs_best;   /* the pick against it at the end */
};

/* Events while the race goes on (one line each in the CLI). */
struct gpushare_tune_event {
	int round;                        /* 0-based */
	int candidate;                    /* dropped; -1: a round summary */
	int leader;                       /* the leader after this round, -1 none */
	size_t active;                    /* candidates still racing */
	const struct gpushare_tune_candidate *cands;
};
typedef void (*gpushare_tune_event_fn)(void *arg, const struct gpushare_tune_event *e);

struct gpushare_tune_config {
	struct gpushare_sweep_config sweep;   /* one shape; strategies, workers, batches;
					       * max_repeats bounds the rounds (default 6),
					       * budget_seconds, resume, bench window */
	int min_runs;                     /* runs every candidate gets before any drop (2) */
	char bench_extra[512];            /* options the pick's bench command also needs
					   * (" --request-us 200us --load open ..."), put
					   * before the workload; "" none */
	gpushare_tune_event_fn event;     /* may be NULL */
	void *event_arg;
};

struct gpushare_tune_result {
	struct gpushare_sweep_summary sum;
	struct gpushare_tune_candidate *cands;
	size_t n_cands;
	int best;                         /* the pick: the highest geometric mean of the
					   * candidates still racing; -1 none */
	int tied[GPUSHARE_TUNE_MAX_CANDIDATES];   /* still racing and a tie with the pick */
	size_t n_tied;
	int rounds;                       /* rounds run (the last may be partial) */
	char bench_command[2560];         /* gpushare bench ... to run the pick */
	char farm_command[256];           /* gpushare farm ... (mps, mps-split, timeslice); "" */
};

/* Defaults: the sweep's (gpushare_sweep_config_init), strategies
 * timeslice,mps,mps-split, workers 1,2,4, max_repeats 6, min_runs 2. */
int gpushare_tune_config_init(struct gpushare_tune_config *t);

/* Run the race, recording into results_path. res is always filled (release
 * it). Returns as gpushare_sweep_run(). */
int gpushare_tune_run(struct gpushare_tune_config *t, const char *results_path, struct gpushare_tune_result *res);
void gpushare_tune_result_release(struct gpushare_tune_result *res);

/* The result as a JSON document (caller frees *out). */
int gpushare_tune_json(const struct gpushare_tune_config *t, const struct gpushare_tune_result *res, char **out);

#ifdef __cplusplus
}
#endif
#endif
