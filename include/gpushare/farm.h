/*
 * gpushare farm: a queue of jobs (command lines) run on K slots per GPU
 * across the chosen GPUs of a node, under MPS (default), MPS with limits
 * per client, or time-slicing; with a journal that lets a stopped farm
 * resume with nothing lost and nothing repeated (docs/farm.md).
 *
 *   struct gpushare_farm_config c;
 *   gpushare_farm_config_init(&c);           defaults
 *   ... fill c (jobs source, dir, slots, strategy ...)
 *   struct gpushare_farm_result r;
 *   rc = gpushare_farm_run(&c, &r);          runs the farm; r says what happened
 *   gpushare_farm_summary_json / _write     print the summary
 *   gpushare_farm_result_release(&r);
 *
 * Signals: the library installs no handler. The caller's SIGINT handler
 * calls gpushare_farm_stop(false) the first time (no new jobs start; the
 * running ones finish) and gpushare_farm_stop(true) the second time, or on
 * SIGTERM (the running jobs are stopped: SIGTERM to their process groups,
 * SIGKILL 2 s later, recorded as "stopped" so that --resume runs them again).
 * Both are async-signal-safe.
 */
#ifndef GPUSHARE_FARM_H
#define GPUSHARE_FARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpushare/strategy.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSHARE_FARM_MAX_SLOTS 48   /* MPS clients per GPU (Volta and later) */
#define GPUSHARE_FARM_TIMEOUT_MIN_OK 5                       /* --timeout Nx: ok attempts before it applies */
#define GPUSHARE_FARM_TIMEOUT_FLOOR_NS 1000000000ULL          /* --timeout Nx: never below 1 s */

struct gpushare_farm_progress {
	uint64_t total;             /* jobs of this shard */
	uint64_t done, failed;      /* ended for good (also in earlier runs) */
	uint64_t running, queued;
	uint64_t ended_this_run;    /* attempts ended since this run started */
	double elapsed_s;           /* since this run started */
	double eta_s;               /* < 0: not known yet */
	unsigned slots;             /* slots per GPU now */
	bool calibrating;
	bool stopping;              /* a stop was asked: no new jobs */
};

struct gpushare_farm_config {
	/* The jobs: a job file ("-" = standard input), or a template (words
	 * with {} and {#}) over args_file or range ("START..END[:STEP]").
	 * Copied into DIR/jobs.jsonl when the farm starts; with resume all may
	 * be NULL (the farm runs its copy), and a source given must hold the
	 * same jobs. */
	const char *jobfile;
	char *const *tmpl;
	size_t n_tmpl;
	const char *args_file;
	const char *range;
	bool shell;                 /* run each job as /bin/sh -c LINE */
	/* The farm directory: created when absent; with resume it must hold a
	 * journal (and the copy of its job list, unless the list is given
	 * again), and only the unfinished jobs run. */
	const char *dir;
	bool resume;
	/* With resume: the jobs that failed for good (failed or timed out with
	 * their retries used up, or refused) run again too, each with 1 +
	 * retries attempts; the recorded options apply as on any resume. */
	bool rerun_failed;
	const char *shard;          /* "I/N"; NULL: from Slurm's variables, else 0/1 */
	unsigned slots;             /* per GPU; 0: calibrate */
	unsigned max_slots;         /* calibration's largest K (0: 16) */
	enum gpushare_strategy strategy; /* one that runs jobs: mps, mps-split or timeslice */
	const char *gpus;           /* "all" or a list; NULL: CUDA_VISIBLE_DEVICES allows, else all */
	uint64_t mem_per_job_bytes; /* 0: no admission by memory */
	unsigned retries;           /* attempts after the first for a failed or timed-out job */
	uint64_t timeout_ns;        /* per attempt; 0: none */
	/* --timeout Nx: an attempt may run N times the median duration of the
	 * attempts of this run that ended ok, once GPUSHARE_FARM_TIMEOUT_MIN_OK
	 * of them did, and never less than GPUSHARE_FARM_TIMEOUT_FLOOR_NS
	 * (docs/farm.md); 0: none. Not with timeout_ns. */
	double timeout_factor;
	/* Stop starting jobs once this many jobs of this run failed for good
	 * (retries used up, or refused); the running ones finish. 0: never. */
	unsigned halt;
	/* Each complete line a job writes to its out/err file, as it comes
	 * (the farm reads the files about every 50 ms while the job runs, and
	 * what is left when it ends; a last line without a newline is passed
	 * whole): job number (from 1), attempt, stream (1 stdout, 2 stderr),
	 * the line without its newline. NULL: none. Called by the farm's thread. */
	void (*output)(uint64_t job, unsigned attempt, int stream, const char *line, size_t len, void *arg);
	void *output_arg;
	const char *mps_pipe_dir;   /* use this daemon (never stopped); NULL: a private one */
	bool account;               /* jobs load the accounting library (docs/accounting.md) */
	/* dcgm-exporter's job mapping directory: the farm's id (SLURM_JOB_ID,
	 * else farm-<pid>) in the file of each of its GPUs while it runs; NULL none */
	const char *hpc_job_mapping_dir;
	const char *metrics_listen; /* [ADDR:]PORT; NULL: none */
	/* The options the caller set explicitly (GPUSHARE_FARM_GIVEN_*). On
	 * resume the first run's strategy, slots, retries, timeout, memory
	 * admission and GPUs (the journal's first header) are used for those
	 * not given; one given that differs is refused (GPUSHARE_E_INVAL,
	 * naming it). 0: none given. */
	unsigned given;
	/* Warnings before any job starts (a GPU whose compute mode or MIG
	 * state will make jobs fail, slots that memory admission cuts), one
	 * line each without "warning: "; NULL: none. */
	void (*warn)(const char *text, void *arg);
	void *warn_arg;
	/* Called by the farm's thread after each batch of ended attempts and
	 * about once a second; NULL: none. */
	void (*progress)(const struct gpushare_farm_progress *p, void *arg);
	void *progress_arg;
};

enum {
	GPUSHARE_FARM_GIVEN_STRATEGY = 1u << 0,
	GPUSHARE_FARM_GIVEN_SLOTS = 1u << 1,
	GPUSHARE_FARM_GIVEN_RETRIES = 1u << 2,
	GPUSHARE_FARM_GIVEN_TIMEOUT = 1u << 3,
	GPUSHARE_FARM_GIVEN_MEM_PER_JOB = 1u << 4,
	GPUSHARE_FARM_GIVEN_GPUS = 1u << 5,
	/* shell set explicitly: on resume with the job list given again, a
	 * mode not given is the first run's */
	GPUSHARE_FARM_GIVEN_SHELL = 1u << 6,
};

void gpushare_farm_config_init(struct gpushare_farm_config *c);

/* Stop the farm: no new jobs; `now` also stops the running ones. */
void gpushare_farm_stop(bool now);

struct gpushare_farm_gpu {
	char id[128];               /* UUID, or "INDEX@HOST" without one */
	int index;                  /* NVML index, -1 in a merged summary */
	uint64_t attempts;
	double job_s;               /* sum of attempt durations */
	double busy_s;              /* time with at least one job running */
	double busy_fraction;       /* busy_s / makespan_s */
};

struct gpushare_farm_job;

/* A farm running on a directory, as its live file (DIR/running.json) says. */
struct gpushare_farm_live {
	char dir[512];
	long pid;
	char host[256];
	uint64_t running, queued;
	unsigned slots;
	double updated_unix_s;      /* when the farm last wrote it (about every second) */
	bool stale;                 /* the farm is gone (its pid is dead on this host) */
};

/* What a farm (one run, or the journals of a farm and its shards) did. */
struct gpushare_farm_summary {
	uint64_t jobs;              /* in the whole job list */
	unsigned long shard_count;  /* N of the shards, 1 unsharded */
	size_t shards_seen;         /* journals read */
	uint64_t done, failed, unfinished;
	uint64_t attempts;
	double makespan_s;          /* first start to last end over the journals */
	double jobs_per_s;          /* (done + failed) / makespan_s */
	struct gpushare_farm_gpu *gpus;
	size_t n_gpus;
	bool torn_tail;             /* a journal's last line was torn and ignored */
	/* Fatal GPU faults under MPS (docs/farm.md, "Faults under MPS"): how
	 * many, the jobs failed by another's fault and requeued without
	 * charge, the culprits failed for good, the time from each fault's
	 * first failure until its server served again (summed), and the
	 * culprits' job numbers (the first 16 faults). */
	uint64_t faults, bystanders, culprits_failed;
	double fault_recovery_s;
	uint64_t culprits[16];
	size_t n_culprits;
	/* farm status: the farms still running on the directories (or killed
	 * while running: stale). */
	struct gpushare_farm_live *live;
	size_t n_live;
	/* The jobs that failed (for good, or waiting for a retry), were
	 * stopped, or run now (gpushare_farm_status_jobs()). */
	struct gpushare_farm_job *job_list;
	size_t n_job_list;
};

struct gpushare_farm_result {
	struct gpushare_farm_summary summary;   /* over the farm's journal */
	char dir[4096];
	char strategy[32];
	unsigned long shard_index, shard_count;
	uint64_t shard_jobs;        /* jobs of this shard */
	uint64_t skipped;           /* finished in earlier runs (resume) */
	/* This run only. */
	uint64_t ended, ok, failed_attempts, timeouts, refused, stopped;
	uint64_t bystanders;        /* attempts failed by another job's GPU fault (requeued) */
	double run_s;               /* this run's wall time, start to end */
	double run_jobs_per_s;      /* attempts ended / run_s */
	unsigned slots;             /* slots per GPU used after calibration */
	bool calibrated;            /* slots came from a calibration */
	size_t n_calibration;
	/* each round: K, jobs/s and the count of its jobs that ended ok (the
	 * only ones it rates: 0 when none did) */
	struct { unsigned slots; double jobs_per_s; uint64_t jobs; } calibration[8];
	bool calibration_failed;    /* no round had a job end ok: slots is not measured */
	/* Slurm's share honoured (include/gpushare/slurm.h): "" none, else
	 * e.g. "gres/shard 2 (SLURM_SHARDS_ON_NODE)"; the shards bound the
	 * slots, the gres/mps percentage caps every job's active threads. */
	char slurm[160];
	unsigned slurm_max_slots;   /* the slots per GPU the shards allow; 0 no bound */
	bool interrupted;           /* a stop was asked */
	bool halted;                /* --halt: stopped starting jobs after that many failed */
	uint64_t run_failed;        /* jobs that failed for good in this run */
	uint64_t not_started;       /* jobs left queued by a stop */
	uint64_t torn_cut_bytes;    /* a torn last line of the journal (a crash) cut off
	                             * before this run appended: its size in bytes, 0 none */
	bool have_summary;
};

/* Run the farm. GPUSHARE_OK when every job of the shard is done;
 * GPUSHARE_E_WORKER when some job failed for good (failed, timed out or
 * refused), also after --halt (r->halted); GPUSHARE_E_INTERRUPTED after a stop. Any other error stops the
 * farm before (or, for a journal write, while) it runs; the result then
 * holds what happened so far. */
int gpushare_farm_run(const struct gpushare_farm_config *c, struct gpushare_farm_result *r);
void gpushare_farm_result_release(struct gpushare_farm_result *r);

/* What the farm would run, without running anything or creating or
 * changing the farm directory (--dry-run): the strategy, slots and GPUs,
 * then each job of the shard that would run (number, argv after {} and {#},
 * and its GPU and slot where they are known in advance: the first wave with
 * --slots and no memory admission), as text or one JSON document on f.
 * With resume, the jobs the journal holds as finished are left out. */
int gpushare_farm_dry_run(const struct gpushare_farm_config *c, FILE *f, bool json);

/* The summary of one farm directory or of several shard directories of one
 * farm, also while a farm writes them (`gpushare farm status`). */
int gpushare_farm_status(const char *const *dirs, size_t n, struct gpushare_farm_summary *s);
void gpushare_farm_summary_release(struct gpushare_farm_summary *s);

/* A job of `farm status`'s lists: failed (for good, or waiting for a
 * retry), stopped, or running now. */
struct gpushare_farm_job {
	char dir[512];              /* the farm directory that holds it */
	uint64_t job;               /* its number, from 1 (the journal's) */
	char *command;              /* its argv joined by spaces; NULL unknown */
	unsigned attempts;          /* the last (or running) attempt's number */
	unsigned counted;           /* failed and timed-out attempts */
	char outcome[16];           /* the last attempt's outcome, or "running" */
	int exit_code;              /* of the last attempt; -1 none */
	int signal;                 /* that ended it; 0 none */
	char stderr_path[96];       /* relative to dir */
	bool failed;                /* failed for good (retries used up, or refused) */
	bool refused, ok, running;
	int gpu, slot;              /* running: where; -1 unknown */
	double start_unix_s;        /* running: since when */
};

/* The jobs of the directories that failed, were stopped, or run now, in
 * journal order per directory. Free with gpushare_farm_jobs_free(). */
int gpushare_farm_status_jobs(const char *const *dirs, size_t n, struct gpushare_farm_job **out, size_t *n_out);
void gpushare_farm_jobs_free(struct gpushare_farm_job *v, size_t n);

/* The summary (and, when r is not NULL, the run) as a JSON document;
 * caller frees. */
int gpushare_farm_summary_json(const struct gpushare_farm_summary *s, const struct gpushare_farm_result *r,
			       char **out);
/* The same as text for people; checks the writes. */
int gpushare_farm_summary_write(FILE *f, const struct gpushare_farm_summary *s, const struct gpushare_farm_result *r);

#ifdef __cplusplus
}
#endif
#endif
