/*
 * Helpers shared by the CUDA workloads (matmul, tiny, hybrid, transformer):
 * turning CUDA and cuBLAS statuses into a struct wl_error that names the
 * failing call, filling struct wl_info from the device, and filling device
 * buffers with random (never zero) values.
 *
 * Only .cu files include this header.
 */
#ifndef GPUSHARE_WL_COMMON_H
#define GPUSHARE_WL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "worker.h"

/* The enum gpushare_error code for a CUDA runtime error:
 *   cudaErrorMpsMaxClientsReached (808)            -> GPUSHARE_E_MPS_MAX_CLIENTS
 *   no device, no or stub driver (100, 35, 34)     -> GPUSHARE_E_NO_DRIVER
 *   devices unavailable (46: exclusive/prohibited) -> GPUSHARE_E_BUSY
 *   everything else (700-class faults, OOM, MPS)   -> GPUSHARE_E_CUDA */
int wl_cuda_code(cudaError_t e);

/* Check a CUDA status. On success returns 0 and leaves err alone. On failure
 * fills err (code from wl_cuda_code(), cuda_error = e, message
 * "<call>: <description> (<cudaErrorName>)" where <call> is formatted from
 * fmt) and returns err->code (negative). fmt is formatted only on failure. */
int wl_cuda(cudaError_t e, struct wl_error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The same after a kernel launch: checks cudaGetLastError(). */
int wl_cuda_launch(struct wl_error *err, const char *kernel);

/* The same for a cuBLAS status (cuda_error = the cublasStatus_t value;
 * code GPUSHARE_E_CUDA, or GPUSHARE_E_UNSUPPORTED for NOT_SUPPORTED and
 * ARCH_MISMATCH). */
int wl_cublas(cublasStatus_t s, struct wl_error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Fill err with `code` and a formatted message; returns code. */
int wl_fail(struct wl_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Create (or attach to) the CUDA context of the current device with
 * cudaFree(0), so that a refused context (MPS client limit, no device) is
 * reported as such before anything else is tried. */
int wl_context_init(struct wl_error *err);

/* Fill info from the current device: ordinal, multiprocessors the context
 * sees (cudaDevAttrMultiProcessorCount, lowered by an MPS thread-percentage
 * cap), name and cudaMemGetInfo free/total. Call after allocating the
 * workload's buffers. flops_per_request is left alone. */
int wl_device_info(struct wl_info *info, struct wl_error *err);

/* Fill n elements with uniform values in [lo, hi) from a hash of (seed,
 * index), on `stream`. Values exactly zero are replaced by lo/2 so that no
 * element is zero (pass lo < 0 < hi or 0 < lo < hi). */
int wl_fill_f32(float *p, size_t n, float lo, float hi, uint64_t seed, cudaStream_t stream,
		struct wl_error *err);
int wl_fill_f16(__half *p, size_t n, float lo, float hi, uint64_t seed, cudaStream_t stream,
		struct wl_error *err);
int wl_fill_bf16(__nv_bfloat16 *p, size_t n, float lo, float hi, uint64_t seed,
		 cudaStream_t stream, struct wl_error *err);

/* "1.5 GiB", "12.0 MiB", "512 B": for allocation messages. */
const char *wl_fmt_bytes(size_t bytes, char *buf, size_t len);

/* A seed for instance thread_index of this process, different per buffer. */
uint64_t wl_seed(int thread_index, int buffer);

/* The number of bytes to hand to cublasSetWorkspace(): 32 MiB, enough for
 * cuBLAS's Hopper kernels. Set explicitly so that cuBLAS never allocates
 * during a request or a graph capture. */
#define WL_CUBLAS_WORKSPACE_BYTES ((size_t)32 << 20)

/* ---- transformer checks (transformer.cu), for tests/gpu/transformer_check ---- */

/* Build a transformer of this shape (random weights, graph captured), run it
 * as a graph and eagerly, and compare with a CPU reference computed in
 * fp32/fp64 with the GPU's fp16 storage roundings. rel_err = max |gpu - ref|
 * / max |ref| over the output (infinite if the GPU output is not finite);
 * graph_diff = max |graph - eager|. Slow on the CPU: keep shapes small. */
extern "C" int wl_transformer_selfcheck(int layers, int hidden, int heads, int seq, int batch,
					double *rel_err, double *graph_diff, struct wl_error *err);

/* Mean GPU time of one synchronised request (CUDA events over `iters`
 * requests after 10 warm-ups) and the flops counted per request. */
extern "C" int wl_transformer_time(int layers, int hidden, int heads, int seq, int batch,
				   bool graph, int iters, double *seconds, double *flops,
				   struct wl_error *err);

#endif
