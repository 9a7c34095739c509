/*
 * The experiment grid behind `gpushare sweep`: runs every cell (workload
 * shape x strategy x workers x batch) R times through gpushare_bench_run(),
 * round robin over the cells per repeat so drift over time does not favour
 * one strategy, and appends each finished run at once to a JSON Lines
 * results file (one record per line, fsync after each; the format is in
 * docs/sweep.md). An interrupted sweep is resumed from that file: recorded
 * (cell, repeat) pairs are skipped.
 *
 * Peak search: with bench.find_peak (and bench.load open) every cell runs
 * the bench search for the highest arrival rate within the bound
 * bench.slo_quantile / bench.slo_ns, starting at the one rate of rates[]
 * (or bench.rate); the record then holds the search (bench.results[0].peak)
 * and the report tabulates the peaks per strategy and worker count.
 *
 * Live metrics: with bench.metrics_listen set, the sweep serves one
 * Prometheus endpoint for all its runs (not one per run); the series of
 * each run carry the labels shape, workers, batch and repeat besides
 * strategy, workload and worker (docs/metrics.md).
 *
 * Usage:
 *   struct gpushare_sweep_config s;
 *   gpushare_sweep_config_init(&s);                  defaults (bench's, 5 repeats)
 *   gpushare_sweep_add_shape(&s, "matmul:size=4096") one per workload shape,
 *   or gpushare_sweep_set_command(&s, argv, mode)    your own program as the worker
 *   fill s.strategies / s.workers / s.batches / s.bench (window, GPU ...)
 *   rc = gpushare_sweep_run(&s, "out/results.jsonl", &summary);
 *   gpushare_sweep_config_release(&s);
 *
 * Signals: like bench, the library installs no handler; the caller's
 * SIGINT/SIGTERM handler calls gpushare_bench_interrupt(). The run in
 * progress is then stopped and not recorded, the private MPS daemon is
 * stopped, and gpushare_sweep_run() returns GPUSHARE_E_INTERRUPTED.
 */
#ifndef GPUSHARE_SWEEP_H
#define GPUSHARE_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpushare/bench.h"
#include "gpushare/workload.h"

#include "gpushare/report.h"   /* GPUSHARE_SWEEP_RECORD_VERSION: the format both read */

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSHARE_SWEEP_MAX_SHAPES 16
#define GPUSHARE_SWEEP_MAX_VALUES 32   /* entries of --workers and --batch */
#define GPUSHARE_SWEEP_RESULTS_FILE "results.jsonl"
/* Beside it: the lock a running sweep holds on its results directory. */
#define GPUSHARE_SWEEP_LOCK_FILE ".gpushare-sweep.lock"

/* One workload shape: a workload with its option values, or the command. */
struct gpushare_sweep_shape {
	char label[128];                /* "matmul:size=4096", as given;
					 * "command:ARGV..." for a command */
	struct gpushare_wl_params wl;   /* batch is set per cell; unused for a command; a mix: member 0's */
	bool command;                   /* the shape of gpushare_sweep_set_command() */
	/* A mix "A+B" (docs/bench.md, "A mix of workloads"): its members; 0 one workload. */
	struct gpushare_bench_mix_member mix[GPUSHARE_BENCH_MAX_MIX];
	int n_mix;
};

/* One cell of the grid. */
struct gpushare_sweep_cell {
	int shape;                      /* index in shapes[] */
	enum gpushare_strategy strategy;
	int workers;
	long batch;
	double rate;                    /* open loop: arrivals per second; 0 closed loop
					 * and --find-peak (the search picks its rates) */
	double thread_pct;              /* mps-split: every worker's active thread
					 * percentage; 0 the default, 100/N rounded down
					 * (at least 1), also for the other strategies.
					 * A mix: the first workload's share of the GPU,
					 * the others sharing the rest evenly */
	int n_mix;                      /* the shape is a mix of n_mix workloads; 0 not */
	char key[192];                  /* "<shape label>|<strategy>|w<workers>|b<batch>",
					 * then "|t<percentage>" for an mps-split cell with
					 * thread_pct set, "|r<rate>" under open loop,
					 * "|peak" for a --find-peak search */
};

/* One item of the thread percentage axis (--thread-percentage LIST): a
 * percentage P in (0, 100], or with times a multiple K of the default
 * share (K x 100/N, rounded down, at most 100; "1x" is the default). */
struct gpushare_sweep_tpct {
	double value;
	bool times;
};

/* Progress handed to the caller: after each finished run (run_done true)
 * and, while a run goes on, with the bench progress of that run. */
struct gpushare_sweep_progress {
	const struct gpushare_sweep_cell *cell;
	const char *shape_label;
	int repeat;                     /* 0-based */
	unsigned runs_done;             /* in this invocation (resumed runs not counted) */
	unsigned runs_planned;          /* for this invocation; grows in adaptive mode */
	unsigned runs_skipped;          /* found in the results file (--resume) */
	double elapsed_seconds;         /* since the sweep started */
	double eta_seconds;             /* -1 unknown */
	bool run_done;
	bool run_ok;                    /* run_done: recorded with status "ok" */
	double items_per_second;        /* run_done: the run's aggregate */
	const struct gpushare_bench_progress *bench;   /* !run_done: the run's progress, may be NULL;
							 * a peak search's step in bench->peak_step */
	const struct gpushare_bench_peak *peak;        /* run_done: the run's peak search; NULL when
							 * none ran (closed loop, fixed rates, failed run) */
};

typedef void (*gpushare_sweep_progress_fn)(void *arg, const struct gpushare_sweep_progress *p);

/* Racing (gpushare tune): called after each round r (0-based; every active
 * cell has had its run of that round, recorded ones included) with each
 * cell's samples by round: samples[k][i] for i < n_samples[k] (= r + 1) is
 * round i's sample (items/s of an ok run, or under --find-peak the peak
 * rate of a search that found one), NAN where the cell did not run that
 * round or its run left none (failed, partial, no rate within the bound).
 * It clears active[k] of the cells that should run no more; returns true
 * to end the sweep before the next round. It is called once before the
 * first round too, with round -1 (n_samples 0), to choose the cells that
 * run at all. Its decisions must follow from the samples (and what the
 * caller knew before the sweep) only, so a resumed sweep takes the same
 * ones: a race's failed runs are recorded runs that are not tried again. */
typedef bool (*gpushare_sweep_select_fn)(void *arg, int round, const struct gpushare_sweep_cell *cells, size_t n_cells,
					 const double *const *samples, const size_t *n_samples, bool *active);

struct gpushare_sweep_config {
	struct gpushare_sweep_shape shapes[GPUSHARE_SWEEP_MAX_SHAPES];
	size_t n_shapes;
	enum gpushare_strategy strategies[GPUSHARE_STRATEGY_COUNT];
	size_t n_strategies;
	int workers[GPUSHARE_SWEEP_MAX_VALUES];
	size_t n_workers;
	long batches[GPUSHARE_SWEEP_MAX_VALUES];
	size_t n_batches;
	/* Open loop (bench.load OPEN): the offered rates, innermost axis of the
	 * grid (a latency-vs-load curve per cell); 0 rates in closed loop. With
	 * bench.find_peak at most one: the first rate each search tries. */
	double rates[GPUSHARE_SWEEP_MAX_VALUES];
	size_t n_rates;
	/* mps-split: the active thread percentages, an axis of the grid for the
	 * mps-split cells only (the other strategies have one cell each). An
	 * item that comes to the default share of a worker count (100/N rounded
	 * down) is that default cell; items that come to the same percentage
	 * give one cell. 0 items: the default only. Given without mps-split in
	 * strategies: GPUSHARE_E_INVAL from gpushare_sweep_config_check(). */
	struct gpushare_sweep_tpct thread_pcts[GPUSHARE_SWEEP_MAX_VALUES];
	size_t n_thread_pcts;
	/* The list is "auto": a mix's cells then take the first workload's
	 * shares GPUSHARE_SWEEP_MIX_THREAD_PCTS_AUTO instead. */
	bool thread_pcts_auto;
	int repeats;                    /* fixed repeats per cell (default 5) */
	double target_noise;            /* adaptive: relative half-width of the interval of the
					 * median throughput (at >= 95% coverage), e.g. 0.02; 0 = off */
	int max_repeats;                /* adaptive: at most this many per cell (default 20) */
	bool resume;                    /* skip (cell, repeat) pairs already recorded */
	bool resume_same_grid;          /* and refuse a record of a cell outside the grid
					 * (tune: its decisions read the whole file) */
	/* Window, GPU, timeouts, worker path, command line: as for bench. The
	 * workload, workers, batch and strategies of it are set per cell;
	 * mps_pipe_dir "" means the sweep starts one private daemon for all
	 * mps and mps-split cells. command / command_mode: set through
	 * gpushare_sweep_set_command(). metrics_listen / metrics_buckets: one
	 * server for the whole sweep (metrics: a view of the caller's to use
	 * instead, left running). */
	struct gpushare_bench_config bench;
	gpushare_sweep_progress_fn progress;   /* may be NULL */
	void *progress_arg;
	/* Racing: with select set, rounds go on up to max_repeats and each
	 * round runs only the cells select() left active (repeats and
	 * target_noise are not used). NULL: the whole grid. */
	gpushare_sweep_select_fn select;
	void *select_arg;
	/* > 0: start no run when the time spent by this invocation plus the mean
	 * time of its runs so far would pass this many seconds. */
	double budget_seconds;
	/* That mean before this invocation has finished a run (0: none known):
	 * what an earlier phase (tune's probes) says a run will take. */
	double budget_run_seconds;
	/* > 0: start no run once this many runs of this invocation failed (or
	 * were partial): a sweep whose every run fails stops early. */
	unsigned halt;
	/* Several sweeps as one (gpushare_sweep_hold_new(); NULL: this sweep
	 * alone): the MPS daemon the first starts serves the next, and the
	 * workers kept warm (bench.reuse_workers) carry over. */
	struct gpushare_sweep_hold *hold;
};

/* What a sweep did. */
struct gpushare_sweep_summary {
	unsigned runs_done;             /* recorded by this invocation */
	unsigned runs_failed;           /* of those, status "failed" or "partial" */
	unsigned runs_skipped;          /* already recorded (--resume) */
	unsigned bad_lines;             /* corrupt lines seen in the results file on resume */
	bool budget_out;                /* budget_seconds stopped the sweep before select() did */
	bool halted;                    /* halt failed runs stopped the sweep */
	bool mps_daemon_started;
	char mps_pipe_dir[GPUSHARE_PATH_MAX];
};

/* Defaults: bench's window and GPU (gpushare_bench_config_init), strategies
 * timeslice,mps, workers 1,2,4, batch 1, 5 repeats, max 20, no shapes. */
int gpushare_sweep_config_init(struct gpushare_sweep_config *s);
void gpushare_sweep_config_release(struct gpushare_sweep_config *s);

/* Add a shape from "NAME[:opt=value[:opt=value]...]". GPUSHARE_E_INVAL
 * naming the bad part (unknown workload, option or value). */
int gpushare_sweep_add_shape(struct gpushare_sweep_config *s, const char *spec);

/* Command mode: every run runs argv (NULL-terminated, kept by reference;
 * executed as `gpushare bench -- CMD` does, in mode enum gpushare_cmd_mode)
 * instead of a built-in workload. Adds the one shape of the sweep, labelled
 * "command:" and the arguments joined by spaces (cut with "..." to fit).
 * GPUSHARE_E_INVAL when shapes were added already (a workload and a command
 * do not mix) or argv is empty. Whether the program can run, and that no
 * strategy is streams, is checked by gpushare_sweep_config_check(). */
int gpushare_sweep_set_command(struct gpushare_sweep_config *s, char **argv, int mode);

/* Set a workload option on every shape whose workload has it. Returns
 * GPUSHARE_E_NOT_FOUND when none has it, GPUSHARE_E_INVAL for a bad value. */
int gpushare_sweep_set_option(struct gpushare_sweep_config *s, const char *name, const char *value);

/* The thread percentages "auto" stands for: the default share 100/N, twice
 * it (at most 100) and the whole GPU (docs/tune.md says why). */
#define GPUSHARE_SWEEP_THREAD_PCTS_AUTO "1x,2x,100"

/* "auto" for a mix: the first workload's share at half, once and one and a
 * half times its even share 100/M (25, 50 and 75 for two workloads). An
 * item Kx of a mix's axis is K x 100/M for the first workload. */
#define GPUSHARE_SWEEP_MIX_THREAD_PCTS_AUTO "0.5x,1x,1.5x"

/* Set s->thread_pcts from a --thread-percentage list (as parsed below) and
 * thread_pcts_auto when it is "auto". */
int gpushare_sweep_set_thread_pcts(struct gpushare_sweep_config *s, const char *text);

/* Parse a --thread-percentage list: "25,50,100", "1x,2x,100" (K x the
 * default share 100/N), a trailing % allowed; no item twice; "auto" alone
 * is GPUSHARE_SWEEP_THREAD_PCTS_AUTO. GPUSHARE_E_INVAL naming the bad item. */
int gpushare_sweep_parse_thread_pcts(const char *s, struct gpushare_sweep_tpct *out, size_t *n);

/* The default active thread percentage of mps-split with N workers: 100/N
 * rounded down, at least 1 (what bench gives without --thread-percentage). */
double gpushare_sweep_default_thread_pct(int workers);

/* The active thread percentage every worker of cell gets: for mps-split
 * its thread_pct, or the default share; 0 for the other strategies. */
double gpushare_sweep_cell_thread_pct(const struct gpushare_sweep_cell *cell);

/* That percentage as bench's --thread-percentage takes it: "50" per worker,
 * or a mix's split "25/75" (the first workload's share, the rest even). */
const char *gpushare_sweep_cell_thread_pct_text(const struct gpushare_sweep_cell *cell, char *buf, size_t len);

/* Check the grid (non-empty lists, shapes valid with every batch) and the
 * bench settings; in command mode also gpushare_bench_command_check() (the
 * program exists and is executable, no streams strategy). GPUSHARE_E_INVAL
 * with a detail. */
int gpushare_sweep_config_check(const struct gpushare_sweep_config *s);

/* The plan (gpushare_bench_plan()) of the grid's longest run: what a run of
 * this sweep takes at least, known before any starts. */
int gpushare_sweep_plan(const struct gpushare_sweep_config *s, struct gpushare_bench_plan *longest);

/* Refuse (GPUSHARE_E_INVAL, naming the plan) a budget_seconds > 0 shorter
 * than the grid's longest run: not one run would fit, so nothing could be
 * measured. gpushare_tune_run() checks its probes' before the first; a
 * running sweep starts no run whose plan passes what is left. */
int gpushare_sweep_budget_check(const struct gpushare_sweep_config *s);

/* The cells in run order (shape, strategy, workers, batch nested in that
 * order; the round robin goes through this list once per repeat). Caller
 * frees *cells. */
int gpushare_sweep_cells(const struct gpushare_sweep_config *s, struct gpushare_sweep_cell **cells, size_t *n);

/* Run the sweep, appending to results_path (created when absent; with
 * resume it may hold records, without it must be absent or empty, else
 * GPUSHARE_E_BUSY). summary is always filled. Returns GPUSHARE_OK when
 * every planned run was attempted (failed runs are recorded with their
 * status and do not stop the sweep), GPUSHARE_E_INTERRUPTED, GPUSHARE_E_IO
 * when the results file cannot be written, GPUSHARE_E_ADDR_IN_USE when
 * bench.metrics_listen cannot be bound (before the results file is touched),
 * or the error of a setup step (no driver, MPS daemon, unsafe directory)
 * that would fail every run. */
/* What sweeps that run one after another share (tune's probe round and
 * its full rounds): the private MPS daemon, started by the first sweep
 * that needs it, and the workers kept warm between runs. _end() lets the
 * kept workers go, stops the daemon and frees h; it returns rc, or the
 * daemon's stop's error when rc is GPUSHARE_OK. */
struct gpushare_sweep_hold;
int gpushare_sweep_hold_new(struct gpushare_sweep_hold **h);
int gpushare_sweep_hold_end(struct gpushare_sweep_hold *h, int rc);

int gpushare_sweep_run(const struct gpushare_sweep_config *s, const char *results_path,
		       struct gpushare_sweep_summary *summary);

/* Build one JSON Lines record (no trailing newline; caller frees *line) of
 * a finished bench run: cell (its workload is "command" in command mode),
 * repeat, status ("ok", "partial", "failed"),
 * error (rc and message, or null), sweep metadata (cuda_driver_version:
 * 13000 for CUDA 13.0, < 0 unknown), peak_search (the search's settings
 * from r->config when it has find_peak, else null) and the bench document. */
int gpushare_sweep_record(const struct gpushare_sweep_cell *cell, const char *shape_label, int repeat,
			  const struct gpushare_bench_report *r, int rc, const char *error,
			  int cuda_driver_version, char **line);

#ifdef __cplusplus
}
#endif
#endif
