/*
 * Timing launches with CUDA events inside a window (launch_timing.h).
 *
 * While a window is open, CUPTI's callback API calls on_launch() at the
 * entry and the exit of every launch function of the driver API (a
 * kernel's, a cooperative kernel's, a graph's; the per-thread-stream
 * variants too). At the entry an event is recorded on the launch's stream,
 * at the exit (the launch succeeded) another: on the GPU the first
 * completes when the stream reaches the launch, the second when its work is
 * done, so the time between them is the launch's span on the GPU, sliced
 * out or held to fewer SMs included, and the launch latency when the
 * stream was idle. A stream being captured into a graph gets nothing (an
 * event recorded there would join the graph). Events are made once per
 * context and reused window after window.
 *
 * At the window's end no launch is timed any more, and the first launch's
 * exit after it detaches CUPTI (cuptiFinalize, as cupti_activity.h
 * recommends: at the exit of a driver API call); the sampler then reads the
 * events' times, per context against its first event, and adds up the
 * union per device.
 */
#include "launch_timing.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cupti_types.h"

#define MAX_CONTEXTS 16
#define MAX_PAIRS 8192 /* launches timed per context and window */

typedef struct CUevent_st *gs_event;

static struct {
	__typeof__(cuptiSubscribe) *subscribe;
	__typeof__(cuptiEnableCallback) *enable;
	__typeof__(cuptiFinalize) *finalize;
	int (*event_create)(gs_event *ev, unsigned flags);       /* cuEventCreate */
	int (*event_record)(gs_event ev, CUstream stream);       /* cuEventRecord */
	int (*event_sync)(gs_event ev);                          /* cuEventSynchronize */
	int (*event_elapsed)(float *ms, gs_event a, gs_event b); /* cuEventElapsedTime(_v2) */
	int (*is_capturing)(CUstream stream, int *status);       /* cuStreamIsCapturing */
	int (*ctx_push)(CUcontext ctx);                          /* cuCtxPushCurrent_v2 */
	int (*ctx_pop)(CUcontext *ctx);                          /* cuCtxPopCurrent_v2 */
	int (*ctx_device)(int *device);                          /* cuCtxGetDevice */
} fn;

static const CUpti_CallbackId launch_ids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,          CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

struct pair {
	gs_event start, end;
	atomic_uint done; /* the window whose launch it timed, 0 none */
};

struct ctx_slot {
	_Atomic(CUcontext) ctx; /* NULL: free */
	atomic_bool ready;      /* device and pairs set */
	int device;
	struct pair *pairs;
	atomic_uint next; /* pairs taken in this window */
};

static struct ctx_slot slots[MAX_CONTEXTS];
static CUpti_SubscriberHandle subscriber;
static atomic_bool is_open, detach_wanted, is_attached;
static atomic_uint window; /* 1, 2, ...: the current window */
static atomic_int in_flight;
static uint64_t open_ns;
static _Atomic uint64_t full_ns; /* when a context ran out of pairs in this window */

static _Thread_local struct {
	struct pair *pair;
	unsigned window;
	CUstream stream;
} pending;

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp_interval(const void *a, const void *b)
{
	const struct gs_interval *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

uint64_t gs_interval_union_ns(struct gs_interval *iv, size_t n)
{
	uint64_t busy = 0, cur_s = 0, cur_e = 0;

	if (n == 0)
		return 0; /* iv may be NULL then (a device with no kernel yet) */
	qsort(iv, n, sizeof(*iv), cmp_interval);
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || iv[i].start > cur_e) {
			busy += cur_e - cur_s;
			cur_s = iv[i].start;
			cur_e = iv[i].end;
		} else if (iv[i].end > cur_e) {
			cur_e = iv[i].end;
		}
	}
	return busy + (cur_e - cur_s);
}

#define LOOKUP(dl, field, name) ((*(void **)(&fn.field) = dlsym(dl, name)) != NULL)

bool gs_launch_load(void *cupti_dl, void *cuda_dl)
{
	if (!cupti_dl || !cuda_dl)
		return false;
	if (!LOOKUP(cuda_dl, event_elapsed, "cuEventElapsedTime_v2") && !LOOKUP(cuda_dl, event_elapsed, "cuEventElapsedTime"))
		return false;
	return LOOKUP(cupti_dl, subscribe, "cuptiSubscribe") && LOOKUP(cupti_dl, enable, "cuptiEnableCallback") &&
	       LOOKUP(cupti_dl, finalize, "cuptiFinalize") && LOOKUP(cuda_dl, event_create, "cuEventCreate") &&
	       LOOKUP(cuda_dl, event_record, "cuEventRecord") && LOOKUP(cuda_dl, event_sync, "cuEventSynchronize") &&
	       LOOKUP(cuda_dl, is_capturing, "cuStreamIsCapturing") && LOOKUP(cuda_dl, ctx_push, "cuCtxPushCurrent_v2") &&
	       LOOKUP(cuda_dl, ctx_pop, "cuCtxPopCurrent_v2") && LOOKUP(cuda_dl, ctx_device, "cuCtxGetDevice");
}

/* The stream a launch goes to; false for a function not timed. A NULL
 * stream in a per-thread-stream variant is the thread's stream. */
static bool launch_stream(CUpti_CallbackId cbid, const void *params, CUstream *out)
{
	bool ptsz = cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
		    cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz ||
		    cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz;
	const struct gpushare_cuda_launch_config *config;

	if (!params)
		return false;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
		*out = ((const struct gpushare_cuda_launch_params *)params)->hStream;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
		*out = ((const struct gpushare_cuda_graph_launch_params *)params)->hStream;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
		config = *(const struct gpushare_cuda_launch_config *const *)params;
		if (!config)
			return false;
		*out = config->hStream;
		break;
	default:
		return false;
	}
	if (ptsz && !*out)
		*out = (CUstream)(uintptr_t)2; /* CU_STREAM_PER_THREAD */
	return true;
}

/* The context's slot, taken at its first launch (in the launching thread,
 * where the context is current). */
static struct ctx_slot *find_slot(CUcontext ctx)
{
	for (size_t i = 0; i < MAX_CONTEXTS; i++) {
		struct ctx_slot *s = &slots[i];
		CUcontext have = atomic_load(&s->ctx), none = NULL;

		if (have == ctx)
			return atomic_load(&s->ready) ? s : NULL;
		if (have == NULL && atomic_compare_exchange_strong(&s->ctx, &none, ctx)) {
			int dev = 0;

			s->pairs = calloc(MAX_PAIRS, sizeof(*s->pairs));
			if (!s->pairs || fn.ctx_device(&dev) != 0)
				return NULL; /* the slot stays taken and never ready: this context is not timed */
			s->device = dev;
			atomic_store(&s->ready, true);
			return s;
		}
	}
	return NULL;
}

static void launch_enter(const CUpti_CallbackData *cb, CUpti_CallbackId cbid)
{
	CUstream stream;
	struct ctx_slot *s;
	struct pair *p;
	unsigned idx;
	int capturing = 0;
	uint64_t none = 0;

	if (!launch_stream(cbid, cb->functionParams, &stream) || !cb->context)
		return;
	if (fn.is_capturing(stream, &capturing) != 0 || capturing != 0)
		return;
	if (!(s = find_slot(cb->context)))
		return;
	idx = atomic_fetch_add(&s->next, 1);
	if (idx >= MAX_PAIRS) {
		atomic_compare_exchange_strong(&full_ns, &none, mono_ns());
		return;
	}
	p = &s->pairs[idx];
	if (!p->start && fn.event_create(&p->start, 0) != 0) {
		p->start = NULL;
		return;
	}
	if (!p->end && fn.event_create(&p->end, 0) != 0) {
		p->end = NULL;
		return;
	}
	if (fn.event_record(p->start, stream) != 0)
		return;
	atomic_fetch_add(&in_flight, 1);
	pending.pair = p;
	pending.window = atomic_load(&window);
	pending.stream = stream;
}

static void launch_exit(const CUpti_CallbackData *cb)
{
	struct pair *p = pending.pair;

	if (p) {
		const int *rc = cb->functionReturnValue;

		if (pending.window == atomic_load(&window) && rc && *rc == 0 && fn.event_record(p->end, pending.stream) == 0)
			atomic_store_explicit(&p->done, pending.window, memory_order_release);
		atomic_fetch_sub(&in_flight, 1);
		pending.pair = NULL;
	}
	if (atomic_load(&detach_wanted) && atomic_exchange(&is_attached, false)) {
		atomic_store(&detach_wanted, false);
		fn.finalize();
	}
}

static void CUPTIAPI on_launch(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	const CUpti_CallbackData *cb = data;

	(void)userdata;
	if (domain != CUPTI_CB_DOMAIN_DRIVER_API || !cb)
		return;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		pending.pair = NULL;
		if (atomic_load_explicit(&is_open, memory_order_acquire))
			launch_enter(cb, cbid);
	} else {
		launch_exit(cb);
	}
}

bool gs_launch_open(void)
{
	bool any = false;

	atomic_fetch_add(&window, 1);
	for (size_t i = 0; i < MAX_CONTEXTS; i++)
		atomic_store(&slots[i].next, 0);
	atomic_store(&full_ns, 0);
	atomic_store(&in_flight, 0);
	atomic_store(&detach_wanted, false);
	if (fn.subscribe(&subscriber, on_launch, NULL) != CUPTI_SUCCESS)
		return false;
	atomic_store(&is_attached, true);
	for (size_t i = 0; i < sizeof(launch_ids) / sizeof(launch_ids[0]); i++)
		any |= fn.enable(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, launch_ids[i]) == CUPTI_SUCCESS;
	open_ns = mono_ns();
	atomic_store_explicit(&is_open, true, memory_order_release);
	if (!any) { /* detached at the next launch's exit as usual */
		atomic_store(&is_open, false);
		atomic_store(&detach_wanted, true);
	}
	return any;
}

uint64_t gs_launch_close(void)
{
	uint64_t end, full;

	atomic_store(&is_open, false);
	end = mono_ns();
	full = atomic_load(&full_ns);
	if (full && full < end)
		end = full;
	atomic_store(&detach_wanted, true);
	return end > open_ns ? end - open_ns : 0;
}

bool gs_launch_detached(void)
{
	return !atomic_load(&is_attached);
}

/* One context's launches of window w, in its own time (ns from its first
 * event); the count in iv. Called with the context current. */
static size_t context_spans(struct ctx_slot *s, unsigned w, struct gs_interval *iv, uint64_t *span_ns)
{
	unsigned n = atomic_load(&s->next);
	struct pair *ref = NULL;
	double lo = 0;
	size_t k = 0;
	static double a[MAX_PAIRS], b[MAX_PAIRS];

	if (n > MAX_PAIRS)
		n = MAX_PAIRS;
	for (unsigned i = 0; i < n; i++) {
		struct pair *p = &s->pairs[i];
		float x, y;

		if (atomic_load_explicit(&p->done, memory_order_acquire) != w || fn.event_sync(p->end) != 0)
			continue;
		if (!ref)
			ref = p;
		if (fn.event_elapsed(&x, ref->start, p->start) != 0 || fn.event_elapsed(&y, ref->start, p->end) != 0 || y < x)
			continue;
		a[k] = x;
		b[k] = y;
		if (x < lo)
			lo = x;
		k++;
	}
	*span_ns = 0;
	for (size_t i = 0; i < k; i++) {
		iv[i].start = (uint64_t)((a[i] - lo) * 1e6);
		iv[i].end = (uint64_t)((b[i] - lo) * 1e6);
		*span_ns += iv[i].end - iv[i].start;
	}
	return k;
}

size_t gs_launch_collect(uint64_t window_ns, struct gs_launch_device *out, size_t max)
{
	static struct gs_interval iv[MAX_PAIRS];
	unsigned w = atomic_load(&window);
	size_t n_out = 0;

	/* a launch between its entry and its exit finishes in microseconds;
	 * one whose exit CUPTI, detached meanwhile, never reported is given up */
	for (int i = 0; i < 50 && atomic_load(&in_flight) > 0; i++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	for (size_t i = 0; i < MAX_CONTEXTS; i++) {
		struct ctx_slot *s = &slots[i];
		CUcontext ctx = atomic_load(&s->ctx), popped;
		uint64_t span = 0, busy;
		size_t k, d;

		if (!ctx || !atomic_load(&s->ready) || atomic_load(&s->next) == 0 || fn.ctx_push(ctx) != 0)
			continue;
		k = context_spans(s, w, iv, &span);
		fn.ctx_pop(&popped);
		if (!k)
			continue;
		busy = gs_interval_union_ns(iv, k);
		for (d = 0; d < n_out && out[d].device != (uint32_t)s->device; d++)
			;
		if (d == n_out) {
			if (n_out == max)
				continue;
			out[n_out++] = (struct gs_launch_device){ .device = (uint32_t)s->device };
		}
		out[d].busy_ns += busy;
		out[d].span_ns += span;
		out[d].launches += k;
	}
	for (size_t d = 0; d < n_out; d++)
		if (out[d].busy_ns > window_ns)
			out[d].busy_ns = window_ns;
	return n_out;
}
