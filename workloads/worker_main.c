/*
 * gpushare-worker: runs one workload for `gpushare bench` and reports through
 * the shared region (protocol in gpushare/region.h and docs/region.md).
 *
 *   gpushare-worker --region-fd FD --slot I [--threads T] --workload NAME
 *                   [--batch B] [--warmup-requests W] [--opt name=value]...
 *   gpushare-worker --list      (workloads built into this binary)
 *
 * Slots I..I+T-1 are measured by T host threads, each with its own workload
 * instance. The main thread only supervises: it waits for the threads and
 * handles SIGTERM/SIGINT, so a request that never returns cannot keep the
 * process alive after it was told to stop. Silent on success; a failure is
 * written to the slot and as one line to standard error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/gpushare.h"
#include "gpushare/region.h"
#include "gpushare/util.h"
#include "gpushare/workload.h"
#include "worker.h"

#define PROG "gpushare-worker"
#define MAX_THREADS 1024
#define MAX_OPTS 64
#define POLL_NS (75 * 1000)                          /* idle wait for GO */
#define GO_TIMEOUT_NS (600ULL * 1000000000ULL)       /* give up waiting for GO */
#define PARENT_CHECK_NS (100ULL * 1000000ULL)        /* how often to look for the parent */
#define SIGNAL_GRACE_NS (500ULL * 1000000ULL)        /* let a request finish after SIGTERM */
#define IDLE_SPINS 4000                              /* open loop: busy polls before sleeping */
#define IDLE_WAIT_NS (10ULL * 1000000ULL)            /* open loop: longest sleep on the ring */

struct worker {
	struct gpushare_region_header *region;
	struct gpushare_wl_params params;
	const struct wl_ops *ops;
	uint64_t warmup_requests;
	pid_t ppid;
};

struct stream {
	struct worker *w;
	int index;                 /* stream index passed to init(): its slot number */
	uint32_t slot_no;
	struct gpushare_slot *slot;
	pthread_t tid;
	int exit_code;             /* valid once `finished` */
	int finished;              /* atomic */
	int claimed;               /* atomic: the final state has been written */
	int measuring;             /* atomic: the slot is RUNNING */
};

/* Set by the signal handler; read by every thread. */
static int got_signal;
/* Self-pipe: threads write 'd' when they finish, the handler 's'. */
static int wake_fd[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;
	ssize_t n;

	__atomic_store_n(&got_signal, sig, __ATOMIC_RELAXED);
	n = write(wake_fd[1], "s", 1);
	(void)n;
	errno = saved;
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return GPUSHARE_WORKER_EXIT_USAGE;
}

static void usage(void)
{
	fputs("usage: " PROG " --region-fd FD --slot I [--threads T] --workload NAME\n"
	      "       [--batch B] [--warmup-requests W] [--opt name=value]...\n"
	      "       " PROG " --list    (the workloads built in, one a line)\n"
	      "Runs a gpushare workload for `gpushare bench`; not meant to be run by hand.\n", stdout);
}

static void copy_str(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

static void store_u64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static uint32_t phase_of(const struct gpushare_region_header *r)
{
	return __atomic_load_n(&r->phase, __ATOMIC_ACQUIRE);
}

static void set_state(struct gpushare_slot *s, enum gpushare_slot_state st)
{
	__atomic_store_n(&s->state, (uint32_t)st, __ATOMIC_RELEASE);
}

/* Write the final state of a stream's slot, once: the thread and, for a
 * thread stuck in a request, the main thread may both try. */
static bool slot_finish(struct stream *st, enum gpushare_slot_state state, int code, int cuda_error, const char *msg)
{
	int expected = 0;

	if (!__atomic_compare_exchange_n(&st->claimed, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return false;
	gpushare_slot_finish(st->slot, (uint32_t)state, code, cuda_error, msg);
	return true;
}

static void report(const struct stream *st, const char *msg)
{
	fprintf(stderr, PROG ": slot %" PRIu32 ": %s\n", st->slot_no, msg);
}

static int fail_stream(struct stream *st, int exit_code, int code, int cuda_error, const char *msg)
{
	if (slot_finish(st, GPUSHARE_SLOT_FAILED, code, cuda_error, msg))
		report(st, msg);
	return exit_code;
}

static int fail_wl(struct stream *st, int exit_code, int rc, const struct wl_error *err, const char *what)
{
	char msg[sizeof(err->message)];

	if (err->message[0])
		copy_str(msg, sizeof(msg), err->message);
	else
		snprintf(msg, sizeof(msg), "%s: %s failed: %s", st->w->ops->name, what, gpushare_strerror(err->code ? err->code : rc));
	return fail_stream(st, exit_code, err->code ? err->code : (rc ? rc : GPUSHARE_E_WORKER), err->cuda_error, msg);
}

static int interrupted(void)
{
	return __atomic_load_n(&got_signal, __ATOMIC_RELAXED);
}

/* Final state after a stop: DONE when it was measuring and the parent asked
 * to stop (or nothing was interrupted); FAILED "interrupted" otherwise. */
static int finish_stopped(struct stream *st)
{
	int sig = interrupted();
	bool measuring = __atomic_load_n(&st->measuring, __ATOMIC_RELAXED);

	if (!sig || (measuring && phase_of(st->w->region) == GPUSHARE_PHASE_STOP)) {
		slot_finish(st, GPUSHARE_SLOT_DONE, 0, 0, NULL);
		return GPUSHARE_WORKER_EXIT_OK;
	}
	slot_finish(st, GPUSHARE_SLOT_FAILED, GPUSHARE_E_INTERRUPTED, 0, "interrupted");
	return 128 + sig;
}

static bool parent_gone(const struct worker *w)
{
	return getppid() != w->ppid;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) };

	nanosleep(&ts, NULL);
}

/* Copy what the workload and the environment say about the limits in effect. */
static void fill_limits(struct stream *st, const struct wl_info *info)
{
	struct gpushare_slot *s = st->slot;

	__atomic_store_n(&s->sm_count, info->sm_count, __ATOMIC_RELAXED);
	__atomic_store_n(&s->device, info->device, __ATOMIC_RELAXED);
	store_u64(&s->mem_free_bytes, info->mem_free_bytes);
	store_u64(&s->mem_total_bytes, info->mem_total_bytes);
	__atomic_store(&s->flops_per_request, &info->flops_per_request, __ATOMIC_RELAXED);
	copy_str(s->device_name, sizeof(s->device_name), info->device_name);
}

/* Wait for GO. Returns 0 on GO, 1 when told to stop, or an exit status. */
static int wait_for_go(struct stream *st)
{
	struct worker *w = st->w;
	uint64_t t0 = gpushare_now_ns();

	for (;;) {
		uint32_t phase = phase_of(w->region);

		if (phase == GPUSHARE_PHASE_GO)
			return 0;
		if (phase == GPUSHARE_PHASE_STOP || interrupted())
			return 1;
		if (parent_gone(w))
			return fail_stream(st, GPUSHARE_WORKER_EXIT_REGION, GPUSHARE_E_WORKER, 0, "the parent exited before GO");
		if (gpushare_now_ns() - t0 > GO_TIMEOUT_NS)
			return fail_stream(st, GPUSHARE_WORKER_EXIT_REGION, GPUSHARE_E_TIMEOUT, 0, "no GO from the parent within 10 minutes");
		sleep_ns(POLL_NS);
	}
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* The slice an open-loop worker asks for, in us: GPUSHARE_WORKER_SLICE_US,
 * else GPUSHARE_DISPATCH_SLICE_US (the dispatcher's), else 100; 0 leaves
 * the scheduler's default. Woken by the dispatcher for each arrival, a
 * worker with the default slice waits behind CPU-bound tasks, and so does
 * the dispatcher that woke it (lib/core/sched.c says why a short slice
 * helps; the bench refuses a bad value before the run). */
static void open_loop_slice(void)
{
	const char *v = getenv("GPUSHARE_WORKER_SLICE_US");
	long us = 100;

	if (!v || !*v)
		v = getenv("GPUSHARE_DISPATCH_SLICE_US");
	if (v && *v && gpushare_parse_int(v, 0, 100000, &us) != 0)
		us = 100;
	gpushare_sched_short_slice((uint64_t)us * 1000);
}

/* Open loop: claim arrivals from the stream's ring and serve each with one
 * request until STOP (the window's end does not stop it: what is queued
 * then is still served and counted). Latency counts from the arrival's
 * scheduled time. An idle worker polls its ring, busily for a few
 * microseconds, then sleeps on it until the dispatcher publishes. */
static int serve_arrivals(struct stream *st, void *state, struct gpushare_slot_window *win)
{
	struct worker *w = st->w;
	struct gpushare_region_header *r = w->region;
	struct gpushare_slot *s = st->slot;
	struct gpushare_ring *q = gpushare_region_ring_of_slot(r, st->slot_no);
	uint32_t entries = r->ring_entries;
	uint64_t next_check = gpushare_now_ns() + PARENT_CHECK_NS;
	struct gpushare_ring_entry e;
	struct wl_error err;
	unsigned idle = 0;
	int rc;

	if (!q)
		return fail_stream(st, GPUSHARE_WORKER_EXIT_REGION, GPUSHARE_E_INVAL, 0, "open-loop region without a ring for this slot");
	open_loop_slice();
	for (;;) {
		uint64_t t0, t1;

		if (!gpushare_ring_claim(q, entries, &e)) {
			if (phase_of(r) == GPUSHARE_PHASE_STOP || interrupted())
				break;
			if (++idle < IDLE_SPINS) {
				cpu_relax();
				continue;
			}
			t0 = gpushare_now_ns();
			if (t0 >= next_check) {
				if (parent_gone(w))
					return fail_stream(st, GPUSHARE_WORKER_EXIT_REGION, GPUSHARE_E_WORKER, 0, "the parent exited during the run");
				next_check = t0 + PARENT_CHECK_NS;
			}
			/* Asleep until the dispatcher publishes (a futex), or
			 * 10 ms to look at the phase and the parent. */
			gpushare_ring_wait(q, IDLE_WAIT_NS);
			continue;
		}
		idle = 0;
		store_u64(&s->busy, 1);
		t0 = gpushare_now_ns();
		memset(&err, 0, sizeof(err));
		rc = w->ops->request(state, &err);
		t1 = gpushare_now_ns();
		if (rc)
			return fail_wl(st, GPUSHARE_WORKER_EXIT_REQUEST, rc, &err, "request");
		gpushare_slot_record_open(s, win, e.t_sched_ns, t0, t1);
		store_u64(&s->busy, 0);
		if (phase_of(r) == GPUSHARE_PHASE_STOP || interrupted())
			break;
	}
	return finish_stopped(st);
}

/* Run requests inside the window until a stop rule applies. */
static int measure(struct stream *st, void *state)
{
	struct worker *w = st->w;
	struct gpushare_region_header *r = w->region;
	struct gpushare_slot *s = st->slot;
	struct gpushare_slot_window win;
	uint64_t next_check, t0, t1;
	struct wl_error err;
	int rc;

	gpushare_slot_window_read(&win, r, s);
	/* Every worker starts at the same moment: the window's warm-up start. */
	while ((t0 = gpushare_now_ns()) < win.t_warm) {
		if (phase_of(r) == GPUSHARE_PHASE_STOP || interrupted())
			return finish_stopped(st);
		sleep_ns(win.t_warm - t0 < POLL_NS ? win.t_warm - t0 : POLL_NS);
	}
	__atomic_store_n(&st->measuring, 1, __ATOMIC_RELAXED);
	set_state(s, GPUSHARE_SLOT_RUNNING);
	if (r->load == GPUSHARE_LOAD_OPEN)
		return serve_arrivals(st, state, &win);
	next_check = gpushare_now_ns() + PARENT_CHECK_NS;
	for (;;) {
		if (phase_of(r) == GPUSHARE_PHASE_STOP || interrupted() || gpushare_slot_window_full(&win))
			break;
		/* The window may move while the warm-up lasts (an adaptive
		 * warm-up ends early): re-read it before each request. */
		win.t_start = __atomic_load_n(&r->t_measure_start_ns, __ATOMIC_ACQUIRE);
		win.t_end = __atomic_load_n(&r->t_measure_end_ns, __ATOMIC_ACQUIRE);
		t0 = gpushare_now_ns();
		if (t0 >= win.t_end)
			break;
		if (t0 >= next_check) {
			if (parent_gone(w))
				return fail_stream(st, GPUSHARE_WORKER_EXIT_REGION, GPUSHARE_E_WORKER, 0, "the parent exited during the run");
			next_check = t0 + PARENT_CHECK_NS;
		}
		memset(&err, 0, sizeof(err));
		rc = w->ops->request(state, &err);
		t1 = gpushare_now_ns();
		if (rc)
			return fail_wl(st, GPUSHARE_WORKER_EXIT_REQUEST, rc, &err, "request");
		gpushare_slot_record(s, &win, t0, t1);
	}
	return finish_stopped(st);
}

static int stream_run(struct stream *st)
{
	struct worker *w = st->w;
	struct gpushare_slot *s = st->slot;
	struct wl_info info = { .sm_count = -1, .device = -1 };
	struct wl_error err = { 0 };
	void *state = NULL;
	uint64_t i;
	int rc;

	rc = w->ops->init(&w->params, st->index, &state, &info, &err);
	if (rc)
		return fail_wl(st, GPUSHARE_WORKER_EXIT_INIT, rc, &err, "init");
	fill_limits(st, &info);
	for (i = 0; i < w->warmup_requests; i++) {
		if (phase_of(w->region) == GPUSHARE_PHASE_STOP || interrupted()) {
			rc = finish_stopped(st);
			goto out;
		}
		memset(&err, 0, sizeof(err));
		rc = w->ops->request(state, &err);
		if (rc) {
			rc = fail_wl(st, GPUSHARE_WORKER_EXIT_REQUEST, rc, &err, "warm-up request");
			goto out;
		}
		store_u64(&s->total_requests, i + 1);
	}
	set_state(s, GPUSHARE_SLOT_READY);
	rc = wait_for_go(st);
	if (rc == 1)
		rc = finish_stopped(st);
	else if (rc == 0)
		rc = measure(st, state);
out:
	w->ops->fini(state);
	return rc;
}

static void *stream_main(void *arg)
{
	struct stream *st = arg;
	ssize_t n;

	st->exit_code = stream_run(st);
	__atomic_store_n(&st->finished, 1, __ATOMIC_RELEASE);
	n = write(wake_fd[1], "d", 1);
	(void)n;
	return NULL;
}

/* Reset a slot for a fresh start (a launcher may retry a worker in a slot). */
static void slot_start(struct gpushare_slot *s, long batch)
{
	gpushare_slot_begin(s, (int32_t)getpid(), getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
			    getenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), (uint64_t)batch);
}

/* --list: the workloads built into this worker, one name a line. */
static int list_workloads(void)
{
	const struct gpushare_wl_desc *list;
	size_t n = gpushare_workloads(&list), i;

	for (i = 0; i < n; i++) {
		if (wl_ops_find(list[i].name))
			printf("%s\n", list[i].name);
	}
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}

struct args {
	long region_fd, slot, threads, batch, warmup;
	const char *workload;
	const char *opts[MAX_OPTS];
	int n_opts;
};

static int parse_num(const char *opt, const char *val, long min, long max, long *out)
{
	if (gpushare_parse_int(val, min, max, out))
		return usage_error("--%s: %s", opt, gpushare_errdetail());
	return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	enum { O_FD = 256, O_SLOT, O_THREADS, O_WORKLOAD, O_BATCH, O_WARMUP, O_OPT, O_HELP, O_LIST };
	static const struct option longopts[] = {
		{ "region-fd", required_argument, NULL, O_FD },
		{ "slot", required_argument, NULL, O_SLOT },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "workload", required_argument, NULL, O_WORKLOAD },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "warmup-requests", required_argument, NULL, O_WARMUP },
		{ "opt", required_argument, NULL, O_OPT },
		{ "help", no_argument, NULL, O_HELP },
		{ "list", no_argument, NULL, O_LIST },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc = 0;

	a->region_fd = a->slot = a->warmup = -1;
	a->threads = a->batch = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (c) {
		case O_FD: rc = parse_num("region-fd", optarg, 0, 1L << 30, &a->region_fd); break;
		case O_SLOT: rc = parse_num("slot", optarg, 0, UINT32_MAX - 1L, &a->slot); break;
		case O_THREADS: rc = parse_num("threads", optarg, 1, MAX_THREADS, &a->threads); break;
		case O_BATCH: rc = parse_num("batch", optarg, 1, 1L << 30, &a->batch); break;
		case O_WARMUP: rc = parse_num("warmup-requests", optarg, 0, 1L << 30, &a->warmup); break;
		case O_WORKLOAD: a->workload = optarg; break;
		case O_OPT:
			if (!strchr(optarg, '=') || optarg[0] == '=')
				return usage_error("--opt '%s' is not name=value", optarg);
			if (a->n_opts == MAX_OPTS)
				return usage_error("more than %d --opt options", MAX_OPTS);
			a->opts[a->n_opts++] = optarg;
			break;
		case O_HELP:
			usage();
			exit(0);
		case O_LIST:
			exit(list_workloads());
		case ':':
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
		if (rc)
			return rc;
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (a->region_fd < 0)
		return usage_error("missing --region-fd");
	if (a->slot < 0)
		return usage_error("missing --slot");
	if (!a->workload)
		return usage_error("missing --workload");
	return 0;
}

/* Resolve the workload and its options. Returns 0 or an exit status, with
 * the message in msg. */
static int setup_workload(struct worker *w, const struct args *a, int *code, char *msg, size_t len)
{
	const struct gpushare_wl_desc *d = gpushare_workload_find(a->workload);
	int i, rc;

	if (!d) {
		*code = GPUSHARE_E_NOT_FOUND;
		snprintf(msg, len, "unknown workload '%s'", a->workload);
		return GPUSHARE_WORKER_EXIT_USAGE;
	}
	rc = gpushare_wl_params_init(&w->params, d);
	for (i = 0; !rc && i < a->n_opts; i++) {
		char name[64];
		size_t n = strcspn(a->opts[i], "=");

		snprintf(name, sizeof(name), "%.*s", (int)(n < sizeof(name) ? n : sizeof(name) - 1), a->opts[i]);
		rc = gpushare_wl_params_set(&w->params, name, a->opts[i] + n + 1);
	}
	w->params.batch = a->batch;
	if (!rc)
		rc = gpushare_wl_params_check(&w->params);
	if (rc) {
		*code = rc;
		snprintf(msg, len, "%s", gpushare_errdetail());
		return GPUSHARE_WORKER_EXIT_USAGE;
	}
	w->ops = wl_ops_find(d->name);
	if (!w->ops) {
		*code = GPUSHARE_E_UNSUPPORTED;
		snprintf(msg, len, "workload '%s' needs CUDA, but this gpushare-worker was built without CUDA", d->name);
		return GPUSHARE_WORKER_EXIT_INIT;
	}
	return 0;
}

static int install_signals(void)
{
	struct sigaction sa, prev;

	if (pipe2(wake_fd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, NULL, &prev) < 0)
		return -1;
	/* A launcher that ignores SIGINT for us wants Ctrl-C to reach only
	 * itself (it then stops us with STOP): keep it ignored. */
	if (prev.sa_handler != SIG_IGN && sigaction(SIGINT, &sa, NULL) < 0)
		return -1;
	return 0;
}

static bool all_finished(const struct stream *st, long n)
{
	long i;

	for (i = 0; i < n; i++) {
		if (!__atomic_load_n(&st[i].finished, __ATOMIC_ACQUIRE))
			return false;
	}
	return true;
}

/* A signal came and some request did not return within the grace period:
 * write the slots of the stuck threads and leave without waiting for them
 * (_exit: the workload's state is in use, so nothing may tear it down). */
static void abandon(struct stream *st, long n)
{
	int code = GPUSHARE_WORKER_EXIT_OK;
	long i;

	for (i = 0; i < n; i++) {
		int c = __atomic_load_n(&st[i].finished, __ATOMIC_ACQUIRE) ? st[i].exit_code : finish_stopped(&st[i]);

		if (c && !code)
			code = c;
	}
	_exit(code);
}

static void supervise(struct stream *st, long n)
{
	uint64_t deadline = 0;
	char buf[64];

	while (!all_finished(st, n)) {
		struct pollfd pfd = { .fd = wake_fd[0], .events = POLLIN };
		int timeout_ms = -1;

		if (interrupted() && !deadline)
			deadline = gpushare_now_ns() + SIGNAL_GRACE_NS;
		if (deadline) {
			uint64_t now = gpushare_now_ns();

			if (now >= deadline)
				abandon(st, n);
			timeout_ms = (int)((deadline - now + 999999) / 1000000);
		}
		if (poll(&pfd, 1, timeout_ms) > 0) {
			while (read(wake_fd[0], buf, sizeof(buf)) > 0)
				;
		}
	}
}

int main(int argc, char **argv)
{
	struct worker w = { 0 };
	struct stream *st;
	struct args a = { 0 };
	sigset_t block, old;
	char msg[256];
	int code = 0, rc;
	long i, started;

	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc;
	if (install_signals() < 0) {
		fprintf(stderr, PROG ": cannot set up signal handling: %s\n", strerror(errno));
		return GPUSHARE_WORKER_EXIT_REGION;
	}
	w.ppid = getppid();
	if (gpushare_region_attach((int)a.region_fd, &w.region)) {
		fprintf(stderr, PROG ": %s\n", gpushare_errdetail());
		return GPUSHARE_WORKER_EXIT_REGION;
	}
	if ((uint64_t)a.slot + (uint64_t)a.threads > w.region->n_slots) {
		fprintf(stderr, PROG ": slots %ld..%ld are out of range (the region has %" PRIu32 ")\n",
			a.slot, a.slot + a.threads - 1, w.region->n_slots);
		return GPUSHARE_WORKER_EXIT_REGION;
	}
	st = calloc((size_t)a.threads, sizeof(*st));
	if (!st) {
		fputs(PROG ": out of memory\n", stderr);
		return GPUSHARE_WORKER_EXIT_INIT;
	}
	for (i = 0; i < a.threads; i++) {
		st[i].w = &w;
		/* The stream's slot: unique in the run, so workers differ
		 * (random data, tiny's fault-after) whatever their process. */
		st[i].index = (int)(a.slot + i);
		st[i].slot_no = (uint32_t)(a.slot + i);
		st[i].slot = gpushare_region_slot(w.region, st[i].slot_no);
		slot_start(st[i].slot, a.batch);
	}
	w.warmup_requests = a.warmup >= 0 ? (uint64_t)a.warmup : __atomic_load_n(&w.region->warmup_requests, __ATOMIC_RELAXED);

	rc = setup_workload(&w, &a, &code, msg, sizeof(msg));
	if (rc) {
		fprintf(stderr, PROG ": %s\n", msg);
		for (i = 0; i < a.threads; i++)
			slot_finish(&st[i], GPUSHARE_SLOT_FAILED, code, 0, msg);
		free(st);
		gpushare_region_unmap(w.region);
		return rc;
	}

	/* Threads start with SIGTERM/SIGINT blocked so the handler always runs
	 * on the supervising main thread. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	for (started = 0; started < a.threads; started++) {
		rc = pthread_create(&st[started].tid, NULL, stream_main, &st[started]);
		if (rc) {
			snprintf(msg, sizeof(msg), "cannot start thread %ld: %s", started, strerror(rc));
			for (i = started; i < a.threads; i++) {
				st[i].exit_code = fail_stream(&st[i], GPUSHARE_WORKER_EXIT_INIT, GPUSHARE_E_SYS, 0, msg);
				__atomic_store_n(&st[i].finished, 1, __ATOMIC_RELEASE);
			}
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	supervise(st, a.threads);
	for (i = 0; i < started; i++)
		pthread_join(st[i].tid, NULL);
	rc = 0;
	for (i = 0; i < a.threads && !rc; i++)
		rc = st[i].exit_code;
	free(st);
	gpushare_region_unmap(w.region);
	return rc;
}
