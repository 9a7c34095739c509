/*
 * A mix of workloads (bench_mix.c): the checks of a mix's configuration and
 * its per-member figures, for bench.c; the workers' totals (the aggregate,
 * each member and each GPU of --gpus are computed from them).
 */
#ifndef GPUSHARE_BENCH_MIX_H
#define GPUSHARE_BENCH_MIX_H

#include "gpushare/bench.h"

/* What a mix rules out (a command, --ceiling, open loop, streams, workers
 * that do not divide) and each member's options with the batch.
 * GPUSHARE_E_INVAL with a detail; OK for a run of one workload. */
int bench_mix_check(const struct gpushare_bench_config *c);

/* The totals of workers [first, last) of res, their histograms
 * merged into *hist (emptied first): what the aggregate and each workload of
 * a mix are computed from. */
struct bench_span {
	uint64_t requests, items;
	double window_seconds;          /* sequential: the sum of their windows; else the longest */
	double fairness;                /* min/max worker throughput; 0 none */
	double thread_percentage_set;   /* mps-split: their percentages added up; -1 none */
};

void bench_span_sum(const struct gpushare_bench_result *res, size_t first, size_t last, struct bench_span *s,
		    struct gpushare_hist *hist);

/* --gpus: the workers pinned to GPU g (by the UUID they were given) and
 * their summed requests/s and items/s, for the printers (the JSON's "gpus",
 * the table's per-GPU lines). */
void bench_gpu_sum(const struct gpushare_bench_report *r, const struct gpushare_bench_result *res, size_t g,
		   size_t *workers, double *rps, double *ips);

/* The members' figures and the score, from the workers' (res->n_mix >= 2). */
void bench_mix_compute(struct gpushare_bench_result *res);

#endif
