/*
 * Unit tests of command mode (lib/bench/bench_cmd.c): resolving the
 * command and the checks of its configuration, and the relay driven by a
 * bench session (bench_workers.c) with the test worker of tests/helpers:
 * the environment each command gets (its index, the count, its batch, the
 * strategy's changes), job mode, a command that exits mid-run and one that
 * ignores 'stop'. No GPU.
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
#include "gpushare/files.h"
#include "gpushare/gpushare.h"

static void test_resolve(void **state)
{
	struct gpushare_bench_config c;
	char path[4096];
	char *none[] = { NULL }, *sh[] = { "sh", NULL }, *missing[] = { "/nonexistent/prog", NULL },
	     *dir[] = { "/tmp", NULL };

	(void)state;
	assert_int_equal(gpushare_bench_config_init(&c), GPUSHARE_OK);
	assert_int_equal(gpushare_cmd_resolve(&c, path, sizeof(path)), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "no command given after '--'"));
	c.command = none;
	assert_int_equal(gpushare_cmd_resolve(&c, path, sizeof(path)), GPUSHARE_E_INVAL);
	c.command = sh;
	setenv("PATH", "/usr/bin:/bin", 1);
	assert_int_equal(gpushare_cmd_resolve(&c, path, sizeof(path)), GPUSHARE_OK);
	assert_true(path[0] == '/' && strlen(path) > 3 && !strcmp(path + strlen(path) - 3, "/sh"));
	c.command = missing;
	assert_int_equal(gpushare_cmd_resolve(&c, path, sizeof(path)), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "cannot run command '/nonexistent/prog'"));
	c.command = dir;
	assert_int_equal(gpushare_cmd_resolve(&c, path, sizeof(path)), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "is not a regular file"));
}

static void test_command_check(void **state)
{
	struct gpushare_bench_config c;
	char *sh[] = { "sh", NULL };

	(void)state;
	assert_int_equal(gpushare_bench_config_init(&c), GPUSHARE_OK);
	assert_int_equal(gpushare_bench_command_check(&c), GPUSHARE_OK);   /* a built-in workload */
	c.command = sh;
	assert_int_equal(gpushare_bench_command_check(&c), GPUSHARE_OK);
	c.command_mode = (enum gpushare_cmd_mode)7;
	assert_int_equal(gpushare_bench_command_check(&c), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "unknown command mode 7"));
	c.command_mode = GPUSHARE_CMD_JOB;
	c.preload = true;
	assert_int_equal(gpushare_bench_command_check(&c), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "--preload"));
	c.preload = false;
	c.strategies[c.n_strategies++] = GPUSHARE_STRATEGY_STREAMS;
	assert_int_equal(gpushare_bench_command_check(&c), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "the streams strategy cannot run a command"));
	assert_string_equal(gpushare_cmd_mode_name(GPUSHARE_CMD_JOB), "job");
	assert_string_equal(gpushare_cmd_mode_name(GPUSHARE_CMD_REQUEST), "request");
}

/* The line the test worker wrote for worker i (its GPUSHARE_WORKER=i). */
static const char *line_of(const char *data, int i)
{
	char key[48];

	snprintf(key, sizeof(key), "GPUSHARE_WORKER=%d ", i);
	return strstr(data, key);
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static void test_relay_env(void **state)
{
	char out[] = "/tmp/gpushare-test-cmd-env.XXXXXX", *data;
	const char *args[] = { "--request-us", "500", "--env-out", out, NULL };
	struct session_test *t = malloc(sizeof(*t));
	const char *l0, *l1;
	size_t len;
	int fd = mkstemp(out);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_non_null(t);
	session_init(t, 2, args);
	t->procs[0].batch = 4;
	assert_int_equal(gpushare_strv_addf(&t->procs[1].env, "CUDA_VISIBLE_DEVICES=7"), GPUSHARE_OK);
	assert_int_equal(session_run_all(t), GPUSHARE_OK);
	assert_int_equal(gpushare_read_file(out, 1 << 16, &data, &len), GPUSHARE_OK);
	l0 = line_of(data, 0);
	l1 = line_of(data, 1);
	assert_non_null(l0);
	assert_non_null(l1);
	assert_true(starts(l0, "GPUSHARE_WORKER=0 GPUSHARE_WORKERS=2 GPUSHARE_BATCH=4 GPUSHARE_REPORT_FD="));
	assert_true(starts(l1, "GPUSHARE_WORKER=1 GPUSHARE_WORKERS=2 GPUSHARE_BATCH=1 GPUSHARE_REPORT_FD="));
	assert_non_null(strstr(l0, " GPUSHARE_MODE=request "));
	/* The strategy's changes reach only the worker they were made for. */
	assert_true(strstr(l1, " CUDA_VISIBLE_DEVICES=7 ") && strstr(l1, " CUDA_VISIBLE_DEVICES=7 ") < strchr(l1, '\n'));
	assert_true(!strstr(l0, " CUDA_VISIBLE_DEVICES=7 ") || strstr(l0, " CUDA_VISIBLE_DEVICES=7 ") > strchr(l0, '\n'));
	free(data);
	unlink(out);
	session_release(t);
	free(t);
}

static void test_job_mode(void **state)
{
	static const char *const args[] = { "--job", "--request-us", "2000", NULL };
	struct session_test *t = malloc(sizeof(*t));

	(void)state;
	assert_non_null(t);
	session_init(t, 2, args);
	t->c.command_mode = GPUSHARE_CMD_JOB;
	/* A job is a process started anew: on a loaded machine, under the
	 * sanitizers, one start can take longer than the 150 ms window the
	 * other cases use, and none would finish in it. */
	t->c.duration_ns = 2000 * 1000000ULL;
	assert_int_equal(session_run_all(t), GPUSHARE_OK);
	assert_false(t->res.partial);
	for (int i = 0; i < 2; i++) {
		/* Each job sleeps 2 ms: at most 1,000 of them in the 2 s window. */
		assert_true(t->res.workers[i].requests > 0 && t->res.workers[i].requests <= 1000);
		assert_true(gpushare_hist_quantile(&t->res.workers[i].hist, 0.5) >= 1500000);
	}
	assert_true(session_all_reaped(t));
	session_release(t);
	free(t);
}

static void test_exit_mid_run(void **state)
{
	static const char *const args[] = { "--request-us", "1000", "--exit-after", "20", "--exit-code", "3",
					    "--only-worker", "1", NULL };
	struct session_test *t = malloc(sizeof(*t));

	(void)state;
	assert_non_null(t);
	session_init(t, 2, args);
	assert_int_equal(session_run_all(t), GPUSHARE_OK);
	assert_true(t->res.partial);
	assert_int_equal(t->res.failed_worker, 1);
	assert_non_null(strstr(t->res.failure, "exited with status 3 mid-run"));
	assert_true(t->res.workers[1].failed);
	assert_false(t->res.workers[0].failed);
	assert_true(t->res.workers[0].requests > 0);
	assert_true(session_all_reaped(t));
	session_release(t);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_command_check),
		cmocka_unit_test(test_relay_env),
		cmocka_unit_test(test_job_mode),
		cmocka_unit_test(test_exit_mid_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
