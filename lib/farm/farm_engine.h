/*
 * The farm engine's state (lib/farm/): farm.c sets a farm up and runs it,
 * farm_dir.c opens its directory, farm_dispatch.c hands jobs to slots and
 * records how they end (the main loop), farm_dryrun.c lists what a farm
 * would run; farm_keeper.c reads it. The parts with state of their own have
 * headers of their own (farm_queue.h, farm_calib.h, farm_fault.h,
 * farm_stream.h, farm_live.h, farm_slot.h).
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
#include "farm_fault.h"
#include "farm_jobs.h"
#include "farm_journal.h"
#include "farm_keeper.h"
#include "farm_queue.h"
#include "farm_slot.h"
#include "farm_stream.h"
#include "metrics_farm.h"
#include "run_ctx.h"

#define TICK_NS (100 * NS_PER_MS)         /* longest sleep between checks */
#define NO_PIDFD_TICK_NS (2 * NS_PER_MS)  /* without pidfds, poll this often */
#define PROGRESS_NS NS_PER_S
#define TERM_GRACE_NS (2 * NS_PER_S)      /* SIGTERM, then SIGKILL this much later */
#define DEFAULT_MAX_SLOTS 16
#define PENDING_MAX 64                    /* attempt records written with one fsync */

/*
 * One farm (gpushare_farm_run(), or its dry run). Its parts, each the state
 * of one file, which the others reach only through that file's functions:
 *   q        the queue: the copy's cursor, job states, retries   farm_queue.c
 *   cal      the calibration of K                                  farm_calib.c
 *   faults   faults under MPS (NULL until the first)               farm_fault.c
 *   timeout  --timeout Nx (--tag's tails hang on the slots)       farm_stream.c
 * The rest is the farm's own: set up by farm.c and farm_dir.c, run by
 * farm_dispatch.c. The keeper (farm_keeper.c) sees only its link, keeper,
 * which farm.c fills.
 */
struct farm {
	const struct gpushare_farm_config *c;
	struct gpushare_farm_result *r;

	/* the farm directory and its job source (farm_dir.c) */
	char dir[GPUSHARE_PATH_MAX];
	enum farm_jobs_mode mode;
	char jobs_source[256];
	char stdin_spool[GPUSHARE_PATH_MAX + 32];  /* resume: standard input kept here to read twice */
	bool created_dir, header_written, loop_started;
	struct farm_shard shard;
	struct farm_config cfg;            /* the journal header of this run */
	struct farm_journal journal;
	bool journal_open;

	/* the parts */
	struct farm_queue q;
	struct farm_calib cal;
	struct farm_faults *faults;
	bool fault_watch;                  /* under mps and mps-split with a daemon */
	struct farm_timeout timeout;

	/* GPUs and slots (farm.c allocates them, farm_dispatch.c fills them) */
	struct farm_gpu *gpus;
	size_t n_gpus;
	bool nvml;
	bool placed;                       /* jobs are pinned to GPUs by UUID */
	unsigned max_k;                    /* slots allocated per GPU */
	unsigned cur_k;                    /* slots in use per GPU */
	struct slot *slots;                /* n_gpus * max_k */
	unsigned running;

	/* recording (farm_dispatch.c): attempts ended, not written yet */
	struct farm_attempt *pending;
	size_t n_pending;
	uint64_t t0_ns, last_progress_ns, last_live_ns;
	double t0_unix_s;
	struct gpushare_metrics_farm *metrics;

	/* strategy: the run directory, the daemon of mps and mps-split */
	struct gpushare_run_ctx run;
	uint64_t mem_limit;                /* mps-split: pinned memory per client */
	double thread_cap;                 /* Slurm's gres/mps percentage, 0 none */
	bool prolog_daemons;               /* the jobs join the prolog's daemon of their GPU */
	bool mapped;                       /* in the job mapping (--hpc-job-mapping-dir) */

	/* the keeper link (farm_keeper.h): farm.c fills it, farm_keeper.c owns the rest */
	struct farm_keeper_link keeper;
	struct farm_gpu_id *gpu_ids;       /* n_gpus: the GPUs' ids (farm.c), as the journal, keeper and dry run see them */
};

/* farm_dispatch.c */
void farm_progress(struct farm *f, bool force);
void farm_update_metrics(struct farm *f);
int farm_run_loop(struct farm *f);
void farm_stop_all(struct farm *f);
/* The max_k slots of each GPU, with room for their descriptors
 * (gpushare_reserve_fds: the soft open-file limit raised, or
 * GPUSHARE_E_INVAL naming both limits). */
int farm_slots_alloc(struct farm *f);

/* What the dry run (farm_dryrun.c) reads of a farm that farm_dry_setup()
 * took its source, shard and GPUs for: a view, the farm's own. */
struct farm_view {
	const struct gpushare_farm_config *c;
	const char *dir;
	const struct farm_shard *shard;
	struct farm_resume *rs;            /* the queue's; the dry run reads a resumed journal into it */
	const struct farm_gpu_id *gpu_ids; /* n_gpus */
	size_t n_gpus;
	bool placed;                       /* jobs are pinned to GPUs by UUID */
};

/* The dry run's farm: farm_init, its directory (eff->dir, given), then
 * farm_take_source; v is filled when that succeeds. farm_dry_release frees
 * what it holds. */
int farm_dry_setup(struct farm *f, struct gpushare_farm_config *eff, char *gpus_buf, size_t gpus_len,
		   struct farm_view *v);
void farm_dry_release(struct farm *f);

/* farm.c, also for the dry run (farm_dryrun.c). farm_init: f empty, its
 * config eff and result r (r cleared), no descriptors open. Then
 * farm_take_source, the steps before anything is created: a resumed
 * farm's recorded options into eff (gpus_buf holds a recorded GPU list),
 * the job source checked, the shard and the GPUs picked. */
void farm_init(struct farm *f, struct gpushare_farm_config *eff, struct gpushare_farm_result *r);
int farm_take_source(struct farm *f, struct gpushare_farm_config *eff, char *gpus_buf, size_t gpus_len);

#endif
