/*
 * Child processes: start, wait for and stop a program (or a forked function)
 * in a process group of its own. See include/gpushare/child.h for the contract.
 *
 * Exec failure reaches the parent through a close-on-exec pipe: the child
 * writes its errno there when execve fails, and the parent's read returns 0
 * bytes (EOF) once exec has closed the pipe. Waiting uses the child's pidfd
 * (Linux 5.3) so that an exit is seen at once; without one, a 2 ms poll.
 *
 * A mirror (GPUSHARE_CHILD_MIRROR) lives as long as its job, so a fork would
 * cost gpushare, job after job, the copy of its page tables and then a
 * copy-on-write fault for every page any of its threads writes while a
 * mirror shares it (most of a farm's CPU per job, measured). A mirror is
 * therefore a clone that shares gpushare's memory (CLONE_VM | CLONE_VFORK,
 * as posix_spawn does), made by a spawner thread of a small pool that stays
 * suspended in the clone until its mirror ends, so that the mirror borrows
 * that thread's thread-local state and nothing else runs on it. The mirror
 * reads only its request (copies of everything it needs, freed by the
 * spawner once the mirror is gone), and calls nothing that takes a lock or
 * allocates: system calls and the mirror callbacks only. When gpushare dies,
 * the memory stays mapped for the mirrors that still run.
 *
 * Signals: a mirror runs with every signal blocked (as its spawner does)
 * until it ends, so that it never needs a disposition of its own, and with
 * no handler of gpushare's: on x86-64 its clone3 resets them all at once
 * (CLONE_CLEAR_SIGHAND, Linux 5.5; what gpushare ignores stays ignored),
 * elsewhere or on an older kernel it resets, one by one, each signal it
 * finds handled. Its program, vforked, then only sets the five signals a
 * child of gpushare always gets (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE)
 * and unblocks them all before its exec: six system calls, not the 80 a
 * scan of every signal costs per job.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "loop.h"
#include "sys.h"
#include "gpushare/child.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"

#define POLL_FALLBACK_NS (2 * NS_PER_MS)
#define KILL_WAIT_NS (5ULL * 1000 * NS_PER_MS)

void gpushare_child_init(struct gpushare_child *ch)
{
	memset(ch, 0, sizeof(*ch));
	ch->in = ch->out = ch->err = GPUSHARE_CHILD_INHERIT;
	ch->pidfd = ch->in_fd = ch->out_fd = ch->err_fd = ch->report_fd = -1;
}

int gpushare_child_start_detached(struct gpushare_child *ch, void (*fn)(void *arg), void *arg)
{
	gpushare_child_init(ch);
	ch->fn = fn;
	ch->arg = arg;
	ch->in = ch->out = ch->err = GPUSHARE_CHILD_DEVNULL;
	ch->flags = GPUSHARE_CHILD_NO_PDEATHSIG;
	return gpushare_child_start(ch);
}

int gpushare_child_exit_code(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 255;
}

bool gpushare_child_ok(int wstatus)
{
	return WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
}

void gpushare_child_describe(int wstatus, char *buf, size_t len)
{
	if (wstatus == GPUSHARE_CHILD_STATUS_LOST) {
		snprintf(buf, len, "was reaped elsewhere (its exit status is lost)");
	} else if (WIFEXITED(wstatus)) {
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(wstatus));
	} else if (WIFSIGNALED(wstatus)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(wstatus));

		snprintf(buf, len, "was killed by signal %d (SIG%s)", WTERMSIG(wstatus), abbrev ? abbrev : "?");
	} else {
		snprintf(buf, len, "ended with wait status %d", wstatus);
	}
}

/* What the child writes on the report pipe when it cannot go on: exec's
 * errno (or that of a step before it), or, negated, an output file's open
 * errno and which file (out_path 1, err_path 0). */
static int report_open_failure(int err, int which)
{
	return -(err * 2 + which);
}

/* The parent's side: sets exec_errno, or open_errno and open_path. */
static void take_report(struct gpushare_child *ch, int e)
{
	if (e > 0) {
		ch->exec_errno = e;
	} else if (e < 0) {
		ch->open_errno = (-e) >> 1;
		ch->open_path = (-e) & 1 ? ch->out_path : ch->err_path;
	}
}

/* In the child: create path and make it descriptor target. */
static int child_file(const char *path, int target)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);

	if (fd < 0)
		return -1;
	if (dup2(fd, target) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* In the child: put descriptor `want` (one of ours or a choice) on `target`. */
static int child_stream(int want, int pipe_end, int devnull, int target)
{
	int fd = want;

	if (want == GPUSHARE_CHILD_INHERIT)
		return 0;
	if (want == GPUSHARE_CHILD_DEVNULL)
		fd = devnull;
	else if (want == GPUSHARE_CHILD_PIPE)
		fd = pipe_end;
	if (fd == target) {
		int flags = fcntl(fd, F_GETFD);

		return flags < 0 ? -1 : fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
	}
	return dup2(fd, target) < 0 ? -1 : 0;
}

/* The mirror ends as its program did: the same exit status, or killed by
 * the same signal (without a core file of its own). */
static _Noreturn void mirror_end(int st)
{
	if (WIFSIGNALED(st)) {
		const struct rlimit no_core = { 0, 0 };
		int sig = WTERMSIG(st);
		sigset_t one;

		setrlimit(RLIMIT_CORE, &no_core);
		signal(sig, SIG_DFL);
		sigemptyset(&one);
		sigaddset(&one, sig);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
		/* kill, not raise: raise signals the thread whose state the
		 * mirror borrows (see the top of this file). */
		kill(getpid(), sig);
		_exit(128 + sig);
	}
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 255);
}

/* A program's signals as gpushare starts it: the five a child always gets
 * set, then none blocked. Before this, in a mirror's program, they are all
 * blocked and none has a handler (the top of this file). */
static void program_signals(const struct gpushare_child *ch)
{
	sigset_t none;

	signal(SIGINT, ch->flags & GPUSHARE_CHILD_IGNORE_SIGINT ? SIG_IGN : SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* GPUSHARE_CHILD_LAZY_FILES: one of the program's two streams, a pipe the
 * mirror copies into its file, made on the first byte. */
struct lazy_stream {
	int rd;           /* the pipe's read end; -1 once done with */
	int fd;           /* the file; -1 until its first byte */
	const char *path;
	int which;        /* report_open_failure()'s: out_path 1, err_path 0 */
};

/* Take up to max bytes of what the pipe holds (never waiting for more) into
 * the file, made now when it is not yet. The pipe is done with at its end,
 * or when the file cannot be made (reported once on `report`). A write that
 * fails (a full disk) drops the bytes, as the program's own write would
 * have failed: the pipe is still drained, so that the program goes on. */
static size_t lazy_take(struct lazy_stream *o, size_t max, int report, bool *reported)
{
	char buf[4096];
	size_t took = 0;

	while (max > 0) {
		size_t want = max < (1u << 20) ? max : (1u << 20);
		ssize_t n;

		if (o->fd < 0) {
			o->fd = open(o->path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
			if (o->fd < 0) {
				int e = report_open_failure(errno, o->which);

				if (!*reported && write(report, &e, sizeof(e)) == (ssize_t)sizeof(e))
					*reported = true;
				close(o->rd);
				o->rd = -1;
				return took;
			}
		}
		n = splice(o->rd, NULL, o->fd, NULL, want, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			/* A file system that cannot splice, or a failed write:
			 * copy, or drop. */
			n = read(o->rd, buf, want < sizeof(buf) ? want : sizeof(buf));
			if (n > 0 && write(o->fd, buf, (size_t)n) < 0)
				(void)0;
		}
		if (n == 0) {
			close(o->rd);
			o->rd = -1;
			return took;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return took; /* EAGAIN: nothing more now */
		}
		max -= (size_t)n;
		took += (size_t)n;
	}
	return took;
}

/* Output that comes in small pieces (a line at a time to an unbuffered
 * stderr) is taken at most every LAZY_NAP_MS, not on each write: a wake-up
 * and a splice per line would cost more than the job's own writes. Bigger
 * amounts are taken at once, so that a fast writer never waits on a full
 * pipe for long. */
#define LAZY_SMALL_BYTES (16 * 1024)
#define LAZY_NAP_MS 5

/* Copy the program's output as it comes until the program has ended (its
 * pidfd, or a 20 ms poll without one), then what the pipes hold at that
 * moment; what the program left running and writes later is not waited
 * for (its writes fail, EPIPE, as the pipes close). Returns its wait status. */
static int lazy_wait(pid_t pid, struct lazy_stream o[2], int report)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0), st = 127 << 8;
	bool reported = false, ended = false;

	while (!ended) {
		struct pollfd p[3];
		struct lazy_stream *of[3] = { NULL, NULL, NULL };
		size_t took = 0;
		nfds_t n = 0;
		pid_t w;

		if (o[0].rd < 0 && o[1].rd < 0)
			break; /* no pipe left: wait below */
		if (pidfd >= 0)
			p[n++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		for (int i = 0; i < 2; i++)
			if (o[i].rd >= 0) {
				of[n] = &o[i];
				p[n++] = (struct pollfd){ .fd = o[i].rd, .events = POLLIN };
			}
		if (poll(p, n, pidfd >= 0 ? -1 : 20) < 0 && errno != EINTR)
			break;
		for (nfds_t i = 0; i < n; i++) {
			if (!of[i])
				continue;
			if (p[i].revents & POLLIN)
				took += lazy_take(of[i], SIZE_MAX, report, &reported);
			else if (p[i].revents & (POLLHUP | POLLERR | POLLNVAL)) {
				close(of[i]->rd);
				of[i]->rd = -1;
			}
		}
		if (took > 0 && took < LAZY_SMALL_BYTES && pidfd >= 0 && !(p[0].revents & POLLIN)) {
			/* a nap that the program's end cuts short */
			struct pollfd end = { .fd = pidfd, .events = POLLIN };

			if (poll(&end, 1, LAZY_NAP_MS) > 0)
				p[0].revents = POLLIN;
		}
		if (pidfd < 0 || (p[0].revents & POLLIN)) {
			do
				w = waitpid(pid, &st, WNOHANG);
			while (w < 0 && errno == EINTR);
			ended = w == pid || (w < 0 && errno == ECHILD);
		}
	}
	if (!ended)
		while (waitpid(pid, &st, 0) < 0) {
			if (errno != EINTR) {
				st = 127 << 8;
				break;
			}
		}
	for (int i = 0; i < 2; i++) {
		int left = 0;

		if (o[i].rd >= 0 && ioctl(o[i].rd, FIONREAD, &left) == 0 && left > 0)
			lazy_take(&o[i], (size_t)left, report, &reported);
		if (o[i].rd >= 0)
			close(o[i].rd);
		if (o[i].fd >= 0)
			close(o[i].fd);
	}
	if (pidfd >= 0)
		close(pidfd);
	return st;
}

/* GPUSHARE_CHILD_MIRROR: fork the program, report, wait, end alike. The
 * program inherits `report` until its exec closes it, so that the parent
 * still learns of an exec failure. Every signal stays blocked in the
 * mirror: a stop signal to the group reaches only the program, a report to
 * a keeper that is gone fails with EPIPE, no more. */
static _Noreturn void mirror_main(const struct gpushare_child *ch, const char *path, char **envp, int report)
{
	struct lazy_stream o[2] = { { -1, -1, ch->out_path, 1 }, { -1, -1, ch->err_path, 0 } };
	volatile int wr[2] = { -1, -1 }; /* read by the vforked program */
	bool lazy = ch->flags & GPUSHARE_CHILD_LAZY_FILES;
	pid_t self = getpid(), pid;
	int st = 0, e;

	for (int i = 0; lazy && i < 2; i++) {
		int pp[2];

		if (pipe2(pp, O_CLOEXEC) != 0) {
			e = errno;
			if (write(report, &e, sizeof(e)) < 0)
				_exit(127);
			_exit(127);
		}
		o[i].rd = pp[0];
		wr[i] = pp[1];
	}
	/* vfork: the mirror is a copy of gpushare, whose page tables a
	 * fork would copy again for every job. The child only sets its
	 * death signal, streams and signals (its own, not shared) and execs. */
	pid = vfork();
	if (pid < 0) {
		e = errno;
		if (write(report, &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	if (pid == 0) {
		/* The program dies with its mirror. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != self)
			_exit(127);
		if (lazy && (dup2(wr[0], 1) < 0 || dup2(wr[1], 2) < 0))
			_exit(127);
		program_signals(ch);
		execve(path, ch->argv, envp);
		e = errno;
		if (write(report, &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	if (lazy) {
		close(wr[0]);
		close(wr[1]);
	} else {
		close(report);
	}
	if (ch->mirror_start)
		ch->mirror_start(ch->mirror_arg);
	if (lazy) {
		st = lazy_wait(pid, o, report);
	} else {
		while (waitpid(pid, &st, 0) < 0) {
			if (errno != EINTR) {
				st = 127 << 8;
				break;
			}
		}
	}
	if (ch->mirror_exit)
		ch->mirror_exit(ch->mirror_arg, st);
	mirror_end(st);
}

static _Noreturn void child_main(const struct gpushare_child *ch, const char *path, char **envp, pid_t parent,
				 int report, const int pipes[3][2], int devnull)
{
	int e, which = 0;

	if (!(ch->flags & GPUSHARE_CHILD_SAME_PGROUP) && setpgid(0, 0) != 0)
		goto fail;
	/* Die with gpushare; if it already died, do not start at all. A
	 * mirror outlives gpushare (its keeper ends the program). */
	if (!(ch->flags & (GPUSHARE_CHILD_NO_PDEATHSIG | GPUSHARE_CHILD_MIRROR)) &&
	    prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		_exit(127);
	if (getppid() != parent && !(ch->flags & GPUSHARE_CHILD_NO_PDEATHSIG))
		_exit(127);
	/* A mirror keeps every signal blocked (the top of this file says
	 * why); its program gets them as below. */
	if (!(ch->flags & GPUSHARE_CHILD_MIRROR))
		program_signals(ch);
	if (child_stream(ch->in, pipes[0][0], devnull, 0) != 0)
		goto fail;
	if (ch->flags & GPUSHARE_CHILD_STDOUT_TO_STDERR) {
		if (dup2(2, 1) < 0)
			goto fail;
	} else if (ch->flags & GPUSHARE_CHILD_LAZY_FILES) {
		/* made by the mirror on the program's first byte */
	} else if (ch->out_path) {
		if (child_file(ch->out_path, 1) != 0) {
			which = 1;
			goto open_fail;
		}
	} else if (child_stream(ch->out, pipes[1][1], devnull, 1) != 0) {
		goto fail;
	}
	if (ch->flags & GPUSHARE_CHILD_LAZY_FILES) {
		/* as out_path */
	} else if (ch->err_path) {
		if (child_file(ch->err_path, 2) != 0) {
			which = 0;
			goto open_fail;
		}
	} else if (child_stream(ch->err, pipes[2][1], devnull, 2) != 0) {
		goto fail;
	}
	for (size_t i = 0; i < ch->n_keep_fds; i++) {
		int flags = fcntl(ch->keep_fds[i], F_GETFD);

		if (flags < 0 || fcntl(ch->keep_fds[i], F_SETFD, flags & ~FD_CLOEXEC) < 0)
			goto fail;
	}
	if (ch->fn) {
		close(report); /* nothing to exec: "started" is already true */
		ch->fn(ch->arg);
		_exit(127);
	}
	if (ch->flags & GPUSHARE_CHILD_MIRROR)
		mirror_main(ch, path, envp, report);
	execve(path, ch->argv, envp);
fail:
	e = errno;
	if (write(report, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
open_fail:
	e = report_open_failure(errno, which);
	if (write(report, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- mirrors: cloned by a spawner thread (see the top of this file) ---- */

#define VM_STACK_BYTES (256 * 1024)

/* What a mirror reads: copies, so that the caller may free or reuse its
 * own the moment start returns. Freed by the spawner once the mirror is gone. */
struct vm_req {
	struct gpushare_child ch;      /* the caller's, with the pointers below */
	struct gpushare_child *caller; /* its pid and spawn_state are set */
	char path[GPUSHARE_PATH_MAX];
	char **argv, **envp;           /* argv one block (pointers, then strings); envp too, */
	bool envp_built;               /* or start's own (gpushare_env_build), taken over */
	char *out_path, *err_path;
	int pipes[3][2], devnull, report;
	pid_t parent;
	bool cleared;                  /* cloned with CLONE_CLEAR_SIGHAND */
	struct vm_req *next;
};

static pthread_mutex_t vm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t vm_cond = PTHREAD_COND_INITIALIZER;
static struct vm_req *vm_head, *vm_tail;
static size_t vm_idle;

/* The caller's spawn_state: set once, by the mirror or its spawner. */
static void spawn_state_set(struct gpushare_child *caller, int st)
{
	__atomic_store_n(&caller->spawn_state, st, __ATOMIC_RELEASE);
	syscall(SYS_futex, &caller->spawn_state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* A NULL-terminated vector as one block (NULL for NULL). */
static char **vec_copy(char *const *v)
{
	size_t n = 0, bytes = 0;
	char **out, *p;

	if (!v)
		return NULL;
	for (; v[n]; n++)
		bytes += strlen(v[n]) + 1;
	out = malloc((n + 1) * sizeof(*out) + bytes);
	if (!out)
		return NULL;
	p = (char *)(out + n + 1);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(v[i]) + 1;

		out[i] = memcpy(p, v[i], len);
		p += len;
	}
	out[n] = NULL;
	return out;
}

static void vm_req_free(struct vm_req *r)
{
	if (!r)
		return;
	free(r->argv);
	if (r->envp_built)
		gpushare_env_free(r->envp);
	else
		free(r->envp);
	free(r->out_path);
	free(r->err_path);
	free(r);
}

/* The mirror: tell the caller it runs (its pid is set by now), put back
 * the default action of every signal gpushare catches (unless its clone
 * did), then go on as a forked child would. */
static int vm_child(void *arg)
{
	struct vm_req *r = arg;

	spawn_state_set(r->caller, 1);
	for (int sig = 1; !r->cleared && sig < NSIG; sig++) {
		struct sigaction sa;

		if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN) {
			sa.sa_handler = SIG_DFL;
			sa.sa_flags = 0;
			sigaction(sig, &sa, NULL);
		}
	}
	child_main(&r->ch, r->path, r->envp, r->parent, r->report, (const int(*)[2])r->pipes, r->devnull);
}

#if defined(__x86_64__)
#define VM_CLONE3 1
#ifndef CLONE_CLEAR_SIGHAND
#define CLONE_CLEAR_SIGHAND 0x100000000ULL
#endif
/* clone3's arguments (struct clone_args, its first version: 64 bytes). */
struct vm_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

/* clone3(args, 64) on the stack args names: returns the child's pid (or
 * -errno) in the parent; the child calls fn(arg) there and exits with what
 * it returns. glibc has no clone3 of its own to call; the child must not
 * return into a C frame of the parent's stack. */
long gpushare_vm_clone3(struct vm_clone_args *args, int (*fn)(void *), void *arg);
__asm__(".text\n"
	".globl gpushare_vm_clone3\n"
	".hidden gpushare_vm_clone3\n"
	".type gpushare_vm_clone3, @function\n"
	"gpushare_vm_clone3:\n"
	"	mov %rsi, %r8\n"   /* fn: kept in the child (only rax, rcx, r11 change) */
	"	mov %rdx, %r9\n"   /* arg */
	"	mov $64, %esi\n"
	"	mov $435, %eax\n"  /* SYS_clone3 */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jz 1f\n"
	"	ret\n"
	"1:	xor %ebp, %ebp\n"  /* the child, on the new stack (16-aligned) */
	"	mov %r9, %rdi\n"
	"	call *%r8\n"
	"	mov %eax, %edi\n"
	"	mov $60, %eax\n"   /* SYS_exit */
	"	syscall\n"
	"	hlt\n"
	".size gpushare_vm_clone3, .-gpushare_vm_clone3\n");

/* Whether clone3 with CLONE_CLEAR_SIGHAND works here: unknown (0), yes (1),
 * no (-1: an older kernel, or a seccomp filter that refuses it). */
static int vm_clone3_ok;
#endif

/* The mirror's stack is an array in its spawner's frame, on the spawner
 * thread's own stack: a sanitizer that unpoisons "the stack below sp" after
 * a vfork (the mirror's, of its program) then finds sp inside the stack of
 * the thread whose state the mirror borrows. A stack anywhere else (heap,
 * mmap) makes that range wrap around the address space. Not instrumented, so
 * that the array is never moved to a sanitizer's fake stack. */
__attribute__((no_sanitize_address)) static void *vm_spawner(void *unused)
{
	_Alignas(16) unsigned char stack[VM_STACK_BYTES];

	(void)unused;
	for (;;) {
		struct vm_req *r;
		pid_t pid;

		pthread_mutex_lock(&vm_lock);
		while (!vm_head) {
			vm_idle++;
			pthread_cond_wait(&vm_cond, &vm_lock);
			vm_idle--;
		}
		r = vm_head;
		vm_head = r->next;
		if (!vm_head)
			vm_tail = NULL;
		pthread_mutex_unlock(&vm_lock);
		/* Suspended here until the mirror has ended. */
		pid = -1;
#ifdef VM_CLONE3
		if (__atomic_load_n(&vm_clone3_ok, __ATOMIC_RELAXED) >= 0) {
			struct vm_clone_args ca = {
				.flags = CLONE_VM | CLONE_VFORK | CLONE_PARENT_SETTID | CLONE_CLEAR_SIGHAND,
				.parent_tid = (uint64_t)(uintptr_t)&r->caller->pid,
				.exit_signal = SIGCHLD,
				.stack = (uint64_t)(uintptr_t)stack,
				.stack_size = VM_STACK_BYTES,
			};
			long got;

			r->cleared = true;
			got = gpushare_vm_clone3(&ca, vm_child, r);
			if (got == -ENOSYS || got == -EINVAL || got == -EPERM) {
				__atomic_store_n(&vm_clone3_ok, -1, __ATOMIC_RELAXED);
				r->cleared = false;
			} else if (got < 0) {
				errno = (int)-got;
			} else {
				__atomic_store_n(&vm_clone3_ok, 1, __ATOMIC_RELAXED);
				pid = (pid_t)got;
			}
		}
		if (!r->cleared)
#endif
			pid = clone(vm_child, stack + VM_STACK_BYTES,
				    CLONE_VM | CLONE_VFORK | CLONE_PARENT_SETTID | SIGCHLD, r, &r->caller->pid);
		if (pid < 0)
			spawn_state_set(r->caller, -errno);
		vm_req_free(r);
	}
	return NULL;
}

/* A child forked by gpushare has none of its threads: its own pool starts
 * empty (the lock is held across the fork, so that the child's copy of the
 * queue is consistent). */
static void vm_fork_prepare(void)
{
	pthread_mutex_lock(&vm_lock);
}

static void vm_fork_parent(void)
{
	pthread_mutex_unlock(&vm_lock);
}

static void vm_fork_child(void)
{
	vm_head = vm_tail = NULL;
	vm_idle = 0;
	pthread_mutex_unlock(&vm_lock);
}

static pthread_once_t vm_once = PTHREAD_ONCE_INIT;
static int vm_once_rc;

static void vm_init(void)
{
	vm_once_rc = pthread_atfork(vm_fork_prepare, vm_fork_parent, vm_fork_child);
}

/* Hand the request to an idle spawner, or to a new one (started with every
 * signal blocked, as the mirror then starts). */
static int vm_post(struct vm_req *r)
{
	int rc = 0;

	pthread_once(&vm_once, vm_init);
	if (vm_once_rc)
		return vm_once_rc;
	pthread_mutex_lock(&vm_lock);
	if (vm_idle == 0) {
		sigset_t all, old;
		pthread_attr_t attr;
		pthread_t t;

		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, VM_STACK_BYTES + 64 * 1024);
		rc = pthread_create(&t, &attr, vm_spawner, NULL);
		pthread_attr_destroy(&attr);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (!rc) {
		r->next = NULL;
		if (vm_tail)
			vm_tail->next = r;
		else
			vm_head = r;
		vm_tail = r;
		pthread_cond_signal(&vm_cond);
	}
	pthread_mutex_unlock(&vm_lock);
	return rc;
}

/* Start the mirror; its pid, or -1 with errno set (nothing started). An
 * environment start built for this child (*envp not the caller's ch->envp)
 * is taken over, not copied, and *envp set to NULL. */
static pid_t vm_spawn(struct gpushare_child *ch, const char *path, char ***envp, pid_t parent, int report,
		      const int pipes[3][2], int devnull)
{
	struct vm_req *r = calloc(1, sizeof(*r));
	int st, e;

	if (!r)
		return errno = ENOMEM, -1;
	r->ch = *ch;
	r->caller = ch;
	snprintf(r->path, sizeof(r->path), "%s", path);
	r->argv = vec_copy(ch->argv);
	if (*envp != (char **)ch->envp) {
		r->envp = *envp;
		r->envp_built = true;
		*envp = NULL;
	} else {
		r->envp = vec_copy(*envp);
	}
	r->out_path = ch->out_path ? strdup(ch->out_path) : NULL;
	r->err_path = ch->err_path ? strdup(ch->err_path) : NULL;
	if (!r->argv || !r->envp || (ch->out_path && !r->out_path) || (ch->err_path && !r->err_path)) {
		vm_req_free(r);
		return errno = ENOMEM, -1;
	}
	r->ch.argv = r->argv;
	r->ch.envp = r->envp;
	r->ch.out_path = r->out_path;
	r->ch.err_path = r->err_path;
	memcpy(r->pipes, pipes, sizeof(r->pipes));
	r->devnull = devnull;
	r->report = report;
	r->parent = parent;
	__atomic_store_n(&ch->spawn_state, 0, __ATOMIC_RELAXED);
	if ((e = vm_post(r)) != 0) {
		vm_req_free(r);
		return errno = e, -1;
	}
	while ((st = __atomic_load_n(&ch->spawn_state, __ATOMIC_ACQUIRE)) == 0)
		syscall(SYS_futex, &ch->spawn_state, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	if (st < 0)
		return errno = -st, -1;
	return ch->pid;
}

bool gpushare_signal_ignored(int sig)
{
	struct sigaction sa;

	return sigaction(sig, NULL, &sa) == 0 && !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_IGN;
}

int gpushare_child_start(struct gpushare_child *ch)
{
	int pipes[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } };
	const int *want[3] = { &ch->in, &ch->out, &ch->err };
	char path[GPUSHARE_PATH_MAX] = "";
	char **envp = NULL;
	int report[2] = { -1, -1 }, devnull = -1, exec_errno = 0, rc = GPUSHARE_OK;
	pid_t parent = getpid(), pid;
	ssize_t got;

	ch->pid = ch->pgid = 0;
	ch->pidfd = ch->in_fd = ch->out_fd = ch->err_fd = ch->report_fd = -1;
	ch->exec_errno = ch->open_errno = 0;
	ch->open_path = NULL;
	ch->exited = false;
	ch->wstatus = 0;
	ch->signalled = 0;
	ch->stragglers = 0;
	if (ch->n_keep_fds > sizeof(ch->keep_fds) / sizeof(ch->keep_fds[0]))
		return gpushare_fail(GPUSHARE_E_INVAL, "too many descriptors to keep open in a child");
	if ((ch->flags & GPUSHARE_CHILD_MIRROR) && (ch->fn || (ch->flags & GPUSHARE_CHILD_SAME_PGROUP)))
		return gpushare_fail(GPUSHARE_E_INVAL, "a mirrored child runs a program in a group of its own");
	if ((ch->flags & GPUSHARE_CHILD_LATE_EXEC_ERROR) && !(ch->flags & GPUSHARE_CHILD_MIRROR))
		return gpushare_fail(GPUSHARE_E_INVAL, "only a mirrored child reports its exec late");
	if ((ch->flags & GPUSHARE_CHILD_LAZY_FILES) &&
	    (!(ch->flags & GPUSHARE_CHILD_LATE_EXEC_ERROR) || !ch->out_path || !ch->err_path ||
	     (ch->flags & GPUSHARE_CHILD_STDOUT_TO_STDERR)))
		return gpushare_fail(GPUSHARE_E_INVAL, "only a mirror that reports late makes its two files lazily");
	/* With SIGCHLD ignored the kernel reaps children itself and waitpid
	 * finds none: their exit statuses would be lost. */
	if (gpushare_signal_ignored(SIGCHLD))
		return gpushare_fail(GPUSHARE_E_INVAL, "SIGCHLD is ignored in this process, so a child's exit status "
						       "would be lost; set it to SIG_DFL before starting children");
	if (!ch->fn) {
		if (!ch->argv || !ch->argv[0])
			return gpushare_fail(GPUSHARE_E_INVAL, "no program to start");
		if (ch->path) {
			if ((size_t)snprintf(path, sizeof(path), "%s", ch->path) >= sizeof(path))
				return gpushare_fail(GPUSHARE_E_INVAL, "program path too long");
		} else if ((rc = gpushare_which(ch->argv[0], path, sizeof(path))) != GPUSHARE_OK) {
			return rc;
		}
		if (ch->envp) {
			envp = (char **)ch->envp;
		} else if (!(envp = gpushare_env_build(ch->env_set))) {
			return gpushare_fail(GPUSHARE_E_NOMEM, "cannot build a child's environment");
		}
	}
	for (int i = 0; i < 3; i++) {
		if (*want[i] == GPUSHARE_CHILD_PIPE && pipe2(pipes[i], O_CLOEXEC) != 0) {
			rc = gpushare_fail(GPUSHARE_E_SYS, "pipe: %s", strerror(errno));
			goto out;
		}
		if (*want[i] == GPUSHARE_CHILD_DEVNULL && devnull < 0 &&
		    (devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0) {
			rc = gpushare_fail(GPUSHARE_E_SYS, "cannot open /dev/null: %s", strerror(errno));
			goto out;
		}
	}
	if (pipe2(report, O_CLOEXEC) != 0) {
		rc = gpushare_fail(GPUSHARE_E_SYS, "pipe: %s", strerror(errno));
		goto out;
	}
	if (ch->flags & GPUSHARE_CHILD_MIRROR)
		pid = vm_spawn(ch, path, &envp, parent, report[1], (const int(*)[2])pipes, devnull);
	else
		pid = fork();
	if (pid < 0) {
		rc = gpushare_fail(GPUSHARE_E_SYS, "%s: %s", ch->flags & GPUSHARE_CHILD_MIRROR ? "clone" : "fork",
				   strerror(errno));
		goto out;
	}
	if (pid == 0) {
		close(report[0]);
		child_main(ch, path, envp, parent, report[1], (const int(*)[2])pipes, devnull);
	}
	/* Both sides set the group, so that it exists whichever runs first. */
	if (!(ch->flags & GPUSHARE_CHILD_SAME_PGROUP))
		setpgid(pid, pid);
	ch->pid = pid;
	ch->pgid = ch->flags & GPUSHARE_CHILD_SAME_PGROUP ? getpgrp() : pid;
	close_fd(&report[1]);
	if (ch->flags & GPUSHARE_CHILD_LATE_EXEC_ERROR) {
		/* Read when reaped (gpushare_child_poll), never blocking then. */
		int fl = fcntl(report[0], F_GETFL);

		if (fl >= 0)
			fcntl(report[0], F_SETFL, fl | O_NONBLOCK);
		ch->report_fd = report[0];
		report[0] = -1;
		got = 0;
	} else {
		do
			got = read(report[0], &exec_errno, sizeof(exec_errno));
		while (got < 0 && errno == EINTR);
	}
	if (got == (ssize_t)sizeof(exec_errno)) {
		while (waitpid(pid, &ch->wstatus, 0) < 0 && errno == EINTR)
			;
		ch->exited = true;
		take_report(ch, exec_errno);
		if (ch->open_errno)
			rc = gpushare_fail(GPUSHARE_E_IO, "cannot open '%s': %s", ch->open_path, strerror(ch->open_errno));
		else
			rc = gpushare_fail(GPUSHARE_E_NOT_FOUND, "cannot execute '%s': %s",
					   ch->fn ? "(function)" : path, strerror(ch->exec_errno));
		goto out;
	}
	ch->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (ch->pidfd >= 0)
		fcntl(ch->pidfd, F_SETFD, FD_CLOEXEC);
	ch->in_fd = pipes[0][1];
	pipes[0][1] = -1;
	ch->out_fd = pipes[1][0];
	pipes[1][0] = -1;
	ch->err_fd = pipes[2][0];
	pipes[2][0] = -1;
out:
	for (int i = 0; i < 3; i++) {
		close_fd(&pipes[i][0]);
		close_fd(&pipes[i][1]);
	}
	close_fd(&report[0]);
	close_fd(&report[1]);
	close_fd(&devnull);
	if (envp && envp != (char **)ch->envp)
		gpushare_env_free(envp);
	return rc;
}

void gpushare_child_adopt(struct gpushare_child *ch, pid_t pid, int status_fd)
{
	gpushare_child_init(ch);
	ch->pid = pid;
	ch->pgid = pid;
	ch->pidfd = status_fd;
	ch->flags = GPUSHARE_CHILD_ADOPTED;
}

/* An adopted child has ended once its status came, or its teller is gone. */
static bool adopted_poll(struct gpushare_child *ch)
{
	int st = 0;
	ssize_t n;

	do
		n = recv(ch->pidfd, &st, sizeof(st), MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return false;
	ch->wstatus = n == (ssize_t)sizeof(st) ? st : GPUSHARE_CHILD_STATUS_LOST;
	ch->exited = true;
	close_fd(&ch->pidfd);
	return true;
}

bool gpushare_child_poll(struct gpushare_child *ch)
{
	pid_t w;

	if (ch->exited || ch->pid <= 0)
		return true;
	if (ch->flags & GPUSHARE_CHILD_ADOPTED)
		return adopted_poll(ch);
	do
		w = waitpid(ch->pid, &ch->wstatus, WNOHANG);
	while (w < 0 && errno == EINTR);
	if (w == ch->pid || (w < 0 && errno == ECHILD)) {
		/* Reaped by someone else: its status is lost, and never
		 * taken for a success. */
		if (w < 0)
			ch->wstatus = GPUSHARE_CHILD_STATUS_LOST;
		ch->exited = true;
		close_fd(&ch->pidfd);
		if (ch->report_fd >= 0) {
			/* Every writer is gone: the mirror, and its program at
			 * exec (close-on-exec) or at its failed exec's _exit. */
			int e = 0;

			if (read(ch->report_fd, &e, sizeof(e)) == (ssize_t)sizeof(e))
				take_report(ch, e);
			close_fd(&ch->report_fd);
		}
	}
	return ch->exited;
}

int gpushare_child_wait(struct gpushare_child *ch, uint64_t timeout_ns)
{
	uint64_t start = gpushare_now_ns();

	while (!gpushare_child_poll(ch)) {
		uint64_t now = gpushare_now_ns(), left;

		if (timeout_ns != UINT64_MAX && now - start >= timeout_ns)
			return gpushare_fail(GPUSHARE_E_TIMEOUT, "process %d is still running", (int)ch->pid);
		left = timeout_ns == UINT64_MAX ? UINT64_MAX : timeout_ns - (now - start);
		if (ch->pidfd >= 0) {
			struct pollfd p = { .fd = ch->pidfd, .events = POLLIN };
			uint64_t ms = (left + NS_PER_MS - 1) / NS_PER_MS;

			poll(&p, 1, ms > 1000 ? 1000 : (int)ms);
		} else {
			uint64_t ns = left < POLL_FALLBACK_NS ? left : POLL_FALLBACK_NS;
			gpushare_sleep_ns(ns);
		}
	}
	return GPUSHARE_OK;
}

void gpushare_child_signal(struct gpushare_child *ch, int sig)
{
	if (ch->pid <= 0)
		return;
	if (ch->flags & GPUSHARE_CHILD_SAME_PGROUP) {
		if (!ch->exited)
			kill(ch->pid, sig);
	} else {
		/* The leader may be gone while the group lives on. */
		if (kill(-ch->pgid, sig) != 0 && !ch->exited)
			kill(ch->pid, sig);
	}
	ch->signalled = sig;
}

void gpushare_proc_each(void (*fn)(pid_t pid, pid_t pgrp, void *arg), void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[300], buf[512], *p;
		long pgrp;
		int fd;
		ssize_t r;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (r <= 0)
			continue;
		buf[r] = '\0';
		/* pid (comm) state ppid pgrp ...: count from the last ')' */
		p = strrchr(buf, ')');
		if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
			continue;
		if (sscanf(p + 3, "%*d %ld", &pgrp) == 1)
			fn((pid_t)strtol(e->d_name, NULL, 10), (pid_t)pgrp, arg);
	}
	closedir(d);
}

struct pgroup_count {
	pid_t pgid;
	size_t n;
};

static void count_member(pid_t pid, pid_t pgrp, void *arg)
{
	struct pgroup_count *c = arg;

	(void)pid;
	c->n += pgrp == c->pgid;
}

size_t gpushare_pgroup_count(pid_t pgid)
{
	struct pgroup_count c = { pgid, 0 };

	gpushare_proc_each(count_member, &c);
	return c.n;
}

size_t gpushare_pgroup_kill(pid_t pgid)
{
	size_t n;

	if (pgid <= 1)
		return 0;
	/* The common case, an empty group, costs one system call; only a
	 * group with members is counted through /proc. */
	if (kill(-pgid, 0) != 0 && errno == ESRCH)
		return 0;
	n = gpushare_pgroup_count(pgid);
	if (n == 0)
		return 0;
	kill(-pgid, SIGKILL);
	/* They are not our children (their parent was the leader, now gone):
	 * init reaps them. Wait, bounded, until the kernel has ended them. */
	for (int i = 0; i < 500 && gpushare_pgroup_count(pgid) > 0; i++) {
		gpushare_sleep_ns(2 * NS_PER_MS);
	}
	return n;
}

size_t gpushare_child_reap_group(struct gpushare_child *ch)
{
	size_t n;

	if (ch->pid <= 0 || (ch->flags & GPUSHARE_CHILD_SAME_PGROUP))
		return 0;
	n = gpushare_pgroup_kill(ch->pgid);
	ch->stragglers += n;
	return n;
}

int gpushare_child_stop(struct gpushare_child *ch, uint64_t term_ns)
{
	if (ch->pid <= 0)
		return GPUSHARE_OK;
	if (!gpushare_child_poll(ch)) {
		gpushare_child_signal(ch, SIGTERM);
		if (gpushare_child_wait(ch, term_ns) != GPUSHARE_OK) {
			gpushare_child_signal(ch, SIGKILL);
			if (gpushare_child_wait(ch, KILL_WAIT_NS) != GPUSHARE_OK)
				return gpushare_fail(GPUSHARE_E_TIMEOUT,
						     "process %d did not end within 5 s of SIGKILL (stuck in the kernel?)",
						     (int)ch->pid);
		}
	}
	gpushare_clear_error();
	gpushare_child_reap_group(ch);
	return GPUSHARE_OK;
}

void gpushare_child_release(struct gpushare_child *ch)
{
	close_fd(&ch->pidfd);
	close_fd(&ch->report_fd);
	close_fd(&ch->in_fd);
	close_fd(&ch->out_fd);
	close_fd(&ch->err_fd);
}
