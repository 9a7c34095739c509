/*
 * The few CUDA driver API (libcuda.so.1) types and entry points gpushare
 * uses to read SM counts, declared here because libcuda is loaded with
 * dlopen and cuda.h is not needed at build time. The fake libcuda of the
 * tests (tests/helpers/libfakecuda.c) includes this file for its prototypes.
 */
#ifndef GPUSHARE_CUDA_TYPES_H
#define GPUSHARE_CUDA_TYPES_H

typedef int CUresult;
typedef int CUdevice;
typedef struct CUuuid_st {
	char bytes[16];
} CUuuid;

#define CUDA_SUCCESS 0
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16

/*
 * X(required, return type, name, parameter list), as NVML_SYMBOLS in
 * nvml_types.h. cuDeviceGetUuid_v2 (CUDA 11.4+) is preferred; both give the
 * same bytes for a full GPU, _v2 the MIG UUID for a MIG device.
 */
#define CUDA_SYMBOLS(X) \
	X(true, CUresult, cuInit, (unsigned int flags)) \
	X(true, CUresult, cuDeviceGetCount, (int *count)) \
	X(true, CUresult, cuDeviceGet, (CUdevice *device, int ordinal)) \
	X(true, CUresult, cuDeviceGetAttribute, (int *value, int attribute, CUdevice device)) \
	X(false, CUresult, cuDeviceGetUuid_v2, (CUuuid *uuid, CUdevice device)) \
	X(false, CUresult, cuDeviceGetUuid, (CUuuid *uuid, CUdevice device)) \
	X(false, CUresult, cuGetErrorName, (CUresult error, const char **name))

#endif
