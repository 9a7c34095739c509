/*
 * Reports of sweeps (`gpushare report DIR`): reads the JSON Lines results
 * file a sweep wrote, groups runs by cell, summarises the repeats of each
 * cell (median with a distribution-free 95% confidence interval), and writes
 * markdown tables (strategies as rows, worker counts as columns), CSV and
 * JSON summaries, PNG and SVG plots (cairo), one self-contained HTML page and
 * a recommendation. The statistics are described in docs/sweep.md.
 *
 * Usage:
 *   struct gpushare_report r;
 *   rc = gpushare_report_load("out/results.jsonl", &r);   corrupt lines: r.bad[]
 *   gpushare_report_summarise(&r, slo_p99_seconds);
 *   rc = gpushare_report_write(&r, "out");                report.md, summary.csv, ...
 *   gpushare_report_release(&r);
 */
#ifndef GPUSHARE_REPORT_H
#define GPUSHARE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- statistics ---- */

/* A median with its confidence interval. */
struct gpushare_ci {
	size_t n;            /* samples */
	double median;
	double lo, hi;       /* interval bounds (equal to the median when n == 1) */
	double coverage;     /* confidence actually achieved, 0..1 (below the asked
			      * level when n is too small: then lo/hi are min/max) */
};

/* Median of x[0..n-1] with the distribution-free (order statistic) CI at
 * level conf (0.95): the sorted samples x(l), x(u) with the smallest
 * symmetric rank window such that P(l <= B < u) >= conf for B ~
 * Binomial(n, 1/2). x is not modified. n == 0 gives n = 0, NaN fields. */
void gpushare_median_ci(const double *x, size_t n, double conf, struct gpushare_ci *out);

/* Relative half-width of the interval: (hi - lo) / 2 / |median|; INFINITY
 * when the median is 0 or n < 2. */
double gpushare_ci_rel_halfwidth(const struct gpushare_ci *ci);

/* Whether two intervals overlap (then "no significant difference"). */
bool gpushare_ci_overlap(const struct gpushare_ci *a, const struct gpushare_ci *b);

/* ---- loading ---- */

enum gpushare_run_status { GPUSHARE_RUN_OK, GPUSHARE_RUN_PARTIAL, GPUSHARE_RUN_FAILED };

/* One recorded run (one line of the results file). */
struct gpushare_report_run {
	char shape[128];
	char workload[32];
	char key[192];
	int strategy;                /* enum gpushare_strategy */
	int workers;
	long batch;
	int repeat;
	int status;                  /* enum gpushare_run_status */
	size_t line;                 /* 1-based line in the file */
	double items_per_second, requests_per_second;
	double mean_seconds, p50_seconds, p99_seconds;
	/* Open loop (cell.rate_per_second; 0 closed loop): the latency above
	 * counts from the scheduled arrival. */
	double rate;
	double offered_per_second, achieved_per_second;
	double unfinished;
};

/* A line that could not be used. */
struct gpushare_report_bad_line {
	size_t line;                 /* 1-based */
	char reason[160];
};

/* All repeats of one cell, summarised. */
struct gpushare_report_cell {
	char shape[128];
	char workload[32];
	int strategy;
	int workers;
	long batch;
	size_t n_ok, n_failed;       /* runs with status ok / partial or failed */
	struct gpushare_ci throughput;   /* items/s (aggregate of the workers) */
	struct gpushare_ci mean_latency; /* seconds */
	struct gpushare_ci p99_latency;  /* seconds */
};

/* A pick of the recommendation, with comparisons against the baselines. */
struct gpushare_report_pick {
	int cell;                    /* index in cells[], -1 none */
	int vs_timeslice;            /* same shape, workers, batch under timeslice; -1 none */
	int vs_sequential;           /* same under sequential; -1 none */
	char why[1024];              /* one sentence */
};

struct gpushare_report_shape_rec {
	char shape[128];
	struct gpushare_report_pick best_throughput, best_p99, best_slo;
};

struct gpushare_report {
	struct gpushare_report_run *runs;
	size_t n_runs;
	struct gpushare_report_bad_line *bad;
	size_t n_bad;                /* all corrupt lines (bad[] keeps the first 1000) */
	size_t n_bad_kept;
	/* Metadata of the first record, and the date span. */
	char version[32], host[256], gpu_name[96], gpu_uuid[96], driver_version[80];
	char first_date[32], last_date[32];
	char command_line[1024];
	/* Filled by gpushare_report_summarise(). */
	struct gpushare_report_cell *cells;
	size_t n_cells;
	char (*shapes)[128];         /* distinct shapes, in order of first appearance */
	size_t n_shapes;
	struct gpushare_report_shape_rec *recs;   /* one per shape */
	double slo_p99_seconds;      /* 0: none */
};

/* Read a results file. Corrupt or incomplete lines (not JSON, missing
 * fields, a torn last line) are listed in r->bad and skipped. Returns
 * GPUSHARE_E_NOT_FOUND when the file is absent, GPUSHARE_E_IO when it cannot
 * be read; r is always initialised (release it). */
int gpushare_report_load(const char *path, struct gpushare_report *r);

/* Parse one line into run (GPUSHARE_E_INVAL with a reason as detail). Used
 * by the loader; exposed for tests. */
int gpushare_report_parse_line(const char *text, size_t len, struct gpushare_report_run *run);

/* Group runs into cells, compute the statistics and the recommendation.
 * slo_p99_seconds > 0 adds the pick under that p99. */
int gpushare_report_summarise(struct gpushare_report *r, double slo_p99_seconds);

void gpushare_report_release(struct gpushare_report *r);

/* ---- output ---- */

/* Write into dir: report.md, summary.csv, summary.json, report.html and
 * plots/<name>.png and .svg. Each file is written atomically.
 * GPUSHARE_E_IO naming the file. */
int gpushare_report_write(const struct gpushare_report *r, const char *dir);

/* The markdown report (tables and recommendation) on f. */
int gpushare_report_write_markdown(const struct gpushare_report *r, FILE *f);
int gpushare_report_write_csv(const struct gpushare_report *r, FILE *f);
/* The JSON summary; caller frees *text. */
int gpushare_report_json(const struct gpushare_report *r, char **text);

#ifdef __cplusplus
}
#endif
#endif
