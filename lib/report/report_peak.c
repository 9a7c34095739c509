/*
 * The peak tables of a sweep report: the runs of `gpushare sweep --load open
 * --find-peak --slo pNN=D` grouped by shape, batch and bound into one table
 * each, a cell per strategy and worker count holding the median over its
 * repeats of the highest rate that met the bound, the range of those
 * repeats and how many there were. Written as a section of report.md and
 * of the HTML page, as part of summary.json, and as the recommendation's
 * "highest rate within the bound".
 *
 * Honesty rules. A failed run has no peak: it is counted, never a zero. A
 * search in which no rate met the bound counts as "none found", below any
 * rate: the median of [none, none, 300/s] is none. A search that never saw
 * a rate miss the bound (it stopped at --rate-max or its step limit) is
 * marked: the peak may be higher. Two cells tie when the ranges of their
 * repeats overlap, or when their medians differ by no more than the search
 * resolution (each search knows its peak only to that).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/buf.h"
#include "gpushare/format.h"
#include "gpushare/gpushare.h"
#include "json.h"
#include "report_peak.h"

#define MAX_WORKERS 64

/* ---- loading ---- */

static bool get_num(const cJSON *o, const char *k, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsNumber(v))
		return false;
	*out = v->valuedouble;
	return true;
}

/* The bound of an "slo" object; false when it is not one. */
static bool get_slo(const cJSON *o, double *q, double *bound)
{
	const cJSON *slo = cJSON_GetObjectItemCaseSensitive(o, "slo");
	double a, b;

	if (!get_num(slo, "quantile", &a) || !get_num(slo, "bound_seconds", &b) || !(a > 0 && a < 1) || !(b > 0) ||
	    !isfinite(b))
		return false;
	*q = a;
	*bound = b;
	return true;
}

int gpushare_report_load_peak(const struct cJSON *root, const struct cJSON *res, struct gpushare_report_run *run,
			      struct gpushare_report_text *t)
{
	const cJSON *ps = cJSON_GetObjectItemCaseSensitive(root, "peak_search");
	const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "bench"), "config");
	const cJSON *pk, *note, *steps;
	double v;

	run->find_peak = cJSON_IsObject(ps) || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "find_peak"));
	if (!run->find_peak)
		return GPUSHARE_OK;
	if (cJSON_IsObject(ps)) {
		if (!get_slo(ps, &run->peak_quantile, &run->peak_bound_seconds))
			return gpushare_fail(GPUSHARE_E_INVAL, "'peak_search.slo' is not a quantile and a bound");
		if (get_num(ps, "resolution", &v) && v > 0 && v <= 1)
			run->peak_resolution = v;
	}
	if (!res) {
		/* A failed or partial search without an error of its own says
		 * why in its peak's note ("stopped: a worker failed at 300/s"). */
		const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
							     cJSON_GetObjectItemCaseSensitive(root, "bench"), "results"), 0);

		note = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r0, "peak"), "note");
		if (!t->error[0] && cJSON_IsString(note) && note->valuestring[0]) {
			size_t l = gpushare_utf8_copy(t->error, sizeof(t->error), note->valuestring);

			while (l && (t->error[l - 1] == ' ' || t->error[l - 1] == ':'))
				t->error[--l] = '\0';
		}
		return GPUSHARE_OK;
	}
	pk = cJSON_GetObjectItemCaseSensitive(res, "peak");
	if (!cJSON_IsObject(pk))
		return gpushare_fail(GPUSHARE_E_INVAL, "a peak-search run lacks 'bench.results[0].peak'");
	if (run->peak_bound_seconds <= 0 && !get_slo(pk, &run->peak_quantile, &run->peak_bound_seconds))
		return gpushare_fail(GPUSHARE_E_INVAL, "'peak.slo' is not a quantile and a bound");
	if (run->peak_resolution <= 0 && get_num(pk, "resolution", &v) && v > 0 && v <= 1)
		run->peak_resolution = v;
	if (!cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(pk, "found")))
		return gpushare_fail(GPUSHARE_E_INVAL, "'peak.found' is missing");
	run->peak_found = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pk, "found"));
	if (run->peak_found &&
	    (!get_num(pk, "rate_per_second", &run->peak_rate) || !(run->peak_rate > 0) || !isfinite(run->peak_rate)))
		return gpushare_fail(GPUSHARE_E_INVAL, "'peak.rate_per_second' is not a rate");
	if (get_num(pk, "missed_at_per_second", &v) && (!(v > 0) || !isfinite(v)))
		return gpushare_fail(GPUSHARE_E_INVAL, "'peak.missed_at_per_second' is not a rate");
	run->peak_missed_at = get_num(pk, "missed_at_per_second", &v) ? v : 0;
	steps = cJSON_GetObjectItemCaseSensitive(pk, "steps");
	run->peak_steps = cJSON_IsArray(steps) ? cJSON_GetArraySize(steps) : 0;
	note = cJSON_GetObjectItemCaseSensitive(pk, "note");
	if (cJSON_IsString(note))
		gpushare_utf8_copy(t->peak_note, sizeof(t->peak_note), note->valuestring);
	return GPUSHARE_OK;
}

bool gpushare_report_peak_any(const struct gpushare_report *r, const char *shape)
{
	for (size_t i = 0; i < r->n_whole; i++) {
		if (r->whole[i].find_peak && (!shape || !strcmp(r->whole[i].shape, shape)))
			return true;
	}
	return false;
}

/* ---- the tables ---- */

struct peak_cell {
	size_t n_found, n_none, n_failed;   /* ok searches with / without a peak; failed runs */
	double median;               /* per second; NaN: "none found" (or no ok search) */
	double lo, hi;               /* range of the found peaks */
	bool open;                   /* a found search saw no rate miss: may be higher */
	double resolution;           /* the largest of its searches; 0 unknown */
	bool best, tied;
	char error[160];             /* the last failed run's reason (one line, no '|'); "" none */
};

struct peak_table {
	const char *shape;
	int shape_index;
	long batch;
	double q, bound;             /* 0: unknown (only failed runs without the record's settings) */
	int strategies[GPUSHARE_STRATEGY_COUNT];
	size_t n_strategies;
	int workers[MAX_WORKERS];
	size_t n_workers;
	struct peak_cell *cells;     /* [s * n_workers + w] */
	int best;                    /* index in cells, -1 none */
	size_t n_tied;               /* cells tied with the best (without it) */
	bool tie_by_range;           /* some tie is by overlapping ranges (else by resolution) */
	double tie_resolution;
	size_t runs;                 /* ok searches in the table */
};

static bool same_table(const struct peak_table *t, const struct gpushare_report_run *run)
{
	return t->batch == run->batch && t->q == run->peak_quantile && t->bound == run->peak_bound_seconds &&
	       !strcmp(t->shape, run->shape);
}

static int shape_index(const struct gpushare_report *r, const char *shape)
{
	for (size_t i = 0; i < r->n_shapes; i++) {
		if (!strcmp(r->shapes[i], shape))
			return (int)i;
	}
	return (int)r->n_shapes;
}

static int cmp_table(const void *a, const void *b)
{
	const struct peak_table *x = a, *y = b;

	if (x->shape_index != y->shape_index)
		return x->shape_index - y->shape_index;
	if (x->batch != y->batch)
		return x->batch < y->batch ? -1 : 1;
	if (x->bound != y->bound)
		return x->bound < y->bound ? -1 : 1;
	return (x->q > y->q) - (x->q < y->q);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void add_sorted_int(int *v, size_t *n, size_t max, int x)
{
	size_t i = 0;

	while (i < *n && v[i] < x)
		i++;
	if ((i < *n && v[i] == x) || *n >= max)
		return;
	memmove(v + i + 1, v + i, (*n - i) * sizeof(*v));
	v[i] = x;
	(*n)++;
}

/* Median, range and counts of one cell from its runs. */
static int fill_cell(const struct gpushare_report *r, const struct peak_table *t, enum gpushare_strategy strategy, int workers,
		     struct peak_cell *c)
{
	size_t n = 0, cap = 0;
	double *v = NULL;

	c->median = c->lo = c->hi = NAN;
	for (size_t i = 0; i < r->n_whole; i++) {
		const struct gpushare_report_run *run = &r->whole[i];

		if (!run->find_peak || run->strategy != strategy || run->workers != workers || !same_table(t, run))
			continue;
		if (run->status != GPUSHARE_RUN_OK) {
			c->n_failed++;
			if (run->error[0])
				gpushare_report_error_line(c->error, sizeof(c->error), run->error);
			continue;
		}
		if (n == cap) {
			double *nv = realloc(v, (cap = cap ? cap * 2 : 8) * sizeof(*v));

			if (!nv) {
				free(v);
				return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
			}
			v = nv;
		}
		/* "None found" ranks below every rate. */
		v[n++] = run->peak_found ? run->peak_rate : -INFINITY;
		if (run->peak_found) {
			c->n_found++;
			c->lo = isnan(c->lo) ? run->peak_rate : fmin(c->lo, run->peak_rate);
			c->hi = isnan(c->hi) ? run->peak_rate : fmax(c->hi, run->peak_rate);
			c->open |= run->peak_missed_at <= 0;
		} else {
			c->n_none++;
		}
		c->resolution = fmax(c->resolution, run->peak_resolution);
	}
	if (n) {
		qsort(v, n, sizeof(*v), cmp_double);
		if (n % 2)
			c->median = v[n / 2];
		else
			c->median = isinf(v[n / 2 - 1]) ? -INFINITY : (v[n / 2 - 1] + v[n / 2]) / 2;
		if (isinf(c->median))
			c->median = NAN;
	}
	free(v);
	return GPUSHARE_OK;
}

/* Whether cell c ties with the best b; *by_range: the ranges overlap. */
static bool ties(const struct peak_cell *b, const struct peak_cell *c, bool *by_range)
{
	double res = fmax(b->resolution, c->resolution);

	*by_range = c->lo <= b->hi && b->lo <= c->hi;
	return *by_range || b->median <= c->median * (1 + res);
}

/* The best cell of a table and the cells tied with it. */
static void rank(struct peak_table *t)
{
	size_t n = t->n_strategies * t->n_workers;

	t->best = -1;
	for (size_t i = 0; i < n; i++) {
		if (isnan(t->cells[i].median))
			continue;
		if (t->best < 0 || t->cells[i].median > t->cells[t->best].median)
			t->best = (int)i;
	}
	if (t->best < 0)
		return;
	t->cells[t->best].best = true;
	for (size_t i = 0; i < n; i++) {
		bool by_range;

		if ((int)i == t->best || isnan(t->cells[i].median) || !ties(&t->cells[t->best], &t->cells[i], &by_range))
			continue;
		t->cells[i].tied = true;
		t->n_tied++;
		t->tie_by_range |= by_range;
		t->tie_resolution = fmax(t->tie_resolution, fmax(t->cells[t->best].resolution, t->cells[i].resolution));
	}
}

static void tables_free(struct peak_table *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++)
		free(t[i].cells);
	free(t);
}

/* The tables of shape (NULL: of every shape), ordered by shape (as the
 * report lists them), batch, bound; none (*out NULL, *n_out 0) when no run
 * of it searched a peak. */
static int build(const struct gpushare_report *r, const char *shape, struct peak_table **out, size_t *n_out)
{
	struct peak_table *t;
	size_t n = 0;
	int rc = GPUSHARE_OK;

	*out = NULL;
	*n_out = 0;
	if (!gpushare_report_peak_any(r, shape))
		return GPUSHARE_OK;
	t = calloc(r->n_whole, sizeof(*t));
	if (!t)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t i = 0; i < r->n_whole; i++) {
		const struct gpushare_report_run *run = &r->whole[i];
		struct peak_table *p = NULL;

		if (!run->find_peak || (shape && strcmp(run->shape, shape)))
			continue;
		for (size_t k = 0; k < n && !p; k++) {
			if (same_table(&t[k], run))
				p = &t[k];
		}
		if (!p) {
			p = &t[n++];
			p->shape = run->shape;
			p->shape_index = shape_index(r, run->shape);
			p->batch = run->batch;
			p->q = run->peak_quantile;
			p->bound = run->peak_bound_seconds;
		}
		add_sorted_int(p->strategies, &p->n_strategies, GPUSHARE_STRATEGY_COUNT, run->strategy);
		add_sorted_int(p->workers, &p->n_workers, MAX_WORKERS, run->workers);
	}
	qsort(t, n, sizeof(*t), cmp_table);
	for (size_t k = 0; k < n && !rc; k++) {
		struct peak_table *p = &t[k];

		p->cells = calloc(p->n_strategies * p->n_workers + 1, sizeof(*p->cells));
		if (!p->cells) {
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
			break;
		}
		for (size_t s = 0; s < p->n_strategies && !rc; s++) {
			for (size_t w = 0; w < p->n_workers && !rc; w++) {
				struct peak_cell *c = &p->cells[s * p->n_workers + w];

				rc = fill_cell(r, p, p->strategies[s], p->workers[w], c);
				p->runs += c->n_found + c->n_none;
			}
		}
		rank(p);
	}
	if (rc) {
		tables_free(t, n);
		return rc;
	}
	*out = t;
	*n_out = n;
	return GPUSHARE_OK;
}

/* ---- words ---- */

/* "p99 <= 50 ms", or "the bound (unknown)". */
static void bound_text(const struct peak_table *t, char *buf, size_t len)
{
	char b[32], q[48];

	if (t->bound <= 0)
		snprintf(buf, len, "an unknown bound (no successful run recorded it)");
	else
		snprintf(buf, len, "%s <= %s", gpushare_fmt_percentile(t->q, q, sizeof(q)),
			 gpushare_fmt_seconds(t->bound, b, sizeof(b)));
}

static const char *rate(double v, char *buf, size_t len)
{
	char t[32];

	snprintf(buf, len, "%s/s", gpushare_fmt_si(v, t, sizeof(t)));
	return buf;
}

/* The text of one table cell: "389/s (380/s-395/s, 3 runs)", "none found
 * (2 runs)", "failed (1): <the last failed run's reason>", "-" where
 * nothing ran; then what else happened ("[1 failed: <reason>]"). */
static void cell_text(const struct peak_cell *c, char *buf, size_t len)
{
	size_t ok = c->n_found + c->n_none;
	char a[32], b[32], m[32];

	buf[0] = '\0';
	if (ok == 0 && c->n_failed == 0) {
		snprintf(buf, len, "-");
		return;
	}
	if (ok == 0) {
		if (c->error[0])
			snprintf(buf, len, "failed (%zu): %.100s", c->n_failed, c->error);
		else
			snprintf(buf, len, "failed (%zu)", c->n_failed);
		return;
	}
	if (isnan(c->median)) {
		snprintf(buf, len, "none found (%zu run%s)", ok, ok == 1 ? "" : "s");
	} else {
		gpushare_fmt_si(c->median, m, sizeof(m));
		if (c->n_found > 1)
			gpushare_str_catf(buf, len, "%s/s%s (%s-%s, %zu runs)", m, c->open ? "+" : "", gpushare_fmt_si(c->lo, a, sizeof(a)),
			    gpushare_fmt_si(c->hi, b, sizeof(b)), ok);
		else
			gpushare_str_catf(buf, len, "%s/s%s (%zu run%s)", m, c->open ? "+" : "", ok, ok == 1 ? "" : "s");
	}
	if (c->n_none && !isnan(c->median))
		gpushare_str_catf(buf, len, " [none found in %zu]", c->n_none);
	else if (c->n_found && isnan(c->median))
		gpushare_str_catf(buf, len, " [%zu found one]", c->n_found);
	if (c->n_failed && c->error[0])
		gpushare_str_catf(buf, len, " [%zu failed: %.100s]", c->n_failed, c->error);
	else if (c->n_failed)
		gpushare_str_catf(buf, len, " [%zu failed]", c->n_failed);
}

static void cell_name(const struct peak_table *t, size_t i, char *buf, size_t len)
{
	int w = t->workers[i % t->n_workers];

	snprintf(buf, len, "%s, %d worker%s", gpushare_strategy_name(t->strategies[i / t->n_workers]), w, w == 1 ? "" : "s");
}

static const char caption[] =
	"Each cell: the median over its repeats of the highest offered rate that met the bound (each\n"
	"search knows it to its resolution), in parentheses the range over the repeats and how many\n"
	"there were. \"none found\": no rate tried met the bound. A failed run has no peak and is\n"
	"counted apart, with the reason of the cell's last failure. \"+\": a search stopped without\n"
	"any rate missing the bound (--rate-max or its step limit): the peak may be higher. Bold: the\n"
	"highest median and the cells tied with it (ranges overlap, or within the search resolution).";

/* The recommendation sentence of a table (no list marker, no newline). */
static void recommend_text(const struct peak_table *t, char *buf, size_t len)
{
	const struct peak_cell *b;
	char name[96], a[32], bound[96];
	size_t n = t->n_strategies * t->n_workers, others = 0, open = 0;

	bound_text(t, bound, sizeof(bound));
	buf[0] = '\0';
	if (t->best < 0 && t->runs == 0) {
		snprintf(buf, len, "no search succeeded: every run failed or was cut short (see the table)");
		return;
	}
	if (t->best < 0) {
		snprintf(buf, len, "no rate tried met %s in any cell (see the table)", bound);
		return;
	}
	b = &t->cells[t->best];
	cell_name(t, (size_t)t->best, name, sizeof(name));
	gpushare_str_catf(buf, len, "%s at %s", name, rate(b->median, a, sizeof(a)));
	for (size_t i = 0; i < n; i++) {
		if (!t->cells[i].tied)
			continue;
		cell_name(t, i, name, sizeof(name));
		gpushare_str_catf(buf, len, " and %s at %s", name, rate(t->cells[i].median, a, sizeof(a)));
	}
	if (t->n_tied)
		gpushare_str_catf(buf, len, ", a tie (%s)",
		    t->tie_by_range ? "the ranges of their repeats overlap"
				    : "within the search resolution");
	if (b->open)
		gpushare_str_catf(buf, len, "; its search stopped without a rate that missed the bound: the peak may be higher");
	for (size_t i = 0; i < n; i++) {
		const struct peak_cell *c = &t->cells[i];

		if (c->best || c->tied || c->n_found + c->n_none + c->n_failed == 0)
			continue;
		cell_name(t, i, name, sizeof(name));
		gpushare_str_catf(buf, len, "%s %s ", others++ ? ";" : ". Others:", name);
		if (!isnan(c->median))
			gpushare_str_catf(buf, len, "%s%s", rate(c->median, a, sizeof(a)), c->open ? "+" : "");
		else if (c->n_found + c->n_none)
			gpushare_str_catf(buf, len, "none found");
		else
			gpushare_str_catf(buf, len, "failed");
		open += c->open;
	}
	if (open)
		gpushare_str_catf(buf, len, " (+: stopped without a miss, may be higher)");
}

static void table_title(const struct peak_table *t, char *buf, size_t len)
{
	char bound[96];

	bound_text(t, bound, sizeof(bound));
	snprintf(buf, len, "%s, batch %ld: highest rate within %s", t->shape, t->batch, bound);
}

/* ---- outputs ---- */

/* One line per table of the shape with its answer: a markdown bullet for the
 * report's recommendation, or an indented line for the terminal. */
static int answer_lines(const struct gpushare_report *r, const char *shape, FILE *f, bool markdown)
{
	struct peak_table *t;
	size_t n;
	int rc = build(r, shape, &t, &n);

	if (rc)
		return rc;
	for (size_t k = 0; k < n; k++) {
		char bound[96], text[2048];

		bound_text(&t[k], bound, sizeof(bound));
		recommend_text(&t[k], text, sizeof(text));
		if (markdown)
			fprintf(f, "- **Highest rate within %s (batch %ld, peak search):** %s.\n", bound, t[k].batch, text);
		else
			fprintf(f, "  highest rate within %s (batch %ld): %s.\n", bound, t[k].batch, text);
	}
	tables_free(t, n);
	return GPUSHARE_OK;
}

int gpushare_report_peak_recommend(const struct gpushare_report *r, const char *shape, FILE *f)
{
	return answer_lines(r, shape, f, true);
}

int gpushare_report_peak_text(const struct gpushare_report *r, const char *shape, FILE *f)
{
	return answer_lines(r, shape, f, false);
}

int gpushare_report_peak_markdown(const struct gpushare_report *r, FILE *f)
{
	struct peak_table *t;
	size_t n;
	int rc = build(r, NULL, &t, &n);

	if (rc || !n)
		return rc;
	fprintf(f, "## Highest rate within the bound (peak search)\n\n"
		   "Open-loop runs of `--find-peak`: each run searched the highest arrival rate whose latency\n"
		   "quantile, counted from the scheduled arrival, stayed within the bound (docs/bench.md).\n%s\n\n",
		caption);
	for (size_t k = 0; k < n; k++) {
		const struct peak_table *p = &t[k];
		char title[256], text[2048];

		table_title(p, title, sizeof(title));
		fprintf(f, "**%s**\n\n| strategy |", title);
		for (size_t w = 0; w < p->n_workers; w++)
			fprintf(f, " %d %s |", p->workers[w], p->workers[w] == 1 ? "worker" : "workers");
		fprintf(f, "\n| --- |");
		for (size_t w = 0; w < p->n_workers; w++)
			fprintf(f, " ---: |");
		fputc('\n', f);
		for (size_t s = 0; s < p->n_strategies; s++) {
			fprintf(f, "| %s |", gpushare_strategy_name(p->strategies[s]));
			for (size_t w = 0; w < p->n_workers; w++) {
				const struct peak_cell *c = &p->cells[s * p->n_workers + w];
				char cell[384];

				cell_text(c, cell, sizeof(cell));
				fprintf(f, c->best || c->tied ? " **%s** |" : " %s |", cell);
			}
			fputc('\n', f);
		}
		recommend_text(p, text, sizeof(text));
		fprintf(f, "\nHighest: %s.\n\n", text);
	}
	tables_free(t, n);
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the peak tables: %s", strerror(errno));
	return GPUSHARE_OK;
}

int gpushare_report_peak_html(const struct gpushare_report *r, struct gpushare_buf *b)
{
	struct peak_table *t;
	size_t n;
	int rc = build(r, NULL, &t, &n);

	if (rc || !n)
		return rc;
	gpushare_buf_addf(b, "<h2>Highest rate within the bound (peak search)</h2>\n<p>Open-loop runs of "
				"<code>--find-peak</code>: each run searched the highest arrival rate whose latency "
				"quantile, counted from the scheduled arrival, stayed within the bound. ");
	gpushare_report_add_xml(b, caption);
	gpushare_buf_addf(b, "</p>\n");
	for (size_t k = 0; k < n; k++) {
		const struct peak_table *p = &t[k];
		char title[256], text[2048];

		table_title(p, title, sizeof(title));
		gpushare_buf_addf(b, "<table>\n<caption>");
		gpushare_report_add_xml(b, title);
		gpushare_buf_addf(b, "</caption>\n<tr><th>strategy</th>");
		for (size_t w = 0; w < p->n_workers; w++)
			gpushare_buf_addf(b, "<th>%d %s</th>", p->workers[w], p->workers[w] == 1 ? "worker" : "workers");
		gpushare_buf_addf(b, "</tr>\n");
		for (size_t s = 0; s < p->n_strategies; s++) {
			gpushare_buf_addf(b, "<tr><th>%s</th>", gpushare_strategy_name(p->strategies[s]));
			for (size_t w = 0; w < p->n_workers; w++) {
				const struct peak_cell *c = &p->cells[s * p->n_workers + w];
				char cell[384];

				cell_text(c, cell, sizeof(cell));
				gpushare_buf_addf(b, c->best || c->tied ? "<td class=\"win\">" : "<td>");
				gpushare_report_add_xml(b, cell);
				gpushare_buf_addf(b, "</td>");
			}
			gpushare_buf_addf(b, "</tr>\n");
		}
		recommend_text(p, text, sizeof(text));
		gpushare_buf_addf(b, "</table>\n<p><b>Highest:</b> ");
		gpushare_report_add_xml(b, text);
		gpushare_buf_addf(b, ".</p>\n");
	}
	tables_free(t, n);
	if (b->failed)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory while building the HTML report");
	return GPUSHARE_OK;
}

static cJSON *cell_json(const struct peak_table *t, size_t i)
{
	const struct peak_cell *c = &t->cells[i];
	cJSON *o = cJSON_CreateObject();
	bool ok = o && gpushare_json_str(o, "strategy", gpushare_strategy_name(t->strategies[i / t->n_workers])) &&
		  gpushare_json_num(o, "workers", t->workers[i % t->n_workers]) &&
		  gpushare_json_num(o, "runs", (double)(c->n_found + c->n_none)) &&
		  gpushare_json_num(o, "runs_found", (double)c->n_found) &&
		  gpushare_json_num(o, "runs_none_found", (double)c->n_none) &&
		  gpushare_json_num(o, "runs_failed", (double)c->n_failed) &&
		  gpushare_json_num(o, "median_per_second", c->median) &&
		  gpushare_json_num(o, "min_per_second", c->lo) &&
		  gpushare_json_num(o, "max_per_second", c->hi) && gpushare_json_bool(o, "may_be_higher", c->open) &&
		  gpushare_json_num(o, "resolution", c->resolution > 0 ? c->resolution : NAN) &&
		  gpushare_json_bool(o, "best", c->best) && gpushare_json_bool(o, "tied", c->tied) &&
		  (c->error[0] ? gpushare_json_str(o, "error", c->error) : gpushare_json_null(o, "error"));

	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *table_json(const struct peak_table *t)
{
	cJSON *o = cJSON_CreateObject(), *slo, *cells, *tied;
	char text[2048];
	size_t n = t->n_strategies * t->n_workers;
	bool ok;

	recommend_text(t, text, sizeof(text));
	ok = o && gpushare_json_str(o, "shape", t->shape) && gpushare_json_num(o, "batch", (double)t->batch);
	if (ok && t->bound > 0)
		ok = (slo = gpushare_json_obj(o, "slo")) != NULL && gpushare_json_num(slo, "quantile", t->q) &&
		     gpushare_json_num(slo, "bound_seconds", t->bound);
	else if (ok)
		ok = gpushare_json_null(o, "slo");
	ok = ok && (cells = gpushare_json_arr(o, "cells")) != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		if (t->cells[i].n_found + t->cells[i].n_none + t->cells[i].n_failed == 0)
			continue;
		ok = gpushare_json_add(cells, NULL, cell_json(t, i));
	}
	if (ok && t->best >= 0) {
		cJSON *b = gpushare_json_obj(o, "best");

		ok = b &&
		     gpushare_json_str(b, "strategy", gpushare_strategy_name(t->strategies[t->best / t->n_workers])) &&
		     gpushare_json_num(b, "workers", t->workers[t->best % t->n_workers]) &&
		     gpushare_json_num(b, "median_per_second", t->cells[t->best].median);
	} else if (ok) {
		ok = gpushare_json_null(o, "best");
	}
	ok = ok && (tied = gpushare_json_arr(o, "tied")) != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		cJSON *x;

		if (!t->cells[i].tied)
			continue;
		ok = (x = gpushare_json_obj(tied, NULL)) != NULL &&
		     gpushare_json_str(x, "strategy", gpushare_strategy_name(t->strategies[i / t->n_workers])) &&
		     gpushare_json_num(x, "workers", t->workers[i % t->n_workers]);
	}
	ok = ok && gpushare_json_str(o, "text", text);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

struct cJSON *gpushare_report_peak_json(const struct gpushare_report *r)
{
	struct peak_table *t = NULL;
	size_t n = 0;
	cJSON *a = cJSON_CreateArray();
	bool ok = a != NULL;

	ok = ok && build(r, NULL, &t, &n) == GPUSHARE_OK;
	for (size_t k = 0; ok && k < n; k++) {
		ok = gpushare_json_add(a, NULL, table_json(&t[k]));
	}
	tables_free(t, n);
	if (!ok) {
		cJSON_Delete(a);
		return NULL;
	}
	return a;
}
