/*
 * The waiting loop (loop.h): items registered, then waited for with one
 * ppoll(2), as redis's ae.c does with its file events and timers; and the
 * keeper skeleton built on it, the one place a keeper is forked, made deaf
 * and told when its owner is gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "grow.h"
#include "loop.h"
#include "sys.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"

enum { ITEM_FREE, ITEM_FD, ITEM_PARENT, ITEM_DEADLINE };

/* Without a pidfd, how often a parent is looked at. */
#define PARENT_POLL_NS (10 * NS_PER_MS)

void gpushare_loop_init(struct gpushare_loop *l)
{
	memset(l, 0, sizeof(*l));
}

void gpushare_loop_clear(struct gpushare_loop *l)
{
	for (size_t i = 0; i < l->n; i++)
		gpushare_loop_remove(l, (int)i);
}

void gpushare_loop_release(struct gpushare_loop *l)
{
	gpushare_loop_clear(l);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

static int add(struct gpushare_loop *l, int kind, gpushare_loop_fn fn, void *arg)
{
	size_t i = 0;

	while (i < l->n && l->items[i].kind != ITEM_FREE)
		i++;
	if (i == l->n) {
		if (gpushare_grow(&l->items, l->n, &l->cap, sizeof(*l->items), 8))
			return GPUSHARE_E_NOMEM;
		l->n++;
	}
	memset(&l->items[i], 0, sizeof(l->items[i]));
	l->items[i].kind = kind;
	l->items[i].fd = -1;
	l->items[i].fn = fn;
	l->items[i].arg = arg;
	return (int)i;
}

int gpushare_loop_add_fd(struct gpushare_loop *l, int fd, gpushare_loop_fn fn, void *arg)
{
	int id = add(l, ITEM_FD, fn, arg);

	if (id >= 0)
		l->items[id].fd = fd;
	return id;
}

int gpushare_loop_add_parent(struct gpushare_loop *l, pid_t parent, gpushare_loop_fn fn, void *arg)
{
	int id = add(l, ITEM_PARENT, fn, arg);
	struct gpushare_loop_item *it;

	if (id < 0)
		return id;
	it = &l->items[id];
	it->pid = parent;
	if (getppid() != parent) {
		it->ready = true;
		return id;
	}
	it->fd = (int)syscall(SYS_pidfd_open, parent, 0);
	if (it->fd >= 0) {
		fcntl(it->fd, F_SETFD, FD_CLOEXEC);
		/* Still our parent: the pidfd is its, not a reused pid's. */
		if (getppid() != parent) {
			close(it->fd);
			it->fd = -1;
			it->ready = true;
		}
	}
	return id;
}

int gpushare_loop_add_deadline(struct gpushare_loop *l, uint64_t at_ns, gpushare_loop_fn fn, void *arg)
{
	int id = add(l, ITEM_DEADLINE, fn, arg);

	if (id >= 0)
		l->items[id].at_ns = at_ns;
	return id;
}

void gpushare_loop_remove(struct gpushare_loop *l, int id)
{
	struct gpushare_loop_item *it;

	if (id < 0 || (size_t)id >= l->n)
		return;
	it = &l->items[id];
	if (it->kind == ITEM_PARENT && it->fd >= 0)
		close(it->fd);
	it->kind = ITEM_FREE;
	it->fd = -1;
	it->ready = false;
}

/* Mark what is ready, waiting for it first when nothing is. false when
 * there is nothing to wait for. */
static int wait_ready(struct gpushare_loop *l)
{
	struct pollfd stack[16], *p = stack;
	size_t np = 0, live = 0;
	uint64_t now = gpushare_now_ns(), wait_ns = UINT64_MAX;
	bool any = false;
	int rc = 1;

	for (size_t i = 0; i < l->n; i++) {
		struct gpushare_loop_item *it = &l->items[i];

		if (it->kind == ITEM_FREE)
			continue;
		live++;
		if (it->kind == ITEM_DEADLINE && it->at_ns <= now)
			it->ready = true;
		if (it->ready)
			any = true;
		if (it->kind == ITEM_DEADLINE && it->at_ns > now && it->at_ns - now < wait_ns)
			wait_ns = it->at_ns - now;
		if (it->kind == ITEM_PARENT && it->fd < 0 && wait_ns > PARENT_POLL_NS)
			wait_ns = PARENT_POLL_NS;
		if (it->fd >= 0)
			np++;
	}
	if (!live)
		return 0;
	if (np > sizeof(stack) / sizeof(stack[0]) && !(p = malloc(np * sizeof(*p))))
		return GPUSHARE_E_NOMEM;
	np = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (l->items[i].kind != ITEM_FREE && l->items[i].fd >= 0)
			p[np++] = (struct pollfd){ .fd = l->items[i].fd, .events = POLLIN };
	}
	if (any)
		wait_ns = 0;
	{
		struct timespec ts = { (time_t)(wait_ns / NS_PER_S), (long)(wait_ns % NS_PER_S) };

		if (ppoll(p, (nfds_t)np, wait_ns == UINT64_MAX ? NULL : &ts, NULL) < 0) {
			if (errno != EINTR)
				rc = gpushare_fail(GPUSHARE_E_SYS, "poll: %s", strerror(errno));
			np = 0;
		}
	}
	now = gpushare_now_ns();
	for (size_t i = 0, k = 0; i < l->n; i++) {
		struct gpushare_loop_item *it = &l->items[i];

		if (it->kind == ITEM_FREE)
			continue;
		if (it->fd >= 0 && k < np && p[k++].revents)
			it->ready = true;
		if (it->kind == ITEM_DEADLINE && it->at_ns <= now)
			it->ready = true;
		if (it->kind == ITEM_PARENT && it->fd < 0 && getppid() != it->pid)
			it->ready = true;
	}
	if (p != stack)
		free(p);
	return rc;
}

/* Call the callback of each item marked ready: the first non-zero value
 * one returns, else 0. */
static int call_ready(struct gpushare_loop *l)
{
	/* By index: a callback may add items (moving the array). */
	for (size_t i = 0; i < l->n; i++) {
		struct gpushare_loop_item *it = &l->items[i];
		gpushare_loop_fn fn = it->fn;
		void *arg = it->arg;
		int rc;

		if (it->kind == ITEM_FREE || !it->ready)
			continue;
		it->ready = false;
		if (it->kind != ITEM_FD)
			gpushare_loop_remove(l, (int)i);
		rc = fn(l, arg);
		if (rc)
			return rc;
	}
	return 0;
}

int gpushare_loop_run(struct gpushare_loop *l)
{
	for (;;) {
		int rc = wait_ready(l);

		if (rc <= 0)
			return rc;
		if ((rc = call_ready(l)) != 0)
			return rc;
	}
}

int gpushare_loop_run_once(struct gpushare_loop *l)
{
	int rc = wait_ready(l);

	return rc <= 0 ? rc : call_ready(l);
}

int gpushare_loop_end(struct gpushare_loop *l, void *arg)
{
	(void)l;
	(void)arg;
	return 1;
}

void gpushare_ignore_stop_signals(void)
{
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
}

/* ---- the keeper ---- */

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Close every descriptor but 0-2 and keep[] (n at most 8). close_range
 * (Linux 5.9) in the gaps; without it the ones open, as /proc/self/fd lists
 * them (a loop up to the descriptor limit could take a second). */
static void close_others(const int *keep, size_t n)
{
	int k[8];
	unsigned from = 3;
	bool ok = true;

	memcpy(k, keep, n * sizeof(*k));
	qsort(k, n, sizeof(*k), cmp_int);
	for (size_t i = 0; i < n && ok; i++) {
		if (k[i] < (int)from)
			continue;
		if ((unsigned)k[i] > from)
			ok = close_range(from, (unsigned)k[i] - 1, 0) == 0;
		from = (unsigned)k[i] + 1;
	}
	if (ok && close_range(from, ~0U, 0) == 0)
		return;
	for (bool more = true; more;) {
		DIR *d = opendir("/proc/self/fd");
		struct dirent *e;
		int fds[256];
		size_t m = 0;

		more = false;
		if (!d)
			return;
		while ((e = readdir(d))) {
			int fd = atoi(e->d_name);
			bool kept = e->d_name[0] == '.' || fd < 3 || fd == dirfd(d);

			for (size_t i = 0; i < n && !kept; i++)
				kept = k[i] == fd;
			if (kept)
				continue;
			if (m == sizeof(fds) / sizeof(fds[0])) {
				more = true;
				break;
			}
			fds[m++] = fd;
		}
		closedir(d);
		for (size_t i = 0; i < m; i++)
			close(fds[i]);
	}
}

struct keeper_start {
	const struct gpushare_keeper *k;
	int link;                  /* the keeper's end, or -1 */
	pid_t owner;
};

struct keeper_wait {
	const struct keeper_start *s;
	int link_id;
};

static int owner_gone(struct gpushare_loop *l, void *arg)
{
	(void)l;
	(void)arg;
	return GPUSHARE_KEEPER_GONE;
}

static int link_ready(struct gpushare_loop *l, void *arg)
{
	struct keeper_wait *w = arg;
	uint64_t wait_ns;
	char c = 0;
	ssize_t n = read(w->s->link, &c, 1);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n == 1 && c == 'D')
		return GPUSHARE_KEEPER_DONE;
	if (n == 1)
		return 0;
	/* The owner closed it by exiting (its descriptors close before it is
	 * a zombie): wait for its end. */
	gpushare_loop_remove(l, w->link_id);
	if (!(w->s->k->flags & GPUSHARE_KEEPER_OWNER))
		return GPUSHARE_KEEPER_GONE;
	wait_ns = w->s->k->owner_wait_ns ? w->s->k->owner_wait_ns : GPUSHARE_KEEPER_OWNER_WAIT_NS;
	/* Past that it outlived its end of the socket: not ours to clean up
	 * (gpushare_loop_end: GPUSHARE_KEEPER_DONE). */
	if (gpushare_loop_add_deadline(l, gpushare_now_ns() + wait_ns, gpushare_loop_end, NULL) < 0)
		return GPUSHARE_KEEPER_DONE;
	return 0;
}

static _Noreturn void keeper_main(void *argp)
{
	const struct keeper_start *s = argp;
	const struct gpushare_keeper *k = s->k;
	struct keeper_wait w = { s, -1 };
	struct gpushare_loop l;
	int keep[8], rc = GPUSHARE_KEEPER_GONE;
	size_t n = 0;

	gpushare_ignore_stop_signals();
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < k->n_keep_fds; i++)
		keep[n++] = k->keep_fds[i];
	if (s->link >= 0)
		keep[n++] = s->link;
	close_others(keep, n);
	if (k->flags & (GPUSHARE_KEEPER_LINK | GPUSHARE_KEEPER_OWNER)) {
		gpushare_loop_init(&l);
		if (s->link >= 0 && (w.link_id = gpushare_loop_add_fd(&l, s->link, link_ready, &w)) < 0)
			_exit(1);
		if ((k->flags & GPUSHARE_KEEPER_OWNER) && gpushare_loop_add_parent(&l, s->owner, owner_gone, NULL) < 0)
			_exit(1);
		if (k->setup && k->setup(&l, k->arg) < 0)
			_exit(1);
		rc = gpushare_loop_run(&l);
		gpushare_loop_release(&l);
		if (rc != GPUSHARE_KEEPER_GONE)
			_exit(rc == GPUSHARE_KEEPER_DONE ? 0 : 1);
	}
	_exit(k->cleanup ? k->cleanup(k->arg) : 0);
}

void gpushare_keeper_init(struct gpushare_keeper *k)
{
	memset(k, 0, sizeof(*k));
	k->fd = -1;
	gpushare_child_init(&k->ch);
}

int gpushare_keeper_start(struct gpushare_keeper *k)
{
	struct keeper_start s = { k, -1, getpid() };
	int fds[2] = { -1, -1 }, rc;

	k->fd = -1;
	if (k->n_keep_fds > sizeof(k->keep_fds) / sizeof(k->keep_fds[0]))
		return gpushare_fail(GPUSHARE_E_INVAL, "too many descriptors for a keeper to keep");
	/* A socket rather than a pipe: 'D' to a keeper already gone is
	 * EPIPE, never SIGPIPE (MSG_NOSIGNAL). */
	if ((k->flags & GPUSHARE_KEEPER_LINK) && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
		return gpushare_fail(GPUSHARE_E_SYS, "socketpair: %s", strerror(errno));
	s.link = fds[0];
	rc = gpushare_child_start_detached(&k->ch, keeper_main, &s);
	if (fds[0] >= 0)
		close(fds[0]);
	if (rc) {
		if (fds[1] >= 0)
			close(fds[1]);
		return rc;
	}
	k->fd = fds[1];
	return GPUSHARE_OK;
}

void gpushare_keeper_finish(struct gpushare_keeper *k, uint64_t wait_ns)
{
	if (k->fd >= 0) {
		if (send(k->fd, "D", 1, MSG_NOSIGNAL) != 1) {
			/* It is gone already: nothing to tell. */
		}
		close(k->fd);
		k->fd = -1;
	}
	if (k->ch.pid > 0 && !k->ch.exited && gpushare_child_wait(&k->ch, wait_ns) != GPUSHARE_OK)
		gpushare_child_stop(&k->ch, NS_PER_S);
	gpushare_child_release(&k->ch);
	k->ch.pid = 0;
}

void gpushare_keeper_release(struct gpushare_keeper *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	gpushare_child_release(&k->ch);
	k->ch.pid = 0;
}
