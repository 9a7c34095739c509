/*
 * The waiting loop and the keeper built on it (lib/sys/loop.c).
 *
 * A loop holds what a process waits for, each with a callback:
 *  - a descriptor that becomes readable (or hung up, or in error): a pipe,
 *    a socket, a child's pidfd (readable once the child has ended);
 *  - the end of this process's parent (a keeper waiting for its owner):
 *    seen on its pidfd, or, on a kernel without pidfd_open (before 5.3), by
 *    the parent changing, looked at every 10 ms;
 *  - a deadline on the monotonic clock (gpushare_now_ns()).
 * gpushare_loop_run() waits for them with one poll(2) and calls the
 * callback of each that is ready. A callback returns 0 to go on waiting,
 * anything else to end the run with that value. Parents and deadlines are
 * ready once and are removed before their callback runs (which may add
 * them again); descriptors stay until removed. Callbacks may add and remove
 * items. The loop closes no descriptor of the caller's.
 */
#ifndef GPUSHARE_LOOP_H
#define GPUSHARE_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpushare/child.h"

struct gpushare_loop;

/* 0: go on waiting; anything else ends gpushare_loop_run() with it. */
typedef int (*gpushare_loop_fn)(struct gpushare_loop *l, void *arg);

struct gpushare_loop_item {
	int kind;                  /* internal: free, fd, parent, deadline */
	int fd;                    /* the descriptor; a parent's pidfd (-1: polled) */
	pid_t pid;                 /* the parent */
	uint64_t at_ns;            /* the deadline */
	bool ready;                /* internal: ready in this round */
	gpushare_loop_fn fn;
	void *arg;
};

struct gpushare_loop {
	struct gpushare_loop_item *items;
	size_t n, cap;
};

void gpushare_loop_init(struct gpushare_loop *l);
/* Close the pidfds the loop opened and free its items. */
void gpushare_loop_release(struct gpushare_loop *l);
/* Remove every item, keeping the memory: for a loop that registers what
 * it waits for afresh each round. */
void gpushare_loop_clear(struct gpushare_loop *l);

/* Each returns the item's id (>= 0, for gpushare_loop_remove()) or a
 * negative error code (GPUSHARE_E_NOMEM). */
int gpushare_loop_add_fd(struct gpushare_loop *l, int fd, gpushare_loop_fn fn, void *arg);
/* parent: the pid this process's parent had when it forked us. Ready at
 * once when the parent is already another. */
int gpushare_loop_add_parent(struct gpushare_loop *l, pid_t parent, gpushare_loop_fn fn, void *arg);
int gpushare_loop_add_deadline(struct gpushare_loop *l, uint64_t at_ns, gpushare_loop_fn fn, void *arg);
/* Remove an item (an id already removed, or -1, is ignored). */
void gpushare_loop_remove(struct gpushare_loop *l, int id);

/* Wait and call callbacks until one returns non-zero: that value. 0 when
 * nothing is left to wait for; a negative error when poll(2) fails. */
int gpushare_loop_run(struct gpushare_loop *l);

/* One round (redis's aeProcessEvents beside aeMain): wait until something
 * is ready, or a signal is caught, and call the callbacks of what is ready:
 * the first non-zero value one returns, else 0 (a signal, or nothing left to
 * wait for); a negative error when poll(2) fails. For a caller with its own
 * loop around it that must see a signal's flag at once. */
int gpushare_loop_run_once(struct gpushare_loop *l);

/* A callback that ends the run with 1: for a deadline that bounds a wait. */
int gpushare_loop_end(struct gpushare_loop *l, void *arg);

/* Ignore SIGINT, SIGTERM, SIGHUP and SIGQUIT: for a process that must
 * finish what it does whatever a terminal or a launcher sends to the job
 * (a keeper, a mirror); only SIGKILL ends it then. */
void gpushare_ignore_stop_signals(void);

/* ---- the keeper ----
 *
 * A keeper is a process of its own that outlives its owner (the process
 * that starts it, SIGKILL included) for the moment it takes to clean up
 * after it. gpushare_keeper_start() forks it (gpushare_child_start_detached:
 * a process group of its own, standard streams on /dev/null), and there it
 * ignores the four signals above and SIGPIPE, closes every inherited
 * descriptor but its own and keep_fds, and waits on a loop for:
 *  - with GPUSHARE_KEEPER_LINK, its end of a socket pair whose other end,
 *    fd, only the owner holds (close-on-exec): 'D' there
 *    (gpushare_keeper_finish()) means the owner ended as it should, and
 *    the keeper exits 0 at once. The socket's end without 'D' means the
 *    owner is exiting: the keeper then waits for the owner's end (up to
 *    owner_wait_ns; it leaves without cleaning up when the owner outlives
 *    that), or, without GPUSHARE_KEEPER_OWNER, cleans up.
 *  - with GPUSHARE_KEEPER_OWNER, the owner's end (its pidfd; the keeper's
 *    parent is the owner).
 *  - whatever setup() registered on the loop; its callbacks return
 *    GPUSHARE_KEEPER_DONE or GPUSHARE_KEEPER_GONE to end the wait.
 * Once the owner is gone it calls cleanup() and exits with what it
 * returns. Without LINK or OWNER it calls cleanup() at once: a process
 * that finishes on its own what its owner began.
 */

#define GPUSHARE_KEEPER_OWNER_WAIT_NS (10ULL * 1000000000ULL)

enum gpushare_keeper_flags {
	GPUSHARE_KEEPER_LINK = 1u << 0,
	GPUSHARE_KEEPER_OWNER = 1u << 1,
};

/* What the keeper's callbacks return to end its wait. */
enum {
	GPUSHARE_KEEPER_DONE = 1,  /* the owner ended as it should: exit 0, no cleanup
				    * (gpushare_loop_end() returns it) */
	GPUSHARE_KEEPER_GONE = 2,  /* the owner is gone: clean up */
};

struct gpushare_keeper {
	/* ---- filled by the caller (after gpushare_keeper_init()) ---- */
	unsigned flags;            /* enum gpushare_keeper_flags */
	/* In the keeper, before it waits (may be NULL): register more on the
	 * loop. A negative return: the keeper exits 1 at once. */
	int (*setup)(struct gpushare_loop *l, void *arg);
	/* In the keeper, once the owner is gone: the keeper's exit status. */
	int (*cleanup)(void *arg);
	void *arg;                 /* the keeper's copy of it, as at start */
	int keep_fds[4];           /* kept open in the keeper */
	size_t n_keep_fds;
	/* LINK and OWNER: how long the owner may outlive its end of the
	 * socket; 0: GPUSHARE_KEEPER_OWNER_WAIT_NS. */
	uint64_t owner_wait_ns;

	/* ---- filled by gpushare_keeper_start() ---- */
	struct gpushare_child ch;  /* the keeper process */
	int fd;                    /* LINK: the owner's end; -1 none */
};

void gpushare_keeper_init(struct gpushare_keeper *k);
/* Start the keeper. An error when it cannot (nothing is left open then). */
int gpushare_keeper_start(struct gpushare_keeper *k);
/* The owner ends as it should: 'D' to the keeper (LINK), then wait up to
 * wait_ns for it to exit (stopped when it has not) and release it. */
void gpushare_keeper_finish(struct gpushare_keeper *k, uint64_t wait_ns);
/* Let the keeper go on alone: close the owner's end (LINK: the keeper
 * takes it as the owner's end) and release the child without waiting. */
void gpushare_keeper_release(struct gpushare_keeper *k);

#endif
