/*
 * Internal to lib/sweep/: the state of one sweep run (sweep.c) that its
 * results file (sweep_results.c) reads and fills, and the bench
 * configuration of a cell (sweep_config.c).
 */
#ifndef GPUSHARE_SWEEP_INTERNAL_H
#define GPUSHARE_SWEEP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpushare/bench.h"
#include "gpushare/metrics.h"
#include "gpushare/sweep.h"
#include "run_ctx.h"

/* The samples of one cell, per round (repeat). */
struct cell_state {
	bool *recorded;          /* [round]: a run with status ok or partial is in the file (racing: any status) */
	double *val;             /* [round]: that run's sample (as in tput); NAN when it left none */
	double *tput;            /* items/s of ok runs */
	size_t n_tput;
};

struct sweep_ctx {
	const struct gpushare_sweep_config *s;
	struct gpushare_sweep_summary *sum;
	struct gpushare_sweep_cell *cells;
	size_t n_cells;
	struct cell_state *st;
	size_t *order;                 /* the cells in the order a round runs them (sweep_run_order()) */
	int rounds;                    /* max repeats per cell */
	int fd;                        /* results file, O_APPEND */
	int lock_fd;                   /* the results directory's lock, -1 none */
	const char *path;
	struct gpushare_bench_config *c;   /* the run's configuration (large, on the heap) */
	uint64_t t0_ns;
	double run_seconds_sum;        /* of the runs done, for the ETA */
	unsigned planned;
	int cuda_version;
	bool nvml;
	struct gpushare_run_ctx *run;  /* the sweep's run directory and MPS daemon, for every mps cell:
					* own_run, or the hold's (s->hold) */
	struct gpushare_run_ctx own_run;
	bool want_daemon;              /* racing: start it once a cell that still runs needs it */
	char visible[128];             /* the GPUs it serves */
	struct gpushare_metrics_bench *metrics;   /* --metrics-listen: one view for every run; NULL off */
	bool metrics_owned;            /* started here (not the caller's bench.metrics) */
	/* The run in progress, for progress callbacks. */
	const struct gpushare_sweep_cell *cur;
	int cur_repeat;
	unsigned runs_started;         /* by this invocation (GPUSHARE_TEST_INTERRUPT_AT) */
};

/* ---- the grid (sweep_config.c) ---- */

/* The bench configuration of a run of cell: the sweep's bench options with
 * the cell's shape, strategy, workers, batch, rate and thread percentage. */
void sweep_cell_config(const struct gpushare_sweep_config *s, const struct gpushare_sweep_cell *cell,
		       struct gpushare_bench_config *c);

/* ---- the results file (sweep_results.c) ---- */

/* Take the results directory's lock (x->lock_fd): GPUSHARE_E_DIR naming
 * the sweep that holds it. */
int sweep_lock_results(struct sweep_ctx *x);

/* Read what x->path records already into x->st (the first record of each
 * cell and repeat); without x->s->resume the file must be empty or absent,
 * and with it every recorded run of the grid must have been measured as
 * this sweep asks (GPUSHARE_E_INVAL naming the line and the field). */
int sweep_load_existing(struct sweep_ctx *x);

/* Open the results file for appending (x->fd), after a torn last line. */
int sweep_open_results(struct sweep_ctx *x);

/* Append one record and sync it. */
int sweep_append_line(struct sweep_ctx *x, const char *line);

/* Keep v as the sample of round r of a cell. */
int sweep_add_sample(struct cell_state *st, int r, double v);

#endif
