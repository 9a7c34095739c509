/*
 * The plot engine of sweep reports, drawn with cairo into PNG and SVG: a
 * struct rplot (report_internal.h) of series of points with error bars on
 * linear or log axes whose units are chosen from the data, optionally as
 * small multiples (one panel per strategy on the same axes), with a legend,
 * a dashed reference line (a latency bound) and ringed points (a peak).
 * Numbers are formatted by gpushare/format.h. In the SVG, text stays text
 * (<text> elements), so it can be searched and read by tools. A title too
 * wide for the image (a long shape or command) is cut in its middle with an
 * ellipsis; the figure's caption keeps it whole. The figures of a report
 * are report_figures.c's; the load curves report_load_curve.c's.
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
	case RPLOT_REQUEST_RATE:
		gpushare_si_unit(max, &suffix, &a->div);
		snprintf(rate, sizeof(rate), "%s%s%s/s", suffix, *suffix ? " " : "",
			 a->unit == RPLOT_RATE ? "items" : "requests");
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
		if (se->ring > 0 && se->ring <= se->n && !(f->y.log && !(se->y[se->ring - 1] > 0))) {
			cairo_set_line_width(cr, 2);
			cairo_new_sub_path(cr);
			cairo_arc(cr, map_x(f, se->x[se->ring - 1]) + off, map_y(f, se->y[se->ring - 1]), 9, 0, 2 * M_PI);
			cairo_stroke(cr);
		}
	}
	cairo_restore(cr);
}

/* The reference line of y (p->yref), dashed grey, its label above it at the
 * left of the plot area. */
static void draw_yref(struct canvas *cv, const struct rplot *p, const struct frame *f)
{
	cairo_t *cr = cv->cr;
	double py;

	if (!(p->yref > 0))
		return;
	py = map_y(f, p->yref);
	if (py < f->py1 || py > f->py0)
		return;
	cairo_set_source_rgb(cr, 0.45, 0.45, 0.45);
	cairo_set_line_width(cr, 1.5);
	set_dash(cr, 1);
	cairo_move_to(cr, f->px0, py);
	cairo_line_to(cr, f->px1, py);
	cairo_stroke(cr);
	cairo_set_dash(cr, NULL, 0, 0);
	font(cv, 12, false);
	text_at(cv, f->px0 + 6, py - 4, p->yref_label, 0, 0);
}

/* The legend, right of the plot. Small multiples: one entry per distinct
 * key (the line style; the panel's title names the strategy, whose colour
 * the lines keep), in grey. */
static void draw_legend(struct canvas *cv, const struct rplot *p, double lx, double ly)
{
	cairo_t *cr = cv->cr;
	double lh = p->n_series > 20 ? 15 : 20, room;
	size_t row = 0;
	cairo_text_extents_t e;
	char first[sizeof(p->series[0].label)];
	const char *cut;
	int w, h;

	plot_size(p, &w, &h);
	room = w - (lx + 38) - 8;

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
		cairo_text_extents(cr, label, &e);
		cut = e.x_advance > room ? strstr(label, " (") : NULL;
		if (!cut) {
			text_at(cv, lx + 38, y, label, 0, 0.5);
			continue;
		}
		/* Too long for the room right of the plot: what is in
		 * parentheses goes on a line of its own. */
		snprintf(first, sizeof(first), "%.*s", (int)(cut - label), label);
		text_at(cv, lx + 38, y, first, 0, 0.5);
		text_at(cv, lx + 38, y + lh, cut + 1, 0, 0.5);
		row++;
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
	if (p->yref > 0) {
		ymin = fmin(ymin, p->yref);
		ymax = fmax(ymax, p->yref);
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
			draw_yref(cv, p, &pf);
			font(cv, 13.5, true);
			cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
			text_at(cv, (pf.px0 + pf.px1) / 2, pf.py1 - 10, p->panel_title[k], 0.5, 0.5);
			draw_series(cv, p, &pf, (int)k);
		}
	} else {
		draw_grid(cv, p, &f, xs, nxs);
		draw_yref(cv, p, &f);
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

void gpushare_report_plot_done(void)
{
	/* Drop cairo's font and glyph caches (and fontconfig's through it), so
	 * a report leaves nothing allocated behind (LeakSanitizer in tests). */
	cairo_debug_reset_static_data();
	FcFini();
}
