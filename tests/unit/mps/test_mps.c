/*
 * Unit tests: the MPS module driven against tests/helpers/fake_mps_control,
 * a stand-in daemon with the control program's command set and behaviour.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "sys.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/internal/mps.h"

static char base[64];
static char fake[GPUSHARE_PATH_MAX];

static void make_mps(struct gpushare_mps *m, const char *name)
{
	char pipe[128], log[128];

	snprintf(pipe, sizeof(pipe), "%s/%s/pipe", base, name);
	snprintf(log, sizeof(log), "%s/%s/log", base, name);
	assert_int_equal(gpushare_mps_init(m, pipe, log), GPUSHARE_OK);
	m->timeout_ms = 3000;
}

static pid_t spawn_sleeper(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static int setup(void **state)
{
	const char *helpers = getenv("GPUSHARE_TEST_HELPERS");

	(void)state;
	if (!helpers)
		return -1;
	snprintf(fake, sizeof(fake), "%s/fake_mps_control", helpers);
	setenv("GPUSHARE_MPS_CONTROL", fake, 1);
	unsetenv("CUDA_MPS_PIPE_DIRECTORY");
	unsetenv("CUDA_MPS_LOG_DIRECTORY");
	strcpy(base, "/tmp/gsmpsXXXXXX");
	return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_init_paths(void **state)
{
	struct gpushare_mps m;
	char longp[200];

	(void)state;
	assert_int_equal(gpushare_mps_init(&m, NULL, NULL), GPUSHARE_OK);
	assert_non_null(strstr(m.pipe_dir, "/mps/pipe"));
	assert_string_equal(m.control, fake);
	setenv("CUDA_MPS_PIPE_DIRECTORY", "/tmp/somewhere", 1);
	assert_int_equal(gpushare_mps_init(&m, NULL, NULL), GPUSHARE_OK);
	assert_string_equal(m.pipe_dir, "/tmp/somewhere");
	unsetenv("CUDA_MPS_PIPE_DIRECTORY");
	assert_int_equal(gpushare_mps_init(&m, "relative/dir", NULL), GPUSHARE_E_INVAL);
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	assert_int_equal(gpushare_mps_init(&m, longp, NULL), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "too long"));
	assert_int_equal(gpushare_mps_init(&m, "/tmp/x/", "/tmp/y//"), GPUSHARE_OK);
	assert_string_equal(m.pipe_dir, "/tmp/x");
	assert_string_equal(m.log_dir, "/tmp/y");
}

static void test_lifecycle(void **state)
{
	struct gpushare_mps m;
	struct gpushare_mps_start_info info;
	struct gpushare_mps_start_opts o = { 0 };
	struct gpushare_mps_status st;
	struct gpushare_mps_stop_info sinfo;
	struct stat sb;
	pid_t pid, client;
	char *reply, cmd[64], *log;

	(void)state;
	make_mps(&m, "life");
	assert_int_equal(gpushare_mps_state(&m, &pid), GPUSHARE_MPS_ABSENT);
	assert_int_equal(gpushare_mps_probe(&m, &pid), GPUSHARE_E_MPS_NOT_RUNNING);
	gpushare_mps_limits_init(&o.limits);
	o.limits.thread_percentage = 40;
	assert_int_equal(gpushare_mps_parse_mem_limits("0=4G,1=512M", 2, &o.limits), GPUSHARE_OK);
	o.limits.priority = 1;
	assert_int_equal(gpushare_mps_start(&m, &o, &info), GPUSHARE_OK);
	assert_false(info.already_running);
	assert_true(info.pid > 0);
	assert_true(gpushare_pid_alive(info.pid));
	/* Directories were created private. */
	assert_int_equal(stat(m.pipe_dir, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	assert_int_equal(gpushare_mps_state(&m, &pid), GPUSHARE_MPS_RUNNING);
	assert_int_equal(pid, info.pid);

	/* Idempotent start. */
	assert_int_equal(gpushare_mps_start(&m, NULL, &info), GPUSHARE_OK);
	assert_true(info.already_running);
	assert_int_equal(info.pid, pid);

	/* Unknown command: exit status 0, but reported. */
	assert_int_equal(gpushare_mps_command(&m, "no_such_command", &reply), GPUSHARE_E_MPS_REPLY);
	assert_non_null(strstr(gpushare_errdetail(), "no_such_command"));

	/* Defaults applied at start and verified. */
	assert_int_equal(gpushare_mps_status(&m, 2, &st), GPUSHARE_OK);
	assert_int_equal(st.daemon_pid, pid);
	assert_true(st.default_thread_percentage == 40.0);
	assert_int_equal(st.n_default_mem_limit, 2);
	assert_string_equal(st.default_mem_limit[0], "4G");
	assert_string_equal(st.default_mem_limit[1], "512M");
	assert_int_equal(st.default_priority, 1);
	assert_int_equal(st.n_servers, 0); /* servers start lazily */
	gpushare_mps_status_release(&st);

	/* A client attaches: a server appears with it. */
	client = spawn_sleeper();
	snprintf(cmd, sizeof(cmd), "fake_attach %d", (int)client);
	assert_int_equal(gpushare_mps_command(&m, cmd, &reply), GPUSHARE_OK);
	free(reply);
	assert_int_equal(gpushare_mps_status(&m, 1, &st), GPUSHARE_OK);
	assert_int_equal(st.n_servers, 1);
	assert_string_equal(st.servers[0].status, "ACTIVE");
	assert_true(st.servers[0].thread_percentage == 40.0);
	assert_string_equal(st.servers[0].mem_limit[0], "4G");
	assert_int_equal(st.servers[0].n_clients, 1);
	assert_int_equal(st.servers[0].clients[0].pid, client);
	assert_int_equal(st.servers[0].uid, (long)getuid());

	/* Per-server limits. */
	{
		struct gpushare_mps_limits l;
		pid_t server = st.servers[0].pid;

		gpushare_mps_limits_init(&l);
		l.thread_percentage = 25;
		assert_int_equal(gpushare_mps_parse_mem_limits("900M", 1, &l), GPUSHARE_OK);
		assert_int_equal(gpushare_mps_set(&m, server, &l), GPUSHARE_OK);
		gpushare_mps_status_release(&st);
		assert_int_equal(gpushare_mps_status(&m, 1, &st), GPUSHARE_OK);
		assert_true(st.servers[0].thread_percentage == 25.0);
		assert_string_equal(st.servers[0].mem_limit[0], "900M");
		l.priority = 1;
		assert_int_equal(gpushare_mps_set(&m, server, &l), GPUSHARE_E_INVAL);
	}
	gpushare_mps_status_release(&st);

	/* Without force, an attached client keeps the daemon up: busy. */
	assert_int_equal(gpushare_mps_stop(&m, false, &sinfo), GPUSHARE_E_BUSY);
	assert_int_equal(sinfo.clients_attached, 1);
	assert_non_null(strstr(gpushare_errdetail(), "--force"));
	assert_non_null(strstr(gpushare_errdetail(), "left running"));
	assert_true(gpushare_pid_alive(pid));
	assert_int_equal(gpushare_mps_probe(&m, NULL), GPUSHARE_OK); /* untouched: still answers */
	/* With force the client is terminated and everything goes. */
	assert_int_equal(gpushare_mps_stop(&m, true, &sinfo), GPUSHARE_OK);
	assert_true(sinfo.was_running);
	assert_int_equal(sinfo.clients_terminated, 1);
	/* The stand-in does not end a terminated client; force signals it. */
	assert_int_equal(sinfo.clients_signalled, 1);
	assert_false(gpushare_pid_alive(client));
	assert_false(gpushare_pid_alive(pid));
	assert_int_equal(gpushare_mps_state(&m, NULL), GPUSHARE_MPS_ABSENT);
	reap(client);

	/* The log holds the commands. */
	assert_int_equal(gpushare_mps_log_tail(&m, 3, &log), GPUSHARE_OK);
	assert_non_null(strstr(log, "Exit"));
	{
		int lines = 0;

		for (char *c = log; *c; c++)
			lines += *c == '\n';
		assert_int_equal(lines, 3); /* exactly the last three lines */
	}
	free(log);

	/* Stop again: nothing to do. */
	assert_int_equal(gpushare_mps_stop(&m, false, &sinfo), GPUSHARE_OK);
	assert_false(sinfo.was_running);
}

static void test_stale(void **state)
{
	struct gpushare_mps m;
	struct gpushare_mps_start_info info;
	char path[GPUSHARE_PATH_MAX + 64];
	pid_t dead, pid;
	FILE *f;

	(void)state;
	make_mps(&m, "stale");
	assert_int_equal(gpushare_private_dir(m.pipe_dir), GPUSHARE_OK);
	dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	snprintf(path, sizeof(path), "%s/%s", m.pipe_dir, GPUSHARE_MPS_PID_FILE);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%d\n", (int)dead);
	fclose(f);
	snprintf(path, sizeof(path), "%s/control", m.pipe_dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(gpushare_mps_state(&m, &pid), GPUSHARE_MPS_STALE);
	assert_int_equal(pid, dead);
	assert_int_equal(gpushare_mps_probe(&m, NULL), GPUSHARE_E_MPS_NOT_RUNNING);
	assert_non_null(strstr(gpushare_errdetail(), "stale"));

	/* A pid file naming a live process that is not the daemon is stale too. */
	f = fopen(strcat(strcpy(path, m.pipe_dir), "/" GPUSHARE_MPS_PID_FILE), "w");
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	assert_int_equal(gpushare_mps_state(&m, NULL), GPUSHARE_MPS_STALE);

	assert_int_equal(gpushare_mps_start(&m, NULL, &info), GPUSHARE_OK);
	assert_true(info.cleaned_stale);
	assert_false(info.already_running);
	assert_int_equal(gpushare_mps_stop(&m, true, NULL), GPUSHARE_OK);
	assert_false(gpushare_pid_alive(info.pid));
}

static void test_failures(void **state)
{
	struct gpushare_mps m;
	struct gpushare_mps_start_info info;
	struct gpushare_mps_start_opts o = { 0 };
	pid_t pid;

	(void)state;
	/* Control program missing. */
	setenv("GPUSHARE_MPS_CONTROL", "/nonexistent/nvidia-cuda-mps-control", 1);
	make_mps(&m, "nobin");
	assert_int_equal(gpushare_mps_start(&m, NULL, &info), GPUSHARE_E_NO_MPS_BINARY);
	assert_non_null(strstr(gpushare_errdetail(), "/nonexistent/nvidia-cuda-mps-control"));
	setenv("GPUSHARE_MPS_CONTROL", fake, 1);

	/* The daemon refuses to start. */
	setenv("FAKE_MPS_START_FAIL", "1", 1);
	make_mps(&m, "fail");
	assert_int_equal(gpushare_mps_start(&m, NULL, &info), GPUSHARE_E_MPS_NOT_RUNNING);
	assert_non_null(strstr(gpushare_errdetail(), "control.log"));
	unsetenv("FAKE_MPS_START_FAIL");

	/* The daemon never gets ready: bounded wait. */
	setenv("FAKE_MPS_READY_DELAY_MS", "2000", 1);
	make_mps(&m, "slow");
	m.timeout_ms = 300;
	assert_int_equal(gpushare_mps_start(&m, NULL, &info), GPUSHARE_E_TIMEOUT);
	unsetenv("FAKE_MPS_READY_DELAY_MS");
	/* The daemon was started; on a loaded machine its pid file may come
	 * after the 300 ms wait ran out: poll, bounded (20 s). */
	for (int i = 0; i < 400 && gpushare_mps_state(&m, &pid) != GPUSHARE_MPS_RUNNING; i++)
		usleep(50 * 1000);
	assert_int_equal(gpushare_mps_state(&m, &pid), GPUSHARE_MPS_RUNNING);
	m.timeout_ms = 5000;
	/* Once it answers, a normal stop works. */
	usleep(2000 * 1000);
	assert_int_equal(gpushare_mps_stop(&m, true, NULL), GPUSHARE_OK);
	assert_false(gpushare_pid_alive(pid));

	/* A daemon that accepts setters but does not apply them is caught. */
	setenv("FAKE_MPS_IGNORE_SET", "1", 1);
	make_mps(&m, "ignore");
	gpushare_mps_limits_init(&o.limits);
	o.limits.thread_percentage = 30;
	assert_int_equal(gpushare_mps_start(&m, &o, &info), GPUSHARE_E_MPS_REPLY);
	assert_non_null(strstr(gpushare_errdetail(), "reports 100"));
	unsetenv("FAKE_MPS_IGNORE_SET");
	/* ...and the half-configured daemon was stopped again. */
	assert_false(gpushare_pid_alive(info.pid) && info.pid != 0);
	assert_int_equal(gpushare_mps_state(&m, NULL), GPUSHARE_MPS_ABSENT);
}

static void test_unsafe_dirs(void **state)
{
	struct gpushare_mps m;
	struct gpushare_mps_start_info info;
	char dir[128], link[128];

	(void)state;
	make_mps(&m, "perm");
	assert_int_equal(gpushare_private_dir(m.pipe_dir), GPUSHARE_OK);
	assert_int_equal(chmod(m.pipe_dir, 0770), 0);
	assert_int_equal(gpushare_mps_start(&m, NULL, &info), GPUSHARE_E_DIR);
	assert_non_null(strstr(gpushare_errdetail(), "writable by group or others"));
	assert_int_equal(chmod(m.pipe_dir, 0500), 0);
	assert_int_equal(gpushare_mps_start(&m, NULL, &info), GPUSHARE_E_DIR);
	assert_non_null(strstr(gpushare_errdetail(), "not writable"));
	assert_int_equal(chmod(m.pipe_dir, 0700), 0);

	snprintf(dir, sizeof(dir), "%s/real", base);
	snprintf(link, sizeof(link), "%s/link", base);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(symlink(dir, link), 0);
	assert_int_equal(gpushare_private_dir(link), GPUSHARE_E_DIR);
	assert_non_null(strstr(gpushare_errdetail(), "symbolic link"));

	if (geteuid() == 0) {
		snprintf(dir, sizeof(dir), "%s/foreign", base);
		assert_int_equal(mkdir(dir, 0700), 0);
		assert_int_equal(chown(dir, 65534, 65534), 0);
		assert_int_equal(gpushare_private_dir(dir), GPUSHARE_E_DIR);
		assert_non_null(strstr(gpushare_errdetail(), "owned by uid 65534"));
	}
	/* A file where the directory should be. */
	snprintf(dir, sizeof(dir), "%s/file", base);
	fclose(fopen(dir, "w"));
	assert_int_equal(gpushare_private_dir(dir), GPUSHARE_E_DIR);
	snprintf(dir, sizeof(dir), "%s/file/sub", base);
	assert_int_equal(gpushare_private_dir(dir), GPUSHARE_E_DIR);
}

static void test_mem_limit_parse(void **state)
{
	struct gpushare_mps_limits l;

	(void)state;
	gpushare_mps_limits_init(&l);
	assert_int_equal(gpushare_mps_parse_mem_limits("2G", 3, &l), GPUSHARE_OK);
	assert_int_equal(l.n_mem_limits, 3);
	assert_true(l.mem_limit_bytes[2] == 2ULL << 30);
	gpushare_mps_limits_init(&l);
	assert_int_equal(gpushare_mps_parse_mem_limits("1=1G", 2, &l), GPUSHARE_OK);
	assert_int_equal(l.n_mem_limits, 2);
	assert_true(l.mem_limit_bytes[0] == 0);
	assert_int_equal(gpushare_mps_parse_mem_limits("x=1G", 2, &l), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_mps_parse_mem_limits("0=1Q", 2, &l), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_mps_parse_mem_limits("16=1G", 2, &l), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_mps_parse_mem_limits("0=1G,", 2, &l), GPUSHARE_E_INVAL); /* an empty item */
	assert_int_equal(gpushare_mps_parse_mem_limits("", 2, &l), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_mps_parse_mem_limits("abc", 2, &l), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_mps_parse_mem_limits("0=1G,,1=2G", 2, &l), GPUSHARE_E_INVAL);
	assert_string_equal(gpushare_errdetail(), "memory limit '0=1G,,1=2G' has an empty item");
	/* A list of sizes without devices: each item must name its device. */
	assert_int_equal(gpushare_mps_parse_mem_limits("1G,2G", 2, &l), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "'1G' must be DEVICE=SIZE"));
	assert_int_equal(gpushare_mps_parse_mem_limits("0=1G,0=2G", 2, &l), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "given twice"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_paths),
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_stale),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_unsafe_dirs),
		cmocka_unit_test(test_mem_limit_parse),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
