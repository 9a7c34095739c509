/*
 * The self-contained HTML page of a sweep report (tables, figures inlined as
 * base64 PNG, metadata, recommendation; no external resource, no script) and
 * gpushare_report_write(), which writes every output file of a report.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushare/bench.h"
#include "gpushare/format.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "report_internal.h"
#include "report_load_curve.h"
#include "report_peak.h"

static void base64(struct gpushare_buf *b, const unsigned char *d, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char out[4];

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)d[i] << 16 | (i + 1 < n ? (unsigned)d[i + 1] << 8 : 0) | (i + 2 < n ? d[i + 2] : 0);

		out[0] = tab[v >> 18 & 63];
		out[1] = tab[v >> 12 & 63];
		out[2] = i + 1 < n ? tab[v >> 6 & 63] : '=';
		out[3] = i + 2 < n ? tab[v & 63] : '=';
		gpushare_buf_add(b, out, 4);
	}
}

static void html_table(const struct gpushare_report *r, struct gpushare_buf *b, const char *shape, long batch, int m)
{
	struct report_table t;

	gpushare_report_table_init(&t, r, shape, batch, m);
	gpushare_buf_addf(b, "<table>\n<caption>%s (%s), %s</caption>\n<tr><th>strategy</th>", t.title, t.unit, t.caption);
	for (size_t w = 0; w < t.n_workers; w++)
		gpushare_buf_addf(b, "<th>%d %s</th>", t.workers[w], t.workers[w] == 1 ? "worker" : "workers");
	gpushare_buf_addf(b, "</tr>\n");
	for (size_t s = 0; s < t.n_strategies; s++) {
		gpushare_buf_addf(b, "<tr><th>%s%s</th>", gpushare_strategy_name(t.strategies[s]),
			    gpushare_report_sharing(t.strategies[s]) ? "" : " <span class=\"ref\">(reference)</span>");
		for (size_t w = 0; w < t.n_workers; w++) {
			char cell[128];
			bool win;

			gpushare_report_table_cell(&t, s, w, cell, sizeof(cell), &win);
			gpushare_buf_addf(b, win ? "<td class=\"win\">" : "<td>");
			gpushare_report_add_xml(b, cell);
			gpushare_buf_addf(b, "</td>");
		}
		gpushare_buf_addf(b, "</tr>\n");
	}
	gpushare_buf_addf(b, "</table>\n");
}

/* A figure inlined as base64 PNG, with its caption; its id is its file's
 * name, so report.html#shape1-batch1-cdf-w2 links to it. */
static void html_figure(struct gpushare_buf *b, const struct report_figure *fig)
{
	gpushare_buf_addf(b, "<figure id=\"%s\"><img alt=\"%s\" src=\"data:image/png;base64,", fig->name, fig->name);
	base64(b, (const unsigned char *)fig->png.s, fig->png.len);
	gpushare_buf_addf(b, "\"><figcaption>");
	gpushare_report_add_xml(b, fig->caption);
	gpushare_buf_addf(b, "</figcaption></figure>\n");
}

static void meta_row(struct gpushare_buf *b, const char *k, const char *v)
{
	gpushare_buf_addf(b, "<tr><th>%s</th><td>", k);
	gpushare_report_add_xml(b, v && *v ? v : "-");
	gpushare_buf_addf(b, "</td></tr>\n");
}

int gpushare_report_html(const struct gpushare_report *r, const struct report_figure *figs, size_t n_figs, struct gpushare_buf *b)
{
	char buf[64];
	size_t failed = gpushare_report_n_failed(r);
	const char *mix_note;

	gpushare_buf_addf(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		       "<title>gpushare sweep report</title>\n<style>\n"
		       "body{font-family:'DejaVu Sans',Arial,sans-serif;margin:24px auto;max-width:1100px;color:#222;line-height:1.4}\n"
		       "h1{font-size:26px}h2{margin-top:32px;border-bottom:1px solid #ccc}h3{margin-bottom:6px}\n"
		       "table{border-collapse:collapse;margin:10px 0 18px}caption{text-align:left;font-weight:bold;padding:4px 0}\n"
		       "th,td{border:1px solid #ccc;padding:4px 9px;font-size:13px}td{text-align:right;font-variant-numeric:tabular-nums}\n"
		       "th{background:#f3f3f3;text-align:left}.rec li{margin:6px 0}.warn{color:#a33}\n"
		       "figure{margin:14px 0}figure img{max-width:100%%;border:1px solid #ddd}figcaption{font-size:13px;color:#555}\n"
		       "td.win{background:#e3f4e3;font-weight:bold}.ref{color:#777;font-weight:normal}\n"
		       ".answers td{text-align:left;font-variant-numeric:normal;max-width:520px}\n"
		       ".grid{display:grid;grid-template-columns:1fr 1fr;gap:8px}.grid figure{margin:4px 0}\n"
		       ".meta td{text-align:left}code{background:#f5f5f5;padding:1px 4px}\n</style>\n</head>\n<body>\n"
		       "<h1>gpushare sweep report</h1>\n<table class=\"meta\">\n");
	meta_row(b, "GPU", r->gpu_name[0] ? r->gpu_name : "none (CPU-only workload)");
	meta_row(b, "GPU UUID", r->gpu_uuid);
	meta_row(b, "driver", r->driver_version);
	meta_row(b, "host", r->host);
	meta_row(b, "gpushare", r->version);
	meta_row(b, "first run", r->first_date);
	meta_row(b, "last run", r->last_date);
	meta_row(b, "command", r->command_line);
	snprintf(buf, sizeof(buf), "%zu (%zu failed or partial)", r->n_runs, failed);
	meta_row(b, "runs", buf);
	gpushare_buf_addf(b, "</table>\n");
	if (r->n_shapes_omitted)
		gpushare_buf_addf(b, "<p class=\"warn\">Only the first %zu workload shapes are reported: %zu more workload shapes "
			    "(%zu runs) are in the results file.</p>\n", r->n_shapes, r->n_shapes_omitted, r->n_runs_omitted);
	if (r->n_bad) {
		gpushare_buf_addf(b, "<p class=\"warn\">%zu corrupt line%s of the results file skipped:", r->n_bad,
			    r->n_bad == 1 ? "" : "s");
		for (size_t i = 0; i < r->n_bad_kept && i < 10; i++) {
			gpushare_buf_addf(b, "%s line %zu (", i ? ";" : "", r->bad[i].line);
			gpushare_report_add_xml(b, r->bad[i].reason);
			gpushare_buf_addf(b, ")");
		}
		gpushare_buf_addf(b, "%s</p>\n", r->n_bad > 10 ? "; ..." : "");
	}
	gpushare_buf_addf(b, "<p>Each figure is the median over a cell's successful runs. Its interval (in parentheses "
		       "and as error bars) is the distribution-free interval of the median from order statistics, with "
		       "its exact coverage: with one run there is none, with 2 runs it is [min, max] at 50%%, with 5 at "
		       "93.7%%, from 6 runs on at least 95%%. Two cells are compared by Welch's t test on the logarithms "
		       "of their runs (assumption: log-normal run-to-run noise, independent interleaved runs; 2 runs a "
		       "side suffice): a tie when the 95%% interval of the ratio of their geometric means holds 1, else "
		       "a significant difference. Beside it the distribution-free rule: overlapping intervals of the "
		       "medians are a tie; apart, they state their joint coverage (95%% from 7 runs each). "
		       "Highlighted: the best sharing strategy of a column, or tied with it, where two or more were "
		       "measured.</p>\n");
	if ((mix_note = gpushare_report_mix_note(r))) {
		gpushare_buf_addf(b, "<p>");
		gpushare_report_add_xml(b, mix_note);
		gpushare_buf_addf(b, "</p>\n");
	}
	gpushare_buf_addf(b, "<h2>Recommendation</h2>\n");
	for (size_t i = 0; i < r->n_recs; i++) {
		const struct gpushare_report_rec *rec = &r->recs[i];

		gpushare_buf_addf(b, "<h3>");
		gpushare_report_add_xml(b, rec->shape);
		gpushare_buf_addf(b, ", batch %ld</h3>\n<p><b>I have N processes: how should they share the GPU?</b> "
			       "Highest median throughput among timeslice, mps, mps-split and mig (sequential and "
			       "streams are references), and the lowest p99 latency.</p>\n"
			       "<table class=\"answers\">\n<tr><th>workers</th><th>highest throughput</th>"
			       "<th>lowest p99 latency</th></tr>\n", rec->batch);
		for (size_t w = 0; w < rec->n_at; w++) {
			gpushare_buf_addf(b, "<tr><th>%d</th><td>", rec->at[w].workers);
			gpushare_report_add_xml(b, rec->at[w].throughput_text);
			gpushare_buf_addf(b, "</td><td>");
			gpushare_report_add_xml(b, rec->at[w].latency_text[0] ? rec->at[w].latency_text : "-");
			gpushare_buf_addf(b, "</td></tr>\n");
		}
		gpushare_buf_addf(b, "</table>\n<p><b>How many processes per GPU?</b> The fewest workers within noise of "
			       "each strategy's best throughput:</p>\n<ul class=\"rec\">\n");
		for (size_t k = 0; k < rec->n_scaling; k++) {
			gpushare_buf_addf(b, "<li>");
			gpushare_report_add_xml(b, rec->scaling[k].text);
			gpushare_buf_addf(b, "</li>\n");
		}
		gpushare_buf_addf(b, "</ul>\n");
		if (r->slo_p99_seconds > 0) {
			gpushare_fmt_seconds(r->slo_p99_seconds, buf, sizeof(buf));
			gpushare_buf_addf(b, "<p><b>Highest throughput with p99 under %s:</b> ", buf);
			gpushare_report_add_xml(b, rec->slo_text);
			gpushare_buf_addf(b, "</p>\n");
		}
	}
	if (gpushare_report_peak_html(r, b))
		return GPUSHARE_E_NOMEM;
	for (size_t i = 0; i < r->n_shapes; i++) {
		long batches[64];
		size_t nb = gpushare_report_shape_batches(r, r->shapes[i], batches, 64);
		char prefix[32];

		gpushare_buf_addf(b, "<h2>");
		gpushare_report_add_xml(b, r->shapes[i]);
		gpushare_buf_addf(b, "</h2>\n");
		snprintf(prefix, sizeof(prefix), "shape%zu-", i + 1);
		for (size_t f = 0; f < n_figs; f++) {
			if (strncmp(figs[f].name, prefix, strlen(prefix)) || !strstr(figs[f].name, "-vs-batch"))
				continue;
			html_figure(b, &figs[f]);
		}
		for (size_t k = 0; k < nb; k++) {
			char tag[48];

			gpushare_buf_addf(b, "<h3>batch %ld</h3>\n", batches[k]);
			html_table(r, b, r->shapes[i], batches[k], M_THROUGHPUT);
			html_table(r, b, r->shapes[i], batches[k], M_MEAN);
			html_table(r, b, r->shapes[i], batches[k], M_P99);
			snprintf(tag, sizeof(tag), "%sbatch%ld-", prefix, batches[k]);
			for (size_t f = 0; f < n_figs; f++) {
				if (strncmp(figs[f].name, tag, strlen(tag)) || strstr(figs[f].name, "-cdf-"))
					continue;
				html_figure(b, &figs[f]);
			}
			/* The latency CDFs, one per worker count, two abreast. */
			gpushare_buf_addf(b, "<div class=\"grid\">\n");
			for (size_t f = 0; f < n_figs; f++) {
				if (strncmp(figs[f].name, tag, strlen(tag)) || !strstr(figs[f].name, "-cdf-"))
					continue;
				html_figure(b, &figs[f]);
			}
			gpushare_buf_addf(b, "</div>\n");
		}
	}
	gpushare_buf_addf(b, "</body>\n</html>\n");
	if (b->failed)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory while building the HTML report");
	return GPUSHARE_OK;
}

/* ---- all outputs ---- */

typedef int (*stream_writer)(const struct gpushare_report *r, FILE *f);

static int write_stream(const struct gpushare_report *r, const char *path, stream_writer fn)
{
	char *data = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&data, &len);
	int rc;

	if (!f)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	rc = fn(r, f);
	if (fclose(f) != 0 && !rc)
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	if (!rc)
		rc = gpushare_write_file_atomic(path, data, len);
	free(data);
	return rc;
}

/* inner: a directory gpushare names inside the output directory (plots/):
 * never a link planted there, nor another user's directory. */
static int ensure_dir(const char *path, bool inner)
{
	struct stat st;

	if (mkdir(path, 0755) == 0)
		return GPUSHARE_OK;
	if (inner && errno == EEXIST && lstat(path, &st) == 0 && (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()))
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is %s; refusing to write into it", path,
				     S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "another user's directory"
											: "not a directory");
	if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return GPUSHARE_OK;
	return gpushare_fail(GPUSHARE_E_IO, "cannot create directory '%s': %s", path, strerror(errno));
}

int gpushare_report_write(const struct gpushare_report *r, const char *dir)
{
	char path[GPUSHARE_PATH_MAX + 128];
	struct report_figure *figs = NULL;
	struct gpushare_buf html = { 0 };
	char *json = NULL;
	size_t n_figs = 0;
	int rc = ensure_dir(dir, false);

	if (!rc) {
		snprintf(path, sizeof(path), "%s/plots", dir);
		rc = ensure_dir(path, true);
	}
	if (!rc) {
		snprintf(path, sizeof(path), "%s/report.md", dir);
		rc = write_stream(r, path, gpushare_report_write_markdown);
	}
	if (!rc) {
		snprintf(path, sizeof(path), "%s/summary.csv", dir);
		rc = write_stream(r, path, gpushare_report_write_csv);
	}
	if (!rc)
		rc = gpushare_report_json(r, &json);
	if (!rc) {
		snprintf(path, sizeof(path), "%s/summary.json", dir);
		rc = gpushare_write_file_atomic(path, json, strlen(json));
	}
	free(json);
	if (!rc)
		rc = gpushare_report_figures(r, &figs, &n_figs);
	for (size_t i = 0; i < n_figs && !rc; i++) {
		snprintf(path, sizeof(path), "%s/plots/%s.png", dir, figs[i].name);
		rc = gpushare_write_file_atomic(path, figs[i].png.s, figs[i].png.len);
		if (!rc) {
			snprintf(path, sizeof(path), "%s/plots/%s.svg", dir, figs[i].name);
			rc = gpushare_write_file_atomic(path, figs[i].svg.s, figs[i].svg.len);
		}
	}
	if (!rc)
		rc = gpushare_report_load_curve_write(r, dir);
	if (!rc)
		rc = gpushare_report_html(r, figs, n_figs, &html);
	if (!rc) {
		snprintf(path, sizeof(path), "%s/report.html", dir);
		rc = gpushare_write_file_atomic(path, html.s, html.len);
	}
	gpushare_buf_release(&html);
	gpushare_report_figures_free(figs, n_figs);
	return rc;
}
