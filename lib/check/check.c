/*
 * The conformance run (gpushare/check.h): the probe alone, then the
 * clients together under their shares, each with the accounting library
 * writing to a directory of its own under a scratch directory, which goes
 * at the end. Each phase runs o->warmup seconds, when the records are read
 * as a baseline (the processes start one after another, and CUDA's start
 * takes its time), then o->seconds, when they are read again; the figures
 * are the difference. The phase's processes are then stopped (SIGTERM, then
 * SIGKILL).
 *
 * The probe's contract (docs/accounting.md): each of its kernels does a
 * fixed amount of work whatever SM count its context reports (under an MPS
 * limit the context reports the reduced count). Alone, it writes the SM
 * count it sees, the whole GPU's, to $GPUSHARE_CHECK_SMS_FILE; every client
 * is then given it as GPUSHARE_CHECK_SMS to size its grid by.
 *
 * Under limits each client is judged against its promise; without them
 * against its promise's part of what the clients attained together, that
 * total against the promises' sum (judge_fair).
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
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "sys.h"

#define STOP_NS (5 * NS_PER_S)
#define N_ENV 8

/* The sampling the probes run under unless the caller's environment sets
 * it: long windows (the probe launches a few hundred kernels a second, so
 * tracing them costs nothing that matters), for more kernels per figure. */
#define CHECK_PERIOD_MS "1000"
#define CHECK_DUTY "0.9"

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

/* The part of a record after its baseline: what the sampling windows saw
 * between the two reads. */
static void since(struct gpushare_account_record *r, const struct gpushare_account_record *base)
{
	if (base->pid != r->pid || base->window_ns > r->window_ns || base->kernels > r->kernels)
		return; /* no baseline (no window had closed), or another process's */
	r->window_ns -= base->window_ns;
	r->busy_ns -= base->busy_ns < r->busy_ns ? base->busy_ns : r->busy_ns;
	r->kernel_ns -= base->kernel_ns < r->kernel_ns ? base->kernel_ns : r->kernel_ns;
	r->kernels -= base->kernels;
}

/* Start the probe with its own record directory, share, promise and the
 * SM count (sms > 0), or, alone (sms 0), the file to write it to. */
static int start_probe(const struct gpushare_check_opts *o, const char *dir, int pct, double promised, int sms,
		       const char *sms_file, struct gpushare_child *ch, char env[N_ENV][4200])
{
	char *set[N_ENV + 1];
	int n = 0;

	snprintf(env[n++], sizeof(env[0]), "CUDA_INJECTION64_PATH=%s", o->account_lib);
	snprintf(env[n++], sizeof(env[0]), "GPUSHARE_ACCOUNT_DIR=%s", dir);
	if (pct > 0)
		snprintf(env[n++], sizeof(env[0]), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", pct);
	else
		snprintf(env[n++], sizeof(env[0]), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	snprintf(env[n++], sizeof(env[0]), "GPUSHARE_ACCOUNT_PROMISED=%.4f", promised);
	if (sms > 0)
		snprintf(env[n++], sizeof(env[0]), "GPUSHARE_CHECK_SMS=%d", sms);
	else if (sms_file)
		snprintf(env[n++], sizeof(env[0]), "GPUSHARE_CHECK_SMS_FILE=%s", sms_file);
	if (!getenv("GPUSHARE_ACCOUNT_PERIOD_MS"))
		snprintf(env[n++], sizeof(env[0]), "GPUSHARE_ACCOUNT_PERIOD_MS=%s", CHECK_PERIOD_MS);
	if (!getenv("GPUSHARE_ACCOUNT_DUTY"))
		snprintf(env[n++], sizeof(env[0]), "GPUSHARE_ACCOUNT_DUTY=%s", CHECK_DUTY);
	for (int i = 0; i < n; i++)
		set[i] = env[i];
	set[n] = NULL;
	gpushare_child_init(ch);
	ch->argv = o->probe;
	ch->env_set = set;
	ch->out = GPUSHARE_CHILD_DEVNULL;
	return gpushare_child_start(ch);
}

/* The SM count the probe alone wrote: a positive number, else 0. */
static int read_sms(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%ld", &v) != 1 || v < 1 || v > 1000000)
		v = 0;
	fclose(f);
	return (int)v;
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

/* Other compute processes on the GPUs before the alone phase (MPS servers
 * are not: check's clients may use one). -1 when NVML cannot tell. */
static int count_others(pid_t *first)
{
	struct gpushare_system_info sys;
	int n = 0;

	*first = 0;
	if (gpushare_system_query_nvml(&sys) != GPUSHARE_OK)
		return -1;
	for (size_t i = 0; i < sys.n_gpus; i++)
		for (size_t k = 0; k < sys.gpus[i].n_procs; k++) {
			const struct gpushare_proc_info *p = &sys.gpus[i].procs[k];
			if (p->kind == GPUSHARE_PROC_MPS_SERVER)
				continue;
			if (!n++)
				*first = p->pid;
		}
	gpushare_system_release(&sys);
	return n;
}

/* Without limits: each client against its promise's part of what the
 * clients attained together, and that total against the promises' sum
 * (struct gpushare_check_result). Every client must have a figure. */
static void judge_fair(const struct gpushare_check_opts *o, struct gpushare_check_result *r)
{
	double promised = 0.0, together = 0.0;

	for (int i = 0; i < r->n_clients; i++) {
		if (r->c[i].v.attained < 0)
			return; /* unknown stays unknown */
		promised += r->c[i].v.promised;
		together += r->c[i].v.attained;
	}
	if (r->n_clients < 2 || promised <= 0)
		return; /* one client alone: its promise is the whole GPU */
	r->fair = true;
	r->together = together;
	r->cost = promised - together;
	r->failed = 0;
	for (int i = 0; i < r->n_clients; i++) {
		struct gpushare_account_verdict *v = &r->c[i].v;
		v->expected = v->promised * together / promised;
		v->error = v->attained - v->expected;
		v->pass = fabs(v->error) <= o->tolerance + 1e-9;
		r->failed += v->pass != 1;
	}
	/* and together more than promised, beyond the tolerance: the probe alone
	 * ran slower than the clients together, so the GPU was not idle then */
	r->cost_failed = r->cost > o->max_cost + 1e-9 || r->cost < -o->tolerance - 1e-9;
	r->failed += r->cost_failed;
}

int gpushare_check_run(const struct gpushare_check_opts *o, struct gpushare_check_result *r)
{
	char scratch[64] = "/tmp/gpushare-check-XXXXXX", dir[128], sms_file[128];
	static char env[GPUSHARE_CHECK_MAX_CLIENTS][N_ENV][4200]; /* the children's settings: large, off the stack */
	const char *sms_env = getenv("GPUSHARE_CHECK_SMS");
	struct gpushare_child ch[GPUSHARE_CHECK_MAX_CLIENTS];
	struct gpushare_account_record alone, rec, base[GPUSHARE_CHECK_MAX_CLIENTS];
	int rc = GPUSHARE_OK, started = 0;

	memset(r, 0, sizeof(*r));
	memset(ch, 0, sizeof(ch));
	if (o->n_clients < 1 || o->n_clients > GPUSHARE_CHECK_MAX_CLIENTS || !o->probe || !o->probe[0])
		return gpushare_fail(GPUSHARE_E_INVAL, "check: 1 to %d clients and a probe are needed",
				     GPUSHARE_CHECK_MAX_CLIENTS);
	if (!mkdtemp(scratch))
		return gpushare_fail(GPUSHARE_E_IO, "check: cannot make a scratch directory: %s", strerror(errno));

	/* the probe alone, on the whole GPU: alone only if nothing else runs */
	r->others = count_others(&r->other_pid);
	snprintf(dir, sizeof(dir), "%s/alone", scratch);
	snprintf(sms_file, sizeof(sms_file), "%s/sms", scratch);
	rc = start_probe(o, dir, 0, 1.0, 0, sms_env && *sms_env ? NULL : sms_file, &ch[0], env[0]);
	if (rc == GPUSHARE_OK) {
		started = 1;
		sleep_s(o->warmup);
		read_one(dir, &base[0]);
		sleep_s(o->seconds);
		stop_all(ch, started);
		started = 0;
		if (read_one(dir, &alone) == 0)
			since(&alone, &base[0]);
		if (alone.kernels == 0 || (r->alone_kernel_ns = gpushare_account_mean_kernel_ns(&alone)) <= 0)
			rc = gpushare_fail(GPUSHARE_E_INVAL,
					   "check: the probe alone showed no kernel (no CUPTI, no GPU, or a probe that "
					   "launches none); is %s loadable?", o->account_lib);
		r->alone_rate = gpushare_account_work_rate(&alone);
		/* the whole GPU's SM count: the caller's, else what the probe saw alone */
		r->sms = sms_env && *sms_env ? atoi(sms_env) : read_sms(sms_file);
	}

	/* the clients together, under their shares */
	for (int i = 0; rc == GPUSHARE_OK && i < o->n_clients; i++) {
		int pct = o->limits ? (int)lround(o->shares[i] * 100) : 0;
		snprintf(dir, sizeof(dir), "%s/client%d", scratch, i);
		rc = start_probe(o, dir, pct, o->shares[i], r->sms, NULL, &ch[i], env[i]);
		if (rc == GPUSHARE_OK)
			started = i + 1;
	}
	if (rc == GPUSHARE_OK && started == o->n_clients) {
		sleep_s(o->warmup);
		for (int i = 0; i < o->n_clients; i++) {
			snprintf(dir, sizeof(dir), "%s/client%d", scratch, i);
			read_one(dir, &base[i]);
		}
		sleep_s(o->seconds);
	}
	for (int i = 0; i < started; i++)
		r->c[i].pid = ch[i].pid;
	stop_all(ch, started);
	for (int i = 0; rc == GPUSHARE_OK && i < o->n_clients; i++) {
		struct gpushare_check_client *c = &r->c[i];
		snprintf(dir, sizeof(dir), "%s/client%d", scratch, i);
		if (read_one(dir, &rec) == 0)
			since(&rec, &base[i]);
		c->kernels = rec.kernels;
		c->rate = gpushare_account_work_rate(&rec);
		if (gpushare_account_verdict(&alone, &rec, o->shares[i], o->tolerance, &c->v) != 1 || r->others > 0)
			r->failed++;
		if (r->others > 0)
			c->v.pass = -1; /* measured against a GPU that was not idle: unsettled */
		r->n_clients = i + 1;
	}
	if (rc == GPUSHARE_OK && !o->limits && r->others <= 0 && r->n_clients == o->n_clients)
		judge_fair(o, r);
	gpushare_remove_tree(scratch);
	return rc;
}
