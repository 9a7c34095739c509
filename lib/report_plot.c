/*
 * Plots of a sweep report, drawn with cairo into PNG and SVG: throughput
 * against batch size per strategy and worker count (the TorchServe figures),
 * mean and p99 latency against workers per strategy, and aggregate
 * throughput against workers per strategy. Points are medians over repeats,
 * error bars the 95% CI of the median. Axes carry units; the y unit is
 * chosen from the data (items/s, k items/s; us, ms, s).
 */
#include <cairo-svg.h>
#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "report_internal.h"

#define W 960
#define H 600
#define ML 96     /* margins around the plot area */
#define MR 230
#define MT 78
#define MB 72
#define FONT "DejaVu Sans"

/* Colour-blind friendly palette (Okabe-Ito, with dark grey for sequential),
 * indexed by enum gpushare_strategy. */
static const double palette[][3] = {
	{ 0.00, 0.45, 0.70 }, { 0.84, 0.37, 0.00 }, { 0.00, 0.62, 0.45 }, { 0.80, 0.47, 0.65 },
	{ 0.25, 0.25, 0.25 }, { 0.90, 0.62, 0.00 }, { 0.35, 0.35, 0.35 }, { 0.60, 0.20, 0.20 },
};
#define N_PALETTE (sizeof(palette) / sizeof(palette[0]))

struct frame {
	double x0, x1, y0, y1;      /* data range */
	double px0, px1, py0, py1;  /* plot area in pixels (py0 bottom) */
	bool logx;
};

static double map_x(const struct frame *f, double x)
{
	double v = f->logx ? log2(x) : x;

	return f->px0 + (v - f->x0) / (f->x1 - f->x0) * (f->px1 - f->px0);
}

static double map_y(const struct frame *f, double y)
{
	return f->py0 - (y - f->y0) / (f->y1 - f->y0) * (f->py0 - f->py1);
}

static double nice_step(double range)
{
	double raw = range / 5, mag = pow(10, floor(log10(raw))), n = raw / mag;

	return (n < 1.5 ? 1 : n < 3 ? 2 : n < 7 ? 5 : 10) * mag;
}

static void text_at(cairo_t *cr, double x, double y, const char *s, double ax, double ay)
{
	cairo_text_extents_t e;

	cairo_text_extents(cr, s, &e);
	cairo_move_to(cr, x - e.width * ax - e.x_bearing, y + e.height * ay - (e.height + e.y_bearing));
	cairo_show_text(cr, s);
}

static void marker(cairo_t *cr, int kind, double x, double y, double r)
{
	switch (kind % 4) {
	case 0: cairo_arc(cr, x, y, r, 0, 2 * M_PI); break;
	case 1: cairo_rectangle(cr, x - r, y - r, 2 * r, 2 * r); break;
	case 2:
		cairo_move_to(cr, x, y - r * 1.2);
		cairo_line_to(cr, x + r * 1.1, y + r * 0.8);
		cairo_line_to(cr, x - r * 1.1, y + r * 0.8);
		cairo_close_path(cr);
		break;
	default:
		cairo_move_to(cr, x, y - r * 1.3);
		cairo_line_to(cr, x + r * 1.1, y);
		cairo_line_to(cr, x, y + r * 1.3);
		cairo_line_to(cr, x - r * 1.1, y);
		cairo_close_path(cr);
		break;
	}
	cairo_fill(cr);
}

/* The y unit from the largest value: name and divisor. */
static void y_unit(const struct rplot *p, double max, const char **unit, double *div)
{
	if (p->yunit == 1) {
		if (max < 1e-3) {
			*unit = "us";
			*div = 1e-6;
		} else if (max < 2) {
			*unit = "ms";
			*div = 1e-3;
		} else {
			*unit = "s";
			*div = 1;
		}
		return;
	}
	if (max >= 2e6) {
		*unit = "M items/s";
		*div = 1e6;
	} else if (max >= 2e3) {
		*unit = "k items/s";
		*div = 1e3;
	} else {
		*unit = "items/s";
		*div = 1;
	}
}

static void set_color(cairo_t *cr, int c, double alpha)
{
	const double *rgb = palette[(size_t)c % N_PALETTE];

	cairo_set_source_rgba(cr, rgb[0], rgb[1], rgb[2], alpha);
}

static void draw(cairo_t *cr, const struct rplot *p)
{
	struct frame f = { .logx = p->logx };
	double xmin = INFINITY, xmax = -INFINITY, ymax = 0, div, step, xs[64];
	const char *unit;
	char buf[128];
	size_t nxs = 0;

	for (size_t s = 0; s < p->n_series; s++) {
		const struct rplot_series *se = &p->series[s];

		for (size_t i = 0; i < se->n; i++) {
			bool seen = false;

			xmin = fmin(xmin, se->x[i]);
			xmax = fmax(xmax, se->x[i]);
			ymax = fmax(ymax, isfinite(se->hi[i]) ? fmax(se->hi[i], se->y[i]) : se->y[i]);
			for (size_t j = 0; j < nxs; j++)
				seen |= xs[j] == se->x[i];
			if (!seen && nxs < 64)
				xs[nxs++] = se->x[i];
		}
	}
	if (!isfinite(xmin)) {
		xmin = 0;
		xmax = 1;
	}
	y_unit(p, ymax, &unit, &div);
	f.px0 = ML;
	f.px1 = W - MR;
	f.py0 = H - MB;
	f.py1 = MT;
	if (f.logx) {
		f.x0 = log2(xmin) - 0.35;
		f.x1 = log2(xmax) + 0.35;
	} else {
		double pad = xmax > xmin ? (xmax - xmin) * 0.06 : 0.5;

		f.x0 = xmin - pad;
		f.x1 = xmax + pad;
	}
	f.y0 = 0;
	step = nice_step(ymax > 0 ? ymax * 1.05 / div : 1) * div;
	f.y1 = ceil(ymax * 1.05 / step) * step;
	if (f.y1 <= 0)
		f.y1 = step;

	/* Background, title. */
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
	cairo_set_font_size(cr, 19);
	cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
	text_at(cr, ML, 30, p->title, 0, 0.5);
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, 12.5);
	cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
	text_at(cr, ML, 54, p->subtitle, 0, 0.5);

	/* Grid and ticks. */
	cairo_set_font_size(cr, 12);
	cairo_set_line_width(cr, 1);
	for (double y = 0; y <= f.y1 + step / 2; y += step) {
		double py = map_y(&f, y);

		cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
		cairo_move_to(cr, f.px0, floor(py) + 0.5);
		cairo_line_to(cr, f.px1, floor(py) + 0.5);
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		snprintf(buf, sizeof(buf), "%g", round(y / div * 1e6) / 1e6);
		text_at(cr, f.px0 - 8, py, buf, 1, 0.5);
	}
	for (size_t i = 0; i < nxs; i++) {
		double px = map_x(&f, xs[i]);

		cairo_set_source_rgb(cr, 0.93, 0.93, 0.93);
		cairo_move_to(cr, floor(px) + 0.5, f.py0);
		cairo_line_to(cr, floor(px) + 0.5, f.py1);
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		cairo_move_to(cr, floor(px) + 0.5, f.py0);
		cairo_line_to(cr, floor(px) + 0.5, f.py0 + 5);
		cairo_stroke(cr);
		snprintf(buf, sizeof(buf), "%g", xs[i]);
		text_at(cr, px, f.py0 + 10, buf, 0.5, 1);
	}
	cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
	cairo_rectangle(cr, f.px0 + 0.5, f.py1 + 0.5, f.px1 - f.px0, f.py0 - f.py1);
	cairo_stroke(cr);

	/* Axis labels. */
	cairo_set_font_size(cr, 14);
	text_at(cr, (f.px0 + f.px1) / 2, H - 22, p->xlabel, 0.5, 0.5);
	snprintf(buf, sizeof(buf), "%s (%s)", p->ylabel, unit);
	cairo_save(cr);
	cairo_translate(cr, 26, (f.py0 + f.py1) / 2);
	cairo_rotate(cr, -M_PI / 2);
	text_at(cr, 0, 0, buf, 0.5, 0.5);
	cairo_restore(cr);

	/* Series: error bars, lines, markers. Points at the same x are spread
	 * a little so bars do not hide each other. */
	cairo_save(cr);
	cairo_rectangle(cr, f.px0, f.py1 - 6, f.px1 - f.px0, f.py0 - f.py1 + 6);
	cairo_clip(cr);
	for (size_t s = 0; s < p->n_series; s++) {
		const struct rplot_series *se = &p->series[s];
		double off = p->n_series > 1 ? ((double)s - (double)(p->n_series - 1) / 2) * (14.0 / (double)p->n_series) : 0;

		set_color(cr, se->color, 0.75);
		cairo_set_line_width(cr, 1.3);
		for (size_t i = 0; i < se->n; i++) {
			double px = map_x(&f, se->x[i]) + off;

			if (!isfinite(se->lo[i]) || !isfinite(se->hi[i]) || se->hi[i] <= se->lo[i])
				continue;
			cairo_move_to(cr, px, map_y(&f, se->lo[i]));
			cairo_line_to(cr, px, map_y(&f, se->hi[i]));
			cairo_move_to(cr, px - 4, map_y(&f, se->lo[i]));
			cairo_line_to(cr, px + 4, map_y(&f, se->lo[i]));
			cairo_move_to(cr, px - 4, map_y(&f, se->hi[i]));
			cairo_line_to(cr, px + 4, map_y(&f, se->hi[i]));
			cairo_stroke(cr);
		}
		set_color(cr, se->color, 1);
		cairo_set_line_width(cr, 2.2);
		if (se->dashed) {
			double d[] = { 7, 4 };

			cairo_set_dash(cr, d, 2, 0);
		}
		for (size_t i = 0; i < se->n; i++) {
			double px = map_x(&f, se->x[i]) + off, py = map_y(&f, se->y[i]);

			if (i == 0)
				cairo_move_to(cr, px, py);
			else
				cairo_line_to(cr, px, py);
		}
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		for (size_t i = 0; i < se->n; i++)
			marker(cr, se->marker, map_x(&f, se->x[i]) + off, map_y(&f, se->y[i]), 4.2);
	}
	cairo_restore(cr);

	/* Legend, right of the plot. */
	{
		double lx = f.px1 + 18, ly = f.py1 + 8, lh = p->n_series > 20 ? 15 : 20;

		cairo_set_font_size(cr, p->n_series > 20 ? 11 : 12.5);
		for (size_t s = 0; s < p->n_series; s++) {
			const struct rplot_series *se = &p->series[s];
			double y = ly + (double)s * lh;

			set_color(cr, se->color, 1);
			cairo_set_line_width(cr, 2.2);
			if (se->dashed) {
				double d[] = { 7, 4 };

				cairo_set_dash(cr, d, 2, 0);
			}
			cairo_move_to(cr, lx, y);
			cairo_line_to(cr, lx + 30, y);
			cairo_stroke(cr);
			cairo_set_dash(cr, NULL, 0, 0);
			marker(cr, se->marker, lx + 15, y, 4.2);
			cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
			text_at(cr, lx + 38, y, se->label, 0, 0.5);
		}
	}
}

static cairo_status_t to_rbuf(void *closure, const unsigned char *data, unsigned int len)
{
	struct rbuf *b = closure;

	rbuf_add(b, data, len);
	return b->oom ? CAIRO_STATUS_NO_MEMORY : CAIRO_STATUS_SUCCESS;
}

int report_plot_render(const struct rplot *p, struct rbuf *png, struct rbuf *svg)
{
	cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, W, H);
	cairo_t *cr = cairo_create(s);
	cairo_status_t st;

	draw(cr, p);
	st = cairo_status(cr);
	cairo_destroy(cr);
	if (st == CAIRO_STATUS_SUCCESS)
		st = cairo_surface_write_to_png_stream(s, to_rbuf, png);
	cairo_surface_destroy(s);
	if (st != CAIRO_STATUS_SUCCESS)
		return gpushare_fail(GPUSHARE_E_IO, "cannot draw '%s' as PNG: %s", p->title, cairo_status_to_string(st));

	s = cairo_svg_surface_create_for_stream(to_rbuf, svg, W, H);
	cr = cairo_create(s);
	draw(cr, p);
	st = cairo_status(cr);
	cairo_destroy(cr);
	cairo_surface_finish(s);
	if (st == CAIRO_STATUS_SUCCESS)
		st = cairo_surface_status(s);
	cairo_surface_destroy(s);
	if (st != CAIRO_STATUS_SUCCESS || svg->oom)
		return gpushare_fail(GPUSHARE_E_IO, "cannot draw '%s' as SVG: %s", p->title, cairo_status_to_string(st));
	return GPUSHARE_OK;
}

/* ---- the figures of a report ---- */

static void add_point(struct rplot_series *se, double x, const struct gpushare_ci *ci)
{
	if (se->n >= RPLOT_MAX_POINTS || ci->n == 0)
		return;
	se->x[se->n] = x;
	se->y[se->n] = ci->median;
	se->lo[se->n] = ci->n > 1 ? ci->lo : NAN;
	se->hi[se->n] = ci->n > 1 ? ci->hi : NAN;
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

static void subtitle(const struct gpushare_report *r, struct rplot *p, const char *extra)
{
	snprintf(p->subtitle, sizeof(p->subtitle), "%s%smedian of repeats; bars: 95%% CI of the median%s%s", extra,
		 *extra ? "; " : "", r->gpu_name[0] ? "; " : "", r->gpu_name);
}

static int add_figure(struct report_figure **figs, size_t *n, const struct rplot *p, const char *name,
		      const char *caption)
{
	struct report_figure *nf = realloc(*figs, (*n + 1) * sizeof(*nf));
	struct report_figure *f;
	int rc;

	if (!nf)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	*figs = nf;
	f = &nf[*n];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	snprintf(f->caption, sizeof(f->caption), "%s", caption);
	(*n)++;
	rc = report_plot_render(p, &f->png, &f->svg);
	return rc;
}

static int shape_figures(const struct gpushare_report *r, size_t si, struct rplot *p, struct report_figure **figs,
			 size_t *nf)
{
	const char *shape = r->shapes[si];
	int workers[64], strat[GPUSHARE_STRATEGY_COUNT];
	long batches[64];
	size_t nw = report_shape_workers(r, shape, workers, 64), nb = report_shape_batches(r, shape, batches, 64);
	size_t ns = report_shape_strategies(r, shape, strat, GPUSHARE_STRATEGY_COUNT);
	char name[96], cap[256], extra[64];
	int rc;

	/* Throughput vs batch, one line per strategy and worker count. */
	memset(p, 0, sizeof(*p));
	snprintf(p->title, sizeof(p->title), "%s: throughput vs batch size", shape);
	subtitle(r, p, "");
	snprintf(p->xlabel, sizeof(p->xlabel), "batch size (items per request)");
	snprintf(p->ylabel, sizeof(p->ylabel), "aggregate throughput");
	p->logx = nb > 1 && batches[nb - 1] >= 4 * batches[0];
	for (size_t s = 0; s < ns; s++) {
		for (size_t w = 0; w < nw; w++) {
			struct rplot_series *se = new_series(p);

			if (!se)
				break;
			snprintf(se->label, sizeof(se->label), "%s, %d %s", gpushare_strategy_name(strat[s]), workers[w],
				 workers[w] == 1 ? "worker" : "workers");
			se->color = strat[s];
			se->marker = (int)w;
			se->dashed = w % 2 == 1;
			for (size_t b = 0; b < nb; b++) {
				int k = report_find_cell(r, shape, strat[s], workers[w], batches[b]);

				if (k >= 0)
					add_point(se, (double)batches[b], &r->cells[k].throughput);
			}
			if (se->n == 0)
				p->n_series--;
		}
	}
	snprintf(name, sizeof(name), "shape%zu-throughput-vs-batch", si + 1);
	snprintf(cap, sizeof(cap), "%s: aggregate throughput against batch size, per strategy and worker count.", shape);
	rc = add_figure(figs, nf, p, name, cap);

	for (size_t b = 0; b < nb && !rc; b++) {
		snprintf(extra, sizeof(extra), "batch %ld", batches[b]);
		/* Mean and p99 latency vs workers. */
		memset(p, 0, sizeof(*p));
		snprintf(p->title, sizeof(p->title), "%s: latency vs workers", shape);
		subtitle(r, p, extra);
		snprintf(p->xlabel, sizeof(p->xlabel), "workers (processes sharing the GPU)");
		snprintf(p->ylabel, sizeof(p->ylabel), "request latency");
		p->yunit = 1;
		for (size_t s = 0; s < ns; s++) {
			for (int kind = 0; kind < 2; kind++) {
				struct rplot_series *se = new_series(p);

				if (!se)
					break;
				snprintf(se->label, sizeof(se->label), "%s %s", gpushare_strategy_name(strat[s]),
					 kind ? "p99" : "mean");
				se->color = strat[s];
				se->dashed = kind == 1;
				se->marker = kind ? 1 : 0;
				for (size_t w = 0; w < nw; w++) {
					int k = report_find_cell(r, shape, strat[s], workers[w], batches[b]);

					if (k >= 0)
						add_point(se, workers[w], kind ? &r->cells[k].p99_latency : &r->cells[k].mean_latency);
				}
				if (se->n == 0)
					p->n_series--;
			}
		}
		snprintf(name, sizeof(name), "shape%zu-batch%ld-latency-vs-workers", si + 1, batches[b]);
		snprintf(cap, sizeof(cap), "%s, batch %ld: mean (solid) and p99 (dashed) latency against worker count.",
			 shape, batches[b]);
		rc = add_figure(figs, nf, p, name, cap);
		if (rc)
			break;
		/* Aggregate throughput vs workers. */
		memset(p, 0, sizeof(*p));
		snprintf(p->title, sizeof(p->title), "%s: throughput vs workers", shape);
		subtitle(r, p, extra);
		snprintf(p->xlabel, sizeof(p->xlabel), "workers (processes sharing the GPU)");
		snprintf(p->ylabel, sizeof(p->ylabel), "aggregate throughput");
		for (size_t s = 0; s < ns; s++) {
			struct rplot_series *se = new_series(p);

			if (!se)
				break;
			snprintf(se->label, sizeof(se->label), "%s", gpushare_strategy_name(strat[s]));
			se->color = strat[s];
			se->marker = strat[s];
			for (size_t w = 0; w < nw; w++) {
				int k = report_find_cell(r, shape, strat[s], workers[w], batches[b]);

				if (k >= 0)
					add_point(se, workers[w], &r->cells[k].throughput);
			}
			if (se->n == 0)
				p->n_series--;
		}
		snprintf(name, sizeof(name), "shape%zu-batch%ld-throughput-vs-workers", si + 1, batches[b]);
		snprintf(cap, sizeof(cap), "%s, batch %ld: aggregate throughput of all workers against worker count.",
			 shape, batches[b]);
		rc = add_figure(figs, nf, p, name, cap);
	}
	return rc;
}

int report_figures(const struct gpushare_report *r, struct report_figure **figs, size_t *n)
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
	/* Drop cairo's font and glyph caches (and fontconfig's through it), so
	 * a report leaves nothing allocated behind (LeakSanitizer in tests). */
	cairo_debug_reset_static_data();
	FcFini();
	return rc;
}

void report_figures_free(struct report_figure *figs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		rbuf_release(&figs[i].png);
		rbuf_release(&figs[i].svg);
	}
	free(figs);
}
