/*
 * Unit tests: the child-process module (lib/sys/child.c): exec failure reported
 * back, exit statuses and signals, a bounded wait, stop of a whole process
 * group (a child that ignores SIGTERM, grandchildren), stragglers left by a
 * leader that exited, a forked function, pipes.
 */
#include <errno.h>
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
#include "gpushare/child.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"

#define MS 1000000ULL

static int start_sh(struct gpushare_child *ch, const char *script)
{
	static char *argv[4];

	argv[0] = "/bin/sh";
	argv[1] = "-c";
	argv[2] = (char *)script;
	argv[3] = NULL;
	gpushare_child_init(ch);
	ch->argv = argv;
	return gpushare_child_start(ch);
}

static void test_exec_failure(void **state)
{
	char *argv[] = { "/nonexistent/program", NULL };
	char path[] = "/tmp/gschildXXXXXX";
	struct gpushare_child ch;
	int fd;

	(void)state;
	gpushare_child_init(&ch);
	ch.argv = argv;
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_E_NOT_FOUND);
	assert_non_null(strstr(gpushare_errdetail(), "/nonexistent/program"));
	/* A file that exists but cannot be executed: exec's own reason. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	chmod(path, 0600);
	argv[0] = path;
	gpushare_child_init(&ch);
	ch.argv = argv;
	ch.path = path;
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_E_NOT_FOUND);
	assert_non_null(strstr(gpushare_errdetail(), "Permission denied"));
	assert_true(ch.exited);
	unlink(path);
}

static void test_exit_status_and_signal(void **state)
{
	struct gpushare_child ch;
	char how[96];

	(void)state;
	assert_int_equal(start_sh(&ch, "exit 3"), GPUSHARE_OK);
	assert_int_equal(gpushare_child_wait(&ch, 5000 * MS), GPUSHARE_OK);
	assert_int_equal(gpushare_child_exit_code(ch.wstatus), 3);
	assert_false(gpushare_child_ok(ch.wstatus));
	gpushare_child_describe(ch.wstatus, how, sizeof(how));
	assert_string_equal(how, "exited with status 3");
	gpushare_child_release(&ch);

	assert_int_equal(start_sh(&ch, "kill -9 $$"), GPUSHARE_OK);
	assert_int_equal(gpushare_child_wait(&ch, 5000 * MS), GPUSHARE_OK);
	assert_int_equal(gpushare_child_exit_code(ch.wstatus), 128 + 9);
	gpushare_child_describe(ch.wstatus, how, sizeof(how));
	assert_string_equal(how, "was killed by signal 9 (SIGKILL)");
	gpushare_child_release(&ch);

	assert_int_equal(start_sh(&ch, "exit 0"), GPUSHARE_OK);
	assert_int_equal(gpushare_child_wait(&ch, 5000 * MS), GPUSHARE_OK);
	assert_true(gpushare_child_ok(ch.wstatus));
	gpushare_child_release(&ch);
}

static void test_wait_deadline_and_stop(void **state)
{
	struct gpushare_child ch;
	uint64_t t0;

	(void)state;
	assert_int_equal(start_sh(&ch, "exec sleep 30"), GPUSHARE_OK);
	assert_true(ch.pidfd >= 0);
	assert_int_equal(ch.pgid, ch.pid);
	assert_int_equal(getpgid(ch.pid), ch.pid);
	t0 = gpushare_now_ns();
	assert_int_equal(gpushare_child_wait(&ch, 100 * MS), GPUSHARE_E_TIMEOUT);
	assert_true(gpushare_now_ns() - t0 >= 100 * MS);
	assert_true(gpushare_now_ns() - t0 < 2000 * MS);
	assert_false(ch.exited);
	assert_int_equal(gpushare_child_stop(&ch, 2000 * MS), GPUSHARE_OK);
	assert_true(ch.exited);
	assert_int_equal(ch.signalled, SIGTERM);
	assert_true(WIFSIGNALED(ch.wstatus) && WTERMSIG(ch.wstatus) == SIGTERM);
	gpushare_child_release(&ch);
}

static void test_stop_escalates_to_sigkill(void **state)
{
	struct gpushare_child ch;
	uint64_t t0;

	(void)state;
	/* Ignores SIGTERM, as do its two grandchildren (the shell's trap is
	 * inherited as SIG_IGN). */
	assert_int_equal(start_sh(&ch, "trap '' TERM; sleep 30 & sleep 30 & wait"), GPUSHARE_OK);
	usleep(200 * 1000);
	assert_int_equal(gpushare_pgroup_count(ch.pgid), 3);
	t0 = gpushare_now_ns();
	assert_int_equal(gpushare_child_stop(&ch, 300 * MS), GPUSHARE_OK);
	assert_true(gpushare_now_ns() - t0 >= 300 * MS);
	assert_int_equal(ch.signalled, SIGKILL);
	assert_true(WIFSIGNALED(ch.wstatus) && WTERMSIG(ch.wstatus) == SIGKILL);
	/* The whole group went, grandchildren included. */
	assert_int_equal(gpushare_pgroup_count(ch.pgid), 0);
	gpushare_child_release(&ch);
}

static void test_stragglers_killed(void **state)
{
	struct gpushare_child ch;
	size_t n;

	(void)state;
	/* The leader exits 0 and leaves two background jobs behind. */
	assert_int_equal(start_sh(&ch, "sleep 30 & sleep 30 & exit 0"), GPUSHARE_OK);
	assert_int_equal(gpushare_child_wait(&ch, 5000 * MS), GPUSHARE_OK);
	assert_true(gpushare_child_ok(ch.wstatus));
	n = gpushare_child_reap_group(&ch);
	assert_int_equal(n, 2);
	assert_int_equal(ch.stragglers, 2);
	assert_int_equal(gpushare_pgroup_count(ch.pgid), 0);
	/* A second look finds nothing more. */
	assert_int_equal(gpushare_child_reap_group(&ch), 0);
	gpushare_child_release(&ch);
}

static void forked(void *arg)
{
	_exit(*(int *)arg);
}

static void test_function_child_and_pipes(void **state)
{
	char *argv[] = { "cat", NULL };
	struct gpushare_child ch;
	char buf[16] = "";
	int code = 7;
	ssize_t n;

	(void)state;
	gpushare_child_init(&ch);
	ch.fn = forked;
	ch.arg = &code;
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_OK);
	assert_int_equal(gpushare_child_wait(&ch, 5000 * MS), GPUSHARE_OK);
	assert_int_equal(gpushare_child_exit_code(ch.wstatus), 7);
	gpushare_child_release(&ch);

	gpushare_child_init(&ch);
	ch.argv = argv;
	ch.in = ch.out = GPUSHARE_CHILD_PIPE;
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_OK);
	assert_true(ch.in_fd >= 0 && ch.out_fd >= 0);
	assert_int_equal(write(ch.in_fd, "hello", 5), 5);
	close(ch.in_fd);
	ch.in_fd = -1;
	n = read(ch.out_fd, buf, sizeof(buf) - 1);
	assert_int_equal(n, 5);
	assert_string_equal(buf, "hello");
	assert_int_equal(gpushare_child_wait(&ch, 5000 * MS), GPUSHARE_OK);
	assert_true(gpushare_child_ok(ch.wstatus));
	gpushare_child_release(&ch);
}

static void test_environment(void **state)
{
	char *argv[] = { "/bin/sh", "-c", "test \"$GS_A\" = one && test -z \"${GS_B+set}\"", NULL };
	char *env[] = { "GS_A=one", "GS_B", NULL };
	struct gpushare_child ch;

	(void)state;
	setenv("GS_B", "inherited", 1);
	gpushare_child_init(&ch);
	ch.argv = argv;
	ch.env_set = env;
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_OK);
	assert_int_equal(gpushare_child_wait(&ch, 5000 * MS), GPUSHARE_OK);
	assert_true(gpushare_child_ok(ch.wstatus));
	gpushare_child_release(&ch);
	unsetenv("GS_B");
}

static void test_run_kills_stragglers(void **state)
{
	char *argv[] = { "/bin/sh", "-c", "sleep 30 & echo out; echo err >&2", NULL };
	struct gpushare_run_result res;

	(void)state;
	/* gpushare_run reads until the output closes: the background sleep
	 * keeps stdout open, so the deadline ends it, and the group goes. */
	assert_int_equal(gpushare_run(argv, NULL, NULL, 300, &res), GPUSHARE_E_TIMEOUT);
	assert_true(res.timed_out);
	assert_string_equal(res.out, "out\n");
	assert_string_equal(res.err, "err\n");
	gpushare_run_result_release(&res);
}

/* GPUSHARE_CHILD_MIRROR: the callbacks run in the mirror (they write to a
 * pipe here), the child ends as its program did, signals to the group reach
 * the program (the mirror ignores SIGTERM), exec failure is reported. */
static int mirror_pipe = -1;

static void on_start(void *arg)
{
	char c = 'S';

	(void)arg;
	assert_int_equal(write(mirror_pipe, &c, 1), 1);
}

static void on_exit_(void *arg, int wstatus)
{
	char msg[2] = { 'E', (char)(WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 100 + WTERMSIG(wstatus)) };

	(void)arg;
	assert_int_equal(write(mirror_pipe, msg, 2), 2);
}

static int start_mirrored(struct gpushare_child *ch, const char *script)
{
	static char *argv[4];

	argv[0] = "/bin/sh";
	argv[1] = "-c";
	argv[2] = (char *)script;
	argv[3] = NULL;
	gpushare_child_init(ch);
	ch->argv = argv;
	ch->flags = GPUSHARE_CHILD_MIRROR;
	ch->mirror_start = on_start;
	ch->mirror_exit = on_exit_;
	return gpushare_child_start(ch);
}

static void test_mirror(void **state)
{
	struct gpushare_child ch;
	char buf[8] = { 0 };
	int fds[2];
	static char *missing[] = { "/nonexistent/program", NULL };

	(void)state;
	assert_int_equal(pipe(fds), 0);
	mirror_pipe = fds[1];
	assert_int_equal(start_mirrored(&ch, "exit 7"), GPUSHARE_OK);
	assert_int_equal(gpushare_child_wait(&ch, 10000 * MS), GPUSHARE_OK);
	assert_true(WIFEXITED(ch.wstatus) && WEXITSTATUS(ch.wstatus) == 7);
	assert_int_equal(read(fds[0], buf, 3), 3);
	assert_memory_equal(buf, "SE\x07", 3);
	gpushare_child_release(&ch);

	/* SIGTERM to the group: the program dies of it, the mirror too. */
	assert_int_equal(start_mirrored(&ch, "sleep 30"), GPUSHARE_OK);
	assert_int_equal(read(fds[0], buf, 1), 1);
	assert_int_equal(buf[0], 'S');
	assert_int_equal(ch.pgid, ch.pid);
	gpushare_child_signal(&ch, SIGTERM);
	assert_int_equal(gpushare_child_wait(&ch, 10000 * MS), GPUSHARE_OK);
	assert_true(WIFSIGNALED(ch.wstatus) && WTERMSIG(ch.wstatus) == SIGTERM);
	assert_int_equal(read(fds[0], buf, 2), 2);
	assert_int_equal(buf[0], 'E');
	assert_int_equal(buf[1], 100 + SIGTERM);
	gpushare_child_release(&ch);

	/* A program that cannot be executed. */
	gpushare_child_init(&ch);
	ch.argv = missing;
	ch.path = missing[0];
	ch.flags = GPUSHARE_CHILD_MIRROR;
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_E_NOT_FOUND);
	assert_true(ch.exited);
	gpushare_child_release(&ch);
	gpushare_clear_error();
	close(fds[0]);
	close(fds[1]);
	mirror_pipe = -1;
}

/* GPUSHARE_CHILD_LATE_EXEC_ERROR: start returns once the mirror is forked;
 * a program that exec refuses (executable, but no "#!" and not ELF) is
 * known when the child is reaped, with exec's errno; one that ran has
 * none. Only with MIRROR. */
static void test_mirror_late_exec_error(void **state)
{
	struct gpushare_child ch;
	char path[] = "/tmp/gpushare-test-noexec.XXXXXX";
	char *argv[] = { path, NULL };
	static char *ok[] = { "/bin/sh", "-c", "exit 0", NULL };
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not a program\n", 14), 14);
	assert_int_equal(fchmod(fd, 0700), 0);
	close(fd);

	gpushare_child_init(&ch);
	ch.argv = argv;
	ch.path = path;
	ch.flags = GPUSHARE_CHILD_MIRROR | GPUSHARE_CHILD_LATE_EXEC_ERROR;
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_OK);
	assert_true(ch.pid > 0);
	assert_int_equal(gpushare_child_wait(&ch, 10000 * MS), GPUSHARE_OK);
	assert_int_equal(ch.exec_errno, ENOEXEC);
	assert_true(WIFEXITED(ch.wstatus) && WEXITSTATUS(ch.wstatus) == 127);
	assert_int_equal(ch.report_fd, -1);
	gpushare_child_release(&ch);

	gpushare_child_init(&ch);
	ch.argv = ok;
	ch.flags = GPUSHARE_CHILD_MIRROR | GPUSHARE_CHILD_LATE_EXEC_ERROR;
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_OK);
	assert_int_equal(gpushare_child_wait(&ch, 10000 * MS), GPUSHARE_OK);
	assert_int_equal(ch.exec_errno, 0);
	assert_true(WIFEXITED(ch.wstatus) && WEXITSTATUS(ch.wstatus) == 0);
	gpushare_child_release(&ch);

	gpushare_child_init(&ch);
	ch.argv = ok;
	ch.flags = GPUSHARE_CHILD_LATE_EXEC_ERROR;
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_E_INVAL);
	gpushare_clear_error();
	unlink(path);
}

/* GPUSHARE_CHILD_LAZY_FILES: a stream that gets no byte makes no file, one
 * that does is whole (more than a pipe holds), and only with a mirror that
 * reports late and both paths. */
static void read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void test_mirror_lazy_files(void **state)
{
	char dir[] = "/tmp/gpushare-test-lazy.XXXXXX", out[128], err[128], cmd[256], buf[256];
	static char *argv[4] = { "/bin/sh", "-c", NULL, NULL };
	struct gpushare_child ch;
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/1.out", dir);
	snprintf(err, sizeof(err), "%s/1.err", dir);
	argv[2] = "echo only-err >&2";
	gpushare_child_init(&ch);
	ch.argv = argv;
	ch.out_path = out;
	ch.err_path = err;
	ch.flags = GPUSHARE_CHILD_MIRROR | GPUSHARE_CHILD_LATE_EXEC_ERROR | GPUSHARE_CHILD_LAZY_FILES;
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_OK);
	assert_int_equal(gpushare_child_wait(&ch, 10000 * MS), GPUSHARE_OK);
	assert_true(gpushare_child_ok(ch.wstatus));
	assert_int_equal(ch.open_errno, 0);
	gpushare_child_release(&ch);
	assert_int_equal(stat(out, &st), -1);
	read_file(err, buf, sizeof(buf));
	assert_string_equal(buf, "only-err\n");

	/* 1 MB, more than a pipe holds, then its end at once. */
	argv[2] = "head -c 1000000 /dev/zero; echo end >&2";
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_OK);
	assert_int_equal(gpushare_child_wait(&ch, 10000 * MS), GPUSHARE_OK);
	assert_true(gpushare_child_ok(ch.wstatus));
	gpushare_child_release(&ch);
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_size, 1000000);
	read_file(err, buf, sizeof(buf));
	assert_string_equal(buf, "end\n");

	/* A file that cannot be made: open_errno once reaped, the program's
	 * further writes to it fail. */
	snprintf(cmd, sizeof(cmd), "%s/no-such-dir/1.out", dir);
	ch.out_path = cmd;
	argv[2] = "echo x";
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_OK);
	assert_int_equal(gpushare_child_wait(&ch, 10000 * MS), GPUSHARE_OK);
	assert_int_equal(ch.open_errno, ENOENT);
	assert_ptr_equal(ch.open_path, ch.out_path);
	gpushare_child_release(&ch);

	ch.flags = GPUSHARE_CHILD_MIRROR | GPUSHARE_CHILD_LAZY_FILES;
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_E_INVAL);
	gpushare_clear_error();
	unlink(out);
	unlink(err);
	rmdir(dir);
}

/* A mirror has no handler of the caller's and blocks every signal while its
 * program runs (its clone resets them, not a scan per job); the program
 * gets none blocked and the five dispositions a child always gets. */
static void on_usr1(int sig)
{
	(void)sig;
}

static unsigned long long status_mask(pid_t pid, const char *key)
{
	char path[64], line[256];
	unsigned long long v = ~0ULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0)
			v = strtoull(line + strlen(key), NULL, 16);
	fclose(f);
	return v;
}

static void test_mirror_signals(void **state)
{
	struct sigaction sa, old_usr1, old_term;
	struct gpushare_child ch;
	char buf[4];
	int fds[2];

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old_usr1), 0);
	assert_int_equal(sigaction(SIGTERM, &sa, &old_term), 0);
	assert_int_equal(pipe(fds), 0);
	mirror_pipe = fds[1];
	/* The program reports its own mask, then sleeps. */
	assert_int_equal(start_mirrored(&ch, "grep '^SigBlk' /proc/$$/status >&2; sleep 30"), GPUSHARE_OK);
	assert_int_equal(read(fds[0], buf, 1), 1);
	assert_int_equal(status_mask(ch.pid, "SigCgt:"), 0);
	assert_true((status_mask(ch.pid, "SigBlk:") & (1ULL << (SIGTERM - 1))) != 0);
	assert_true((status_mask(ch.pid, "SigBlk:") & (1ULL << (SIGUSR1 - 1))) != 0);
	/* SIGUSR1 to the group: the program dies of it (default), the mirror
	 * ends the same way. */
	gpushare_child_signal(&ch, SIGUSR1);
	assert_int_equal(gpushare_child_wait(&ch, 10000 * MS), GPUSHARE_OK);
	assert_true(WIFSIGNALED(ch.wstatus) && WTERMSIG(ch.wstatus) == SIGUSR1);
	assert_int_equal(read(fds[0], buf, 2), 2);
	gpushare_child_release(&ch);
	close(fds[0]);
	close(fds[1]);
	mirror_pipe = -1;
	sigaction(SIGUSR1, &old_usr1, NULL);
	sigaction(SIGTERM, &old_term, NULL);
}

/* A mirror runs in the caller's memory (a clone, not a copy: what a
 * mirror costs per job rests on it), several run at once (one spawner
 * each), and a process forked by the caller after mirrors ran starts its
 * own (the spawners do not survive a fork; a child that waited for one
 * would hang, so it has an alarm). */
static volatile pid_t mirror_pid_seen;

static void on_start_note_pid(void *arg)
{
	(void)arg;
	mirror_pid_seen = getpid();
}

static void test_mirror_memory_pool_fork(void **state)
{
	struct gpushare_child ch[6];
	char *argv[] = { "/bin/sh", "-c", "sleep 0.2; exit 3", NULL };
	pid_t pid;
	int st;

	(void)state;
	for (size_t i = 0; i < 6; i++) {
		gpushare_child_init(&ch[i]);
		ch[i].argv = argv;
		ch[i].flags = GPUSHARE_CHILD_MIRROR;
		if (i == 0)
			ch[i].mirror_start = on_start_note_pid;
		assert_int_equal(gpushare_child_start(&ch[i]), GPUSHARE_OK);
	}
	for (size_t i = 0; i < 6; i++) {
		assert_int_equal(gpushare_child_wait(&ch[i], 10000 * MS), GPUSHARE_OK);
		assert_true(WIFEXITED(ch[i].wstatus) && WEXITSTATUS(ch[i].wstatus) == 3);
	}
	assert_int_equal(mirror_pid_seen, ch[0].pid);
	for (size_t i = 0; i < 6; i++)
		gpushare_child_release(&ch[i]);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct gpushare_child c;

		alarm(30);
		gpushare_child_init(&c);
		c.argv = argv;
		c.flags = GPUSHARE_CHILD_MIRROR;
		_exit(gpushare_child_start(&c) == GPUSHARE_OK && gpushare_child_wait(&c, 10000 * MS) == GPUSHARE_OK &&
			      WIFEXITED(c.wstatus) && WEXITSTATUS(c.wstatus) == 3
		      ? 0
		      : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* With SIGCHLD ignored the kernel reaps children and their statuses are
 * lost: start refuses rather than report a failure as a success; a status
 * lost otherwise is neither ok nor an exit. */
static void test_sigchld_ignored(void **state)
{
	struct gpushare_child ch;
	char *argv[] = { "/bin/sh", "-c", "exit 3", NULL };
	char text[96];

	(void)state;
	assert_true(signal(SIGCHLD, SIG_IGN) != SIG_ERR);
	gpushare_child_init(&ch);
	ch.argv = argv;
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "SIGCHLD is ignored"));
	assert_true(ch.pid <= 0);
	gpushare_clear_error();
	assert_true(signal(SIGCHLD, SIG_DFL) != SIG_ERR);
	assert_int_equal(gpushare_child_start(&ch), GPUSHARE_OK);
	assert_int_equal(gpushare_child_wait(&ch, 10000 * MS), GPUSHARE_OK);
	assert_int_equal(gpushare_child_exit_code(ch.wstatus), 3);
	gpushare_child_release(&ch);

	assert_false(gpushare_child_ok(GPUSHARE_CHILD_STATUS_LOST));
	assert_int_equal(gpushare_child_exit_code(GPUSHARE_CHILD_STATUS_LOST), 255);
	gpushare_child_describe(GPUSHARE_CHILD_STATUS_LOST, text, sizeof(text));
	assert_string_equal(text, "was reaped elsewhere (its exit status is lost)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_failure),
		cmocka_unit_test(test_exit_status_and_signal),
		cmocka_unit_test(test_wait_deadline_and_stop),
		cmocka_unit_test(test_stop_escalates_to_sigkill),
		cmocka_unit_test(test_stragglers_killed),
		cmocka_unit_test(test_function_child_and_pipes),
		cmocka_unit_test(test_environment),
		cmocka_unit_test(test_run_kills_stragglers),
		cmocka_unit_test(test_mirror),
		cmocka_unit_test(test_mirror_late_exec_error),
		cmocka_unit_test(test_mirror_lazy_files),
		cmocka_unit_test(test_mirror_signals),
		cmocka_unit_test(test_mirror_memory_pool_fork),
		cmocka_unit_test(test_sigchld_ignored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
