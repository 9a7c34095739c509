/*
 * The benchmark launcher behind `gpushare bench`: runs N workers
 * (gpushare-worker processes) under each sharing strategy in turn, everything
 * else equal, and collects one result per strategy. Also the result model and
 * its printers (aligned table, JSON, CSV), shared with other commands that
 * run benchmarks (the sweep).
 *
 * Usage:
 *   struct gpushare_bench_config c;
 *   gpushare_bench_config_init(&c);          defaults
 *   ... fill c (workload, workers, strategies, window ...)
 *   struct gpushare_bench_report r;
 *   rc = gpushare_bench_run(&c, &r);         always fills r with what was measured
 *   gpushare_bench_report_json(&r, &text) / _write_csv / _write_table
 *   gpushare_bench_report_release(&r);
 *
 * Signals: the library installs no handler. The caller's SIGINT/SIGTERM
 * handler calls gpushare_bench_interrupt() (async-signal-safe); the run then
 * stops its workers, stops any MPS daemon it started, keeps what was measured
 * (marked interrupted) and returns GPUSHARE_E_INTERRUPTED. Every wait of the
 * run is bounded.
 */
#ifndef GPUSHARE_BENCH_H
#define GPUSHARE_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/hist.h"
#include "gpushare/metrics.h"
#include "gpushare/stats.h"
#include "gpushare/strategy.h"
#include "gpushare/util.h"
#include "gpushare/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Workers of one run, all strategies (MPS itself allows 48 clients per GPU). */
#define GPUSHARE_BENCH_MAX_WORKERS 64
#define GPUSHARE_BENCH_MAX_GPUS 64

/* A mix: several workloads sharing the GPU in one run (`--workload A+B`,
 * docs/bench.md, "A mix of workloads"). Each member is a workload spec
 * "name[:opt=value]..." as a sweep's shape; the members' workers run side by
 * side, worker i running member i / (workers / n_mix). */
#define GPUSHARE_BENCH_MAX_MIX 4
#define GPUSHARE_BENCH_MIX_LABEL 128

struct gpushare_bench_mix_member {
	char label[GPUSHARE_BENCH_MIX_LABEL];  /* the member's spec as given */
	struct gpushare_wl_params wl;          /* its options; batch: the config's wl.batch */
};

/* Open loop (docs/bench.md, "Open-loop load"). The load kinds and the
 * dispatch of arrivals to workers are enum gpushare_load and enum
 * gpushare_dispatch of gpushare/region.h. */
enum gpushare_arrival {
	GPUSHARE_ARRIVAL_POISSON = 0,  /* exponential gaps: independent clients */
	GPUSHARE_ARRIVAL_UNIFORM = 1,  /* one every 1/rate */
};

/* "closed"/"open", "poisson"/"uniform", "shared"/"round-robin". */
const char *gpushare_load_name(int load);
const char *gpushare_arrival_name(int arrival);
const char *gpushare_dispatch_name(int dispatch);
/* Most steps of one --find-peak search per strategy. */
#define GPUSHARE_PEAK_MAX_STEPS 40
/* The longest window one step of a --find-peak search may need to offer the
 * arrivals its quantile rests on (gpushare_bench_plan() refuses a first
 * rate that needs more; the search halves no lower than that). Seconds. */
#define GPUSHARE_PEAK_STEP_MAX_SECONDS 600.0

/* Progress of a run, handed to the caller's callback about every 100 ms. */
enum gpushare_bench_phase {
	GPUSHARE_BENCH_STARTING,   /* workers initialising, waiting at the barrier */
	GPUSHARE_BENCH_WARMUP,     /* after GO, before the measurement window */
	GPUSHARE_BENCH_MEASURING,
	GPUSHARE_BENCH_STOPPING,
};

struct gpushare_bench_progress {
	enum gpushare_strategy strategy;
	enum gpushare_bench_phase phase;
	int run, n_runs;           /* sequential: which worker runs (0-based) of how many; else 0 / 1 */
	unsigned ready, n_slots;   /* slots READY (or later) of all */
	double elapsed_seconds;    /* in the current phase */
	double total_seconds;      /* the phase's length; 0 when unknown (requests mode) */
	uint64_t requests;         /* recorded so far, all slots */
	uint64_t requests_target;  /* requests mode: all slots together; 0 otherwise */
	int util_gpu_pct;          /* last NVML sample, -1 none */
	int repeat, n_repeats;     /* gpushare_bench_run_repeats(): which repeat (0-based) of
				    * how many planned; else 0 / 0 */
	double rate;               /* open loop: arrivals per second offered now; 0 closed loop */
	int peak_step;             /* --find-peak: the step running (1-based); 0 otherwise */
};

typedef void (*gpushare_bench_progress_fn)(void *arg, const struct gpushare_bench_progress *p);

/* How a command reports (docs/protocol.md). */
enum gpushare_cmd_mode {
	GPUSHARE_CMD_REQUEST = 0,  /* says ready, reports each request's latency */
	GPUSHARE_CMD_JOB = 1,      /* each run of the command to completion is one request */
};

struct gpushare_bench_config {
	struct gpushare_wl_params wl;          /* workload, its options (given[] marks
					        * those passed on) and batch; a mix: member 0's */
	/* A mix (gpushare_bench_set_workload("A+B")): n_mix >= 2 members; 0: one
	 * workload, wl. Every member's worker gets wl.batch. */
	struct gpushare_bench_mix_member mix[GPUSHARE_BENCH_MAX_MIX];
	int n_mix;
	/* mps-split of a mix: each member's share of the GPU in percent
	 * ("--thread-percentage 30/70"); each worker of a member gets its share
	 * over the member's workers, rounded down, at least 1. 0: not given. */
	double mix_share[GPUSHARE_BENCH_MAX_MIX];
	int n_mix_share;
	int workers;                           /* 1..GPUSHARE_BENCH_MAX_WORKERS */
	bool workers_given;                    /* mig: otherwise one per instance */
	enum gpushare_strategy strategies[GPUSHARE_STRATEGY_COUNT];
	size_t n_strategies;
	uint64_t duration_ns;                  /* duration mode (requests == 0) */
	uint64_t requests;                     /* requests per worker; 0: duration mode */
	uint64_t warmup_ns;                    /* after GO, not recorded; with
						* warmup_adaptive the most it lasts */
	bool warmup_adaptive;                  /* end the warm-up once the rate is stable
						* (closed loop, duration mode, built-in
						* workloads; docs/bench.md); false: fixed */
	uint64_t warmup_requests;              /* per worker, before READY */
	uint64_t start_timeout_ns;             /* start barrier bound */
	uint64_t run_timeout_ns;               /* bound of a requests-mode run */
	uint64_t grace_ns;                     /* after STOP, before SIGTERM */
	char gpu[128];                         /* NVML index or UUID as given */
	/* --gpus "all" or a list of NVML indices and UUIDs (docs/cli.md): one
	 * MPS daemon serves them all and worker i is pinned to GPU i mod G by
	 * UUID; "" the one GPU of `gpu`. */
	char gpus[512];
	char mps_pipe_dir[GPUSHARE_PATH_MAX];  /* a running daemon to use; "" = start one */
	bool account;                          /* workers load the accounting library */
	/* mps-split: one value for every worker (n == 1) or one per worker. */
	double thread_percentage[GPUSHARE_BENCH_MAX_WORKERS];
	int n_thread_percentage;               /* 0: 100/N (at least 1) */
	uint64_t mem_limit_bytes[GPUSHARE_BENCH_MAX_WORKERS];
	int n_mem_limit;                       /* 0: none */
	int priority[GPUSHARE_BENCH_MAX_WORKERS];
	int n_priority;                        /* 0: leave unset */
	bool ceiling;                          /* also run batch x N in one process */
	char worker_path[GPUSHARE_PATH_MAX];   /* "" = $GPUSHARE_WORKER, else next to /proc/self/exe */
	/* Command mode (`gpushare bench -- CMD`, lib/bench/bench_cmd.c): each worker
	 * runs this program instead of gpushare-worker; the workload fields are
	 * then unused. Job mode: `requests` is the jobs per worker (--jobs K),
	 * else jobs run back to back for `duration_ns`. */
	char **command;                        /* NULL-terminated argv; NULL: built-in workload */
	enum gpushare_cmd_mode command_mode;
	/* Request mode: start the command once and fork each run's workers
	 * from it at its first call of the gpushare Python client (docs/bench.md,
	 * "Preloading a Python worker"). Kept across the runs of this process
	 * until gpushare_bench_preload_release(). */
	bool preload;
	/* With preload: a worker may be kept warm between runs (parked at the
	 * fork server at the end of its run, handed the next run of the same
	 * environment instead of a fresh fork; docs/protocol.md, "Preloading").
	 * gpushare tune sets it; gpushare_bench_preload_drop() lets them go. */
	bool reuse_workers;
	int argc;                              /* the command line, for the report */
	char **argv;
	gpushare_bench_progress_fn progress;   /* may be NULL */
	void *progress_arg;
	/* Live Prometheus metrics (docs/metrics.md): "[ADDR:]PORT", "" off. */
	char metrics_listen[GPUSHARE_METRICS_ADDR_MAX];
	double metrics_buckets[GPUSHARE_METRICS_MAX_BUCKETS]; /* le in seconds, ascending */
	size_t n_metrics_buckets;              /* 0: the default ladder */
	/* A live view owned by the caller (the sweep: one server for all its
	 * runs, gpushare_metrics_bench_start()); the run attaches its regions
	 * to it and leaves it running. NULL: the run serves metrics_listen
	 * itself. */
	struct gpushare_metrics_bench *metrics;
	/* Open loop: gpushare schedules arrivals at `rate` per second (all
	 * workers together) and hands each to a worker; latency counts from
	 * the scheduled arrival. Duration mode only. */
	enum gpushare_load load;               /* CLOSED by default */
	double rate;                           /* arrivals per second; find-peak: the first rate tried */
	enum gpushare_arrival arrival;
	uint64_t seed;                         /* of the Poisson schedule */
	enum gpushare_dispatch dispatch;
	uint64_t drain_ns;                     /* after the window: serve what is queued; 0 = default */
	/* --find-peak: the highest rate per strategy whose quantile slo_quantile
	 * of latency is at most slo_ns, to a relative resolution. */
	bool find_peak;
	double slo_quantile;                   /* 0.99 */
	uint64_t slo_ns;
	double resolution;                     /* 0.05: stop when fail / pass <= 1.05 */
	unsigned tail_samples;                 /* requests beyond the quantile per step (100) */
	double rate_max;                       /* bracketing never goes above (1e7) */
	uint64_t peak_deadline_ns;             /* > 0: after its first step a search starts no
						* step whose plan ends past this gpushare_now_ns()
						* (a sweep's or tune's budget); 0 none */
};

/* "request", "job". */
const char *gpushare_cmd_mode_name(int mode);

/* The workload of the run: "name", "name:opt=value:..." or a mix of 2 to
 * GPUSHARE_BENCH_MAX_MIX such specs joined by '+'. Sets wl (a mix: member
 * 0) and mix/n_mix; options given later with gpushare_bench_set_wl_option()
 * apply to every member that has them. GPUSHARE_E_INVAL naming the problem. */
int gpushare_bench_set_workload(struct gpushare_bench_config *c, const char *spec);

/* Parse "A+B..." (or one spec) into m[0..*n): GPUSHARE_E_INVAL naming the
 * problem. */
int gpushare_bench_parse_mix(const char *spec, struct gpushare_bench_mix_member *m, int *n);

/* The members of a mix in a workload or shape label ("A+B": 2; "A" and a
 * sweep's "command:..." shape: 1). */
int gpushare_bench_mix_count(const char *label);

/* A split given by the first member's share: the others share the rest
 * evenly (rounded down, at least 1 each). out: n_mix values. */
void gpushare_bench_mix_shares(int n_mix, double first, double *out);

/* That split as text, "25/75" or "50/25/25". */
const char *gpushare_bench_mix_split_text(int n_mix, double first, char *buf, size_t size);

/* Parse one spec "name[:opt=value]..." into p (defaults for the rest).
 * GPUSHARE_E_INVAL naming the unknown workload, option or bad value. */
int gpushare_bench_parse_workload_spec(const char *spec, struct gpushare_wl_params *p);

/* Set a workload option on the workload, or on every member of a mix that
 * has it. GPUSHARE_E_NOT_FOUND when none has it; GPUSHARE_E_INVAL for a bad
 * value, or one the member's spec already gives. */
int gpushare_bench_set_wl_option(struct gpushare_bench_config *c, const char *name, const char *value);

/* The workload label: the mix's "A+B" or the workload's name. */
const char *gpushare_bench_workload_label(const struct gpushare_bench_config *c, char *buf, size_t size);

/* Which member of the mix worker i runs (0 when no mix). */
int gpushare_bench_mix_member_of(int n_mix, int workers, int i);

/* mps-split's thread percentage of each of the `workers` workers from the
 * mix's shares (n_mix_share > 0): share / the member's workers, rounded
 * down, at least 1. */
void gpushare_bench_mix_thread_percentages(const struct gpushare_bench_config *c, double *out);

/* Parse "30/70": one share per member of a mix, each in (0, 100].
 * GPUSHARE_E_INVAL naming the item or the count. */
int gpushare_bench_parse_mix_shares(const char *s, int n_mix, double *out, int *n);

/* Command mode only (OK otherwise): the command can be executed (PATH is
 * searched; never a shell) and every strategy applies (`streams` does not).
 * GPUSHARE_E_INVAL with a detail. */
int gpushare_bench_command_check(const struct gpushare_bench_config *c);

/* Defaults: matmul, 4 workers, timeslice,mps, 10 s window, 2 s warm-up,
 * 3 warm-up requests, GPU 0, start timeout 120 s, run timeout 1 h, grace 5 s;
 * closed loop (open loop: Poisson arrivals, seed 1, shared dispatch,
 * find-peak resolution 5%, 100 tail samples, rate at most 1e7/s). */
int gpushare_bench_config_init(struct gpushare_bench_config *c);

/* Check the configuration as a whole (mode, list lengths against workers).
 * GPUSHARE_E_INVAL with a detail naming the option. */
int gpushare_bench_config_check(const struct gpushare_bench_config *c);

/* What one run of a configuration takes, known before it starts (seconds):
 * what bench checks against the step limit, and sweep and tune against a
 * budget. A run counted in requests has no planned window (0): its length
 * is the workload's. A peak search's window is its first step's: at least
 * the one asked for, longer when the rate offers too few arrivals for its
 * quantile in it; later steps are as long or shorter, up to
 * GPUSHARE_PEAK_MAX_STEPS of them. */
struct gpushare_bench_plan {
	double warmup_seconds;         /* the most the warm-up lasts (duration mode) */
	double window_seconds;         /* the measurement window (a search: its first step's) */
	double drain_seconds;          /* open loop: serving the backlog after the window */
	double step_need_seconds;      /* a search: the window its first rate needs for its arrivals */
	double run_seconds;            /* one strategy: warm-up + window + drain */
	double total_seconds;          /* every strategy of the run at run_seconds */
};

/* Fill *plan from c. GPUSHARE_E_INVAL, naming the numbers, when the first
 * step of a peak search needs more than GPUSHARE_PEAK_STEP_MAX_SECONDS (a
 * high quantile at a low first rate). */
int gpushare_bench_plan(const struct gpushare_bench_config *c, struct gpushare_bench_plan *plan);

/* The percentile of a quantile as an option writes it, to as many digits as
 * it has ("p99", "p99.9", "p99.999999"; never rounded up to "p100"). */
const char *gpushare_fmt_percentile(double quantile, char *buf, size_t len);

/* The open-loop part of that check (also used by sweep): --rate, duration
 * mode, request-mode commands, --find-peak's --slo. */
int gpushare_bench_open_check(const struct gpushare_bench_config *c);

/* ---- results ---- */

struct gpushare_bench_worker {
	int index;                     /* slot index, 0-based; "worker <index>" */
	int process;                   /* which process ran it (streams: all 0) */
	pid_t pid;
	uint64_t items_per_request;    /* batch */
	double flops_per_request;      /* 0 when not meaningful */
	uint64_t requests, items, errors, total_requests;
	double window_seconds;         /* the span its throughput is computed over */
	double requests_per_second, items_per_second;
	double mean_seconds, stddev_seconds, min_seconds, p50_seconds, p90_seconds,
	       p99_seconds, p999_seconds, max_seconds;
	/* Limits in effect, as the worker read them back. */
	int sm_count;                  /* GPUSHARE_UNKNOWN when unknown */
	int device;
	uint64_t mem_free_bytes, mem_total_bytes;
	double thread_percentage_seen; /* -1 none */
	char mem_limit_seen[64];       /* "" none */
	char device_name[96];
	/* What gpushare asked for (mps-split), -1 / 0 when not set. */
	double thread_percentage_set;
	uint64_t mem_limit_set_bytes;
	int priority_set;
	char visible_devices[128];     /* CUDA_VISIBLE_DEVICES given, "" none */
	/* How it ended. */
	enum gpushare_slot_state state; /* last seen */
	bool failed;
	int exit_code;                 /* -1 when killed by a signal or never reaped */
	int signal;                    /* 0 when none */
	enum gpushare_error error_code; /* reported by the worker */
	int cuda_error;
	char message[256];
	struct gpushare_hist hist;
	/* Open loop. */
	uint64_t completed_in_window;  /* requests that ended inside the window */
	struct gpushare_hist queue_hist, service_hist;
};

/* One run under open-loop load, all workers of a strategy together. */
struct gpushare_bench_openloop {
	bool on;                       /* the result was measured under open loop */
	double rate;                   /* asked for, per second */
	uint64_t offered;              /* arrivals scheduled inside the window */
	uint64_t completed;            /* requests that ended inside the window */
	double offered_rate, achieved_rate; /* per second of window */
	uint64_t queued_at_end;        /* waiting when the window closed (not yet started) */
	uint64_t unfinished;           /* offered, but not served when the run stopped */
	uint64_t queue_max;            /* deepest queue seen by the dispatcher */
	uint64_t ring_full;            /* arrivals that waited for room in a full queue */
	double dispatch_seconds;       /* the dispatcher's running time ... */
	double dispatch_spin_seconds;  /* ... of it spinning before arrivals (a core was free), not sleeping */
	double dispatch_slice_seconds; /* the scheduler slice its thread got (openloop_wait.c); 0 the default */
	double drain_seconds;          /* how long the backlog was served after the window */
	/* Latency parts, seconds: queueing (scheduled arrival to start of
	 * service) and service; lateness: dispatcher hand-over behind schedule. */
	double queue_p50_seconds, queue_p99_seconds, queue_max_seconds;
	double service_p50_seconds, service_p99_seconds, service_max_seconds;
	double lateness_p50_seconds, lateness_p99_seconds, lateness_p999_seconds, lateness_max_seconds;
	struct gpushare_hist queue_hist, service_hist, lateness;
};

/* One step of a --find-peak search. */
struct gpushare_peak_step {
	double rate;                   /* offered, asked for */
	bool pass;
	double quantile_seconds;       /* the bound's quantile, unfinished requests counted as longer;
					* -1 when it falls among them */
	double achieved_rate;
	uint64_t offered, unfinished;
	bool failed_run;               /* a worker failed: counted as a miss */
};

struct gpushare_bench_peak {
	bool searched;
	bool found;                    /* a passing rate is known */
	double rate;                   /* highest rate that met the bound (0: none) */
	double upper;                  /* lowest rate that missed it (0: none found) */
	uint64_t min_requests;         /* per step, the rule's minimum */
	int repeated;                  /* steps run again: gpushare's own hand-over was late
					* (p99 above a tenth of the bound) */
	int n_steps;
	struct gpushare_peak_step steps[GPUSHARE_PEAK_MAX_STEPS];
	char note[160];                /* how the search ended, "" when bracketed */
};

struct gpushare_bench_telemetry {
	unsigned samples;              /* 0: no NVML samples */
	double util_mean_pct, util_max_pct;     /* -1 unknown */
	uint64_t mem_used_max_bytes;   /* 0 unknown */
	double sm_clock_mean_mhz;      /* -1 unknown */
	double throttled_fraction;     /* of samples; -1 unknown */
	double power_mean_watts;       /* -1 unknown */
	/* Accumulators (gpushare_bench_telemetry_add). */
	unsigned n_util, n_clock, n_power;
	unsigned n_throttled;
	double sum_util, sum_clock, sum_power_w;
};

/* How a strategy's run ended. Only OK results carry figures: a FAILED or
 * SKIPPED one prints as null (JSON), empty fields (CSV) and "failed" /
 * "skipped" (table), and is left out of every summary and comparison. */
enum gpushare_result_status {
	GPUSHARE_RESULT_OK = 0,        /* ran and finished */
	GPUSHARE_RESULT_FAILED,        /* did not start, or did not finish (partial, interrupted) */
	GPUSHARE_RESULT_SKIPPED,       /* not run; `failure` says why */
};

/* "ok", "failed", "skipped". */
const char *gpushare_result_status_name(int status);

struct gpushare_bench_result {
	enum gpushare_strategy strategy;
	enum gpushare_result_status status; /* (gpushare_bench_report_settle) */
	int repeat;                    /* 0-based repeat (gpushare_bench_run_repeats); else 0 */
	bool partial;                  /* a worker failed mid-run; the rest was stopped */
	bool interrupted;              /* SIGINT/SIGTERM */
	int failed_worker;             /* slot index, -1 none */
	/* The blast radius: the other workers that failed with the same CUDA
	 * error as failed_worker (under MPS a fatal GPU fault, error 700, is
	 * reported to every client of the GPU); 0 none */
	int failed_with;
	char failure[512];             /* one line, "" none; FAILED / SKIPPED: the reason */
	char mps_pipe_dir[GPUSHARE_PATH_MAX]; /* daemon used, "" none */
	bool mps_daemon_started;
	unsigned stragglers;           /* processes left in workers' process groups, killed */
	size_t n_workers;
	struct gpushare_bench_worker *workers;
	/* Aggregate (gpushare_bench_result_compute). */
	uint64_t requests, items, errors;
	double window_seconds;         /* sequential: sum of windows; else the longest */
	double warmup_seconds;         /* the warm-up it had (the last run's, sequential) */
	double requests_per_second, items_per_second;
	double mean_seconds, stddev_seconds, p50_seconds, p90_seconds, p99_seconds,
	       p999_seconds, max_seconds;
	double fairness;               /* min/max worker throughput, 0..1 */
	double efficiency;             /* E_N = items/s / ceiling items/s; -1 none */
	double tflops;                 /* -1 when the workload has no FLOP count */
	struct gpushare_bench_telemetry telemetry;
	struct gpushare_hist hist;     /* all workers merged */
	struct gpushare_bench_openloop open; /* open loop; open.on false otherwise */
	struct gpushare_bench_peak peak;     /* --find-peak: the search (the rest is its best step) */
	/* A mix: per member, its workers together; score is the geometric mean
	 * of the members' items/s (gpushare_bench_result_score). Set n_mix
	 * before gpushare_bench_result_compute(). */
	int n_mix;
	struct gpushare_bench_mix_result {
		uint64_t requests, items;
		double items_per_second, requests_per_second, p50_seconds, p99_seconds;
		double fairness;               /* min/max worker throughput within the member */
		double thread_percentage_set;  /* the member's share of the GPU asked for; -1 none */
	} mix[GPUSHARE_BENCH_MAX_MIX];
	double mix_score;
};

/* The figure a run is compared by: items/s, or for a mix the geometric
 * mean of its members' items/s (0 when one of them did nothing). */
double gpushare_bench_result_score(const struct gpushare_bench_result *res);

/* The spread of one strategy over the repeats of gpushare_bench_run_repeats(),
 * over its OK runs only. */
struct gpushare_bench_summary {
	enum gpushare_strategy strategy;
	size_t n_runs, n_ok;           /* runs made, runs with status OK */
	int status;                    /* OK when at least one run is OK, else FAILED or SKIPPED */
	char reason[512];              /* no OK run: the last run's reason */
	struct gpushare_sample_stats items_per_second, requests_per_second, mean_seconds, p50_seconds,
		p90_seconds, p99_seconds, p999_seconds, fairness, efficiency;
};

/* How two strategies' summaries compare (a against the reference b):
 * throughput (medians of items/s) and p99 latency. */
struct gpushare_bench_relative {
	enum gpushare_strategy strategy, reference;
	double ratio_mean, ratio_stddev;  /* mean items/s ratio and its propagated
					   * standard deviation (hyperfine's); stddev NaN < 2 runs */
	struct gpushare_comparison throughput, p99;
};

struct gpushare_bench_report {
	char version[32];
	char date[32];                 /* ISO-8601 UTC */
	char host[256];
	int gpu_index;                 /* GPUSHARE_UNKNOWN when unknown */
	char gpu_name[96], gpu_uuid[96], driver_version[80];
	/* --gpus: the GPUs the workers were placed on, in order (0: --gpu). */
	size_t n_gpus;
	int gpu_indices[GPUSHARE_BENCH_MAX_GPUS];
	char gpu_uuids[GPUSHARE_BENCH_MAX_GPUS][96];
	const struct gpushare_bench_config *config;
	struct gpushare_bench_result *results;   /* in the order run */
	size_t n_results;
	struct gpushare_bench_result *ceiling;   /* NULL unless config->ceiling (with
						  * repeats: the first repeat's) */
	bool partial, interrupted;
	bool preloaded;                /* config->preload and the workers were forked from the
					* preloaded command (false: it could not be, they started as usual) */
	/* gpushare_bench_run_repeats(): results[] holds every run, in the order
	 * run (repeat 0 of each strategy, then repeat 1 ...), and summary[] one
	 * entry per configured strategy. repeats 0: a single gpushare_bench_run(). */
	int repeats;
	struct gpushare_bench_summary *summary;
	size_t n_summary;
};

/* Run every configured strategy. r is always filled (release it), holding
 * the strategies measured so far. Returns GPUSHARE_OK when every strategy ran
 * (r->partial tells whether a worker failed mid-run), GPUSHARE_E_INTERRUPTED,
 * GPUSHARE_E_WORKER / GPUSHARE_E_MPS_MAX_CLIENTS when a worker failed to
 * start, or the error of a setup step (MPS daemon, MIG, no driver). */
int gpushare_bench_run(const struct gpushare_bench_config *c, struct gpushare_bench_report *r);

/* After gpushare_bench_run() returned rc: give every result its status.
 * A result with a failure, partial or interrupted is FAILED; when rc is an
 * error (not GPUSHARE_E_INTERRUPTED) the last result (the strategy that was
 * being set up) is FAILED with the error's detail as its reason, and each
 * configured strategy that has no result gets a SKIPPED one ("not run: ...").
 * Results already marked SKIPPED keep their reason. Call before another
 * library call replaces gpushare_errdetail(). Returns GPUSHARE_E_NOMEM or OK. */
int gpushare_bench_report_settle(struct gpushare_bench_report *r, int rc);

/* Repeated runs (`gpushare bench --repeats K`). */
struct gpushare_bench_repeat_opts {
	int repeats;                   /* K >= 1 */
	double target_noise;           /* > 0: after K, repeat while some strategy's
					* median items/s is not known to +-target_noise
					* at >= 95% coverage (so at least 6 runs) */
	int max_repeats;               /* bound of target_noise (>= repeats) */
};

/* Run every configured strategy K times, interleaved: repeat 0 of all
 * strategies in order, then repeat 1, ... (one gpushare_bench_run() per
 * repeat), settle each run, gather every result into r (with its repeat)
 * and summarise (gpushare_bench_summarise). A run error that would repeat
 * (no driver, MPS, a directory) or an interrupt ends the repeats; a worker
 * failure does not. Returns the first error, as gpushare_bench_run() does. */
int gpushare_bench_run_repeats(const struct gpushare_bench_config *c, const struct gpushare_bench_repeat_opts *o,
			       struct gpushare_bench_report *r);

/* Fill r->summary from r->results: one entry per configured strategy (per
 * strategy met in results when r has no config). */
int gpushare_bench_summarise(struct gpushare_bench_report *r);

/* The comparison of summary a with summary b (same report). */
void gpushare_bench_relative(const struct gpushare_bench_summary *a, const struct gpushare_bench_summary *b,
			     struct gpushare_bench_relative *out);

/* The reference of the relative summary: timeslice when it has an OK run,
 * else the first strategy with one; -1 none. Index into r->summary. */
int gpushare_bench_reference(const struct gpushare_bench_report *r);

/* Stop the preloaded command (config.preload) and forget it; runs after
 * this start it again. Call once the runs are over; gpushare's exit ends it
 * too. */
void gpushare_bench_preload_release(void);

/* Let the workers parked at the preloaded command (config.reuse_workers)
 * go, and wait until they have ended (their CUDA contexts gone, as before
 * an MPS daemon stops). Nothing when there are none. */
void gpushare_bench_preload_drop(void);

/* Async-signal-safe: ask a running gpushare_bench_run() to stop. */
void gpushare_bench_interrupt(void);
bool gpushare_bench_interrupted(void);

void gpushare_bench_report_init(struct gpushare_bench_report *r, const struct gpushare_bench_config *c);
void gpushare_bench_report_release(struct gpushare_bench_report *r);

/* Allocate a result with n workers (hists empty, fields unknown). */
int gpushare_bench_result_init(struct gpushare_bench_result *res, enum gpushare_strategy strategy, size_t n);
void gpushare_bench_result_release(struct gpushare_bench_result *res);

/* Fill per-worker statistics from each worker's hist, requests and
 * window_seconds, then the aggregate; ceiling_items_per_second > 0 sets
 * efficiency. */
void gpushare_bench_result_compute(struct gpushare_bench_result *res, double ceiling_items_per_second);

/* Account one NVML sample / finish the means. */
struct gpushare_gpu_sample;
void gpushare_bench_telemetry_init(struct gpushare_bench_telemetry *t);
void gpushare_bench_telemetry_add(struct gpushare_bench_telemetry *t, const struct gpushare_gpu_sample *s);
void gpushare_bench_telemetry_finish(struct gpushare_bench_telemetry *t);

/* ---- output ---- */

/* The JSON document (see docs/bench-schema.json); caller frees *text. */
int gpushare_bench_report_json(const struct gpushare_bench_report *r, char **text);

/* One row per strategy x worker plus one "aggregate" row per strategy,
 * after a header line. */
int gpushare_bench_write_csv(const struct gpushare_bench_report *r, FILE *f);

/* An aligned table, one row per strategy (with repeats: the means over its
 * OK runs, then its spread: mean +- sd, min...max, the median and its
 * interval), then the relative summary; verbose adds a line per worker (and
 * per repeat). Failed and skipped strategies have blank figures. */
int gpushare_bench_write_table(const struct gpushare_bench_report *r, FILE *f, bool verbose);

/* The relative summary alone, one line per strategy against the reference
 * (gpushare_bench_reference): "mps: 17.5 ± 0.3 times the throughput of
 * timeslice, p99 50.0 us vs 430 us (higher at 98.4% confidence)"; "tie"
 * when the intervals overlap, no verdict without intervals. */
int gpushare_bench_write_relative(const struct gpushare_bench_report *r, FILE *f);

/* gpushare_write_file_atomic() and gpushare_check_writable(): see
 * gpushare/files.h. */

/* ---- the live view of a benchmark (Prometheus, gpushare/metrics.h) ---- */

/*
 * Usage (a benchmark; lib/bench/bench_run.c does this):
 *   gpushare_metrics_bench_start(config, &m);   NULL when --metrics-listen is off
 *   per region: gpushare_metrics_bench_attach(m, ...) after creating it,
 *               gpushare_metrics_bench_detach(m) before unmapping it;
 *   gpushare_metrics_bench_stop(m).
 * All bench functions accept m == NULL and then do nothing.
 *
 * Usage (several runs, one server; lib/sweep/sweep.c does this):
 *   gpushare_metrics_bench_start(config listing every strategy, &m);
 *   per run: gpushare_metrics_bench_set_run(m, workload, labels, n);
 *            run.metrics = m; gpushare_bench_run(&run, ...);
 *   gpushare_metrics_bench_stop(m).
 */

struct gpushare_metrics_bench;

/* Start serving config->metrics_listen (off when ""; *out = NULL). */
int gpushare_metrics_bench_start(const struct gpushare_bench_config *c, struct gpushare_metrics_bench **out);

/* A region of strategy `strategy` is live: slot i is worker offset + i.
 * mps_pipe_dir: the daemon its workers use, "" or NULL none. The region must
 * stay mapped until gpushare_metrics_bench_detach(). */
void gpushare_metrics_bench_attach(struct gpushare_metrics_bench *m, enum gpushare_strategy strategy,
				   struct gpushare_region_header *reg, uint32_t n_slots, size_t offset,
				   const char *mps_pipe_dir);

/* Keep the region's final values (its series stay in the exposition until
 * the server stops) and forget the region. Waits for a scrape that is
 * reading it; never touches the workers. */
void gpushare_metrics_bench_detach(struct gpushare_metrics_bench *m);

/* Run labels: a view that serves several runs (a sweep) labels the series
 * of each run so Prometheus tells the runs apart. The labels set here (at
 * most GPUSHARE_METRICS_MAX_RUN_LABELS, after strategy, workload and
 * worker) and the workload label's value (NULL or "": unchanged; at
 * first the config's) apply to the regions attached from now on; a
 * region's series keep the labels they were attached with. Names: [a-zA-Z_][a-zA-Z0-9_]*, shorter than
 * GPUSHARE_METRICS_RUN_LABEL_NAME_MAX, unique, none of strategy, workload,
 * worker, le, phase; keep them the same from run to run. Values are copied
 * (cut at GPUSHARE_METRICS_RUN_LABEL_VALUE_MAX - 1 bytes). GPUSHARE_E_INVAL
 * for a bad name or too many labels. m == NULL: nothing. */
#define GPUSHARE_METRICS_MAX_RUN_LABELS 4
#define GPUSHARE_METRICS_RUN_LABEL_NAME_MAX 32
#define GPUSHARE_METRICS_RUN_LABEL_VALUE_MAX 192
int gpushare_metrics_bench_set_run(struct gpushare_metrics_bench *m, const char *workload,
				   const struct gpushare_metrics_label *labels, size_t n_labels);

/* The exposition of the live view (for tests and --once style callers). */
int gpushare_metrics_bench_render(struct gpushare_metrics_bench *m, char **text, size_t *len);

void gpushare_metrics_bench_stop(struct gpushare_metrics_bench *m);

#ifdef __cplusplus
}
#endif
#endif
