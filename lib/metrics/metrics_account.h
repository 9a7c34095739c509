/*
 * Per-client accounting series (docs/accounting.md): the records that
 * libgpushare-account.so writes, served as gpushare_client_*.
 */
#ifndef GPUSHARE_METRICS_ACCOUNT_H
#define GPUSHARE_METRICS_ACCOUNT_H

#include "gpushare/gpu.h"
#include "gpushare/metrics.h"

/* At most this many clients are served (the rest are left out). */
#define GPUSHARE_METRICS_MAX_CLIENTS 1024

/* Write gpushare_client_* from the caller's record directory and, for
 * root, every user's under /run/user (gpushare_account_collect()). sys (NULL
 * when the driver did not answer) maps the GPU each record names by UUID to
 * its index (the labels gpu and uuid) and places the clients on their GPUs
 * for the flag gpushare_client_held_under_promise. Never fails: a missing
 * directory is no client. */
void gpushare_metrics_write_clients(struct gpushare_metrics_buf *b, const struct gpushare_system_info *sys);

#endif
