/*
 * Statistics of repeated runs (include/gpushare/stats.h): order-statistic
 * intervals of the median with their exact coverage, mean and spread, and
 * the comparison of two medians.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/stats.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* P(B <= k) for B ~ Binomial(n, 1/2), summed in log space so large n
 * neither underflows nor overflows. */
static double binom_half_cdf(size_t n, size_t k)
{
	double sum = 0, log_half_n = -(double)n * log(2.0);

	for (size_t j = 0; j <= k && j <= n; j++)
		sum += exp(lgamma((double)n + 1) - lgamma((double)j + 1) - lgamma((double)(n - j) + 1) + log_half_n);
	return sum > 1 ? 1 : sum;
}

double gpushare_median_ci_coverage(size_t n, size_t l)
{
	if (n < 2 || l < 1 || 2 * l > n + 1)
		return 0;
	return 1 - 2 * binom_half_cdf(n, l - 1);
}

void gpushare_median_ci(const double *x, size_t n, double conf, struct gpushare_ci *out)
{
	double *v, alpha = 1 - conf;
	size_t l;

	memset(out, 0, sizeof(*out));
	out->median = out->lo = out->hi = out->log_mean = out->log_sd = NAN;
	if (n == 0)
		return;
	v = malloc(n * sizeof(*v));
	if (!v)
		return;
	memcpy(v, x, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_double);
	out->n = n;
	out->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	if (n >= 2) {
		/* The largest rank l with P(B <= l-1) <= alpha/2, B ~ Bin(n, 1/2).
		 * The CDF is accumulated as the rank grows, term by term in the
		 * order binom_half_cdf() sums them (the same figures), so a cell
		 * of n runs costs O(n) terms, not O(n^2): cdf_below is
		 * P(B <= l-1), cdf P(B <= l). */
		double lg_n1 = lgamma((double)n + 1), log_half_n = -(double)n * log(2.0);
		double cdf_below = exp(lg_n1 - lgamma(1.0) - lgamma((double)n + 1) + log_half_n), cdf;

		l = 1;
		cdf = cdf_below + exp(lg_n1 - lgamma(2.0) - lgamma((double)(n - 1) + 1) + log_half_n);
		while (2 * (l + 1) <= n + 1 && (cdf > 1 ? 1 : cdf) <= alpha / 2) {
			l++;
			cdf_below = cdf;
			cdf += exp(lg_n1 - lgamma((double)l + 1) - lgamma((double)(n - l) + 1) + log_half_n);
		}
		out->lo = v[l - 1];
		out->hi = v[n - l];
		out->coverage = 1 - 2 * (cdf_below > 1 ? 1 : cdf_below);
	}
	free(v);
	{
		double sum = 0, ss = 0, m;

		for (size_t i = 0; i < n; i++) {
			if (!(x[i] > 0) || !isfinite(x[i]))
				return;
			sum += log(x[i]);
		}
		m = sum / (double)n;
		out->log_mean = m;
		if (n < 2)
			return;
		for (size_t i = 0; i < n; i++)
			ss += (log(x[i]) - m) * (log(x[i]) - m);
		out->log_sd = sqrt(ss / (double)(n - 1));
	}
}

/* The continued fraction of the regularized incomplete beta function
 * (modified Lentz), valid for x < (a + 1) / (a + b + 2). */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;

	d = fabs(d) < tiny ? tiny : d;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 300; m++) {
		double m2 = 2.0 * m, aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2)), del;

		d = 1 + aa * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + aa / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		h *= d * c;
		aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
		d = 1 + aa * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + aa / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-15)
			break;
	}
	return h;
}

/* I_x(a, b), the regularized incomplete beta function. */
static double beta_inc(double a, double b, double x)
{
	double front;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_cf(a, b, x) / a;
	return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double gpushare_t_cdf(double t, double df)
{
	double tail;

	if (isnan(t) || !(df > 0))
		return NAN;
	if (isinf(t))
		return t > 0 ? 1 : 0;
	/* P(|T| > |t|) = I_{df/(df+t^2)}(df/2, 1/2) */
	tail = beta_inc(df / 2, 0.5, df / (df + t * t));
	return t > 0 ? 1 - tail / 2 : tail / 2;
}

double gpushare_t_quantile(double p, double df)
{
	double lo = 0, hi = 1;

	if (!(p > 0 && p < 1) || !(df > 0))
		return NAN;
	if (p < 0.5)
		return -gpushare_t_quantile(1 - p, df);
	while (gpushare_t_cdf(hi, df) < p && hi < 1e300)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		double mid = (lo + hi) / 2;

		if (gpushare_t_cdf(mid, df) < p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

bool gpushare_ci_has_interval(const struct gpushare_ci *ci)
{
	return ci->n >= 2 && isfinite(ci->lo) && isfinite(ci->hi);
}

double gpushare_ci_rel_halfwidth(const struct gpushare_ci *ci)
{
	if (!gpushare_ci_has_interval(ci) || !isfinite(ci->median) || ci->median == 0)
		return INFINITY;
	return (ci->hi - ci->lo) / 2 / fabs(ci->median);
}

bool gpushare_ci_overlap(const struct gpushare_ci *a, const struct gpushare_ci *b)
{
	if (!gpushare_ci_has_interval(a) || !gpushare_ci_has_interval(b))
		return false;
	return a->lo <= b->hi && b->lo <= a->hi;
}

void gpushare_sample_stats(const double *x, size_t n, struct gpushare_sample_stats *out)
{
	double sum = 0, ss = 0;

	memset(out, 0, sizeof(*out));
	out->mean = out->stddev = out->min = out->max = out->cv = NAN;
	gpushare_median_ci(x, n, 0.95, &out->median);
	out->n = n;
	if (n == 0)
		return;
	out->min = out->max = x[0];
	for (size_t i = 0; i < n; i++) {
		sum += x[i];
		out->min = fmin(out->min, x[i]);
		out->max = fmax(out->max, x[i]);
	}
	out->mean = sum / (double)n;
	if (n < 2)
		return;
	for (size_t i = 0; i < n; i++)
		ss += (x[i] - out->mean) * (x[i] - out->mean);
	out->stddev = sqrt(ss / (double)(n - 1));
	if (out->mean != 0)
		out->cv = out->stddev / fabs(out->mean);
}

/* Welch's t test on the logs: a's and b's log means and spreads. */
static bool compare_welch(const struct gpushare_ci *a, const struct gpushare_ci *b, struct gpushare_comparison *out)
{
	double va, vb, se, d, q;

	if (a->n < 2 || b->n < 2 || !isfinite(a->log_sd) || !isfinite(b->log_sd) || !isfinite(a->log_mean) ||
	    !isfinite(b->log_mean))
		return false;
	va = a->log_sd * a->log_sd / (double)a->n;
	vb = b->log_sd * b->log_sd / (double)b->n;
	se = sqrt(va + vb);
	d = a->log_mean - b->log_mean;
	out->gm_ratio = exp(d);
	if (se == 0) {
		/* Both sides without spread: no noise to weigh the difference against. */
		out->t_df = (double)(a->n + b->n - 2);
		out->p_value = d == 0 ? 1 : 0;
		out->t_lo = out->t_hi = out->gm_ratio;
	} else {
		out->t_df = (va + vb) * (va + vb) /
			    (va * va / (double)(a->n - 1) + vb * vb / (double)(b->n - 1));
		out->p_value = 2 * (1 - gpushare_t_cdf(fabs(d) / se, out->t_df));
		if (out->p_value < 0)
			out->p_value = 0;
		q = gpushare_t_quantile(1 - (1 - GPUSHARE_SIGNIFICANCE) / 2, out->t_df);
		out->t_lo = exp(d - q * se);
		out->t_hi = exp(d + q * se);
	}
	return true;
}

/* t(p, df) for p 0.975 or GPUSHARE_SETTLE_POWER (z the normal quantile
 * of p): exact below 30 degrees of freedom, above by Cornish-Fisher's
 * expansion (Abramowitz and Stegun 26.7.5, within 1e-7 there), so the runs
 * a side of a noisy pair cost no search at thousands of degrees. */
static double t_quantile_of(double p, double z, double df)
{
	double z2 = z * z, g1, g2, g3, g4;

	if (df < 30)
		return gpushare_t_quantile(p, df);
	g1 = (z2 + 1) * z / 4;
	g2 = ((5 * z2 + 16) * z2 + 3) * z / 96;
	g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384;
	g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160;
	return z + g1 / df + g2 / (df * df) + g3 / (df * df * df) + g4 / (df * df * df * df);
}

size_t gpushare_runs_needed(double sd_a, double sd_b, double d)
{
	const size_t cap = 1000000;
	/* The normal quantiles of 0.975 and of 0.80 (GPUSHARE_SETTLE_POWER). */
	const double z_sig = 1.959963984540054, z_pow = 0.8416212335729143;
	double v = sd_a * sd_a + sd_b * sd_b, w = sd_a * sd_a * sd_a * sd_a + sd_b * sd_b * sd_b * sd_b, n0;
	size_t n;

	if (!(v > 0) || !(d > 0) || !isfinite(v) || !isfinite(d))
		return 0;
	/* The normal approximation is a lower bound: start there, then up by
	 * t quantiles at the Welch-Satterthwaite degrees of freedom of n runs
	 * a side. */
	n0 = v * (z_sig + z_pow) * (z_sig + z_pow) / (d * d);
	n = n0 < 2 ? 2 : n0 > (double)cap ? cap : (size_t)ceil(n0);
	for (; n < cap; n++) {
		double df = ((double)n - 1) * v * v / w, q;

		q = t_quantile_of(1 - (1 - GPUSHARE_SIGNIFICANCE) / 2, z_sig, df) +
		    t_quantile_of(GPUSHARE_SETTLE_POWER, z_pow, df);
		if ((double)n >= v * q * q / (d * d))
			return n;
	}
	return cap;
}

/* Whether the t test's tie is settled by the runs (see stats.h): sets
 * underpowered, runs_needed and settle_diff. */
static void settle(const struct gpushare_ci *a, const struct gpushare_ci *b, struct gpushare_comparison *out)
{
	double d = fabs(a->log_mean - b->log_mean), margin = log1p(GPUSHARE_SETTLE_MARGIN);
	bool apart = out->order_verdict == GPUSHARE_VERDICT_HIGHER || out->order_verdict == GPUSHARE_VERDICT_LOWER;
	bool wide = out->t_lo < 1 / (1 + GPUSHARE_SETTLE_MARGIN) || out->t_hi > 1 + GPUSHARE_SETTLE_MARGIN;

	if (d < margin)
		d = margin;
	out->settle_diff = expm1(d);
	out->runs_needed = gpushare_runs_needed(a->log_sd, b->log_sd, d);
	if (out->runs_needed == 0)
		out->runs_needed = 2; /* no spread on either side */
	if (out->runs_needed > out->runs || (apart && wide))
		out->underpowered = true;
	if (out->underpowered && out->runs_needed <= out->runs)
		out->runs_needed = out->runs + 1;
}

void gpushare_compare(const struct gpushare_ci *a, const struct gpushare_ci *b, struct gpushare_comparison *out)
{
	memset(out, 0, sizeof(*out));
	out->ratio = out->ratio_lo = out->ratio_hi = out->confidence = out->order_confidence = NAN;
	out->gm_ratio = out->t_lo = out->t_hi = out->t_df = out->p_value = out->settle_diff = NAN;
	if (a->n == 0 || b->n == 0)
		return;
	out->runs = a->n < b->n ? a->n : b->n;
	if (b->median != 0)
		out->ratio = a->median / b->median;
	if (gpushare_ci_has_interval(a) && gpushare_ci_has_interval(b)) {
		if (b->hi > 0)
			out->ratio_lo = a->lo / b->hi;
		if (b->lo > 0)
			out->ratio_hi = a->hi / b->lo;
		if (gpushare_ci_overlap(a, b)) {
			out->order_verdict = GPUSHARE_VERDICT_TIE;
		} else {
			out->order_verdict = a->lo > b->hi ? GPUSHARE_VERDICT_HIGHER : GPUSHARE_VERDICT_LOWER;
			out->order_confidence = a->coverage * b->coverage;
		}
	}
	if (compare_welch(a, b, out)) {
		out->method = GPUSHARE_METHOD_WELCH_LOG;
		if (out->t_lo > 1)
			out->verdict = GPUSHARE_VERDICT_HIGHER;
		else if (out->t_hi < 1)
			out->verdict = GPUSHARE_VERDICT_LOWER;
		else
			out->verdict = GPUSHARE_VERDICT_TIE;
		if (out->verdict != GPUSHARE_VERDICT_TIE) {
			out->confidence = 1 - out->p_value;
			out->significant = true;
		} else {
			settle(a, b, out);
		}
	} else if (out->order_verdict != GPUSHARE_VERDICT_UNKNOWN) {
		out->method = GPUSHARE_METHOD_ORDER;
		out->verdict = out->order_verdict;
		out->confidence = out->order_confidence;
		out->significant = out->verdict != GPUSHARE_VERDICT_TIE &&
				   out->confidence >= GPUSHARE_SIGNIFICANCE - 1e-12;
	}
}

bool gpushare_compare_clear(const struct gpushare_comparison *c, enum gpushare_verdict verdict)
{
	return (verdict == GPUSHARE_VERDICT_HIGHER || verdict == GPUSHARE_VERDICT_LOWER) && c->verdict == verdict &&
	       c->significant;
}

bool gpushare_compare_unsettled_text(const struct gpushare_comparison *c, const char *a_name, const char *b_name,
				     char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	if (!c->underpowered)
		return false;
	if (c->runs_needed > c->runs && isfinite(c->settle_diff))
		snprintf(buf, len, "cannot tell %s from %s with %zu run%s; %zu more run%s a side would settle a difference of %.*f%%",
			 a_name, b_name, c->runs, c->runs == 1 ? "" : "s", c->runs_needed - c->runs,
			 c->runs_needed - c->runs == 1 ? "" : "s", c->settle_diff < 0.1 ? 1 : 0, 100 * c->settle_diff);
	else
		snprintf(buf, len, "cannot tell %s from %s with %zu run%s", a_name, b_name, c->runs, c->runs == 1 ? "" : "s");
	return true;
}

const char *gpushare_compare_verdict_name(const struct gpushare_comparison *c)
{
	return c->underpowered ? "underpowered" : gpushare_verdict_name(c->verdict);
}

const char *gpushare_verdict_name(int verdict)
{
	switch (verdict) {
	case GPUSHARE_VERDICT_TIE: return "tie";
	case GPUSHARE_VERDICT_HIGHER: return "higher";
	case GPUSHARE_VERDICT_LOWER: return "lower";
	default: return "unknown";
	}
}

const char *gpushare_method_name(int method)
{
	switch (method) {
	case GPUSHARE_METHOD_WELCH_LOG: return "welch-log";
	case GPUSHARE_METHOD_ORDER: return "order-statistics";
	default: return "none";
	}
}
