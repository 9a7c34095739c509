/*
 * saturate: a probe for `gpushare check` and the accounting GPU test. It
 * launches, back to back on one stream, a kernel of 16 full waves on the
 * device's whole SM count (blocks of 1024 threads, as many per SM as fit)
 * in which every block spins for a fixed number of clock cycles, so that
 * its duration grows as the SMs it gets shrink: about 100/P times as long
 * under an MPS limit of P% (to a wave: 16 waves keep that within a few
 * points). It runs for the seconds given (default 60), or until killed.
 *
 *   saturate [SECONDS] [SPIN_CYCLES]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime.h>

__global__ void spin(long long cycles, int *sink)
{
	long long start = clock64();

	while (clock64() - start < cycles)
		;
	if (threadIdx.x == 0 && cycles < 0)
		*sink = 1; /* never: keeps the loop */
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 60.0, end;
	long long cycles = argc > 2 ? atoll(argv[2]) : 20000; /* about 10 us at 2 GHz: a kernel of about 0.2 ms */
	int sms = 0, per_sm = 0, *sink = NULL;
	cudaError_t e;

	if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0)) != cudaSuccess ||
	    (e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spin, 1024, 0)) != cudaSuccess ||
	    (e = cudaMalloc(&sink, sizeof(int))) != cudaSuccess) {
		fprintf(stderr, "saturate: %s\n", cudaGetErrorName(e));
		return 1;
	}
	end = now_s() + secs;
	while (now_s() < end) {
		for (int i = 0; i < 64; i++)
			spin<<<sms * per_sm * 16, 1024>>>(cycles, sink);
		if ((e = cudaDeviceSynchronize()) != cudaSuccess) {
			fprintf(stderr, "saturate: %s\n", cudaGetErrorName(e));
			return 1;
		}
	}
	cudaFree(sink);
	return 0;
}
