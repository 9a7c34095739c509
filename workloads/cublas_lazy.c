/*
 * cuBLAS loaded on first use: the worker is not linked against libcublas
 * (and through it libcublasLt, about 600 MB of libraries whose loading and
 * relocation cost about 0.6 s of CPU and 200 MB of memory per process), so
 * a worker whose workload needs no cuBLAS (spin, tiny) never loads it. The
 * workloads that do (matmul, transformer, hybrid) call the entry points
 * below as they would the library's: the first call dlopens
 * libcublas.so.<major of the headers> (from the loader's path, else from
 * the toolkit's library directory the worker was built with) and each entry
 * point forwards to the library's own symbol. When the library cannot be loaded, every call
 * returns CUBLAS_STATUS_NOT_INITIALIZED and cublasGetStatusString() says
 * why (dlerror), so the workload's init reports it.
 *
 * Only the entry points the workloads use are here; a new one needs its
 * forwarder (the link fails without it).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>

#define STR_(x) #x
#define STR(x) STR_(x)
#define CUBLAS_SONAME "libcublas.so." STR(CUBLAS_VER_MAJOR)

typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*destroy_fn)(cublasHandle_t);
typedef cublasStatus_t (*set_stream_fn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*set_workspace_fn)(cublasHandle_t, void *, size_t);
typedef const char *(*status_string_fn)(cublasStatus_t);
typedef cublasStatus_t (*gemm_ex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
				     const void *, cudaDataType, int, const void *, cudaDataType, int, const void *,
				     void *, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*gemm_batched_ex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
					     const void *, const void *const[], cudaDataType, int, const void *const[],
					     cudaDataType, int, const void *, void *const[], cudaDataType, int, int,
					     cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*gemm_strided_ex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
					     const void *, const void *, cudaDataType, int, long long int, const void *,
					     cudaDataType, int, long long int, const void *, void *, cudaDataType, int,
					     long long int, int, cublasComputeType_t, cublasGemmAlgo_t);

/* Every entry point, resolved once (pthread_once: streams of one worker
 * may create their handles at the same time); all NULL when the library or
 * one of them is missing. */
static struct {
	create_fn create;
	destroy_fn destroy;
	set_stream_fn set_stream;
	set_workspace_fn set_workspace;
	status_string_fn status_string;
	gemm_ex_fn gemm_ex;
	gemm_batched_ex_fn gemm_batched_ex;
	gemm_strided_ex_fn gemm_strided_ex;
} api;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[512];

/* A function pointer is copied out of dlsym's object pointer (the two
 * have the same size wherever dlopen works). */
_Static_assert(sizeof(void *) == sizeof(create_fn), "function pointers from dlsym");

static bool resolve(void *h, const char *name, void *fn)
{
	void *p = dlsym(h, name);

	if (!p) {
		snprintf(load_error, sizeof(load_error), "%s has no %s", CUBLAS_SONAME, name);
		return false;
	}
	memcpy(fn, &p, sizeof(p));
	return true;
}

static void load(void)
{
	void *h = dlopen(CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
	const char *e;

#ifdef GPUSHARE_CUBLAS_DIR
	/* Not on the loader's path: the toolkit's library directory of the build. */
	if (!h)
		h = dlopen(GPUSHARE_CUBLAS_DIR "/" CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
#endif
	if (!h) {
		e = dlerror();
		snprintf(load_error, sizeof(load_error), "cannot load %s: %s", CUBLAS_SONAME, e ? e : "unknown error");
		return;
	}
	if (!(resolve(h, "cublasCreate_v2", &api.create) && resolve(h, "cublasDestroy_v2", &api.destroy) &&
	      resolve(h, "cublasSetStream_v2", &api.set_stream) &&
	      resolve(h, "cublasSetWorkspace_v2", &api.set_workspace) &&
	      resolve(h, "cublasGetStatusString", &api.status_string) && resolve(h, "cublasGemmEx", &api.gemm_ex) &&
	      resolve(h, "cublasGemmBatchedEx", &api.gemm_batched_ex) &&
	      resolve(h, "cublasGemmStridedBatchedEx", &api.gemm_strided_ex)))
		memset(&api, 0, sizeof(api));   /* the library stays loaded: harmless */
}

/* Whether the library is there (loading it on the first call). */
static bool loaded(void)
{
	pthread_once(&load_once, load);
	return api.create != NULL;
}

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t *h)
{
	return loaded() ? api.create(h) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t h)
{
	return loaded() ? api.destroy(h) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t h, cudaStream_t s)
{
	return loaded() ? api.set_stream(h, s) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t h, void *w, size_t n)
{
	return loaded() ? api.set_workspace(h, w, n) : CUBLAS_STATUS_NOT_INITIALIZED;
}

const char *CUBLASWINAPI cublasGetStatusString(cublasStatus_t s)
{
	return loaded() ? api.status_string(s) : load_error;
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
					 int k, const void *alpha, const void *a, cudaDataType at, int lda,
					 const void *b, cudaDataType bt, int ldb, const void *beta, void *c,
					 cudaDataType ct, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
	if (!loaded())
		return CUBLAS_STATUS_NOT_INITIALIZED;
	return api.gemm_ex(h, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc, compute, algo);
}

cublasStatus_t CUBLASWINAPI cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
						int n, int k, const void *alpha, const void *const a[], cudaDataType at,
						int lda, const void *const b[], cudaDataType bt, int ldb,
						const void *beta, void *const c[], cudaDataType ct, int ldc, int count,
						cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
	if (!loaded())
		return CUBLAS_STATUS_NOT_INITIALIZED;
	return api.gemm_batched_ex(h, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc, count, compute,
				   algo);
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
						       int m, int n, int k, const void *alpha, const void *a,
						       cudaDataType at, int lda, long long int sa, const void *b,
						       cudaDataType bt, int ldb, long long int sb, const void *beta,
						       void *c, cudaDataType ct, int ldc, long long int sc, int count,
						       cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
	if (!loaded())
		return CUBLAS_STATUS_NOT_INITIALIZED;
	return api.gemm_strided_ex(h, ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt, ldb, sb, beta, c, ct, ldc, sc,
				   count, compute, algo);
}
