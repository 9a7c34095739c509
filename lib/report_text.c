/*
 * Text outputs of a sweep report: the markdown report (the nos layout:
 * strategies as rows, worker counts as columns, one table per metric, shape
 * and batch; the layout of such a table is shared with the HTML page), the
 * CSV summary (one row per cell) and the JSON summary.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "csv.h"
#include "report_internal.h"
#include "report_load_curve.h"

static const struct gpushare_ci *metric_ci(const struct gpushare_report_cell *c, int m)
{
	return m == M_THROUGHPUT ? &c->throughput : m == M_MEAN ? &c->mean_latency : &c->p99_latency;
}

/* Latency unit of a table from its largest median. */
void report_latency_unit(const struct gpushare_report *r, const char *shape, long batch, int m, const char **name,
			 double *scale)
{
	double max = 0;

	for (size_t i = 0; i < r->n_cells; i++) {
		const struct gpushare_report_cell *c = &r->cells[i];
		const struct gpushare_ci *ci = metric_ci(c, m);

		if (c->batch == batch && !strcmp(c->shape, shape) && c->n_ok && ci->median > max)
			max = ci->median;
	}
	if (max < 1e-3) {
		*name = "us";
		*scale = 1e6;
	} else if (max < 10) {
		*name = "ms";
		*scale = 1e3;
	} else {
		*name = "s";
		*scale = 1;
	}
}

void report_fmt_cell(const struct gpushare_report_cell *c, int m, double scale, char *buf, size_t len)
{
	const struct gpushare_ci *ci = metric_ci(c, m);
	char a[24], b[24], d[24];
	size_t l;

	if (c->n_ok == 0) {
		snprintf(buf, len, "failed (%zu)", c->n_failed);
		return;
	}
	if (m == M_THROUGHPUT) {
		report_fmt_count(ci->median, a, sizeof(a));
		report_fmt_count(ci->lo, b, sizeof(b));
		report_fmt_count(ci->hi, d, sizeof(d));
	} else {
		snprintf(a, sizeof(a), "%.4g", ci->median * scale);
		snprintf(b, sizeof(b), "%.4g", ci->lo * scale);
		snprintf(d, sizeof(d), "%.4g", ci->hi * scale);
	}
	if (ci->n > 1)
		snprintf(buf, len, "%s (%s-%s)", a, b, d);
	else
		snprintf(buf, len, "%s", a);
	l = strlen(buf);
	if (c->n_failed && l < len)
		snprintf(buf + l, len - l, " [%zu failed]", c->n_failed);
}

void report_table_init(struct report_table *t, const struct gpushare_report *r, const char *shape, long batch, int m)
{
	t->r = r;
	t->shape = shape;
	t->batch = batch;
	t->m = m;
	t->title = m == M_THROUGHPUT ? "Aggregate throughput" : m == M_MEAN ? "Mean latency" : "p99 latency";
	t->unit = "items/s";
	t->scale = 1;
	t->n_workers = report_shape_workers(r, shape, t->workers, 64);
	t->n_strategies = report_shape_strategies(r, shape, t->strategies, GPUSHARE_STRATEGY_COUNT);
	if (m != M_THROUGHPUT)
		report_latency_unit(r, shape, batch, m, &t->unit, &t->scale);
}

void report_table_cell(const struct report_table *t, size_t s, size_t w, char *buf, size_t len)
{
	int k = report_find_cell(t->r, t->shape, t->strategies[s], t->workers[w], t->batch);

	if (k >= 0)
		report_fmt_cell(&t->r->cells[k], t->m, t->scale, buf, len);
	else
		snprintf(buf, len, "-");
}

static void md_table(const struct gpushare_report *r, FILE *f, const char *shape, long batch, int m)
{
	struct report_table t;

	report_table_init(&t, r, shape, batch, m);
	fprintf(f, "**%s (%s)**, median of repeats (95%% CI)\n\n| strategy |", t.title, t.unit);
	for (size_t w = 0; w < t.n_workers; w++)
		fprintf(f, " %d %s |", t.workers[w], t.workers[w] == 1 ? "worker" : "workers");
	fprintf(f, "\n| --- |");
	for (size_t w = 0; w < t.n_workers; w++)
		fprintf(f, " ---: |");
	fputc('\n', f);
	for (size_t s = 0; s < t.n_strategies; s++) {
		fprintf(f, "| %s |", gpushare_strategy_name(t.strategies[s]));
		for (size_t w = 0; w < t.n_workers; w++) {
			char cell[96];

			report_table_cell(&t, s, w, cell, sizeof(cell));
			fprintf(f, " %s |", cell);
		}
		fputc('\n', f);
	}
	fputc('\n', f);
}

int gpushare_report_write_markdown(const struct gpushare_report *r, FILE *f)
{
	size_t failed = 0;

	for (size_t i = 0; i < r->n_runs; i++)
		failed += r->runs[i].status != GPUSHARE_RUN_OK;
	fprintf(f, "# gpushare sweep report\n\n");
	fprintf(f, "- GPU: %s%s%s%s, driver %s\n", r->gpu_name[0] ? r->gpu_name : "none (CPU-only workload)",
		r->gpu_uuid[0] ? " (" : "", r->gpu_uuid, r->gpu_uuid[0] ? ")" : "",
		r->driver_version[0] ? r->driver_version : "none");
	fprintf(f, "- Host %s, gpushare %s, runs from %s to %s\n", r->host[0] ? r->host : "?",
		r->version[0] ? r->version : "?", r->first_date[0] ? r->first_date : "?",
		r->last_date[0] ? r->last_date : "?");
	fprintf(f, "- %zu runs recorded, %zu failed or partial (left out of the statistics)\n", r->n_runs, failed);
	if (r->command_line[0])
		fprintf(f, "- Command: `%s`\n", r->command_line);
	if (r->n_bad) {
		fprintf(f, "- %zu corrupt line%s skipped:", r->n_bad, r->n_bad == 1 ? "" : "s");
		for (size_t i = 0; i < r->n_bad_kept && i < 10; i++)
			fprintf(f, "%s line %zu (%s)", i ? ";" : "", r->bad[i].line, r->bad[i].reason);
		fprintf(f, "%s\n", r->n_bad > 10 ? "; ..." : "");
	}
	fprintf(f, "\nEach figure is the median over repeats; in parentheses the distribution-free 95%% confidence\n"
		   "interval of the median (order statistics). With fewer than 6 repeats the interval is the\n"
		   "min-max range, whose coverage is below 95%% (5 repeats: 94%%, 3 repeats: 75%%).\n\n");
	fprintf(f, "## Recommendation\n\n");
	for (size_t i = 0; i < r->n_shapes; i++) {
		const struct gpushare_report_shape_rec *rec = &r->recs[i];

		fprintf(f, "### %s\n\n", rec->shape);
		if (report_load_curve_only(r, rec->shape)) {
			report_load_curve_recommend(r, rec->shape, f);
			fputc('\n', f);
			continue;
		}
		fprintf(f, "- **Maximum throughput:** %s\n", rec->best_throughput.cell >= 0 ? rec->best_throughput.why : "no successful run.");
		fprintf(f, "- **Minimum p99 latency:** %s\n", rec->best_p99.cell >= 0 ? rec->best_p99.why : "no successful run.");
		report_load_curve_recommend(r, rec->shape, f);
		if (r->slo_p99_seconds > 0) {
			char slo[32];

			report_fmt_seconds(r->slo_p99_seconds, slo, sizeof(slo));
			fprintf(f, "- **Maximum throughput with p99 under %s:** %s\n", slo, rec->best_slo.why);
		}
		fputc('\n', f);
	}
	for (size_t i = 0; i < r->n_shapes; i++) {
		long batches[64];
		size_t nb = report_shape_batches(r, r->shapes[i], batches, 64);

		for (size_t b = 0; b < nb; b++) {
			fprintf(f, "## %s, batch %ld\n\n", r->shapes[i], batches[b]);
			md_table(r, f, r->shapes[i], batches[b], M_THROUGHPUT);
			md_table(r, f, r->shapes[i], batches[b], M_MEAN);
			md_table(r, f, r->shapes[i], batches[b], M_P99);
		}
	}
	if (report_load_curve_markdown(r, f))
		return GPUSHARE_E_IO;
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the markdown report: %s", strerror(errno));
	return GPUSHARE_OK;
}

/* ---- CSV ---- */

static void csv_ci(FILE *f, const struct gpushare_ci *ci)
{
	if (ci->n == 0)
		fputs(",,,", f);
	else
		fprintf(f, ",%.9g,%.9g,%.9g", ci->median, ci->lo, ci->hi);
}

int gpushare_report_write_csv(const struct gpushare_report *r, FILE *f)
{
	fputs("shape,workload,strategy,workers,batch,runs_ok,runs_failed,ci_coverage,"
	      "throughput_items_per_second_median,throughput_items_per_second_lo,throughput_items_per_second_hi,"
	      "mean_latency_seconds_median,mean_latency_seconds_lo,mean_latency_seconds_hi,"
	      "p99_latency_seconds_median,p99_latency_seconds_lo,p99_latency_seconds_hi\n", f);
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct gpushare_report_cell *c = &r->cells[i];

		csv_write_field(f, c->shape);
		fputc(',', f);
		csv_write_field(f, c->workload);
		fprintf(f, ",%s,%d,%ld,%zu,%zu,", gpushare_strategy_name(c->strategy), c->workers, c->batch, c->n_ok,
			c->n_failed);
		if (c->n_ok)
			fprintf(f, "%.4f", c->throughput.coverage);
		csv_ci(f, &c->throughput);
		csv_ci(f, &c->mean_latency);
		csv_ci(f, &c->p99_latency);
		fputc('\n', f);
	}
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the CSV summary: %s", strerror(errno));
	return GPUSHARE_OK;
}

/* ---- JSON ---- */

static cJSON *json_ci(const struct gpushare_ci *ci)
{
	cJSON *o;

	if (ci->n == 0)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	if (o && (!cJSON_AddNumberToObject(o, "median", ci->median) || !cJSON_AddNumberToObject(o, "lo", ci->lo) ||
		  !cJSON_AddNumberToObject(o, "hi", ci->hi) || !cJSON_AddNumberToObject(o, "n", (double)ci->n) ||
		  !cJSON_AddNumberToObject(o, "coverage", ci->coverage))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static bool add_item(cJSON *o, const char *k, cJSON *v)
{
	if (!v)
		return false;
	if (!cJSON_AddItemToObject(o, k, v)) {
		cJSON_Delete(v);
		return false;
	}
	return true;
}

static cJSON *json_cell(const struct gpushare_report_cell *c)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o && cJSON_AddStringToObject(o, "shape", c->shape) &&
		  cJSON_AddStringToObject(o, "workload", c->workload) &&
		  cJSON_AddStringToObject(o, "strategy", gpushare_strategy_name(c->strategy)) &&
		  cJSON_AddNumberToObject(o, "workers", c->workers) &&
		  cJSON_AddNumberToObject(o, "batch", (double)c->batch) &&
		  cJSON_AddNumberToObject(o, "runs_ok", (double)c->n_ok) &&
		  cJSON_AddNumberToObject(o, "runs_failed", (double)c->n_failed) &&
		  add_item(o, "throughput_items_per_second", json_ci(&c->throughput)) &&
		  add_item(o, "mean_latency_seconds", json_ci(&c->mean_latency)) &&
		  add_item(o, "p99_latency_seconds", json_ci(&c->p99_latency));

	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *json_vs(const struct gpushare_report *r, int pick, int base)
{
	const struct gpushare_ci *a, *b;
	cJSON *o;

	if (pick < 0 || base < 0 || r->cells[base].n_ok == 0)
		return cJSON_CreateNull();
	a = &r->cells[pick].throughput;
	b = &r->cells[base].throughput;
	o = cJSON_CreateObject();
	if (o && (!cJSON_AddNumberToObject(o, "throughput_ratio", a->median / b->median) ||
		  !cJSON_AddNumberToObject(o, "throughput_ratio_lo", b->hi > 0 ? a->lo / b->hi : 0) ||
		  !cJSON_AddNumberToObject(o, "throughput_ratio_hi", b->lo > 0 ? a->hi / b->lo : 0) ||
		  !cJSON_AddBoolToObject(o, "throughput_significant", !gpushare_ci_overlap(a, b)) ||
		  !cJSON_AddNumberToObject(o, "p99_seconds", r->cells[base].p99_latency.median) ||
		  !cJSON_AddBoolToObject(o, "p99_significant",
					 !gpushare_ci_overlap(&r->cells[pick].p99_latency, &r->cells[base].p99_latency)))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *json_pick(const struct gpushare_report *r, const struct gpushare_report_pick *p, bool asked)
{
	cJSON *o;

	if (!asked)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	if (o && (!add_item(o, "cell", p->cell >= 0 ? json_cell(&r->cells[p->cell]) : cJSON_CreateNull()) ||
		  !add_item(o, "vs_timeslice", json_vs(r, p->cell, p->vs_timeslice)) ||
		  !add_item(o, "vs_sequential", json_vs(r, p->cell, p->vs_sequential)) ||
		  !cJSON_AddStringToObject(o, "why", p->why))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int gpushare_report_json(const struct gpushare_report *r, char **text)
{
	cJSON *doc = cJSON_CreateObject(), *m, *cells, *recs, *bad;
	bool ok = doc != NULL;

	*text = NULL;
	ok = ok && (m = cJSON_AddObjectToObject(doc, "metadata")) != NULL &&
	     cJSON_AddStringToObject(m, "gpushare_version", r->version) && cJSON_AddStringToObject(m, "host", r->host) &&
	     cJSON_AddStringToObject(m, "gpu_name", r->gpu_name) && cJSON_AddStringToObject(m, "gpu_uuid", r->gpu_uuid) &&
	     cJSON_AddStringToObject(m, "driver_version", r->driver_version) &&
	     cJSON_AddStringToObject(m, "first_date", r->first_date) &&
	     cJSON_AddStringToObject(m, "last_date", r->last_date) &&
	     cJSON_AddStringToObject(m, "command_line", r->command_line) &&
	     cJSON_AddNumberToObject(doc, "runs", (double)r->n_runs) &&
	     cJSON_AddStringToObject(doc, "statistic",
				     "median over repeats; 95% distribution-free (order statistic) CI of the median") &&
	     (r->slo_p99_seconds > 0 ? cJSON_AddNumberToObject(doc, "slo_p99_seconds", r->slo_p99_seconds) != NULL
				     : cJSON_AddNullToObject(doc, "slo_p99_seconds") != NULL) &&
	     (cells = cJSON_AddArrayToObject(doc, "cells")) != NULL;
	for (size_t i = 0; ok && i < r->n_cells; i++) {
		cJSON *c = json_cell(&r->cells[i]);

		ok = c && cJSON_AddItemToArray(cells, c);
	}
	ok = ok && (recs = cJSON_AddArrayToObject(doc, "recommendation")) != NULL;
	for (size_t i = 0; ok && i < r->n_shapes; i++) {
		const struct gpushare_report_shape_rec *rec = &r->recs[i];
		cJSON *o = cJSON_CreateObject();

		ok = o && cJSON_AddItemToArray(recs, o);
		ok = ok && cJSON_AddStringToObject(o, "shape", rec->shape) &&
		     add_item(o, "max_throughput", json_pick(r, &rec->best_throughput, true)) &&
		     add_item(o, "min_p99", json_pick(r, &rec->best_p99, true)) &&
		     add_item(o, "max_throughput_under_slo", json_pick(r, &rec->best_slo, r->slo_p99_seconds > 0));
	}
	ok = ok && cJSON_AddNumberToObject(doc, "corrupt_lines", (double)r->n_bad) &&
	     (bad = cJSON_AddArrayToObject(doc, "corrupt_line_list")) != NULL;
	for (size_t i = 0; ok && i < r->n_bad_kept; i++) {
		cJSON *o = cJSON_CreateObject();

		ok = o && cJSON_AddItemToArray(bad, o) && cJSON_AddNumberToObject(o, "line", (double)r->bad[i].line) &&
		     cJSON_AddStringToObject(o, "reason", r->bad[i].reason);
	}
	if (ok)
		*text = cJSON_Print(doc);
	cJSON_Delete(doc);
	if (!*text)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory while building the JSON summary");
	return GPUSHARE_OK;
}
