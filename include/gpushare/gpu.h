/*
 * GPU discovery and telemetry through NVML (libnvidia-ml.so.1) and libcuda
 * (libcuda.so.1), both loaded with dlopen at run time: the same binary runs on
 * machines with and without an NVIDIA driver, and says "no NVIDIA driver
 * found" (GPUSHARE_E_NO_DRIVER) on the latter.
 *
 * GPUSHARE_NVML_LIBRARY and GPUSHARE_CUDA_LIBRARY override the library
 * paths (tests point them at a stand-in or at nothing).
 */
#ifndef GPUSHARE_GPU_H
#define GPUSHARE_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpushare/gpushare.h" /* GPUSHARE_UNKNOWN */

#ifdef __cplusplus
extern "C" {
#endif

enum gpushare_compute_mode {
	GPUSHARE_COMPUTE_DEFAULT = 0,
	GPUSHARE_COMPUTE_EXCLUSIVE_THREAD = 1,
	GPUSHARE_COMPUTE_PROHIBITED = 2,
	GPUSHARE_COMPUTE_EXCLUSIVE_PROCESS = 3,
};

/* "Default", "Exclusive_Thread", "Prohibited", "Exclusive_Process", "unknown". */
const char *gpushare_compute_mode_name(int mode);

enum gpushare_proc_kind {
	GPUSHARE_PROC_PLAIN = 0,       /* an ordinary CUDA process */
	GPUSHARE_PROC_MPS_SERVER = 1,  /* nvidia-cuda-mps-server */
	GPUSHARE_PROC_MPS_CLIENT = 2,  /* a client of an MPS server */
};

/* "plain", "mps-server", "mps-client". */
const char *gpushare_proc_kind_name(int kind);

struct gpushare_proc_info {
	pid_t pid;
	char name[64];                 /* /proc/<pid>/comm, "" when not visible */
	char user[32];                 /* its real user's name (or uid), "" when not visible */
	char command[256];             /* its command line, arguments joined by spaces
					* (cut to fit), "" when not visible */
	uint64_t mem_used_bytes;       /* GPUSHARE_UNKNOWN_U64 when not reported */
	enum gpushare_proc_kind kind;
	int gpu_instance_id;           /* MIG GPU instance, GPUSHARE_UNKNOWN otherwise */
	int sm_percent;                /* NVML's SM utilisation of the process, the mean of its samples of
					* the last GPUSHARE_PROC_SM_WINDOW_S seconds; GPUSHARE_UNKNOWN when
					* NVML gave none (no samples, not supported, or under MPS, where
					* NVML gives the server the clients' work) */
};

#define GPUSHARE_PROC_SM_WINDOW_S 10

struct gpushare_mig_info {
	unsigned index;                /* MIG device index on its parent GPU */
	char uuid[96];                 /* "MIG-..." */
	char name[96];                 /* device name as NVML reports it */
	char profile[32];              /* e.g. "1g.18gb", parsed from the name; "" unknown */
	int gpu_instance_id, compute_instance_id;
	int sm_count;
	uint64_t mem_total_bytes, mem_used_bytes;
};

struct gpushare_gpu_info {
	unsigned index;                /* NVML index */
	char name[96];
	char uuid[96];                 /* "GPU-..." */
	char pci_bus_id[32];           /* "00000000:3B:00.0" */
	int sm_count;                  /* from libcuda; GPUSHARE_UNKNOWN when unavailable */
	uint64_t mem_total_bytes, mem_used_bytes, mem_free_bytes;
	int compute_mode;              /* enum gpushare_compute_mode or GPUSHARE_UNKNOWN */
	int mig_current, mig_pending;  /* 0/1, GPUSHARE_UNKNOWN when MIG is unsupported */
	int persistence;               /* 0/1 or GPUSHARE_UNKNOWN */
	int util_gpu_pct, util_mem_pct;/* GPUSHARE_UNKNOWN when unavailable */
	int clock_sm_mhz, clock_mem_mhz, clock_sm_max_mhz;
	int power_mw;                  /* milliwatts */
	int power_limit_mw;            /* the enforced power limit, milliwatts */
	int temperature_c;
	/* NVML clocks-event (throttle) reasons bitmask, GPUSHARE_UNKNOWN_U64 when
	 * NVML cannot tell; gpushare_throttle_reasons_str() names them. */
	uint64_t throttle_reasons;
	struct gpushare_mig_info *migs;
	size_t n_migs;
	struct gpushare_proc_info *procs;
	size_t n_procs;
};

struct gpushare_system_info {
	char driver_version[80];       /* "580.159.04" */
	int cuda_driver_version;       /* 13000 for CUDA 13.0; GPUSHARE_UNKNOWN */
	char nvml_version[80];
	/* Why SM counts of full GPUs are unknown: libcuda's error ("libcuda.so.1:
	 * cannot open shared object file: ..."); "" when libcuda answered. */
	char cuda_error[256];
	struct gpushare_gpu_info *gpus;
	size_t n_gpus;
};

/* Load NVML (reference counted). GPUSHARE_E_NO_DRIVER with dlerror()'s text
 * as detail when the library is missing. */
int gpushare_nvml_open(void);
void gpushare_nvml_close(void);

/* Query everything `gpushare info` shows. Loads NVML itself. SM counts come
 * from libcuda queried in a short-lived child process whose
 * CUDA_MPS_PIPE_DIRECTORY names no daemon, so the caller never becomes an
 * MPS client; they stay GPUSHARE_UNKNOWN when libcuda is missing. */
int gpushare_system_query(struct gpushare_system_info *out);
/* The same from NVML alone, without the libcuda child: SM counts of full
 * GPUs stay GPUSHARE_UNKNOWN. Cheap enough for every metrics scrape, and it
 * never initialises CUDA beside a running benchmark. */
int gpushare_system_query_nvml(struct gpushare_system_info *out);
void gpushare_system_release(struct gpushare_system_info *info);

/* Resolve a GPU given as an NVML index ("0") or UUID ("GPU-..." or a unique
 * prefix) to its index. Needs gpushare_nvml_open(). */
int gpushare_gpu_find(const char *spec, unsigned *index);

/* NVML's share of the GPU a process attained, 0..1 (its sm_percent / 100),
 * where NVML can attribute it: the GPU of NVML index gpu lists the pid with
 * samples and runs no MPS server (under MPS NVML gives the server every
 * client's work); else -1. Without MPS NVML sees each context's time
 * slices, which no figure from inside the process can (accounting.md). */
double gpushare_gpu_process_share(const struct gpushare_system_info *sys, long gpu, int64_t pid);

/* The device memory NVML says the process uses on the GPU of NVML index
 * gpu (MPS clients included); GPUSHARE_UNKNOWN_U64 when not listed or not
 * reported. */
uint64_t gpushare_gpu_process_memory(const struct gpushare_system_info *sys, long gpu, int64_t pid);

/* The NVML index of the GPU whose device file is /dev/nvidia<minor>
 * (nvmlDeviceGetMinorNumber): GPUSHARE_E_NOT_FOUND when none has it,
 * GPUSHARE_E_UNSUPPORTED when the driver cannot say. Needs
 * gpushare_nvml_open(). */
int gpushare_gpu_by_minor(unsigned minor, unsigned *index);

/* Number of GPUs NVML sees. Needs gpushare_nvml_open(). */
int gpushare_gpu_count(unsigned *count);

/* Compute mode of GPU `index`. Needs gpushare_nvml_open(). */
int gpushare_gpu_compute_mode(unsigned index, int *mode);

/* One telemetry sample of a GPU, cheap enough to take every 100 ms. */
struct gpushare_gpu_sample {
	uint64_t t_ns;                 /* gpushare_now_ns() when taken */
	int util_gpu_pct;
	uint64_t mem_used_bytes;
	int clock_sm_mhz;
	int clock_sm_max_mhz;
	int power_mw;
	int temperature_c;
	uint64_t throttle_reasons;     /* NVML clocks-event reasons bitmask; 0 none */
	bool throttled;                /* any reason other than idle / app clocks setting */
};

/* The reasons of an NVML clocks-event (throttle) bitmask as a comma list of
 * short names, nvidia-smi's words: "gpu_idle", "applications_clocks_setting",
 * "sw_power_cap", "hw_slowdown", "sync_boost", "sw_thermal_slowdown",
 * "hw_thermal_slowdown", "hw_power_brake_slowdown", "display_clock_setting",
 * other bits as hex; "none" for 0, "unknown" for GPUSHARE_UNKNOWN_U64. */
const char *gpushare_throttle_reasons_str(uint64_t reasons, char *buf, size_t len);

/* The name of the clocks-event reason of bit `bit` (0 is gpu_idle, 1 is
 * applications_clocks_setting, ...), NULL past the last named one. */
const char *gpushare_throttle_reason_name(unsigned bit);

/* Needs gpushare_nvml_open(). Fields NVML cannot read are GPUSHARE_UNKNOWN. */
int gpushare_gpu_sample(unsigned index, struct gpushare_gpu_sample *s);

#ifdef __cplusplus
}
#endif
#endif
