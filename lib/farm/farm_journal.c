/*
 * The farm journal (farm_journal.h): writing records durably, reading them
 * back tolerantly, deciding what a resumed farm still has to run, and
 * summarising one or several shard journals.
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
#include "buf.h"
#include "farm_journal.h"

static const char *const outcome_names[] = {
	[FARM_OK] = "ok", [FARM_FAILED] = "failed", [FARM_TIMEOUT] = "timeout",
	[FARM_REFUSED] = "refused", [FARM_STOPPED] = "stopped",
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

static const char *mode_name(enum farm_jobs_mode m)
{
	return m == FARM_JOBS_SHELL ? "shell" : "argv";
}

/* ---- building records ---- */

static bool add_str_or_null(cJSON *o, const char *k, const char *s)
{
	return s && *s ? cJSON_AddStringToObject(o, k, s) != NULL : cJSON_AddNullToObject(o, k) != NULL;
}

static bool add_int_or_null(cJSON *o, const char *k, bool present, double v)
{
	return present ? cJSON_AddNumberToObject(o, k, v) != NULL : cJSON_AddNullToObject(o, k) != NULL;
}

static bool add_hash(cJSON *o, const char *k, uint64_t h)
{
	char buf[17];

	snprintf(buf, sizeof(buf), "%016" PRIx64, h);
	return cJSON_AddStringToObject(o, k, buf) != NULL;
}

static double now_unix_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Print and free o; NULL when any step failed (ok false or no memory). */
static char *finish(cJSON *o, bool ok)
{
	char *s = ok ? cJSON_PrintUnformatted(o) : NULL;

	cJSON_Delete(o);
	return s;
}

char *gpushare_farm_journal_header_json(const struct farm_config *cfg)
{
	cJSON *o = cJSON_CreateObject(), *shard, *gpus;
	bool ok = o != NULL;

	ok = ok && cJSON_AddStringToObject(o, "type", "header") &&
	     cJSON_AddNumberToObject(o, "version", FARM_JOURNAL_VERSION) &&
	     cJSON_AddNumberToObject(o, "time_unix_s", now_unix_s()) &&
	     cJSON_AddNumberToObject(o, "jobs", (double)cfg->n_jobs) &&
	     add_hash(o, "jobs_hash", cfg->jobs_hash) &&
	     cJSON_AddStringToObject(o, "mode", mode_name(cfg->mode)) &&
	     add_str_or_null(o, "jobs_source", cfg->jobs_source);
	ok = ok && (shard = cJSON_AddObjectToObject(o, "shard")) &&
	     cJSON_AddNumberToObject(shard, "index", (double)cfg->shard.index) &&
	     cJSON_AddNumberToObject(shard, "count", (double)cfg->shard.count);
	ok = ok && cJSON_AddNumberToObject(o, "retries", cfg->retries) &&
	     cJSON_AddNumberToObject(o, "slots", cfg->slots) &&
	     add_str_or_null(o, "strategy", cfg->strategy) &&
	     add_int_or_null(o, "timeout_seconds", cfg->timeout_ns != 0, (double)cfg->timeout_ns / 1e9) &&
	     add_int_or_null(o, "mem_per_job_bytes", cfg->mem_per_job_bytes != 0, (double)cfg->mem_per_job_bytes) &&
	     add_str_or_null(o, "hostname", cfg->hostname);
	ok = ok && (gpus = cJSON_AddArrayToObject(o, "gpus"));
	for (size_t i = 0; ok && i < cfg->n_gpus; i++) {
		cJSON *g = cJSON_CreateObject();

		ok = g && cJSON_AddItemToArray(gpus, g) &&
		     cJSON_AddNumberToObject(g, "index", cfg->gpus[i].index) &&
		     add_str_or_null(g, "uuid", cfg->gpus[i].uuid);
	}
	if (ok && cfg->busy_periods)
		ok = cJSON_AddBoolToObject(o, "busy_periods", true) != NULL;
	if (ok && cfg->slurm[0])
		ok = cJSON_AddStringToObject(o, "slurm", cfg->slurm) != NULL;
	return finish(o, ok);
}

char *gpushare_farm_journal_attempt_json(const struct farm_attempt *a)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;

	ok = ok && cJSON_AddStringToObject(o, "type", "attempt") &&
	     cJSON_AddNumberToObject(o, "job", (double)a->job) &&
	     add_hash(o, "hash", a->hash) &&
	     cJSON_AddNumberToObject(o, "attempt", a->attempt) &&
	     cJSON_AddStringToObject(o, "outcome", gpushare_farm_outcome_name(a->outcome)) &&
	     add_int_or_null(o, "exit_code", a->exit_code >= 0, a->exit_code) &&
	     add_int_or_null(o, "signal", a->signal > 0, a->signal) &&
	     add_int_or_null(o, "gpu", a->gpu >= 0, a->gpu) &&
	     add_str_or_null(o, "gpu_uuid", a->gpu_uuid) &&
	     add_int_or_null(o, "slot", a->slot >= 0, a->slot) &&
	     cJSON_AddNumberToObject(o, "start_unix_s", a->start_unix_s) &&
	     cJSON_AddNumberToObject(o, "end_unix_s", a->end_unix_s) &&
	     cJSON_AddNumberToObject(o, "duration_seconds", a->duration_s) &&
	     add_str_or_null(o, "stdout", a->stdout_path) &&
	     add_str_or_null(o, "stderr", a->stderr_path);
	if (ok && a->has_gpu_busy)
		ok = cJSON_AddNumberToObject(o, "gpu_busy_seconds", a->gpu_busy_s) != NULL;
	return finish(o, ok);
}

/* ---- writing ---- */

/* Cut a torn last line (no newline) off an open journal. */
static int cut_torn_tail(int fd, const char *path, off_t size, bool *existing)
{
	char buf[4096];
	off_t end = size;

	*existing = size > 0;
	while (end > 0) {
		size_t n = end > (off_t)sizeof(buf) ? sizeof(buf) : (size_t)end;
		ssize_t r = pread(fd, buf, n, end - (off_t)n);

		if (r != (ssize_t)n)
			return gpushare_fail(GPUSHARE_E_IO, "cannot read '%s': %s", path,
					     r < 0 ? strerror(errno) : "short read");
		for (size_t i = n; i > 0; i--) {
			if (buf[i - 1] == '\n') {
				off_t keep = end - (off_t)n + (off_t)i;

				if (keep == size)
					return GPUSHARE_OK;
				if (ftruncate(fd, keep) || fsync(fd))
					return gpushare_fail(GPUSHARE_E_IO, "cannot cut the torn last line of '%s': %s",
							     path, strerror(errno));
				return GPUSHARE_OK;
			}
		}
		end -= (off_t)n;
	}
	/* No newline at all: the whole file is one torn line. */
	if (size > 0 && (ftruncate(fd, 0) || fsync(fd)))
		return gpushare_fail(GPUSHARE_E_IO, "cannot cut the torn line of '%s': %s", path, strerror(errno));
	*existing = false;
	return GPUSHARE_OK;
}

int gpushare_farm_journal_open(struct farm_journal *j, const char *dir, bool *existing)
{
	struct stat st;
	int fd, rc;

	j->fd = -1;
	j->syncer = NULL;
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
	if ((rc = cut_torn_tail(fd, j->path, st.st_size, existing)))
		goto fail;
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
static int write_record(struct farm_journal *j, char *json)
{
	size_t n;
	ssize_t w;
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
	do
		w = write(j->fd, line, n);
	while (w < 0 && errno == EINTR);
	free(line);
	if (w != (ssize_t)n)
		return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s", j->path,
				     w < 0 ? strerror(errno) : "short write");
	return after_write(j);
}

int gpushare_farm_journal_write_header(struct farm_journal *j, const struct farm_config *cfg)
{
	return write_record(j, gpushare_farm_journal_header_json(cfg));
}

int gpushare_farm_journal_write_attempt(struct farm_journal *j, const struct farm_attempt *a)
{
	return write_record(j, gpushare_farm_journal_attempt_json(a));
}

int gpushare_farm_journal_write_attempts(struct farm_journal *j, const struct farm_attempt *a, size_t n)
{
	struct gpushare_buf b = { 0 };
	ssize_t w;
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
	do
		w = write(j->fd, b.s, b.len);
	while (w < 0 && errno == EINTR);
	if (w != (ssize_t)b.len)
		rc = gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s", j->path, w < 0 ? strerror(errno) : "short write");
	else
		rc = after_write(j);
	gpushare_buf_release(&b);
	return rc;
}

/* ---- reading ---- */

void gpushare_farm_journal_data_release(struct farm_journal_data *d)
{
	free(d->records);
	free(d->gpus);
	memset(d, 0, sizeof(*d));
}

/* A non-negative integer field; false when absent or not one. */
static bool get_uint(const cJSON *o, const char *k, uint64_t max, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > (double)max ||
	    v->valuedouble != floor(v->valuedouble))
		return false;
	*out = (uint64_t)v->valuedouble;
	return true;
}

/* An integer field or null (-1 then); false when absent or neither. */
static bool get_int_or_null(const cJSON *o, const char *k, int *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (cJSON_IsNull(v)) {
		*out = -1;
		return true;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > INT_MAX ||
	    v->valuedouble != floor(v->valuedouble))
		return false;
	*out = v->valueint;
	return true;
}

static bool get_double(const cJSON *o, const char *k, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return false;
	*out = v->valuedouble;
	return true;
}

/* A string field or null ("" then), copied into buf. */
static bool get_str(const cJSON *o, const char *k, char *buf, size_t len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (cJSON_IsNull(v) || !v) {
		buf[0] = '\0';
		return true;
	}
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= len)
		return false;
	memcpy(buf, v->valuestring, strlen(v->valuestring) + 1);
	return true;
}

static bool get_hash(const cJSON *o, const char *k, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	char *end;

	if (!cJSON_IsString(v) || strlen(v->valuestring) != 16)
		return false;
	errno = 0;
	*out = strtoull(v->valuestring, &end, 16);
	return !errno && !*end;
}

/* Parse a header into cfg; NULL on success, else what is wrong. */
static const char *parse_header(const cJSON *o, struct farm_config *cfg)
{
	const cJSON *shard = cJSON_GetObjectItemCaseSensitive(o, "shard");
	const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(o, "gpus"), *g;
	const cJSON *mode = cJSON_GetObjectItemCaseSensitive(o, "mode");
	uint64_t v, idx, cnt, retries, slots;
	double t;

	memset(cfg, 0, sizeof(*cfg));
	if (!get_uint(o, "version", 1000, &v))
		return "header without a version";
	if (v != FARM_JOURNAL_VERSION)
		return "header of an unknown journal version";
	if (!get_uint(o, "jobs", FARM_JOBS_MAX, &cfg->n_jobs) || !get_hash(o, "jobs_hash", &cfg->jobs_hash))
		return "header without a valid jobs count or jobs_hash";
	if (!cJSON_IsString(mode) || (strcmp(mode->valuestring, "argv") && strcmp(mode->valuestring, "shell")))
		return "header without a valid mode";
	cfg->mode = strcmp(mode->valuestring, "shell") ? FARM_JOBS_ARGV : FARM_JOBS_SHELL;
	if (!cJSON_IsObject(shard) || !get_uint(shard, "index", FARM_JOBS_MAX, &idx) ||
	    !get_uint(shard, "count", FARM_JOBS_MAX, &cnt) || cnt == 0 || idx >= cnt)
		return "header without a valid shard";
	cfg->shard.index = (unsigned long)idx;
	cfg->shard.count = (unsigned long)cnt;
	if (!get_uint(o, "retries", UINT_MAX, &retries) || !get_uint(o, "slots", UINT_MAX, &slots))
		return "header without valid retries or slots";
	cfg->retries = (unsigned)retries;
	cfg->slots = (unsigned)slots;
	if (!get_str(o, "strategy", cfg->strategy, sizeof(cfg->strategy)) ||
	    !get_str(o, "hostname", cfg->hostname, sizeof(cfg->hostname)) ||
	    !get_str(o, "jobs_source", cfg->jobs_source, sizeof(cfg->jobs_source)))
		return "header with an invalid strategy, hostname or jobs_source";
	if (get_double(o, "timeout_seconds", &t) && t > 0)
		cfg->timeout_ns = (uint64_t)(t * 1e9);
	if (get_uint(o, "mem_per_job_bytes", UINT64_MAX, &v))
		cfg->mem_per_job_bytes = v;
	cfg->busy_periods = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "busy_periods"));
	if (gpus && !cJSON_IsArray(gpus))
		return "header with an invalid gpus list";
	cJSON_ArrayForEach(g, gpus) {
		int index;

		if (cfg->n_gpus == FARM_MAX_GPUS)
			return "header with too many gpus";
		if (!get_int_or_null(g, "index", &index) ||
		    !get_str(g, "uuid", cfg->gpus[cfg->n_gpus].uuid, sizeof(cfg->gpus[0].uuid)))
			return "header with an invalid gpu";
		cfg->gpus[cfg->n_gpus++].index = index;
	}
	return NULL;
}

/* The reference of a GPU name in d->gpus, added when new; -1 on no memory. */
static int gpu_ref(struct farm_journal_data *d, const char *id)
{
	char (*p)[128];

	for (size_t i = 0; i < d->n_gpus; i++)
		if (!strcmp(d->gpus[i], id))
			return (int)i;
	if (d->n_gpus >= INT16_MAX)
		return -1;
	p = realloc(d->gpus, (d->n_gpus + 1) * sizeof(*p));
	if (!p)
		return -1;
	d->gpus = p;
	snprintf(d->gpus[d->n_gpus], sizeof(d->gpus[0]), "%s", id);
	return (int)d->n_gpus++;
}

/* Parse an attempt into r; NULL on success, else what is wrong. */
static const char *parse_attempt(struct farm_journal_data *d, const cJSON *o, struct farm_record *r)
{
	const cJSON *out = cJSON_GetObjectItemCaseSensitive(o, "outcome");
	uint64_t attempt;
	char uuid[96], id[128];
	int gpu, outcome;

	memset(r, 0, sizeof(*r));
	if (!get_uint(o, "job", FARM_JOBS_MAX, &r->job) || !get_hash(o, "hash", &r->hash))
		return "attempt without a valid job or hash";
	if (r->job >= d->config.n_jobs)
		return "attempt of a job beyond the header's job count";
	if (!get_uint(o, "attempt", UINT32_MAX, &attempt) || attempt == 0)
		return "attempt without a valid attempt number";
	r->attempt = (uint32_t)attempt;
	outcome = cJSON_IsString(out) ? gpushare_farm_outcome_parse(out->valuestring) : -1;
	if (outcome < 0)
		return "attempt without a valid outcome";
	r->outcome = (uint8_t)outcome;
	if (!get_int_or_null(o, "exit_code", &r->exit_code) || !get_int_or_null(o, "signal", &r->signal) ||
	    !get_int_or_null(o, "gpu", &gpu) || !get_int_or_null(o, "slot", &r->slot))
		return "attempt with an invalid exit_code, signal, gpu or slot";
	if (r->signal < 0)
		r->signal = 0;
	if (!get_double(o, "start_unix_s", &r->start_unix_s) || !get_double(o, "end_unix_s", &r->end_unix_s) ||
	    !get_double(o, "duration_seconds", &r->duration_s) || r->end_unix_s < r->start_unix_s ||
	    r->duration_s < 0)
		return "attempt without valid start_unix_s, end_unix_s and duration_seconds";
	if (!get_str(o, "gpu_uuid", uuid, sizeof(uuid)))
		return "attempt with an invalid gpu_uuid";
	r->gpu_busy_s = -1;
	if (cJSON_GetObjectItemCaseSensitive(o, "gpu_busy_seconds") &&
	    (!get_double(o, "gpu_busy_seconds", &r->gpu_busy_s) || r->gpu_busy_s < 0))
		return "attempt with an invalid gpu_busy_seconds";
	r->gpu_ref = -1;
	if (uuid[0] || gpu >= 0) {
		int ref;

		if (uuid[0])
			snprintf(id, sizeof(id), "%s", uuid);
		else
			snprintf(id, sizeof(id), "%d@%.100s", gpu, d->config.hostname);
		if ((ref = gpu_ref(d, id)) < 0)
			return "out of memory";
		r->gpu_ref = (int16_t)ref;
	}
	return NULL;
}

static int add_record(struct farm_journal_data *d, const struct farm_record *r)
{
	if (d->n_records == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 256;
		struct farm_record *p = realloc(d->records, cap * sizeof(*p));

		if (!p)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory reading '%s'", d->path);
		d->records = p;
		d->cap = cap;
	}
	d->records[d->n_records++] = *r;
	return GPUSHARE_OK;
}

/* Handle one complete line (without its newline). */
static int parse_line(struct farm_journal_data *d, const char *line, size_t len, size_t lineno,
		      const struct farm_journal_scan *scan)
{
	cJSON *o = cJSON_ParseWithLength(line, len);
	const cJSON *type = o ? cJSON_GetObjectItemCaseSensitive(o, "type") : NULL;
	const char *why = NULL;
	struct farm_record r;
	int rc = GPUSHARE_OK;

	if (!cJSON_IsObject(o) || !cJSON_IsString(type)) {
		why = "not a journal record (expected a JSON object with a \"type\")";
	} else if (!strcmp(type->valuestring, "header")) {
		struct farm_config cfg;

		why = parse_header(o, &cfg);
		if (!why && d->n_headers == 0) {
			d->config = cfg;
		} else if (!why && (cfg.n_jobs != d->config.n_jobs || cfg.jobs_hash != d->config.jobs_hash ||
				    cfg.mode != d->config.mode || cfg.shard.index != d->config.shard.index ||
				    cfg.shard.count != d->config.shard.count)) {
			why = "header of a different job list or shard than the first header";
		}
		if (!why) {
			d->n_headers++;
			d->retries_last = cfg.retries;
			if (scan->header)
				rc = scan->header(scan->arg, d, &cfg);
		}
	} else if (!strcmp(type->valuestring, "attempt")) {
		if (!d->n_headers)
			why = "attempt record before the header";
		else if (!(why = parse_attempt(d, o, &r)) && scan->record)
			rc = scan->record(scan->arg, d, &r);
	} else {
		why = "unknown record type";
	}
	cJSON_Delete(o);
	if (why)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s:%zu: %s", d->path, lineno, why);
	return rc;
}

int gpushare_farm_journal_scan_path(const char *path, struct farm_journal_data *out,
				    const struct farm_journal_scan *scan)
{
	size_t cap = 2 * FARM_JOURNAL_LINE_MAX, have = 0, lineno = 0;
	char *buf;
	int fd, rc = GPUSHARE_OK;

	memset(out, 0, sizeof(*out));
	snprintf(out->path, sizeof(out->path), "%s", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gpushare_fail(errno == ENOENT ? GPUSHARE_E_NOT_FOUND : GPUSHARE_E_IO,
				     "cannot open '%s': %s", path, strerror(errno));
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory reading '%s'", path);
	}
	for (;;) {
		ssize_t n = read(fd, buf + have, cap - have);
		size_t start = 0;
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = gpushare_fail(GPUSHARE_E_IO, "cannot read '%s': %s", path, strerror(errno));
			break;
		}
		have += (size_t)n;
		while ((nl = memchr(buf + start, '\n', have - start))) {
			size_t len = (size_t)(nl - (buf + start));

			lineno++;
			if (len + 1 > FARM_JOURNAL_LINE_MAX) {
				rc = gpushare_fail(GPUSHARE_E_INVAL, "%s:%zu: line longer than %d bytes", path,
						   lineno, FARM_JOURNAL_LINE_MAX);
				break;
			}
			if (len && (rc = parse_line(out, buf + start, len, lineno, scan)))
				break;
			start += len + 1;
		}
		if (rc)
			break;
		memmove(buf, buf + start, have - start);
		have -= start;
		if (n == 0) {
			/* End of file: what is left had no newline, a torn write. */
			out->torn_tail = have > 0;
			break;
		}
		if (have > FARM_JOURNAL_LINE_MAX) {
			rc = gpushare_fail(GPUSHARE_E_INVAL, "%s:%zu: line longer than %d bytes", path,
					   lineno + 1, FARM_JOURNAL_LINE_MAX);
			break;
		}
	}
	free(buf);
	close(fd);
	if (!rc && !out->n_headers)
		rc = gpushare_fail(GPUSHARE_E_INVAL, "%s: no header record (not a farm journal, or empty)", path);
	if (rc)
		gpushare_farm_journal_data_release(out);
	return rc;
}

static int keep_record(void *arg, struct farm_journal_data *d, const struct farm_record *r)
{
	(void)arg;
	return add_record(d, r);
}

int gpushare_farm_journal_load_path(const char *path, struct farm_journal_data *out)
{
	const struct farm_journal_scan keep = { NULL, keep_record, NULL };

	return gpushare_farm_journal_scan_path(path, out, &keep);
}

int gpushare_farm_journal_load(const char *dir, struct farm_journal_data *out)
{
	char path[4096];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, FARM_JOURNAL_NAME) >= sizeof(path))
		return gpushare_fail(GPUSHARE_E_INVAL, "farm directory path too long: '%s'", dir);
	return gpushare_farm_journal_load_path(path, out);
}

int gpushare_farm_journal_check_resume(const struct farm_journal_data *d, const struct farm_config *cfg,
			      const struct farm_jobs *jobs)
{
	const struct farm_config *old = &d->config;
	uint64_t first = UINT64_MAX;

	for (size_t i = 0; i < d->n_records; i++) {
		const struct farm_record *r = &d->records[i];

		if (r->job < first && (r->job >= jobs->n_jobs || jobs->jobs[r->job].hash != r->hash))
			first = r->job;
	}
	if (first != UINT64_MAX) {
		char cmd[160];

		if (first >= jobs->n_jobs)
			return gpushare_fail(GPUSHARE_E_INVAL,
					     "the journal in '%s' records job %" PRIu64 ", but the job list has only %zu jobs; "
					     "refusing to resume a different job list", d->path, first, jobs->n_jobs);
		gpushare_farm_jobs_format(jobs, (size_t)first, cmd, sizeof(cmd));
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "job %" PRIu64 " (%s:%" PRIu32 ", now '%s') differs from the job the journal in '%s' "
				     "recorded; refusing to resume a changed job list", first, jobs->source,
				     jobs->jobs[first].line, cmd, d->path);
	}
	if (old->n_jobs != cfg->n_jobs || old->mode != cfg->mode)
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "the job list has %" PRIu64 " jobs (%s mode) but the journal's farm had %" PRIu64
				     " (%s mode); refusing to resume a different job list", cfg->n_jobs,
				     mode_name(cfg->mode), old->n_jobs, mode_name(old->mode));
	if (old->jobs_hash != cfg->jobs_hash)
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "a job that has not run yet differs from the journal's job list (list hash %016" PRIx64
				     ", journal %016" PRIx64 "); refusing to resume a changed job list",
				     cfg->jobs_hash, old->jobs_hash);
	if (old->shard.index != cfg->shard.index || old->shard.count != cfg->shard.count)
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "this is shard %lu/%lu but the journal's farm was shard %lu/%lu; "
				     "resume each shard in its own directory", cfg->shard.index, cfg->shard.count,
				     old->shard.index, old->shard.count);
	return GPUSHARE_OK;
}

/* ---- resuming ---- */

void gpushare_farm_resume_release(struct farm_resume *r)
{
	free(r->state);
	free(r->entries);
	free(r->notes);
	memset(r, 0, sizeof(*r));
}

int gpushare_farm_resume_begin(struct farm_resume *r, size_t n_jobs)
{
	memset(r, 0, sizeof(*r));
	r->state = calloc(n_jobs ? n_jobs : 1, 1);
	if (!r->state)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory for %zu jobs", n_jobs);
	r->n_jobs = n_jobs;
	return GPUSHARE_OK;
}

int gpushare_farm_resume_add(struct farm_resume *r, const struct farm_record *rec)
{
	struct farm_resume_entry *e;

	if (rec->job >= r->n_jobs)
		return gpushare_fail(GPUSHARE_E_INVAL, "the journal records job %" PRIu64 " of a list of %zu",
				     rec->job, r->n_jobs);
	switch (rec->outcome) {
	case FARM_OK:
		r->state[rec->job] = FARM_JOB_DONE;
		return GPUSHARE_OK;
	case FARM_REFUSED:
		if (r->state[rec->job] != FARM_JOB_DONE)
			r->state[rec->job] = FARM_JOB_FAILED;
		return GPUSHARE_OK;
	default:
		break;
	}
	/* failed, timeout, stopped: kept until the end decides. */
	if (r->n_notes == r->cap_notes) {
		size_t cap = r->cap_notes ? r->cap_notes * 2 : 64;

		e = realloc(r->notes, cap * sizeof(*e));
		if (!e)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		r->notes = e;
		r->cap_notes = cap;
	}
	e = &r->notes[r->n_notes++];
	e->job = rec->job;
	e->attempts = rec->outcome == FARM_STOPPED ? 0 : 1;
	e->last_attempt = rec->attempt;
	return GPUSHARE_OK;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct farm_resume_entry *x = a, *y = b;

	return x->job < y->job ? -1 : x->job > y->job;
}

int gpushare_farm_resume_end(struct farm_resume *r, const struct farm_shard *shard, unsigned retries)
{
	size_t out = 0;

	/* Merge the notes of each job into one entry (in place, sorted). */
	if (r->n_notes)
		qsort(r->notes, r->n_notes, sizeof(*r->notes), cmp_entry);
	for (size_t i = 0; i < r->n_notes;) {
		struct farm_resume_entry e = r->notes[i];
		size_t k = i + 1;

		for (; k < r->n_notes && r->notes[k].job == e.job; k++) {
			if (e.attempts < UINT32_MAX)
				e.attempts += r->notes[k].attempts;
			if (r->notes[k].last_attempt > e.last_attempt)
				e.last_attempt = r->notes[k].last_attempt;
		}
		i = k;
		if (r->state[e.job] != FARM_JOB_PENDING || !farm_shard_has(shard, (size_t)e.job))
			continue;
		if (e.attempts >= (uint64_t)retries + 1) {
			r->state[e.job] = FARM_JOB_FAILED;
			continue;
		}
		r->notes[out++] = e;
	}
	free(r->entries);
	r->entries = r->notes;
	r->n_entries = out;
	r->notes = NULL;
	r->n_notes = r->cap_notes = 0;
	if (out) {
		struct farm_resume_entry *p = realloc(r->entries, out * sizeof(*p));

		if (p)
			r->entries = p;
	}
	r->pending = r->done = r->failed = 0;
	for (size_t i = 0; i < r->n_jobs; i++) {
		if (!farm_shard_has(shard, i)) {
			r->state[i] = FARM_JOB_OTHER_SHARD;
			continue;
		}
		if (r->state[i] == FARM_JOB_DONE)
			r->done++;
		else if (r->state[i] == FARM_JOB_FAILED)
			r->failed++;
		else
			r->pending++;
	}
	return GPUSHARE_OK;
}

void gpushare_farm_resume_lookup(const struct farm_resume *r, uint64_t job, uint32_t *attempts,
				 uint32_t *last_attempt)
{
	size_t lo = 0, hi = r->n_entries;

	*attempts = *last_attempt = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->entries[mid].job < job) {
			lo = mid + 1;
		} else if (r->entries[mid].job > job) {
			hi = mid;
		} else {
			*attempts = r->entries[mid].attempts;
			*last_attempt = r->entries[mid].last_attempt;
			return;
		}
	}
}

int gpushare_farm_resume_build(const struct farm_journal_data *d, size_t n_jobs, const struct farm_shard *shard,
		      unsigned retries, struct farm_resume *out)
{
	int rc = gpushare_farm_resume_begin(out, n_jobs);

	for (size_t i = 0; !rc && d && i < d->n_records; i++)
		rc = gpushare_farm_resume_add(out, &d->records[i]);
	if (!rc)
		rc = gpushare_farm_resume_end(out, shard, retries);
	if (rc)
		gpushare_farm_resume_release(out);
	return rc;
}

/* ---- status ---- */

struct interval {
	double start, end;
};

static int cmp_interval(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

void gpushare_journal_summary_release(struct farm_summary *s)
{
	free(s->gpus);
	memset(s, 0, sizeof(*s));
}

/* What the status keeps per GPU beside its summary entry. */
struct gpu_acc {
	double busy;                 /* the busy periods summed */
	struct interval *iv;         /* to merge: attempts of runs without busy
	                              * periods, and the periods of a shared GPU */
	size_t n_iv, cap_iv;
	double open_start, open_end; /* the period no record has closed yet */
	uint64_t open_n;
	size_t last_journal;         /* 1 + the last journal that named it */
	unsigned n_journals;
	bool shared;                 /* several journals name it: merged */
};

struct status_ctx {
	struct farm_summary *s;
	struct gpu_acc *g;           /* parallel to s->gpus */
	uint8_t *state;              /* enum farm_job_state per job, over all journals */
	size_t n_jobs;
	char first_path[4096];
	struct farm_config first;
	size_t journal;              /* the journal read now */
	struct farm_shard *seen;
	bool seg_busy;               /* this run writes busy periods */
	int phase;                   /* 1: everything; 2: the shared GPUs' periods */
	uint64_t *fails;             /* failed and timed-out jobs of this journal */
	size_t n_fails, cap_fails;
};

static int add_interval(struct gpu_acc *g, double start, double end)
{
	if (g->n_iv == g->cap_iv) {
		size_t cap = g->cap_iv ? g->cap_iv * 2 : 64;
		struct interval *p = realloc(g->iv, cap * sizeof(*p));

		if (!p)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		g->iv = p;
		g->cap_iv = cap;
	}
	g->iv[g->n_iv++] = (struct interval){ start, end };
	return GPUSHARE_OK;
}

static int add_period(struct gpu_acc *g, double start, double end)
{
	if (g->shared)
		return add_interval(g, start, end);
	g->busy += end - start;
	return GPUSHARE_OK;
}

/* The periods still open at the end of a run (a header or the end of a
 * journal): counted from their first start to their last end. */
static int close_open_periods(struct status_ctx *c)
{
	int rc = GPUSHARE_OK;

	for (size_t i = 0; !rc && i < c->s->n_gpus; i++) {
		struct gpu_acc *g = &c->g[i];

		if (g->open_n && (c->phase == 1 || g->shared))
			rc = add_period(g, g->open_start, g->open_end);
		g->open_n = 0;
	}
	return rc;
}

/* The summary entry of GPU id, added when new; -1 on no memory. */
static ssize_t status_gpu(struct status_ctx *c, const char *id)
{
	struct farm_summary *s = c->s;
	struct farm_gpu_summary *p;
	struct gpu_acc *g;

	for (size_t i = 0; i < s->n_gpus; i++)
		if (!strcmp(s->gpus[i].id, id))
			return (ssize_t)i;
	p = realloc(s->gpus, (s->n_gpus + 1) * sizeof(*p));
	if (!p)
		return -1;
	s->gpus = p;
	g = realloc(c->g, (s->n_gpus + 1) * sizeof(*g));
	if (!g)
		return -1;
	c->g = g;
	memset(&c->g[s->n_gpus], 0, sizeof(*g));
	p = &s->gpus[s->n_gpus];
	memset(p, 0, sizeof(*p));
	snprintf(p->id, sizeof(p->id), "%s", id);
	return (ssize_t)s->n_gpus++;
}

static int status_header(void *arg, struct farm_journal_data *d, const struct farm_config *cfg)
{
	struct status_ctx *c = arg;
	struct farm_summary *s = c->s;
	int rc = close_open_periods(c);

	if (rc)
		return rc;
	c->seg_busy = cfg->busy_periods;
	if (d->n_headers != 1 || c->phase != 1)
		return GPUSHARE_OK;
	/* The first header of a journal. */
	if (!c->state) {
		c->first = *cfg;
		snprintf(c->first_path, sizeof(c->first_path), "%s", d->path);
		c->n_jobs = (size_t)cfg->n_jobs;
		c->state = calloc(c->n_jobs ? c->n_jobs : 1, 1);
		if (!c->state)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory for %zu jobs", c->n_jobs);
		s->n_jobs = cfg->n_jobs;
		s->shard_count = cfg->shard.count;
	} else if (cfg->jobs_hash != c->first.jobs_hash || cfg->n_jobs != c->first.n_jobs ||
		   cfg->mode != c->first.mode) {
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' and '%s' are journals of different job lists",
				     c->first_path, d->path);
	}
	bool dup = false;

	for (size_t m = 0; m < s->shards_seen; m++)
		dup = dup || (c->seen[m].index == cfg->shard.index && c->seen[m].count == cfg->shard.count);
	if (!dup)
		c->seen[s->shards_seen++] = cfg->shard;
	if (cfg->shard.count > s->shard_count)
		s->shard_count = cfg->shard.count;
	return GPUSHARE_OK;
}

static int status_record(void *arg, struct farm_journal_data *d, const struct farm_record *r)
{
	struct status_ctx *c = arg;
	struct farm_summary *s = c->s;
	struct gpu_acc *g = NULL;
	ssize_t gi = -1;

	if (r->gpu_ref >= 0) {
		if ((gi = status_gpu(c, d->gpus[r->gpu_ref])) < 0)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		g = &c->g[gi];
	}
	if (c->phase == 1) {
		s->attempts++;
		if (r->start_unix_s < s->first_start_unix_s)
			s->first_start_unix_s = r->start_unix_s;
		if (r->end_unix_s > s->last_end_unix_s)
			s->last_end_unix_s = r->end_unix_s;
		if (r->outcome == FARM_OK) {
			c->state[r->job] = FARM_JOB_DONE;
		} else if (r->outcome == FARM_REFUSED) {
			if (c->state[r->job] != FARM_JOB_DONE)
				c->state[r->job] = FARM_JOB_FAILED;
		} else if (r->outcome == FARM_FAILED || r->outcome == FARM_TIMEOUT) {
			if (c->n_fails == c->cap_fails) {
				size_t cap = c->cap_fails ? c->cap_fails * 2 : 64;
				uint64_t *p = realloc(c->fails, cap * sizeof(*p));

				if (!p)
					return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
				c->fails = p;
				c->cap_fails = cap;
			}
			c->fails[c->n_fails++] = r->job;
		}
		if (g) {
			s->gpus[gi].attempts++;
			s->gpus[gi].job_s += r->duration_s;
			if (g->last_journal != c->journal + 1) {
				g->last_journal = c->journal + 1;
				g->n_journals++;
			}
		}
	}
	if (!g || (c->phase == 2 && !g->shared))
		return GPUSHARE_OK;
	if (!c->seg_busy)
		return add_interval(g, r->start_unix_s, r->end_unix_s);
	if (!g->open_n || r->start_unix_s < g->open_start)
		g->open_start = r->start_unix_s;
	if (!g->open_n || r->end_unix_s > g->open_end)
		g->open_end = r->end_unix_s;
	g->open_n++;
	if (r->gpu_busy_s >= 0) {
		g->open_n = 0;
		return add_period(g, r->end_unix_s - r->gpu_busy_s, r->end_unix_s);
	}
	return GPUSHARE_OK;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The end of a journal: its failed jobs whose retries are used up. */
static void status_journal_end(struct status_ctx *c, unsigned retries_last)
{
	if (c->n_fails)
		qsort(c->fails, c->n_fails, sizeof(*c->fails), cmp_u64);
	for (size_t i = 0; i < c->n_fails;) {
		size_t k = i;

		while (k < c->n_fails && c->fails[k] == c->fails[i])
			k++;
		if (k - i >= (size_t)retries_last + 1 && c->state[c->fails[i]] != FARM_JOB_DONE)
			c->state[c->fails[i]] = FARM_JOB_FAILED;
		i = k;
	}
	c->n_fails = 0;
}

static double union_length(struct interval *iv, size_t m)
{
	double busy = 0, cur_s = 0, cur_e = 0;

	if (!m)
		return 0;
	qsort(iv, m, sizeof(*iv), cmp_interval);
	for (size_t i = 0; i < m; i++) {
		if (i == 0 || iv[i].start > cur_e) {
			busy += cur_e - cur_s;
			cur_s = iv[i].start;
			cur_e = iv[i].end;
		} else if (iv[i].end > cur_e) {
			cur_e = iv[i].end;
		}
	}
	return m ? busy + cur_e - cur_s : 0;
}

static int status_pass(struct status_ctx *c, const char *const *paths, size_t n)
{
	const struct farm_journal_scan scan = { status_header, status_record, c };
	int rc = GPUSHARE_OK;

	for (size_t k = 0; k < n && !rc; k++) {
		struct farm_journal_data d;

		c->journal = k;
		c->seg_busy = false;
		rc = gpushare_farm_journal_scan_path(paths[k], &d, &scan);
		if (!rc)
			rc = close_open_periods(c);
		if (!rc && c->phase == 1) {
			c->s->torn_tail = c->s->torn_tail || d.torn_tail;
			status_journal_end(c, d.retries_last);
		}
		gpushare_farm_journal_data_release(&d);
	}
	return rc;
}

int gpushare_journal_summary_build(const char *const *paths, size_t n, struct farm_summary *s)
{
	struct status_ctx c;
	bool shared = false;
	int rc;

	memset(s, 0, sizeof(*s));
	memset(&c, 0, sizeof(c));
	if (!n)
		return gpushare_fail(GPUSHARE_E_INVAL, "no farm journal to summarise");
	c.s = s;
	c.phase = 1;
	c.seen = calloc(n, sizeof(*c.seen));
	if (!c.seen)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	s->first_start_unix_s = INFINITY;
	s->last_end_unix_s = -INFINITY;
	rc = status_pass(&c, paths, n);
	/* A GPU that several journals name: its periods may overlap; read
	 * them again and merge them. */
	for (size_t i = 0; !rc && i < s->n_gpus; i++) {
		if (c.g[i].n_journals > 1) {
			c.g[i].shared = shared = true;
			c.g[i].busy = 0;
			c.g[i].n_iv = 0;
		}
	}
	if (!rc && shared) {
		c.phase = 2;
		rc = status_pass(&c, paths, n);
	}
	if (rc)
		goto out;
	for (size_t i = 0; i < c.n_jobs; i++) {
		if (c.state[i] == FARM_JOB_DONE)
			s->done++;
		else if (c.state[i] == FARM_JOB_FAILED)
			s->failed++;
	}
	s->unfinished = s->n_jobs - s->done - s->failed;
	if (s->attempts) {
		s->makespan_s = s->last_end_unix_s - s->first_start_unix_s;
		if (s->makespan_s > 0)
			s->jobs_per_s = (double)(s->done + s->failed) / s->makespan_s;
	} else {
		s->first_start_unix_s = s->last_end_unix_s = 0;
	}
	for (size_t i = 0; i < s->n_gpus; i++) {
		s->gpus[i].busy_s = c.g[i].busy + union_length(c.g[i].iv, c.g[i].n_iv);
		s->gpus[i].busy_fraction = s->makespan_s > 0 ? s->gpus[i].busy_s / s->makespan_s : 0;
	}
out:
	for (size_t i = 0; c.g && i < s->n_gpus; i++)
		free(c.g[i].iv);
	free(c.g);
	free(c.state);
	free(c.seen);
	free(c.fails);
	if (rc)
		gpushare_journal_summary_release(s);
	return rc;
}
