/*
 * Plots of a sweep report, drawn with cairo into PNG and SVG. Per shape:
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
 * coverage the subtitle states. Axes carry units chosen from the data;
 * numbers are formatted by gpushare/format.h. In the SVG, text stays text
 * (<text> elements), so it can be searched and read by tools. A title too
 * wide for the image (a long shape or command) is cut in its middle with an
 * ellipsis; the figure's caption keeps it whole.
 */
#include <cairo-svg.h>
#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/format.h"
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
#define TITLE_SIZE 19
#define TITLE_MR 16  /* the least room between a title and the image's right edge */

/* Colour-blind friendly palette (Okabe-Ito, with dark grey for sequential),
 * indexed by enum gpushare_strategy. */
static const double palette[][3] = {
	{ 0.00, 0.45, 0.70 }, { 0.84, 0.37, 0.00 }, { 0.00, 0.62, 0.45 }, { 0.80, 0.47, 0.65 },
	{ 0.25, 0.25, 0.25 }, { 0.90, 0.62, 0.00 }, { 0.35, 0.35, 0.35 }, { 0.60, 0.20, 0.20 },
};
#define N_PALETTE (sizeof(palette) / sizeof(palette[0]))

/* Line styles: solid, dashed, dotted, dash-dot. */
static const double dash_on[][4] = { { 0 }, { 7, 4 }, { 2, 3 }, { 8, 3, 2, 3 } };
static const int dash_n[] = { 0, 2, 2, 4 };

/* The drawing of one plot; svg_text collects the text of the SVG pass. */
struct canvas {
	cairo_t *cr;
	struct gpushare_buf *svg_text;       /* NULL: draw text as glyphs (PNG) */
	double font_size;
	bool bold;
};

struct axis {
	bool log;
	double base;                 /* 2 or 10 */
	double lo, hi;               /* in axis space (log of the value when log) */
	int unit;                    /* enum rplot_unit */
	const char *uname;           /* unit for the label ("k items/s"); "" none */
	double div;                  /* value / div is printed */
};

struct frame {
	struct axis x, y;
	double px0, px1, py0, py1;   /* plot area in pixels (py0 bottom) */
};

static double to_axis(const struct axis *a, double v)
{
	return a->log ? log(v) / log(a->base) : v;
}

static double map_x(const struct frame *f, double v)
{
	return f->px0 + (to_axis(&f->x, v) - f->x.lo) / (f->x.hi - f->x.lo) * (f->px1 - f->px0);
}

static double map_y(const struct frame *f, double v)
{
	return f->py0 - (to_axis(&f->y, v) - f->y.lo) / (f->y.hi - f->y.lo) * (f->py0 - f->py1);
}

static double nice_step(double range)
{
	double raw = range / 5, mag = pow(10, floor(log10(raw))), n = raw / mag;

	return (n < 1.5 ? 1 : n < 3 ? 2 : n < 7 ? 5 : 10) * mag;
}

static void font(struct canvas *cv, double size, bool bold)
{
	cv->font_size = size;
	cv->bold = bold;
	cairo_select_font_face(cv->cr, FONT, CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cv->cr, size);
}

/* Text anchored at (x, y): ax, ay in 0..1 (0 left/top, 0.5 centre, 1
 * right/bottom). PNG: glyphs; SVG: a <text> element at the same place. */
static void text_at(struct canvas *cv, double x, double y, const char *s, double ax, double ay)
{
	cairo_t *cr = cv->cr;
	cairo_text_extents_t e;
	double bx, by;

	cairo_text_extents(cr, s, &e);
	bx = x - e.width * ax - e.x_bearing;
	by = y + e.height * ay - (e.height + e.y_bearing);
	if (!cv->svg_text) {
		cairo_move_to(cr, bx, by);
		cairo_show_text(cr, s);
		return;
	}
	{
		cairo_matrix_t m;
		double r = 0, g = 0, b = 0, a = 1, dx = bx, dy = by, angle;

		cairo_pattern_get_rgba(cairo_get_source(cr), &r, &g, &b, &a);
		cairo_get_matrix(cr, &m);
		cairo_user_to_device(cr, &dx, &dy);
		angle = atan2(m.yx, m.xx) * 180 / M_PI;
		gpushare_buf_addf(cv->svg_text,
			    "<text x=\"%.2f\" y=\"%.2f\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"%.1f\"%s "
			    "fill=\"rgb(%d,%d,%d)\"", dx, dy, cv->font_size, cv->bold ? " font-weight=\"bold\"" : "",
			    (int)lround(r * 255), (int)lround(g * 255), (int)lround(b * 255));
		if (fabs(angle) > 0.01)
			gpushare_buf_addf(cv->svg_text, " transform=\"rotate(%.1f %.2f %.2f)\"", angle, dx, dy);
		gpushare_buf_addf(cv->svg_text, ">");
		gpushare_report_add_xml(cv->svg_text, s);
		gpushare_buf_addf(cv->svg_text, "</text>\n");
	}
}

/* The offsets where the characters of s begin (UTF-8: the bytes that are
 * not continuation bytes), then where the last one ends: n + 1 offsets for n
 * characters, at most max - 1 characters counted (what follows is left out). */
static size_t char_starts(const char *s, size_t *at, size_t max)
{
	size_t n = 0, i = 0;

	for (; s[i]; i++) {
		if (((unsigned char)s[i] & 0xC0) == 0x80)
			continue;
		if (n + 1 == max)
			break;
		at[n++] = i;
	}
	at[n] = i;
	return n;
}

/* s as it fits in max_w pixels in the current font: itself when it does,
 * else its start and its end around an ellipsis in the middle ("shape
 * ab…yz: throughput vs workers"), as many whole characters of both as fit,
 * so the shape's beginning and the plot's kind both stay. Into out (len
 * bytes); returns the width of its ink. */
static double fit_text(cairo_t *cr, const char *s, double max_w, char *out, size_t len)
{
	static const char ellipsis[] = "\u2026";
	size_t at[512], n = char_starts(s, at, sizeof(at) / sizeof(at[0]));
	cairo_text_extents_t e;

	snprintf(out, len, "%s", s);
	cairo_text_extents(cr, out, &e);
	if (e.width <= max_w)
		return e.width;
	for (size_t keep = n; keep-- > 0;) {
		size_t head = at[(keep + 1) / 2], tail = at[n - keep / 2];

		if (head + sizeof(ellipsis) + (at[n] - tail) > len)
			continue;
		snprintf(out, len, "%.*s%s%.*s", (int)head, s, ellipsis, (int)(at[n] - tail), s + tail);
		cairo_text_extents(cr, out, &e);
		if (e.width <= max_w)
			break;
	}
	return e.width;
}

static void marker(cairo_t *cr, int kind, double x, double y, double r)
{
	if (kind < 0)
		return;
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

static void set_color(cairo_t *cr, int c, double alpha)
{
	const double *rgb = palette[(size_t)c % N_PALETTE];

	cairo_set_source_rgba(cr, rgb[0], rgb[1], rgb[2], alpha);
}

static void set_dash(cairo_t *cr, int dash)
{
	int d = dash < 0 || dash > 3 ? 0 : dash;

	cairo_set_dash(cr, dash_on[d], dash_n[d], 0);
}

/* Unit name and divisor of an axis from its largest value. */
static void axis_unit(struct axis *a, double max)
{
	const char *suffix;
	static char rate[32];

	a->uname = "";
	a->div = 1;
	switch (a->unit) {
	case RPLOT_RATE:
		gpushare_si_unit(max, &suffix, &a->div);
		snprintf(rate, sizeof(rate), "%s%sitems/s", suffix, *suffix ? " " : "");
		a->uname = rate;
		break;
	case RPLOT_SECONDS: {
		double scale;

		gpushare_seconds_unit(max, &a->uname, &scale);
		a->div = 1 / scale;
		break;
	}
	case RPLOT_PERCENT:
		a->uname = "%";
		break;
	case RPLOT_BYTES:
		if (max >= 1073741824.0) {
			a->uname = "GiB";
			a->div = 1073741824.0;
		} else {
			a->uname = "MiB";
			a->div = 1048576.0;
		}
		break;
	default:
		break;
	}
}

/* A tick label: on a log axis of seconds each tick carries its unit. */
static void tick_label(const struct axis *a, double v, char *buf, size_t len)
{
	if (a->log && a->unit == RPLOT_SECONDS)
		gpushare_fmt_seconds(v, buf, len);
	else if (a->log && a->unit == RPLOT_FRACTION)
		snprintf(buf, len, "%g%%", v * 100);
	else if (a->log)
		gpushare_fmt_si(v, buf, len);
	else
		snprintf(buf, len, "%g", round(v / a->div * 1e6) / 1e6);
}

/* Range of a log axis: [min, max] and a little room, at least a decade. */
static void log_range(struct axis *a, double min, double max)
{
	a->base = 10;
	if (!(min > 0) || !isfinite(min) || !(max >= min)) {
		min = 1e-6;
		max = 1;
	}
	a->lo = log10(min) - 0.08;
	a->hi = log10(max) + 0.08;
	if (a->hi - a->lo < 1) {
		double mid = (a->hi + a->lo) / 2;

		a->lo = mid - 0.5;
		a->hi = mid + 0.5;
	}
}

/* Tick values of a log axis inside its range: 1, 2 and 5 times the
 * decades when it spans up to three decades, else the decades. */
static size_t log_ticks(const struct axis *a, double *out, size_t max)
{
	static const double steps[] = { 1, 2, 5 };
	size_t n = 0, ns = a->hi - a->lo <= 3 ? 3 : 1;

	for (double d = floor(a->lo); d <= ceil(a->hi) && n < max; d += 1) {
		for (size_t k = 0; k < ns && n < max; k++) {
			double v = steps[k] * pow(10, d), l = log10(v);

			if (l >= a->lo - 1e-9 && l <= a->hi + 1e-9)
				out[n++] = v;
		}
	}
	return n;
}

/* The size of the picture: one plot is W x H; small multiples (n_panels >
 * 1) are laid out in rows of up to PANEL_COLS panels, each PANEL_H high. */
#define PANEL_COLS 2
#define PANEL_H 250
#define PANEL_GAP_X 64
#define PANEL_GAP_Y 58

static size_t panel_rows(const struct rplot *p)
{
	return (p->n_panels + PANEL_COLS - 1) / PANEL_COLS;
}

static void plot_size(const struct rplot *p, int *w, int *h)
{
	*w = W;
	*h = p->n_panels > 1 ? MT + (int)panel_rows(p) * (PANEL_H + PANEL_GAP_Y) - PANEL_GAP_Y + MB : H;
}

/* The grid, the ticks and the frame of one plot area. */
static void draw_grid(struct canvas *cv, const struct rplot *p, const struct frame *f, const double *xs, size_t nxs)
{
	cairo_t *cr = cv->cr;
	double ticks[64];
	char buf[160];
	size_t nt;

	font(cv, 12, false);
	cairo_set_line_width(cr, 1);
	if (f->y.log) {
		nt = log_ticks(&f->y, ticks, 64);
	} else {
		double step = p->yunit == RPLOT_FRACTION ? 0.2 : p->yunit == RPLOT_PERCENT ? 20
				: nice_step(f->y.hi / f->y.div) * f->y.div;

		nt = 0;
		for (double y = 0; y <= f->y.hi + step / 2 && nt < 64; y += step) {
			if (y <= f->y.hi + 1e-9 * f->y.hi)
				ticks[nt++] = y;
		}
	}
	for (size_t i = 0; i < nt; i++) {
		double py = map_y(f, ticks[i]);

		cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
		cairo_move_to(cr, f->px0, floor(py) + 0.5);
		cairo_line_to(cr, f->px1, floor(py) + 0.5);
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		tick_label(&f->y, ticks[i], buf, sizeof(buf));
		text_at(cv, f->px0 - 8, py, buf, 1, 0.5);
	}
	/* Vertical grid and x ticks: at the points, or decades. */
	if (p->xticks_at_points) {
		memcpy(ticks, xs, nxs * sizeof(double));
		nt = nxs;
	} else if (f->x.log) {
		nt = log_ticks(&f->x, ticks, 64);
	} else {
		double step = nice_step(f->x.hi - f->x.lo);

		nt = 0;
		for (double x = ceil(f->x.lo / step) * step; x <= f->x.hi && nt < 64; x += step)
			ticks[nt++] = x;
	}
	for (size_t i = 0; i < nt; i++) {
		double px = map_x(f, ticks[i]);

		if (px < f->px0 - 0.5 || px > f->px1 + 0.5)
			continue;
		cairo_set_source_rgb(cr, 0.93, 0.93, 0.93);
		cairo_move_to(cr, floor(px) + 0.5, f->py0);
		cairo_line_to(cr, floor(px) + 0.5, f->py1);
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		cairo_move_to(cr, floor(px) + 0.5, f->py0);
		cairo_line_to(cr, floor(px) + 0.5, f->py0 + 5);
		cairo_stroke(cr);
		if (p->xunit == RPLOT_NUMBER)
			snprintf(buf, sizeof(buf), "%g", ticks[i]);
		else
			tick_label(&f->x, ticks[i], buf, sizeof(buf));
		text_at(cv, px, f->py0 + 10, buf, 0.5, 1);
	}
	cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
	cairo_rectangle(cr, f->px0 + 0.5, f->py1 + 0.5, f->px1 - f->px0, f->py0 - f->py1);
	cairo_stroke(cr);
}

/* Error bars, lines and markers of the series of one panel (all series
 * when panel < 0). Points at the same x are spread a little so bars do not
 * hide each other. */
static void draw_series(struct canvas *cv, const struct rplot *p, const struct frame *f, int panel)
{
	cairo_t *cr = cv->cr;
	size_t n = 0, k = 0;

	for (size_t s = 0; s < p->n_series; s++)
		n += panel < 0 || p->series[s].panel == panel;
	cairo_save(cr);
	cairo_rectangle(cr, f->px0, f->py1 - 6, f->px1 - f->px0, f->py0 - f->py1 + 6);
	cairo_clip(cr);
	for (size_t s = 0; s < p->n_series; s++) {
		const struct rplot_series *se = &p->series[s];
		double off;

		if (panel >= 0 && se->panel != panel)
			continue;
		off = p->xticks_at_points && n > 1 ? ((double)k - (double)(n - 1) / 2) * (14.0 / (double)n) : 0;
		k++;
		set_color(cr, se->color, 0.75);
		cairo_set_line_width(cr, 1.3);
		for (size_t i = 0; i < se->n; i++) {
			double px = map_x(f, se->x[i]) + off;

			if (!isfinite(se->lo[i]) || !isfinite(se->hi[i]) || se->hi[i] <= se->lo[i] ||
			    (f->y.log && se->lo[i] <= 0))
				continue;
			cairo_move_to(cr, px, map_y(f, se->lo[i]));
			cairo_line_to(cr, px, map_y(f, se->hi[i]));
			cairo_move_to(cr, px - 4, map_y(f, se->lo[i]));
			cairo_line_to(cr, px + 4, map_y(f, se->lo[i]));
			cairo_move_to(cr, px - 4, map_y(f, se->hi[i]));
			cairo_line_to(cr, px + 4, map_y(f, se->hi[i]));
			cairo_stroke(cr);
		}
		set_color(cr, se->color, 1);
		cairo_set_line_width(cr, se->marker < 0 ? 1.8 : 2.2);
		set_dash(cr, se->dashed);
		for (size_t i = 0, drawn = 0; i < se->n; i++) {
			double px = map_x(f, se->x[i]) + off, py;

			if (f->y.log && !(se->y[i] > 0))
				continue;
			py = map_y(f, se->y[i]);
			if (drawn++ == 0)
				cairo_move_to(cr, px, py);
			else
				cairo_line_to(cr, px, py);
		}
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		for (size_t i = 0; i < se->n; i++) {
			if (!(f->y.log && !(se->y[i] > 0)))
				marker(cr, se->marker, map_x(f, se->x[i]) + off, map_y(f, se->y[i]), 4.2);
		}
	}
	cairo_restore(cr);
}

/* The legend, right of the plot. Small multiples: one entry per distinct
 * key (the line style; the panel's title names the strategy, whose colour
 * the lines keep), in grey. */
static void draw_legend(struct canvas *cv, const struct rplot *p, double lx, double ly)
{
	cairo_t *cr = cv->cr;
	double lh = p->n_series > 20 ? 15 : 20;
	size_t row = 0;

	font(cv, p->n_series > 20 ? 11 : 12.5, false);
	for (size_t s = 0; s < p->n_series; s++) {
		const struct rplot_series *se = &p->series[s];
		const char *label = p->n_panels > 1 ? se->key : se->label;
		double y = ly + (double)row * lh;
		bool seen = false;

		for (size_t j = 0; j < s && p->n_panels > 1; j++)
			seen |= !strcmp(p->series[j].key, se->key);
		if (seen)
			continue;
		row++;
		if (p->n_panels > 1)
			cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
		else
			set_color(cr, se->color, 1);
		cairo_set_line_width(cr, 2.2);
		set_dash(cr, se->dashed);
		cairo_move_to(cr, lx, y);
		cairo_line_to(cr, lx + 30, y);
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		marker(cr, se->marker, lx + 15, y, 4.2);
		cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
		text_at(cv, lx + 38, y, label, 0, 0.5);
	}
}

static void draw(struct canvas *cv, const struct rplot *p)
{
	cairo_t *cr = cv->cr;
	struct frame f = { 0 };
	double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = 0, xs[64];
	char buf[160], title[sizeof(p->title) + 8];
	size_t nxs = 0;
	int w, h;

	plot_size(p, &w, &h);
	/* One range for all series: small multiples share their axes. */
	for (size_t s = 0; s < p->n_series; s++) {
		const struct rplot_series *se = &p->series[s];

		for (size_t i = 0; i < se->n; i++) {
			bool seen = false;
			double top = isfinite(se->hi[i]) ? fmax(se->hi[i], se->y[i]) : se->y[i];
			double bot = isfinite(se->lo[i]) ? fmin(se->lo[i], se->y[i]) : se->y[i];

			xmin = fmin(xmin, se->x[i]);
			xmax = fmax(xmax, se->x[i]);
			ymax = fmax(ymax, top);
			if (bot > 0)
				ymin = fmin(ymin, bot);
			for (size_t j = 0; j < nxs; j++)
				seen |= xs[j] == se->x[i];
			if (!seen && nxs < 64)
				xs[nxs++] = se->x[i];
		}
	}
	if (!isfinite(xmin)) {
		xmin = 1;
		xmax = 2;
	}
	f.px0 = ML;
	f.px1 = w - MR;
	f.py0 = h - MB;
	f.py1 = MT;
	/* x axis */
	f.x.unit = p->xunit;
	f.x.log = p->logx;
	if (f.x.log && p->xunit == RPLOT_NUMBER) {
		f.x.base = 2;
		f.x.lo = log2(xmin) - 0.35;
		f.x.hi = log2(xmax) + 0.35;
	} else if (f.x.log) {
		log_range(&f.x, xmin, xmax);
	} else {
		double pad = xmax > xmin ? (xmax - xmin) * 0.06 : 0.5;

		f.x.lo = xmin - pad;
		f.x.hi = xmax + pad;
	}
	axis_unit(&f.x, xmax);
	/* y axis */
	f.y.unit = p->yunit;
	f.y.log = p->logy;
	axis_unit(&f.y, ymax);
	if (f.y.log) {
		log_range(&f.y, ymin, ymax);
	} else if (p->yunit == RPLOT_FRACTION) {
		f.y.lo = 0;
		f.y.hi = 1.05;
	} else if (p->yunit == RPLOT_PERCENT) {
		f.y.lo = 0;
		f.y.hi = 105;
	} else {
		double step = nice_step(ymax > 0 ? ymax * 1.05 / f.y.div : 1) * f.y.div;

		f.y.lo = 0;
		f.y.hi = ceil(ymax * 1.05 / step) * step;
		if (f.y.hi <= 0)
			f.y.hi = step;
	}

	/* Background, title. */
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	font(cv, TITLE_SIZE, true);
	cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
	fit_text(cr, p->title, w - ML - TITLE_MR, title, sizeof(title));
	text_at(cv, ML, 30, title, 0, 0.5);
	font(cv, 12.5, false);
	cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
	text_at(cv, ML, 54, p->subtitle, 0, 0.5);

	if (p->n_panels > 1) {
		/* Small multiples: one panel per strategy, the same axes. */
		double pw = (w - ML - MR - (PANEL_COLS - 1) * PANEL_GAP_X) / (double)PANEL_COLS;

		for (size_t k = 0; k < p->n_panels; k++) {
			struct frame pf = f;
			size_t col = k % PANEL_COLS, row = k / PANEL_COLS;

			pf.px0 = ML + (double)col * (pw + PANEL_GAP_X);
			pf.px1 = pf.px0 + pw;
			pf.py1 = MT + 14 + (double)row * (PANEL_H + PANEL_GAP_Y);
			pf.py0 = pf.py1 + PANEL_H - 14;
			draw_grid(cv, p, &pf, xs, nxs);
			font(cv, 13.5, true);
			cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
			text_at(cv, (pf.px0 + pf.px1) / 2, pf.py1 - 10, p->panel_title[k], 0.5, 0.5);
			draw_series(cv, p, &pf, (int)k);
		}
	} else {
		draw_grid(cv, p, &f, xs, nxs);
		draw_series(cv, p, &f, -1);
	}

	/* Axis labels, with the unit unless every tick has its own. */
	font(cv, 14, false);
	cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
	if (*f.x.uname && !(f.x.log && f.x.unit == RPLOT_SECONDS))
		snprintf(buf, sizeof(buf), "%s (%s)", p->xlabel, f.x.uname);
	else
		snprintf(buf, sizeof(buf), "%s", p->xlabel);
	text_at(cv, (f.px0 + f.px1) / 2, h - 22, buf, 0.5, 0.5);
	if (*f.y.uname && !(f.y.log && f.y.unit == RPLOT_SECONDS))
		snprintf(buf, sizeof(buf), "%s (%s)", p->ylabel, f.y.uname);
	else
		snprintf(buf, sizeof(buf), "%s", p->ylabel);
	cairo_save(cr);
	cairo_translate(cr, 26, (f.py0 + f.py1) / 2);
	cairo_rotate(cr, -M_PI / 2);
	text_at(cv, 0, 0, buf, 0.5, 0.5);
	cairo_restore(cr);

	draw_legend(cv, p, f.px1 + 18, f.py1 + 8);
}

int gpushare_report_plot_title(const struct rplot *p, char *out, size_t len, double *width, double *max_width)
{
	cairo_surface_t *s;
	struct canvas cv;
	cairo_status_t st;
	int w, h;

	plot_size(p, &w, &h);
	*max_width = w - ML - TITLE_MR;
	s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
	cv = (struct canvas){ .cr = cairo_create(s) };
	font(&cv, TITLE_SIZE, true);
	*width = fit_text(cv.cr, p->title, *max_width, out, len);
	st = cairo_status(cv.cr);
	cairo_destroy(cv.cr);
	cairo_surface_destroy(s);
	cairo_debug_reset_static_data();
	FcFini();
	if (st != CAIRO_STATUS_SUCCESS)
		return gpushare_fail(GPUSHARE_E_IO, "cannot lay out '%s': %s", p->title, cairo_status_to_string(st));
	return GPUSHARE_OK;
}

static cairo_status_t to_buf(void *closure, const unsigned char *data, unsigned int len)
{
	struct gpushare_buf *b = closure;

	gpushare_buf_add(b, data, len);
	return b->failed ? CAIRO_STATUS_NO_MEMORY : CAIRO_STATUS_SUCCESS;
}

/* Put the collected <text> elements before the closing </svg>. */
static int splice_text(struct gpushare_buf *svg, const struct gpushare_buf *text)
{
	const char *end = NULL;
	struct gpushare_buf out = { 0 };

	for (const char *q = svg->s; q && (q = strstr(q, "</svg>")); q++)
		end = q;
	if (!end || svg->failed || text->failed)
		return gpushare_fail(GPUSHARE_E_IO, "cannot add the text to the SVG");
	gpushare_buf_add(&out, svg->s, (size_t)(end - svg->s));
	gpushare_buf_add(&out, "<g class=\"text\">\n", 17);
	if (text->len)
		gpushare_buf_add(&out, text->s, text->len);
	gpushare_buf_add(&out, "</g>\n", 5);
	gpushare_buf_add(&out, end, strlen(end));
	if (out.failed) {
		gpushare_buf_release(&out);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	gpushare_buf_release(svg);
	*svg = out;
	return GPUSHARE_OK;
}

int gpushare_report_plot_render(const struct rplot *p, struct gpushare_buf *png, struct gpushare_buf *svg)
{
	cairo_surface_t *s;
	struct canvas cv;
	struct gpushare_buf text = { 0 };
	cairo_status_t st;
	int rc, w, h;

	plot_size(p, &w, &h);
	s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, w, h);
	cv = (struct canvas){ .cr = cairo_create(s) };

	draw(&cv, p);
	st = cairo_status(cv.cr);
	cairo_destroy(cv.cr);
	if (st == CAIRO_STATUS_SUCCESS)
		st = cairo_surface_write_to_png_stream(s, to_buf, png);
	cairo_surface_destroy(s);
	if (st != CAIRO_STATUS_SUCCESS)
		return gpushare_fail(GPUSHARE_E_IO, "cannot draw '%s' as PNG: %s", p->title, cairo_status_to_string(st));

	s = cairo_svg_surface_create_for_stream(to_buf, svg, w, h);
	cv.cr = cairo_create(s);
	cv.svg_text = &text;
	draw(&cv, p);
	st = cairo_status(cv.cr);
	cairo_destroy(cv.cr);
	cairo_surface_finish(s);
	if (st == CAIRO_STATUS_SUCCESS)
		st = cairo_surface_status(s);
	cairo_surface_destroy(s);
	if (st != CAIRO_STATUS_SUCCESS || svg->failed) {
		gpushare_buf_release(&text);
		return gpushare_fail(GPUSHARE_E_IO, "cannot draw '%s' as SVG: %s", p->title, cairo_status_to_string(st));
	}
	rc = splice_text(svg, &text);
	gpushare_buf_release(&text);
	return rc;
}

/* ---- the figures of a report ---- */

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
	/* Drop cairo's font and glyph caches (and fontconfig's through it), so
	 * a report leaves nothing allocated behind (LeakSanitizer in tests). */
	cairo_debug_reset_static_data();
	FcFini();
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
