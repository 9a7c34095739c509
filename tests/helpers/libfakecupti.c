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
 * Under CUDA_MPS_ACTIVE_THREAD_PERCENTAGE P a kernel lasts 100/P times its
 * busy_us, as a saturating kernel does under an MPS limit;
 * FAKE_CUPTI_IGNORE_LIMIT=1 plants a server that does not apply it.
 * Records are struct gpushare_cupti_kernel and struct gpushare_cupti_memory, each
 * zero-filled but for the fields the accounting reads.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
						    CUpti_BuffersCallbackCompleteFunc comp)
{
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

static void kernels(struct out *o, uint64_t start, uint64_t end)
{
	const char *s = getenv("FAKE_CUPTI_KERNELS");
	unsigned dev, busy, idle;
	int used;

	const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), *ignore = getenv("FAKE_CUPTI_IGNORE_LIMIT");
	unsigned limit = pct && !(ignore && *ignore == '1') ? (unsigned)atoi(pct) : 100;

	if (limit == 0 || limit > 100)
		limit = 100;
	while (s && sscanf(s, "%u:%u:%u%n", &dev, &busy, &idle, &used) == 3) {
		busy = busy * 100 / limit;
		for (uint64_t t = start; busy && t < end; t += (uint64_t)(busy + idle) * 1000u) {
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
