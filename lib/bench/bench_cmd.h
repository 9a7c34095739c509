/*
 * Command mode of the benchmark launcher (internal to libgpushare): the
 * relay that bench_workers.c forks in place of gpushare-worker when the
 * configuration names a command. See lib/bench/bench_cmd.c.
 */
#ifndef GPUSHARE_BENCH_CMD_H
#define GPUSHARE_BENCH_CMD_H

#include <stdint.h>

#include "gpushare/bench.h"
#include "gpushare/region.h"

struct gpushare_cmd_spec {
	const struct gpushare_bench_config *c;
	const char *path;                  /* the command, resolved (gpushare_bench_command_check) */
	struct gpushare_region_header *reg;/* mapped by the parent, shared across fork */
	uint32_t slot;
	int worker;                        /* GPUSHARE_WORKER: the worker's index in the result */
	int workers;                       /* GPUSHARE_WORKERS */
	long batch;                        /* GPUSHARE_BATCH */
	char *const *env;                  /* the strategy's NAME=VALUE / NAME entries, NULL-terminated */
	int preload_ctl;                   /* --preload: the fork server's socket; -1 none */
};

/* Resolve c->command[0] into path (PATH search when it has no '/'). */
int gpushare_cmd_resolve(const struct gpushare_bench_config *c, char *path, size_t len);

/* Run in the child that bench_workers.c forked for one worker (after its
 * PR_SET_PDEATHSIG and signal setup): starts the command, relays its
 * reports (or times its jobs) into the slot, follows the region's phases
 * like gpushare-worker does, and exits with a gpushare_worker_exit status.
 * Never returns. */
_Noreturn void gpushare_cmd_relay(const struct gpushare_cmd_spec *s);

#endif
