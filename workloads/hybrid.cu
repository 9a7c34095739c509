/*
 * The hybrid workload: a request with a CPU phase and then a GPU phase, like
 * a service that prepares its input on the host before running a model.
 *
 *  - CPU phase: the calling thread computes (an xorshift and floating-point
 *    recurrence that cannot be optimised away) for B·cpu-us, measured with
 *    the monotonic clock.
 *  - GPU phase, gpu-size = 0: a busy kernel, one block of 128 threads per
 *    multiprocessor the context sees, each block spinning on %globaltimer
 *    for B·gpu-us from its own start. The GPU time is wall time on the GPU:
 *    when the context is switched out (time-slicing) the timer runs on.
 *  - GPU phase, gpu-size = s > 0: an fp16 GEMM s×s×s (fp32 accumulate), B
 *    of them in one strided-batched call; a fixed amount of work instead of
 *    a fixed time. Counted flops: 2·s³·B (0 for the busy kernel).
 */
#include <limits.h>
#include <stdlib.h>

#include "common.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "worker.h"

struct hybrid {
	cudaStream_t stream;
	uint64_t cpu_ns, gpu_ns;  /* per request, batch included */
	int spin_blocks;
	/* gpu-size > 0 */
	int size;
	int batch;
	cublasHandle_t blas;
	__half *a, *b, *c;
	void *workspace;
	/* CPU phase state, carried between requests so the work stays live */
	uint64_t cpu_state;
	double cpu_acc;
};

__device__ static uint64_t global_ns(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* Every thread spins until ns have passed since its block started (the
 * volatile asm keeps the loop). */
__global__ static void spin_kernel(uint64_t ns)
{
	uint64_t start = global_ns();

	while (global_ns() - start < ns) {
	}
}

/* The CPU phase: busy computation until ns have passed. */
static void cpu_phase(struct hybrid *h, uint64_t ns)
{
	uint64_t start = gpushare_now_ns();
	uint64_t x = h->cpu_state;
	double acc = h->cpu_acc;

	do {
		for (int i = 0; i < 256; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			acc = acc * 0.999999 + (double)(x >> 40) * 1e-9;
		}
	} while (gpushare_now_ns() - start < ns);
	h->cpu_state = x;
	h->cpu_acc = acc;
}

static void hybrid_fini(void *state)
{
	struct hybrid *h = (struct hybrid *)state;

	if (!h)
		return;
	if (h->stream)
		cudaStreamSynchronize(h->stream);
	if (h->blas)
		cublasDestroy(h->blas);
	/* cudaFree(NULL) would (re)try to create the context: skip it */
	if (h->a)
		cudaFree(h->a);
	if (h->b)
		cudaFree(h->b);
	if (h->c)
		cudaFree(h->c);
	if (h->workspace)
		cudaFree(h->workspace);
	if (h->stream)
		cudaStreamDestroy(h->stream);
	free(h);
}

static int gpu_phase(struct hybrid *h, struct wl_error *err)
{
	const float alpha = 1.0f, beta = 0.0f;
	int s = h->size;

	if (s == 0) {
		spin_kernel<<<h->spin_blocks, 128, 0, h->stream>>>(h->gpu_ns);
		return wl_cuda_launch(err, "spin_kernel");
	}
	if (h->batch == 1)
		return wl_cublas(cublasGemmEx(h->blas, CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, &alpha, h->a,
					      CUDA_R_16F, s, h->b, CUDA_R_16F, s, &beta, h->c,
					      CUDA_R_16F, s, CUBLAS_COMPUTE_32F,
					      CUBLAS_GEMM_DEFAULT),
				 err, "cublasGemmEx(fp16, %dx%dx%d)", s, s, s);
	return wl_cublas(cublasGemmStridedBatchedEx(
				 h->blas, CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, &alpha, h->a, CUDA_R_16F,
				 s, (long long)s * s, h->b, CUDA_R_16F, s, (long long)s * s, &beta,
				 h->c, CUDA_R_16F, s, (long long)s * s, h->batch, CUBLAS_COMPUTE_32F,
				 CUBLAS_GEMM_DEFAULT),
			 err, "cublasGemmStridedBatchedEx(fp16, %dx%dx%d, batch %d)", s, s, s,
			 h->batch);
}

static int hybrid_run(struct hybrid *h, bool cpu, struct wl_error *err)
{
	int rc;

	if (cpu)
		cpu_phase(h, h->cpu_ns);
	if ((rc = gpu_phase(h, err)) != 0)
		return rc;
	return wl_cuda(cudaStreamSynchronize(h->stream), err, "cudaStreamSynchronize");
}

static int hybrid_request(void *state, struct wl_error *err)
{
	return hybrid_run((struct hybrid *)state, true, err);
}

static int alloc_half(__half **p, size_t elems, uint64_t seed, cudaStream_t stream,
		      struct wl_error *err)
{
	char sz[32];
	int rc;

	if ((rc = wl_cuda(cudaMalloc(p, elems * sizeof(__half)), err, "cudaMalloc(%s)",
			  wl_fmt_bytes(elems * sizeof(__half), sz, sizeof(sz)))) != 0)
		return rc;
	return wl_fill_f16(*p, elems, -1.0f, 1.0f, seed, stream, err);
}

static int hybrid_init(const struct gpushare_wl_params *p, int thread_index, void **state,
		       struct wl_info *info, struct wl_error *err)
{
	uint64_t cpu_ns = gpushare_wl_get_duration_ns(p, "cpu-us");
	uint64_t gpu_ns = gpushare_wl_get_duration_ns(p, "gpu-us");
	long size = gpushare_wl_get_int(p, "gpu-size");
	struct hybrid *h;
	char sz[32];
	int rc, sms = 0;

	*state = NULL;
	if (size < 0 || size > INT_MAX)
		return wl_fail(err, GPUSHARE_E_INVAL, "hybrid: bad gpu-size %ld", size);
	if (p->batch < 1 || p->batch > INT_MAX)
		return wl_fail(err, GPUSHARE_E_INVAL, "hybrid: bad batch %ld", p->batch);
	h = (struct hybrid *)calloc(1, sizeof(*h));
	if (!h)
		return wl_fail(err, GPUSHARE_E_NOMEM, "hybrid: out of host memory");
	h->batch = (int)p->batch;
	h->size = (int)size;
	h->cpu_ns = cpu_ns * (uint64_t)h->batch;
	h->gpu_ns = gpu_ns * (uint64_t)h->batch;
	h->cpu_state = 0x2545f4914f6cdd1dULL ^ (uint64_t)(unsigned)thread_index;
	h->cpu_acc = 1.0;

	if ((rc = wl_context_init(err)) != 0)
		goto fail;
	if ((rc = wl_cuda(cudaStreamCreateWithFlags(&h->stream, cudaStreamNonBlocking), err,
			  "cudaStreamCreateWithFlags")) != 0)
		goto fail;
	if ((rc = wl_device_info(info, err)) != 0)
		goto fail;
	sms = info->sm_count;
	h->spin_blocks = sms > 0 ? sms : 1;
	if (h->size > 0) {
		size_t elems = (size_t)h->size * (size_t)h->size * (size_t)h->batch;

		if ((rc = wl_cublas(cublasCreate(&h->blas), err, "cublasCreate")) != 0)
			goto fail;
		if ((rc = wl_cublas(cublasSetStream(h->blas, h->stream), err, "cublasSetStream")) !=
		    0)
			goto fail;
		if ((rc = wl_cuda(cudaMalloc(&h->workspace, WL_CUBLAS_WORKSPACE_BYTES), err,
				  "cudaMalloc(%s) (cuBLAS workspace)",
				  wl_fmt_bytes(WL_CUBLAS_WORKSPACE_BYTES, sz, sizeof(sz)))) != 0)
			goto fail;
		if ((rc = wl_cublas(cublasSetWorkspace(h->blas, h->workspace,
						       WL_CUBLAS_WORKSPACE_BYTES),
				    err, "cublasSetWorkspace")) != 0)
			goto fail;
		if ((rc = alloc_half(&h->a, elems, wl_seed(thread_index, 1), h->stream, err)) != 0 ||
		    (rc = alloc_half(&h->b, elems, wl_seed(thread_index, 2), h->stream, err)) != 0 ||
		    (rc = alloc_half(&h->c, elems, wl_seed(thread_index, 3), h->stream, err)) != 0)
			goto fail;
	}
	/* One untimed GPU phase (no CPU phase) loads the kernels. */
	if ((rc = hybrid_run(h, false, err)) != 0)
		goto fail;
	if ((rc = wl_device_info(info, err)) != 0)
		goto fail;
	info->flops_per_request =
		h->size > 0 ? 2.0 * (double)h->size * h->size * h->size * h->batch : 0.0;
	*state = h;
	return 0;
fail:
	hybrid_fini(h);
	return rc;
}

extern "C" const struct wl_ops wl_hybrid_ops = {
	"hybrid",
	hybrid_init,
	hybrid_request,
	hybrid_fini,
};
