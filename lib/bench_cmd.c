/*
 * Command mode of `gpushare bench` (`gpushare bench [options] -- CMD ARGS`):
 * any program as a worker. lib/bench_run.c forks one relay per worker where
 * it would exec gpushare-worker; the relay plays gpushare-worker's part of
 * the region protocol (docs/region.md) on behalf of a program that knows
 * nothing about it:
 *
 *  - request mode: the relay starts the command once, with a socket on
 *    GPUSHARE_REPORT_FD, and reads what it writes (docs/protocol.md,
 *    lib/proto.c). "ready" turns the slot READY; at GO the relay writes "go";
 *    each reported request inside the window goes into the slot's histogram;
 *    at the end it writes "stop" and waits for the command to exit.
 *  - job mode: the relay runs the command to completion again and again, K
 *    times or until the window closes; each run is one "request" whose
 *    latency is the job's wall time.
 *
 * The command is executed directly (execve of the path resolved from PATH
 * up front, never a shell) with the strategy's environment plus
 * GPUSHARE_WORKER, GPUSHARE_WORKERS, GPUSHARE_BATCH and, in request mode,
 * GPUSHARE_REPORT_FD. Whatever the command does (exits early, never says
 * ready, writes garbage, floods) the relay's memory stays bounded, the slot
 * says what happened, and the command is stopped; the relay never outlives
 * gpushare (PR_SET_PDEATHSIG) and the command never outlives the relay.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_cmd.h"
#include "gpushare/gpushare.h"
#include "gpushare/hist.h"
#include "gpushare/proto.h"
#include "gpushare/util.h"

#define NS_PER_S 1000000000ULL
#define NS_PER_MS 1000000ULL
#define POLL_MS 10
#define TERM_WAIT_NS (1 * NS_PER_S)     /* SIGTERM to SIGKILL for the command */
#define KILL_WAIT_NS (5 * NS_PER_S)     /* after SIGKILL, before giving up on it */
#define FAIL_WAIT_NS (2 * NS_PER_S)     /* after "fail", for the command to exit */
#define CLOCK_SLACK_NS (1 * NS_PER_S)   /* a span may end this far ahead of our clock */
#define READ_CHUNK 4096
#define READ_BUDGET (256 * 1024)        /* bytes read per loop turn, so phases are still watched */
#define N_CMD_ENV 8

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
	got_term = sig;
}

const char *gpushare_cmd_mode_name(int mode)
{
	return mode == GPUSHARE_CMD_JOB ? "job" : "request";
}

int gpushare_cmd_resolve(const struct gpushare_bench_config *c, char *path, size_t len)
{
	struct stat st;
	char detail[400];

	if (!c->command || !c->command[0] || !c->command[0][0])
		return gpushare_fail(GPUSHARE_E_INVAL, "no command given after '--'");
	if (gpushare_which(c->command[0], path, len)) {
		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		return gpushare_fail(GPUSHARE_E_INVAL, "cannot run command '%s': %s", c->command[0], detail);
	}
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return gpushare_fail(GPUSHARE_E_INVAL, "cannot run command '%s': '%s' is not a regular file",
				     c->command[0], path);
	return GPUSHARE_OK;
}

int gpushare_bench_command_check(const struct gpushare_bench_config *c)
{
	char path[GPUSHARE_PATH_MAX];

	if (!c->command)
		return GPUSHARE_OK;
	if (c->command_mode != GPUSHARE_CMD_REQUEST && c->command_mode != GPUSHARE_CMD_JOB)
		return gpushare_fail(GPUSHARE_E_INVAL, "unknown command mode %d (expected job or request)",
				     c->command_mode);
	for (size_t i = 0; i < c->n_strategies; i++) {
		if (c->strategies[i] == GPUSHARE_STRATEGY_STREAMS)
			return gpushare_fail(GPUSHARE_E_INVAL,
					     "the streams strategy cannot run a command: it runs the workers as threads "
					     "inside one gpushare-worker process, and a command is a process of its own "
					     "(use timeslice, mps, mps-split, mig or sequential)");
	}
	return gpushare_cmd_resolve(c, path, sizeof(path));
}

/* ---- the slot ---- */

struct relay {
	const struct gpushare_cmd_spec *s;
	struct gpushare_region_header *reg;
	struct gpushare_slot *slot;
	char **envp;
	int job_env;                       /* index of GPUSHARE_JOB= in envp, -1 none */
	pid_t pid;                         /* the command; 0 when none runs */
	int pidfd;                         /* -1: poll on a short timeout instead */
	int wstatus;
	bool exited;
	uint64_t grace_ns;                 /* "stop" to SIGTERM */
	/* request mode */
	int sock;                          /* our end of the report socket, -1 closed */
	struct gpushare_proto proto;
	bool ready, go_sent, stop_sent, term_sent, kill_sent, fail_seen;
	char fail_text[GPUSHARE_PROTO_MAX_TEXT + 1];
	char proto_error[200];             /* a semantic error found by the relay */
	uint64_t stop_deadline, kill_deadline;
	/* window and counts */
	uint64_t t_warm, t_start, t_end, limit;
	uint64_t recorded, total, errors;
};

static void store_u64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static void set_state(struct gpushare_slot *s, uint32_t state)
{
	__atomic_store_n(&s->state, state, __ATOMIC_RELEASE);
}

static uint32_t phase_of(const struct relay *r)
{
	return __atomic_load_n(&r->reg->phase, __ATOMIC_ACQUIRE);
}

static void slot_begin(struct relay *r)
{
	const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	const char *mem = NULL;

	/* What the command will see, as far as the environment tells. */
	for (char *const *e = r->s->env; e && *e; e++) {
		if (!strncmp(*e, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=", 34))
			pct = *e + 34;
		else if (!strncmp(*e, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", 34))
			pct = NULL;
		else if (!strncmp(*e, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=", 33))
			mem = *e + 33;
	}
	gpushare_slot_begin(r->slot, (int32_t)getpid(), pct, mem, (uint64_t)r->s->batch);
}

static _Noreturn void finish(struct relay *r, uint32_t state, int exit_code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Last words: the slot's final state (and message), then exit. */
static _Noreturn void finish(struct relay *r, uint32_t state, int exit_code, const char *fmt, ...)
{
	struct gpushare_slot *s = r->slot;

	if (fmt) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(s->message, sizeof(s->message), fmt, ap);
		va_end(ap);
	}
	if (state == GPUSHARE_SLOT_FAILED)
		__atomic_store_n(&s->error_code, GPUSHARE_E_WORKER, __ATOMIC_RELAXED);
	set_state(s, state);
	_exit(exit_code);
}

static void record(struct relay *r, uint64_t t0, uint64_t t1)
{
	struct gpushare_slot *s = r->slot;

	store_u64(&s->total_requests, ++r->total);
	if (t0 < r->t_start || t1 > r->t_end || (r->limit && r->recorded >= r->limit))
		return;
	gpushare_hist_record(&s->hist, t1 - t0);
	if (r->recorded == 0)
		store_u64(&s->t_first_start_ns, t0);
	store_u64(&s->t_last_end_ns, t1);
	store_u64(&s->requests, ++r->recorded);
}

static void read_window(struct relay *r)
{
	r->t_warm = __atomic_load_n(&r->reg->t_warmup_start_ns, __ATOMIC_RELAXED);
	r->t_start = __atomic_load_n(&r->reg->t_measure_start_ns, __ATOMIC_RELAXED);
	r->t_end = __atomic_load_n(&r->reg->t_measure_end_ns, __ATOMIC_RELAXED);
	r->limit = __atomic_load_n(&r->reg->requests_per_worker, __ATOMIC_RELAXED);
}

static void describe(int wstatus, char *buf, size_t len)
{
	if (WIFEXITED(wstatus))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(wstatus));
	else if (WIFSIGNALED(wstatus))
		snprintf(buf, len, "was killed by signal %d (SIG%s)", WTERMSIG(wstatus),
			 sigabbrev_np(WTERMSIG(wstatus)) ? sigabbrev_np(WTERMSIG(wstatus)) : "?");
	else
		snprintf(buf, len, "ended with wait status %d", wstatus);
}

/* The relay's exit status for a command that ended badly: its own exit
 * status, 128 + signal, or `fallback`. */
static int exit_for(int wstatus, int fallback)
{
	if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0)
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return fallback;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / NS_PER_S), (long)(ns % NS_PER_S) };

	nanosleep(&ts, NULL);
}

/* ---- the command's process ---- */

static int build_env(struct relay *r, const char *report_fd)
{
	const struct gpushare_cmd_spec *s = r->s;
	char own[N_CMD_ENV][96];
	size_t n_base = 0, k = 0;
	char **set;

	while (s->env && s->env[n_base])
		n_base++;
	set = calloc(n_base + N_CMD_ENV + 1, sizeof(*set));
	if (!set)
		return -1;
	for (size_t i = 0; i < n_base; i++)
		set[i] = s->env[i];
	snprintf(own[k++], sizeof(own[0]), "GPUSHARE_WORKER=%d", s->worker);
	snprintf(own[k++], sizeof(own[0]), "GPUSHARE_WORKERS=%d", s->workers);
	snprintf(own[k++], sizeof(own[0]), "GPUSHARE_BATCH=%ld", s->batch);
	snprintf(own[k++], sizeof(own[0]), "GPUSHARE_MODE=%s", gpushare_cmd_mode_name(s->c->command_mode));
	if (report_fd) {
		snprintf(own[k++], sizeof(own[0]), "GPUSHARE_REPORT_FD=%s", report_fd);
		snprintf(own[k++], sizeof(own[0]), "GPUSHARE_PROTOCOL=%u", GPUSHARE_PROTO_VERSION);
		snprintf(own[k++], sizeof(own[0]), "GPUSHARE_WARMUP_REQUESTS=%" PRIu64, s->c->warmup_requests);
	} else {
		snprintf(own[k++], sizeof(own[0]), "GPUSHARE_REPORT_FD");
		snprintf(own[k++], sizeof(own[0]), "GPUSHARE_JOB=0");
	}
	for (size_t i = 0; i < k; i++)
		set[n_base + i] = own[i];
	r->envp = gpushare_env_build(set);
	free(set);
	if (!r->envp)
		return -1;
	r->job_env = -1;
	for (int i = 0; r->envp[i]; i++) {
		if (!strncmp(r->envp[i], "GPUSHARE_JOB=", 13))
			r->job_env = i;
	}
	return 0;
}

/* Fork and exec the command; child_fd (>= 0) stays open in it. */
static int start_cmd(struct relay *r, int child_fd, char *msg, size_t len)
{
	int exe[2], e = 0;
	pid_t self = getpid(), pid;
	ssize_t got;

	if (pipe2(exe, O_CLOEXEC) != 0) {
		snprintf(msg, len, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(msg, len, "fork: %s", strerror(errno));
		close(exe[0]);
		close(exe[1]);
		return -1;
	}
	if (pid == 0) {
		int null, flags;

		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != self)
			_exit(127);
		/* N workers must not fight over gpushare's terminal. */
		null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0)
			_exit(127);
		if (child_fd >= 0) {
			flags = fcntl(child_fd, F_GETFD);
			if (flags < 0 || fcntl(child_fd, F_SETFD, flags & ~FD_CLOEXEC) < 0)
				_exit(127);
		}
		execve(r->s->path, r->s->c->command, r->envp);
		e = errno;
		if (write(exe[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(exe[1]);
	do
		got = read(exe[0], &e, sizeof(e));
	while (got < 0 && errno == EINTR);
	close(exe[0]);
	if (got == (ssize_t)sizeof(e)) {
		waitpid(pid, NULL, 0);
		snprintf(msg, len, "cannot execute '%s': %s", r->s->path, strerror(e));
		return -1;
	}
	r->pid = pid;
	r->exited = false;
	r->wstatus = 0;
	r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return 0;
}

static bool reap_cmd(struct relay *r, bool block)
{
	pid_t w;

	if (r->exited || r->pid <= 0)
		return true;
	do
		w = waitpid(r->pid, &r->wstatus, block ? 0 : WNOHANG);
	while (w < 0 && errno == EINTR && block);
	if (w == r->pid || (w < 0 && errno == ECHILD)) {
		r->exited = true;
		if (r->pidfd >= 0)
			close(r->pidfd);
		r->pidfd = -1;
	}
	return r->exited;
}

/* Wait up to ns for the command to exit (a pidfd makes this exact). */
static bool wait_cmd(struct relay *r, uint64_t ns)
{
	uint64_t deadline = gpushare_now_ns() + ns;

	while (!reap_cmd(r, false)) {
		uint64_t now = gpushare_now_ns();

		if (now >= deadline)
			return false;
		if (r->pidfd >= 0) {
			struct pollfd p = { .fd = r->pidfd, .events = POLLIN };
			uint64_t left = (deadline - now + NS_PER_MS - 1) / NS_PER_MS;

			poll(&p, 1, left > POLL_MS ? POLL_MS : (int)left);
		} else {
			sleep_ns(NS_PER_MS);
		}
	}
	return true;
}

/* SIGTERM, a second, SIGKILL: the command is gone (or stuck in the kernel). */
static void stop_cmd(struct relay *r)
{
	if (reap_cmd(r, false))
		return;
	kill(r->pid, SIGTERM);
	if (wait_cmd(r, TERM_WAIT_NS))
		return;
	kill(r->pid, SIGKILL);
	wait_cmd(r, KILL_WAIT_NS);
}

/* ---- job mode ---- */

static _Noreturn void run_jobs(struct relay *r)
{
	char msg[256], how[96];
	uint64_t job;

	if (build_env(r, NULL) != 0)
		finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_INIT, "out of memory");
	set_state(r->slot, GPUSHARE_SLOT_READY);
	for (;;) {
		uint32_t phase = phase_of(r);

		if (phase == GPUSHARE_PHASE_GO)
			break;
		if (phase == GPUSHARE_PHASE_STOP || got_term)
			finish(r, GPUSHARE_SLOT_DONE, 0, NULL);
		sleep_ns(POLL_MS * NS_PER_MS);
	}
	read_window(r);
	while (gpushare_now_ns() < r->t_warm && !got_term && phase_of(r) != GPUSHARE_PHASE_STOP)
		sleep_ns(NS_PER_MS);
	set_state(r->slot, GPUSHARE_SLOT_RUNNING);
	for (job = 0;; job++) {
		uint64_t t0 = gpushare_now_ns(), t1;
		bool cut = false;

		if (got_term || phase_of(r) == GPUSHARE_PHASE_STOP || (r->limit && r->recorded >= r->limit) ||
		    t0 >= r->t_end)
			break;
		if (r->job_env >= 0) {
			char *v = malloc(32);

			if (v) {
				snprintf(v, 32, "GPUSHARE_JOB=%" PRIu64, job);
				free(r->envp[r->job_env]);
				r->envp[r->job_env] = v;
			}
		}
		t0 = gpushare_now_ns();
		if (start_cmd(r, -1, msg, sizeof(msg)) != 0)
			finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_REQUEST, "job %" PRIu64 ": %s", job, msg);
		__atomic_store_n(&r->slot->pid, (int32_t)r->pid, __ATOMIC_RELAXED);
		/* Wait for the job; the window closing or a stop cuts it short. */
		while (!wait_cmd(r, POLL_MS * NS_PER_MS)) {
			if (got_term || phase_of(r) == GPUSHARE_PHASE_STOP || gpushare_now_ns() >= r->t_end) {
				cut = true;
				stop_cmd(r);
				break;
			}
		}
		t1 = gpushare_now_ns();
		if (cut)
			break;
		if (!WIFEXITED(r->wstatus) || WEXITSTATUS(r->wstatus) != 0) {
			describe(r->wstatus, how, sizeof(how));
			finish(r, GPUSHARE_SLOT_FAILED, exit_for(r->wstatus, GPUSHARE_WORKER_EXIT_REQUEST),
			       "job %" PRIu64 " (pid %d) %s", job, (int)r->pid, how);
		}
		record(r, t0, t1);
	}
	if (got_term && phase_of(r) != GPUSHARE_PHASE_STOP)
		finish(r, GPUSHARE_SLOT_FAILED, 128 + got_term, "interrupted");
	finish(r, GPUSHARE_SLOT_DONE, 0, NULL);
}

/* ---- request mode ---- */

static int relay_error(struct relay *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int relay_error(struct relay *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->proto_error, sizeof(r->proto_error), fmt, ap);
	va_end(ap);
	return GPUSHARE_E_INVAL;
}

static int on_msg(void *arg, const struct gpushare_msg *m)
{
	struct relay *r = arg;
	uint64_t now = gpushare_now_ns(), t0, t1;

	switch (m->type) {
	case GPUSHARE_MSG_READY:
		if (!r->ready) {
			r->ready = true;
			set_state(r->slot, GPUSHARE_SLOT_READY);
		}
		return 0;
	case GPUSHARE_MSG_ERROR:
		if (r->go_sent)
			store_u64(&r->slot->errors, ++r->errors);
		return 0;
	case GPUSHARE_MSG_FAIL:
		if (!r->fail_seen) {
			r->fail_seen = true;
			snprintf(r->fail_text, sizeof(r->fail_text), "%s", m->text[0] ? m->text : "no reason given");
		}
		return 0;
	case GPUSHARE_MSG_SPAN:
		t0 = m->a;
		t1 = m->b;
		break;
	case GPUSHARE_MSG_REQ:
		if (m->a > now)
			return relay_error(r, "'req %" PRIu64 "' is longer than the machine's uptime", m->a);
		t0 = now - m->a;
		t1 = now;
		break;
	default:
		return 0;                  /* hello: checked by the parser */
	}
	if (t1 > now + CLOCK_SLACK_NS)
		return relay_error(r, "a request ends %.3f s in the future: timestamps must be CLOCK_MONOTONIC nanoseconds",
				   (double)(t1 - now) / 1e9);
	if (r->go_sent)
		record(r, t0, t1);         /* before GO: warm-up, not counted */
	return 0;
}

static void send_line(struct relay *r, const char *line)
{
	size_t len = strlen(line), off = 0;

	/* A short line into an empty-ish socket buffer; a command that does
	 * not read fills it eventually, and then it is its problem: we do not
	 * block, and "stop" is backed by SIGTERM anyway. */
	while (r->sock >= 0 && off < len) {
		ssize_t n = send(r->sock, line + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		off += (size_t)n;
	}
}

/* Read what is there (at most READ_BUDGET bytes); false on a protocol error. */
static bool pump(struct relay *r)
{
	char buf[READ_CHUNK];
	size_t budget = READ_BUDGET;

	while (r->sock >= 0 && budget > 0) {
		ssize_t n = read(r->sock, buf, sizeof(buf));
		int rc;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		if (n <= 0) {                 /* EOF (or a dead socket): nothing more to hear */
			rc = gpushare_proto_finish(&r->proto);
			close(r->sock);
			r->sock = -1;
			/* A line cut short matters while the command runs; once it
			 * has exited, how it exited is the better story. */
			return rc == GPUSHARE_OK || r->exited;
		}
		budget -= (size_t)n < budget ? (size_t)n : budget;
		rc = gpushare_proto_feed(&r->proto, buf, (size_t)n, gpushare_now_ns(), on_msg, r);
		if (rc)
			return false;
	}
	return true;
}

static _Noreturn void protocol_failure(struct relay *r)
{
	const char *why = r->proto_error[0] ? r->proto_error : r->proto.error;
	bool was_ready = r->ready;

	stop_cmd(r);
	finish(r, GPUSHARE_SLOT_FAILED, was_ready ? GPUSHARE_WORKER_EXIT_REQUEST : GPUSHARE_WORKER_EXIT_INIT,
	       "protocol error from the command (pid %d): %s; it was stopped", (int)r->pid, why);
}

/* The command exited: drain what it wrote, then say how it went. */
static _Noreturn void request_end(struct relay *r)
{
	char how[96];

	if (!pump(r) && (r->proto_error[0] || r->proto.failed))
		protocol_failure(r);
	describe(r->wstatus, how, sizeof(how));
	if (r->fail_seen)
		finish(r, GPUSHARE_SLOT_FAILED, exit_for(r->wstatus, GPUSHARE_WORKER_EXIT_REQUEST),
		       "the command (pid %d) failed: %s", (int)r->pid, r->fail_text);
	if (r->term_sent)
		finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_REQUEST,
		       "the command (pid %d) did not exit within %.1f s of 'stop'; it %s", (int)r->pid,
		       (double)r->grace_ns / 1e9, how);
	if (!WIFEXITED(r->wstatus) || WEXITSTATUS(r->wstatus) != 0)
		finish(r, GPUSHARE_SLOT_FAILED,
		       exit_for(r->wstatus, r->ready ? GPUSHARE_WORKER_EXIT_REQUEST : GPUSHARE_WORKER_EXIT_INIT),
		       "the command (pid %d) %s%s", (int)r->pid, how,
		       !r->ready ? " before it said ready" : r->stop_sent ? "" : " mid-run");
	if (!r->ready)
		finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_INIT,
		       "the command (pid %d) exited with status 0 before it said ready", (int)r->pid);
	if (!r->stop_sent)
		finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_REQUEST,
		       "the command (pid %d) exited with status 0 before the end of the run", (int)r->pid);
	finish(r, GPUSHARE_SLOT_DONE, 0, NULL);
}

static void ask_stop(struct relay *r, uint64_t now, uint64_t wait_ns)
{
	if (r->stop_sent)
		return;
	send_line(r, "stop\n");
	r->stop_sent = true;
	r->stop_deadline = now + wait_ns;
}

static _Noreturn void run_requests(struct relay *r)
{
	char msg[256], fdtext[16];
	int sv[2], flags;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_INIT, "socketpair: %s", strerror(errno));
	snprintf(fdtext, sizeof(fdtext), "%d", sv[1]);
	if (build_env(r, fdtext) != 0)
		finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_INIT, "out of memory");
	if (start_cmd(r, sv[1], msg, sizeof(msg)) != 0)
		finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_INIT, "%s", msg);
	close(sv[1]);
	r->sock = sv[0];
	flags = fcntl(r->sock, F_GETFL);
	if (flags < 0 || fcntl(r->sock, F_SETFL, flags | O_NONBLOCK) < 0) {
		stop_cmd(r);
		finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_INIT, "fcntl: %s", strerror(errno));
	}
	__atomic_store_n(&r->slot->pid, (int32_t)r->pid, __ATOMIC_RELAXED);
	gpushare_proto_init(&r->proto);
	r->t_end = UINT64_MAX;
	for (;;) {
		struct pollfd p[2];
		nfds_t n = 0;
		uint64_t now = gpushare_now_ns();
		uint32_t phase = phase_of(r);

		if (got_term) {
			stop_cmd(r);
			if (phase == GPUSHARE_PHASE_STOP && r->go_sent)
				finish(r, GPUSHARE_SLOT_DONE, 0, NULL);
			finish(r, GPUSHARE_SLOT_FAILED, 128 + got_term, "interrupted");
		}
		if (r->ready && !r->go_sent && phase == GPUSHARE_PHASE_GO) {
			read_window(r);
			snprintf(msg, sizeof(msg), "go %" PRIu64 " %" PRIu64 "\n", r->t_start,
				 r->t_end == UINT64_MAX ? 0 : r->t_end);
			send_line(r, msg);
			r->go_sent = true;
			set_state(r->slot, GPUSHARE_SLOT_RUNNING);
		}
		if (phase == GPUSHARE_PHASE_STOP || (r->go_sent && now >= r->t_end) ||
		    (r->limit && r->recorded >= r->limit))
			/* Before "go" a client is not listening yet (it reads
			 * only in ready()): SIGTERM at once then. */
			ask_stop(r, now, r->go_sent ? r->grace_ns : 0);
		if (r->fail_seen)
			ask_stop(r, now, FAIL_WAIT_NS);
		if (r->stop_deadline && now >= r->stop_deadline && !r->term_sent) {
			kill(r->pid, SIGTERM);
			r->term_sent = true;
			r->kill_deadline = now + TERM_WAIT_NS;
		}
		if (r->kill_deadline && now >= r->kill_deadline && !r->kill_sent) {
			kill(r->pid, SIGKILL);
			r->kill_sent = true;
		}
		if (r->sock >= 0)
			p[n++] = (struct pollfd){ .fd = r->sock, .events = POLLIN };
		if (r->pidfd >= 0)
			p[n++] = (struct pollfd){ .fd = r->pidfd, .events = POLLIN };
		if (poll(p, n, POLL_MS) < 0 && errno != EINTR)
			sleep_ns(POLL_MS * NS_PER_MS);
		if (!pump(r))
			protocol_failure(r);
		if (reap_cmd(r, false))
			request_end(r);
	}
}

_Noreturn void gpushare_cmd_relay(const struct gpushare_cmd_spec *s)
{
	struct relay r;
	struct sigaction sa;

	memset(&r, 0, sizeof(r));
	r.s = s;
	r.reg = s->reg;
	r.slot = gpushare_region_slot(s->reg, s->slot);
	r.pidfd = -1;
	r.sock = -1;
	r.job_env = -1;
	r.limit = 0;
	r.t_end = UINT64_MAX;
	r.grace_ns = s->c->grace_ns / 4 * 3;
	if (r.grace_ns < 100 * NS_PER_MS)
		r.grace_ns = 100 * NS_PER_MS;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL); /* no SA_RESTART: waits wake up */
	slot_begin(&r);
	if (s->c->command_mode == GPUSHARE_CMD_JOB)
		run_jobs(&r);
	run_requests(&r);
}
