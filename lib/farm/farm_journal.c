/*
 * The farm journal (farm_journal.h): building and writing records durably.
 * Reading them back and resuming: farm_journal_read.c; summarising one or
 * several shard journals: farm_journal_summary.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gpushare/gpushare.h"
#include "gpushare/buf.h"
#include "gpushare/files.h"
#include "json.h"
#include "farm_journal.h"

static const char *const outcome_names[] = {
	[FARM_OK] = "ok", [FARM_FAILED] = "failed", [FARM_TIMEOUT] = "timeout",
	[FARM_REFUSED] = "refused", [FARM_STOPPED] = "stopped", [FARM_BYSTANDER] = "bystander",
};

const char *gpushare_farm_outcome_name(enum farm_outcome o)
{
	return (unsigned)o < sizeof(outcome_names) / sizeof(outcome_names[0]) ? outcome_names[o] : "unknown";
}

int gpushare_farm_outcome_parse(const char *s)
{
	for (size_t i = 0; s && i < sizeof(outcome_names) / sizeof(outcome_names[0]); i++)
		if (!strcmp(s, outcome_names[i]))
			return (int)i;
	return -1;
}

const char *gpushare_farm_jobs_mode_name(enum farm_jobs_mode m)
{
	return m == FARM_JOBS_SHELL ? "shell" : "argv";
}

/* ---- building records ---- */

static bool add_hash(cJSON *o, const char *k, uint64_t h)
{
	char buf[17];

	snprintf(buf, sizeof(buf), "%016" PRIx64, h);
	return gpushare_json_str(o, k, buf);
}

char *gpushare_farm_journal_header_json(const struct farm_config *cfg)
{
	cJSON *o = cJSON_CreateObject(), *shard, *gpus;
	bool ok;

	ok = gpushare_json_str(o, "type", "header") && gpushare_json_int(o, "version", FARM_JOURNAL_VERSION) &&
	     gpushare_json_num(o, "time_unix_s", farm_unix_now()) && gpushare_json_int(o, "jobs", (long long)cfg->n_jobs) &&
	     add_hash(o, "jobs_hash", cfg->jobs_hash) && gpushare_json_str(o, "mode", gpushare_farm_jobs_mode_name(cfg->mode)) &&
	     gpushare_json_str_or_null(o, "jobs_source", cfg->jobs_source);
	ok = ok && (shard = gpushare_json_obj(o, "shard")) != NULL &&
	     gpushare_json_int(shard, "index", (long long)cfg->shard.index) &&
	     gpushare_json_int(shard, "count", (long long)cfg->shard.count);
	ok = ok && gpushare_json_int(o, "retries", cfg->retries) && gpushare_json_int(o, "slots", cfg->slots) &&
	     gpushare_json_str_or_null(o, "strategy", cfg->strategy) &&
	     gpushare_json_num_if(o, "timeout_seconds", (double)cfg->timeout_ns / 1e9, cfg->timeout_ns != 0) &&
	     (!cfg->timeout_factor || gpushare_json_num(o, "timeout_median_factor", cfg->timeout_factor)) &&
	     gpushare_json_num_if(o, "mem_per_job_bytes", (double)cfg->mem_per_job_bytes, cfg->mem_per_job_bytes != 0) &&
	     gpushare_json_str_or_null(o, "hostname", cfg->hostname);
	ok = ok && (gpus = gpushare_json_arr(o, "gpus")) != NULL;
	for (size_t i = 0; ok && i < cfg->n_gpus; i++) {
		cJSON *g = gpushare_json_obj(gpus, NULL);

		ok = gpushare_json_int(g, "index", cfg->gpus[i].index) &&
		     gpushare_json_str_or_null(g, "uuid", cfg->gpus[i].uuid);
	}
	if (ok && cfg->busy_periods)
		ok = gpushare_json_bool(o, "busy_periods", true);
	if (ok && cfg->slurm[0])
		ok = gpushare_json_str(o, "slurm", cfg->slurm);
	return gpushare_json_finish(o, ok, false);
}

char *gpushare_farm_journal_attempt_json(const struct farm_attempt *a)
{
	cJSON *o = cJSON_CreateObject();
	bool ok;

	ok = gpushare_json_str(o, "type", "attempt") && gpushare_json_int(o, "job", (long long)FARM_JOB_NUMBER(a->job)) &&
	     add_hash(o, "hash", a->hash) && gpushare_json_int(o, "attempt", a->attempt) &&
	     gpushare_json_str(o, "outcome", gpushare_farm_outcome_name(a->outcome)) &&
	     gpushare_json_num_if(o, "exit_code", a->exit_code, a->exit_code >= 0) &&
	     gpushare_json_num_if(o, "signal", a->signal, a->signal > 0) &&
	     gpushare_json_num_if(o, "gpu", a->gpu, a->gpu >= 0) &&
	     gpushare_json_str_or_null(o, "gpu_uuid", a->gpu_uuid) &&
	     gpushare_json_num_if(o, "slot", a->slot, a->slot >= 0) &&
	     gpushare_json_num(o, "start_unix_s", a->start_unix_s) && gpushare_json_num(o, "end_unix_s", a->end_unix_s) &&
	     gpushare_json_num(o, "duration_seconds", a->duration_s) &&
	     gpushare_json_str_or_null(o, "stdout", a->stdout_path) &&
	     gpushare_json_str_or_null(o, "stderr", a->stderr_path);
	if (ok && a->has_gpu_busy)
		ok = gpushare_json_num(o, "gpu_busy_seconds", a->gpu_busy_s);
	if (ok && a->culprit)
		ok = gpushare_json_str(o, "fault", "culprit");
	return gpushare_json_finish(o, ok, false);
}

char *gpushare_farm_journal_fault_json(const struct farm_fault_record *f)
{
	cJSON *o = cJSON_CreateObject(), *by;
	bool ok = gpushare_json_str(o, "type", "fault") && gpushare_json_int(o, "gpu", f->gpu) &&
		  gpushare_json_str_or_null(o, "gpu_uuid", f->gpu_uuid) &&
		  gpushare_json_int(o, "culprit", (long long)FARM_JOB_NUMBER(f->culprit)) &&
		  gpushare_json_int(o, "culprit_attempt", f->culprit_attempt) &&
		  gpushare_json_bool(o, "culprit_failed", f->culprit_failed) &&
		  gpushare_json_str(o, "evidence", f->evidence) && (by = gpushare_json_arr(o, "bystanders")) != NULL;

	for (size_t i = 0; ok && i < f->n_bystanders; i++) {
		cJSON *n = cJSON_CreateNumber((double)FARM_JOB_NUMBER(f->bystanders[i]));

		ok = n && cJSON_AddItemToArray(by, n);
	}
	ok = ok && gpushare_json_num(o, "start_unix_s", f->start_unix_s) &&
	     gpushare_json_num(o, "recovered_unix_s", f->recovered_unix_s) &&
	     gpushare_json_num(o, "recovery_seconds", f->recovered_unix_s - f->start_unix_s) &&
	     gpushare_json_bool(o, "server_restarted", f->server_restarted);
	return gpushare_json_finish(o, ok, false);
}

/* ---- writing ---- */

/* Where a torn last line (no newline) of an open journal starts: *keep,
 * or -1 when the file is empty or ends with a newline. Nothing is changed. */
static int find_torn_tail(int fd, const char *path, off_t size, off_t *keep)
{
	char buf[4096];
	off_t end = size;

	*keep = -1;
	while (end > 0) {
		size_t n = end > (off_t)sizeof(buf) ? sizeof(buf) : (size_t)end;
		ssize_t r = pread(fd, buf, n, end - (off_t)n);

		if (r != (ssize_t)n)
			return gpushare_fail(GPUSHARE_E_IO, "cannot read '%s': %s", path,
					     r < 0 ? strerror(errno) : "the file shrank while read");
		for (size_t i = n; i > 0; i--) {
			if (buf[i - 1] == '\n') {
				off_t k = end - (off_t)n + (off_t)i;

				if (k != size)
					*keep = k;
				return GPUSHARE_OK;
			}
		}
		end -= (off_t)n;
	}
	if (size > 0) /* no newline at all: the whole file is one torn line */
		*keep = 0;
	return GPUSHARE_OK;
}

/* Before the first write: cut the torn last line noted at open. */
static int cut_torn_tail(struct farm_journal *j)
{
	struct stat st;

	if (!j->torn)
		return GPUSHARE_OK;
	if (fstat(j->fd, &st) || ftruncate(j->fd, j->keep) || fsync(j->fd))
		return gpushare_fail(GPUSHARE_E_IO, "cannot cut the torn last line of '%s': %s", j->path, strerror(errno));
	j->cut_bytes = (uint64_t)(st.st_size - j->keep);
	j->torn = false;
	return GPUSHARE_OK;
}

int gpushare_farm_journal_cut_torn(struct farm_journal *j)
{
	struct stat st;
	off_t keep;
	int rc;

	/* The farm's writer may have died mid-line since the journal was
	 * opened: look at the file as it is now. */
	if (fstat(j->fd, &st) != 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot read '%s': %s", j->path, strerror(errno));
	rc = find_torn_tail(j->fd, j->path, st.st_size, &keep);
	if (rc)
		return rc;
	if (keep >= 0) {
		j->torn = true;
		j->keep = keep;
	}
	return cut_torn_tail(j);
}

int gpushare_farm_journal_open(struct farm_journal *j, const char *dir, bool *existing)
{
	struct stat st;
	int fd, rc;

	j->fd = -1;
	j->syncer = NULL;
	j->torn = false;
	j->cut_bytes = 0;
	if ((size_t)snprintf(j->path, sizeof(j->path), "%s/%s", dir, FARM_JOURNAL_NAME) >= sizeof(j->path))
		return gpushare_fail(GPUSHARE_E_INVAL, "farm directory path too long: '%s'", dir);
	fd = open(j->path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return gpushare_fail(errno == ELOOP ? GPUSHARE_E_DIR : GPUSHARE_E_IO,
				     errno == ELOOP ? "'%s' is a symbolic link; refusing to write through it"
						    : "cannot open '%s': %s", j->path, strerror(errno));
	if (fstat(fd, &st)) {
		rc = gpushare_fail(GPUSHARE_E_IO, "cannot stat '%s': %s", j->path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1) {
		rc = gpushare_fail(GPUSHARE_E_DIR, "'%s' is not a regular file of this user with one link; refusing it",
				   j->path);
		goto fail;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		rc = errno == EWOULDBLOCK
			? gpushare_fail(GPUSHARE_E_BUSY, "'%s' is in use by another gpushare farm", j->path)
			: gpushare_fail(GPUSHARE_E_IO, "cannot lock '%s': %s", j->path, strerror(errno));
		goto fail;
	}
	if ((rc = find_torn_tail(fd, j->path, st.st_size, &j->keep)))
		goto fail;
	j->torn = j->keep >= 0;
	*existing = st.st_size > 0;
	if (st.st_size == 0) {
		/* A new file: make its directory entry durable too. */
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	j->fd = fd;
	return GPUSHARE_OK;
fail:
	close(fd);
	return rc;
}

/* ---- durable in the background ---- */

struct farm_journal_syncer {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work;        /* to the thread: written moved, or quit */
	pthread_cond_t done;        /* from the thread: synced moved */
	int fd;
	uint64_t written;           /* writes handed over */
	uint64_t synced;            /* writes covered by a finished fsync */
	int err;                    /* errno of the first failed fsync, 0 */
	bool quit;
};

static void *syncer_main(void *arg)
{
	struct farm_journal_syncer *y = arg;

	pthread_mutex_lock(&y->mu);
	for (;;) {
		uint64_t target;
		int err = 0;

		while (y->synced == y->written && !y->quit)
			pthread_cond_wait(&y->work, &y->mu);
		if (y->synced == y->written)
			break; /* quit, nothing left */
		target = y->written;
		pthread_mutex_unlock(&y->mu);
		if (fsync(y->fd))
			err = errno;
		pthread_mutex_lock(&y->mu);
		if (err && !y->err)
			y->err = err;
		y->synced = target;
		pthread_cond_broadcast(&y->done);
	}
	pthread_mutex_unlock(&y->mu);
	return NULL;
}

int gpushare_farm_journal_sync_in_background(struct farm_journal *j)
{
	struct farm_journal_syncer *y;
	sigset_t all, old;
	int e;

	if (j->syncer)
		return GPUSHARE_OK;
	if (!(y = calloc(1, sizeof(*y))))
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	y->fd = j->fd;
	pthread_mutex_init(&y->mu, NULL);
	pthread_cond_init(&y->work, NULL);
	pthread_cond_init(&y->done, NULL);
	/* Signals stay with the thread that handles them. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	e = pthread_create(&y->thread, NULL, syncer_main, y);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		pthread_cond_destroy(&y->done);
		pthread_cond_destroy(&y->work);
		pthread_mutex_destroy(&y->mu);
		free(y);
		return gpushare_fail(GPUSHARE_E_SYS, "cannot start the journal's sync thread: %s", strerror(e));
	}
	j->syncer = y;
	return GPUSHARE_OK;
}

/* After a write of records: fsync now, or hand it to the thread. */
static int after_write(struct farm_journal *j)
{
	struct farm_journal_syncer *y = j->syncer;
	int err;

	if (!y)
		return fsync(j->fd) ? gpushare_fail(GPUSHARE_E_IO, "cannot sync '%s': %s", j->path, strerror(errno))
				    : GPUSHARE_OK;
	pthread_mutex_lock(&y->mu);
	err = y->err;
	y->written++;
	pthread_cond_signal(&y->work);
	pthread_mutex_unlock(&y->mu);
	return err ? gpushare_fail(GPUSHARE_E_IO, "cannot sync '%s': %s", j->path, strerror(err)) : GPUSHARE_OK;
}

int gpushare_farm_journal_sync(struct farm_journal *j)
{
	struct farm_journal_syncer *y = j->syncer;
	int err;

	if (j->fd < 0)
		return GPUSHARE_OK;
	if (!y)
		return fsync(j->fd) ? gpushare_fail(GPUSHARE_E_IO, "cannot sync '%s': %s", j->path, strerror(errno))
				    : GPUSHARE_OK;
	pthread_mutex_lock(&y->mu);
	while (y->synced != y->written)
		pthread_cond_wait(&y->done, &y->mu);
	err = y->err;
	pthread_mutex_unlock(&y->mu);
	return err ? gpushare_fail(GPUSHARE_E_IO, "cannot sync '%s': %s", j->path, strerror(err)) : GPUSHARE_OK;
}

static void syncer_stop(struct farm_journal *j)
{
	struct farm_journal_syncer *y = j->syncer;

	if (!y)
		return;
	pthread_mutex_lock(&y->mu);
	y->quit = true;
	pthread_cond_signal(&y->work);
	pthread_mutex_unlock(&y->mu);
	pthread_join(y->thread, NULL); /* it syncs what is left first */
	pthread_cond_destroy(&y->done);
	pthread_cond_destroy(&y->work);
	pthread_mutex_destroy(&y->mu);
	free(y);
	j->syncer = NULL;
}

void gpushare_farm_journal_close(struct farm_journal *j)
{
	syncer_stop(j);
	if (j->fd >= 0)
		close(j->fd);      /* also drops the flock */
	j->fd = -1;
}

/* Write json plus a newline with one write(), then fsync. Frees json. */
/* Write all n bytes (one write() unless the disk fills in between): the
 * system's reason on failure (ENOSPC rather than "short write"). The first
 * write cuts a torn last line off first. */
static int journal_append(struct farm_journal *j, const char *p, size_t n)
{
	int rc = cut_torn_tail(j);

	if (!rc && gpushare_write_all(j->fd, p, n) != 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s", j->path, strerror(errno));
	return rc;
}

static int write_record(struct farm_journal *j, char *json)
{
	size_t n;
	int rc;
	char *line;

	if (!json)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot build a journal record");
	n = strlen(json);
	line = realloc(json, n + 2);
	if (!line) {
		free(json);
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot build a journal record");
	}
	line[n++] = '\n';
	line[n] = '\0';
	if (n > FARM_JOURNAL_LINE_MAX) {
		free(line);
		return gpushare_fail(GPUSHARE_E_INVAL, "journal record of %zu bytes is longer than %d", n,
				     FARM_JOURNAL_LINE_MAX);
	}
	rc = journal_append(j, line, n);
	free(line);
	return rc ? rc : after_write(j);
}

int gpushare_farm_journal_write_header(struct farm_journal *j, const struct farm_config *cfg)
{
	return write_record(j, gpushare_farm_journal_header_json(cfg));
}

int gpushare_farm_journal_write_attempt(struct farm_journal *j, const struct farm_attempt *a)
{
	return write_record(j, gpushare_farm_journal_attempt_json(a));
}

int gpushare_farm_journal_write_fault(struct farm_journal *j, const struct farm_fault_record *f)
{
	return write_record(j, gpushare_farm_journal_fault_json(f));
}

int gpushare_farm_journal_write_attempts(struct farm_journal *j, const struct farm_attempt *a, size_t n)
{
	struct gpushare_buf b = { 0 };
	int rc = GPUSHARE_OK;

	for (size_t i = 0; i < n && !rc; i++) {
		char *json = gpushare_farm_journal_attempt_json(&a[i]);
		size_t len = json ? strlen(json) + 1 : 0;

		if (!json)
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "cannot build a journal record");
		else if (len > FARM_JOURNAL_LINE_MAX)
			rc = gpushare_fail(GPUSHARE_E_INVAL, "journal record of %zu bytes is longer than %d", len,
					   FARM_JOURNAL_LINE_MAX);
		else if (!(rc = gpushare_buf_add(&b, json, len - 1)))
			rc = gpushare_buf_add(&b, "\n", 1);
		free(json);
	}
	if (rc || !b.len) {
		gpushare_buf_release(&b);
		return rc;
	}
	rc = journal_append(j, b.s, b.len);
	if (!rc)
		rc = after_write(j);
	gpushare_buf_release(&b);
	return rc;
}
