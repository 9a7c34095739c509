/*
 * A stand-in for libcupti.so, loaded by libgpushare-account.so through
 * GPUSHARE_CUPTI_LIBRARY, for testing the accounting's record path without
 * a GPU. While kernel activity is enabled it makes up kernels from a script
 * and delivers them, as CUPTI does, through the registered buffer callbacks
 * at the next flush:
 *   FAKE_CUPTI_KERNELS="<dev>:<busy_us>:<idle_us>[,...]": on each device,
 *     back-to-back kernels of busy_us separated by idle_us, starting from
 *     the moment kernel activity is enabled to the moment it is disabled
 *     (the last may end after it, as a real one launched in time does);
 *   FAKE_CUPTI_MEMORY="<dev>:<bytes>[,...]": one device allocation each,
 *     delivered at the first flush after memory activity is enabled;
 *   FAKE_CUPTI_ENABLE_ERROR=1: cuptiActivityEnable fails (a CUPTI that
 *     refuses, e.g. a profiler already attached).
 * A kernel's busy_us is its fixed work's time alone on the whole GPU. How the
 * GPU is shared stretches it:
 *   - under CUDA_MPS_ACTIVE_THREAD_PERCENTAGE P (MPS limits) the process
 *     holds P% of the SMs and a kernel lasts 100/P times as long;
 *     FAKE_CUPTI_IGNORE_LIMIT=1 plants a server that does not apply it;
 *   - FAKE_CUPTI_PEERS=DIR: every process of the stand-in registers there
 *     (a file named by its pid, holding its limit, 100 without one) and
 *     shares the GPU with the live ones: under MPS (the default) each holds
 *     P / max(100, sum of P) of the SMs; with FAKE_CUPTI_SHARING=timeslice
 *     the N live ones take turns, a kernel lasting busy_us and the process
 *     waiting N-1 kernels' time between its own (a short kernel is not
 *     sliced out mid-kernel), and FAKE_CUPTI_SWITCH_US more per process
 *     for each switch between them (a context switch's cost: GPU time no
 *     process gets);
 *   - FAKE_CUPTI_GRID_FROM_SMS=1 models a probe that sizes its grid from
 *     the SM count its context reports (the reduced one under a limit)
 *     unless GPUSHARE_CHECK_SMS names the whole GPU's: its work then shrinks
 *     with its SMs and a kernel lasts busy_us whatever the limit.
 * Records are struct gpushare_cupti_kernel and struct gpushare_cupti_memory, each
 * zero-filled but for the fields the accounting reads.
 *
 * The callback API, for the library's launch timing: from the first
 * cuptiSubscribe on, a thread per scripted device plays the process's
 * launches of FAKE_CUPTI_KERNELS (stretched by the sharing as above): while
 * a subscriber has cuLaunchKernel's callback enabled, each launch calls it at
 * the entry, takes the kernel's time, and calls it at the exit, in the
 * launch's context ((CUcontext)(device + 1), made current in the stand-in
 * driver named by GPUSHARE_CUDA_LIBRARY, whose events the library records).
 * cuptiFinalize detaches the subscriber. FAKE_CUPTI_TRACE=FILE gets a line
 * per "subscribe" and "finalize".
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti_types.h"

#define MAX_SPANS 256

static CUpti_BuffersCallbackRequestFunc requested;
static CUpti_BuffersCallbackCompleteFunc completed;
static bool kernel_on, memory_on, memory_sent;
static uint64_t on_since;
static struct {
	uint64_t start, end;
} spans[MAX_SPANS]; /* enabled spans not yet flushed */
static size_t n_spans;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp)
{
	*timestamp = now_ns();
	return CUPTI_SUCCESS;
}

static void peers(unsigned *n, unsigned *sum);

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
						    CUpti_BuffersCallbackCompleteFunc comp)
{
	unsigned n, sum;

	peers(&n, &sum); /* registers: the process shares the GPU from its start */
	requested = req;
	completed = comp;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
	const char *err = getenv("FAKE_CUPTI_ENABLE_ERROR");

	if (err && *err == '1')
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && !kernel_on) {
		kernel_on = true;
		on_since = now_ns();
	} else if (kind == CUPTI_ACTIVITY_KIND_MEMORY2) {
		memory_on = true;
	}
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && kernel_on) {
		kernel_on = false;
		if (n_spans < MAX_SPANS) {
			spans[n_spans].start = on_since;
			spans[n_spans++].end = now_ns();
		}
	} else if (kind == CUPTI_ACTIVITY_KIND_MEMORY2) {
		memory_on = false;
	}
	return CUPTI_SUCCESS;
}

/* A record's size, known from its kind (the real CUPTI's are of many kinds). */
static size_t record_size(const CUpti_Activity *a)
{
	return a->kind == CUPTI_ACTIVITY_KIND_MEMORY2 ? sizeof(struct gpushare_cupti_memory) : sizeof(struct gpushare_cupti_kernel);
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
	uint8_t *next = *record ? (uint8_t *)*record + record_size(*record) : buffer;

	if (next + sizeof(CUpti_Activity) > buffer + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)(void *)next;
	return CUPTI_SUCCESS;
}

struct out {
	uint8_t *buf;
	size_t size, used;
};

static bool put(struct out *o, const void *rec, size_t n)
{
	if (o->used + n > o->size)
		return false;
	memcpy(o->buf + o->used, rec, n);
	o->used += n;
	return true;
}

static bool env_is(const char *name, const char *value)
{
	const char *v = getenv(name);
	return v && strcmp(v, value) == 0;
}

/* This process's MPS limit in percent: 100 without one, or where the
 * planted server ignores it. */
static unsigned own_limit(void)
{
	const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	unsigned limit = pct && !env_is("FAKE_CUPTI_IGNORE_LIMIT", "1") ? (unsigned)atoi(pct) : 100;

	return limit == 0 || limit > 100 ? 100 : limit;
}

/* Register in FAKE_CUPTI_PEERS (once), then count the live peers and the
 * sum of their limits, this process included. */
static void peers(unsigned *n, unsigned *sum)
{
	static bool registered;
	const char *dir = getenv("FAKE_CUPTI_PEERS");
	char path[4096];
	DIR *d;
	struct dirent *e;

	*n = 1;
	*sum = own_limit();
	if (!dir || !*dir)
		return;
	if (!registered) {
		FILE *f;
		snprintf(path, sizeof(path), "%s/%d", dir, (int)getpid());
		if ((f = fopen(path, "w"))) {
			fprintf(f, "%u\n", own_limit());
			fclose(f);
		}
		registered = true;
	}
	if (!(d = opendir(dir)))
		return;
	while ((e = readdir(d))) {
		int pid = atoi(e->d_name);
		unsigned p = 100;
		FILE *f;
		if (pid <= 0 || pid == (int)getpid() || (kill(pid, 0) < 0 && errno == ESRCH))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if ((f = fopen(path, "r"))) {
			if (fscanf(f, "%u", &p) != 1 || p == 0 || p > 100)
				p = 100;
			fclose(f);
		}
		++*n;
		*sum += p;
	}
	closedir(d);
}

/* A kernel of busy_us alone under the sharing now: its duration (us) and
 * the time the process is sliced out after it (us). */
static unsigned shared_kernel(unsigned busy, uint64_t *gap)
{
	unsigned n, sum, limit = own_limit();
	double stretch = 1.0; /* a kernel's duration over busy_us */
	uint64_t wait_us = 0, switch_us = 0; /* time sliced out between two kernels */
	const char *sw = getenv("FAKE_CUPTI_SWITCH_US");

	peers(&n, &sum);
	if (env_is("FAKE_CUPTI_SHARING", "timeslice")) {
		wait_us = n - 1; /* kernels' time, times busy below */
		if (n > 1 && sw && *sw)
			switch_us = (uint64_t)strtoul(sw, NULL, 10) * n;
	} else
		stretch = (sum > 100 ? sum : 100) / (double)limit;
	if (env_is("FAKE_CUPTI_GRID_FROM_SMS", "1") && !getenv("GPUSHARE_CHECK_SMS"))
		stretch /= 100.0 / (double)limit; /* its grid shrank with its SMs */
	*gap = wait_us * busy + switch_us;
	return (unsigned)(busy * stretch + 0.5);
}

static void kernels(struct out *o, uint64_t start, uint64_t end)
{
	const char *s = getenv("FAKE_CUPTI_KERNELS");
	unsigned dev, busy, idle;
	int used;

	while (s && sscanf(s, "%u:%u:%u%n", &dev, &busy, &idle, &used) == 3) {
		uint64_t gap;
		busy = shared_kernel(busy, &gap);
		for (uint64_t t = start; busy && t < end; t += ((uint64_t)busy + idle + gap) * 1000u) {
			struct gpushare_cupti_kernel k;
			memset(&k, 0, sizeof(k));
			k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
			k.deviceId = dev;
			k.start = t;
			k.end = t + (uint64_t)busy * 1000u; /* a kernel launched in the span is recorded whole */
			if (!put(o, &k, sizeof(k)))
				return;
		}
		s += used;
		if (*s++ != ',')
			break;
	}
}

static void memory(struct out *o)
{
	const char *s = getenv("FAKE_CUPTI_MEMORY");
	unsigned dev;
	unsigned long long bytes;
	int used;

	while (s && sscanf(s, "%u:%llu%n", &dev, &bytes, &used) == 2) {
		struct gpushare_cupti_memory m;
		memset(&m, 0, sizeof(m));
		m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
		m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
		m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
		m.deviceId = dev;
		m.bytes = bytes;
		m.timestamp = now_ns();
		if (!put(o, &m, sizeof(m)))
			return;
		s += used;
		if (*s++ != ',')
			break;
	}
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
	struct out o = { 0 };
	size_t max_records = 0;

	(void)flag;
	if (!requested || !completed)
		return CUPTI_ERROR_INVALID_OPERATION;
	requested(&o.buf, &o.size, &max_records);
	if (!o.buf)
		return CUPTI_ERROR_OUT_OF_MEMORY;
	if (memory_on && !memory_sent) {
		memory(&o);
		memory_sent = true;
	}
	for (size_t i = 0; i < n_spans; i++)
		kernels(&o, spans[i].start, spans[i].end);
	n_spans = 0;
	completed(NULL, 0, o.buf, o.size, o.used);
	return CUPTI_SUCCESS;
}

/* ---- the callback API ---- */

static _Atomic(CUpti_CallbackFunc) subscriber_fn;
static atomic_bool launch_cb_on;
static pthread_once_t players_once = PTHREAD_ONCE_INIT;

static void trace(const char *what)
{
	const char *path = getenv("FAKE_CUPTI_TRACE");
	FILE *f;

	if (path && *path && (f = fopen(path, "a"))) {
		fprintf(f, "%s\n", what);
		fclose(f);
	}
}

static void sleep_us(uint64_t us)
{
	struct timespec t = { .tv_sec = (time_t)(us / 1000000u), .tv_nsec = (long)(us % 1000000u) * 1000L };
	nanosleep(&t, NULL);
}

struct player {
	unsigned dev, busy, idle;
};

/* One device's launches, for the life of the process. */
static void *play(void *arg)
{
	struct player p = *(struct player *)arg;
	const char *lib = getenv("GPUSHARE_CUDA_LIBRARY");
	void *cu = lib && *lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
	int (*set_ctx)(void *) = NULL;
	void *ctx = (void *)(uintptr_t)(p.dev + 1);

	free(arg);
	if (cu)
		*(void **)(&set_ctx) = dlsym(cu, "cuCtxSetCurrent");
	if (set_ctx)
		set_ctx(ctx);
	for (;;) {
		uint64_t gap;
		unsigned busy = shared_kernel(p.busy, &gap);
		CUpti_CallbackFunc f = atomic_load(&subscriber_fn);
		struct gpushare_cuda_launch_params params;
		CUpti_CallbackData d;
		int rc = 0;

		memset(&params, 0, sizeof(params));
		memset(&d, 0, sizeof(d));
		d.functionParams = &params;
		d.functionReturnValue = &rc;
		d.context = ctx;
		if (f && atomic_load(&launch_cb_on)) {
			d.callbackSite = CUPTI_API_ENTER;
			f(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d);
			sleep_us(busy); /* the kernel, between the library's two events */
			d.callbackSite = CUPTI_API_EXIT;
			if ((f = atomic_load(&subscriber_fn)))
				f(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d);
		} else {
			sleep_us(busy);
		}
		sleep_us(p.idle + gap);
	}
	return NULL;
}

static void start_players(void)
{
	const char *s = getenv("FAKE_CUPTI_KERNELS");
	unsigned dev, busy, idle;
	int used;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	while (s && sscanf(s, "%u:%u:%u%n", &dev, &busy, &idle, &used) == 3) {
		struct player *p = malloc(sizeof(*p));
		pthread_t t;

		if (p) {
			*p = (struct player){ dev, busy, idle };
			if (pthread_create(&t, &attr, play, p) != 0)
				free(p);
		}
		s += used;
		if (*s++ != ',')
			break;
	}
	pthread_attr_destroy(&attr);
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc fn, void *userdata)
{
	CUpti_CallbackFunc none = NULL;
	unsigned n, sum;

	(void)userdata;
	if (!atomic_compare_exchange_strong(&subscriber_fn, &none, fn))
		return CUPTI_ERROR_INVALID_OPERATION; /* one subscriber at a time, as CUPTI */
	*sub = (CUpti_SubscriberHandle)(uintptr_t)1;
	trace("subscribe");
	peers(&n, &sum);
	pthread_once(&players_once, start_players);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle sub, CUpti_CallbackDomain domain,
					 CUpti_CallbackId cbid)
{
	(void)sub;
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
		atomic_store(&launch_cb_on, enable != 0);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiFinalize(void)
{
	atomic_store(&launch_cb_on, false);
	atomic_store(&subscriber_fn, NULL);
	trace("finalize");
	return CUPTI_SUCCESS;
}
