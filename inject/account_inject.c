/*
 * libgpushare-account.so: per-client GPU accounting inside any CUDA process
 * (docs/accounting.md). The CUDA driver loads it when CUDA_INJECTION64_PATH
 * names it and calls InitializeInjection() once, at cuInit. It loads CUPTI
 * with dlopen (GPUSHARE_CUPTI_LIBRARY, else libcupti.so from the loader's
 * path), and a thread of its own samples one window (50 ms) every period
 * (2 s), adding what the window shows, per GPU, to the process's record in
 * the accounting directory (gpushare/account.h). How a window is timed
 * (GPUSHARE_ACCOUNT_TIMING):
 *   launches (the default where the process's libcuda gives CUDA events):
 *     CUPTI is attached for the window only, each launch timed with two
 *     events (launch_timing.h); attached all along it would slow every
 *     launch (8-10% of the transformer workload's rate on an H200);
 *   kernels: CUPTI attached all along, its kernel activity enabled for the
 *     window, the kernel records flushed and added up after; device memory
 *     from CUPTI's memory records, enabled all along (an allocation is rare
 *     beside a kernel launch). Each record names its GPU by
 * UUID as well as by the process's device ordinal (which is 0 for every
 * process CUDA_VISIBLE_DEVICES gives one GPU): the UUID comes from the
 * driver API of the libcuda the process has loaded already
 * (GPUSHARE_CUDA_LIBRARY names another, as for gpushare itself), asked
 * once a device is seen, from the sampling thread.
 *
 * Anything missing (CUPTI, a symbol, the directory) makes it do nothing: it
 * never fails the process it is loaded into. GPUSHARE_ACCOUNT=0 turns it off;
 * GPUSHARE_ACCOUNT_MEMORY=0 leaves the memory activity off (no device
 * memory figure).
 * Knobs: GPUSHARE_ACCOUNT_PERIOD_MS (default 2000), GPUSHARE_ACCOUNT_DUTY
 * (default 0.025, at most 1), GPUSHARE_ACCOUNT_DIR, GPUSHARE_ACCOUNT_TIMING.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti_types.h"
#include "launch_timing.h"

#include "gpushare/account.h"

#define MAX_DEVICES 64
#define MAX_INTERVALS 65536 /* kernels of one window kept for the union */
#define BUFFER_BYTES (1u << 20)

/* The CUPTI functions used, once: required ones fail the load, none is optional. */
#define CUPTI_SYMBOLS(X)                                                                                          \
	X(cuptiActivityRegisterCallbacks)                                                                         \
	X(cuptiActivityEnable)                                                                                    \
	X(cuptiActivityDisable)                                                                                   \
	X(cuptiActivityFlushAll)                                                                                  \
	X(cuptiActivityGetNextRecord)                                                                             \
	X(cuptiGetTimestamp)

static struct {
	void *dl;
#define X(name) __typeof__(name) *name;
	CUPTI_SYMBOLS(X)
#undef X
} cupti;

/* The driver API entry points the UUIDs come from (cuda.h's types, which
 * are not needed at build time: a CUdevice is an int, a CUuuid 16 bytes). */
static struct {
	void *dl;                                               /* the process's libcuda */
	int (*get)(int *device, int ordinal);                   /* cuDeviceGet */
	int (*uuid_v2)(unsigned char bytes[16], int device);   /* cuDeviceGetUuid_v2: a MIG instance's own */
	int (*uuid)(unsigned char bytes[16], int device);      /* cuDeviceGetUuid: its GPU's */
} cuda;

#define UUID_TRIES 8 /* windows a device's UUID is asked for before it is left unknown */


struct device_state {
	bool seen;
	uint64_t window_ns, busy_ns, kernel_ns, kernels;
	uint64_t win_kernel_ns, win_kernels;       /* the current window's, for its mean */
	uint64_t win_busy_ns;                      /* the current window's busy time */
	uint64_t window_mean_ns, best_mean_ns;     /* the last window's mean, the lowest one's */
	int64_t memory_bytes;
	/* the current window's kernels, for the union */
	struct gs_interval *iv;
	size_t n_iv;
	uint64_t overflow_ns; /* kernel time of kernels past MAX_INTERVALS */
	char uuid[GPUSHARE_ACCOUNT_UUID_MAX]; /* "" until known */
	unsigned uuid_tries;
};

static struct {
	pthread_mutex_t lock;
	struct device_state dev[MAX_DEVICES];
	uint64_t win_start, win_end; /* CUPTI timestamps of the current window; win_end 0 while open */
	bool in_window;
	struct gpushare_account_record base; /* pid, uid, owner, promise */
	char dir[4096];
	struct timespec start_mono;
	long period_ms;
	double duty;
	bool launches; /* launch timing (launch_timing.h), else CUPTI's kernel records */
	bool memory;   /* kernel timing with CUPTI's memory records on */
	/* the end: the exit handler sets stopping and waits (bounded) for the
	 * sampler to close its window and leave CUPTI alone */
	pthread_cond_t wake; /* on CLOCK_MONOTONIC */
	bool stopping, sampler_running;
} st = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t real_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Wait ns, or less when the process exits (stopping). Returns false then.
 * Called without the lock. */
static bool nap(uint64_t ns)
{
	struct timespec dl;
	bool go;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += (time_t)(ns / 1000000000u);
	dl.tv_nsec += (long)(ns % 1000000000u);
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&st.lock);
	while (!st.stopping && pthread_cond_timedwait(&st.wake, &st.lock, &dl) != ETIMEDOUT)
		;
	go = !st.stopping;
	pthread_mutex_unlock(&st.lock);
	return go;
}

/* ---- CUPTI's buffers ---- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	/* CUPTI wants 8-byte alignment */
	*buffer = aligned_alloc(8, BUFFER_BYTES);
	*size = *buffer ? BUFFER_BYTES : 0;
	*max_records = 0;
}

/* A kernel record; the fields read (kind, start, end, deviceId) sit at the
 * same place in every CUpti_ActivityKernel version from 4 to 10. */
static void add_kernel(const struct gpushare_cupti_kernel *k)
{
	uint64_t s = k->start, e = k->end;
	struct device_state *d;

	if (k->deviceId >= MAX_DEVICES || e <= s)
		return;
	d = &st.dev[k->deviceId];
	d->seen = true;
	/* the kernel's whole duration (CUPTI records a kernel launched in the
	 * window whole), for the mean; its part inside the window for busy time */
	d->kernels++;
	d->kernel_ns += e - s;
	d->win_kernels++;
	d->win_kernel_ns += e - s;
	if (s < st.win_start)
		s = st.win_start;
	if (st.win_end && e > st.win_end)
		e = st.win_end;
	if (e <= s)
		return;
	if (!d->iv)
		d->iv = malloc(MAX_INTERVALS * sizeof(*d->iv));
	if (d->iv && d->n_iv < MAX_INTERVALS)
		d->iv[d->n_iv++] = (struct gs_interval){ s, e };
	else
		d->overflow_ns += e - s;
}

static void add_memory(const struct gpushare_cupti_memory *m)
{
	struct device_state *d;

	if (m->deviceId >= MAX_DEVICES || m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
		return;
	d = &st.dev[m->deviceId];
	d->seen = true;
	if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
		d->memory_bytes += (int64_t)m->bytes;
	else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
		d->memory_bytes -= (int64_t)m->bytes;
	if (d->memory_bytes < 0)
		d->memory_bytes = 0; /* a release of memory allocated before the watch began */
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	CUpti_Activity *rec = NULL;

	(void)ctx, (void)stream, (void)size;
	pthread_mutex_lock(&st.lock);
	while (cupti.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL)
			add_kernel((const struct gpushare_cupti_kernel *)(const void *)rec);
		else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY2)
			add_memory((const struct gpushare_cupti_memory *)(const void *)rec);
	}
	pthread_mutex_unlock(&st.lock);
	free(buffer);
}

/* ---- the windows ---- */

/* The union of a window's kernel intervals: the time at least one kernel
 * of the process ran on the GPU. */
static uint64_t union_ns(struct device_state *d, uint64_t window)
{
	uint64_t busy = gs_interval_union_ns(d->iv, d->n_iv) + d->overflow_ns;

	return busy > window ? window : busy;
}

/* Close a window of `window` ns: add it to every device's totals (its busy
 * time in win_busy_ns) and write the records. Called with the lock held. */
static void close_window(uint64_t window)
{
	uint64_t wall = mono_ns() - ((uint64_t)st.start_mono.tv_sec * 1000000000u + (uint64_t)st.start_mono.tv_nsec);

	for (uint32_t i = 0; i < MAX_DEVICES; i++) {
		struct device_state *d = &st.dev[i];
		struct gpushare_account_record r = st.base;
		if (!d->seen)
			continue;
		d->window_ns += window;
		d->busy_ns += d->win_busy_ns;
		d->win_busy_ns = 0;
		if (d->win_kernels) {
			d->window_mean_ns = d->win_kernel_ns / d->win_kernels;
			if (!d->best_mean_ns || d->window_mean_ns < d->best_mean_ns)
				d->best_mean_ns = d->window_mean_ns;
			d->win_kernels = d->win_kernel_ns = 0;
		}
		r.device = i;
		memcpy(r.gpu_uuid, d->uuid, sizeof(r.gpu_uuid));
		r.updated_ns = real_ns();
		r.wall_ns = wall;
		r.window_ns = d->window_ns;
		r.busy_ns = d->busy_ns;
		r.kernel_ns = d->kernel_ns;
		r.kernels = d->kernels;
		r.memory_bytes = (uint64_t)d->memory_bytes;
		r.memory_known = st.memory;
		r.timing = st.launches ? GPUSHARE_ACCOUNT_TIMING_LAUNCHES : GPUSHARE_ACCOUNT_TIMING_KERNELS;
		r.window_mean_ns = d->window_mean_ns;
		r.best_mean_ns = d->best_mean_ns;
		gpushare_account_write(st.dir, &r);
	}
}

/* The libcuda of the process: GPUSHARE_CUDA_LIBRARY, else libcuda.so.1
 * only when already loaded (never a second driver into a process). At
 * InitializeInjection, in the thread that called cuInit (none of its
 * functions is called there). */
static void load_cuda(void)
{
	const char *env = getenv("GPUSHARE_CUDA_LIBRARY");
	void *dl;

	dl = env && *env ? dlopen(env, RTLD_NOW | RTLD_LOCAL) : dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (!dl) {
		(void)dlerror(); /* its message, of this thread, is not kept */
		return;
	}
	cuda.dl = dl;
	*(void **)(&cuda.get) = dlsym(dl, "cuDeviceGet");
	*(void **)(&cuda.uuid_v2) = dlsym(dl, "cuDeviceGetUuid_v2");
	*(void **)(&cuda.uuid) = dlsym(dl, "cuDeviceGetUuid");
	if (!cuda.get || (!cuda.uuid_v2 && !cuda.uuid))
		cuda.get = NULL; /* the handle stays: libcuda is not unloaded under the process */
}

/* The UUID of device ordinal i as the driver gives it, into out (left as
 * it is when the driver does not say). cuDeviceGetUuid_v2 gives a MIG
 * instance's own UUID and cuDeviceGetUuid its GPU's (the same bytes for a
 * whole GPU): where both answer and differ, the device is a MIG instance. */
static void device_uuid(uint32_t i, char *out)
{
	unsigned char v2[16], v1[16];
	int dev;
	bool has_v2, has_v1;

	if (!cuda.get || cuda.get(&dev, (int)i) != 0)
		return;
	has_v2 = cuda.uuid_v2 && cuda.uuid_v2(v2, dev) == 0;
	has_v1 = cuda.uuid && cuda.uuid(v1, dev) == 0;
	if (has_v2)
		gpushare_account_uuid(out, v2, has_v1 && memcmp(v1, v2, sizeof(v1)) != 0);
	else if (has_v1)
		gpushare_account_uuid(out, v1, false);
}

/* Ask the driver for the UUID of each device seen that has none yet, a few
 * windows at most. Called without the lock: the driver is not called under
 * it (a callback of CUPTI's takes it). */
static void find_uuids(void)
{
	bool ask[MAX_DEVICES];
	char uuid[GPUSHARE_ACCOUNT_UUID_MAX];

	pthread_mutex_lock(&st.lock);
	for (uint32_t i = 0; i < MAX_DEVICES; i++) {
		struct device_state *d = &st.dev[i];
		ask[i] = d->seen && !d->uuid[0] && d->uuid_tries < UUID_TRIES;
		if (ask[i])
			d->uuid_tries++;
	}
	pthread_mutex_unlock(&st.lock);
	for (uint32_t i = 0; i < MAX_DEVICES; i++) {
		if (!ask[i])
			continue;
		uuid[0] = '\0';
		device_uuid(i, uuid);
		if (!uuid[0])
			continue;
		pthread_mutex_lock(&st.lock);
		memcpy(st.dev[i].uuid, uuid, sizeof(uuid));
		pthread_mutex_unlock(&st.lock);
	}
}

static void sampler_done(void)
{
	pthread_mutex_lock(&st.lock);
	st.sampler_running = false;
	pthread_cond_broadcast(&st.wake);
	pthread_mutex_unlock(&st.lock);
}

/* The period and the window, ns: the window at least 1 ms and at most the period. */
static void sampler_times(uint64_t *period, uint64_t *window)
{
	*period = (uint64_t)st.period_ms * 1000000u;
	*window = (uint64_t)((double)*period * st.duty);
	if (*window < 1000000u)
		*window = 1000000u;
	if (*window > *period)
		*window = *period;
}

static void *sampler(void *arg)
{
	uint64_t period, window;
	bool go = true;

	(void)arg;
	sampler_times(&period, &window);
	while (go) {
		uint64_t t;
		pthread_mutex_lock(&st.lock);
		go = !st.stopping;
		cupti.cuptiGetTimestamp(&t);
		st.win_start = t;
		st.win_end = 0;
		pthread_mutex_unlock(&st.lock);
		if (!go || cupti.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
			break; /* exiting, or no kernel activity here: record nothing */
		go = nap(window);
		cupti.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
		pthread_mutex_lock(&st.lock);
		cupti.cuptiGetTimestamp(&t);
		st.win_end = t;
		pthread_mutex_unlock(&st.lock);
		cupti.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		find_uuids();
		pthread_mutex_lock(&st.lock);
		for (uint32_t i = 0; i < MAX_DEVICES; i++) {
			struct device_state *d = &st.dev[i];

			d->win_busy_ns = union_ns(d, st.win_end - st.win_start);
			d->n_iv = 0;
			d->overflow_ns = 0;
		}
		close_window(st.win_end - st.win_start);
		pthread_mutex_unlock(&st.lock);
		if (go && period > window)
			go = nap(period - window);
	}
	sampler_done();
	return NULL;
}

/* Launch timing: CUPTI attached for each window only (launch_timing.h).
 * The next window opens once the last one's detach happened, at the exit of
 * a launch of the process's: a process that launches nothing stays attached
 * meanwhile, which costs it nothing. */
static void *sampler_launches(void *arg)
{
	uint64_t period, window;
	struct gs_launch_device got[MAX_DEVICES];
	bool go = true;

	(void)arg;
	sampler_times(&period, &window);
	while (go) {
		uint64_t t0 = mono_ns(), span;
		size_t n;

		while (go && !gs_launch_detached())
			go = nap(10000000u);
		if (!go || !gs_launch_open())
			break;
		go = nap(window);
		span = gs_launch_close();
		n = gs_launch_collect(span, got, MAX_DEVICES);
		pthread_mutex_lock(&st.lock);
		for (size_t k = 0; k < n; k++) {
			struct device_state *d = &st.dev[got[k].device < MAX_DEVICES ? got[k].device : 0];

			if (got[k].device >= MAX_DEVICES)
				continue;
			d->seen = true;
			d->win_busy_ns = got[k].busy_ns;
			d->kernels += got[k].launches;
			d->kernel_ns += got[k].span_ns;
			d->win_kernels = got[k].launches;
			d->win_kernel_ns = got[k].span_ns;
		}
		pthread_mutex_unlock(&st.lock);
		find_uuids();
		pthread_mutex_lock(&st.lock);
		close_window(span);
		pthread_mutex_unlock(&st.lock);
		if (go && mono_ns() - t0 < period)
			go = nap(period - (mono_ns() - t0));
	}
	sampler_done();
	return NULL;
}

/* At exit: end the window under way (its records are written) before the
 * CUDA runtime's own exit handlers tear CUPTI down; wait at most 2 s. */
static void at_exit(void)
{
	struct timespec dl;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += 2;
	pthread_mutex_lock(&st.lock);
	st.stopping = true;
	pthread_cond_broadcast(&st.wake);
	while (st.sampler_running && pthread_cond_timedwait(&st.wake, &st.lock, &dl) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&st.lock);
}

/* In a child forked from the process: no sampler runs there (threads do
 * not survive a fork), so its exit must not wait for one. The lock may have
 * been held by another thread at the fork: a fresh one. */
static void after_fork_child(void)
{
	pthread_mutex_init(&st.lock, NULL);
	st.stopping = true;
	st.sampler_running = false;
}

/* ---- loading ---- */

static bool load_cupti(void)
{
	const char *env = getenv("GPUSHARE_CUPTI_LIBRARY");
	static const char *const names[] = { "libcupti.so", "libcupti.so.13", "libcupti.so.12", NULL };

	if (env && *env)
		cupti.dl = dlopen(env, RTLD_NOW | RTLD_LOCAL);
	for (size_t i = 0; !cupti.dl && !(env && *env) && names[i]; i++)
		cupti.dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!cupti.dl)
		return false;
#define X(name)                                                                                                   \
	*(void **)(&cupti.name) = dlsym(cupti.dl, #name);                                                         \
	if (!cupti.name)                                                                                          \
		goto fail;
	CUPTI_SYMBOLS(X)
#undef X
	return true;
fail:
	dlclose(cupti.dl);
	memset(&cupti, 0, sizeof(cupti));
	return false;
}

/* GPUSHARE_ACCOUNT_CGROUP names a file read in its place (for tests). */
static void read_cgroup(char *buf, size_t len)
{
	const char *alt = getenv("GPUSHARE_ACCOUNT_CGROUP");
	FILE *f = fopen(alt && *alt ? alt : "/proc/self/cgroup", "re");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;

	buf[n] = '\0';
	if (f)
		fclose(f);
}

static void fill_base(void)
{
	char cg[4096], *end;
	const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), *share = getenv("GPUSHARE_ACCOUNT_PROMISED");
	double p = -1.0;

	read_cgroup(cg, sizeof(cg));
	st.base.pid = getpid();
	st.base.uid = (int64_t)getuid();
	st.base.start_ns = real_ns();
	gpushare_account_owner_fill(&st.base.owner, cg);
	/* what gpushare set wins over the MPS percentage it may have derived it from */
	if (share && *share) {
		p = strtod(share, &end);
		if (*end || !(p >= 0 && p <= 1))
			p = -1.0;
	} else if (pct && *pct) {
		p = strtod(pct, &end) / 100.0;
		if (*end || !(p > 0 && p <= 1))
			p = -1.0;
	}
	st.base.promised = p;
}

static double env_double(const char *name, double def, double lo, double hi)
{
	const char *v = getenv(name);
	char *end;
	double d;

	if (!v || !*v)
		return def;
	d = strtod(v, &end);
	return *end || !(d >= lo && d <= hi) ? def : d;
}

__attribute__((visibility("default"))) int InitializeInjection(void);

int InitializeInjection(void)
{
	static int done;
	const char *off = getenv("GPUSHARE_ACCOUNT"), *mem_off = getenv("GPUSHARE_ACCOUNT_MEMORY"),
		   *timing = getenv("GPUSHARE_ACCOUNT_TIMING");
	pthread_t t;
	pthread_attr_t attr;
	pthread_condattr_t cattr;

	if (done++ || (off && strcmp(off, "0") == 0))
		return 1;
	/* a 50 ms window every 2 s: launch timing costs 0.7% of the transformer
	 * workload's rate there (docs/benchmarks.md) */
	st.period_ms = (long)env_double("GPUSHARE_ACCOUNT_PERIOD_MS", 2000, 10, 3600000);
	st.duty = env_double("GPUSHARE_ACCOUNT_DUTY", 0.025, 0.001, 1.0);
	if (gpushare_account_dir(st.dir, sizeof(st.dir)) < 0 || !load_cupti())
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &st.start_mono);
	fill_base();
	load_cuda();
	/* launch timing unless kernels are asked for, or what it needs is
	 * missing (then kernel timing, which the record says) */
	st.launches = !(timing && strcmp(timing, "kernels") == 0) && gs_launch_load(cupti.dl, cuda.dl);
	if (!st.launches && cupti.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS)
		return 1;
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&st.wake, &cattr);
	pthread_condattr_destroy(&cattr);
	st.memory = !st.launches && !(mem_off && strcmp(mem_off, "0") == 0);
	if (st.memory && cupti.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2) != CUPTI_SUCCESS)
		st.memory = false; /* memory is optional */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	st.sampler_running = true;
	if (pthread_create(&t, &attr, st.launches ? sampler_launches : sampler, NULL) != 0) {
		st.sampler_running = false;
		if (st.memory)
			cupti.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMORY2);
	} else {
		pthread_atfork(NULL, NULL, after_fork_child);
		atexit(at_exit);
	}
	pthread_attr_destroy(&attr);
	return 1;
}
