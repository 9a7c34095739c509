/*
 * The false-positive rate of gpushare's comparison (lib/core/stats.c) on
 * A/A comparisons: two arms drawn from the same configuration, so any
 * verdict other than "tie" is a false positive. Run by bench/stats_aa.sh.
 *
 *   stats_aa sim DIST CV N TRIALS [GAP]
 *       DIST lognormal, normal or outliers (lognormal, and one run in ten
 *       slowed by 1 + 4 CV); arms of N draws each. GAP (default 1) scales
 *       arm a: GAP 1 measures false positives, GAP > 1 the power.
 *   stats_aa data N < values
 *       values: one run's throughput a line, in run order. The runs are
 *       cut into disjoint blocks of 2N consecutive runs, alternating arms
 *       (interleaved, as a sweep runs them): independent A/A comparisons.
 *
 * Prints, for the t test on logs and for the order-statistic rule, the
 * fraction of comparisons that were not a tie (and, of the order rule, the
 * fraction called significant), and the fraction of ties the runs cannot
 * settle (underpowered: no verdict, so never a false positive).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/stats.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

static double gauss(void)
{
	return sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}

static double draw(const char *dist, double cv)
{
	double sl = sqrt(log1p(cv * cv));

	if (!strcmp(dist, "normal"))
		return fmax(1e-9, 1 + cv * gauss());
	if (!strcmp(dist, "outliers"))
		return exp(sl * gauss() - sl * sl / 2) / (uniform() < 0.1 ? 1 + 4 * cv : 1);
	return exp(sl * gauss() - sl * sl / 2);
}

struct tally {
	long n, t_apart, o_apart, o_sig, under;
};

static void compare(const double *a, const double *b, size_t n, struct tally *t)
{
	struct gpushare_ci ca, cb;
	struct gpushare_comparison c;

	gpushare_median_ci(a, n, 0.95, &ca);
	gpushare_median_ci(b, n, 0.95, &cb);
	gpushare_compare(&ca, &cb, &c);
	t->n++;
	t->t_apart += c.method == GPUSHARE_METHOD_WELCH_LOG && c.verdict != GPUSHARE_VERDICT_TIE;
	t->o_apart += c.order_verdict == GPUSHARE_VERDICT_HIGHER || c.order_verdict == GPUSHARE_VERDICT_LOWER;
	t->o_sig += (c.order_verdict == GPUSHARE_VERDICT_HIGHER || c.order_verdict == GPUSHARE_VERDICT_LOWER) &&
		    c.order_confidence >= GPUSHARE_SIGNIFICANCE - 1e-12;
	t->under += c.underpowered;
}

static void print(const char *what, size_t n, const struct tally *t)
{
	/* The t test's rate with its 95% Wilson score interval. */
	double m = (double)t->n, p = m > 0 ? (double)t->t_apart / m : NAN, z = 1.96;
	double c = (p + z * z / (2 * m)) / (1 + z * z / m);
	double h = z / (1 + z * z / m) * sqrt(p * (1 - p) / m + z * z / (4 * m * m));

	printf("%s n=%zu comparisons=%ld t_test_not_tie=%.4f [%.4f-%.4f] order_apart=%.4f order_significant=%.4f underpowered=%.4f\n",
	       what, n, t->n, p, fmax(0, c - h), fmin(1, c + h), m > 0 ? (double)t->o_apart / m : NAN,
	       m > 0 ? (double)t->o_sig / m : NAN, m > 0 ? (double)t->under / m : NAN);
}

int main(int argc, char **argv)
{
	struct tally t = { 0 };

	if (argc >= 6 && !strcmp(argv[1], "sim")) {
		double cv = atof(argv[3]), gap = argc > 6 ? atof(argv[6]) : 1;
		size_t n = (size_t)atol(argv[4]);
		long trials = atol(argv[5]);
		double *a = calloc(n, sizeof(*a)), *b = calloc(n, sizeof(*b));
		char what[96];

		if (!a || !b || n < 2 || n > 1000)
			return 2;
		for (long k = 0; k < trials; k++) {
			for (size_t i = 0; i < n; i++) {
				a[i] = gap * draw(argv[2], cv);
				b[i] = draw(argv[2], cv);
			}
			compare(a, b, n, &t);
		}
		snprintf(what, sizeof(what), "sim %s cv=%g gap=%g", argv[2], cv, gap);
		print(what, n, &t);
		free(a);
		free(b);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "data")) {
		size_t n = (size_t)atol(argv[2]), nv = 0, cap = 1024;
		double *v = malloc(cap * sizeof(*v)), a[1000], b[1000];

		if (!v || n < 2 || n > 1000)
			return 2;
		while (scanf("%lf", &v[nv]) == 1)
			if (++nv == cap && !(v = realloc(v, (cap *= 2) * sizeof(*v))))
				return 2;
		for (size_t s = 0; s + 2 * n <= nv; s += 2 * n) {
			for (size_t i = 0; i < n; i++) {
				a[i] = v[s + 2 * i];
				b[i] = v[s + 2 * i + 1];
			}
			compare(a, b, n, &t);
		}
		print("data", n, &t);
		free(v);
		return 0;
	}
	fprintf(stderr, "usage: stats_aa sim lognormal|normal|outliers CV N TRIALS [GAP] | stats_aa data N < values\n");
	return 2;
}
