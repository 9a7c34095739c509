/*
 * bare_matmul: the baseline for the matmul workload. The same cuBLAS GEMM
 * (column-major m×k by k×n, no transposes; fp16/bf16 with fp32 accumulate,
 * fp32, or tf32) in a plain loop of one GEMM + cudaStreamSynchronize per
 * request, exactly what one request of `gpushare-worker` does, without the
 * harness around it. Prints one JSON line:
 *
 *   {"bench":"bare_matmul","device":"...","m":1024,"n":1024,"k":1024,
 *    "batch":1,"dtype":"fp16","iters":2000,"requests_per_second":...,
 *    "mean_latency_seconds":...,"gpu_seconds_per_request":...,
 *    "tflops":...}
 *
 * requests_per_second and tflops come from the host monotonic clock over
 * the timed loop; gpu_seconds_per_request from CUDA events around it.
 *
 * usage: bare_matmul [--size N] [--m M] [--n N] [--k K] [--batch B]
 *                    [--dtype fp16|bf16|fp32|tf32] [--iters N] [--warmup N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

static int cuda_ok(cudaError_t e, const char *call)
{
	if (e == cudaSuccess)
		return 1;
	fprintf(stderr, "bare_matmul: %s: %s (%s)\n", call, cudaGetErrorString(e),
		cudaGetErrorName(e));
	return 0;
}

static int blas_ok(cublasStatus_t s, const char *call)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return 1;
	fprintf(stderr, "bare_matmul: %s: %s\n", call, cublasGetStatusString(s));
	return 0;
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Uniform values in [-1, 1), never zero, from a hash of the index. */
template <typename T> __global__ static void fill_kernel(T *p, size_t n, unsigned seed)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
		unsigned h = (unsigned)i * 2654435761u ^ seed;
		h ^= h >> 16;
		h *= 0x7feb352du;
		h ^= h >> 15;
		h *= 0x846ca68bu;
		h ^= h >> 16;
		float v = ((float)(h >> 8) + 0.5f) * (2.0f / 16777216.0f) - 1.0f;
		p[i] = (T)v;
	}
}

static long arg_long(const char *s, const char *name)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*end || v < 0) {
		fprintf(stderr, "bare_matmul: bad value '%s' for %s\n", s, name);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long size = 1024, m = 0, n = 0, k = 0, batch = 1, iters = 2000, warmup = 50;
	const char *dtype = "fp16";
	cudaDataType_t type = CUDA_R_16F;
	cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
	size_t esize = 2;
	cudaStream_t stream;
	cublasHandle_t blas;
	cudaEvent_t e0, e1;
	void *a, *b, *c, *ws;
	const float alpha = 1.0f, beta = 0.0f;
	struct cudaDeviceProp prop;
	float gpu_ms = 0.0f;
	double t0 = 0.0, t1, host_s, flops;
	cJSON *o;
	char *line;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			fprintf(stderr, "bare_matmul: %s needs a value\n", argv[i]);
			return 2;
		}
		if (strcmp(argv[i], "--size") == 0)
			size = arg_long(v, "--size");
		else if (strcmp(argv[i], "--m") == 0)
			m = arg_long(v, "--m");
		else if (strcmp(argv[i], "--n") == 0)
			n = arg_long(v, "--n");
		else if (strcmp(argv[i], "--k") == 0)
			k = arg_long(v, "--k");
		else if (strcmp(argv[i], "--batch") == 0)
			batch = arg_long(v, "--batch");
		else if (strcmp(argv[i], "--iters") == 0)
			iters = arg_long(v, "--iters");
		else if (strcmp(argv[i], "--warmup") == 0)
			warmup = arg_long(v, "--warmup");
		else if (strcmp(argv[i], "--dtype") == 0)
			dtype = v;
		else {
			fprintf(stderr, "usage: bare_matmul [--size N] [--m M] [--n N] [--k K] "
					"[--batch B] [--dtype fp16|bf16|fp32|tf32] [--iters N] "
					"[--warmup N]\n");
			return 2;
		}
		i++;
	}
	m = m ? m : size;
	n = n ? n : size;
	k = k ? k : size;
	if (m < 1 || n < 1 || k < 1 || batch < 1 || iters < 1 || m > (1L << 30) ||
	    n > (1L << 30) || k > (1L << 30) || batch > (1L << 30)) {
		fprintf(stderr, "bare_matmul: bad shape or counts\n");
		return 2;
	}
	if (strcmp(dtype, "bf16") == 0) {
		type = CUDA_R_16BF;
	} else if (strcmp(dtype, "fp32") == 0) {
		type = CUDA_R_32F;
		esize = 4;
	} else if (strcmp(dtype, "tf32") == 0) {
		type = CUDA_R_32F;
		esize = 4;
		compute = CUBLAS_COMPUTE_32F_FAST_TF32;
	} else if (strcmp(dtype, "fp16") != 0) {
		fprintf(stderr, "bare_matmul: unknown dtype '%s'\n", dtype);
		return 2;
	}

	size_t na = (size_t)m * k * batch, nb = (size_t)k * n * batch, nc = (size_t)m * n * batch;
	if (!cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties") ||
	    !cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate") ||
	    !cuda_ok(cudaMalloc(&a, na * esize), "cudaMalloc(A)") ||
	    !cuda_ok(cudaMalloc(&b, nb * esize), "cudaMalloc(B)") ||
	    !cuda_ok(cudaMalloc(&c, nc * esize), "cudaMalloc(C)") ||
	    !cuda_ok(cudaMalloc(&ws, (size_t)32 << 20), "cudaMalloc(workspace)") ||
	    !cuda_ok(cudaEventCreate(&e0), "cudaEventCreate") ||
	    !cuda_ok(cudaEventCreate(&e1), "cudaEventCreate") ||
	    !blas_ok(cublasCreate(&blas), "cublasCreate") ||
	    !blas_ok(cublasSetStream(blas, stream), "cublasSetStream") ||
	    !blas_ok(cublasSetWorkspace(blas, ws, (size_t)32 << 20), "cublasSetWorkspace"))
		return 1;
	void *bufs[3] = {a, b, c};
	size_t counts[3] = {na, nb, nc};
	for (int i = 0; i < 3; i++) {
		if (type == CUDA_R_16F)
			fill_kernel<__half><<<1024, 256, 0, stream>>>((__half *)bufs[i], counts[i], i + 1u);
		else if (type == CUDA_R_16BF)
			fill_kernel<__nv_bfloat16>
				<<<1024, 256, 0, stream>>>((__nv_bfloat16 *)bufs[i], counts[i], i + 1u);
		else
			fill_kernel<float><<<1024, 256, 0, stream>>>((float *)bufs[i], counts[i], i + 1u);
		if (!cuda_ok(cudaGetLastError(), "launch of fill_kernel"))
			return 1;
	}

	for (long it = -warmup; it < iters; it++) {
		cublasStatus_t s;

		if (it == 0) {
			t0 = now_seconds();
			if (!cuda_ok(cudaEventRecord(e0, stream), "cudaEventRecord"))
				return 1;
		}
		if (batch == 1)
			s = cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)m, (int)n, (int)k, &alpha,
					 a, type, (int)m, b, type, (int)k, &beta, c, type, (int)m,
					 compute, CUBLAS_GEMM_DEFAULT);
		else
			s = cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)m, (int)n,
						       (int)k, &alpha, a, type, (int)m,
						       (long long)m * k, b, type, (int)k,
						       (long long)k * n, &beta, c, type, (int)m,
						       (long long)m * n, (int)batch, compute,
						       CUBLAS_GEMM_DEFAULT);
		if (!blas_ok(s, "GEMM") ||
		    !cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize"))
			return 1;
	}
	t1 = now_seconds();
	if (!cuda_ok(cudaEventRecord(e1, stream), "cudaEventRecord") ||
	    !cuda_ok(cudaEventSynchronize(e1), "cudaEventSynchronize") ||
	    !cuda_ok(cudaEventElapsedTime(&gpu_ms, e0, e1), "cudaEventElapsedTime"))
		return 1;
	host_s = t1 - t0;
	flops = 2.0 * (double)m * (double)n * (double)k * (double)batch;

	o = cJSON_CreateObject();
	if (!o)
		return 1;
	cJSON_AddStringToObject(o, "bench", "bare_matmul");
	cJSON_AddStringToObject(o, "device", prop.name);
	cJSON_AddNumberToObject(o, "m", (double)m);
	cJSON_AddNumberToObject(o, "n", (double)n);
	cJSON_AddNumberToObject(o, "k", (double)k);
	cJSON_AddNumberToObject(o, "batch", (double)batch);
	cJSON_AddStringToObject(o, "dtype", dtype);
	cJSON_AddNumberToObject(o, "iters", (double)iters);
	cJSON_AddNumberToObject(o, "requests_per_second", (double)iters / host_s);
	cJSON_AddNumberToObject(o, "mean_latency_seconds", host_s / (double)iters);
	cJSON_AddNumberToObject(o, "gpu_seconds_per_request", gpu_ms * 1e-3 / (double)iters);
	cJSON_AddNumberToObject(o, "tflops", flops * (double)iters / host_s * 1e-12);
	line = cJSON_PrintUnformatted(o);
	if (!line || printf("%s\n", line) < 0 || fflush(stdout) != 0)
		return 1;
	free(line);
	cJSON_Delete(o);
	cublasDestroy(blas);
	cudaFree(a);
	cudaFree(b);
	cudaFree(c);
	cudaFree(ws);
	cudaStreamDestroy(stream);
	return 0;
}
