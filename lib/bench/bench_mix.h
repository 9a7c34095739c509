/*
 * A mix of workloads (bench_mix.c): the checks of a mix's configuration and
 * its per-member figures, for bench.c.
 */
#ifndef GPUSHARE_BENCH_MIX_H
#define GPUSHARE_BENCH_MIX_H

#include "gpushare/bench.h"

/* What a mix rules out (a command, --ceiling, open loop, streams, workers
 * that do not divide) and each member's options with the batch.
 * GPUSHARE_E_INVAL with a detail; OK for a run of one workload. */
int bench_mix_check(const struct gpushare_bench_config *c);

/* The members' figures and the score, from the workers' (res->n_mix >= 2). */
void bench_mix_compute(struct gpushare_bench_result *res);

#endif
