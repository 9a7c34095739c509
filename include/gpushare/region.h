/*
 * The shared-memory region between `gpushare bench` and its workers.
 *
 * The parent creates it (memfd), passes the descriptor to each worker
 * (gpushare-worker --region-fd FD --slot I), and reads it without pausing
 * anyone. One slot per measured stream of requests (a worker process, or one
 * host thread of the `streams` strategy). Versioned: a worker refuses a
 * region whose magic or version it does not know.
 *
 * Protocol (all fields written with atomic stores, read with atomic loads):
 *  1. worker: state STARTING, creates its context and buffers, fills the
 *     "limits in effect" fields, runs its warm-up requests, then state READY.
 *     On failure: error_code/cuda_error/message, state FAILED, exit.
 *  2. parent: once every slot is READY (start barrier), writes the window
 *     t_warmup_start_ns <= t_measure_start_ns < t_measure_end_ns (absolute
 *     CLOCK_MONOTONIC; end is UINT64_MAX in requests mode) and then phase GO.
 *  3. worker: waits until t_warmup_start_ns, then RUNNING; runs requests
 *     back to back; records a request in its histogram iff it started at
 *     or after t_measure_start_ns and finished at or before
 *     t_measure_end_ns; stops when its clock passes the end, when it
 *     has recorded requests_per_worker requests (requests mode), or when phase
 *     becomes STOP; then DONE and exits 0.
 *  4. parent: phase STOP at the end or on any failure/interrupt; workers that
 *     do not exit within a grace period get SIGTERM, then SIGKILL.
 *
 * Open loop (load OPEN, version 2): the parent's dispatcher thread publishes
 * each arrival (its scheduled time and sequence number) at its scheduled
 * time into a ring in the region: one ring that every worker claims from
 * (dispatch SHARED) or one ring per slot (ROUND_ROBIN). Instead of running
 * requests back to back, a worker claims the next arrival, runs one request
 * for it and records latency from the scheduled time (queueing + service);
 * it keeps serving until STOP, so the backlog left at the window's end is
 * drained and counted, never dropped.
 *
 * Field by field, memory ordering, signals and exit statuses: docs/region.md.
 */
#ifndef GPUSHARE_REGION_H
#define GPUSHARE_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpushare/hist.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSHARE_REGION_MAGIC 0x3130485350475047ULL /* "GPGPSH01" little-endian */
#define GPUSHARE_REGION_VERSION 2u

enum gpushare_phase {
	GPUSHARE_PHASE_INIT = 0,
	GPUSHARE_PHASE_GO = 1,
	GPUSHARE_PHASE_STOP = 2,
};

enum gpushare_load {
	GPUSHARE_LOAD_CLOSED = 0,      /* each worker runs requests back to back */
	GPUSHARE_LOAD_OPEN = 1,        /* arrivals come from the rings */
};

enum gpushare_dispatch {
	GPUSHARE_DISPATCH_SHARED = 0,      /* one ring, any idle worker claims the next arrival */
	GPUSHARE_DISPATCH_ROUND_ROBIN = 1, /* ring i belongs to slot i; arrivals dealt in turn */
};

enum gpushare_slot_state {
	GPUSHARE_SLOT_EMPTY = 0,
	GPUSHARE_SLOT_STARTING = 1,
	GPUSHARE_SLOT_READY = 2,
	GPUSHARE_SLOT_RUNNING = 3,
	GPUSHARE_SLOT_DONE = 4,
	GPUSHARE_SLOT_FAILED = 5,
};

struct gpushare_slot {
	uint32_t state;                /* enum gpushare_slot_state */
	int32_t pid;
	int32_t error_code;            /* enum gpushare_error when FAILED */
	int32_t cuda_error;            /* cudaError_t / CUresult number, 0 if none */
	char message[256];             /* one line, NUL-terminated */
	/* Limits in effect, read back by the worker after init. */
	int32_t sm_count;              /* -1 unknown (spin) */
	int32_t device;                /* CUDA ordinal used */
	uint64_t mem_free_bytes;       /* cudaMemGetInfo after init */
	uint64_t mem_total_bytes;
	double thread_percentage;      /* CUDA_MPS_ACTIVE_THREAD_PERCENTAGE seen, -1 none */
	char mem_limit[64];            /* CUDA_MPS_PINNED_DEVICE_MEM_LIMIT seen, "" none */
	char device_name[96];
	/* Work description. */
	uint64_t items_per_request;    /* batch */
	double flops_per_request;      /* 0 when not meaningful */
	/* Measurement. */
	uint64_t requests;             /* recorded requests (inside the window) */
	uint64_t total_requests;       /* all completed requests, warm-up included */
	uint64_t errors;               /* requests that failed without ending the run */
	uint64_t t_first_start_ns;     /* start of the first recorded request */
	uint64_t t_last_end_ns;        /* end of the last recorded request */
	struct gpushare_hist hist;     /* latency; open loop: from the scheduled arrival */
	/* Open loop only (zero otherwise). */
	uint64_t completed_in_window;  /* requests that ended inside the window, whatever their arrival */
	uint64_t busy;                 /* 1 while a claimed arrival is being served */
	struct gpushare_hist queue_hist;   /* scheduled arrival to start of service */
	struct gpushare_hist service_hist; /* start of service to completion */
};

/* One arrival handed to the workers. */
struct gpushare_ring_entry {
	uint64_t t_sched_ns;           /* scheduled arrival, CLOCK_MONOTONIC */
	uint64_t seq;                  /* arrival number from 0, in schedule order */
};

/* A single-producer ring of arrivals: the dispatcher writes entry
 * head % entries, then publishes head + 1 (release); a consumer reads entry
 * tail % entries and claims it by a compare-and-swap of tail to tail + 1
 * (so several workers may share a ring). head and tail only grow. */
struct gpushare_ring {
	uint64_t head;                 /* entries published */
	uint32_t waiters;              /* consumers asleep in gpushare_ring_wait() */
	uint32_t wake;                 /* futex word: bumped by a publish that found waiters */
	uint8_t pad0[48];
	uint64_t tail;                 /* entries claimed */
	uint8_t pad1[56];
	struct gpushare_ring_entry entry[]; /* ring_entries of them */
};

struct gpushare_region_header {
	uint64_t magic;
	uint32_t version;
	uint32_t n_slots;
	uint64_t slot_size;            /* sizeof(struct gpushare_slot) of the writer */
	uint64_t slots_offset;         /* from the start of the region */
	uint32_t phase;                /* enum gpushare_phase */
	uint32_t reserved;
	uint64_t t_warmup_start_ns;
	uint64_t t_measure_start_ns;
	uint64_t t_measure_end_ns;
	uint64_t requests_per_worker;  /* 0: duration mode */
	uint64_t warmup_requests;      /* per worker, before READY */
	/* Version 2: open loop. */
	uint32_t load;                 /* enum gpushare_load */
	uint32_t dispatch;             /* enum gpushare_dispatch */
	uint32_t n_rings;              /* 0 (closed loop), 1 (shared) or n_slots (round-robin) */
	uint32_t ring_entries;         /* entries per ring, a power of two */
	uint64_t rings_offset;         /* from the start of the region; 0 without rings */
	uint64_t ring_size;            /* bytes per ring */
};

/* Exit statuses of gpushare-worker (the slot says more: error_code,
 * cuda_error, message). A worker killed by a signal has no slot update. */
enum gpushare_worker_exit {
	GPUSHARE_WORKER_EXIT_OK = 0,        /* every slot DONE */
	GPUSHARE_WORKER_EXIT_USAGE = 2,     /* bad command line, unknown workload or option */
	GPUSHARE_WORKER_EXIT_INIT = 3,      /* init failed (CUDA, 808, workload not built in) */
	GPUSHARE_WORKER_EXIT_REQUEST = 4,   /* a request failed */
	GPUSHARE_WORKER_EXIT_REGION = 5,    /* region unusable, slot out of range, no GO, parent gone */
	/* 128 + signal number: stopped by SIGTERM/SIGINT before it was done */
};

/* Bytes needed for n slots (and no rings). */
size_t gpushare_region_size(uint32_t n_slots);

/* Most entries a ring may have. */
#define GPUSHARE_RING_MAX_ENTRIES (1u << 20)

/* Create an anonymous shared region (memfd, sealed against shrinking) for
 * n slots; returns the mapping and its descriptor (close-on-exec cleared by
 * the launcher for the workers it spawns). */
int gpushare_region_create(uint32_t n_slots, struct gpushare_region_header **out, int *fd);

/* The same with n_rings rings of ring_entries entries each (a power of two,
 * at most GPUSHARE_RING_MAX_ENTRIES) after the slots, for the open loop;
 * load, dispatch are left for the caller to set before GO. */
int gpushare_region_create_rings(uint32_t n_slots, uint32_t n_rings, uint32_t ring_entries,
				 struct gpushare_region_header **out, int *fd);

/* Map a region from a descriptor and check magic, version and size. */
int gpushare_region_attach(int fd, struct gpushare_region_header **out);

void gpushare_region_unmap(struct gpushare_region_header *r);

struct gpushare_slot *gpushare_region_slot(struct gpushare_region_header *r, uint32_t i);

/* Ring i, NULL when out of range or the region has none. */
struct gpushare_ring *gpushare_region_ring(struct gpushare_region_header *r, uint32_t i);

/* The ring slot i claims its arrivals from (shared: ring 0; round-robin:
 * ring i); NULL in a closed-loop region. */
struct gpushare_ring *gpushare_region_ring_of_slot(struct gpushare_region_header *r, uint32_t slot);

/* Producer side (one thread only): publish an arrival. false when the ring
 * is full (entries arrivals published and not yet claimed); try again. */
bool gpushare_ring_push(struct gpushare_ring *q, uint32_t entries, uint64_t t_sched_ns, uint64_t seq);

/* The same in two steps, so that a producer can note the moment an arrival
 * became visible apart from the cost of waking a sleeping consumer:
 * GPUSHARE_RING_FULL, GPUSHARE_RING_PUBLISHED, or GPUSHARE_RING_WAKE
 * (published, and a consumer sleeps: call gpushare_ring_wake()). */
enum { GPUSHARE_RING_FULL = 0, GPUSHARE_RING_PUBLISHED = 1, GPUSHARE_RING_WAKE = 2 };
int gpushare_ring_publish(struct gpushare_ring *q, uint32_t entries, uint64_t t_sched_ns, uint64_t seq);
void gpushare_ring_wake(struct gpushare_ring *q);

/* Consumer side (any number of threads and processes): claim the oldest
 * published arrival into *e. false when the ring is empty. */
bool gpushare_ring_claim(struct gpushare_ring *q, uint32_t entries, struct gpushare_ring_entry *e);

/* Published and not yet claimed. */
uint64_t gpushare_ring_depth(const struct gpushare_ring *q);

/* Consumer side: sleep until an arrival is published or timeout_ns passed
 * (a futex on the shared `wake` word, so an idle worker burns no CPU and
 * wakes within the scheduler's latency). Returns at once when the ring is
 * not empty. Spurious returns are possible: claim, and wait again. */
void gpushare_ring_wait(struct gpushare_ring *q, uint64_t timeout_ns);

/* Writer side (a worker, or the relay of a command-mode worker): reset slot s
 * for a fresh start by process pid: state STARTING, no error, counters and
 * histogram zeroed, the limits in effect unknown, except the MPS limits the
 * worker's environment names (the values of CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
 * and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT; NULL when unset). */
void gpushare_slot_begin(struct gpushare_slot *s, int32_t pid, const char *thread_percentage_env,
			 const char *mem_limit_env, uint64_t items_per_request);

/* The window a writer measures in, read once after GO, and its counts. */
struct gpushare_slot_window {
	uint64_t t_warm, t_start, t_end;  /* as in the header */
	uint64_t limit;                   /* requests to record; 0: no limit */
	uint64_t recorded, total;         /* this writer's counts so far */
};

/* Read the window the parent published with GO (and the slot's count of
 * requests completed so far, warm-up included). */
void gpushare_slot_window_read(struct gpushare_slot_window *w, const struct gpushare_region_header *r,
			       const struct gpushare_slot *s);

/* The one rule for recording: count a request that ran from t0 to t1 among
 * all completed requests, and record it (histogram, requests, first start,
 * last end) iff it started at or after t_start, ended at or before t_end,
 * and fewer than `limit` were recorded. Returns whether it was recorded. */
bool gpushare_slot_record(struct gpushare_slot *s, struct gpushare_slot_window *w, uint64_t t0, uint64_t t1);

/* The open-loop rule: a request for the arrival scheduled at t_sched,
 * served from t0 to t1, counts among all completed requests; among
 * `completed_in_window` iff it ended inside the window; and is recorded
 * (latency t1 - t_sched in hist, t0 - t_sched in queue_hist, t1 - t0 in
 * service_hist, requests, first start, last end) iff its arrival was
 * scheduled inside the window, [t_start, t_end). Its end does not matter:
 * an arrival of the window served late still counts, with its whole wait.
 * Returns whether it was recorded. */
bool gpushare_slot_record_open(struct gpushare_slot *s, struct gpushare_slot_window *w, uint64_t t_sched,
			       uint64_t t0, uint64_t t1);

/* Whether the writer has recorded all the requests asked of it. */
bool gpushare_slot_window_full(const struct gpushare_slot_window *w);

/* Last words of a writer: for FAILED the error code, CUDA error and message
 * (one line, cut to fit), then the state (release store, so a reader that
 * sees the state sees the rest). */
void gpushare_slot_finish(struct gpushare_slot *s, uint32_t state, int32_t error_code, int32_t cuda_error,
			  const char *message);

#ifdef __cplusplus
}
#endif
#endif
