/*
 * Inside lib/tune/: the race's decisions (tune_race.c) and the pick's
 * commands (tune_commands.c), below the driver (tune.c) that runs the
 * sweeps and reads their records. Both take only the candidates' figures,
 * so a test drives them without running a workload.
 */
#ifndef GPUSHARE_TUNE_INTERNAL_H
#define GPUSHARE_TUNE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpushare/sweep.h"
#include "gpushare/tune.h"

struct tune_ctx {
	struct gpushare_tune_config *t;
	struct gpushare_tune_result *res;
	bool probing;                     /* the probe round's sweep runs */
	int rc;                           /* an error of a selection (out of memory) */
	uint64_t probe_window_ns;         /* a probe's window */
};

/* The probes of a loaded probes file (tune's probes.jsonl): each
 * candidate's first ok probe (repeat 0), its throughput or a search's peak;
 * 0 when its records there all failed, found no rate within the bound or
 * hold no positive figure; NAN (left as it is) when it has none. Records
 * of other keys are passed over. */
struct gpushare_report;
void tune_probes_from_report(const struct gpushare_report *rep, struct gpushare_tune_result *res);

/* Candidates still racing. */
size_t tune_n_active(const struct gpushare_tune_result *res);

/* After the probes (res->cands[].probe: items/s, 0 failed, NAN not run):
 * rank them, drop those without one and those below probe_cut x the best,
 * keep the best keep_fraction (at least 2). False when out of memory. */
bool tune_screen_probes(struct tune_ctx *x);

/* The sweep's select hook of the full rounds (gpushare_sweep_select_fn, arg
 * a struct tune_ctx): after round `round` (0-based; -1 before the first)
 * take each candidate's samples of the rounds so far, drop the clearly
 * behind and keep the better half; active[] gets who goes on. True when the
 * race is over. */
bool tune_full_select(void *arg, int round, const struct gpushare_sweep_cell *cells, size_t n_cells,
		      const double *const *samples, const size_t *n_samples, bool *active);

/* The pick (res->best, probes_only, tied[]) and its comparison with every
 * other candidate. */
void tune_pick(struct gpushare_tune_result *res);

/* The pick's bench, farm, plan and exec commands (res->*_command; "" where
 * one does not apply). results_path: the full rounds' results file. */
void tune_commands(const struct gpushare_tune_config *t, const char *results_path, struct gpushare_tune_result *res);

#endif
