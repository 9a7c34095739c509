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
 */
#include <dirent.h>
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
	initialised = 1;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	if (!initialised)
		return 3; /* CUDA_ERROR_NOT_INITIALIZED */
	*count = 2;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (!initialised)
		return 3;
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

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice device)
{
	if (!initialised)
		return 3;
	if (device < 0 || device >= 2)
		return 101;
	memcpy(uuid->bytes, uuids[device], 16);
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice device)
{
	return cuDeviceGetUuid_v2(uuid, device);
}

CUresult cuGetErrorName(CUresult error, const char **name)
{
	switch (error) {
	case 100: *name = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
	case 999: *name = "CUDA_ERROR_UNKNOWN"; return CUDA_SUCCESS;
	default: return 1;
	}
}
