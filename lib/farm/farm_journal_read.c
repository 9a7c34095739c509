/*
 * Reading a farm journal back tolerantly (farm_journal.h): records parsed
 * one line at a time, a torn last line ignored, the checks before a resume,
 * and what a resumed farm still has to run.
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
#include "farm_journal.h"
#include "json.h"

/* ---- reading ---- */

void gpushare_farm_journal_data_release(struct farm_journal_data *d)
{
	free(d->records);
	free(d->gpus);
	memset(d, 0, sizeof(*d));
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
	if (!gpushare_json_get_u64(o, "version", 1000, &v))
		return "header without a version";
	if (v < 1 || v > FARM_JOURNAL_VERSION)
		return "header of an unknown journal version";
	cfg->version = (unsigned)v;
	if (!gpushare_json_get_u64(o, "jobs", FARM_JOBS_MAX, &cfg->n_jobs) || !get_hash(o, "jobs_hash", &cfg->jobs_hash))
		return "header without a valid jobs count or jobs_hash";
	if (!cJSON_IsString(mode) || (strcmp(mode->valuestring, "argv") && strcmp(mode->valuestring, "shell")))
		return "header without a valid mode";
	cfg->mode = strcmp(mode->valuestring, "shell") ? FARM_JOBS_ARGV : FARM_JOBS_SHELL;
	if (!cJSON_IsObject(shard) || !gpushare_json_get_u64(shard, "index", FARM_JOBS_MAX, &idx) ||
	    !gpushare_json_get_u64(shard, "count", FARM_JOBS_MAX, &cnt) || cnt == 0 || idx >= cnt)
		return "header without a valid shard";
	cfg->shard.index = (unsigned long)idx;
	cfg->shard.count = (unsigned long)cnt;
	if (!gpushare_json_get_u64(o, "retries", UINT_MAX, &retries) || !gpushare_json_get_u64(o, "slots", UINT_MAX, &slots))
		return "header without valid retries or slots";
	cfg->retries = (unsigned)retries;
	cfg->slots = (unsigned)slots;
	if (!get_str(o, "strategy", cfg->strategy, sizeof(cfg->strategy)) ||
	    !get_str(o, "hostname", cfg->hostname, sizeof(cfg->hostname)) ||
	    !get_str(o, "jobs_source", cfg->jobs_source, sizeof(cfg->jobs_source)))
		return "header with an invalid strategy, hostname or jobs_source";
	if (get_double(o, "timeout_seconds", &t) && t > 0) {
		if (t > 1e9)   /* above what --timeout takes (1e18 ns) */
			return "header with an invalid timeout_seconds";
		cfg->timeout_ns = (uint64_t)(t * 1e9);
	}
	if (get_double(o, "timeout_median_factor", &t) && t > 0)
		cfg->timeout_factor = t;
	if (gpushare_json_get_u64(o, "mem_per_job_bytes", UINT64_MAX, &v))
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
	if (!gpushare_json_get_u64(o, "job", FARM_JOBS_MAX, &r->job) || !get_hash(o, "hash", &r->hash))
		return "attempt without a valid job or hash";
	/* Version 2 numbers jobs from 1, version 1 from 0: r->job is the index. */
	if (d->config.version >= 2 && r->job-- == 0)
		return "attempt of job 0 (jobs are numbered from 1)";
	if (r->job >= d->config.n_jobs)
		return "attempt of a job beyond the header's job count";
	if (!gpushare_json_get_u64(o, "attempt", UINT32_MAX, &attempt) || attempt == 0)
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

/* Parse a fault record into f (bystanders counted, not kept); NULL on
 * success, else what is wrong. */
static const char *parse_fault(struct farm_journal_data *d, const cJSON *o, struct farm_fault_record *f)
{
	const cJSON *by = cJSON_GetObjectItemCaseSensitive(o, "bystanders"), *e;
	const cJSON *failed = cJSON_GetObjectItemCaseSensitive(o, "culprit_failed");
	const cJSON *restarted = cJSON_GetObjectItemCaseSensitive(o, "server_restarted");
	uint64_t attempt;

	memset(f, 0, sizeof(*f));
	/* Job numbers from 1 (fault records came with journal version 2). */
	if (!gpushare_json_get_u64(o, "culprit", FARM_JOBS_MAX, &f->culprit) || f->culprit == 0 || f->culprit > d->config.n_jobs ||
	    !gpushare_json_get_u64(o, "culprit_attempt", UINT32_MAX, &attempt) || !cJSON_IsArray(by))
		return "fault without a valid culprit, culprit_attempt or bystanders";
	f->culprit--;
	f->culprit_attempt = (unsigned)attempt;
	cJSON_ArrayForEach(e, by) {
		if (!cJSON_IsNumber(e) || e->valuedouble < 1 || e->valuedouble > (double)d->config.n_jobs)
			return "fault with a bystander that is not a job of the list";
		f->n_bystanders++;
	}
	if (!get_int_or_null(o, "gpu", &f->gpu) || !get_str(o, "gpu_uuid", f->gpu_uuid, sizeof(f->gpu_uuid)) ||
	    !get_str(o, "evidence", f->evidence, sizeof(f->evidence)))
		return "fault with an invalid gpu, gpu_uuid or evidence";
	if (!get_double(o, "start_unix_s", &f->start_unix_s) || !get_double(o, "recovered_unix_s", &f->recovered_unix_s) ||
	    f->recovered_unix_s < f->start_unix_s)
		return "fault without valid start_unix_s and recovered_unix_s";
	f->culprit_failed = cJSON_IsTrue(failed);
	f->server_restarted = cJSON_IsTrue(restarted);
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
				    cfg.mode != d->config.mode || cfg.version != d->config.version || cfg.shard.index != d->config.shard.index ||
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
	} else if (!strcmp(type->valuestring, "fault")) {
		struct farm_fault_record f;

		if (!d->n_headers)
			why = "fault record before the header";
		else if (!(why = parse_fault(d, o, &f)) && scan->fault)
			rc = scan->fault(scan->arg, d, &f);
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
	struct stat st;
	char *buf;
	int fd, rc = GPUSHARE_OK;

	memset(out, 0, sizeof(*out));
	snprintf(out->path, sizeof(out->path), "%s", path);
	/* O_NONBLOCK: a FIFO in its place must not wait for a writer. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return gpushare_fail(errno == ENOENT ? GPUSHARE_E_NOT_FOUND : GPUSHARE_E_IO,
				     "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is not a regular file; refusing to read it", path);
	}
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
	const struct farm_journal_scan keep = { NULL, keep_record, NULL, NULL };

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
					     "refusing to resume a different job list", d->path, FARM_JOB_NUMBER(first), jobs->n_jobs);
		gpushare_farm_jobs_format(jobs, (size_t)first, cmd, sizeof(cmd));
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "job %" PRIu64 " (%s:%" PRIu32 ", now '%s') differs from the job the journal in '%s' "
				     "recorded; refusing to resume a changed job list", FARM_JOB_NUMBER(first), jobs->source,
				     jobs->jobs[first].line, cmd, d->path);
	}
	if (old->n_jobs != cfg->n_jobs || old->mode != cfg->mode)
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "the job list has %" PRIu64 " jobs (%s mode) but the journal's farm had %" PRIu64
				     " (%s mode); refusing to resume a different job list", cfg->n_jobs,
				     gpushare_farm_jobs_mode_name(cfg->mode), old->n_jobs, gpushare_farm_jobs_mode_name(old->mode));
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

void gpushare_farm_resume_rerun_failed(struct farm_resume *r)
{
	r->rerun_failed = true;
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
		break;           /* noted too: a rerun numbers its attempt after it */
	default:
		break;
	}
	/* failed, timeout, stopped, bystander: kept until the end decides. */
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
	e->attempts = rec->outcome == FARM_STOPPED || rec->outcome == FARM_BYSTANDER || rec->outcome == FARM_REFUSED ? 0 : 1;
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

	/* --rerun-failed: every job without an ok record runs again, refused
	 * ones too, with its full count of attempts (its numbers go on). */
	if (r->rerun_failed) {
		for (size_t i = 0; i < r->n_jobs; i++) {
			if (r->state[i] == FARM_JOB_FAILED)
				r->state[i] = FARM_JOB_PENDING;
		}
		for (size_t i = 0; i < r->n_notes; i++)
			r->notes[i].attempts = 0;
	}
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
