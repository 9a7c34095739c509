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
 *   distribution-free rule gives the verdict;
 * - underpowered, a verdict of its own beside "tie": a comparison the data
 *   cannot settle (gpushare_compare(), `underpowered`). The t test's tie is
 *   settled only when the runs are enough for the noise measured: with s the
 *   pooled log-sd, sqrt((sd_a^2 + sd_b^2) / 2), and D the difference to
 *   settle, the larger of the measured one |ln(gm_a / gm_b)| and the margin
 *   ln(1 + GPUSHARE_SETTLE_MARGIN), the runs a side needed are the smallest
 *   n >= 2 with n >= 2 s^2 (t(0.975, df) + t(POWER, df))^2 / D^2 (the
 *   two-sample t test on logs, 5% two-sided, at GPUSHARE_SETTLE_POWER; df
 *   2n-2 for equal spreads, Welch-Satterthwaite's at n a side else:
 *   gpushare_runs_needed()). A tie is underpowered when a side has fewer
 *   runs than that, or when the two tests disagree (the order-statistic
 *   intervals apart, the t test not significant) while the t interval
 *   reaches past the margin; then at least one more run a side is needed.
 *   A tie whose t interval lies within the margin and whose runs suffice is
 *   settled: "within noise".
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

/* The smallest difference a tie must rule out (5%), and the power at which
 * the runs a side needed to settle a difference are computed (80%). */
#define GPUSHARE_SETTLE_MARGIN 0.05
#define GPUSHARE_SETTLE_POWER 0.80

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
	/* Underpowered: the verdict is a tie by the t test the data cannot
	 * settle (see the top of this file); never set with a clear verdict. */
	bool underpowered;
	size_t runs;                   /* the fewer runs of the two sides */
	size_t runs_needed;            /* runs a side that would settle settle_diff; 0 when unknown */
	double settle_diff;            /* the difference those runs settle, as a fraction (0.12: 12%); NaN when unknown */
};
void gpushare_compare(const struct gpushare_ci *a, const struct gpushare_ci *b, struct gpushare_comparison *out);

/* A clear difference: the verdict is `verdict` (HIGHER: a clearly above b,
 * LOWER: clearly below) and significant. A verdict that is not significant
 * is no clear win or loss: a tie, in the words a user reads. */
bool gpushare_compare_clear(const struct gpushare_comparison *c, enum gpushare_verdict verdict);

/* The runs a side, n, a two-sample t test on logs needs to detect a log
 * difference d > 0 at log-sds sd_a and sd_b (5% two-sided, at
 * GPUSHARE_SETTLE_POWER): the smallest n >= 2 with
 *   n >= (sd_a^2 + sd_b^2) (t(0.975, df) + t(POWER, df))^2 / d^2,
 * df = (n-1) (sd_a^2 + sd_b^2)^2 / (sd_a^4 + sd_b^4) (Welch-Satterthwaite at
 * n a side; 2n-2 when the sds are equal, and then sd_a^2 + sd_b^2 = 2 s^2 with
 * s the pooled log-sd). 0 when d or the spread is not finite and positive;
 * capped at 1000000. */
size_t gpushare_runs_needed(double sd_a, double sd_b, double d);

/* The sentence of an underpowered comparison of a (a_name) with b (b_name):
 * "cannot tell A from B with R runs; N more runs a side would settle a
 * difference of X%". Writes "" and returns false when c is not underpowered.
 * The words report, tune and plan print for a question the data leave open. */
bool gpushare_compare_unsettled_text(const struct gpushare_comparison *c, const char *a_name, const char *b_name,
				     char *buf, size_t len);

/* The verdict a user reads: "underpowered" when c is, else
 * gpushare_verdict_name(c->verdict). */
const char *gpushare_compare_verdict_name(const struct gpushare_comparison *c);

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
