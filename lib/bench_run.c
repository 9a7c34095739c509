/*
 * The benchmark launcher: the parent side of the region protocol
 * (include/gpushare/region.h). For each strategy it prepares the
 * environment (a private MPS daemon, per-client limits, MIG devices),
 * starts the gpushare-worker processes with fork+exec, holds them at the
 * start barrier, opens the measurement window, samples the GPU while they
 * run, stops them (STOP, then SIGTERM, then SIGKILL, always reaped) and
 * turns their slots into a struct gpushare_bench_result.
 *
 * No worker outlives the run: every child is tracked and reaped, and each
 * asks the kernel to kill it (PR_SET_PDEATHSIG) should gpushare itself die.
 * Workers ignore SIGINT so that a Ctrl-C reaches only gpushare, which then
 * stops them in order and keeps what they measured.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_cmd.h"
#include "gpushare/bench.h"
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/region.h"

#define NS_PER_S 1000000000ULL
#define NS_PER_MS 1000000ULL
#define POLL_NS (10 * NS_PER_MS)
#define SAMPLE_NS (100 * NS_PER_MS)
#define TERM_WAIT_NS (2 * NS_PER_S)
#define KILL_WAIT_NS (5 * NS_PER_S)
#define CUDA_ERROR_MPS_MAX_CLIENTS 808
#define MAX_ENV 10
#define ENV_LEN (GPUSHARE_PATH_MAX + 64)

/* State shared by all strategies of one run. */
struct bench_ctx {
	const struct gpushare_bench_config *c;
	struct gpushare_bench_report *r;
	char worker[GPUSHARE_PATH_MAX];
	char command[GPUSHARE_PATH_MAX];     /* command mode: the resolved program */
	char run_dir[GPUSHARE_PATH_MAX];     /* private, removed at the end */
	char no_mps_dir[GPUSHARE_PATH_MAX];  /* empty pipe dir: no daemon can answer */
	bool nvml;                           /* telemetry available */
	unsigned gpu_index;
	char visible[128];                   /* CUDA_VISIBLE_DEVICES for the GPU */
	bool visible_is_uuid;
	struct gpushare_system_info sys;
	bool have_sys;
	struct gpushare_metrics_bench *metrics; /* --metrics-listen; NULL off */
};

/* One worker process to start. */
struct proc_spec {
	int first_slot;
	int threads;                         /* 0: no --threads */
	long batch;
	int n_env;
	char env[MAX_ENV][ENV_LEN];
};

struct child {
	pid_t pid;
	int first_slot, n_slots;
	bool reaped;
	int wstatus;
	int signalled;                       /* SIGTERM/SIGKILL we had to send, 0 none */
};

/* One start-barrier-window-stop cycle over a region. */
struct session {
	struct bench_ctx *x;
	int strategy;
	int run, n_runs;                     /* sequential: which worker runs */
	struct gpushare_region_header *reg;
	int fd;
	uint32_t n_slots;
	struct child *children;
	size_t n_children;
	struct gpushare_bench_result *res;
	size_t offset;                       /* first result worker of slot 0 */
	uint64_t t_go, t_measure_start, t_measure_end, t_stopped;
	uint64_t last_progress, last_sample;
	int last_util;
};

/* ---- small helpers ---- */

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S) };

	nanosleep(&ts, NULL); /* EINTR just shortens the wait; callers loop */
}

static void describe_status(int wstatus, char *buf, size_t len)
{
	if (WIFEXITED(wstatus))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(wstatus));
	else if (WIFSIGNALED(wstatus))
		snprintf(buf, len, "was killed by signal %d (SIG%s)", WTERMSIG(wstatus),
			 sigabbrev_np(WTERMSIG(wstatus)) ? sigabbrev_np(WTERMSIG(wstatus)) : "?");
	else
		snprintf(buf, len, "ended with wait status %d", wstatus);
}

static bool status_ok(int wstatus)
{
	return WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
}

static int env_add(struct proc_spec *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int env_add(struct proc_spec *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->n_env >= MAX_ENV)
		return gpushare_fail(GPUSHARE_E_INVAL, "too many environment entries for a worker");
	va_start(ap, fmt);
	n = vsnprintf(p->env[p->n_env], ENV_LEN, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= ENV_LEN)
		return gpushare_fail(GPUSHARE_E_INVAL, "environment entry too long for a worker");
	p->n_env++;
	return GPUSHARE_OK;
}

static int find_worker(const struct gpushare_bench_config *c, char *buf, size_t len)
{
	const char *env = getenv("GPUSHARE_WORKER");
	char self[GPUSHARE_PATH_MAX];
	ssize_t n;
	char *slash;

	if (c->worker_path[0])
		snprintf(buf, len, "%s", c->worker_path);
	else if (env && *env)
		snprintf(buf, len, "%s", env);
	else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			return gpushare_fail(GPUSHARE_E_WORKER, "cannot find gpushare-worker: readlink /proc/self/exe: %s",
					     strerror(errno));
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
		if ((size_t)snprintf(buf, len, "%s/gpushare-worker", self) >= len)
			return gpushare_fail(GPUSHARE_E_WORKER, "path of gpushare-worker too long");
	}
	if (access(buf, X_OK) != 0)
		return gpushare_fail(GPUSHARE_E_WORKER, "cannot execute worker '%s': %s (set GPUSHARE_WORKER)", buf,
				     strerror(errno));
	return GPUSHARE_OK;
}

/* ---- starting and stopping workers ---- */

static int spawn(struct session *s, const struct proc_spec *p, struct child *ch)
{
	const struct gpushare_bench_config *c = s->x->c;
	const struct gpushare_wl_desc *d = c->wl.desc;
	char fdbuf[16], slotbuf[16], threadbuf[16], batchbuf[32], warmbuf[32];
	char opts[GPUSHARE_WL_MAX_OPTS][160];
	char *argv[16 + 2 * GPUSHARE_WL_MAX_OPTS];
	char *envset[MAX_ENV + 1];
	char **envp;
	int argc = 0, exe[2], exec_errno = 0;
	pid_t parent = getpid(), pid;
	ssize_t got;

	snprintf(fdbuf, sizeof(fdbuf), "%d", s->fd);
	snprintf(slotbuf, sizeof(slotbuf), "%d", p->first_slot);
	snprintf(threadbuf, sizeof(threadbuf), "%d", p->threads);
	snprintf(batchbuf, sizeof(batchbuf), "%ld", p->batch);
	snprintf(warmbuf, sizeof(warmbuf), "%" PRIu64, c->warmup_requests);
	argv[argc++] = s->x->worker;
	argv[argc++] = "--region-fd";
	argv[argc++] = fdbuf;
	argv[argc++] = "--slot";
	argv[argc++] = slotbuf;
	if (p->threads > 0) {
		argv[argc++] = "--threads";
		argv[argc++] = threadbuf;
	}
	argv[argc++] = "--workload";
	argv[argc++] = (char *)d->name;
	argv[argc++] = "--batch";
	argv[argc++] = batchbuf;
	argv[argc++] = "--warmup-requests";
	argv[argc++] = warmbuf;
	for (size_t i = 0; i < d->n_opts && i < GPUSHARE_WL_MAX_OPTS; i++) {
		if (!c->wl.given[i])
			continue;
		snprintf(opts[i], sizeof(opts[i]), "%s=%s", d->opts[i].name, c->wl.values[i]);
		argv[argc++] = "--opt";
		argv[argc++] = opts[i];
	}
	argv[argc] = NULL;
	for (int i = 0; i < p->n_env; i++)
		envset[i] = (char *)p->env[i];
	envset[p->n_env] = NULL;
	envp = gpushare_env_build(envset);
	if (!envp)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot build a worker's environment");
	if (pipe2(exe, O_CLOEXEC) != 0) {
		gpushare_env_free(envp);
		return gpushare_fail(GPUSHARE_E_SYS, "pipe: %s", strerror(errno));
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(exe[0]);
		close(exe[1]);
		gpushare_env_free(envp);
		return gpushare_fail(GPUSHARE_E_SYS, "fork: %s", strerror(e));
	}
	if (pid == 0) {
		sigset_t none;
		int flags, e;

		/* Die with gpushare; if it already died, do not start at all. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(127);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		/* Workers' chatter goes to our stderr, never into JSON/CSV on stdout. */
		if (dup2(2, 1) < 0)
			_exit(127);
		if (c->command) {
			/* Command mode: this child becomes the worker's relay
			 * (lib/bench_cmd.c) and never execs gpushare-worker. */
			struct gpushare_cmd_spec cs = {
				.c = c, .path = s->x->command, .reg = s->reg, .slot = (uint32_t)p->first_slot,
				.worker = (int)s->offset + p->first_slot, .workers = (int)s->res->n_workers,
				.batch = p->batch, .env = envset,
			};

			close(exe[1]);
			gpushare_cmd_relay(&cs);
		}
		flags = fcntl(s->fd, F_GETFD);
		if (flags < 0 || fcntl(s->fd, F_SETFD, flags & ~FD_CLOEXEC) < 0)
			_exit(127);
		execve(argv[0], argv, envp);
		e = errno;
		if (write(exe[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(exe[1]);
	gpushare_env_free(envp);
	ch->pid = pid;
	ch->first_slot = p->first_slot;
	ch->n_slots = p->threads > 0 ? p->threads : 1;
	ch->reaped = false;
	do
		got = read(exe[0], &exec_errno, sizeof(exec_errno));
	while (got < 0 && errno == EINTR);
	close(exe[0]);
	if (got == (ssize_t)sizeof(exec_errno)) {
		waitpid(pid, &ch->wstatus, 0);
		ch->reaped = true;
		return gpushare_fail(GPUSHARE_E_WORKER, "cannot execute worker '%s': %s", argv[0], strerror(exec_errno));
	}
	return GPUSHARE_OK;
}

/* Reap whatever exited; returns how many children are still running. */
static size_t reap(struct session *s)
{
	size_t running = 0;

	for (size_t i = 0; i < s->n_children; i++) {
		struct child *ch = &s->children[i];
		pid_t w;

		if (ch->reaped)
			continue;
		w = waitpid(ch->pid, &ch->wstatus, WNOHANG);
		if (w == ch->pid || (w < 0 && errno == ECHILD)) {
			ch->reaped = true;
			if (w < 0)
				ch->wstatus = 0;
			continue;
		}
		running++;
	}
	return running;
}

static bool wait_all(struct session *s, uint64_t ns)
{
	uint64_t deadline = gpushare_now_ns() + ns;

	while (reap(s) > 0) {
		if (gpushare_now_ns() >= deadline)
			return false;
		sleep_ns(POLL_NS / 2);
	}
	return true;
}

static void signal_running(struct session *s, int sig)
{
	for (size_t i = 0; i < s->n_children; i++) {
		if (!s->children[i].reaped) {
			kill(s->children[i].pid, sig);
			s->children[i].signalled = sig;
		}
	}
}

/* STOP, a grace period, SIGTERM, SIGKILL: every child is reaped. */
static void stop_all(struct session *s)
{
	if (!s->t_stopped)
		s->t_stopped = gpushare_now_ns();
	__atomic_store_n(&s->reg->phase, GPUSHARE_PHASE_STOP, __ATOMIC_RELEASE);
	if (wait_all(s, s->x->c->grace_ns))
		return;
	signal_running(s, SIGTERM);
	if (wait_all(s, TERM_WAIT_NS))
		return;
	signal_running(s, SIGKILL);
	if (wait_all(s, KILL_WAIT_NS))
		return;
	/* Still there after SIGKILL: stuck in the kernel (a hung driver
	 * call). The kill is pending; it stays tracked and unreaped rather
	 * than blocking without bound, and the caller sees it as not ended. */
}

static struct child *child_of_slot(struct session *s, uint32_t slot)
{
	for (size_t i = 0; i < s->n_children; i++) {
		struct child *ch = &s->children[i];

		if ((int)slot >= ch->first_slot && (int)slot < ch->first_slot + ch->n_slots)
			return ch;
	}
	return NULL;
}

static uint32_t slot_state(struct session *s, uint32_t i)
{
	return __atomic_load_n(&gpushare_region_slot(s->reg, i)->state, __ATOMIC_ACQUIRE);
}

static void slot_message(struct session *s, uint32_t i, char *buf, size_t len)
{
	const struct gpushare_slot *sl = gpushare_region_slot(s->reg, i);

	snprintf(buf, len, "%.*s", (int)strnlen(sl->message, sizeof(sl->message)), sl->message);
}

/* Describe the failure of slot i (or of its process) into the result. */
static int note_failure(struct session *s, uint32_t i, bool before_ready)
{
	const struct gpushare_slot *sl = gpushare_region_slot(s->reg, i);
	struct gpushare_bench_result *res = s->res;
	struct child *ch = child_of_slot(s, i);
	int idx = (int)(s->offset + i);
	int cuda = __atomic_load_n(&sl->cuda_error, __ATOMIC_RELAXED);
	int code = __atomic_load_n(&sl->error_code, __ATOMIC_RELAXED);
	char msg[256], how[96] = "", cudabuf[48] = "";
	bool failed = slot_state(s, i) == GPUSHARE_SLOT_FAILED;

	slot_message(s, i, msg, sizeof(msg));
	if (ch && ch->reaped)
		describe_status(ch->wstatus, how, sizeof(how));
	if (cuda)
		snprintf(cudabuf, sizeof(cudabuf), " (CUDA error %d)", cuda);
	res->failed_worker = idx;
	if (cuda == CUDA_ERROR_MPS_MAX_CLIENTS || code == GPUSHARE_E_MPS_MAX_CLIENTS) {
		snprintf(res->failure, sizeof(res->failure), "worker %d: too many MPS clients (CUDA error 808)", idx);
		return gpushare_fail(GPUSHARE_E_MPS_MAX_CLIENTS, "%s", res->failure);
	}
	if (failed && msg[0])
		snprintf(res->failure, sizeof(res->failure), "worker %d (pid %d) %s: %s%s%s%s", idx,
			 ch ? (int)ch->pid : -1, before_ready ? "failed to start" : "failed", msg, cudabuf,
			 how[0] ? "; it " : "", how);
	else
		snprintf(res->failure, sizeof(res->failure), "worker %d (pid %d) %s%s%s%s%s", idx,
			 ch ? (int)ch->pid : -1, how[0] ? how : "failed", before_ready ? " before it was ready" : " mid-run",
			 msg[0] ? ": " : "", msg, cudabuf);
	return gpushare_fail(GPUSHARE_E_WORKER, "%s", res->failure);
}

/* Lowest slot that failed: FAILED, or its process ended badly (or, before
 * the barrier, ended at all). -1 when none. */
static int failed_slot(struct session *s, bool before_ready)
{
	for (uint32_t i = 0; i < s->n_slots; i++) {
		struct child *ch;
		uint32_t st = slot_state(s, i);

		if (st == GPUSHARE_SLOT_FAILED)
			return (int)i;
		ch = child_of_slot(s, i);
		if (ch && ch->reaped && (before_ready ? st < GPUSHARE_SLOT_READY || !status_ok(ch->wstatus)
						      : !status_ok(ch->wstatus)))
			return (int)i;
	}
	return -1;
}

static uint64_t recorded_requests(struct session *s)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < s->n_slots; i++)
		n += __atomic_load_n(&gpushare_region_slot(s->reg, i)->requests, __ATOMIC_RELAXED);
	return n;
}

static void progress(struct session *s, int phase, uint64_t phase_start, uint64_t phase_len, unsigned ready)
{
	const struct gpushare_bench_config *c = s->x->c;
	struct gpushare_bench_progress p;
	uint64_t now = gpushare_now_ns();

	if (!c->progress || now - s->last_progress < SAMPLE_NS)
		return;
	s->last_progress = now;
	memset(&p, 0, sizeof(p));
	p.strategy = s->strategy;
	p.phase = phase;
	p.run = s->run;
	p.n_runs = s->n_runs;
	p.ready = ready;
	p.n_slots = s->n_slots;
	p.elapsed_seconds = now > phase_start ? (double)(now - phase_start) / 1e9 : 0;
	p.total_seconds = (double)phase_len / 1e9;
	p.requests = recorded_requests(s);
	p.requests_target = c->requests * s->n_slots;
	p.util_gpu_pct = s->last_util;
	c->progress(c->progress_arg, &p);
}

static void sample(struct session *s)
{
	struct gpushare_gpu_sample g;
	uint64_t now = gpushare_now_ns();

	if (!s->x->nvml || now - s->last_sample < SAMPLE_NS)
		return;
	s->last_sample = now;
	if (gpushare_gpu_sample(s->x->gpu_index, &g) != GPUSHARE_OK)
		return;
	s->last_util = g.util_gpu_pct;
	if (now >= s->t_measure_start && now <= s->t_measure_end)
		gpushare_bench_telemetry_add(&s->res->telemetry, &g);
}

/* ---- the start barrier and the run ---- */

static int wait_ready(struct session *s)
{
	const struct gpushare_bench_config *c = s->x->c;
	uint64_t start = gpushare_now_ns(), deadline = start + c->start_timeout_ns;

	for (;;) {
		unsigned ready = 0;
		int bad;

		if (gpushare_bench_interrupted()) {
			s->res->interrupted = true;
			return gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted while the workers started");
		}
		reap(s);
		bad = failed_slot(s, true);
		if (bad >= 0)
			return note_failure(s, (uint32_t)bad, true);
		for (uint32_t i = 0; i < s->n_slots; i++)
			ready += slot_state(s, i) >= GPUSHARE_SLOT_READY;
		if (ready == s->n_slots)
			return GPUSHARE_OK;
		if (gpushare_now_ns() >= deadline) {
			for (uint32_t i = 0; i < s->n_slots; i++) {
				if (slot_state(s, i) < GPUSHARE_SLOT_READY) {
					s->res->failed_worker = (int)(s->offset + i);
					snprintf(s->res->failure, sizeof(s->res->failure),
						 "worker %d was not ready after %.0f s (--start-timeout)",
						 (int)(s->offset + i), (double)c->start_timeout_ns / 1e9);
					break;
				}
			}
			return gpushare_fail(GPUSHARE_E_TIMEOUT, "%s", s->res->failure);
		}
		progress(s, GPUSHARE_BENCH_STARTING, start, 0, ready);
		sleep_ns(POLL_NS);
	}
}

/* From GO until the window closed, every worker is done, or one failed. */
static void wait_run(struct session *s)
{
	const struct gpushare_bench_config *c = s->x->c;
	uint64_t deadline = c->requests ? s->t_measure_start + c->run_timeout_ns : s->t_measure_end;

	for (;;) {
		uint64_t now = gpushare_now_ns();
		size_t running;
		int bad;

		if (gpushare_bench_interrupted()) {
			s->res->interrupted = true;
			return;
		}
		sample(s);
		running = reap(s);
		bad = failed_slot(s, false);
		/* Command mode: a misbehaving command stops only its own worker;
		 * the first failure is noted and the others carry on. */
		if (bad >= 0 && c->command) {
			if (!s->res->partial) {
				s->res->partial = true;
				note_failure(s, (uint32_t)bad, false);
			}
			bad = -1;
		}
		if (bad >= 0) {
			s->t_stopped = now;
			s->res->partial = true;
			note_failure(s, (uint32_t)bad, false);
			return;
		}
		if (running == 0)
			return;
		if (now >= deadline) {
			if (c->requests) {
				s->t_stopped = now;
				s->res->partial = true;
				snprintf(s->res->failure, sizeof(s->res->failure),
					 "the workers did not finish %" PRIu64 " requests within %.0f s", c->requests,
					 (double)c->run_timeout_ns / 1e9);
			}
			return;
		}
		if (now < s->t_measure_start)
			progress(s, GPUSHARE_BENCH_WARMUP, s->t_go, s->t_measure_start - s->t_go, s->n_slots);
		else
			progress(s, GPUSHARE_BENCH_MEASURING, s->t_measure_start,
				 c->requests ? 0 : s->t_measure_end - s->t_measure_start, s->n_slots);
		sleep_ns(POLL_NS);
	}
}

/* Copy the slots into the result once every worker has been reaped. */
static void collect(struct session *s)
{
	const struct gpushare_bench_config *c = s->x->c;
	uint64_t end = s->t_measure_end;

	if (s->t_stopped && s->t_stopped < end)
		end = s->t_stopped;
	for (uint32_t i = 0; i < s->n_slots; i++) {
		struct gpushare_slot *sl = gpushare_region_slot(s->reg, i);
		struct gpushare_bench_worker *w = &s->res->workers[s->offset + i];
		struct child *ch = child_of_slot(s, i);

		w->index = (int)(s->offset + i);
		w->process = ch ? (int)(ch - s->children) : -1;
		w->pid = ch ? ch->pid : 0;
		w->state = (int)slot_state(s, i);
		w->requests = __atomic_load_n(&sl->requests, __ATOMIC_ACQUIRE);
		w->total_requests = __atomic_load_n(&sl->total_requests, __ATOMIC_RELAXED);
		w->errors = __atomic_load_n(&sl->errors, __ATOMIC_RELAXED);
		w->items_per_request = sl->items_per_request ? sl->items_per_request : (uint64_t)c->wl.batch;
		w->flops_per_request = sl->flops_per_request;
		w->sm_count = sl->sm_count;
		w->device = sl->device;
		w->mem_free_bytes = sl->mem_free_bytes;
		w->mem_total_bytes = sl->mem_total_bytes;
		w->thread_percentage_seen = sl->thread_percentage;
		snprintf(w->mem_limit_seen, sizeof(w->mem_limit_seen), "%.*s",
			 (int)strnlen(sl->mem_limit, sizeof(sl->mem_limit)), sl->mem_limit);
		snprintf(w->device_name, sizeof(w->device_name), "%.*s",
			 (int)strnlen(sl->device_name, sizeof(sl->device_name)), sl->device_name);
		w->error_code = sl->error_code;
		w->cuda_error = sl->cuda_error;
		slot_message(s, i, w->message, sizeof(w->message));
		gpushare_hist_snapshot(&sl->hist, &w->hist);
		if (ch && ch->reaped) {
			w->exit_code = WIFEXITED(ch->wstatus) ? WEXITSTATUS(ch->wstatus) : -1;
			w->signal = WIFSIGNALED(ch->wstatus) ? WTERMSIG(ch->wstatus) : 0;
		}
		w->failed = w->state == GPUSHARE_SLOT_FAILED || (ch && ch->reaped && !status_ok(ch->wstatus));
		if (!s->t_measure_start || end <= s->t_measure_start)
			w->window_seconds = 0;
		else if (c->requests) {
			uint64_t last = __atomic_load_n(&sl->t_last_end_ns, __ATOMIC_RELAXED);

			w->window_seconds = w->requests && last > s->t_measure_start
						    ? (double)(last - s->t_measure_start) / 1e9 : 0;
		} else {
			w->window_seconds = (double)(end - s->t_measure_start) / 1e9;
		}
	}
}

/* Run procs over a fresh region of n_slots slots; slot i fills
 * res->workers[offset + i]. */
static int session_run(struct bench_ctx *x, int strategy, int run, int n_runs, const struct proc_spec *procs,
		       size_t n_procs, uint32_t n_slots, struct gpushare_bench_result *res, size_t offset)
{
	const struct gpushare_bench_config *c = x->c;
	struct session s;
	int rc;

	memset(&s, 0, sizeof(s));
	s.x = x;
	s.strategy = strategy;
	s.run = run;
	s.n_runs = n_runs;
	s.res = res;
	s.offset = offset;
	s.n_slots = n_slots;
	s.last_util = -1;
	s.t_measure_end = UINT64_MAX;
	s.children = calloc(n_procs, sizeof(*s.children));
	if (!s.children)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate %zu children", n_procs);
	rc = gpushare_region_create(n_slots, &s.reg, &s.fd);
	if (rc) {
		free(s.children);
		return rc;
	}
	s.reg->requests_per_worker = c->requests;
	s.reg->warmup_requests = c->warmup_requests;
	gpushare_metrics_bench_attach(x->metrics, strategy, s.reg, n_slots, offset, res->mps_pipe_dir);
	for (size_t i = 0; i < n_procs && rc == GPUSHARE_OK; i++) {
		rc = spawn(&s, &procs[i], &s.children[s.n_children]);
		if (s.children[s.n_children].pid > 0)
			s.n_children++;
		if (rc) {
			res->failed_worker = (int)(offset + (size_t)procs[i].first_slot);
			snprintf(res->failure, sizeof(res->failure), "worker %d: %s", res->failed_worker,
				 gpushare_errdetail());
		}
	}
	if (rc == GPUSHARE_OK)
		rc = wait_ready(&s);
	if (rc == GPUSHARE_OK) {
		uint64_t now = gpushare_now_ns();

		s.t_go = now;
		s.t_measure_start = now + c->warmup_ns;
		s.t_measure_end = c->requests ? UINT64_MAX : s.t_measure_start + c->duration_ns;
		__atomic_store_n(&s.reg->t_warmup_start_ns, s.t_go, __ATOMIC_RELAXED);
		__atomic_store_n(&s.reg->t_measure_start_ns, s.t_measure_start, __ATOMIC_RELAXED);
		__atomic_store_n(&s.reg->t_measure_end_ns, s.t_measure_end, __ATOMIC_RELAXED);
		__atomic_store_n(&s.reg->phase, GPUSHARE_PHASE_GO, __ATOMIC_RELEASE);
		wait_run(&s);
		if (c->progress) {
			s.last_progress = 0;
			progress(&s, GPUSHARE_BENCH_STOPPING, gpushare_now_ns(), 0, s.n_slots);
		}
	}
	{
		/* Keep the failure's detail: stopping must not overwrite it. */
		char detail[512];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		stop_all(&s);
		/* A worker that had to be killed (it hung past STOP) failed too. */
		if (rc == GPUSHARE_OK && !res->partial && !res->interrupted) {
			int bad = failed_slot(&s, false);

			if (bad >= 0) {
				res->partial = true;
				note_failure(&s, (uint32_t)bad, false);
				snprintf(detail, sizeof(detail), "%s", res->failure);
			}
			for (size_t i = 0; !res->partial && i < s.n_children; i++) {
				struct child *ch = &s.children[i];

				if (!ch->signalled)
					continue;
				res->partial = true;
				res->failed_worker = (int)(offset + (size_t)ch->first_slot);
				snprintf(res->failure, sizeof(res->failure),
					 "worker %d (pid %d) did not stop within %.0f s after the window closed; sent SIG%s",
					 res->failed_worker, (int)ch->pid, (double)c->grace_ns / 1e9,
					 sigabbrev_np(ch->signalled) ? sigabbrev_np(ch->signalled) : "?");
			}
		}
		collect(&s);
		if (rc)
			gpushare_fail(rc, "%s", detail);
	}
	if (rc == GPUSHARE_OK && res->interrupted)
		rc = gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted");
	gpushare_metrics_bench_detach(x->metrics);  /* keeps the final values; before the unmap */
	gpushare_region_unmap(s.reg);
	close(s.fd);
	free(s.children);
	return rc;
}

/* ---- strategies ---- */

/* Environment common to workers that must not reach any MPS daemon. */
static int env_plain(struct bench_ctx *x, struct proc_spec *p, const char *visible)
{
	int rc = env_add(p, "CUDA_MPS_PIPE_DIRECTORY=%s", x->no_mps_dir);

	if (!rc && visible && *visible)
		rc = env_add(p, "CUDA_VISIBLE_DEVICES=%s", visible);
	if (!rc)
		rc = env_add(p, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	if (!rc)
		rc = env_add(p, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
	if (!rc)
		rc = env_add(p, "CUDA_MPS_CLIENT_PRIORITY");
	return rc;
}

struct mps_use {
	struct gpushare_mps m;
	bool started;
};

static int mps_setup(struct bench_ctx *x, int strategy, struct mps_use *u, struct gpushare_bench_result *res)
{
	const struct gpushare_bench_config *c = x->c;
	char base[GPUSHARE_PATH_MAX], pipe[GPUSHARE_PATH_MAX], log[GPUSHARE_PATH_MAX];
	struct gpushare_mps_start_opts o;
	struct gpushare_mps_start_info info;
	pid_t pid = 0;
	int rc;

	memset(u, 0, sizeof(*u));
	if (c->mps_pipe_dir[0]) {
		rc = gpushare_mps_init(&u->m, c->mps_pipe_dir, NULL);
		if (!rc)
			rc = gpushare_mps_probe(&u->m, &pid);
		if (rc == GPUSHARE_E_MPS_NOT_RUNNING)
			return gpushare_fail(rc, "no MPS control daemon answers at '%s' (--mps-pipe-dir)", c->mps_pipe_dir);
		if (rc)
			return rc;
		snprintf(res->mps_pipe_dir, sizeof(res->mps_pipe_dir), "%s", u->m.pipe_dir);
		return GPUSHARE_OK;
	}
	if ((size_t)snprintf(base, sizeof(base), "%s/%s", x->run_dir, gpushare_strategy_name(strategy)) >= sizeof(base) ||
	    (size_t)snprintf(pipe, sizeof(pipe), "%s/pipe", base) >= sizeof(pipe) ||
	    (size_t)snprintf(log, sizeof(log), "%s/log", base) >= sizeof(log))
		return gpushare_fail(GPUSHARE_E_DIR, "run directory path too long");
	rc = gpushare_private_dir(pipe);
	if (!rc)
		rc = gpushare_private_dir(log);
	if (!rc)
		rc = gpushare_mps_init(&u->m, pipe, log);
	if (rc)
		return rc;
	memset(&o, 0, sizeof(o));
	o.visible_devices = x->visible[0] ? x->visible : NULL;
	gpushare_mps_limits_init(&o.limits);
	memset(&info, 0, sizeof(info));
	rc = gpushare_mps_start(&u->m, &o, &info);
	if (rc)
		return rc;
	u->started = !info.already_running;
	res->mps_daemon_started = u->started;
	snprintf(res->mps_pipe_dir, sizeof(res->mps_pipe_dir), "%s", u->m.pipe_dir);
	return GPUSHARE_OK;
}

static int mps_teardown(struct mps_use *u, int rc)
{
	struct gpushare_mps_stop_info info;
	char detail[512];
	int src;

	if (!u->started)
		return rc;
	snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
	memset(&info, 0, sizeof(info));
	src = gpushare_mps_stop(&u->m, true, &info);
	u->started = false;
	if (rc)
		gpushare_fail(rc, "%s", detail);
	return rc ? rc : src;
}

static int run_concurrent(struct bench_ctx *x, int strategy, struct gpushare_bench_result *res)
{
	const struct gpushare_bench_config *c = x->c;
	int n = c->workers;
	struct proc_spec *procs;
	struct mps_use mps;
	char pipe_env[GPUSHARE_PATH_MAX + 64], log_env[GPUSHARE_PATH_MAX + 64];
	bool use_mps = strategy == GPUSHARE_STRATEGY_MPS || strategy == GPUSHARE_STRATEGY_MPS_SPLIT;
	int rc = GPUSHARE_OK;

	procs = calloc((size_t)n, sizeof(*procs));
	if (!procs)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate worker specs");
	memset(&mps, 0, sizeof(mps));
	if (use_mps) {
		rc = mps_setup(x, strategy, &mps, res);
		if (!rc)
			rc = gpushare_mps_client_env(&mps.m, pipe_env, sizeof(pipe_env), log_env, sizeof(log_env));
	}
	for (int i = 0; i < n && rc == GPUSHARE_OK; i++) {
		struct proc_spec *p = &procs[i];
		struct gpushare_bench_worker *w = &res->workers[i];

		p->first_slot = i;
		p->batch = c->wl.batch;
		if (!use_mps) {
			rc = env_plain(x, p, x->visible);
			snprintf(w->visible_devices, sizeof(w->visible_devices), "%s", x->visible);
			continue;
		}
		rc = env_add(p, "%s", pipe_env);
		if (!rc && log_env[0])
			rc = env_add(p, "%s", log_env);
		/* With the daemon holding CUDA_VISIBLE_DEVICES, an ordinal in a
		 * client would be remapped; only a UUID is safe to repeat. */
		if (!rc && x->visible_is_uuid) {
			rc = env_add(p, "CUDA_VISIBLE_DEVICES=%s", x->visible);
			snprintf(w->visible_devices, sizeof(w->visible_devices), "%s", x->visible);
		} else if (!rc) {
			rc = env_add(p, "CUDA_VISIBLE_DEVICES");
		}
		if (rc)
			break;
		if (strategy == GPUSHARE_STRATEGY_MPS) {
			rc = env_add(p, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
			if (!rc)
				rc = env_add(p, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
			if (!rc)
				rc = env_add(p, "CUDA_MPS_CLIENT_PRIORITY");
			continue;
		}
		/* mps-split */
		w->thread_percentage_set = c->n_thread_percentage == 0 ? (100 / n > 1 ? 100 / n : 1)
					   : c->thread_percentage[c->n_thread_percentage == 1 ? 0 : i];
		rc = env_add(p, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%g", w->thread_percentage_set);
		if (!rc && c->n_mem_limit) {
			char size[32];

			w->mem_limit_set_bytes = c->mem_limit_bytes[c->n_mem_limit == 1 ? 0 : i];
			rc = gpushare_format_mps_size(w->mem_limit_set_bytes, size, sizeof(size));
			if (!rc)
				rc = env_add(p, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%s", size);
		} else if (!rc) {
			rc = env_add(p, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
		}
		if (!rc && c->n_priority) {
			w->priority_set = c->priority[c->n_priority == 1 ? 0 : i];
			rc = env_add(p, "CUDA_MPS_CLIENT_PRIORITY=%d", w->priority_set);
		} else if (!rc) {
			rc = env_add(p, "CUDA_MPS_CLIENT_PRIORITY");
		}
	}
	if (rc == GPUSHARE_OK)
		rc = session_run(x, strategy, 0, 1, procs, (size_t)n, (uint32_t)n, res, 0);
	rc = mps_teardown(&mps, rc);
	free(procs);
	return rc;
}

static int run_mig(struct bench_ctx *x, struct gpushare_bench_result *res)
{
	const struct gpushare_bench_config *c = x->c;
	const struct gpushare_gpu_info *g = NULL;
	struct proc_spec *procs;
	size_t n_migs, n;
	int rc = GPUSHARE_OK;

	if (!x->have_sys)
		return gpushare_fail(GPUSHARE_E_NO_DRIVER, "the mig strategy needs the NVIDIA driver (NVML)");
	for (size_t i = 0; i < x->sys.n_gpus; i++) {
		if (x->sys.gpus[i].index == x->gpu_index)
			g = &x->sys.gpus[i];
	}
	if (!g || g->mig_current != 1 || g->n_migs == 0)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
				     "MIG is %s on GPU %u; gpushare never changes the MIG layout; see nvidia-smi mig",
				     g && g->mig_current == 1 ? "enabled but has no instances" : "disabled", x->gpu_index);
	n_migs = g->n_migs;
	n = c->workers_given ? (size_t)c->workers : n_migs;
	if (n % n_migs != 0)
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "--workers %d is not a multiple of the %zu MIG instances of GPU %u", c->workers,
				     n_migs, x->gpu_index);
	if (n != res->n_workers) {
		gpushare_bench_result_release(res);
		rc = gpushare_bench_result_init(res, GPUSHARE_STRATEGY_MIG, n);
		if (rc)
			return rc;
	}
	procs = calloc(n, sizeof(*procs));
	if (!procs)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate worker specs");
	for (size_t i = 0; i < n && rc == GPUSHARE_OK; i++) {
		const char *uuid = g->migs[i % n_migs].uuid;

		procs[i].first_slot = (int)i;
		procs[i].batch = c->wl.batch;
		rc = env_plain(x, &procs[i], uuid);
		snprintf(res->workers[i].visible_devices, sizeof(res->workers[i].visible_devices), "%s", uuid);
	}
	if (rc == GPUSHARE_OK)
		rc = session_run(x, GPUSHARE_STRATEGY_MIG, 0, 1, procs, n, (uint32_t)n, res, 0);
	free(procs);
	return rc;
}

static int run_sequential(struct bench_ctx *x, struct gpushare_bench_result *res)
{
	const struct gpushare_bench_config *c = x->c;
	int rc = GPUSHARE_OK;

	for (int i = 0; i < c->workers && rc == GPUSHARE_OK; i++) {
		struct proc_spec p;

		memset(&p, 0, sizeof(p));
		p.batch = c->wl.batch;
		rc = env_plain(x, &p, x->visible);
		snprintf(res->workers[i].visible_devices, sizeof(res->workers[i].visible_devices), "%s", x->visible);
		if (!rc)
			rc = session_run(x, GPUSHARE_STRATEGY_SEQUENTIAL, i, c->workers, &p, 1, 1, res, (size_t)i);
		if (res->partial)
			break;
	}
	return rc;
}

static int run_streams(struct bench_ctx *x, struct gpushare_bench_result *res)
{
	const struct gpushare_bench_config *c = x->c;
	struct proc_spec p;
	int rc;

	memset(&p, 0, sizeof(p));
	p.threads = c->workers;
	p.batch = c->wl.batch;
	rc = env_plain(x, &p, x->visible);
	for (int i = 0; i < c->workers; i++)
		snprintf(res->workers[i].visible_devices, sizeof(res->workers[i].visible_devices), "%s", x->visible);
	if (!rc)
		rc = session_run(x, GPUSHARE_STRATEGY_STREAMS, 0, 1, &p, 1, (uint32_t)c->workers, res, 0);
	return rc;
}

static int run_ceiling(struct bench_ctx *x, struct gpushare_bench_result *res)
{
	const struct gpushare_bench_config *c = x->c;
	struct proc_spec p;
	int rc;

	memset(&p, 0, sizeof(p));
	p.batch = c->wl.batch * c->workers;
	rc = env_plain(x, &p, x->visible);
	snprintf(res->workers[0].visible_devices, sizeof(res->workers[0].visible_devices), "%s", x->visible);
	if (!rc)
		rc = session_run(x, GPUSHARE_STRATEGY_CEILING, 0, 1, &p, 1, 1, res, 0);
	return rc;
}

/* Refuse timeslice while a daemon answers where plain CUDA processes look
 * by default: its server would own the GPU beside our workers. */
static int check_no_daemon(void)
{
	const char *env = getenv("CUDA_MPS_PIPE_DIRECTORY");
	struct gpushare_mps m;
	pid_t pid = 0;
	int rc;

	rc = gpushare_mps_init(&m, env && *env ? env : GPUSHARE_MPS_DEFAULT_PIPE_DIR, NULL);
	if (rc)
		return rc;
	if (gpushare_mps_state(&m, &pid) != GPUSHARE_MPS_RUNNING)
		return GPUSHARE_OK;
	if (gpushare_mps_probe(&m, &pid) != GPUSHARE_OK)
		return GPUSHARE_OK;
	return gpushare_fail(GPUSHARE_E_BUSY,
			     "an MPS control daemon (pid %d) answers at '%s'; timeslice needs the GPU without MPS; "
			     "stop it with 'gpushare mps stop --pipe-dir %s'", (int)pid, m.pipe_dir, m.pipe_dir);
}

/* ---- the whole run ---- */

static void fill_metadata(struct bench_ctx *x)
{
	struct gpushare_bench_report *r = x->r;
	struct utsname u;
	time_t now = time(NULL);
	struct tm tm;

	snprintf(r->version, sizeof(r->version), "%s", gpushare_version());
	if (gmtime_r(&now, &tm))
		strftime(r->date, sizeof(r->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (uname(&u) == 0)
		snprintf(r->host, sizeof(r->host), "%s", u.nodename);
}

static int setup_gpu(struct bench_ctx *x)
{
	const struct gpushare_bench_config *c = x->c;
	bool need_driver = !c->command && c->wl.desc->needs_gpu;
	int rc;

	for (size_t i = 0; i < c->n_strategies; i++)
		need_driver |= c->strategies[i] == GPUSHARE_STRATEGY_MIG;
	snprintf(x->visible, sizeof(x->visible), "%s", c->gpu);
	x->visible_is_uuid = strncmp(c->gpu, "GPU-", 4) == 0 || strncmp(c->gpu, "MIG-", 4) == 0;
	rc = gpushare_nvml_open();
	if (rc) {
		if (need_driver) {
			char detail[400];

			snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
			return gpushare_fail(GPUSHARE_E_NO_DRIVER, "workload '%s'%s needs an NVIDIA GPU%s%s",
					     c->wl.desc->name, c->wl.desc->needs_gpu ? "" : " under mig",
					     detail[0] ? ": " : "", detail);
		}
		gpushare_clear_error();
		return GPUSHARE_OK;
	}
	x->nvml = true;
	rc = gpushare_gpu_find(c->gpu, &x->gpu_index);
	if (rc) {
		char detail[400];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "no GPU '%s' (--gpu)%s%s", c->gpu, detail[0] ? ": " : "",
				     detail);
	}
	x->r->gpu_index = (int)x->gpu_index;
	if (gpushare_system_query(&x->sys) == GPUSHARE_OK) {
		x->have_sys = true;
		snprintf(x->r->driver_version, sizeof(x->r->driver_version), "%s", x->sys.driver_version);
		for (size_t i = 0; i < x->sys.n_gpus; i++) {
			const struct gpushare_gpu_info *g = &x->sys.gpus[i];

			if (g->index != x->gpu_index)
				continue;
			snprintf(x->r->gpu_name, sizeof(x->r->gpu_name), "%s", g->name);
			snprintf(x->r->gpu_uuid, sizeof(x->r->gpu_uuid), "%s", g->uuid);
			/* CUDA orders devices differently from NVML; a UUID
			 * names the same GPU for both. */
			if (g->uuid[0]) {
				snprintf(x->visible, sizeof(x->visible), "%s", g->uuid);
				x->visible_is_uuid = true;
			}
		}
	}
	gpushare_clear_error();
	return GPUSHARE_OK;
}

static int setup_dirs(struct bench_ctx *x)
{
	int rc;

	/* What a killed earlier run left (an MPS daemon above all) goes first. */
	gpushare_rundir_reap(NULL);
	rc = gpushare_rundir_create("bench", x->run_dir, sizeof(x->run_dir));
	if (rc)
		return rc;
	if ((size_t)snprintf(x->no_mps_dir, sizeof(x->no_mps_dir), "%s/no-mps", x->run_dir) >= sizeof(x->no_mps_dir))
		return gpushare_fail(GPUSHARE_E_DIR, "run directory path too long");
	if (mkdir(x->no_mps_dir, 0700) != 0)
		return gpushare_fail(GPUSHARE_E_DIR, "cannot create '%s': %s", x->no_mps_dir, strerror(errno));
	return GPUSHARE_OK;
}

static int add_result(struct gpushare_bench_report *r, int strategy, size_t n, struct gpushare_bench_result **out)
{
	struct gpushare_bench_result *nr = realloc(r->results, (r->n_results + 1) * sizeof(*nr));
	int rc;

	if (!nr)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate a result");
	r->results = nr;
	rc = gpushare_bench_result_init(&nr[r->n_results], strategy, n);
	if (rc)
		return rc;
	*out = &nr[r->n_results++];
	return GPUSHARE_OK;
}

int gpushare_bench_run(const struct gpushare_bench_config *c, struct gpushare_bench_report *r)
{
	struct bench_ctx x;
	double ceiling_ips = 0;
	int rc;

	gpushare_bench_report_init(r, c);
	memset(&x, 0, sizeof(x));
	x.c = c;
	x.r = r;
	fill_metadata(&x);
	rc = gpushare_bench_config_check(c);
	if (!rc)
		rc = c->command ? gpushare_bench_command_check(c) : find_worker(c, x.worker, sizeof(x.worker));
	if (!rc && c->command)
		rc = gpushare_cmd_resolve(c, x.command, sizeof(x.command));
	if (!rc)
		rc = setup_gpu(&x);
	for (size_t i = 0; i < c->n_strategies && !rc; i++) {
		if (c->strategies[i] == GPUSHARE_STRATEGY_TIMESLICE)
			rc = check_no_daemon();
	}
	if (!rc)
		rc = setup_dirs(&x);
	if (!rc && c->metrics)
		x.metrics = c->metrics;  /* the caller's view; it outlives this run */
	else if (!rc)
		rc = gpushare_metrics_bench_start(c, &x.metrics);
	if (!rc && c->ceiling) {
		r->ceiling = calloc(1, sizeof(*r->ceiling));
		if (!r->ceiling)
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate a result");
		if (!rc)
			rc = gpushare_bench_result_init(r->ceiling, GPUSHARE_STRATEGY_CEILING, 1);
		if (!rc) {
			rc = run_ceiling(&x, r->ceiling);
			gpushare_bench_result_compute(r->ceiling, 0);
			ceiling_ips = r->ceiling->items_per_second;
			r->partial |= r->ceiling->partial;
			r->interrupted |= r->ceiling->interrupted;
		}
	}
	for (size_t i = 0; i < c->n_strategies && !rc; i++) {
		struct gpushare_bench_result *res = NULL;
		int s = c->strategies[i];

		rc = add_result(r, s, (size_t)c->workers, &res);
		if (rc)
			break;
		switch (s) {
		case GPUSHARE_STRATEGY_MIG: rc = run_mig(&x, res); break;
		case GPUSHARE_STRATEGY_SEQUENTIAL: rc = run_sequential(&x, res); break;
		case GPUSHARE_STRATEGY_STREAMS: rc = run_streams(&x, res); break;
		default: rc = run_concurrent(&x, s, res); break;
		}
		gpushare_bench_result_compute(res, ceiling_ips);
		r->partial |= res->partial;
		r->interrupted |= res->interrupted;
		if (rc == GPUSHARE_OK && gpushare_bench_interrupted()) {
			r->interrupted = true;
			rc = gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted");
		}
	}
	if (rc == GPUSHARE_E_INTERRUPTED)
		r->interrupted = true;
	{
		char detail[512];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		if (x.metrics != c->metrics)
			gpushare_metrics_bench_stop(x.metrics);
		if (x.run_dir[0])
			gpushare_rundir_remove(x.run_dir);
		if (x.have_sys)
			gpushare_system_release(&x.sys);
		if (x.nvml)
			gpushare_nvml_close();
		if (rc)
			gpushare_fail(rc, "%s", detail);
	}
	return rc;
}
