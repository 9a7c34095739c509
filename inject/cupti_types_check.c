/*
 * inject/cupti_types.h against the CUDA toolkit's own cupti.h: every offset
 * and value gpushare declares is the header's. Compiled (never linked) where
 * the toolkit is installed; a CUPTI that moved a field or renumbered a
 * constant fails the build.
 */
#include <cupti.h>
#include <stddef.h>

/* This header's names, read beside cupti.h's with a prefix. */
#define GPUSHARE_CUPTI_NAME(name) gs_##name
#include "cupti_types.h"

#define SAME_OFFSET(ours, theirs, field) \
	_Static_assert(offsetof(ours, field) == offsetof(theirs, field), #theirs "." #field " moved")
#define SAME_VALUE(name) _Static_assert((long)gs_##name == (long)name, #name " renumbered")

SAME_OFFSET(struct gs_gpushare_cupti_kernel, CUpti_ActivityKernel10, kind);
SAME_OFFSET(struct gs_gpushare_cupti_kernel, CUpti_ActivityKernel10, start);
SAME_OFFSET(struct gs_gpushare_cupti_kernel, CUpti_ActivityKernel10, end);
SAME_OFFSET(struct gs_gpushare_cupti_kernel, CUpti_ActivityKernel10, deviceId);
SAME_OFFSET(struct gs_gpushare_cupti_kernel, CUpti_ActivityKernel4, start);
SAME_OFFSET(struct gs_gpushare_cupti_kernel, CUpti_ActivityKernel4, end);
SAME_OFFSET(struct gs_gpushare_cupti_kernel, CUpti_ActivityKernel4, deviceId);
SAME_OFFSET(struct gs_gpushare_cupti_memory, CUpti_ActivityMemory4, kind);
SAME_OFFSET(struct gs_gpushare_cupti_memory, CUpti_ActivityMemory4, memoryOperationType);
SAME_OFFSET(struct gs_gpushare_cupti_memory, CUpti_ActivityMemory4, memoryKind);
SAME_OFFSET(struct gs_gpushare_cupti_memory, CUpti_ActivityMemory4, bytes);
SAME_OFFSET(struct gs_gpushare_cupti_memory, CUpti_ActivityMemory4, deviceId);
_Static_assert(sizeof(gs_CUpti_ActivityKind) == sizeof(CUpti_ActivityKind), "the kind's size");
SAME_VALUE(CUPTI_SUCCESS);
SAME_VALUE(CUPTI_ERROR_INVALID_OPERATION);
SAME_VALUE(CUPTI_ERROR_OUT_OF_MEMORY);
SAME_VALUE(CUPTI_ERROR_MAX_LIMIT_REACHED);
SAME_VALUE(CUPTI_ERROR_NOT_INITIALIZED);
SAME_VALUE(CUPTI_ACTIVITY_KIND_KERNEL);
SAME_VALUE(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
SAME_VALUE(CUPTI_ACTIVITY_KIND_MEMORY2);
SAME_VALUE(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
SAME_VALUE(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION);
SAME_VALUE(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE);
SAME_VALUE(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
SAME_VALUE(CUPTI_API_ENTER);
SAME_VALUE(CUPTI_API_EXIT);
SAME_VALUE(CUPTI_CB_DOMAIN_DRIVER_API);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz);
SAME_OFFSET(gs_CUpti_CallbackData, CUpti_CallbackData, callbackSite);
SAME_OFFSET(gs_CUpti_CallbackData, CUpti_CallbackData, functionParams);
SAME_OFFSET(gs_CUpti_CallbackData, CUpti_CallbackData, functionReturnValue);
SAME_OFFSET(gs_CUpti_CallbackData, CUpti_CallbackData, context);
_Static_assert(sizeof(gs_CUpti_CallbackData) == sizeof(CUpti_CallbackData), "the callback data's size");
SAME_OFFSET(struct gs_gpushare_cuda_launch_params, cuLaunchKernel_params, hStream);
SAME_OFFSET(struct gs_gpushare_cuda_launch_params, cuLaunchCooperativeKernel_params, hStream);
SAME_OFFSET(struct gs_gpushare_cuda_graph_launch_params, cuGraphLaunch_params, hStream);
SAME_OFFSET(struct gs_gpushare_cuda_launch_config, CUlaunchConfig, hStream);
_Static_assert(offsetof(cuLaunchKernelEx_params, config) == 0, "cuLaunchKernelEx's config moved");
