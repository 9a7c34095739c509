/*
 * The sharing strategies: their identity, names and parser, in one home
 * (lib/strategy/strategy.c). What each does is docs/bench.md's
 * "Strategies"; how a run prepares one is the library's own business.
 */
#ifndef GPUSHARE_STRATEGY_H
#define GPUSHARE_STRATEGY_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gpushare_strategy {
	GPUSHARE_STRATEGY_NONE = -1,      /* none chosen (also: a name that is none) */
	GPUSHARE_STRATEGY_TIMESLICE = 0,  /* N plain processes, the driver time-slices */
	GPUSHARE_STRATEGY_MPS,            /* N clients of one MPS daemon */
	GPUSHARE_STRATEGY_MPS_SPLIT,      /* MPS with per-client SM share / memory limit */
	GPUSHARE_STRATEGY_MIG,            /* one (or K) process per MIG instance */
	GPUSHARE_STRATEGY_SEQUENTIAL,     /* the N workers one after another */
	GPUSHARE_STRATEGY_STREAMS,        /* one process, N host threads (N slots) */
	GPUSHARE_STRATEGY_COUNT,
	GPUSHARE_STRATEGY_CEILING = 100,  /* one process with batch x N (for E_N) */
};

/* "timeslice", "mps", "mps-split", "mig", "sequential", "streams", "ceiling". */
const char *gpushare_strategy_name(enum gpushare_strategy strategy);

/* Parse "timeslice,mps": fills out[] (at most GPUSHARE_STRATEGY_COUNT
 * entries, no duplicates). GPUSHARE_E_INVAL naming the bad item. */
int gpushare_strategy_parse_list(const char *s, enum gpushare_strategy *out, size_t *n);

/* What a strategy can do and is, from the strategy table (lib/strategy/);
 * false for an unknown strategy. Ask these instead of naming strategies.
 *  runs_commands  a command can be a worker (all but streams: its workers
 *                 are threads of one process)
 *  runs_jobs      farm jobs and exec ranks may run under it (timeslice, mps,
 *                 mps-split)
 *  uses_mps       its workers are clients of an MPS daemon (mps, mps-split)
 *  is_sharing     processes share a GPU (timeslice, mps, mps-split, mig);
 *                 sequential, streams and the ceiling are references
 *  client_share   each client gets its own share of the SMs, memory limit
 *                 and priority (mps-split)
 *  needs_driver   cannot run, nor count its workers, without the driver (mig)
 *  partitions     its workers run on partitions of a GPU (mig's instances):
 *                 a layout of the GPU, not a share of one; the partitions
 *                 set the default worker count */
bool gpushare_strategy_runs_commands(enum gpushare_strategy strategy);
bool gpushare_strategy_runs_jobs(enum gpushare_strategy strategy);
bool gpushare_strategy_uses_mps(enum gpushare_strategy strategy);
bool gpushare_strategy_is_sharing(enum gpushare_strategy strategy);
bool gpushare_strategy_client_share(enum gpushare_strategy strategy);
bool gpushare_strategy_needs_driver(enum gpushare_strategy strategy);
bool gpushare_strategy_partitions(enum gpushare_strategy strategy);

#ifdef __cplusplus
}
#endif
#endif
