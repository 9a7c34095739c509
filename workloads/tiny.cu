/*
 * The tiny workload: launch-bound GPU work. One request is a chain of
 * `kernels` short kernels on the instance's stream, then a synchronise. Each
 * kernel runs threads·B threads (blocks of `threads`, so one block at batch
 * 1), each doing `iters` fused multiply-adds on its own element of a buffer
 * that the next kernel reads again. With iters = 0 a kernel only loads and
 * stores its element: the cost is the launch itself. Counted flops:
 * 2·iters·threads·B·kernels.
 */
#include <stdint.h>
#include <stdlib.h>

#include "common.h"
#include "gpushare/gpushare.h"
#include "worker.h"

struct tiny {
	cudaStream_t stream;
	float *buf;
	int kernels, threads, blocks, iters;
	int elems;
	long fault_after;  /* request number that faults (stream 0 only); 0 never */
	long requests;     /* requests started, the untimed one of init included */
};

/* x <- x·0.999 + 0.001, `iters` times: stays bounded and non-zero for any
 * start in (-1, 1). The loop is not optimised away: x is stored. */
__global__ static void tiny_kernel(float *x, int n, int iters)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		float v = x[i];
		for (int it = 0; it < iters; it++)
			v = fmaf(v, 0.999f, 0.001f);
		x[i] = v;
	}
}

/* A write through an invalid pointer: CUDA error 700 (illegal address),
 * which MPS delivers to every client on the GPU. */
__global__ static void fault_kernel(float *bad)
{
	bad[threadIdx.x] = 1.0f;
}

static void tiny_fini(void *state)
{
	struct tiny *t = (struct tiny *)state;

	if (!t)
		return;
	if (t->stream)
		cudaStreamSynchronize(t->stream);
	if (t->buf)
		cudaFree(t->buf);
	if (t->stream)
		cudaStreamDestroy(t->stream);
	free(t);
}

static int tiny_request(void *state, struct wl_error *err)
{
	struct tiny *t = (struct tiny *)state;
	int rc;

	if (t->fault_after && ++t->requests == t->fault_after) {
		fault_kernel<<<1, 32, 0, t->stream>>>((float *)(uintptr_t)0x10);
		if ((rc = wl_cuda_launch(err, "fault_kernel")) != 0)
			return rc;
	}
	for (int i = 0; i < t->kernels; i++) {
		tiny_kernel<<<t->blocks, t->threads, 0, t->stream>>>(t->buf, t->elems, t->iters);
		if ((rc = wl_cuda_launch(err, "tiny_kernel")) != 0)
			return rc;
	}
	return wl_cuda(cudaStreamSynchronize(t->stream), err, "cudaStreamSynchronize");
}

static int tiny_init(const struct gpushare_wl_params *p, int thread_index, void **state,
		     struct wl_info *info, struct wl_error *err)
{
	long kernels = gpushare_wl_get_int(p, "kernels");
	long threads = gpushare_wl_get_int(p, "threads");
	long iters = gpushare_wl_get_int(p, "iters");
	long fault_after = gpushare_wl_get_int(p, "fault-after");
	struct tiny *t;
	int rc;

	*state = NULL;
	if (kernels < 1 || kernels > 1000000)
		return wl_fail(err, GPUSHARE_E_INVAL, "tiny: kernels %ld out of range [1, 1000000]",
			       kernels);
	if (threads < 1 || threads > 1024)
		return wl_fail(err, GPUSHARE_E_INVAL, "tiny: threads %ld out of range [1, 1024]",
			       threads);
	if (iters < 0 || iters > 100000000)
		return wl_fail(err, GPUSHARE_E_INVAL, "tiny: iters %ld out of range", iters);
	if (p->batch < 1 || p->batch > (1L << 20))
		return wl_fail(err, GPUSHARE_E_INVAL, "tiny: batch %ld out of range [1, %ld]",
			       p->batch, 1L << 20);

	t = (struct tiny *)calloc(1, sizeof(*t));
	if (!t)
		return wl_fail(err, GPUSHARE_E_NOMEM, "tiny: out of host memory");
	t->kernels = (int)kernels;
	t->threads = (int)threads;
	t->iters = (int)iters;
	t->blocks = (int)p->batch;
	t->fault_after = thread_index == 0 ? fault_after : 0;
	t->elems = t->threads * t->blocks;

	if ((rc = wl_context_init(err)) != 0)
		goto fail;
	if ((rc = wl_cuda(cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking), err,
			  "cudaStreamCreateWithFlags")) != 0)
		goto fail;
	if ((rc = wl_cuda(cudaMalloc(&t->buf, (size_t)t->elems * sizeof(float)), err,
			  "cudaMalloc(%zu B)", (size_t)t->elems * sizeof(float))) != 0)
		goto fail;
	if ((rc = wl_fill_f32(t->buf, (size_t)t->elems, -1.0f, 1.0f, wl_seed(thread_index, 1),
			      t->stream, err)) != 0)
		goto fail;
	/* One untimed request loads the kernel (lazy module loading). */
	if ((rc = tiny_request(t, err)) != 0)
		goto fail;
	if ((rc = wl_device_info(info, err)) != 0)
		goto fail;
	info->flops_per_request = 2.0 * (double)t->iters * (double)t->elems * (double)t->kernels;
	*state = t;
	return 0;
fail:
	tiny_fini(t);
	return rc;
}

extern "C" const struct wl_ops wl_tiny_ops = {
	"tiny",
	tiny_init,
	tiny_request,
	tiny_fini,
};
