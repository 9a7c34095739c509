/*
 * The farm's slots (lib/farm/farm_engine.h holds them, farm_dispatch.c
 * fills and empties them): each chosen GPU, and K slots on each, one job
 * per slot at a time. A slot keeps its job's child and what the record of
 * its attempt needs. The fault part (farm_fault.c) holds GPUs and reads the
 * slots of a faulted GPU; the keeper (farm_keeper.c) reads them too.
 */
#ifndef GPUSHARE_FARM_SLOT_H
#define GPUSHARE_FARM_SLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpushare/child.h"
#include "gpushare/util.h"
#include "farm_journal.h"

struct farm_gpu {
	struct farm_gpu_id id;
	uint64_t free_bytes, total_bytes;  /* at the start; 0 unknown */
	unsigned mem_cap;                  /* jobs that fit at once (UINT_MAX: no limit) */
	unsigned running;
	uint64_t done, failed, attempts;
	double busy_start_unix_s;          /* when its current busy period began */
	uint8_t hold;                      /* FARM_HOLD_*: no job is placed there (farm_fault.c) */
	char prolog_pipe[GPUSHARE_PATH_MAX]; /* the daemon `gpushare slurm prolog` runs for it; "" none */
};

struct farm_tail;
enum { FARM_HOLD_NONE, FARM_HOLD_FAULT, FARM_HOLD_RESERVED, FARM_HOLD_ISOLATED };

struct slot {
	struct gpushare_child ch;
	unsigned index;                    /* in farm.slots */
	bool busy;
	size_t gpu;
	unsigned k;                        /* slot number on its GPU */
	size_t job;
	uint64_t hash;                     /* the job's hash */
	unsigned attempt;
	unsigned attempts;                 /* attempts that count against --retries, this one not yet */
	uint64_t start_ns, deadline_ns, kill_ns;
	double start_unix_s;
	bool timed_out, stopped;
	/* faults under MPS (farm_fault.c): runs alone on its GPU; a culprit's
	 * retry; the server log names it; recorded as a fault's culprit */
	bool isolated, culprit_before, fault_named, fault_culprit, isolate_next;
	char out_rel[64], err_rel[64];
	/* The same under the farm directory, when the job's child creates them
	 * (every farm but one that tails them, --tag): off the farm's thread. */
	char out_path[GPUSHARE_PATH_MAX + 64], err_path[GPUSHARE_PATH_MAX + 64];
	char **argv;                       /* from the cursor, owned */
	struct farm_tail *tail;            /* --tag: reading its out and err files (farm_stream.c) */
};

#endif
