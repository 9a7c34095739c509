/*
 * The shares `gpushare check --plan DIR` reads from a plan directory
 * (lib/check/check_plan.c): the header every file of `gpushare plan --out`
 * begins with, and gpushare.env's MPS limit.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#define UNIT_TMPDIR "/tmp/gpushare-test-check-plan"
#include "tmpdir.h"

#include "gpushare/check.h"
#include "gpushare/gpushare.h"

/* A plan directory sub of one file name holding text; returns its path. */
static const char *plan(const char *sub, const char *name, const char *text)
{
	static char path[256];
	char file[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	mkdir(path, 0700);
	snprintf(file, sizeof(file), "%s/%s", path, name);
	f = fopen(file, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

#define HEAD(target, measured)                                                                                    \
	"# gpushare plan --for " target " (gpushare VERSION)\n# Measured: " measured "\n# GPU: NVIDIA H100\n#\n"

static void test_plans(void **state)
{
	struct gpushare_check_opts o;
	char what[256];

	(void)state;
	/* mps-split, env target: the limit of gpushare.env */
	memset(&o, 0, sizeof(o));
	assert_int_equal(gpushare_check_plan(plan("split", "gpushare.env",
						  HEAD("env", "matmul:size=4096, batch 1: mps-split with 4 workers per "
							      "GPU: 2.60k items/s (2.57k-2.61k)")
						  "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30\n"),
					     &o, what, sizeof(what)),
			 GPUSHARE_OK);
	assert_int_equal(o.n_clients, 4);
	assert_true(o.limits && fabs(o.shares[3] - 0.30) < 1e-9);
	assert_string_equal(what, "mps-split, 4 clients at 30%");
	/* time-slicing: 1/N each, no limits */
	memset(&o, 0, sizeof(o));
	assert_int_equal(gpushare_check_plan(plan("ts", "config.yaml",
						  HEAD("k8s-device-plugin", "tiny, batch 1: timeslice with 8 workers per GPU: "
									    "121k items/s")),
					     &o, what, sizeof(what)),
			 GPUSHARE_OK);
	assert_int_equal(o.n_clients, 8);
	assert_false(o.limits);
	assert_true(fabs(o.shares[0] - 0.125) < 1e-9);
	/* the device plugin's MPS sharing: 100/replicas limits */
	memset(&o, 0, sizeof(o));
	assert_int_equal(gpushare_check_plan(plan("dp", "values.yaml",
						  HEAD("k8s-device-plugin", "matmul, batch 1: mps with 4 workers per GPU: "
									    "2.60k items/s")),
					     &o, what, sizeof(what)),
			 GPUSHARE_OK);
	assert_true(o.limits && o.n_clients == 4 && fabs(o.shares[0] - 0.25) < 1e-9);
	/* MPS without limits elsewhere: 1/N, no limits */
	memset(&o, 0, sizeof(o));
	assert_int_equal(gpushare_check_plan(plan("mps", "gres.conf",
						  HEAD("slurm", "matmul, batch 1: mps with 2 workers per GPU: 1k items/s")),
					     &o, what, sizeof(what)),
			 GPUSHARE_OK);
	assert_true(!o.limits && o.n_clients == 2 && fabs(o.shares[1] - 0.5) < 1e-9);
	/* refused: MIG, too many clients; no plan: an empty directory */
	assert_int_equal(gpushare_check_plan(plan("mig", "mig-parted.yaml",
						  HEAD("mig-parted", "matmul, batch 1: mig with 7 workers per GPU: 1k items/s")),
					     &o, what, sizeof(what)),
			 GPUSHARE_E_UNSUPPORTED);
	assert_int_equal(gpushare_check_plan(plan("many", "gpushare.env",
						  HEAD("env", "tiny, batch 1: timeslice with 32 workers per GPU: 1k items/s")),
					     &o, what, sizeof(what)),
			 GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_check_plan(plan("none", "notes.txt", "no header here\n"), &o, what, sizeof(what)),
			 GPUSHARE_E_NOT_FOUND);
	gpushare_clear_error();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plans),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
