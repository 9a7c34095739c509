/*
 * gpushare tune: an adaptive search for the best configuration of one
 * workload (strategy x workers per GPU x batch), run by the sweep engine
 * (gpushare/sweep.h) as successive halving (docs/tune.md):
 *
 *  1. the probe round: one short run per candidate (probe_fraction of the
 *     window), recorded in DIR/probes.jsonl; a candidate whose probe is
 *     below probe_cut x the best probe is dropped (clearly behind: the cut
 *     lies far outside run-to-run noise), and of the rest only the best
 *     keep_fraction (at least 2) go on;
 *  2. full rounds: the survivors run with the full window, interleaved,
 *     recorded in DIR/results.jsonl like a sweep's. After each round, with
 *     2 runs or more a survivor significantly below the leader by the
 *     report's verdict (Welch's t test on logs, gpushare/stats.h) is
 *     dropped; then only the better half (by geometric mean) goes on (not
 *     below 2 before every one has min_runs runs), until one is left,
 *     max_repeats rounds, or the budget.
 *
 * Every decision follows from the recorded runs alone, so a resumed tune
 * takes the same ones.
 */
#ifndef GPUSHARE_TUNE_H
#define GPUSHARE_TUNE_H

#include <stdbool.h>
#include <stddef.h>

#include "gpushare/stats.h"
#include "gpushare/sweep.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSHARE_TUNE_MAX_CANDIDATES 512

/* The probes' file beside the results file. */
#define GPUSHARE_TUNE_PROBES_FILE "probes.jsonl"

/* Why a candidate left the race. */
enum gpushare_tune_drop {
	GPUSHARE_TUNE_RACING = 0,
	GPUSHARE_TUNE_DROP_NOTHING,       /* no ok run, or nothing finished in its windows */
	GPUSHARE_TUNE_DROP_PROBE_CUT,     /* its probe below probe_cut x the best probe */
	GPUSHARE_TUNE_DROP_PROBE_RANK,    /* not among the best keep_fraction of the probes */
	GPUSHARE_TUNE_DROP_CUT,           /* one full run, below probe_cut x the leader's */
	GPUSHARE_TUNE_DROP_WELCH,         /* significantly below the leader (at_drop) */
	GPUSHARE_TUNE_DROP_HALF,          /* outside the better half of a full round */
	GPUSHARE_TUNE_NOT_RUN,            /* the budget ran out before its probe */
};

/* One configuration tried. */
struct gpushare_tune_candidate {
	struct gpushare_sweep_cell cell;
	double probe;                     /* its probe's items/s (peak rate); NAN none */
	int probe_rank;                   /* 1-based among the probes; 0 none */
	struct gpushare_ci ci;            /* of its full runs (items/s, or peak rates) */
	size_t runs;                      /* full runs with a sample */
	bool active;                      /* still in the race at the end */
	enum gpushare_tune_drop why;      /* why it left (GPUSHARE_TUNE_RACING: it did not) */
	double drop_ratio;                /* its centre over the leader's when dropped; NAN */
	int dropped_round;                /* 0-based round after which it was dropped (0 the
					   * probe round, r the r-th full round); -1 not */
	int dropped_by;                   /* the leader it lost to, index; -1 */
	bool nothing;                     /* dropped: no ok run, or none finished an item
					   * (a peak search: none met the bound) */
	struct gpushare_comparison at_drop;   /* it against that leader when dropped */
	struct gpushare_comparison vs_best;   /* the pick against it at the end */
};

/* Events while the race goes on (one line each in the CLI). */
struct gpushare_tune_event {
	int round;                        /* 0 the probe round, r the r-th full round */
	int candidate;                    /* dropped; -1: a round summary */
	int leader;                       /* the leader after this round, -1 none */
	size_t active;                    /* candidates still racing */
	const struct gpushare_tune_candidate *cands;
};
typedef void (*gpushare_tune_event_fn)(void *arg, const struct gpushare_tune_event *e);

struct gpushare_tune_config {
	struct gpushare_sweep_config sweep;   /* one shape; strategies, workers, batches;
					       * max_repeats bounds the full rounds (default 6),
					       * budget_seconds, resume, bench window (the full
					       * runs'); progress (a probe: repeat -1) */
	int min_runs;                     /* full runs the last two get before one is
					   * dropped by rank (2) */
	double probe_fraction;            /* the probe's window (or requests) over the full
					   * one (0.125; at least 100 ms, 1 request) */
	double probe_cut;                 /* n = 1: dropped below this x the best (0.5) */
	double keep_fraction;             /* of the probes: the best this share go on
					   * (0.125, rounded up, at least 2) */
	char bench_extra[512];            /* options the pick's bench command also needs
					   * (" --request-us 200us --load open ..."), put
					   * before the workload; "" none */
	gpushare_tune_event_fn event;     /* may be NULL */
	void *event_arg;
};

struct gpushare_tune_result {
	struct gpushare_sweep_summary probe_sum;  /* the probe round */
	struct gpushare_sweep_summary sum;        /* the full rounds */
	bool probes_only;                 /* the budget ran out in the probe round: the pick
					   * is the best probe */
	struct gpushare_tune_candidate *cands;
	size_t n_cands;
	int best;                         /* the pick: the highest geometric mean of the
					   * candidates still racing; -1 none */
	int tied[GPUSHARE_TUNE_MAX_CANDIDATES];   /* still racing, compared, and no clear win of the pick */
	size_t n_tied;
	/* A tie: the race ended (budget, max_repeats) with the pick not told
	 * apart from n_unsettled of the tied (their vs_best underpowered); the
	 * pick is then the first of the tied, not a winner. tie_with: of those,
	 * the one that needs the most runs a side to settle; -1. */
	bool tie;
	size_t n_unsettled;
	int tie_with;
	size_t keep;                      /* how many the probes' rank let go on */
	int rounds;                       /* full rounds run (the last may be partial) */
	double probe_seconds;             /* the probe round's wall time */
	double full_seconds;              /* the full rounds' */
	char bench_command[2560];         /* gpushare bench ... to run the pick (mps-split:
					   * with its --thread-percentage) */
	char farm_command[256];           /* gpushare farm ... (mps, timeslice, mps-split at
					   * the default share, all farm runs); "" */
	/* gpushare plan DIR --for TARGET --shape ... --batch B --strategy S: the
	 * pick's configuration for a scheduler from tune's results; "" where plan
	 * has none (a mix, one worker, sequential, streams, open loop, the
	 * probes only). */
	char plan_command[GPUSHARE_PATH_MAX + 512];
	/* mpirun -np K gpushare exec ... -- CMD: a command's pick as ranks
	 * (request mode; timeslice, mps, mps-split); "" otherwise. */
	char exec_command[2560];
};

/* Defaults: the sweep's (gpushare_sweep_config_init), strategies
 * timeslice,mps,mps-split, workers 1,2,4, mps-split's thread percentages
 * 1x,2x,100 (the default share 100/N, twice it, the whole GPU; clear
 * sweep.n_thread_pcts when mps-split is not a strategy), max_repeats 6,
 * min_runs 2, probe_fraction 0.125, probe_cut 0.5, keep_fraction 0.125. */
int gpushare_tune_config_init(struct gpushare_tune_config *t);

/* Run the race, recording the full runs into results_path and the probes
 * into GPUSHARE_TUNE_PROBES_FILE beside it. res is always filled (release
 * it). Returns as gpushare_sweep_run(). */
int gpushare_tune_run(struct gpushare_tune_config *t, const char *results_path, struct gpushare_tune_result *res);
void gpushare_tune_result_release(struct gpushare_tune_result *res);

/* "probe-cut", "probe-rank", "cut", "welch", "half", "nothing", "not-run";
 * NULL racing. */
const char *gpushare_tune_drop_name(enum gpushare_tune_drop why);

/* The result as a JSON document (caller frees *out). */
/* A tie's words (res->tie): "cannot tell them apart with R runs; N more runs
 * a side would settle a difference of D%" (of tie_with's comparison with
 * the pick). Writes "" and returns false when res is no tie. */
bool gpushare_tune_tie_text(const struct gpushare_tune_result *res, char *buf, size_t len);

int gpushare_tune_json(const struct gpushare_tune_config *t, const struct gpushare_tune_result *res, char **out);

#ifdef __cplusplus
}
#endif
#endif
