/*
 * The workers of one bench session (a strategy's run, or one worker's turn
 * under sequential): the parent side of the region protocol
 * (include/gpushare/region.h). It starts the workers (gpushare-worker
 * processes, or relays of a command, bench_cmd.c) through lib/sys/child.c,
 * holds them at the start barrier, opens the measurement window, samples
 * the GPU while they run, stops them (STOP, then SIGTERM, then SIGKILL, to
 * each worker's whole process group) and turns their slots into the
 * result's workers.
 *
 * No worker outlives the session: every child is tracked and reaped, dies
 * with gpushare (PR_SET_PDEATHSIG), and whatever it left in its process
 * group is killed and counted (result->stragglers). Workers ignore SIGINT
 * and run in their own process groups, so that a Ctrl-C reaches only
 * gpushare, which then stops them in order and keeps what they measured.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "loop.h"
#include "sys.h"
#include "bench_cmd.h"
#include "bench_preload.h"
#include "gpushare/buf.h"
#include "gpushare/child.h"
#include "gpushare/bench.h"
#include "gpushare/gpu.h"
#include "gpushare/format.h"
#include "gpushare/gpushare.h"
#include "gpushare/region.h"
#include "gpu_select.h"
#include "openloop.h"
#include "bench_run.h"
#include "strategy.h"
#include "run_ctx.h"

#define POLL_NS (10 * NS_PER_MS)
#define SAMPLE_NS (100 * NS_PER_MS)
#define TERM_WAIT_NS (2 * NS_PER_S)
#define CUDA_ERROR_MPS_MAX_CLIENTS 808

struct worker_proc {
	struct gpushare_child ch;
	int first_slot, n_slots;
	int loop_id;                         /* its pidfd on the session's loop, -1 none */
};

/* What the session waits for (run_stage()). */
enum stage { STAGE_START, STAGE_RUN, STAGE_STOP };
/* What a stage's turn returns: go on waiting, or the stage is over. */
enum { TURN_ON, TURN_END, TURN_TIMEOUT };

/* One start-barrier-window-stop cycle over a region. */
struct session {
	struct bench_ctx *x;
	int strategy;
	int run, n_runs;                     /* sequential: which worker runs */
	struct gpushare_region_header *reg;
	int fd;
	uint32_t n_slots;
	struct worker_proc *procs;
	size_t n_procs;
	struct gpushare_bench_result *res;
	size_t offset;                       /* first result worker of slot 0 */
	uint64_t t_go, t_measure_start, t_measure_end, t_stopped;
	int last_util;
	struct gpushare_dispatcher disp;     /* open loop: hands out the arrivals */
	/* The waiting: each running worker's pidfd, and the deadlines of the
	 * stage that waits (run_stage()). */
	struct gpushare_loop loop;
	enum stage stage;
	int (*turn)(struct session *s);      /* the stage's look at the workers */
	uint64_t tick_ns;                    /* how often it looks (0: when a worker ends only) */
	uint64_t stage_start, until;         /* the stage's start and bound */
	uint64_t next_sample;                /* the next sampling tick */
	uint64_t warm_next;                  /* adaptive warm-up: the next slice's end */
	uint64_t warm_prev_total, warm_prev_count;
	bool warm_have_prev;
	int tick_id, until_id, sample_id, warm_slice_id;
	unsigned ready;                      /* STAGE_START: workers ready */
	int rc;                              /* STAGE_START: its result */
};

/* ---- starting and stopping workers ---- */

static void relay_main(void *arg)
{
	gpushare_cmd_relay(arg);
}

/* Append "NAME" and a formatted value to argv. */
static int add_option(struct gpushare_strv *argv, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int add_option(struct gpushare_strv *argv, const char *name, const char *fmt, ...)
{
	va_list ap;
	int rc = gpushare_strv_addf(argv, "%s", name);

	va_start(ap, fmt);
	if (!rc)
		rc = gpushare_strv_vaddf(argv, fmt, ap);
	va_end(ap);
	return rc;
}

static int spawn(struct session *s, const struct proc_spec *p, struct worker_proc *wp)
{
	const struct gpushare_bench_config *c = s->x->c;
	int member = gpushare_bench_mix_member_of(c->n_mix, c->workers, (int)s->offset + p->first_slot);
	const struct gpushare_wl_params *wl = c->n_mix >= 2 ? &c->mix[member].wl : &c->wl;
	const struct gpushare_wl_desc *d = wl->desc;
	struct gpushare_strv argv = { 0 };
	struct gpushare_cmd_spec cs;
	int rc;

	gpushare_child_init(&wp->ch);
	wp->loop_id = -1;
	wp->first_slot = p->first_slot;
	wp->n_slots = p->threads > 0 ? p->threads : 1;
	wp->ch.in = GPUSHARE_CHILD_DEVNULL;
	wp->ch.flags = GPUSHARE_CHILD_IGNORE_SIGINT | GPUSHARE_CHILD_STDOUT_TO_STDERR;
	if (c->command) {
		/* Command mode: the child becomes the worker's relay
		 * (lib/bench/bench_cmd.c) and never execs gpushare-worker. */
		cs = (struct gpushare_cmd_spec){
			.c = c, .path = s->x->command, .reg = s->reg, .slot = (uint32_t)p->first_slot,
			.worker = (int)s->offset + p->first_slot, .workers = (int)s->res->n_workers,
			.batch = p->batch, .env = gpushare_strv_list(&p->env), .preload_ctl = s->x->preload_ctl,
		};
		wp->ch.fn = relay_main;
		wp->ch.arg = &cs;
		return gpushare_child_start(&wp->ch);
	}
	rc = gpushare_strv_addf(&argv, "%s", s->x->worker);
	if (!rc)
		rc = add_option(&argv, "--region-fd", "%d", s->fd);
	if (!rc)
		rc = add_option(&argv, "--slot", "%d", p->first_slot);
	if (!rc && p->threads > 0)
		rc = add_option(&argv, "--threads", "%d", p->threads);
	if (!rc)
		rc = add_option(&argv, "--workload", "%s", d->name);
	if (!rc)
		rc = add_option(&argv, "--batch", "%ld", p->batch);
	if (!rc)
		rc = add_option(&argv, "--warmup-requests", "%" PRIu64, c->warmup_requests);
	for (size_t i = 0; !rc && i < d->n_opts && i < GPUSHARE_WL_MAX_OPTS; i++) {
		if (wl->given[i])
			rc = add_option(&argv, "--opt", "%s=%s", d->opts[i].name, wl->values[i]);
	}
	if (!rc) {
		wp->ch.path = s->x->worker;
		wp->ch.argv = gpushare_strv_list(&argv);
		wp->ch.env_set = gpushare_strv_list(&p->env);
		wp->ch.keep_fds[wp->ch.n_keep_fds++] = s->fd;
		rc = gpushare_child_start(&wp->ch);
		if (rc == GPUSHARE_E_NOT_FOUND) {
			struct gpushare_errsave e;

			gpushare_error_save(&e);
			rc = gpushare_fail(GPUSHARE_E_WORKER, "%s", e.detail);
		}
	}
	gpushare_strv_release(&argv);
	return rc;
}

/* After a worker process has been reaped: kill what is left of its process
 * group and, in command mode, of its command's group (a relay killed before
 * it could clean up after its command). Counted in the result. */
static void reap_leftovers(struct session *s, struct worker_proc *wp)
{
	/* Off the loop before its pidfd is closed. */
	gpushare_loop_remove(&s->loop, wp->loop_id);
	wp->loop_id = -1;
	wp->ch.stragglers = 0;
	s->res->stragglers += gpushare_child_reap_group(&wp->ch);
	if (s->x->c->command) {
		const struct gpushare_slot *sl = gpushare_region_slot(s->reg, (uint32_t)wp->first_slot);
		pid_t cmd = __atomic_load_n(&sl->pid, __ATOMIC_RELAXED);

		/* The relay starts its command as a group leader. */
		if (cmd > 0 && cmd != wp->ch.pid)
			s->res->stragglers += gpushare_pgroup_kill(cmd);
	}
	gpushare_child_release(&wp->ch);
}

/* Reap whatever exited; returns how many workers are still running. */
static size_t reap(struct session *s)
{
	size_t running = 0;

	for (size_t i = 0; i < s->n_procs; i++) {
		struct worker_proc *wp = &s->procs[i];

		if (wp->ch.exited)
			continue;
		if (gpushare_child_poll(&wp->ch))
			reap_leftovers(s, wp);
		else
			running++;
	}
	return running;
}

/* ---- waiting ----
 *
 * Each stage of a session (the start barrier, the warm-up and the window,
 * the stop) waits on the session's loop: every running worker's pidfd, a
 * tick every POLL_NS that looks at the slots (shared memory: looked at, not
 * waited on) and the interrupt flag, the sampling tick every SAMPLE_NS, and
 * the stage's bound. The stage's turn runs on each of them but the sampling
 * tick, and says when the stage is over. */

static void sample(struct session *s);
static void stage_progress(struct session *s);

static int on_worker(struct gpushare_loop *l, void *arg)
{
	struct session *s = arg;

	(void)l;
	return s->turn(s);
}

static int on_tick(struct gpushare_loop *l, void *arg)
{
	struct session *s = arg;

	s->tick_id = gpushare_loop_add_deadline(l, gpushare_now_ns() + s->tick_ns, on_tick, s);
	return s->turn(s);
}

static int on_until(struct gpushare_loop *l, void *arg)
{
	struct session *s = arg;
	int rc;

	(void)l;
	s->until_id = -1;
	rc = s->turn(s);
	return rc ? rc : TURN_TIMEOUT;
}

static int on_sample(struct gpushare_loop *l, void *arg)
{
	struct session *s = arg;

	s->next_sample = gpushare_now_ns() + SAMPLE_NS;
	s->sample_id = gpushare_loop_add_deadline(l, s->next_sample, on_sample, s);
	if (s->stage == STAGE_RUN)
		sample(s);
	stage_progress(s);
	return TURN_ON;
}

/* Run turn now and then on each worker's end, every tick_ns (0: none) and
 * at until (UINT64_MAX: none; turn not over then: TURN_TIMEOUT), until it
 * says the stage is over. */
static int run_stage(struct session *s, enum stage stage, int (*turn)(struct session *s), uint64_t tick_ns,
		     uint64_t until)
{
	const struct gpushare_bench_config *c = s->x->c;
	uint64_t now = gpushare_now_ns();
	int rc;

	s->stage = stage;
	s->turn = turn;
	s->tick_ns = tick_ns;
	s->stage_start = now;
	s->until = until;
	s->tick_id = s->until_id = s->sample_id = -1;
	rc = turn(s);
	if (rc)
		return rc;
	if (tick_ns)
		s->tick_id = gpushare_loop_add_deadline(&s->loop, now + tick_ns, on_tick, s);
	if (until != UINT64_MAX)
		s->until_id = gpushare_loop_add_deadline(&s->loop, until, on_until, s);
	if (stage != STAGE_STOP && (c->progress || (stage == STAGE_RUN && s->x->nvml)))
		s->sample_id = gpushare_loop_add_deadline(&s->loop, s->next_sample, on_sample, s);
	rc = gpushare_loop_run(&s->loop);
	gpushare_loop_remove(&s->loop, s->tick_id);
	gpushare_loop_remove(&s->loop, s->until_id);
	gpushare_loop_remove(&s->loop, s->sample_id);
	s->tick_id = s->until_id = s->sample_id = -1;
	return rc ? rc : TURN_END;
}

static int all_turn(struct session *s)
{
	return reap(s) == 0 ? TURN_END : TURN_ON;
}

static bool wait_all(struct session *s, uint64_t ns)
{
	bool watched = true;

	/* A worker without a pidfd (a kernel before 5.3) is looked at. */
	for (size_t i = 0; i < s->n_procs; i++)
		watched &= s->procs[i].ch.exited || s->procs[i].loop_id >= 0;
	return run_stage(s, STAGE_STOP, all_turn, watched ? 0 : POLL_NS / 2, gpushare_now_ns() + ns) == TURN_END;
}

static void signal_running(struct session *s, int sig)
{
	for (size_t i = 0; i < s->n_procs; i++) {
		if (!s->procs[i].ch.exited)
			gpushare_child_signal(&s->procs[i].ch, sig);
	}
}

/* STOP, a grace period, SIGTERM, SIGKILL, each to the whole process group:
 * every child is reaped. */
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
	if (wait_all(s, 5 * NS_PER_S))
		return;
	/* Still there after SIGKILL: stuck in the kernel (a hung driver
	 * call). The kill is pending; it stays tracked and unreaped rather
	 * than blocking without bound, and the caller sees it as not ended. */
}

static struct worker_proc *proc_of_slot(struct session *s, uint32_t slot)
{
	for (size_t i = 0; i < s->n_procs; i++) {
		struct worker_proc *wp = &s->procs[i];

		if ((int)slot >= wp->first_slot && (int)slot < wp->first_slot + wp->n_slots)
			return wp;
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
	struct worker_proc *wp = proc_of_slot(s, i);
	int idx = (int)(s->offset + i);
	int cuda = __atomic_load_n(&sl->cuda_error, __ATOMIC_RELAXED);
	int code = __atomic_load_n(&sl->error_code, __ATOMIC_RELAXED);
	char msg[256], how[96] = "", cudabuf[48] = "";
	bool failed = slot_state(s, i) == GPUSHARE_SLOT_FAILED;

	slot_message(s, i, msg, sizeof(msg));
	if (wp && wp->ch.exited)
		gpushare_child_describe(wp->ch.wstatus, how, sizeof(how));
	if (cuda)
		snprintf(cudabuf, sizeof(cudabuf), " (CUDA error %d)", cuda);
	res->failed_worker = idx;
	/* Messages number workers from 1, as the farm numbers its jobs. */
	if (cuda == CUDA_ERROR_MPS_MAX_CLIENTS || code == GPUSHARE_E_MPS_MAX_CLIENTS) {
		snprintf(res->failure, sizeof(res->failure), "worker %d: too many MPS clients (CUDA error 808)", idx + 1);
		return gpushare_fail(GPUSHARE_E_MPS_MAX_CLIENTS, "%s", res->failure);
	}
	if (how[0] && strstr(msg, how))
		how[0] = '\0';      /* the message says how it ended already: once */
	if (failed && msg[0])
		snprintf(res->failure, sizeof(res->failure), "worker %d (pid %d) %s: %s%s%s%s", idx + 1,
			 wp ? (int)wp->ch.pid : -1, before_ready ? "failed to start" : "failed", msg, cudabuf,
			 how[0] ? "; it " : "", how);
	else
		snprintf(res->failure, sizeof(res->failure), "worker %d (pid %d) %s%s%s%s%s", idx + 1,
			 wp ? (int)wp->ch.pid : -1, how[0] ? how : "failed", before_ready ? " before it was ready" : " mid-run",
			 msg[0] ? ": " : "", msg, cudabuf);
	return gpushare_fail(GPUSHARE_E_WORKER, "%s", res->failure);
}

/* Lowest slot that failed: FAILED, or its process ended badly (or, before
 * the barrier, ended at all). -1 when none. */
static int failed_slot(struct session *s, bool before_ready)
{
	for (uint32_t i = 0; i < s->n_slots; i++) {
		struct worker_proc *wp;
		uint32_t st = slot_state(s, i);

		if (st == GPUSHARE_SLOT_FAILED)
			return (int)i;
		wp = proc_of_slot(s, i);
		if (wp && wp->ch.exited && (before_ready ? st < GPUSHARE_SLOT_READY || !gpushare_child_ok(wp->ch.wstatus)
							  : !gpushare_child_ok(wp->ch.wstatus)))
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

	if (!c->progress)
		return;
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
	p.rate = c->load == GPUSHARE_LOAD_OPEN ? c->rate : 0;
	p.peak_step = s->x->peak_step;
	c->progress(c->progress_arg, &p);
}

static void sample(struct session *s)
{
	struct gpushare_gpu_sample g;
	uint64_t now = gpushare_now_ns();

	if (!s->x->nvml)
		return;
	if (gpushare_gpu_sample(s->x->gpu_index, &g) != GPUSHARE_OK)
		return;
	s->last_util = g.util_gpu_pct;
	if (now >= s->t_measure_start && now <= s->t_measure_end)
		gpushare_bench_telemetry_add(&s->res->telemetry, &g);
}

/* The progress of the stage that waits (on the sampling tick). */
static void stage_progress(struct session *s)
{
	const struct gpushare_bench_config *c = s->x->c;

	if (s->stage == STAGE_START)
		progress(s, GPUSHARE_BENCH_STARTING, s->stage_start, 0, s->ready);
	else if (gpushare_now_ns() < s->t_measure_start)
		progress(s, GPUSHARE_BENCH_WARMUP, s->t_go, s->t_measure_start - s->t_go, s->n_slots);
	else
		progress(s, GPUSHARE_BENCH_MEASURING, s->t_measure_start,
			 c->requests ? 0 : s->t_measure_end - s->t_measure_start, s->n_slots);
}

/* ---- the start barrier and the run ---- */

static int ready_turn(struct session *s)
{
	const struct gpushare_bench_config *c = s->x->c;
	unsigned ready = 0;
	int bad;

	if (gpushare_bench_interrupted()) {
		s->res->interrupted = true;
		s->rc = gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted while the workers started");
		return TURN_END;
	}
	reap(s);
	bad = failed_slot(s, true);
	if (bad >= 0) {
		s->rc = note_failure(s, (uint32_t)bad, true);
		return TURN_END;
	}
	for (uint32_t i = 0; i < s->n_slots; i++)
		ready += slot_state(s, i) >= GPUSHARE_SLOT_READY;
	s->ready = ready;
	if (ready == s->n_slots) {
		s->rc = GPUSHARE_OK;
		return TURN_END;
	}
	if (gpushare_now_ns() >= s->until) {
		for (uint32_t i = 0; i < s->n_slots; i++) {
			if (slot_state(s, i) < GPUSHARE_SLOT_READY) {
				s->res->failed_worker = (int)(s->offset + i);
				snprintf(s->res->failure, sizeof(s->res->failure),
					 "worker %d was not ready after %.0f s (--start-timeout)",
					 (int)(s->offset + i) + 1, (double)c->start_timeout_ns / 1e9);
				break;
			}
		}
		s->rc = gpushare_fail(GPUSHARE_E_TIMEOUT, "%s", s->res->failure);
		return TURN_END;
	}
	return TURN_ON;
}

static int wait_ready(struct session *s)
{
	int rc;

	s->rc = GPUSHARE_OK;
	rc = run_stage(s, STAGE_START, ready_turn, POLL_NS, gpushare_now_ns() + s->x->c->start_timeout_ns);
	return rc < 0 ? rc : s->rc;
}

/* Adaptive warm-up (c->warmup_adaptive): from 200 ms on, end it once the
 * requests finished by all workers in two 100 ms slices in a row are each at
 * least 20 and within 10% of each other, and every worker has finished one;
 * at the latest at c->warmup_ns. The window then starts 10 ms later (workers
 * re-read it before each request) and lasts c->duration_ns. */
#define WARM_SLICE_NS (100 * NS_PER_MS)
#define WARM_MIN_NS (200 * NS_PER_MS)
#define WARM_MARGIN_NS (10 * NS_PER_MS)

static int warm_turn(struct session *s)
{
	if (gpushare_now_ns() + WARM_MARGIN_NS >= s->t_measure_start)
		return TURN_END;
	if (gpushare_bench_interrupted() || failed_slot(s, false) >= 0 || reap(s) == 0)
		return TURN_END;
	return TURN_ON;
}

/* The end of a slice: is the rate steady? */
static int on_warm_slice(struct gpushare_loop *l, void *arg)
{
	struct session *s = arg;
	const struct gpushare_bench_config *c = s->x->c;
	uint64_t now = gpushare_now_ns(), total = 0;
	bool all_started = true;

	s->warm_slice_id = -1;
	/* As on a tick first: the warm-up may be over already. */
	if (warm_turn(s))
		return TURN_END;
	s->warm_next += WARM_SLICE_NS;
	for (uint32_t i = 0; i < s->n_slots; i++) {
		uint64_t n = __atomic_load_n(&gpushare_region_slot(s->reg, i)->total_requests, __ATOMIC_RELAXED);

		total += n;
		all_started &= n > 0;
	}
	if (s->warm_have_prev && now - s->t_go >= WARM_MIN_NS && all_started && s->warm_prev_count >= 20 &&
	    total - s->warm_prev_total >= 20) {
		uint64_t a = s->warm_prev_count, b = total - s->warm_prev_total, hi = a > b ? a : b, lo = a > b ? b : a;

		if ((double)(hi - lo) <= 0.1 * (double)hi) {
			s->t_measure_start = now + WARM_MARGIN_NS;
			s->t_measure_end = s->t_measure_start + c->duration_ns;
			/* End first: a worker that sees the new start sees an end after it. */
			__atomic_store_n(&s->reg->t_measure_end_ns, s->t_measure_end, __ATOMIC_RELEASE);
			__atomic_store_n(&s->reg->t_measure_start_ns, s->t_measure_start, __ATOMIC_RELEASE);
			return TURN_END;
		}
	}
	s->warm_prev_count = total - s->warm_prev_total;
	s->warm_prev_total = total;
	s->warm_have_prev = true;
	s->warm_slice_id = gpushare_loop_add_deadline(l, s->warm_next, on_warm_slice, s);
	return TURN_ON;
}

static void adaptive_warmup(struct session *s)
{
	s->warm_next = s->t_go + WARM_SLICE_NS;
	s->warm_prev_total = s->warm_prev_count = 0;
	s->warm_have_prev = false;
	s->warm_slice_id = gpushare_loop_add_deadline(&s->loop, s->warm_next, on_warm_slice, s);
	run_stage(s, STAGE_RUN, warm_turn, POLL_NS, s->t_measure_start - WARM_MARGIN_NS);
	gpushare_loop_remove(&s->loop, s->warm_slice_id);
	s->warm_slice_id = -1;
}

/* From GO until the window closed, every worker is done, or one failed. */
static int run_turn(struct session *s)
{
	const struct gpushare_bench_config *c = s->x->c;
	uint64_t now = gpushare_now_ns();
	size_t running;
	int bad;

	if (gpushare_bench_interrupted()) {
		s->res->interrupted = true;
		return TURN_END;
	}
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
		return TURN_END;
	}
	if (running == 0)
		return TURN_END;
	if (c->load == GPUSHARE_LOAD_OPEN && now >= s->t_measure_end && gpushare_openloop_drained(&s->disp, s->reg)) {
		s->t_stopped = gpushare_now_ns();
		return TURN_END;
	}
	if (now >= s->until) {
		if (c->requests) {
			s->t_stopped = now;
			s->res->partial = true;
			snprintf(s->res->failure, sizeof(s->res->failure),
				 "the workers did not finish %" PRIu64 " requests within %.0f s", c->requests,
				 (double)c->run_timeout_ns / 1e9);
		}
		return TURN_END;
	}
	return TURN_ON;
}

static void wait_run(struct session *s)
{
	const struct gpushare_bench_config *c = s->x->c;
	uint64_t deadline = c->requests ? s->t_measure_start + c->run_timeout_ns : s->t_measure_end;

	/* Open loop: the workers serve what is still queued after the window,
	 * so every arrival of the window is counted, served or not. */
	if (c->load == GPUSHARE_LOAD_OPEN)
		deadline += gpushare_openloop_drain_ns(c);
	run_stage(s, STAGE_RUN, run_turn, POLL_NS, deadline);
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
		struct worker_proc *wp = proc_of_slot(s, i);

		w->index = (int)(s->offset + i);
		w->process = wp ? (int)(wp - s->procs) : -1;
		w->pid = wp ? wp->ch.pid : 0;
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
		w->completed_in_window = __atomic_load_n(&sl->completed_in_window, __ATOMIC_RELAXED);
		gpushare_hist_snapshot(&sl->queue_hist, &w->queue_hist);
		gpushare_hist_snapshot(&sl->service_hist, &w->service_hist);
		if (wp && wp->ch.exited) {
			w->exit_code = WIFEXITED(wp->ch.wstatus) ? WEXITSTATUS(wp->ch.wstatus) : -1;
			w->signal = WIFSIGNALED(wp->ch.wstatus) ? WTERMSIG(wp->ch.wstatus) : 0;
		}
		w->failed = w->state == GPUSHARE_SLOT_FAILED || (wp && wp->ch.exited && !gpushare_child_ok(wp->ch.wstatus));
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

int bench_session_run(struct bench_ctx *x, int strategy, int run, int n_runs, const struct proc_spec *procs,
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
	s.warm_slice_id = -1;
	gpushare_loop_init(&s.loop);
	s.procs = calloc(n_procs, sizeof(*s.procs));
	if (!s.procs)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate %zu worker processes", n_procs);
	rc = gpushare_openloop_region(c, n_slots, &s.reg, &s.fd);
	if (rc) {
		free(s.procs);
		return rc;
	}
	s.reg->requests_per_worker = c->requests;
	s.reg->warmup_requests = c->warmup_requests;
	gpushare_metrics_bench_attach(x->metrics, strategy, s.reg, n_slots, offset, res->mps_pipe_dir);
	for (size_t i = 0; i < n_procs && rc == GPUSHARE_OK; i++) {
		struct worker_proc *wp = &s.procs[s.n_procs];

		rc = spawn(&s, &procs[i], wp);
		if (wp->ch.pid > 0 && !wp->ch.exited) {
			/* No pidfd (or no room for it): the stages' ticks look. */
			if (wp->ch.pidfd >= 0)
				wp->loop_id = gpushare_loop_add_fd(&s.loop, wp->ch.pidfd, on_worker, &s);
			s.n_procs++;
		}
		if (rc) {
			res->failed_worker = (int)(offset + (size_t)procs[i].first_slot);
			snprintf(res->failure, sizeof(res->failure), "worker %d: %s", res->failed_worker + 1,
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
		rc = gpushare_openloop_go(&s.disp, c, s.reg, s.t_go, s.t_measure_start, s.t_measure_end);
		if (rc == GPUSHARE_OK && c->warmup_adaptive && c->load != GPUSHARE_LOAD_OPEN && !c->requests &&
		    !c->command)
			adaptive_warmup(&s);
		res->warmup_seconds = (double)(s.t_measure_start - s.t_go) / 1e9;
		if (rc == GPUSHARE_OK)
			wait_run(&s);
		gpushare_dispatcher_stop(&s.disp);
		progress(&s, GPUSHARE_BENCH_STOPPING, gpushare_now_ns(), 0, s.n_slots);
	}
	{
		/* Keep the failure's detail: stopping must not overwrite it. */
		struct gpushare_errsave e;

		gpushare_error_save(&e);
		stop_all(&s);
		/* A worker that had to be killed (it hung past STOP) failed too. */
		if (rc == GPUSHARE_OK && !res->partial && !res->interrupted) {
			int bad = failed_slot(&s, false);

			if (bad >= 0) {
				res->partial = true;
				note_failure(&s, (uint32_t)bad, false);
				snprintf(e.detail, sizeof(e.detail), "%s", res->failure);
			}
			for (size_t i = 0; !res->partial && i < s.n_procs; i++) {
				const struct gpushare_child *ch = &s.procs[i].ch;

				if (!ch->signalled)
					continue;
				res->partial = true;
				res->failed_worker = (int)(offset + (size_t)s.procs[i].first_slot);
				snprintf(res->failure, sizeof(res->failure),
					 "worker %d (pid %d) did not stop within %.0f s after the window closed; sent SIG%s",
					 res->failed_worker + 1, (int)ch->pid, (double)c->grace_ns / 1e9,
					 sigabbrev_np(ch->signalled) ? sigabbrev_np(ch->signalled) : "?");
			}
		}
		collect(&s);
		gpushare_openloop_collect(&s.disp, c, res, s.t_measure_end, s.t_stopped);
		gpushare_error_restore(&e, rc);
	}
	if (rc == GPUSHARE_OK && res->interrupted)
		rc = gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted");
	gpushare_metrics_bench_detach(x->metrics);  /* keeps the final values; before the unmap */
	gpushare_region_unmap(s.reg);
	close(s.fd);
	gpushare_loop_release(&s.loop);
	free(s.procs);
	return rc;
}
