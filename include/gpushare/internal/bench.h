/*
 * The bench engine's parsers of option text (--load, --arrival, --dispatch,
 * --slo, the mps-split lists) and its --preload notices, for the command line.
 *
 * Not installed: include/gpushare/internal/ holds what only the command
 * line (cli/) uses of the library, so that the installed API is what an
 * embedding program needs. lib/LAYERS places each of these headers with its
 * module's public one.
 */
#ifndef GPUSHARE_INTERNAL_BENCH_H
#define GPUSHARE_INTERNAL_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "gpushare/bench.h"

/* Parse the names of gpushare_load_name(), gpushare_arrival_name() and
 * gpushare_dispatch_name(); GPUSHARE_E_INVAL naming the choices. */
int gpushare_load_parse(const char *s, enum gpushare_load *out);
int gpushare_arrival_parse(const char *s, enum gpushare_arrival *out);
int gpushare_dispatch_parse(const char *s, enum gpushare_dispatch *out);

/* Parse a latency bound "p99=50ms" (pNN, pNN.N...: the quantile in percent,
 * then a duration). GPUSHARE_E_INVAL naming the problem. */
int gpushare_slo_parse(const char *s, double *quantile, uint64_t *bound_ns);

/* Parse per-worker lists: one value or exactly `workers` values, comma
 * separated. GPUSHARE_E_INVAL naming the bad item or the count. */
int gpushare_bench_parse_percent_list(const char *s, int workers, double *out, int *n);
int gpushare_bench_parse_size_list(const char *s, int workers, uint64_t *out, int *n);
int gpushare_bench_parse_priority_list(const char *s, int workers, int *out, int *n);

/* --preload: what happens to the preloaded command, one line of text per
 * event: started and loaded (warning false); not preloaded and why, or
 * started again (warning true). fn NULL: silent. */
typedef void (*gpushare_bench_notice_fn)(void *arg, bool warning, const char *text);
void gpushare_bench_set_preload_notice(gpushare_bench_notice_fn fn, void *arg);

#endif
