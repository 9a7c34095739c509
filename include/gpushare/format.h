/*
 * One way to print numbers for people: every table, report, plot label and
 * summary line of gpushare goes through these, so a latency reads "3.91 ms"
 * and a throughput "34.5k items/s" wherever it appears. Three significant
 * digits, never an exponent, a space before the unit. Machine output (JSON,
 * CSV) does not use them: it keeps base units and full precision.
 *
 * Every function writes a NUL-terminated string of at most len - 1 bytes
 * into buf and returns buf. A value that is not finite (unknown) prints as
 * "-".
 */
#ifndef GPUSHARE_FORMAT_H
#define GPUSHARE_FORMAT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* v with three significant digits and no exponent: "812", "3.91", "0.0452". */
const char *gpushare_fmt_sig(double v, char *buf, size_t len);

/* A duration in seconds in ns, us, ms or s: "45.2 ns", "812 us", "3.91 ms",
 * "1.20 s" (trailing zeros are kept: they are significant). */
const char *gpushare_fmt_seconds(double s, char *buf, size_t len);

/* A count or rate with a k, M, G suffix: "812", "34.5k", "1.23M". */
const char *gpushare_fmt_si(double v, char *buf, size_t len);

/* gpushare_fmt_si() and a unit: "34.5k items/s". */
const char *gpushare_fmt_rate(double v, const char *unit, char *buf, size_t len);

/* Bytes in binary units: "512 MiB", "1.50 GiB". */
const char *gpushare_fmt_bytes(double bytes, char *buf, size_t len);

/* A ratio: "2.16x", "17.5x", "0.432x". */
const char *gpushare_fmt_ratio(double r, char *buf, size_t len);

/* A fraction as a percentage with three significant digits: "23.4%", "100%". */
const char *gpushare_fmt_percent(double fraction, char *buf, size_t len);

/* The coverage of an interval, rounded down to 0.1% so it is never
 * overstated: 0.9375 -> "93.7%", 0.5 -> "50%", 0.96875 -> "96.8%". */
const char *gpushare_fmt_coverage(double fraction, char *buf, size_t len);

/* One unit for a set of durations (a table column, a plot axis), chosen
 * from the largest: its name ("ns", "us", "ms", "s") and the factor from
 * seconds (1e3 for ms). */
void gpushare_seconds_unit(double max_seconds, const char **name, double *scale);

/* One suffix for a set of counts, from the largest: "", "k", "M", "G" and
 * the divisor (1e3 for k). */
void gpushare_si_unit(double max, const char **suffix, double *divisor);

#ifdef __cplusplus
}
#endif
#endif
