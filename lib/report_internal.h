/*
 * Internals shared by the report modules: number formatting, the plot
 * description drawn by report_plot.c (cairo) and growable byte buffers.
 */
#ifndef GPUSHARE_REPORT_INTERNAL_H
#define GPUSHARE_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "gpushare/bench.h"
#include "gpushare/report.h"

/* A growable buffer (PNG/SVG bytes, HTML text). */
struct rbuf {
	char *data;
	size_t len, cap;
	bool oom;
};

void rbuf_add(struct rbuf *b, const void *data, size_t len);
void rbuf_printf(struct rbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rbuf_release(struct rbuf *b);

/* Human numbers: "3.91 ms", "812 us"; "12.3k". */
void report_fmt_seconds(double s, char *buf, size_t len);
void report_fmt_count(double v, char *buf, size_t len);

/* Table cells: metric M_THROUGHPUT, M_MEAN or M_P99. The latency unit of
 * a table (shape, batch) comes from its largest median. */
enum report_metric { M_THROUGHPUT, M_MEAN, M_P99 };
void report_latency_unit(const struct gpushare_report *r, const char *shape, long batch, int m, const char **name,
			 double *scale);
/* "1.23k (1.20k-1.25k) [1 failed]" or, for latency, the value times scale. */
void report_fmt_cell(const struct gpushare_report_cell *c, int m, double scale, char *buf, size_t len);

/* One table of the markdown and HTML reports: metric m of (shape, batch),
 * strategies as rows and worker counts as columns. r and shape must outlive it. */
struct report_table {
	const struct gpushare_report *r;
	const char *shape;
	long batch;
	int m;
	const char *title;           /* "Aggregate throughput", "Mean latency", "p99 latency" */
	const char *unit;            /* "items/s" or the latency unit */
	double scale;                /* latency: seconds to unit */
	int workers[64], strategies[GPUSHARE_STRATEGY_COUNT];
	size_t n_workers, n_strategies;
};
void report_table_init(struct report_table *t, const struct gpushare_report *r, const char *shape, long batch, int m);
/* The text of row s, column w: report_fmt_cell(), or "-" where no cell was run. */
void report_table_cell(const struct report_table *t, size_t s, size_t w, char *buf, size_t len);

/* ---- plots ---- */

#define RPLOT_MAX_SERIES 48
#define RPLOT_MAX_POINTS 32

struct rplot_series {
	char label[96];
	int color;                   /* index in the palette */
	bool dashed;
	int marker;                  /* 0 circle, 1 square, 2 triangle, 3 diamond */
	size_t n;
	double x[RPLOT_MAX_POINTS], y[RPLOT_MAX_POINTS];
	double lo[RPLOT_MAX_POINTS], hi[RPLOT_MAX_POINTS];   /* error bar; NaN none */
};

struct rplot {
	char title[160];
	char subtitle[320];
	char xlabel[64];             /* with unit */
	char ylabel[64];             /* without unit; the unit is chosen from the data */
	int yunit;                   /* 0 items/s, 1 seconds (latency) */
	bool logx;                   /* log2 axis (batch sizes) */
	size_t n_series;
	struct rplot_series series[RPLOT_MAX_SERIES];
};

/* Render p as PNG and SVG into memory. GPUSHARE_E_IO on a cairo error. */
int report_plot_render(const struct rplot *p, struct rbuf *png, struct rbuf *svg);

/* One rendered plot of the report. */
struct report_figure {
	char name[96];               /* file name without extension */
	char caption[256];
	struct rbuf png, svg;
};

/* Build and render every figure of the report. Caller releases with
 * report_figures_free(). */
int report_figures(const struct gpushare_report *r, struct report_figure **figs, size_t *n);
void report_figures_free(struct report_figure *figs, size_t n);

/* The HTML page (tables, figures as inline PNG, metadata, recommendation). */
int report_html(const struct gpushare_report *r, const struct report_figure *figs, size_t n_figs,
		struct rbuf *out);

/* Lookup: cell of (shape, strategy, workers, batch), -1 when absent. */
int report_find_cell(const struct gpushare_report *r, const char *shape, int strategy, int workers, long batch);

/* Sorted distinct worker counts / batches / strategies of a shape. */
size_t report_shape_workers(const struct gpushare_report *r, const char *shape, int *out, size_t max);
size_t report_shape_batches(const struct gpushare_report *r, const char *shape, long *out, size_t max);
size_t report_shape_strategies(const struct gpushare_report *r, const char *shape, int *out, size_t max);

#endif
