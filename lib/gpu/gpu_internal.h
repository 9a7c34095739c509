/*
 * Internal interface between the NVML module (nvml.c) and the libcuda query
 * (cudadrv.c), and the pure helpers the unit tests check directly.
 */
#ifndef GPUSHARE_GPU_INTERNAL_H
#define GPUSHARE_GPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/* How long the libcuda child may take before it is killed. */
#define GPUSHARE_CUDA_QUERY_TIMEOUT_MS 5000

/* One CUDA device as libcuda reports it. */
struct gpushare_cuda_dev {
	unsigned char uuid[16];        /* cuDeviceGetUuid(_v2) bytes */
	int sm_count;                  /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
};

/*
 * Ask libcuda (GPUSHARE_CUDA_LIBRARY or libcuda.so.1) for every device's
 * UUID and SM count, in a forked child whose CUDA_MPS_PIPE_DIRECTORY names a
 * fresh, empty private directory (so neither it nor the caller becomes an
 * MPS client) and whose CUDA_VISIBLE_DEVICES is unset. The child is killed
 * after timeout_ms and always reaped. *devs is malloc'ed (caller frees).
 * Returns GPUSHARE_E_NO_DRIVER when libcuda cannot be loaded (dlerror() as
 * detail), GPUSHARE_E_DRIVER when a CUDA call fails, GPUSHARE_E_TIMEOUT.
 */
int gpushare_cuda_query(struct gpushare_cuda_dev **devs, size_t *n, int timeout_ms);

/* Format 16 UUID bytes as "<prefix>xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
void gpushare_uuid_format(const unsigned char bytes[16], const char *prefix, char *buf, size_t len);

/* Whether NVML's UUID string ("GPU-..." or "MIG-...") names the device with
 * these bytes; the prefix is ignored and hex digits compare case-blind. */
bool gpushare_uuid_matches(const char *nvml_uuid, const unsigned char bytes[16]);

/*
 * Classify a GPU process (enum gpushare_proc_kind). comm is
 * /proc/<pid>/comm, which the kernel cuts to 15 characters, so the MPS
 * server shows as "nvidia-cuda-mps"; cmdline (argv[0] first, may be "" when
 * unreadable) tells it from the control daemon. in_mps_list: NVML listed
 * the pid among the device's MPS compute processes.
 */
int gpushare_proc_classify(const char *comm, const char *cmdline, bool in_mps_list);

/* The MIG profile in a MIG device name ("NVIDIA H200 MIG 1g.18gb" ->
 * "1g.18gb", "... MIG 1c.2g.35gb" -> "1c.2g.35gb"); "" when there is none. */
void gpushare_mig_profile_parse(const char *name, char *out, size_t len);

#endif
