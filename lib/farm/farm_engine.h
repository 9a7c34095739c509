/*
 * The farm engine's state, shared by its files (lib/farm/): farm.c sets a
 * farm up and runs it, farm_dispatch.c hands jobs to slots and records how
 * they end (the main loop, calibration), farm_status.c summarises farm
 * directories and writes the summary.
 */
#ifndef GPUSHARE_FARM_ENGINE_H
#define GPUSHARE_FARM_ENGINE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "clock.h"
#include "gpushare/child.h"
#include "gpushare/buf.h"
#include "gpushare/farm.h"
#include "gpushare/hist.h"
#include "farm_calib.h"
#include "farm_jobs.h"
#include "farm_journal.h"
#include "farm_queue.h"
#include "metrics_farm.h"
#include "run_ctx.h"

#define TICK_NS (100 * NS_PER_MS)         /* longest sleep between checks */
#define NO_PIDFD_TICK_NS (2 * NS_PER_MS)  /* without pidfds, poll this often */
#define PROGRESS_NS NS_PER_S
#define TERM_GRACE_NS (2 * NS_PER_S)      /* SIGTERM, then SIGKILL this much later */
#define DEFAULT_MAX_SLOTS 16
#define PENDING_MAX 64                    /* attempt records written with one fsync */
#define LIVE_NAME "running.json"          /* what runs now, for farm status */

/* Stop requests (gpushare_farm_stop(), async-signal-safe): 1 no new jobs,
 * 2 stop the running ones too. */
extern volatile sig_atomic_t farm_stop_level;

struct farm_gpu {
	struct farm_gpu_id id;
	uint64_t free_bytes, total_bytes;  /* at the start; 0 unknown */
	unsigned mem_cap;                  /* jobs that fit at once (UINT_MAX: no limit) */
	unsigned running;
	uint64_t done, failed, attempts;
	double busy_start_unix_s;          /* when its current busy period began */
	uint8_t hold;                      /* FARM_HOLD_*: no job is placed there (farm_fault.c) */
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

struct farm {
	const struct gpushare_farm_config *c;
	struct gpushare_farm_result *r;
	/* the queue (farm_queue.c): the copy of the job list, the job
	 * states, the retries */
	struct farm_queue q;
	enum farm_jobs_mode mode;
	char jobs_source[256];
	char stdin_spool[GPUSHARE_PATH_MAX + 32];  /* resume: standard input kept here to read twice */
	bool created_dir, header_written, loop_started;
	bool close_busy;                   /* the attempt being recorded left its GPU idle */
	struct farm_shard shard;
	struct farm_config cfg;
	struct farm_journal journal;
	bool journal_open;
	struct farm_attempt *pending;      /* ended attempts not written yet */
	size_t n_pending;
	char dir[GPUSHARE_PATH_MAX];

	/* GPUs and slots */
	struct farm_gpu *gpus;
	size_t n_gpus;
	bool nvml;
	bool placed;                       /* jobs are pinned to GPUs by UUID */
	unsigned max_k;                    /* slots allocated per GPU */
	unsigned cur_k;                    /* slots in use per GPU */
	struct slot *slots;                /* n_gpus * max_k */
	unsigned running;

	/* strategy: the run directory, the daemon of mps and mps-split */
	struct gpushare_run_ctx run;
	uint64_t mem_limit;                /* mps-split: pinned memory per client */
	double thread_cap;                 /* Slurm's gres/mps percentage, 0 none */
	bool mapped;                       /* in the job mapping (--hpc-job-mapping-dir) */

	/* the calibration of K (farm_calib.c) */
	struct farm_calib cal;

	/* timing */
	uint64_t t0_ns, last_progress_ns, last_live_ns;
	double t0_unix_s;
	struct gpushare_metrics_farm *metrics;

	/* --timeout Nx (farm_stream.c): the durations of this run's ok
	 * attempts (in microseconds) and the timeout they give; 0 none yet */
	struct gpushare_hist *ok_hist;
	uint64_t rel_timeout_ns;

	/* faults under MPS (farm_fault.c): watched under mps and mps-split;
	 * their state, NULL until the first one */
	bool fault_watch;
	struct farm_faults *faults;

	/* the keeper (farm_keeper.c): its pipe, pid and pidfd; -1/0 none */
	int keeper_fd;
	pid_t keeper_pid;
	int keeper_pidfd;
};

static inline double unix_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* farm_dispatch.c */
void farm_progress(struct farm *f, bool force);
void farm_remove_live(struct farm *f);
void farm_update_metrics(struct farm *f);
int farm_run_loop(struct farm *f);
void farm_stop_all(struct farm *f);
/* Room for the descriptors of max_k slots on each GPU (gpushare_reserve_fds):
 * the soft open-file limit raised, or GPUSHARE_E_INVAL naming both limits. */
int farm_reserve_fds(const struct farm *f);
/* For farm_fault.c: the dispatch's own steps. */
int farm_attempt_ended(struct farm *f, struct slot *s, enum farm_outcome o, int wstatus, uint64_t end_ns);
int farm_flush_journal(struct farm *f);

/* farm_stream.c: --tag's reading of the jobs' output files, and --timeout Nx. */
#define TAIL_NS (50 * NS_PER_MS)          /* --tag: read the output files this often */
int farm_tail_open(struct farm *f, struct slot *s);
void farm_tail_read(struct farm *f, struct slot *s, bool last);  /* last: the job ended; closes */
void farm_tail_all(struct farm *f);
uint64_t farm_deadline(const struct farm *f, uint64_t start_ns);
int farm_ok_duration(struct farm *f, uint64_t ns);

/* farm.c, also for the dry run (farm_dryrun.c). farm_init: f empty, its
 * config eff and result r (r cleared), no descriptors open. Then
 * farm_take_source, the steps before anything is created: a resumed
 * farm's recorded options into eff (gpus_buf holds a recorded GPU list),
 * the job source checked, the shard and the GPUs picked. */
void farm_init(struct farm *f, struct gpushare_farm_config *eff, struct gpushare_farm_result *r);
int farm_take_source(struct farm *f, struct gpushare_farm_config *eff, char *gpus_buf, size_t gpus_len);
int farm_load_source(struct farm *f, struct farm_jobs *list);

/* farm_status_jobs.c: one word as a shell reads it back (quoted when needed). */
int farm_quote_word(struct gpushare_buf *b, const char *w);

/* farm_status.c: DIR/running.json, when a farm wrote one. */
bool farm_read_live(const char *dir, struct gpushare_farm_live *l);
/* farm_status.c: DIR/running.json parsed, or NULL (none, or not JSON). */
struct cJSON;
struct cJSON *farm_live_parse(const char *dir);

#endif
