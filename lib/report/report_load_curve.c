/*
 * The latency-vs-offered-load curves of an open-loop sweep: each curve is
 * one shape x strategy x workers x batch, a point per offered rate (the
 * median over repeats of p50, p99 and the achieved rate), and the curve's
 * peak: the highest offered rate whose median p99 is within the report's
 * bound (--slo-p99). Written as a section of report.md, as load_curve.csv
 * and as one figure per shape (PNG and SVG, drawn by report_plot.c: p99 on
 * a log scale against the offered rate, the bound as a dashed line, the
 * peaks as rings).
 *
 * A peak here is known to the grid's resolution only: the true peak lies
 * between the marked rate and the next rate of the list. `gpushare bench
 * --find-peak` searches it to a stated resolution.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/format.h"
#include "gpushare/gpushare.h"
#include "gpushare/stats.h"
#include "report_internal.h"
#include "report_load_curve.h"

#define MAX_REPEATS_KEPT 256

struct point {
	double rate;
	double p50, p99, achieved, offered;
	double unfinished;           /* the most of any repeat */
	size_t n;                    /* ok runs */
};

struct curve {
	const char *shape;
	enum gpushare_strategy strategy;
	int workers;
	long batch;
	struct point *pts;
	size_t n_pts;
	int peak;                    /* index in pts, -1 none within the bound */
};

static bool get_num(const cJSON *o, const char *k, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsNumber(v))
		return false;
	*out = v->valuedouble;
	return true;
}

int gpushare_report_load_open(const struct cJSON *res, struct gpushare_report_run *run)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(res, "open_loop");

	if (!cJSON_IsObject(o) || !get_num(o, "offered_per_second", &run->offered_per_second) ||
	    !get_num(o, "achieved_per_second", &run->achieved_per_second) || !get_num(o, "unfinished", &run->unfinished))
		return gpushare_fail(GPUSHARE_E_INVAL, "an open-loop run lacks 'open_loop' rates");
	if (run->offered_per_second < 0 || run->achieved_per_second < 0 || run->unfinished < 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "negative open-loop rate or count");
	return GPUSHARE_OK;
}

bool gpushare_report_load_curve_any(const struct gpushare_report *r)
{
	for (size_t i = 0; i < r->n_whole; i++) {
		if (r->whole[i].rate > 0)
			return true;
	}
	return false;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of v[0..n-1] (lib/core/stats.c); 0 when n is 0. */
static double median(const double *v, size_t n)
{
	struct gpushare_ci ci;

	if (n == 0)
		return 0;
	gpushare_median_ci(v, n, GPUSHARE_SIGNIFICANCE, &ci);
	return ci.median;
}

static bool same_curve(const struct curve *c, const struct gpushare_report_run *run)
{
	return c->strategy == run->strategy && c->workers == run->workers && c->batch == run->batch &&
	       !strcmp(c->shape, run->shape);
}

static void curves_free(struct curve *cv, size_t n)
{
	for (size_t i = 0; cv && i < n; i++)
		free(cv[i].pts);
	free(cv);
}

/* One point from the ok runs of a curve at one rate. */
static void make_point(const struct gpushare_report *r, const struct curve *c, double rate, struct point *p)
{
	double p50[MAX_REPEATS_KEPT], p99[MAX_REPEATS_KEPT], ach[MAX_REPEATS_KEPT], off[MAX_REPEATS_KEPT];
	size_t n = 0;

	memset(p, 0, sizeof(*p));
	p->rate = rate;
	for (size_t i = 0; i < r->n_whole && n < MAX_REPEATS_KEPT; i++) {
		const struct gpushare_report_run *run = &r->whole[i];

		if (run->rate != rate || run->status != GPUSHARE_RUN_OK || !same_curve(c, run))
			continue;
		p50[n] = run->p50_seconds;
		p99[n] = run->p99_seconds;
		ach[n] = run->achieved_per_second;
		off[n] = run->offered_per_second;
		if (run->unfinished > p->unfinished)
			p->unfinished = run->unfinished;
		n++;
	}
	p->n = n;
	p->p50 = median(p50, n);
	p->p99 = median(p99, n);
	p->achieved = median(ach, n);
	p->offered = median(off, n);
}

/* The curves, in order of first appearance, points by rising rate; none
 * (*out NULL, *n_out 0) when no run had an offered rate. */
static int build(const struct gpushare_report *r, struct curve **out, size_t *n_out)
{
	struct curve *cv;
	size_t n = 0;

	*out = NULL;
	*n_out = 0;
	if (!gpushare_report_load_curve_any(r))
		return GPUSHARE_OK;
	cv = calloc(r->n_whole, sizeof(*cv));
	if (!cv)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t i = 0; i < r->n_whole; i++) {
		const struct gpushare_report_run *run = &r->whole[i];
		struct curve *c = NULL;
		bool have = false;

		if (run->rate <= 0)
			continue;
		for (size_t k = 0; k < n && !c; k++) {
			if (same_curve(&cv[k], run))
				c = &cv[k];
		}
		if (!c) {
			c = &cv[n++];
			c->shape = run->shape;
			c->strategy = run->strategy;
			c->workers = run->workers;
			c->batch = run->batch;
			c->pts = calloc(r->n_whole, sizeof(*c->pts));
			if (!c->pts) {
				curves_free(cv, n);
				return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
			}
		}
		for (size_t k = 0; k < c->n_pts && !have; k++)
			have = c->pts[k].rate == run->rate;
		if (!have)
			c->pts[c->n_pts++].rate = run->rate;
	}
	for (size_t k = 0; k < n; k++) {
		struct curve *c = &cv[k];

		qsort(c->pts, c->n_pts, sizeof(*c->pts), cmp_double); /* rate is the first member */
		c->peak = -1;
		for (size_t j = 0; j < c->n_pts; j++) {
			make_point(r, c, c->pts[j].rate, &c->pts[j]);
			if (r->slo_p99_seconds > 0 && c->pts[j].n && c->pts[j].unfinished == 0 &&
			    c->pts[j].p99 <= r->slo_p99_seconds)
				c->peak = (int)j;
		}
	}
	*out = cv;
	*n_out = n;
	return GPUSHARE_OK;
}

/* A duration or a rate through lib/core/format.c; "-" when nothing measured it. */
static const char *fmt_s(double s, bool known, char *buf, size_t len)
{
	if (!known || !isfinite(s)) {
		snprintf(buf, len, "-");
		return buf;
	}
	return gpushare_fmt_seconds(s, buf, len);
}

static const char *fmt_rate(double v, bool known, char *buf, size_t len)
{
	if (!known || !isfinite(v)) {
		snprintf(buf, len, "-");
		return buf;
	}
	return gpushare_fmt_si(v, buf, len);
}

static void curve_name(const struct curve *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s, %d worker%s%s", gpushare_strategy_name(c->strategy), c->workers,
		 c->workers == 1 ? "" : "s", "");
	if (c->batch != 1) {
		size_t l = strlen(buf);

		snprintf(buf + l, len - l, ", batch %ld", c->batch);
	}
}

bool gpushare_report_load_curve_only(const struct gpushare_report *r, const char *shape)
{
	bool any = false;

	/* Folded runs are closed-loop ones. */
	for (size_t i = 0; i < r->n_groups; i++) {
		if (!strcmp(r->groups[i].shape, shape))
			return false;
	}
	for (size_t i = 0; i < r->n_whole; i++) {
		if (strcmp(r->whole[i].shape, shape))
			continue;
		if (r->whole[i].rate <= 0)
			return false;
		any = true;
	}
	return any;
}

int gpushare_report_load_curve_recommend(const struct gpushare_report *r, const char *shape, FILE *f)
{
	struct curve *cv;
	size_t n, ties = 0;
	char slo[32], name[96], t[32];
	int best = -1, rc;
	bool any = false;

	for (size_t i = 0; i < r->n_whole && !any; i++)
		any = r->whole[i].rate > 0 && !strcmp(r->whole[i].shape, shape);
	if (!any)
		return GPUSHARE_OK;
	if (r->slo_p99_seconds <= 0) {
		fprintf(f, "- **Highest rate within a latency bound:** give --slo-p99 to mark it on the load curves.\n");
		return GPUSHARE_OK;
	}
	rc = build(r, &cv, &n);
	if (rc)
		return rc;
	fmt_s(r->slo_p99_seconds, true, slo, sizeof(slo));
	for (size_t k = 0; k < n; k++) {
		if (strcmp(cv[k].shape, shape) || cv[k].peak < 0)
			continue;
		if (best < 0 || cv[k].pts[cv[k].peak].rate > cv[best].pts[cv[best].peak].rate)
			best = (int)k;
	}
	if (best < 0) {
		fprintf(f, "- **Highest rate within p99 under %s:** none of the offered rates measured meets the bound.\n", slo);
		curves_free(cv, n);
		return GPUSHARE_OK;
	}
	fprintf(f, "- **Highest rate within p99 under %s:** ", slo);
	/* Every curve that reaches the same rate: a tie is called a tie. */
	for (size_t k = 0; k < n; k++) {
		if (strcmp(cv[k].shape, shape) || cv[k].peak < 0 ||
		    cv[k].pts[cv[k].peak].rate != cv[best].pts[cv[best].peak].rate)
			continue;
		curve_name(&cv[k], name, sizeof(name));
		fprintf(f, "%s%s (p99 %s)", ties ? " and " : "", name,
			fmt_s(cv[k].pts[cv[k].peak].p99, true, t, sizeof(t)));
		ties++;
	}
	fprintf(f, "%s at %s requests/s offered", ties > 1 ? ", a tie," : "",
		fmt_rate(cv[best].pts[cv[best].peak].rate, true, t, sizeof(t)));
	if ((size_t)cv[best].peak + 1 == cv[best].n_pts)
		fprintf(f, " (the highest rate measured: the peak may be higher)");
	fputc('.', f);
	for (size_t k = 0, others = 0; k < n; k++) {
		if (strcmp(cv[k].shape, shape) ||
		    (cv[k].peak >= 0 && cv[k].pts[cv[k].peak].rate == cv[best].pts[cv[best].peak].rate))
			continue;
		curve_name(&cv[k], name, sizeof(name));
		fprintf(f, "%s %s ", others++ ? ";" : " Others:", name);
		if (cv[k].peak >= 0)
			fprintf(f, "%s/s", fmt_rate(cv[k].pts[cv[k].peak].rate, true, t, sizeof(t)));
		else
			fprintf(f, "none");
	}
	fputc('\n', f);
	curves_free(cv, n);
	return GPUSHARE_OK;
}

int gpushare_report_load_curve_markdown(const struct gpushare_report *r, FILE *f)
{
	struct curve *cv;
	size_t n;
	int rc = build(r, &cv, &n);

	if (rc || !n)
		return rc;
	fprintf(f, "## Latency under offered load\n\n"
		   "Open-loop runs: gpushare scheduled arrivals at each offered rate and latency counts from the\n"
		   "scheduled arrival (queueing + service; docs/bench.md). Medians over repeats.%s\n\n",
		r->slo_p99_seconds > 0 ? " A peak is the highest offered rate of the list whose p99 is within the bound\n"
					 "(and nothing was left unserved); the true peak lies between it and the next rate."
				       : " Give --slo-p99 to mark the peak rates.");
	fprintf(f, "| shape | strategy | workers | batch | offered /s (asked) | achieved /s | p50 | p99 | unserved | runs |\n"
		   "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (size_t k = 0; k < n; k++) {
		for (size_t j = 0; j < cv[k].n_pts; j++) {
			const struct point *p = &cv[k].pts[j];
			char a[24], b[24], off[24], rate[24], ach[24], unf[24];

			if (p->n)
				snprintf(unf, sizeof(unf), "%.0f", p->unfinished);
			else
				snprintf(unf, sizeof(unf), "-");
			fprintf(f, "| %s | %s | %d | %ld | %s (%s) | %s | %s | %s%s | %s | %zu |\n", cv[k].shape,
				gpushare_strategy_name(cv[k].strategy), cv[k].workers, cv[k].batch,
				fmt_rate(p->offered, p->n > 0, off, sizeof(off)), fmt_rate(p->rate, true, rate, sizeof(rate)),
				fmt_rate(p->achieved, p->n > 0, ach, sizeof(ach)), fmt_s(p->p50, p->n > 0, a, sizeof(a)),
				fmt_s(p->p99, p->n > 0, b, sizeof(b)), (int)j == cv[k].peak ? " **peak**" : "", unf, p->n);
		}
	}
	fputc('\n', f);
	curves_free(cv, n);
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the load curves: %s", strerror(errno));
	return GPUSHARE_OK;
}

/* ---- files ---- */

/* p99 against the offered rate for the curves of one shape, p99 on a log
 * axis, the bound as a dashed line and each curve's peak ringed: a plot of
 * report_plot.c. false when no curve of the shape has a point to draw. */
static bool plot_shape(struct rplot *p, const struct gpushare_report *r, const struct curve *cv, size_t n,
		       const char *shape)
{
	bool any = false;

	memset(p, 0, sizeof(*p));
	snprintf(p->title, sizeof(p->title), "p99 latency vs offered load: %s", shape);
	snprintf(p->subtitle, sizeof(p->subtitle),
		 "open loop: latency from the scheduled arrival; medians over repeats%s",
		 r->slo_p99_seconds > 0 ? "; the peak within the bound ringed" : "");
	snprintf(p->xlabel, sizeof(p->xlabel), "offered load");
	snprintf(p->ylabel, sizeof(p->ylabel), "p99 latency");
	p->xunit = RPLOT_REQUEST_RATE;
	p->yunit = RPLOT_SECONDS;
	p->logy = true;
	if (r->slo_p99_seconds > 0) {
		char t[24];

		p->yref = r->slo_p99_seconds;
		snprintf(p->yref_label, sizeof(p->yref_label), "bound %s", fmt_s(r->slo_p99_seconds, true, t, sizeof(t)));
	}
	for (size_t k = 0; k < n && p->n_series < RPLOT_MAX_SERIES; k++) {
		struct rplot_series *se = &p->series[p->n_series];
		char t[24];
		size_t l;

		if (strcmp(cv[k].shape, shape))
			continue;
		se->color = (int)p->n_series;
		curve_name(&cv[k], se->label, sizeof(se->label));
		l = strlen(se->label);
		if (cv[k].peak >= 0)
			snprintf(se->label + l, sizeof(se->label) - l, " (peak %s/s)",
				 fmt_rate(cv[k].pts[cv[k].peak].rate, true, t, sizeof(t)));
		for (size_t j = 0; j < cv[k].n_pts && se->n < RPLOT_MAX_POINTS; j++) {
			const struct point *pt = &cv[k].pts[j];

			if (!pt->n || pt->p99 <= 0)
				continue;
			if ((int)j == cv[k].peak)
				se->ring = se->n + 1;
			se->x[se->n] = pt->rate;
			se->y[se->n] = pt->p99;
			se->lo[se->n] = se->hi[se->n] = NAN;
			se->n++;
		}
		any |= se->n > 0;
		p->n_series++;
	}
	return any;
}

/* plots/load_curve-<s + 1>.png and .svg of shape s; nothing without cairo. */
static int write_plot(const struct rplot *p, const char *dir, size_t s)
{
	char path[GPUSHARE_PATH_MAX + 64];
	struct gpushare_buf png = { 0 }, svg = { 0 };
	int rc = gpushare_report_plot_render(p, &png, &svg);

	if (rc == GPUSHARE_E_UNSUPPORTED) {
		rc = GPUSHARE_OK;
	} else if (!rc) {
		snprintf(path, sizeof(path), "%s/plots/load_curve-%zu.png", dir, s + 1);
		rc = gpushare_write_file_atomic(path, png.s, png.len);
		snprintf(path, sizeof(path), "%s/plots/load_curve-%zu.svg", dir, s + 1);
		if (!rc)
			rc = gpushare_write_file_atomic(path, svg.s, svg.len);
	}
	gpushare_buf_release(&png);
	gpushare_buf_release(&svg);
	return rc;
}

int gpushare_report_load_curve_write(const struct gpushare_report *r, const char *dir)
{
	char path[GPUSHARE_PATH_MAX + 64];
	struct curve *cv;
	struct gpushare_buf b = { 0 };
	struct rplot *plot = NULL;
	size_t n;
	int rc = build(r, &cv, &n);

	if (rc || !n)
		return rc;
	gpushare_buf_addf(&b, "shape,strategy,workers,batch,rate_per_second,offered_per_second,achieved_per_second,"
		      "p50_seconds,p99_seconds,unfinished,runs,peak\n");
	for (size_t k = 0; k < n; k++) {
		for (size_t j = 0; j < cv[k].n_pts; j++) {
			const struct point *p = &cv[k].pts[j];

			gpushare_buf_addf(&b, "\"");
			for (const char *c = cv[k].shape; *c; c++)
				gpushare_buf_addf(&b, *c == '"' ? "\"\"" : "%c", *c);
			gpushare_buf_addf(&b, "\",%s,%d,%ld,%.9g", gpushare_strategy_name(cv[k].strategy), cv[k].workers,
				  cv[k].batch, p->rate);
			/* No ok run at this rate: its figures are unknown, empty fields. */
			if (p->n)
				gpushare_buf_addf(&b, ",%.9g,%.9g,%.9g,%.9g,%.0f", p->offered, p->achieved, p->p50, p->p99,
					  p->unfinished);
			else
				gpushare_buf_addf(&b, ",,,,,");
			gpushare_buf_addf(&b, ",%zu,%s\n", p->n, (int)j == cv[k].peak ? "true" : "false");
		}
	}
	snprintf(path, sizeof(path), "%s/load_curve.csv", dir);
	rc = b.failed ? gpushare_fail(GPUSHARE_E_NOMEM, "out of memory") : gpushare_write_file_atomic(path, b.s, b.len);
	gpushare_buf_release(&b);
	if (!rc && !(plot = malloc(sizeof(*plot))))
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t s = 0; s < r->n_shapes && !rc; s++) {
		if (plot_shape(plot, r, cv, n, r->shapes[s]))
			rc = write_plot(plot, dir, s);
	}
	if (plot)
		gpushare_report_plot_done();
	free(plot);
	curves_free(cv, n);
	return rc;
}
