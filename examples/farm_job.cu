/*
 * farm_job: a small serial CUDA simulation, the kind of job "GPU farming"
 * runs many copies of: heat diffusion on an N x N plate (Jacobi steps, one
 * small kernel launch each), far too small to fill a modern GPU alone. Run
 * it under gpushare in job mode, where every run to completion is one job:
 *
 *   gpushare bench --mode job --jobs 20 --workers 7 --strategy timeslice,mps -- build/farm_job --n 256 --steps 2000
 *
 * It knows nothing about gpushare (GPUSHARE_JOB only seeds the initial
 * state). Prints the plate's mean temperature as a checksum; exits 1 on any
 * CUDA error, 2 on a bad option.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                             \
	do {                                                                                    \
		cudaError_t err_ = (call);                                                      \
		if (err_ != cudaSuccess) {                                                      \
			fprintf(stderr, "farm_job: %s: %s\n", #call, cudaGetErrorString(err_)); \
			exit(1);                                                                \
		}                                                                               \
	} while (0)

__global__ void step(const float *in, float *out, int n, float alpha)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;

	if (x <= 0 || y <= 0 || x >= n - 1 || y >= n - 1)
		return;
	int i = y * n + x;
	out[i] = in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);
}

static long arg_long(int argc, char **argv, const char *name, long def, long min, long max)
{
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], name) == 0) {
			char *end;
			long v = strtol(argv[i + 1], &end, 10);

			if (*end || v < min || v > max) {
				fprintf(stderr, "farm_job: %s must be a whole number in [%ld, %ld]\n", name, min, max);
				exit(2);
			}
			return v;
		}
	}
	return def;
}

int main(int argc, char **argv)
{
	int n = (int)arg_long(argc, argv, "--n", 256, 8, 8192);
	long steps = arg_long(argc, argv, "--steps", 2000, 1, 100000000);
	const char *job = getenv("GPUSHARE_JOB");
	size_t bytes = (size_t)n * n * sizeof(float);
	float *host = (float *)malloc(bytes), *a, *b;
	double sum = 0;

	if (!host) {
		fprintf(stderr, "farm_job: out of memory\n");
		return 1;
	}
	srand(job ? (unsigned)atoi(job) + 1u : 1u);
	for (int i = 0; i < n * n; i++)
		host[i] = (float)(rand() % 100);
	CHECK(cudaMalloc(&a, bytes));
	CHECK(cudaMalloc(&b, bytes));
	CHECK(cudaMemcpy(a, host, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(b, host, bytes, cudaMemcpyHostToDevice));
	dim3 block(16, 16), grid((unsigned)(n + 15) / 16, (unsigned)(n + 15) / 16);
	for (long s = 0; s < steps; s++) {
		step<<<grid, block>>>(a, b, n, 0.2f);
		float *t = a;
		a = b;
		b = t;
	}
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(host, a, bytes, cudaMemcpyDeviceToHost));
	for (int i = 0; i < n * n; i++)
		sum += host[i];
	printf("farm_job: n %d, %ld steps, mean %.6f\n", n, steps, sum / ((double)n * n));
	CHECK(cudaFree(a));
	CHECK(cudaFree(b));
	free(host);
	return 0;
}
