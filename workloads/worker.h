/*
 * The interface between the worker harness (worker_main.c) and each
 * workload's implementation. C linkage; CUDA workloads implement it in .cu
 * files.
 *
 * Lifecycle, all on one host thread (the `streams` strategy runs several such
 * threads in one process, each with its own instance):
 *   init(params, thread_index, &state, info) -> request(state) ... -> fini(state)
 * thread_index is the stream's slot number in the run (0..N-1): unique per
 * worker process and per thread of the `streams` strategy.
 * request() runs one complete request: it returns only after the work is
 * finished (the GPU stream synchronised), so the harness can time it with the
 * monotonic clock around the call.
 */
#ifndef GPUSHARE_WORKER_H
#define GPUSHARE_WORKER_H

#include <stdint.h>

#include "gpushare/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a workload reports after init (copied into the worker's slot). */
struct wl_info {
	int sm_count;                /* multiprocessors the context sees; -1 for CPU-only */
	int device;                  /* CUDA ordinal */
	uint64_t mem_free_bytes;     /* after allocation of the workload's buffers */
	uint64_t mem_total_bytes;
	double flops_per_request;    /* 0 when not meaningful */
	char device_name[96];
};

/* Failure of init or request: an error code (enum gpushare_error), the CUDA
 * or cuBLAS status number (0 if none) and a one-line message naming the call
 * that failed ("cudaMalloc(1.0 GiB): out of memory"). */
struct wl_error {
	int code;
	int cuda_error;
	char message[256];
};

struct wl_ops {
	const char *name;            /* matches gpushare_workload_find() */
	int (*init)(const struct gpushare_wl_params *p, int thread_index, void **state,
		    struct wl_info *info, struct wl_error *err);
	int (*request)(void *state, struct wl_error *err);
	void (*fini)(void *state);
};

/* Implementations. The CUDA ones exist only when the build has CUDA; the
 * harness finds them through wl_ops_find(), generated from what was built. */
extern const struct wl_ops wl_spin_ops;
extern const struct wl_ops wl_matmul_ops;
extern const struct wl_ops wl_tiny_ops;
extern const struct wl_ops wl_hybrid_ops;
extern const struct wl_ops wl_transformer_ops;

/* NULL when the workload is not built into this worker. */
const struct wl_ops *wl_ops_find(const char *name);

#ifdef __cplusplus
}
#endif
#endif
