/*
 * The few NVML types and constants gpushare uses, declared here because the
 * library is loaded with dlopen and there is no nvml.h at build time.
 *
 * Layouts follow nvml.h of the R5xx drivers (CUDA 12/13). Enumerations are
 * passed as int in the C ABI, so they are declared as plain ints. The fake
 * NVML of the tests (tests/helpers/libfakenvml.c) includes this file too, so
 * a layout mistake here would not be caught by the tests alone: each struct
 * below was checked against the public header and is pinned with a
 * _Static_assert on its size.
 */
#ifndef GPUSHARE_NVML_TYPES_H
#define GPUSHARE_NVML_TYPES_H

#include <stddef.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_UNKNOWN = 999,
};

/* nvmlClockType_t */
enum {
	NVML_CLOCK_GRAPHICS = 0,
	NVML_CLOCK_SM = 1,
	NVML_CLOCK_MEM = 2,
	NVML_CLOCK_VIDEO = 3,
};

/* nvmlTemperatureSensors_t */
enum { NVML_TEMPERATURE_GPU = 0 };

/* nvmlEnableState_t; also the MIG modes of nvmlDeviceGetMigMode. */
enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };

/* Clocks event (formerly "throttle") reasons, a bitmask. */
#define NVML_CLOCKS_EVENT_REASON_GPU_IDLE 0x1ULL
#define NVML_CLOCKS_EVENT_REASON_APPLICATIONS_CLOCKS_SETTING 0x2ULL
#define NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP 0x4ULL
#define NVML_CLOCKS_EVENT_REASON_HW_SLOWDOWN 0x8ULL

/* Buffer sizes NVML guarantees to be large enough (the _V2 sizes where a
 * newer, larger one exists). */
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96

/* GPU and compute instance ids of a process not on a MIG device. */
#define NVML_INVALID_INSTANCE_ID 0xFFFFFFFFu
/* usedGpuMemory when the driver cannot tell (e.g. under WDDM). */
#define NVML_VALUE_NOT_AVAILABLE_ULL (~0ULL)

/* nvmlDeviceGetPciInfo_v3 */
typedef struct nvmlPciInfo_st {
	char busIdLegacy[16];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

/* nvmlDeviceGetMemoryInfo (version 1 of the struct; _v2 adds a version and
 * a reserved field in front and is not used). */
typedef struct nvmlMemory_st {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlUtilization_st {
	unsigned int gpu;
	unsigned int memory;
} nvmlUtilization_t;

/*
 * Entries of nvmlDevice{,MPS}ComputeRunningProcesses_v2 and _v3. The CUDA
 * 12.0 nvml.h briefly gave the _v3 struct a trailing
 * usedGpuCcProtectedMemory field; later headers (and the drivers) went back
 * to this 24-byte layout for _v3, which is what is assumed here. As a guard
 * against a driver that writes the longer (32-byte) entries anyway, callers
 * size their buffers for NVML_PROCESS_INFO_MAX_SIZE per entry, so such a
 * driver could garble the list but never write past it.
 */
typedef struct nvmlProcessInfo_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* One sample of a process's utilisation (nvmlDeviceGetProcessUtilization):
 * percentages of the sample's period, timeStamp in microseconds (CPU time). */
typedef struct nvmlProcessUtilizationSample_st {
	unsigned int pid;
	unsigned long long timeStamp;
	unsigned int smUtil;
	unsigned int memUtil;
	unsigned int encUtil;
	unsigned int decUtil;
} nvmlProcessUtilizationSample_t;
#define NVML_PROCESS_INFO_MAX_SIZE 32

/* nvmlDeviceGetAttributes_v2, answered for MIG device handles. */
typedef struct nvmlDeviceAttributes_st {
	unsigned int multiprocessorCount;
	unsigned int sharedCopyEngineCount;
	unsigned int sharedDecoderCount;
	unsigned int sharedEncoderCount;
	unsigned int sharedJpegCount;
	unsigned int sharedOfaCount;
	unsigned int gpuInstanceSliceCount;
	unsigned int computeInstanceSliceCount;
	unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t layout");
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t layout");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t layout");
_Static_assert(offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8, "nvmlProcessInfo_t layout");
_Static_assert(sizeof(nvmlDeviceAttributes_t) == 40, "nvmlDeviceAttributes_t layout");

/*
 * Every NVML entry point gpushare uses, listed once:
 * X(required, return type, name, parameter list). nvml.c expands it into its
 * struct of function pointers and the table its load loop walks; the fake
 * NVML of the tests expands it into prototypes, so its definitions are
 * checked against what the loader calls. A missing required symbol fails
 * gpushare_nvml_open(); optional ones stay NULL and each use checks them.
 * Versioned entry points come first, with the older one as an optional
 * fallback where gpushare can use either.
 */
#define NVML_SYMBOLS(X) \
	X(true, nvmlReturn_t, nvmlInit_v2, (void)) \
	X(true, nvmlReturn_t, nvmlShutdown, (void)) \
	X(true, const char *, nvmlErrorString, (nvmlReturn_t result)) \
	X(true, nvmlReturn_t, nvmlSystemGetDriverVersion, (char *version, unsigned int length)) \
	X(true, nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int *count)) \
	X(true, nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *device)) \
	X(true, nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t device, char *name, unsigned int length)) \
	X(true, nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t device, char *uuid, unsigned int length)) \
	X(false, nvmlReturn_t, nvmlSystemGetNVMLVersion, (char *version, unsigned int length)) \
	X(false, nvmlReturn_t, nvmlSystemGetCudaDriverVersion_v2, (int *version)) \
	X(false, nvmlReturn_t, nvmlSystemGetCudaDriverVersion, (int *version)) \
	X(false, nvmlReturn_t, nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t *pci)) \
	X(false, nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t *memory)) \
	X(false, nvmlReturn_t, nvmlDeviceGetComputeMode, (nvmlDevice_t device, int *mode)) \
	X(false, nvmlReturn_t, nvmlDeviceGetPersistenceMode, (nvmlDevice_t device, int *mode)) \
	X(false, nvmlReturn_t, nvmlDeviceGetMinorNumber, (nvmlDevice_t device, unsigned int *minor)) \
	X(false, nvmlReturn_t, nvmlDeviceGetMigMode, (nvmlDevice_t device, unsigned int *current, unsigned int *pending)) \
	X(false, nvmlReturn_t, nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int *count)) \
	X(false, nvmlReturn_t, nvmlDeviceGetMigDeviceHandleByIndex, (nvmlDevice_t device, unsigned int index, nvmlDevice_t *mig)) \
	X(false, nvmlReturn_t, nvmlDeviceGetGpuInstanceId, (nvmlDevice_t device, unsigned int *id)) \
	X(false, nvmlReturn_t, nvmlDeviceGetComputeInstanceId, (nvmlDevice_t device, unsigned int *id)) \
	X(false, nvmlReturn_t, nvmlDeviceGetAttributes_v2, (nvmlDevice_t device, nvmlDeviceAttributes_t *attr)) \
	X(false, nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t *util)) \
	X(false, nvmlReturn_t, nvmlDeviceGetClockInfo, (nvmlDevice_t device, int type, unsigned int *mhz)) \
	X(false, nvmlReturn_t, nvmlDeviceGetMaxClockInfo, (nvmlDevice_t device, int type, unsigned int *mhz)) \
	X(false, nvmlReturn_t, nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned int *milliwatts)) \
	X(false, nvmlReturn_t, nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t device, unsigned int *milliwatts)) \
	X(false, nvmlReturn_t, nvmlDeviceGetTemperature, (nvmlDevice_t device, int sensor, unsigned int *celsius)) \
	X(false, nvmlReturn_t, nvmlDeviceGetCurrentClocksEventReasons, (nvmlDevice_t device, unsigned long long *reasons)) \
	X(false, nvmlReturn_t, nvmlDeviceGetCurrentClocksThrottleReasons, (nvmlDevice_t device, unsigned long long *reasons)) \
	X(false, nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v3, (nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos)) \
	X(false, nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v2, (nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos)) \
	X(false, nvmlReturn_t, nvmlDeviceGetMPSComputeRunningProcesses_v3, (nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos)) \
	X(false, nvmlReturn_t, nvmlDeviceGetMPSComputeRunningProcesses_v2, (nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos)) \
	X(false, nvmlReturn_t, nvmlDeviceGetProcessUtilization, (nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization, unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp))

#endif
