/*
 * What the unit tests of a bench session share (test_bench_workers.c,
 * test_bench_cmd.c): a run's context for the session of lib/bench/
 * bench_workers.c without gpushare bench around it, its workers the test
 * worker of tests/helpers (command mode) or gpushare-worker's CPU spin
 * workload. No GPU: the region, the relays and the child processes are
 * the real ones.
 */
#ifndef GPUSHARE_TEST_BENCH_SESSION_H
#define GPUSHARE_TEST_BENCH_SESSION_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_cmd.h"
#include "bench_run.h"
#include "gpushare/bench.h"
#include "gpushare/gpushare.h"

#define SESSION_MAX 4

struct session_test {
	struct gpushare_bench_config c;
	struct bench_ctx x;
	struct gpushare_bench_result res;
	struct proc_spec procs[SESSION_MAX];
	char tw[512];                  /* tests/helpers/test_worker */
	char *argv[16];
};

/* tests/helpers/<name> into buf. */
static inline void session_helper(const char *name, char *buf, size_t len)
{
	const char *h = getenv("GPUSHARE_TEST_HELPERS");

	snprintf(buf, len, "%s/%s", h ? h : "tests/helpers", name);
}

/* A short closed-loop session of workers running the test worker with
 * args (NULL-terminated; none: NULL) in command mode: 150 ms window, 20 ms
 * warm-up, 10 s to start, 1 s grace after STOP. */
static inline void session_init(struct session_test *t, int workers, const char *const *args)
{
	size_t n = 0;

	memset(t, 0, sizeof(*t));
	if (gpushare_bench_config_init(&t->c) != GPUSHARE_OK)
		abort();
	session_helper("test_worker", t->tw, sizeof(t->tw));
	t->argv[n++] = t->tw;
	for (size_t i = 0; args && args[i] && n + 1 < sizeof(t->argv) / sizeof(t->argv[0]); i++)
		t->argv[n++] = (char *)args[i];
	t->argv[n] = NULL;
	t->c.workers = workers;
	t->c.command = t->argv;
	t->c.command_mode = GPUSHARE_CMD_REQUEST;
	t->c.duration_ns = 150 * 1000000ULL;
	t->c.warmup_ns = 20 * 1000000ULL;
	t->c.warmup_requests = 1;
	t->c.start_timeout_ns = 10 * 1000000000ULL;
	t->c.grace_ns = 1000000000ULL;
	t->c.wl.batch = 1;
	t->x.c = &t->c;
	t->x.preload_ctl = -1;
	for (int i = 0; i < SESSION_MAX; i++) {
		t->procs[i].first_slot = i;
		t->procs[i].batch = 1;
	}
	if (gpushare_bench_result_init(&t->res, GPUSHARE_STRATEGY_TIMESLICE, (size_t)workers) != GPUSHARE_OK)
		abort();
}

/* Resolve the command (as gpushare_bench_run() does) and run one session
 * of every worker, each a process of its own. */
static inline int session_run_all(struct session_test *t)
{
	int rc = gpushare_cmd_resolve(&t->c, t->x.command, sizeof(t->x.command));

	if (rc)
		return rc;
	return bench_session_run(&t->x, GPUSHARE_STRATEGY_TIMESLICE, 0, 1, t->procs, (size_t)t->c.workers,
				 (uint32_t)t->c.workers, &t->res, 0);
}

/* Whether every worker process of the result was reaped: none is left. */
static inline bool session_all_reaped(const struct session_test *t)
{
	for (size_t i = 0; i < t->res.n_workers; i++) {
		if (t->res.workers[i].pid > 0 && kill(t->res.workers[i].pid, 0) == 0)
			return false;
	}
	return true;
}

static inline void session_release(struct session_test *t)
{
	for (int i = 0; i < SESSION_MAX; i++)
		gpushare_strv_release(&t->procs[i].env);
	gpushare_bench_result_release(&t->res);
}

#endif
