/*
 * Unit tests of GPU discovery (lib/gpu/nvml.c, lib/gpu/cudadrv.c) against the fake
 * NVML and libcuda of tests/helpers (found through GPUSHARE_TEST_HELPERS).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sys.h"
#include "gpu_internal.h"
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"

#define GIB (1024ULL * 1024 * 1024)
#define MIB (1024ULL * 1024)
#define GPU0_UUID "GPU-8e4a3c1d-1f2b-4c5d-9e6f-0a1b2c3d4e5f"
#define GPU1_UUID "GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70"

static void helper_path(const char *name, char *buf, size_t len)
{
	const char *dir = getenv("GPUSHARE_TEST_HELPERS");

	assert_non_null(dir);
	snprintf(buf, len, "%s/%s", dir, name);
}

/* Every test starts from the fake NVML, no libcuda and no knobs. */
static int setup(void **state)
{
	char path[GPUSHARE_PATH_MAX];

	(void)state;
	helper_path("libfakenvml.so", path, sizeof(path));
	setenv("GPUSHARE_NVML_LIBRARY", path, 1);
	setenv("GPUSHARE_CUDA_LIBRARY", "/nonexistent/libcuda-for-test.so.1", 1);
	unsetenv("FAKE_NVML_INIT_ERROR");
	unsetenv("FAKE_NVML_NOT_SUPPORTED");
	unsetenv("FAKE_NVML_PIDS");
	unsetenv("FAKE_CUDA_HANG");
	unsetenv("FAKE_CUDA_INIT_ERROR");
	unsetenv("FAKE_CUDA_RECORD");
	gpushare_clear_error();
	return 0;
}

static void test_missing_library(void **state)
{
	struct gpushare_system_info sys;

	(void)state;
	setenv("GPUSHARE_NVML_LIBRARY", "/nonexistent/libnvidia-ml-test.so.1", 1);
	assert_int_equal(gpushare_nvml_open(), GPUSHARE_E_NO_DRIVER);
	assert_non_null(strstr(gpushare_errdetail(), "libnvidia-ml-test.so.1"));
	assert_int_equal(gpushare_system_query(&sys), GPUSHARE_E_NO_DRIVER);
	assert_non_null(strstr(gpushare_errdetail(), "libnvidia-ml-test.so.1"));
	assert_null(sys.gpus);
	/* Nothing stays open after a failed open. */
	unsigned n;
	assert_int_equal(gpushare_gpu_count(&n), GPUSHARE_E_INVAL);
}

static void test_missing_symbol(void **state)
{
	char path[GPUSHARE_PATH_MAX];
	unsigned n = 0;

	(void)state;
	/* The fake libcuda is a shared library without any NVML symbol. */
	helper_path("libfakecuda.so", path, sizeof(path));
	setenv("GPUSHARE_NVML_LIBRARY", path, 1);
	assert_int_equal(gpushare_nvml_open(), GPUSHARE_E_NO_DRIVER);
	assert_non_null(strstr(gpushare_errdetail(), "nvmlInit_v2"));
	assert_int_equal(gpushare_gpu_count(&n), GPUSHARE_E_INVAL);
	/* A later open of a good library works. */
	setup(NULL);
	assert_int_equal(gpushare_nvml_open(), GPUSHARE_OK);
	assert_int_equal(gpushare_gpu_count(&n), GPUSHARE_OK);
	assert_int_equal(n, 2);
	gpushare_nvml_close();
}

static void test_init_errors(void **state)
{
	(void)state;
	setenv("FAKE_NVML_INIT_ERROR", "9", 1); /* NVML_ERROR_DRIVER_NOT_LOADED */
	assert_int_equal(gpushare_nvml_open(), GPUSHARE_E_NO_DRIVER);
	assert_non_null(strstr(gpushare_errdetail(), "Driver Not Loaded"));
	setenv("FAKE_NVML_INIT_ERROR", "999", 1);
	assert_int_equal(gpushare_nvml_open(), GPUSHARE_E_DRIVER);
	assert_non_null(strstr(gpushare_errdetail(), "nvmlInit_v2"));
}

static void test_refcount(void **state)
{
	unsigned n = 0;

	(void)state;
	assert_int_equal(gpushare_nvml_open(), GPUSHARE_OK);
	assert_int_equal(gpushare_nvml_open(), GPUSHARE_OK);
	gpushare_nvml_close();
	assert_int_equal(gpushare_gpu_count(&n), GPUSHARE_OK);
	assert_int_equal(n, 2);
	gpushare_nvml_close();
	assert_int_equal(gpushare_gpu_count(&n), GPUSHARE_E_INVAL);
	gpushare_nvml_close(); /* an extra close is harmless */
}

static void test_system_values(void **state)
{
	struct gpushare_system_info sys;
	const struct gpushare_gpu_info *g0, *g1;

	(void)state;
	assert_int_equal(gpushare_system_query(&sys), GPUSHARE_OK);
	assert_string_equal(sys.driver_version, "580.159.04");
	assert_string_equal(sys.nvml_version, "13.580.159.04");
	assert_int_equal(sys.cuda_driver_version, 13000);
	assert_non_null(strstr(sys.cuda_error, "libcuda-for-test.so.1"));
	assert_int_equal(sys.n_gpus, 2);
	g0 = &sys.gpus[0];
	g1 = &sys.gpus[1];

	assert_int_equal(g0->index, 0);
	assert_string_equal(g0->name, "NVIDIA H200");
	assert_string_equal(g0->uuid, GPU0_UUID);
	assert_string_equal(g0->pci_bus_id, "00000000:19:00.0");
	assert_int_equal(g0->sm_count, GPUSHARE_UNKNOWN); /* no libcuda */
	assert_int_equal(g0->mem_total_bytes, 143771 * MIB);
	assert_int_equal(g0->mem_used_bytes, 53 * MIB);
	assert_int_equal(g0->mem_free_bytes, (143771 - 53) * MIB);
	assert_int_equal(g0->compute_mode, GPUSHARE_COMPUTE_DEFAULT);
	assert_int_equal(g0->mig_current, 1);
	assert_int_equal(g0->mig_pending, 1);
	assert_int_equal(g0->persistence, 1);
	assert_int_equal(g0->util_gpu_pct, GPUSHARE_UNKNOWN); /* NOT_SUPPORTED under MIG */
	assert_int_equal(g0->util_mem_pct, GPUSHARE_UNKNOWN);
	assert_int_equal(g0->clock_sm_mhz, 1980);
	assert_int_equal(g0->clock_mem_mhz, 3201);
	assert_int_equal(g0->clock_sm_max_mhz, 1980);
	assert_int_equal(g0->power_mw, 121500);
	assert_int_equal(g0->temperature_c, 35);
	assert_int_equal(g0->n_procs, 0);

	/* MIG devices sit in slots 0 and 2; slot 1 is empty. */
	assert_int_equal(g0->n_migs, 2);
	assert_int_equal(g0->migs[0].index, 0);
	assert_string_equal(g0->migs[0].uuid, "MIG-11aa22bb-33cc-44dd-55ee-66ff77008811");
	assert_string_equal(g0->migs[0].name, "NVIDIA H200 MIG 1g.18gb");
	assert_string_equal(g0->migs[0].profile, "1g.18gb");
	assert_int_equal(g0->migs[0].gpu_instance_id, 9);
	assert_int_equal(g0->migs[0].compute_instance_id, 0);
	assert_int_equal(g0->migs[0].sm_count, 16);
	assert_int_equal(g0->migs[0].mem_total_bytes, 16896 * MIB);
	assert_int_equal(g0->migs[0].mem_used_bytes, 13 * MIB);
	assert_int_equal(g0->migs[1].index, 2);
	assert_string_equal(g0->migs[1].profile, "3g.71gb");
	assert_int_equal(g0->migs[1].gpu_instance_id, 2);
	assert_int_equal(g0->migs[1].sm_count, 60);
	assert_int_equal(g0->migs[1].mem_total_bytes, 71 * GIB);

	assert_string_equal(g1->name, "NVIDIA H100 80GB HBM3");
	assert_string_equal(g1->uuid, GPU1_UUID);
	assert_string_equal(g1->pci_bus_id, "00000000:3B:00.0");
	assert_int_equal(g1->compute_mode, GPUSHARE_COMPUTE_EXCLUSIVE_PROCESS);
	assert_int_equal(g1->mig_current, 0);
	assert_int_equal(g1->mig_pending, 0);
	assert_int_equal(g1->persistence, 0);
	assert_int_equal(g1->util_gpu_pct, 87);
	assert_int_equal(g1->util_mem_pct, 41);
	assert_int_equal(g1->clock_sm_mhz, 1755);
	assert_int_equal(g1->power_mw, 612345);
	assert_int_equal(g1->temperature_c, 71);
	assert_int_equal(g1->n_migs, 0);
	assert_null(g1->migs);
	gpushare_system_release(&sys);
	assert_null(sys.gpus);
	assert_int_equal(sys.n_gpus, 0);
}

static void test_not_supported_is_unknown(void **state)
{
	struct gpushare_system_info sys;

	(void)state;
	setenv("FAKE_NVML_NOT_SUPPORTED",
	       "nvmlDeviceGetPowerUsage,nvmlDeviceGetTemperature,nvmlDeviceGetMigMode,"
	       "nvmlDeviceGetComputeMode,nvmlDeviceGetPciInfo_v3,nvmlDeviceGetMemoryInfo,"
	       "nvmlDeviceGetPersistenceMode,nvmlDeviceGetClockInfo,nvmlDeviceGetMaxClockInfo,"
	       "nvmlSystemGetCudaDriverVersion_v2,nvmlSystemGetNVMLVersion,"
	       "nvmlDeviceGetComputeRunningProcesses_v3,nvmlDeviceGetMPSComputeRunningProcesses_v3", 1);
	setenv("FAKE_NVML_PIDS", "1,1,1", 1);
	assert_int_equal(gpushare_system_query(&sys), GPUSHARE_OK);
	assert_int_equal(sys.cuda_driver_version, GPUSHARE_UNKNOWN);
	assert_string_equal(sys.nvml_version, "");
	assert_int_equal(sys.n_gpus, 2);
	for (size_t i = 0; i < 2; i++) {
		const struct gpushare_gpu_info *g = &sys.gpus[i];

		assert_string_equal(g->pci_bus_id, "");
		assert_int_equal(g->power_mw, GPUSHARE_UNKNOWN);
		assert_int_equal(g->temperature_c, GPUSHARE_UNKNOWN);
		assert_int_equal(g->mig_current, GPUSHARE_UNKNOWN);
		assert_int_equal(g->mig_pending, GPUSHARE_UNKNOWN);
		assert_int_equal(g->compute_mode, GPUSHARE_UNKNOWN);
		assert_int_equal(g->persistence, GPUSHARE_UNKNOWN);
		assert_int_equal(g->clock_sm_mhz, GPUSHARE_UNKNOWN);
		assert_int_equal(g->clock_sm_max_mhz, GPUSHARE_UNKNOWN);
		assert_int_equal(g->clock_mem_mhz, GPUSHARE_UNKNOWN);
		assert_true(g->mem_total_bytes == GPUSHARE_UNKNOWN_U64);
		assert_true(g->mem_used_bytes == GPUSHARE_UNKNOWN_U64);
		assert_true(g->mem_free_bytes == GPUSHARE_UNKNOWN_U64);
		assert_int_equal(g->n_migs, 0); /* MIG mode unknown: not listed */
		assert_int_equal(g->n_procs, 0);
	}
	assert_int_equal(sys.gpus[1].util_gpu_pct, 87); /* not knocked out */
	gpushare_system_release(&sys);
}

static void test_processes(void **state)
{
	struct gpushare_system_info sys;
	const struct gpushare_gpu_info *g;
	char pids[96], comm[64];
	pid_t child;
	int status;

	(void)state;
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	/* plain: this process; no server; client: the parent (in both lists,
	 * so listed once); MPS-only: the child (memory not available). */
	snprintf(pids, sizeof(pids), "%d,0,%d,%d", (int)getpid(), (int)getppid(), (int)child);
	setenv("FAKE_NVML_PIDS", pids, 1);
	assert_int_equal(gpushare_system_query(&sys), GPUSHARE_OK);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	g = &sys.gpus[1];
	assert_int_equal(g->n_procs, 3);
	gpushare_pid_comm(getpid(), comm, sizeof(comm));
	assert_int_equal(g->procs[0].pid, getpid());
	assert_string_equal(g->procs[0].name, comm);
	assert_int_equal(g->procs[0].kind, GPUSHARE_PROC_PLAIN);
	assert_int_equal(g->procs[0].mem_used_bytes, GIB);
	assert_int_equal(g->procs[0].gpu_instance_id, GPUSHARE_UNKNOWN);
	assert_int_equal(g->procs[1].pid, getppid());
	assert_int_equal(g->procs[1].kind, GPUSHARE_PROC_MPS_CLIENT);
	assert_int_equal(g->procs[1].mem_used_bytes, 2 * GIB);
	assert_int_equal(g->procs[2].pid, child);
	assert_int_equal(g->procs[2].kind, GPUSHARE_PROC_MPS_CLIENT);
	assert_true(g->procs[2].mem_used_bytes == GPUSHARE_UNKNOWN_U64);
	assert_string_equal(gpushare_proc_kind_name(g->procs[1].kind), "mps-client");
	gpushare_system_release(&sys);
}

static void test_classify(void **state)
{
	(void)state;
	/* The kernel cuts comm to 15 characters. */
	assert_int_equal(gpushare_proc_classify("nvidia-cuda-mps", "/usr/bin/nvidia-cuda-mps-server", false),
			 GPUSHARE_PROC_MPS_SERVER);
	assert_int_equal(gpushare_proc_classify("nvidia-cuda-mps", "nvidia-cuda-mps-server", true),
			 GPUSHARE_PROC_MPS_SERVER);
	assert_int_equal(gpushare_proc_classify("nvidia-cuda-mps", "", false), GPUSHARE_PROC_MPS_SERVER);
	assert_int_equal(gpushare_proc_classify("nvidia-cuda-mps-server", "", false), GPUSHARE_PROC_MPS_SERVER);
	assert_int_equal(gpushare_proc_classify("nvidia-cuda-mps", "nvidia-cuda-mps-control -d", false),
			 GPUSHARE_PROC_PLAIN);
	assert_int_equal(gpushare_proc_classify("python3", "python3 train.py", true), GPUSHARE_PROC_MPS_CLIENT);
	assert_int_equal(gpushare_proc_classify("python3", "python3 train.py", false), GPUSHARE_PROC_PLAIN);
	assert_int_equal(gpushare_proc_classify("", "", false), GPUSHARE_PROC_PLAIN);
	assert_int_equal(gpushare_proc_classify("nvidia-cuda", "/x/nvidia-cuda-mps-serverx", false), GPUSHARE_PROC_PLAIN);
	assert_string_equal(gpushare_proc_kind_name(GPUSHARE_PROC_MPS_SERVER), "mps-server");
	assert_string_equal(gpushare_proc_kind_name(GPUSHARE_PROC_PLAIN), "plain");
	assert_string_equal(gpushare_compute_mode_name(GPUSHARE_COMPUTE_EXCLUSIVE_PROCESS), "Exclusive_Process");
	assert_string_equal(gpushare_compute_mode_name(GPUSHARE_UNKNOWN), "unknown");
}

static void check_profile(const char *name, const char *want)
{
	char out[32];

	gpushare_mig_profile_parse(name, out, sizeof(out));
	assert_string_equal(out, want);
}

static void test_mig_profile(void **state)
{
	(void)state;
	check_profile("NVIDIA H200 MIG 1g.18gb", "1g.18gb");
	check_profile("NVIDIA H100 80GB HBM3 MIG 3g.40gb", "3g.40gb");
	check_profile("NVIDIA A100-SXM4-40GB MIG 1c.2g.10gb", "1c.2g.10gb");
	check_profile("NVIDIA A100-SXM4-80GB MIG 1g.10gb+me", "1g.10gb+me");
	check_profile("NVIDIA H100 80GB HBM3", "");
	check_profile("NVIDIA H200 MIG 1g.", "");
	check_profile("", "");
}

static void test_uuid(void **state)
{
	static const unsigned char b[16] = { 0x5f, 0x0c, 0x1e, 0x2a, 0x9b, 0x3d, 0x4c, 0x7e,
					     0x8a, 0x1f, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f, 0x70 };
	char buf[64];

	(void)state;
	gpushare_uuid_format(b, "GPU-", buf, sizeof(buf));
	assert_string_equal(buf, GPU1_UUID);
	assert_true(gpushare_uuid_matches(GPU1_UUID, b));
	assert_true(gpushare_uuid_matches("GPU-5F0C1E2A-9B3D-4C7E-8A1F-2B3C4D5E6F70", b));
	assert_true(gpushare_uuid_matches("MIG-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70", b));
	assert_false(gpushare_uuid_matches(GPU0_UUID, b));
	assert_false(gpushare_uuid_matches("GPU-5f0c1e2a", b));
}

static void test_find(void **state)
{
	unsigned idx = 99;

	(void)state;
	assert_int_equal(gpushare_gpu_find("0", &idx), GPUSHARE_E_INVAL); /* not open */
	assert_int_equal(gpushare_nvml_open(), GPUSHARE_OK);
	assert_int_equal(gpushare_gpu_find("1", &idx), GPUSHARE_OK);
	assert_int_equal(idx, 1);
	assert_int_equal(gpushare_gpu_find(GPU0_UUID, &idx), GPUSHARE_OK);
	assert_int_equal(idx, 0);
	assert_int_equal(gpushare_gpu_find("GPU-5f0c", &idx), GPUSHARE_OK);
	assert_int_equal(idx, 1);
	assert_int_equal(gpushare_gpu_find("gpu-8E4A", &idx), GPUSHARE_OK);
	assert_int_equal(idx, 0);
	assert_int_equal(gpushare_gpu_find("5f0c1e2a-9b", &idx), GPUSHARE_OK);
	assert_int_equal(idx, 1);
	assert_int_equal(gpushare_gpu_find("2", &idx), GPUSHARE_E_NOT_FOUND);
	assert_int_equal(gpushare_gpu_find("99999999999999999999", &idx), GPUSHARE_E_NOT_FOUND);
	assert_int_equal(gpushare_gpu_find("GPU-ffff", &idx), GPUSHARE_E_NOT_FOUND);
	assert_non_null(strstr(gpushare_errdetail(), "GPU-ffff"));
	assert_int_equal(gpushare_gpu_find("GPU-", &idx), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_gpu_find("", &idx), GPUSHARE_E_INVAL);
	gpushare_nvml_close();
}

static void test_sample_and_mode(void **state)
{
	struct gpushare_gpu_sample s;
	int mode = -2;

	(void)state;
	assert_int_equal(gpushare_gpu_sample(1, &s), GPUSHARE_E_INVAL); /* not open */
	assert_int_equal(gpushare_nvml_open(), GPUSHARE_OK);
	assert_int_equal(gpushare_gpu_compute_mode(1, &mode), GPUSHARE_OK);
	assert_int_equal(mode, GPUSHARE_COMPUTE_EXCLUSIVE_PROCESS);
	assert_int_equal(gpushare_gpu_compute_mode(5, &mode), GPUSHARE_E_NOT_FOUND);

	assert_int_equal(gpushare_gpu_sample(1, &s), GPUSHARE_OK);
	assert_true(s.t_ns > 0);
	assert_int_equal(s.util_gpu_pct, 87);
	assert_int_equal(s.mem_used_bytes, 3584 * MIB);
	assert_int_equal(s.clock_sm_mhz, 1755);
	assert_int_equal(s.clock_sm_max_mhz, 1980);
	assert_int_equal(s.power_mw, 612345);
	assert_int_equal(s.temperature_c, 71);
	assert_int_equal(s.throttle_reasons, 0x4); /* software power cap */
	assert_true(s.throttled);

	assert_int_equal(gpushare_gpu_sample(0, &s), GPUSHARE_OK);
	assert_int_equal(s.util_gpu_pct, GPUSHARE_UNKNOWN);
	assert_int_equal(s.throttle_reasons, 0x1); /* idle: not throttled */
	assert_false(s.throttled);

	/* The older "throttle reasons" entry point is the fallback. */
	setenv("FAKE_NVML_NOT_SUPPORTED", "nvmlDeviceGetComputeMode,nvmlDeviceGetCurrentClocksEventReasons", 1);
	assert_int_equal(gpushare_gpu_compute_mode(1, &mode), GPUSHARE_OK);
	assert_int_equal(mode, GPUSHARE_UNKNOWN);
	assert_int_equal(gpushare_gpu_sample(1, &s), GPUSHARE_OK);
	assert_int_equal(s.throttle_reasons, 0);
	assert_false(s.throttled);
	gpushare_nvml_close();
}

static void read_record(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void test_cuda_sm_counts(void **state)
{
	struct gpushare_system_info sys;
	char lib[GPUSHARE_PATH_MAX], rec[64] = "/tmp/gpushare-test-cuda-XXXXXX", text[1024], dir[512];
	const char *p;
	struct stat st;
	int fd;

	(void)state;
	helper_path("libfakecuda.so", lib, sizeof(lib));
	setenv("GPUSHARE_CUDA_LIBRARY", lib, 1);
	fd = mkstemp(rec);
	assert_true(fd >= 0);
	close(fd);
	setenv("FAKE_CUDA_RECORD", rec, 1);
	setenv("CUDA_MPS_PIPE_DIRECTORY", "/tmp/gpushare-test-not-this-one", 1);
	setenv("CUDA_VISIBLE_DEVICES", "0", 1);
	assert_int_equal(gpushare_system_query(&sys), GPUSHARE_OK);
	unsetenv("CUDA_MPS_PIPE_DIRECTORY");
	unsetenv("CUDA_VISIBLE_DEVICES");
	assert_string_equal(sys.cuda_error, "");
	assert_int_equal(sys.gpus[0].sm_count, GPUSHARE_UNKNOWN); /* MIG on: CUDA does not list it */
	assert_int_equal(sys.gpus[1].sm_count, 132);
	assert_int_equal(sys.gpus[0].migs[0].sm_count, 16); /* NVML's count wins */
	gpushare_system_release(&sys);

	/* The child saw a fresh, empty, private pipe directory and every GPU. */
	read_record(rec, text, sizeof(text));
	unlink(rec);
	p = strstr(text, "pipe_dir=");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "pipe_dir=%511s", dir), 1);
	assert_string_not_equal(dir, "/tmp/gpushare-test-not-this-one");
	assert_non_null(strstr(dir, "gpushare-cuda-"));
	assert_non_null(strstr(text, "entries=0\n"));
	assert_non_null(strstr(text, "mode=700\n"));
	assert_non_null(strstr(text, "visible=-\n"));
	/* ... and it is gone afterwards. */
	assert_int_equal(stat(dir, &st), -1);
	assert_int_equal(errno, ENOENT);
}

static void test_cuda_errors(void **state)
{
	struct gpushare_cuda_dev *devs = NULL;
	char lib[GPUSHARE_PATH_MAX];
	uint64_t t0;
	size_t n = 7;

	(void)state;
	/* Missing libcuda: NO_DRIVER with dlerror()'s text. */
	assert_int_equal(gpushare_cuda_query(&devs, &n, 2000), GPUSHARE_E_NO_DRIVER);
	assert_non_null(strstr(gpushare_errdetail(), "libcuda-for-test.so.1"));
	assert_null(devs);
	assert_int_equal(n, 0);

	helper_path("libfakecuda.so", lib, sizeof(lib));
	setenv("GPUSHARE_CUDA_LIBRARY", lib, 1);
	setenv("FAKE_CUDA_INIT_ERROR", "100", 1);
	assert_int_equal(gpushare_cuda_query(&devs, &n, 2000), GPUSHARE_E_DRIVER);
	assert_non_null(strstr(gpushare_errdetail(), "CUDA_ERROR_NO_DEVICE"));
	unsetenv("FAKE_CUDA_INIT_ERROR");

	/* A hanging libcuda is killed at the timeout and reaped. */
	setenv("FAKE_CUDA_HANG", "1", 1);
	t0 = gpushare_now_ns();
	assert_int_equal(gpushare_cuda_query(&devs, &n, 300), GPUSHARE_E_TIMEOUT);
	assert_true(gpushare_now_ns() - t0 < 5000000000ULL);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	unsetenv("FAKE_CUDA_HANG");

	assert_int_equal(gpushare_cuda_query(&devs, &n, 5000), GPUSHARE_OK);
	assert_int_equal(n, 2);
	assert_int_equal(devs[0].sm_count, 132);
	free(devs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_missing_library, setup),
		cmocka_unit_test_setup(test_missing_symbol, setup),
		cmocka_unit_test_setup(test_init_errors, setup),
		cmocka_unit_test_setup(test_refcount, setup),
		cmocka_unit_test_setup(test_system_values, setup),
		cmocka_unit_test_setup(test_not_supported_is_unknown, setup),
		cmocka_unit_test_setup(test_processes, setup),
		cmocka_unit_test_setup(test_classify, setup),
		cmocka_unit_test_setup(test_mig_profile, setup),
		cmocka_unit_test_setup(test_uuid, setup),
		cmocka_unit_test_setup(test_find, setup),
		cmocka_unit_test_setup(test_sample_and_mode, setup),
		cmocka_unit_test_setup(test_cuda_sm_counts, setup),
		cmocka_unit_test_setup(test_cuda_errors, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
