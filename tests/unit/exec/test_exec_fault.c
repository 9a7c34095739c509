/*
 * The fault report of gpushare exec (lib/exec/exec_fault.c): records of
 * failed ranks in a job directory and the server log make one line per GPU
 * that had a fault; the culprit is the rank the log names, else the first to
 * fail; ordinary failures make none.
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
#include "sys.h"
#include "exec_fault.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/gpushare-exec-fault.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	gpushare_remove_tree(dir);
	return 0;
}

static void add(long rank, unsigned gpu, pid_t pid, uint64_t end, int code, bool fault)
{
	struct exec_failure f = { .local_rank = rank, .rank = rank, .gpu_index = gpu, .ranks_on_gpu = 4,
				  .pid = pid, .end_ns = end, .code = code, .server_fault = fault };

	assert_int_equal(exec_fault_record(dir, &f), GPUSHARE_OK);
}

static void write_log(const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/server.log", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_pick(void **state)
{
	struct exec_failure f[3] = { { .pid = 10, .end_ns = 5 }, { .pid = 11, .end_ns = 3 }, { .pid = 12, .end_ns = 9 } };
	pid_t named[2] = { 99, 12 };
	bool from_log;

	(void)state;
	assert_int_equal(exec_fault_pick(f, 3, named, 2, &from_log), 2);
	assert_true(from_log);
	assert_int_equal(exec_fault_pick(f, 3, named, 1, &from_log), 1);
	assert_false(from_log);
	assert_int_equal(exec_fault_pick(f, 3, NULL, 0, &from_log), 1);
}

static void test_report_named(void **state)
{
	char out[1024];

	(void)state;
	add(3, 0, 103, 300, 3, true);
	add(1, 0, 101, 100, 3, true);
	add(2, 0, 102, 900, 3, false); /* the culprit, last to fail, the server recovered */
	write_log("[2026-01-01 00:00:00.000 Other 5] Client 102 encountered a fatal GPU error\n");
	exec_fault_report(dir, "n1", dir, true, out, sizeof(out));
	assert_string_equal(out, "GPU fault under MPS on node n1 GPU 0: rank 2 faulted (named by the server log); "
				 "ranks 1,3 failed with it (blast radius 2 of 4 ranks on the GPU)");
}

static void test_report_suspect_per_gpu(void **state)
{
	char out[1024];

	(void)state;
	add(4, 1, 104, 500, 3, true);
	add(6, 1, 106, 400, 134, true);
	add(5, 0, 105, 100, 1, false); /* an ordinary failure on GPU 0 */
	write_log("Client 42 encountered a fatal GPU error\n"); /* no rank's pid */
	exec_fault_report(dir, "n2", dir, false, out, sizeof(out)); /* a daemon not the job's own */
	assert_string_equal(out, "GPU fault under MPS on node n2 GPU 1: rank 6 is the suspect (the first to fail; the "
				 "server log names no culprit); rank 4 failed with it (blast radius 1 of 4 ranks on the GPU)");
}

static void test_report_none(void **state)
{
	char out[64] = "x";

	(void)state;
	exec_fault_report(dir, "n1", NULL, true, out, sizeof(out));
	assert_string_equal(out, "");
	add(0, 0, 100, 100, 1, false);
	add(1, 0, 101, 200, 2, false);
	exec_fault_report(dir, "n1", "", true, out, sizeof(out));
	assert_string_equal(out, "");
}

/* What R580's server showed on an H100 (tests/gpu/test_exec_fault_gpu.sh,
 * 2026-11-24): the fault's lines name a bystander (5781) as the client that
 * encountered it, list every client as torn down and sticky, and the
 * server says ACTIVE again some 50 ms later, so no rank saw FAULT. */
static const char r580_log[] =
	"[2026-11-24 22:33:53.183 Server  5791] Client {PID: 5781, Context: 1} encountered a fatal GPU error.\n"
	"[2026-11-24 22:33:53.183 Server  5791] Server is handling a fatal GPU error.\n"
	"[2026-11-24 22:33:53.183 Server  5791] Client {PID: 5781, Context ID: 1} on device 0 to be torn down\n"
	"[2026-11-24 22:33:53.183 Server  5791] Client {PID: 5779, Context ID: 1} on device 0 to be torn down\n"
	"[2026-11-24 22:33:53.183 Server  5791] Client {PID: 5782, Context ID: 1} on device 0 to be torn down\n"
	"[2026-11-24 22:33:53.183 Server  5791] Client {PID: 5778, Context ID: 1} on device 0 to be torn down\n"
	"[2026-11-24 22:33:53.183 Server  5791] The following devices will be reset:\n"
	"[2026-11-24 22:33:53.183 Server  5791] 0\n"
	"[2026-11-24 22:33:53.183 Server  5791] The following client process have a sticky error set:\n"
	"[2026-11-24 22:33:53.183 Server  5791] 5781\n"
	"[2026-11-24 22:33:53.183 Server  5791] 5779\n"
	"[2026-11-24 22:33:53.183 Server  5791] 5782\n"
	"[2026-11-24 22:33:53.183 Server  5791] 5778\n"
	"[2026-11-24 22:33:53.207 Server  5791] Client {PID: 5778, Context ID: 1} exiting. Number of active client "
	"contexts is 3.\n";

static void test_report_r580(void **state)
{
	char out[1024];

	(void)state;
	add(3, 0, 5781, 734, 3, false);
	add(2, 0, 5782, 638, 3, false); /* the one that faulted: first to fail */
	add(0, 0, 5778, 666, 3, false);
	add(1, 0, 5779, 708, 3, false);
	add(5, 1, 6000, 500, 1, false); /* an ordinary failure on GPU 1: not among the fault's clients */
	write_log(r580_log);
	exec_fault_report(dir, "n1", dir, true, out, sizeof(out));
	assert_string_equal(out, "GPU fault under MPS on node n1 GPU 0: rank 2 is the suspect (the first to fail; the "
				 "server log names no culprit); ranks 0,1,3 failed with it (blast radius 3 of 4 ranks "
				 "on the GPU)");
}

/* The ranks' programs forked the CUDA processes: no failed rank's pid is in
 * the log. The job's own daemon logged a fault, so its failures are the
 * fault's; a daemon shared with others says nothing of this job. */
static void test_report_r580_forked(void **state)
{
	char out[1024];

	(void)state;
	add(0, 0, 100, 200, 3, false);
	add(1, 0, 101, 100, 3, false);
	write_log(r580_log);
	exec_fault_report(dir, "n1", dir, true, out, sizeof(out));
	assert_string_equal(out, "GPU fault under MPS on node n1 GPU 0: rank 1 is the suspect (the first to fail; the "
				 "server log names no culprit); rank 0 failed with it (blast radius 1 of 4 ranks on "
				 "the GPU)");
	exec_fault_report(dir, "n1", dir, false, out, sizeof(out));
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick),
		cmocka_unit_test_setup_teardown(test_report_named, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_suspect_per_gpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_r580, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_r580_forked, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
