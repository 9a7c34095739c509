/*
 * The farm's dispatch (lib/farm/farm_engine.h): jobs taken from the queue
 * (farm_queue.c) into free slots, started with their slot's environment;
 * how each attempt ended recorded (the journal, then what is next for its
 * job: done, failed, a retry) with the live file, metrics and progress;
 * time-outs and stops; and the main loop that ties them together, telling
 * the calibration (farm_calib.c) and the fault part (farm_fault.c) what
 * starts and ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "loop.h"
#include "sys.h"
#include "gpushare/buf.h"
#include "gpushare/child.h"
#include "farm_jobs.h"
#include "farm_journal.h"
#include "gpushare/farm.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "metrics_farm.h"
#include "strategy.h"
#include "run_ctx.h"
#include "farm_engine.h"
#include "farm_keeper.h"
#include "farm_fault.h"
#include "farm_live.h"


/* The wall-clock time of monotonic instant ns of this run: the run's start
 * on the wall clock plus the monotonic time since. Every attempt's start and
 * end come from one clock, so a step of the wall clock during a run never
 * makes a GPU's busy periods overlap or exceed the run's span. */
static double farm_unix_at(const struct farm *f, uint64_t ns)
{
	if (!f->t0_ns)
		return farm_unix_now(); /* before the run's loop */
	return f->t0_unix_s + ((double)ns - (double)f->t0_ns) / 1e9;
}

/* ---- stop requests (async-signal-safe; the level lives in farm_jobs.c) ---- */

void gpushare_farm_stop(bool now)
{
	if (now)
		farm_stop_level = 2;
	else if (farm_stop_level < 1)
		farm_stop_level = 1;
}

/* ---- recording ---- */

void farm_progress(struct farm *f, bool force)
{
	struct gpushare_farm_progress p;
	uint64_t now = gpushare_now_ns();
	double rate;

	if (!f->c->progress || (!force && now - f->last_progress_ns < PROGRESS_NS))
		return;
	f->last_progress_ns = now;
	memset(&p, 0, sizeof(p));
	p.total = f->r->shard_jobs;
	p.done = farm_queue_n_done(&f->q);
	p.failed = farm_queue_n_failed(&f->q);
	p.running = f->running;
	/* Once stopping, the queue starts nothing: only the running jobs are
	 * left to wait for. */
	p.queued = farm_stop_level > 0 ? 0 : f->q.queued;
	p.ended_this_run = f->r->ended;
	p.elapsed_s = (double)(now - f->t0_ns) / 1e9;
	rate = p.elapsed_s > 0 ? (double)(p.done + p.failed - f->r->skipped) / p.elapsed_s : 0;
	p.eta_s = rate > 0 && !f->cal.on ? (double)(p.running + p.queued) / rate : -1;
	p.slots = f->cur_k;
	p.calibrating = f->cal.on;
	p.stopping = farm_stop_level > 0;
	f->c->progress(&p, f->c->progress_arg);
}

/* DIR/running.json (farm_live.c): the jobs running now. */
static void write_live(struct farm *f)
{
	struct farm_live_head h = { f->cfg.hostname, f->t0_unix_s, f->cur_k, f->q.queued, f->running };
	struct farm_live_job *run = calloc(f->running ? f->running : 1, sizeof(*run));
	size_t n = 0;

	if (!run)
		return; /* best effort: the last one stays */
	for (size_t i = 0; i < f->n_gpus * f->max_k && n < f->running; i++) {
		const struct slot *s = &f->slots[i];

		if (s->busy)
			run[n++] = (struct farm_live_job){ s->job, s->attempt, f->gpus[s->gpu].id.index, s->k, s->start_unix_s };
	}
	farm_live_write(f->dir, &h, run, n);
	free(run);
}

void farm_update_metrics(struct farm *f)
{
	if (!f->metrics)
		return;
	for (size_t i = 0; i < f->n_gpus; i++)
		gpushare_metrics_farm_gpu(f->metrics, i, f->gpus[i].running, f->gpus[i].done, f->gpus[i].failed);
	gpushare_metrics_farm_totals(f->metrics, f->q.queued, f->running, farm_queue_n_done(&f->q),
				     farm_queue_n_failed(&f->q), f->cur_k);
}

/* Write the pending records: one write, one fsync. */
static int flush_journal(struct farm *f)
{
	int rc;

	if (!f->n_pending)
		return GPUSHARE_OK;
	rc = gpushare_farm_journal_write_attempts(&f->journal, f->pending, f->n_pending);
	if (!rc)
		farm_keeper_recorded(&f->keeper, f->pending, f->n_pending);
	f->n_pending = 0;
	return rc;
}

static int record(struct farm *f, const struct slot *s, enum farm_outcome o, int wstatus, uint64_t end_ns,
		  bool close_busy)
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
	a.culprit = s->fault_culprit && o == FARM_FAILED;
	a.start_unix_s = s->start_unix_s;
	a.duration_s = s->start_ns ? (double)(end_ns - s->start_ns) / 1e9 : 0;
	a.end_unix_s = s->start_unix_s + a.duration_s;
	snprintf(a.stdout_path, sizeof(a.stdout_path), "%s", s->out_rel);
	snprintf(a.stderr_path, sizeof(a.stderr_path), "%s", s->err_rel);
	if (close_busy && a.gpu >= 0) {
		a.has_gpu_busy = true;
		a.gpu_busy_s = a.end_unix_s > g->busy_start_unix_s ? a.end_unix_s - g->busy_start_unix_s : 0;
	}
	*ap = a;
	f->n_pending++;
	return GPUSHARE_OK;
}

/* An attempt ended with outcome o: record it, then decide what is next for
 * its job (done, failed for good, again, or again on resume). A retry takes
 * the slot's argv (s->argv is NULL then). close_busy: the attempt ended its
 * GPU's busy period. */
static int attempt_ended(struct farm *f, struct slot *s, enum farm_outcome o, int wstatus, uint64_t end_ns,
			 bool close_busy)
{
	struct farm_gpu *g = &f->gpus[s->gpu];
	size_t job = s->job;
	int rc = record(f, s, o, wstatus, end_ns, close_busy);

	if (rc)
		return rc;
	f->r->ended++;
	g->attempts++;
	farm_calib_ended(&f->cal, end_ns, o == FARM_OK);
	switch (o) {
	case FARM_OK:
		f->r->ok++;
		farm_queue_done(&f->q, job);
		g->done++;
		if ((rc = farm_ok_duration(&f->timeout, f->c, end_ns - s->start_ns)) > 0) {
			/* The running attempts get the new deadline too (one not
			 * yet being stopped: a stop under way keeps its course). */
			for (size_t i = 0; i < f->n_gpus * f->max_k; i++) {
				struct slot *run = &f->slots[i];

				if (run->busy && !run->kill_ns)
					run->deadline_ns = run->start_ns + f->timeout.rel_ns;
			}
			rc = GPUSHARE_OK;
		}
		break;
	case FARM_STOPPED:
		f->r->stopped++;
		f->r->not_started++; /* runs again on resume */
		break;
	case FARM_REFUSED:
		f->r->refused++;
		farm_queue_failed(&f->q, job);
		f->r->run_failed++;
		g->failed++;
		break;
	case FARM_BYSTANDER: /* of another job's GPU fault: again, not charged */
		f->r->bystanders++;
		if (farm_stop_level == 0) {
			struct job_ref j = { job, s->hash, s->argv, s->attempts, s->attempt, s->culprit_before,
					     s->isolate_next };

			rc = j.culprit || j.isolate ? farm_queue_push_alone(&f->q, &j) : farm_queue_push(&f->q, &j);
			if (!rc)
				s->argv = NULL;
			f->q.queued++;
		} else {
			f->r->not_started++;
		}
		break;
	case FARM_FAILED:
	case FARM_TIMEOUT:
		if (o == FARM_TIMEOUT)
			f->r->timeouts++;
		else
			f->r->failed_attempts++;
		s->attempts++;
		if (s->fault_culprit && s->culprit_before) { /* faulted again, alone: failed */
			farm_queue_failed(&f->q, job);
			f->r->run_failed++;
			g->failed++;
		} else if (s->attempts < f->c->retries + 1 && farm_stop_level == 0 && !f->r->halted) {
			struct job_ref j = { job, s->hash, s->argv, s->attempts, s->attempt, s->fault_culprit, false };

			/* a fault's culprit runs again alone on a GPU */
			rc = j.culprit ? farm_queue_push_alone(&f->q, &j) : farm_queue_push(&f->q, &j);
			if (!rc)
				s->argv = NULL;
			f->q.queued++;
		} else if (s->attempts < f->c->retries + 1) {
			f->r->not_started++;
		} else {
			farm_queue_failed(&f->q, job);
			f->r->run_failed++;
			g->failed++;
		}
		break;
	}
	if (f->c->halt && f->r->run_failed >= f->c->halt)
		f->r->halted = true; /* --halt: no job starts from now on */
	return rc;
}

/* ---- starting a job ---- */

/* path = the farm directory's rel; E_INVAL when it does not fit. */
static int farm_path(const struct farm *f, const char *rel, char *path, size_t len)
{
	if ((size_t)snprintf(path, len, "%s/%s", f->dir, rel) >= len)
		return gpushare_fail(GPUSHARE_E_INVAL, "the farm directory's path is too long");
	return GPUSHARE_OK;
}

static int open_output(struct farm *f, const char *rel, int *fd)
{
	char path[GPUSHARE_PATH_MAX * 2];
	int rc = farm_path(f, rel, path, sizeof(path));

	if (rc)
		return rc;
	*fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (*fd < 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot open '%s': %s", path, strerror(errno));
	return GPUSHARE_OK;
}

/* The job's .err file (err_rel, made afresh) says in one line why it did not
 * run. The line is formatted before anything else can change errdetail. */
static int err_line(struct farm *f, const char *err_rel, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int err_line(struct farm *f, const char *err_rel, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int fd, n, rc;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if ((rc = open_output(f, err_rel, &fd)) != GPUSHARE_OK)
		return rc;
	if (n > 0 && write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
		n = 0;
	close(fd);
	return GPUSHARE_OK;
}

/* The entry NAME=... of env set to NAME=value (the run's session gave it). */
static int env_replace(struct gpushare_strv *env, const char *name, const char *value)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < env->n; i++) {
		char *e = env->v[i], *repl;
		size_t len = nl + strlen(value) + 2;

		if (strncmp(e, name, nl) || e[nl] != '=')
			continue;
		if (!(repl = malloc(len)))
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		snprintf(repl, len, "%s=%s", name, value);
		free(e);
		env->v[i] = repl;
	}
	return GPUSHARE_OK;
}

static int job_env(struct farm *f, struct slot *s, struct gpushare_strv *env)
{
	const struct farm_gpu *g = &f->gpus[s->gpu];
	struct gpushare_placement pl;
	int rc;

	f->run.sx.workers = (int)f->cur_k;
	rc = gpushare_run_ctx_env(&f->run, (int)s->k, f->placed ? g->id.uuid : "", env, &pl);
	/* Under the prolog's daemons: the one of this job's GPU (farm.c). */
	if (!rc && f->prolog_daemons && g->prolog_pipe[0])
		rc = env_replace(env, "CUDA_MPS_PIPE_DIRECTORY", g->prolog_pipe);
	if (!rc)
		rc = gpushare_strv_addf(env, "GPUSHARE_FARM_JOB=%" PRIu64, FARM_JOB_NUMBER(s->job));
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
	char **direct = NULL;
	int out = -1, err = -1, rc = GPUSHARE_OK;

	s->job = job;
	s->hash = j->hash;
	s->argv = j->argv;
	s->attempts = j->attempts;
	s->attempt = j->last_attempt + 1;
	s->timed_out = s->stopped = false;
	s->isolated = s->fault_named = s->fault_culprit = s->isolate_next = false;
	s->culprit_before = j->culprit;
	s->kill_ns = 0;
	snprintf(s->out_rel, sizeof(s->out_rel), "out/%" PRIu64 ".%u.out", FARM_JOB_NUMBER(job), s->attempt);
	snprintf(s->err_rel, sizeof(s->err_rel), "out/%" PRIu64 ".%u.err", FARM_JOB_NUMBER(job), s->attempt);
	if (f->c->output) {
		/* Tailed as it runs: the files must exist before it starts. */
		rc = open_output(f, s->out_rel, &out);
		if (!rc)
			rc = open_output(f, s->err_rel, &err);
		if (!rc)
			rc = farm_tail_open(f->c, f->dir, s->out_rel, s->err_rel, s->job, s->attempt, &s->tail);
	} else {
		rc = farm_path(f, s->out_rel, s->out_path, sizeof(s->out_path));
		if (!rc)
			rc = farm_path(f, s->err_rel, s->err_path, sizeof(s->err_path));
	}
	if (!rc)
		rc = job_env(f, s, &env);
	if (rc)
		goto out;
	/* A shell line that is one plain command runs without the shell:
	 * the same command, and its signal or refusal stays its own. */
	if (f->mode == FARM_JOBS_SHELL && (rc = gpushare_farm_jobs_direct(s->argv, &direct)))
		goto out;
	gpushare_child_init(&s->ch);
	s->ch.argv = direct ? direct : s->argv;
	s->ch.env_set = gpushare_strv_list(&env);
	s->ch.in = GPUSHARE_CHILD_DEVNULL;
	s->ch.out = out;
	s->ch.err = err;
	if (out < 0) {
		s->ch.out_path = s->out_path;
		s->ch.err_path = s->err_path;
	}
	s->ch.flags = GPUSHARE_CHILD_IGNORE_SIGINT;
	if (farm_keeper_linked(&f->keeper)) {
		/* Under a mirror that tells the keeper how it ended. */
		s->ch.flags |= GPUSHARE_CHILD_MIRROR | GPUSHARE_CHILD_LATE_EXEC_ERROR;
		/* Its files made on its first byte to each: a job that
		 * writes nothing costs no inode (docs/farm.md). */
		if (out < 0)
			s->ch.flags |= GPUSHARE_CHILD_LAZY_FILES;
		s->ch.mirror_start = farm_keeper_job_started;
		s->ch.mirror_exit = farm_keeper_job_ended;
		s->ch.mirror_arg = s;
	}
	s->start_ns = gpushare_now_ns();
	s->start_unix_s = farm_unix_at(f, s->start_ns);
	rc = gpushare_child_start(&s->ch);
	s->ch.argv = s->argv;    /* direct is freed below */
	if (rc == GPUSHARE_E_NOT_FOUND || rc == GPUSHARE_E_INVAL) {
		/* Cannot be executed: never will. The record says refused
		 * even when its .err file cannot say why. */
		err_line(f, s->err_rel, "gpushare: cannot execute job %" PRIu64 ": %s\n", FARM_JOB_NUMBER(job),
			 gpushare_errdetail());
		if (out < 0 && !farm_keeper_linked(&f->keeper))
			open_output(f, s->out_rel, &out); /* both files, as its child would have made */
		gpushare_clear_error();
		f->q.queued--;
		rc = attempt_ended(f, s, FARM_REFUSED, 0, s->start_ns, false);
		goto out;
	}
	if (rc)
		goto out;
	s->busy = true;
	s->deadline_ns = farm_deadline(&f->timeout, f->c, s->start_ns);
	f->running++;
	if (f->gpus[s->gpu].running++ == 0)
		f->gpus[s->gpu].busy_start_unix_s = s->start_unix_s;
	f->q.queued--;
	farm_calib_started(&f->cal, s->start_ns);
out:
	if (!s->busy) {
		farm_tail_read(f->c, &s->tail, true);
		free(s->argv);
		s->argv = NULL;
	}
	if (out >= 0)
		close(out);
	if (err >= 0)
		close(err);
	free(direct);
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

		if (gp->running >= f->cur_k || gp->running >= gp->mem_cap || gp->running >= best_running || gp->hold)
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
	char size[32];
	size_t job = j->job;
	int rc;

	memset(&s, 0, sizeof(s));
	s.job = job;
	s.hash = j->hash;
	s.attempts = j->attempts;
	s.attempt = j->last_attempt + 1;
	free(j->argv);
	s.start_unix_s = farm_unix_at(f, gpushare_now_ns());
	snprintf(s.err_rel, sizeof(s.err_rel), "out/%" PRIu64 ".%u.err", FARM_JOB_NUMBER(job), s.attempt);
	if (gpushare_format_mps_size(f->c->mem_per_job_bytes, size, sizeof(size)) != GPUSHARE_OK)
		snprintf(size, sizeof(size), "%" PRIu64 " bytes", f->c->mem_per_job_bytes);
	rc = err_line(f, s.err_rel, "gpushare: job %" PRIu64 " not started: --mem-per-job %s is more than the free "
		      "memory of every chosen GPU\n", FARM_JOB_NUMBER(job), size);
	if (rc)
		return rc;
	f->q.queued--;
	return attempt_ended(f, &s, FARM_REFUSED, 0, 0, false);
}

/* Start the retries that run alone, each on a GPU of its own. */
static int dispatch_alone(struct farm *f)
{
	int rc = GPUSHARE_OK;

	while (!rc && f->q.n_alone && farm_stop_level == 0) {
		size_t g = farm_fault_gpu_alone(f->gpus, f->n_gpus);
		struct slot *s;
		struct job_ref j;

		if (g == SIZE_MAX || !farm_queue_next_alone(&f->q, &j))
			break;
		s = &f->slots[g * f->max_k];
		f->gpus[g].hold = FARM_HOLD_ISOLATED;
		rc = start_job(f, s, &j);
		if (s->busy)
			s->isolated = true;
		else
			f->gpus[g].hold = FARM_HOLD_NONE;
	}
	return rc;
}

/* Start jobs while slots are free, jobs wait and no stop was asked. */
static int dispatch(struct farm *f)
{
	int rc = dispatch_alone(f);

	while (!rc && farm_stop_level == 0 && !f->r->halted && f->q.queued) {
		struct slot *s = NULL;
		struct job_ref j;
		int got;

		if (farm_calib_full(&f->cal))
			break;
		if (!(f->c->mem_per_job_bytes && never_fits(f)) && !(s = free_slot(f)))
			break;
		if ((got = farm_queue_next(&f->q, &j)) <= 0)
			return got;
		rc = s ? start_job(f, s, &j) : refuse_for_memory(f, &j);
	}
	return rc;
}

/* ---- watching running jobs ---- */

static struct farm_fault_view fault_view(struct farm *f)
{
	struct farm_fault_view v = { f->gpus, f->n_gpus, f->slots, f->max_k, f->dir, &f->run.sx.mps, f->c->retries };

	return v;
}

/* Record the faults whose GPU all clients have left: each attempt (the
 * bystanders requeued without charge), then the fault record. */
static int settle_faults(struct farm *f, uint64_t now)
{
	struct farm_fault_view v = fault_view(f);
	struct farm_fault_settle st;
	int got, rc = GPUSHARE_OK;

	while (!rc && (got = farm_fault_poll(f->faults, &v, now, farm_stop_level > 0, &st)) != 0) {
		if (got < 0)
			return got;
		for (size_t i = 0; i < st.n; i++) {
			struct farm_fault_member *m = &st.m[i];
			int r2 = attempt_ended(f, &m->s, m->o, m->wstatus, m->end_ns, m->close_busy);

			if (!rc)
				rc = r2;
		}
		if (!rc)
			rc = flush_journal(f);
		if (!rc)
			rc = gpushare_farm_journal_write_fault(&f->journal, &st.rec);
		got = farm_fault_settled(f->faults, &v, &st);
		if (!rc)
			rc = got;
	}
	return rc;
}

static int finish_slot(struct farm *f, struct slot *s)
{
	uint64_t end = gpushare_now_ns();
	int ws = s->ch.wstatus;
	enum farm_outcome o;
	bool close_busy;
	int rc;

	/* What the job left in its process group (a shell's `cmd &`) is killed. */
	gpushare_child_reap_group(&s->ch);
	farm_tail_read(f->c, &s->tail, true);
	gpushare_child_release(&s->ch);
	s->busy = false;
	f->running--;
	f->gpus[s->gpu].running--;
	close_busy = f->gpus[s->gpu].running == 0; /* this attempt ends the GPU's busy period */
	if (s->ch.open_errno) {
		/* Its output files could not be created: the farm's trouble
		 * (a full disk, a removed directory), as at start. */
		rc = gpushare_fail(GPUSHARE_E_IO, "cannot open '%s': %s", s->ch.open_path, strerror(s->ch.open_errno));
		free(s->argv);
		s->argv = NULL;
		return rc;
	}
	if (s->ch.exec_errno) {
		/* Cannot be executed (learnt as the mirror ended): as at start. */
		if (err_line(f, s->err_rel, "gpushare: cannot execute job %" PRIu64 ": cannot execute '%s': %s\n",
			     FARM_JOB_NUMBER(s->job), s->argv && s->argv[0] ? s->argv[0] : "",
			     strerror(s->ch.exec_errno)) != GPUSHARE_OK)
			gpushare_clear_error();
		ws = 0;
		o = FARM_REFUSED;
	} else if (s->timed_out)
		o = FARM_TIMEOUT;
	else if (s->stopped)
		o = FARM_STOPPED;
	else
		o = gpushare_child_ok(ws) ? FARM_OK : FARM_FAILED;
	farm_fault_slot_ended(f->gpus, s);
	if (o == FARM_FAILED && f->fault_watch) {
		struct farm_fault_view v = fault_view(f);

		if (farm_fault_take(&f->faults, &v, s, ws, end, close_busy))
			return GPUSHARE_OK; /* held until its GPU's fault is settled */
	}
	rc = attempt_ended(f, s, o, ws, end, close_busy);
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

/* A job's end (its pidfd readable) or a deadline ends the wait. */
static int wake(struct gpushare_loop *l, void *arg)
{
	(void)l;
	(void)arg;
	return 1;
}

/* Sleep until a job ends, a deadline comes or the tick passes: each running
 * job's pidfd and its next deadline (its kill time, else its --timeout)
 * registered on the loop, with the tick (the output files' with --tag; a
 * short one for a child without a pidfd, or while nothing runs). */
static void wait_some(struct farm *f, struct gpushare_loop *l, uint64_t now)
{
	size_t total = f->n_gpus * f->max_k;
	uint64_t tick_ns = TICK_NS;
	bool fallback = false;

	gpushare_loop_clear(l);
	for (size_t i = 0; i < total; i++) {
		const struct slot *s = &f->slots[i];
		uint64_t next = s->kill_ns && s->kill_ns != UINT64_MAX ? s->kill_ns : s->deadline_ns;

		if (!s->busy)
			continue;
		if (next && next <= now)
			return; /* due now: no wait */
		if (next && gpushare_loop_add_deadline(l, next, wake, NULL) < 0)
			fallback = true;
		if (s->ch.pidfd < 0 || gpushare_loop_add_fd(l, s->ch.pidfd, wake, NULL) < 0)
			fallback = true;
	}
	if (f->c->output && tick_ns > TAIL_NS)
		tick_ns = TAIL_NS;
	if (fallback && tick_ns > NO_PIDFD_TICK_NS)
		tick_ns = NO_PIDFD_TICK_NS;
	if (!f->running && tick_ns > NO_PIDFD_TICK_NS * 5)
		tick_ns = NO_PIDFD_TICK_NS * 5;
	if (gpushare_loop_add_deadline(l, now + tick_ns, wake, NULL) < 0) {
		/* No room for the tick: sleep it out. */
		gpushare_sleep_ns(tick_ns);
		return;
	}
	/* One round: a signal (a stop) wakes it too. */
	if (gpushare_loop_run_once(l) < 0)
		gpushare_clear_error(); /* poll failed: the next round looks again */
}

/* ---- the run ---- */

int farm_run_loop(struct farm *f)
{
	struct gpushare_loop l;
	int rc = GPUSHARE_OK;

	gpushare_loop_init(&l);
	f->fault_watch = farm_fault_watched(f->c->strategy, &f->run.sx.mps);
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
		if (!rc && f->faults)
			rc = settle_faults(f, now);
		if (!rc)
			rc = flush_journal(f); /* before anything else starts */
		if (rc)
			break;
		for (size_t i = 0; f->c->output && i < f->n_gpus * f->max_k; i++) {
			if (f->slots[i].busy)
				farm_tail_read(f->c, &f->slots[i].tail, false);
		}
		if (farm_calib_due(&f->cal, f->running, f->q.queued))
			f->cur_k = farm_calib_step(&f->cal, f->cur_k, f->r);
		rc = dispatch(f);
		if (!rc)
			rc = flush_journal(f); /* jobs refused while dispatching */
		if (rc)
			break;
		farm_update_metrics(f);
		farm_progress(f, ended);
		if (gpushare_now_ns() - f->last_live_ns >= PROGRESS_NS) {
			write_live(f);
			f->last_live_ns = gpushare_now_ns();
		}
		if (!f->running && (!f->q.queued || farm_stop_level > 0 || f->r->halted) && !farm_fault_open(f->faults))
			break;
		wait_some(f, &l, gpushare_now_ns());
	}
	gpushare_loop_release(&l);
	f->cur_k = farm_calib_finish(&f->cal, f->cur_k, f->r);
	return rc;
}

/* Each running job holds its pidfd and its exec report (and, with --tag,
 * two pipes); the farm itself a few dozen (journal, lock, keeper, metrics,
 * MPS, the driver's). */
#define FDS_BASE 64
#define FDS_PER_SLOT 4

int farm_slots_alloc(struct farm *f)
{
	char what[96];
	int rc;

	snprintf(what, sizeof(what), "%u slot%s on %zu GPU%s", f->max_k, f->max_k == 1 ? "" : "s", f->n_gpus,
		 f->n_gpus == 1 ? "" : "s");
	if ((rc = gpushare_reserve_fds(FDS_BASE + FDS_PER_SLOT * f->n_gpus * f->max_k, what)) != GPUSHARE_OK)
		return rc;
	f->slots = calloc(f->n_gpus * f->max_k, sizeof(*f->slots));
	if (!f->slots)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t g = 0; g < f->n_gpus; g++) {
		for (unsigned k = 0; k < f->max_k; k++) {
			struct slot *s = &f->slots[g * f->max_k + k];

			gpushare_child_init(&s->ch);
			s->index = (unsigned)(g * f->max_k + k);
			s->gpu = g;
			s->k = k;
		}
	}
	return GPUSHARE_OK;
}

/* Something went wrong mid-farm (a journal write): stop every running job
 * at once, recording nothing more. */
void farm_stop_all(struct farm *f)
{
	for (size_t i = 0; f->slots && i < f->n_gpus * f->max_k; i++) {
		struct slot *s = &f->slots[i];

		if (!s->busy)
			continue;
		gpushare_child_stop(&s->ch, TERM_GRACE_NS);
		gpushare_child_release(&s->ch);
		farm_tail_read(f->c, &s->tail, true);
		free(s->argv);
		s->argv = NULL;
		s->busy = false;
	}
}
