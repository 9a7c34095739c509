/*
 * Statistics of repeated runs, shared by `gpushare bench --repeats` and the
 * sweep report (docs/sweep.md, "Statistics"):
 *
 * - the median of n samples with the distribution-free confidence interval
 *   from order statistics, [x(l), x(n-l+1)], whose coverage is computed
 *   exactly: 1 - 2 P(B <= l-1), B ~ Binomial(n, 1/2). With one sample there
 *   is no interval; below six samples no rank reaches 95% and the interval
 *   is [min, max] with its (lower) coverage stated;
 * - mean, sample standard deviation, min and max (the hyperfine summary);
 * - a comparison of two medians: the ratio with its range, "tie" when the
 *   intervals overlap, and when they do not, the confidence of the
 *   difference: the joint coverage of the two intervals (independent runs).
 *   A difference is called significant only when that confidence is at
 *   least 95%.
 */
#ifndef GPUSHARE_STATS_H
#define GPUSHARE_STATS_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The level a difference must reach to be called significant. */
#define GPUSHARE_SIGNIFICANCE 0.95

/* A median with its confidence interval. */
struct gpushare_ci {
	size_t n;            /* samples */
	double median;       /* NaN when n == 0 */
	double lo, hi;       /* interval bounds; NaN when n < 2 (no interval) */
	double coverage;     /* probability the interval holds the true median,
			      * exact; 0 when n < 2. At least the asked level
			      * when n is large enough, else that of [min, max]. */
};

/* Median of x[0..n-1] with the order-statistic interval at level conf
 * (0.95): the largest rank l with P(B <= l-1) <= (1 - conf) / 2, at least 1.
 * x is not modified. */
void gpushare_median_ci(const double *x, size_t n, double conf, struct gpushare_ci *out);

/* The coverage of [x(l), x(n-l+1)] (l 1-based, 2l <= n+1): 1 - 2 P(B <= l-1). */
double gpushare_median_ci_coverage(size_t n, size_t l);

/* Whether ci is an interval (n >= 2). */
bool gpushare_ci_has_interval(const struct gpushare_ci *ci);

/* Relative half-width: (hi - lo) / 2 / |median|; INFINITY without an
 * interval or with a zero median. */
double gpushare_ci_rel_halfwidth(const struct gpushare_ci *ci);

/* Whether two intervals overlap; false when either has none. */
bool gpushare_ci_overlap(const struct gpushare_ci *a, const struct gpushare_ci *b);

/* Mean +- sample standard deviation, min...max and the median interval. */
struct gpushare_sample_stats {
	size_t n;
	double mean, stddev;     /* stddev NaN when n < 2 */
	double min, max;
	double cv;               /* stddev / |mean|; NaN when n < 2 or mean 0 */
	struct gpushare_ci median;
};
void gpushare_sample_stats(const double *x, size_t n, struct gpushare_sample_stats *out);

/* How a compares with b. */
enum gpushare_verdict {
	GPUSHARE_VERDICT_UNKNOWN = 0,  /* a side has no interval (one run) or no sample */
	GPUSHARE_VERDICT_TIE,          /* the intervals overlap */
	GPUSHARE_VERDICT_HIGHER,       /* a's interval lies above b's */
	GPUSHARE_VERDICT_LOWER,        /* a's interval lies below b's */
};

struct gpushare_comparison {
	enum gpushare_verdict verdict;
	double ratio;                  /* a.median / b.median; NaN when unknown */
	double ratio_lo, ratio_hi;     /* a.lo / b.hi, a.hi / b.lo; NaN without intervals */
	double confidence;             /* HIGHER/LOWER: a.coverage x b.coverage; else NaN */
	bool significant;              /* HIGHER/LOWER and confidence >= GPUSHARE_SIGNIFICANCE */
};
void gpushare_compare(const struct gpushare_ci *a, const struct gpushare_ci *b, struct gpushare_comparison *out);

/* "tie", "higher", "lower", "unknown". */
const char *gpushare_verdict_name(int verdict);

#ifdef __cplusplus
}
#endif
#endif
