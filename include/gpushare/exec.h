/*
 * One rank of an MPI or srun job under gpushare (`gpushare exec`,
 * docs/exec.md): where the rank stands on its node, the GPU it is bound to,
 * and the job's node-local state: one directory per node and job with a
 * lock beside it, holding one file per arrived rank (held locked by that
 * rank for its lifetime, so a dead rank never counts as alive), the node's
 * GPU list and the records of the job's MPS daemon and keeper.
 *
 * Under MPS exactly one daemon serves each node and job: the first rank to
 * take the job's lock starts it, the others find it recorded and alive. The
 * last rank to leave stops it: a rank leaving finds no other rank alive and
 * every rank of the node arrived (or, when some never arrived, after a
 * grace of GPUSHARE_EXEC_GRACE_MS). So does the job's keeper, a process
 * started by the first rank that outlives the ranks, when they were killed
 * before they could; it also kills what is left of a killed rank's
 * program. Should the keeper be killed too, the job is cleaned up by
 * gpushare_exec_reap(): by the next rank of any job that starts a daemon on
 * the node, and by every bench and sweep.
 */
#ifndef GPUSHARE_EXEC_H
#define GPUSHARE_EXEC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "gpushare/strategy.h"
#include "gpushare/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How long the last rank to leave waits for ranks that never arrived. */
#define GPUSHARE_EXEC_GRACE_MS 5000
/* Bound for taking the job's lock (the holder's work is bounded too). */
#define GPUSHARE_EXEC_LOCK_WAIT_MS 60000

struct gpushare_exec_opts {
	enum gpushare_strategy strategy; /* one that runs jobs: mps, mps-split or timeslice */
	const char *bind;               /* "round-robin" (NULL) or "block" */
	unsigned ranks_per_gpu;         /* 0: no check */
	const char *gpus;               /* NULL or "all", or a list of indices and UUIDs */
	double thread_percentage;       /* mps-split: 0 = 100 / ranks on the GPU */
	bool dry_run;                   /* compute and report; create and start nothing */
	bool account;                   /* ranks load the accounting library (docs/accounting.md) */
	/* A daemon that already answers there serves the ranks (never
	 * stopped by them); NULL: find one (docs/exec.md, "Joining a daemon"),
	 * else the job's own. */
	const char *mps_pipe_dir;
	/* dcgm-exporter's job mapping directory (include/gpushare/slurm.h):
	 * the job's id (SLURM_JOB_ID, else the job key) goes into the file of
	 * each rank's GPU, and out of every file when the last rank leaves;
	 * NULL none. */
	const char *hpc_job_mapping_dir;
	/* Non-zero ends the bounded waits early (a signal arrived). */
	const volatile sig_atomic_t *interrupted;
};

struct gpushare_exec_priv;

struct gpushare_exec {
	/* the rank */
	const char *launcher;           /* "openmpi", "mpich", "pmix", "slurm" */
	long rank, size;                /* in the job; GPUSHARE_UNKNOWN when unknown */
	long local_rank, local_size;    /* on this node */
	char job_key[128];
	char node[64];
	char job_dir[GPUSHARE_PATH_MAX];
	/* its GPU */
	unsigned gpu_index;             /* NVML index */
	char gpu_uuid[96];
	size_t n_gpus;                  /* usable GPUs */
	size_t gpus_used;
	unsigned ranks_on_gpu, max_ranks_per_gpu;
	double thread_percentage;       /* set for the app; 0 none */
	/* the job's MPS daemon on this node */
	bool uses_mps;
	char pipe_dir[GPUSHARE_PATH_MAX];
	pid_t daemon_pid;               /* 0 when none runs (dry run: yet) */
	bool daemon_started;            /* this rank started it */
	pid_t keeper_pid;               /* the job's keeper, when this rank started it */
	size_t reaped;                  /* dead jobs' directories cleaned up by this rank */
	/* where the daemon comes from: "job" (the job's own, started by its
	 * first rank), or a daemon joined and left running: "option"
	 * (--mps-pipe-dir), "prolog" (gpushare slurm prolog's for this GPU and
	 * user), "env" (CUDA_MPS_PIPE_DIRECTORY), "default" (/tmp/nvidia-mps) */
	const char *daemon_source;
	/* Slurm's share of the GPU (include/gpushare/slurm.h), honoured as the
	 * job's cap; "" in honoured when Slurm gave none */
	double slurm_mps_percentage;    /* 0 none */
	unsigned slurm_shards;          /* 0 none */
	char slurm_job_id[32];          /* "" outside a Slurm job */
	char honoured[160];
	/* this rank says, once for the job, what was honoured and joined */
	bool say_once;
	/* this rank says, for the job, that ranks share a GPU */
	bool warn_shared_gpu;
	/* environment changes for the app: "NAME=VALUE" sets, "NAME" unsets */
	char *const *env;
	struct gpushare_exec_priv *priv;
};

/* Find the rank, bind it and (unless dry_run) join the job on this node:
 * register the rank and, under MPS, start or find the job's daemon.
 * GPUSHARE_E_NOT_FOUND (with the launcher message) when no launcher's
 * variables are set; GPUSHARE_E_INVAL for a bad option or binding; the MPS
 * and directory errors otherwise. On error nothing stays registered. */
int gpushare_exec_open(struct gpushare_exec *x, const struct gpushare_exec_opts *o);

/* Record the rank's program (its process group, led by pgid), so that
 * what is left of it is killed should the rank be killed. */
int gpushare_exec_started(struct gpushare_exec *x, pid_t pgid);

/* The program has ended (wstatus from waitpid()). Under mps and mps-split a
 * program that failed (non-zero exit, or a signal) is recorded for the
 * node's fault report (see gpushare_exec_leave.fault), with whether a
 * server of the job's daemon says FAULT now. Errors are only informative. */
int gpushare_exec_finished(struct gpushare_exec *x, int wstatus);

struct gpushare_exec_leave {
	bool last;                      /* no other rank of the job is alive here */
	size_t missing;                 /* ranks that never arrived (the grace ran out) */
	bool daemon_stopped;
	/* For the node's last rank: one line per GPU whose ranks failed in a
	 * fatal GPU fault under MPS: the culprit (named by the server log, else
	 * the first to fail, a suspect) and the ranks that failed with it (the
	 * blast radius), separated by '\n'; "" when there was no fault
	 * (docs/exec.md, "GPU faults under MPS"). */
	char fault[2048];
};

/* Leave the job: the last rank stops the daemon and removes the job's
 * directory. Always releases everything; returns the stop's result. */
int gpushare_exec_close(struct gpushare_exec *x, struct gpushare_exec_leave *info);

/* Clean up after jobs whose ranks on this node are all gone (killed before
 * they could leave): stop their daemons, remove their directories. A job
 * directory named `skip` (a file name, may be NULL) is left alone. */
int gpushare_exec_reap(const char *skip, size_t *reaped);

/* The job directory's name for a job key and node: "exec-<key>@<node>",
 * shortened with a hash when long (pipe paths must fit a socket address). */
int gpushare_exec_dir_name(const char *job_key, const char *node, char *out, size_t len);

/* What `gpushare exec --dry-run --json` prints for an opened rank (x from
 * gpushare_exec_open() with dry_run):
 * one line of JSON, malloc'ed and valid UTF-8 (caller frees); NULL when out
 * of memory. Unknown ranks and sizes are null. */
char *gpushare_exec_dry_run_json(const struct gpushare_exec *x, enum gpushare_strategy strategy);

#ifdef __cplusplus
}
#endif
#endif
