/*
 * Unit tests of lib/metrics/metrics_system.c without a driver: the build
 * and driver families, and the MPS pipe directories surveyed (each once,
 * down when no daemon is there, none when none are asked for).
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

#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	setenv("GPUSHARE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
	snprintf(dir, sizeof(dir), "/tmp/gpushare-test-msys.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(dir);
}

static char *exposition(const struct gpushare_metrics_system_opts *o, bool *up)
{
	struct gpushare_metrics_buf b;
	char *text = NULL;
	size_t len = 0;

	gpushare_metrics_buf_init(&b);
	assert_int_equal(gpushare_metrics_write_system(&b, o, up), GPUSHARE_OK);
	assert_int_equal(gpushare_metrics_buf_finish(&b, &text, &len), GPUSHARE_OK);
	assert_int_equal(strlen(text), len);
	return text;
}

static void test_no_driver(void **state)
{
	struct gpushare_metrics_system_opts o;
	bool up = true;
	char *t;

	(void)state;
	gpushare_metrics_system_opts_init(&o);
	o.default_pipe_dirs = false;
	t = exposition(&o, &up);
	assert_false(up);
	assert_non_null(strstr(t, "gpushare_nvidia_driver_up 0\n"));
	assert_non_null(strstr(t, "gpushare_build_info{version=\""));
	assert_null(strstr(t, "gpushare_gpu_"));
	assert_null(strstr(t, "gpushare_mps_daemon_up"));
	free(t);
}

static void test_pipe_dirs(void **state)
{
	struct gpushare_metrics_system_opts o;
	char line[160], *t, *first;

	(void)state;
	gpushare_metrics_system_opts_init(&o);
	snprintf(o.pipe_dirs[0], sizeof(o.pipe_dirs[0]), "%s/", dir);
	snprintf(o.pipe_dirs[1], sizeof(o.pipe_dirs[1]), "%s", dir);
	o.n_pipe_dirs = 2;
	o.mps_timeout_ms = 1000;
	t = exposition(&o, NULL);
	/* Named twice (once with a '/'): one series, down (no daemon there). */
	snprintf(line, sizeof(line), "gpushare_mps_daemon_up{pipe_dir=\"%s\"} 0\n", dir);
	first = strstr(t, line);
	assert_non_null(first);
	assert_null(strstr(first + 1, line));
	/* Given directories replace the usual ones. */
	assert_null(strstr(t, "pipe_dir=\"/tmp/nvidia-mps\""));
	free(t);
	/* None given: the usual ones, /tmp/nvidia-mps among them. */
	o.n_pipe_dirs = 0;
	t = exposition(&o, NULL);
	assert_non_null(strstr(t, "gpushare_mps_daemon_up{pipe_dir=\"/tmp/nvidia-mps\"} "));
	free(t);
	gpushare_clear_error();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_driver),
		cmocka_unit_test(test_pipe_dirs),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
