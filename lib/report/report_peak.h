/*
 * The peak-search part of a sweep report (internal to libgpushare): runs of
 * `gpushare sweep --load open --find-peak --slo pNN=D` grouped into one
 * table per shape, batch and bound, the peak rate within the bound per
 * strategy (rows) and worker count (columns), and the recommendation's
 * "highest rate within the bound" from those peaks. See lib/report/report_peak.c.
 */
#ifndef GPUSHARE_REPORT_PEAK_H
#define GPUSHARE_REPORT_PEAK_H

#include <stdbool.h>
#include <stdio.h>

#include "gpushare/report.h"
#include "report_internal.h"

struct cJSON;

/* Fill run's peak-search fields from a record: root (the record; its
 * "peak_search" and bench.config.find_peak say whether a search ran, and
 * for what bound) and res (bench.results[0], NULL when the run is not ok:
 * its "peak" holds the outcome); the error and note go into t. GPUSHARE_E_INVAL with a detail. */
int gpushare_report_load_peak(const struct cJSON *root, const struct cJSON *res, struct gpushare_report_run *run,
			      struct gpushare_report_text *t);

/* Whether the report holds peak searches (of one shape: shape non-NULL). */
bool gpushare_report_peak_any(const struct gpushare_report *r, const char *shape);

/* The recommendation's lines for the shape (markdown list items; nothing
 * without searches of that shape). */
int gpushare_report_peak_recommend(const struct gpushare_report *r, const char *shape, FILE *f);

/* The same as plain text lines for the terminal, indented by two spaces. */
int gpushare_report_peak_text(const struct gpushare_report *r, const char *shape, FILE *f);

/* The "Highest rate within the bound" section of report.md and of the HTML
 * page (nothing without searches). */
int gpushare_report_peak_markdown(const struct gpushare_report *r, FILE *f);
int gpushare_report_peak_html(const struct gpushare_report *r, struct gpushare_buf *b);

/* The tables as a JSON array (empty without searches); NULL out of memory. */
struct cJSON *gpushare_report_peak_json(const struct gpushare_report *r);

#endif
