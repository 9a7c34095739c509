/*
 * Unit tests of the exec module (lib/exec/exec.c): job directory names, refusals,
 * two ranks of one job in one process (rank files are separate flock()
 * locks, so they behave as two processes would), the last rank's clean-up,
 * the stale directory of a killed job of the same key, and the reaping of a
 * dead job's directory. The stand-in NVML gives two GPUs; the timeslice
 * strategy needs no MPS daemon.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpushare/bench.h"
#include "gpushare/exec.h"
#include "gpushare/gpushare.h"

static char base[256];

static int setup(void **state)
{
	char lib[512];
	const char *h = getenv("GPUSHARE_TEST_HELPERS");

	(void)state;
	snprintf(base, sizeof(base), "/tmp/gpushare-test-exec.XXXXXX");
	if (!mkdtemp(base))
		return -1;
	setenv("XDG_RUNTIME_DIR", base, 1);
	snprintf(lib, sizeof(lib), "%s/libfakenvml.so", h ? h : ".");
	setenv("GPUSHARE_NVML_LIBRARY", lib, 1);
	setenv("FAKE_NVML_GPUS", "2", 1);
	unsetenv("CUDA_VISIBLE_DEVICES");
	unsetenv("SLURM_NODEID");
	setenv("SLURMD_NODENAME", "n1", 1);
	setenv("OMPI_MCA_orte_ess_jobid", "77", 1);
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static void test_dir_name(void **state)
{
	char out[256];

	(void)state;
	assert_int_equal(gpushare_exec_dir_name("slurm-42.0", "node7", out, sizeof(out)), GPUSHARE_OK);
	assert_string_equal(out, "exec-slurm-42.0@node7");
	assert_int_equal(gpushare_exec_dir_name("a/b c", "x:y", out, sizeof(out)), GPUSHARE_OK);
	assert_string_equal(out, "exec-a_b_c@x_y");
	/* Long keys are cut and hashed: distinct, bounded. */
	{
		char a[256], b[256];

		assert_int_equal(gpushare_exec_dir_name("pmix-namespace-that-is-very-long-indeed-0001", "node-with-a-long-name",
							a, sizeof(a)), GPUSHARE_OK);
		assert_int_equal(gpushare_exec_dir_name("pmix-namespace-that-is-very-long-indeed-0002", "node-with-a-long-name",
							b, sizeof(b)), GPUSHARE_OK);
		assert_true(strlen(a) <= 5 + 48);
		assert_string_not_equal(a, b);
	}
	/* Shortened to fit a smaller room (the pipe path's 80 characters). */
	assert_int_equal(gpushare_exec_dir_name("ompi-prterun-host-12345_1", "node-with-a-long-name", out, 36),
			 GPUSHARE_OK);
	assert_int_equal(strlen(out), 35);
	assert_memory_equal(out, "exec-ompi-prterun--", 19);   /* its start, then a hash */
	assert_int_equal(gpushare_exec_dir_name("ompi-prterun-host-12345_1", "node-with-a-long-name", out, 20),
			 GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_exec_dir_name("", "n", out, sizeof(out)), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_exec_dir_name("k", "n", out, 8), GPUSHARE_E_INVAL);
}

static void test_refusals(void **state)
{
	struct gpushare_exec x;
	struct gpushare_exec_opts o = { .strategy = GPUSHARE_STRATEGY_TIMESLICE };

	(void)state;
	unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
	assert_int_equal(gpushare_exec_open(&x, &o), GPUSHARE_E_NOT_FOUND);
	assert_non_null(strstr(gpushare_errdetail(), "no launcher found"));
	setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
	o.strategy = GPUSHARE_STRATEGY_MIG;
	assert_int_equal(gpushare_exec_open(&x, &o), GPUSHARE_E_INVAL);
	o.strategy = GPUSHARE_STRATEGY_TIMESLICE;
	o.bind = "diagonal";
	assert_int_equal(gpushare_exec_open(&x, &o), GPUSHARE_E_INVAL);
	o.bind = NULL;
	/* 2 ranks at 4 per GPU do not fit; nothing is left behind. */
	o.ranks_per_gpu = 4;
	assert_int_equal(gpushare_exec_open(&x, &o), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "--ranks-per-gpu 4"));
	{
		char dir[512];

		snprintf(dir, sizeof(dir), "%s/gpushare/exec-ompi-77@n1", base);
		assert_false(exists(dir));
	}
}

static void test_two_ranks(void **state)
{
	struct gpushare_exec a, b;
	struct gpushare_exec_leave la, lb;
	struct gpushare_exec_opts o = { .strategy = GPUSHARE_STRATEGY_TIMESLICE, .bind = "block" };
	char dir[512], path[600];
	bool cvd = false;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/gpushare/exec-ompi-77@n1", base);
	setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
	assert_int_equal(gpushare_exec_open(&a, &o), GPUSHARE_OK);
	setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
	assert_int_equal(gpushare_exec_open(&b, &o), GPUSHARE_OK);
	assert_string_equal(a.job_key, "ompi-77");
	assert_string_equal(a.node, "n1");
	assert_string_equal(a.job_dir, dir);
	assert_int_equal(a.gpu_index, 0);
	assert_int_equal(b.gpu_index, 1);
	assert_int_equal(a.max_ranks_per_gpu, 1);
	assert_false(a.warn_shared_gpu || b.warn_shared_gpu);
	for (char *const *e = b.env; *e; e++)
		cvd |= strncmp(*e, "CUDA_VISIBLE_DEVICES=GPU-", 25) == 0;
	assert_true(cvd);
	snprintf(path, sizeof(path), "%s/ranks/0", dir);
	assert_true(exists(path));
	snprintf(path, sizeof(path), "%s/gpus", dir);
	assert_true(exists(path)); /* the node's GPUs, for the ranks after */

	/* A second copy of local rank 1 is refused. */
	{
		struct gpushare_exec c;

		assert_int_equal(gpushare_exec_open(&c, &o), GPUSHARE_E_BUSY);
		assert_non_null(strstr(gpushare_errdetail(), "already runs"));
	}

	/* Rank 0 leaves first: rank 1 is alive, nothing is removed. */
	assert_int_equal(gpushare_exec_close(&a, &la), GPUSHARE_OK);
	assert_false(la.last);
	assert_true(exists(dir));
	/* Rank 1 is the last: the directory and its lock go. */
	assert_int_equal(gpushare_exec_close(&b, &lb), GPUSHARE_OK);
	assert_true(lb.last);
	assert_int_equal(lb.missing, 0);
	assert_false(exists(dir));
	snprintf(path, sizeof(path), "%s.lock", dir);
	assert_false(exists(path));
}

static void test_shared_gpu_warning_once(void **state)
{
	struct gpushare_exec x[3];
	struct gpushare_exec_opts o = { .strategy = GPUSHARE_STRATEGY_TIMESLICE };
	int warned = 0;

	(void)state;
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "3", 1);
	setenv("OMPI_MCA_orte_ess_jobid", "78", 1);
	for (int r = 0; r < 3; r++) {
		char v[8];

		snprintf(v, sizeof(v), "%d", r);
		setenv("OMPI_COMM_WORLD_LOCAL_RANK", v, 1);
		assert_int_equal(gpushare_exec_open(&x[r], &o), GPUSHARE_OK);
		assert_int_equal(x[r].max_ranks_per_gpu, 2);
		warned += x[r].warn_shared_gpu;
	}
	assert_int_equal(warned, 1);
	for (int r = 0; r < 3; r++)
		assert_int_equal(gpushare_exec_close(&x[r], NULL), GPUSHARE_OK);
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
	setenv("OMPI_MCA_orte_ess_jobid", "77", 1);
}

/* Make the directory of a job whose only rank died: its rank file exists
 * and nobody holds its lock. */
static void dead_job(const char *name, char *dir, size_t len)
{
	char path[700];
	int fd;

	snprintf(dir, len, "%s/gpushare/%s", base, name);
	assert_int_equal(mkdir(dir, 0700) == 0 || exists(dir), 1);
	snprintf(path, sizeof(path), "%s/ranks", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/ranks/0", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "1 1 0 0\n", 8), 8);
	close(fd);
}

static void test_reap_dead_job(void **state)
{
	char dir[512], live[512], path[600];
	size_t n = 0;
	int fd;

	(void)state;
	mkdir(base, 0700);
	{
		char g[400];

		snprintf(g, sizeof(g), "%s/gpushare", base);
		mkdir(g, 0700);
	}
	dead_job("exec-dead-1@n1", dir, sizeof(dir));
	/* A live job: its rank file is locked. */
	dead_job("exec-live-1@n1", live, sizeof(live));
	snprintf(path, sizeof(path), "%s/ranks/0", live);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);

	assert_int_equal(gpushare_exec_reap(NULL, &n), GPUSHARE_OK);
	assert_int_equal(n, 1);
	assert_false(exists(dir));
	assert_true(exists(live));
	close(fd);
	/* skip: the caller's own job is left alone */
	assert_int_equal(gpushare_exec_reap("exec-live-1@n1", &n), GPUSHARE_OK);
	assert_int_equal(n, 0);
	assert_int_equal(gpushare_exec_reap(NULL, &n), GPUSHARE_OK);
	assert_int_equal(n, 1);
	assert_false(exists(live));
}

static void test_stale_same_key(void **state)
{
	struct gpushare_exec x;
	struct gpushare_exec_opts o = { .strategy = GPUSHARE_STRATEGY_TIMESLICE };
	char dir[512];

	(void)state;
	/* A killed job of the same key left rank 0's file: rank 0 of the new
	 * job starts afresh instead of refusing. */
	setenv("OMPI_MCA_orte_ess_jobid", "79", 1);
	setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1", 1);
	dead_job("exec-ompi-79@n1", dir, sizeof(dir));
	assert_int_equal(gpushare_exec_open(&x, &o), GPUSHARE_OK);
	assert_int_equal(gpushare_exec_close(&x, NULL), GPUSHARE_OK);
	assert_false(exists(dir));
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
	setenv("OMPI_MCA_orte_ess_jobid", "77", 1);
}

static void test_dry_run(void **state)
{
	struct gpushare_exec x;
	struct gpushare_exec_opts o = { .strategy = GPUSHARE_STRATEGY_MPS_SPLIT, .dry_run = true };
	char dir[512];
	bool pct = false;

	(void)state;
	setenv("GPUSHARE_MPS_CONTROL", "/bin/true", 1); /* found; never started in a dry run */
	setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
	assert_int_equal(gpushare_exec_open(&x, &o), GPUSHARE_OK);
	assert_int_equal(x.ranks_on_gpu, 2);
	assert_int_equal(x.daemon_pid, 0);
	assert_non_null(strstr(x.pipe_dir, "/exec-ompi-77@n1/mps/pipe"));
	for (char *const *e = x.env; *e; e++)
		pct |= strcmp(*e, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50") == 0;
	assert_true(pct);
	assert_int_equal(gpushare_exec_close(&x, NULL), GPUSHARE_OK);
	snprintf(dir, sizeof(dir), "%s/gpushare/exec-ompi-77@n1", base);
	assert_false(exists(dir));
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
	unsetenv("GPUSHARE_MPS_CONTROL");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dir_name),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_two_ranks),
		cmocka_unit_test(test_shared_gpu_warning_once),
		cmocka_unit_test(test_reap_dead_job),
		cmocka_unit_test(test_stale_same_key),
		cmocka_unit_test(test_dry_run),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
