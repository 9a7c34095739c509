/*
 * The farm directory (farm_dir.h): the job source checked and parsed, its
 * copy DIR/jobs.jsonl written as it is parsed (farm_jobs.c) and installed;
 * the directory created for a new farm, or, for --resume, its journal read
 * back in one pass into the queue's job states, the job list (given again,
 * or the directory's copy) checked against it, and the first run's options
 * taken from its first header. A farm that fails before its run loop in a
 * directory it created leaves nothing behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "gpushare/farm.h"
#include "gpushare/gpushare.h"
#include "gpushare/strategy.h"
#include "gpushare/util.h"
#include "strategy.h"
#include "farm_jobs.h"
#include "farm_copy.h"
#include "farm_journal.h"
#include "farm_live.h"
#include "farm_engine.h"
#include "farm_dir.h"

static bool has_source(const struct gpushare_farm_config *c)
{
	return c->jobfile || c->n_tmpl || c->args_file || c->range;
}

/* Open a job or argument file: a regular file only (a FIFO would block, a
 * device such as /dev/zero never ends, a directory fails to read); a pipe
 * is given as '-', standard input. */
static int open_regular(const char *path, FILE **out)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	*out = NULL;
	if (fd < 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is not a regular file (a FIFO, a device or a directory); "
				     "give a pipe as '-' (standard input)", path);
	}
	/* Reads of a regular file never block: O_NONBLOCK can stay. */
	if (!(*out = fdopen(fd, "r"))) {
		close(fd);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	return GPUSHARE_OK;
}

/* The job source before anything is created: the options go together, the
 * range parses, the files can be opened. */
int farm_check_source(struct farm *f)
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
	if (open_regular(path, &fp))
		return GPUSHARE_E_IO;
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
	return open_regular(path, fp);
}

/* Parse the job source into list (which may have a sink). */
int farm_load_source(struct farm *f, struct farm_jobs *list)
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

static void header_config(struct farm *f, uint64_t jobs_hash)
{
	const struct gpushare_farm_config *c = f->c;
	struct farm_config *h = &f->cfg;
	const struct gpushare_strategy_ops *st = gpushare_strategy_get(c->strategy);

	memset(h, 0, sizeof(*h));
	h->n_jobs = f->q.n_jobs;
	h->jobs_hash = jobs_hash;
	h->mode = f->mode;
	snprintf(h->jobs_source, sizeof(h->jobs_source), "%s", f->jobs_source);
	h->shard = f->shard;
	h->retries = c->retries;
	h->slots = c->slots;
	snprintf(h->strategy, sizeof(h->strategy), "%s", st ? st->name : "?");
	h->timeout_ns = c->timeout_ns;
	h->timeout_factor = c->timeout_factor;
	h->mem_per_job_bytes = c->mem_per_job_bytes;
	if (gethostname(h->hostname, sizeof(h->hostname)) != 0)
		snprintf(h->hostname, sizeof(h->hostname), "unknown");
	h->hostname[sizeof(h->hostname) - 1] = '\0';
	for (size_t i = 0; i < f->n_gpus && i < FARM_MAX_GPUS; i++)
		h->gpus[i] = f->gpu_ids[i];
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
	for (;;) {
		errno = 0;
		n = fread(buf, 1, sizeof(buf), stdin);
		if (n && fwrite(buf, 1, n, out) != n) {
			rc = gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s", f->stdin_spool, strerror(errno));
			break;
		}
		if (n < sizeof(buf) && ferror(stdin)) {
			if (errno == EINTR && !farm_stop_level) {
				clearerr(stdin);
				continue;
			}
			rc = errno == EINTR ? gpushare_fail(GPUSHARE_E_INTERRUPTED, "reading standard input was interrupted by a stop")
					    : gpushare_fail(GPUSHARE_E_IO, "cannot read standard input: %s",
							    strerror(errno ? errno : EIO));
			break;
		}
		if (n < sizeof(buf) && feof(stdin))
			break;
	}
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
	rc = farm_load_source(f, &list);
	snprintf(f->jobs_source, sizeof(f->jobs_source), "%s", list.source);
	gpushare_farm_jobs_release(&list);
	if ((rc = close_private(tmp, out, rc)))
		return rc;
	rc = gpushare_farm_cursor_open(&f->q.cur, tmp);
	if (!rc)
		rc = gpushare_farm_cursor_scan(&f->q.cur, f->mode, &f->q.n_jobs, list_hash);
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
	snprintf(f->q.cur.path, sizeof(f->q.cur.path), "%s", path);
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
	rc = farm_load_source(f, &list);
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

/* Every attempt the journal records must carry its job's hash: the list
 * hash only says the list is the journal's, not that each record belongs
 * to its job (a hand-edited record would count a job done that never ran).
 * The job hashes are read from the list in blocks of at most
 * HASH_BLOCK jobs (8 MiB), and the journal once per block: one extra pass
 * for farms of up to a million jobs, memory bounded whatever the size. */
#define HASH_BLOCK ((uint64_t)1 << 20)

struct hash_check {
	const uint64_t *h;
	uint64_t base, n;
};

static int hash_record(void *arg, struct farm_journal_data *d, const struct farm_record *rec)
{
	const struct hash_check *k = arg;

	if (rec->job < k->base || rec->job - k->base >= k->n || rec->hash == k->h[rec->job - k->base])
		return GPUSHARE_OK;
	return gpushare_fail(GPUSHARE_E_INVAL,
			     "%s: an attempt of job %" PRIu64 " has hash %016" PRIx64 ", but job %" PRIu64 " of the list "
			     "is %016" PRIx64 " (a record edited by hand, or of another list); refusing to resume",
			     d->path, FARM_JOB_NUMBER(rec->job), rec->hash, FARM_JOB_NUMBER(rec->job), k->h[rec->job - k->base]);
}

static int check_record_hashes(struct farm *f)
{
	char path[GPUSHARE_PATH_MAX + 32];
	uint64_t block = f->q.n_jobs < HASH_BLOCK ? f->q.n_jobs : HASH_BLOCK;
	struct hash_check k = { NULL, 0, 0 };
	const struct farm_journal_scan scan = { NULL, hash_record, &k, NULL };
	uint64_t *h;
	int rc;

	if (!f->q.n_jobs)
		return GPUSHARE_OK;
	if (!(h = malloc(block * sizeof(*h))))
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	k.h = h;
	dir_path(f, FARM_JOURNAL_NAME, path, sizeof(path));
	rc = gpushare_farm_cursor_rewind(&f->q.cur);
	for (k.base = 0; !rc && k.base < f->q.n_jobs; k.base += k.n) {
		struct farm_journal_data d;

		for (k.n = 0; !rc && k.n < block && k.base + k.n < f->q.n_jobs; k.n++) {
			rc = gpushare_farm_cursor_next(&f->q.cur, true, NULL, &h[k.n]);
			if (rc == 0)
				rc = gpushare_fail(GPUSHARE_E_INVAL, "'%s' ended before job %" PRIu64, f->q.cur.path,
						   FARM_JOB_NUMBER(k.base + k.n));
			else if (rc == 1)
				rc = GPUSHARE_OK;
		}
		if (!rc && !(rc = gpushare_farm_journal_scan_path(path, &d, &scan)))
			gpushare_farm_journal_data_release(&d);
	}
	free(h);
	if (!rc)
		rc = gpushare_farm_cursor_rewind(&f->q.cur);
	return rc;
}

/* Resuming: the journal read in one pass into the resume state; the job
 * list (given again, or the directory's copy) checked against it. */
static int open_resume(struct farm *f)
{
	const struct gpushare_farm_config *c = f->c;
	struct resume_scan rsc = { &f->q.rs, 0 };
	const struct farm_journal_scan scan = { resume_header, resume_record, &rsc, NULL };
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
	/* A list given again without --shell or --no-shell is read as the
	 * first run read it (a journal of an older gpushare holds argv jobs). */
	if (has_source(c) && !(c->given & GPUSHARE_FARM_GIVEN_SHELL))
		f->mode = old->mode;
	if (has_source(c)) {
		if ((c->jobfile && !strcmp(c->jobfile, "-")) || (c->args_file && !strcmp(c->args_file, "-")))
			rc = spool_stdin(f);
		if (!rc)
			rc = write_copy(f, &hash);
		header_config(f, hash);
		if (!rc && (f->q.n_jobs != old->n_jobs || f->mode != old->mode || hash != old->jobs_hash)) {
			char tmp[GPUSHARE_PATH_MAX + 32];

			gpushare_farm_cursor_close(&f->q.cur);
			dir_path(f, COPY_TMP_NAME, tmp, sizeof(tmp));
			unlink(tmp);
			rc = changed_list(f, hash);
		} else if (!rc && (rc = check_record_hashes(f))) {
			char tmp[GPUSHARE_PATH_MAX + 32];

			/* Refused: the directory's copy stays as it was. */
			gpushare_farm_cursor_close(&f->q.cur);
			dir_path(f, COPY_TMP_NAME, tmp, sizeof(tmp));
			unlink(tmp);
		}
		if (!rc)
			rc = install_copy(f);
	} else {
		f->mode = old->mode;
		snprintf(f->jobs_source, sizeof(f->jobs_source), "%s", old->jobs_source);
		dir_path(f, FARM_JOBS_COPY_NAME, path, sizeof(path));
		rc = gpushare_farm_cursor_open(&f->q.cur, path);
		if (rc == GPUSHARE_E_NOT_FOUND)
			rc = gpushare_fail(GPUSHARE_E_INVAL, "'%s' holds no copy of the job list (a farm of an older gpushare?); "
					   "give the job list again", f->dir);
		if (!rc)
			rc = gpushare_farm_cursor_scan(&f->q.cur, f->mode, &f->q.n_jobs, &hash);
		if (!rc && (f->q.n_jobs != old->n_jobs || hash != old->jobs_hash))
			rc = gpushare_fail(GPUSHARE_E_INVAL, "'%s' holds %" PRIu64 " jobs (list hash %016" PRIx64 ") but the journal's "
					   "farm had %" PRIu64 " (%016" PRIx64 "); refusing to resume: give the job list again",
					   path, f->q.n_jobs, hash, old->n_jobs, old->jobs_hash);
		if (!rc)
			rc = check_record_hashes(f);
		header_config(f, hash);
	}
	if (!rc && (old->shard.index != f->shard.index || old->shard.count != f->shard.count))
		rc = gpushare_fail(GPUSHARE_E_INVAL,
				   "this is shard %lu/%lu but the journal's farm was shard %lu/%lu; "
				   "resume each shard in its own directory", f->shard.index, f->shard.count,
				   old->shard.index, old->shard.count);
	if (c->rerun_failed)
		gpushare_farm_resume_rerun_failed(&f->q.rs);
	if (!rc)
		rc = gpushare_farm_resume_end(&f->q.rs, &f->shard, c->retries);
	gpushare_farm_journal_data_release(&d);
	return rc;
}

/* The journal is locked while the farm that wrote running.json is dead
 * (or wrote none): its keeper is still ending that farm's jobs and
 * recording those that finished. Wait for it (bounded), so that no job
 * starts while an earlier attempt of it runs. */
#define KEEPER_WAIT_NS (15 * NS_PER_S)
static int wait_for_keeper(struct farm *f, bool *existing)
{
	uint64_t t0 = gpushare_now_ns();
	int rc = GPUSHARE_E_BUSY;

	while (rc == GPUSHARE_E_BUSY && gpushare_now_ns() - t0 < KEEPER_WAIT_NS) {
		struct gpushare_farm_live l;

		if (farm_live_read(f->dir, &l) && !l.stale)
			break; /* a farm runs there */
		gpushare_sleep_ns(50 * NS_PER_MS);
		gpushare_clear_error();
		rc = gpushare_farm_journal_open(&f->journal, f->dir, existing);
	}
	return rc;
}

/* The farm directory: created for a new farm (refused when it already
 * holds a journal), required with its journal for --resume. */
int farm_open_dir(struct farm *f)
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
	if (rc == GPUSHARE_E_BUSY && c->resume)
		rc = wait_for_keeper(f, &existing);
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
		rc = gpushare_farm_resume_begin(&f->q.rs, (size_t)f->q.n_jobs);
	if (!rc)
		rc = gpushare_farm_resume_end(&f->q.rs, &f->shard, c->retries);
	return rc;
}

/* A farm that failed before its run loop in a directory it created
 * leaves nothing behind. */
void farm_undo_new_dir(struct farm *f)
{
	static const char *const names[] = { FARM_JOURNAL_NAME, FARM_JOBS_COPY_NAME, COPY_TMP_NAME, STDIN_SPOOL_NAME };
	char path[GPUSHARE_PATH_MAX + 32];

	if (!f->created_dir || f->loop_started || !f->dir[0])
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		dir_path(f, names[i], path, sizeof(path));
		unlink(path);
	}
	dir_path(f, "out", path, sizeof(path));
	rmdir(path);
	rmdir(f->dir);
}

/* ---- resuming with the first run's settings ---- */

struct first_header {
	struct farm_config cfg;
};

static int take_first_header(void *arg, struct farm_journal_data *d, const struct farm_config *cfg)
{
	(void)d;
	((struct first_header *)arg)->cfg = *cfg;
	return 1; /* stop the scan: the first header is all we need */
}

static void seconds_text(uint64_t ns, double factor, char *buf, size_t len)
{
	if (factor > 0)
		snprintf(buf, len, "%gx", factor);
	else if (!ns)
		snprintf(buf, len, "none");
	else
		snprintf(buf, len, "%.9gs", (double)ns / 1e9);
}

static int differs(const char *dir, const char *opt, const char *was, const char *now)
{
	return gpushare_fail(GPUSHARE_E_INVAL,
			     "--resume: the farm in '%s' ran with %s %s, this run asks for %s %s; give the first run's "
			     "options again or leave them out (they are taken from its journal)", dir, opt, was, opt, now);
}

/* The options of a resumed farm: those not given are the first run's
 * (its journal's first header), those given must be the same. eff starts
 * as a copy of the caller's config; gpus_buf holds a recorded GPU list. */
int farm_resume_options(struct gpushare_farm_config *eff, char *gpus_buf, size_t gpus_len)
{
	char path[GPUSHARE_PATH_MAX + 32], a[64], b[64], host[256];
	struct first_header fh;
	const struct farm_journal_scan scan = { take_first_header, NULL, &fh, NULL };
	struct farm_journal_data d;
	const struct farm_config *h = &fh.cfg;
	unsigned given = eff->given;
	int rc, strategy;
	size_t n;

	memset(&fh, 0, sizeof(fh));
	snprintf(path, sizeof(path), "%s/%s", eff->dir, FARM_JOURNAL_NAME);
	rc = gpushare_farm_journal_scan_path(path, &d, &scan);
	if (rc < 0) /* open_dir says what is wrong with the directory */
		return rc == GPUSHARE_E_NOT_FOUND || rc == GPUSHARE_E_IO ? (gpushare_clear_error(), GPUSHARE_OK) : rc;
	if (rc == GPUSHARE_OK)
		gpushare_farm_journal_data_release(&d);
	/* A journal of an earlier gpushare numbered jobs from 0: its records
	 * and out/ files would mix two numberings. */
	if (h->version < 2)
		return gpushare_fail(GPUSHARE_E_DIR, "cannot resume '%s': its farm was written by an earlier gpushare that "
				     "numbered jobs from 0 (journal version %u); this one numbers them from 1 and does not "
				     "append to it. Finish it with that version, or start a new farm (--dir) with the same "
				     "job list ('farm status %s' still reads it)", eff->dir, h->version, eff->dir);
	if (gpushare_strategy_parse_list(h->strategy, &strategy, &n) || n != 1)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s: the first header's strategy '%s' is unknown", path, h->strategy);
	if (!(given & GPUSHARE_FARM_GIVEN_STRATEGY))
		eff->strategy = strategy;
	else if (eff->strategy != strategy)
		return differs(eff->dir, "--strategy", h->strategy, gpushare_strategy_name(eff->strategy));
	if (!(given & GPUSHARE_FARM_GIVEN_SLOTS)) {
		eff->slots = h->slots;
	} else if (eff->slots != h->slots) {
		snprintf(a, sizeof(a), "%u", h->slots);
		snprintf(b, sizeof(b), "%u", eff->slots);
		return differs(eff->dir, "--slots", h->slots ? a : "(none: calibrated)", b);
	}
	/* --retries may change: each run's header records its own, and more
	 * tries for the failed jobs is what a resume is often for. */
	if (!(given & GPUSHARE_FARM_GIVEN_RETRIES))
		eff->retries = h->retries;
	if (!(given & GPUSHARE_FARM_GIVEN_TIMEOUT)) {
		eff->timeout_ns = h->timeout_ns;
		eff->timeout_factor = h->timeout_factor;
	} else if (eff->timeout_ns != h->timeout_ns || eff->timeout_factor != h->timeout_factor) {
		seconds_text(h->timeout_ns, h->timeout_factor, a, sizeof(a));
		seconds_text(eff->timeout_ns, eff->timeout_factor, b, sizeof(b));
		return differs(eff->dir, "--timeout", a, b);
	}
	if (!(given & GPUSHARE_FARM_GIVEN_MEM_PER_JOB)) {
		eff->mem_per_job_bytes = h->mem_per_job_bytes;
	} else if (eff->mem_per_job_bytes != h->mem_per_job_bytes) {
		snprintf(a, sizeof(a), "%" PRIu64 " bytes", h->mem_per_job_bytes);
		snprintf(b, sizeof(b), "%" PRIu64 " bytes", eff->mem_per_job_bytes);
		return differs(eff->dir, "--mem-per-job", h->mem_per_job_bytes ? a : "(none)", b);
	}
	/* The GPUs, by UUID, on the node that ran them (a farm resumed on
	 * another node, a requeued Slurm job, takes that node's). */
	if (!(given & GPUSHARE_FARM_GIVEN_GPUS) && h->n_gpus && h->gpus[0].uuid[0] &&
	    gethostname(host, sizeof(host)) == 0 && (host[sizeof(host) - 1] = '\0', !strcmp(host, h->hostname))) {
		size_t off = 0;

		gpus_buf[0] = '\0';
		for (size_t i = 0; i < h->n_gpus && off < gpus_len; i++)
			off += (size_t)snprintf(gpus_buf + off, gpus_len - off, "%s%s", i ? "," : "", h->gpus[i].uuid);
		if (off < gpus_len)
			eff->gpus = gpus_buf;
	}
	return GPUSHARE_OK;
}

/* --gpus given on resume: the GPUs chosen must be the first run's. */
int farm_check_resume_gpus(const struct farm *f)
{
	char path[GPUSHARE_PATH_MAX + 32], a[1024] = "", b[1024] = "";
	struct first_header fh;
	const struct farm_journal_scan scan = { take_first_header, NULL, &fh, NULL };
	struct farm_journal_data d;
	bool same;
	int rc;

	if (!f->c->resume || !(f->c->given & GPUSHARE_FARM_GIVEN_GPUS) || !f->placed)
		return GPUSHARE_OK;
	memset(&fh, 0, sizeof(fh));
	snprintf(path, sizeof(path), "%s/%s", f->c->dir, FARM_JOURNAL_NAME);
	rc = gpushare_farm_journal_scan_path(path, &d, &scan);
	if (rc < 0)
		return gpushare_clear_error(), GPUSHARE_OK;
	if (rc == GPUSHARE_OK)
		gpushare_farm_journal_data_release(&d);
	same = fh.cfg.n_gpus == f->n_gpus;
	for (size_t i = 0; i < f->n_gpus; i++) {
		size_t la = strlen(a), lb = strlen(b);

		if (i < fh.cfg.n_gpus) {
			same = same && !strcmp(fh.cfg.gpus[i].uuid, f->gpu_ids[i].uuid);
			snprintf(a + la, sizeof(a) - la, "%s%d", la ? "," : "", fh.cfg.gpus[i].index);
		}
		snprintf(b + lb, sizeof(b) - lb, "%s%d", lb ? "," : "", f->gpu_ids[i].index);
	}
	for (size_t i = f->n_gpus; i < fh.cfg.n_gpus; i++) {
		size_t la = strlen(a);

		snprintf(a + la, sizeof(a) - la, "%s%d", la ? "," : "", fh.cfg.gpus[i].index);
	}
	return same ? GPUSHARE_OK : differs(f->c->dir, "--gpus", a, b);
}
