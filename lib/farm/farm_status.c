/*
 * Farm summaries (include/gpushare/farm.h): `farm status` over one or
 * several farm directories (their journals read in one pass, and what runs
 * now from the live file), and the summary a farm prints at its end, as
 * text or JSON.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
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

#include "sys.h"
#include "gpushare/buf.h"
#include "json.h"
#include "gpushare/child.h"
#include "farm_jobs.h"
#include "farm_journal.h"
#include "gpushare/farm.h"
#include "gpushare/format.h"
#include "gpushare/gpushare.h"
#include "gpushare/utf8.h"
#include "strategy.h"
#include "farm_live.h"


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
	out->faults = s->faults;
	out->bystanders = s->bystanders;
	out->culprits_failed = s->culprits_failed;
	out->fault_recovery_s = s->fault_recovery_s;
	out->n_culprits = s->n_culprits;
	memcpy(out->culprits, s->culprits, sizeof(out->culprits));
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
	/* One journal named several ways (a symbolic link, ./dir, dir/) is
	 * read once: the same file (device and inode) is kept only at its
	 * first mention. */
	size_t m = 0;
	const char **kept_dirs = rc ? NULL : calloc(n ? n : 1, sizeof(*kept_dirs));
	dev_t *devs = rc ? NULL : calloc(n ? n : 1, sizeof(*devs));
	ino_t *inos = rc ? NULL : calloc(n ? n : 1, sizeof(*inos));

	if (!rc && (!kept_dirs || !devs || !inos))
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t i = 0; !rc && i < n; i++) {
		struct stat st;
		bool dup = false;

		if (stat(paths[i], &st) == 0) {
			for (size_t k = 0; k < m && !dup; k++)
				dup = devs[k] == st.st_dev && inos[k] == st.st_ino;
		} else {
			st.st_dev = 0;
			st.st_ino = 0;
		}
		if (dup) {
			free(paths[i]);
			paths[i] = NULL;
			continue;
		}
		devs[m] = st.st_dev;
		inos[m] = st.st_ino;
		kept_dirs[m] = dirs[i];
		paths[m++] = paths[i];
		if (m - 1 != i)
			paths[i] = NULL;
	}
	free(devs);
	free(inos);
	if (!rc) {
		dirs = kept_dirs;
		n = m;
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
		if (farm_live_read(dirs[i], &out->live[out->n_live]))
			out->n_live++;
	}
	if (!rc)
		rc = gpushare_farm_status_jobs(dirs, n, &out->job_list, &out->n_job_list);
	gpushare_journal_summary_release(&s);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(kept_dirs);
	return rc;
}

void gpushare_farm_summary_release(struct gpushare_farm_summary *s)
{
	free(s->gpus);
	free(s->live);
	gpushare_farm_jobs_free(s->job_list, s->n_job_list);
	memset(s, 0, sizeof(*s));
}

void gpushare_farm_result_release(struct gpushare_farm_result *r)
{
	gpushare_farm_summary_release(&r->summary);
}

/* ---- output ---- */

/* "faults": what fatal GPU faults under MPS cost, and their culprits. */
static bool faults_obj(cJSON *o, const struct gpushare_farm_summary *s)
{
	cJSON *f = gpushare_json_obj(o, "faults"), *c;
	bool ok = gpushare_json_int(f, "count", (long long)s->faults) &&
		  gpushare_json_int(f, "bystanders_requeued", (long long)s->bystanders) &&
		  gpushare_json_int(f, "culprits_failed", (long long)s->culprits_failed) &&
		  gpushare_json_num(f, "recovery_seconds", s->fault_recovery_s) &&
		  (c = gpushare_json_arr(f, "culprits")) != NULL;

	for (size_t i = 0; ok && i < s->n_culprits; i++) {
		cJSON *n = cJSON_CreateNumber((double)FARM_JOB_NUMBER(s->culprits[i]));

		ok = n && cJSON_AddItemToArray(c, n);
	}
	return ok;
}

/* Each adds its object under k of doc; false when out of memory. */
static bool summary_obj(cJSON *doc, const char *k, const struct gpushare_farm_summary *s)
{
	cJSON *o = gpushare_json_obj(doc, k), *gpus, *live, *jl;
	bool ok = gpushare_json_int(o, "jobs", (long long)s->jobs) &&
		  gpushare_json_int(o, "shards", (long long)s->shard_count) &&
		  gpushare_json_int(o, "shards_seen", (long long)s->shards_seen) &&
		  gpushare_json_int(o, "done", (long long)s->done) && gpushare_json_int(o, "failed", (long long)s->failed) &&
		  gpushare_json_int(o, "unfinished", (long long)s->unfinished) &&
		  gpushare_json_int(o, "attempts", (long long)s->attempts) &&
		  gpushare_json_num(o, "makespan_seconds", s->makespan_s) &&
		  gpushare_json_num(o, "jobs_per_second", s->jobs_per_s) && gpushare_json_bool(o, "torn_tail", s->torn_tail) &&
		  (gpus = gpushare_json_arr(o, "gpus")) != NULL;

	for (size_t i = 0; ok && i < s->n_gpus; i++) {
		cJSON *g = gpushare_json_obj(gpus, NULL);

		ok = gpushare_json_str(g, "id", s->gpus[i].id) &&
		     gpushare_json_int(g, "attempts", (long long)s->gpus[i].attempts) &&
		     gpushare_json_num(g, "job_seconds", s->gpus[i].job_s) &&
		     gpushare_json_num(g, "busy_seconds", s->gpus[i].busy_s) &&
		     gpushare_json_num(g, "busy_fraction", s->gpus[i].busy_fraction);
	}
	ok = ok && faults_obj(o, s) && (jl = gpushare_json_arr(o, "job_list")) != NULL;
	for (size_t i = 0; ok && i < s->n_job_list; i++) {
		const struct gpushare_farm_job *j = &s->job_list[i];
		cJSON *e = gpushare_json_obj(jl, NULL);

		ok = gpushare_json_str(e, "dir", j->dir) && gpushare_json_int(e, "job", (long long)j->job) &&
		     gpushare_json_str(e, "state", j->running ? "running" : j->failed ? "failed" : "unfinished") &&
		     gpushare_json_str_or_null(e, "command", j->command) && gpushare_json_int(e, "attempts", j->attempts) &&
		     gpushare_json_str(e, "last_outcome", j->outcome) &&
		     (j->exit_code >= 0 ? gpushare_json_int(e, "exit_code", j->exit_code) : gpushare_json_null(e, "exit_code")) &&
		     (j->signal > 0 ? gpushare_json_int(e, "signal", j->signal) : gpushare_json_null(e, "signal")) &&
		     gpushare_json_str(e, "stderr", j->stderr_path);
	}
	ok = ok && (live = gpushare_json_arr(o, "running")) != NULL;
	for (size_t i = 0; ok && i < s->n_live; i++) {
		const struct gpushare_farm_live *l = &s->live[i];
		cJSON *e = gpushare_json_obj(live, NULL);

		ok = gpushare_json_str(e, "dir", l->dir) && gpushare_json_int(e, "pid", l->pid) &&
		     gpushare_json_str(e, "host", l->host) && gpushare_json_int(e, "running", (long long)l->running) &&
		     gpushare_json_int(e, "queued", (long long)l->queued) && gpushare_json_int(e, "slots", l->slots) &&
		     gpushare_json_num(e, "updated_unix_s", l->updated_unix_s) && gpushare_json_bool(e, "stale", l->stale);
	}
	return ok;
}

static bool run_obj(cJSON *doc, const char *k, const struct gpushare_farm_result *r)
{
	cJSON *o = gpushare_json_obj(doc, k), *cal;
	bool ok = gpushare_json_str(o, "dir", r->dir) && gpushare_json_str(o, "strategy", r->strategy) &&
		  gpushare_json_int(o, "shard_index", (long long)r->shard_index) &&
		  gpushare_json_int(o, "shard_count", (long long)r->shard_count) &&
		  gpushare_json_int(o, "shard_jobs", (long long)r->shard_jobs) &&
		  gpushare_json_int(o, "skipped", (long long)r->skipped) &&
		  gpushare_json_str_or_null(o, "slurm", r->slurm) &&
		  gpushare_json_int(o, "attempts", (long long)r->ended) && gpushare_json_int(o, "ok", (long long)r->ok) &&
		  gpushare_json_int(o, "failed_attempts", (long long)r->failed_attempts) &&
		  gpushare_json_int(o, "timeouts", (long long)r->timeouts) &&
		  gpushare_json_int(o, "refused", (long long)r->refused) &&
		  gpushare_json_int(o, "stopped", (long long)r->stopped) &&
		  gpushare_json_int(o, "bystanders", (long long)r->bystanders) && gpushare_json_num(o, "seconds", r->run_s) &&
		  gpushare_json_num(o, "attempts_per_second", r->run_jobs_per_s) && gpushare_json_int(o, "slots", r->slots) &&
		  gpushare_json_bool(o, "calibrated", r->calibrated) &&
		  gpushare_json_bool(o, "calibration_failed", r->calibration_failed) && (cal = gpushare_json_arr(o, "calibration")) != NULL;

	for (size_t i = 0; ok && i < r->n_calibration; i++) {
		cJSON *c = gpushare_json_obj(cal, NULL);

		ok = gpushare_json_int(c, "slots", r->calibration[i].slots) &&
		     gpushare_json_int(c, "jobs", (long long)r->calibration[i].jobs) &&
		     gpushare_json_num(c, "jobs_per_second", r->calibration[i].jobs_per_s);
	}
	return ok && gpushare_json_bool(o, "interrupted", r->interrupted) && gpushare_json_bool(o, "halted", r->halted) &&
	       gpushare_json_int(o, "failed_this_run", (long long)r->run_failed) &&
	       gpushare_json_int(o, "not_started", (long long)r->not_started);
}

int gpushare_farm_summary_json(const struct gpushare_farm_summary *s, const struct gpushare_farm_result *r,
			       char **out)
{
	cJSON *doc = cJSON_CreateObject();
	bool ok = gpushare_json_str(doc, "gpushare_version", gpushare_version()) && summary_obj(doc, "summary", s) &&
		  (!r || run_obj(doc, "run", r));

	*out = gpushare_json_finish(doc, ok, true);
	return *out ? GPUSHARE_OK : gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
}

/* "s" for a count other than one: "1 job", "2 jobs". */
static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
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
	char span[32], num[48];

	if (r) {
		struct gpushare_buf dir = { 0 }; /* names as a terminal shows them */

		gpushare_utf8_term(&dir, r->dir);
		fprintf(f, "farm %s: %s, shard %lu/%lu (%" PRIu64 " job%s)", gpushare_buf_str(&dir), r->strategy, r->shard_index,
			r->shard_count, r->shard_jobs, plural(r->shard_jobs));
		if (r->calibrated && r->n_calibration) {
			fprintf(f, ", %u slot%s per GPU by calibration (", r->slots, plural(r->slots));
			for (size_t i = 0; i < r->n_calibration; i++) {
				if (!r->calibration[i].jobs)
					fprintf(f, "%sK=%u: no job ended ok", i ? ", " : "", r->calibration[i].slots);
				else
					fprintf(f, "%sK=%u: %s jobs/s over %" PRIu64 " ok job%s", i ? ", " : "",
						r->calibration[i].slots,
						gpushare_fmt_si(r->calibration[i].jobs_per_s, num, sizeof(num)),
						r->calibration[i].jobs, plural(r->calibration[i].jobs));
			}
			fprintf(f, ")\n");
			if (r->calibration_failed)
				fprintf(f, "calibration: cannot calibrate, no job of its first round ended ok (failed and "
					   "refused jobs say nothing of K); K=%u is a guess: give --slots K\n", r->slots);
		} else {
			fprintf(f, ", %u slot%s per GPU\n", r->slots, r->slots == 1 ? "" : "s");
		}
		if (r->slurm[0])
			fprintf(f, "slurm: honoured %s%s\n", r->slurm,
				r->slurm_max_slots ? "; the shards bound the slots per GPU" : "");
		duration_text(r->run_s, span, sizeof(span));
		fprintf(f, "this run: %" PRIu64 " attempt%s in %s (%s per second): %" PRIu64 " ok, %" PRIu64
			   " failed, %" PRIu64 " timed out, %" PRIu64 " refused, %" PRIu64 " stopped",
			r->ended, plural(r->ended), span, gpushare_fmt_si(r->run_jobs_per_s, num, sizeof(num)), r->ok, r->failed_attempts, r->timeouts, r->refused, r->stopped);
		if (r->bystanders)
			fprintf(f, ", %" PRIu64 " bystander%s of a GPU fault", r->bystanders, plural(r->bystanders));
		if (r->skipped)
			fprintf(f, "; %" PRIu64 " finished earlier", r->skipped);
		fprintf(f, "\n");
		if (r->interrupted)
			fprintf(f, "stopped: %" PRIu64 " job%s not run; continue with: gpushare farm --resume %s\n",
				r->not_started, plural(r->not_started), gpushare_buf_str(&dir));
		else if (r->halted)
			fprintf(f, "halted after %" PRIu64 " failed job%s (--halt): %" PRIu64 " job%s not started; "
				"continue with: gpushare farm --resume %s\n", r->run_failed, plural(r->run_failed),
				r->not_started, plural(r->not_started), gpushare_buf_str(&dir));
		gpushare_buf_release(&dir);
	}
	duration_text(s->makespan_s, span, sizeof(span));
	fprintf(f, "jobs: %" PRIu64 " done, %" PRIu64 " failed, %" PRIu64 " unfinished of %" PRIu64, s->done, s->failed,
		s->unfinished, s->jobs);
	if (s->shard_count > 1)
		fprintf(f, " (%zu of %lu shards seen)", s->shards_seen, s->shard_count);
	fprintf(f, "\n");
	if (s->jobs_per_s > 0)
		fprintf(f, "makespan %s, %s jobs/s\n", span, gpushare_fmt_si(s->jobs_per_s, num, sizeof(num)));
	else
		fprintf(f, "makespan %s, jobs/s not defined yet\n", span);
	for (size_t i = 0; i < s->n_gpus; i++)
		fprintf(f, "  GPU %-42s %6" PRIu64 " attempt%s, busy %5.1f %% of the makespan\n", s->gpus[i].id,
			s->gpus[i].attempts, plural(s->gpus[i].attempts), 100 * s->gpus[i].busy_fraction);
	if (s->faults) {
		fprintf(f, "GPU faults under MPS: %" PRIu64 " (culprit job%s", s->faults, plural(s->n_culprits));
		for (size_t i = 0; i < s->n_culprits; i++)
			fprintf(f, "%s%" PRIu64, i ? ", " : " ", FARM_JOB_NUMBER(s->culprits[i]));
		fprintf(f, "%s); %" PRIu64 " bystander%s requeued without charge; %" PRIu64 " culprit%s failed; "
			   "recovery %.1f s\n", s->faults > s->n_culprits ? ", ..." : "", s->bystanders, plural(s->bystanders),
			s->culprits_failed, plural(s->culprits_failed), s->fault_recovery_s);
	}
	for (size_t i = 0; i < s->n_live; i++) {
		const struct gpushare_farm_live *l = &s->live[i];
		struct gpushare_buf dir = { 0 }, host = { 0 }; /* read from files: shown, never sent raw */

		gpushare_utf8_term(&dir, l->dir);
		gpushare_utf8_term(&host, l->host);
		if (l->stale)
			fprintf(f, "%s: its farm (pid %ld on %s) is gone; --resume %s runs what it left\n",
				gpushare_buf_str(&dir), l->pid, gpushare_buf_str(&host), gpushare_buf_str(&dir));
		else
			fprintf(f, "%s: running now: %" PRIu64 " job%s, %" PRIu64 " queued, %u slot%s per GPU (pid %ld on %s, "
				   "%.1f s ago)\n", gpushare_buf_str(&dir), l->running, plural(l->running), l->queued, l->slots,
				plural(l->slots), l->pid, gpushare_buf_str(&host),
				farm_unix_now() - l->updated_unix_s);
		gpushare_buf_release(&dir);
		gpushare_buf_release(&host);
	}
	for (size_t i = 0; i < s->n_job_list; i++) {
		const struct gpushare_farm_job *j = &s->job_list[i];
		const char *state = j->running ? "running" : j->failed ? "failed" : "unfinished";
		struct gpushare_buf cmd = { 0 }, dir = { 0 };

		if (i == 0)
			fprintf(f, "%-10s %8s %8s  %-16s %-28s %s\n", "STATE", "JOB", "ATTEMPTS", "LAST", "STDERR", "COMMAND");
		if (j->running)
			fprintf(f, "%-10s %8" PRIu64 " %8u  %-16s ", state, j->job, j->attempts, "running");
		else if (j->signal > 0)
			fprintf(f, "%-10s %8" PRIu64 " %8u  %-7s sig %-4d ", state, j->job, j->attempts, j->outcome, j->signal);
		else if (j->exit_code >= 0)
			fprintf(f, "%-10s %8" PRIu64 " %8u  %-7s exit %-3d ", state, j->job, j->attempts, j->outcome, j->exit_code);
		else
			fprintf(f, "%-10s %8" PRIu64 " %8u  %-16s ", state, j->job, j->attempts, j->outcome);
		/* The command and directory as a terminal shows them: an escape
		 * byte in a job line must not reach the screen raw. */
		gpushare_utf8_term(&cmd, j->command ? j->command : "?");
		gpushare_utf8_term(&dir, s->shards_seen > 1 ? j->dir : "");
		{
			/* a job's output file is made on its first byte: one that
			 * wrote nothing to stderr has none, said as such */
			char full[sizeof(j->dir) + sizeof(j->stderr_path) + 2];
			struct stat sb;
			bool none = !j->running && *j->stderr_path &&
				    (size_t)snprintf(full, sizeof(full), "%s/%s", j->dir, j->stderr_path) < sizeof(full) &&
				    stat(full, &sb) != 0 && errno == ENOENT;
			fprintf(f, "%s%s%-*s %s\n", gpushare_buf_str(&dir), s->shards_seen > 1 ? "/" : "",
				s->shards_seen > 1 ? 0 : 28, none ? "(no stderr)" : j->stderr_path, gpushare_buf_str(&cmd));
		}
		gpushare_buf_release(&cmd);
		gpushare_buf_release(&dir);
	}
	/* farm status names the command that runs the failed jobs again (a
	 * farm's own end message does, after this summary). */
	for (size_t i = 0; !r && i < s->n_job_list; i++) {
		const struct gpushare_farm_job *j = &s->job_list[i];
		struct gpushare_buf dir = { 0 };
		bool seen = false;

		for (size_t k = 0; k < i && !seen; k++)
			seen = s->job_list[k].failed && !strcmp(s->job_list[k].dir, j->dir);
		if (!j->failed || seen)
			continue;
		gpushare_utf8_term(&dir, j->dir);
		fprintf(f, "run the failed jobs again: gpushare farm --rerun-failed %s\n", gpushare_buf_str(&dir));
		gpushare_buf_release(&dir);
	}
	if (s->torn_tail)
		fprintf(f, "note: a journal's last line was torn (a farm was killed while writing it) and was ignored\n");
	if (fflush(f) != 0 || ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the summary: %s", strerror(errno));
	return GPUSHARE_OK;
}
