/*
 * A conformance run (`gpushare check`, docs/accounting.md): probe clients
 * started under a given sharing, each loading libgpushare-account.so, and a
 * verdict per client on the share it attained against the share promised.
 * The probe runs alone first (the whole GPU), then the clients together;
 * a client's share attained is its probe kernel's mean time alone over its
 * mean time shared.
 */
#ifndef GPUSHARE_CHECK_H
#define GPUSHARE_CHECK_H

#include <stdbool.h>
#include <sys/types.h>

#include "gpushare/account.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSHARE_CHECK_MAX_CLIENTS 16

struct gpushare_check_opts {
	char *const *probe;                     /* the probe's argv (a saturating CUDA program) */
	const char *account_lib;                /* libgpushare-account.so */
	int n_clients;
	double shares[GPUSHARE_CHECK_MAX_CLIENTS]; /* promised, 0..1 */
	bool limits;                            /* MPS limits: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE per client */
	double tolerance;                       /* 0..1 (0.05: 5 points) */
	double seconds;                         /* each phase's length */
};

struct gpushare_check_client {
	pid_t pid;
	unsigned long long kernels;             /* sampled kernels of the shared phase */
	struct gpushare_account_verdict v;
};

struct gpushare_check_result {
	double alone_kernel_ns;                 /* the probe's mean kernel time alone */
	int n_clients;
	struct gpushare_check_client c[GPUSHARE_CHECK_MAX_CLIENTS];
	int failed;                             /* clients outside the tolerance or unknown */
};

/* Run the two phases. GPUSHARE_E_NOT_FOUND when the probe cannot be run,
 * GPUSHARE_E_IO for the scratch directory, GPUSHARE_E_INVAL when the probe
 * alone showed no kernel (no CUPTI, no GPU, a probe that launches none);
 * otherwise GPUSHARE_OK with the verdicts in *r (r->failed says whether
 * all passed). */
int gpushare_check_run(const struct gpushare_check_opts *o, struct gpushare_check_result *r);

#ifdef __cplusplus
}
#endif

#endif
