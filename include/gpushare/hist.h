/*
 * Log-linear latency histograms (the HDR layout): values below 2^SUB_BITS
 * are exact; above, each power of two is split into 2^(SUB_BITS-1) equal
 * buckets, so a bucket is at most 1/64 of its values wide and the bucket
 * middle that quantiles report is within 0.79% of any value in it (<= 1%),
 * from 1 ns to 2^MAX_EXP ns (about 73 minutes). Larger
 * values land in the last bucket and are counted in `overflow`.
 *
 * One writer per histogram (a worker thread); readers in other processes take
 * snapshots while it runs. Fields are updated with relaxed atomic stores so a
 * snapshot never sees a torn value; a snapshot may be off by the requests in
 * flight, which is fine for live views, and final reads happen after the
 * writer stopped.
 */
#ifndef GPUSHARE_HIST_H
#define GPUSHARE_HIST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSHARE_HIST_SUB_BITS 7
#define GPUSHARE_HIST_SUB (1u << GPUSHARE_HIST_SUB_BITS)
#define GPUSHARE_HIST_MAX_EXP 42
/* Values below SUB map 1:1; each later power of two adds SUB/2 buckets. */
#define GPUSHARE_HIST_BUCKETS (GPUSHARE_HIST_SUB + (GPUSHARE_HIST_MAX_EXP - GPUSHARE_HIST_SUB_BITS) * (GPUSHARE_HIST_SUB / 2))

struct gpushare_hist {
	uint64_t count;
	uint64_t sum_ns;
	double sum_sq_ns;              /* sum of squares, for the standard deviation */
	uint64_t min_ns, max_ns;       /* min is UINT64_MAX while empty */
	uint64_t overflow;
	uint64_t buckets[GPUSHARE_HIST_BUCKETS];
};

void gpushare_hist_init(struct gpushare_hist *h);
/* Single writer. */
void gpushare_hist_record(struct gpushare_hist *h, uint64_t ns);
/* Consistent-enough copy of a histogram another process is writing. */
void gpushare_hist_snapshot(const struct gpushare_hist *h, struct gpushare_hist *copy);
void gpushare_hist_merge(struct gpushare_hist *dst, const struct gpushare_hist *src);

/* Bucket arithmetic, exposed for exporters and tests. */
size_t gpushare_hist_bucket(uint64_t ns);
uint64_t gpushare_hist_bucket_low(size_t bucket);   /* smallest value in bucket */
uint64_t gpushare_hist_bucket_high(size_t bucket);  /* largest value in bucket */

/* Value at quantile q in [0,1] (0.99 = p99), the middle of the bucket that
 * holds it, clamped to [min, max]; exactly min for q <= 0 and max for
 * q >= 1; 0 for an empty histogram. */
uint64_t gpushare_hist_quantile(const struct gpushare_hist *h, double q);
double gpushare_hist_mean(const struct gpushare_hist *h);
double gpushare_hist_stddev(const struct gpushare_hist *h);
/* Number of recorded values <= ns (bucket resolution). */
uint64_t gpushare_hist_count_le(const struct gpushare_hist *h, uint64_t ns);

#ifdef __cplusplus
}
#endif
#endif
