/*
 * gpushare-probe: the built-in probe of `gpushare check` (docs/accounting.md,
 * "The probe's contract"). Every kernel it launches does the same fixed
 * amount of work whatever SM count its context reports: its grid is sized
 * by GPUSHARE_CHECK_SMS, the whole GPU's SM count that `gpushare check`
 * measured alone, never by the context's own count (under an MPS active
 * thread limit cudaDevAttrMultiProcessorCount reports the reduced count, and
 * a grid sized by it would last as long as alone). A kernel is WAVES full
 * waves of the whole GPU, every block spinning a fixed number of clock
 * cycles: about 1.6 ms alone on an H100, and 100/P times as long under a
 * limit of P%.
 *
 * Kernels go one at a time, with the next one queued behind the running
 * one (two in flight): each is launched about when the one before it
 * starts, so the accounting library, which counts the kernels launched
 * inside its windows, counts kernels run. That count per second of window
 * is the work rate the check compares.
 *
 *   gpushare-probe [SECONDS]     (default: until killed)
 * Environment: GPUSHARE_CHECK_SMS (the SM count to size the grid by;
 * default the context's), GPUSHARE_CHECK_SMS_FILE (alone: where to write
 * the count it used), GPUSHARE_PROBE_CYCLES (a block's spin, default 100000),
 * GPUSHARE_PROBE_DUTY (in (0, 1], default 1: saturating; below 1 each
 * kernel is waited for and followed by a sleep that leaves the GPU idle the
 * rest of the time, for a load of about that fraction).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>

#define WAVES 32
#define THREADS 1024

__global__ void probe_spin(long long cycles, int *sink)
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

static int fail(const char *what, cudaError_t e)
{
	fprintf(stderr, "gpushare-probe: %s: %s\n", what, cudaGetErrorName(e));
	return 1;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0, end;
	const char *env_sms = getenv("GPUSHARE_CHECK_SMS"), *env_cycles = getenv("GPUSHARE_PROBE_CYCLES");
	const char *sms_file = getenv("GPUSHARE_CHECK_SMS_FILE"), *env_duty = getenv("GPUSHARE_PROBE_DUTY");
	double duty = env_duty && atof(env_duty) > 0 && atof(env_duty) <= 1 ? atof(env_duty) : 1;
	long long cycles = env_cycles && atoll(env_cycles) > 0 ? atoll(env_cycles) : 100000;
	int sms = 0, per_sm = 0, *sink = NULL;
	cudaEvent_t ev[2];
	cudaError_t e;

	if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0)) != cudaSuccess)
		return fail("the SM count", e);
	if (env_sms && atoi(env_sms) > 0)
		sms = atoi(env_sms); /* the whole GPU's, whatever this context reports */
	if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, probe_spin, THREADS, 0)) != cudaSuccess)
		return fail("occupancy", e);
	if (per_sm < 1)
		per_sm = 1;
	if ((e = cudaMalloc(&sink, sizeof(int))) != cudaSuccess)
		return fail("cudaMalloc", e);
	for (int i = 0; i < 2; i++)
		if ((e = cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming | cudaEventBlockingSync)) != cudaSuccess)
			return fail("cudaEventCreate", e);
	if (sms_file) {
		FILE *f = fopen(sms_file, "w");
		if (f) {
			fprintf(f, "%d\n", sms);
			fclose(f);
		}
	}
	end = now_s() + secs;
	for (unsigned long long i = 0; duty < 1 && (secs <= 0 || now_s() < end); i++) {
		double t0 = now_s(), ran;
		probe_spin<<<sms * per_sm * WAVES, THREADS>>>(cycles, sink);
		if ((e = cudaGetLastError()) != cudaSuccess)
			return fail("launch", e);
		if ((e = cudaDeviceSynchronize()) != cudaSuccess)
			return fail("cudaDeviceSynchronize", e);
		ran = now_s() - t0;
		usleep((useconds_t)(ran * (1 - duty) / duty * 1e6));
	}
	for (unsigned long long i = 0; duty >= 1 && (secs <= 0 || now_s() < end); i++) {
		probe_spin<<<sms * per_sm * WAVES, THREADS>>>(cycles, sink);
		if ((e = cudaGetLastError()) != cudaSuccess)
			return fail("launch", e);
		cudaEventRecord(ev[i & 1], 0);
		/* wait for the kernel before this one: one runs, the next waits */
		if (i > 0 && (e = cudaEventSynchronize(ev[(i + 1) & 1])) != cudaSuccess)
			return fail("cudaEventSynchronize", e);
	}
	cudaDeviceSynchronize();
	cudaFree(sink);
	return 0;
}
