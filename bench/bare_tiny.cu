/*
 * bare_tiny: the baseline for the tiny workload. The same chain of
 * `kernels` short kernels (threads·batch threads in blocks of `threads`,
 * each doing `iters` FMAs on its element) followed by one
 * cudaStreamSynchronize per request, in a plain loop without the harness.
 * Prints one JSON line:
 *
 *   {"bench":"bare_tiny","device":"...","kernels":32,"threads":128,
 *    "iters_per_thread":0,"batch":1,"iters":5000,"requests_per_second":...,
 *    "mean_latency_seconds":...,"gpu_seconds_per_request":...,
 *    "kernels_per_second":...}
 *
 * usage: bare_tiny [--kernels N] [--threads N] [--work N] [--batch B]
 *                  [--iters N] [--warmup N]
 * (--work is the workload's `iters` option: FMAs per thread per kernel.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <cuda_runtime.h>

static int cuda_ok(cudaError_t e, const char *call)
{
	if (e == cudaSuccess)
		return 1;
	fprintf(stderr, "bare_tiny: %s: %s (%s)\n", call, cudaGetErrorString(e),
		cudaGetErrorName(e));
	return 0;
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Same body as workloads/tiny.cu. */
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

__global__ static void init_kernel(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = 0.5f + 0.25f * (float)(i % 7);
}

static long arg_long(const char *s, const char *name)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*end || v < 0) {
		fprintf(stderr, "bare_tiny: bad value '%s' for %s\n", s, name);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long kernels = 32, threads = 128, work = 0, batch = 1, iters = 5000, warmup = 100;
	cudaStream_t stream;
	cudaEvent_t e0, e1;
	struct cudaDeviceProp prop;
	float *buf;
	float gpu_ms = 0.0f;
	double t0 = 0.0, t1, host_s;
	int elems;
	cJSON *o;
	char *line;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			fprintf(stderr, "bare_tiny: %s needs a value\n", argv[i]);
			return 2;
		}
		if (strcmp(argv[i], "--kernels") == 0)
			kernels = arg_long(v, "--kernels");
		else if (strcmp(argv[i], "--threads") == 0)
			threads = arg_long(v, "--threads");
		else if (strcmp(argv[i], "--work") == 0)
			work = arg_long(v, "--work");
		else if (strcmp(argv[i], "--batch") == 0)
			batch = arg_long(v, "--batch");
		else if (strcmp(argv[i], "--iters") == 0)
			iters = arg_long(v, "--iters");
		else if (strcmp(argv[i], "--warmup") == 0)
			warmup = arg_long(v, "--warmup");
		else {
			fprintf(stderr, "usage: bare_tiny [--kernels N] [--threads N] [--work N] "
					"[--batch B] [--iters N] [--warmup N]\n");
			return 2;
		}
		i++;
	}
	if (kernels < 1 || threads < 1 || threads > 1024 || batch < 1 || batch > (1L << 20) ||
	    iters < 1 || work > 100000000) {
		fprintf(stderr, "bare_tiny: bad counts\n");
		return 2;
	}
	elems = (int)(threads * batch);
	if (!cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties") ||
	    !cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate") ||
	    !cuda_ok(cudaMalloc(&buf, (size_t)elems * sizeof(float)), "cudaMalloc") ||
	    !cuda_ok(cudaEventCreate(&e0), "cudaEventCreate") ||
	    !cuda_ok(cudaEventCreate(&e1), "cudaEventCreate"))
		return 1;
	init_kernel<<<(elems + 255) / 256, 256, 0, stream>>>(buf, elems);
	if (!cuda_ok(cudaGetLastError(), "launch of init_kernel"))
		return 1;

	for (long it = -warmup; it < iters; it++) {
		if (it == 0) {
			t0 = now_seconds();
			if (!cuda_ok(cudaEventRecord(e0, stream), "cudaEventRecord"))
				return 1;
		}
		for (long j = 0; j < kernels; j++) {
			tiny_kernel<<<(int)batch, (int)threads, 0, stream>>>(buf, elems, (int)work);
			if (!cuda_ok(cudaGetLastError(), "launch of tiny_kernel"))
				return 1;
		}
		if (!cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize"))
			return 1;
	}
	t1 = now_seconds();
	if (!cuda_ok(cudaEventRecord(e1, stream), "cudaEventRecord") ||
	    !cuda_ok(cudaEventSynchronize(e1), "cudaEventSynchronize") ||
	    !cuda_ok(cudaEventElapsedTime(&gpu_ms, e0, e1), "cudaEventElapsedTime"))
		return 1;
	host_s = t1 - t0;

	o = cJSON_CreateObject();
	if (!o)
		return 1;
	cJSON_AddStringToObject(o, "bench", "bare_tiny");
	cJSON_AddStringToObject(o, "device", prop.name);
	cJSON_AddNumberToObject(o, "kernels", (double)kernels);
	cJSON_AddNumberToObject(o, "threads", (double)threads);
	cJSON_AddNumberToObject(o, "iters_per_thread", (double)work);
	cJSON_AddNumberToObject(o, "batch", (double)batch);
	cJSON_AddNumberToObject(o, "iters", (double)iters);
	cJSON_AddNumberToObject(o, "requests_per_second", (double)iters / host_s);
	cJSON_AddNumberToObject(o, "mean_latency_seconds", host_s / (double)iters);
	cJSON_AddNumberToObject(o, "gpu_seconds_per_request", gpu_ms * 1e-3 / (double)iters);
	cJSON_AddNumberToObject(o, "kernels_per_second", (double)iters * (double)kernels / host_s);
	line = cJSON_PrintUnformatted(o);
	if (!line || printf("%s\n", line) < 0 || fflush(stdout) != 0)
		return 1;
	free(line);
	cJSON_Delete(o);
	cudaFree(buf);
	cudaStreamDestroy(stream);
	return 0;
}
