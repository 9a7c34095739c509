/*
 * Accounting records (lib/account/account.c): the text round trip, the
 * refusals of the reader, the owner from a Kubernetes cgroup path, the
 * directory's atomic write and walk.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpushare/account.h"

#define UNIT_TMPDIR "/tmp/gpushare-test-account"
#include "tmpdir.h"

static struct gpushare_account_record sample(void)
{
	struct gpushare_account_record r = { .pid = 4242, .uid = 1000, .device = 1, .start_ns = 1, .updated_ns = 2,
					     .wall_ns = 10000000000ull, .window_ns = 500000000ull,
					     .busy_ns = 125000000ull, .kernel_ns = 130000000ull, .kernels = 77,
					     .memory_bytes = 1u << 30, .memory_known = true, .promised = 0.25 };
	strcpy(r.owner.slurm_job, "1234");
	strcpy(r.owner.k8s_pod, "train-0");
	strcpy(r.owner.rank, "3");
	strcpy(r.gpu_uuid, "GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70");
	return r;
}

static void test_round_trip(void **state)
{
	struct gpushare_account_record r = sample(), back;
	char text[GPUSHARE_ACCOUNT_RECORD_MAX];
	int n = gpushare_account_format(&r, text, sizeof(text));

	(void)state;
	assert_true(n > 0);
	assert_int_equal(gpushare_account_parse(text, (size_t)n, &back), 0);
	assert_int_equal(back.pid, 4242);
	assert_int_equal(back.device, 1);
	assert_int_equal(back.busy_ns, 125000000ull);
	assert_int_equal(back.kernels, 77);
	assert_string_equal(back.owner.slurm_job, "1234");
	assert_string_equal(back.owner.k8s_pod, "train-0");
	assert_string_equal(back.owner.rank, "3");
	assert_string_equal(back.owner.farm_job, "");
	assert_string_equal(back.gpu_uuid, "GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70");
	assert_memory_equal(&back.owner, &r.owner, sizeof(r.owner));
	assert_true(back.promised > 0.2499 && back.promised < 0.2501);
	assert_true(gpushare_account_share(&back) > 0.2499 && gpushare_account_share(&back) < 0.2501);
	assert_true(gpushare_account_gpu_seconds(&back) > 2.499 && gpushare_account_gpu_seconds(&back) < 2.501);
	assert_true(back.memory_known);
	assert_int_equal(back.memory_bytes, 1u << 30);
	assert_int_equal(back.timing, GPUSHARE_ACCOUNT_TIMING_KERNELS);
	/* too small a buffer */
	assert_int_equal(gpushare_account_format(&r, text, 20), -1);
	/* launch timing, no memory figure: neither is made up on the way back */
	r.timing = GPUSHARE_ACCOUNT_TIMING_LAUNCHES;
	r.memory_known = false;
	n = gpushare_account_format(&r, text, sizeof(text));
	assert_true(n > 0);
	assert_null(strstr(text, "memory_bytes"));
	assert_non_null(strstr(text, "\ntiming launches\n"));
	assert_int_equal(gpushare_account_parse(text, (size_t)n, &back), 0);
	assert_false(back.memory_known);
	assert_int_equal(back.timing, GPUSHARE_ACCOUNT_TIMING_LAUNCHES);
}

static int parse_str(const char *text, struct gpushare_account_record *r)
{
	return gpushare_account_parse(text, strlen(text), r);
}

static void test_refusals(void **state)
{
	static const char *const bad[] = {
		"",
		"gpushare-account 2\npid 1\n",
		"pid 1\n",
		"gpushare-account 1\n",                                        /* no pid */
		"gpushare-account 1\npid 0\n",                                 /* pid must be positive */
		"gpushare-account 1\npid 1\nkernels 18446744073709551616\n",  /* overflows */
		"gpushare-account 1\npid 1\nkernels -1\n",
		"gpushare-account 1\npid 1\nkernels 1x\n",
		"gpushare-account 1\npid 1\npromised 1.5\n",
		"gpushare-account 1\npid 1\ntiming events\n",                /* neither kernels nor launches */
		"gpushare-account 1\npid 1\nmemory_bytes -5\n",
		"gpushare-account 1\npid 1\npromised nan\n",
		"gpushare-account 1\npid 1\nslurm_job a\"b\n",                 /* a label of other characters */
		"gpushare-account 1\npid 1\nk8s_pod \n",
		"gpushare-account 1\npid 1\nnospace\n",
		/* a GPU UUID of another form */
		"gpushare-account 1\npid 1\ngpu_uuid \n",
		"gpushare-account 1\npid 1\ngpu_uuid 5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70\n",       /* no kind */
		"gpushare-account 1\npid 1\ngpu_uuid GPU-5F0C1E2A-9B3D-4C7E-8A1F-2B3C4D5E6F70\n",   /* upper case */
		"gpushare-account 1\npid 1\ngpu_uuid GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f7\n",    /* short */
		"gpushare-account 1\npid 1\ngpu_uuid GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f701\n",  /* long */
		"gpushare-account 1\npid 1\ngpu_uuid GPU-5f0c1e2a9b3d-4c7e-8a1f-2b3c4d5e6f70-\n",   /* dash moved */
		"gpushare-account 1\npid 1\ngpu_uuid GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6g70\n",   /* not hex */
		"gpushare-account 1\npid 1\ngpu_uuid VGPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f7\n",   /* another kind */
		"gpushare-account 1\npid 1\ngpu_uuid MIG-GPU-8e4a3c1d-1f2b-4c5d-9e6f-0a1b2c3d4e5f/1/0\n",
	};
	struct gpushare_account_record r;
	char nul[] = "gpushare-account 1\npid 1\nslurm_job 1\0x\n";

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(gpushare_account_parse(bad[i], strlen(bad[i]), &r), -1);
	assert_int_equal(gpushare_account_parse(nul, sizeof(nul) - 1, &r), -1);
	/* a newer writer's key is skipped; no trailing newline is needed */
	assert_int_equal(gpushare_account_parse("gpushare-account 1\nfuture 9\npid 7", 33, &r), 0);
	assert_int_equal(r.pid, 7);
	assert_true(r.promised < 0);
	assert_true(gpushare_account_share(&r) < 0);
	assert_string_equal(r.gpu_uuid, ""); /* an older writer's record: no GPU named */
	assert_int_equal(parse_str("gpushare-account 1\npid 7\ndevice 0\ngpu_uuid MIG-11aa22bb-33cc-44dd-55ee-66ff77008811\n", &r), 0);
	assert_string_equal(r.gpu_uuid, "MIG-11aa22bb-33cc-44dd-55ee-66ff77008811");
}

static void test_uuid(void **state)
{
	static const unsigned char b[16] = { 0x5f, 0x0c, 0x1e, 0x2a, 0x9b, 0x3d, 0x4c, 0x7e,
					     0x8a, 0x1f, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f, 0x70 };
	char text[GPUSHARE_ACCOUNT_UUID_MAX];

	(void)state;
	gpushare_account_uuid(text, b, false);
	assert_string_equal(text, "GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70");
	assert_true(gpushare_account_uuid_valid(text));
	gpushare_account_uuid(text, b, true);
	assert_string_equal(text, "MIG-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70");
	assert_true(gpushare_account_uuid_valid(text));
	assert_false(gpushare_account_uuid_valid(""));
	assert_false(gpushare_account_uuid_valid("GPU-"));
}

static void test_cgroup(void **state)
{
	char pod[64], ctr[64];
	struct gpushare_account_owner o;

	(void)state;
	assert_int_equal(gpushare_account_cgroup_pod("0::/kubepods/burstable/pod0f1e2d3c-aaaa-bbbb-cccc-123456789abc/"
						     "3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a\n",
						     pod, sizeof(pod), ctr, sizeof(ctr)),
			 1);
	assert_string_equal(pod, "0f1e2d3c-aaaa-bbbb-cccc-123456789abc");
	assert_string_equal(ctr, "3f2a1b0c9d8e");
	assert_int_equal(gpushare_account_cgroup_pod(
				 "12:cpu:/x\n0::/kubepods.slice/kubepods-besteffort.slice/"
				 "kubepods-besteffort-pod0f1e2d3c_aaaa_bbbb_cccc_123456789abc.slice/"
				 "cri-containerd-abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789.scope\n",
				 pod, sizeof(pod), ctr, sizeof(ctr)),
			 1);
	assert_string_equal(pod, "0f1e2d3c-aaaa-bbbb-cccc-123456789abc");
	assert_string_equal(ctr, "abcdef012345");
	assert_int_equal(gpushare_account_cgroup_pod("0::/user.slice/user-1000.slice/session-3.scope\n", pod,
						     sizeof(pod), ctr, sizeof(ctr)),
			 0);
	assert_string_equal(pod, "");
	setenv("POD_NAMESPACE", "ml", 1);
	setenv("SLURM_JOB_ID", "99", 1);
	setenv("GPUSHARE_FARM_JOB", "bad value", 1);
	gpushare_account_owner_fill(&o, "0::/kubepods/pod0f1e2d3c-aaaa-bbbb-cccc-123456789abc/0123456789abcdef\n");
	assert_string_equal(o.k8s_namespace, "ml");
	assert_string_equal(o.k8s_pod, "0f1e2d3c-aaaa-bbbb-cccc-123456789abc");
	assert_string_equal(o.k8s_container, "0123456789ab");
	assert_string_equal(o.slurm_job, "99");
	assert_string_equal(o.farm_job, "");
	/* outside a pod the namespace is not read */
	gpushare_account_owner_fill(&o, NULL);
	assert_string_equal(o.k8s_namespace, "");
	unsetenv("POD_NAMESPACE");
	unsetenv("SLURM_JOB_ID");
	unsetenv("GPUSHARE_FARM_JOB");
}

static int count_fn(const struct gpushare_account_record *r, void *arg)
{
	*(int64_t *)arg += r->pid;
	return 0;
}

static void test_dir(void **state)
{
	struct gpushare_account_record r = sample();
	char sub[128], path[256];
	int64_t sum = 0;
	FILE *f;

	(void)state;
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	assert_int_equal(gpushare_account_write(sub, &r), 0);
	r.device = 0;
	assert_int_equal(gpushare_account_write(sub, &r), 0);
	r.device = 1;
	assert_int_equal(gpushare_account_write(sub, &r), 0); /* replaced, not added */
	/* a malformed record, a file of another name and a directory are skipped */
	snprintf(path, sizeof(path), "%s/5-0.rec", sub);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("gpushare-account 1\npid x\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/notes.txt", sub);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/6-0.rec", sub);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(gpushare_account_read_dir(sub, 0, count_fn, &sum), 2);
	assert_int_equal(sum, 2 * 4242);
	/* a record of a process that is gone goes once stale: a reaped child's */
	{
		pid_t child = fork();
		struct timeval old[2] = { { 1000, 0 }, { 1000, 0 } };
		if (child == 0)
			_exit(0);
		assert_true(child > 0);
		assert_int_equal(waitpid(child, NULL, 0), child);
		r.pid = child;
		assert_int_equal(gpushare_account_write(sub, &r), 0);
		snprintf(path, sizeof(path), "%s/%d-1.rec", sub, (int)child);
		assert_int_equal(gpushare_account_read_dir(sub, 60, NULL, NULL), 3); /* fresh: kept */
		assert_int_equal(utimes(path, old), 0);
		assert_int_equal(gpushare_account_read_dir(sub, 60, NULL, NULL), 2);
		assert_int_equal(access(path, F_OK), -1);
	}
	assert_true(gpushare_account_read_dir("/nonexistent-gpushare", 0, count_fn, &sum) < 0);
	setenv("GPUSHARE_ACCOUNT_DIR", sub, 1);
	assert_int_equal(gpushare_account_dir(path, sizeof(path)), 0);
	assert_string_equal(path, sub);
	assert_int_equal(gpushare_account_dir(path, 4), -1);
	unsetenv("GPUSHARE_ACCOUNT_DIR");
}

/* A probe's record: n kernels of k_us each in a second of windows. */
static struct gpushare_account_record probe_rec(unsigned long long n, unsigned long long k_us)
{
	return (struct gpushare_account_record){ .window_ns = 1000000000ull, .kernels = n, .kernel_ns = n * k_us * 1000 };
}

static void test_verdict(void **state)
{
	/* alone: 1000 kernels of 1 ms in a second */
	struct gpushare_account_record alone = probe_rec(1000, 1000), r, none = { 0 };
	struct gpushare_account_verdict v;

	(void)state;
	assert_true(fabs(gpushare_account_work_rate(&alone) - 1000.0) < 1e-9);
	assert_true(gpushare_account_work_rate(&none) < 0);
	/* 25/75 under MPS limits: each kernel 4x and 4/3x as long, as many fewer */
	r = probe_rec(250, 4000);
	assert_int_equal(gpushare_account_verdict(&alone, &r, 0.25, 0.05, &v), 1);
	assert_true(fabs(v.attained - 0.25) < 1e-9 && fabs(v.attained_kernel - 0.25) < 1e-9);
	r = probe_rec(750, 1333);
	assert_int_equal(gpushare_account_verdict(&alone, &r, 0.75, 0.05, &v), 1);
	/* time-slicing, two clients: a kernel lasts as long as alone (the kernel
	 * time is blind), but only half as many run */
	r = probe_rec(500, 1000);
	assert_int_equal(gpushare_account_verdict(&alone, &r, 0.5, 0.05, &v), 1);
	assert_true(fabs(v.attained - 0.5) < 1e-9 && v.attained_kernel > 0.999);
	/* planted: a stray third process time-sliced beside a plan of two */
	r = probe_rec(333, 1000);
	assert_int_equal(gpushare_account_verdict(&alone, &r, 0.5, 0.05, &v), 0);
	assert_true(v.error < -0.16 && v.error > -0.17);
	/* planted: MPS limits of 100/100 for a plan of 25/75: each gets half */
	r = probe_rec(500, 2000);
	assert_int_equal(gpushare_account_verdict(&alone, &r, 0.25, 0.05, &v), 0);
	assert_true(fabs(v.error - 0.25) < 1e-9);
	assert_int_equal(gpushare_account_verdict(&alone, &r, 0.75, 0.05, &v), 0);
	/* within the tolerance at its edge, outside just past it */
	r = probe_rec(300, 1000);
	assert_int_equal(gpushare_account_verdict(&alone, &r, 0.25, 0.05, &v), 1);
	r = probe_rec(301, 1000);
	assert_int_equal(gpushare_account_verdict(&alone, &r, 0.25, 0.05, &v), 0);
	/* faster than alone counts as the whole GPU; a window without a kernel
	 * attained nothing; no window, or nothing alone: unknown */
	r = probe_rec(1100, 900);
	assert_int_equal(gpushare_account_verdict(&alone, &r, 1.0, 0.05, &v), 1);
	assert_true(v.attained == 1.0 && v.attained_kernel == 1.0);
	r = probe_rec(0, 0);
	assert_int_equal(gpushare_account_verdict(&alone, &r, 0.5, 0.05, &v), 0);
	assert_true(v.attained == 0.0 && v.attained_kernel < 0);
	assert_int_equal(gpushare_account_verdict(&alone, &none, 0.5, 0.05, &v), -1);
	assert_int_equal(gpushare_account_verdict(&none, &alone, 0.5, 0.05, &v), -1);
	assert_true(v.attained < 0);
}

/* A client with a share (busy over a second of windows) and a promise. */
static struct gpushare_account_record client_rec(double share, double promised)
{
	return (struct gpushare_account_record){ .window_ns = 1000000000ull, .busy_ns = (uint64_t)(share * 1e9),
						 .kernels = share > 0 ? 10 : 0, .promised = promised };
}

static void test_held(void **state)
{
	struct gpushare_account_record r[6];
	long gpu[6] = { 0, 0, 0, 1, 1, 2 };
	int held[6];

	(void)state;
	/* GPU 0: 30% and 20% of promised halves, a client without a promise at
	 * 10%: room (60% in all), both held; GPU 1: 30% and 70%: full, none;
	 * GPU 2: alone, idle (no kernel): not held */
	r[0] = client_rec(0.3, 0.5);
	r[1] = client_rec(0.2, 0.5);
	r[2] = client_rec(0.1, -1);
	r[3] = client_rec(0.3, 0.5);
	r[4] = client_rec(0.7, 0.5);
	r[5] = client_rec(0.0, 0.5);
	gpushare_account_held(r, gpu, NULL, 6, 0.05, held);
	assert_int_equal(held[0], 1);
	assert_int_equal(held[1], 1);
	assert_int_equal(held[2], -1);
	assert_int_equal(held[3], 0);
	assert_int_equal(held[4], 0);
	assert_int_equal(held[5], 0);
	/* within the tolerance of its promise: not held */
	r[0] = client_rec(0.46, 0.5);
	gpushare_account_held(r, gpu, NULL, 1, 0.05, held);
	assert_int_equal(held[0], 0);
	/* the slowdown: the last window's mean over the fastest's */
	r[0].window_mean_ns = 300;
	r[0].best_mean_ns = 100;
	assert_true(fabs(gpushare_account_slowdown(&r[0]) - 3.0) < 1e-9);
	r[0].window_mean_ns = 90;
	assert_true(gpushare_account_slowdown(&r[0]) == 1.0);
	r[0].best_mean_ns = 0;
	assert_true(gpushare_account_slowdown(&r[0]) < 0);
}

/* Clients placed by the GPU their records name, not by their ordinals:
 * under CUDA_VISIBLE_DEVICES each of them sees its one GPU as device 0. */
static void test_gpu_keys(void **state)
{
	static const char *const a = "GPU-fa4e0000-0000-4000-8000-000000000000",
			  *const b = "GPU-fa4e0000-0000-4000-8000-000000000001",
			  *const m = "MIG-11aa22bb-33cc-44dd-55ee-66ff77008811";
	static const long in[7] = { -1, 3, -1, -1, -1, -1, -1 };
	struct gpushare_account_record r[7];
	long gpu[7];
	int held[7];

	(void)state;
	/* one saturating client on GPU a, one held at 30% of a half alone on
	 * GPU b: both device 0, and b had room */
	r[0] = client_rec(0.7, 0.5);
	r[1] = client_rec(0.3, 0.5);
	strcpy(r[0].gpu_uuid, a);
	strcpy(r[1].gpu_uuid, b);
	gpu[0] = gpu[1] = -1;
	gpushare_account_gpu_keys(r, 2, gpu);
	assert_true(gpu[0] != gpu[1]);
	gpushare_account_held(r, gpu, NULL, 2, 0.05, held);
	assert_int_equal(held[0], 0);
	assert_int_equal(held[1], 1);
	/* by ordinal alone they would share one full GPU: not held */
	gpu[0] = gpu[1] = 0;
	gpushare_account_held(r, gpu, NULL, 2, 0.05, held);
	assert_int_equal(held[1], 0);
	/* shares given (NVML's) win over the records' own: on one GPU, 0.3 and
	 * 0.2 attained leave room, so the second, promised 0.5, is held */
	{
		double given[2] = { 0.3, 0.2 };

		gpushare_account_held(r, gpu, given, 2, 0.05, held);
		assert_int_equal(held[0], 1);
		assert_int_equal(held[1], 1);
		given[1] = -1; /* unknown: no flag for it */
		gpushare_account_held(r, gpu, given, 2, 0.05, held);
		assert_int_equal(held[1], -1);
	}

	/* keys: an index the caller resolved is kept and given to the other
	 * records of its UUID; UUIDs unresolved get a key each (a MIG
	 * instance's its own); records naming no GPU go by their ordinal; no
	 * key made meets an index */
	for (size_t i = 0; i < 7; i++)
		r[i] = client_rec(0.1, 0.5);
	strcpy(r[0].gpu_uuid, b);
	strcpy(r[1].gpu_uuid, b);
	strcpy(r[2].gpu_uuid, a);
	strcpy(r[3].gpu_uuid, m);
	strcpy(r[4].gpu_uuid, m);
	r[5].device = 0;
	r[6].device = 1;
	memcpy(gpu, in, sizeof(gpu));
	gpushare_account_gpu_keys(r, 7, gpu);
	assert_int_equal(gpu[0], 3);
	assert_int_equal(gpu[1], 3);
	assert_true(gpu[2] < 0 && gpu[3] < 0 && gpu[5] < 0 && gpu[6] < 0);
	assert_int_equal(gpu[3], gpu[4]);
	assert_true(gpu[2] != gpu[3] && gpu[2] != gpu[5] && gpu[3] != gpu[5] && gpu[5] != gpu[6]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_cgroup),
		cmocka_unit_test(test_dir),
		cmocka_unit_test(test_verdict),
		cmocka_unit_test(test_held),
		cmocka_unit_test(test_gpu_keys),
		cmocka_unit_test(test_uuid),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
