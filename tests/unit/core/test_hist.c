/*
 * Unit tests of lib/core/hist.c: bucket layout, quantile accuracy against exactly
 * sorted data, merge, mean/stddev, count_le and empty/overflow cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpushare/hist.h"

static const double quantiles[] = { 0.0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1.0 };

/* Deterministic xorshift64*, so failures reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static double rng_unit(void)
{
	return ((double)(rng() >> 11) + 0.5) / 9007199254740992.0;  /* (0, 1) */
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static struct gpushare_hist *hist_new(void)
{
	struct gpushare_hist *h = malloc(sizeof(*h));

	assert_non_null(h);
	gpushare_hist_init(h);
	return h;
}

/* The exact q-th value: the one of rank ceil(q*n) in sorted order. */
static uint64_t exact_quantile(const uint64_t *sorted, size_t n, double q)
{
	size_t rank = (size_t)ceil(q * (double)n);

	if (rank < 1)
		rank = 1;
	return sorted[rank - 1];
}

static void check_quantiles(uint64_t *v, size_t n)
{
	struct gpushare_hist *h = hist_new();
	size_t i;

	for (i = 0; i < n; i++)
		gpushare_hist_record(h, v[i]);
	qsort(v, n, sizeof(*v), cmp_u64);
	for (i = 0; i < sizeof(quantiles) / sizeof(quantiles[0]); i++) {
		double want = (double)exact_quantile(v, n, quantiles[i]);
		double got = (double)gpushare_hist_quantile(h, quantiles[i]);

		size_t b = gpushare_hist_bucket((uint64_t)want);
		double half = (double)(gpushare_hist_bucket_high(b) - gpushare_hist_bucket_low(b)) / 2.0;

		if (fabs(got - want) > 0.01 * want)
			fail_msg("q=%g: got %.0f, exact %.0f", quantiles[i], got, want);
		/* Tighter: the bucket middle is at most half a bucket away. */
		if (fabs(got - want) > half + 0.5)
			fail_msg("q=%g: got %.0f, exact %.0f, more than half a bucket (%.1f) off", quantiles[i], got, want, half);
	}
	assert_int_equal(gpushare_hist_quantile(h, 0.0), v[0]);
	assert_int_equal(gpushare_hist_quantile(h, 1.0), v[n - 1]);
	free(h);
}

static void test_buckets_contiguous(void **state)
{
	size_t b;

	(void)state;
	assert_int_equal(GPUSHARE_HIST_BUCKETS, 128 + 35 * 64);
	assert_int_equal(gpushare_hist_bucket_low(0), 0);
	for (b = 0; b + 1 < GPUSHARE_HIST_BUCKETS; b++) {
		assert_true(gpushare_hist_bucket_low(b) <= gpushare_hist_bucket_high(b));
		assert_int_equal(gpushare_hist_bucket_high(b) + 1, gpushare_hist_bucket_low(b + 1));
	}
	assert_int_equal(gpushare_hist_bucket_high(GPUSHARE_HIST_BUCKETS - 1), (1ULL << GPUSHARE_HIST_MAX_EXP) - 1);
}

static void test_buckets_exact_below_128(void **state)
{
	uint64_t v;

	(void)state;
	for (v = 0; v < 128; v++) {
		assert_int_equal(gpushare_hist_bucket(v), v);
		assert_int_equal(gpushare_hist_bucket_low(v), v);
		assert_int_equal(gpushare_hist_bucket_high(v), v);
	}
	assert_int_equal(gpushare_hist_bucket(128), 128);
	assert_int_equal(gpushare_hist_bucket(129), 128);  /* width 2 from 128 on */
	assert_int_equal(gpushare_hist_bucket(130), 129);
}

static void check_value(uint64_t v)
{
	size_t b = gpushare_hist_bucket(v);

	assert_true(b < GPUSHARE_HIST_BUCKETS);
	if (gpushare_hist_bucket_low(b) > v || gpushare_hist_bucket_high(b) < v)
		fail_msg("value %llu in bucket %zu [%llu, %llu]", (unsigned long long)v, b,
			 (unsigned long long)gpushare_hist_bucket_low(b), (unsigned long long)gpushare_hist_bucket_high(b));
}

static void test_values_in_their_bucket(void **state)
{
	uint64_t v;
	unsigned e;
	size_t b, i;

	(void)state;
	for (v = 0; v < 100000; v++)
		check_value(v);
	for (e = 1; e < GPUSHARE_HIST_MAX_EXP; e++) {
		check_value((1ULL << e) - 1);
		check_value(1ULL << e);
		check_value((1ULL << e) + 1);
	}
	check_value((1ULL << GPUSHARE_HIST_MAX_EXP) - 1);
	for (i = 0; i < 200000; i++)
		check_value(rng() >> (64 - GPUSHARE_HIST_MAX_EXP));
	for (b = 0; b < GPUSHARE_HIST_BUCKETS; b++) {
		assert_int_equal(gpushare_hist_bucket(gpushare_hist_bucket_low(b)), b);
		assert_int_equal(gpushare_hist_bucket(gpushare_hist_bucket_high(b)), b);
	}
}

static void test_relative_width(void **state)
{
	size_t b;

	(void)state;
	for (b = 128; b < GPUSHARE_HIST_BUCKETS; b++) {
		uint64_t lo = gpushare_hist_bucket_low(b), width = gpushare_hist_bucket_high(b) - lo + 1;

		assert_true(width * 64 <= lo);
	}
}

static void test_overflow(void **state)
{
	struct gpushare_hist *h = hist_new();

	(void)state;
	gpushare_hist_record(h, 1000);
	gpushare_hist_record(h, 1ULL << GPUSHARE_HIST_MAX_EXP);
	gpushare_hist_record(h, 1ULL << 50);
	assert_int_equal(h->count, 3);
	assert_int_equal(h->overflow, 2);
	assert_int_equal(h->buckets[GPUSHARE_HIST_BUCKETS - 1], 2);
	assert_int_equal(gpushare_hist_bucket(UINT64_MAX), GPUSHARE_HIST_BUCKETS - 1);
	assert_int_equal(h->max_ns, 1ULL << 50);
	/* Quantiles stay within what was recorded. */
	assert_true(gpushare_hist_quantile(h, 1.0) <= 1ULL << 50);
	assert_true(gpushare_hist_quantile(h, 0.9) >= (1ULL << GPUSHARE_HIST_MAX_EXP) - (1ULL << 36));
	assert_int_equal(gpushare_hist_count_le(h, UINT64_MAX), 3);
	free(h);
}

static void test_quantiles_uniform(void **state)
{
	const size_t n = 1000000;
	uint64_t *v = malloc(n * sizeof(*v));
	size_t i;

	(void)state;
	assert_non_null(v);
	for (i = 0; i < n; i++)
		v[i] = i + 1;
	/* Record in a shuffled order: order must not matter. */
	for (i = n - 1; i > 0; i--) {
		size_t j = (size_t)(rng() % (i + 1));
		uint64_t t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
	check_quantiles(v, n);
	free(v);
}

static void test_quantiles_lognormal(void **state)
{
	const size_t n = 200000;
	uint64_t *v = malloc(n * sizeof(*v));
	size_t i;

	(void)state;
	assert_non_null(v);
	for (i = 0; i < n; i++) {
		/* Box-Muller: median 100 us, heavy right tail. */
		double z = sqrt(-2.0 * log(rng_unit())) * cos(2.0 * M_PI * rng_unit());

		v[i] = (uint64_t)exp(log(100000.0) + 1.2 * z) + 1;
	}
	check_quantiles(v, n);
	free(v);
}

static void test_quantiles_small_values(void **state)
{
	uint64_t v[] = { 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3 };

	(void)state;
	check_quantiles(v, sizeof(v) / sizeof(v[0]));  /* exact below 128 */
}

static void test_single_value(void **state)
{
	struct gpushare_hist *h = hist_new();
	size_t i;

	(void)state;
	for (i = 0; i < 5; i++)
		gpushare_hist_record(h, 123457);
	for (i = 0; i < sizeof(quantiles) / sizeof(quantiles[0]); i++)
		assert_int_equal(gpushare_hist_quantile(h, quantiles[i]), 123457);
	assert_float_equal(gpushare_hist_mean(h), 123457.0, 1e-9);
	assert_float_equal(gpushare_hist_stddev(h), 0.0, 1e-3);
	assert_int_equal(h->min_ns, 123457);
	assert_int_equal(h->max_ns, 123457);
	free(h);
}

static void test_empty(void **state)
{
	struct gpushare_hist *h = hist_new();

	(void)state;
	assert_int_equal(h->count, 0);
	assert_int_equal(h->min_ns, UINT64_MAX);
	assert_int_equal(h->max_ns, 0);
	assert_int_equal(gpushare_hist_quantile(h, 0.5), 0);
	assert_int_equal(gpushare_hist_quantile(h, 1.0), 0);
	assert_float_equal(gpushare_hist_mean(h), 0.0, 0.0);
	assert_float_equal(gpushare_hist_stddev(h), 0.0, 0.0);
	assert_int_equal(gpushare_hist_count_le(h, UINT64_MAX), 0);
	free(h);
}

static void test_mean_stddev(void **state)
{
	static const uint64_t small[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	struct gpushare_hist *h = hist_new();
	const size_t n = 50000;
	uint64_t *v = malloc(n * sizeof(*v));
	double sum = 0, sq = 0, mean;
	size_t i;

	(void)state;
	assert_non_null(v);
	for (i = 0; i < sizeof(small) / sizeof(small[0]); i++)
		gpushare_hist_record(h, small[i]);
	assert_float_equal(gpushare_hist_mean(h), 5.0, 1e-12);
	assert_float_equal(gpushare_hist_stddev(h), 2.0, 1e-12);  /* population */

	gpushare_hist_init(h);
	for (i = 0; i < n; i++) {
		v[i] = 1000000 + rng() % 5000000;
		gpushare_hist_record(h, v[i]);
		sum += (double)v[i];
	}
	mean = sum / (double)n;
	for (i = 0; i < n; i++)
		sq += ((double)v[i] - mean) * ((double)v[i] - mean);
	assert_float_equal(gpushare_hist_mean(h) / mean, 1.0, 1e-12);
	assert_float_equal(gpushare_hist_stddev(h) / sqrt(sq / (double)n), 1.0, 1e-9);
	free(v);
	free(h);
}

static void test_merge(void **state)
{
	struct gpushare_hist *a = hist_new(), *b = hist_new(), *all = hist_new(), *m = hist_new();
	size_t i;

	(void)state;
	for (i = 0; i < 100000; i++) {
		uint64_t v = rng() >> (i % 2 ? 30 : 40);  /* two different ranges */

		gpushare_hist_record(i % 3 ? a : b, v);
		gpushare_hist_record(all, v);
	}
	gpushare_hist_record(b, 1ULL << 45);
	gpushare_hist_record(all, 1ULL << 45);
	gpushare_hist_merge(m, a);
	gpushare_hist_merge(m, b);
	assert_int_equal(m->count, all->count);
	assert_int_equal(m->sum_ns, all->sum_ns);
	assert_int_equal(m->min_ns, all->min_ns);
	assert_int_equal(m->max_ns, all->max_ns);
	assert_int_equal(m->overflow, all->overflow);
	assert_float_equal(m->sum_sq_ns / all->sum_sq_ns, 1.0, 1e-12);
	assert_memory_equal(m->buckets, all->buckets, sizeof(m->buckets));
	for (i = 0; i < sizeof(quantiles) / sizeof(quantiles[0]); i++)
		assert_int_equal(gpushare_hist_quantile(m, quantiles[i]), gpushare_hist_quantile(all, quantiles[i]));
	/* Merging an empty histogram changes nothing. */
	gpushare_hist_init(a);
	gpushare_hist_merge(m, a);
	assert_int_equal(m->min_ns, all->min_ns);
	assert_int_equal(m->count, all->count);
	free(a);
	free(b);
	free(all);
	free(m);
}

static void test_snapshot(void **state)
{
	struct gpushare_hist *h = hist_new(), *c = hist_new();
	size_t i;

	(void)state;
	for (i = 0; i < 1000; i++)
		gpushare_hist_record(h, rng() >> 44);
	gpushare_hist_snapshot(h, c);
	assert_memory_equal(h, c, sizeof(*h));
	free(h);
	free(c);
}

static void test_count_le(void **state)
{
	struct gpushare_hist *h = hist_new();
	uint64_t v;

	(void)state;
	for (v = 1; v <= 10000; v++)
		gpushare_hist_record(h, v);
	assert_int_equal(gpushare_hist_count_le(h, 0), 0);
	assert_int_equal(gpushare_hist_count_le(h, 1), 1);
	assert_int_equal(gpushare_hist_count_le(h, 100), 100);
	assert_int_equal(gpushare_hist_count_le(h, 127), 127);
	assert_int_equal(gpushare_hist_count_le(h, 10000), 10000);
	assert_int_equal(gpushare_hist_count_le(h, UINT64_MAX), 10000);
	/* Above 128, bucket resolution: everything in v's bucket counts. */
	for (v = 128; v <= 10000; v += 37) {
		uint64_t got = gpushare_hist_count_le(h, v);
		uint64_t high = gpushare_hist_bucket_high(gpushare_hist_bucket(v));

		assert_true(got >= v);
		assert_int_equal(got, high < 10000 ? high : 10000);
	}
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buckets_contiguous),
		cmocka_unit_test(test_buckets_exact_below_128),
		cmocka_unit_test(test_values_in_their_bucket),
		cmocka_unit_test(test_relative_width),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_quantiles_uniform),
		cmocka_unit_test(test_quantiles_lognormal),
		cmocka_unit_test(test_quantiles_small_values),
		cmocka_unit_test(test_single_value),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_mean_stddev),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_count_le),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
