/*
 * Timing a process's launches with CUDA events inside one sampling window,
 * CUPTI's callback API attached for that window only (docs/accounting.md,
 * "Timing: launches or kernels"). Attached, CUPTI slows every launch of the
 * process (8% of the transformer workload's rate on an H200), so it is
 * detached (cuptiFinalize, at the exit of the first launch after the window
 * closes) until the next window.
 *
 * Used by the sampler of account_inject.c, from one thread: open, wait,
 * close, collect, then wait until detached before the next open.
 */
#ifndef GPUSHARE_INJECT_LAUNCH_TIMING_H
#define GPUSHARE_INJECT_LAUNCH_TIMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_interval {
	uint64_t start, end;
};

/* The union of n intervals (sorted in place): the time at least one ran. */
uint64_t gs_interval_union_ns(struct gs_interval *iv, size_t n);

/* One device's launches in a window. */
struct gs_launch_device {
	uint32_t device;   /* the CUdevice of their context */
	uint64_t busy_ns;  /* union of the launches' spans, at most the window */
	uint64_t span_ns;  /* sum of the spans */
	uint64_t launches; /* launches timed */
};

/* Look up what it needs in CUPTI's and the driver's handles; false when
 * one is missing (the mode is then not available). */
bool gs_launch_load(void *cupti_dl, void *cuda_dl);

/* Attach CUPTI and time the launches from now on; false when CUPTI refused. */
bool gs_launch_open(void);

/* Time no more launches; CUPTI detaches at the exit of the next launch
 * (at once when none is under way in the process's threads is not known, so
 * it waits for one: an idle process pays nothing while attached). Returns
 * the window's wall time, ns (shorter than asked when the launches to time
 * ran out first). */
uint64_t gs_launch_close(void);

/* Whether CUPTI is detached (the next window may open). */
bool gs_launch_detached(void);

/* The closed window's figures per device into out (at most max), after
 * waiting for its launches' end events; the count. window_ns caps busy. */
size_t gs_launch_collect(uint64_t window_ns, struct gs_launch_device *out, size_t max);

#endif
