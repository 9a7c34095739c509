/*
 * The figures of a sweep report, drawn by report_plot.c. Per shape:
 * throughput against batch size (only when the sweep has several), and per
 * batch: aggregate throughput against workers, latency percentiles (p50,
 * p90, p99, p99.9) against workers on a log axis, fairness (slowest ÷
 * fastest worker) against workers, GPU utilisation and memory against
 * workers when NVML telemetry was recorded, and per worker count the
 * latency tail (CCDF, log-log) of each strategy from the merged histograms.
 * A figure that would overlay more than RPLOT_MAX_OVERLAID series (four
 * percentiles of three strategies) is drawn as small multiples: one panel
 * per strategy, all on the same axes so they compare. Points are
 * medians over repeats, error bars the interval of the median with the
 * coverage the subtitle states.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/format.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "gpushare/stats.h"
#include "report_internal.h"

static void add_point(struct rplot_series *se, double x, const struct gpushare_ci *ci, double scale)
{
	bool iv = gpushare_ci_has_interval(ci);

	if (se->n >= RPLOT_MAX_POINTS || ci->n == 0 || !isfinite(ci->median))
		return;
	se->x[se->n] = x;
	se->y[se->n] = ci->median * scale;
	se->lo[se->n] = iv ? ci->lo * scale : NAN;
	se->hi[se->n] = iv ? ci->hi * scale : NAN;
	se->n++;
}

static struct rplot_series *new_series(struct rplot *p)
{
	struct rplot_series *se;

	if (p->n_series >= RPLOT_MAX_SERIES)
		return NULL;
	se = &p->series[p->n_series++];
	memset(se, 0, sizeof(*se));
	return se;
}

/* Drop the last series when it got no point. */
static void keep_series(struct rplot *p)
{
	if (p->n_series && p->series[p->n_series - 1].n == 0)
		p->n_series--;
}

/* What the error bars are, from the coverage most cells of the shape have. */
static void subtitle(const struct gpushare_report *r, const char *shape, struct rplot *p, const char *extra,
		     bool bars)
{
	double covs[64];
	size_t counts[64] = { 0 }, runs[64], nc = 0, best = 0;
	char what[128], cov[16];

	for (size_t i = 0; i < r->n_cells; i++) {
		const struct gpushare_report_cell *c = &r->cells[i];
		double cv = gpushare_ci_has_interval(&c->throughput) ? c->throughput.coverage : 0;
		size_t j;

		if (strcmp(c->shape, shape) || !c->n_ok)
			continue;
		for (j = 0; j < nc && covs[j] != cv; j++)
			;
		if (j == nc && nc < 64) {
			covs[nc] = cv;
			runs[nc++] = c->throughput.n;
		}
		if (j < 64)
			counts[j]++;
	}
	for (size_t j = 1; j < nc; j++) {
		if (counts[j] > counts[best])
			best = j;
	}
	if (!nc)
		snprintf(what, sizeof(what), "no run");
	else if (covs[best] > 0 && bars)
		snprintf(what, sizeof(what), "median of %zu runs; bars: interval of the median, %s coverage", runs[best],
			 gpushare_fmt_coverage(covs[best], cov, sizeof(cov)));
	else if (covs[best] > 0)
		snprintf(what, sizeof(what), "median of %zu runs", runs[best]);
	else
		snprintf(what, sizeof(what), "one run per cell: no interval");
	snprintf(p->subtitle, sizeof(p->subtitle), "%s%s%s%s%s", extra, *extra ? "; " : "", what,
		 r->gpu_name[0] ? "; " : "", r->gpu_name);
}

static int add_figure(struct report_figure **figs, size_t *n, const struct rplot *p, const char *name,
		      const char *caption)
{
	struct report_figure *nf = realloc(*figs, (*n + 1) * sizeof(*nf));
	struct report_figure *f;

	if (!nf)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	*figs = nf;
	f = &nf[*n];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	snprintf(f->caption, sizeof(f->caption), "%s", caption);
	(*n)++;
	return gpushare_report_plot_render(p, &f->png, &f->svg);
}

struct shape_ctx {
	const struct gpushare_report *r;
	size_t si;
	const char *shape;
	int workers[64], strat[GPUSHARE_STRATEGY_COUNT];
	long batches[64];
	size_t nw, nb, ns;
	struct rplot *p;
	struct report_figure **figs;
	size_t *nf;
};

static void plot_init(struct shape_ctx *x, const char *title, const char *extra, const char *xlabel,
		      const char *ylabel, int yunit, bool bars)
{
	struct rplot *p = x->p;

	memset(p, 0, sizeof(*p));
	snprintf(p->title, sizeof(p->title), "%s: %s", x->shape, title);
	subtitle(x->r, x->shape, p, extra, bars);
	snprintf(p->xlabel, sizeof(p->xlabel), "%s", xlabel);
	snprintf(p->ylabel, sizeof(p->ylabel), "%s", ylabel);
	p->yunit = yunit;
	p->xticks_at_points = true;
}

/* One series per strategy of the cells' metric against workers. */
typedef const struct gpushare_ci *(*cell_metric)(const struct gpushare_report_cell *c);

static const struct gpushare_ci *m_tput(const struct gpushare_report_cell *c) { return &c->throughput; }
static const struct gpushare_ci *m_fair(const struct gpushare_report_cell *c) { return &c->fairness; }
static const struct gpushare_ci *m_util(const struct gpushare_report_cell *c) { return &c->util_pct; }
static const struct gpushare_ci *m_mem(const struct gpushare_report_cell *c) { return &c->mem_used_bytes; }
static const struct gpushare_ci *m_p50(const struct gpushare_report_cell *c) { return &c->p50_latency; }
static const struct gpushare_ci *m_p90(const struct gpushare_report_cell *c) { return &c->p90_latency; }
static const struct gpushare_ci *m_p99(const struct gpushare_report_cell *c) { return &c->p99_latency; }
static const struct gpushare_ci *m_p999(const struct gpushare_report_cell *c) { return &c->p999_latency; }

static size_t per_strategy(struct shape_ctx *x, long batch, cell_metric m, const char *suffix, int dash, int mark)
{
	size_t points = 0;

	for (size_t s = 0; s < x->ns; s++) {
		struct rplot_series *se = new_series(x->p);

		if (!se)
			break;
		snprintf(se->label, sizeof(se->label), "%s%s%s", gpushare_strategy_name(x->strat[s]), *suffix ? " " : "",
			 suffix);
		snprintf(se->key, sizeof(se->key), "%s", *suffix ? suffix : gpushare_strategy_name(x->strat[s]));
		se->panel = (int)s;
		se->color = x->strat[s];
		se->dashed = dash;
		se->marker = mark >= 0 ? mark : x->strat[s];
		for (size_t w = 0; w < x->nw; w++) {
			int k = gpushare_report_find_cell(x->r, x->shape, x->strat[s], x->workers[w], batch);

			if (k >= 0)
				add_point(se, x->workers[w], m(&x->r->cells[k]), 1);
		}
		points += se->n;
		keep_series(x->p);
	}
	return points;
}

/* Where more than RPLOT_MAX_OVERLAID series would overlap, one panel per
 * strategy (the series' panel is the strategy's index in x->strat), on
 * shared axes; strategies without a series get no panel. Returns whether
 * the figure was split. */
static bool split_panels(struct shape_ctx *x)
{
	struct rplot *p = x->p;
	int map[GPUSHARE_STRATEGY_COUNT];

	p->n_panels = 0;
	if (p->n_series <= RPLOT_MAX_OVERLAID || x->ns < 2)
		return false;
	for (size_t s = 0; s < x->ns && s < GPUSHARE_STRATEGY_COUNT; s++) {
		bool used = false;

		for (size_t k = 0; k < p->n_series; k++)
			used |= p->series[k].panel == (int)s;
		map[s] = -1;
		if (!used || p->n_panels >= RPLOT_MAX_PANELS)
			continue;
		map[s] = (int)p->n_panels;
		snprintf(p->panel_title[p->n_panels++], sizeof(p->panel_title[0]), "%s", gpushare_strategy_name(x->strat[s]));
	}
	for (size_t k = 0; k < p->n_series; k++)
		p->series[k].panel = map[p->series[k].panel];
	if (p->n_panels < 2) {
		p->n_panels = 0;
		return false;
	}
	return true;
}

static int fig(struct shape_ctx *x, const char *name, const char *caption)
{
	return add_figure(x->figs, x->nf, x->p, name, caption);
}

/* The latency tail of each strategy at one worker count: the complementary
 * CDF (the fraction of requests slower than a latency) on log-log axes, so
 * that p99 and p99.9 (1% and 0.1%) and a 10-100 ms tail stand apart instead
 * of crowding at the top of a linear CDF. */
static int cdf_figure(struct shape_ctx *x, long batch, int workers)
{
	char name[96], cap[256], extra[64];
	size_t drawn = 0;

	snprintf(extra, sizeof(extra), "batch %ld, %d %s", batch, workers, workers == 1 ? "worker" : "workers");
	plot_init(x, "latency tail (CCDF)", extra, "request latency", "fraction of requests slower", RPLOT_FRACTION,
		  false);
	snprintf(x->p->subtitle, sizeof(x->p->subtitle), "%s; all successful runs' requests merged%s%s", extra,
		 x->r->gpu_name[0] ? "; " : "", x->r->gpu_name);
	x->p->xunit = RPLOT_SECONDS;
	x->p->logx = true;
	x->p->logy = true;
	x->p->xticks_at_points = false;
	for (size_t s = 0; s < x->ns; s++) {
		int k = gpushare_report_find_cell(x->r, x->shape, x->strat[s], workers, batch);
		const struct gpushare_hist *h;
		struct rplot_series *se;
		size_t nonempty = 0, every, seen = 0;
		uint64_t cum = 0;

		if (k < 0 || !(h = x->r->cells[k].hist) || !h->count || !(se = new_series(x->p)))
			continue;
		snprintf(se->label, sizeof(se->label), "%s", gpushare_strategy_name(x->strat[s]));
		snprintf(se->key, sizeof(se->key), "%s", gpushare_strategy_name(x->strat[s]));
		se->panel = (int)s;
		se->color = x->strat[s];
		se->marker = -1;
		for (size_t b = 0; b < GPUSHARE_HIST_BUCKETS; b++)
			nonempty += h->buckets[b] != 0;
		every = nonempty / RPLOT_MAX_POINTS + 1;
		for (size_t b = 0; b < GPUSHARE_HIST_BUCKETS; b++) {
			if (!h->buckets[b])
				continue;
			cum += h->buckets[b];
			/* The slowest bucket leaves nothing slower: no point on a log axis. */
			if ((++seen % every && cum != h->count) || cum == h->count)
				continue;
			if (se->n < RPLOT_MAX_POINTS) {
				se->x[se->n] = (double)gpushare_hist_bucket_high(b) / 1e9;
				se->y[se->n] = (double)(h->count - cum) / (double)h->count;
				se->lo[se->n] = se->hi[se->n] = NAN;
				se->n++;
			}
		}
		drawn++;
		keep_series(x->p);
	}
	if (!drawn)
		return GPUSHARE_OK;
	snprintf(name, sizeof(name), "shape%zu-batch%ld-cdf-w%d", x->si + 1, batch, workers);
	snprintf(cap, sizeof(cap), "%s, %s: the fraction of requests slower than a latency, %s, on log "
				   "axes: 1%% is p99, 0.1%% p99.9 (from the runs' histograms).", x->shape, extra,
		 split_panels(x) ? "one panel per strategy (same axes)" : "per strategy");
	return fig(x, name, cap);
}

static int batch_figures(struct shape_ctx *x, long batch)
{
	static const struct {
		cell_metric m;
		const char *name;
		int dash, marker;
	} pct[] = { { m_p50, "p50", 0, 0 }, { m_p90, "p90", 3, 2 }, { m_p99, "p99", 1, 1 }, { m_p999, "p99.9", 2, 3 } };
	char name[96], cap[256], extra[64];
	const char *xl = "workers (processes sharing the GPU)";
	int rc;

	snprintf(extra, sizeof(extra), "batch %ld", batch);
	/* Aggregate throughput vs workers. */
	plot_init(x, "throughput vs workers", extra, xl, "aggregate throughput", RPLOT_RATE, true);
	per_strategy(x, batch, m_tput, "", 0, -1);
	snprintf(name, sizeof(name), "shape%zu-batch%ld-throughput-vs-workers", x->si + 1, batch);
	snprintf(cap, sizeof(cap), "%s, batch %ld: aggregate throughput of all workers against worker count.", x->shape,
		 batch);
	if ((rc = fig(x, name, cap)))
		return rc;
	/* Latency percentiles vs workers, log axis. */
	plot_init(x, "latency percentiles vs workers", extra, xl, "request latency", RPLOT_SECONDS, true);
	x->p->logy = true;
	for (size_t k = 0; k < sizeof(pct) / sizeof(pct[0]); k++)
		per_strategy(x, batch, pct[k].m, pct[k].name, pct[k].dash, pct[k].marker);
	snprintf(name, sizeof(name), "shape%zu-batch%ld-latency-vs-workers", x->si + 1, batch);
	snprintf(cap, sizeof(cap), "%s, batch %ld: p50 (solid), p90 (dash-dot), p99 (dashed) and p99.9 (dotted) latency "
				   "against worker count, log scale%s.", x->shape, batch,
		 split_panels(x) ? "; one panel per strategy, on the same axes" : "");
	if ((rc = fig(x, name, cap)))
		return rc;
	/* Fairness vs workers. */
	plot_init(x, "fairness vs workers", extra, xl, "slowest / fastest worker throughput", RPLOT_FRACTION, true);
	per_strategy(x, batch, m_fair, "", 0, -1);
	snprintf(name, sizeof(name), "shape%zu-batch%ld-fairness-vs-workers", x->si + 1, batch);
	snprintf(cap, sizeof(cap), "%s, batch %ld: fairness, the slowest worker's throughput over the fastest's "
				   "(1: all equal).", x->shape, batch);
	if (x->p->n_series && (rc = fig(x, name, cap)))
		return rc;
	/* NVML telemetry, when recorded. */
	plot_init(x, "GPU utilisation vs workers", extra, xl, "GPU utilisation, mean over the window", RPLOT_PERCENT, true);
	if (per_strategy(x, batch, m_util, "", 0, -1)) {
		snprintf(name, sizeof(name), "shape%zu-batch%ld-gpu-util-vs-workers", x->si + 1, batch);
		snprintf(cap, sizeof(cap), "%s, batch %ld: GPU utilisation (NVML, share of time a kernel ran) against "
					   "worker count.", x->shape, batch);
		if ((rc = fig(x, name, cap)))
			return rc;
	}
	plot_init(x, "GPU memory vs workers", extra, xl, "GPU memory used, max over the window", RPLOT_BYTES, true);
	if (per_strategy(x, batch, m_mem, "", 0, -1)) {
		snprintf(name, sizeof(name), "shape%zu-batch%ld-gpu-memory-vs-workers", x->si + 1, batch);
		snprintf(cap, sizeof(cap), "%s, batch %ld: GPU memory used (NVML) against worker count.", x->shape, batch);
		if ((rc = fig(x, name, cap)))
			return rc;
	}
	for (size_t w = 0; w < x->nw; w++) {
		if ((rc = cdf_figure(x, batch, x->workers[w])))
			return rc;
	}
	return GPUSHARE_OK;
}

static int shape_figures(const struct gpushare_report *r, size_t si, struct rplot *p, struct report_figure **figs,
			 size_t *nf)
{
	struct shape_ctx x = { .r = r, .si = si, .shape = r->shapes[si], .p = p, .figs = figs, .nf = nf };
	char name[96], cap[256];
	int rc;

	x.nw = gpushare_report_shape_workers(r, x.shape, x.workers, 64);
	x.nb = gpushare_report_shape_batches(r, x.shape, x.batches, 64);
	x.ns = gpushare_report_shape_strategies(r, x.shape, x.strat, GPUSHARE_STRATEGY_COUNT);
	/* Throughput vs batch, one line per strategy and worker count: only
	 * when there is more than one batch size. */
	if (x.nb > 1) {
		plot_init(&x, "throughput vs batch size", "", "batch size (items per request)", "aggregate throughput",
			  RPLOT_RATE, true);
		p->logx = x.batches[x.nb - 1] >= 4 * x.batches[0];
		for (size_t s = 0; s < x.ns; s++) {
			for (size_t w = 0; w < x.nw; w++) {
				struct rplot_series *se = new_series(p);

				if (!se)
					break;
				snprintf(se->label, sizeof(se->label), "%s, %d %s", gpushare_strategy_name(x.strat[s]),
					 x.workers[w], x.workers[w] == 1 ? "worker" : "workers");
				snprintf(se->key, sizeof(se->key), "%d %s", x.workers[w], x.workers[w] == 1 ? "worker" : "workers");
				se->panel = (int)s;
				se->color = x.strat[s];
				se->marker = (int)w;
				se->dashed = w % 2 == 1;
				for (size_t b = 0; b < x.nb; b++) {
					int k = gpushare_report_find_cell(r, x.shape, x.strat[s], x.workers[w], x.batches[b]);

					if (k >= 0)
						add_point(se, (double)x.batches[b], &r->cells[k].throughput, 1);
				}
				keep_series(p);
			}
		}
		snprintf(name, sizeof(name), "shape%zu-throughput-vs-batch", si + 1);
		snprintf(cap, sizeof(cap), "%s: aggregate throughput against batch size, per strategy and worker count%s.",
			 x.shape, split_panels(&x) ? " (one panel per strategy, on the same axes)" : "");
		if ((rc = fig(&x, name, cap)))
			return rc;
	}
	for (size_t b = 0; b < x.nb; b++) {
		if ((rc = batch_figures(&x, x.batches[b])))
			return rc;
	}
	return GPUSHARE_OK;
}

int gpushare_report_figures(const struct gpushare_report *r, struct report_figure **figs, size_t *n)
{
	struct rplot *p = malloc(sizeof(*p));
	int rc = GPUSHARE_OK;

	*figs = NULL;
	*n = 0;
	if (!p)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t i = 0; i < r->n_shapes && !rc; i++)
		rc = shape_figures(r, i, p, figs, n);
	free(p);
	gpushare_report_plot_done();
	return rc;
}

void gpushare_report_figures_free(struct report_figure *figs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		gpushare_buf_release(&figs[i].png);
		gpushare_buf_release(&figs[i].svg);
	}
	free(figs);
}
