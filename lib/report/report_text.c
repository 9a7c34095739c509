/*
 * Text outputs of a sweep report: the markdown report (the nos layout:
 * strategies as rows, worker counts as columns, one table per metric, shape
 * and batch, the winners of each column in bold; the layout of such a table
 * is shared with the HTML page), the recommendation as text, the CSV
 * summary (one row per cell) and the JSON summary. Every interval is
 * printed with its own coverage; "95%" appears only where it is at least
 * that.
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
#include "gpushare/report.h"
#include "csv.h"
#include "report_internal.h"
#include "report_load_curve.h"
#include "report_peak.h"
#include "json.h"

const struct gpushare_ci *gpushare_report_metric_ci(const struct gpushare_report_cell *c, int m)
{
	return m == M_THROUGHPUT ? &c->throughput : m == M_MEAN ? &c->mean_latency : &c->p99_latency;
}

/* Latency unit of a table from its largest median. */
static void latency_unit(const struct gpushare_report *r, const char *shape, long batch, int m, const char **name,
			 double *scale)
{
	double max = 0;

	for (size_t i = 0; i < r->n_cells; i++) {
		const struct gpushare_report_cell *c = &r->cells[i];
		const struct gpushare_ci *ci = gpushare_report_metric_ci(c, m);

		if (c->batch == batch && !strcmp(c->shape, shape) && c->n_ok && ci->median > max)
			max = ci->median;
	}
	gpushare_seconds_unit(max, name, scale);
}

/* A value of the table: items/s with a k/M suffix, latencies in the
 * table's unit, three significant digits. */
static void fmt_value(const struct report_table *t, double v, char *buf, size_t len)
{
	if (t->m == M_THROUGHPUT)
		gpushare_fmt_si(v, buf, len);
	else
		gpushare_fmt_sig(v * t->scale, buf, len);
}

void gpushare_report_table_init(struct report_table *t, const struct gpushare_report *r, const char *shape, long batch, int m)
{
	size_t counts[64] = { 0 }, runs[64] = { 0 };
	double covs[64];
	size_t nc = 0, best = 0;
	char cov[16];

	t->r = r;
	t->shape = shape;
	t->batch = batch;
	t->m = m;
	t->title = m == M_THROUGHPUT ? "Aggregate throughput" : m == M_MEAN ? "Mean latency" : "p99 latency";
	t->unit = "items/s";
	t->scale = 1;
	t->n_workers = gpushare_report_shape_workers(r, shape, t->workers, 64);
	t->n_strategies = gpushare_report_shape_strategies(r, shape, t->strategies, GPUSHARE_STRATEGY_COUNT);
	if (m != M_THROUGHPUT)
		latency_unit(r, shape, batch, m, &t->unit, &t->scale);
	/* The caption states the coverage most cells have; a cell with
	 * another one states its own. */
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct gpushare_report_cell *c = &r->cells[i];
		double cv = gpushare_ci_has_interval(gpushare_report_metric_ci(c, m)) ? gpushare_report_metric_ci(c, m)->coverage : 0;
		size_t j;

		if (c->batch != batch || strcmp(c->shape, shape) || !c->n_ok)
			continue;
		for (j = 0; j < nc && covs[j] != cv; j++)
			;
		if (j == nc && nc < 64) {
			covs[nc] = cv;
			runs[nc] = gpushare_report_metric_ci(c, m)->n;
			nc++;
		}
		if (j < 64)
			counts[j]++;
	}
	for (size_t j = 1; j < nc; j++) {
		if (counts[j] > counts[best])
			best = j;
	}
	t->coverage = nc ? covs[best] : 0;
	t->runs = nc ? runs[best] : 0;
	if (t->coverage > 0)
		snprintf(t->caption, sizeof(t->caption),
			 "median of %zu runs; in parentheses the interval of the median, coverage %s%s", t->runs,
			 gpushare_fmt_coverage(t->coverage, cov, sizeof(cov)),
			 t->coverage < GPUSHARE_SIGNIFICANCE ? " (below 95%: more repeats narrow it)" : "");
	else
		snprintf(t->caption, sizeof(t->caption), "%s", t->runs == 1 ? "one run per cell: no interval" : "no run");
}

/* Whether cell k is (or ties with) the best sharing cell of its column. */
static bool column_winner(const struct report_table *t, size_t w, int k)
{
	const struct gpushare_report *r = t->r;
	int best = -1;
	size_t contenders = 0;

	if (!gpushare_report_sharing(r->cells[k].strategy))
		return false;
	for (size_t s = 0; s < t->n_strategies; s++) {
		int c = gpushare_report_find_cell(r, t->shape, t->strategies[s], t->workers[w], t->batch);
		double v, b;

		if (c < 0 || !r->cells[c].n_ok || !gpushare_report_sharing(r->cells[c].strategy))
			continue;
		contenders++;
		v = gpushare_report_metric_ci(&r->cells[c], t->m)->median;
		b = best >= 0 ? gpushare_report_metric_ci(&r->cells[best], t->m)->median : 0;
		if (best < 0 || (t->m == M_THROUGHPUT ? v > b : v < b))
			best = c;
	}
	/* One sharing strategy in the column: no contest, nothing to highlight. */
	if (best < 0 || contenders < 2)
		return false;
	if (best == k)
		return true;
	{
		struct gpushare_comparison cmp;

		gpushare_compare(gpushare_report_metric_ci(&r->cells[k], t->m), gpushare_report_metric_ci(&r->cells[best], t->m), &cmp);
		return cmp.verdict == GPUSHARE_VERDICT_TIE;
	}
}

void gpushare_report_table_cell(const struct report_table *t, size_t s, size_t w, char *buf, size_t len, bool *win)
{
	int k = gpushare_report_find_cell(t->r, t->shape, t->strategies[s], t->workers[w], t->batch);
	const struct gpushare_report_cell *c;
	const struct gpushare_ci *ci;
	char a[24], b[24], d[24], cov[16];
	size_t l;

	*win = false;
	if (k < 0) {
		snprintf(buf, len, "-");
		return;
	}
	c = &t->r->cells[k];
	if (c->n_ok == 0) {
		if (c->error[0])
			snprintf(buf, len, "failed (%zu): %.100s", c->n_failed, c->error);
		else
			snprintf(buf, len, "failed (%zu)", c->n_failed);
		return;
	}
	ci = gpushare_report_metric_ci(c, t->m);
	*win = column_winner(t, w, k);
	fmt_value(t, ci->median, a, sizeof(a));
	if (gpushare_ci_has_interval(ci)) {
		fmt_value(t, ci->lo, b, sizeof(b));
		fmt_value(t, ci->hi, d, sizeof(d));
		if (ci->coverage == t->coverage)
			snprintf(buf, len, "%s (%s-%s)", a, b, d);
		else
			snprintf(buf, len, "%s (%s-%s, %s)", a, b, d, gpushare_fmt_coverage(ci->coverage, cov, sizeof(cov)));
	} else {
		snprintf(buf, len, "%s%s", a, t->coverage > 0 ? " (1 run)" : "");
	}
	l = strlen(buf);
	if (c->n_failed && l < len)
		snprintf(buf + l, len - l, " [%zu failed]", c->n_failed);
}

static void md_table(const struct gpushare_report *r, FILE *f, const char *shape, long batch, int m)
{
	struct report_table t;

	gpushare_report_table_init(&t, r, shape, batch, m);
	fprintf(f, "**%s (%s)**, %s; bold: the best sharing strategy of the column, or tied with it (when two or more were measured)\n\n| strategy |",
		t.title, t.unit, t.caption);
	for (size_t w = 0; w < t.n_workers; w++)
		fprintf(f, " %d %s |", t.workers[w], t.workers[w] == 1 ? "worker" : "workers");
	fprintf(f, "\n| --- |");
	for (size_t w = 0; w < t.n_workers; w++)
		fprintf(f, " ---: |");
	fputc('\n', f);
	for (size_t s = 0; s < t.n_strategies; s++) {
		fprintf(f, "| %s%s |", gpushare_strategy_name(t.strategies[s]),
			gpushare_report_sharing(t.strategies[s]) ? "" : " (reference)");
		for (size_t w = 0; w < t.n_workers; w++) {
			char cell[128];
			bool win;

			gpushare_report_table_cell(&t, s, w, cell, sizeof(cell), &win);
			fprintf(f, win ? " **%s** |" : " %s |", cell);
		}
		fputc('\n', f);
	}
	fputc('\n', f);
}

static const char stats_note[] =
	"Each figure is the median over a cell's successful runs. Its interval is the distribution-free\n"
	"interval of the median from order statistics, with its exact coverage (with one run there is\n"
	"none; with 2 runs it is [min, max] at 50%, with 5 at 93.7%, from 6 runs on at least 95%).\n"
	"Two cells are compared by Welch's t test on the logarithms of their runs (assumption: log-normal\n"
	"run-to-run noise, independent interleaved runs; 2 runs a side suffice): the 95% interval of the\n"
	"ratio of their geometric means; a tie when it holds 1, else a significant difference (p < 5%).\n"
	"Beside it, the distribution-free rule: a tie when the intervals of the medians overlap, else\n"
	"apart at the joint coverage of both intervals (95% from 7 runs each).\n";

const char *gpushare_report_mix_note(const struct gpushare_report *r)
{
	for (size_t i = 0; i < r->n_shapes; i++) {
		if (gpushare_bench_mix_count(r->shapes[i]) >= 2)
			return "A mix (A+B, several workloads in one run) is measured by its score, the geometric mean of "
			       "its workloads' items/s: its throughput figures and verdicts are of the score; each "
			       "workload's own figures are in the results file (bench.results[0].mix).";
	}
	return NULL;
}

static void md_recommendation(const struct gpushare_report *r, FILE *f)
{
	char slo[32];

	fprintf(f, "## Recommendation\n\n");
	for (size_t i = 0; i < r->n_recs; i++) {
		const struct gpushare_report_rec *rec = &r->recs[i];

		fprintf(f, "### %s, batch %ld\n\n", rec->shape, rec->batch);
		fprintf(f, "**I have N processes: how should they share the GPU?** Highest median throughput among "
			   "timeslice, mps, mps-split and mig (sequential and streams are references), and the lowest "
			   "p99 latency.\n\n");
		fprintf(f, "| workers | highest throughput | lowest p99 latency |\n| ---: | --- | --- |\n");
		for (size_t w = 0; w < rec->n_at; w++)
			fprintf(f, "| %d | %s | %s |\n", rec->at[w].workers, rec->at[w].throughput_text,
				rec->at[w].latency_text[0] ? rec->at[w].latency_text : "-");
		fprintf(f, "\n**How many processes per GPU?** The fewest workers within noise of each strategy's "
			   "best throughput:\n\n");
		for (size_t k = 0; k < rec->n_scaling; k++)
			fprintf(f, "- %s\n", rec->scaling[k].text);
		if (r->slo_p99_seconds > 0)
			fprintf(f, "\n**Highest throughput with p99 under %s:** %s\n",
				gpushare_fmt_seconds(r->slo_p99_seconds, slo, sizeof(slo)), rec->slo_text);
		fputc('\n', f);
	}
}

int gpushare_report_write_markdown(const struct gpushare_report *r, FILE *f)
{
	size_t failed = gpushare_report_n_failed(r);
	const char *mix_note;

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
	if (r->n_shapes_omitted)
		fprintf(f, "- Only the first %zu workload shapes are reported: %zu more workload shapes (%zu runs) are in the results file\n",
			r->n_shapes, r->n_shapes_omitted, r->n_runs_omitted);
	if (r->n_bad) {
		fprintf(f, "- %zu corrupt line%s skipped:", r->n_bad, r->n_bad == 1 ? "" : "s");
		for (size_t i = 0; i < r->n_bad_kept && i < 10; i++)
			fprintf(f, "%s line %zu (%s)", i ? ";" : "", r->bad[i].line, r->bad[i].reason);
		fprintf(f, "%s\n", r->n_bad > 10 ? "; ..." : "");
	}
	fprintf(f, "\n%s\n", stats_note);
	if ((mix_note = gpushare_report_mix_note(r)))
		fprintf(f, "%s\n\n", mix_note);
	md_recommendation(r, f);
	for (size_t i = 0; i < r->n_shapes; i++) {
		bool open = false;

		/* Open-loop runs are whole. */
		for (size_t k = 0; k < r->n_whole && !open; k++)
			open = r->whole[k].rate > 0 && !strcmp(r->whole[k].shape, r->shapes[i]);
		if (!open && !gpushare_report_peak_any(r, r->shapes[i]))
			continue;
		fprintf(f, "### %s, open loop\n\n", r->shapes[i]);
		gpushare_report_load_curve_recommend(r, r->shapes[i], f);
		if (gpushare_report_peak_recommend(r, r->shapes[i], f))
			return GPUSHARE_E_NOMEM;
		fputc('\n', f);
	}
	for (size_t i = 0; i < r->n_shapes; i++) {
		long batches[64];
		size_t nb = gpushare_report_shape_batches(r, r->shapes[i], batches, 64);

		for (size_t b = 0; b < nb; b++) {
			fprintf(f, "## %s, batch %ld\n\n", r->shapes[i], batches[b]);
			md_table(r, f, r->shapes[i], batches[b], M_THROUGHPUT);
			md_table(r, f, r->shapes[i], batches[b], M_MEAN);
			md_table(r, f, r->shapes[i], batches[b], M_P99);
		}
	}
	if (gpushare_report_load_curve_markdown(r, f))
		return GPUSHARE_E_IO;
	if (gpushare_report_peak_markdown(r, f))
		return GPUSHARE_E_IO;
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the markdown report: %s", strerror(errno));
	return GPUSHARE_OK;
}

int gpushare_report_write_recommendation(const struct gpushare_report *r, FILE *f)
{
	char slo[32];

	for (size_t i = 0; i < r->n_recs; i++) {
		const struct gpushare_report_rec *rec = &r->recs[i];

		fprintf(f, "%s, batch %ld\n", rec->shape, rec->batch);
		for (size_t w = 0; w < rec->n_at; w++)
			fprintf(f, "  %d %s: max throughput: %s\n  %*s  lowest p99: %s\n", rec->at[w].workers,
				rec->at[w].workers == 1 ? "worker " : "workers", rec->at[w].throughput_text,
				rec->at[w].workers >= 10 ? 10 : 9, "",
				rec->at[w].latency_text[0] ? rec->at[w].latency_text : "-");
		for (size_t k = 0; k < rec->n_scaling; k++)
			fprintf(f, "  enough workers: %s\n", rec->scaling[k].text);
		if (r->slo_p99_seconds > 0)
			fprintf(f, "  under p99 %s: %s\n", gpushare_fmt_seconds(r->slo_p99_seconds, slo, sizeof(slo)),
				rec->slo_text);
	}
	/* The peak searches of each shape (they form no cells, so no rec). */
	for (size_t i = 0; i < r->n_shapes; i++) {
		if (!gpushare_report_peak_any(r, r->shapes[i]))
			continue;
		fprintf(f, "%s, open loop\n", r->shapes[i]);
		if (gpushare_report_peak_text(r, r->shapes[i], f))
			return GPUSHARE_E_NOMEM;
	}
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the recommendation: %s", strerror(errno));
	return GPUSHARE_OK;
}

/* ---- CSV ---- */

/* ",median,lo,hi": lo and hi empty without an interval, all empty without a sample. */
static void csv_ci(FILE *f, const struct gpushare_ci *ci)
{
	if (ci->n == 0)
		fputs(",,,", f);
	else if (!gpushare_ci_has_interval(ci))
		fprintf(f, ",%.9g,,", ci->median);
	else
		fprintf(f, ",%.9g,%.9g,%.9g", ci->median, ci->lo, ci->hi);
}

static void csv_median(FILE *f, const struct gpushare_ci *ci)
{
	if (ci->n == 0)
		fputc(',', f);
	else
		fprintf(f, ",%.9g", ci->median);
}

int gpushare_report_write_csv(const struct gpushare_report *r, FILE *f)
{
	fputs("shape,workload,strategy,workers,batch,runs_ok,runs_failed,ci_coverage,"
	      "throughput_items_per_second_median,throughput_items_per_second_lo,throughput_items_per_second_hi,"
	      "mean_latency_seconds_median,mean_latency_seconds_lo,mean_latency_seconds_hi,"
	      "p99_latency_seconds_median,p99_latency_seconds_lo,p99_latency_seconds_hi,"
	      "p50_latency_seconds_median,p90_latency_seconds_median,p999_latency_seconds_median,fairness_median,"
	      "gpu_util_percent_median,gpu_mem_used_bytes_median\n", f);
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct gpushare_report_cell *c = &r->cells[i];

		gpushare_csv_write_field(f, c->shape);
		fputc(',', f);
		gpushare_csv_write_field(f, c->workload);
		fprintf(f, ",%s,%d,%ld,%zu,%zu,", gpushare_strategy_name(c->strategy), c->workers, c->batch, c->n_ok,
			c->n_failed);
		if (gpushare_ci_has_interval(&c->throughput))
			fprintf(f, "%.6f", c->throughput.coverage);
		csv_ci(f, &c->throughput);
		csv_ci(f, &c->mean_latency);
		csv_ci(f, &c->p99_latency);
		csv_median(f, &c->p50_latency);
		csv_median(f, &c->p90_latency);
		csv_median(f, &c->p999_latency);
		csv_median(f, &c->fairness);
		csv_median(f, &c->util_pct);
		csv_median(f, &c->mem_used_bytes);
		fputc('\n', f);
	}
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the CSV summary: %s", strerror(errno));
	return GPUSHARE_OK;
}

/* ---- JSON ---- */

/* {median, lo, hi, n, coverage}: lo, hi and coverage null without an
 * interval; null without a sample. */
static cJSON *json_ci(const struct gpushare_ci *ci)
{
	cJSON *o;
	bool iv = gpushare_ci_has_interval(ci);

	if (ci->n == 0)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	if (o && (!gpushare_json_num(o, "median", ci->median) || !gpushare_json_num_if(o, "lo", ci->lo, iv) ||
		  !gpushare_json_num_if(o, "hi", ci->hi, iv) || !gpushare_json_num(o, "n", (double)ci->n) ||
		  !gpushare_json_num_if(o, "coverage", ci->coverage, iv))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *json_cell(const struct gpushare_report_cell *c)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o && gpushare_json_str(o, "shape", c->shape) &&
		  gpushare_json_str(o, "workload", c->workload) &&
		  gpushare_json_str(o, "strategy", gpushare_strategy_name(c->strategy)) &&
		  gpushare_json_num(o, "workers", c->workers) &&
		  gpushare_json_num(o, "batch", (double)c->batch) &&
		  gpushare_json_num(o, "runs_ok", (double)c->n_ok) &&
		  gpushare_json_num(o, "runs_failed", (double)c->n_failed) &&
		  gpushare_json_add(o, "throughput_items_per_second", json_ci(&c->throughput)) &&
		  gpushare_json_add(o, "mean_latency_seconds", json_ci(&c->mean_latency)) &&
		  gpushare_json_add(o, "p50_latency_seconds", json_ci(&c->p50_latency)) &&
		  gpushare_json_add(o, "p90_latency_seconds", json_ci(&c->p90_latency)) &&
		  gpushare_json_add(o, "p99_latency_seconds", json_ci(&c->p99_latency)) &&
		  gpushare_json_add(o, "p999_latency_seconds", json_ci(&c->p999_latency)) &&
		  gpushare_json_add(o, "fairness", json_ci(&c->fairness)) &&
		  gpushare_json_add(o, "gpu_util_percent", json_ci(&c->util_pct)) &&
		  gpushare_json_add(o, "gpu_mem_used_bytes", json_ci(&c->mem_used_bytes));

	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* {ratio, ratio_lo, ratio_hi, verdict, confidence, significant}; null when not compared. */
static cJSON *json_comparison(const struct gpushare_comparison *c, bool compared)
{
	cJSON *o;
	bool apart = c->verdict == GPUSHARE_VERDICT_HIGHER || c->verdict == GPUSHARE_VERDICT_LOWER;

	if (!compared)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	if (o && (!gpushare_json_num(o, "ratio", c->ratio) || !gpushare_json_num(o, "ratio_lo", c->ratio_lo) ||
		  !gpushare_json_num(o, "ratio_hi", c->ratio_hi) ||
		  !gpushare_json_str(o, "verdict", gpushare_verdict_name(c->verdict)) ||
		  !gpushare_json_bool(o, "underpowered", c->underpowered) ||
		  !gpushare_json_num_if(o, "runs_needed", (double)c->runs_needed, c->underpowered && c->runs_needed) ||
		  !gpushare_json_num_if(o, "settles_difference", c->settle_diff, c->underpowered && c->runs_needed) ||
		  !gpushare_json_num_if(o, "confidence", c->confidence, apart) ||
		  !(c->verdict == GPUSHARE_VERDICT_UNKNOWN ? gpushare_json_null(o, "significant")
							   : gpushare_json_bool(o, "significant", c->significant)) ||
		  !gpushare_json_compare_method(o, c))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *json_strategy_or_null(const struct gpushare_report *r, int cell)
{
	return cell >= 0 ? gpushare_json_string(gpushare_strategy_name(r->cells[cell].strategy)) : cJSON_CreateNull();
}

static cJSON *json_names(const struct gpushare_report *r, const int *cells, size_t n)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < n; i++) {
		if (!gpushare_json_str(a, NULL, gpushare_strategy_name(r->cells[cells[i]].strategy))) {
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

static cJSON *json_at(const struct gpushare_report *r, const struct gpushare_report_at_workers *at)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o && gpushare_json_num(o, "workers", at->workers) &&
		  gpushare_json_add(o, "best", json_strategy_or_null(r, at->best)) &&
		  gpushare_json_add(o, "best_cell", at->best >= 0 ? json_cell(&r->cells[at->best]) : cJSON_CreateNull()) &&
		  gpushare_json_add(o, "tied", json_names(r, at->tied, at->n_tied)) &&
		  gpushare_json_bool(o, "contest", at->n_tied > 0) &&
		  gpushare_json_add(o, "next", json_strategy_or_null(r, at->next)) &&
		  gpushare_json_add(o, "vs_next", json_comparison(&at->vs_next, at->best >= 0 && at->next >= 0)) &&
		  gpushare_json_add(o, "vs_timeslice",
			   json_comparison(&at->vs_timeslice, at->best >= 0 && at->timeslice >= 0 &&
			   at->timeslice != at->best)) &&
		  gpushare_json_add(o, "mps_vs_mps_split", json_comparison(&at->mps_vs_split, at->mps >= 0 &&
		  at->mps_split >= 0)) &&
		  gpushare_json_add(o, "lowest_p99", json_strategy_or_null(r, at->lowest_p99)) &&
		  gpushare_json_add(o, "lowest_p99_tied", json_names(r, at->p99_tied, at->n_p99_tied)) &&
		  gpushare_json_add(o, "references", json_names(r, at->references, at->n_references)) &&
		  gpushare_json_str(o, "throughput_text", at->throughput_text) &&
		  gpushare_json_str(o, "latency_text", at->latency_text);

	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *json_rec(const struct gpushare_report *r, const struct gpushare_report_rec *rec)
{
	cJSON *o = cJSON_CreateObject(), *at, *sc;
	bool ok = o && gpushare_json_str(o, "shape", rec->shape) &&
		  gpushare_json_num(o, "batch", (double)rec->batch) &&
		  (at = gpushare_json_arr(o, "per_workers")) != NULL &&
		  (sc = gpushare_json_arr(o, "scaling")) != NULL;

	for (size_t i = 0; ok && i < rec->n_at; i++) {
		ok = gpushare_json_add(at, NULL, json_at(r, &rec->at[i]));
	}
	for (size_t i = 0; ok && i < rec->n_scaling; i++) {
		const struct gpushare_report_scaling *s = &rec->scaling[i];
		cJSON *x = gpushare_json_obj(sc, NULL);

		ok = gpushare_json_str(x, "strategy", gpushare_strategy_name(s->strategy)) &&
		     gpushare_json_num(x, "best_workers", r->cells[s->best].workers) &&
		     gpushare_json_num(x, "smallest_workers_within_noise", r->cells[s->smallest].workers) &&
		     gpushare_json_bool(x, "reference", !gpushare_report_sharing(s->strategy)) &&
		     (s->unsettled >= 0 ? gpushare_json_num(x, "unsettled_workers", r->cells[s->unsettled].workers)
					: gpushare_json_null(x, "unsettled_workers")) &&
		     gpushare_json_str(x, "text", s->text);
	}
	if (ok && r->slo_p99_seconds > 0) {
		cJSON *x = gpushare_json_obj(o, "under_slo");

		ok = x &&
		     gpushare_json_add(x, "cell", rec->slo >= 0 ? json_cell(&r->cells[rec->slo]) : cJSON_CreateNull()) &&
		     gpushare_json_add(x, "tied", json_names(r, rec->slo_tied, rec->n_slo_tied)) &&
		     gpushare_json_str(x, "text", rec->slo_text);
	} else if (ok) {
		ok = gpushare_json_null(o, "under_slo");
	}
	if (!ok) {
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
	ok = ok && (m = gpushare_json_obj(doc, "metadata")) != NULL &&
	     gpushare_json_str_or_null(m, "gpushare_version", r->version) &&
	     gpushare_json_str_or_null(m, "host", r->host) &&
	     gpushare_json_str_or_null(m, "gpu_name", r->gpu_name) &&
	     gpushare_json_str_or_null(m, "gpu_uuid", r->gpu_uuid) &&
	     gpushare_json_str_or_null(m, "driver_version", r->driver_version) &&
	     gpushare_json_str_or_null(m, "first_date", r->first_date) &&
	     gpushare_json_str_or_null(m, "last_date", r->last_date) &&
	     gpushare_json_str_or_null(m, "command_line", r->command_line) &&
	     gpushare_json_num(doc, "runs", (double)r->n_runs) &&
	     gpushare_json_str(doc, "statistic",
				     "median over a cell's ok runs; interval: order statistics of the median, "
				     "with its exact coverage (null with one run); a difference is significant "
				     "when the intervals are apart with joint coverage >= 0.95, a tie when they overlap") &&
	     gpushare_json_num_if(doc, "slo_p99_seconds", r->slo_p99_seconds, r->slo_p99_seconds > 0) &&
	     (cells = gpushare_json_arr(doc, "cells")) != NULL;
	for (size_t i = 0; ok && i < r->n_cells; i++) {
		ok = gpushare_json_add(cells, NULL, json_cell(&r->cells[i]));
	}
	ok = ok && (recs = gpushare_json_arr(doc, "recommendation")) != NULL;
	for (size_t i = 0; ok && i < r->n_recs; i++) {
		ok = gpushare_json_add(recs, NULL, json_rec(r, &r->recs[i]));
	}
	ok = ok && gpushare_json_add(doc, "peak_search", gpushare_report_peak_json(r));
	ok = ok && gpushare_json_num(doc, "corrupt_lines", (double)r->n_bad) &&
	     (bad = gpushare_json_arr(doc, "corrupt_line_list")) != NULL;
	for (size_t i = 0; ok && i < r->n_bad_kept; i++) {
		cJSON *o = gpushare_json_obj(bad, NULL);

		ok = gpushare_json_num(o, "line", (double)r->bad[i].line) &&
		     gpushare_json_str(o, "reason", r->bad[i].reason);
	}
	*text = gpushare_json_finish(doc, ok, true);
	if (!*text)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory while building the JSON summary");
	return GPUSHARE_OK;
}
