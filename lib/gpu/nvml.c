/*
 * GPU discovery and telemetry through NVML (libnvidia-ml.so.1), loaded with
 * dlopen so that gpushare builds and runs without the NVIDIA driver and says
 * "no NVIDIA driver found" there. GPUSHARE_NVML_LIBRARY names another
 * library (the tests' fake).
 *
 * The library is opened and nvmlInit_v2 called at the first
 * gpushare_nvml_open(); nvmlShutdown and dlclose follow the last
 * gpushare_nvml_close(). A field NVML cannot read (NOT_SUPPORTED, no
 * permission, an entry point this driver lacks) is reported as
 * GPUSHARE_UNKNOWN rather than failing the whole query: `gpushare info`
 * should show what it can.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <strings.h>

#include "sys.h"
#include "gpu_internal.h"
#include "gpushare/gpushare.h"
#include "gpushare/gpu.h"
#include "gpushare/util.h"
#include "nvml_types.h"

#define NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define MPS_SERVER_NAME "nvidia-cuda-mps-server"
#define MPS_CONTROL_NAME "nvidia-cuda-mps-control"
/* The kernel keeps 15 characters of a command name (TASK_COMM_LEN - 1). */
#define COMM_MAX 15

struct nvml_api {
#define X(required, ret, name, params) ret (*name) params;
	NVML_SYMBOLS(X)
#undef X
};

static const struct nvml_sym {
	const char *name;
	size_t offset;
	bool required;
} nvml_syms[] = {
#define X(required, ret, name, params) { #name, offsetof(struct nvml_api, name), required },
	NVML_SYMBOLS(X)
#undef X
};

_Static_assert(sizeof(void *) == sizeof(nvmlReturn_t (*)(void)), "function pointers stored from dlsym");

/* Loaded state, guarded by nvml_lock for open/close. Between them the
 * function pointers are read without the lock: they do not change while
 * nvml_refs > 0. */
static pthread_mutex_t nvml_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned nvml_refs;
static void *nvml_handle;
static struct nvml_api nvml;

/* Call an optional entry point; FUNCTION_NOT_FOUND when this driver lacks it. */
#define NVML_TRY(fn, ...) (nvml.fn ? nvml.fn(__VA_ARGS__) : NVML_ERROR_FUNCTION_NOT_FOUND)

static const char *nvml_errstr(nvmlReturn_t r)
{
	const char *s = NULL;

	if (r == NVML_ERROR_FUNCTION_NOT_FOUND)
		return "Function Not Found";
	if (nvml.nvmlErrorString)
		s = nvml.nvmlErrorString(r);
	return s ? s : "unknown NVML error";
}

static void nvml_unload(void)
{
	if (nvml_handle)
		dlclose(nvml_handle);
	nvml_handle = NULL;
	memset(&nvml, 0, sizeof(nvml));
}

static int nvml_load(void)
{
	const char *path = getenv("GPUSHARE_NVML_LIBRARY");
	nvmlReturn_t r;

	if (!path || !*path)
		path = NVML_DEFAULT_LIBRARY;
	nvml_handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!nvml_handle) {
		const char *e = dlerror();

		return gpushare_fail(GPUSHARE_E_NO_DRIVER, "%s", e ? e : path);
	}
	for (size_t i = 0; i < sizeof(nvml_syms) / sizeof(nvml_syms[0]); i++) {
		void *sym = dlsym(nvml_handle, nvml_syms[i].name);

		if (!sym && nvml_syms[i].required) {
			int rc = gpushare_fail(GPUSHARE_E_NO_DRIVER,
					       "%s: no symbol %s (driver too old?)", path, nvml_syms[i].name);

			nvml_unload();
			return rc;
		}
		memcpy((char *)&nvml + nvml_syms[i].offset, &sym, sizeof(sym));
	}
	r = nvml.nvmlInit_v2();
	if (r != NVML_SUCCESS) {
		int err = r == NVML_ERROR_DRIVER_NOT_LOADED || r == NVML_ERROR_LIBRARY_NOT_FOUND
				  ? GPUSHARE_E_NO_DRIVER : GPUSHARE_E_DRIVER;
		int rc = gpushare_fail(err, "nvmlInit_v2: %s", nvml_errstr(r));

		nvml_unload();
		return rc;
	}
	return GPUSHARE_OK;
}

int gpushare_nvml_open(void)
{
	int rc = GPUSHARE_OK;

	pthread_mutex_lock(&nvml_lock);
	if (nvml_refs == 0)
		rc = nvml_load();
	if (rc == GPUSHARE_OK)
		nvml_refs++;
	pthread_mutex_unlock(&nvml_lock);
	return rc;
}

void gpushare_nvml_close(void)
{
	pthread_mutex_lock(&nvml_lock);
	if (nvml_refs > 0 && --nvml_refs == 0) {
		nvml.nvmlShutdown();
		nvml_unload();
	}
	pthread_mutex_unlock(&nvml_lock);
}

const char *gpushare_compute_mode_name(int mode)
{
	switch (mode) {
	case GPUSHARE_COMPUTE_DEFAULT: return "Default";
	case GPUSHARE_COMPUTE_EXCLUSIVE_THREAD: return "Exclusive_Thread";
	case GPUSHARE_COMPUTE_PROHIBITED: return "Prohibited";
	case GPUSHARE_COMPUTE_EXCLUSIVE_PROCESS: return "Exclusive_Process";
	default: return "unknown";
	}
}

const char *gpushare_proc_kind_name(int kind)
{
	switch (kind) {
	case GPUSHARE_PROC_PLAIN: return "plain";
	case GPUSHARE_PROC_MPS_SERVER: return "mps-server";
	case GPUSHARE_PROC_MPS_CLIENT: return "mps-client";
	default: return "unknown";
	}
}

/* ---- pure helpers (unit tested) ---- */

int gpushare_proc_classify(const char *comm, const char *cmdline, bool in_mps_list)
{
	size_t arg0_len = strcspn(cmdline, " ");
	const char *base = cmdline;
	bool comm_server;

	for (size_t i = 0; i < arg0_len; i++) {
		if (cmdline[i] == '/')
			base = cmdline + i + 1;
	}
	arg0_len -= (size_t)(base - cmdline);
	if (arg0_len == strlen(MPS_SERVER_NAME) && !strncmp(base, MPS_SERVER_NAME, arg0_len))
		return GPUSHARE_PROC_MPS_SERVER;
	/* comm is "nvidia-cuda-mps" for both the server and the control
	 * daemon; argv[0] (when readable) tells them apart. */
	comm_server = !strcmp(comm, MPS_SERVER_NAME) ||
		      (strlen(comm) == COMM_MAX && !strncmp(comm, MPS_SERVER_NAME, COMM_MAX));
	if (comm_server && !(arg0_len == strlen(MPS_CONTROL_NAME) && !strncmp(base, MPS_CONTROL_NAME, arg0_len)))
		return GPUSHARE_PROC_MPS_SERVER;
	return in_mps_list ? GPUSHARE_PROC_MPS_CLIENT : GPUSHARE_PROC_PLAIN;
}

static size_t span_digits(const char *s)
{
	size_t n = 0;

	while (s[n] >= '0' && s[n] <= '9')
		n++;
	return n;
}

/* Length of a MIG profile ("1g.18gb", "1c.2g.35gb", "1g.10gb+me") at the
 * start of s and ending a word, or 0. */
static size_t profile_len(const char *s)
{
	size_t p = span_digits(s), d;

	if (p == 0)
		return 0;
	if (s[p] == 'c' && s[p + 1] == '.') {
		d = span_digits(s + p + 2);
		if (d == 0)
			return 0;
		p += 2 + d;
	}
	if (s[p] != 'g' || s[p + 1] != '.' || !(d = span_digits(s + p + 2)))
		return 0;
	p += 2 + d;
	if (strncmp(s + p, "gb", 2) != 0)
		return 0;
	p += 2;
	while (s[p] == '+' || s[p] == '-' || (s[p] >= 'a' && s[p] <= 'z') || (s[p] >= '0' && s[p] <= '9'))
		p++;
	return s[p] == '\0' || s[p] == ' ' ? p : 0;
}

void gpushare_mig_profile_parse(const char *name, char *out, size_t len)
{
	const char *found = NULL;
	size_t found_len = 0;

	out[0] = '\0';
	/* The last word that looks like a profile wins ("... MIG 1g.18gb"). */
	for (const char *w = name; *w; ) {
		size_t n;

		while (*w == ' ')
			w++;
		n = profile_len(w);
		if (n) {
			found = w;
			found_len = n;
		}
		w += strcspn(w, " ");
	}
	if (found && found_len < len) {
		memcpy(out, found, found_len);
		out[found_len] = '\0';
	}
}

/* ---- reading fields ---- */

static int as_int(nvmlReturn_t r, unsigned v)
{
	return r == NVML_SUCCESS && v <= INT_MAX ? (int)v : GPUSHARE_UNKNOWN;
}

static int as_bool(nvmlReturn_t r, unsigned v)
{
	return r == NVML_SUCCESS ? v != 0 : GPUSHARE_UNKNOWN;
}

static int nvml_require_open(void)
{
	unsigned refs;

	pthread_mutex_lock(&nvml_lock);
	refs = nvml_refs;
	pthread_mutex_unlock(&nvml_lock);
	if (refs == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "NVML is not open (call gpushare_nvml_open first)");
	return GPUSHARE_OK;
}

static int device_handle(unsigned index, nvmlDevice_t *dev)
{
	nvmlReturn_t r;

	r = nvml.nvmlDeviceGetHandleByIndex_v2(index, dev);
	if (r == NVML_ERROR_INVALID_ARGUMENT || r == NVML_ERROR_NOT_FOUND)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "no GPU with index %u", index);
	if (r != NVML_SUCCESS)
		return gpushare_fail(GPUSHARE_E_DRIVER, "GPU %u: nvmlDeviceGetHandleByIndex_v2: %s", index, nvml_errstr(r));
	return GPUSHARE_OK;
}

static int clock_mhz(nvmlDevice_t dev, int type, bool max)
{
	unsigned v = 0;
	nvmlReturn_t r = max ? NVML_TRY(nvmlDeviceGetMaxClockInfo, dev, type, &v)
			     : NVML_TRY(nvmlDeviceGetClockInfo, dev, type, &v);

	return as_int(r, v);
}

static int power_mw(nvmlDevice_t dev)
{
	unsigned v = 0;
	nvmlReturn_t r = NVML_TRY(nvmlDeviceGetPowerUsage, dev, &v);

	return as_int(r, v);
}

static int power_limit_mw(nvmlDevice_t dev)
{
	unsigned v = 0;
	nvmlReturn_t r = NVML_TRY(nvmlDeviceGetEnforcedPowerLimit, dev, &v);

	return r == NVML_SUCCESS && v <= INT_MAX ? (int)v : GPUSHARE_UNKNOWN;
}

/* The clocks-event reasons (the older name on drivers before 535). */
static uint64_t throttle_reasons(nvmlDevice_t dev)
{
	unsigned long long reasons = 0;
	nvmlReturn_t r = NVML_TRY(nvmlDeviceGetCurrentClocksEventReasons, dev, &reasons);

	if (r == NVML_ERROR_FUNCTION_NOT_FOUND)
		r = NVML_TRY(nvmlDeviceGetCurrentClocksThrottleReasons, dev, &reasons);
	return r == NVML_SUCCESS ? (uint64_t)reasons : GPUSHARE_UNKNOWN_U64;
}

/* NVML's clocks-event reasons by bit, in nvidia-smi's words. */
static const char *const throttle_names[] = {
	"gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
	"sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "display_clock_setting",
};

const char *gpushare_throttle_reason_name(unsigned bit)
{
	return bit < sizeof(throttle_names) / sizeof(throttle_names[0]) ? throttle_names[bit] : NULL;
}

const char *gpushare_throttle_reasons_str(uint64_t reasons, char *buf, size_t len)
{
	size_t used = 0;
	uint64_t rest = reasons;

	if (!len)
		return buf;
	buf[0] = '\0';
	if (reasons == GPUSHARE_UNKNOWN_U64)
		return snprintf(buf, len, "unknown"), buf;
	if (reasons == 0)
		return snprintf(buf, len, "none"), buf;
	for (unsigned i = 0; gpushare_throttle_reason_name(i); i++) {
		if (!(reasons & (1ULL << i)))
			continue;
		rest &= ~(1ULL << i);
		if (used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "", throttle_names[i]);
	}
	if (rest && used < len)
		snprintf(buf + used, len - used, "%s0x%llx", used ? "," : "", (unsigned long long)rest);
	return buf;
}

static int temperature_c(nvmlDevice_t dev)
{
	unsigned v = 0;
	nvmlReturn_t r = NVML_TRY(nvmlDeviceGetTemperature, dev, NVML_TEMPERATURE_GPU, &v);

	return as_int(r, v);
}

static void utilization(nvmlDevice_t dev, int *gpu, int *mem)
{
	nvmlUtilization_t u = { 0, 0 };
	nvmlReturn_t r = NVML_TRY(nvmlDeviceGetUtilizationRates, dev, &u);

	*gpu = as_int(r, u.gpu);
	*mem = as_int(r, u.memory);
}

static nvmlReturn_t memory_info(nvmlDevice_t dev, uint64_t *total, uint64_t *used, uint64_t *avail)
{
	nvmlMemory_t m = { 0, 0, 0 };
	nvmlReturn_t r = NVML_TRY(nvmlDeviceGetMemoryInfo, dev, &m);

	*total = r == NVML_SUCCESS ? m.total : GPUSHARE_UNKNOWN_U64;
	*used = r == NVML_SUCCESS ? m.used : GPUSHARE_UNKNOWN_U64;
	if (avail)
		*avail = r == NVML_SUCCESS ? m.free : GPUSHARE_UNKNOWN_U64;
	return r;
}

static int instance_id(nvmlReturn_t r, unsigned id)
{
	return r == NVML_SUCCESS && id != NVML_INVALID_INSTANCE_ID ? as_int(r, id) : GPUSHARE_UNKNOWN;
}

static void copy_str(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src);
}

/*
 * One of the device's process lists (compute or MPS compute), _v3 preferred,
 * _v2 otherwise. On success *out is malloc'ed with room for
 * NVML_PROCESS_INFO_MAX_SIZE bytes per entry (see nvml_types.h).
 */
static nvmlReturn_t process_list(nvmlDevice_t dev, bool mps, nvmlProcessInfo_t **out, unsigned *n)
{
	nvmlReturn_t (*fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
	unsigned cap = 32;

	*out = NULL;
	*n = 0;
	if (mps)
		fn = nvml.nvmlDeviceGetMPSComputeRunningProcesses_v3 ? nvml.nvmlDeviceGetMPSComputeRunningProcesses_v3
								    : nvml.nvmlDeviceGetMPSComputeRunningProcesses_v2;
	else
		fn = nvml.nvmlDeviceGetComputeRunningProcesses_v3 ? nvml.nvmlDeviceGetComputeRunningProcesses_v3
								 : nvml.nvmlDeviceGetComputeRunningProcesses_v2;
	if (!fn)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	/* The list can grow between the calls; retry a few times. */
	for (int tries = 0; tries < 4; tries++) {
		nvmlProcessInfo_t *buf = calloc(cap, NVML_PROCESS_INFO_MAX_SIZE);
		unsigned count = cap;
		nvmlReturn_t r;

		if (!buf)
			return NVML_ERROR_UNKNOWN;
		r = fn(dev, &count, buf);
		if (r == NVML_SUCCESS) {
			*out = buf;
			*n = count < cap ? count : cap;
			return r;
		}
		free(buf);
		if (r != NVML_ERROR_INSUFFICIENT_SIZE)
			return r;
		cap = count > cap ? count + 16 : cap * 2;
	}
	return NVML_ERROR_INSUFFICIENT_SIZE;
}

static bool pid_listed(const nvmlProcessInfo_t *list, unsigned n, unsigned pid)
{
	for (unsigned i = 0; i < n; i++) {
		if (list[i].pid == pid)
			return true;
	}
	return false;
}

static void proc_fill(struct gpushare_proc_info *p, const nvmlProcessInfo_t *e, bool in_mps_list)
{
	char cmdline[512];
	size_t n;

	p->pid = (pid_t)e->pid;
	gpushare_pid_comm(p->pid, p->name, sizeof(p->name));
	gpushare_pid_cmdline(p->pid, cmdline, sizeof(cmdline));
	gpushare_pid_user(p->pid, p->user, sizeof(p->user));
	n = strnlen(cmdline, sizeof(p->command) - 1); /* the command line, cut to fit */
	memcpy(p->command, cmdline, n);
	p->command[n] = '\0';
	p->mem_used_bytes = e->usedGpuMemory == NVML_VALUE_NOT_AVAILABLE_ULL ? GPUSHARE_UNKNOWN_U64 : e->usedGpuMemory;
	p->kind = gpushare_proc_classify(p->name, cmdline, in_mps_list);
	p->gpu_instance_id = instance_id(NVML_SUCCESS, e->gpuInstanceId);
}

/* Each process's SM utilisation as NVML samples it: the mean of its
 * samples of the last GPUSHARE_PROC_SM_WINDOW_S seconds, into sm_percent
 * (GPUSHARE_UNKNOWN for a process without samples). */
static void query_proc_sm(nvmlDevice_t dev, struct gpushare_gpu_info *g)
{
	nvmlProcessUtilizationSample_t *s = NULL;
	unsigned n = 0;
	struct timespec now;
	unsigned long long since;

	for (size_t k = 0; k < g->n_procs; k++)
		g->procs[k].sm_percent = GPUSHARE_UNKNOWN;
	if (!nvml.nvmlDeviceGetProcessUtilization || !g->n_procs)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	since = (unsigned long long)now.tv_sec * 1000000ull + (unsigned long long)now.tv_nsec / 1000ull -
		GPUSHARE_PROC_SM_WINDOW_S * 1000000ull;
	/* the count first (INSUFFICIENT_SIZE with it), then the samples; a
	 * process that appeared in between can make the second call short */
	if (nvml.nvmlDeviceGetProcessUtilization(dev, NULL, &n, since) != NVML_ERROR_INSUFFICIENT_SIZE || n == 0)
		return;
	n += 16;
	if (!(s = calloc(n, sizeof(*s))))
		return;
	if (nvml.nvmlDeviceGetProcessUtilization(dev, s, &n, since) == NVML_SUCCESS) {
		for (size_t k = 0; k < g->n_procs; k++) {
			unsigned long long sum = 0, count = 0;

			for (unsigned i = 0; i < n; i++)
				if ((pid_t)s[i].pid == g->procs[k].pid && s[i].smUtil <= 100) {
					sum += s[i].smUtil;
					count++;
				}
			if (count)
				g->procs[k].sm_percent = (int)((sum + count / 2) / count);
		}
	}
	free(s);
}

/* Compute processes: those NVML lists as compute processes, then MPS
 * clients it lists only among the MPS compute processes. A list NVML cannot
 * give (no permission, not supported) leaves the processes empty. */
static int query_procs(nvmlDevice_t dev, struct gpushare_gpu_info *g)
{
	nvmlProcessInfo_t *cp = NULL, *mp = NULL;
	unsigned ncp = 0, nmp = 0;
	int rc = GPUSHARE_OK;

	if (process_list(dev, false, &cp, &ncp) != NVML_SUCCESS)
		ncp = 0;
	if (process_list(dev, true, &mp, &nmp) != NVML_SUCCESS)
		nmp = 0;
	if (ncp + nmp > 0) {
		g->procs = calloc(ncp + nmp, sizeof(*g->procs));
		if (!g->procs) {
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "cannot store GPU processes");
			goto out;
		}
	}
	for (unsigned i = 0; i < ncp; i++) {
		if (i > 0 && pid_listed(cp, i, cp[i].pid))
			continue;
		proc_fill(&g->procs[g->n_procs++], &cp[i], pid_listed(mp, nmp, cp[i].pid));
	}
	for (unsigned i = 0; i < nmp; i++) {
		if (pid_listed(cp, ncp, mp[i].pid) || (i > 0 && pid_listed(mp, i, mp[i].pid)))
			continue;
		proc_fill(&g->procs[g->n_procs++], &mp[i], true);
	}
	query_proc_sm(dev, g);
out:
	free(cp);
	free(mp);
	return rc;
}

static void query_mig(nvmlDevice_t mig, unsigned index, struct gpushare_mig_info *m)
{
	nvmlDeviceAttributes_t attr;
	unsigned id = 0;
	nvmlReturn_t r;

	m->index = index;
	if (nvml.nvmlDeviceGetUUID(mig, m->uuid, sizeof(m->uuid)) != NVML_SUCCESS)
		m->uuid[0] = '\0';
	if (nvml.nvmlDeviceGetName(mig, m->name, sizeof(m->name)) != NVML_SUCCESS)
		m->name[0] = '\0';
	gpushare_mig_profile_parse(m->name, m->profile, sizeof(m->profile));
	r = NVML_TRY(nvmlDeviceGetGpuInstanceId, mig, &id);
	m->gpu_instance_id = instance_id(r, id);
	r = NVML_TRY(nvmlDeviceGetComputeInstanceId, mig, &id);
	m->compute_instance_id = instance_id(r, id);
	memset(&attr, 0, sizeof(attr));
	r = NVML_TRY(nvmlDeviceGetAttributes_v2, mig, &attr);
	m->sm_count = as_int(r, attr.multiprocessorCount);
	if (memory_info(mig, &m->mem_total_bytes, &m->mem_used_bytes, NULL) != NVML_SUCCESS &&
	    r == NVML_SUCCESS && attr.memorySizeMB > 0)
		m->mem_total_bytes = attr.memorySizeMB << 20;
}

static int query_migs(nvmlDevice_t dev, struct gpushare_gpu_info *g)
{
	unsigned max = 0;

	if (g->mig_current != 1 || NVML_TRY(nvmlDeviceGetMaxMigDeviceCount, dev, &max) != NVML_SUCCESS ||
	    max == 0 || !nvml.nvmlDeviceGetMigDeviceHandleByIndex)
		return GPUSHARE_OK;
	if (max > 64)
		max = 64;
	g->migs = calloc(max, sizeof(*g->migs));
	if (!g->migs)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot store MIG devices");
	for (unsigned i = 0; i < max; i++) {
		nvmlDevice_t mig;

		/* Slots without a MIG device answer NOT_FOUND. */
		if (nvml.nvmlDeviceGetMigDeviceHandleByIndex(dev, i, &mig) != NVML_SUCCESS)
			continue;
		query_mig(mig, i, &g->migs[g->n_migs++]);
	}
	return GPUSHARE_OK;
}

static int query_gpu(unsigned index, struct gpushare_gpu_info *g)
{
	nvmlDeviceAttributes_t attr;
	nvmlPciInfo_t pci;
	unsigned cur = 0, pend = 0;
	nvmlDevice_t dev;
	nvmlReturn_t r;
	int mode = 0, rc;

	g->index = index;
	rc = device_handle(index, &dev);
	if (rc)
		return rc;
	r = nvml.nvmlDeviceGetName(dev, g->name, sizeof(g->name));
	if (r != NVML_SUCCESS)
		return gpushare_fail(GPUSHARE_E_DRIVER, "GPU %u: nvmlDeviceGetName: %s", index, nvml_errstr(r));
	r = nvml.nvmlDeviceGetUUID(dev, g->uuid, sizeof(g->uuid));
	if (r != NVML_SUCCESS)
		return gpushare_fail(GPUSHARE_E_DRIVER, "GPU %u: nvmlDeviceGetUUID: %s", index, nvml_errstr(r));
	memset(&pci, 0, sizeof(pci));
	if (NVML_TRY(nvmlDeviceGetPciInfo_v3, dev, &pci) == NVML_SUCCESS)
		copy_str(g->pci_bus_id, sizeof(g->pci_bus_id), pci.busId);
	/* Full GPUs get their SM count from libcuda later; NVML answers this
	 * only for MIG devices today, but take it should it ever answer. */
	memset(&attr, 0, sizeof(attr));
	r = NVML_TRY(nvmlDeviceGetAttributes_v2, dev, &attr);
	g->sm_count = as_int(r, attr.multiprocessorCount);
	if (g->sm_count == 0)
		g->sm_count = GPUSHARE_UNKNOWN;
	memory_info(dev, &g->mem_total_bytes, &g->mem_used_bytes, &g->mem_free_bytes);
	r = NVML_TRY(nvmlDeviceGetComputeMode, dev, &mode);
	g->compute_mode = r == NVML_SUCCESS && mode >= 0 && mode <= 3 ? mode : GPUSHARE_UNKNOWN;
	r = NVML_TRY(nvmlDeviceGetMigMode, dev, &cur, &pend);
	g->mig_current = as_bool(r, cur);
	g->mig_pending = as_bool(r, pend);
	r = NVML_TRY(nvmlDeviceGetPersistenceMode, dev, &mode);
	g->persistence = as_bool(r, (unsigned)mode);
	utilization(dev, &g->util_gpu_pct, &g->util_mem_pct);
	g->clock_sm_mhz = clock_mhz(dev, NVML_CLOCK_SM, false);
	g->clock_mem_mhz = clock_mhz(dev, NVML_CLOCK_MEM, false);
	g->clock_sm_max_mhz = clock_mhz(dev, NVML_CLOCK_SM, true);
	g->power_mw = power_mw(dev);
	g->power_limit_mw = power_limit_mw(dev);
	g->temperature_c = temperature_c(dev);
	g->throttle_reasons = throttle_reasons(dev);
	rc = query_migs(dev, g);
	if (rc)
		return rc;
	return query_procs(dev, g);
}

/* Fill SM counts from libcuda, matching devices by UUID. */
static void fill_sm_counts(struct gpushare_system_info *out)
{
	struct gpushare_cuda_dev *devs = NULL;
	size_t n = 0;
	int rc = gpushare_cuda_query(&devs, &n, GPUSHARE_CUDA_QUERY_TIMEOUT_MS);

	if (rc) {
		copy_str(out->cuda_error, sizeof(out->cuda_error), gpushare_errdetail());
		if (!out->cuda_error[0])
			copy_str(out->cuda_error, sizeof(out->cuda_error), gpushare_strerror(rc));
		gpushare_clear_error();
		return;
	}
	for (size_t d = 0; d < n; d++) {
		if (devs[d].sm_count <= 0)
			continue;
		for (size_t i = 0; i < out->n_gpus; i++) {
			struct gpushare_gpu_info *g = &out->gpus[i];

			if (gpushare_uuid_matches(g->uuid, devs[d].uuid))
				g->sm_count = devs[d].sm_count;
			for (size_t k = 0; k < g->n_migs; k++) {
				if (g->migs[k].sm_count == GPUSHARE_UNKNOWN &&
				    gpushare_uuid_matches(g->migs[k].uuid, devs[d].uuid))
					g->migs[k].sm_count = devs[d].sm_count;
			}
		}
	}
	free(devs);
}

static int system_query(struct gpushare_system_info *out, bool sm_counts)
{
	unsigned count = 0;
	nvmlReturn_t r;
	int rc, ver = 0;

	memset(out, 0, sizeof(*out));
	out->cuda_driver_version = GPUSHARE_UNKNOWN;
	rc = gpushare_nvml_open();
	if (rc)
		return rc;
	r = nvml.nvmlSystemGetDriverVersion(out->driver_version, sizeof(out->driver_version));
	if (r != NVML_SUCCESS)
		out->driver_version[0] = '\0';
	r = NVML_TRY(nvmlSystemGetCudaDriverVersion_v2, &ver);
	if (r == NVML_ERROR_FUNCTION_NOT_FOUND)
		r = NVML_TRY(nvmlSystemGetCudaDriverVersion, &ver);
	out->cuda_driver_version = r == NVML_SUCCESS && ver > 0 ? ver : GPUSHARE_UNKNOWN;
	if (NVML_TRY(nvmlSystemGetNVMLVersion, out->nvml_version, sizeof(out->nvml_version)) != NVML_SUCCESS)
		out->nvml_version[0] = '\0';
	r = nvml.nvmlDeviceGetCount_v2(&count);
	if (r != NVML_SUCCESS) {
		rc = gpushare_fail(GPUSHARE_E_DRIVER, "nvmlDeviceGetCount_v2: %s", nvml_errstr(r));
		goto fail;
	}
	if (count > 0) {
		out->gpus = calloc(count, sizeof(*out->gpus));
		if (!out->gpus) {
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "cannot store %u GPUs", count);
			goto fail;
		}
	}
	for (unsigned i = 0; i < count; i++) {
		out->n_gpus++;
		rc = query_gpu(i, &out->gpus[i]);
		if (rc)
			goto fail;
	}
	gpushare_nvml_close();
	if (sm_counts && out->n_gpus > 0)
		fill_sm_counts(out);
	return GPUSHARE_OK;
fail:
	gpushare_nvml_close();
	gpushare_system_release(out);
	return rc;
}

int gpushare_system_query(struct gpushare_system_info *out)
{
	return system_query(out, true);
}

int gpushare_system_query_nvml(struct gpushare_system_info *out)
{
	return system_query(out, false);
}

void gpushare_system_release(struct gpushare_system_info *info)
{
	if (!info)
		return;
	for (size_t i = 0; i < info->n_gpus; i++) {
		free(info->gpus[i].migs);
		free(info->gpus[i].procs);
	}
	free(info->gpus);
	info->gpus = NULL;
	info->n_gpus = 0;
}

int gpushare_gpu_count(unsigned *count)
{
	nvmlReturn_t r;
	int rc = nvml_require_open();

	if (rc)
		return rc;
	r = nvml.nvmlDeviceGetCount_v2(count);
	if (r != NVML_SUCCESS)
		return gpushare_fail(GPUSHARE_E_DRIVER, "nvmlDeviceGetCount_v2: %s", nvml_errstr(r));
	return GPUSHARE_OK;
}

int gpushare_gpu_by_minor(unsigned minor, unsigned *index)
{
	unsigned count = 0;
	int rc = gpushare_gpu_count(&count);

	for (unsigned i = 0; !rc && i < count; i++) {
		unsigned m = 0;
		nvmlDevice_t dev;
		nvmlReturn_t r;

		if ((rc = device_handle(i, &dev)))
			break;
		r = NVML_TRY(nvmlDeviceGetMinorNumber, dev, &m);
		if (r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_NOT_SUPPORTED)
			return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "GPU %u: nvmlDeviceGetMinorNumber: %s", i,
					     nvml_errstr(r));
		if (r != NVML_SUCCESS)
			return gpushare_fail(GPUSHARE_E_DRIVER, "GPU %u: nvmlDeviceGetMinorNumber: %s", i, nvml_errstr(r));
		if (m == minor) {
			*index = i;
			return GPUSHARE_OK;
		}
	}
	return rc ? rc : gpushare_fail(GPUSHARE_E_NOT_FOUND, "no GPU has the device file /dev/nvidia%u", minor);
}

static bool all_digits(const char *s)
{
	return *s && span_digits(s) == strlen(s);
}

int gpushare_gpu_find(const char *spec, unsigned *index)
{
	unsigned count = 0, found = 0, matches = 0;
	size_t len;
	int rc;

	if (!spec || !*spec)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty GPU name");
	rc = gpushare_gpu_count(&count);
	if (rc)
		return rc;
	if (all_digits(spec)) {
		unsigned long v;

		errno = 0;
		v = strtoul(spec, NULL, 10);
		if (errno || v >= count)
			return gpushare_fail(GPUSHARE_E_NOT_FOUND, "no GPU with index %s (%u found)", spec, count);
		*index = (unsigned)v;
		return GPUSHARE_OK;
	}
	len = strlen(spec);
	if (len <= 4 && !strncasecmp(spec, "GPU-", len))
		return gpushare_fail(GPUSHARE_E_INVAL, "GPU '%s' is too short to name one GPU", spec);
	for (unsigned i = 0; i < count; i++) {
		char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
		nvmlDevice_t dev;
		nvmlReturn_t r;
		const char *u = uuid;

		rc = device_handle(i, &dev);
		if (rc)
			return rc;
		r = nvml.nvmlDeviceGetUUID(dev, uuid, sizeof(uuid));
		if (r != NVML_SUCCESS)
			return gpushare_fail(GPUSHARE_E_DRIVER, "GPU %u: nvmlDeviceGetUUID: %s", i, nvml_errstr(r));
		/* "GPU-5f0c..." or just "5f0c...". */
		if (strncasecmp(spec, "GPU-", 4) != 0 && !strncasecmp(uuid, "GPU-", 4))
			u += 4;
		if (!strcasecmp(u, spec)) {
			*index = i;
			return GPUSHARE_OK;
		}
		if (!strncasecmp(u, spec, len)) {
			if (matches++ == 0)
				found = i;
		}
	}
	if (matches == 1) {
		*index = found;
		return GPUSHARE_OK;
	}
	if (matches > 1)
		return gpushare_fail(GPUSHARE_E_INVAL, "GPU '%s' is ambiguous: %u GPUs have UUIDs starting so",
				     spec, matches);
	return gpushare_fail(GPUSHARE_E_NOT_FOUND, "no GPU with index or UUID '%s'", spec);
}

int gpushare_gpu_compute_mode(unsigned index, int *mode)
{
	nvmlDevice_t dev;
	nvmlReturn_t r;
	int m = 0, rc = nvml_require_open();

	if (rc)
		return rc;
	rc = device_handle(index, &dev);
	if (rc)
		return rc;
	r = NVML_TRY(nvmlDeviceGetComputeMode, dev, &m);
	if (r == NVML_SUCCESS && m >= 0 && m <= 3)
		*mode = m;
	else if (r == NVML_SUCCESS || r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND)
		*mode = GPUSHARE_UNKNOWN;
	else
		return gpushare_fail(GPUSHARE_E_DRIVER, "GPU %u: nvmlDeviceGetComputeMode: %s", index, nvml_errstr(r));
	return GPUSHARE_OK;
}

int gpushare_gpu_sample(unsigned index, struct gpushare_gpu_sample *s)
{
	unsigned long long reasons = 0;
	uint64_t total;
	nvmlDevice_t dev;
	nvmlReturn_t r;
	int util_mem, rc = nvml_require_open();

	if (rc)
		return rc;
	rc = device_handle(index, &dev);
	if (rc)
		return rc;
	memset(s, 0, sizeof(*s));
	s->t_ns = gpushare_now_ns();
	utilization(dev, &s->util_gpu_pct, &util_mem);
	memory_info(dev, &total, &s->mem_used_bytes, NULL);
	s->clock_sm_mhz = clock_mhz(dev, NVML_CLOCK_SM, false);
	s->clock_sm_max_mhz = clock_mhz(dev, NVML_CLOCK_SM, true);
	s->power_mw = power_mw(dev);
	s->temperature_c = temperature_c(dev);
	r = NVML_TRY(nvmlDeviceGetCurrentClocksEventReasons, dev, &reasons);
	if (r == NVML_ERROR_FUNCTION_NOT_FOUND)
		r = NVML_TRY(nvmlDeviceGetCurrentClocksThrottleReasons, dev, &reasons);
	if (r == NVML_SUCCESS) {
		s->throttle_reasons = reasons;
		s->throttled = (reasons & ~(NVML_CLOCKS_EVENT_REASON_GPU_IDLE |
					    NVML_CLOCKS_EVENT_REASON_APPLICATIONS_CLOCKS_SETTING)) != 0;
	}
	return GPUSHARE_OK;
}
