/*
 * Statistics of repeated runs (include/gpushare/stats.h): order-statistic
 * intervals of the median with their exact coverage, mean and spread, and
 * the comparison of two medians.
 */
#include <math.h>
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
	out->median = out->lo = out->hi = NAN;
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
		/* The largest rank l with P(B <= l-1) <= alpha/2. */
		l = 1;
		while (2 * (l + 1) <= n + 1 && binom_half_cdf(n, l) <= alpha / 2)
			l++;
		out->lo = v[l - 1];
		out->hi = v[n - l];
		out->coverage = gpushare_median_ci_coverage(n, l);
	}
	free(v);
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

void gpushare_compare(const struct gpushare_ci *a, const struct gpushare_ci *b, struct gpushare_comparison *out)
{
	memset(out, 0, sizeof(*out));
	out->ratio = out->ratio_lo = out->ratio_hi = out->confidence = NAN;
	if (a->n == 0 || b->n == 0)
		return;
	if (b->median != 0)
		out->ratio = a->median / b->median;
	if (!gpushare_ci_has_interval(a) || !gpushare_ci_has_interval(b))
		return;
	if (b->hi > 0)
		out->ratio_lo = a->lo / b->hi;
	if (b->lo > 0)
		out->ratio_hi = a->hi / b->lo;
	if (gpushare_ci_overlap(a, b)) {
		out->verdict = GPUSHARE_VERDICT_TIE;
		return;
	}
	out->verdict = a->lo > b->hi ? GPUSHARE_VERDICT_HIGHER : GPUSHARE_VERDICT_LOWER;
	out->confidence = a->coverage * b->coverage;
	out->significant = out->confidence >= GPUSHARE_SIGNIFICANCE - 1e-12;
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
