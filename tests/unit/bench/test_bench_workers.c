/*
 * Unit tests of a bench session's workers (lib/bench/bench_workers.c),
 * driven without a GPU and without gpushare bench around them: workers
 * that run and are measured, one that exits before it is ready, one that
 * never gets ready (the start timeout), one that ignores STOP (killed after
 * the grace, the others' figures kept), a session that fills the result from an offset (sequential's
 * turns), and gpushare-worker's CPU spin workload. Every test also checks
 * that no worker process is left unreaped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_session.h"
#include "gpushare/bench.h"
#include "gpushare/gpushare.h"

static void test_measured(void **state)
{
	static const char *const args[] = { "--request-us", "500", NULL };
	struct session_test *t = malloc(sizeof(*t));

	(void)state;
	assert_non_null(t);
	session_init(t, 2, args);
	assert_int_equal(session_run_all(t), GPUSHARE_OK);
	assert_false(t->res.partial);
	assert_int_equal(t->res.failed_worker, -1);
	assert_int_equal(t->res.stragglers, 0);
	for (int i = 0; i < 2; i++) {
		const struct gpushare_bench_worker *w = &t->res.workers[i];

		assert_int_equal(w->index, i);
		assert_int_equal(w->process, i);
		assert_true(w->pid > 0);
		assert_true(w->requests > 0);
		assert_int_equal(w->hist.count, w->requests);
		assert_false(w->failed);
		assert_int_equal(w->exit_code, 0);
		/* The window: 150 ms, measured from GO + warm-up to STOP. */
		assert_true(w->window_seconds > 0.1 && w->window_seconds < 1.0);
	}
	assert_true(t->res.warmup_seconds > 0.015 && t->res.warmup_seconds < 0.5);
	assert_true(session_all_reaped(t));
	session_release(t);
	free(t);
}

static void test_exits_before_ready(void **state)
{
	static const char *const args[] = { "--exit-now", "--exit-code", "3", "--only-worker", "1", NULL };
	struct session_test *t = malloc(sizeof(*t));

	(void)state;
	assert_non_null(t);
	session_init(t, 2, args);
	assert_int_not_equal(session_run_all(t), GPUSHARE_OK);
	/* failed_worker is the 0-based index; messages number workers from 1 */
	assert_int_equal(t->res.failed_worker, 1);
	assert_non_null(strstr(t->res.failure, "worker 2"));
	assert_true(t->res.workers[1].failed);
	assert_int_equal(t->res.workers[1].requests, 0);
	assert_true(session_all_reaped(t));
	session_release(t);
	free(t);
}

static void test_start_timeout(void **state)
{
	static const char *const args[] = { "--never-ready", "--only-worker", "0", NULL };
	struct session_test *t = malloc(sizeof(*t));

	(void)state;
	assert_non_null(t);
	session_init(t, 2, args);
	t->c.start_timeout_ns = 300 * 1000000ULL;
	assert_int_equal(session_run_all(t), GPUSHARE_E_TIMEOUT);
	assert_int_equal(t->res.failed_worker, 0);
	assert_non_null(strstr(t->res.failure, "worker 1 was not ready after"));
	assert_non_null(strstr(gpushare_errdetail(), "--start-timeout"));
	assert_true(session_all_reaped(t));
	session_release(t);
	free(t);
}

static void test_ignores_stop(void **state)
{
	static const char *const args[] = { "--ignore-stop", "--only-worker", "0", NULL };
	struct session_test *t = malloc(sizeof(*t));

	(void)state;
	assert_non_null(t);
	session_init(t, 2, args);
	t->c.grace_ns = 200 * 1000000ULL;
	assert_int_equal(session_run_all(t), GPUSHARE_OK);
	/* Its relay killed it after the grace; the measurements are kept, the
	 * run is partial and says why. */
	assert_true(t->res.partial);
	assert_int_equal(t->res.failed_worker, 0);
	assert_non_null(strstr(t->res.failure, "did not exit within"));
	assert_true(t->res.workers[0].requests > 0);
	assert_true(t->res.workers[1].requests > 0);
	assert_false(t->res.workers[1].failed);
	assert_true(session_all_reaped(t));
	session_release(t);
	free(t);
}

/* Sequential's turn of worker 1: one process, slot 0 fills workers[1]. */
static void test_offset(void **state)
{
	static const char *const args[] = { "--request-us", "500", NULL };
	struct session_test *t = malloc(sizeof(*t));

	(void)state;
	assert_non_null(t);
	session_init(t, 2, args);
	assert_int_equal(gpushare_cmd_resolve(&t->c, t->x.command, sizeof(t->x.command)), GPUSHARE_OK);
	assert_int_equal(bench_session_run(&t->x, GPUSHARE_STRATEGY_SEQUENTIAL, 1, 2, t->procs, 1, 1, &t->res, 1),
			 GPUSHARE_OK);
	assert_int_equal(t->res.workers[0].requests, 0);
	assert_int_equal(t->res.workers[0].pid, 0);
	assert_int_equal(t->res.workers[1].index, 1);
	assert_true(t->res.workers[1].requests > 0);
	assert_true(session_all_reaped(t));
	session_release(t);
	free(t);
}

/* Worker mode: gpushare-worker (beside the tests' build directory) with the
 * CPU spin workload, its options on its command line. */
static void test_spin_worker(void **state)
{
	struct session_test *t = malloc(sizeof(*t));
	char dir[512];

	(void)state;
	assert_non_null(t);
	session_init(t, 2, NULL);
	t->c.command = NULL;
	session_helper("../../gpushare-worker", dir, sizeof(dir));
	if (!realpath(dir, t->x.worker) || access(t->x.worker, X_OK) != 0) {
		session_release(t);
		free(t);
		skip();
	}
	assert_int_equal(gpushare_bench_set_workload(&t->c, "spin"), GPUSHARE_OK);
	assert_int_equal(gpushare_bench_set_wl_option(&t->c, "request-us", "200"), GPUSHARE_OK);
	assert_int_equal(bench_session_run(&t->x, GPUSHARE_STRATEGY_TIMESLICE, 0, 1, t->procs, 2, 2, &t->res, 0),
			 GPUSHARE_OK);
	for (int i = 0; i < 2; i++) {
		assert_true(t->res.workers[i].requests > 0);
		assert_false(t->res.workers[i].failed);
		assert_int_equal(t->res.workers[i].exit_code, 0);
	}
	assert_true(session_all_reaped(t));
	session_release(t);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_measured),
		cmocka_unit_test(test_exits_before_ready),
		cmocka_unit_test(test_start_timeout),
		cmocka_unit_test(test_ignores_stop),
		cmocka_unit_test(test_offset),
		cmocka_unit_test(test_spin_worker),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
