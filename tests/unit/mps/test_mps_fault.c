/*
 * Unit tests: recognising a fatal GPU fault under MPS in a client's error
 * text and the client that the server log names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define UNIT_TMPDIR "/tmp/gpushare-test-mps-fault"
#include "tmpdir.h"
#include "gpushare/gpushare.h"
#include "mps_fault.h"

static enum gpushare_mps_fault kind(const char *s)
{
	return gpushare_mps_fault_text(s, strlen(s));
}

static void test_text(void **state)
{
	(void)state;
	/* CUDA runtime, driver API, PyTorch, error numbers */
	assert_int_equal(kind("fault_job: CUDA error cudaErrorIllegalAddress (700): an illegal memory access was "
			      "encountered (synchronize)"), GPUSHARE_MPS_FAULT_FATAL);
	assert_int_equal(kind("RuntimeError: CUDA error: an illegal memory access was encountered\n"),
			 GPUSHARE_MPS_FAULT_FATAL);
	assert_int_equal(kind("cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS"), GPUSHARE_MPS_FAULT_FATAL);
	assert_int_equal(kind("kernel failed with error 719"), GPUSHARE_MPS_FAULT_FATAL);
	assert_int_equal(kind("CUDA error: unspecified launch failure"), GPUSHARE_MPS_FAULT_FATAL);
	assert_int_equal(kind("status=716 misaligned"), GPUSHARE_MPS_FAULT_FATAL);
	assert_int_equal(kind("cudaErrorMpsServerNotReady (807)"), GPUSHARE_MPS_FAULT_NOT_READY);
	assert_int_equal(kind("CUDA_ERROR_MPS_SERVER_NOT_READY"), GPUSHARE_MPS_FAULT_NOT_READY);
	/* a fatal fault wins over 807 */
	assert_int_equal(kind("error 807 then error 700"), GPUSHARE_MPS_FAULT_FATAL);
	/* not a fault: other errors, numbers that only contain the codes */
	assert_int_equal(kind("CUDA error: out of memory (2)"), GPUSHARE_MPS_FAULT_NONE);
	assert_int_equal(kind("processed 1700 items in 0.700 s, port 7000"), GPUSHARE_MPS_FAULT_NONE);
	assert_int_equal(kind("error 7001"), GPUSHARE_MPS_FAULT_NONE);
	assert_int_equal(kind(""), GPUSHARE_MPS_FAULT_NONE);
	assert_int_equal(gpushare_mps_fault_text(NULL, 0), GPUSHARE_MPS_FAULT_NONE);
	/* only the given length counts */
	assert_int_equal(gpushare_mps_fault_text("ok illegal address", 3), GPUSHARE_MPS_FAULT_NONE);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_file_and_log(void **state)
{
	char path[128];
	struct gpushare_mps_fault_log log;

	(void)state;
	snprintf(path, sizeof(path), "%s/1.1.err", dir);
	write_file(path, "starting\nCUDA error cudaErrorIllegalAddress (700)\n");
	assert_int_equal(gpushare_mps_fault_file(path), GPUSHARE_MPS_FAULT_FATAL);
	snprintf(path, sizeof(path), "%s/missing.err", dir);
	assert_int_equal(gpushare_mps_fault_file(path), GPUSHARE_MPS_FAULT_NONE);

	gpushare_mps_fault_log_read(dir, &log); /* no server.log */
	assert_int_equal(log.n_named, 0);
	assert_false(log.fatal);
	snprintf(path, sizeof(path), "%s/server.log", dir);
	write_file(path,
		   "[2026-11-24 13:00:00.000 Other  4242] Server failed to recevie command with status 806, assuming client 77 exit\n"
		   "[2026-11-24 13:00:01.000 Other  4242] Volta MPS: status code is sticky and fatal\n"
		   "[2026-11-24 13:00:01.000 Other  4242] Client 1234 encountered a fatal GPU error: an illegal memory access\n"
		   "[2026-11-24 13:00:01.000 Other  4242] The following clients have a sticky error set: 1234, 555\n"
		   "[2026-11-24 13:00:02.000 Other  4242] client process 999 hit a fatal fault\n"
		   "[2026-11-24 13:00:03.000 Other  4242] Client 1234 encountered a fatal GPU error again\n");
	gpushare_mps_fault_log_read(dir, &log);
	assert_int_equal(log.n_named, 2);
	assert_int_equal(log.named[0], 1234);
	assert_int_equal(log.named[1], 999);
	assert_true(log.fatal);
	gpushare_mps_fault_log_read("", &log);
	assert_int_equal(log.n_named, 0);
}

/* R580's own lines (an H100, 2026-11-24): a fault recorded, its clients
 * torn down and sticky; the "encountered" client is not taken for a
 * culprit (it was a bystander there). */
static void test_log_r580(void **state)
{
	char path[128];
	struct gpushare_mps_fault_log log;
	FILE *fp;

	(void)state;
	snprintf(path, sizeof(path), "%s/server.log", dir);
	write_file(path, "[2026-11-24 22:33:51.896 Server  5791] Client {PID: 5778, Context ID: 0} connected\n"
			 "[2026-11-24 22:33:53.183 Server  5791] Client {PID: 5781, Context: 1} encountered a fatal GPU "
			 "error.\n"
			 "[2026-11-24 22:33:53.183 Server  5791] Client {PID: 5779, Context ID: 1} on device 0 to be torn "
			 "down\n"
			 "[2026-11-24 22:33:53.183 Server  5791] The following client process have a sticky error set:\n"
			 "[2026-11-24 22:33:53.183 Server  5791] 5781\n"
			 "[2026-11-24 22:33:53.183 Server  5791] 5782\n"
			 "[2026-11-24 22:33:53.183 Server  5791] 5779\n"
			 "[2026-11-24 22:33:53.207 Server  5791] Server failed to recevie command with status 806, "
			 "assuming client {PID: 5778, Context ID: 1} exit\n");
	gpushare_mps_fault_log_read(dir, &log);
	assert_int_equal(log.n_named, 0);
	assert_true(log.fatal);
	assert_int_equal(log.n_affected, 3);
	assert_int_equal(log.affected[0], 5779);
	assert_int_equal(log.affected[1], 5781);
	assert_int_equal(log.affected[2], 5782);
	/* More clients than the bound: the first GPUSHARE_MPS_FAULT_LOG_MAX. */
	fp = fopen(path, "w");
	assert_non_null(fp);
	fprintf(fp, "[2026-11-24 22:33:53.183 Server  5791] The following client process have a sticky error set:\n");
	for (int i = 0; i < GPUSHARE_MPS_FAULT_LOG_MAX + 10; i++)
		fprintf(fp, "[2026-11-24 22:33:53.183 Server  5791] %d\n", 1000 + i);
	assert_int_equal(fclose(fp), 0);
	gpushare_mps_fault_log_read(dir, &log);
	assert_int_equal(log.n_affected, GPUSHARE_MPS_FAULT_LOG_MAX);
	assert_int_equal(log.affected[GPUSHARE_MPS_FAULT_LOG_MAX - 1], 1000 + GPUSHARE_MPS_FAULT_LOG_MAX - 1);
	write_file(path, "[2026-11-24 22:33:51.896 Server  5791] Client {PID: 5778, Context ID: 0} connected\n");
	gpushare_mps_fault_log_read(dir, &log);
	assert_false(log.fatal);
	assert_int_equal(log.n_affected, 0);
	gpushare_mps_fault_log_read(NULL, &log);
	assert_false(log.fatal);
	assert_int_equal(log.n_affected + log.n_named, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_file_and_log),
		cmocka_unit_test(test_log_r580),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
