/*
 * Command mode of `gpushare bench` (`gpushare bench [options] -- CMD ARGS`):
 * any program as a worker. lib/bench/bench_workers.c forks one relay per
 * worker where it would exec gpushare-worker; the relay plays
 * gpushare-worker's part of the region protocol (docs/region.md) on behalf
 * of a program that knows nothing about it:
 *
 *  - request mode: the relay starts the command once, with a socket on
 *    GPUSHARE_REPORT_FD, and reads what it writes (docs/protocol.md,
 *    lib/worker/proto.c). "ready" turns the slot READY; at GO the relay writes "go";
 *    each reported request inside the window goes into the slot's histogram;
 *    at the end it writes "stop" and waits for the command to exit. A
 *    version-2 command is handed its requests instead ("req ID", answered
 *    by "done ID"), one at a time: under open-loop load the relay claims
 *    each from the region's ring like gpushare-worker does, and latency
 *    counts from the arrival's scheduled time; under closed loop the next
 *    request follows each "done" at once.
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
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "loop.h"
#include "sys.h"
#include "bench_cmd.h"
#include "bench_preload.h"
#include "gpushare/child.h"
#include "gpushare/gpushare.h"
#include "gpushare/hist.h"
#include "gpushare/proto.h"
#include "gpushare/util.h"

#define POLL_MS 10
#define TERM_WAIT_NS (1 * NS_PER_S)     /* SIGTERM to SIGKILL for the command */
#define FAIL_WAIT_NS (2 * NS_PER_S)     /* after "fail", for the command to exit */
#define EOF_EXIT_WAIT_NS (500 * NS_PER_MS) /* report channel closed before ready: exiting? */
#define CLOCK_SLACK_NS (1 * NS_PER_S)   /* a span may end this far ahead of our clock */
#define READ_CHUNK 4096
#define READ_BUDGET (256 * 1024)        /* bytes read per loop turn, so phases are still watched */
#define N_CMD_ENV 8
#define IDLE_POLL_NS (20 * 1000ULL)      /* v2, waiting for an arrival: how often to look */

static volatile sig_atomic_t got_term;
/* Written on SIGTERM, so that a relay waiting on its loop wakes at once. */
static int term_pipe[2] = { -1, -1 };

static void on_term(int sig)
{
	int saved = errno;

	got_term = sig;
	if (term_pipe[1] >= 0 && write(term_pipe[1], "", 1) < 0) {
		/* Full: a wake-up is pending already. */
	}
	errno = saved;
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
	if (c->preload && c->command_mode == GPUSHARE_CMD_JOB)
		return gpushare_fail(GPUSHARE_E_INVAL, "--preload forks request-mode workers from a command "
				     "that uses the gpushare client; job mode runs the command to completion");
	if (c->command_mode != GPUSHARE_CMD_REQUEST && c->command_mode != GPUSHARE_CMD_JOB)
		return gpushare_fail(GPUSHARE_E_INVAL, "unknown command mode %d (expected job or request)",
				     c->command_mode);
	for (size_t i = 0; i < c->n_strategies; i++) {
		if (!gpushare_strategy_runs_commands(c->strategies[i]))
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
	struct gpushare_child cmd;         /* the command (cmd.pid 0: none started) */
	bool cmd_cleaned;                  /* reaped, and its process group emptied */
	size_t stragglers;                 /* processes its jobs left behind, killed */
	uint64_t grace_ns;                 /* "stop" to SIGTERM */
	/* request mode */
	int sock;                          /* our end of the report socket, -1 closed */
	struct gpushare_proto proto;
	bool ready, go_sent, stop_sent, term_sent, kill_sent, fail_seen;
	char fail_text[GPUSHARE_PROTO_MAX_TEXT + 1];
	char proto_error[200];             /* a semantic error found by the relay */
	/* what it waits for: the socket, the command's end, SIGTERM's pipe,
	 * the tick that looks at the region, the deadlines after "stop" */
	struct gpushare_loop loop;
	int sock_id, tick_id;
	/* window and counts */
	struct gpushare_slot_window win;
	uint64_t errors;
	/* version 2: the request handed over and not yet done */
	bool in_hand;
	uint64_t hand_id, hand_sched, hand_t0;
	uint64_t next_id;                  /* closed loop: ids count from 0 */
	struct gpushare_ring *ring;        /* open loop: where arrivals come from */
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
	char msg[sizeof(r->slot->message)] = "";

	if (fmt) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
	}
	if (r->stragglers)
		fprintf(stderr, "gpushare: worker %d: the command left %zu process%s behind in its process group; "
			"they were killed\n", r->s->worker + 1, r->stragglers, r->stragglers == 1 ? "" : "es");
	gpushare_slot_finish(r->slot, state, GPUSHARE_E_WORKER, 0, msg);
	_exit(exit_code);
}

static void read_window(struct relay *r)
{
	gpushare_slot_window_read(&r->win, r->reg, r->slot);
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
		/* The fork server keeps the worker for the next run (bench_preload.c). */
		if (s->c->reuse_workers && s->preload_ctl >= 0)
			snprintf(own[k++], sizeof(own[0]), "GPUSHARE_PARK=1");
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

/* Start the command in a process group of its own; child_fd (>= 0) stays
 * open in it. Its standard input is /dev/null: N workers must not fight over
 * gpushare's terminal. */
static int start_cmd(struct relay *r, int child_fd, char *msg, size_t len)
{
	r->cmd_cleaned = false;
	if (r->s->preload_ctl >= 0 && child_fd >= 0)
		return gpushare_preload_fork(r->s->preload_ctl, r->envp, child_fd, &r->cmd, msg, len);
	gpushare_child_init(&r->cmd);
	r->cmd.path = r->s->path;
	r->cmd.argv = r->s->c->command;
	r->cmd.envp = r->envp;
	r->cmd.in = GPUSHARE_CHILD_DEVNULL;
	if (child_fd >= 0)
		r->cmd.keep_fds[r->cmd.n_keep_fds++] = child_fd;
	if (gpushare_child_start(&r->cmd) != GPUSHARE_OK) {
		snprintf(msg, len, "%s", gpushare_errdetail());
		return -1;
	}
	return 0;
}

/* Reap the command if it has exited, and whatever its process group left. */
static bool reap_cmd(struct relay *r)
{
	if (r->cmd.pid <= 0 || r->cmd_cleaned)
		return true;
	if (!gpushare_child_poll(&r->cmd))
		return false;
	gpushare_child_release(&r->cmd);
	r->stragglers += gpushare_child_reap_group(&r->cmd);
	r->cmd_cleaned = true;
	return true;
}

/* Wait up to ns for the command to exit. */
static bool wait_cmd(struct relay *r, uint64_t ns)
{
	gpushare_child_wait(&r->cmd, ns);
	return reap_cmd(r);
}

/* SIGTERM to its group, a second, SIGKILL: the command is gone (or stuck in
 * the kernel). */
static void stop_cmd(struct relay *r)
{
	if (reap_cmd(r))
		return;
	gpushare_child_stop(&r->cmd, TERM_WAIT_NS);
	reap_cmd(r);
}

/* ---- job mode ---- */

/* What a job-mode wait's check returns: wait on, or why it is over. */
enum { JOB_WAIT_ON, JOB_WAIT_DONE, JOB_WAIT_CUT };

struct job_wait {
	struct relay *r;
	int (*check)(struct relay *r);
	uint64_t tick_ns;
};

static int on_job_event(struct gpushare_loop *l, void *arg)
{
	struct job_wait *w = arg;

	(void)l;
	return w->check(w->r);
}

static int on_job_tick(struct gpushare_loop *l, void *arg)
{
	struct job_wait *w = arg;

	if (gpushare_loop_add_deadline(l, gpushare_now_ns() + w->tick_ns, on_job_tick, w) < 0)
		gpushare_sleep_ns(w->tick_ns);
	return w->check(w->r);
}

/* Wait until check() says it is over: it runs now, on SIGTERM's pipe, on
 * the command's end (its pidfd, while one runs), every tick_ns (the region
 * is shared memory: looked at) and at until (UINT64_MAX: none). */
static int job_wait(struct relay *r, int (*check)(struct relay *r), uint64_t tick_ns, uint64_t until)
{
	struct job_wait w = { r, check, tick_ns };
	int rc = check(r);

	if (rc)
		return rc;
	gpushare_loop_init(&r->loop);
	if ((term_pipe[0] >= 0 && gpushare_loop_add_fd(&r->loop, term_pipe[0], on_job_event, &w) < 0) ||
	    (r->cmd.pid > 0 && !r->cmd_cleaned && r->cmd.pidfd >= 0 &&
	     gpushare_loop_add_fd(&r->loop, r->cmd.pidfd, on_job_event, &w) < 0) ||
	    gpushare_loop_add_deadline(&r->loop, gpushare_now_ns() + tick_ns, on_job_tick, &w) < 0 ||
	    (until != UINT64_MAX && gpushare_loop_add_deadline(&r->loop, until, on_job_event, &w) < 0)) {
		/* Out of memory: looked at, not waited on. */
		while (!(rc = check(r)))
			gpushare_sleep_ns(tick_ns);
	} else {
		while ((rc = gpushare_loop_run(&r->loop)) <= 0)
			gpushare_sleep_ns(tick_ns);
	}
	gpushare_loop_release(&r->loop);
	return rc;
}

static int go_check(struct relay *r)
{
	uint32_t phase = phase_of(r);

	if (phase == GPUSHARE_PHASE_GO)
		return JOB_WAIT_DONE;
	if (phase == GPUSHARE_PHASE_STOP || got_term)
		finish(r, GPUSHARE_SLOT_DONE, 0, NULL);
	return JOB_WAIT_ON;
}

static int warm_check(struct relay *r)
{
	return gpushare_now_ns() >= r->win.t_warm || got_term || phase_of(r) == GPUSHARE_PHASE_STOP ? JOB_WAIT_DONE
												       : JOB_WAIT_ON;
}

/* The job ended, or the window closing or a stop cuts it short. */
static int job_check(struct relay *r)
{
	if (reap_cmd(r))
		return JOB_WAIT_DONE;
	if (got_term || phase_of(r) == GPUSHARE_PHASE_STOP || gpushare_now_ns() >= r->win.t_end)
		return JOB_WAIT_CUT;
	return JOB_WAIT_ON;
}

static _Noreturn void run_jobs(struct relay *r)
{
	char msg[256], how[96];
	uint64_t job;

	if (build_env(r, NULL) != 0)
		finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_INIT, "out of memory");
	set_state(r->slot, GPUSHARE_SLOT_READY);
	job_wait(r, go_check, POLL_MS * NS_PER_MS, UINT64_MAX);
	read_window(r);
	job_wait(r, warm_check, NS_PER_MS, r->win.t_warm);
	set_state(r->slot, GPUSHARE_SLOT_RUNNING);
	for (job = 0;; job++) {
		uint64_t t0 = gpushare_now_ns(), t1;
		bool cut = false;

		if (got_term || phase_of(r) == GPUSHARE_PHASE_STOP || gpushare_slot_window_full(&r->win) ||
		    t0 >= r->win.t_end)
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
		__atomic_store_n(&r->slot->pid, (int32_t)r->cmd.pid, __ATOMIC_RELAXED);
		/* Wait for the job; the window closing or a stop cuts it short. */
		if (job_wait(r, job_check, POLL_MS * NS_PER_MS, r->win.t_end) == JOB_WAIT_CUT) {
			cut = true;
			stop_cmd(r);
		}
		t1 = gpushare_now_ns();
		if (cut)
			break;
		if (!gpushare_child_ok(r->cmd.wstatus)) {
			gpushare_child_describe(r->cmd.wstatus, how, sizeof(how));
			finish(r, GPUSHARE_SLOT_FAILED, exit_for(r->cmd.wstatus, GPUSHARE_WORKER_EXIT_REQUEST),
			       "job %" PRIu64 " (pid %d) %s", job, (int)r->cmd.pid, how);
		}
		gpushare_slot_record(r->slot, &r->win, t0, t1);
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
	case GPUSHARE_MSG_HELLO:
		if (r->reg->load == GPUSHARE_LOAD_OPEN && m->a < 2)
			return relay_error(r, "it speaks protocol version 1, and --load open hands each request to the "
					   "worker, which needs version 2 (docs/protocol.md)");
		return 0;
	case GPUSHARE_MSG_DONE:
		if (!r->in_hand || m->a != r->hand_id)
			return relay_error(r, "'done %" PRIu64 "' for a request it does not have", m->a);
		r->in_hand = false;
		if (r->reg->load == GPUSHARE_LOAD_OPEN)
			gpushare_slot_record_open(r->slot, &r->win, r->hand_sched, r->hand_t0, now);
		else
			gpushare_slot_record(r->slot, &r->win, r->hand_t0, now);
		return 0;
	case GPUSHARE_MSG_READY:
		if (!r->ready) {
			r->ready = true;
			set_state(r->slot, GPUSHARE_SLOT_READY);
		}
		return 0;
	case GPUSHARE_MSG_ERROR:
		if (r->go_sent)
			store_u64(&r->slot->errors, ++r->errors);
		r->in_hand = false;            /* v2: the request in hand failed */
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
		return 0;
	}
	if (t1 > now + CLOCK_SLACK_NS)
		return relay_error(r, "a request ends %.3f s in the future: timestamps must be CLOCK_MONOTONIC nanoseconds",
				   (double)(t1 - now) / 1e9);
	if (r->go_sent)
		gpushare_slot_record(r->slot, &r->win, t0, t1);         /* before GO: warm-up, not counted */
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
			/* A command that closes its report channel before it is
			 * ready can never become ready: say so now, not at the
			 * start timeout; unless it exits at once, in which case
			 * how it exited is the better story. */
			if (!r->ready && !wait_cmd(r, EOF_EXIT_WAIT_NS)) {
				relay_error(r, "it closed its report channel (GPUSHARE_REPORT_FD) before it said ready");
				return false;
			}
			/* A line cut short matters while the command runs; once it
			 * has exited, how it exited is the better story. */
			return rc == GPUSHARE_OK || r->cmd.exited;
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
	       "protocol error from the command (pid %d): %s; it was stopped", (int)r->cmd.pid, why);
}

/* The command exited: drain what it wrote, then say how it went. */
static _Noreturn void request_end(struct relay *r)
{
	char how[96];

	if (!pump(r) && (r->proto_error[0] || r->proto.failed))
		protocol_failure(r);
	gpushare_child_describe(r->cmd.wstatus, how, sizeof(how));
	if (r->fail_seen)
		finish(r, GPUSHARE_SLOT_FAILED, exit_for(r->cmd.wstatus, GPUSHARE_WORKER_EXIT_REQUEST),
		       "the command (pid %d) failed: %s", (int)r->cmd.pid, r->fail_text);
	if (r->term_sent)
		finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_REQUEST,
		       "the command (pid %d) did not exit within %.1f s of 'stop'; it %s", (int)r->cmd.pid,
		       (double)r->grace_ns / 1e9, how);
	if (!gpushare_child_ok(r->cmd.wstatus))
		finish(r, GPUSHARE_SLOT_FAILED,
		       exit_for(r->cmd.wstatus, r->ready ? GPUSHARE_WORKER_EXIT_REQUEST : GPUSHARE_WORKER_EXIT_INIT),
		       "the command (pid %d) %s%s", (int)r->cmd.pid, how,
		       !r->ready ? " before it said ready" : r->stop_sent ? "" : " mid-run");
	if (!r->ready)
		finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_INIT,
		       "the command (pid %d) exited with status 0 before it said ready", (int)r->cmd.pid);
	if (!r->stop_sent)
		finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_REQUEST,
		       "the command (pid %d) exited with status 0 before the end of the run", (int)r->cmd.pid);
	finish(r, GPUSHARE_SLOT_DONE, 0, NULL);
}

/* After "stop": SIGTERM when the command has not exited by then, SIGKILL
 * TERM_WAIT_NS later. */
static int on_kill_deadline(struct gpushare_loop *l, void *arg)
{
	struct relay *r = arg;

	(void)l;
	gpushare_child_signal(&r->cmd, SIGKILL);
	r->kill_sent = true;
	return 0;
}

static int on_stop_deadline(struct gpushare_loop *l, void *arg)
{
	struct relay *r = arg;

	gpushare_child_signal(&r->cmd, SIGTERM);
	r->term_sent = true;
	if (gpushare_loop_add_deadline(l, gpushare_now_ns() + TERM_WAIT_NS, on_kill_deadline, r) < 0)
		return on_kill_deadline(l, r);
	return 0;
}

static void ask_stop(struct relay *r, uint64_t now, uint64_t wait_ns)
{
	if (r->stop_sent)
		return;
	send_line(r, "stop\n");
	r->stop_sent = true;
	if (gpushare_loop_add_deadline(&r->loop, now + wait_ns, on_stop_deadline, r) < 0)
		on_stop_deadline(&r->loop, r);
}

/* Version 2: hand the command its next request when it has none. Open
 * loop: the next arrival from the ring (none yet: try again soon); closed
 * loop: at once. Returns whether the command now has a request. */
static bool hand_over(struct relay *r)
{
	struct gpushare_ring_entry e;
	char line[48];

	if (r->in_hand || !r->go_sent || r->stop_sent || r->proto.version < 2)
		return r->in_hand;
	if (r->reg->load == GPUSHARE_LOAD_OPEN) {
		if (!r->ring || !gpushare_ring_claim(r->ring, r->reg->ring_entries, &e))
			return false;
		r->hand_id = e.seq;
		r->hand_sched = e.t_sched_ns;
	} else {
		if (gpushare_slot_window_full(&r->win))
			return false;
		r->hand_id = r->next_id++;
	}
	snprintf(line, sizeof(line), "req %" PRIu64 "\n", r->hand_id);
	r->hand_t0 = gpushare_now_ns();
	if (r->reg->load != GPUSHARE_LOAD_OPEN)
		r->hand_sched = r->hand_t0;
	r->in_hand = true;
	send_line(r, line);
	return true;
}

/* What the phase asks of the relay (the region is shared memory: looked
 * at on every turn and on a tick), then the tick again: every POLL_MS, or
 * every IDLE_POLL_NS while a version-2 command waits for an open-loop
 * arrival. */
static int on_tick(struct gpushare_loop *l, void *arg);

static void look(struct relay *r)
{
	uint64_t now = gpushare_now_ns();
	uint32_t phase = phase_of(r);
	char msg[64];
	bool waiting;

	if (got_term) {
		stop_cmd(r);
		if (phase == GPUSHARE_PHASE_STOP && r->go_sent)
			finish(r, GPUSHARE_SLOT_DONE, 0, NULL);
		finish(r, GPUSHARE_SLOT_FAILED, 128 + got_term, "interrupted");
	}
	if (r->ready && !r->go_sent && phase == GPUSHARE_PHASE_GO) {
		read_window(r);
		snprintf(msg, sizeof(msg), "go %" PRIu64 " %" PRIu64 "\n", r->win.t_start,
			 r->win.t_end == UINT64_MAX ? 0 : r->win.t_end);
		send_line(r, msg);
		r->go_sent = true;
		set_state(r->slot, GPUSHARE_SLOT_RUNNING);
		r->ring = gpushare_region_ring_of_slot(r->reg, r->s->slot);
	}
	/* Open loop: past the window the backlog is still served, until STOP. */
	if (phase == GPUSHARE_PHASE_STOP ||
	    (r->go_sent && now >= r->win.t_end && r->reg->load != GPUSHARE_LOAD_OPEN) ||
	    gpushare_slot_window_full(&r->win))
		/* Before "go" a client is not listening yet (it reads
		 * only in ready()): SIGTERM at once then. */
		ask_stop(r, now, r->go_sent ? r->grace_ns : 0);
	if (r->fail_seen)
		ask_stop(r, now, FAIL_WAIT_NS);
	waiting = r->proto.version >= 2 && r->go_sent && !r->stop_sent && !hand_over(r) &&
		  r->reg->load == GPUSHARE_LOAD_OPEN;
	gpushare_loop_remove(&r->loop, r->tick_id);
	r->tick_id = gpushare_loop_add_deadline(&r->loop, now + (waiting ? IDLE_POLL_NS : POLL_MS * NS_PER_MS),
						on_tick, r);
}

/* One turn: what the command said, its end, then what the phase asks. */
static int turn(struct gpushare_loop *l, void *arg)
{
	struct relay *r = arg;

	(void)l;
	if (!pump(r))
		protocol_failure(r);
	if (r->sock < 0) {
		gpushare_loop_remove(&r->loop, r->sock_id);
		r->sock_id = -1;
	}
	hand_over(r);
	if (reap_cmd(r))
		request_end(r);
	look(r);
	return 0;
}

static int on_tick(struct gpushare_loop *l, void *arg)
{
	struct relay *r = arg;

	r->tick_id = -1;
	return turn(l, arg);
}

static int on_got_term(struct gpushare_loop *l, void *arg)
{
	char buf[16];

	while (read(term_pipe[0], buf, sizeof(buf)) > 0)
		;
	return turn(l, arg);
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
	__atomic_store_n(&r->slot->pid, (int32_t)r->cmd.pid, __ATOMIC_RELAXED);
	gpushare_proto_init(&r->proto);
	r->win.t_end = UINT64_MAX;
	/* Without a pidfd (a kernel before 5.3) the tick looks for its end. */
	if ((r->sock_id = gpushare_loop_add_fd(&r->loop, r->sock, turn, r)) < 0 ||
	    (r->cmd.pidfd >= 0 && gpushare_loop_add_fd(&r->loop, r->cmd.pidfd, turn, r) < 0) ||
	    (term_pipe[0] >= 0 && gpushare_loop_add_fd(&r->loop, term_pipe[0], on_got_term, r) < 0)) {
		stop_cmd(r);
		finish(r, GPUSHARE_SLOT_FAILED, GPUSHARE_WORKER_EXIT_INIT, "out of memory");
	}
	look(r);
	/* The callbacks end the relay (finish()); poll(2) failing is waited out. */
	for (;;) {
		if (gpushare_loop_run(&r->loop) < 0)
			gpushare_sleep_ns(POLL_MS * NS_PER_MS);
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
	gpushare_child_init(&r.cmd);
	r.sock = -1;
	r.job_env = -1;
	gpushare_loop_init(&r.loop);
	r.sock_id = r.tick_id = -1;
	if (pipe2(term_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
		term_pipe[0] = term_pipe[1] = -1;
	/* Naps of 20 us between looks at the ring, not 70. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
	r.win.t_end = UINT64_MAX;
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
