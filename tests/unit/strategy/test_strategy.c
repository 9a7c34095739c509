/*
 * Unit tests: the strategy table (lib/strategy/strategy.c): every strategy has an
 * entry with its name and layout; the environment each gives a worker; the
 * checks that run before anything starts (control program, MIG, a daemon
 * in the way of timeslice); the private MPS session against the stand-in
 * control program.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/util.h"
#include "strategy.h"

#define UNIT_TMPDIR "/tmp/gsst"
#include "mps_sandbox.h"

static void ctx_init(struct gpushare_strategy_ctx *x, const char *visible)
{
	memset(x, 0, sizeof(*x));
	x->run_dir = xdg;
	x->no_mps_dir = "/nonexistent/no-mps";
	x->visible = visible;
	x->mps_pipe_dir = "";
	x->workers = 4;
}

static void test_table(void **state)
{
	static const struct {
		int id;
		enum gpushare_strategy_layout layout;
		bool commands, mps, jobs, sharing, client_share, driver, partitions;
	} want[] = {
		{ GPUSHARE_STRATEGY_TIMESLICE, GPUSHARE_LAYOUT_CONCURRENT, true, false, true, true, false, false, false },
		{ GPUSHARE_STRATEGY_MPS, GPUSHARE_LAYOUT_CONCURRENT, true, true, true, true, false, false, false },
		{ GPUSHARE_STRATEGY_MPS_SPLIT, GPUSHARE_LAYOUT_CONCURRENT, true, true, true, true, true, false, false },
		{ GPUSHARE_STRATEGY_MIG, GPUSHARE_LAYOUT_CONCURRENT, true, false, false, true, false, true, true },
		{ GPUSHARE_STRATEGY_SEQUENTIAL, GPUSHARE_LAYOUT_ONE_AT_A_TIME, true, false, false, false, false, false, false },
		{ GPUSHARE_STRATEGY_STREAMS, GPUSHARE_LAYOUT_THREADS, false, false, false, false, false, false, false },
		{ GPUSHARE_STRATEGY_CEILING, GPUSHARE_LAYOUT_CONCURRENT, true, false, false, false, false, false, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct gpushare_strategy_ops *st = gpushare_strategy_get(want[i].id);
		enum gpushare_strategy s = (enum gpushare_strategy)want[i].id;

		assert_non_null(st);
		assert_int_equal(st->id, want[i].id);
		assert_string_equal(st->name, gpushare_strategy_name(want[i].id));
		assert_int_equal(st->layout, want[i].layout);
		assert_int_equal(st->runs_commands, want[i].commands);
		assert_int_equal(st->uses_mps, want[i].mps);
		assert_int_equal(st->runs_jobs, want[i].jobs);
		assert_int_equal(st->sharing, want[i].sharing);
		assert_int_equal(st->client_share, want[i].client_share);
		assert_int_equal(st->needs_driver, want[i].driver);
		assert_int_equal(st->partitions, want[i].partitions);
		/* The public API answers from the same table. */
		assert_int_equal(gpushare_strategy_runs_commands(s), want[i].commands);
		assert_int_equal(gpushare_strategy_runs_jobs(s), want[i].jobs);
		assert_int_equal(gpushare_strategy_uses_mps(s), want[i].mps);
		assert_int_equal(gpushare_strategy_is_sharing(s), want[i].sharing);
		assert_int_equal(gpushare_strategy_client_share(s), want[i].client_share);
		assert_int_equal(gpushare_strategy_needs_driver(s), want[i].driver);
		assert_int_equal(gpushare_strategy_partitions(s), want[i].partitions);
		assert_non_null(st->check);
		assert_non_null(st->workers);
		assert_non_null(st->prepare);
		assert_non_null(st->worker_env);
		assert_non_null(st->teardown);
	}
	/* Unknown strategies can do nothing. */
	assert_false(gpushare_strategy_runs_commands(GPUSHARE_STRATEGY_COUNT) ||
		     gpushare_strategy_is_sharing(GPUSHARE_STRATEGY_COUNT) ||
		     gpushare_strategy_client_share(GPUSHARE_STRATEGY_COUNT) ||
		     gpushare_strategy_needs_driver(GPUSHARE_STRATEGY_COUNT) ||
		     gpushare_strategy_partitions(GPUSHARE_STRATEGY_COUNT));
	assert_null(gpushare_strategy_get(GPUSHARE_STRATEGY_COUNT));
	assert_null(gpushare_strategy_get(-1));
}

static void test_plain_env(void **state)
{
	const struct gpushare_strategy_ops *st = gpushare_strategy_get(GPUSHARE_STRATEGY_TIMESLICE);
	struct gpushare_strategy_ctx x;
	struct gpushare_strv env = { 0 };
	struct gpushare_placement p;

	(void)state;
	ctx_init(&x, "GPU-aaaa");
	assert_int_equal(st->worker_env(&x, 2, "", &env, &p), GPUSHARE_OK);
	/* Never reaches a daemon: an empty pipe directory, no inherited limits. */
	assert_string_equal(env_of(&env, "CUDA_MPS_PIPE_DIRECTORY"), "/nonexistent/no-mps");
	assert_string_equal(env_of(&env, "CUDA_VISIBLE_DEVICES"), "GPU-aaaa");
	assert_string_equal(env_of(&env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "");
	assert_string_equal(env_of(&env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "");
	assert_string_equal(env_of(&env, "CUDA_MPS_CLIENT_PRIORITY"), "");
	assert_string_equal(p.visible, "GPU-aaaa");
	assert_int_equal(p.priority, -1);
	gpushare_strv_release(&env);
	/* A device of its own (farm, exec: one GPU per worker). */
	assert_int_equal(st->worker_env(&x, 0, "GPU-bbbb", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_VISIBLE_DEVICES"), "GPU-bbbb");
	gpushare_strv_release(&env);
}

static void test_split_env(void **state)
{
	const struct gpushare_strategy_ops *st = gpushare_strategy_get(GPUSHARE_STRATEGY_MPS_SPLIT);
	const struct gpushare_strategy_ops *mps = gpushare_strategy_get(GPUSHARE_STRATEGY_MPS);
	double pct[3] = { 20, 30, 50 };
	uint64_t mem[1] = { 2ULL << 30 };
	struct gpushare_strategy_ctx x;
	struct gpushare_strv env = { 0 };
	struct gpushare_placement p;

	(void)state;
	setenv("GPUSHARE_MPS_CONTROL", fake, 1);
	ctx_init(&x, "GPU-aaaa");
	x.workers = 3;
	assert_int_equal(st->check(&x), GPUSHARE_OK);
	assert_int_equal(st->prepare(&x), GPUSHARE_OK);
	assert_true(x.mps.open && x.mps.started);
	assert_non_null(strstr(x.mps.m.pipe_dir, "/mps/pipe"));
	/* Default share: 100 / workers. */
	assert_int_equal(st->worker_env(&x, 1, "", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_MPS_PIPE_DIRECTORY"), x.mps.m.pipe_dir);
	assert_string_equal(env_of(&env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "33");
	assert_string_equal(env_of(&env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "");
	assert_string_equal(env_of(&env, "CUDA_VISIBLE_DEVICES"), "GPU-aaaa");
	assert_true(p.thread_percentage == 33);
	gpushare_strv_release(&env);
	/* One value per worker, one memory limit for all. */
	x.thread_percentage = pct;
	x.n_thread_percentage = 3;
	x.mem_limit_bytes = mem;
	x.n_mem_limit = 1;
	assert_int_equal(st->worker_env(&x, 2, "", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "50");
	assert_string_equal(env_of(&env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=2G");
	assert_int_equal(p.mem_limit_bytes, 2ULL << 30);
	gpushare_strv_release(&env);
	/* Plain mps removes inherited limits; an ordinal is not repeated to a
	 * client of a daemon that holds CUDA_VISIBLE_DEVICES. */
	assert_int_equal(mps->worker_env(&x, 0, "1", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "");
	assert_string_equal(env_of(&env, "CUDA_VISIBLE_DEVICES"), "");
	assert_string_equal(p.visible, "");
	gpushare_strv_release(&env);
	assert_int_equal(st->teardown(&x, GPUSHARE_OK), GPUSHARE_OK);
	assert_false(x.mps.open);
	unsetenv("GPUSHARE_MPS_CONTROL");
}

/* A job's cap (Slurm's gres/mps share): mps gives every client the cap,
 * mps-split divides it among the clients of a GPU (rounded down, at least 1),
 * and the other per-client limits still go. */
static void test_thread_cap(void **state)
{
	const struct gpushare_strategy_ops *st = gpushare_strategy_get(GPUSHARE_STRATEGY_MPS_SPLIT);
	const struct gpushare_strategy_ops *mps = gpushare_strategy_get(GPUSHARE_STRATEGY_MPS);
	struct gpushare_strategy_ctx x;
	struct gpushare_strv env = { 0 };
	struct gpushare_placement p;
	char pipe[128], log[128];

	(void)state;
	ctx_init(&x, "GPU-aaaa");
	snprintf(pipe, sizeof(pipe), "%s/cap/pipe", xdg);
	snprintf(log, sizeof(log), "%s/cap/log", xdg);
	assert_int_equal(gpushare_mps_init(&x.mps.m, pipe, log), GPUSHARE_OK);
	x.thread_cap = 50;
	x.workers = 2;
	assert_int_equal(mps->worker_env(&x, 0, "GPU-aaaa", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "50");
	assert_string_equal(env_of(&env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "");
	assert_string_equal(env_of(&env, "CUDA_MPS_CLIENT_PRIORITY"), "");
	assert_true(p.thread_percentage == 50);
	gpushare_strv_release(&env);
	assert_int_equal(st->worker_env(&x, 1, "GPU-aaaa", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
	gpushare_strv_release(&env);
	x.workers = 3;
	assert_int_equal(st->worker_env(&x, 1, "GPU-aaaa", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "16");
	gpushare_strv_release(&env);
	x.thread_cap = 2;
	x.workers = 4;
	assert_int_equal(st->worker_env(&x, 1, "GPU-aaaa", &env, &p), GPUSHARE_OK);
	assert_string_equal(env_of(&env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "1");
	gpushare_strv_release(&env);
}

static void test_checks(void **state)
{
	const struct gpushare_strategy_ops *mps = gpushare_strategy_get(GPUSHARE_STRATEGY_MPS);
	const struct gpushare_strategy_ops *mig = gpushare_strategy_get(GPUSHARE_STRATEGY_MIG);
	const struct gpushare_strategy_ops *ts = gpushare_strategy_get(GPUSHARE_STRATEGY_TIMESLICE);
	struct gpushare_strategy_ctx x;
	char pipe[256], log[256], cmd[2048];
	int n = 0;

	(void)state;
	ctx_init(&x, "");
	/* No control program: found before anything runs, saying so. */
	setenv("GPUSHARE_MPS_CONTROL", "/nonexistent/nvidia-cuda-mps-control", 1);
	assert_int_equal(mps->check(&x), GPUSHARE_E_NO_MPS_BINARY);
	/* A pipe directory where nothing answers. */
	setenv("GPUSHARE_MPS_CONTROL", fake, 1);
	x.mps_pipe_dir = xdg;
	assert_int_equal(mps->check(&x), GPUSHARE_E_MPS_NOT_RUNNING);
	assert_non_null(strstr(gpushare_errdetail(), xdg));
	x.mps_pipe_dir = "";
	/* MIG without the driver. */
	assert_int_equal(mig->check(&x), GPUSHARE_E_NO_DRIVER);
	assert_int_equal(mig->workers(&x, 4, true, &n), GPUSHARE_E_NO_DRIVER);
	/* timeslice: fine with no daemon, refused while one answers where
	 * plain processes look. */
	snprintf(pipe, sizeof(pipe), "%s/default/pipe", xdg);
	snprintf(log, sizeof(log), "%s/default/log", xdg);
	setenv("CUDA_MPS_PIPE_DIRECTORY", pipe, 1);
	assert_int_equal(ts->check(&x), GPUSHARE_OK);
	snprintf(cmd, sizeof(cmd), "mkdir -p -m 700 '%s' '%s' && CUDA_MPS_LOG_DIRECTORY='%s' '%s' -d", pipe, log, log, fake);
	assert_int_equal(system(cmd), 0);
	for (int i = 0; i < 50 && access(strcat(strcpy(cmd, pipe), "/control"), F_OK) != 0; i++)
		usleep(100 * 1000);
	assert_int_equal(ts->check(&x), GPUSHARE_E_BUSY);
	assert_non_null(strstr(gpushare_errdetail(), "gpushare mps stop --pipe-dir"));
	snprintf(cmd, sizeof(cmd), "echo quit | CUDA_MPS_PIPE_DIRECTORY='%s' '%s' >/dev/null", pipe, fake);
	assert_int_equal(system(cmd), 0);
	unsetenv("CUDA_MPS_PIPE_DIRECTORY");
	unsetenv("GPUSHARE_MPS_CONTROL");
}

/* Names come from the table; the parser takes the strategies one asks
 * for (not the ceiling), each once. */
static void test_names(void **state)
{
	enum gpushare_strategy out[GPUSHARE_STRATEGY_COUNT];
	size_t n = 0;

	(void)state;
	assert_string_equal(gpushare_strategy_name(GPUSHARE_STRATEGY_MPS_SPLIT), "mps-split");
	assert_string_equal(gpushare_strategy_name(GPUSHARE_STRATEGY_CEILING), "ceiling");
	assert_string_equal(gpushare_strategy_name(GPUSHARE_STRATEGY_COUNT), "unknown");
	assert_string_equal(gpushare_strategy_name(GPUSHARE_STRATEGY_NONE), "unknown");
	assert_int_equal(gpushare_strategy_parse_list("streams,timeslice,mps-split,mps,mig,sequential", out, &n), 0);
	assert_int_equal(n, GPUSHARE_STRATEGY_COUNT);
	assert_int_equal(out[0], GPUSHARE_STRATEGY_STREAMS);
	assert_int_equal(out[2], GPUSHARE_STRATEGY_MPS_SPLIT);
	assert_int_equal(out[3], GPUSHARE_STRATEGY_MPS);
	assert_int_equal(gpushare_strategy_parse_list("mps,ceiling", out, &n), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "unknown strategy 'ceiling'"));
	assert_int_equal(gpushare_strategy_parse_list("mps,mps", out, &n), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "'mps' is listed twice"));
	assert_int_equal(gpushare_strategy_parse_list("mp", out, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_strategy_parse_list("", out, &n), GPUSHARE_E_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table), cmocka_unit_test(test_names),
		cmocka_unit_test(test_plain_env),
		cmocka_unit_test(test_split_env),
		cmocka_unit_test(test_thread_cap),
		cmocka_unit_test(test_checks),
	};

	return cmocka_run_group_tests(tests, sandbox_setup, sandbox_teardown);
}
