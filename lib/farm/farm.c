/*
 * The farm engine (include/gpushare/farm.h): a queue of jobs dispatched to
 * K slots on each chosen GPU, one job per slot at a time.
 *
 * One thread does everything: it starts jobs through lib/child.c (each in a
 * process group of its own, dying with gpushare), sleeps in poll() on the
 * running jobs' pidfds (or a short tick without them), records each ended
 * attempt in the journal (lib/farm_journal.c: one line per attempt, the
 * attempts that ended together in one write) before it starts anything
 * else, and times out, retries and stops jobs. The journal's fsyncs run in
 * a thread of their own (records written during one fsync share the next),
 * so that a disk's sync latency is not added to every job; the farm waits
 * for the last fsync before it reports.
 * Memory is flat in the number of jobs: the job list is never held. When a
 * farm starts, its job source is parsed once into the farm directory's copy
 * (DIR/jobs.jsonl, lib/farm_jobs.c), and a cursor reads that copy in job
 * order; argv is kept only for the jobs running and those waiting for a
 * retry. Per job the farm keeps one byte (its state); attempt counts only
 * for the jobs that failed before (a sorted array). The end summary reads
 * the journal in one pass (lib/farm_journal.c) and takes each GPU's busy
 * time from the busy periods the attempts close (gpu_busy_seconds).
 *
 * Placement: the strategy table (lib/strategy.c) gives each job the
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "sys.h"
#include "buf.h"
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
#include "metrics_farm.h"
#include "strategy.h"
#include "rundir.h"

#define TICK_NS (100 * NS_PER_MS)         /* longest sleep between checks */
#define NO_PIDFD_TICK_NS (2 * NS_PER_MS)  /* without pidfds, poll this often */
#define PROGRESS_NS NS_PER_S
#define TERM_GRACE_NS (2 * NS_PER_S)      /* SIGTERM, then SIGKILL this much later */
#define DEFAULT_MAX_SLOTS 16
#define CALIBRATION_GAIN 1.05             /* a larger K must beat the best by 5 % */
#define PENDING_MAX 64                    /* attempt records written with one fsync */
#define LIVE_NAME "running.json"          /* what runs now, for farm status */

/* ---- stop requests (async-signal-safe) ---- */

static volatile sig_atomic_t farm_stop_level;

void gpushare_farm_stop(bool now)
{
	if (now)
		farm_stop_level = 2;
	else if (farm_stop_level < 1)
		farm_stop_level = 1;
}

void gpushare_farm_config_init(struct gpushare_farm_config *c)
{
	memset(c, 0, sizeof(*c));
	c->strategy = GPUSHARE_STRATEGY_MPS;
}

/* ---- state ---- */

struct farm_gpu {
	struct farm_gpu_id id;
	uint64_t free_bytes, total_bytes;  /* at the start; 0 unknown */
	unsigned mem_cap;                  /* jobs that fit at once (UINT_MAX: no limit) */
	unsigned running;
	uint64_t done, failed, attempts;
	double busy_start_unix_s;          /* when its current busy period began */
};

struct slot {
	struct gpushare_child ch;
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
	char out_rel[64], err_rel[64];
	char **argv;                       /* from the cursor, owned */
};

/* A job taken from the queue: from the copy, or waiting for a retry. */
struct job_ref {
	size_t job;
	uint64_t hash;
	char **argv;                       /* owned */
	unsigned attempts, last_attempt;
};

struct farm {
	const struct gpushare_farm_config *c;
	struct gpushare_farm_result *r;
	/* the job list: DIR/jobs.jsonl, read in order */
	struct farm_cursor cur;
	uint64_t n_jobs;
	enum farm_jobs_mode mode;
	char jobs_source[256];
	char stdin_spool[GPUSHARE_PATH_MAX + 32];  /* resume: standard input kept here to read twice */
	bool created_dir, header_written;
	bool close_busy;                   /* the attempt being recorded left its GPU idle */
	struct farm_shard shard;
	struct farm_config cfg;
	struct farm_journal journal;
	bool journal_open;
	struct farm_attempt *pending;      /* ended attempts not written yet */
	size_t n_pending;
	struct farm_resume rs;
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

	/* strategy */
	const struct gpushare_strategy_ops *st;
	struct gpushare_strategy_ctx sx;
	bool prepared;
	char run_dir[GPUSHARE_PATH_MAX];
	char no_mps_dir[GPUSHARE_PATH_MAX];
	char visible[FARM_MAX_GPUS * 100];
	uint64_t mem_limit;                /* mps-split: pinned memory per client */
	double thread_cap;                 /* Slurm's gres/mps percentage, 0 none */
	bool mapped;                       /* in the job mapping (--hpc-job-mapping-dir) */

	/* queue */
	struct job_ref *retry;             /* jobs to try again, a FIFO */
	size_t n_retry, retry_head, retry_cap;
	uint64_t queued;                   /* jobs of the shard waiting */

	/* calibration */
	bool calibrating;
	uint64_t round_quota, round_started, round_ended;
	uint64_t round_t0_ns, round_last_end_ns;
	double best_rate;
	unsigned best_k;

	/* timing */
	uint64_t t0_ns, last_progress_ns, last_live_ns;
	double t0_unix_s;
	struct gpushare_metrics_farm *metrics;
};

static double unix_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- setting up ---- */

static bool has_source(const struct gpushare_farm_config *c)
{
	return c->jobfile || c->n_tmpl || c->args_file || c->range;
}

/* The job source before anything is created: the options go together, the
 * range parses, the files can be opened. */
static int check_source(struct farm *f)
{
	const struct gpushare_farm_config *c = f->c;
	const char *path = NULL;
	FILE *fp;

	if (c->n_tmpl) {
		if (c->jobfile)
			return gpushare_fail(GPUSHARE_E_INVAL, "a job file and a command after '--' do not go together");
		if (!!c->args_file == !!c->range)
			return gpushare_fail(GPUSHARE_E_INVAL, "a command after '--' needs one of --args FILE or --range");
		if (c->range) {
			struct farm_range range;

			return gpushare_farm_range_parse(c->range, &range);
		}
		path = c->args_file;
	} else if (c->args_file || c->range) {
		return gpushare_fail(GPUSHARE_E_INVAL, "--args and --range need a command after '--'");
	} else if (!c->jobfile) {
		if (c->resume)
			return GPUSHARE_OK; /* the farm directory's copy */
		return gpushare_fail(GPUSHARE_E_INVAL, "no jobs: give a job file, '-' for standard input, or -- CMD");
	} else {
		path = c->jobfile;
	}
	if (!strcmp(path, "-"))
		return GPUSHARE_OK;
	fp = fopen(path, "re");
	if (!fp)
		return gpushare_fail(GPUSHARE_E_IO, "cannot open '%s': %s", path, strerror(errno));
	fclose(fp);
	return GPUSHARE_OK;
}

/* Open a source file ("-": standard input, or its spooled copy). */
static int open_src(struct farm *f, const char *path, FILE **fp, const char **name)
{
	if (!strcmp(path, "-")) {
		*name = "stdin";
		if (!f->stdin_spool[0]) {
			*fp = stdin;
			return GPUSHARE_OK;
		}
		path = f->stdin_spool;
	} else {
		*name = path;
	}
	*fp = fopen(path, "re");
	if (!*fp)
		return gpushare_fail(GPUSHARE_E_IO, "cannot open '%s': %s", path, strerror(errno));
	return GPUSHARE_OK;
}

/* Parse the job source into list (which may have a sink). */
static int load_source(struct farm *f, struct farm_jobs *list)
{
	const struct gpushare_farm_config *c = f->c;
	const char *name;
	FILE *fp;
	int rc;

	if (c->n_tmpl && c->range) {
		struct farm_range range;

		rc = gpushare_farm_range_parse(c->range, &range);
		return rc ? rc : gpushare_farm_jobs_template_range(list, c->tmpl, c->n_tmpl, &range);
	}
	rc = open_src(f, c->n_tmpl ? c->args_file : c->jobfile, &fp, &name);
	if (rc)
		return rc;
	if (c->n_tmpl)
		rc = gpushare_farm_jobs_template_stream(list, c->tmpl, c->n_tmpl, fp, name);
	else
		rc = gpushare_farm_jobs_load_stream(list, fp, name);
	if (fp != stdin)
		fclose(fp);
	return rc;
}

static int pick_shard(struct farm *f)
{
	bool from_env = false;

	if (f->c->shard)
		return gpushare_farm_shard_parse(f->c->shard, &f->shard);
	return gpushare_farm_shard_from_env(gpushare_getenv_process, NULL, &f->shard, &from_env);
}

/* The GPUs the jobs run on, from NVML and --gpus / CUDA_VISIBLE_DEVICES. */
static int pick_gpus(struct farm *f)
{
	const struct gpushare_farm_config *c = f->c;
	struct gpushare_system_info sys;
	struct gpushare_gpu_ref *inv = NULL, *sel = NULL;
	size_t n_sel = 0;
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
	inv = calloc(sys.n_gpus, sizeof(*inv));
	sel = calloc(sys.n_gpus, sizeof(*sel));
	if (!inv || !sel) {
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < sys.n_gpus; i++) {
		inv[i].index = sys.gpus[i].index;
		snprintf(inv[i].uuid, sizeof(inv[i].uuid), "%s", sys.gpus[i].uuid);
	}
	rc = gpushare_gpu_select(inv, sys.n_gpus, c->gpus, gpushare_getenv_process, NULL, sel, &n_sel);
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
	for (size_t i = 0; i < n_sel; i++) {
		struct farm_gpu *g = &f->gpus[i];

		g->id.index = (int)sel[i].index;
		snprintf(g->id.uuid, sizeof(g->id.uuid), "%s", sel[i].uuid);
		g->mem_cap = UINT32_MAX;
		for (size_t j = 0; j < sys.n_gpus; j++) {
			const struct gpushare_gpu_info *gi = &sys.gpus[j];

			if (gi->index != sel[i].index)
				continue;
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
	}
	return GPUSHARE_OK;
}

static void header_config(struct farm *f, uint64_t jobs_hash)
{
	const struct gpushare_farm_config *c = f->c;
	struct farm_config *h = &f->cfg;
	const struct gpushare_strategy_ops *st = gpushare_strategy_get(c->strategy);

	memset(h, 0, sizeof(*h));
	h->n_jobs = f->n_jobs;
	h->jobs_hash = jobs_hash;
	h->mode = f->mode;
	snprintf(h->jobs_source, sizeof(h->jobs_source), "%s", f->jobs_source);
	h->shard = f->shard;
	h->retries = c->retries;
	h->slots = c->slots;
	snprintf(h->strategy, sizeof(h->strategy), "%s", st ? st->name : "?");
	h->timeout_ns = c->timeout_ns;
	h->mem_per_job_bytes = c->mem_per_job_bytes;
	if (gethostname(h->hostname, sizeof(h->hostname)) != 0)
		snprintf(h->hostname, sizeof(h->hostname), "unknown");
	h->hostname[sizeof(h->hostname) - 1] = '\0';
	for (size_t i = 0; i < f->n_gpus && i < FARM_MAX_GPUS; i++)
		h->gpus[i] = f->gpus[i].id;
	h->n_gpus = f->n_gpus;
	h->busy_periods = true;
}

/* DIR/NAME into buf. */
static void dir_path(const struct farm *f, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", f->dir, name);
}

#define COPY_TMP_NAME "." FARM_JOBS_COPY_NAME ".tmp"
#define STDIN_SPOOL_NAME ".stdin.tmp"

/* A fresh file for writing in the farm directory, never through a link
 * (the farm holds the journal's lock, so nobody else writes there). */
static int create_private(const char *path, FILE **out)
{
	int fd;

	if (unlink(path) != 0 && errno != ENOENT)
		return gpushare_fail(GPUSHARE_E_IO, "cannot remove '%s': %s", path, strerror(errno));
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot create '%s': %s", path, strerror(errno));
	*out = fdopen(fd, "w");
	if (!*out) {
		close(fd);
		unlink(path);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	return GPUSHARE_OK;
}

/* Close a file written by create_private, synced; removed on failure. */
static int close_private(const char *path, FILE *out, int rc)
{
	int e = 0;

	if (!rc && (fflush(out) != 0 || fsync(fileno(out)) != 0))
		e = errno;
	if (fclose(out) != 0 && !e)
		e = errno;
	if (!rc && e)
		rc = gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s", path, strerror(e));
	if (rc)
		unlink(path);
	return rc;
}

/* Resuming from standard input: keep it in the directory, so that a
 * changed list can be read again to name the job that differs. */
static int spool_stdin(struct farm *f)
{
	char buf[65536];
	size_t n;
	FILE *out;
	int rc;

	dir_path(f, STDIN_SPOOL_NAME, f->stdin_spool, sizeof(f->stdin_spool));
	if ((rc = create_private(f->stdin_spool, &out))) {
		f->stdin_spool[0] = '\0';
		return rc;
	}
	while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0) {
		if (fwrite(buf, 1, n, out) != n) {
			rc = gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s", f->stdin_spool, strerror(errno));
			break;
		}
	}
	if (!rc && ferror(stdin))
		rc = gpushare_fail(GPUSHARE_E_IO, "cannot read standard input: %s", strerror(errno));
	rc = close_private(f->stdin_spool, out, rc);
	if (rc)
		f->stdin_spool[0] = '\0';
	return rc;
}

/* Parse the job source into DIR/.jobs.jsonl.tmp, one job at a time; open
 * the cursor on it and take the count and list hash. */
static int write_copy(struct farm *f, uint64_t *list_hash)
{
	char tmp[GPUSHARE_PATH_MAX + 32];
	struct farm_jobs list;
	FILE *out;
	int rc;

	dir_path(f, COPY_TMP_NAME, tmp, sizeof(tmp));
	if ((rc = create_private(tmp, &out)))
		return rc;
	gpushare_farm_jobs_init(&list, f->mode);
	list.sink = gpushare_farm_jobs_copy_sink;
	list.sink_arg = out;
	rc = load_source(f, &list);
	snprintf(f->jobs_source, sizeof(f->jobs_source), "%s", list.source);
	gpushare_farm_jobs_release(&list);
	if ((rc = close_private(tmp, out, rc)))
		return rc;
	rc = gpushare_farm_cursor_open(&f->cur, tmp);
	if (!rc)
		rc = gpushare_farm_cursor_scan(&f->cur, f->mode, &f->n_jobs, list_hash);
	if (rc)
		unlink(tmp);
	return rc;
}

/* Move the new copy to DIR/jobs.jsonl (the cursor stays on it), refusing
 * to replace anything but a regular file of this user. */
static int install_copy(struct farm *f)
{
	char tmp[GPUSHARE_PATH_MAX + 32], path[GPUSHARE_PATH_MAX + 32];
	struct stat st;
	int dfd;

	dir_path(f, COPY_TMP_NAME, tmp, sizeof(tmp));
	dir_path(f, FARM_JOBS_COPY_NAME, path, sizeof(path));
	snprintf(f->cur.path, sizeof(f->cur.path), "%s", path);
	if (lstat(path, &st) == 0 && (!S_ISREG(st.st_mode) || st.st_uid != geteuid())) {
		unlink(tmp);
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' is %s; refusing to replace it", path,
				     S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file of this user");
	}
	if (rename(tmp, path) != 0) {
		int e = errno;

		unlink(tmp);
		return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s", path, strerror(e));
	}
	dfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return GPUSHARE_OK;
}

/* The job list given again differs from the journal's: read it whole (an
 * error path) to name the first recorded job that differs. */
static int changed_list(struct farm *f, uint64_t list_hash)
{
	struct farm_journal_data d;
	struct farm_jobs list;
	struct farm_config cfg = f->cfg;
	int rc;

	gpushare_farm_jobs_init(&list, f->mode);
	rc = load_source(f, &list);
	if (!rc)
		rc = gpushare_farm_journal_load(f->dir, &d);
	if (!rc) {
		cfg.n_jobs = list.n_jobs;
		cfg.jobs_hash = list_hash;
		cfg.mode = f->mode;
		rc = gpushare_farm_journal_check_resume(&d, &cfg, &list);
		gpushare_farm_journal_data_release(&d);
	}
	gpushare_farm_jobs_release(&list);
	return rc ? rc : gpushare_fail(GPUSHARE_E_INVAL, "the job list differs from the journal's; refusing to resume a "
				       "changed job list");
}

struct resume_scan {
	struct farm_resume *rs;
	int rc;
};

static int resume_header(void *arg, struct farm_journal_data *d, const struct farm_config *cfg)
{
	struct resume_scan *r = arg;

	(void)cfg;
	if (d->n_headers == 1)
		return gpushare_farm_resume_begin(r->rs, (size_t)d->config.n_jobs);
	return GPUSHARE_OK;
}

static int resume_record(void *arg, struct farm_journal_data *d, const struct farm_record *rec)
{
	struct resume_scan *r = arg;

	(void)d;
	return gpushare_farm_resume_add(r->rs, rec);
}

/* Resuming: the journal read in one pass into the resume state; the job
 * list (given again, or the directory's copy) checked against it. */
static int open_resume(struct farm *f)
{
	const struct gpushare_farm_config *c = f->c;
	struct resume_scan rsc = { &f->rs, 0 };
	const struct farm_journal_scan scan = { resume_header, resume_record, &rsc };
	struct farm_journal_data d;
	char path[GPUSHARE_PATH_MAX + 32];
	const struct farm_config *old;
	uint64_t hash = 0;
	int rc;

	dir_path(f, FARM_JOURNAL_NAME, path, sizeof(path));
	rc = gpushare_farm_journal_scan_path(path, &d, &scan);
	if (rc)
		return rc;
	old = &d.config;
	if (has_source(c)) {
		if ((c->jobfile && !strcmp(c->jobfile, "-")) || (c->args_file && !strcmp(c->args_file, "-")))
			rc = spool_stdin(f);
		if (!rc)
			rc = write_copy(f, &hash);
		header_config(f, hash);
		if (!rc && (f->n_jobs != old->n_jobs || f->mode != old->mode || hash != old->jobs_hash)) {
			char tmp[GPUSHARE_PATH_MAX + 32];

			gpushare_farm_cursor_close(&f->cur);
			dir_path(f, COPY_TMP_NAME, tmp, sizeof(tmp));
			unlink(tmp);
			rc = changed_list(f, hash);
		}
		if (!rc)
			rc = install_copy(f);
	} else {
		f->mode = old->mode;
		snprintf(f->jobs_source, sizeof(f->jobs_source), "%s", old->jobs_source);
		dir_path(f, FARM_JOBS_COPY_NAME, path, sizeof(path));
		rc = gpushare_farm_cursor_open(&f->cur, path);
		if (rc == GPUSHARE_E_NOT_FOUND)
			rc = gpushare_fail(GPUSHARE_E_INVAL, "'%s' holds no copy of the job list (a farm of an older gpushare?); "
					   "give the job list again", f->dir);
		if (!rc)
			rc = gpushare_farm_cursor_scan(&f->cur, f->mode, &f->n_jobs, &hash);
		if (!rc && (f->n_jobs != old->n_jobs || hash != old->jobs_hash))
			rc = gpushare_fail(GPUSHARE_E_INVAL, "'%s' holds %" PRIu64 " jobs (list hash %016" PRIx64 ") but the journal's "
					   "farm had %" PRIu64 " (%016" PRIx64 "); refusing to resume: give the job list again",
					   path, f->n_jobs, hash, old->n_jobs, old->jobs_hash);
		header_config(f, hash);
	}
	if (!rc && (old->shard.index != f->shard.index || old->shard.count != f->shard.count))
		rc = gpushare_fail(GPUSHARE_E_INVAL,
				   "this is shard %lu/%lu but the journal's farm was shard %lu/%lu; "
				   "resume each shard in its own directory", f->shard.index, f->shard.count,
				   old->shard.index, old->shard.count);
	if (!rc)
		rc = gpushare_farm_resume_end(&f->rs, &f->shard, c->retries);
	gpushare_farm_journal_data_release(&d);
	return rc;
}

/* The farm directory: created for a new farm (refused when it already
 * holds a journal), required with its journal for --resume. */
static int open_dir(struct farm *f)
{
	const struct gpushare_farm_config *c = f->c;
	char out[GPUSHARE_PATH_MAX + 8];
	struct stat st;
	bool existing = false;
	uint64_t hash = 0;
	int rc;

	if (!c->dir || !c->dir[0])
		return gpushare_fail(GPUSHARE_E_INVAL, "no farm directory: give --dir DIR or --resume DIR");
	if ((size_t)snprintf(f->dir, sizeof(f->dir), "%s", c->dir) >= sizeof(f->dir))
		return gpushare_fail(GPUSHARE_E_DIR, "farm directory path too long");
	snprintf(f->r->dir, sizeof(f->r->dir), "%s", f->dir);
	if (lstat(f->dir, &st) != 0) {
		if (c->resume)
			return gpushare_fail(GPUSHARE_E_DIR, "cannot resume '%s': %s", f->dir, strerror(errno));
		if (mkdir(f->dir, 0777) != 0)
			return gpushare_fail(GPUSHARE_E_DIR, "cannot create the farm directory '%s': %s", f->dir,
					     strerror(errno));
		f->created_dir = true;
	} else if (!S_ISDIR(st.st_mode)) {
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' is not a directory%s", f->dir,
				     S_ISLNK(st.st_mode) ? " (a symbolic link)" : "");
	} else if (st.st_uid != geteuid()) {
		return gpushare_fail(GPUSHARE_E_DIR, "the farm directory '%s' belongs to another user", f->dir);
	}
	/* Jobs get it absolute (GPUSHARE_FARM_DIR), wherever they chdir. */
	if (!realpath(c->dir, f->dir))
		return gpushare_fail(GPUSHARE_E_DIR, "cannot resolve '%s': %s", c->dir, strerror(errno));
	snprintf(out, sizeof(out), "%s/out", f->dir);
	if (mkdir(out, 0777) != 0 && errno != EEXIST)
		return gpushare_fail(GPUSHARE_E_DIR, "cannot create '%s': %s", out, strerror(errno));
	if (lstat(out, &st) != 0 || !S_ISDIR(st.st_mode))
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' is not a directory", out);

	rc = gpushare_farm_journal_open(&f->journal, f->dir, &existing);
	if (rc == GPUSHARE_E_BUSY)
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' is in use by another gpushare farm", f->dir);
	if (rc)
		return rc;
	f->journal_open = true;
	if (existing && !c->resume)
		return gpushare_fail(GPUSHARE_E_DIR,
				     "'%s' already holds a farm journal; continue it with --resume %s, or pick a new --dir",
				     f->dir, f->dir);
	if (!existing && c->resume)
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' holds no farm journal to resume", f->dir);
	f->mode = c->shell ? FARM_JOBS_SHELL : FARM_JOBS_ARGV;
	if (existing)
		return open_resume(f);
	rc = write_copy(f, &hash);
	if (!rc)
		rc = install_copy(f);
	header_config(f, hash);
	if (!rc)
		rc = gpushare_farm_resume_begin(&f->rs, (size_t)f->n_jobs);
	if (!rc)
		rc = gpushare_farm_resume_end(&f->rs, &f->shard, c->retries);
	return rc;
}

/* A farm that failed before its first header in a directory it created
 * leaves nothing behind. */
static void undo_new_dir(struct farm *f)
{
	static const char *const names[] = { FARM_JOURNAL_NAME, FARM_JOBS_COPY_NAME, COPY_TMP_NAME, STDIN_SPOOL_NAME };
	char path[GPUSHARE_PATH_MAX + 32];

	if (!f->created_dir || f->header_written || !f->dir[0])
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		dir_path(f, names[i], path, sizeof(path));
		unlink(path);
	}
	dir_path(f, "out", path, sizeof(path));
	rmdir(path);
	rmdir(f->dir);
}

static int setup_strategy(struct farm *f)
{
	const struct gpushare_farm_config *c = f->c;
	struct gpushare_buf vis = { 0 };
	int rc;

	f->st = gpushare_strategy_get(c->strategy);
	if (!f->st || (c->strategy != GPUSHARE_STRATEGY_MPS && c->strategy != GPUSHARE_STRATEGY_MPS_SPLIT &&
		       c->strategy != GPUSHARE_STRATEGY_TIMESLICE))
		return gpushare_fail(GPUSHARE_E_INVAL, "a farm runs under mps, mps-split or timeslice");
	for (size_t i = 0; i < f->n_gpus && f->placed; i++) {
		rc = gpushare_buf_addf(&vis, "%s%s", i ? "," : "", f->gpus[i].id.uuid);
		if (rc) {
			gpushare_buf_release(&vis);
			return rc;
		}
	}
	snprintf(f->visible, sizeof(f->visible), "%s", gpushare_buf_str(&vis));
	gpushare_buf_release(&vis);

	memset(&f->sx, 0, sizeof(f->sx));
	f->sx.run_dir = f->run_dir;
	f->sx.no_mps_dir = f->no_mps_dir;
	f->sx.visible = f->visible;
	f->sx.mps_pipe_dir = c->mps_pipe_dir ? c->mps_pipe_dir : "";
	f->sx.workers = (int)(f->cur_k ? f->cur_k : 1);
	f->sx.thread_cap = f->thread_cap;
	if (c->strategy == GPUSHARE_STRATEGY_MPS_SPLIT && c->mem_per_job_bytes) {
		f->mem_limit = c->mem_per_job_bytes;
		f->sx.mem_limit_bytes = &f->mem_limit;
		f->sx.n_mem_limit = 1;
	}
	rc = f->st->check(&f->sx);
	if (rc)
		return rc;
	gpushare_rundir_reap(NULL);
	rc = gpushare_rundir_create("farm", f->run_dir, sizeof(f->run_dir));
	if (rc)
		return rc;
	if ((size_t)snprintf(f->no_mps_dir, sizeof(f->no_mps_dir), "%s/no-mps", f->run_dir) >= sizeof(f->no_mps_dir))
		return gpushare_fail(GPUSHARE_E_DIR, "run directory path too long");
	if (mkdir(f->no_mps_dir, 0700) != 0)
		return gpushare_fail(GPUSHARE_E_DIR, "cannot create '%s': %s", f->no_mps_dir, strerror(errno));
	rc = f->st->prepare(&f->sx);
	if (!rc)
		f->prepared = true;
	return rc;
}

/* ---- the queue ---- */

static int retry_push(struct farm *f, const struct job_ref *j)
{
	if (f->n_retry == f->retry_cap) {
		size_t cap = f->retry_cap ? f->retry_cap * 2 : 16;
		struct job_ref *nr = malloc(cap * sizeof(*nr));

		if (!nr)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		for (size_t i = 0; i < f->n_retry; i++)
			nr[i] = f->retry[(f->retry_head + i) % f->retry_cap];
		free(f->retry);
		f->retry = nr;
		f->retry_cap = cap;
		f->retry_head = 0;
	}
	f->retry[(f->retry_head + f->n_retry) % f->retry_cap] = *j;
	f->n_retry++;
	return GPUSHARE_OK;
}

/* The next job to start: 1 and *j (its argv is the caller's); 0 when none
 * is waiting; < 0 when the copy cannot be read. */
static int next_job(struct farm *f, struct job_ref *j)
{
	memset(j, 0, sizeof(*j));
	if (f->n_retry) {
		*j = f->retry[f->retry_head];
		f->retry_head = (f->retry_head + 1) % f->retry_cap;
		f->n_retry--;
		return 1;
	}
	while (f->cur.index < f->n_jobs) {
		uint64_t i = f->cur.index;
		bool pending = f->rs.state[i] == FARM_JOB_PENDING;
		uint32_t attempts, last;
		int rc = gpushare_farm_cursor_next(&f->cur, pending, &j->argv, &j->hash);

		if (rc < 0)
			return rc;
		if (rc == 0)
			return gpushare_fail(GPUSHARE_E_IO, "'%s' ends after %" PRIu64 " of its %" PRIu64 " jobs",
					     f->cur.path, i, f->n_jobs);
		if (!pending)
			continue;
		gpushare_farm_resume_lookup(&f->rs, i, &attempts, &last);
		j->job = (size_t)i;
		j->attempts = attempts;
		j->last_attempt = last;
		return 1;
	}
	return 0;
}

static void free_retries(struct farm *f)
{
	for (size_t i = 0; i < f->n_retry; i++)
		free(f->retry[(f->retry_head + i) % f->retry_cap].argv);
	free(f->retry);
	f->retry = NULL;
	f->n_retry = 0;
}

/* ---- recording ---- */

static void progress(struct farm *f, bool force)
{
	struct gpushare_farm_progress p;
	uint64_t now = gpushare_now_ns();
	double rate;

	if (!f->c->progress || (!force && now - f->last_progress_ns < PROGRESS_NS))
		return;
	f->last_progress_ns = now;
	memset(&p, 0, sizeof(p));
	p.total = f->r->shard_jobs;
	p.done = f->rs.done;
	p.failed = f->rs.failed;
	p.running = f->running;
	p.queued = f->queued;
	p.ended_this_run = f->r->ended;
	p.elapsed_s = (double)(now - f->t0_ns) / 1e9;
	rate = p.elapsed_s > 0 ? (double)(f->rs.done + f->rs.failed - f->r->skipped) / p.elapsed_s : 0;
	p.eta_s = rate > 0 && !f->calibrating ? (double)(p.running + p.queued) / rate : -1;
	p.slots = f->cur_k;
	p.calibrating = f->calibrating;
	p.stopping = farm_stop_level > 0;
	f->c->progress(&p, f->c->progress_arg);
}

/* DIR/running.json: the jobs running now, written about once a second
 * (a temporary file renamed over it, so a reader never sees half of it)
 * and removed at the end, so that `farm status` can tell a running farm,
 * and one that was killed, from a stopped one. Best effort: the journal is
 * the record; a failure here changes nothing else. */
static void write_live(struct farm *f)
{
	char path[GPUSHARE_PATH_MAX + 32], tmp[GPUSHARE_PATH_MAX + 32];
	cJSON *o = cJSON_CreateObject(), *jobs;
	char *text = NULL;
	int fd;

	if (!o)
		return;
	cJSON_AddNumberToObject(o, "pid", (double)getpid());
	cJSON_AddStringToObject(o, "host", f->cfg.hostname);
	cJSON_AddNumberToObject(o, "started_unix_s", f->t0_unix_s);
	cJSON_AddNumberToObject(o, "updated_unix_s", unix_now());
	cJSON_AddNumberToObject(o, "slots", f->cur_k);
	cJSON_AddNumberToObject(o, "queued", (double)f->queued);
	cJSON_AddNumberToObject(o, "running", f->running);
	jobs = cJSON_AddArrayToObject(o, "jobs");
	for (size_t i = 0; jobs && i < f->n_gpus * f->max_k; i++) {
		const struct slot *s = &f->slots[i];
		cJSON *j;

		if (!s->busy || !(j = cJSON_CreateObject()))
			continue;
		cJSON_AddNumberToObject(j, "job", (double)s->job);
		cJSON_AddNumberToObject(j, "attempt", s->attempt);
		cJSON_AddNumberToObject(j, "gpu", f->gpus[s->gpu].id.index);
		cJSON_AddNumberToObject(j, "slot", s->k);
		cJSON_AddNumberToObject(j, "start_unix_s", s->start_unix_s);
		cJSON_AddItemToArray(jobs, j);
	}
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text)
		return;
	snprintf(path, sizeof(path), "%s/" LIVE_NAME, f->dir);
	snprintf(tmp, sizeof(tmp), "%s/." LIVE_NAME ".tmp", f->dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd >= 0) {
		size_t len = strlen(text);
		bool ok = write(fd, text, len) == (ssize_t)len;

		if (close(fd) == 0 && ok)
			rename(tmp, path);
		else
			unlink(tmp);
	}
	free(text);
}

static void remove_live(struct farm *f)
{
	char path[GPUSHARE_PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/" LIVE_NAME, f->dir);
	unlink(path);
}

static void update_metrics(struct farm *f)
{
	if (!f->metrics)
		return;
	for (size_t i = 0; i < f->n_gpus; i++)
		gpushare_metrics_farm_gpu(f->metrics, i, f->gpus[i].running, f->gpus[i].done, f->gpus[i].failed);
	gpushare_metrics_farm_totals(f->metrics, f->queued, f->running, f->rs.done, f->rs.failed, f->cur_k);
}

/* Write the pending records: one write, one fsync. */
static int flush_journal(struct farm *f)
{
	int rc;

	if (!f->n_pending)
		return GPUSHARE_OK;
	rc = gpushare_farm_journal_write_attempts(&f->journal, f->pending, f->n_pending);
	f->n_pending = 0;
	return rc;
}

static int record(struct farm *f, const struct slot *s, enum farm_outcome o, int wstatus, uint64_t end_ns)
{
	struct farm_attempt *ap, a;
	const struct farm_gpu *g = &f->gpus[s->gpu];
	int rc;

	if (f->n_pending == PENDING_MAX && (rc = flush_journal(f)) != GPUSHARE_OK)
		return rc;
	ap = &f->pending[f->n_pending];
	memset(&a, 0, sizeof(a));
	a.job = s->job;
	a.hash = s->hash;
	a.attempt = s->attempt;
	a.outcome = o;
	a.exit_code = -1;
	if (o != FARM_REFUSED) {
		if (WIFEXITED(wstatus))
			a.exit_code = WEXITSTATUS(wstatus);
		else if (WIFSIGNALED(wstatus))
			a.signal = WTERMSIG(wstatus);
	}
	a.gpu = o == FARM_REFUSED ? -1 : g->id.index;
	if (a.gpu >= 0)
		snprintf(a.gpu_uuid, sizeof(a.gpu_uuid), "%s", g->id.uuid);
	a.slot = a.gpu >= 0 ? (int)s->k : -1;
	a.start_unix_s = s->start_unix_s;
	a.duration_s = s->start_ns ? (double)(end_ns - s->start_ns) / 1e9 : 0;
	a.end_unix_s = s->start_unix_s + a.duration_s;
	snprintf(a.stdout_path, sizeof(a.stdout_path), "%s", s->out_rel);
	snprintf(a.stderr_path, sizeof(a.stderr_path), "%s", s->err_rel);
	if (f->close_busy && a.gpu >= 0) {
		a.has_gpu_busy = true;
		a.gpu_busy_s = a.end_unix_s > g->busy_start_unix_s ? a.end_unix_s - g->busy_start_unix_s : 0;
	}
	f->close_busy = false;
	*ap = a;
	f->n_pending++;
	return GPUSHARE_OK;
}

/* An attempt ended with outcome o: record it, then decide what is next for
 * its job (done, failed for good, again, or again on resume). A retry takes
 * the slot's argv (s->argv is NULL then). */
static int attempt_ended(struct farm *f, struct slot *s, enum farm_outcome o, int wstatus, uint64_t end_ns)
{
	struct farm_gpu *g = &f->gpus[s->gpu];
	size_t job = s->job;
	int rc = record(f, s, o, wstatus, end_ns);

	if (rc)
		return rc;
	f->r->ended++;
	g->attempts++;
	if (f->calibrating) {
		f->round_ended++;
		f->round_last_end_ns = end_ns;
	}
	switch (o) {
	case FARM_OK:
		f->r->ok++;
		f->rs.state[job] = FARM_JOB_DONE;
		f->rs.done++;
		g->done++;
		break;
	case FARM_STOPPED:
		f->r->stopped++;
		f->r->not_started++; /* runs again on resume */
		break;
	case FARM_REFUSED:
		f->r->refused++;
		f->rs.state[job] = FARM_JOB_FAILED;
		f->rs.failed++;
		g->failed++;
		break;
	case FARM_FAILED:
	case FARM_TIMEOUT:
		if (o == FARM_TIMEOUT)
			f->r->timeouts++;
		else
			f->r->failed_attempts++;
		s->attempts++;
		if (s->attempts < f->c->retries + 1 && farm_stop_level == 0) {
			struct job_ref j = { job, s->hash, s->argv, s->attempts, s->attempt };

			rc = retry_push(f, &j);
			if (!rc)
				s->argv = NULL;
			f->queued++;
		} else if (s->attempts < f->c->retries + 1) {
			f->r->not_started++;
		} else {
			f->rs.state[job] = FARM_JOB_FAILED;
			f->rs.failed++;
			g->failed++;
		}
		break;
	}
	return rc;
}

/* ---- starting a job ---- */

static int open_output(struct farm *f, const char *rel, int *fd)
{
	char path[GPUSHARE_PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", f->dir, rel);
	*fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (*fd < 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot open '%s': %s", path, strerror(errno));
	return GPUSHARE_OK;
}

static int job_env(struct farm *f, struct slot *s, struct gpushare_strv *env)
{
	const struct farm_gpu *g = &f->gpus[s->gpu];
	struct gpushare_placement pl;
	int rc;

	f->sx.workers = (int)f->cur_k;
	rc = f->st->worker_env(&f->sx, (int)s->k, f->placed ? g->id.uuid : "", env, &pl);
	if (!rc)
		rc = gpushare_strv_addf(env, "GPUSHARE_FARM_JOB=%zu", s->job);
	if (!rc)
		rc = gpushare_strv_addf(env, "GPUSHARE_FARM_ATTEMPT=%u", s->attempt);
	if (!rc)
		rc = gpushare_strv_addf(env, "GPUSHARE_FARM_SLOT=%u", s->k);
	if (!rc)
		rc = gpushare_strv_addf(env, "GPUSHARE_FARM_GPU=%s", f->placed ? g->id.uuid : "");
	if (!rc)
		rc = gpushare_strv_addf(env, "GPUSHARE_FARM_DIR=%s", f->dir);
	return rc;
}

/* Start job j in slot s (which takes its argv). A job that cannot be
 * executed is recorded as refused (its .err file says why), which is not an
 * error of the farm. */
static int start_job(struct farm *f, struct slot *s, const struct job_ref *j)
{
	struct gpushare_strv env = { 0 };
	size_t job = j->job;
	int out = -1, err = -1, rc;

	s->job = job;
	s->hash = j->hash;
	s->argv = j->argv;
	s->attempts = j->attempts;
	s->attempt = j->last_attempt + 1;
	s->timed_out = s->stopped = false;
	s->kill_ns = 0;
	snprintf(s->out_rel, sizeof(s->out_rel), "out/%zu.%u.out", job, s->attempt);
	snprintf(s->err_rel, sizeof(s->err_rel), "out/%zu.%u.err", job, s->attempt);
	rc = open_output(f, s->out_rel, &out);
	if (!rc)
		rc = open_output(f, s->err_rel, &err);
	if (!rc)
		rc = job_env(f, s, &env);
	if (rc)
		goto out;
	gpushare_child_init(&s->ch);
	s->ch.argv = s->argv;
	s->ch.env_set = gpushare_strv_list(&env);
	s->ch.in = GPUSHARE_CHILD_DEVNULL;
	s->ch.out = out;
	s->ch.err = err;
	s->ch.flags = GPUSHARE_CHILD_IGNORE_SIGINT;
	s->start_unix_s = unix_now();
	s->start_ns = gpushare_now_ns();
	rc = gpushare_child_start(&s->ch);
	if (rc == GPUSHARE_E_NOT_FOUND || rc == GPUSHARE_E_INVAL) {
		/* Cannot be executed: never will. */
		char line[1024];
		int n = snprintf(line, sizeof(line), "gpushare: cannot execute job %zu: %s\n", job, gpushare_errdetail());

		if (n > 0 && write(err, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
			n = 0;
		gpushare_clear_error();
		f->queued--;
		rc = attempt_ended(f, s, FARM_REFUSED, 0, s->start_ns);
		goto out;
	}
	if (rc)
		goto out;
	s->busy = true;
	s->deadline_ns = f->c->timeout_ns ? s->start_ns + f->c->timeout_ns : 0;
	f->running++;
	if (f->gpus[s->gpu].running++ == 0)
		f->gpus[s->gpu].busy_start_unix_s = s->start_unix_s;
	f->queued--;
	if (f->calibrating) {
		if (!f->round_started)
			f->round_t0_ns = s->start_ns;
		f->round_started++;
	}
out:
	if (!s->busy) {
		free(s->argv);
		s->argv = NULL;
	}
	if (out >= 0)
		close(out);
	if (err >= 0)
		close(err);
	gpushare_strv_release(&env);
	return rc;
}

/* A free slot on the GPU with the fewest running jobs that may take one
 * more; NULL when none. */
static struct slot *free_slot(struct farm *f)
{
	struct slot *best = NULL;
	unsigned best_running = UINT32_MAX;

	for (size_t g = 0; g < f->n_gpus; g++) {
		const struct farm_gpu *gp = &f->gpus[g];

		if (gp->running >= f->cur_k || gp->running >= gp->mem_cap || gp->running >= best_running)
			continue;
		for (unsigned k = 0; k < f->cur_k; k++) {
			struct slot *s = &f->slots[g * f->max_k + k];

			if (!s->busy) {
				best = s;
				best_running = gp->running;
				break;
			}
		}
	}
	return best;
}

/* No GPU can ever take a job of this size: every job is refused. */
static bool never_fits(const struct farm *f)
{
	for (size_t g = 0; g < f->n_gpus; g++) {
		if (f->gpus[g].mem_cap > 0)
			return false;
	}
	return true;
}

static int refuse_for_memory(struct farm *f, const struct job_ref *j)
{
	struct slot s;
	char size[32], line[512];
	size_t job = j->job;
	int fd, rc, n;

	memset(&s, 0, sizeof(s));
	s.job = job;
	s.hash = j->hash;
	s.attempts = j->attempts;
	s.attempt = j->last_attempt + 1;
	free(j->argv);
	s.start_unix_s = unix_now();
	snprintf(s.err_rel, sizeof(s.err_rel), "out/%zu.%u.err", job, s.attempt);
	rc = open_output(f, s.err_rel, &fd);
	if (rc)
		return rc;
	if (gpushare_format_mps_size(f->c->mem_per_job_bytes, size, sizeof(size)) != GPUSHARE_OK)
		snprintf(size, sizeof(size), "%" PRIu64 " bytes", f->c->mem_per_job_bytes);
	n = snprintf(line, sizeof(line), "gpushare: job %zu not started: --mem-per-job %s is more than the free memory of "
			 "every chosen GPU\n", job, size);
	if (n > 0 && write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
		n = 0;
	close(fd);
	f->queued--;
	return attempt_ended(f, &s, FARM_REFUSED, 0, 0);
}

/* Start jobs while slots are free, jobs wait and no stop was asked. */
static int dispatch(struct farm *f)
{
	int rc = GPUSHARE_OK;

	while (!rc && farm_stop_level == 0 && f->queued) {
		struct slot *s = NULL;
		struct job_ref j;
		int got;

		if (f->calibrating && f->round_started >= f->round_quota)
			break;
		if (!(f->c->mem_per_job_bytes && never_fits(f)) && !(s = free_slot(f)))
			break;
		if ((got = next_job(f, &j)) <= 0)
			return got;
		rc = s ? start_job(f, s, &j) : refuse_for_memory(f, &j);
	}
	return rc;
}

/* ---- watching running jobs ---- */

static int finish_slot(struct farm *f, struct slot *s)
{
	uint64_t end = gpushare_now_ns();
	int ws = s->ch.wstatus;
	enum farm_outcome o;
	int rc;

	/* What the job left in its process group (a shell's `cmd &`) is killed. */
	gpushare_child_reap_group(&s->ch);
	gpushare_child_release(&s->ch);
	s->busy = false;
	f->running--;
	f->gpus[s->gpu].running--;
	f->close_busy = f->gpus[s->gpu].running == 0; /* this attempt ends the GPU's busy period */
	if (s->timed_out)
		o = FARM_TIMEOUT;
	else if (s->stopped)
		o = FARM_STOPPED;
	else
		o = gpushare_child_ok(ws) ? FARM_OK : FARM_FAILED;
	rc = attempt_ended(f, s, o, ws, end);
	free(s->argv);
	s->argv = NULL;
	return rc;
}

/* Timeouts and stops: SIGTERM to the job's group, SIGKILL after a grace. */
static void enforce(struct farm *f, uint64_t now)
{
	for (size_t i = 0; i < f->n_gpus * f->max_k; i++) {
		struct slot *s = &f->slots[i];

		if (!s->busy || s->ch.exited)
			continue;
		if (s->kill_ns && now >= s->kill_ns) {
			gpushare_child_signal(&s->ch, SIGKILL);
			s->kill_ns = UINT64_MAX;
			continue;
		}
		if (s->kill_ns)
			continue;
		if (s->deadline_ns && now >= s->deadline_ns) {
			s->timed_out = true;
		} else if (farm_stop_level >= 2) {
			s->stopped = true;
		} else {
			continue;
		}
		gpushare_child_signal(&s->ch, SIGTERM);
		s->kill_ns = now + TERM_GRACE_NS;
	}
}

/* Sleep until a job ends, a deadline comes or the tick passes. */
static void wait_some(struct farm *f, uint64_t now)
{
	struct pollfd pfd[FARM_MAX_GPUS * 4];
	struct pollfd *p = pfd;
	size_t n = 0, total = f->n_gpus * f->max_k;
	uint64_t sleep_ns = TICK_NS;
	bool fallback = false;

	if (total > sizeof(pfd) / sizeof(pfd[0])) {
		p = malloc(total * sizeof(*p));
		if (!p) {
			p = pfd;
			fallback = true;
		}
	}
	for (size_t i = 0; i < total; i++) {
		const struct slot *s = &f->slots[i];
		uint64_t next = s->kill_ns && s->kill_ns != UINT64_MAX ? s->kill_ns : s->deadline_ns;

		if (!s->busy)
			continue;
		if (next && next > now && next - now < sleep_ns)
			sleep_ns = next - now;
		else if (next && next <= now)
			sleep_ns = 0;
		if (s->ch.pidfd < 0 || fallback) {
			fallback = true;
			continue;
		}
		p[n].fd = s->ch.pidfd;
		p[n].events = POLLIN;
		p[n].revents = 0;
		n++;
	}
	if (fallback && sleep_ns > NO_PIDFD_TICK_NS)
		sleep_ns = NO_PIDFD_TICK_NS;
	if (!f->running && sleep_ns > NO_PIDFD_TICK_NS * 5)
		sleep_ns = NO_PIDFD_TICK_NS * 5;
	if (sleep_ns)
		poll(fallback ? NULL : p, fallback ? 0 : n, (int)((sleep_ns + NS_PER_MS - 1) / NS_PER_MS));
	if (p != pfd)
		free(p);
}

/* ---- calibration ---- */

static void calibration_round(struct farm *f)
{
	f->round_quota = 2ULL * f->cur_k * f->n_gpus;
	f->round_started = f->round_ended = 0;
	f->round_t0_ns = f->round_last_end_ns = 0;
}

/* After a drained round: keep K, double it, or settle. */
static void calibration_step(struct farm *f)
{
	struct gpushare_farm_result *r = f->r;
	double span = f->round_last_end_ns > f->round_t0_ns ? (double)(f->round_last_end_ns - f->round_t0_ns) / 1e9 : 0;
	double rate = span > 0 ? (double)f->round_ended / span : 0;
	bool complete = f->round_started >= f->round_quota;
	bool settle = false;

	if (r->n_calibration < sizeof(r->calibration) / sizeof(r->calibration[0])) {
		r->calibration[r->n_calibration].slots = f->cur_k;
		r->calibration[r->n_calibration].jobs_per_s = rate;
		r->calibration[r->n_calibration].jobs = f->round_ended;
		r->n_calibration++;
	}
	if (!f->best_k || rate >= f->best_rate * CALIBRATION_GAIN) {
		f->best_k = f->cur_k;
		f->best_rate = rate;
	} else {
		settle = true;  /* no gain from the larger K */
	}
	if (!complete || f->cur_k * 2 > f->max_k || r->n_calibration >= sizeof(r->calibration) / sizeof(r->calibration[0]))
		settle = true;
	for (size_t g = 0; g < f->n_gpus && !settle; g++) {
		if (f->gpus[g].mem_cap <= f->cur_k)
			settle = true; /* memory admits no more */
	}
	if (settle) {
		f->calibrating = false;
		f->cur_k = f->best_k;
		r->slots = f->cur_k;
		return;
	}
	f->cur_k *= 2;
	calibration_round(f);
}

/* ---- the run ---- */

static int run_loop(struct farm *f)
{
	int rc = GPUSHARE_OK;

	for (;;) {
		uint64_t now = gpushare_now_ns();
		bool ended = false;

		enforce(f, now);
		for (size_t i = 0; i < f->n_gpus * f->max_k && !rc; i++) {
			struct slot *s = &f->slots[i];

			if (s->busy && gpushare_child_poll(&s->ch)) {
				rc = finish_slot(f, s);
				ended = true;
			}
		}
		if (!rc)
			rc = flush_journal(f); /* before anything else starts */
		if (rc)
			break;
		if (f->calibrating && f->running == 0 &&
		    (f->round_started >= f->round_quota || (!f->queued && f->round_started)))
			calibration_step(f);
		rc = dispatch(f);
		if (!rc)
			rc = flush_journal(f); /* jobs refused while dispatching */
		if (rc)
			break;
		update_metrics(f);
		progress(f, ended);
		if (gpushare_now_ns() - f->last_live_ns >= PROGRESS_NS) {
			write_live(f);
			f->last_live_ns = gpushare_now_ns();
		}
		if (!f->running && (!f->queued || farm_stop_level > 0))
			break;
		wait_some(f, gpushare_now_ns());
	}
	if (f->calibrating) {
		f->calibrating = false;
		if (f->round_ended)
			calibration_step(f);
		f->calibrating = false;
		if (f->best_k)
			f->cur_k = f->r->slots = f->best_k;
	}
	return rc;
}

/* Something went wrong mid-farm (a journal write): stop every running job
 * at once, recording nothing more. */
static void stop_all(struct farm *f)
{
	for (size_t i = 0; f->slots && i < f->n_gpus * f->max_k; i++) {
		struct slot *s = &f->slots[i];

		if (!s->busy)
			continue;
		gpushare_child_stop(&s->ch, TERM_GRACE_NS);
		gpushare_child_release(&s->ch);
		free(s->argv);
		s->argv = NULL;
		s->busy = false;
	}
}

static void summary_from(struct gpushare_farm_summary *out, const struct farm_summary *s)
{
	memset(out, 0, sizeof(*out));
	out->jobs = s->n_jobs;
	out->shard_count = s->shard_count;
	out->shards_seen = s->shards_seen;
	out->done = s->done;
	out->failed = s->failed;
	out->unfinished = s->unfinished;
	out->attempts = s->attempts;
	out->makespan_s = s->makespan_s;
	out->jobs_per_s = s->jobs_per_s;
	out->torn_tail = s->torn_tail;
	out->gpus = s->n_gpus ? calloc(s->n_gpus, sizeof(*out->gpus)) : NULL;
	if (!out->gpus)
		return;
	out->n_gpus = s->n_gpus;
	for (size_t i = 0; i < s->n_gpus; i++) {
		struct gpushare_farm_gpu *g = &out->gpus[i];

		snprintf(g->id, sizeof(g->id), "%s", s->gpus[i].id);
		g->index = -1;
		g->attempts = s->gpus[i].attempts;
		g->job_s = s->gpus[i].job_s;
		g->busy_s = s->gpus[i].busy_s;
		g->busy_fraction = s->gpus[i].busy_fraction;
	}
}

/* DIR/running.json, when a farm wrote one (lib: write_live). */
static bool read_live(const char *dir, struct gpushare_farm_live *l)
{
	char path[GPUSHARE_PATH_MAX + 32], chunk[4096], host[256];
	struct gpushare_buf text = { 0 };
	const cJSON *v;
	cJSON *o;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/" LIVE_NAME, dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0 && text.len < (16u << 20)) {
		if (gpushare_buf_add(&text, chunk, (size_t)n) != GPUSHARE_OK)
			break;
	}
	close(fd);
	o = cJSON_Parse(gpushare_buf_str(&text));
	gpushare_buf_release(&text);
	if (!o)
		return false;
	memset(l, 0, sizeof(*l));
	snprintf(l->dir, sizeof(l->dir), "%s", dir);
	if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(o, "pid")))
		l->pid = (long)v->valuedouble;
	if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(o, "host")))
		snprintf(l->host, sizeof(l->host), "%s", v->valuestring);
	if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(o, "running")))
		l->running = (uint64_t)v->valuedouble;
	if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(o, "queued")))
		l->queued = (uint64_t)v->valuedouble;
	if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(o, "slots")))
		l->slots = (unsigned)v->valuedouble;
	if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(o, "updated_unix_s")))
		l->updated_unix_s = v->valuedouble;
	cJSON_Delete(o);
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		l->stale = strcmp(host, l->host) == 0 && (l->pid <= 0 || !gpushare_pid_alive((pid_t)l->pid));
	}
	return true;
}

int gpushare_farm_status(const char *const *dirs, size_t n, struct gpushare_farm_summary *out)
{
	char **paths = calloc(n ? n : 1, sizeof(*paths));
	struct farm_summary s;
	int rc = GPUSHARE_OK;

	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	if (!paths)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n && !rc; i++) {
		size_t len = strlen(dirs[i]) + sizeof(FARM_JOURNAL_NAME) + 1;

		if (!(paths[i] = malloc(len)))
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		else
			snprintf(paths[i], len, "%s/%s", dirs[i], FARM_JOURNAL_NAME);
	}
	if (!rc)
		rc = gpushare_journal_summary_build((const char *const *)paths, n, &s);
	if (!rc) {
		summary_from(out, &s);
		if (s.n_gpus && !out->gpus)
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	if (!rc && !(out->live = calloc(n ? n : 1, sizeof(*out->live))))
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t i = 0; !rc && i < n; i++) {
		if (read_live(dirs[i], &out->live[out->n_live]))
			out->n_live++;
	}
	gpushare_journal_summary_release(&s);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return rc;
}

void gpushare_farm_summary_release(struct gpushare_farm_summary *s)
{
	free(s->gpus);
	free(s->live);
	memset(s, 0, sizeof(*s));
}

void gpushare_farm_result_release(struct gpushare_farm_result *r)
{
	gpushare_farm_summary_release(&r->summary);
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
	if (sh.mps_percentage > 0 && c->strategy == GPUSHARE_STRATEGY_TIMESLICE)
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
	f->slots = calloc(f->n_gpus * f->max_k, sizeof(*f->slots));
	if (!f->slots)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t g = 0; g < f->n_gpus; g++) {
		for (unsigned k = 0; k < f->max_k; k++) {
			struct slot *s = &f->slots[g * f->max_k + k];

			gpushare_child_init(&s->ch);
			s->gpu = g;
			s->k = k;
		}
	}
	return GPUSHARE_OK;
}

int gpushare_farm_run(const struct gpushare_farm_config *c, struct gpushare_farm_result *r)
{
	struct gpushare_errsave e;
	struct farm f;
	size_t failed;
	int rc;

	memset(r, 0, sizeof(*r));
	memset(&f, 0, sizeof(f));
	f.c = c;
	f.r = r;
	f.journal.fd = -1;
	farm_stop_level = 0;
	rc = check_source(&f);
	if (!rc)
		rc = pick_shard(&f);
	if (!rc)
		rc = pick_gpus(&f);
	if (!rc)
		rc = memory_caps(&f);
	if (!rc)
		rc = slurm_share(&f);
	if (!rc)
		rc = alloc_slots(&f);
	if (!rc && !(f.pending = calloc(PENDING_MAX, sizeof(*f.pending))))
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	if (!rc && (rc = open_dir(&f)) == GPUSHARE_E_NOT_FOUND)
		rc = GPUSHARE_E_IO; /* a file is missing: the detail names it */
	if (f.stdin_spool[0])
		unlink(f.stdin_spool);
	if (!rc) {
		const struct gpushare_strategy_ops *st = gpushare_strategy_get(c->strategy);

		snprintf(r->strategy, sizeof(r->strategy), "%s", st ? st->name : "?");
		r->shard_index = f.shard.index;
		r->shard_count = f.shard.count;
		r->shard_jobs = gpushare_farm_shard_size(&f.shard, (size_t)f.n_jobs);
		r->skipped = f.rs.done + f.rs.failed;
		f.queued = f.rs.pending;
		f.calibrating = c->slots == 0 && f.queued > 0;
		r->calibrated = f.calibrating;
		r->slots = f.cur_k;
		if (f.calibrating)
			calibration_round(&f);
		/* Nothing left to run (a finished farm resumed): no daemon either. */
		rc = f.queued ? setup_strategy(&f) : GPUSHARE_OK;
	}
	if (!rc && c->hpc_job_mapping_dir)
		rc = job_mapping(&f, true);
	if (!rc && c->metrics_listen)
		rc = gpushare_metrics_farm_start(c->metrics_listen, f.gpus ? f.n_gpus : 0, &f.metrics);
	if (!rc) {
		for (size_t i = 0; f.metrics && i < f.n_gpus; i++)
			gpushare_metrics_farm_gpu_name(f.metrics, i, f.gpus[i].id.uuid, f.gpus[i].id.index);
		f.cfg.slots = c->slots;
		snprintf(f.cfg.slurm, sizeof(f.cfg.slurm), "%s", r->slurm);
		rc = gpushare_farm_journal_write_header(&f.journal, &f.cfg);
		f.header_written = !rc;
		if (!rc)
			rc = gpushare_farm_journal_sync_in_background(&f.journal);
	}
	if (!rc) {
		f.t0_ns = f.last_progress_ns = gpushare_now_ns();
		f.t0_unix_s = unix_now();
		update_metrics(&f);
		progress(&f, true);
		rc = run_loop(&f);
		if (!rc)
			rc = gpushare_farm_journal_sync(&f.journal); /* every record durable */
		r->run_s = (double)(gpushare_now_ns() - f.t0_ns) / 1e9;
		r->run_jobs_per_s = r->run_s > 0 ? (double)r->ended / r->run_s : 0;
		r->interrupted = farm_stop_level > 0;
		r->not_started += f.queued;
		update_metrics(&f);
		progress(&f, true);
		remove_live(&f);
	}
	gpushare_error_save(&e);
	stop_all(&f);
	if (f.mapped)
		job_mapping(&f, false);
	if (f.prepared)
		rc = f.st->teardown(&f.sx, rc);
	if (f.run_dir[0])
		gpushare_rundir_remove(f.run_dir);
	free_retries(&f);
	gpushare_farm_cursor_close(&f.cur);
	failed = f.rs.failed;
	gpushare_farm_resume_release(&f.rs);   /* before the summary: one per-job array at a time */
	if (f.journal_open)
		gpushare_farm_journal_close(&f.journal);
	undo_new_dir(&f);
	if (f.r->dir[0] && f.header_written) { /* a farm that never started has no summary */
		const char *dirs[1] = { f.dir };
		struct gpushare_errsave e2;

		gpushare_error_save(&e2);
		if (gpushare_farm_status(dirs, 1, &r->summary) == GPUSHARE_OK)
			r->have_summary = true;
		gpushare_error_restore(&e2, GPUSHARE_E_SYS);
	}
	gpushare_metrics_farm_stop(f.metrics);
	free(f.slots);
	free(f.pending);
	free(f.gpus);
	if (f.nvml)
		gpushare_nvml_close();
	rc = gpushare_error_restore(&e, rc);
	if (!rc && r->interrupted)
		rc = gpushare_fail(GPUSHARE_E_INTERRUPTED, "stopped with %" PRIu64 " jobs not run",
				   r->not_started);
	if (!rc && failed > 0)
		rc = gpushare_fail(GPUSHARE_E_WORKER, "%zu of the shard's %" PRIu64 " jobs failed; see the journal in %s",
				   failed, r->shard_jobs, r->dir);
	return rc;
}

/* ---- output ---- */

static cJSON *summary_obj(const struct gpushare_farm_summary *s)
{
	cJSON *o = cJSON_CreateObject(), *gpus, *live;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "jobs", (double)s->jobs);
	cJSON_AddNumberToObject(o, "shards", (double)s->shard_count);
	cJSON_AddNumberToObject(o, "shards_seen", (double)s->shards_seen);
	cJSON_AddNumberToObject(o, "done", (double)s->done);
	cJSON_AddNumberToObject(o, "failed", (double)s->failed);
	cJSON_AddNumberToObject(o, "unfinished", (double)s->unfinished);
	cJSON_AddNumberToObject(o, "attempts", (double)s->attempts);
	cJSON_AddNumberToObject(o, "makespan_seconds", s->makespan_s);
	cJSON_AddNumberToObject(o, "jobs_per_second", s->jobs_per_s);
	cJSON_AddBoolToObject(o, "torn_tail", s->torn_tail);
	gpus = cJSON_AddArrayToObject(o, "gpus");
	for (size_t i = 0; gpus && i < s->n_gpus; i++) {
		cJSON *g = cJSON_CreateObject();

		if (!g)
			break;
		cJSON_AddStringToObject(g, "id", s->gpus[i].id);
		cJSON_AddNumberToObject(g, "attempts", (double)s->gpus[i].attempts);
		cJSON_AddNumberToObject(g, "job_seconds", s->gpus[i].job_s);
		cJSON_AddNumberToObject(g, "busy_seconds", s->gpus[i].busy_s);
		cJSON_AddNumberToObject(g, "busy_fraction", s->gpus[i].busy_fraction);
		cJSON_AddItemToArray(gpus, g);
	}
	live = cJSON_AddArrayToObject(o, "running");
	for (size_t i = 0; live && i < s->n_live; i++) {
		const struct gpushare_farm_live *l = &s->live[i];
		cJSON *e = cJSON_CreateObject();

		if (!e)
			break;
		cJSON_AddStringToObject(e, "dir", l->dir);
		cJSON_AddNumberToObject(e, "pid", (double)l->pid);
		cJSON_AddStringToObject(e, "host", l->host);
		cJSON_AddNumberToObject(e, "running", (double)l->running);
		cJSON_AddNumberToObject(e, "queued", (double)l->queued);
		cJSON_AddNumberToObject(e, "slots", l->slots);
		cJSON_AddNumberToObject(e, "updated_unix_s", l->updated_unix_s);
		cJSON_AddBoolToObject(e, "stale", l->stale);
		cJSON_AddItemToArray(live, e);
	}
	return o;
}

static cJSON *run_obj(const struct gpushare_farm_result *r)
{
	cJSON *o = cJSON_CreateObject(), *cal;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "dir", r->dir);
	cJSON_AddStringToObject(o, "strategy", r->strategy);
	cJSON_AddNumberToObject(o, "shard_index", (double)r->shard_index);
	cJSON_AddNumberToObject(o, "shard_count", (double)r->shard_count);
	cJSON_AddNumberToObject(o, "shard_jobs", (double)r->shard_jobs);
	cJSON_AddNumberToObject(o, "skipped", (double)r->skipped);
	if (r->slurm[0])
		cJSON_AddStringToObject(o, "slurm", r->slurm);
	else
		cJSON_AddNullToObject(o, "slurm");
	cJSON_AddNumberToObject(o, "attempts", (double)r->ended);
	cJSON_AddNumberToObject(o, "ok", (double)r->ok);
	cJSON_AddNumberToObject(o, "failed_attempts", (double)r->failed_attempts);
	cJSON_AddNumberToObject(o, "timeouts", (double)r->timeouts);
	cJSON_AddNumberToObject(o, "refused", (double)r->refused);
	cJSON_AddNumberToObject(o, "stopped", (double)r->stopped);
	cJSON_AddNumberToObject(o, "seconds", r->run_s);
	cJSON_AddNumberToObject(o, "attempts_per_second", r->run_jobs_per_s);
	cJSON_AddNumberToObject(o, "slots", r->slots);
	cJSON_AddBoolToObject(o, "calibrated", r->calibrated);
	cal = cJSON_AddArrayToObject(o, "calibration");
	for (size_t i = 0; cal && i < r->n_calibration; i++) {
		cJSON *c = cJSON_CreateObject();

		if (!c)
			break;
		cJSON_AddNumberToObject(c, "slots", r->calibration[i].slots);
		cJSON_AddNumberToObject(c, "jobs", (double)r->calibration[i].jobs);
		cJSON_AddNumberToObject(c, "jobs_per_second", r->calibration[i].jobs_per_s);
		cJSON_AddItemToArray(cal, c);
	}
	cJSON_AddBoolToObject(o, "interrupted", r->interrupted);
	cJSON_AddNumberToObject(o, "not_started", (double)r->not_started);
	return o;
}

int gpushare_farm_summary_json(const struct gpushare_farm_summary *s, const struct gpushare_farm_result *r,
			       char **out)
{
	cJSON *doc = cJSON_CreateObject(), *sum = summary_obj(s), *run = r ? run_obj(r) : NULL;

	*out = NULL;
	if (!doc || !sum || (r && !run)) {
		cJSON_Delete(doc);
		cJSON_Delete(sum);
		cJSON_Delete(run);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	cJSON_AddStringToObject(doc, "gpushare_version", gpushare_version());
	cJSON_AddItemToObject(doc, "summary", sum);
	if (run)
		cJSON_AddItemToObject(doc, "run", run);
	*out = cJSON_Print(doc);
	cJSON_Delete(doc);
	return *out ? GPUSHARE_OK : gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
}

static void duration_text(double s, char *buf, size_t len)
{
	if (s < 60)
		snprintf(buf, len, "%.1f s", s);
	else if (s < 3600)
		snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
	else
		snprintf(buf, len, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

int gpushare_farm_summary_write(FILE *f, const struct gpushare_farm_summary *s, const struct gpushare_farm_result *r)
{
	char span[32];

	if (r) {
		fprintf(f, "farm %s: %s, shard %lu/%lu (%" PRIu64 " jobs)", r->dir, r->strategy, r->shard_index,
			r->shard_count, r->shard_jobs);
		if (r->calibrated && r->n_calibration) {
			fprintf(f, ", %u slots per GPU by calibration (", r->slots);
			for (size_t i = 0; i < r->n_calibration; i++)
				fprintf(f, "%sK=%u: %.3g jobs/s over %" PRIu64 " jobs", i ? ", " : "",
					r->calibration[i].slots, r->calibration[i].jobs_per_s, r->calibration[i].jobs);
			fprintf(f, ")\n");
		} else {
			fprintf(f, ", %u slot%s per GPU\n", r->slots, r->slots == 1 ? "" : "s");
		}
		if (r->slurm[0])
			fprintf(f, "slurm: honoured %s%s\n", r->slurm,
				r->slurm_max_slots ? "; the shards bound the slots per GPU" : "");
		duration_text(r->run_s, span, sizeof(span));
		fprintf(f, "this run: %" PRIu64 " attempts in %s (%.3g per second): %" PRIu64 " ok, %" PRIu64
			   " failed, %" PRIu64 " timed out, %" PRIu64 " refused, %" PRIu64 " stopped",
			r->ended, span, r->run_jobs_per_s, r->ok, r->failed_attempts, r->timeouts, r->refused, r->stopped);
		if (r->skipped)
			fprintf(f, "; %" PRIu64 " finished earlier", r->skipped);
		fprintf(f, "\n");
		if (r->interrupted)
			fprintf(f, "stopped: %" PRIu64 " jobs not run; continue with: gpushare farm --resume %s\n",
				r->not_started, r->dir);
	}
	duration_text(s->makespan_s, span, sizeof(span));
	fprintf(f, "jobs: %" PRIu64 " done, %" PRIu64 " failed, %" PRIu64 " unfinished of %" PRIu64, s->done, s->failed,
		s->unfinished, s->jobs);
	if (s->shard_count > 1)
		fprintf(f, " (%zu of %lu shards seen)", s->shards_seen, s->shard_count);
	fprintf(f, "\n");
	if (s->jobs_per_s > 0)
		fprintf(f, "makespan %s, %.3g jobs/s\n", span, s->jobs_per_s);
	else
		fprintf(f, "makespan %s, jobs/s not defined yet\n", span);
	for (size_t i = 0; i < s->n_gpus; i++)
		fprintf(f, "  GPU %-42s %6" PRIu64 " attempts, busy %5.1f %% of the makespan\n", s->gpus[i].id,
			s->gpus[i].attempts, 100 * s->gpus[i].busy_fraction);
	for (size_t i = 0; i < s->n_live; i++) {
		const struct gpushare_farm_live *l = &s->live[i];

		if (l->stale)
			fprintf(f, "%s: its farm (pid %ld on %s) is gone; --resume %s runs what it left\n", l->dir, l->pid,
				l->host, l->dir);
		else
			fprintf(f, "%s: running now: %" PRIu64 " jobs, %" PRIu64 " queued, %u slots per GPU (pid %ld on %s, "
				   "%.1f s ago)\n", l->dir, l->running, l->queued, l->slots, l->pid, l->host,
				unix_now() - l->updated_unix_s);
	}
	if (s->torn_tail)
		fprintf(f, "note: a journal's last line was torn (a farm was killed while writing it) and was ignored\n");
	if (fflush(f) != 0 || ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the summary: %s", strerror(errno));
	return GPUSHARE_OK;
}
