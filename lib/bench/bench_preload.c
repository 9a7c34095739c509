/*
 * --preload: one fork server per command (lib/bench/bench_preload.h; the
 * wire protocol is in docs/protocol.md, "Preloading").
 *
 * gpushare starts the command once with GPUSHARE_PRELOAD_FD, a
 * SOCK_SEQPACKET socket. The gpushare client, at its first call, checks
 * that the GPU is untouched and says "ready" (or "refuse REASON"), then
 * serves "fork" requests: each carries the worker's report socket, a
 * socket for its status and a memfd with the worker's whole environment.
 * The server forks, the child takes that environment and returns into the
 * program as a worker; the server answers the pid, then the wait status
 * when the worker ends. The server dies with gpushare (PR_SET_PDEATHSIG)
 * and its workers with it; a worker leads a process group of its own, so a
 * relay stops it as it would a command it started.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "loop.h"
#include "bench_preload.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/internal/bench.h"

#define DEFAULT_START_NS (120 * NS_PER_S)
#define STOP_WAIT_NS (2 * NS_PER_S)
#define FORK_WAIT_MS 30000                /* a fork server answers at once; 30 s is a hang */
#define WAIT_STEP_MS 100

static struct {
	struct gpushare_child ch;
	int ctl;                           /* -1 none */
	char *key;                         /* the command: path and argv, NUL-separated */
	size_t klen;
	bool refused;                      /* the command in key cannot be preloaded */
} pl = { .ctl = -1 };

static gpushare_bench_notice_fn notice_fn;
static void *notice_arg;

void gpushare_bench_set_preload_notice(gpushare_bench_notice_fn fn, void *arg)
{
	notice_fn = fn;
	notice_arg = arg;
}

static void notice(bool warning, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void notice(bool warning, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	if (!notice_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	notice_fn(notice_arg, warning, text);
}

static int make_key(const struct gpushare_bench_config *c, const char *path, char **key, size_t *klen)
{
	size_t n = strlen(path) + 1, at;

	for (size_t i = 0; c->command[i]; i++)
		n += strlen(c->command[i]) + 1;
	*key = malloc(n);
	if (!*key)
		return -1;
	at = (size_t)(stpcpy(*key, path) - *key) + 1;
	for (size_t i = 0; c->command[i]; i++)
		at += (size_t)(stpcpy(*key + at, c->command[i]) - (*key + at)) + 1;
	*klen = n;
	return 0;
}

static void stop_server(void)
{
	if (pl.ctl < 0)
		return;
	/* End of file on its socket: the server stops its workers and exits. */
	close(pl.ctl);
	pl.ctl = -1;
	if (gpushare_child_wait(&pl.ch, STOP_WAIT_NS) != GPUSHARE_OK)
		gpushare_child_stop(&pl.ch, STOP_WAIT_NS);
	else
		gpushare_child_reap_group(&pl.ch);
	gpushare_child_release(&pl.ch);
	gpushare_clear_error();
}

void gpushare_bench_preload_release(void)
{
	stop_server();
	free(pl.key);
	pl.key = NULL;
	pl.klen = 0;
	pl.refused = false;
}

void gpushare_bench_preload_drop(void)
{
	char buf[16];
	struct pollfd p;

	if (pl.ctl < 0 || gpushare_child_poll(&pl.ch))
		return;
	/* "drop": the server lets its parked workers go and answers once they
	 * have ended (bounded there; a hang here is bounded too). */
	if (send(pl.ctl, "drop", 4, MSG_NOSIGNAL) != 4)
		return;
	p = (struct pollfd){ .fd = pl.ctl, .events = POLLIN };
	while (poll(&p, 1, FORK_WAIT_MS) < 0 && errno == EINTR) {
	}
	if (p.revents && recv(pl.ctl, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
		stop_server();   /* gone: started again by the next run */
}

enum { AWAIT_READY = 1, AWAIT_FAILED };

struct await {
	int sock;
	uint64_t bound_ns;
	char *why;
	size_t len;
};

/* What its socket says, whether it ended, whether we were interrupted:
 * AWAIT_READY, AWAIT_FAILED (why says why), or 0 to wait on. */
static int await_look(struct await *w)
{
	char how[96], buf[320];
	ssize_t m = recv(w->sock, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	if (m > 0) {
		buf[m] = '\0';
		if (!strcmp(buf, "ready"))
			return AWAIT_READY;
		if (!strncmp(buf, "refuse ", 7))
			snprintf(w->why, w->len, "the command cannot be preloaded: %s", buf + 7);
		else
			snprintf(w->why, w->len, "the command said %.40s instead of ready (does it use the gpushare "
				 "Python client?)", buf);
		return AWAIT_FAILED;
	}
	if (m == 0 || gpushare_child_poll(&pl.ch)) {
		gpushare_child_wait(&pl.ch, STOP_WAIT_NS);
		if (pl.ch.exited) {
			gpushare_child_describe(pl.ch.wstatus, how, sizeof(how));
			snprintf(w->why, w->len, "the command %s before its first gpushare call", how);
		} else {
			snprintf(w->why, w->len, "the command closed its preload socket before its first gpushare call");
		}
		return AWAIT_FAILED;
	}
	if (gpushare_bench_interrupted()) {
		snprintf(w->why, w->len, "interrupted while the command was loading");
		return AWAIT_FAILED;
	}
	return 0;
}

static int on_await(struct gpushare_loop *l, void *arg)
{
	(void)l;
	return await_look(arg);
}

/* Every WAIT_STEP_MS: the interrupt flag (and, without a pidfd, the end). */
static int on_await_tick(struct gpushare_loop *l, void *arg)
{
	if (gpushare_loop_add_deadline(l, gpushare_now_ns() + WAIT_STEP_MS * NS_PER_MS, on_await_tick, arg) < 0)
		return AWAIT_FAILED;
	return await_look(arg);
}

static int on_await_bound(struct gpushare_loop *l, void *arg)
{
	struct await *w = arg;
	int rc = await_look(w);

	(void)l;
	if (rc)
		return rc;
	snprintf(w->why, w->len, "the command did not reach its first gpushare call within %.0f s (--start-timeout)",
		 (double)w->bound_ns / 1e9);
	return AWAIT_FAILED;
}

/* Wait for the server's first word, up to bound_ns: its socket and its
 * pidfd on a loop, with a deadline as the bound. 0 ready; -1 with why. */
static int await_ready(int sock, uint64_t bound_ns, char *why, size_t len)
{
	struct await w = { sock, bound_ns, why, len };
	struct gpushare_loop l;
	uint64_t now = gpushare_now_ns();
	int rc;

	gpushare_loop_init(&l);
	if (gpushare_loop_add_fd(&l, sock, on_await, &w) < 0 ||
	    (pl.ch.pidfd >= 0 && gpushare_loop_add_fd(&l, pl.ch.pidfd, on_await, &w) < 0) ||
	    gpushare_loop_add_deadline(&l, now + WAIT_STEP_MS * NS_PER_MS, on_await_tick, &w) < 0 ||
	    gpushare_loop_add_deadline(&l, now + bound_ns, on_await_bound, &w) < 0) {
		snprintf(why, len, "out of memory");
		rc = AWAIT_FAILED;
	} else {
		while ((rc = gpushare_loop_run(&l)) < 0)
			gpushare_sleep_ns(WAIT_STEP_MS * NS_PER_MS);
	}
	gpushare_loop_release(&l);
	return rc == AWAIT_READY ? 0 : -1;
}

static int start_server(const struct gpushare_bench_config *c, const char *path)
{
	static char *const unset[] = { "GPUSHARE_REPORT_FD", "GPUSHARE_WORKER", "GPUSHARE_WORKERS",
				       "GPUSHARE_BATCH", "GPUSHARE_MODE", "GPUSHARE_PROTOCOL",
				       "GPUSHARE_WARMUP_REQUESTS", "GPUSHARE_JOB" };
	char fdenv[48], why[400];
	char *env[sizeof(unset) / sizeof(unset[0]) + 2];
	uint64_t t0 = gpushare_now_ns();
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		notice(true, "--preload: socketpair: %s; its runs start the command as usual", strerror(errno));
		return -1;
	}
	snprintf(fdenv, sizeof(fdenv), "GPUSHARE_PRELOAD_FD=%d", sv[1]);
	env[0] = fdenv;
	for (size_t i = 0; i < sizeof(unset) / sizeof(unset[0]); i++)
		env[i + 1] = unset[i];
	env[sizeof(env) / sizeof(env[0]) - 1] = NULL;
	gpushare_child_init(&pl.ch);
	pl.ch.path = path;
	pl.ch.argv = c->command;
	pl.ch.env_set = env;
	pl.ch.in = GPUSHARE_CHILD_DEVNULL;
	pl.ch.flags = GPUSHARE_CHILD_IGNORE_SIGINT | GPUSHARE_CHILD_STDOUT_TO_STDERR;
	pl.ch.keep_fds[pl.ch.n_keep_fds++] = sv[1];
	notice(false, "--preload: starting %s once, up to its first gpushare call", c->command[0]);
	if (gpushare_child_start(&pl.ch) != GPUSHARE_OK) {
		notice(true, "--preload: %s; its runs start the command as usual", gpushare_errdetail());
		close(sv[0]);
		close(sv[1]);
		gpushare_child_release(&pl.ch);
		return -1;
	}
	close(sv[1]);
	/* What start read lives in this frame and in the caller's config. */
	pl.ch.path = NULL;
	pl.ch.argv = NULL;
	pl.ch.env_set = NULL;
	if (await_ready(sv[0], c->start_timeout_ns ? c->start_timeout_ns : DEFAULT_START_NS, why, sizeof(why))) {
		close(sv[0]);
		gpushare_child_stop(&pl.ch, STOP_WAIT_NS);
		gpushare_child_release(&pl.ch);
		gpushare_clear_error();
		notice(true, "--preload: %s; its runs start the command as usual", why);
		return -1;
	}
	pl.ctl = sv[0];
	notice(false, "--preload: %s (pid %d) loaded in %.1f s; each run forks its workers from it", c->command[0],
	       (int)pl.ch.pid, (double)(gpushare_now_ns() - t0) / 1e9);
	return 0;
}

int gpushare_preload_ensure(const struct gpushare_bench_config *c, const char *path)
{
	char *key, how[96];
	size_t klen;

	if (make_key(c, path, &key, &klen))
		return -1;
	if (pl.key && pl.klen == klen && !memcmp(pl.key, key, klen)) {
		free(key);
		if (pl.refused)
			return -1;
		if (pl.ctl >= 0 && !gpushare_child_poll(&pl.ch))
			return pl.ctl;
		if (pl.ctl >= 0) {
			gpushare_child_describe(pl.ch.wstatus, how, sizeof(how));
			notice(true, "--preload: the preloaded command (pid %d) %s; starting it again", (int)pl.ch.pid, how);
		}
		stop_server();
	} else {
		gpushare_bench_preload_release();
		pl.key = key;
		pl.klen = klen;
	}
	if (start_server(c, path)) {
		pl.refused = true;
		return -1;
	}
	return pl.ctl;
}

/* The environment as NAME=VALUE strings, each ended by its NUL. */
static int write_env(int fd, char *const *envp)
{
	for (size_t i = 0; envp[i]; i++) {
		if (gpushare_write_all(fd, envp[i], strlen(envp[i]) + 1) != 0)
			return -1;
	}
	return 0;
}

static int send_fork(int ctl, int report_fd, int status_fd, int env_fd)
{
	int fds[3] = { report_fd, status_fd, env_fd };
	char word[] = "fork";
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(fds))];
	} u;
	struct iovec iov = { .iov_base = word, .iov_len = 4 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *h;
	ssize_t n;

	memset(&u, 0, sizeof(u));
	h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(h), fds, sizeof(fds));
	do
		n = sendmsg(ctl, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == 4 ? 0 : -1;
}

int gpushare_preload_fork(int ctl, char *const *envp, int report_fd, struct gpushare_child *ch, char *msg,
			  size_t len)
{
	int st[2] = { -1, -1 }, env_fd, pid = 0;
	struct pollfd p;
	ssize_t n = -1;

	env_fd = memfd_create("gpushare-env", MFD_CLOEXEC);
	if (env_fd < 0 || write_env(env_fd, envp) != 0) {
		snprintf(msg, len, "--preload: the worker's environment: %s", strerror(errno));
		goto fail;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, st) != 0) {
		snprintf(msg, len, "--preload: socketpair: %s", strerror(errno));
		goto fail;
	}
	if (send_fork(ctl, report_fd, st[1], env_fd) != 0) {
		snprintf(msg, len, "the preloaded command is gone (%s)", strerror(errno));
		goto fail;
	}
	close(st[1]);
	st[1] = -1;
	p = (struct pollfd){ .fd = st[0], .events = POLLIN };
	while (poll(&p, 1, FORK_WAIT_MS) < 0 && errno == EINTR) {
	}
	if (p.revents)
		n = recv(st[0], &pid, sizeof(pid), MSG_DONTWAIT);
	if (n != (ssize_t)sizeof(pid) || pid <= 0) {
		if (n == (ssize_t)sizeof(pid))
			snprintf(msg, len, "the preloaded command could not fork: %s", strerror(-pid));
		else
			snprintf(msg, len, "the preloaded command did not fork a worker within %d s",
				 FORK_WAIT_MS / 1000);
		goto fail;
	}
	close(env_fd);
	gpushare_child_adopt(ch, (pid_t)pid, st[0]);
	return 0;
fail:
	if (env_fd >= 0)
		close(env_fd);
	if (st[0] >= 0)
		close(st[0]);
	if (st[1] >= 0)
		close(st[1]);
	return -1;
}
