/*
 * Unit tests of lib/sys/proc.c: environments built from changes, PATH
 * lookup, short commands run with their output captured and a timeout, and
 * the /proc readers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sys.h"
#include "gpushare/gpushare.h"

static const char *env_get(char **envp, const char *name)
{
	size_t n = strlen(name);

	for (; *envp; envp++) {
		if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
			return *envp + n + 1;
	}
	return NULL;
}

static void test_env_build(void **state)
{
	char *const changes[] = { "GPUSHARE_TEST_SET=1", "GPUSHARE_TEST_GONE", "GPUSHARE_TEST_KEEP=new", NULL };
	char **envp;

	(void)state;
	setenv("GPUSHARE_TEST_GONE", "x", 1);
	setenv("GPUSHARE_TEST_KEEP", "old", 1);
	envp = gpushare_env_build(changes);
	assert_non_null(envp);
	assert_string_equal(env_get(envp, "GPUSHARE_TEST_SET"), "1");
	assert_null(env_get(envp, "GPUSHARE_TEST_GONE"));
	/* A change replaces the inherited value, once. */
	assert_string_equal(env_get(envp, "GPUSHARE_TEST_KEEP"), "new");
	assert_non_null(env_get(envp, "PATH"));
	gpushare_env_free(envp);
	/* No changes: a copy of this process's environment. */
	envp = gpushare_env_build(NULL);
	assert_non_null(envp);
	assert_string_equal(env_get(envp, "GPUSHARE_TEST_GONE"), "x");
	gpushare_env_free(envp);
	unsetenv("GPUSHARE_TEST_GONE");
	unsetenv("GPUSHARE_TEST_KEEP");
}

static void test_which(void **state)
{
	char path[4096];

	(void)state;
	assert_int_equal(gpushare_which("sh", path, sizeof(path)), GPUSHARE_OK);
	assert_true(path[0] == '/');
	assert_int_equal(access(path, X_OK), 0);
	assert_int_equal(gpushare_which("/bin/sh", path, sizeof(path)), GPUSHARE_OK);
	assert_string_equal(path, "/bin/sh");
	assert_int_equal(gpushare_which("gpushare-no-such-program-here", path, sizeof(path)), GPUSHARE_E_NOT_FOUND);
	assert_int_equal(gpushare_which("/nonexistent/prog", path, sizeof(path)), GPUSHARE_E_NOT_FOUND);
	gpushare_clear_error();
}

static void test_run(void **state)
{
	char *const argv[] = { "sh", "-c", "read x; echo \"out:$x:$GPUSHARE_TEST_V\"; echo err >&2; exit 3", NULL };
	char *const env[] = { "GPUSHARE_TEST_V=v", NULL };
	struct gpushare_run_result res;

	(void)state;
	assert_int_equal(gpushare_run(argv, env, "in\n", 10000, &res), GPUSHARE_OK);
	assert_int_equal(res.status, 3);
	assert_false(res.timed_out);
	assert_string_equal(res.out, "out:in:v\n");
	assert_int_equal(res.out_len, 9);
	assert_string_equal(res.err, "err\n");
	gpushare_run_result_release(&res);
}

static void test_run_timeout_and_missing(void **state)
{
	char *const slow[] = { "sleep", "30", NULL };
	char *const missing[] = { "gpushare-no-such-program-here", NULL };
	struct gpushare_run_result res;

	(void)state;
	/* Killed when the time runs out, and reaped. */
	assert_int_equal(gpushare_run(slow, NULL, NULL, 200, &res), GPUSHARE_E_TIMEOUT);
	assert_true(res.timed_out);
	assert_non_null(strstr(gpushare_errdetail(), "sleep"));
	gpushare_run_result_release(&res);
	assert_int_equal(gpushare_run(missing, NULL, NULL, 1000, &res), GPUSHARE_E_NOT_FOUND);
	gpushare_clear_error();
}

static void test_pid_readers(void **state)
{
	char comm[64], cmdline[256];
	pid_t child;
	int st;

	(void)state;
	assert_true(gpushare_pid_alive(getpid()));
	assert_true(gpushare_pid_start_time(getpid()) > 0);
	assert_int_equal(gpushare_pid_uid(getpid()), (long)getuid());
	gpushare_pid_comm(getpid(), comm, sizeof(comm));
	assert_string_equal(comm, "test_proc");
	gpushare_pid_cmdline(getpid(), cmdline, sizeof(cmdline));
	assert_non_null(strstr(cmdline, "test_proc"));
	/* A process that is gone: not alive, nothing readable. */
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_false(gpushare_pid_alive(child));
	assert_true(gpushare_pid_start_time(child) == 0);
	assert_int_equal(gpushare_pid_uid(child), -1);
	gpushare_pid_comm(child, comm, sizeof(comm));
	assert_string_equal(comm, "");
	gpushare_pid_cmdline(child, cmdline, sizeof(cmdline));
	assert_string_equal(cmdline, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_build),
		cmocka_unit_test(test_which),
		cmocka_unit_test(test_run),
		cmocka_unit_test(test_run_timeout_and_missing),
		cmocka_unit_test(test_pid_readers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
