/*
 * Internal to lib/bench/: the state of one `gpushare bench` run that its
 * strategies (bench_run.c) and their worker sessions (bench_workers.c)
 * share.
 */
#ifndef GPUSHARE_BENCH_RUN_H
#define GPUSHARE_BENCH_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpushare/bench.h"
#include "gpushare/buf.h"
#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"
#include "run_ctx.h"

/* State shared by all strategies of one run. */
struct bench_ctx {
	const struct gpushare_bench_config *c;
	struct gpushare_bench_report *r;
	char worker[GPUSHARE_PATH_MAX];
	char command[GPUSHARE_PATH_MAX];     /* command mode: the resolved program */
	int preload_ctl;                     /* --preload: its fork server (bench_preload.h); -1 none */
	bool nvml;                           /* telemetry available */
	unsigned gpu_index;
	struct gpushare_system_info sys;
	bool have_sys;
	struct gpushare_run_ctx run;         /* run directory, strategy context (visible: the GPU(s)) */
	struct gpushare_metrics_bench *metrics; /* --metrics-listen; NULL off */
	int peak_step;                       /* --find-peak: the step running (1-based), 0 none */
	double mix_tpct[GPUSHARE_BENCH_MAX_WORKERS]; /* a mix's split: each worker's percentage */
};

/* One worker process to start. */
struct proc_spec {
	int first_slot;
	int threads;                         /* 0: no --threads */
	long batch;
	struct gpushare_strv env;            /* the strategy's environment changes */
};

/* Run procs over a fresh region of n_slots slots; slot i fills
 * res->workers[offset + i]. strategy: the result's; run of n_runs: which
 * worker's turn under sequential (0 of 1 otherwise). The workers are
 * started, held at the start barrier until every one is ready (or one
 * failed, or c->start_timeout_ns passed), run through warm-up and the
 * window, and stopped; every child is reaped before it returns. A failed
 * worker is named in res->failure; GPUSHARE_E_INTERRUPTED after
 * gpushare_bench_interrupt(). */
int bench_session_run(struct bench_ctx *x, int strategy, int run, int n_runs, const struct proc_spec *procs,
		      size_t n_procs, uint32_t n_slots, struct gpushare_bench_result *res, size_t offset);

#endif
