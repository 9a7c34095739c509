/*
 * Helpers shared by the CUDA workloads: CUDA/cuBLAS status to struct
 * wl_error, device information, random fills. See common.h.
 */
#include "common.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpushare/gpushare.h"

int wl_cuda_code(cudaError_t e)
{
	switch (e) {
	case cudaSuccess:
		return GPUSHARE_OK;
	case cudaErrorMpsMaxClientsReached:
		return GPUSHARE_E_MPS_MAX_CLIENTS;
	case cudaErrorNoDevice:
	case cudaErrorInsufficientDriver:
	case cudaErrorStubLibrary:
		return GPUSHARE_E_NO_DRIVER;
	case cudaErrorDevicesUnavailable:
		return GPUSHARE_E_BUSY;
	default:
		return GPUSHARE_E_CUDA;
	}
}

/* Write "<call>: <what>" into err->message. */
static void set_message(struct wl_error *err, const char *what, const char *fmt, va_list ap)
{
	char call[160];

	vsnprintf(call, sizeof(call), fmt, ap);
	snprintf(err->message, sizeof(err->message), "%.120s: %.130s", call, what);
}

int wl_cuda(cudaError_t e, struct wl_error *err, const char *fmt, ...)
{
	char what[128];
	va_list ap;

	if (e == cudaSuccess)
		return 0;
	snprintf(what, sizeof(what), "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
	err->code = wl_cuda_code(e);
	err->cuda_error = (int)e;
	va_start(ap, fmt);
	set_message(err, what, fmt, ap);
	va_end(ap);
	return err->code;
}

int wl_cuda_launch(struct wl_error *err, const char *kernel)
{
	return wl_cuda(cudaGetLastError(), err, "launch of %s", kernel);
}

int wl_cublas(cublasStatus_t s, struct wl_error *err, const char *fmt, ...)
{
	char what[128];
	va_list ap;

	if (s == CUBLAS_STATUS_SUCCESS)
		return 0;
	snprintf(what, sizeof(what), "%s (cuBLAS status %d)", cublasGetStatusString(s), (int)s);
	err->code = (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_ARCH_MISMATCH)
			    ? GPUSHARE_E_UNSUPPORTED
			    : GPUSHARE_E_CUDA;
	err->cuda_error = (int)s;
	va_start(ap, fmt);
	set_message(err, what, fmt, ap);
	va_end(ap);
	return err->code;
}

int wl_fail(struct wl_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	err->cuda_error = 0;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return code;
}

/*
 * Create the context through the driver API first: the runtime reports an
 * MPS server that refuses a client (its 48-client limit) as error 46,
 * "devices unavailable", while the driver returns the precise
 * CUDA_ERROR_MPS_MAX_CLIENTS_REACHED (808). libcuda is already loaded by the
 * runtime; dlopen only takes another reference. The runtime then adopts the
 * retained primary context.
 */
typedef int (*cu_init_fn)(unsigned int);
typedef int (*cu_device_get_fn)(int *, int);
typedef int (*cu_ctx_retain_fn)(void **, int);
typedef int (*cu_err_name_fn)(int, const char **);

static int driver_context_init(struct wl_error *err)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	cu_init_fn cu_init;
	cu_device_get_fn cu_device_get;
	cu_ctx_retain_fn cu_retain;
	cu_err_name_fn cu_err_name;
	const char *name = NULL;
	const char *call = "cuInit";
	void *ctx = NULL;
	int visible = 0, dev = 0, r;

	if (!h)
		return 0; /* the runtime call below reports the missing driver */
	cu_init = (cu_init_fn)dlsym(h, "cuInit");
	cu_device_get = (cu_device_get_fn)dlsym(h, "cuDeviceGet");
	cu_retain = (cu_ctx_retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
	cu_err_name = (cu_err_name_fn)dlsym(h, "cuGetErrorName");
	if (!cu_init || !cu_device_get || !cu_retain)
		return 0;
	if (cudaGetDevice(&visible) != cudaSuccess)
		visible = 0;
	r = cu_init(0);
	if (r == 0) {
		call = "cuDeviceGet";
		r = cu_device_get(&dev, visible);
	}
	if (r == 0) {
		call = "cuDevicePrimaryCtxRetain (context creation)";
		r = cu_retain(&ctx, dev);
	}
	if (r == 0)
		return 0; /* the reference is kept for the life of the worker */
	if (!cu_err_name || cu_err_name(r, &name) != 0 || !name)
		name = "unknown CUDA driver error";
	err->code = r == 808 ? GPUSHARE_E_MPS_MAX_CLIENTS
		  : (r == 100 || r == 35 || r == 34) ? GPUSHARE_E_NO_DRIVER
		  : r == 46 ? GPUSHARE_E_BUSY : GPUSHARE_E_CUDA;
	err->cuda_error = r;
	snprintf(err->message, sizeof(err->message), "%s: %s%s", call, name,
		 r == 808 ? " (the MPS server accepts at most 48 clients per GPU)" : "");
	return err->code;
}

int wl_context_init(struct wl_error *err)
{
	int rc = driver_context_init(err);

	if (rc)
		return rc;
	return wl_cuda(cudaFree(0), err, "cudaFree(0) (context creation)");
}

int wl_device_info(struct wl_info *info, struct wl_error *err)
{
	struct cudaDeviceProp prop;
	size_t free_bytes = 0, total_bytes = 0;
	int dev = 0, sms = 0;
	int rc;

	if ((rc = wl_cuda(cudaGetDevice(&dev), err, "cudaGetDevice")) != 0)
		return rc;
	if ((rc = wl_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), err,
			  "cudaDeviceGetAttribute(MultiProcessorCount)")) != 0)
		return rc;
	if ((rc = wl_cuda(cudaGetDeviceProperties(&prop, dev), err,
			  "cudaGetDeviceProperties(%d)", dev)) != 0)
		return rc;
	if ((rc = wl_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), err, "cudaMemGetInfo")) != 0)
		return rc;
	info->device = dev;
	info->sm_count = sms;
	info->mem_free_bytes = free_bytes;
	info->mem_total_bytes = total_bytes;
	snprintf(info->device_name, sizeof(info->device_name), "%.95s", prop.name);
	return 0;
}

/* ---- random fills ---- */

/* splitmix64 finaliser: a good 64-bit mix of (seed, index). */
__device__ static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

__device__ static float uniform_at(uint64_t seed, size_t i, float lo, float hi)
{
	uint64_t h = mix64(seed ^ mix64((uint64_t)i));
	/* 24 random bits -> [0, 1) */
	float u = (float)(h >> 40) * (1.0f / 16777216.0f);
	float v = lo + (hi - lo) * u;

	return v == 0.0f ? 0.5f * lo : v;
}

template <typename T> __device__ static T from_float(float v);
template <> __device__ float from_float<float>(float v) { return v; }
template <> __device__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v)
{
	return __float2bfloat16_rn(v);
}

template <typename T>
__global__ static void fill_kernel(T *p, size_t n, float lo, float hi, uint64_t seed)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
		T v = from_float<T>(uniform_at(seed, i, lo, hi));
		/* a tiny value can round to zero in fp16/bf16: keep it non-zero */
		if ((float)v == 0.0f)
			v = from_float<T>(lo != 0.0f ? 0.5f * lo : 0.5f * hi);
		p[i] = v;
	}
}

template <typename T>
static int fill(T *p, size_t n, float lo, float hi, uint64_t seed, cudaStream_t stream,
		struct wl_error *err)
{
	const unsigned threads = 256;
	size_t want = (n + threads - 1) / threads;
	unsigned blocks = want > 4096 ? 4096u : (unsigned)(want ? want : 1);

	if (n == 0)
		return 0;
	fill_kernel<T><<<blocks, threads, 0, stream>>>(p, n, lo, hi, seed);
	return wl_cuda_launch(err, "fill_kernel");
}

int wl_fill_f32(float *p, size_t n, float lo, float hi, uint64_t seed, cudaStream_t stream,
		struct wl_error *err)
{
	return fill(p, n, lo, hi, seed, stream, err);
}

int wl_fill_f16(__half *p, size_t n, float lo, float hi, uint64_t seed, cudaStream_t stream,
		struct wl_error *err)
{
	return fill(p, n, lo, hi, seed, stream, err);
}

int wl_fill_bf16(__nv_bfloat16 *p, size_t n, float lo, float hi, uint64_t seed,
		 cudaStream_t stream, struct wl_error *err)
{
	return fill(p, n, lo, hi, seed, stream, err);
}

const char *wl_fmt_bytes(size_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%zu B", bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

uint64_t wl_seed(int thread_index, int buffer)
{
	return 0x6a09e667f3bcc909ULL ^ ((uint64_t)(unsigned)thread_index << 32) ^
	       (uint64_t)(unsigned)buffer * 0x9e3779b97f4a7c15ULL;
}
