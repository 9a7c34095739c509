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
 * - a comparison of two cells. The verdict is Welch's t test on the logs of
 *   the samples (log-normal run-to-run noise, independent interleaved runs):
 *   the 95% t interval of the ratio of the geometric means; "tie" when it
 *   holds 1, else higher or lower, significant at p < 5%. Beside it, the
 *   distribution-free rule: the ratio of the medians with the range of their
 *   order-statistic intervals, "tie" when those overlap, else apart at the
 *   joint coverage of the two intervals (significant from 95%; 7 runs a
 *   side). Where the t test cannot apply (a sample <= 0), the
 *   distribution-free rule gives the verdict.
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
	double log_mean;     /* mean of ln(x); NaN when a sample is <= 0 */
	double log_sd;       /* sample standard deviation of ln(x); NaN when
			      * n < 2 or a sample is <= 0 */
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

/* The method that gave a comparison's verdict. */
enum gpushare_compare_method {
	GPUSHARE_METHOD_NONE = 0,      /* no verdict (a side has fewer than 2 runs) */
	GPUSHARE_METHOD_WELCH_LOG,     /* Welch's t test on ln(x) */
	GPUSHARE_METHOD_ORDER,         /* the order-statistic intervals of the medians */
};

struct gpushare_comparison {
	enum gpushare_verdict verdict; /* by `method` */
	enum gpushare_compare_method method;
	double ratio;                  /* a.median / b.median; NaN when unknown */
	double confidence;             /* HIGHER/LOWER: Welch 1 - p, or the joint coverage
					* of the order rule; else NaN */
	bool significant;              /* HIGHER/LOWER and confidence >= GPUSHARE_SIGNIFICANCE */
	/* Welch's t test on ln(x) (NaN when it does not apply). */
	double gm_ratio;               /* exp(a.log_mean - b.log_mean): ratio of geometric means */
	double t_lo, t_hi;             /* its 95% t interval */
	double t_df;                   /* Welch-Satterthwaite degrees of freedom */
	double p_value;                /* two-sided */
	/* The distribution-free rule. */
	enum gpushare_verdict order_verdict; /* TIE when the intervals overlap, else HIGHER/LOWER */
	double ratio_lo, ratio_hi;     /* a.lo / b.hi, a.hi / b.lo; NaN without intervals */
	double order_confidence;       /* apart: a.coverage x b.coverage; else NaN */
};
void gpushare_compare(const struct gpushare_ci *a, const struct gpushare_ci *b, struct gpushare_comparison *out);

/* A clear difference: the verdict is `verdict` (HIGHER: a clearly above b,
 * LOWER: clearly below) and significant. A verdict that is not significant
 * is no clear win or loss: a tie, in the words a user reads. */
bool gpushare_compare_clear(const struct gpushare_comparison *c, enum gpushare_verdict verdict);

/* "tie", "higher", "lower", "unknown". */
const char *gpushare_verdict_name(int verdict);

/* "welch-log", "order-statistics", "none". */
const char *gpushare_method_name(int method);

/* Student's t distribution with df > 0 degrees of freedom: P(T <= t), and
 * the quantile q of P(T <= q) = p (0 < p < 1). */
double gpushare_t_cdf(double t, double df);
double gpushare_t_quantile(double p, double df);

#ifdef __cplusplus
}
#endif
#endif
