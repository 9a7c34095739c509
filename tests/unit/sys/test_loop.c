/*
 * Unit tests: the waiting loop and the keeper skeleton (lib/sys/loop.c).
 * The loop: a readable descriptor, deadlines in order, items added and
 * removed by callbacks, a parent already gone, nothing to wait for, one
 * round ended by a signal. The
 * keeper: finished by its owner (no cleanup), its owner killed by SIGKILL
 * or exiting without finishing (cleanup, its exit status), an owner that
 * outlives its end of the link (the deadline: no cleanup), a keeper of no
 * owner, one deaf to the stop signals and holding no inherited descriptor,
 * a setup whose descriptor ends the wait, and an owner killed on a kernel
 * without pidfd_open and close_range (a seccomp filter plays it).
 *
 * This process is a child subreaper, so that a keeper whose owner was
 * killed is reaped here; every process a test starts is recorded and, pass
 * or fail, killed and reaped by the teardown.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "children.h"
#include "clock.h"
#include "loop.h"
#include "sys.h"
#include "gpushare/child.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"

/* Processes a test starts are tracked and, by the teardown, killed and
 * reaped (children.h); an orphaned keeper is reparented to us. */
static int group_setup(void **state)
{
	(void)state;
	return prctl(PR_SET_CHILD_SUBREAPER, 1) == 0 ? 0 : -1;
}

/* A byte from fd within ms: the byte, 0 at end of file, -1 on time out. */
static int read_byte(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&p, 1, ms) != 1)
		return -1;
	return read(fd, &c, 1) == 1 ? (unsigned char)c : 0;
}

/* ---- the loop ---- */

static int read_and_end(struct gpushare_loop *l, void *arg)
{
	char c;

	(void)l;
	return read(*(int *)arg, &c, 1) == 1 ? c : -1;
}

static int never(struct gpushare_loop *l, void *arg)
{
	(void)l;
	(void)arg;
	fail_msg("a removed item was called");
	return 1;
}

static void test_loop_fd(void **state)
{
	struct gpushare_loop l;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	gpushare_loop_init(&l);
	assert_int_equal(gpushare_loop_run(&l), 0); /* nothing to wait for */
	gpushare_loop_remove(&l, gpushare_loop_add_fd(&l, p[0], never, NULL));
	assert_true(gpushare_loop_add_fd(&l, p[0], read_and_end, &p[0]) >= 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(gpushare_loop_run(&l), 'x');
	gpushare_loop_release(&l);
	close(p[0]);
	close(p[1]);
}

struct order {
	int seen[4];
	size_t n;
};

static int note(struct gpushare_loop *l, void *arg, int which, int ret)
{
	struct order *o = arg;

	(void)l;
	o->seen[o->n++] = which;
	return ret;
}

static int at10(struct gpushare_loop *l, void *arg) { return note(l, arg, 10, 0); }
static int at30(struct gpushare_loop *l, void *arg) { return note(l, arg, 30, 0); }
static int at60(struct gpushare_loop *l, void *arg) { return note(l, arg, 60, 9); }

static void test_loop_deadlines(void **state)
{
	struct gpushare_loop l;
	struct order o = { { 0 }, 0 };
	uint64_t t0 = gpushare_now_ns();

	(void)state;
	gpushare_loop_init(&l);
	assert_true(gpushare_loop_add_deadline(&l, t0 + 30 * NS_PER_MS, at30, &o) >= 0);
	assert_true(gpushare_loop_add_deadline(&l, t0 + 60 * NS_PER_MS, at60, &o) >= 0);
	assert_true(gpushare_loop_add_deadline(&l, t0 + 10 * NS_PER_MS, at10, &o) >= 0);
	gpushare_loop_remove(&l, gpushare_loop_add_deadline(&l, t0, never, NULL));
	assert_int_equal(gpushare_loop_run(&l), 9);
	assert_true(gpushare_now_ns() - t0 >= 60 * NS_PER_MS);
	assert_int_equal(o.n, 3);
	assert_int_equal(o.seen[0], 10);
	assert_int_equal(o.seen[1], 30);
	assert_int_equal(o.seen[2], 60);
	/* Deadlines fire once: nothing is left. */
	assert_int_equal(gpushare_loop_run(&l), 0);
	gpushare_loop_release(&l);
}

struct ticks {
	int left, fd_id;
};

/* Re-arms itself; on its last tick removes the descriptor that would
 * otherwise end the run. */
static int tick(struct gpushare_loop *l, void *arg)
{
	struct ticks *t = arg;

	if (--t->left == 0) {
		gpushare_loop_remove(l, t->fd_id);
		return 4;
	}
	return gpushare_loop_add_deadline(l, gpushare_now_ns() + NS_PER_MS, tick, t) < 0;
}

static void test_loop_callbacks_add_and_remove(void **state)
{
	struct gpushare_loop l;
	struct ticks t = { 20, -1 };
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	gpushare_loop_init(&l);
	t.fd_id = gpushare_loop_add_fd(&l, p[0], never, NULL);
	assert_true(t.fd_id >= 0);
	assert_true(gpushare_loop_add_deadline(&l, gpushare_now_ns(), tick, &t) >= 0);
	assert_int_equal(gpushare_loop_run(&l), 4);
	assert_int_equal(t.left, 0);
	/* The descriptor was removed before it became readable. */
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(gpushare_loop_run(&l), 0);
	gpushare_loop_release(&l);
	close(p[0]);
	close(p[1]);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* One round: a caught signal ends it with 0 (where gpushare_loop_run()
 * would wait on), a ready item with its callback's value; clear empties the
 * loop and keeps it usable. */
static void test_loop_run_once(void **state)
{
	struct sigaction sa, old;
	struct itimerval it = { { 0, 0 }, { 0, 20000 } }, off = { { 0, 0 }, { 0, 0 } };
	struct gpushare_loop l;
	uint64_t t0 = gpushare_now_ns();
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	gpushare_loop_init(&l);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART */
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	assert_true(gpushare_loop_add_fd(&l, p[0], never, NULL) >= 0);
	assert_true(gpushare_loop_add_deadline(&l, t0 + 30 * NS_PER_S, never, NULL) >= 0);
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	assert_int_equal(gpushare_loop_run_once(&l), 0); /* the alarm, 20 ms on */
	assert_true(gpushare_now_ns() - t0 < 20 * NS_PER_S);
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	gpushare_loop_clear(&l);
	assert_int_equal(gpushare_loop_run_once(&l), 0); /* nothing to wait for */
	assert_true(gpushare_loop_add_fd(&l, p[0], read_and_end, &p[0]) >= 0);
	assert_int_equal(write(p[1], "y", 1), 1);
	assert_int_equal(gpushare_loop_run_once(&l), 'y');
	gpushare_loop_release(&l);
	close(p[0]);
	close(p[1]);
}

static int parent_ended(struct gpushare_loop *l, void *arg)
{
	(void)l;
	(void)arg;
	return 3;
}

static void test_loop_parent_already_gone(void **state)
{
	struct gpushare_loop l;

	(void)state;
	gpushare_loop_init(&l);
	/* Not our parent: gone as far as the loop can tell, at once. */
	assert_true(gpushare_loop_add_parent(&l, getpid(), parent_ended, NULL) >= 0);
	assert_int_equal(gpushare_loop_run(&l), 3);
	gpushare_loop_release(&l);
}

/* ---- the keeper ---- */

static int report_cleanup(void *arg)
{
	if (write(*(int *)arg, "C", 1) != 1)
		return 1;
	return 7;
}

static void keeper_prepare(struct gpushare_keeper *k, unsigned flags, int *report)
{
	gpushare_keeper_init(k);
	k->flags = flags;
	k->cleanup = report_cleanup;
	k->arg = report;
	k->keep_fds[k->n_keep_fds++] = *report;
}

enum owner_end { OWNER_WAITS, OWNER_EXITS, OWNER_CLOSES_LINK };

struct owner {
	enum owner_end end;
	bool old_kernel;
	int report, pid_wr, pid_rd;
};

/* A kernel before 5.3 and 5.9 for this process and its children:
 * pidfd_open and close_range fail with ENOSYS. */
static int old_kernel(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pidfd_open, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_close_range, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		return -1;
	return syscall(SYS_pidfd_open, getpid(), 0) < 0 && errno == ENOSYS ? 0 : -1;
}

/* An owner process: starts a keeper, tells its pid, then ends as asked. */
static _Noreturn void owner_main(void *arg)
{
	struct owner *o = arg;
	struct gpushare_keeper k;
	pid_t pid;

	close(o->pid_rd);
	if (o->old_kernel && old_kernel() != 0)
		_exit(5);
	keeper_prepare(&k, GPUSHARE_KEEPER_LINK | GPUSHARE_KEEPER_OWNER, &o->report);
	k.owner_wait_ns = 300 * NS_PER_MS;
	if (gpushare_keeper_start(&k) != GPUSHARE_OK)
		_exit(2);
	pid = k.ch.pid;
	close(o->report); /* the keeper is its only writer */
	if (write(o->pid_wr, &pid, sizeof(pid)) != (ssize_t)sizeof(pid))
		_exit(3);
	close(o->pid_wr); /* the keeper must hold none either */
	if (o->end == OWNER_EXITS)
		_exit(0);
	if (o->end == OWNER_CLOSES_LINK)
		close(k.fd);
	for (;;)
		pause();
}

/* Start an owner; its keeper's pid in *keeper, the report's read end in
 * *report (the keeper holds the only write end), the read end of the pipe
 * that told the pid in *pid_rd (may be NULL: closed). */
static void start_owner(struct gpushare_child *ch, enum owner_end end, bool old, pid_t *keeper, int *report,
			int *pid_rd)
{
	int rep[2], pids[2];
	struct owner o;

	assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
	assert_int_equal(pipe2(pids, O_CLOEXEC), 0);
	o = (struct owner){ end, old, rep[1], pids[1], pids[0] };
	gpushare_child_init(ch);
	ch->fn = owner_main;
	ch->arg = &o;
	assert_int_equal(gpushare_child_start(ch), GPUSHARE_OK);
	track(ch->pid);
	close(rep[1]);
	close(pids[1]);
	assert_int_equal(read(pids[0], keeper, sizeof(*keeper)), (ssize_t)sizeof(*keeper));
	track(*keeper);
	if (pid_rd)
		*pid_rd = pids[0];
	else
		close(pids[0]);
	*report = rep[0];
}

/* The owner ends (it is waited for and released); its keeper then cleans
 * up (reports 'C') and exits 7, and the report is closed. */
static void keeper_cleans_up(struct gpushare_child *owner, pid_t keeper, int report)
{
	int st;

	assert_int_equal(gpushare_child_wait(owner, 5 * NS_PER_S), GPUSHARE_OK);
	gpushare_child_release(owner);
	assert_int_equal(read_byte(report, 5000), 'C');
	st = reap(keeper, 5000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 7);
	close(report);
}

static void test_keeper_owner_killed(void **state)
{
	struct gpushare_child owner;
	pid_t keeper;
	int report;

	(void)state;
	start_owner(&owner, OWNER_WAITS, false, &keeper, &report, NULL);
	/* Alive and idle while its owner lives. */
	assert_int_equal(read_byte(report, 100), -1);
	gpushare_child_signal(&owner, SIGKILL);
	keeper_cleans_up(&owner, keeper, report);
}

/* Without pidfd_open and close_range: inherited descriptors closed as
 * /proc/self/fd lists them (the pipe that told the keeper's pid ends while
 * the keeper lives), the owner's end seen by the parent changing. */
static void test_keeper_owner_killed_old_kernel(void **state)
{
	struct gpushare_child owner;
	pid_t keeper;
	int report, pid_rd;

	(void)state;
	start_owner(&owner, OWNER_WAITS, true, &keeper, &report, &pid_rd);
	assert_int_equal(read_byte(pid_rd, 5000), 0);
	assert_int_equal(read_byte(report, 100), -1);
	gpushare_child_signal(&owner, SIGKILL);
	keeper_cleans_up(&owner, keeper, report);
	close(pid_rd);
}

static void test_keeper_owner_exits(void **state)
{
	struct gpushare_child owner;
	pid_t keeper;
	int report;

	(void)state;
	start_owner(&owner, OWNER_EXITS, false, &keeper, &report, NULL);
	keeper_cleans_up(&owner, keeper, report);
}

/* The deadline: an owner that closes its end of the link but lives on is
 * not cleaned up after; the keeper leaves once owner_wait_ns has passed. */
static void test_keeper_owner_outlives_link(void **state)
{
	struct gpushare_child owner;
	uint64_t t0 = gpushare_now_ns();
	pid_t keeper;
	int report;

	(void)state;
	start_owner(&owner, OWNER_CLOSES_LINK, false, &keeper, &report, NULL);
	assert_int_equal(read_byte(report, 5000), 0); /* its end, no 'C' */
	assert_true(gpushare_now_ns() - t0 >= 300 * NS_PER_MS);
	/* Its owner's death afterwards changes nothing. */
	gpushare_child_signal(&owner, SIGKILL);
	assert_int_equal(gpushare_child_wait(&owner, 5 * NS_PER_S), GPUSHARE_OK);
	gpushare_child_release(&owner);
	assert_int_equal(reap(keeper, 5000), 0);
	close(report);
}

static void test_keeper_finish(void **state)
{
	struct gpushare_keeper k;
	int rep[2], other[2];

	(void)state;
	assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
	assert_int_equal(pipe(other), 0); /* inherited, not close-on-exec */
	keeper_prepare(&k, GPUSHARE_KEEPER_LINK | GPUSHARE_KEEPER_OWNER, &rep[1]);
	assert_int_equal(gpushare_keeper_start(&k), GPUSHARE_OK);
	track(k.ch.pid);
	assert_true(k.fd >= 0);
	close(rep[1]);
	close(other[1]);
	/* It holds no descriptor but its own: the other pipe has ended. */
	assert_int_equal(read_byte(other[0], 5000), 0);
	/* Deaf to what a terminal or a launcher sends. */
	kill(k.ch.pid, SIGINT);
	kill(k.ch.pid, SIGTERM);
	kill(k.ch.pid, SIGHUP);
	kill(k.ch.pid, SIGQUIT);
	assert_int_equal(read_byte(rep[0], 100), -1);
	assert_false(gpushare_child_poll(&k.ch));
	gpushare_keeper_finish(&k, 5 * NS_PER_S);
	assert_int_equal(k.fd, -1);
	assert_int_equal(read_byte(rep[0], 5000), 0); /* ended, no 'C' */
	close(rep[0]);
	close(other[0]);
}

static void test_keeper_without_owner(void **state)
{
	struct gpushare_keeper k;
	int rep[2];

	(void)state;
	assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
	keeper_prepare(&k, 0, &rep[1]);
	assert_int_equal(gpushare_keeper_start(&k), GPUSHARE_OK);
	track(k.ch.pid);
	close(rep[1]);
	assert_int_equal(k.fd, -1);
	assert_int_equal(read_byte(rep[0], 5000), 'C');
	assert_int_equal(gpushare_child_wait(&k.ch, 5 * NS_PER_S), GPUSHARE_OK);
	assert_int_equal(gpushare_child_exit_code(k.ch.wstatus), 7);
	gpushare_keeper_release(&k);
	close(rep[0]);
}

/* setup() registers one more descriptor; its callback ends the wait. */
struct extra {
	int report, trigger;
};

static int trigger_ready(struct gpushare_loop *l, void *arg)
{
	(void)l;
	(void)arg;
	return GPUSHARE_KEEPER_GONE;
}

static int extra_setup(struct gpushare_loop *l, void *arg)
{
	const struct extra *e = arg;

	return gpushare_loop_add_fd(l, e->trigger, trigger_ready, NULL);
}

static void test_keeper_setup(void **state)
{
	struct gpushare_keeper k;
	struct extra e;
	int rep[2], trig[2];

	(void)state;
	assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
	assert_int_equal(pipe2(trig, O_CLOEXEC), 0);
	e = (struct extra){ rep[1], trig[0] };
	keeper_prepare(&k, GPUSHARE_KEEPER_LINK | GPUSHARE_KEEPER_OWNER, &e.report);
	k.setup = extra_setup;
	k.keep_fds[k.n_keep_fds++] = trig[0];
	k.arg = &e; /* report_cleanup reads its first int */
	assert_int_equal(gpushare_keeper_start(&k), GPUSHARE_OK);
	track(k.ch.pid);
	close(rep[1]);
	close(trig[0]);
	assert_int_equal(read_byte(rep[0], 100), -1);
	assert_int_equal(write(trig[1], "x", 1), 1);
	assert_int_equal(read_byte(rep[0], 5000), 'C');
	assert_int_equal(gpushare_child_wait(&k.ch, 5 * NS_PER_S), GPUSHARE_OK);
	assert_int_equal(gpushare_child_exit_code(k.ch.wstatus), 7);
	gpushare_keeper_release(&k);
	close(rep[0]);
	close(trig[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_loop_fd, kill_started),
		cmocka_unit_test_teardown(test_loop_deadlines, kill_started),
		cmocka_unit_test_teardown(test_loop_callbacks_add_and_remove, kill_started),
		cmocka_unit_test_teardown(test_loop_parent_already_gone, kill_started),
		cmocka_unit_test_teardown(test_loop_run_once, kill_started),
		cmocka_unit_test_teardown(test_keeper_owner_killed, kill_started),
		cmocka_unit_test_teardown(test_keeper_owner_killed_old_kernel, kill_started),
		cmocka_unit_test_teardown(test_keeper_owner_exits, kill_started),
		cmocka_unit_test_teardown(test_keeper_owner_outlives_link, kill_started),
		cmocka_unit_test_teardown(test_keeper_finish, kill_started),
		cmocka_unit_test_teardown(test_keeper_without_owner, kill_started),
		cmocka_unit_test_teardown(test_keeper_setup, kill_started),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
