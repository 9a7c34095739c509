/*
 * gpushare utilities for programs that use the library: parsing of
 * user-supplied values the way gpushare's own options are parsed, the clock
 * and a short scheduler slice. (Directories, run directories and processes
 * are the library's own business: lib/sys/sys.h.)
 */
#ifndef GPUSHARE_UTIL_H
#define GPUSHARE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSHARE_PATH_MAX 4096

/* ---- parsing user values; each returns GPUSHARE_E_INVAL with a detail ---- */

/* A percentage in (0, 100], decimals allowed ("30", "12.5"). */
int gpushare_parse_percent(const char *s, double *out);

/* A memory size: a whole number with an optional unit K, M, G, T (powers of
 * 1024; "KiB", "MB" and "GiB" spellings accepted) or none for bytes. Zero is
 * rejected. */
int gpushare_parse_size(const char *s, uint64_t *bytes);

/* Format bytes the way the MPS control daemon accepts them: "<n>G" when a
 * whole number of GiB, else "<n>M" (rounded down; below 1 MiB is invalid). */
int gpushare_format_mps_size(uint64_t bytes, char *buf, size_t len);

/* An identity read from outside (a user or group id, a job number), named
 * `what` in the error: decimal digits only (no sign, space or other
 * character), at most max. Missing (NULL), empty, signed and out-of-range
 * values are refused with GPUSHARE_E_INVAL, never read as 0: the one reader
 * of every uid, gid and job number gpushare takes from its environment. */
int gpushare_parse_id(const char *what, const char *s, unsigned long max, unsigned long *out);

/* A decimal integer within [min, max]. */
int gpushare_parse_int(const char *s, long min, long max, long *out);

/* A duration: a number with unit ns, us, ms, s, m (minutes) or h; a bare
 * number is seconds. */
int gpushare_parse_duration(const char *s, uint64_t *ns);

/* ---- time ---- */

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t gpushare_now_ns(void);

/* ---- the scheduler ---- */

/* Ask the scheduler for a short slice for the calling thread (SCHED_OTHER's
 * sched_runtime, Linux 6.12 and later: a shorter slice means an earlier
 * deadline, and a waking task with a shorter slice preempts the running
 * one). Returns the slice the kernel then reports for the thread, 0 when it
 * keeps none (an older kernel, another policy, or want_ns 0). */
uint64_t gpushare_sched_short_slice(uint64_t want_ns);

#ifdef __cplusplus
}
#endif
#endif
