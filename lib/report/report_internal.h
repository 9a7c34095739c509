/*
 * Internals shared by the report modules: the table model of the markdown
 * and HTML reports, comparison sentences, the plot description drawn by
 * report_plot.c (cairo; the report's figures and its load curves are
 * described as such plots) and the XML escaper. Numbers are formatted by
 * gpushare/format.h throughout.
 */
#ifndef GPUSHARE_REPORT_INTERNAL_H
#define GPUSHARE_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpushare/bench.h"
#include "gpushare/buf.h"
#include "gpushare/report.h"
#include "index.h"

/* PNG/SVG bytes and HTML text grow in a struct gpushare_buf (buf.h), whose
 * `failed` the writers check once at the end. */

/* The merged histogram of one closed-loop cell (shape, strategy, workers,
 * batch) over its ok runs, sparse: n buckets (gpushare_hist_bucket
 * indices, ascending) and their counts. Built by the loader. */
struct gpushare_report_hist_acc {
	char shape[GPUSHARE_REPORT_SHAPE_LEN];
	enum gpushare_strategy strategy;
	int workers;
	long batch;
	uint32_t *bucket;
	uint64_t *count;
	size_t n;
};

/* A run's names while its record is parsed (struct gpushare_report_run
 * points at them once they are kept: the report's shared copies, or the
 * run's own block). */
struct gpushare_report_text {
	char shape[GPUSHARE_REPORT_SHAPE_LEN];
	char workload[32];
	char key[192];
	char error[160];
	char peak_note[160];
	char device_name[96];
	char mig_layout[160];
};

/* ---- one record of the results file (report_parse.c) ---- */

struct cJSON;

/* Fill run from a record (its figures; its names into t). GPUSHARE_E_INVAL
 * with the reason when a field is missing or of the wrong type. */
int gpushare_report_parse_root(const struct cJSON *root, struct gpushare_report_run *run,
			       struct gpushare_report_text *t);
/* A run whose record could not be used: names "", nothing owned. */
void gpushare_report_run_blank(struct gpushare_report_run *run);
/* The string member k of object o; NULL when absent or not a string. */
const char *gpushare_report_get_str(const struct cJSON *o, const char *k);

/* Free the report's names (gpushare_report_release()). */
void gpushare_report_names_free(struct gpushare_report_names *n);

/* Free what gpushare_report_summarise() made (cells, shapes, the
 * recommendation) and zero their counts (report.c); the loader's
 * gpushare_report_release() (report_load.c) frees the runs too. */
void gpushare_report_summary_release(struct gpushare_report *r);

/* ---- the runs, whole or folded (report_runs.c) ---- */

/* Whether the loader folds run into a group: an ok closed-loop run (no
 * rate, no peak search) whose line fits a sample. */
bool gpushare_report_foldable(const struct gpushare_report_run *run);

/* The loader's table of r->groups by their identity (cell, thread
 * percentage, names, devices) and their capacities. */
struct report_folder {
	struct gpushare_index ix;    /* r->groups: 1-based index */
	size_t *cap;                 /* of each group's samples */
	size_t cap_room;             /* of cap */
	size_t groups_cap;           /* of r->groups */
};

/* Fold a foldable run (names the report's) into its group, made when new:
 * *group, *sample where it went. n_runs is the caller's to count. */
int gpushare_report_fold(struct gpushare_report *r, struct report_folder *f, const struct gpushare_report_run *run,
			 size_t *group, size_t *sample);
/* The end of loading: free f's table and hand back the groups' unused room. */
void gpushare_report_fold_done(struct gpushare_report *r, struct report_folder *f);

/* A folded run as a whole one (what the cursor yields). */
void gpushare_report_group_run(const struct gpushare_report_group *g, const struct gpushare_report_sample *s,
			       struct gpushare_report_run *run);

/* The report's runs in units, a whole run or a group, in the order of
 * their first line: whole runs in their order, each group where its first
 * sample falls among them (so a shape's first unit is its first run in the
 * file). */
struct report_unit {
	const struct gpushare_report_run *run;     /* a whole run, or NULL */
	const struct gpushare_report_group *group; /* else a group */
	size_t index;                              /* in r->whole or r->groups */
};
int gpushare_report_units(const struct gpushare_report *r, struct report_unit **units, size_t *n);
const char *gpushare_report_unit_shape(const struct report_unit *u);
/* The line of a unit's first run. */
size_t gpushare_report_unit_line(const struct report_unit *u);

/* Text for HTML or SVG: the characters XML reserves (< > & ") escaped. */
void gpushare_report_add_xml(struct gpushare_buf *b, const char *s);

/* What a mix's figures are, for the reports that have one (NULL none). */
const char *gpushare_report_mix_note(const struct gpushare_report *r);

/* A failed run's reason for a table cell: one line with no '|' to break a
 * markdown table ('|' becomes '/', line breaks spaces), cut to len. */
void gpushare_report_error_line(char *dst, size_t len, const char *error);

/* Sharing strategies answer "how should N processes share"; sequential and
 * streams are references. */
bool gpushare_report_sharing(int strategy);

/* c (a against b_name) in words: "2.16x <what> of <b_name> (1.90x-2.40x;
 * significant, 98.4% confidence)", "tie with <b_name> (...)", or no verdict
 * without intervals. what: "the throughput", "the p99". */
void gpushare_report_compare_text(const struct gpushare_comparison *c, const char *what, const char *b_name, char *buf,
			 size_t len);

/* Table cells: metric M_THROUGHPUT, M_MEAN or M_P99. */
enum report_metric { M_THROUGHPUT, M_MEAN, M_P99 };
const struct gpushare_ci *gpushare_report_metric_ci(const struct gpushare_report_cell *c, int m);

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
	double coverage;             /* the coverage most cells have; 0: no intervals */
	size_t runs;                 /* the ok runs most cells have */
	char caption[256];           /* "median of 5 runs; in parentheses the 93.7% interval ..." */
};
void gpushare_report_table_init(struct report_table *t, const struct gpushare_report *r, const char *shape, long batch, int m);
/* The text of row s, column w: "1.23k (1.20k-1.25k)", a coverage of its own
 * when it differs from the caption's, " [1 failed]"; "failed (2)" when no
 * run succeeded; "-" where no cell was run. *win: the cell is the best
 * sharing strategy of its column (highest throughput, lowest latency) or
 * ties with it. */
void gpushare_report_table_cell(const struct report_table *t, size_t s, size_t w, char *buf, size_t len, bool *win);

/* ---- plots ---- */

#define RPLOT_MAX_SERIES 48
#define RPLOT_MAX_POINTS 400
#define RPLOT_MAX_PANELS 8
/* More series than this on one plot overlap: a figure that would have more
 * is drawn as small multiples when its series have panels. */
#define RPLOT_MAX_OVERLAID 6

enum rplot_unit {
	RPLOT_NUMBER = 0,            /* plain numbers (workers, batch) */
	RPLOT_RATE,                  /* items/s: k, M suffixes */
	RPLOT_SECONDS,               /* ns, us, ms, s */
	RPLOT_FRACTION,              /* 0..1 */
	RPLOT_PERCENT,               /* 0..100 */
	RPLOT_BYTES,                 /* MiB, GiB */
	RPLOT_REQUEST_RATE,          /* requests/s: k, M suffixes */
};

struct rplot_series {
	char label[96];              /* in the legend of a single plot */
	char key[96];                /* in the legend of small multiples (the line style: "p99") */
	int panel;                   /* small multiples: index in panel_title */
	int color;                   /* index in the palette */
	int dashed;                  /* 0 solid, 1 dashed, 2 dotted, 3 dash-dot */
	int marker;                  /* 0 circle, 1 square, 2 triangle, 3 diamond; -1 none */
	size_t n;
	double x[RPLOT_MAX_POINTS], y[RPLOT_MAX_POINTS];
	double lo[RPLOT_MAX_POINTS], hi[RPLOT_MAX_POINTS];   /* error bar; NaN none */
	size_t ring;                 /* 1-based index of a point drawn ringed (a peak); 0 none */
};

struct rplot {
	char title[160];
	char subtitle[320];
	char xlabel[64];             /* without unit when xunit is not RPLOT_NUMBER */
	char ylabel[64];             /* without unit; the unit is chosen from the data */
	int xunit, yunit;            /* enum rplot_unit */
	bool logx;                   /* log axis: base 2 for numbers (batch sizes), 10 otherwise */
	bool logy;                   /* log10 axis */
	bool xticks_at_points;       /* ticks at the x values of the points (workers, batches) */
	/* Small multiples: n_panels > 1 draws one panel per title (a
	 * strategy), each with the series whose panel is its index, all on the
	 * same axes; 0 or 1: one plot of every series. */
	size_t n_panels;
	char panel_title[RPLOT_MAX_PANELS][64];
	/* A reference value of y drawn as a dashed grey line across the plot
	 * with its label (a latency bound); 0 none. The y axis includes it. */
	double yref;
	char yref_label[64];
	size_t n_series;
	struct rplot_series series[RPLOT_MAX_SERIES];
};

/* Render p as PNG and SVG into memory. The SVG keeps its text as <text>
 * elements (searchable, selectable). GPUSHARE_E_IO on a cairo error. */
int gpushare_report_plot_render(const struct rplot *p, struct gpushare_buf *png, struct gpushare_buf *svg);

/* p's title as the plot draws it: the title itself when it fits the
 * image's width, else cut in its middle with an ellipsis to fit (the figure's
 * caption keeps the whole). Into out (len bytes, room for the title and 8
 * more); width: its drawn width in pixels, max_width: the room it has (from
 * its left margin to the image's right edge, less a margin). For tests and
 * tools; GPUSHARE_E_UNSUPPORTED without cairo. */
int gpushare_report_plot_title(const struct rplot *p, char *out, size_t len, double *width, double *max_width);

/* Drop what drawing keeps cached (cairo's fonts and glyphs, fontconfig's
 * configuration): after the last plot of a report, so that a report leaves
 * nothing allocated behind. Nothing without cairo. */
void gpushare_report_plot_done(void);

/* One rendered plot of the report. */
struct report_figure {
	char name[96];               /* file name without extension */
	char caption[256];
	struct gpushare_buf png, svg;
};

/* Build and render every figure of the report. Caller releases with
 * gpushare_report_figures_free(). */
int gpushare_report_figures(const struct gpushare_report *r, struct report_figure **figs, size_t *n);
void gpushare_report_figures_free(struct report_figure *figs, size_t n);

/* The HTML page (tables, figures as inline PNG, metadata, recommendation). */
int gpushare_report_html(const struct gpushare_report *r, const struct report_figure *figs, size_t n_figs,
		struct gpushare_buf *out);

/* Lookup: cell of (shape, strategy, workers, batch), -1 when absent. */
int gpushare_report_find_cell(const struct gpushare_report *r, const char *shape, enum gpushare_strategy strategy, int workers, long batch);

/* Sorted distinct worker counts / batches / strategies of a shape. */
size_t gpushare_report_shape_workers(const struct gpushare_report *r, const char *shape, int *out, size_t max);
size_t gpushare_report_shape_batches(const struct gpushare_report *r, const char *shape, long *out, size_t max);
size_t gpushare_report_shape_strategies(const struct gpushare_report *r, const char *shape, int *out, size_t max);

#endif
