/*
 * The conformance run (gpushare/check.h): the probe alone, then the
 * clients together under their shares, each with the accounting library
 * writing to a directory of its own under a scratch directory, which goes
 * at the end. Each phase lasts o->seconds; its processes are then stopped
 * (SIGTERM, then SIGKILL) and their records read.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "gpushare/check.h"
#include "gpushare/child.h"
#include "gpushare/gpushare.h"
#include "sys.h"

#define STOP_NS (5 * NS_PER_S)

/* The first record of a directory (the probe's first GPU). */
static int first_record(const struct gpushare_account_record *r, void *arg)
{
	*(struct gpushare_account_record *)arg = *r;
	return 1;
}

static int read_one(const char *dir, struct gpushare_account_record *r)
{
	memset(r, 0, sizeof(*r));
	return gpushare_account_read_dir(dir, 0, first_record, r) > 0 ? 0 : -1;
}

/* Start the probe with its own record directory, share and promise. */
static int start_probe(const struct gpushare_check_opts *o, const char *dir, int pct, double promised,
		       struct gpushare_child *ch, char env[4][4200])
{
	char *set[5] = { env[0], env[1], env[2], env[3], NULL };

	snprintf(env[0], sizeof(env[0]), "CUDA_INJECTION64_PATH=%s", o->account_lib);
	snprintf(env[1], sizeof(env[1]), "GPUSHARE_ACCOUNT_DIR=%s", dir);
	if (pct > 0)
		snprintf(env[2], sizeof(env[2]), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", pct);
	else
		snprintf(env[2], sizeof(env[2]), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	snprintf(env[3], sizeof(env[3]), "GPUSHARE_ACCOUNT_PROMISED=%.4f", promised);
	gpushare_child_init(ch);
	ch->argv = o->probe;
	ch->env_set = set;
	ch->out = GPUSHARE_CHILD_DEVNULL;
	return gpushare_child_start(ch);
}

static void sleep_s(double s)
{
	struct timespec t = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - floor(s)) * 1e9) };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

static void stop_all(struct gpushare_child *ch, int n)
{
	for (int i = 0; i < n; i++)
		if (ch[i].pid > 0 && !ch[i].exited)
			gpushare_child_signal(&ch[i], SIGTERM);
	for (int i = 0; i < n; i++) {
		if (ch[i].pid > 0)
			gpushare_child_stop(&ch[i], STOP_NS);
		gpushare_child_release(&ch[i]);
	}
}

int gpushare_check_run(const struct gpushare_check_opts *o, struct gpushare_check_result *r)
{
	char scratch[64] = "/tmp/gpushare-check-XXXXXX", dir[128];
	static char env[GPUSHARE_CHECK_MAX_CLIENTS][4][4200]; /* the children's settings: large, off the stack */
	struct gpushare_child ch[GPUSHARE_CHECK_MAX_CLIENTS];
	struct gpushare_account_record alone, rec;
	int rc = GPUSHARE_OK, started = 0;

	memset(r, 0, sizeof(*r));
	memset(ch, 0, sizeof(ch));
	if (o->n_clients < 1 || o->n_clients > GPUSHARE_CHECK_MAX_CLIENTS || !o->probe || !o->probe[0])
		return gpushare_fail(GPUSHARE_E_INVAL, "check: 1 to %d clients and a probe are needed",
				     GPUSHARE_CHECK_MAX_CLIENTS);
	if (!mkdtemp(scratch))
		return gpushare_fail(GPUSHARE_E_IO, "check: cannot make a scratch directory: %s", strerror(errno));

	/* the probe alone, on the whole GPU */
	snprintf(dir, sizeof(dir), "%s/alone", scratch);
	rc = start_probe(o, dir, 0, 1.0, &ch[0], env[0]);
	if (rc == GPUSHARE_OK) {
		started = 1;
		sleep_s(o->seconds);
		stop_all(ch, started);
		started = 0;
		if (read_one(dir, &alone) < 0 || (r->alone_kernel_ns = gpushare_account_mean_kernel_ns(&alone)) <= 0)
			rc = gpushare_fail(GPUSHARE_E_INVAL,
					   "check: the probe alone showed no kernel (no CUPTI, no GPU, or a probe that "
					   "launches none); is %s loadable?", o->account_lib);
	}

	/* the clients together, under their shares */
	for (int i = 0; rc == GPUSHARE_OK && i < o->n_clients; i++) {
		int pct = o->limits ? (int)lround(o->shares[i] * 100) : 0;
		snprintf(dir, sizeof(dir), "%s/client%d", scratch, i);
		rc = start_probe(o, dir, pct, o->shares[i], &ch[i], env[i]);
		if (rc == GPUSHARE_OK)
			started = i + 1;
	}
	if (rc == GPUSHARE_OK && started == o->n_clients)
		sleep_s(o->seconds);
	for (int i = 0; i < started; i++)
		r->c[i].pid = ch[i].pid;
	stop_all(ch, started);
	for (int i = 0; rc == GPUSHARE_OK && i < o->n_clients; i++) {
		struct gpushare_check_client *c = &r->c[i];
		snprintf(dir, sizeof(dir), "%s/client%d", scratch, i);
		if (read_one(dir, &rec) < 0)
			memset(&rec, 0, sizeof(rec));
		c->kernels = rec.kernels;
		if (gpushare_account_verdict(&alone, &rec, o->shares[i], o->tolerance, &c->v) != 1)
			r->failed++;
		r->n_clients = i + 1;
	}
	gpushare_remove_tree(scratch);
	return rc;
}
