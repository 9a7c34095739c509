/*
 * The few types and constants of CUPTI's activity API that
 * libgpushare-account.so (and the stand-in tests/helpers/libfakecupti.c) use,
 * declared here as cupti_activity.h declares them, so that the library
 * builds without the CUDA toolkit: CUPTI itself is loaded with dlopen at run
 * time (as lib/gpu/ declares the few NVML and libcuda types it needs).
 *
 * The two records are declared up to the last field read: a kernel record
 * (CUpti_ActivityKernel4 to CUpti_ActivityKernel10 keep kind, start, end and
 * deviceId at these offsets) and a memory record (CUpti_ActivityMemory4). The
 * numbers are CUDA 13.0's; inject/cupti_types_check.c holds every offset and
 * value to the real header wherever the toolkit is installed (CI's build
 * with CUDA compiles it).
 */
#ifndef GPUSHARE_CUPTI_TYPES_H
#define GPUSHARE_CUPTI_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifndef CUPTIAPI
#define CUPTIAPI
#endif
/* Every name CUPTI gives is written N(name): cupti_types_check.c reads this
 * header beside cupti.h under other names. */
#ifndef GPUSHARE_CUPTI_NAME
#define GPUSHARE_CUPTI_NAME(name) name
#endif
#define N GPUSHARE_CUPTI_NAME

typedef enum {
	N(CUPTI_SUCCESS) = 0,
	N(CUPTI_ERROR_INVALID_OPERATION) = 7,
	N(CUPTI_ERROR_OUT_OF_MEMORY) = 8,
	N(CUPTI_ERROR_MAX_LIMIT_REACHED) = 12,
	N(CUPTI_ERROR_NOT_INITIALIZED) = 15,
} N(CUptiResult);

typedef enum {
	N(CUPTI_ACTIVITY_KIND_KERNEL) = 3,
	N(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) = 10,
	N(CUPTI_ACTIVITY_KIND_MEMORY2) = 49,
} N(CUpti_ActivityKind);

enum {
	N(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) = 3,
	N(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) = 1,
	N(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) = 2,
	N(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) = 1,
};

typedef struct N(CUctx_st) *N(CUcontext);

/* Every activity record starts with its kind. */
typedef struct {
	N(CUpti_ActivityKind) kind;
} N(CUpti_Activity);

/* A kernel record, up to deviceId (offsets 0, 16, 24, 40). */
struct N(gpushare_cupti_kernel) {
	N(CUpti_ActivityKind) kind;
	uint8_t config_[12];  /* cache and shared memory config, registers, partitioned cache */
	uint64_t start;       /* ns, CUPTI's timestamp */
	uint64_t end;
	uint64_t completed;
	uint32_t deviceId;
};

/* A memory record (CUpti_ActivityMemory4), up to deviceId (offsets 0, 4,
 * 8, 24, 52). */
struct N(gpushare_cupti_memory) {
	N(CUpti_ActivityKind) kind;
	uint32_t memoryOperationType;
	uint32_t memoryKind;
	uint32_t correlationId;
	uint64_t address;
	uint64_t bytes;
	uint64_t timestamp;
	uint64_t PC;
	uint32_t processId;
	uint32_t deviceId;
};

typedef void(CUPTIAPI *N(CUpti_BuffersCallbackRequestFunc))(uint8_t **buffer, size_t *size, size_t *maxNumRecords);
typedef void(CUPTIAPI *N(CUpti_BuffersCallbackCompleteFunc))(N(CUcontext) context, uint32_t streamId,
							      uint8_t *buffer, size_t size, size_t validSize);

/* The callback API (cupti_callbacks.h), for timing launches in a window:
 * the launch functions' ids (cupti_driver_cbid.h) and the parts of their
 * parameters (generated_cuda_meta.h) that name the stream. */
typedef enum {
	N(CUPTI_API_ENTER) = 0,
	N(CUPTI_API_EXIT) = 1,
} N(CUpti_ApiCallbackSite);

typedef enum {
	N(CUPTI_CB_DOMAIN_DRIVER_API) = 1,
} N(CUpti_CallbackDomain);

enum {
	N(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) = 307,
	N(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) = 442,
	N(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel) = 477,
	N(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz) = 478,
	N(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch) = 514,
	N(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz) = 515,
	N(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx) = 652,
	N(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) = 653,
};

typedef uint32_t N(CUpti_CallbackId);
typedef struct N(CUpti_Subscriber_st) *N(CUpti_SubscriberHandle);
typedef struct N(CUstream_st) *N(CUstream);

typedef struct {
	N(CUpti_ApiCallbackSite) callbackSite;
	const char *functionName;
	const void *functionParams;
	void *functionReturnValue; /* the function's CUresult, at the exit */
	const char *symbolName;
	N(CUcontext) context;
	uint32_t contextUid;
	uint64_t *correlationData;
	uint32_t correlationId;
} N(CUpti_CallbackData);

typedef void(CUPTIAPI *N(CUpti_CallbackFunc))(void *userdata, N(CUpti_CallbackDomain) domain,
					       N(CUpti_CallbackId) cbid, const void *cbdata);

/* The stream of each launch function's parameters: cuLaunchKernel's and
 * cuLaunchCooperativeKernel's (the same leading fields), cuGraphLaunch's,
 * and cuLaunchKernelEx's, whose first field points to its CUlaunchConfig
 * (hStream after the grid, the block and the shared memory size). */
struct N(gpushare_cuda_launch_params) {
	void *f;
	unsigned int grid[3], block[3], sharedMemBytes;
	N(CUstream) hStream;
};
struct N(gpushare_cuda_graph_launch_params) {
	void *hGraphExec;
	N(CUstream) hStream;
};
struct N(gpushare_cuda_launch_config) {
	unsigned int grid[3], block[3], sharedMemBytes;
	N(CUstream) hStream;
};

/* The functions, as cupti_activity.h declares them (looked up with dlsym). */
N(CUptiResult) CUPTIAPI N(cuptiActivityRegisterCallbacks)(N(CUpti_BuffersCallbackRequestFunc) funcBufferRequested,
							   N(CUpti_BuffersCallbackCompleteFunc) funcBufferCompleted);
N(CUptiResult) CUPTIAPI N(cuptiActivityEnable)(N(CUpti_ActivityKind) kind);
N(CUptiResult) CUPTIAPI N(cuptiActivityDisable)(N(CUpti_ActivityKind) kind);
N(CUptiResult) CUPTIAPI N(cuptiActivityFlushAll)(uint32_t flag);
N(CUptiResult) CUPTIAPI N(cuptiActivityGetNextRecord)(uint8_t *buffer, size_t validBufferSizeBytes,
						       N(CUpti_Activity) **record);
N(CUptiResult) CUPTIAPI N(cuptiGetTimestamp)(uint64_t *timestamp);
N(CUptiResult) CUPTIAPI N(cuptiFinalize)(void);
N(CUptiResult) CUPTIAPI N(cuptiSubscribe)(N(CUpti_SubscriberHandle) *subscriber, N(CUpti_CallbackFunc) callback,
					 void *userdata);
N(CUptiResult) CUPTIAPI N(cuptiEnableCallback)(uint32_t enable, N(CUpti_SubscriberHandle) subscriber,
					      N(CUpti_CallbackDomain) domain, N(CUpti_CallbackId) cbid);

#undef N

#endif
