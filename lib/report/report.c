/*
 * Sweep reports: grouping recorded runs into cells, their statistics
 * (medians with order-statistic intervals, lib/core/stats.c), and the
 * recommendation: per (shape, batch) and worker count the best way to share
 * with its gains and ties, per strategy the worker count that is enough,
 * and the best throughput under a p99 target.
 * Loading lives in report_load.c (the runs' two forms, kept whole or folded
 * into groups, in report_runs.c), the text outputs in report_text.c, the
 * plots in report_plot.c and the HTML page in report_html.c.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/buf.h"
#include "gpushare/format.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "report_internal.h"
#include "grow.h"

/* ---- formatting ---- */

void gpushare_report_add_xml(struct gpushare_buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': gpushare_buf_add(b, "&lt;", 4); break;
		case '>': gpushare_buf_add(b, "&gt;", 4); break;
		case '&': gpushare_buf_add(b, "&amp;", 5); break;
		case '"': gpushare_buf_add(b, "&quot;", 6); break;
		default: gpushare_buf_add(b, s, 1); break;
		}
	}
}

/* ---- grouping ---- */

static int shape_index(const struct gpushare_report *r, const char *shape)
{
	for (size_t i = 0; i < r->n_shapes; i++) {
		if (!strcmp(r->shapes[i], shape))
			return (int)i;
	}
	return -1;
}

/* The runs of a closed-loop cell come as units: whole runs and groups of
 * folded ones (report_runs.c). Sort order: shape (first appearance),
 * strategy, workers, batch, first line. */
struct run_ref {
	const struct gpushare_report_run *run;     /* whole, or NULL */
	const struct gpushare_report_group *group; /* else its group */
	int shape;
	enum gpushare_strategy strategy;
	int workers;
	long batch;
	size_t line;
};

static int cmp_run(const void *a, const void *b)
{
	const struct run_ref *x = a, *y = b;

	if (x->shape != y->shape)
		return x->shape - y->shape;
	if (x->strategy != y->strategy)
		return x->strategy - y->strategy;
	if (x->workers != y->workers)
		return x->workers - y->workers;
	if (x->batch != y->batch)
		return (x->batch > y->batch) - (x->batch < y->batch);
	return (x->line > y->line) - (x->line < y->line);
}

int gpushare_report_find_cell(const struct gpushare_report *r, const char *shape, enum gpushare_strategy strategy, int workers, long batch)
{
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct gpushare_report_cell *c = &r->cells[i];

		if (c->strategy == strategy && c->workers == workers && c->batch == batch && !strcmp(c->shape, shape))
			return (int)i;
	}
	return -1;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

enum shape_key { KEY_WORKERS, KEY_BATCH, KEY_STRATEGY };

/* The sorted distinct values of one key over the cells of a shape, at most
 * max, into iout (the int keys, workers and strategy) or lout (batch). */
static size_t shape_distinct(const struct gpushare_report *r, const char *shape, enum shape_key key, int *iout,
			     long *lout, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_cells; i++) {
		const struct gpushare_report_cell *c = &r->cells[i];
		long v = key == KEY_WORKERS ? c->workers : key == KEY_BATCH ? c->batch : c->strategy;
		bool seen = false;

		if (strcmp(c->shape, shape))
			continue;
		for (size_t j = 0; j < n; j++)
			seen |= (iout ? iout[j] : lout[j]) == v;
		if (!seen && n < max) {
			if (iout)
				iout[n] = (int)v;
			else
				lout[n] = v;
			n++;
		}
	}
	if (iout)
		qsort(iout, n, sizeof(*iout), cmp_int);
	else if (lout)
		qsort(lout, n, sizeof(*lout), cmp_long);
	return n;
}

size_t gpushare_report_shape_workers(const struct gpushare_report *r, const char *shape, int *out, size_t max)
{
	return shape_distinct(r, shape, KEY_WORKERS, out, NULL, max);
}

size_t gpushare_report_shape_batches(const struct gpushare_report *r, const char *shape, long *out, size_t max)
{
	return shape_distinct(r, shape, KEY_BATCH, NULL, out, max);
}

size_t gpushare_report_shape_strategies(const struct gpushare_report *r, const char *shape, int *out, size_t max)
{
	return shape_distinct(r, shape, KEY_STRATEGY, out, NULL, max);
}

/* One run of a cell: whole, or a folded sample. */
struct cell_run {
	size_t line;
	const struct gpushare_report_run *run;
	const struct gpushare_report_sample *sample;
};

static int cmp_cell_run(const void *a, const void *b)
{
	const struct cell_run *x = a, *y = b;

	return (x->line > y->line) - (x->line < y->line);
}

/* The runs of the cell's n_refs units in file order (each unit's own are). */
static struct cell_run *cell_runs(const struct run_ref *refs, size_t n_refs, size_t *n)
{
	struct cell_run *cr;
	size_t k = 0;

	*n = 0;
	for (size_t i = 0; i < n_refs; i++)
		*n += refs[i].run ? 1 : refs[i].group->n_samples;
	cr = malloc((*n ? *n : 1) * sizeof(*cr));
	if (!cr)
		return NULL;
	for (size_t i = 0; i < n_refs; i++) {
		if (refs[i].run) {
			cr[k].line = refs[i].run->line;
			cr[k].run = refs[i].run;
			cr[k++].sample = NULL;
			continue;
		}
		for (size_t j = 0; j < refs[i].group->n_samples; j++) {
			cr[k].line = refs[i].group->samples[j].line;
			cr[k].run = NULL;
			cr[k++].sample = &refs[i].group->samples[j];
		}
	}
	if (n_refs > 1)
		qsort(cr, k, sizeof(*cr), cmp_cell_run);
	return cr;
}

static int summarise_cell(struct gpushare_report_cell *c, const struct run_ref *refs, size_t n_refs)
{
	enum { T, MEAN, P50, P90, P99, P999, FAIR, UTIL, MEM, NF };
	size_t n, k = 0, kn[NF] = { 0 };
	struct cell_run *cr = cell_runs(refs, n_refs, &n);
	double *t = malloc((n ? n : 1) * NF * sizeof(double));

	if (!t || !cr) {
		free(t);
		free(cr);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		const struct gpushare_report_run *run = cr[i].run;
		const struct gpushare_report_sample *s = cr[i].sample;
		double v[NF];

		if (run && run->status != GPUSHARE_RUN_OK) {
			c->n_failed++;
			if (run->error[0])
				gpushare_report_error_line(c->error, sizeof(c->error), run->error);
			continue;
		}
		if (s) {
			const double f[NF] = { s->items_per_second, s->mean_seconds, s->p50_seconds, s->p90_seconds,
					       s->p99_seconds, s->p999_seconds, s->fairness, s->util_mean_pct,
					       s->mem_used_max_bytes };

			memcpy(v, f, sizeof(v));
		} else {
			const double f[NF] = { run->items_per_second, run->mean_seconds, run->p50_seconds, run->p90_seconds,
					       run->p99_seconds, run->p999_seconds, run->fairness, run->util_mean_pct,
					       run->mem_used_max_bytes };

			memcpy(v, f, sizeof(v));
		}
		k++;
		for (int f = 0; f < NF; f++) {
			if (isfinite(v[f]))
				t[f * n + kn[f]++] = v[f];
		}
		if (run && run->hist_n) {
			if (!c->hist) {
				c->hist = malloc(sizeof(*c->hist));
				if (!c->hist) {
					free(t);
					free(cr);
					return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
				}
				gpushare_hist_init(c->hist);
			}
			for (size_t b = 0; b < run->hist_n; b++) {
				size_t bucket = gpushare_hist_bucket(run->hist_le_ns[b]);

				c->hist->buckets[bucket] += run->hist_counts[b];
				c->hist->count += run->hist_counts[b];
			}
		}
	}
	free(cr);
	c->n_ok = k;
	gpushare_median_ci(t + T * n, kn[T], 0.95, &c->throughput);
	gpushare_median_ci(t + MEAN * n, kn[MEAN], 0.95, &c->mean_latency);
	gpushare_median_ci(t + P50 * n, kn[P50], 0.95, &c->p50_latency);
	gpushare_median_ci(t + P90 * n, kn[P90], 0.95, &c->p90_latency);
	gpushare_median_ci(t + P99 * n, kn[P99], 0.95, &c->p99_latency);
	gpushare_median_ci(t + P999 * n, kn[P999], 0.95, &c->p999_latency);
	gpushare_median_ci(t + FAIR * n, kn[FAIR], 0.95, &c->fairness);
	gpushare_median_ci(t + UTIL * n, kn[UTIL], 0.95, &c->util_pct);
	gpushare_median_ci(t + MEM * n, kn[MEM], 0.95, &c->mem_used_bytes);
	free(t);
	return GPUSHARE_OK;
}

/* ---- recommendation ---- */

void gpushare_report_error_line(char *dst, size_t len, const char *error)
{
	snprintf(dst, len, "%s", error);
	for (char *p = dst; *p; p++)
		if (*p == '|' || *p == '\n' || *p == '\r')
			*p = *p == '|' ? '/' : ' ';
}

bool gpushare_report_sharing(int strategy)
{
	return gpushare_strategy_is_sharing(strategy);
}

static const char *workers_word(int n)
{
	return n == 1 ? "worker" : "workers";
}

static const char *sname(const struct gpushare_report *r, int cell)
{
	return gpushare_strategy_name(r->cells[cell].strategy);
}

/* How a compares with b, in words, for a throughput ("the throughput of")
 * or a latency ("the p99 of"). Welch's t test on logs gives the verdict,
 * the order-statistic rule is beside it:
 *   "2.44x the throughput of timeslice (2.41x-2.47x, t test on logs: significant, p < 0.001;
 *    order statistics: 2.40x-2.48x, apart at 25% confidence)"
 *   "tie with timeslice (1.02x; 0.97x-1.07x holds 1, t test on logs; order statistics: the intervals overlap)"
 * A tie the runs cannot settle (underpowered, stats.h):
 *   "cannot tell it from timeslice with 2 runs; 7 more runs a side would settle a difference of 89% (1.89x; ...)"
 * Without the t test (a value <= 0), the order-statistic rule alone:
 *   "2.16x the throughput of timeslice (1.90x-2.40x; significant, 98.4% confidence)"
 *   "2.16x the throughput of timeslice (1.90x-2.40x; apart at 56.2% confidence, below 95%: not significant)"
 *   "tie with timeslice (1.02x; the intervals overlap)"
 *   "2.16x the throughput of timeslice (too few runs for an interval: no verdict)" */
void gpushare_report_compare_text(const struct gpushare_comparison *c, const char *what, const char *b_name, char *buf,
			 size_t len)
{
	char ratio[24], lo[24], hi[24], conf[16], order[128], pv[32];

	gpushare_fmt_ratio(c->ratio, ratio, sizeof(ratio));
	if (c->method == GPUSHARE_METHOD_WELCH_LOG) {
		if (c->order_verdict == GPUSHARE_VERDICT_TIE) {
			snprintf(order, sizeof(order), "order statistics: the intervals overlap");
		} else {
			gpushare_fmt_ratio(c->ratio_lo, lo, sizeof(lo));
			gpushare_fmt_ratio(c->ratio_hi, hi, sizeof(hi));
			gpushare_fmt_coverage(c->order_confidence, conf, sizeof(conf));
			snprintf(order, sizeof(order), "order statistics: %s-%s, apart at %s confidence", lo, hi, conf);
		}
		gpushare_fmt_ratio(c->t_lo, lo, sizeof(lo));
		gpushare_fmt_ratio(c->t_hi, hi, sizeof(hi));
		if (c->verdict == GPUSHARE_VERDICT_TIE && c->underpowered) {
			char t[256];

			gpushare_compare_unsettled_text(c, "it", b_name, t, sizeof(t));
			snprintf(buf, len, "%s (%s; %s-%s holds 1, t test on logs; %s)", t, ratio, lo, hi, order);
			return;
		}
		if (c->verdict == GPUSHARE_VERDICT_TIE) {
			snprintf(buf, len, "tie with %s (%s; %s-%s holds 1, t test on logs; %s)", b_name, ratio, lo, hi,
				 order);
			return;
		}
		if (c->p_value < 0.001)
			snprintf(pv, sizeof(pv), "p < 0.001");
		else
			snprintf(pv, sizeof(pv), "p = %.2g", c->p_value);
		snprintf(buf, len, "%s %s of %s (%s-%s, t test on logs: significant, %s; %s)", ratio, what, b_name, lo,
			 hi, pv, order);
		return;
	}
	switch (c->verdict) {
	case GPUSHARE_VERDICT_TIE:
		snprintf(buf, len, "tie with %s (%s; the intervals overlap)", b_name, ratio);
		return;
	case GPUSHARE_VERDICT_HIGHER:
	case GPUSHARE_VERDICT_LOWER:
		gpushare_fmt_ratio(c->ratio_lo, lo, sizeof(lo));
		gpushare_fmt_ratio(c->ratio_hi, hi, sizeof(hi));
		gpushare_fmt_coverage(c->confidence, conf, sizeof(conf));
		if (c->significant)
			snprintf(buf, len, "%s %s of %s (%s-%s; significant, %s confidence)", ratio, what, b_name, lo, hi,
				 conf);
		else
			snprintf(buf, len, "%s %s of %s (%s-%s; apart at %s confidence, below 95%%: not significant)",
				 ratio, what, b_name, lo, hi, conf);
		return;
	default:
		snprintf(buf, len, "%s %s of %s (too few runs for an interval: no verdict)", ratio, what, b_name);
		return;
	}
}

static bool in_list(const int *v, size_t n, int x)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i] == x)
			return true;
	}
	return false;
}

/* Whether a sharing strategy other than cell `best` ran successfully at this
 * worker count. */
static bool other_sharing(const struct gpushare_report *r, const struct gpushare_report_rec *rec, const int *strat,
			  size_t ns, int best, int workers)
{
	for (size_t i = 0; i < ns; i++) {
		int k = gpushare_report_find_cell(r, rec->shape, strat[i], workers, rec->batch);

		if (k >= 0 && k != best && r->cells[k].n_ok > 0 && gpushare_report_sharing(r->cells[k].strategy))
			return true;
	}
	return false;
}

static void answer_workers(const struct gpushare_report *r, struct gpushare_report_rec *rec,
			   struct gpushare_report_at_workers *at)
{
	int strat[GPUSHARE_STRATEGY_COUNT];
	size_t ns = gpushare_report_shape_strategies(r, rec->shape, strat, GPUSHARE_STRATEGY_COUNT);
	char a[32], b[32], t[384];
	struct gpushare_comparison open = { 0 }; /* the tie with best the runs settle least */
	int open_cell = -1;

	at->best = at->next = at->timeslice = at->mps = at->mps_split = at->lowest_p99 = -1;
	for (size_t i = 0; i < ns; i++) {
		int k = gpushare_report_find_cell(r, rec->shape, strat[i], at->workers, rec->batch);
		const struct gpushare_report_cell *c;

		if (k < 0 || r->cells[k].n_ok == 0)
			continue;
		c = &r->cells[k];
		if (!gpushare_report_sharing(c->strategy)) {
			if (at->n_references < GPUSHARE_REPORT_MAX_STRATEGIES)
				at->references[at->n_references++] = k;
			continue;
		}
		if (c->strategy == GPUSHARE_STRATEGY_TIMESLICE)
			at->timeslice = k;
		if (c->strategy == GPUSHARE_STRATEGY_MPS)
			at->mps = k;
		if (c->strategy == GPUSHARE_STRATEGY_MPS_SPLIT)
			at->mps_split = k;
		if (at->best < 0 || c->throughput.median > r->cells[at->best].throughput.median)
			at->best = k;
		if (at->lowest_p99 < 0 || c->p99_latency.median < r->cells[at->lowest_p99].p99_latency.median)
			at->lowest_p99 = k;
	}
	at->throughput_text[0] = at->latency_text[0] = '\0';
	if (at->best < 0) {
		snprintf(at->throughput_text, sizeof(at->throughput_text), "no sharing strategy has a successful run.");
		return;
	}
	/* One sharing strategy measured: no contest, so no winner named. */
	if (at->best == at->lowest_p99 && !other_sharing(r, rec, strat, ns, at->best, at->workers)) {
		snprintf(at->throughput_text, sizeof(at->throughput_text), "only %s measured (no contest), %s",
			 sname(r, at->best),
			 gpushare_fmt_rate(r->cells[at->best].throughput.median, "items/s", a, sizeof(a)));
		for (size_t i = 0; i < at->n_references; i++)
			gpushare_str_catf(at->throughput_text, sizeof(at->throughput_text), "%s%s %s", i ? ", " : ". Reference: ",
			    sname(r, at->references[i]),
			    gpushare_fmt_rate(r->cells[at->references[i]].throughput.median, "items/s", a, sizeof(a)));
		gpushare_str_catf(at->throughput_text, sizeof(at->throughput_text), ".");
		snprintf(at->latency_text, sizeof(at->latency_text), "only %s measured (no contest), p99 %s.",
			 sname(r, at->best), gpushare_fmt_seconds(r->cells[at->best].p99_latency.median, b, sizeof(b)));
		at->n_tied = 0;
		return;
	}
	/* Ties with the best, and the next best. */
	at->tied[at->n_tied++] = at->best;
	at->p99_tied[at->n_p99_tied++] = at->lowest_p99;
	for (size_t i = 0; i < ns; i++) {
		int k = gpushare_report_find_cell(r, rec->shape, strat[i], at->workers, rec->batch);
		struct gpushare_comparison c;

		if (k < 0 || r->cells[k].n_ok == 0 || !gpushare_report_sharing(r->cells[k].strategy))
			continue;
		if (k != at->best) {
			if (at->next < 0 || r->cells[k].throughput.median > r->cells[at->next].throughput.median)
				at->next = k;
			gpushare_compare(&r->cells[k].throughput, &r->cells[at->best].throughput, &c);
			if (c.verdict == GPUSHARE_VERDICT_TIE && at->n_tied < GPUSHARE_REPORT_MAX_STRATEGIES)
				at->tied[at->n_tied++] = k;
			if (c.underpowered && (open_cell < 0 || c.runs_needed > open.runs_needed)) {
				open_cell = k;
				open = c;
			}
		}
		if (k != at->lowest_p99) {
			gpushare_compare(&r->cells[k].p99_latency, &r->cells[at->lowest_p99].p99_latency, &c);
			if (c.verdict == GPUSHARE_VERDICT_TIE && at->n_p99_tied < GPUSHARE_REPORT_MAX_STRATEGIES)
				at->p99_tied[at->n_p99_tied++] = k;
		}
	}
	if (at->next >= 0)
		gpushare_compare(&r->cells[at->best].throughput, &r->cells[at->next].throughput, &at->vs_next);
	if (at->timeslice >= 0 && at->timeslice != at->best)
		gpushare_compare(&r->cells[at->best].throughput, &r->cells[at->timeslice].throughput, &at->vs_timeslice);
	if (at->mps >= 0 && at->mps_split >= 0)
		gpushare_compare(&r->cells[at->mps].throughput, &r->cells[at->mps_split].throughput, &at->mps_vs_split);

	/* The sentence: the winner (or the tie), its gain over timeslice and
	 * over the next best, mps against mps-split, the references. */
	if (open_cell >= 0 && at->n_tied == 2) {
		gpushare_compare_unsettled_text(&open, sname(r, at->best), sname(r, open_cell), at->throughput_text,
						sizeof(at->throughput_text));
		gpushare_str_catf(at->throughput_text, sizeof(at->throughput_text), " (highest median: %s, %s)", sname(r, at->best),
		    gpushare_fmt_rate(r->cells[at->best].throughput.median, "items/s", a, sizeof(a)));
	} else if (at->n_tied > 1) {
		snprintf(at->throughput_text, sizeof(at->throughput_text), "tie between ");
		for (size_t i = 0; i < at->n_tied; i++)
			gpushare_str_catf(at->throughput_text, sizeof(at->throughput_text), "%s%s", i ? (i + 1 == at->n_tied ? " and " : ", ") : "",
			    sname(r, at->tied[i]));
		gpushare_str_catf(at->throughput_text, sizeof(at->throughput_text), " (highest median: %s, %s)", sname(r, at->best),
		    gpushare_fmt_rate(r->cells[at->best].throughput.median, "items/s", a, sizeof(a)));
		if (open_cell >= 0) {
			gpushare_compare_unsettled_text(&open, sname(r, at->best), sname(r, open_cell), t, sizeof(t));
			gpushare_str_catf(at->throughput_text, sizeof(at->throughput_text), "; %s", t);
		}
	} else {
		snprintf(at->throughput_text, sizeof(at->throughput_text), "%s, %s", sname(r, at->best),
			 gpushare_fmt_rate(r->cells[at->best].throughput.median, "items/s", a, sizeof(a)));
		if (at->next >= 0) {
			gpushare_report_compare_text(&at->vs_next, "the throughput", sname(r, at->next), t, sizeof(t));
			gpushare_str_catf(at->throughput_text, sizeof(at->throughput_text), "; %s", t);
		}
	}
	/* Timeslice, and mps against mps-split, unless said already (a tie, or
	 * the comparison with the next best). */
	if (at->timeslice >= 0 && !in_list(at->tied, at->n_tied, at->timeslice) &&
	    !(at->n_tied == 1 && at->next == at->timeslice)) {
		gpushare_report_compare_text(&at->vs_timeslice, "the throughput", "timeslice", t, sizeof(t));
		gpushare_str_catf(at->throughput_text, sizeof(at->throughput_text), "; %s: %s", sname(r, at->best), t);
	}
	if (at->mps >= 0 && at->mps_split >= 0 &&
	    !(in_list(at->tied, at->n_tied, at->mps) && in_list(at->tied, at->n_tied, at->mps_split)) &&
	    !(at->n_tied == 1 && ((at->best == at->mps && at->next == at->mps_split) ||
				  (at->best == at->mps_split && at->next == at->mps)))) {
		gpushare_report_compare_text(&at->mps_vs_split, "the throughput", "mps-split", t, sizeof(t));
		gpushare_str_catf(at->throughput_text, sizeof(at->throughput_text), "; mps: %s", t);
	}
	gpushare_str_catf(at->throughput_text, sizeof(at->throughput_text), ".");
	for (size_t i = 0; i < at->n_references; i++)
		gpushare_str_catf(at->throughput_text, sizeof(at->throughput_text), "%s%s %s", i ? ", " : " Reference: ",
		    sname(r, at->references[i]),
		    gpushare_fmt_rate(r->cells[at->references[i]].throughput.median, "items/s", a, sizeof(a)));
	if (at->n_references)
		gpushare_str_catf(at->throughput_text, sizeof(at->throughput_text), ".");

	snprintf(at->latency_text, sizeof(at->latency_text), "%s, p99 %s", sname(r, at->lowest_p99),
		 gpushare_fmt_seconds(r->cells[at->lowest_p99].p99_latency.median, b, sizeof(b)));
	if (at->n_p99_tied > 1) {
		gpushare_str_catf(at->latency_text, sizeof(at->latency_text), " (tie with ");
		for (size_t i = 1; i < at->n_p99_tied; i++)
			gpushare_str_catf(at->latency_text, sizeof(at->latency_text), "%s%s %s", i > 1 ? ", " : "",
			    sname(r, at->p99_tied[i]),
			    gpushare_fmt_seconds(r->cells[at->p99_tied[i]].p99_latency.median, b, sizeof(b)));
		gpushare_str_catf(at->latency_text, sizeof(at->latency_text), ")");
	}
	gpushare_str_catf(at->latency_text, sizeof(at->latency_text), ".");
}

bool gpushare_report_scaling_unsettled(const struct gpushare_report *r, const struct gpushare_report_scaling *sc,
				       char *buf, size_t len)
{
	char a[48], b[48], t[256];
	int wa, wb;

	if (len)
		buf[0] = '\0';
	if (sc->unsettled < 0 || sc->best < 0 || !sc->vs_unsettled.underpowered)
		return false;
	wa = r->cells[sc->unsettled].workers;
	wb = r->cells[sc->best].workers;
	snprintf(a, sizeof(a), "%d %s", wa, workers_word(wa));
	snprintf(b, sizeof(b), "%d %s", wb, workers_word(wb));
	gpushare_compare_unsettled_text(&sc->vs_unsettled, a, b, t, sizeof(t));
	snprintf(buf, len, "%s: %s", gpushare_strategy_name(sc->strategy), t);
	return true;
}

/* For each strategy: its best worker count and the smallest one within the
 * noise of it (the t test's tie, settled by the runs: stats.h). When the
 * runs cannot tell a fewer-worker count from the best, the answer is that
 * sentence, and smallest stays the best. */
static void answer_scaling(const struct gpushare_report *r, struct gpushare_report_rec *rec)
{
	int strat[GPUSHARE_STRATEGY_COUNT], workers[64];
	size_t ns = gpushare_report_shape_strategies(r, rec->shape, strat, GPUSHARE_STRATEGY_COUNT);
	size_t nw = gpushare_report_shape_workers(r, rec->shape, workers, 64);

	for (size_t i = 0; i < ns && rec->n_scaling < GPUSHARE_REPORT_MAX_STRATEGIES; i++) {
		struct gpushare_report_scaling *sc = &rec->scaling[rec->n_scaling];
		const struct gpushare_report_cell *best;
		bool fewer;
		char a[32], cov[16], t[224];

		sc->strategy = strat[i];
		sc->best = sc->smallest = sc->unsettled = -1;
		for (size_t w = 0; w < nw; w++) {
			int k = gpushare_report_find_cell(r, rec->shape, strat[i], workers[w], rec->batch);

			if (k >= 0 && r->cells[k].n_ok &&
			    (sc->best < 0 || r->cells[k].throughput.median > r->cells[sc->best].throughput.median))
				sc->best = k;
		}
		if (sc->best < 0)
			continue;
		rec->n_scaling++;
		best = &r->cells[sc->best];
		sc->smallest = sc->best;
		fewer = false;
		for (size_t w = 0; w < nw && workers[w] < best->workers; w++) {
			int k = gpushare_report_find_cell(r, rec->shape, strat[i], workers[w], rec->batch);
			struct gpushare_comparison c;

			if (k < 0 || !r->cells[k].n_ok)
				continue;
			fewer = true;
			gpushare_compare(&r->cells[k].throughput, &best->throughput, &c);
			/* A tie the runs cannot settle names no fewest: the question stays open. */
			if (c.underpowered) {
				sc->unsettled = k;
				sc->vs_unsettled = c;
				break;
			}
			if (c.verdict == GPUSHARE_VERDICT_TIE) {
				sc->smallest = k;
				break;
			}
		}
		gpushare_fmt_rate(best->throughput.median, "items/s", a, sizeof(a));
		if (!gpushare_ci_has_interval(&best->throughput))
			snprintf(sc->text, sizeof(sc->text), "%s: most throughput at %d %s (%s); one run per cell: no noise estimate.",
				 gpushare_strategy_name(sc->strategy), best->workers, workers_word(best->workers), a);
		else if (sc->unsettled >= 0 && gpushare_report_scaling_unsettled(r, sc, t, sizeof(t)))
			snprintf(sc->text, sizeof(sc->text), "%s (most throughput measured: %s at %d %s).", t, a, best->workers,
				 workers_word(best->workers));
		else if (sc->smallest == sc->best && !fewer)
			snprintf(sc->text, sizeof(sc->text), "%s: %d %s (%s), the fewest measured.",
				 gpushare_strategy_name(sc->strategy), best->workers, workers_word(best->workers), a);
		else if (sc->smallest == sc->best && isfinite(best->throughput.log_sd))
			snprintf(sc->text, sizeof(sc->text), "%s: %d %s (%s); fewer workers give less (t test on logs, 95%%).",
				 gpushare_strategy_name(sc->strategy), best->workers, workers_word(best->workers), a);
		else if (sc->smallest == sc->best)
			snprintf(sc->text, sizeof(sc->text), "%s: %d %s (%s); fewer workers give less (intervals of %s coverage apart).",
				 gpushare_strategy_name(sc->strategy), best->workers, workers_word(best->workers), a,
				 gpushare_fmt_coverage(best->throughput.coverage, cov, sizeof(cov)));
		else
			snprintf(sc->text, sizeof(sc->text), "%s: %d %s already reach%s its best throughput within noise (%s at %d %s).",
				 gpushare_strategy_name(sc->strategy), r->cells[sc->smallest].workers,
				 workers_word(r->cells[sc->smallest].workers), r->cells[sc->smallest].workers == 1 ? "es" : "",
				 a, best->workers, workers_word(best->workers));
		if (!gpushare_report_sharing(sc->strategy))
			gpushare_str_catf(sc->text, sizeof(sc->text), " (a reference, not a way to share)");
	}
}

/* The highest throughput with the median p99 under the target. */
static void answer_slo(const struct gpushare_report *r, struct gpushare_report_rec *rec)
{
	char slo[32], a[32], b[32];

	rec->slo = -1;
	rec->slo_text[0] = '\0';
	if (r->slo_p99_seconds <= 0)
		return;
	gpushare_fmt_seconds(r->slo_p99_seconds, slo, sizeof(slo));
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct gpushare_report_cell *c = &r->cells[i];

		if (strcmp(c->shape, rec->shape) || c->batch != rec->batch || !c->n_ok || !gpushare_report_sharing(c->strategy) ||
		    !(c->p99_latency.median <= r->slo_p99_seconds))
			continue;
		if (rec->slo < 0 || c->throughput.median > r->cells[rec->slo].throughput.median)
			rec->slo = (int)i;
	}
	if (rec->slo < 0) {
		snprintf(rec->slo_text, sizeof(rec->slo_text), "no sharing configuration kept the median p99 under %s.", slo);
		return;
	}
	rec->slo_tied[rec->n_slo_tied++] = rec->slo;
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct gpushare_report_cell *c = &r->cells[i];
		struct gpushare_comparison cmp;

		if ((int)i == rec->slo || strcmp(c->shape, rec->shape) || c->batch != rec->batch || !c->n_ok ||
		    !gpushare_report_sharing(c->strategy) || !(c->p99_latency.median <= r->slo_p99_seconds))
			continue;
		gpushare_compare(&c->throughput, &r->cells[rec->slo].throughput, &cmp);
		if (cmp.verdict == GPUSHARE_VERDICT_TIE && rec->n_slo_tied < sizeof(rec->slo_tied) / sizeof(rec->slo_tied[0]))
			rec->slo_tied[rec->n_slo_tied++] = (int)i;
	}
	{
		const struct gpushare_report_cell *p = &r->cells[rec->slo];

		snprintf(rec->slo_text, sizeof(rec->slo_text), "%s at %d %s: %s, p99 %s", sname(r, rec->slo), p->workers,
			 workers_word(p->workers), gpushare_fmt_rate(p->throughput.median, "items/s", a, sizeof(a)),
			 gpushare_fmt_seconds(p->p99_latency.median, b, sizeof(b)));
		if (rec->n_slo_tied > 1) {
			gpushare_str_catf(rec->slo_text, sizeof(rec->slo_text), "; ties in throughput with");
			for (size_t i = 1; i < rec->n_slo_tied; i++)
				gpushare_str_catf(rec->slo_text, sizeof(rec->slo_text), "%s %s at %d", i > 1 ? "," : "",
				    sname(r, rec->slo_tied[i]), r->cells[rec->slo_tied[i]].workers);
		}
		gpushare_str_catf(rec->slo_text, sizeof(rec->slo_text), ".");
		if (gpushare_ci_has_interval(&p->p99_latency) && p->p99_latency.hi > r->slo_p99_seconds)
			gpushare_str_catf(rec->slo_text, sizeof(rec->slo_text),
			    " Its p99 interval reaches above the target: a repeat may miss it.");
	}
}

static int recommend(struct gpushare_report *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_shapes; i++) {
		long batches[64];

		n += gpushare_report_shape_batches(r, r->shapes[i], batches, 64);
	}
	r->recs = calloc(n ? n : 1, sizeof(*r->recs));
	if (!r->recs)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t i = 0; i < r->n_shapes; i++) {
		long batches[64];
		int workers[64];
		size_t nb = gpushare_report_shape_batches(r, r->shapes[i], batches, 64);
		size_t nw = gpushare_report_shape_workers(r, r->shapes[i], workers, 64);

		for (size_t b = 0; b < nb; b++) {
			struct gpushare_report_rec *rec = &r->recs[r->n_recs++];

			snprintf(rec->shape, sizeof(rec->shape), "%s", r->shapes[i]);
			rec->batch = batches[b];
			rec->at = calloc(nw ? nw : 1, sizeof(*rec->at));
			if (!rec->at)
				return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
			for (size_t w = 0; w < nw; w++) {
				rec->at[rec->n_at].workers = workers[w];
				answer_workers(r, rec, &rec->at[rec->n_at++]);
			}
			answer_scaling(r, rec);
			answer_slo(r, rec);
		}
	}
	return GPUSHARE_OK;
}

void gpushare_report_summary_release(struct gpushare_report *r)
{
	for (size_t i = 0; r->cells && i < r->n_cells; i++)
		free(r->cells[i].hist);
	for (size_t i = 0; r->recs && i < r->n_recs; i++)
		free(r->recs[i].at);
	free(r->cells);
	free(r->shapes);
	free(r->recs);
	r->cells = NULL;
	r->shapes = NULL;
	r->recs = NULL;
	r->n_cells = r->n_shapes = r->n_recs = 0;
}

static int cmp_cell_key(const struct gpushare_report *r, const struct gpushare_report_cell *c, int shape,
			const struct gpushare_report_hist_acc *a)
{
	int cs = shape_index(r, c->shape);

	if (cs != shape)
		return cs - shape;
	if ((int)c->strategy != (int)a->strategy)
		return (int)c->strategy - (int)a->strategy;
	if (c->workers != a->workers)
		return c->workers - a->workers;
	return (c->batch > a->batch) - (c->batch < a->batch);
}

/* The histograms the loader merged per cell, into the cells (sorted by
 * shape, strategy, workers, batch). A cell of a shape left out has none. */
static int attach_hists(struct gpushare_report *r)
{
	for (size_t i = 0; i < r->n_hist_acc; i++) {
		const struct gpushare_report_hist_acc *a = &r->hist_acc[i];
		int shape = shape_index(r, a->shape);
		size_t lo = 0, hi = r->n_cells;
		struct gpushare_report_cell *c = NULL;

		if (shape < 0)
			continue;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			int d = cmp_cell_key(r, &r->cells[mid], shape, a);

			if (d == 0) {
				c = &r->cells[mid];
				break;
			}
			if (d < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!c || !c->n_ok)
			continue;
		if (!c->hist) {
			c->hist = malloc(sizeof(*c->hist));
			if (!c->hist)
				return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
			gpushare_hist_init(c->hist);
		}
		for (size_t b = 0; b < a->n; b++) {
			c->hist->buckets[a->bucket[b]] += a->count[b];
			c->hist->count += a->count[b];
		}
	}
	return GPUSHARE_OK;
}

/* Whether refs a and b are runs of the same cell. */
static bool same_cell(const struct run_ref *a, const struct run_ref *b)
{
	return a->shape == b->shape && a->strategy == b->strategy && a->workers == b->workers && a->batch == b->batch;
}

int gpushare_report_summarise(struct gpushare_report *r, double slo_p99_seconds)
{
	struct report_unit *units;
	struct run_ref *refs;
	size_t n = 0, m = 0, n_units = 0, n_cells = 0, cap_shapes = 0;
	int rc;

	gpushare_report_summary_release(r);
	r->slo_p99_seconds = slo_p99_seconds;
	if ((rc = gpushare_report_units(r, &units, &n_units)))
		return rc;
	refs = calloc(n_units ? n_units : 1, sizeof(*refs));
	if (!refs) {
		free(units);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	/* In the order of their first line: the shapes in order of first
	 * appearance. */
	for (size_t i = 0; i < n_units; i++) {
		const struct report_unit *u = &units[i];
		const char *shape = gpushare_report_unit_shape(u);
		int s = shape_index(r, shape);
		struct run_ref *ref = &refs[m];

		if (s < 0) {
			if ((rc = gpushare_grow(&r->shapes, r->n_shapes, &cap_shapes, sizeof(*r->shapes), 8)) != GPUSHARE_OK) {
				free(units);
				free(refs);
				return rc;
			}
			s = (int)r->n_shapes++;
			snprintf(r->shapes[s], sizeof(r->shapes[s]), "%s", shape);
		}
		/* Open-loop runs form load curves (report_load_curve.c) or peak
		 * tables (report_peak.c), not cells. */
		if (u->run && (u->run->rate > 0 || u->run->find_peak))
			continue;
		ref->run = u->run;
		ref->group = u->group;
		ref->shape = s;
		ref->strategy = u->run ? u->run->strategy : u->group->strategy;
		ref->workers = u->run ? u->run->workers : u->group->workers;
		ref->batch = u->run ? u->run->batch : u->group->batch;
		ref->line = gpushare_report_unit_line(u);
		m++;
	}
	free(units);
	qsort(refs, m, sizeof(*refs), cmp_run);
	/* The cells as many as there are, not as runs. */
	for (size_t i = 0; i < m; i++)
		n_cells += i == 0 || !same_cell(&refs[i - 1], &refs[i]);
	r->cells = calloc(n_cells ? n_cells : 1, sizeof(*r->cells));
	if (!r->cells) {
		free(refs);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	while (n < m && !rc) {
		size_t e = n + 1;
		struct gpushare_report_cell *c = &r->cells[r->n_cells++];
		const struct run_ref *first = &refs[n];

		while (e < m && same_cell(&refs[n], &refs[e]))
			e++;
		/* The names of the cell's first run in the file. */
		snprintf(c->shape, sizeof(c->shape), "%s", first->run ? first->run->shape : first->group->shape);
		snprintf(c->workload, sizeof(c->workload), "%s", first->run ? first->run->workload : first->group->workload);
		c->strategy = first->strategy;
		c->workers = first->workers;
		c->batch = first->batch;
		/* The MIG layout of its first ok run in the file that records one. */
		for (size_t k = n; k < e && !c->mig_layout.n; k++) {
			const char *l = refs[k].run ? refs[k].run->mig_layout : refs[k].group->mig_layout;

			if ((!refs[k].run || refs[k].run->status != GPUSHARE_RUN_FAILED) && l && l[0] &&
			    gpushare_report_mig_layout_parse(l, &c->mig_layout))
				gpushare_clear_error();
		}
		rc = summarise_cell(c, refs + n, e - n);
		n = e;
	}
	free(refs);
	if (!rc)
		rc = attach_hists(r);
	if (rc)
		return rc;
	return recommend(r);
}
