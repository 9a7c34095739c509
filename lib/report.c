/*
 * Sweep reports: the statistics (median with an order-statistic confidence
 * interval), grouping recorded runs into cells, and the recommendation.
 * Loading lives in report_load.c, the text outputs in report_text.c, the
 * plots in report_plot.c and the HTML page in report_html.c.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "report_internal.h"

/* ---- buffers and formatting ---- */

void rbuf_add(struct rbuf *b, const void *data, size_t len)
{
	if (b->oom)
		return;
	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *nd;

		while (cap < b->len + len + 1)
			cap *= 2;
		nd = realloc(b->data, cap);
		if (!nd) {
			b->oom = true;
			return;
		}
		b->data = nd;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

void rbuf_printf(struct rbuf *b, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		rbuf_add(b, small, (size_t)n);
		return;
	}
	{
		char *big = malloc((size_t)n + 1);

		if (!big) {
			b->oom = true;
			return;
		}
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
		rbuf_add(b, big, (size_t)n);
		free(big);
	}
}

void rbuf_release(struct rbuf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void report_fmt_seconds(double s, char *buf, size_t len)
{
	if (!isfinite(s) || s <= 0)
		snprintf(buf, len, "-");
	else if (s < 1e-3)
		snprintf(buf, len, "%.3g us", s * 1e6);
	else if (s < 1)
		snprintf(buf, len, "%.3g ms", s * 1e3);
	else
		snprintf(buf, len, "%.3g s", s);
}

void report_fmt_count(double v, char *buf, size_t len)
{
	if (!isfinite(v))
		snprintf(buf, len, "-");
	else if (v >= 1e9)
		snprintf(buf, len, "%.3gG", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, len, "%.3gM", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, len, "%.3gk", v / 1e3);
	else
		snprintf(buf, len, "%.4g", v);
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* P(B <= k) for B ~ Binomial(n, 1/2). */
static double binom_half_cdf(size_t n, size_t k)
{
	double term = ldexp(1.0, -(int)n), sum = 0; /* C(n,0) / 2^n */

	for (size_t j = 0; j <= k && j <= n; j++) {
		sum += term;
		term = term * (double)(n - j) / (double)(j + 1);
	}
	return sum;
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
	/* The largest rank l (1-based) with P(B <= l-1) <= alpha/2; then
	 * [x(l), x(n-l+1)] covers the median with 1 - 2 P(B <= l-1). Below
	 * six samples even [min, max] covers less than 95%. */
	l = 1;
	while (l + 1 <= (n + 1) / 2 && binom_half_cdf(n, l) <= alpha / 2)
		l++;
	out->lo = v[l - 1];
	out->hi = v[n - l];
	out->coverage = n == 1 ? 0 : 1 - 2 * binom_half_cdf(n, l - 1);
	free(v);
}

double gpushare_ci_rel_halfwidth(const struct gpushare_ci *ci)
{
	if (ci->n < 2 || !isfinite(ci->median) || ci->median == 0)
		return INFINITY;
	return (ci->hi - ci->lo) / 2 / fabs(ci->median);
}

bool gpushare_ci_overlap(const struct gpushare_ci *a, const struct gpushare_ci *b)
{
	return a->lo <= b->hi && b->lo <= a->hi;
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

/* Sort order of runs: shape (first appearance), strategy, workers, batch. */
struct run_ref {
	const struct gpushare_report_run *run;
	int shape;
};

static int cmp_run(const void *a, const void *b)
{
	const struct run_ref *x = a, *y = b;

	if (x->shape != y->shape)
		return x->shape - y->shape;
	if (x->run->strategy != y->run->strategy)
		return x->run->strategy - y->run->strategy;
	if (x->run->workers != y->run->workers)
		return x->run->workers - y->run->workers;
	if (x->run->batch != y->run->batch)
		return (x->run->batch > y->run->batch) - (x->run->batch < y->run->batch);
	return (x->run->line > y->run->line) - (x->run->line < y->run->line);
}

int report_find_cell(const struct gpushare_report *r, const char *shape, int strategy, int workers, long batch)
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
	else
		qsort(lout, n, sizeof(*lout), cmp_long);
	return n;
}

size_t report_shape_workers(const struct gpushare_report *r, const char *shape, int *out, size_t max)
{
	return shape_distinct(r, shape, KEY_WORKERS, out, NULL, max);
}

size_t report_shape_batches(const struct gpushare_report *r, const char *shape, long *out, size_t max)
{
	return shape_distinct(r, shape, KEY_BATCH, NULL, out, max);
}

size_t report_shape_strategies(const struct gpushare_report *r, const char *shape, int *out, size_t max)
{
	return shape_distinct(r, shape, KEY_STRATEGY, out, NULL, max);
}

static int summarise_cell(struct gpushare_report_cell *c, struct run_ref *refs, size_t n)
{
	double *t = malloc((n ? n : 1) * 3 * sizeof(double));
	size_t k = 0;

	if (!t)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct gpushare_report_run *run = refs[i].run;

		if (run->status != GPUSHARE_RUN_OK) {
			c->n_failed++;
			continue;
		}
		t[k] = run->items_per_second;
		t[n + k] = run->mean_seconds;
		t[2 * n + k] = run->p99_seconds;
		k++;
	}
	c->n_ok = k;
	gpushare_median_ci(t, k, 0.95, &c->throughput);
	gpushare_median_ci(t + n, k, 0.95, &c->mean_latency);
	gpushare_median_ci(t + 2 * n, k, 0.95, &c->p99_latency);
	free(t);
	return GPUSHARE_OK;
}

/* ---- recommendation ---- */

static const char *workers_word(int n)
{
	return n == 1 ? "worker" : "workers";
}

/* "2.6x (2.4x-2.8x)" of a over b, or "no significant difference". */
static void gain_text(const struct gpushare_ci *a, const struct gpushare_ci *b, char *buf, size_t len)
{
	double ratio = a->median / b->median, lo = b->hi > 0 ? a->lo / b->hi : NAN, hi = b->lo > 0 ? a->hi / b->lo : NAN;

	if (gpushare_ci_overlap(a, b))
		snprintf(buf, len, "no significant difference (%.2fx, range %.2fx-%.2fx)", ratio, lo, hi);
	else
		snprintf(buf, len, "%.2fx (%.2fx-%.2fx)", ratio, lo, hi);
}

static void compare_text(const struct gpushare_report *r, const struct gpushare_report_cell *p, int base,
			 bool latency, char *buf, size_t len)
{
	const struct gpushare_report_cell *b;
	char g[128], x[32], y[32];

	buf[0] = '\0';
	if (base < 0)
		return;
	b = &r->cells[base];
	if (b->n_ok == 0)
		return;
	if (latency) {
		report_fmt_seconds(p->p99_latency.median, x, sizeof(x));
		report_fmt_seconds(b->p99_latency.median, y, sizeof(y));
		if (gpushare_ci_overlap(&p->p99_latency, &b->p99_latency))
			snprintf(buf, len, "; vs %s: no significant difference in p99 (%s vs %s)",
				 gpushare_strategy_name(b->strategy), x, y);
		else
			snprintf(buf, len, "; %s has p99 %s", gpushare_strategy_name(b->strategy), y);
		return;
	}
	gain_text(&p->throughput, &b->throughput, g, sizeof(g));
	report_fmt_seconds(p->p99_latency.median, x, sizeof(x));
	report_fmt_seconds(b->p99_latency.median, y, sizeof(y));
	if (gpushare_ci_overlap(&p->throughput, &b->throughput))
		snprintf(buf, len, "; vs %s: %s, p99 %s vs %s", gpushare_strategy_name(b->strategy), g, x, y);
	else
		snprintf(buf, len, "; %s the throughput of %s, p99 %s vs %s", g, gpushare_strategy_name(b->strategy), x,
			 y);
}

static void make_pick(const struct gpushare_report *r, struct gpushare_report_pick *pk, int cell, const char *what)
{
	const struct gpushare_report_cell *p;
	char tp[32], tlo[32], thi[32], p99[32], a[320], b[320];

	pk->cell = cell;
	pk->vs_timeslice = pk->vs_sequential = -1;
	if (cell < 0)
		return;
	p = &r->cells[cell];
	if (p->strategy != GPUSHARE_STRATEGY_TIMESLICE)
		pk->vs_timeslice = report_find_cell(r, p->shape, GPUSHARE_STRATEGY_TIMESLICE, p->workers, p->batch);
	if (p->strategy != GPUSHARE_STRATEGY_SEQUENTIAL)
		pk->vs_sequential = report_find_cell(r, p->shape, GPUSHARE_STRATEGY_SEQUENTIAL, p->workers, p->batch);
	report_fmt_count(p->throughput.median, tp, sizeof(tp));
	report_fmt_count(p->throughput.lo, tlo, sizeof(tlo));
	report_fmt_count(p->throughput.hi, thi, sizeof(thi));
	report_fmt_seconds(p->p99_latency.median, p99, sizeof(p99));
	compare_text(r, p, pk->vs_timeslice, !strcmp(what, "p99"), a, sizeof(a));
	compare_text(r, p, pk->vs_sequential, !strcmp(what, "p99"), b, sizeof(b));
	snprintf(pk->why, sizeof(pk->why), "%s at %d %s, batch %ld: %s items/s (%s-%s), p99 %s%s%s.",
		 gpushare_strategy_name(p->strategy), p->workers, workers_word(p->workers), p->batch, tp, tlo, thi, p99,
		 a, b);
}

static void recommend(struct gpushare_report *r, size_t si)
{
	struct gpushare_report_shape_rec *rec = &r->recs[si];
	const char *shape = r->shapes[si];
	int bt = -1, bp = -1, bs = -1;

	snprintf(rec->shape, sizeof(rec->shape), "%s", shape);
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct gpushare_report_cell *c = &r->cells[i];

		if (strcmp(c->shape, shape) || c->n_ok == 0)
			continue;
		if (bt < 0 || c->throughput.median > r->cells[bt].throughput.median)
			bt = (int)i;
		if (bp < 0 || c->p99_latency.median < r->cells[bp].p99_latency.median)
			bp = (int)i;
		if (r->slo_p99_seconds > 0 && c->p99_latency.median <= r->slo_p99_seconds &&
		    (bs < 0 || c->throughput.median > r->cells[bs].throughput.median))
			bs = (int)i;
	}
	make_pick(r, &rec->best_throughput, bt, "throughput");
	make_pick(r, &rec->best_p99, bp, "p99");
	make_pick(r, &rec->best_slo, bs, "slo");
	if (r->slo_p99_seconds > 0 && bs < 0) {
		char slo[32];

		report_fmt_seconds(r->slo_p99_seconds, slo, sizeof(slo));
		snprintf(rec->best_slo.why, sizeof(rec->best_slo.why),
			 "no configuration kept the median p99 under %s.", slo);
	} else if (bs >= 0 && r->cells[bs].p99_latency.hi > r->slo_p99_seconds) {
		size_t l = strlen(rec->best_slo.why);

		snprintf(rec->best_slo.why + l, sizeof(rec->best_slo.why) - l,
			 " Its p99 interval reaches above the target: a repeat may miss it.");
	}
}

int gpushare_report_summarise(struct gpushare_report *r, double slo_p99_seconds)
{
	struct run_ref *refs;
	size_t n = 0, m = 0;
	int rc = GPUSHARE_OK;

	free(r->cells);
	free(r->shapes);
	free(r->recs);
	r->cells = NULL;
	r->shapes = NULL;
	r->recs = NULL;
	r->n_cells = r->n_shapes = 0;
	r->slo_p99_seconds = slo_p99_seconds;
	refs = calloc(r->n_runs ? r->n_runs : 1, sizeof(*refs));
	r->shapes = calloc(r->n_runs ? r->n_runs : 1, sizeof(*r->shapes));
	r->cells = calloc(r->n_runs ? r->n_runs : 1, sizeof(*r->cells));
	if (!refs || !r->shapes || !r->cells) {
		free(refs);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < r->n_runs; i++) {
		int s = shape_index(r, r->runs[i].shape);

		if (s < 0) {
			s = (int)r->n_shapes++;
			snprintf(r->shapes[s], sizeof(r->shapes[s]), "%s", r->runs[i].shape);
		}
		/* Open-loop runs form load curves (report_load_curve.c), not cells. */
		if (r->runs[i].rate > 0)
			continue;
		refs[m].run = &r->runs[i];
		refs[m++].shape = s;
	}
	qsort(refs, m, sizeof(*refs), cmp_run);
	while (n < m && !rc) {
		size_t e = n + 1;
		struct gpushare_report_cell *c = &r->cells[r->n_cells++];
		const struct gpushare_report_run *first = refs[n].run;

		while (e < m && refs[e].shape == refs[n].shape && refs[e].run->strategy == first->strategy &&
		       refs[e].run->workers == first->workers && refs[e].run->batch == first->batch)
			e++;
		snprintf(c->shape, sizeof(c->shape), "%s", first->shape);
		snprintf(c->workload, sizeof(c->workload), "%s", first->workload);
		c->strategy = first->strategy;
		c->workers = first->workers;
		c->batch = first->batch;
		rc = summarise_cell(c, refs + n, e - n);
		n = e;
	}
	free(refs);
	if (rc)
		return rc;
	r->recs = calloc(r->n_shapes ? r->n_shapes : 1, sizeof(*r->recs));
	if (!r->recs)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t i = 0; i < r->n_shapes; i++)
		recommend(r, i);
	return GPUSHARE_OK;
}

void gpushare_report_release(struct gpushare_report *r)
{
	free(r->runs);
	free(r->bad);
	free(r->cells);
	free(r->shapes);
	free(r->recs);
	memset(r, 0, sizeof(*r));
}
