/*
 * Reports of sweeps (`gpushare report DIR`): reads the JSON Lines results
 * file a sweep wrote, groups runs by cell, summarises the repeats of each
 * cell (median with its order-statistic interval and that interval's exact
 * coverage), and writes
 * markdown tables (strategies as rows, worker counts as columns), CSV and
 * JSON summaries, PNG and SVG plots (cairo), one self-contained HTML page and
 * a recommendation. Open-loop sweeps add load curves (--rate LIST) or peak
 * tables (--find-peak: the highest rate within the bound per strategy and
 * worker count). The statistics are described in docs/sweep.md.
 *
 * Usage:
 *   struct gpushare_report r;
 *   rc = gpushare_report_load("out/results.jsonl", &r);   corrupt lines: r.bad[]
 *   gpushare_report_summarise(&r, slo_p99_seconds);
 *   rc = gpushare_report_write(&r, "out");                report.md, summary.csv, ...
 *   gpushare_report_release(&r);
 * Every run of a loaded report, kept whole or folded (file order):
 *   struct gpushare_report_cursor c;
 *   const struct gpushare_report_run *run;
 *   rc = gpushare_report_cursor_open(&r, &c);
 *   while (!rc && (run = gpushare_report_cursor_next(&c)))
 *           ... run->key, run->repeat, run->status, run->items_per_second ...
 *   gpushare_report_cursor_close(&c);
 */
#ifndef GPUSHARE_REPORT_H
#define GPUSHARE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpushare/hist.h"
#include "gpushare/stats.h"
#include "gpushare/strategy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Statistics (median, interval, comparisons): gpushare/stats.h. */

/* ---- loading ---- */

/* The version of a results file record (docs/sweep.md): sweep writes it,
 * the report reads it. */
#define GPUSHARE_SWEEP_RECORD_VERSION 1

#define GPUSHARE_REPORT_MAX_STRATEGIES 8
/* A shape's name in a report: the sweep's label (at most 127 bytes) and, for
 * mps-split at a set percentage, " (mps-split threads 50%)" or a mix's
 * " (mps-split shares 12/29/29/29)": room for both, so that no two cells'
 * names are cut to one. */
#define GPUSHARE_REPORT_SHAPE_LEN 192

enum gpushare_run_status { GPUSHARE_RUN_OK, GPUSHARE_RUN_PARTIAL, GPUSHARE_RUN_FAILED };

/* One recorded run (one line of the results file). Figures are those of
 * bench.results[0].aggregate; only runs with status ok carry them.
 * The names (shape, workload, key, error, peak_note, device_name) are never
 * NULL ("" unknown). In a loaded report they are the report's, each
 * distinct string kept once for all runs (valid until
 * gpushare_report_release()), so a run costs its figures, not its text;
 * from gpushare_report_parse_line() they are the run's own (text, freed by
 * gpushare_report_run_release()). A loaded report keeps this whole struct
 * (304 bytes) only for the runs that need it (struct gpushare_report:
 * whole[]); an ok closed-loop run is folded into its group's samples (80
 * bytes) and read back as this struct through struct
 * gpushare_report_cursor. */
struct gpushare_report_run {
	const char *shape;           /* at most 127 bytes, as all names below */
	const char *workload;        /* at most 31 */
	const char *key;             /* at most 191 */
	char *text;                  /* the run's own names (parse_line); NULL in a report */
	enum gpushare_strategy strategy;
	int workers;
	long batch;
	/* mps-split's active thread percentage per worker (cell.thread_percentage);
	 * 0 the default 100/N, also for records without it. When set, shape
	 * carries it too (gpushare_report_shape_label), so the tables show those
	 * runs apart. */
	double thread_pct;
	int repeat;
	enum gpushare_run_status status;
	const char *error;           /* a failed or partial run's error.message (or code); "" none; at most 159 */
	size_t line;                 /* 1-based line in the file */
	double items_per_second, requests_per_second;
	double mean_seconds, p50_seconds, p90_seconds, p99_seconds, p999_seconds;
	double fairness;             /* slowest / fastest worker; NaN unknown */
	double util_mean_pct;        /* NVML telemetry of the run; NaN unknown */
	double mem_used_max_bytes;   /* NaN unknown */
	/* The merged latency histogram (aggregate.histogram): non-empty buckets
	 * as upper bounds in ns and counts; NULL when the record has none. Owned
	 * by the report (gpushare_report_release). */
	uint64_t *hist_le_ns, *hist_counts;
	size_t hist_n;
	/* Open loop (cell.rate_per_second; 0 closed loop): the latency above
	 * counts from the scheduled arrival. */
	double rate;
	double offered_per_second, achieved_per_second;
	double unfinished;
	/* A --find-peak search (the record's peak_search, or
	 * bench.config.find_peak): not a cell of the throughput tables but a
	 * cell of the peak tables. The bound is known from the record (0
	 * unknown); the outcome (bench.results[0].peak) only on an ok run. */
	bool find_peak;
	double peak_quantile, peak_bound_seconds;
	double peak_resolution;      /* relative; 0 unknown */
	bool peak_found;             /* a rate met the bound */
	double peak_rate;            /* found: the highest rate that met it, per second */
	double peak_missed_at;       /* the lowest rate that missed it; 0 none (the
				      * search stopped without a miss: the peak may be higher) */
	int peak_steps;
	const char *peak_note;       /* how the search ended when not bracketed; ""; at most 159 */
	/* The devices the workers ran on (bench.results[0].workers[]): the
	 * first worker's device_name ("NVIDIA H100 80GB HBM3 MIG 1g.10gb"; ""
	 * unknown) and how many distinct visible_devices they had (0 unknown).
	 * Read of ok runs; gpushare plan takes a MIG layout from them. */
	const char *device_name;     /* at most 95 */
	int n_devices;
	/* The MIG layout the workers ran on: each distinct visible device
	 * counted under the profile of its device_name, "1g.10gb x2 + 2g.20gb
	 * x1 + 3g.40gb x1" (profiles in name order; "" none or unknown;
	 * gpushare_report_mig_layout_parse() reads it). At most 159. */
	const char *mig_layout;
};

/* An ok closed-loop run as a loaded report keeps it: its place in the file
 * and the figures the cells' statistics read (those of struct
 * gpushare_report_run of the same names; NaN unknown), 80 bytes. Its cell,
 * names and devices are its group's (struct gpushare_report_group); its
 * status is ok, it has no error, rate, peak search nor histogram of its own
 * (the loader merged that into its cell's), and requests_per_second is not
 * kept (no report, plan or tune reads it). */
struct gpushare_report_sample {
	double items_per_second;
	double mean_seconds, p50_seconds, p90_seconds, p99_seconds, p999_seconds;
	double fairness, util_mean_pct, mem_used_max_bytes;
	uint32_t line;               /* 1-based line in the file */
	int32_t repeat;
};

/* The ok closed-loop runs of one cell (shape, strategy, workers, batch)
 * that agree on everything but their figures: the same thread percentage,
 * workload, cell key and devices (first worker's device_name, n_devices),
 * kept once for all of them. A cell's ok runs are normally one group;
 * runs of a cell recorded under another key, workload or device (a merged
 * or hand-edited file, MIG instances of two layouts) form groups of their
 * own, so a run read back through struct gpushare_report_cursor is the run
 * that was recorded. Names point into the report, as a whole run's do. */
struct gpushare_report_group {
	const char *shape, *workload, *key, *device_name, *mig_layout;
	enum gpushare_strategy strategy;
	int workers;
	long batch;
	double thread_pct;
	int n_devices;
	struct gpushare_report_sample *samples;  /* in file order, at least one */
	size_t n_samples;
};

/* A line that could not be used. */
struct gpushare_report_bad_line {
	size_t line;                 /* 1-based */
	char reason[160];
};

/* All repeats of one cell, summarised over its ok runs. */
/* A MIG layout per GPU: count[i] instances of profile[i] ("1g.10gb"), in
 * profile name order; n 0: none (not a MIG run, or not recorded). The form
 * plan's mig-parted writer takes. */
#define GPUSHARE_REPORT_MIG_PROFILES 8
struct gpushare_report_mig_layout {
	size_t n;
	char profile[GPUSHARE_REPORT_MIG_PROFILES][24];
	int count[GPUSHARE_REPORT_MIG_PROFILES];
};

/* Read a run's mig_layout text ("1g.10gb x2 + 3g.40gb x1") into out; ""
 * gives n 0. GPUSHARE_E_INVAL for any other text (out then has n 0). */
int gpushare_report_mig_layout_parse(const char *text, struct gpushare_report_mig_layout *out);

struct gpushare_report_cell {
	char shape[GPUSHARE_REPORT_SHAPE_LEN];
	char workload[32];
	enum gpushare_strategy strategy;
	int workers;
	long batch;
	size_t n_ok, n_failed;       /* runs with status ok / partial or failed */
	char error[160];             /* the last failed run's error; "" none */
	struct gpushare_ci throughput;   /* items/s (aggregate of the workers) */
	struct gpushare_ci mean_latency; /* seconds */
	struct gpushare_ci p50_latency, p90_latency, p99_latency, p999_latency;  /* seconds */
	struct gpushare_ci fairness;     /* 0..1 */
	struct gpushare_ci util_pct;     /* NVML GPU utilisation, mean over the window; n 0: none */
	struct gpushare_ci mem_used_bytes; /* NVML memory used, max over the window; n 0: none */
	struct gpushare_hist *hist;      /* the ok runs' histograms merged; NULL none */
	struct gpushare_report_mig_layout mig_layout; /* the first ok run's that records one */
};

/* The answers for one worker count N of a (shape, batch): how should N
 * processes share the GPU? Only sharing strategies (timeslice, mps,
 * mps-split, mig) answer; sequential and streams are references. Cells
 * are indices into cells[], -1 when absent. */
struct gpushare_report_at_workers {
	int workers;
	int best;                        /* highest median throughput among sharing cells */
	int tied[GPUSHARE_REPORT_MAX_STRATEGIES];  /* cells whose throughput ties with best (best first) */
	size_t n_tied;
	int next;                        /* the highest of the others */
	int timeslice;                   /* timeslice's cell at N */
	struct gpushare_comparison vs_next, vs_timeslice;   /* best against next / timeslice */
	int mps, mps_split;              /* both present: always compared */
	struct gpushare_comparison mps_vs_split;
	int lowest_p99;                  /* lowest median p99 among sharing cells */
	int p99_tied[GPUSHARE_REPORT_MAX_STRATEGIES];
	size_t n_p99_tied;
	int references[GPUSHARE_REPORT_MAX_STRATEGIES];  /* sequential, streams cells at N */
	size_t n_references;
	char throughput_text[768];       /* "mps: 34.5k items/s, 2.16x the throughput of timeslice (...)" */
	char latency_text[384];          /* "mps: p99 3.91 ms (tie with mps-split)" */
};

/* For one strategy: how many processes per GPU? */
struct gpushare_report_scaling {
	enum gpushare_strategy strategy;
	int best;                        /* cell of its highest median throughput */
	int smallest;                    /* the smallest N whose throughput ties with best's */
	int unsettled;                   /* a cell of fewer workers the runs cannot tell from
					  * best (an underpowered comparison; smallest is then
					  * best); -1 none */
	struct gpushare_comparison vs_unsettled; /* unsettled against best */
	char text[384];
};


/* Where a shape's runs were measured: the first record of the shape's GPU,
 * driver and host, and a GPU model another record of it names (a results
 * file may hold runs of several machines). */
struct gpushare_report_shape_meta {
	char shape[GPUSHARE_REPORT_SHAPE_LEN];
	char gpu_name[96], gpu_other[96], host[256], driver_version[80];
};

/* The recommendation of one (shape, batch). */
struct gpushare_report_rec {
	char shape[GPUSHARE_REPORT_SHAPE_LEN];
	long batch;
	struct gpushare_report_at_workers *at;   /* one per worker count, ascending */
	size_t n_at;
	struct gpushare_report_scaling scaling[GPUSHARE_REPORT_MAX_STRATEGIES];
	size_t n_scaling;
	int slo;                         /* highest median throughput with median p99 under the
					  * target (sharing strategies); -1 none or no target */
	int slo_tied[GPUSHARE_REPORT_MAX_STRATEGIES * 8];
	size_t n_slo_tied;
	char slo_text[768];
};

/* The merged histogram of one closed-loop cell's ok runs, built while
 * loading (internal to the report). */
struct gpushare_report_hist_acc;
/* The distinct names of the runs, each kept once (internal to the report). */
struct gpushare_report_names;

/* A loaded report: every usable run of the file, n_runs of them, in one of
 * two forms. An ok closed-loop run (status ok, no rate, no peak search) is
 * folded into its group (groups[]: its cell's names once, then 80 bytes of
 * figures a run), which is all the cells' exact statistics need. The runs
 * that need the whole record stay whole (whole[], struct
 * gpushare_report_run, in file order): open-loop runs (rate > 0) and peak
 * searches, which the load-curve and peak tables read field by field, and
 * failed or partial runs, few, whose errors and counts the report shows.
 * Neither form keeps its histogram (hist_n 0): the loader merges the ok
 * closed-loop runs' per cell. struct gpushare_report_cursor reads every run
 * in file order, whichever its form. A report built by hand may hold any
 * run whole (n_runs counting them, groups none). */
struct gpushare_report {
	size_t n_runs;               /* every run: n_whole + the groups' n_samples */
	struct gpushare_report_run *whole;           /* runs kept whole, in file order */
	size_t n_whole;
	struct gpushare_report_group *groups;        /* ok closed-loop runs, folded */
	size_t n_groups;
	struct gpushare_report_hist_acc *hist_acc;  /* the loader merges them per cell */
	struct gpushare_report_names *names;         /* the runs' strings point into it */
	size_t n_hist_acc;
	struct gpushare_report_bad_line *bad;
	size_t n_bad;                /* all corrupt lines (bad[] keeps the first 1000) */
	size_t n_bad_kept;
	/* Metadata of the first record, and the date span. */
	char version[32], host[256], gpu_name[96], gpu_uuid[96], driver_version[80];
	struct gpushare_report_shape_meta *shape_meta;   /* per shape, in order of first appearance */
	size_t n_shape_meta;
	char first_date[32], last_date[32];
	char command_line[1024];
	/* Left out by gpushare_report_cap_shapes(): shapes beyond the cap and their runs. */
	size_t n_shapes_omitted, n_runs_omitted;
	/* Filled by gpushare_report_summarise(). */
	struct gpushare_report_cell *cells;
	size_t n_cells;
	char (*shapes)[GPUSHARE_REPORT_SHAPE_LEN];   /* distinct shapes, in order of first appearance */
	size_t n_shapes;
	struct gpushare_report_rec *recs;   /* one per (shape, batch), shapes in order */
	size_t n_recs;
	double slo_p99_seconds;      /* 0: none */
};

/* Read a results file, streamed one line at a time (memory does not grow
 * with the file's size: the runs keep their figures, an ok closed-loop run
 * 80 bytes in its group, and the histograms of ok closed-loop runs are
 * merged per cell as they are read). Corrupt or
 * incomplete lines (not JSON, missing fields, a torn last line, a
 * duplicate run) are listed in r->bad and skipped. Returns
 * GPUSHARE_E_NOT_FOUND when the file is absent, GPUSHARE_E_IO when it cannot
 * be read; r is always initialised (release it). */
int gpushare_report_load(const char *path, struct gpushare_report *r);

/* The same over len bytes already in memory (need not be NUL-terminated). */
int gpushare_report_load_buffer(const char *data, size_t len, struct gpushare_report *r);

/* The metadata of shape's records; NULL when no record names it. */
const struct gpushare_report_shape_meta *gpushare_report_shape_meta(const struct gpushare_report *r, const char *shape);

/* At most this many workload shapes are reported (tables, plots, HTML). */
#define GPUSHARE_REPORT_MAX_SHAPES 64

/* Keep only the runs of the first max_shapes shapes (in order of first
 * appearance in the file), whole or folded, and count the rest in
 * n_shapes_omitted / n_runs_omitted (n_runs is what is left), so a report
 * over a huge file stays bounded in time, memory and output. Linear in the
 * number of whole runs and groups. */
int gpushare_report_cap_shapes(struct gpushare_report *r, size_t max_shapes);

/* The runs with status failed or partial (all of them kept whole). */
size_t gpushare_report_n_failed(const struct gpushare_report *r);

/* Whether the runs leave sc's question open (a fewer-worker cell they
 * cannot tell from the best); then buf holds the sentence plan and tune
 * print: "timeslice: cannot tell 1 worker from 4 workers with 2 runs; 7 more
 * runs a side would settle a difference of 89%". Else "" and false. */
bool gpushare_report_scaling_unsettled(const struct gpushare_report *r, const struct gpushare_report_scaling *sc,
				       char *buf, size_t len);

/* Every run of a report, in file order (by line), whether kept whole or
 * folded: the one way to walk all of a report's runs. A whole run is
 * returned as it is kept; a folded one as a struct gpushare_report_run
 * built from its group and sample (status ok, error "", rate 0, no peak
 * search, no histogram, requests_per_second NaN), valid until the next
 * call. The fields are private. */
struct gpushare_report_cursor {
	const struct gpushare_report *r;
	size_t whole;                /* the next of r->whole */
	size_t *heap, n_heap;        /* groups by the line of their next sample */
	size_t *next;                /* each group's next sample */
	struct gpushare_report_run view;
};

/* Start at the report's first run. GPUSHARE_E_NOMEM (c then yields no run;
 * close it all the same). */
int gpushare_report_cursor_open(const struct gpushare_report *r, struct gpushare_report_cursor *c);
/* The next run; NULL after the last. */
const struct gpushare_report_run *gpushare_report_cursor_next(struct gpushare_report_cursor *c);
void gpushare_report_cursor_close(struct gpushare_report_cursor *c);

/* The shape name a run is reported under: shape itself, or for an
 * mps-split run at a set thread percentage "SHAPE (mps-split threads P%)",
 * cut to fit len (as valid UTF-8). */
void gpushare_report_shape_label(const char *shape, double thread_pct, char *out, size_t len);

/* Parse one line into run (GPUSHARE_E_INVAL with a reason as detail). Used
 * by the loader and by sweep --resume. On success release the run with
 * gpushare_report_run_release(). */
int gpushare_report_parse_line(const char *text, size_t len, struct gpushare_report_run *run);

/* Free what gpushare_report_parse_line() allocated in run (its histogram). */
void gpushare_report_run_release(struct gpushare_report_run *run);

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
/* The recommendation alone, as plain text (what a sweep prints at its end). */
int gpushare_report_write_recommendation(const struct gpushare_report *r, FILE *f);
int gpushare_report_write_csv(const struct gpushare_report *r, FILE *f);
/* The JSON summary; caller frees *text. */
int gpushare_report_json(const struct gpushare_report *r, char **text);

#ifdef __cplusplus
}
#endif
#endif
