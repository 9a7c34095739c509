/*
 * Log-linear latency histograms (HDR layout, see gpushare/hist.h).
 *
 * Bucket b < 128 holds exactly the value b. Above that, the values
 * [2^e, 2^(e+1)) for e = 7 .. MAX_EXP-1 are split into 64 buckets of width
 * 2^(e-6), so a bucket is at most 1/64 of its smallest value wide. Values of
 * 2^MAX_EXP ns or more land in the last bucket and are also counted in
 * `overflow`.
 *
 * A histogram has one writer (a worker thread) and readers in other
 * processes: the writer stores every field with a relaxed atomic store and
 * readers load them with relaxed atomic loads, so no value is ever torn.
 */
#include <math.h>
#include <string.h>

#include "gpushare/hist.h"

#define HALF (GPUSHARE_HIST_SUB / 2)   /* buckets per power of two above SUB */

static uint64_t load64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void store64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static double loadd(const double *p)
{
	double v;

	__atomic_load(p, &v, __ATOMIC_RELAXED);
	return v;
}

static void stored(double *p, double v)
{
	__atomic_store(p, &v, __ATOMIC_RELAXED);
}

void gpushare_hist_init(struct gpushare_hist *h)
{
	size_t i;

	store64(&h->count, 0);
	store64(&h->sum_ns, 0);
	stored(&h->sum_sq_ns, 0.0);
	store64(&h->min_ns, UINT64_MAX);
	store64(&h->max_ns, 0);
	store64(&h->overflow, 0);
	for (i = 0; i < GPUSHARE_HIST_BUCKETS; i++)
		store64(&h->buckets[i], 0);
}

size_t gpushare_hist_bucket(uint64_t ns)
{
	unsigned e;

	if (ns < GPUSHARE_HIST_SUB)
		return (size_t)ns;
	if (ns >> GPUSHARE_HIST_MAX_EXP)
		return GPUSHARE_HIST_BUCKETS - 1;
	e = 63u - (unsigned)__builtin_clzll(ns);  /* SUB_BITS <= e < MAX_EXP */
	return GPUSHARE_HIST_SUB + (size_t)(e - GPUSHARE_HIST_SUB_BITS) * HALF +
	       (size_t)((ns >> (e - (GPUSHARE_HIST_SUB_BITS - 1))) - HALF);
}

uint64_t gpushare_hist_bucket_low(size_t bucket)
{
	size_t k;
	unsigned e;

	if (bucket < GPUSHARE_HIST_SUB)
		return bucket;
	if (bucket >= GPUSHARE_HIST_BUCKETS)
		bucket = GPUSHARE_HIST_BUCKETS - 1;
	k = bucket - GPUSHARE_HIST_SUB;
	e = GPUSHARE_HIST_SUB_BITS + (unsigned)(k / HALF);
	return (uint64_t)(HALF + k % HALF) << (e - (GPUSHARE_HIST_SUB_BITS - 1));
}

uint64_t gpushare_hist_bucket_high(size_t bucket)
{
	unsigned e;

	if (bucket < GPUSHARE_HIST_SUB)
		return bucket;
	if (bucket >= GPUSHARE_HIST_BUCKETS)
		bucket = GPUSHARE_HIST_BUCKETS - 1;
	e = GPUSHARE_HIST_SUB_BITS + (unsigned)((bucket - GPUSHARE_HIST_SUB) / HALF);
	return gpushare_hist_bucket_low(bucket) + (1ULL << (e - (GPUSHARE_HIST_SUB_BITS - 1))) - 1;
}

void gpushare_hist_record(struct gpushare_hist *h, uint64_t ns)
{
	size_t b = gpushare_hist_bucket(ns);
	double d = (double)ns;

	/* Only this thread writes, so a plain read-modify-write of each field
	 * is race free; the stores are atomic for the readers' sake. */
	store64(&h->buckets[b], load64(&h->buckets[b]) + 1);
	if (ns >> GPUSHARE_HIST_MAX_EXP)
		store64(&h->overflow, load64(&h->overflow) + 1);
	if (ns < load64(&h->min_ns))
		store64(&h->min_ns, ns);
	if (ns > load64(&h->max_ns))
		store64(&h->max_ns, ns);
	store64(&h->sum_ns, load64(&h->sum_ns) + ns);
	stored(&h->sum_sq_ns, loadd(&h->sum_sq_ns) + d * d);
	store64(&h->count, load64(&h->count) + 1);
}

void gpushare_hist_snapshot(const struct gpushare_hist *h, struct gpushare_hist *copy)
{
	size_t i;

	copy->count = load64(&h->count);
	copy->sum_ns = load64(&h->sum_ns);
	copy->sum_sq_ns = loadd(&h->sum_sq_ns);
	copy->min_ns = load64(&h->min_ns);
	copy->max_ns = load64(&h->max_ns);
	copy->overflow = load64(&h->overflow);
	for (i = 0; i < GPUSHARE_HIST_BUCKETS; i++)
		copy->buckets[i] = load64(&h->buckets[i]);
}

/* dst is private to the caller; src may be live in another process. */
void gpushare_hist_merge(struct gpushare_hist *dst, const struct gpushare_hist *src)
{
	uint64_t smin = load64(&src->min_ns), smax = load64(&src->max_ns);
	size_t i;

	dst->count += load64(&src->count);
	dst->sum_ns += load64(&src->sum_ns);
	dst->sum_sq_ns += loadd(&src->sum_sq_ns);
	dst->overflow += load64(&src->overflow);
	if (smin < dst->min_ns)
		dst->min_ns = smin;
	if (smax > dst->max_ns)
		dst->max_ns = smax;
	for (i = 0; i < GPUSHARE_HIST_BUCKETS; i++)
		dst->buckets[i] += load64(&src->buckets[i]);
}

uint64_t gpushare_hist_quantile(const struct gpushare_hist *h, double q)
{
	uint64_t total = 0, rank, seen = 0, mid, lo, hi;
	uint64_t hmin = load64(&h->min_ns), hmax = load64(&h->max_ns);
	size_t i;

	/* Count from the buckets themselves: in a live snapshot `count` may
	 * be one ahead of or behind them. */
	for (i = 0; i < GPUSHARE_HIST_BUCKETS; i++)
		total += load64(&h->buckets[i]);
	if (total == 0)
		return 0;
	/* The ends are known exactly. */
	if (!(q > 0.0) && hmin <= hmax)
		return hmin;
	if (q >= 1.0)
		return hmax;
	/* The q-th value of the sorted values is the one of rank ceil(q*n). */
	rank = (uint64_t)ceil(q * (double)total);
	if (rank < 1)
		rank = 1;
	if (rank > total)
		rank = total;
	for (i = 0; i < GPUSHARE_HIST_BUCKETS; i++) {
		seen += load64(&h->buckets[i]);
		if (seen >= rank)
			break;
	}
	if (i == GPUSHARE_HIST_BUCKETS)
		i = GPUSHARE_HIST_BUCKETS - 1;
	lo = gpushare_hist_bucket_low(i);
	hi = gpushare_hist_bucket_high(i);
	mid = lo + (hi - lo) / 2;
	if (hmax >= hmin) {
		if (mid < hmin)
			mid = hmin;
		if (mid > hmax)
			mid = hmax;
	}
	return mid;
}

double gpushare_hist_mean(const struct gpushare_hist *h)
{
	uint64_t n = load64(&h->count);

	return n ? (double)load64(&h->sum_ns) / (double)n : 0.0;
}

/* Population standard deviation (the spread of the recorded values). */
double gpushare_hist_stddev(const struct gpushare_hist *h)
{
	uint64_t n = load64(&h->count);
	double mean, var;

	if (n == 0)
		return 0.0;
	mean = (double)load64(&h->sum_ns) / (double)n;
	var = loadd(&h->sum_sq_ns) / (double)n - mean * mean;
	return var > 0.0 ? sqrt(var) : 0.0;
}

uint64_t gpushare_hist_count_le(const struct gpushare_hist *h, uint64_t ns)
{
	size_t last = gpushare_hist_bucket(ns), i;
	uint64_t n = 0;

	for (i = 0; i <= last; i++)
		n += load64(&h->buckets[i]);
	return n;
}
