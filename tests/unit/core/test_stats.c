/* Unit tests of lib/core/stats.c: median intervals with their exact coverage,
 * spread, and comparisons (tie, significance at the stated level). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpushare/stats.h"

static void test_one_run_no_interval(void **state)
{
	const double x[] = { 5 };
	struct gpushare_ci ci;

	(void)state;
	gpushare_median_ci(x, 1, 0.95, &ci);
	assert_true(ci.n == 1 && ci.median == 5);
	assert_false(gpushare_ci_has_interval(&ci));
	assert_true(isnan(ci.lo) && isnan(ci.hi) && ci.coverage == 0);
	assert_true(isinf(gpushare_ci_rel_halfwidth(&ci)));
}

static void test_coverage_exact(void **state)
{
	const double two[] = { 3, 1 }, six[] = { 6, 1, 5, 2, 4, 3 };
	double many[20];
	struct gpushare_ci ci;

	(void)state;
	/* Two runs: [min, max] covers the median half the time. */
	gpushare_median_ci(two, 2, 0.95, &ci);
	assert_true(ci.lo == 1 && ci.hi == 3 && ci.median == 2);
	assert_true(fabs(ci.coverage - 0.5) < 1e-12);
	/* Five runs: 1 - 2^-4. Six: 1 - 2/64, the first at or above 95%. */
	assert_true(fabs(gpushare_median_ci_coverage(5, 1) - 0.9375) < 1e-12);
	gpushare_median_ci(six, 6, 0.95, &ci);
	assert_true(ci.lo == 1 && ci.hi == 6 && ci.median == 3.5);
	assert_true(fabs(ci.coverage - 0.96875) < 1e-12);
	/* Twenty runs: rank 6 (P(B <= 5) = 0.0207), coverage 1 - 2 x 0.020695. */
	for (int i = 0; i < 20; i++)
		many[i] = i + 1;
	gpushare_median_ci(many, 20, 0.95, &ci);
	assert_true(ci.lo == 6 && ci.hi == 15);
	assert_true(fabs(ci.coverage - (1 - 2 * 21700.0 / 1048576.0)) < 1e-9);
	assert_true(ci.coverage >= 0.95);
}

/* The order-statistic interval as it was computed before it became linear
 * in n: the binomial CDF summed from scratch for every candidate rank. The
 * linear walk must pick the same ranks and state the same coverage, to the
 * last bit, for every n. */
static double ref_cdf(size_t n, size_t k)
{
	double sum = 0, log_half_n = -(double)n * log(2.0);

	for (size_t j = 0; j <= k && j <= n; j++)
		sum += exp(lgamma((double)n + 1) - lgamma((double)j + 1) - lgamma((double)(n - j) + 1) + log_half_n);
	return sum > 1 ? 1 : sum;
}

static void test_interval_linear_same_as_reference(void **state)
{
	static double x[1200];
	double conf[] = { 0.95, 0.90, 0.99, 0.5 };

	(void)state;
	for (size_t i = 0; i < 1200; i++)
		x[i] = (double)i; /* sorted already: rank r is the value r-1 */
	for (size_t c = 0; c < sizeof(conf) / sizeof(conf[0]); c++) {
		for (size_t n = 2; n <= 1200; n += n < 100 ? 1 : 37) {
			struct gpushare_ci ci;
			size_t l = 1;

			while (2 * (l + 1) <= n + 1 && ref_cdf(n, l) <= (1 - conf[c]) / 2)
				l++;
			gpushare_median_ci(x, n, conf[c], &ci);
			assert_true(ci.lo == (double)(l - 1));
			assert_true(ci.hi == (double)(n - l));
			assert_true(ci.coverage == 1 - 2 * ref_cdf(n, l - 1));
			assert_true(ci.coverage == gpushare_median_ci_coverage(n, l));
		}
	}
}

static void test_sample_stats(void **state)
{
	const double x[] = { 10445, 6141, 4478 };
	struct gpushare_sample_stats st;

	(void)state;
	gpushare_sample_stats(x, 3, &st);
	assert_true(st.n == 3 && st.min == 4478 && st.max == 10445);
	assert_true(fabs(st.mean - 7021.333333) < 1e-3);
	assert_true(fabs(st.stddev - 3079.4) < 1);
	assert_true(st.cv > 0.4);
	gpushare_sample_stats(x, 1, &st);
	assert_true(isnan(st.stddev) && isnan(st.cv));
}

static void test_compare(void **state)
{
	const double a[] = { 10, 11, 12, 10.5, 11.5, 10.8, 11.2 }, b[] = { 5, 5.5, 6, 5.2, 5.8, 5.4, 5.6 };
	const double c[] = { 5.9, 6.5, 7 }, one[] = { 9 }, neg[] = { -1, 2, 3 };
	struct gpushare_ci ca, cb, cc, c1, cn;
	struct gpushare_comparison cmp;

	(void)state;
	gpushare_median_ci(a, 7, 0.95, &ca);
	gpushare_median_ci(b, 7, 0.95, &cb);
	gpushare_median_ci(c, 3, 0.95, &cc);
	gpushare_median_ci(one, 1, 0.95, &c1);
	gpushare_median_ci(neg, 3, 0.95, &cn);
	/* Seven runs each, apart: the t test says higher; the order rule too, at
	 * (1 - 2/128)^2 >= 95%. */
	gpushare_compare(&ca, &cb, &cmp);
	assert_int_equal(cmp.method, GPUSHARE_METHOD_WELCH_LOG);
	assert_int_equal(cmp.verdict, GPUSHARE_VERDICT_HIGHER);
	assert_true(cmp.significant && cmp.p_value < 1e-6 && cmp.t_lo > 1.8 && cmp.t_hi < 2.2);
	assert_int_equal(cmp.order_verdict, GPUSHARE_VERDICT_HIGHER);
	assert_true(fabs(cmp.order_confidence - pow(1 - 2.0 / 128, 2)) < 1e-12);
	assert_true(fabs(cmp.ratio - 11.0 / 5.5) < 1e-12 && cmp.ratio_lo == 10.0 / 6 && cmp.ratio_hi == 12.0 / 5);
	assert_string_equal(gpushare_method_name(cmp.method), "welch-log");
	/* Overlapping, noisy: a tie by both rules, never significant. */
	gpushare_compare(&cc, &cb, &cmp);
	assert_int_equal(cmp.verdict, GPUSHARE_VERDICT_TIE);
	assert_int_equal(cmp.order_verdict, GPUSHARE_VERDICT_TIE);
	assert_false(cmp.significant);
	assert_true(cmp.t_lo < 1 && cmp.t_hi > 1 && cmp.p_value > 0.05 && isnan(cmp.confidence));
	assert_string_equal(gpushare_verdict_name(cmp.verdict), "tie");
	/* Apart, three runs (75%) x seven: the order rule is below 95%, the t
	 * test (the spreads are small against the gap) calls it. */
	gpushare_compare(&ca, &cc, &cmp);
	assert_int_equal(cmp.verdict, GPUSHARE_VERDICT_HIGHER);
	assert_true(cmp.significant);
	assert_int_equal(cmp.order_verdict, GPUSHARE_VERDICT_HIGHER);
	assert_true(cmp.order_confidence < 0.95);
	/* One run: a ratio, no verdict. */
	gpushare_compare(&c1, &cb, &cmp);
	assert_int_equal(cmp.verdict, GPUSHARE_VERDICT_UNKNOWN);
	assert_int_equal(cmp.method, GPUSHARE_METHOD_NONE);
	assert_true(fabs(cmp.ratio - 9 / 5.5) < 1e-12);
	assert_true(isnan(cmp.ratio_lo) && isnan(cmp.confidence) && isnan(cmp.p_value));
	/* A value <= 0: no logs, the order rule gives the verdict. */
	gpushare_compare(&ca, &cn, &cmp);
	assert_int_equal(cmp.method, GPUSHARE_METHOD_ORDER);
	assert_int_equal(cmp.verdict, GPUSHARE_VERDICT_HIGHER);
	assert_false(cmp.significant);
}

/* Two runs a side, a 2.44x gap, every run's spread under 1%: a clear win
 * (the order rule alone says 25% and no verdict). Two noisy arms whose
 * runs overlap are a tie. */
static void test_compare_two_runs(void **state)
{
	const double fast[] = { 2440, 2452 }, slow[] = { 1000, 1006 };
	const double n1[] = { 900, 1150 }, n2[] = { 1000, 1250 };
	struct gpushare_ci cf, cs, c1, c2;
	struct gpushare_comparison cmp;

	(void)state;
	gpushare_median_ci(fast, 2, 0.95, &cf);
	gpushare_median_ci(slow, 2, 0.95, &cs);
	gpushare_compare(&cf, &cs, &cmp);
	assert_int_equal(cmp.verdict, GPUSHARE_VERDICT_HIGHER);
	assert_true(cmp.significant);
	assert_true(cmp.t_lo > 2.3 && cmp.t_hi < 2.6);
	assert_int_equal(cmp.order_verdict, GPUSHARE_VERDICT_HIGHER);
	assert_true(fabs(cmp.order_confidence - 0.25) < 1e-12);
	assert_true(gpushare_compare_clear(&cmp, GPUSHARE_VERDICT_HIGHER));
	assert_false(gpushare_compare_clear(&cmp, GPUSHARE_VERDICT_LOWER));
	assert_false(gpushare_compare_clear(&cmp, GPUSHARE_VERDICT_TIE));
	gpushare_compare(&cs, &cf, &cmp);
	assert_int_equal(cmp.verdict, GPUSHARE_VERDICT_LOWER);
	assert_true(gpushare_compare_clear(&cmp, GPUSHARE_VERDICT_LOWER));
	assert_false(gpushare_compare_clear(&cmp, GPUSHARE_VERDICT_HIGHER));
	/* Apart but not significant: no clear win. */
	cmp.significant = false;
	assert_false(gpushare_compare_clear(&cmp, GPUSHARE_VERDICT_LOWER));
	gpushare_median_ci(n1, 2, 0.95, &c1);
	gpushare_median_ci(n2, 2, 0.95, &c2);
	gpushare_compare(&c2, &c1, &cmp);
	assert_int_equal(cmp.verdict, GPUSHARE_VERDICT_TIE);
	assert_false(cmp.significant);
	assert_false(gpushare_compare_clear(&cmp, GPUSHARE_VERDICT_HIGHER));
	assert_false(gpushare_compare_clear(&cmp, GPUSHARE_VERDICT_TIE));
	/* Even apart order intervals (two runs each, 5% gap, 2% spread) are a tie. */
	{
		const double p[] = { 1000, 1020 }, q[] = { 1050, 1071 };
		struct gpushare_ci cp, cq;

		gpushare_median_ci(p, 2, 0.95, &cp);
		gpushare_median_ci(q, 2, 0.95, &cq);
		gpushare_compare(&cq, &cp, &cmp);
		assert_int_equal(cmp.order_verdict, GPUSHARE_VERDICT_HIGHER);
		assert_int_equal(cmp.verdict, GPUSHARE_VERDICT_TIE);
	}
}

/* Student's t against tabulated values. */
/* Issue #34: 2 runs a side, 1 worker 2.79k items/s, 4 workers 5.27k, the
 * order-statistic intervals apart and the t test (about 1 degree of
 * freedom) not significant: no tie "within noise", but underpowered, with
 * the runs a side that would settle the measured difference. */
static void test_compare_underpowered(void **state)
{
	const double one[] = { 2780, 2800 }, four[] = { 4300, 6240 };
	const double calm_a[] = { 1000, 1003 }, calm_b[] = { 1001, 1004 };
	struct gpushare_ci a, b;
	struct gpushare_comparison c;
	char text[256];

	(void)state;
	gpushare_median_ci(one, 2, 0.95, &a);
	gpushare_median_ci(four, 2, 0.95, &b);
	gpushare_compare(&a, &b, &c);
	assert_int_equal(c.method, GPUSHARE_METHOD_WELCH_LOG);
	assert_int_equal(c.verdict, GPUSHARE_VERDICT_TIE);
	assert_int_equal(c.order_verdict, GPUSHARE_VERDICT_LOWER);
	assert_false(c.significant);
	assert_true(c.underpowered);
	assert_int_equal(c.runs, 2);
	assert_true(c.runs_needed > 2);
	/* The difference settled is the measured one: the ratio of the
	 * geometric means less 1, 86%. */
	assert_true(fabs(c.settle_diff - (exp(fabs(a.log_mean - b.log_mean)) - 1)) < 1e-9);
	assert_string_equal(gpushare_compare_verdict_name(&c), "underpowered");
	assert_true(gpushare_compare_unsettled_text(&c, "1 worker", "4 workers", text, sizeof(text)));
	assert_non_null(strstr(text, "cannot tell 1 worker from 4 workers with 2 runs; "));
	assert_non_null(strstr(text, "more runs a side would settle a difference of 8"));
	assert_false(gpushare_compare_clear(&c, GPUSHARE_VERDICT_LOWER));

	/* Two calm cells 0.1% apart at 2 runs: a tie the runs settle. */
	gpushare_median_ci(calm_a, 2, 0.95, &a);
	gpushare_median_ci(calm_b, 2, 0.95, &b);
	gpushare_compare(&a, &b, &c);
	assert_int_equal(c.verdict, GPUSHARE_VERDICT_TIE);
	assert_false(c.underpowered);
	assert_string_equal(gpushare_compare_verdict_name(&c), "tie");
	assert_false(gpushare_compare_unsettled_text(&c, "a", "b", text, sizeof(text)));
	assert_string_equal(text, "");

	/* The runs needed: equal spreads give the textbook 2n-2 df answer
	 * (s = 5%, a 5% difference: 18 a side at 80% power), more spread or a
	 * smaller difference more runs, no spread or no difference none. */
	assert_int_equal(gpushare_runs_needed(0.05, 0.05, log(1.05)), 18);
	assert_true(gpushare_runs_needed(0.10, 0.05, log(1.05)) > 18);
	assert_true(gpushare_runs_needed(0.05, 0.05, log(1.02)) > 18);
	assert_int_equal(gpushare_runs_needed(0.05, 0.05, 2), 2);
	assert_int_equal(gpushare_runs_needed(0, 0, 0.1), 0);
	assert_int_equal(gpushare_runs_needed(0.05, 0.05, 0), 0);
}

static void test_t_dist(void **state)
{
	(void)state;
	assert_true(fabs(gpushare_t_quantile(0.975, 1) - 12.7062) < 1e-3);
	assert_true(fabs(gpushare_t_quantile(0.975, 2) - 4.3027) < 1e-3);
	assert_true(fabs(gpushare_t_quantile(0.975, 10) - 2.2281) < 1e-3);
	assert_true(fabs(gpushare_t_quantile(0.975, 1e6) - 1.95996) < 1e-3);
	assert_true(fabs(gpushare_t_quantile(0.025, 5) + 2.5706) < 1e-3);
	assert_true(fabs(gpushare_t_cdf(0, 3) - 0.5) < 1e-12);
	assert_true(fabs(gpushare_t_cdf(2.0150, 5) - 0.95) < 1e-4);
	assert_true(fabs(gpushare_t_cdf(1.5, 2.5) - (1 - gpushare_t_cdf(-1.5, 2.5))) < 1e-12);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_run_no_interval),
		cmocka_unit_test(test_coverage_exact),
		cmocka_unit_test(test_interval_linear_same_as_reference),
		cmocka_unit_test(test_sample_stats),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_compare_two_runs),
		cmocka_unit_test(test_compare_underpowered),
		cmocka_unit_test(test_t_dist),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
