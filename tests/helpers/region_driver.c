/*
 * region_driver: plays the `gpushare bench` side of the shared-region
 * protocol for one gpushare-worker, so tests can drive the worker without
 * the launcher.
 *
 *   region_driver [options] -- WORKER-ARGS...
 *
 * Creates a region, starts $GPUSHARE_WORKER (or --worker PATH) with
 * "--region-fd FD" and WORKER-ARGS, waits for every slot to be READY, opens
 * the window and sends GO, sends STOP at the end (then SIGTERM and SIGKILL to
 * a worker that does not leave), and prints what the region holds as
 * key=value lines: exit=, barrier=, then slot.<i>.<field>= per slot.
 *
 * Options: --slots N, --barrier-first I and --barrier-count C (the slots
 * to wait for; default all), --window-ms MS, --warmup-ms MS, --requests R
 * (requests mode), --header-warmup W, --stop-at-ms MS (STOP this long after
 * GO), --sigterm-at-ms MS (SIGTERM without STOP), --sigint-at-ms MS, --no-go (STOP instead of
 * GO at the barrier), --grace-ms MS, --timeout-ms MS, --corrupt magic|version,
 * --no-fd (do not pass --region-fd), --worker PATH.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/gpushare.h"
#include "gpushare/region.h"
#include "gpushare/util.h"

#define MS 1000000ULL

struct opts {
	long slots, window_ms, warmup_ms, requests, header_warmup;
	long stop_at_ms, sigterm_at_ms, sigint_at_ms, grace_ms, timeout_ms;
	long barrier_first, barrier_count;   /* the slots the worker uses */
	int no_go, no_fd;
	const char *corrupt;
	const char *worker;
};

static const char *state_name(uint32_t s)
{
	static const char *const names[] = { "EMPTY", "STARTING", "READY", "RUNNING", "DONE", "FAILED" };

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "INVALID";
}

static uint32_t slot_state(struct gpushare_slot *s)
{
	return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Reap the child if it exited; returns true then, with its status. */
static bool reaped(pid_t pid, int *status, bool *done)
{
	int st;

	if (*done)
		return true;
	if (waitpid(pid, &st, WNOHANG) == pid) {
		*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		*done = true;
	}
	return *done;
}

static void print_slot(uint32_t i, struct gpushare_slot *s, const struct gpushare_region_header *r)
{
	struct gpushare_hist h;
	uint64_t first = s->t_first_start_ns, last = s->t_last_end_ns;
	bool in_window = s->requests == 0 ||
			 (first >= r->t_measure_start_ns && last <= r->t_measure_end_ns && first <= last);

	gpushare_hist_snapshot(&s->hist, &h);
	printf("slot.%u.state=%s\n", i, state_name(slot_state(s)));
	printf("slot.%u.pid=%d\n", i, s->pid);
	printf("slot.%u.error_code=%d\n", i, s->error_code);
	printf("slot.%u.cuda_error=%d\n", i, s->cuda_error);
	printf("slot.%u.message=%s\n", i, s->message);
	printf("slot.%u.sm_count=%d\n", i, s->sm_count);
	printf("slot.%u.device=%d\n", i, s->device);
	printf("slot.%u.device_name=%s\n", i, s->device_name);
	printf("slot.%u.thread_percentage=%g\n", i, s->thread_percentage);
	printf("slot.%u.mem_limit=%s\n", i, s->mem_limit);
	printf("slot.%u.items_per_request=%" PRIu64 "\n", i, s->items_per_request);
	printf("slot.%u.requests=%" PRIu64 "\n", i, s->requests);
	printf("slot.%u.total_requests=%" PRIu64 "\n", i, s->total_requests);
	printf("slot.%u.hist_count=%" PRIu64 "\n", i, h.count);
	printf("slot.%u.in_window=%d\n", i, in_window ? 1 : 0);
	printf("slot.%u.p50_ns=%" PRIu64 "\n", i, gpushare_hist_quantile(&h, 0.5));
	printf("slot.%u.p99_ns=%" PRIu64 "\n", i, gpushare_hist_quantile(&h, 0.99));
	printf("slot.%u.min_ns=%" PRIu64 "\n", i, h.count ? h.min_ns : 0);
	printf("slot.%u.max_ns=%" PRIu64 "\n", i, h.max_ns);
	printf("slot.%u.mean_ns=%.0f\n", i, gpushare_hist_mean(&h));
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	enum { O_SLOTS = 256, O_BFIRST, O_BCOUNT, O_WINDOW, O_WARMUP, O_REQUESTS, O_HWARM, O_STOP, O_TERM, O_INT, O_NOGO,
	       O_GRACE, O_TIMEOUT, O_CORRUPT, O_NOFD, O_WORKER };
	static const struct option longopts[] = {
		{ "slots", required_argument, NULL, O_SLOTS },
		{ "barrier-first", required_argument, NULL, O_BFIRST },
		{ "barrier-count", required_argument, NULL, O_BCOUNT },
		{ "window-ms", required_argument, NULL, O_WINDOW },
		{ "warmup-ms", required_argument, NULL, O_WARMUP },
		{ "requests", required_argument, NULL, O_REQUESTS },
		{ "header-warmup", required_argument, NULL, O_HWARM },
		{ "stop-at-ms", required_argument, NULL, O_STOP },
		{ "sigterm-at-ms", required_argument, NULL, O_TERM },
		{ "sigint-at-ms", required_argument, NULL, O_INT },
		{ "no-go", no_argument, NULL, O_NOGO },
		{ "grace-ms", required_argument, NULL, O_GRACE },
		{ "timeout-ms", required_argument, NULL, O_TIMEOUT },
		{ "corrupt", required_argument, NULL, O_CORRUPT },
		{ "no-fd", no_argument, NULL, O_NOFD },
		{ "worker", required_argument, NULL, O_WORKER },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ .slots = 1, .window_ms = 300, .warmup_ms = 50, .stop_at_ms = -1,
			    .sigterm_at_ms = -1, .sigint_at_ms = -1, .grace_ms = 2000, .timeout_ms = 60000,
			    .worker = getenv("GPUSHARE_WORKER") };
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		long *dst = NULL;

		switch (c) {
		case O_SLOTS: dst = &o->slots; break;
		case O_BFIRST: dst = &o->barrier_first; break;
		case O_BCOUNT: dst = &o->barrier_count; break;
		case O_WINDOW: dst = &o->window_ms; break;
		case O_WARMUP: dst = &o->warmup_ms; break;
		case O_REQUESTS: dst = &o->requests; break;
		case O_HWARM: dst = &o->header_warmup; break;
		case O_STOP: dst = &o->stop_at_ms; break;
		case O_TERM: dst = &o->sigterm_at_ms; break;
		case O_INT: dst = &o->sigint_at_ms; break;
		case O_GRACE: dst = &o->grace_ms; break;
		case O_TIMEOUT: dst = &o->timeout_ms; break;
		case O_NOGO: o->no_go = 1; break;
		case O_NOFD: o->no_fd = 1; break;
		case O_CORRUPT: o->corrupt = optarg; break;
		case O_WORKER: o->worker = optarg; break;
		default: return -1;
		}
		if (dst && gpushare_parse_int(optarg, 0, 100000000L, dst)) {
			fprintf(stderr, "region_driver: %s\n", gpushare_errdetail());
			return -1;
		}
	}
	if (o->barrier_count == 0)
		o->barrier_count = o->slots - o->barrier_first;
	if (o->barrier_first + o->barrier_count > o->slots) {
		fprintf(stderr, "region_driver: barrier slots beyond --slots\n");
		return -1;
	}
	if (!o->worker) {
		fprintf(stderr, "region_driver: set GPUSHARE_WORKER or give --worker\n");
		return -1;
	}
	return optind;
}

static pid_t spawn(const struct opts *o, int fd, char **wargs, int nwargs)
{
	char fdbuf[16];
	char **argv = calloc((size_t)nwargs + 4, sizeof(*argv));
	int k = 0, i;
	pid_t pid;

	if (!argv)
		return -1;
	snprintf(fdbuf, sizeof(fdbuf), "%d", fd);
	argv[k++] = (char *)o->worker;
	if (!o->no_fd) {
		argv[k++] = "--region-fd";
		argv[k++] = fdbuf;
	}
	for (i = 0; i < nwargs; i++)
		argv[k++] = wargs[i];
	pid = fork();
	if (pid == 0) {
		execv(o->worker, argv);
		fprintf(stderr, "region_driver: cannot run '%s': %s\n", o->worker, strerror(errno));
		_exit(127);
	}
	free(argv);
	return pid;
}

int main(int argc, char **argv)
{
	struct gpushare_region_header *r;
	struct opts o;
	const char *barrier = "timeout";
	uint64_t t0, now, t_go = 0, t_stop = 0, t_term = 0, t_int = 0, deadline;
	bool done = false, stopped = false, termed = false, killed = false, custom_term = false, inted = false;
	int first, fd, status = -1;
	uint32_t i, n;
	pid_t pid;

	first = parse_opts(argc, argv, &o);
	if (first < 0)
		return 2;
	if (gpushare_region_create((uint32_t)o.slots, &r, &fd)) {
		fprintf(stderr, "region_driver: %s\n", gpushare_errdetail());
		return 1;
	}
	n = r->n_slots;
	r->requests_per_worker = (uint64_t)o.requests;
	r->warmup_requests = (uint64_t)o.header_warmup;
	if (o.corrupt && strcmp(o.corrupt, "magic") == 0)
		r->magic ^= 1;
	else if (o.corrupt && strcmp(o.corrupt, "version") == 0)
		r->version = GPUSHARE_REGION_VERSION + 1;
	if (fcntl(fd, F_SETFD, 0) < 0) {
		perror("region_driver: fcntl");
		return 1;
	}
	pid = spawn(&o, fd, argv + first, argc - first);
	if (pid < 0) {
		perror("region_driver: fork");
		return 1;
	}
	close(fd);
	t0 = gpushare_now_ns();
	deadline = t0 + (uint64_t)o.timeout_ms * MS;

	/* Start barrier: every slot READY, or a failure. */
	for (;;) {
		uint32_t ready = 0, failed = 0;

		for (i = (uint32_t)o.barrier_first; i < (uint32_t)(o.barrier_first + o.barrier_count); i++) {
			uint32_t s = slot_state(gpushare_region_slot(r, i));

			ready += s == GPUSHARE_SLOT_READY;
			failed += s == GPUSHARE_SLOT_FAILED;
		}
		if (failed) {
			barrier = "failed";
			break;
		}
		if (ready == (uint32_t)o.barrier_count) {
			barrier = "ready";
			break;
		}
		if (reaped(pid, &status, &done)) {
			barrier = "exited";
			break;
		}
		if (gpushare_now_ns() > deadline)
			break;
		pause_ms(1);
	}
	if (strcmp(barrier, "ready") == 0 && !o.no_go) {
		now = gpushare_now_ns();
		r->t_warmup_start_ns = now;
		r->t_measure_start_ns = now + (uint64_t)o.warmup_ms * MS;
		r->t_measure_end_ns = o.requests ? UINT64_MAX : r->t_measure_start_ns + (uint64_t)o.window_ms * MS;
		__atomic_store_n(&r->phase, GPUSHARE_PHASE_GO, __ATOMIC_RELEASE);
		t_go = now;
		if (o.stop_at_ms >= 0)
			t_stop = t_go + (uint64_t)o.stop_at_ms * MS;
		else if (!o.requests)
			t_stop = r->t_measure_end_ns;
		if (o.sigterm_at_ms >= 0) {
			t_term = t_go + (uint64_t)o.sigterm_at_ms * MS;
			custom_term = true;
		}
		if (o.sigint_at_ms >= 0)
			t_int = t_go + (uint64_t)o.sigint_at_ms * MS;
	} else {
		t_stop = gpushare_now_ns();
	}

	/* Run, stop, and make sure the worker leaves. */
	while (!reaped(pid, &status, &done)) {
		now = gpushare_now_ns();
		if (!stopped && t_stop && now >= t_stop) {
			__atomic_store_n(&r->phase, GPUSHARE_PHASE_STOP, __ATOMIC_RELEASE);
			stopped = true;
			if (!custom_term)
				t_term = now + (uint64_t)o.grace_ms * MS;
		}
		if (!stopped) {
			for (i = 0; i < n; i++) {
				if (slot_state(gpushare_region_slot(r, i)) == GPUSHARE_SLOT_FAILED)
					t_stop = now;
			}
		}
		if (!inted && t_int && now >= t_int) {
			kill(pid, SIGINT);
			inted = true;
		}
		if (!termed && t_term && now >= t_term) {
			kill(pid, SIGTERM);
			termed = true;
		}
		if (!killed && ((termed && now >= t_term + (uint64_t)o.grace_ms * MS) || now > deadline)) {
			kill(pid, SIGKILL);
			killed = true;
		}
		pause_ms(1);
	}

	printf("exit=%d\n", status);
	printf("barrier=%s\n", barrier);
	printf("sigterm=%d\n", termed ? 1 : 0);
	printf("sigkill=%d\n", killed ? 1 : 0);
	for (i = 0; i < n; i++)
		print_slot(i, gpushare_region_slot(r, i), r);
	gpushare_region_unmap(r);
	return fflush(stdout) == 0 ? 0 : 1;
}
