/*
 * The matmul workload: one request is one cuBLAS GEMM C = A·B of m×k by k×n
 * (column-major, no transposes), or with batch B > 1 one strided-batched
 * GEMM of B such products. fp16 and bf16 inputs accumulate in fp32 and write
 * their own type; fp32 uses plain fp32 math and tf32 the TF32 tensor cores
 * on fp32 data. Counted flops: 2·m·n·k·B.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "gpushare/gpushare.h"
#include "worker.h"

struct matmul {
	cudaStream_t stream;
	cublasHandle_t blas;
	void *a, *b, *c, *workspace;
	int m, n, k;
	int batch;
	cudaDataType_t in_type, out_type;
	cublasComputeType_t compute;
	const char *dtype;
};

static void matmul_fini(void *state)
{
	struct matmul *mm = (struct matmul *)state;

	if (!mm)
		return;
	if (mm->stream)
		cudaStreamSynchronize(mm->stream);
	if (mm->blas)
		cublasDestroy(mm->blas);
	/* cudaFree(NULL) would (re)try to create the context: skip it */
	if (mm->a)
		cudaFree(mm->a);
	if (mm->b)
		cudaFree(mm->b);
	if (mm->c)
		cudaFree(mm->c);
	if (mm->workspace)
		cudaFree(mm->workspace);
	if (mm->stream)
		cudaStreamDestroy(mm->stream);
	free(mm);
}

/* Enqueue the GEMM on the handle's stream. */
static int matmul_enqueue(struct matmul *mm, struct wl_error *err)
{
	const float alpha = 1.0f, beta = 0.0f;

	if (mm->batch == 1)
		return wl_cublas(cublasGemmEx(mm->blas, CUBLAS_OP_N, CUBLAS_OP_N, mm->m, mm->n, mm->k,
					      &alpha, mm->a, mm->in_type, mm->m, mm->b, mm->in_type,
					      mm->k, &beta, mm->c, mm->out_type, mm->m, mm->compute,
					      CUBLAS_GEMM_DEFAULT),
				 err, "cublasGemmEx(%s, %dx%dx%d)", mm->dtype, mm->m, mm->n, mm->k);
	return wl_cublas(cublasGemmStridedBatchedEx(
				 mm->blas, CUBLAS_OP_N, CUBLAS_OP_N, mm->m, mm->n, mm->k, &alpha,
				 mm->a, mm->in_type, mm->m, (long long)mm->m * mm->k, mm->b,
				 mm->in_type, mm->k, (long long)mm->k * mm->n, &beta, mm->c,
				 mm->out_type, mm->m, (long long)mm->m * mm->n, mm->batch,
				 mm->compute, CUBLAS_GEMM_DEFAULT),
			 err, "cublasGemmStridedBatchedEx(%s, %dx%dx%d, batch %d)", mm->dtype, mm->m,
			 mm->n, mm->k, mm->batch);
}

static int matmul_request(void *state, struct wl_error *err)
{
	struct matmul *mm = (struct matmul *)state;
	int rc;

	if ((rc = matmul_enqueue(mm, err)) != 0)
		return rc;
	return wl_cuda(cudaStreamSynchronize(mm->stream), err, "cudaStreamSynchronize");
}

/* Allocate and fill one operand of `elems` elements of the input type (or
 * the output type when `out`). */
static int alloc_operand(struct matmul *mm, void **p, size_t elems, bool out, uint64_t seed,
			 struct wl_error *err)
{
	cudaDataType_t t = out ? mm->out_type : mm->in_type;
	size_t esize = (t == CUDA_R_32F) ? 4 : 2;
	char sz[32];
	int rc;

	if ((rc = wl_cuda(cudaMalloc(p, elems * esize), err, "cudaMalloc(%s)",
			  wl_fmt_bytes(elems * esize, sz, sizeof(sz)))) != 0)
		return rc;
	switch (t) {
	case CUDA_R_32F:
		return wl_fill_f32((float *)*p, elems, -1.0f, 1.0f, seed, mm->stream, err);
	case CUDA_R_16BF:
		return wl_fill_bf16((__nv_bfloat16 *)*p, elems, -1.0f, 1.0f, seed, mm->stream, err);
	default:
		return wl_fill_f16((__half *)*p, elems, -1.0f, 1.0f, seed, mm->stream, err);
	}
}

static int matmul_init(const struct gpushare_wl_params *p, int thread_index, void **state,
		       struct wl_info *info, struct wl_error *err)
{
	struct matmul *mm;
	const char *dtype = gpushare_wl_get(p, "dtype");
	long size = gpushare_wl_get_int(p, "size");
	long m = gpushare_wl_get_int(p, "m"), n = gpushare_wl_get_int(p, "n");
	long k = gpushare_wl_get_int(p, "k");
	char sz[32];
	int rc;

	*state = NULL;
	m = m > 0 ? m : size;
	n = n > 0 ? n : size;
	k = k > 0 ? k : size;
	if (m <= 0 || n <= 0 || k <= 0 || m > INT_MAX || n > INT_MAX || k > INT_MAX)
		return wl_fail(err, GPUSHARE_E_INVAL, "matmul: bad shape %ldx%ldx%ld", m, n, k);
	if (p->batch < 1 || p->batch > INT_MAX)
		return wl_fail(err, GPUSHARE_E_INVAL, "matmul: bad batch %ld", p->batch);

	mm = (struct matmul *)calloc(1, sizeof(*mm));
	if (!mm)
		return wl_fail(err, GPUSHARE_E_NOMEM, "matmul: out of host memory");
	mm->m = (int)m;
	mm->n = (int)n;
	mm->k = (int)k;
	mm->batch = (int)p->batch;
	if (strcmp(dtype, "bf16") == 0) {
		mm->in_type = mm->out_type = CUDA_R_16BF;
		mm->compute = CUBLAS_COMPUTE_32F;
		mm->dtype = "bf16";
	} else if (strcmp(dtype, "fp32") == 0) {
		mm->in_type = mm->out_type = CUDA_R_32F;
		mm->compute = CUBLAS_COMPUTE_32F;
		mm->dtype = "fp32";
	} else if (strcmp(dtype, "tf32") == 0) {
		mm->in_type = mm->out_type = CUDA_R_32F;
		mm->compute = CUBLAS_COMPUTE_32F_FAST_TF32;
		mm->dtype = "tf32";
	} else if (strcmp(dtype, "fp16") == 0) {
		mm->in_type = mm->out_type = CUDA_R_16F;
		mm->compute = CUBLAS_COMPUTE_32F;
		mm->dtype = "fp16";
	} else {
		free(mm);
		return wl_fail(err, GPUSHARE_E_INVAL, "matmul: unknown dtype '%s'", dtype);
	}

	if ((rc = wl_context_init(err)) != 0)
		goto fail;
	if ((rc = wl_cuda(cudaStreamCreateWithFlags(&mm->stream, cudaStreamNonBlocking), err,
			  "cudaStreamCreateWithFlags")) != 0)
		goto fail;
	if ((rc = wl_cublas(cublasCreate(&mm->blas), err, "cublasCreate")) != 0)
		goto fail;
	if ((rc = wl_cublas(cublasSetStream(mm->blas, mm->stream), err, "cublasSetStream")) != 0)
		goto fail;
	if ((rc = wl_cuda(cudaMalloc(&mm->workspace, WL_CUBLAS_WORKSPACE_BYTES), err,
			  "cudaMalloc(%s) (cuBLAS workspace)",
			  wl_fmt_bytes(WL_CUBLAS_WORKSPACE_BYTES, sz, sizeof(sz)))) != 0)
		goto fail;
	if ((rc = wl_cublas(cublasSetWorkspace(mm->blas, mm->workspace, WL_CUBLAS_WORKSPACE_BYTES),
			    err, "cublasSetWorkspace")) != 0)
		goto fail;
	if ((rc = alloc_operand(mm, &mm->a, (size_t)m * (size_t)k * (size_t)mm->batch, false,
				wl_seed(thread_index, 1), err)) != 0)
		goto fail;
	if ((rc = alloc_operand(mm, &mm->b, (size_t)k * (size_t)n * (size_t)mm->batch, false,
				wl_seed(thread_index, 2), err)) != 0)
		goto fail;
	if ((rc = alloc_operand(mm, &mm->c, (size_t)m * (size_t)n * (size_t)mm->batch, true,
				wl_seed(thread_index, 3), err)) != 0)
		goto fail;
	/* One untimed GEMM: loads the kernels and surfaces an unsupported
	 * combination now rather than in the first request. */
	if ((rc = matmul_request(mm, err)) != 0)
		goto fail;
	if ((rc = wl_device_info(info, err)) != 0)
		goto fail;
	info->flops_per_request = 2.0 * (double)m * (double)n * (double)k * (double)mm->batch;
	*state = mm;
	return 0;
fail:
	matmul_fini(mm);
	return rc;
}

extern "C" const struct wl_ops wl_matmul_ops = {
	"matmul",
	matmul_init,
	matmul_request,
	matmul_fini,
};
