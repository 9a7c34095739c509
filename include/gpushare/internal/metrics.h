/*
 * The metrics module's parser of --metrics-buckets and its notice of where
 * a server listens, for the command line.
 *
 * Not installed: include/gpushare/internal/ holds what only the command
 * line (cli/) uses of the library, so that the installed API is what an
 * embedding program needs. lib/LAYERS places each of these headers with its
 * module's public one.
 */
#ifndef GPUSHARE_INTERNAL_METRICS_H
#define GPUSHARE_INTERNAL_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* Parse a bucket list in seconds ("0.001,0.005,0.01"): positive, finite,
 * strictly increasing, at most GPUSHARE_METRICS_MAX_BUCKETS values, "+Inf"
 * not allowed (it is always there). */
int gpushare_metrics_parse_buckets(const char *s, double *out, size_t *n);

/* Called by every gpushare_metrics_server_start() that succeeds, with the
 * address and the port actually bound (port 0 picks one): the command line
 * says where bench, sweep and farm serve. Set it before any server starts
 * (not thread-safe); NULL: none. */
typedef void (*gpushare_metrics_listen_fn)(const char *addr, uint16_t port, void *arg);
void gpushare_metrics_set_listen_notice(gpushare_metrics_listen_fn fn, void *arg);

#endif
