/*
 * Child processes: run a program with input, capture its output, bound the
 * wait, and always reap it. Also small /proc readers used to describe the
 * processes attached to a GPU or an MPS server.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys.h"
#include "gpushare/buf.h"
#include "gpushare/child.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"

#define CAPTURE_MAX (1u << 20)

/* Output of a child, kept up to CAPTURE_MAX bytes; more is read and dropped. */
struct capture {
	int fd;
	struct gpushare_buf b;
};

/* 0: more to come, 1: end of file, -1: error. */
static int capture_read(struct capture *c)
{
	char tmp[4096];
	ssize_t r = read(c->fd, tmp, sizeof(tmp));

	if (r < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (r == 0)
		return 1;
	if (c->b.len < CAPTURE_MAX) {
		size_t take = (size_t)r;

		if (take > CAPTURE_MAX - c->b.len)
			take = CAPTURE_MAX - c->b.len;
		if (gpushare_buf_add(&c->b, tmp, take) != GPUSHARE_OK)
			return -1;
	}
	return 0;
}

static char *capture_take(struct capture *c, size_t *len)
{
	*len = c->b.len;
	return gpushare_buf_take(&c->b);
}

int gpushare_run(char *const argv[], char *const env[], const char *input,
		 int timeout_ms, struct gpushare_run_result *res)
{
	struct gpushare_child ch;
	struct capture co = { .fd = -1 }, ce = { .fd = -1 };
	size_t in_off = 0, in_len = input ? strlen(input) : 0;
	int in_fd = -1, rc;
	uint64_t deadline;

	memset(res, 0, sizeof(*res));
	gpushare_child_init(&ch);
	ch.argv = argv;
	ch.env_set = env;
	ch.in = in_len ? GPUSHARE_CHILD_PIPE : GPUSHARE_CHILD_DEVNULL;
	ch.out = GPUSHARE_CHILD_PIPE;
	ch.err = GPUSHARE_CHILD_PIPE;
	rc = gpushare_child_start(&ch);
	if (rc)
		return rc;
	in_fd = ch.in_fd;
	if (in_fd >= 0)
		fcntl(in_fd, F_SETFL, O_NONBLOCK);
	co.fd = ch.out_fd;
	ce.fd = ch.err_fd;
	deadline = gpushare_now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ULL;
	while (co.fd >= 0 || ce.fd >= 0) {
		struct pollfd pf[3];
		int np = 0, wait_ms;
		uint64_t now = gpushare_now_ns();

		if (timeout_ms > 0 && now >= deadline) {
			res->timed_out = true;
			break;
		}
		wait_ms = timeout_ms > 0 ? (int)((deadline - now) / 1000000ULL) + 1 : -1;
		if (co.fd >= 0)
			pf[np++] = (struct pollfd){ .fd = co.fd, .events = POLLIN };
		if (ce.fd >= 0)
			pf[np++] = (struct pollfd){ .fd = ce.fd, .events = POLLIN };
		if (in_fd >= 0)
			pf[np++] = (struct pollfd){ .fd = in_fd, .events = POLLOUT };
		if (poll(pf, (nfds_t)np, wait_ms) < 0) {
			if (errno == EINTR)
				continue;
			rc = gpushare_fail(GPUSHARE_E_SYS, "poll: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < np; i++) {
			if (!pf[i].revents)
				continue;
			if (pf[i].fd == in_fd) {
				ssize_t w = write(in_fd, input + in_off, in_len - in_off);

				if (w > 0)
					in_off += (size_t)w;
				if ((w < 0 && errno != EAGAIN && errno != EINTR) || in_off == in_len) {
					close(in_fd);
					in_fd = ch.in_fd = -1;
				}
				continue;
			}
			struct capture *c = pf[i].fd == co.fd ? &co : &ce;

			if (capture_read(c) != 0) {
				close(c->fd);
				c->fd = -1;
			}
		}
	}
	ch.out_fd = co.fd;
	ch.err_fd = ce.fd;
	/* Output closed (or timeout, or a failed poll): reap, still bounded by
	 * the deadline; whatever is left of its process group goes too. */
	if (rc == GPUSHARE_OK && !res->timed_out && timeout_ms > 0) {
		uint64_t now = gpushare_now_ns();

		if (gpushare_child_wait(&ch, now < deadline ? deadline - now : 0) != GPUSHARE_OK)
			res->timed_out = true;
	} else if (rc == GPUSHARE_OK && !res->timed_out) {
		gpushare_child_wait(&ch, UINT64_MAX);
	}
	if (!ch.exited) {
		gpushare_child_signal(&ch, SIGKILL);
		gpushare_child_wait(&ch, UINT64_MAX);
	}
	gpushare_clear_error();
	gpushare_child_reap_group(&ch);
	gpushare_child_release(&ch);
	res->status = gpushare_child_exit_code(ch.wstatus);
	res->out = capture_take(&co, &res->out_len);
	res->err = capture_take(&ce, &res->err_len);
	if (!res->out || !res->err) {
		gpushare_run_result_release(res);
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "cannot store child output");
	} else if (rc == GPUSHARE_OK && res->timed_out) {
		rc = gpushare_fail(GPUSHARE_E_TIMEOUT, "'%s' did not finish within %d ms", argv[0], timeout_ms);
	}
	gpushare_buf_release(&co.b);
	gpushare_buf_release(&ce.b);
	return rc;
}

void gpushare_run_result_release(struct gpushare_run_result *res)
{
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
	res->out_len = res->err_len = 0;
}

static size_t read_proc(pid_t pid, const char *what, char *buf, size_t len);

/* Field n (3 = state, 22 = start time) of /proc/<pid>/stat, copied into
 * buf; false when unreadable. The command (field 2) may hold spaces and
 * parentheses, so fields are counted from its last ')'. */
static bool stat_field(pid_t pid, int n, char *buf, size_t len)
{
	char stat[1024], *p;
	size_t k;

	if (!read_proc(pid, "stat", stat, sizeof(stat)) || !(p = strrchr(stat, ')')))
		return false;
	for (int field = 2; field < n && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return false;
	p++;
	k = strcspn(p, " \n");
	if (k == 0 || k >= len)
		return false;
	memcpy(buf, p, k);
	buf[k] = '\0';
	return true;
}

/* A zombie has exited: it only waits for a parent (often an init that is
 * slow to reap, or none at all in a container) and counts as gone. */
bool gpushare_pid_alive(pid_t pid)
{
	char state[8];

	if (pid <= 0)
		return false;
	if (kill(pid, 0) != 0 && errno != EPERM)
		return false;
	if (stat_field(pid, 3, state, sizeof(state)) && (state[0] == 'Z' || state[0] == 'X'))
		return false;
	return true;
}

unsigned long long gpushare_pid_start_time(pid_t pid)
{
	char t[32];

	return stat_field(pid, 22, t, sizeof(t)) ? strtoull(t, NULL, 10) : 0;
}

static size_t read_proc(pid_t pid, const char *what, char *buf, size_t len)
{
	char path[64];
	ssize_t r;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	r = read(fd, buf, len - 1);
	close(fd);
	if (r <= 0)
		return 0;
	buf[r] = '\0';
	return (size_t)r;
}

void gpushare_pid_comm(pid_t pid, char *buf, size_t len)
{
	size_t n = read_proc(pid, "comm", buf, len);

	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
}

void gpushare_pid_cmdline(pid_t pid, char *buf, size_t len)
{
	size_t n = read_proc(pid, "cmdline", buf, len);

	for (size_t i = 0; i + 1 < n; i++) {
		if (buf[i] == '\0')
			buf[i] = ' ';
	}
}

long gpushare_pid_uid(pid_t pid)
{
	char buf[4096];
	char *p;

	if (!read_proc(pid, "status", buf, sizeof(buf)))
		return -1;
	p = strstr(buf, "\nUid:");
	if (!p)
		return -1;
	return strtol(p + 5, NULL, 10);
}

void gpushare_pid_user(pid_t pid, char *buf, size_t len)
{
	long uid = gpushare_pid_uid(pid);
	struct passwd pw, *found = NULL;
	char scratch[1024];

	buf[0] = '\0';
	if (uid < 0)
		return;
	if (getpwuid_r((uid_t)uid, &pw, scratch, sizeof(scratch), &found) == 0 && found)
		snprintf(buf, len, "%s", found->pw_name);
	else
		snprintf(buf, len, "%ld", uid);
}

int gpushare_reserve_fds(size_t need, const char *what)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return gpushare_fail(GPUSHARE_E_SYS, "getrlimit: %s", strerror(errno));
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return GPUSHARE_OK;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "%s need about %zu open files, but this process may open only %llu (ulimit -n; "
				     "hard limit %llu): raise the limit or use fewer",
				     what, need, (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
	rl.rlim_cur = need;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return gpushare_fail(GPUSHARE_E_SYS, "cannot raise the open-file limit to %zu: %s", need, strerror(errno));
	return GPUSHARE_OK;
}
