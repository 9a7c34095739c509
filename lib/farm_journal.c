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
static int parse_line(struct farm_journal_data *d, const char *line, size_t len, size_t lineno)
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
		}
	} else if (!strcmp(type->valuestring, "attempt")) {
		if (!d->n_headers)
			why = "attempt record before the header";
		else if (!(why = parse_attempt(d, o, &r)))
			rc = add_record(d, &r);
	} else {
		why = "unknown record type";
	}
	cJSON_Delete(o);
	if (why)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s:%zu: %s", d->path, lineno, why);
	return rc;
}

int gpushare_farm_journal_load_path(const char *path, struct farm_journal_data *out)
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
			if (len && (rc = parse_line(out, buf + start, len, lineno)))
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
	free(r->attempts);
	free(r->last_attempt);
	memset(r, 0, sizeof(*r));
}

/* Apply records to state/attempts; refused jobs are marked FAILED at once. */
static int apply_records(const struct farm_journal_data *d, size_t n_jobs, uint8_t *state, uint32_t *attempts)
{
	for (size_t i = 0; i < d->n_records; i++) {
		const struct farm_record *r = &d->records[i];

		if (r->job >= n_jobs)
			return gpushare_fail(GPUSHARE_E_INVAL, "%s records job %" PRIu64 " of a list of %zu",
					     d->path, r->job, n_jobs);
		switch (r->outcome) {
		case FARM_OK:
			state[r->job] = FARM_JOB_DONE;
			break;
		case FARM_REFUSED:
			if (state[r->job] != FARM_JOB_DONE)
				state[r->job] = FARM_JOB_FAILED;
			break;
		case FARM_FAILED:
		case FARM_TIMEOUT:
			if (attempts[r->job] < UINT32_MAX)
				attempts[r->job]++;
			break;
		default:
			break;
		}
	}
	return GPUSHARE_OK;
}

int gpushare_farm_resume_build(const struct farm_journal_data *d, size_t n_jobs, const struct farm_shard *shard,
		      unsigned retries, struct farm_resume *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	out->state = calloc(n_jobs ? n_jobs : 1, 1);
	out->attempts = calloc(n_jobs ? n_jobs : 1, sizeof(*out->attempts));
	out->last_attempt = calloc(n_jobs ? n_jobs : 1, sizeof(*out->last_attempt));
	if (!out->state || !out->attempts || !out->last_attempt) {
		gpushare_farm_resume_release(out);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory for %zu jobs", n_jobs);
	}
	out->n_jobs = n_jobs;
	if (d && (rc = apply_records(d, n_jobs, out->state, out->attempts))) {
		gpushare_farm_resume_release(out);
		return rc;
	}
	for (size_t i = 0; d && i < d->n_records; i++) {
		const struct farm_record *r = &d->records[i];

		if (r->attempt > out->last_attempt[r->job])
			out->last_attempt[r->job] = r->attempt;
	}
	for (size_t i = 0; i < n_jobs; i++) {
		if (!farm_shard_has(shard, i)) {
			out->state[i] = FARM_JOB_OTHER_SHARD;
			continue;
		}
		if (out->state[i] == FARM_JOB_PENDING && out->attempts[i] >= (uint64_t)retries + 1)
			out->state[i] = FARM_JOB_FAILED;
		if (out->state[i] == FARM_JOB_DONE)
			out->done++;
		else if (out->state[i] == FARM_JOB_FAILED)
			out->failed++;
		else
			out->pending++;
	}
	return GPUSHARE_OK;
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

/* Busy time (union of intervals) of each GPU in s->gpus. */
static int gpu_busy(const struct farm_journal_data *const *d, size_t n, struct farm_summary *s)
{
	for (size_t g = 0; g < s->n_gpus; g++) {
		struct interval *iv = malloc((s->gpus[g].attempts ? s->gpus[g].attempts : 1) * sizeof(*iv));
		size_t m = 0;
		double busy = 0, cur_s = 0, cur_e = 0;

		if (!iv)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		for (size_t k = 0; k < n; k++)
			for (size_t i = 0; i < d[k]->n_records; i++) {
				const struct farm_record *r = &d[k]->records[i];

				if (r->gpu_ref >= 0 && !strcmp(d[k]->gpus[r->gpu_ref], s->gpus[g].id))
					iv[m++] = (struct interval){ r->start_unix_s, r->end_unix_s };
			}
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
		if (m)
			busy += cur_e - cur_s;
		free(iv);
		s->gpus[g].busy_s = busy;
		s->gpus[g].busy_fraction = s->makespan_s > 0 ? busy / s->makespan_s : 0;
	}
	return GPUSHARE_OK;
}

/* The summary entry of GPU id, added when new; NULL on no memory. */
static struct farm_gpu_summary *summary_gpu(struct farm_summary *s, const char *id)
{
	struct farm_gpu_summary *p;

	for (size_t i = 0; i < s->n_gpus; i++)
		if (!strcmp(s->gpus[i].id, id))
			return &s->gpus[i];
	p = realloc(s->gpus, (s->n_gpus + 1) * sizeof(*p));
	if (!p)
		return NULL;
	s->gpus = p;
	p = &s->gpus[s->n_gpus++];
	memset(p, 0, sizeof(*p));
	snprintf(p->id, sizeof(p->id), "%s", id);
	return p;
}

int gpushare_journal_summary_build(const struct farm_journal_data *const *d, size_t n, struct farm_summary *s)
{
	uint8_t *state = NULL;
	struct farm_shard *seen = NULL;
	size_t n_jobs;
	int rc = GPUSHARE_OK;

	memset(s, 0, sizeof(*s));
	if (!n)
		return gpushare_fail(GPUSHARE_E_INVAL, "no farm journal to summarise");
	n_jobs = (size_t)d[0]->config.n_jobs;
	for (size_t k = 1; k < n; k++)
		if (d[k]->config.jobs_hash != d[0]->config.jobs_hash || d[k]->config.n_jobs != n_jobs ||
		    d[k]->config.mode != d[0]->config.mode)
			return gpushare_fail(GPUSHARE_E_INVAL, "'%s' and '%s' are journals of different job lists",
					     d[0]->path, d[k]->path);
	s->n_jobs = n_jobs;
	s->shard_count = d[0]->config.shard.count;
	state = calloc(n_jobs ? n_jobs : 1, 1);
	seen = calloc(n, sizeof(*seen));
	if (!state || !seen) {
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory for %zu jobs", n_jobs);
		goto out;
	}
	s->first_start_unix_s = INFINITY;
	s->last_end_unix_s = -INFINITY;
	for (size_t k = 0; k < n; k++) {
		const struct farm_journal_data *j = d[k];
		bool dup = false;

		for (size_t m = 0; m < s->shards_seen; m++)
			dup = dup || (seen[m].index == j->config.shard.index && seen[m].count == j->config.shard.count);
		if (!dup)
			seen[s->shards_seen++] = j->config.shard;
		if (j->config.shard.count > s->shard_count)
			s->shard_count = j->config.shard.count;
		s->torn_tail = s->torn_tail || j->torn_tail;
		/* Attempts count per journal, against that journal's retries. */
		uint32_t *local = calloc(n_jobs ? n_jobs : 1, sizeof(*local));
		uint8_t *lstate = calloc(n_jobs ? n_jobs : 1, 1);

		if (!local || !lstate) {
			free(local);
			free(lstate);
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory for %zu jobs", n_jobs);
			goto out;
		}
		rc = apply_records(j, n_jobs, lstate, local);
		for (size_t i = 0; !rc && i < n_jobs; i++) {
			if (lstate[i] == FARM_JOB_PENDING && local[i] >= (uint64_t)j->retries_last + 1)
				lstate[i] = FARM_JOB_FAILED;
			if (lstate[i] == FARM_JOB_DONE)
				state[i] = FARM_JOB_DONE;
			else if (lstate[i] == FARM_JOB_FAILED && state[i] != FARM_JOB_DONE)
				state[i] = FARM_JOB_FAILED;
		}
		free(local);
		free(lstate);
		if (rc)
			goto out;
		for (size_t i = 0; i < j->n_records; i++) {
			const struct farm_record *r = &j->records[i];

			s->attempts++;
			if (r->start_unix_s < s->first_start_unix_s)
				s->first_start_unix_s = r->start_unix_s;
			if (r->end_unix_s > s->last_end_unix_s)
				s->last_end_unix_s = r->end_unix_s;
			if (r->gpu_ref >= 0) {
				struct farm_gpu_summary *g = summary_gpu(s, j->gpus[r->gpu_ref]);

				if (!g) {
					rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
					goto out;
				}
				g->attempts++;
				g->job_s += r->duration_s;
			}
		}
	}
	for (size_t i = 0; i < n_jobs; i++) {
		if (state[i] == FARM_JOB_DONE)
			s->done++;
		else if (state[i] == FARM_JOB_FAILED)
			s->failed++;
	}
	s->unfinished = n_jobs - s->done - s->failed;
	if (s->attempts) {
		s->makespan_s = s->last_end_unix_s - s->first_start_unix_s;
		if (s->makespan_s > 0)
			s->jobs_per_s = (double)(s->done + s->failed) / s->makespan_s;
	} else {
		s->first_start_unix_s = s->last_end_unix_s = 0;
	}
	rc = gpu_busy(d, n, s);
out:
	free(state);
	free(seen);
	if (rc)
		gpushare_journal_summary_release(s);
	return rc;
}
