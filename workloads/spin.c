/*
 * The `spin` workload: a CPU busy loop of request-us per item, no GPU: a
 * request of batch B spins B x request-us, so a batch costs what B
 * requests cost (and `--ceiling`, one process with batch x N, measures the
 * same work rate as N processes: E_N near 1).
 * It exercises the worker harness, the shared region and the launcher on
 * machines without a GPU, and simulates the ways a real worker fails:
 * init-fail (CUDA error 808, too many MPS clients) and fail-after with
 * fail-mode error, crash or hang.
 *
 * For open-loop tests one worker can be slower than the others (slow-us for
 * worker slow-worker) and one can stall once (stall-after, stall,
 * stall-worker): a single request that sleeps for `stall` on top of its
 * busy loop, as a worker held up by a page fault storm or a GC would.
 *
 * by-threads stretches each request by 100/P under an MPS active thread
 * percentage P, as a kernel bound by its SM share would run: the tests of
 * a mix's split under mps-split have a best share to find.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "worker.h"

#define CUDA_ERROR_MPS_MAX_CLIENTS_REACHED 808
/* A simulated hang gives up after this long so a forgotten worker cannot
 * linger for ever. */
#define HANG_LIMIT_NS (600ULL * 1000000000ULL)

enum fail_mode { FAIL_ERROR, FAIL_CRASH, FAIL_HANG };

struct spin {
	uint64_t request_ns;   /* per request: request-us x batch */
	long fail_after;       /* 0: never */
	enum fail_mode mode;
	long done;             /* requests completed, warm-up included */
	bool sleep;            /* sleep through requests instead of spinning */
	long stall_after;      /* 0: never */
	uint64_t stall_ns;
};

static void set_error(struct wl_error *err, int code, int cuda_error, const char *msg)
{
	err->code = code;
	err->cuda_error = cuda_error;
	snprintf(err->message, sizeof(err->message), "%s", msg);
}

static int spin_init(const struct gpushare_wl_params *p, int thread_index, void **state,
		     struct wl_info *info, struct wl_error *err)
{
	const char *mode = gpushare_wl_get(p, "fail-mode");
	uint64_t batch = (uint64_t)(p->batch > 0 ? p->batch : 1);
	struct spin *s;

	if (gpushare_wl_get_bool(p, "init-fail")) {
		set_error(err, GPUSHARE_E_MPS_MAX_CLIENTS, CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, "too many MPS clients");
		return GPUSHARE_E_MPS_MAX_CLIENTS;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		set_error(err, GPUSHARE_E_NOMEM, 0, "spin: out of memory");
		return GPUSHARE_E_NOMEM;
	}
	s->request_ns = gpushare_wl_get_duration_ns(p, "request-us") * batch;
	if (gpushare_wl_get_duration_ns(p, "slow-us") > 0 && gpushare_wl_get_int(p, "slow-worker") == thread_index)
		s->request_ns = gpushare_wl_get_duration_ns(p, "slow-us") * batch;
	if (gpushare_wl_get_int(p, "stall-worker") == thread_index) {
		s->stall_after = gpushare_wl_get_int(p, "stall-after");
		s->stall_ns = gpushare_wl_get_duration_ns(p, "stall");
	}
	s->sleep = gpushare_wl_get_bool(p, "sleep");
	/* by-threads: a stand-in for a kernel whose speed follows its SM share
	 * under mps-split (tests of a mix's split). */
	if (gpushare_wl_get_bool(p, "by-threads")) {
		const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
		double v = pct && *pct ? strtod(pct, NULL) : 0;

		if (v >= 1 && v <= 100)
			s->request_ns = (uint64_t)((double)s->request_ns * 100.0 / v);
	}
	s->fail_after = gpushare_wl_get_int(p, "fail-after");
	s->mode = strcmp(mode, "crash") == 0 ? FAIL_CRASH : strcmp(mode, "hang") == 0 ? FAIL_HANG : FAIL_ERROR;
	info->sm_count = -1;
	info->device = -1;
	info->mem_free_bytes = 0;
	info->mem_total_bytes = 0;
	info->flops_per_request = 0.0;
	snprintf(info->device_name, sizeof(info->device_name), "cpu");
	*state = s;
	return GPUSHARE_OK;
}

static int spin_fail(struct spin *s, struct wl_error *err)
{
	const struct timespec tick = { 0, 10 * 1000 * 1000 };
	uint64_t t0;

	switch (s->mode) {
	case FAIL_CRASH:
		/* Die the way a real crash does, by the signal, even under
		 * sanitizers that would otherwise catch SIGSEGV and exit. */
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
		abort();
	case FAIL_HANG:
		t0 = gpushare_now_ns();
		while (gpushare_now_ns() - t0 < HANG_LIMIT_NS)
			nanosleep(&tick, NULL);
		set_error(err, GPUSHARE_E_TIMEOUT, 0, "spin: simulated hang ended after 10 minutes");
		return GPUSHARE_E_TIMEOUT;
	case FAIL_ERROR:
		break;
	}
	snprintf(err->message, sizeof(err->message), "spin: simulated failure after %ld requests (fail-after)", s->done);
	err->code = GPUSHARE_E_WORKER;
	err->cuda_error = 0;
	return GPUSHARE_E_WORKER;
}

static int spin_request(void *state, struct wl_error *err)
{
	struct spin *s = state;
	uint64_t t0;

	if (s->fail_after > 0 && s->done >= s->fail_after)
		return spin_fail(s, err);
	if (s->stall_after > 0 && s->done == s->stall_after) {
		struct timespec ts = { (time_t)(s->stall_ns / 1000000000ULL), (long)(s->stall_ns % 1000000000ULL) };

		while (nanosleep(&ts, &ts) != 0)
			;
	}
	t0 = gpushare_now_ns();
	if (s->sleep && s->request_ns) {
		uint64_t end = t0 + s->request_ns;
		struct timespec ts = { (time_t)(end / 1000000000ULL), (long)(end % 1000000000ULL) };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
			;
	}
	while (gpushare_now_ns() - t0 < s->request_ns)
		;
	s->done++;
	return GPUSHARE_OK;
}

static void spin_fini(void *state)
{
	free(state);
}

const struct wl_ops wl_spin_ops = {
	.name = "spin",
	.init = spin_init,
	.request = spin_request,
	.fini = spin_fini,
};
