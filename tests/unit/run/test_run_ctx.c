/*
 * Unit tests: the run context (lib/run/run_ctx.c) that bench, sweep, farm
 * and exec open and close: a new run directory with its no-mps directory,
 * the strategies started in it (the private MPS session against the
 * stand-in control program), a caller's directory (exec's job directory)
 * that is kept, and the strategies' capabilities (lib/strategy).
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

#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/strategy.h"
#include "gpushare/util.h"
#include "run_ctx.h"

#define UNIT_TMPDIR "/tmp/gsrc"
#include "mps_sandbox.h"

static bool is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Which strategies may run farm jobs and exec ranks, and which need MPS:
 * written once, in the strategy table. */
static void test_capabilities(void **state)
{
	static const struct {
		int id;
		bool jobs, mps;
	} want[] = {
		{ GPUSHARE_STRATEGY_TIMESLICE, true, false },  { GPUSHARE_STRATEGY_MPS, true, true },
		{ GPUSHARE_STRATEGY_MPS_SPLIT, true, true },   { GPUSHARE_STRATEGY_MIG, false, false },
		{ GPUSHARE_STRATEGY_SEQUENTIAL, false, false }, { GPUSHARE_STRATEGY_STREAMS, false, false },
		{ GPUSHARE_STRATEGY_CEILING, false, false },
	};
	const struct gpushare_strategy_ops *st;

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(gpushare_run_strategy(want[i].id, &st), GPUSHARE_OK);
		assert_int_equal(st->runs_jobs, want[i].jobs);
		assert_int_equal(st->uses_mps, want[i].mps);
		assert_int_equal(gpushare_strategy_runs_jobs(want[i].id), want[i].jobs);
		assert_int_equal(gpushare_strategy_uses_mps(want[i].id), want[i].mps);
	}
	assert_int_equal(gpushare_run_strategy(12345, &st), GPUSHARE_E_INVAL);
	assert_null(st);
	assert_false(gpushare_strategy_runs_jobs(12345) || gpushare_strategy_uses_mps(12345));
}

static void test_gpus(void **state)
{
	struct gpushare_system_info sys;
	struct gpushare_gpu_info g[2];
	struct gpushare_gpu_ref *inv = NULL;
	struct gpushare_run_ctx r;
	size_t n = 0;

	(void)state;
	memset(&sys, 0, sizeof(sys));
	memset(g, 0, sizeof(g));
	g[0].index = 3;
	snprintf(g[0].uuid, sizeof(g[0].uuid), "GPU-aaaa");
	g[1].index = 1;
	snprintf(g[1].uuid, sizeof(g[1].uuid), "GPU-bbbb");
	sys.gpus = g;
	sys.n_gpus = 2;
	assert_int_equal(gpushare_run_gpu_inventory(&sys, &inv, &n), GPUSHARE_OK);
	assert_int_equal(n, 2);
	assert_int_equal(inv[0].index, 3);
	assert_string_equal(inv[1].uuid, "GPU-bbbb");

	gpushare_run_ctx_init(&r, &(struct gpushare_run_opts){ .prefix = "bench", .visible = "0" });
	assert_string_equal(r.sx.visible, "0");
	gpushare_run_ctx_set_gpus(&r, inv, n);
	assert_string_equal(r.sx.visible, "GPU-aaaa,GPU-bbbb");
	gpushare_run_ctx_set_gpus(&r, inv, 0);
	assert_string_equal(r.sx.visible, "");
	free(inv);
}

/* A new run directory: made by open with its empty no-mps directory, which
 * plain workers are pointed at; removed by close. */
static void test_run_dir(void **state)
{
	struct gpushare_run_ctx r;
	struct gpushare_strv env = { 0 };
	struct gpushare_placement p;
	char dir[GPUSHARE_PATH_MAX];

	(void)state;
	gpushare_run_ctx_init(&r, &(struct gpushare_run_opts){ .prefix = "farm", .visible = "GPU-aaaa" });
	assert_int_equal(gpushare_run_ctx_check(&r, GPUSHARE_STRATEGY_TIMESLICE), GPUSHARE_OK);
	assert_string_equal(r.dir, "");
	assert_int_equal(gpushare_run_ctx_open(&r), GPUSHARE_OK);
	assert_true(r.own_dir);
	assert_non_null(strstr(r.dir, "/farm-"));
	assert_true(is_dir(r.dir));
	assert_true(is_dir(r.no_mps_dir));
	assert_ptr_equal(r.sx.run_dir, r.dir);
	assert_int_equal(gpushare_run_ctx_start(&r, GPUSHARE_STRATEGY_TIMESLICE), GPUSHARE_OK);
	assert_int_equal(gpushare_run_ctx_env(&r, 0, "", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_MPS_PIPE_DIRECTORY"), r.no_mps_dir);
	assert_string_equal(env_of(&env, "CUDA_VISIBLE_DEVICES"), "GPU-aaaa");
	assert_string_equal(env_of(&env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "");
	gpushare_strv_release(&env);
	assert_int_equal(gpushare_run_ctx_env(&r, 1, "GPU-bbbb", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_VISIBLE_DEVICES"), "GPU-bbbb");
	assert_string_equal(p.visible, "GPU-bbbb");
	gpushare_strv_release(&env);
	snprintf(dir, sizeof(dir), "%s", r.dir);
	assert_int_equal(gpushare_run_ctx_close(&r, GPUSHARE_OK), GPUSHARE_OK);
	assert_false(is_dir(dir));
	/* A second close does nothing. */
	assert_int_equal(gpushare_run_ctx_close(&r, GPUSHARE_OK), GPUSHARE_OK);
}

/* mps in a run directory: its private daemon under <run>/mps, started by
 * start and stopped by stop; several strategies in turn (as bench runs
 * them) share the directory; an error's detail survives close. */
static void test_mps_session(void **state)
{
	struct gpushare_run_ctx r;
	struct gpushare_strv env = { 0 };
	struct gpushare_placement p;
	char dir[GPUSHARE_PATH_MAX], pipe[GPUSHARE_PATH_MAX + 16];

	(void)state;
	setenv("GPUSHARE_MPS_CONTROL", fake, 1);
	gpushare_run_ctx_init(&r, &(struct gpushare_run_opts){ .prefix = "bench", .visible = "GPU-aaaa" });
	r.sx.workers = 4;
	assert_int_equal(gpushare_run_ctx_check(&r, GPUSHARE_STRATEGY_MPS_SPLIT), GPUSHARE_OK);
	assert_int_equal(gpushare_run_ctx_open(&r), GPUSHARE_OK);
	assert_int_equal(gpushare_run_ctx_start(&r, GPUSHARE_STRATEGY_MPS_SPLIT), GPUSHARE_OK);
	assert_true(r.started && r.sx.mps.open && r.sx.mps.started);
	snprintf(pipe, sizeof(pipe), "%s/mps/pipe", r.dir);
	assert_string_equal(r.sx.mps.m.pipe_dir, pipe);
	assert_int_equal(gpushare_run_ctx_env(&r, 0, "", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_MPS_PIPE_DIRECTORY"), pipe);
	assert_string_equal(env_of(&env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
	gpushare_strv_release(&env);
	assert_int_equal(gpushare_run_ctx_stop(&r, GPUSHARE_OK), GPUSHARE_OK);
	assert_false(r.started || r.sx.mps.open);
	/* The next strategy of the same run. */
	assert_int_equal(gpushare_run_ctx_start(&r, GPUSHARE_STRATEGY_TIMESLICE), GPUSHARE_OK);
	assert_int_equal(gpushare_run_ctx_env(&r, 0, "", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_MPS_PIPE_DIRECTORY"), r.no_mps_dir);
	gpushare_strv_release(&env);
	assert_int_equal(gpushare_run_ctx_stop(&r, GPUSHARE_OK), GPUSHARE_OK);
	/* Closed with a daemon up and an error: the daemon stops, the error
	 * and its detail stay. */
	assert_int_equal(gpushare_run_ctx_start(&r, GPUSHARE_STRATEGY_MPS), GPUSHARE_OK);
	snprintf(dir, sizeof(dir), "%s", r.dir);
	gpushare_fail(GPUSHARE_E_WORKER, "a worker failed");
	assert_int_equal(gpushare_run_ctx_close(&r, GPUSHARE_E_WORKER), GPUSHARE_E_WORKER);
	assert_string_equal(gpushare_errdetail(), "a worker failed");
	assert_false(r.sx.mps.open);
	assert_false(is_dir(dir));
	unsetenv("GPUSHARE_MPS_CONTROL");
}

/* The caller's directory (exec's job directory): used as it is and kept;
 * the no-mps directory is made only for a strategy without MPS and not in
 * a dry run; the daemon of the directory is joined, never stopped. */
static void test_callers_dir(void **state)
{
	struct gpushare_run_ctx r;
	struct gpushare_strv env = { 0 };
	struct gpushare_placement p;
	char job[GPUSHARE_PATH_MAX], no_mps[GPUSHARE_PATH_MAX + 16], pipe[GPUSHARE_PATH_MAX + 16];

	(void)state;
	snprintf(job, sizeof(job), "%s/exec-job@node", xdg);
	assert_int_equal(mkdir(job, 0700), 0);
	snprintf(no_mps, sizeof(no_mps), "%s/no-mps", job);
	snprintf(pipe, sizeof(pipe), "%s/mps/pipe", job);

	/* A dry run creates nothing. */
	gpushare_run_ctx_init(&r, &(struct gpushare_run_opts){ .dir = job, .dry_run = true });
	assert_int_equal(gpushare_run_ctx_open(&r), GPUSHARE_OK);
	assert_false(r.own_dir);
	assert_string_equal(r.no_mps_dir, no_mps);
	assert_int_equal(gpushare_run_ctx_start(&r, GPUSHARE_STRATEGY_TIMESLICE), GPUSHARE_OK);
	assert_false(is_dir(no_mps));
	assert_int_equal(gpushare_run_ctx_close(&r, GPUSHARE_OK), GPUSHARE_OK);

	/* timeslice: the no-mps directory is made by start. */
	gpushare_run_ctx_init(&r, &(struct gpushare_run_opts){ .dir = job });
	assert_int_equal(gpushare_run_ctx_open(&r), GPUSHARE_OK);
	assert_false(is_dir(no_mps));
	assert_int_equal(gpushare_run_ctx_start(&r, GPUSHARE_STRATEGY_TIMESLICE), GPUSHARE_OK);
	assert_true(is_dir(no_mps));
	assert_int_equal(gpushare_run_ctx_env(&r, 0, "GPU-aaaa", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_MPS_PIPE_DIRECTORY"), no_mps);
	gpushare_strv_release(&env);
	assert_int_equal(gpushare_run_ctx_close(&r, GPUSHARE_OK), GPUSHARE_OK);
	assert_true(is_dir(job));

	/* mps: the job's daemon under <dir>/mps, joined (here known not to
	 * answer, as in a dry run); its clients' environment names it. */
	gpushare_run_ctx_init(&r, &(struct gpushare_run_opts){ .dir = job });
	assert_int_equal(gpushare_run_ctx_open(&r), GPUSHARE_OK);
	assert_int_equal(gpushare_run_ctx_join(&r, GPUSHARE_STRATEGY_MPS, false), GPUSHARE_OK);
	assert_false(r.sx.mps.open || r.sx.mps.started || r.started);
	assert_string_equal(r.sx.mps.m.pipe_dir, pipe);
	assert_int_equal(gpushare_run_ctx_env(&r, 0, "GPU-aaaa", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_MPS_PIPE_DIRECTORY"), pipe);
	assert_string_equal(env_of(&env, "CUDA_VISIBLE_DEVICES"), "GPU-aaaa");
	gpushare_strv_release(&env);
	assert_int_equal(gpushare_run_ctx_close(&r, GPUSHARE_OK), GPUSHARE_OK);
	assert_true(is_dir(job));

	/* mps started in the caller's directory: the daemon is the caller's
	 * (close leaves it running); stopped here through its session. */
	setenv("GPUSHARE_MPS_CONTROL", fake, 1);
	gpushare_run_ctx_init(&r, &(struct gpushare_run_opts){ .dir = job });
	assert_int_equal(gpushare_run_ctx_open(&r), GPUSHARE_OK);
	assert_int_equal(gpushare_run_ctx_start(&r, GPUSHARE_STRATEGY_MPS), GPUSHARE_OK);
	assert_true(r.sx.mps.open && r.sx.mps.started);
	assert_false(r.started);
	assert_string_equal(r.sx.mps.m.pipe_dir, pipe);
	assert_int_equal(gpushare_run_ctx_close(&r, GPUSHARE_OK), GPUSHARE_OK);
	assert_true(r.sx.mps.open);
	assert_int_equal(gpushare_mps_session_close(&r.sx.mps, GPUSHARE_OK), GPUSHARE_OK);
	unsetenv("GPUSHARE_MPS_CONTROL");
	/* An environment before any strategy: refused. */
	gpushare_run_ctx_init(&r, &(struct gpushare_run_opts){ .dir = job });
	assert_int_equal(gpushare_run_ctx_env(&r, 0, "", &env, &p), GPUSHARE_E_INVAL);
	gpushare_strv_release(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capabilities),
		cmocka_unit_test(test_gpus),
		cmocka_unit_test(test_run_dir),
		cmocka_unit_test(test_mps_session),
		cmocka_unit_test(test_callers_dir),
	};

	return cmocka_run_group_tests(tests, sandbox_setup, sandbox_teardown);
}
