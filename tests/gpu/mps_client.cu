/*
 * mps_client: a tiny CUDA program for the MPS GPU tests. It creates a
 * context on device 0 (a client of the MPS server when a control daemon
 * answers at CUDA_MPS_PIPE_DIRECTORY), then prints one JSON line with what
 * the context sees:
 *
 *   {"pid":1234,"sm_count":38,"mem_free_bytes":...,"mem_total_bytes":...,
 *    "device":"NVIDIA H100 80GB HBM3"}
 *
 * With --alloc BYTES (a whole number, optional K/M/G/T suffix for powers of
 * 1024) it also tries cudaMalloc of that size after reading the memory
 * figures and adds "alloc_bytes", "alloc_ok" and, on failure, "alloc_error"
 * (the cudaGetErrorName). With --hold SECONDS it keeps the context (and the
 * allocation) alive that long after printing, launching a trivial kernel
 * every 100 ms so that it really is an active client.
 *
 * Any other CUDA failure prints {"error":"<cudaGetErrorName>","code":N,
 * "call":"..."} and exits 1 (808 cudaErrorMpsMaxClientsReached when the
 * server has no room). Bad arguments exit 2.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cuda_runtime.h>

__global__ static void touch_kernel(unsigned *p)
{
	if (threadIdx.x == 0)
		*p += 1;
}

/* Print obj as one line on stdout, flushed so that a reader sees it while
 * the program holds its context. Returns 0, or 1 if printing failed. */
static int print_line(cJSON *obj)
{
	char *s = cJSON_PrintUnformatted(obj);
	int rc = 1;

	if (s && printf("%s\n", s) >= 0 && fflush(stdout) == 0)
		rc = 0;
	free(s);
	return rc;
}

/* Report a CUDA failure as JSON and return the exit status 1. */
static int cuda_error(cudaError_t e, const char *call)
{
	cJSON *o = cJSON_CreateObject();

	if (o) {
		cJSON_AddStringToObject(o, "error", cudaGetErrorName(e));
		cJSON_AddNumberToObject(o, "code", (double)e);
		cJSON_AddStringToObject(o, "call", call);
		print_line(o);
		cJSON_Delete(o);
	}
	return 1;
}

static int parse_bytes(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -1;
	switch (*end) {
	case '\0':
		break;
	case 'K': case 'k':
		shift = 10;
		break;
	case 'M': case 'm':
		shift = 20;
		break;
	case 'G': case 'g':
		shift = 30;
		break;
	case 'T': case 't':
		shift = 40;
		break;
	default:
		return -1;
	}
	if (*end && end[1] != '\0')
		return -1;
	if (shift && v > (~0ULL >> shift))
		return -1;
	*out = (size_t)(v << shift);
	return 0;
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int usage(void)
{
	fprintf(stderr, "usage: mps_client [--alloc BYTES] [--hold SECONDS]\n");
	return 2;
}

int main(int argc, char **argv)
{
	double hold = 0.0;
	size_t alloc = 0;
	bool want_alloc = false, alloc_ok = false;
	cudaError_t alloc_err = cudaSuccess;
	void *mem = NULL;
	unsigned *counter = NULL;
	struct cudaDeviceProp prop;
	size_t free_bytes = 0, total_bytes = 0;
	int sms = 0, rc;
	cudaError_t e;
	cJSON *o;

	for (int i = 1; i < argc; i++) {
		char *end;

		if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc) {
			hold = strtod(argv[++i], &end);
			if (*end || hold < 0.0)
				return usage();
		} else if (strcmp(argv[i], "--alloc") == 0 && i + 1 < argc) {
			if (parse_bytes(argv[++i], &alloc) != 0 || alloc == 0)
				return usage();
			want_alloc = true;
		} else {
			return usage();
		}
	}

	if ((e = cudaSetDevice(0)) != cudaSuccess)
		return cuda_error(e, "cudaSetDevice(0)");
	if ((e = cudaFree(0)) != cudaSuccess)
		return cuda_error(e, "cudaFree(0)");
	if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0)) != cudaSuccess)
		return cuda_error(e, "cudaDeviceGetAttribute");
	if ((e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess)
		return cuda_error(e, "cudaGetDeviceProperties");
	if ((e = cudaMalloc((void **)&counter, sizeof(*counter))) != cudaSuccess)
		return cuda_error(e, "cudaMalloc(counter)");
	if ((e = cudaMemset(counter, 0, sizeof(*counter))) != cudaSuccess)
		return cuda_error(e, "cudaMemset");
	if ((e = cudaMemGetInfo(&free_bytes, &total_bytes)) != cudaSuccess)
		return cuda_error(e, "cudaMemGetInfo");
	if (want_alloc) {
		alloc_err = cudaMalloc(&mem, alloc);
		alloc_ok = alloc_err == cudaSuccess;
		/* a failed allocation is not sticky; clear it */
		(void)cudaGetLastError();
	}

	o = cJSON_CreateObject();
	if (!o)
		return 1;
	cJSON_AddNumberToObject(o, "pid", (double)getpid());
	cJSON_AddNumberToObject(o, "sm_count", sms);
	cJSON_AddNumberToObject(o, "mem_free_bytes", (double)free_bytes);
	cJSON_AddNumberToObject(o, "mem_total_bytes", (double)total_bytes);
	cJSON_AddStringToObject(o, "device", prop.name);
	if (want_alloc) {
		cJSON_AddNumberToObject(o, "alloc_bytes", (double)alloc);
		cJSON_AddBoolToObject(o, "alloc_ok", alloc_ok);
		if (!alloc_ok)
			cJSON_AddStringToObject(o, "alloc_error", cudaGetErrorName(alloc_err));
	}
	rc = print_line(o);
	cJSON_Delete(o);
	if (rc)
		return 1;

	if (hold > 0.0) {
		double end = now_seconds() + hold;
		struct timespec tick = {0, 100 * 1000 * 1000};

		while (now_seconds() < end) {
			touch_kernel<<<1, 32>>>(counter);
			if ((e = cudaGetLastError()) != cudaSuccess)
				return cuda_error(e, "launch of touch_kernel");
			if ((e = cudaDeviceSynchronize()) != cudaSuccess)
				return cuda_error(e, "cudaDeviceSynchronize");
			nanosleep(&tick, NULL);
		}
	}
	if (mem && (e = cudaFree(mem)) != cudaSuccess)
		return cuda_error(e, "cudaFree");
	if ((e = cudaFree(counter)) != cudaSuccess)
		return cuda_error(e, "cudaFree");
	return 0;
}
