/*
 * The latency-vs-offered-load part of a sweep report (internal to
 * libgpushare): runs of an open-loop sweep (`gpushare sweep --load open
 * --rate LIST`) grouped into one curve per shape, strategy, workers and
 * batch, the peak rate within the bound marked on each, and the "highest
 * rate within the bound" line of the recommendation. See
 * lib/report/report_load_curve.c.
 */
#ifndef GPUSHARE_REPORT_LOAD_CURVE_H
#define GPUSHARE_REPORT_LOAD_CURVE_H

#include <stdbool.h>
#include <stdio.h>

#include "gpushare/report.h"

struct cJSON;

/* Fill run's open-loop fields from a record's bench result (res: the
 * first element of bench.results). GPUSHARE_E_INVAL with a detail. */
int gpushare_report_load_open(const struct cJSON *res, struct gpushare_report_run *run);

/* Whether the report holds open-loop runs. */
bool gpushare_report_load_curve_any(const struct gpushare_report *r);

/* Whether every run of the shape is open-loop (no closed-loop cells). */
bool gpushare_report_load_curve_only(const struct gpushare_report *r, const char *shape);

/* The recommendation's line for the shape: the highest offered rate whose
 * p99 is within the bound, and which strategy reaches it (nothing when the
 * shape has no open-loop runs). */
int gpushare_report_load_curve_recommend(const struct gpushare_report *r, const char *shape, FILE *f);

/* The "Latency under offered load" section of report.md. */
int gpushare_report_load_curve_markdown(const struct gpushare_report *r, FILE *f);

/* load_curve.csv and plots/load_curve-<n>.svg in dir (nothing without
 * open-loop runs). */
int gpushare_report_load_curve_write(const struct gpushare_report *r, const char *dir);

#endif
