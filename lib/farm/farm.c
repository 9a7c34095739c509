/*
 * The farm engine (include/gpushare/farm.h): a queue of jobs dispatched to
 * K slots on each chosen GPU, one job per slot at a time. This file sets a
 * farm up (shard, GPUs, slots, Slurm's share, the run context) and runs it;
 * farm_dir.c opens the farm directory (the job source, its copy, resume),
 * farm_dispatch.c runs the main loop over the queue (farm_queue.c) and the
 * slots, farm_status.c writes the summaries (farm_engine.h: their state).
 *
 * One thread does everything: it starts jobs through lib/sys/child.c (each in a
 * process group of its own, dying with gpushare), sleeps in poll() on the
 * running jobs' pidfds (or a short tick without them), records each ended
 * attempt in the journal (farm_journal.c: one line per attempt, the
 * attempts that ended together in one write) before it starts anything
 * else, and times out, retries and stops jobs. The journal's fsyncs run in
 * a thread of their own (records written during one fsync share the next),
 * so that a disk's sync latency is not added to every job; the farm waits
 * for the last fsync before it reports.
 * Memory is flat in the number of jobs: the job list is never held. When a
 * farm starts, its job source is parsed once into the farm directory's copy
 * (DIR/jobs.jsonl, farm_jobs.c), and a cursor reads that copy in job
 * order; argv is kept only for the jobs running and those waiting for a
 * retry. Per job the farm keeps one byte (its state); attempt counts only
 * for the jobs that failed before (a sorted array). The end summary reads
 * the journal in one pass (farm_journal_summary.c) and takes each GPU's busy
 * time from the busy periods the attempts close (gpu_busy_seconds).
 *
 * Placement: the strategy table (lib/strategy) gives each job the
 * environment of its slot, pinned to its GPU by UUID; under mps and
 * mps-split one private MPS daemon serves all the chosen GPUs.
 *
 * Without --slots, a calibration runs the first jobs of the queue in rounds
 * at K = 1, 2, 4, ... slots per GPU (2 K jobs per GPU each, the slots
 * drained between rounds so that a round's rate is its own), and keeps the
 * smallest K whose jobs/s no larger K beat by 5 % or more. The calibration
 * jobs are real jobs: they are recorded like all others.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sys.h"
#include "gpushare/buf.h"
#include "gpushare/child.h"
#include "farm_jobs.h"
#include "farm_journal.h"
#include "gpushare/strategy.h"
#include "gpushare/farm.h"
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/slurm.h"
#include "gpushare/util.h"
#include "gpu_select.h"
#include "slurm_gpus.h"
#include "metrics_farm.h"
#include "strategy.h"
#include "run_ctx.h"
#include "farm_engine.h"
#include "farm_dir.h"
#include "farm_fault.h"
#include "farm_live.h"
#include "farm_keeper.h"


void gpushare_farm_config_init(struct gpushare_farm_config *c)
{
	memset(c, 0, sizeof(*c));
	c->strategy = GPUSHARE_STRATEGY_MPS;
}

/* ---- setting up ---- */

static int farm_pick_shard(struct farm *f)
{
	bool from_env = false;

	if (f->c->shard)
		return gpushare_farm_shard_parse(f->c->shard, &f->shard);
	return gpushare_farm_shard_from_env(gpushare_getenv_process, NULL, &f->shard, &from_env);
}

static void warn_gpu_state(const struct farm *f, const struct gpushare_gpu_info *gi);

/* The GPUs the jobs run on, from NVML and --gpus / CUDA_VISIBLE_DEVICES. */
static int farm_pick_gpus(struct farm *f)
{
	const struct gpushare_farm_config *c = f->c;
	struct gpushare_system_info sys;
	struct gpushare_gpu_ref *inv = NULL, *sel = NULL;
	struct gpushare_slurm_env senv;
	size_t n_inv = 0, n_sel = 0;
	int rc = gpushare_nvml_open();

	if (rc) {
		char detail[400];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		if (c->gpus && strcmp(c->gpus, "all") != 0)
			return gpushare_fail(GPUSHARE_E_NO_DRIVER, "--gpus %s needs the NVIDIA driver (NVML): %s", c->gpus,
					     detail);
		if (c->mem_per_job_bytes)
			return gpushare_fail(GPUSHARE_E_NO_DRIVER, "--mem-per-job needs the NVIDIA driver (NVML): %s",
					     detail);
		gpushare_clear_error();
		/* No driver: the jobs run unplaced, as on one GPU ("0@host"). */
		f->gpus = calloc(1, sizeof(*f->gpus));
		if (!f->gpus)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		f->n_gpus = 1;
		f->gpus[0].mem_cap = UINT32_MAX;
		return GPUSHARE_OK;
	}
	f->nvml = true;
	rc = gpushare_system_query_nvml(&sys);
	if (rc)
		return rc;
	if (sys.n_gpus == 0) {
		gpushare_system_release(&sys);
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "NVML sees no GPU");
	}
	rc = gpushare_run_gpu_inventory(&sys, &inv, &n_inv);
	if (!rc && !(sel = calloc(sys.n_gpus, sizeof(*sel))))
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	if (rc)
		goto out;
	/* The job's GPUs as Slurm gave them, also where Slurm set no
	 * CUDA_VISIBLE_DEVICES (a share under GresTypes=gpu,mps,shard). */
	rc = gpushare_slurm_env_read(&senv);
	if (!rc)
		rc = gpushare_gpu_select(inv, n_inv, c->gpus, gpushare_slurm_getenv, &senv, sel, &n_sel);
	if (rc)
		goto out;
	if (n_sel > FARM_MAX_GPUS) {
		rc = gpushare_fail(GPUSHARE_E_INVAL, "%zu GPUs chosen; a farm uses at most %d", n_sel, FARM_MAX_GPUS);
		goto out;
	}
	f->gpus = calloc(n_sel, sizeof(*f->gpus));
	if (!f->gpus) {
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		goto out;
	}
	f->n_gpus = n_sel;
	f->placed = true;
	gpushare_run_ctx_set_gpus(&f->run, sel, n_sel);
	for (size_t i = 0; i < n_sel; i++) {
		struct farm_gpu *g = &f->gpus[i];

		g->id.index = (int)sel[i].index;
		snprintf(g->id.uuid, sizeof(g->id.uuid), "%s", sel[i].uuid);
		g->mem_cap = UINT32_MAX;
		for (size_t j = 0; j < sys.n_gpus; j++) {
			const struct gpushare_gpu_info *gi = &sys.gpus[j];

			if (gi->index != sel[i].index)
				continue;
			warn_gpu_state(f, gi);
			if (gi->mem_total_bytes != GPUSHARE_UNKNOWN_U64) {
				g->total_bytes = gi->mem_total_bytes;
				g->free_bytes = gi->mem_free_bytes != GPUSHARE_UNKNOWN_U64 ? gi->mem_free_bytes
											    : gi->mem_total_bytes;
			}
		}
	}
out:
	free(inv);
	free(sel);
	gpushare_system_release(&sys);
	return rc;
}

static void farm_warn(const struct farm *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void farm_warn(const struct farm *f, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	if (!f->c->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	f->c->warn(text, f->c->warn_arg);
}

/* A chosen GPU whose state will make jobs fail: said before any starts. */
static void warn_gpu_state(const struct farm *f, const struct gpushare_gpu_info *gi)
{
	if (gi->mig_current == 1)
		farm_warn(f, "GPU %u (%s) has MIG enabled: a job pinned to the GPU's UUID sees no CUDA device; "
			  "give MIG devices through CUDA_VISIBLE_DEVICES yourself, or disable MIG", gi->index, gi->uuid);
	else if (gi->compute_mode == GPUSHARE_COMPUTE_EXCLUSIVE_PROCESS && !gpushare_strategy_uses_mps(f->c->strategy) &&
		 f->c->slots != 1)
		farm_warn(f, "GPU %u is in compute mode Exclusive_Process: it takes one CUDA process at a time, so "
			  "timeslice jobs beyond the first on it fail to create a context; use --strategy mps or --slots 1",
			  gi->index);
	else if (gi->compute_mode == GPUSHARE_COMPUTE_EXCLUSIVE_THREAD && !gpushare_strategy_uses_mps(f->c->strategy) &&
		 f->c->slots != 1)
		farm_warn(f, "GPU %u is in compute mode Exclusive_Thread: timeslice jobs beyond the first on it fail; "
			  "use --slots 1", gi->index);
}

/* --mem-per-job: how many jobs each GPU takes at once, by its free memory
 * when the farm starts (each running job counted at the full size). */
static int memory_caps(struct farm *f)
{
	uint64_t m = f->c->mem_per_job_bytes;

	if (!m)
		return GPUSHARE_OK;
	for (size_t i = 0; i < f->n_gpus; i++) {
		struct farm_gpu *g = &f->gpus[i];

		if (!g->total_bytes)
			return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "--mem-per-job: NVML does not report the memory of GPU %d",
					     g->id.index);
		g->mem_cap = (unsigned)(g->free_bytes / m > UINT32_MAX ? UINT32_MAX : g->free_bytes / m);
		if (f->c->slots > g->mem_cap)
			farm_warn(f, "--mem-per-job: GPU %d has %.1f GiB free, which admits %u job%s at once, not the %u of "
				  "--slots", g->id.index, (double)g->free_bytes / (1024.0 * 1024 * 1024), g->mem_cap,
				  g->mem_cap == 1 ? "" : "s", f->c->slots);
		else if (!f->c->slots && g->mem_cap < (f->c->max_slots ? f->c->max_slots : DEFAULT_MAX_SLOTS))
			farm_warn(f, "--mem-per-job: GPU %d has %.1f GiB free, which admits at most %u job%s at once; "
				  "the calibration stops there", g->id.index, (double)g->free_bytes / (1024.0 * 1024 * 1024),
				  g->mem_cap, g->mem_cap == 1 ? "" : "s");
	}
	return GPUSHARE_OK;
}

/* The strategy's checks and the run directory; the daemon (if any) is
 * started once the keeper runs. */
static int setup_strategy(struct farm *f)
{
	const struct gpushare_farm_config *c = f->c;
	int rc;

	if (!gpushare_strategy_runs_jobs(c->strategy))
		return gpushare_fail(GPUSHARE_E_INVAL, "a farm runs under mps, mps-split or timeslice");
	f->run.sx.workers = (int)(f->cur_k ? f->cur_k : 1);
	f->run.sx.thread_cap = f->thread_cap;
	if (gpushare_strategy_client_share(c->strategy) && c->mem_per_job_bytes) {
		f->mem_limit = c->mem_per_job_bytes;
		f->run.sx.mem_limit_bytes = &f->mem_limit;
		f->run.sx.n_mem_limit = 1;
	}
	rc = gpushare_run_ctx_check(&f->run, c->strategy);
	if (!rc)
		rc = gpushare_run_ctx_open(&f->run);
	return rc;
}

/* Under gres/mps the farm's jobs join the daemons `gpushare slurm prolog`
 * started for this user and each of the farm's GPUs (docs/slurm.md): one
 * daemon per GPU and user, never a second beside it. Only when every GPU
 * has its daemon running: the run's session joins the first (never stops
 * it), and each job gets its own GPU's pipe directory (job_env). */
static void join_prolog_daemons(struct farm *f)
{
	char state[GPUSHARE_PATH_MAX];

	gpushare_slurm_state_dir(NULL, state, sizeof(state));
	for (size_t i = 0; i < f->n_gpus; i++) {
		struct farm_gpu *g = &f->gpus[i];
		struct gpushare_mps m;
		pid_t pid = 0;

		if (gpushare_slurm_daemon_pipe(state, getuid(), g->id.uuid, g->prolog_pipe, sizeof(g->prolog_pipe)) ||
		    gpushare_mps_init(&m, g->prolog_pipe, NULL) || gpushare_mps_state(&m, &pid) != GPUSHARE_MPS_RUNNING) {
			gpushare_clear_error();
			for (size_t j = 0; j < f->n_gpus; j++)
				f->gpus[j].prolog_pipe[0] = '\0';
			return;
		}
	}
	f->prolog_daemons = f->n_gpus > 0;
	if (f->prolog_daemons)
		f->run.sx.mps_pipe_dir = f->gpus[0].prolog_pipe;
}

/* Slurm's share (docs/farm.md, "Slurm's share"): SLURM_SHARDS_ON_NODE
 * bounds the jobs at once on the node (slots per GPU times GPUs), the
 * gres/mps percentage caps each job's active threads; timeslice cannot keep
 * that cap. */
static int slurm_share(struct farm *f)
{
	const struct gpushare_farm_config *c = f->c;
	struct gpushare_slurm_share sh;
	int rc = gpushare_slurm_share_read(&sh);

	if (rc)
		return rc;
	gpushare_slurm_share_describe(&sh, f->r->slurm, sizeof(f->r->slurm));
	f->thread_cap = sh.mps_percentage;
	if (sh.mps_percentage > 0 && !c->mps_pipe_dir && f->placed)
		join_prolog_daemons(f);
	if (sh.mps_percentage > 0 && !gpushare_strategy_uses_mps(c->strategy))
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "--strategy timeslice cannot keep Slurm's gres/mps share of %g%% of the GPU "
				     "(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE); use mps or mps-split", sh.mps_percentage);
	if (!sh.shards)
		return GPUSHARE_OK;
	f->r->slurm_max_slots = sh.shards / (unsigned)f->n_gpus;
	if (f->r->slurm_max_slots == 0)
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "Slurm's gres/shard count %u (SLURM_SHARDS_ON_NODE) is less than the %zu GPUs the farm "
				     "would use; choose fewer with --gpus", sh.shards, f->n_gpus);
	if (c->slots > f->r->slurm_max_slots)
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "--slots %u is above Slurm's gres/shard count: SLURM_SHARDS_ON_NODE=%u allows %u "
				     "slot%s per GPU on %zu GPU%s", c->slots, sh.shards, f->r->slurm_max_slots,
				     f->r->slurm_max_slots == 1 ? "" : "s", f->n_gpus, f->n_gpus == 1 ? "" : "s");
	return GPUSHARE_OK;
}

/* --hpc-job-mapping-dir: the farm's id in each of its GPUs' files (add),
 * or out of every file (remove, best effort). */
static int job_mapping(struct farm *f, bool add)
{
	const char *job = getenv("SLURM_JOB_ID");
	char id[64];
	int rc = GPUSHARE_OK;

	snprintf(id, sizeof(id), "%s", job && *job ? job : "");
	if (!id[0])
		snprintf(id, sizeof(id), "farm-%d", (int)getpid());
	if (!add) {
		if (gpushare_slurm_job_unmap_all(f->c->hpc_job_mapping_dir, id))
			gpushare_clear_error();
		return GPUSHARE_OK;
	}
	for (size_t i = 0; !rc && i < f->n_gpus && f->placed; i++) {
		rc = gpushare_slurm_job_map(f->c->hpc_job_mapping_dir, (unsigned)f->gpus[i].id.index, id, true);
		f->mapped = true;
	}
	return rc;
}

static int alloc_slots(struct farm *f)
{
	const struct gpushare_farm_config *c = f->c;

	if (c->slots > GPUSHARE_FARM_MAX_SLOTS || c->max_slots > GPUSHARE_FARM_MAX_SLOTS)
		return gpushare_fail(GPUSHARE_E_INVAL, "at most %d slots per GPU (the MPS client limit)",
				     GPUSHARE_FARM_MAX_SLOTS);
	f->max_k = c->slots ? c->slots : c->max_slots ? c->max_slots : DEFAULT_MAX_SLOTS;
	if (f->r->slurm_max_slots && f->max_k > f->r->slurm_max_slots)
		f->max_k = f->r->slurm_max_slots; /* calibration tries no more than the shards allow */
	f->cur_k = c->slots ? c->slots : 1;
	return farm_slots_alloc(f);
}

/* The chosen GPUs' ids (farm_take_source), for the journal's header, the
 * keeper and the dry run. */
static int gpu_ids(struct farm *f)
{
	free(f->gpu_ids);
	f->gpu_ids = calloc(f->n_gpus ? f->n_gpus : 1, sizeof(*f->gpu_ids));
	if (!f->gpu_ids)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t i = 0; i < f->n_gpus; i++)
		f->gpu_ids[i] = f->gpus[i].id;
	return GPUSHARE_OK;
}

/* The keeper's link: what it needs of the farm, as it is now (the keeper
 * is a fork of this moment). */
static int keeper_start(struct farm *f)
{
	struct farm_keeper_link *k = &f->keeper;

	k->journal = &f->journal;
	k->slots = f->slots;
	k->n_slots = f->n_gpus * f->max_k;
	k->gpu_ids = f->gpu_ids;
	k->placed = f->placed;
	k->rundir = f->run.own_dir ? f->run.dir : NULL;
	return farm_keeper_start(k);
}

void farm_init(struct farm *f, struct gpushare_farm_config *eff, struct gpushare_farm_result *r)
{
	memset(r, 0, sizeof(*r));
	memset(f, 0, sizeof(*f));
	f->c = eff;
	f->r = r;
	f->journal.fd = -1;
	farm_keeper_init(&f->keeper);
}

int farm_take_source(struct farm *f, struct gpushare_farm_config *eff, char *gpus_buf, size_t gpus_len)
{
	int rc = eff->resume && eff->dir ? farm_resume_options(eff, gpus_buf, gpus_len) : GPUSHARE_OK;

	if (!rc)
		rc = farm_check_source(f);
	if (!rc)
		rc = farm_pick_shard(f);
	if (!rc)
		rc = farm_pick_gpus(f);
	if (!rc)
		rc = gpu_ids(f);
	return rc;
}

int farm_dry_setup(struct farm *f, struct gpushare_farm_config *eff, char *gpus_buf, size_t gpus_len,
		   struct farm_view *v)
{
	int rc;

	snprintf(f->dir, sizeof(f->dir), "%s", eff->dir);
	rc = farm_take_source(f, eff, gpus_buf, gpus_len);
	if (rc)
		return rc;
	*v = (struct farm_view){ .c = f->c, .dir = f->dir, .shard = &f->shard, .rs = farm_queue_states(&f->q),
				 .gpu_ids = f->gpu_ids, .n_gpus = f->n_gpus, .placed = f->placed };
	return GPUSHARE_OK;
}

void farm_dry_release(struct farm *f)
{
	farm_queue_release(&f->q);
	free(f->slots);
	free(f->gpus);
	free(f->gpu_ids);
	if (f->nvml)
		gpushare_nvml_close();
}

int gpushare_farm_run(const struct gpushare_farm_config *c_in, struct gpushare_farm_result *r)
{
	struct gpushare_farm_config eff = *c_in;
	const struct gpushare_farm_config *c = &eff;
	char gpus_buf[FARM_MAX_GPUS * 100];
	struct gpushare_errsave e;
	struct farm f;
	size_t failed;
	int rc;

	farm_init(&f, &eff, r);
	gpushare_run_ctx_init(&f.run, &(struct gpushare_run_opts){ .prefix = "farm", .mps_pipe_dir = c->mps_pipe_dir,
								  .account = c->account });
	farm_stop_level = 0;
	rc = farm_take_source(&f, &eff, gpus_buf, sizeof(gpus_buf));
	if (!rc)
		rc = farm_check_resume_gpus(&f);
	if (!rc)
		rc = memory_caps(&f);
	if (!rc)
		rc = slurm_share(&f);
	if (!rc)
		rc = alloc_slots(&f);
	if (!rc && !(f.pending = calloc(PENDING_MAX, sizeof(*f.pending))))
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	if (!rc && (rc = farm_open_dir(&f)) == GPUSHARE_E_NOT_FOUND)
		rc = GPUSHARE_E_IO; /* a file is missing: the detail names it */
	if (f.stdin_spool[0])
		unlink(f.stdin_spool);
	if (!rc) {
		const struct gpushare_strategy_ops *st = gpushare_strategy_get(c->strategy);

		snprintf(r->strategy, sizeof(r->strategy), "%s", st ? st->name : "?");
		r->shard_index = f.shard.index;
		r->shard_count = f.shard.count;
		r->shard_jobs = gpushare_farm_shard_size(&f.shard, (size_t)farm_queue_n_jobs(&f.q));
		r->skipped = farm_queue_n_done(&f.q) + farm_queue_n_failed(&f.q);
		farm_queue_begin(&f.q);
		if (c->slots == 0 && farm_queue_queued(&f.q) > 0) {
			unsigned min_cap = UINT32_MAX;

			for (size_t i = 0; i < f.n_gpus; i++)
				min_cap = f.gpus[i].mem_cap < min_cap ? f.gpus[i].mem_cap : min_cap;
			farm_calib_begin(&f.cal, f.cur_k, f.max_k, f.n_gpus, min_cap);
		}
		r->calibrated = f.cal.on;
		r->slots = f.cur_k;
		/* The header first: a farm killed while its strategy starts can
		 * be resumed (a failure before the run loop still undoes a new
		 * directory). */
		f.cfg.slots = c->slots;
		snprintf(f.cfg.slurm, sizeof(f.cfg.slurm), "%s", r->slurm);
		rc = gpushare_farm_journal_write_header(&f.journal, &f.cfg);
		f.header_written = !rc;
		/* Nothing left to run (a finished farm resumed): no daemon either. */
		if (!rc)
			rc = farm_queue_queued(&f.q) ? setup_strategy(&f) : GPUSHARE_OK;
		/* Before any thread: the keeper is a fork of this process. And
		 * before the MPS daemon starts: a gpushare killed while it
		 * starts leaves it to the keeper, which stops it. */
		if (!rc && farm_queue_queued(&f.q))
			rc = keeper_start(&f);
		if (!rc && farm_queue_queued(&f.q))
			rc = gpushare_run_ctx_start(&f.run, c->strategy);
	}
	if (!rc && c->hpc_job_mapping_dir)
		rc = job_mapping(&f, true);
	if (!rc && c->metrics_listen)
		rc = gpushare_metrics_farm_start(c->metrics_listen, f.gpus ? f.n_gpus : 0, &f.metrics);
	if (!rc) {
		for (size_t i = 0; f.metrics && i < f.n_gpus; i++)
			gpushare_metrics_farm_gpu_name(f.metrics, i, f.gpus[i].id.uuid, f.gpus[i].id.index);
		rc = gpushare_farm_journal_sync_in_background(&f.journal);
	}
	if (!rc) {
		f.loop_started = true;
		f.t0_ns = f.last_progress_ns = gpushare_now_ns();
		f.t0_unix_s = farm_unix_now();
		farm_update_metrics(&f);
		farm_progress(&f, true);
		rc = farm_run_loop(&f);
		if (!rc)
			rc = gpushare_farm_journal_sync(&f.journal); /* every record durable */
		r->run_s = (double)(gpushare_now_ns() - f.t0_ns) / 1e9;
		r->run_jobs_per_s = r->run_s > 0 ? (double)r->ended / r->run_s : 0;
		r->interrupted = farm_stop_level > 0;
		r->not_started += farm_queue_queued(&f.q);
		farm_update_metrics(&f);
		farm_progress(&f, true);
		farm_live_remove(f.dir);
	}
	gpushare_error_save(&e);
	farm_stop_all(&f);
	if (f.mapped)
		job_mapping(&f, false);
	rc = gpushare_run_ctx_close(&f.run, rc);
	farm_keeper_finish(&f.keeper);
	farm_fault_free(f.faults, f.n_gpus);
	failed = farm_queue_n_failed(&f.q);
	farm_queue_release(&f.q);   /* before the summary: one per-job array at a time */
	r->torn_cut_bytes = f.journal.cut_bytes;
	if (f.journal_open)
		gpushare_farm_journal_close(&f.journal);
	farm_undo_new_dir(&f);
	if (f.r->dir[0] && f.loop_started) { /* a farm that never started has no summary */
		const char *dirs[1] = { f.dir };
		struct gpushare_errsave e2;

		gpushare_error_save(&e2);
		if (gpushare_farm_status(dirs, 1, &r->summary) == GPUSHARE_OK)
			r->have_summary = true;
		gpushare_error_restore(&e2, GPUSHARE_E_SYS);
	}
	gpushare_metrics_farm_stop(f.metrics);
	free(f.slots);
	farm_timeout_release(&f.timeout);
	free(f.pending);
	free(f.gpus);
	free(f.gpu_ids);
	if (f.nvml)
		gpushare_nvml_close();
	rc = gpushare_error_restore(&e, rc);
	if (!rc && r->interrupted)
		rc = gpushare_fail(GPUSHARE_E_INTERRUPTED, "stopped with %" PRIu64 " job%s not run",
				   r->not_started, r->not_started == 1 ? "" : "s");
	if (!rc && r->halted)
		rc = gpushare_fail(GPUSHARE_E_WORKER, "halted after %" PRIu64 " failed job%s (--halt %u); the running jobs "
				   "finished, %" PRIu64 " job%s not started; continue with: gpushare farm --resume %s",
				   r->run_failed, r->run_failed == 1 ? "" : "s", c->halt, r->not_started,
				   r->not_started == 1 ? "" : "s", r->dir);
	else if (!rc && failed > 0 && c->resume && !c->rerun_failed && r->ended == 0)
		rc = gpushare_fail(GPUSHARE_E_WORKER, "nothing to run: the shard's %zu failed job%s used up %s attempts "
				   "or %s refused; run %s again with: gpushare farm --rerun-failed %s", failed,
				   failed == 1 ? "" : "s", failed == 1 ? "its" : "their", failed == 1 ? "was" : "were",
				   failed == 1 ? "it" : "them", r->dir);
	else if (!rc && failed > 0)
		rc = gpushare_fail(GPUSHARE_E_WORKER, "%zu of the shard's %" PRIu64 " job%s failed; list %s: gpushare farm "
				   "status --failed %s; run %s again: gpushare farm --rerun-failed %s", failed,
				   r->shard_jobs, r->shard_jobs == 1 ? "" : "s", failed == 1 ? "it" : "them", r->dir,
				   failed == 1 ? "it" : "them", r->dir);
	return rc;
}
