/*
 * One run context: what every engine that runs workers (bench, sweep,
 * farm, exec) sets up and takes down the same way (lib/run/run_ctx.c).
 *
 *   init   what the strategies see (the GPUs for a daemon, an existing
 *          daemon to use), no I/O;
 *   check  a strategy's check, before anything is created;
 *   open   the directory: a new private run directory <user dir>/<prefix>-
 *          XXXXXX with an empty no-mps directory (killed runs are reaped
 *          first; removed at close), or the caller's directory (exec's job
 *          directory: kept at close, its no-mps directory made by start);
 *   start  a strategy's prepare (the MPS session of mps and mps-split); in
 *          the caller's directory what it starts is the caller's to stop;
 *   join   or, instead, the daemon of the caller's directory, run by others;
 *   env    the environment of worker i;
 *   stop   the strategy's teardown (a run of several strategies starts and
 *          stops each in turn);
 *   close  stop, and the removal of a run directory made by open.
 */
#ifndef GPUSHARE_RUN_CTX_H
#define GPUSHARE_RUN_CTX_H

#include <stdbool.h>
#include <stddef.h>

#include "gpushare/buf.h"
#include "gpushare/child.h"
#include "gpu_select.h"
#include "gpushare/util.h"
#include "strategy.h"

#define GPUSHARE_RUN_VISIBLE_MAX (64 * 100)   /* UUIDs of up to 64 GPUs, comma-separated */

struct gpushare_run_opts {
	const char *prefix;        /* a new run directory "<prefix>-XXXXXX" ("bench", "farm", "sweep") */
	const char *dir;           /* or the caller's directory, used as it is (exec's job directory) */
	bool dry_run;              /* with dir: create nothing in it */
	const char *visible;       /* GPUs for a daemon started here (UUIDs when known); NULL or "" all */
	const char *mps_pipe_dir;  /* a daemon to use and never stop; NULL or "" start one */
	bool keeper;               /* with prefix: a keeper cleans the directory up after a kill
				    * (lib/run/rundir.h; the farm has its own) */
	bool account;              /* the processes started load the accounting library */
};

struct gpushare_run_ctx {
	char dir[GPUSHARE_PATH_MAX];          /* the run's directory; "" before open */
	char no_mps_dir[GPUSHARE_PATH_MAX];   /* an empty pipe directory: no daemon answers there */
	char visible[GPUSHARE_RUN_VISIBLE_MAX];
	const char *prefix;
	bool own_dir;                         /* created by open, removed by close */
	bool want_keeper;
	int keeper_fd;                        /* our end of the keeper's socket; -1 none */
	struct gpushare_child keeper;
	bool dry_run;
	bool account;                         /* CUDA_INJECTION64_PATH in the workers' environment */
	const struct gpushare_strategy_ops *st; /* the strategy started or joined; NULL none */
	bool started;                         /* its teardown is due (at stop or close) */
	/* What the strategies see; the engine may fill the per-worker limits,
	 * sys, gpu_index and workers after init. */
	struct gpushare_strategy_ctx sx;
};

void gpushare_run_ctx_init(struct gpushare_run_ctx *r, const struct gpushare_run_opts *o);

/* The GPUs for a daemon: their UUIDs, comma-separated, in this order. */
void gpushare_run_ctx_set_gpus(struct gpushare_run_ctx *r, const struct gpushare_gpu_ref *gpus, size_t n);

/* The node's GPUs as NVML lists them, for gpushare_gpu_select(): *inv (n
 * entries and one spare, to free) from a query. */
int gpushare_run_gpu_inventory(const struct gpushare_system_info *sys, struct gpushare_gpu_ref **inv, size_t *n);

/* The strategy with this id (an error when there is none). */
int gpushare_run_strategy(int strategy, const struct gpushare_strategy_ops **st);

int gpushare_run_ctx_check(struct gpushare_run_ctx *r, int strategy);
int gpushare_run_ctx_open(struct gpushare_run_ctx *r);
int gpushare_run_ctx_start(struct gpushare_run_ctx *r, int strategy);
/* The daemon of the caller's directory (<dir>/mps/{pipe,log}), started by
 * another rank of the job: `answers` as gpushare_mps_session_join(). */
int gpushare_run_ctx_join(struct gpushare_run_ctx *r, int strategy, bool answers);
/* Or a daemon that already serves the GPU, at pipe_dir (log_dir NULL or ""
 * none known), run and stopped by others (a Slurm prolog, the site). */
int gpushare_run_ctx_join_at(struct gpushare_run_ctx *r, int strategy, const char *pipe_dir, const char *log_dir,
			     bool answers);
int gpushare_run_ctx_env(struct gpushare_run_ctx *r, int i, const char *device, struct gpushare_strv *env,
			 struct gpushare_placement *p);
/* rc: the run's result so far; its detail survives (as teardown). */
int gpushare_run_ctx_stop(struct gpushare_run_ctx *r, int rc);
int gpushare_run_ctx_close(struct gpushare_run_ctx *r, int rc);

#endif
