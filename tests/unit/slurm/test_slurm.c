/*
 * Unit tests: Slurm's share as a job sees it (lib/slurm/slurm.c): only
 * inside a Slurm job, the gres/mps percentage (above 100 taken as 100, a
 * bad value refused naming the variable), the gres/shard count, the phrase
 * that says it; the prolog's pipe directory names; the prolog and epilog
 * outside Slurm and for a job without gres/mps; the GPUs Slurm gave where
 * it set no CUDA_VISIBLE_DEVICES; the job mapping's file names; a
 * configuration file's Include lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "gpushare/slurm.h"

static void clear(void)
{
	unsetenv("SLURM_JOB_ID");
	unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	unsetenv("SLURM_SHARDS_ON_NODE");
	unsetenv("GPUSHARE_SLURM_DIR");
	unsetenv("CUDA_VISIBLE_DEVICES");
	unsetenv("SLURM_STEP_GPUS");
	unsetenv("SLURM_JOB_GPUS");
}

static void test_share(void **state)
{
	struct gpushare_slurm_share s;
	char text[160];

	(void)state;
	clear();
	/* Outside a job an inherited percentage is not Slurm's. */
	setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "40", 1);
	assert_int_equal(gpushare_slurm_share_read(&s), GPUSHARE_OK);
	assert_false(s.in_job);
	assert_false(gpushare_slurm_share_any(&s));
	setenv("SLURM_JOB_ID", "42", 1);
	assert_int_equal(gpushare_slurm_share_read(&s), GPUSHARE_OK);
	assert_true(s.in_job);
	assert_string_equal(s.job_id, "42");
	assert_true(s.mps_percentage == 40);
	assert_int_equal(s.shards, 0);
	gpushare_slurm_share_describe(&s, text, sizeof(text));
	assert_string_equal(text, "gres/mps 40% (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE)");
	/* Above 100 (Slurm's miscount beside gres/shard): taken as 100. */
	setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "625", 1);
	assert_int_equal(gpushare_slurm_share_read(&s), GPUSHARE_OK);
	assert_true(s.mps_percentage == 100 && s.mps_clamped);
	for (size_t i = 0; i < 4; i++) {
		static const char *const bad[] = { "abc", "0", "-5", "50x" };

		setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", bad[i], 1);
		assert_int_equal(gpushare_slurm_share_read(&s), GPUSHARE_E_INVAL);
		assert_non_null(strstr(gpushare_errdetail(), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
	}
	unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	setenv("SLURM_SHARDS_ON_NODE", "3", 1);
	assert_int_equal(gpushare_slurm_share_read(&s), GPUSHARE_OK);
	assert_int_equal(s.shards, 3);
	assert_true(gpushare_slurm_share_any(&s));
	gpushare_slurm_share_describe(&s, text, sizeof(text));
	assert_string_equal(text, "gres/shard 3 (SLURM_SHARDS_ON_NODE)");
	setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "50", 1);
	assert_int_equal(gpushare_slurm_share_read(&s), GPUSHARE_OK);
	gpushare_slurm_share_describe(&s, text, sizeof(text));
	assert_string_equal(text, "gres/mps 50% (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), gres/shard 3 (SLURM_SHARDS_ON_NODE)");
	setenv("SLURM_SHARDS_ON_NODE", "-1", 1);
	assert_int_equal(gpushare_slurm_share_read(&s), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "SLURM_SHARDS_ON_NODE"));
	clear();
}

static void test_dirs(void **state)
{
	char out[256];

	(void)state;
	clear();
	gpushare_slurm_state_dir(NULL, out, sizeof(out));
	assert_string_equal(out, GPUSHARE_SLURM_DEFAULT_DIR);
	setenv("GPUSHARE_SLURM_DIR", "/run/x", 1);
	gpushare_slurm_state_dir(NULL, out, sizeof(out));
	assert_string_equal(out, "/run/x");
	gpushare_slurm_state_dir("/run/y", out, sizeof(out));
	assert_string_equal(out, "/run/y");
	assert_int_equal(gpushare_slurm_daemon_pipe("/run/x", 1000, "GPU-ab-12", out, sizeof(out)), GPUSHARE_OK);
	assert_string_equal(out, "/run/x/mps-1000-GPU-ab-12/pipe");
	assert_int_equal(gpushare_slurm_daemon_pipe("/run/x", 1000, "../etc", out, sizeof(out)), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_slurm_daemon_pipe("/run/x", 1000, "", out, sizeof(out)), GPUSHARE_E_DIR);
	clear();
}

static void test_hooks_without_mps(void **state)
{
	struct gpushare_slurm_hook_opts o = { .state_dir = "/nonexistent/gpushare-slurm" };
	struct gpushare_slurm_hook_result r;

	(void)state;
	clear();
	/* Outside Slurm: one error that says so. */
	assert_int_equal(gpushare_slurm_prolog(&o, &r), GPUSHARE_E_NOT_FOUND);
	assert_non_null(strstr(gpushare_errdetail(), "SLURM_JOB_ID is not set"));
	assert_int_equal(gpushare_slurm_epilog(&o, &r), GPUSHARE_E_NOT_FOUND);
	/* A job with whole GPUs: nothing to do, nothing created. */
	setenv("SLURM_JOB_ID", "7", 1);
	assert_int_equal(gpushare_slurm_prolog(&o, &r), GPUSHARE_OK);
	assert_false(r.mps);
	assert_string_equal(r.job_id, "7");
	assert_int_equal(access("/nonexistent/gpushare-slurm", F_OK), -1);
	/* Its epilog: no record. */
	assert_int_equal(gpushare_slurm_epilog(&o, &r), GPUSHARE_OK);
	assert_true(r.already);
	clear();
}

/* The GPUs Slurm gave, where it set no CUDA_VISIBLE_DEVICES: its own
 * variables first, then the prolog's record; a share nothing names is
 * refused, never every GPU of the node. */
static void test_job_gpus(void **state)
{
	char dir[] = "/tmp/gpushare-unit-slurm.XXXXXX", path[512], out[256];
	const char *source;
	FILE *f;

	(void)state;
	clear();
	assert_non_null(mkdtemp(dir));
	/* Outside a job, or with CUDA_VISIBLE_DEVICES: nothing to add. */
	assert_int_equal(gpushare_slurm_job_gpus(dir, out, sizeof(out), &source), GPUSHARE_OK);
	assert_string_equal(out, "");
	assert_null(source);
	setenv("SLURM_JOB_ID", "42", 1);
	setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "50", 1);
	setenv("CUDA_VISIBLE_DEVICES", "0", 1);
	assert_int_equal(gpushare_slurm_job_gpus(dir, out, sizeof(out), &source), GPUSHARE_OK);
	assert_string_equal(out, "");
	unsetenv("CUDA_VISIBLE_DEVICES");
	/* gres/mps without a GPU named: refused, saying why. */
	assert_int_equal(gpushare_slurm_job_gpus(dir, out, sizeof(out), &source), GPUSHARE_E_NOT_FOUND);
	assert_non_null(strstr(gpushare_errdetail(), "named no GPU"));
	assert_non_null(strstr(gpushare_errdetail(), "gres/mps 50%"));
	/* The prolog's record. */
	snprintf(path, sizeof(path), "%s/jobs", dir);
	assert_int_equal(mkdir(path, 0711), 0);
	snprintf(path, sizeof(path), "%s/jobs/42", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("uid 0\ngid 0\ngpu GPU-aa\ngpu GPU-bb\n", f);
	fclose(f);
	assert_int_equal(gpushare_slurm_job_gpus(dir, out, sizeof(out), &source), GPUSHARE_OK);
	assert_string_equal(out, "GPU-aa,GPU-bb");
	assert_string_equal(source, "prolog");
	/* Slurm's own variables first. */
	setenv("SLURM_JOB_GPUS", "3", 1);
	assert_int_equal(gpushare_slurm_job_gpus(dir, out, sizeof(out), &source), GPUSHARE_OK);
	assert_string_equal(out, "3");
	assert_string_equal(source, "SLURM_JOB_GPUS");
	setenv("SLURM_STEP_GPUS", "2", 1);
	assert_int_equal(gpushare_slurm_job_gpus(dir, out, sizeof(out), &source), GPUSHARE_OK);
	assert_string_equal(out, "2");
	assert_string_equal(source, "SLURM_STEP_GPUS");
	/* No share and nothing named (a node without gres): nothing to add. */
	unlink(path);
	unsetenv("SLURM_STEP_GPUS");
	unsetenv("SLURM_JOB_GPUS");
	unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	assert_int_equal(gpushare_slurm_job_gpus(dir, out, sizeof(out), &source), GPUSHARE_OK);
	assert_string_equal(out, "");
	/* gres/shard is a share too. */
	setenv("SLURM_SHARDS_ON_NODE", "2", 1);
	assert_int_equal(gpushare_slurm_job_gpus(dir, out, sizeof(out), &source), GPUSHARE_E_NOT_FOUND);
	snprintf(path, sizeof(path), "%s/jobs", dir);
	rmdir(path);
	rmdir(dir);
	clear();
}

/* Write text to dir/name. */
static void put(const char *d, const char *name, const char *text)
{
	char path[4352];
	FILE *f;

	assert_true((size_t)snprintf(path, sizeof(path), "%s/%s", d, name) < sizeof(path));
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_job_map_names(void **state)
{
	char d[] = "/tmp/gpushare-unit-map.XXXXXX", path[512];
	const char *bad[] = { "", "x", "2.", ".1", "2.1.0", "2a", "-1", "MIG-1" };

	(void)state;
	assert_non_null(mkdtemp(d));
	assert_int_equal(gpushare_slurm_job_map_name(d, "2.1", "7", true), GPUSHARE_OK);
	assert_int_equal(gpushare_slurm_job_map(d, 3, "7", true), GPUSHARE_OK);
	snprintf(path, sizeof(path), "%s/2.1", d);
	assert_int_equal(access(path, F_OK), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(gpushare_slurm_job_map_name(d, bad[i], "7", true), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_slurm_job_unmap_all(d, "7"), GPUSHARE_OK);
	assert_int_not_equal(access(path, F_OK), 0);
	assert_int_equal(rmdir(d), 0);
}

static void test_conf_include(void **state)
{
	char d[] = "/tmp/gpushare-unit-conf.XXXXXX", path[512], sub[512], cmd[600], *text = NULL;
	size_t len = 0;

	(void)state;
	assert_non_null(mkdtemp(d));
	snprintf(sub, sizeof(sub), "%s/d", d);
	assert_int_equal(mkdir(sub, 0755), 0);
	put(d, "gres.conf", "AutoDetect=off\n  INCLUDE d/a.conf # the nodes\nName=x\n");
	put(sub, "a.conf", "A=1\ninclude b.conf\n"); /* relative to d/ */
	put(sub, "b.conf", "B=2\n");
	snprintf(path, sizeof(path), "%s/gres.conf", d);
	assert_int_equal(gpushare_slurm_conf_read(path, &text, &len), GPUSHARE_OK);
	assert_string_equal(text, "AutoDetect=off\nA=1\nB=2\nName=x\n");
	assert_int_equal(len, strlen(text));
	free(text);
	/* Words that only begin like it are no Include. */
	put(sub, "b.conf", "Includes=3\nInclude\n");
	assert_int_equal(gpushare_slurm_conf_read(path, &text, &len), GPUSHARE_OK);
	assert_string_equal(text, "AutoDetect=off\nA=1\nIncludes=3\nInclude\nName=x\n");
	free(text);
	/* A loop, and a missing file: refused by name. */
	put(sub, "b.conf", "include ../gres.conf\n");
	assert_int_equal(gpushare_slurm_conf_read(path, &text, &len), GPUSHARE_E_INVAL);
	assert_null(text);
	assert_non_null(strstr(gpushare_errdetail(), "b.conf' line 1: Include"));
	assert_non_null(strstr(gpushare_errdetail(), "is a loop"));
	put(sub, "b.conf", "include nothing.conf\n");
	assert_int_equal(gpushare_slurm_conf_read(path, &text, &len), GPUSHARE_E_IO);
	assert_non_null(strstr(gpushare_errdetail(), "nothing.conf': No such file"));
	snprintf(path, sizeof(path), "%s/none.conf", d);
	assert_int_equal(gpushare_slurm_conf_read(path, &text, &len), GPUSHARE_E_NOT_FOUND);
	gpushare_clear_error();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_dirs),
		cmocka_unit_test(test_hooks_without_mps),
		cmocka_unit_test(test_job_gpus),
		cmocka_unit_test(test_job_map_names),
		cmocka_unit_test(test_conf_include),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
