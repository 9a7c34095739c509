/*
 * `gpushare farm status --failed` and the job lists of `farm status`: the
 * jobs that failed (for good, or waiting for a retry) and the jobs running
 * now, each with its command, attempts, last exit status or signal and
 * stderr file (include/gpushare/farm.h, docs/farm.md).
 *
 * Each journal is read once; one entry is kept per job that has a failed,
 * timed-out, refused or stopped attempt and no ok one (the others cost
 * nothing). Commands come from the directory's copy of the job list, read
 * once in job order. Running jobs come from DIR/running.json.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gpushare/buf.h"
#include "farm_jobs.h"
#include "farm_copy.h"
#include "farm_journal.h"
#include "json.h"
#include "gpushare/farm.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "farm_live.h"

struct job_scan {
	struct gpushare_farm_job *v;
	size_t n, cap;
	const char *dir;
	int rc;
};

static struct gpushare_farm_job *find_job(struct job_scan *s, uint64_t job)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].job == job && !strcmp(s->v[i].dir, s->dir))
			return &s->v[i];
	}
	return NULL;
}

static struct gpushare_farm_job *add_job(struct job_scan *s, uint64_t job)
{
	struct gpushare_farm_job *j;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct gpushare_farm_job *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	j = &s->v[s->n++];
	memset(j, 0, sizeof(*j));
	snprintf(j->dir, sizeof(j->dir), "%s", s->dir);
	j->job = job;
	j->exit_code = -1;
	j->gpu = -1;
	j->slot = -1;
	return j;
}

static int on_record(void *arg, struct farm_journal_data *d, const struct farm_record *r)
{
	struct job_scan *s = arg;
	struct gpushare_farm_job *j = find_job(s, r->job);
	/* A version 1 journal (from 0) names its files by the index. */
	uint64_t file_no = d->config.version >= 2 ? FARM_JOB_NUMBER(r->job) : r->job;

	if (r->outcome == FARM_OK) {
		if (j)
			j->ok = true;
		return GPUSHARE_OK;
	}
	if (!j && !(j = add_job(s, r->job)))
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	if (r->outcome == FARM_FAILED || r->outcome == FARM_TIMEOUT)
		j->counted++;
	if (r->outcome == FARM_REFUSED)
		j->refused = true;
	if (r->attempt >= j->attempts) {
		j->attempts = r->attempt;
		snprintf(j->outcome, sizeof(j->outcome), "%s", gpushare_farm_outcome_name((enum farm_outcome)r->outcome));
		j->exit_code = r->exit_code;
		j->signal = r->signal;
		snprintf(j->stderr_path, sizeof(j->stderr_path), "out/%" PRIu64 ".%u.err", file_no, r->attempt);
	}
	return GPUSHARE_OK;
}

/* The commands of the listed jobs of dir, from its copy of the job list:
 * in shell mode the line as written (what /bin/sh -c reads), else the
 * words quoted as a shell would need them. */
static void add_commands(struct gpushare_farm_job *v, size_t n, const char *dir, enum farm_jobs_mode mode)
{
	char path[GPUSHARE_PATH_MAX + 32];
	struct farm_cursor cur;
	char **argv;
	uint64_t idx = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, FARM_JOBS_COPY_NAME);
	if (gpushare_farm_cursor_open(&cur, path) != GPUSHARE_OK) {
		gpushare_clear_error();
		return;
	}
	for (;; idx++) {
		bool want = false;

		for (size_t i = 0; i < n && !want; i++)
			want = v[i].job == idx && !strcmp(v[i].dir, dir) && !v[i].command;
		argv = NULL;
		if (gpushare_farm_cursor_next(&cur, want, want ? &argv : NULL, NULL) != 1)
			break;
		if (!argv)
			continue;
		for (size_t i = 0; i < n; i++) {
			struct gpushare_buf b = { 0 };

			if (v[i].job != idx || strcmp(v[i].dir, dir) || v[i].command)
				continue;
			if (mode == FARM_JOBS_SHELL && argv[0] && argv[1] && argv[2] && !argv[3]) {
				v[i].command = strdup(argv[2]);
				continue;
			}
			for (size_t k = 0; argv[k]; k++) {
				if ((k && gpushare_buf_add(&b, " ", 1)) || gpushare_buf_add_sh_word(&b, argv[k]))
					break;
			}
			v[i].command = b.len ? strdup(gpushare_buf_str(&b)) : NULL;
			gpushare_buf_release(&b);
		}
		free(argv);
	}
	gpushare_clear_error();
	gpushare_farm_cursor_close(&cur);
}

/* The jobs running now on dir, as its running.json says. */
static int add_running(struct job_scan *s)
{
	const cJSON *jobs, *e, *v;
	cJSON *o = farm_live_parse(s->dir);

	jobs = o ? cJSON_GetObjectItemCaseSensitive(o, "jobs") : NULL;
	cJSON_ArrayForEach(e, jobs) {
		struct gpushare_farm_job *j;

		uint64_t idx;
		long long n;

		/* running.json numbers jobs from 1, as the journal does. */
		if (!gpushare_json_get_u64(e, "job", FARM_JOBS_MAX, &idx) || idx < 1)
			continue;
		idx--;
		if (!(j = find_job(s, idx)) && !(j = add_job(s, idx))) {
			cJSON_Delete(o);
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		}
		j->running = true;
		if (gpushare_json_get_int(e, "attempt", 0, UINT_MAX, &n))
			j->attempts = (unsigned)n;
		if (gpushare_json_get_int(e, "gpu", -1, INT_MAX, &n))
			j->gpu = (int)n;
		if (gpushare_json_get_int(e, "slot", -1, INT_MAX, &n))
			j->slot = (int)n;
		if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(e, "start_unix_s")))
			j->start_unix_s = v->valuedouble;
		snprintf(j->outcome, sizeof(j->outcome), "running");
		snprintf(j->stderr_path, sizeof(j->stderr_path), "out/%" PRIu64 ".%u.err", FARM_JOB_NUMBER(j->job), j->attempts);
	}
	cJSON_Delete(o);
	return GPUSHARE_OK;
}

static int by_job(const void *a, const void *b)
{
	const struct gpushare_farm_job *x = a, *y = b;

	return x->job < y->job ? -1 : x->job > y->job;
}

int gpushare_farm_status_jobs(const char *const *dirs, size_t n, struct gpushare_farm_job **out, size_t *n_out)
{
	struct job_scan s = { 0 };
	int rc = GPUSHARE_OK;

	*out = NULL;
	*n_out = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		char path[GPUSHARE_PATH_MAX + 32];
		const struct farm_journal_scan scan = { NULL, on_record, &s, NULL };
		struct farm_journal_data d;
		enum farm_jobs_mode mode;
		size_t first = s.n, keep;

		s.dir = dirs[i];
		snprintf(path, sizeof(path), "%s/%s", dirs[i], FARM_JOURNAL_NAME);
		rc = gpushare_farm_journal_scan_path(path, &d, &scan);
		if (rc)
			break;
		/* Jobs that ended ok after all drop out; the others are failed for
		 * good (retries used up, or refused) or wait for a retry. */
		keep = first;
		for (size_t k = first; k < s.n; k++) {
			struct gpushare_farm_job *j = &s.v[k];

			if (j->ok)
				continue;
			j->failed = j->refused || j->counted >= 1 + d.retries_last;
			s.v[keep++] = *j;
		}
		s.n = keep;
		mode = d.config.mode;
		gpushare_farm_journal_data_release(&d);
		rc = add_running(&s);
		if (!rc) {
			/* In job order, as the list was written, not as the jobs ended. */
			if (s.n - first > 1)
				qsort(s.v + first, s.n - first, sizeof(*s.v), by_job);
			add_commands(s.v + first, s.n - first, dirs[i], mode);
		}
	}
	if (rc) {
		gpushare_farm_jobs_free(s.v, s.n);
		return rc;
	}
	for (size_t i = 0; i < s.n; i++)
		s.v[i].job = FARM_JOB_NUMBER(s.v[i].job); /* the index until here */
	*out = s.v;
	*n_out = s.n;
	return GPUSHARE_OK;
}

void gpushare_farm_jobs_free(struct gpushare_farm_job *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].command);
	free(v);
}
