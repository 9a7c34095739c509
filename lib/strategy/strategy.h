/*
 * Sharing strategies behind one table. Each strategy says how its workers
 * are laid out (N processes at once, one at a time, or N threads of one
 * process), what it needs before anything runs (check), what it sets up for
 * the run (prepare: a private MPS daemon), the environment of worker i
 * (worker_env) and how it cleans up (teardown), and what it can do: run a
 * command as a worker, run farm jobs and exec ranks, serve MPS clients.
 * Engines that run workers (bench, and through it sweep; farm; exec) use
 * only this table, through their run context (lib/run/run_ctx.h), so a
 * strategy behaves the same everywhere.
 */
#ifndef GPUSHARE_LIB_STRATEGY_H
#define GPUSHARE_LIB_STRATEGY_H

#include <stdbool.h>
#include <stdint.h>

#include "gpushare/buf.h"
#include "gpushare/gpu.h"
#include "gpushare/strategy.h"
#include "mps_session.h"

/* What a strategy works with; filled by the engine, opened by prepare. */
struct gpushare_strategy_ctx {
	const char *run_dir;            /* the run's private directory */
	const char *no_mps_dir;         /* an empty private directory: no daemon answers there */
	const char *visible;            /* the GPUs of the run for the daemon (UUIDs when known); "" all */
	const char *mps_pipe_dir;       /* a daemon to use and never stop; "" start one */
	const struct gpushare_system_info *sys; /* NULL without the driver */
	unsigned gpu_index;             /* mig: the GPU whose instances serve the workers */
	int workers;                    /* clients that share one GPU (mps-split's default share) */
	/* The job's cap on each GPU's active threads (Slurm's gres/mps share,
	 * lib/slurm): 0 none. mps gives every client this percentage;
	 * mps-split's default share is cap / workers instead of 100 / workers. */
	double thread_cap;
	/* mps-split limits: n == 0 none (thread share: 100 / workers),
	 * n == 1 one value for all, else one per worker. */
	const double *thread_percentage;
	int n_thread_percentage;
	const uint64_t *mem_limit_bytes;
	int n_mem_limit;
	const int *priority;
	int n_priority;
	/* Opened by the mps strategies' prepare, closed by their teardown. */
	struct gpushare_mps_session mps;
};

/* What worker i got, for the record. */
struct gpushare_placement {
	char visible[128];              /* CUDA_VISIBLE_DEVICES given, "" none */
	double thread_percentage;       /* 0: not set */
	uint64_t mem_limit_bytes;       /* 0: not set */
	int priority;                   /* -1: not set */
};

enum gpushare_strategy_layout {
	GPUSHARE_LAYOUT_CONCURRENT,     /* N processes at once */
	GPUSHARE_LAYOUT_ONE_AT_A_TIME,  /* N processes, each alone */
	GPUSHARE_LAYOUT_THREADS,        /* one process, N threads */
};

struct gpushare_strategy_ops {
	enum gpushare_strategy id;
	const char *name;
	enum gpushare_strategy_layout layout;
	/* What it can do and is (gpushare/strategy.h has the same as functions
	 * for callers of the public API). */
	bool runs_commands;             /* a command can be a worker (not for threads) */
	bool uses_mps;                  /* its workers are clients of an MPS daemon */
	bool runs_jobs;                 /* farm jobs and exec ranks may run under it */
	bool sharing;                   /* processes share a GPU (else a reference) */
	bool client_share;              /* each client gets its own SM share, memory limit, priority */
	bool needs_driver;              /* cannot run (nor count its workers) without NVML */
	bool partitions;                /* workers run on partitions of a GPU (MIG instances): a
					 * layout of the GPU, not a share of one */
	/* Before any strategy of a run starts: is what it needs there? An error
	 * with a detail that says what is missing and what to do. */
	int (*check)(const struct gpushare_strategy_ctx *x);
	/* How many workers it runs when `asked` were asked for (`given`: on the
	 * command line); mig derives it from the instances. */
	int (*workers)(const struct gpushare_strategy_ctx *x, int asked, bool given, int *n);
	int (*prepare)(struct gpushare_strategy_ctx *x);
	/* Environment changes for worker i of n, placed on `device` (a GPU UUID
	 * or index; "" the run's GPUs): "NAME=VALUE" sets, "NAME" unsets. */
	int (*worker_env)(const struct gpushare_strategy_ctx *x, int i, const char *device, struct gpushare_strv *env,
			  struct gpushare_placement *p);
	/* Undo prepare; rc is the run's result so far (its detail survives). */
	int (*teardown)(struct gpushare_strategy_ctx *x, int rc);
};

/* The strategy with this id (also GPUSHARE_STRATEGY_CEILING); NULL if none. */
const struct gpushare_strategy_ops *gpushare_strategy_get(enum gpushare_strategy id);

/* The share a worker of st is promised for accounting (docs/accounting.md):
 * 1/workers where that many processes share a GPU with no SM limit of
 * their own, else -1 (an MPS limit the accounting library reads itself, a
 * partition, a reference, or one worker at a time). */
double gpushare_strategy_promise(const struct gpushare_strategy_ops *st, int workers,
				 const struct gpushare_placement *p);

/* Refuse plain CUDA processes while a daemon answers where they look by
 * default (CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps). */
int gpushare_strategy_check_no_daemon(void);

#endif
