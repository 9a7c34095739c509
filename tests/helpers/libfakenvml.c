/*
 * A stand-in for libnvidia-ml.so.1, loaded through GPUSHARE_NVML_LIBRARY so
 * that GPU discovery and `gpushare info` can be tested without a GPU.
 *
 * It implements every symbol gpushare loads (its prototypes come from the
 * same X-macro list, so a signature mismatch fails the build) and shows:
 *  - GPU 0, "NVIDIA H200", MIG enabled, with two MIG devices (1g.18gb and
 *    3g.71gb); utilization is NOT_SUPPORTED there, as on real MIG GPUs;
 *  - GPU 1, "NVIDIA H100 80GB HBM3", MIG disabled, compute mode
 *    Exclusive_Process, clocks held back by the software power cap (both
 *    GPUs have a 700 W power limit), and the
 *    compute processes named by FAKE_NVML_PIDS="plain,server,client[,mps]":
 *    plain, server and client in the compute list, client (and the optional
 *    fourth pid) in the MPS compute list.
 * FAKE_NVML_GPUS=N (1..64) replaces that layout by N plain GPUs for tests of
 * several GPUs: "NVIDIA H100 80GB HBM3", MIG disabled, compute mode Default,
 * UUID GPU-fa4e0000-0000-4000-8000-<12 hex digits of the index>, bus
 * 00000000:<0x10+i>:00.0, 81559 MiB of which 512 + 256*i MiB used (so each
 * has a distinct free memory), and no compute processes. With
 * FAKE_NVML_NODE_UUIDS=1 too, the UUID's second group is the number that
 * ends the host name (GPU-fa4e0000-0002-4000-8000-000000000001 is GPU 1 of
 * node2; 0000 when the name ends in no digit), so that the nodes of a test
 * cluster (tests/cli/lib_cluster.sh) have GPUs of their own, as real ones.
 * Knobs: FAKE_NVML_INIT_ERROR=<nvmlReturn_t> makes nvmlInit_v2 fail;
 * FAKE_NVML_NOT_SUPPORTED=<fn>,<fn>... makes those entry points answer
 * NVML_ERROR_NOT_SUPPORTED; FAKE_NVML_MINORS=m0,m1,... gives GPU i the device
 * file /dev/nvidia<mi> (nvmlDeviceGetMinorNumber; by default its index), so
 * that NVML's order can differ from the device files' as on real nodes.
 * FAKE_NVML_PROC_SM="pid:percent,...": nvmlDeviceGetProcessUtilization on
 * GPU 1 gives those processes one sample each, stamped now (no knob: no
 * samples, as for processes NVML has not sampled).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/gpu/nvml_types.h"

#define X(required, ret, name, params) ret name params;
NVML_SYMBOLS(X)
#undef X

#define GIB (1024ULL * 1024 * 1024)
#define MIB (1024ULL * 1024)

struct nvmlDevice_st {
	const char *name, *uuid, *bus_id;
	unsigned long long mem_total, mem_used;
	int compute_mode, persistence;
	int mig_current, mig_pending;
	bool util_supported;
	unsigned util_gpu, util_mem, clock_sm, clock_mem, clock_sm_max, power_mw, power_limit_mw, temp_c;
	unsigned long long reasons;
	bool is_mig;
	unsigned gi, ci, sm;
	struct nvmlDevice_st *migs[7];
};

static struct nvmlDevice_st mig0 = {
	.name = "NVIDIA H200 MIG 1g.18gb", .uuid = "MIG-11aa22bb-33cc-44dd-55ee-66ff77008811",
	.mem_total = 16896 * MIB, .mem_used = 13 * MIB, .is_mig = true, .gi = 9, .ci = 0, .sm = 16,
};
static struct nvmlDevice_st mig1 = {
	.name = "NVIDIA H200 MIG 3g.71gb", .uuid = "MIG-99aa88bb-77cc-66dd-55ee-44ff33002211",
	.mem_total = 71 * GIB, .mem_used = 40 * MIB, .is_mig = true, .gi = 2, .ci = 0, .sm = 60,
};

static struct nvmlDevice_st gpus[2] = {
	{
		.name = "NVIDIA H200", .uuid = "GPU-8e4a3c1d-1f2b-4c5d-9e6f-0a1b2c3d4e5f",
		.bus_id = "00000000:19:00.0", .mem_total = 143771 * MIB, .mem_used = 53 * MIB,
		.compute_mode = 0, .persistence = 1, .mig_current = 1, .mig_pending = 1,
		.util_supported = false, .clock_sm = 1980, .clock_mem = 3201, .clock_sm_max = 1980,
		.power_mw = 121500, .power_limit_mw = 700000, .temp_c = 35, .reasons = 0x1, .migs = { &mig0, NULL, &mig1 },
	},
	{
		.name = "NVIDIA H100 80GB HBM3", .uuid = "GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70",
		.bus_id = "00000000:3B:00.0", .mem_total = 81559 * MIB, .mem_used = 3584 * MIB,
		.compute_mode = 3, .persistence = 0, .mig_current = 0, .mig_pending = 0,
		.util_supported = true, .util_gpu = 87, .util_mem = 41, .clock_sm = 1755,
		.clock_mem = 2619, .clock_sm_max = 1980, .power_mw = 612345, .power_limit_mw = 700000, .temp_c = 71, .reasons = 0x4,
	},
};

/* The FAKE_NVML_GPUS layout, filled on first use. */
#define PLAIN_MAX 64
static struct nvmlDevice_st plain[PLAIN_MAX];
static char plain_uuid[PLAIN_MAX][48], plain_bus[PLAIN_MAX][32];
static unsigned n_plain;

static int init_count;

/* FAKE_NVML_NODE_UUIDS=1: the number that ends the host name (0 when none,
 * at most 0xffff); else 0. */
static unsigned node_number(void)
{
	const char *e = getenv("FAKE_NVML_NODE_UUIDS");
	char host[256] = "";
	size_t len;

	if (!e || strcmp(e, "1") || gethostname(host, sizeof(host) - 1) != 0)
		return 0;
	len = strlen(host);
	while (len > 0 && host[len - 1] >= '0' && host[len - 1] <= '9')
		len--;
	return (unsigned)(strtoul(host + len, NULL, 10) & 0xffff);
}

/* The devices shown: the default pair, or FAKE_NVML_GPUS plain ones. */
static struct nvmlDevice_st *devices(unsigned *count)
{
	const char *e = getenv("FAKE_NVML_GPUS");
	long n = e && *e ? strtol(e, NULL, 10) : 0;

	if (n < 1 || n > PLAIN_MAX) {
		*count = 2;
		return gpus;
	}
	if (n_plain != (unsigned)n) {
		unsigned node = node_number();

		for (unsigned i = 0; i < (unsigned)n; i++) {
			snprintf(plain_uuid[i], sizeof(plain_uuid[i]), "GPU-fa4e0000-%04x-4000-8000-%012x", node, i);
			snprintf(plain_bus[i], sizeof(plain_bus[i]), "00000000:%02X:00.0", 0x10 + i);
			plain[i] = (struct nvmlDevice_st){
				.name = "NVIDIA H100 80GB HBM3", .uuid = plain_uuid[i], .bus_id = plain_bus[i],
				.mem_total = 81559 * MIB, .mem_used = (512 + 256ULL * i) * MIB,
				.compute_mode = 0, .persistence = 1, .util_supported = true, .util_gpu = 5 * i % 100,
				.util_mem = 2 * i % 100, .clock_sm = 1755, .clock_mem = 2619, .clock_sm_max = 1980,
				.power_mw = 90000 + 1000 * i, .power_limit_mw = 700000, .temp_c = 40 + i % 40,
			};
		}
		n_plain = (unsigned)n;
	}
	*count = n_plain;
	return plain;
}

static bool not_supported(const char *fn)
{
	const char *list = getenv("FAKE_NVML_NOT_SUPPORTED");
	size_t len = strlen(fn);

	for (const char *p = list; p && *p; ) {
		size_t n = strcspn(p, ",");

		if (n == len && !strncmp(p, fn, n))
			return true;
		p += n;
		if (*p == ',')
			p++;
	}
	return false;
}

/* The common preamble: initialised, not knocked out. */
static nvmlReturn_t check(const char *fn)
{
	if (init_count <= 0)
		return NVML_ERROR_UNINITIALIZED;
	if (not_supported(fn))
		return NVML_ERROR_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

/* The same for an entry point taking a device handle. */
static nvmlReturn_t check_dev(const char *fn, const void *dev)
{
	nvmlReturn_t r = check(fn);

	return r == NVML_SUCCESS && !dev ? NVML_ERROR_INVALID_ARGUMENT : r;
}

/* check_dev() for the queries of MIG devices: NOT_SUPPORTED on a whole GPU. */
static nvmlReturn_t check_mig(const char *fn, nvmlDevice_t device)
{
	nvmlReturn_t r = check_dev(fn, device);

	return r ? r : device->is_mig ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

static nvmlReturn_t copy_out(char *dst, unsigned len, const char *src)
{
	if (!dst || strlen(src) + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, strlen(src) + 1);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void)
{
	const char *e = getenv("FAKE_NVML_INIT_ERROR");

	if (e && *e)
		return atoi(e);
	init_count++;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
	if (init_count <= 0)
		return NVML_ERROR_UNINITIALIZED;
	init_count--;
	return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
	default: return "Unknown Error";
	}
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	nvmlReturn_t r = check(__func__);

	return r ? r : copy_out(version, length, "580.159.04");
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
	nvmlReturn_t r = check(__func__);

	return r ? r : copy_out(version, length, "13.580.159.04");
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version)
{
	nvmlReturn_t r = check(__func__);

	if (!r)
		*version = 13000;
	return r;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version)
{
	nvmlReturn_t r = check(__func__);

	if (!r)
		*version = 13000;
	return r;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	nvmlReturn_t r = check(__func__);

	if (!r)
		devices(count);
	return r;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	nvmlReturn_t r = check(__func__);
	struct nvmlDevice_st *list;
	unsigned n;

	if (r)
		return r;
	list = devices(&n);
	if (index >= n)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &list[index];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	nvmlReturn_t r = check_dev(__func__, device);

	return r ? r : copy_out(name, length, device->name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	nvmlReturn_t r = check_dev(__func__, device);

	return r ? r : copy_out(uuid, length, device->uuid);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	nvmlReturn_t r = check_dev(__func__, device);

	if (r)
		return r;
	if (device->is_mig)
		return NVML_ERROR_NOT_SUPPORTED;
	memset(pci, 0, sizeof(*pci));
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%s", device->bus_id + 4);
	sscanf(device->bus_id, "%x:%x:%x", &pci->domain, &pci->bus, &pci->device);
	pci->pciDeviceId = 0x233510de;
	snprintf(pci->busId, sizeof(pci->busId), "%s", device->bus_id);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	nvmlReturn_t r = check_dev(__func__, device);

	if (r)
		return r;
	memory->total = device->mem_total;
	memory->used = device->mem_used;
	memory->free = device->mem_total - device->mem_used;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, int *mode)
{
	nvmlReturn_t r = check_dev(__func__, device);

	/* FAKE_NVML_PROHIBITED=<uuid> puts that GPU in compute mode
	 * Prohibited (2), for the refusal of `gpushare mps start`. */
	const char *prohibited = getenv("FAKE_NVML_PROHIBITED");

	if (!r)
		*mode = prohibited && !strcmp(prohibited, device->uuid) ? 2 : device->compute_mode;
	return r;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, int *mode)
{
	nvmlReturn_t r = check_dev(__func__, device);

	if (!r)
		*mode = device->persistence;
	return r;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minor)
{
	nvmlReturn_t r = check_dev(__func__, device);
	const char *e = getenv("FAKE_NVML_MINORS");
	unsigned count, i;
	struct nvmlDevice_st *all;

	if (r)
		return r;
	if (device->is_mig)
		return NVML_ERROR_NOT_SUPPORTED;
	all = devices(&count);
	i = (unsigned)(device - all);
	if (i >= count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*minor = i;
	for (unsigned k = 0; e && *e; k++) {
		char *end;
		unsigned long v = strtoul(e, &end, 10);

		if (end == e)
			break;
		if (k == i)
			*minor = (unsigned)v;
		e = *end == ',' ? end + 1 : end;
	}
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending)
{
	nvmlReturn_t r = check_dev(__func__, device);

	if (r)
		return r;
	*current = (unsigned)device->mig_current;
	*pending = (unsigned)device->mig_pending;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
	nvmlReturn_t r = check_dev(__func__, device);

	if (!r)
		*count = 7;
	return r;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *mig)
{
	nvmlReturn_t r = check_dev(__func__, device);

	if (r)
		return r;
	if (index >= 7)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!device->mig_current || !device->migs[index])
		return NVML_ERROR_NOT_FOUND;
	*mig = device->migs[index];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
	nvmlReturn_t r = check_mig(__func__, device);

	if (!r)
		*id = device->gi;
	return r;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
	nvmlReturn_t r = check_mig(__func__, device);

	if (!r)
		*id = device->ci;
	return r;
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *attr)
{
	nvmlReturn_t r = check_mig(__func__, device);

	if (r)
		return r;
	memset(attr, 0, sizeof(*attr));
	attr->multiprocessorCount = device->sm;
	attr->gpuInstanceSliceCount = device->sm / 16;
	attr->computeInstanceSliceCount = device->sm / 16;
	attr->memorySizeMB = device->mem_total / MIB;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *util)
{
	nvmlReturn_t r = check_dev(__func__, device);

	if (r)
		return r;
	if (!device->util_supported)
		return NVML_ERROR_NOT_SUPPORTED;
	util->gpu = device->util_gpu;
	util->memory = device->util_mem;
	return NVML_SUCCESS;
}

/* The current or (max) the maximum clock of type; the memory clock's maximum
 * is its current value here. fn is the NVML function, for check(). */
static nvmlReturn_t clock_info(const char *fn, nvmlDevice_t device, int type, bool max, unsigned int *mhz)
{
	nvmlReturn_t r = check_dev(fn, device);

	if (r)
		return r;
	if (type == NVML_CLOCK_SM || type == NVML_CLOCK_GRAPHICS)
		*mhz = max ? device->clock_sm_max : device->clock_sm;
	else if (type == NVML_CLOCK_MEM)
		*mhz = device->clock_mem;
	else
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int *mhz)
{
	return clock_info(__func__, device, type, false, mhz);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type, unsigned int *mhz)
{
	return clock_info(__func__, device, type, true, mhz);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *milliwatts)
{
	nvmlReturn_t r = check_dev(__func__, device);

	if (!r)
		*milliwatts = device->power_mw;
	return r;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *milliwatts)
{
	nvmlReturn_t r = check_dev(__func__, device);

	if (!r)
		*milliwatts = device->power_limit_mw;
	return r;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned int *celsius)
{
	nvmlReturn_t r = check_dev(__func__, device);

	if (r)
		return r;
	if (sensor != NVML_TEMPERATURE_GPU)
		return NVML_ERROR_INVALID_ARGUMENT;
	*celsius = device->temp_c;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *reasons)
{
	nvmlReturn_t r = check_dev(__func__, device);

	if (!r)
		*reasons = device->reasons;
	return r;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long *reasons)
{
	return nvmlDeviceGetCurrentClocksEventReasons(device, reasons);
}

/* The pids of FAKE_NVML_PIDS, 0 where absent. */
static void fake_pids(unsigned pids[4])
{
	const char *s = getenv("FAKE_NVML_PIDS");

	memset(pids, 0, 4 * sizeof(pids[0]));
	for (int i = 0; s && *s && i < 4; i++) {
		char *end;

		pids[i] = (unsigned)strtoul(s, &end, 10);
		s = *end == ',' ? end + 1 : end;
	}
}

/* Answer a process list the way NVML does: INSUFFICIENT_SIZE with the
 * needed count when the caller's array is too small. */
static nvmlReturn_t answer_procs(const nvmlProcessInfo_t *list, unsigned n, unsigned *count,
				 nvmlProcessInfo_t *infos)
{
	if (*count < n) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	if (n && !infos)
		return NVML_ERROR_INVALID_ARGUMENT;
	memcpy(infos, list, n * sizeof(*list));
	*count = n;
	return NVML_SUCCESS;
}

static nvmlProcessInfo_t proc(unsigned pid, unsigned long long mem)
{
	nvmlProcessInfo_t p = { pid, mem, NVML_INVALID_INSTANCE_ID, NVML_INVALID_INSTANCE_ID };

	return p;
}

static nvmlReturn_t compute_procs(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos)
{
	nvmlProcessInfo_t list[3];
	unsigned pids[4], n = 0;

	fake_pids(pids);
	if (device == &gpus[1]) {
		if (pids[0])
			list[n++] = proc(pids[0], 1 * GIB);
		if (pids[1])
			list[n++] = proc(pids[1], 64 * MIB);
		if (pids[2])
			list[n++] = proc(pids[2], 2 * GIB);
	}
	return answer_procs(list, n, count, infos);
}

static nvmlReturn_t mps_procs(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos)
{
	nvmlProcessInfo_t list[2];
	unsigned pids[4], n = 0;

	fake_pids(pids);
	if (device == &gpus[1]) {
		if (pids[2])
			list[n++] = proc(pids[2], 2 * GIB);
		if (pids[3])
			list[n++] = proc(pids[3], NVML_VALUE_NOT_AVAILABLE_ULL);
	}
	return answer_procs(list, n, count, infos);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
						     nvmlProcessInfo_t *infos)
{
	nvmlReturn_t r = check_dev(__func__, device);

	return r ? r : compute_procs(device, count, infos);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *count,
						     nvmlProcessInfo_t *infos)
{
	nvmlReturn_t r = check_dev(__func__, device);

	return r ? r : compute_procs(device, count, infos);
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
							nvmlProcessInfo_t *infos)
{
	nvmlReturn_t r = check_dev(__func__, device);

	return r ? r : mps_procs(device, count, infos);
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *count,
							nvmlProcessInfo_t *infos)
{
	nvmlReturn_t r = check_dev(__func__, device);

	return r ? r : mps_procs(device, count, infos);
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
					     unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp)
{
	nvmlReturn_t r = check_dev(__func__, device);
	const char *s = getenv("FAKE_NVML_PROC_SM");
	nvmlProcessUtilizationSample_t list[16];
	unsigned n = 0, pid, pct;
	int used;

	(void)lastSeenTimeStamp;
	if (r)
		return r;
	while (device == &gpus[1] && s && n < 16 && sscanf(s, "%u:%u%n", &pid, &pct, &used) == 2) {
		memset(&list[n], 0, sizeof(list[n]));
		list[n].pid = pid;
		list[n].smUtil = pct;
		list[n].timeStamp = (unsigned long long)time(NULL) * 1000000ull;
		n++;
		s += used;
		if (*s++ != ',')
			break;
	}
	if (!n)
		return NVML_ERROR_NOT_FOUND; /* as NVML with no sample since lastSeenTimeStamp */
	if (!utilization || *processSamplesCount < n) {
		*processSamplesCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	memcpy(utilization, list, n * sizeof(*list));
	*processSamplesCount = n;
	return NVML_SUCCESS;
}
