/*
 * A stand-in for libcuda.so.1, loaded through GPUSHARE_CUDA_LIBRARY, for
 * testing the SM-count query without a GPU. It shows one device: GPU 1 of
 * the fake NVML (libfakenvml.c), with 132 SMs, and the first MIG device of
 * its GPU 0 (whose SM count NVML already gives, so the NVML value must win).
 * Knobs: FAKE_CUDA_HANG=1 makes cuInit sleep for a minute (the caller must
 * kill it); FAKE_CUDA_INIT_ERROR=<CUresult> makes cuInit fail;
 * FAKE_CUDA_RECORD=<file> makes cuInit write what the query's environment
 * looked like: "pipe_dir=<CUDA_MPS_PIPE_DIRECTORY>", "entries=<n>" (files in
 * that directory), "mode=<octal>", "visible=<CUDA_VISIBLE_DEVICES or ->".
 *
 * FAKE_CUDA_OPEN_LOG=<file> makes it a node's GPUs instead, as a CUDA
 * program would open them, for checking from the outside which physical
 * GPU each process used: the FAKE_NVML_GPUS plain GPUs of the stand-in NVML
 * (the same UUIDs, FAKE_NVML_NODE_UUIDS included), filtered and ordered by
 * CUDA_VISIBLE_DEVICES as CUDA does (an index, a UUID or a unique prefix of
 * one; the list ends at the first entry that names no GPU, and a GPU named
 * twice makes it empty). cuDeviceGetCount counts those; each cuDeviceGet
 * appends one line to the file (one write, O_APPEND: lines of concurrent
 * processes never mix):
 *   <pid> job=<SLURM_JOB_ID> node=<host name> gpu=<physical index>
 *   uuid=<UUID> pipe=<CUDA_MPS_PIPE_DIRECTORY> ("-" for a variable unset)
 * and cuInit fails with CUDA_ERROR_NO_DEVICE when none is visible.
 * cuDeviceGetUuid(_v2) of an ordinal then gives its physical GPU's UUID, the
 * stand-in NVML's for that GPU (as the real driver and NVML agree), so that
 * a process's records name the GPU CUDA_VISIBLE_DEVICES gave it.
 *
 * Without FAKE_CUDA_OPEN_LOG, cuDeviceGetUuid_v2 of the MIG device gives its
 * MIG UUID and cuDeviceGetUuid its GPU's (GPU 0's), as the real driver does.
 *
 * For the accounting library's launch timing: contexts (a context is
 * (CUcontext)(device + 1), current per thread), and events stamped with
 * CLOCK_MONOTONIC when recorded (a recorded event is complete at once; the
 * stand-in CUPTI's launches take their time between the entry and the exit,
 * where the library records its two events). FAKE_CUDA_CAPTURING=1 reports
 * every stream as being captured into a graph.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/gpu/cuda_types.h"

#define X(required, ret, name, params) ret name params;
CUDA_SYMBOLS(X)
#undef X

static const unsigned char uuids[2][16] = {
	/* GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70 */
	{ 0x5f, 0x0c, 0x1e, 0x2a, 0x9b, 0x3d, 0x4c, 0x7e, 0x8a, 0x1f, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f, 0x70 },
	/* MIG-11aa22bb-33cc-44dd-55ee-66ff77008811 */
	{ 0x11, 0xaa, 0x22, 0xbb, 0x33, 0xcc, 0x44, 0xdd, 0x55, 0xee, 0x66, 0xff, 0x77, 0x00, 0x88, 0x11 },
};
/* cuDeviceGetUuid (not _v2) of the MIG device: its GPU's, GPU-8e4a3c1d-1f2b-4c5d-9e6f-0a1b2c3d4e5f */
static const unsigned char mig_parent[16] = { 0x8e, 0x4a, 0x3c, 0x1d, 0x1f, 0x2b, 0x4c, 0x5d,
					      0x9e, 0x6f, 0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f };
static const int sms[2] = { 132, 99 };
static int initialised;

static void record(const char *path)
{
	const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	struct stat st;
	int entries = -1;
	FILE *f = fopen(path, "w");

	if (!f)
		return;
	if (dir) {
		DIR *d = opendir(dir);
		struct dirent *e;

		if (d) {
			entries = 0;
			while ((e = readdir(d)) != NULL)
				entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
			closedir(d);
		}
	}
	fprintf(f, "pipe_dir=%s\nentries=%d\nmode=%o\nvisible=%s\n", dir ? dir : "-", entries,
		dir && stat(dir, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0u, vis ? vis : "-");
	fclose(f);
}

/* ---- FAKE_CUDA_OPEN_LOG: the node's GPUs as a CUDA program opens them ---- */

#define NODE_MAX 64
static unsigned n_visible, visible_phys[NODE_MAX];

/* The stand-in NVML's UUID of plain GPU i (libfakenvml.c, FAKE_NVML_GPUS). */
static void node_uuid(unsigned i, char *out, size_t len)
{
	const char *e = getenv("FAKE_NVML_NODE_UUIDS");
	char host[256] = "";
	unsigned node = 0;
	size_t n;

	if (e && !strcmp(e, "1") && gethostname(host, sizeof(host) - 1) == 0) {
		n = strlen(host);
		while (n > 0 && host[n - 1] >= '0' && host[n - 1] <= '9')
			n--;
		node = (unsigned)(strtoul(host + n, NULL, 10) & 0xffff);
	}
	snprintf(out, len, "GPU-fa4e0000-%04x-4000-8000-%012x", node, i);
}

/* The physical GPU an entry of CUDA_VISIBLE_DEVICES names; -1 none. */
static int entry_gpu(const char *entry, size_t len, unsigned n_gpus)
{
	char uuid[64];
	int found = -1;

	if (len && strspn(entry, "0123456789") >= len) {
		unsigned long v = strtoul(entry, NULL, 10);

		return v < n_gpus ? (int)v : -1;
	}
	for (unsigned i = 0; i < n_gpus; i++) {
		node_uuid(i, uuid, sizeof(uuid));
		if (len >= 5 && len <= strlen(uuid) && !strncmp(uuid, entry, len)) {
			if (found >= 0)
				return -1; /* a prefix of two */
			found = (int)i;
		}
	}
	return found;
}

static void node_visible(void)
{
	const char *e = getenv("FAKE_NVML_GPUS"), *cvd = getenv("CUDA_VISIBLE_DEVICES");
	long n = e && *e ? strtol(e, NULL, 10) : 2;
	unsigned n_gpus = n >= 1 && n <= NODE_MAX ? (unsigned)n : 2;

	n_visible = 0;
	if (!cvd) {
		for (unsigned i = 0; i < n_gpus; i++)
			visible_phys[n_visible++] = i;
		return;
	}
	for (const char *p = cvd; *p && n_visible < NODE_MAX;) {
		size_t len = strcspn(p, ",");
		int g = entry_gpu(p, len, n_gpus);

		if (g < 0)
			break;
		for (unsigned k = 0; k < n_visible; k++) {
			if (visible_phys[k] == (unsigned)g) {
				n_visible = 0;
				return;
			}
		}
		visible_phys[n_visible++] = (unsigned)g;
		p += len;
		if (*p == ',')
			p++;
	}
}

static void log_open(const char *path, unsigned phys)
{
	const char *job = getenv("SLURM_JOB_ID"), *pipe = getenv("CUDA_MPS_PIPE_DIRECTORY");
	char host[256] = "", uuid[64], line[1024];
	int fd, n;

	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "-");
	node_uuid(phys, uuid, sizeof(uuid));
	n = snprintf(line, sizeof(line), "%d job=%s node=%s gpu=%u uuid=%s pipe=%s\n", (int)getpid(),
		     job && *job ? job : "-", host, phys, uuid, pipe && *pipe ? pipe : "-");
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (n > 0 && write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
		n = 0;
	close(fd);
}

static const char *open_log(void)
{
	const char *p = getenv("FAKE_CUDA_OPEN_LOG");

	return p && *p ? p : NULL;
}

CUresult cuInit(unsigned int flags)
{
	const char *rec = getenv("FAKE_CUDA_RECORD");
	const char *err = getenv("FAKE_CUDA_INIT_ERROR");

	if (flags != 0)
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	if (rec && *rec)
		record(rec);
	if (getenv("FAKE_CUDA_HANG"))
		sleep(60);
	if (err && *err)
		return atoi(err);
	if (open_log()) {
		node_visible();
		if (!n_visible)
			return 100; /* CUDA_ERROR_NO_DEVICE */
	}
	initialised = 1;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	if (!initialised)
		return 3; /* CUDA_ERROR_NOT_INITIALIZED */
	*count = open_log() ? (int)n_visible : 2;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (!initialised)
		return 3;
	if (open_log()) {
		if (ordinal < 0 || (unsigned)ordinal >= n_visible)
			return 101;
		log_open(open_log(), visible_phys[ordinal]);
		*device = ordinal;
		return CUDA_SUCCESS;
	}
	if (ordinal < 0 || ordinal >= 2)
		return 101; /* CUDA_ERROR_INVALID_DEVICE */
	*device = ordinal;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device)
{
	if (!initialised)
		return 3;
	if (device < 0 || device >= 2)
		return 101;
	if (attribute != CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
		return 1;
	*value = sms[device];
	return CUDA_SUCCESS;
}

/* The 16 bytes of a node GPU's UUID (node_uuid's text). */
static void node_uuid_bytes(unsigned phys, char bytes[16])
{
	char text[64];
	unsigned n = 0;

	node_uuid(phys, text, sizeof(text));
	for (const char *p = text + 4; *p && n < 16; p++) {
		unsigned v;
		if (*p == '-' || sscanf(p, "%2x", &v) != 1)
			continue;
		bytes[n++] = (char)v;
		p++;
	}
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice device)
{
	if (!initialised)
		return 3;
	if (open_log()) {
		if (device < 0 || (unsigned)device >= n_visible)
			return 101;
		node_uuid_bytes(visible_phys[device], uuid->bytes);
		return CUDA_SUCCESS;
	}
	if (device < 0 || device >= 2)
		return 101;
	memcpy(uuid->bytes, uuids[device], 16);
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice device)
{
	CUresult r = cuDeviceGetUuid_v2(uuid, device);

	if (r == CUDA_SUCCESS && !open_log() && device == 1)
		memcpy(uuid->bytes, mig_parent, 16);
	return r;
}

CUresult cuGetErrorName(CUresult error, const char **name)
{
	switch (error) {
	case 100: *name = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
	case 999: *name = "CUDA_ERROR_UNKNOWN"; return CUDA_SUCCESS;
	default: return 1;
	}
}

/* ---- contexts and events (launch timing) ---- */

typedef struct CUevent_st *fake_event;
typedef struct CUctx_st *fake_context;

static _Thread_local fake_context current;

CUresult cuCtxSetCurrent(fake_context ctx);
CUresult cuCtxPushCurrent_v2(fake_context ctx);
CUresult cuCtxPopCurrent_v2(fake_context *ctx);
CUresult cuCtxGetDevice(CUdevice *device);
CUresult cuEventCreate(fake_event *ev, unsigned flags);
CUresult cuEventRecord(fake_event ev, void *stream);
CUresult cuEventSynchronize(fake_event ev);
CUresult cuEventElapsedTime_v2(float *ms, fake_event a, fake_event b);
CUresult cuStreamIsCapturing(void *stream, int *status);

CUresult cuCtxSetCurrent(fake_context ctx)
{
	current = ctx;
	return CUDA_SUCCESS;
}

/* One level is enough for the library (push, query, pop). */
static _Thread_local fake_context pushed_over;

CUresult cuCtxPushCurrent_v2(fake_context ctx)
{
	pushed_over = current;
	current = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(fake_context *ctx)
{
	if (ctx)
		*ctx = current;
	current = pushed_over;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
	if (!current)
		return 201; /* CUDA_ERROR_INVALID_CONTEXT */
	*device = (CUdevice)((uintptr_t)current - 1);
	return CUDA_SUCCESS;
}

CUresult cuEventCreate(fake_event *ev, unsigned flags)
{
	(void)flags;
	*ev = calloc(1, sizeof(uint64_t));
	return *ev ? CUDA_SUCCESS : 2; /* CUDA_ERROR_OUT_OF_MEMORY */
}

CUresult cuEventRecord(fake_event ev, void *stream)
{
	struct timespec t;

	(void)stream;
	clock_gettime(CLOCK_MONOTONIC, &t);
	*(uint64_t *)(void *)ev = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
	return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(fake_event ev)
{
	return *(uint64_t *)(void *)ev ? CUDA_SUCCESS : 600; /* CUDA_ERROR_NOT_READY: never recorded */
}

CUresult cuEventElapsedTime_v2(float *ms, fake_event a, fake_event b)
{
	*ms = (float)((double)(int64_t)(*(uint64_t *)(void *)b - *(uint64_t *)(void *)a) / 1e6);
	return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(void *stream, int *status)
{
	const char *c = getenv("FAKE_CUDA_CAPTURING");

	(void)stream;
	*status = c && strcmp(c, "1") == 0; /* CU_STREAM_CAPTURE_STATUS_ACTIVE */
	return CUDA_SUCCESS;
}
