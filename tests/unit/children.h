/*
 * The child processes a unit test starts: track() each one; kill_started(),
 * as the group's teardown or from it, kills and reaps them, pass or fail;
 * reap() waits for one to end. A file that includes this has clock.h
 * (lib/core) on its include path, as every unit test has.
 */
#ifndef GPUSHARE_UNIT_CHILDREN_H
#define GPUSHARE_UNIT_CHILDREN_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "clock.h"
#include "gpushare/util.h"

static pid_t started[8];
static size_t n_started;

static inline void track(pid_t pid)
{
	if (pid > 0 && n_started < sizeof(started) / sizeof(started[0]))
		started[n_started++] = pid;
}

/* Kill and reap what the tests started, in order (an owner first, so that
 * what it leaves, its keeper, is ours to reap then); only a child of ours,
 * alive or a zombie, since a pid already reaped may be another process's
 * by now. Then every zombie left to us (a subreaper's orphans). */
static inline int kill_started(void **state)
{
	(void)state;
	for (size_t i = 0; i < n_started; i++) {
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)started[i], &si, WEXITED | WNOHANG | WNOWAIT) != 0)
			continue;
		kill(started[i], SIGKILL);
		while (waitpid(started[i], NULL, 0) < 0 && errno == EINTR)
			;
	}
	n_started = 0;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return 0;
}

/* Wait up to ms for pid (ours, or orphaned to us) to end: its wait status,
 * or -1. */
static inline int reap(pid_t pid, int ms)
{
	uint64_t end = gpushare_now_ns() + (uint64_t)ms * NS_PER_MS;
	int st;

	while (gpushare_now_ns() < end) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			return st;
		if (w < 0 && errno != EINTR)
			return -1;
		gpushare_sleep_ns(5 * NS_PER_MS);
	}
	return -1;
}

#endif
