/*
 * The shared-memory region between `gpushare bench` and its workers: a
 * sealed memfd holding a versioned header and one slot per measured stream.
 * The layout and protocol are in gpushare/region.h and docs/region.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/gpushare.h"
#include "gpushare/region.h"

/* More slots than any machine has GPUs times sensible streams; bounds the
 * size a corrupt header can make us map. */
#define REGION_MAX_SLOTS 65536u
#define REGION_ALIGN 64u

static size_t slots_offset(void)
{
	return (sizeof(struct gpushare_region_header) + REGION_ALIGN - 1) / REGION_ALIGN * REGION_ALIGN;
}

size_t gpushare_region_size(uint32_t n_slots)
{
	return slots_offset() + (size_t)n_slots * sizeof(struct gpushare_slot);
}

static size_t ring_size(uint32_t entries)
{
	return sizeof(struct gpushare_ring) + (size_t)entries * sizeof(struct gpushare_ring_entry);
}

/* Rings start on a 64-byte boundary after the slots. */
static size_t rings_offset(uint32_t n_slots)
{
	return (gpushare_region_size(n_slots) + REGION_ALIGN - 1) / REGION_ALIGN * REGION_ALIGN;
}

static size_t total_size(uint32_t n_slots, uint32_t n_rings, uint32_t entries)
{
	return n_rings ? rings_offset(n_slots) + (size_t)n_rings * ring_size(entries) : gpushare_region_size(n_slots);
}

static void slot_init(struct gpushare_slot *s)
{
	memset(s, 0, sizeof(*s));
	s->state = GPUSHARE_SLOT_EMPTY;
	s->sm_count = -1;
	s->device = -1;
	s->thread_percentage = -1.0;
	gpushare_hist_init(&s->hist);
	gpushare_hist_init(&s->queue_hist);
	gpushare_hist_init(&s->service_hist);
}

int gpushare_region_create(uint32_t n_slots, struct gpushare_region_header **out, int *fd)
{
	return gpushare_region_create_rings(n_slots, 0, 0, out, fd);
}

int gpushare_region_create_rings(uint32_t n_slots, uint32_t n_rings, uint32_t ring_entries,
				 struct gpushare_region_header **out, int *fd)
{
	struct gpushare_region_header *r;
	size_t size;
	void *p;
	int mfd, err;
	uint32_t i;

	if (n_slots == 0 || n_slots > REGION_MAX_SLOTS)
		return gpushare_fail(GPUSHARE_E_INVAL, "a region needs 1 to %u slots, not %" PRIu32, REGION_MAX_SLOTS, n_slots);
	if (n_rings > n_slots)
		return gpushare_fail(GPUSHARE_E_INVAL, "a region of %" PRIu32 " slots cannot have %" PRIu32 " rings", n_slots,
				     n_rings);
	if (n_rings && (ring_entries < 2 || ring_entries > GPUSHARE_RING_MAX_ENTRIES ||
			(ring_entries & (ring_entries - 1))))
		return gpushare_fail(GPUSHARE_E_INVAL, "ring entries must be a power of two from 2 to %u, not %" PRIu32,
				     GPUSHARE_RING_MAX_ENTRIES, ring_entries);
	size = total_size(n_slots, n_rings, ring_entries);
	mfd = memfd_create("gpushare-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return gpushare_fail(GPUSHARE_E_SYS, "memfd_create: %s", strerror(errno));
	if (ftruncate(mfd, (off_t)size) < 0) {
		err = errno;
		close(mfd);
		return gpushare_fail(GPUSHARE_E_SYS, "ftruncate(region, %zu bytes): %s", size, strerror(err));
	}
	if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		err = errno;
		close(mfd);
		return gpushare_fail(GPUSHARE_E_SYS, "sealing the region: %s", strerror(err));
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		close(mfd);
		return gpushare_fail(GPUSHARE_E_SYS, "mmap(region, %zu bytes): %s", size, strerror(err));
	}
	r = p;
	r->version = GPUSHARE_REGION_VERSION;
	r->n_slots = n_slots;
	r->slot_size = sizeof(struct gpushare_slot);
	r->slots_offset = slots_offset();
	r->phase = GPUSHARE_PHASE_INIT;
	r->n_rings = n_rings;
	r->ring_entries = n_rings ? ring_entries : 0;
	r->rings_offset = n_rings ? rings_offset(n_slots) : 0;
	r->ring_size = n_rings ? ring_size(ring_entries) : 0;
	for (i = 0; i < n_slots; i++)
		slot_init(gpushare_region_slot(r, i));
	/* The magic goes last: a half-built region never looks valid. */
	__atomic_store_n(&r->magic, GPUSHARE_REGION_MAGIC, __ATOMIC_RELEASE);
	*out = r;
	*fd = mfd;
	return GPUSHARE_OK;
}

int gpushare_region_attach(int fd, struct gpushare_region_header **out)
{
	struct gpushare_region_header hdr;
	struct stat st;
	void *p;
	int seals;

	if (fstat(fd, &st) < 0)
		return gpushare_fail(GPUSHARE_E_SYS, "region descriptor %d: %s", fd, strerror(errno));
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(hdr))
		return gpushare_fail(GPUSHARE_E_INVAL, "descriptor %d is not a gpushare region (size %jd)", fd, (intmax_t)st.st_size);
	/* Without the shrink seal the creator could cut the file under our
	 * mapping and we would die of SIGBUS. */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return gpushare_fail(GPUSHARE_E_INVAL, "descriptor %d is not a sealed gpushare region", fd);
	if (pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr))
		return gpushare_fail(GPUSHARE_E_IO, "cannot read the region header from descriptor %d", fd);
	if (hdr.magic != GPUSHARE_REGION_MAGIC)
		return gpushare_fail(GPUSHARE_E_INVAL, "descriptor %d is not a gpushare region (bad magic 0x%016" PRIx64 ")", fd, hdr.magic);
	if (hdr.version != GPUSHARE_REGION_VERSION)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "region version %" PRIu32 " is not supported (this build speaks version %u)",
				     hdr.version, GPUSHARE_REGION_VERSION);
	if (hdr.slot_size != sizeof(struct gpushare_slot) || hdr.slots_offset != slots_offset())
		return gpushare_fail(GPUSHARE_E_INVAL, "region slot layout differs (slot size %" PRIu64 ", offset %" PRIu64
				     "; expected %zu, %zu): mismatched gpushare builds?",
				     hdr.slot_size, hdr.slots_offset, sizeof(struct gpushare_slot), slots_offset());
	if (hdr.n_slots == 0 || hdr.n_slots > REGION_MAX_SLOTS)
		return gpushare_fail(GPUSHARE_E_INVAL, "region claims %" PRIu32 " slots", hdr.n_slots);
	if (hdr.n_rings > hdr.n_slots ||
	    (hdr.n_rings && (hdr.ring_entries < 2 || hdr.ring_entries > GPUSHARE_RING_MAX_ENTRIES ||
			     (hdr.ring_entries & (hdr.ring_entries - 1)) || hdr.rings_offset != rings_offset(hdr.n_slots) ||
			     hdr.ring_size != ring_size(hdr.ring_entries))))
		return gpushare_fail(GPUSHARE_E_INVAL, "region ring layout is invalid (%" PRIu32 " rings of %" PRIu32 " entries)",
				     hdr.n_rings, hdr.ring_entries);
	if (hdr.load > GPUSHARE_LOAD_OPEN || hdr.dispatch > GPUSHARE_DISPATCH_ROUND_ROBIN ||
	    (hdr.load == GPUSHARE_LOAD_OPEN && hdr.n_rings == 0))
		return gpushare_fail(GPUSHARE_E_INVAL, "region load %" PRIu32 " / dispatch %" PRIu32 " is invalid", hdr.load,
				     hdr.dispatch);
	if ((uint64_t)st.st_size != total_size(hdr.n_slots, hdr.n_rings, hdr.ring_entries))
		return gpushare_fail(GPUSHARE_E_INVAL, "region size %jd does not match its %" PRIu32 " slots and %" PRIu32
				     " rings (expected %zu)", (intmax_t)st.st_size, hdr.n_slots, hdr.n_rings,
				     total_size(hdr.n_slots, hdr.n_rings, hdr.ring_entries));
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return gpushare_fail(GPUSHARE_E_SYS, "mmap(region, %jd bytes): %s", (intmax_t)st.st_size, strerror(errno));
	*out = p;
	return GPUSHARE_OK;
}

void gpushare_region_unmap(struct gpushare_region_header *r)
{
	if (r)
		munmap(r, total_size(r->n_slots, r->n_rings, r->ring_entries));
}

struct gpushare_slot *gpushare_region_slot(struct gpushare_region_header *r, uint32_t i)
{
	if (!r || i >= r->n_slots)
		return NULL;
	return (struct gpushare_slot *)((char *)r + r->slots_offset + (size_t)i * r->slot_size);
}

struct gpushare_ring *gpushare_region_ring(struct gpushare_region_header *r, uint32_t i)
{
	if (!r || i >= r->n_rings)
		return NULL;
	return (struct gpushare_ring *)((char *)r + r->rings_offset + (size_t)i * r->ring_size);
}

struct gpushare_ring *gpushare_region_ring_of_slot(struct gpushare_region_header *r, uint32_t slot)
{
	if (!r || r->load != GPUSHARE_LOAD_OPEN)
		return NULL;
	return gpushare_region_ring(r, r->dispatch == GPUSHARE_DISPATCH_SHARED ? 0 : slot);
}

int gpushare_ring_publish(struct gpushare_ring *q, uint32_t entries, uint64_t t_sched_ns, uint64_t seq)
{
	uint64_t head = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
	uint64_t tail = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
	struct gpushare_ring_entry *e;

	/* The acquire load of tail orders our overwrite of the oldest entry
	 * after the claim that freed it (and after its reader's load). */
	if (head - tail >= entries)
		return GPUSHARE_RING_FULL;
	e = &q->entry[head & (entries - 1)];
	__atomic_store_n(&e->t_sched_ns, t_sched_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&e->seq, seq, __ATOMIC_RELAXED);
	/* Sequentially consistent, paired with the waiter's: either it sees
	 * the new head, or we see it waiting and wake it. */
	__atomic_store_n(&q->head, head + 1, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&q->waiters, __ATOMIC_SEQ_CST) ? GPUSHARE_RING_WAKE : GPUSHARE_RING_PUBLISHED;
}

void gpushare_ring_wake(struct gpushare_ring *q)
{
	__atomic_add_fetch(&q->wake, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &q->wake, FUTEX_WAKE, 1, NULL, NULL, 0);
}

bool gpushare_ring_push(struct gpushare_ring *q, uint32_t entries, uint64_t t_sched_ns, uint64_t seq)
{
	int r = gpushare_ring_publish(q, entries, t_sched_ns, seq);

	if (r == GPUSHARE_RING_WAKE)
		gpushare_ring_wake(q);
	return r != GPUSHARE_RING_FULL;
}

void gpushare_ring_wait(struct gpushare_ring *q, uint64_t timeout_ns)
{
	struct timespec ts = { (time_t)(timeout_ns / 1000000000ULL), (long)(timeout_ns % 1000000000ULL) };
	uint32_t v;

	__atomic_add_fetch(&q->waiters, 1, __ATOMIC_SEQ_CST);
	v = __atomic_load_n(&q->wake, __ATOMIC_SEQ_CST);
	/* Not a shared-private futex: the word lives in memory other
	 * processes map. The kernel sleeps only while wake still equals v. */
	if (__atomic_load_n(&q->head, __ATOMIC_SEQ_CST) <= __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &q->wake, FUTEX_WAIT, v, &ts, NULL, 0);
	__atomic_sub_fetch(&q->waiters, 1, __ATOMIC_SEQ_CST);
}

bool gpushare_ring_claim(struct gpushare_ring *q, uint32_t entries, struct gpushare_ring_entry *e)
{
	uint64_t tail = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);

	for (;;) {
		uint64_t head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
		const struct gpushare_ring_entry *src;

		if (tail >= head)
			return false;
		/* Read first, then claim: the producer cannot reuse this entry
		 * before tail moves past it, and if another consumer moved it
		 * first our CAS fails and what we read is thrown away. */
		src = &q->entry[tail & (entries - 1)];
		e->t_sched_ns = __atomic_load_n(&src->t_sched_ns, __ATOMIC_RELAXED);
		e->seq = __atomic_load_n(&src->seq, __ATOMIC_RELAXED);
		if (__atomic_compare_exchange_n(&q->tail, &tail, tail + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return true;
		/* tail now holds the current value; try again. */
	}
}

uint64_t gpushare_ring_depth(const struct gpushare_ring *q)
{
	uint64_t tail = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
	uint64_t head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);

	return head > tail ? head - tail : 0;
}

static void store_u64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

void gpushare_slot_begin(struct gpushare_slot *s, int32_t pid, const char *thread_percentage_env,
			 const char *mem_limit_env, uint64_t items_per_request)
{
	double tp = -1.0;

	if (thread_percentage_env && *thread_percentage_env) {
		char *end;

		tp = strtod(thread_percentage_env, &end);
		if (end == thread_percentage_env || *end)
			tp = -1.0;
	}
	__atomic_store_n(&s->state, (uint32_t)GPUSHARE_SLOT_STARTING, __ATOMIC_RELEASE);
	__atomic_store_n(&s->pid, pid, __ATOMIC_RELAXED);
	s->error_code = 0;
	s->cuda_error = 0;
	s->message[0] = '\0';
	s->sm_count = -1;
	s->device = -1;
	store_u64(&s->mem_free_bytes, 0);
	store_u64(&s->mem_total_bytes, 0);
	__atomic_store(&s->thread_percentage, &tp, __ATOMIC_RELAXED);
	snprintf(s->mem_limit, sizeof(s->mem_limit), "%s", mem_limit_env ? mem_limit_env : "");
	s->device_name[0] = '\0';
	store_u64(&s->items_per_request, items_per_request);
	store_u64(&s->requests, 0);
	store_u64(&s->total_requests, 0);
	store_u64(&s->errors, 0);
	store_u64(&s->t_first_start_ns, 0);
	store_u64(&s->t_last_end_ns, 0);
	store_u64(&s->completed_in_window, 0);
	store_u64(&s->busy, 0);
	gpushare_hist_init(&s->hist);
	gpushare_hist_init(&s->queue_hist);
	gpushare_hist_init(&s->service_hist);
}

void gpushare_slot_window_read(struct gpushare_slot_window *w, const struct gpushare_region_header *r,
			       const struct gpushare_slot *s)
{
	w->t_warm = __atomic_load_n(&r->t_warmup_start_ns, __ATOMIC_RELAXED);
	w->t_start = __atomic_load_n(&r->t_measure_start_ns, __ATOMIC_RELAXED);
	w->t_end = __atomic_load_n(&r->t_measure_end_ns, __ATOMIC_RELAXED);
	w->limit = __atomic_load_n(&r->requests_per_worker, __ATOMIC_RELAXED);
	w->recorded = __atomic_load_n(&s->requests, __ATOMIC_RELAXED);
	w->total = __atomic_load_n(&s->total_requests, __ATOMIC_RELAXED);
}

bool gpushare_slot_window_full(const struct gpushare_slot_window *w)
{
	return w->limit && w->recorded >= w->limit;
}

bool gpushare_slot_record(struct gpushare_slot *s, struct gpushare_slot_window *w, uint64_t t0, uint64_t t1)
{
	store_u64(&s->total_requests, ++w->total);
	if (t0 < w->t_start || t1 > w->t_end || gpushare_slot_window_full(w))
		return false;
	gpushare_hist_record(&s->hist, t1 - t0);
	if (w->recorded == 0)
		store_u64(&s->t_first_start_ns, t0);
	store_u64(&s->t_last_end_ns, t1);
	store_u64(&s->requests, ++w->recorded);
	return true;
}

bool gpushare_slot_record_open(struct gpushare_slot *s, struct gpushare_slot_window *w, uint64_t t_sched,
			       uint64_t t0, uint64_t t1)
{
	store_u64(&s->total_requests, ++w->total);
	if (t1 >= w->t_start && t1 <= w->t_end)
		store_u64(&s->completed_in_window, __atomic_load_n(&s->completed_in_window, __ATOMIC_RELAXED) + 1);
	if (t_sched < w->t_start || t_sched >= w->t_end)
		return false;
	if (t0 < t_sched)       /* cannot happen with one clock; never a negative wait */
		t0 = t_sched;
	if (t1 < t0)
		t1 = t0;
	gpushare_hist_record(&s->hist, t1 - t_sched);
	gpushare_hist_record(&s->queue_hist, t0 - t_sched);
	gpushare_hist_record(&s->service_hist, t1 - t0);
	if (w->recorded == 0)
		store_u64(&s->t_first_start_ns, t0);
	store_u64(&s->t_last_end_ns, t1);
	store_u64(&s->requests, ++w->recorded);
	return true;
}

void gpushare_slot_finish(struct gpushare_slot *s, uint32_t state, int32_t error_code, int32_t cuda_error,
			  const char *message)
{
	if (state == GPUSHARE_SLOT_FAILED) {
		__atomic_store_n(&s->error_code, error_code, __ATOMIC_RELAXED);
		__atomic_store_n(&s->cuda_error, cuda_error, __ATOMIC_RELAXED);
		snprintf(s->message, sizeof(s->message), "%s", message ? message : "");
	}
	__atomic_store_n(&s->state, state, __ATOMIC_RELEASE);
}
