/*
 * --preload (docs/bench.md, "Preloading a Python worker"): the command is
 * started once per gpushare process and runs up to its first call of the
 * gpushare client, where the client becomes a fork server; each run's
 * workers are then forked from it, each a fresh process that has not
 * touched the GPU, instead of starting the command (and its imports) again.
 * The wire protocol is in docs/protocol.md.
 *
 * gpushare_preload_ensure() runs in gpushare itself before a run's relays
 * are forked (they inherit the server's socket); gpushare_preload_fork()
 * runs in a relay in place of starting the command.
 */
#ifndef GPUSHARE_BENCH_PRELOAD_H
#define GPUSHARE_BENCH_PRELOAD_H

#include <stddef.h>
#include <stdint.h>

#include "gpushare/bench.h"
#include "gpushare/child.h"

/* The server's socket for the command at path with c->command as argv,
 * started (and waited for, up to c->start_timeout_ns) when there is none
 * for that command yet; -1 when the command cannot be preloaded (said once
 * through the notice; the runs then start the command as usual). */
int gpushare_preload_ensure(const struct gpushare_bench_config *c, const char *path);

/* In a relay: have the server fork a worker with environment envp and
 * report_fd as its GPUSHARE_REPORT_FD; ch then tracks it (adopted). -1 with
 * the reason in msg. */
int gpushare_preload_fork(int ctl, char *const *envp, int report_fd, struct gpushare_child *ch, char *msg,
			  size_t len);

#endif
