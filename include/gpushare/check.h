/*
 * A conformance run (`gpushare check`, docs/accounting.md): probe clients
 * started under a given sharing, each loading libgpushare-account.so, and a
 * verdict per client on the share it attained against the share promised.
 * The probe runs alone first (the whole GPU), then the clients together;
 * a client's share attained is its work rate shared (probe kernels per
 * second of sampled time) over the probe's alone. The probe's kernels each
 * do a fixed amount of work whatever SM count its context reports: it sizes
 * its grid from GPUSHARE_CHECK_SMS, the whole GPU's SM count, which it
 * writes alone to $GPUSHARE_CHECK_SMS_FILE (docs/accounting.md, "The
 * probe's contract").
 */
#ifndef GPUSHARE_CHECK_H
#define GPUSHARE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "gpushare/account.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSHARE_CHECK_MAX_CLIENTS 16

struct gpushare_check_opts {
	char *const *probe;                     /* the probe's argv (a CUDA program keeping to the contract) */
	const char *account_lib;                /* libgpushare-account.so */
	int n_clients;
	double shares[GPUSHARE_CHECK_MAX_CLIENTS]; /* promised, 0..1 */
	bool limits;                            /* MPS limits: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE per client */
	double tolerance;                       /* 0..1 (0.05: 5 points) */
	double max_cost;                        /* without limits: how far under the promises' sum the clients'
						 * attained shares together may be, 0..1 (the sharing's cost) */
	double warmup;                          /* each phase's start, not measured */
	double seconds;                         /* each phase's measured length */
};

struct gpushare_check_client {
	pid_t pid;
	unsigned long long kernels;             /* sampled kernels of the shared phase */
	double rate;                            /* its work rate shared, kernels/s; negative unknown */
	struct gpushare_account_verdict v;
};

struct gpushare_check_result {
	double alone_kernel_ns;                 /* the probe's mean kernel time alone */
	double alone_rate;                      /* the probe's work rate alone, kernels/s */
	int sms;                                /* the whole GPU's SM count given to the clients; 0 none */
	int n_clients;
	struct gpushare_check_client c[GPUSHARE_CHECK_MAX_CLIENTS];
	int failed;                             /* clients outside the tolerance or unknown, + 1 for a cost
						 * over max_cost */
	/* Without limits (time-slicing, MPS without limits) each client is
	 * promised its part of what the GPU gives the clients: switching
	 * between time-sliced contexts costs the GPU time no client gets (about
	 * a tenth of an H200 for two probes). So each is judged against its
	 * promise's part of the clients' attained shares together (v.expected),
	 * and that total against the promises' sum: the cost, bounded by
	 * max_cost. */
	bool fair;                              /* judged so */
	double together;                        /* the clients' attained shares added up */
	double cost;                            /* the promises' sum - together (negative: more than promised) */
	bool cost_failed;                       /* cost > max_cost, or under -tolerance (the alone phase was not
						 * alone: the clients together beat it) */
	/* Compute processes on the GPUs, MPS servers aside, when the probe was to
	 * run alone (NVML's count; -1 unknown: no driver): the alone figure holds
	 * their load, so every verdict is unknown when there was one. */
	int others;
	pid_t other_pid;                        /* the first of them */
};

/* Run the two phases. GPUSHARE_E_NOT_FOUND when the probe cannot be run,
 * GPUSHARE_E_IO for the scratch directory, GPUSHARE_E_INVAL when the probe
 * alone showed no kernel (no CUPTI, no GPU, a probe that launches none);
 * otherwise GPUSHARE_OK with the verdicts in *r (r->failed says whether
 * all passed). */
int gpushare_check_run(const struct gpushare_check_opts *o, struct gpushare_check_result *r);

/* The shares of a plan directory (`gpushare plan --out DIR`'s files, any
 * target): the strategy and workers per GPU of its header, and the MPS
 * limit of its gpushare.env when there is one. Fills o->n_clients,
 * o->shares and o->limits and says what it read in what (e.g. "mps-split,
 * 4 clients at 25%"). GPUSHARE_E_NOT_FOUND without a plan in dir,
 * GPUSHARE_E_UNSUPPORTED for a plan check cannot run as one (MIG: check
 * each instance as its own GPU), GPUSHARE_E_INVAL for one of more clients
 * than GPUSHARE_CHECK_MAX_CLIENTS. */
int gpushare_check_plan(const char *dir, struct gpushare_check_opts *o, char *what, size_t len);

#ifdef __cplusplus
}
#endif

#endif
