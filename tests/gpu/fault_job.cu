/*
 * fault_job: a farm job for the MPS fault-containment proof
 * (tests/gpu/test_farm_fault_gpu.sh, bench/gpu/farm_fault.sh).
 *
 *   fault_job [--seconds S] [--fault [--after S]]
 *
 * Runs short kernels (a busy loop over a small buffer) for S seconds
 * (default 2), checking every launch. With --fault it writes to an illegal
 * address after --after seconds (default 0.5): a fatal fault that MPS
 * reports to every client of the GPU (cudaErrorIllegalAddress, error 700).
 * Any CUDA error is printed on stderr as "fault_job: CUDA error NAME (N):
 * TEXT" and ends the job with status 3; success prints "fault_job: ok".
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <cuda_runtime.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__global__ void spin(float *x, int n, int rounds)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	float v = x[i];
	for (int r = 0; r < rounds; r++)
		v = v * 0.999f + 0.001f;
	x[i] = v;
}

__global__ void poke(int *p)
{
	p[threadIdx.x * 4096] = 42; /* far beyond anything allocated */
}

static int check(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	fprintf(stderr, "fault_job: CUDA error %s (%d): %s (%s)\n", cudaGetErrorName(e), (int)e, cudaGetErrorString(e),
		what);
	return 1;
}

int main(int argc, char **argv)
{
	double seconds = 2, after = 0.5, t0;
	bool fault = false, faulted = false;
	const int n = 1 << 16;
	float *x = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--fault"))
			fault = true;
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--after") && i + 1 < argc)
			after = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: fault_job [--seconds S] [--fault [--after S]]\n");
			return 2;
		}
	}
	if (check(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc") || check(cudaMemset(x, 0, n * sizeof(float)), "cudaMemset"))
		return 3;
	t0 = now_s();
	while (now_s() - t0 < seconds) {
		spin<<<(n + 255) / 256, 256>>>(x, n, 2000);
		if (fault && !faulted && now_s() - t0 >= after) {
			poke<<<1, 256>>>((int *)(uintptr_t)0x10);
			faulted = true;
			fprintf(stderr, "fault_job: wrote to an illegal address\n");
		}
		if (check(cudaGetLastError(), "launch") || check(cudaDeviceSynchronize(), "synchronize"))
			return 3;
	}
	cudaFree(x);
	printf("fault_job: ok\n");
	return 0;
}
