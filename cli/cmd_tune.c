/*
 * gpushare tune: find the best configuration of one workload (strategy x
 * workers per GPU x batch) by a race run through the sweep engine
 * (gpushare/tune.h): short probes, two runs each, then repeats only for
 * the candidates still open; those clearly behind the leader are dropped.
 * Runs are recorded in OUT/results.jsonl as a sweep's (gpushare report
 * reads them; --resume continues). Written the way cmd_sweep.c is.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "gpushare/bench.h"
#include "gpushare/format.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/sweep.h"
#include "gpushare/tune.h"
#include "gpushare/util.h"
#include "gpushare/workload.h"

#define MAX_WL_OPTS (GPUSHARE_WL_MAX_OPTS * 4)   /* a mix: each workload's */

/* Where tune's options go (cli_parse_options()). */
struct tune_args {
	struct cli_sweep_args sw;         /* first: the shared options' place; sw.s = &t.sweep */
	struct gpushare_tune_config t;
	const char *workload, *out, *slo_text;
	bool quiet, json, no_report, fresh_workers;
	char open_extra[256];             /* the open-loop options the pick's bench command needs too */
};

#define AT(field) CLI_AT(struct tune_args, field)

/* --workload: one shape. */
static int set_workload(struct cli_parse *p, void *args)
{
	if (!*p->arg || strchr(p->arg, ','))
		return cli_error(EXIT_USAGE, "tune: invalid --workload '%s': one shape NAME[:opt=value...]", p->arg);
	((struct tune_args *)args)->workload = p->arg;
	return EXIT_OK;
}

static int set_budget(struct cli_parse *p, void *args)
{
	uint64_t ns;

	if (gpushare_parse_duration(p->arg, &ns) || ns == 0)
		return cli_error(EXIT_USAGE, "tune: invalid --budget '%s' (expected a duration, e.g. 10m)", p->arg);
	((struct tune_args *)args)->t.sweep.budget_seconds = (double)ns / 1e9;
	return EXIT_OK;
}

/* --rate R: the one rate each peak search starts at. */
static int set_rate(struct cli_parse *p, void *args)
{
	struct gpushare_sweep_config *s = &((struct tune_args *)args)->t.sweep;

	return cli_openloop_rate_list("tune", p->arg, s->rates, 1, &s->n_rates);
}

#define AXIS .to = CLI_TO_CALL, .call = cli_sweep_axis_call

static const struct cli_opt tune_opts[] = {
	{ .id = OPT_OUT, .long_name = "out", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "results and report directory (created when absent)", .to = CLI_TO_STR, AT(out) },
	{ .id = OPT_WORKLOAD, .long_name = "workload", .kind = CLI_STRING, .value_name = "SHAPE",
	  .help = "one shape NAME[:opt=value[:opt=value]...]", .def = "matmul", .values = "@workloads",
	  .to = CLI_TO_CALL, .call = set_workload },
	{ .id = OPT_WORKERS, .long_name = "workers", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "workers per GPU", .def = "1,2,4", AXIS },
	{ .id = OPT_BATCH, .long_name = "batch", .kind = CLI_LIST, .value_name = "LIST", .help = "batch sizes",
	  .def = "1", AXIS },
	{ .id = OPT_THREAD_PCT, .long_name = "thread-percentage", .kind = CLI_STRING, .value_name = "auto|LIST",
	  .help = "mps-split's candidates: active thread percentages per worker, e.g. 25,50,100, or Kx = K x 100/N; "
	  "auto: 1x,2x,100 (the default share, twice it, the whole GPU)", .def = "auto", AXIS },
	{ .id = CLI_OPT_MAX_REPEATS, .long_name = "max-repeats", .kind = CLI_INT, .value_name = "M",
	  .help = "full runs a candidate gets at most", .def = "6", .min = 2, .max = 10000,
	  .to = CLI_TO_INT, AT(t.sweep.max_repeats) },
	{ .id = OPT_BUDGET, .long_name = "budget", .kind = CLI_DURATION, .value_name = "TIME",
	  .help = "start no run past TIME (e.g. 10m) of this invocation; the pick is then the leader so far, and says so",
	  .to = CLI_TO_CALL, .call = set_budget },
	{ .id = OPT_RESUME, .long_name = "resume", .kind = CLI_FLAG,
	  .help = "continue the tune recorded in DIR with its recorded options; recorded runs are not run again",
	  .to = CLI_TO_TRUE, AT(t.sweep.resume) },
	{ .id = OPT_JSON, .long_name = "json", .kind = CLI_FLAG, .help = "print the result as JSON on stdout",
	  .to = CLI_TO_TRUE, AT(json) },
	{ .id = OPT_NO_REPORT, .long_name = "no-report", .kind = CLI_FLAG, .help = "do not write the report at the end",
	  .to = CLI_TO_TRUE, AT(no_report) },
	{ .id = OPT_FRESH_WORKERS, .long_name = "fresh-workers", .kind = CLI_FLAG,
	  .help = "with --preload: fork every run's workers afresh, not keep them warm from one run to the next",
	  .to = CLI_TO_TRUE, AT(fresh_workers) },
	{ .id = 'q', .short_name = 'q', .long_name = "quiet", .kind = CLI_FLAG, .help = "no progress on stderr",
	  .to = CLI_TO_TRUE, AT(quiet) },
};

/* bench's per-run options less --gpus (a tune runs on one GPU); the
 * strategy and duration defaults are tune's. */
static const struct cli_opt tune_run_opts[] = {
	{ .id = CLI_OPT_STRATEGY, .long_name = "strategy", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "the candidates' strategies: comma list of timeslice, mps, mps-split, mig, sequential, streams",
	  .def = "timeslice,mps,mps-split", .values = "timeslice mps mps-split mig sequential streams",
	  CLI_RUN },
	{ .id = CLI_OPT_DURATION, .long_name = "duration", .kind = CLI_DURATION, .value_name = "D",
	  .help = "a full run's measurement window (each probe has an eighth, at least 100ms)", .def = "500ms",
	  CLI_RUN },
	{ .id = CLI_OPT_REQUESTS, .long_name = "requests", .kind = CLI_INT, .value_name = "R",
	  .help = "instead of a window: R recorded requests per worker", .min = 1, .max = 1000000000000L,
	  CLI_RUN },
	{ .id = CLI_OPT_WARMUP, .long_name = "warmup", .kind = CLI_DURATION, .value_name = "D",
	  .help = "window after the start barrier, not recorded (default: until the rate is stable, at most 2s)",
	  CLI_RUN },
	{ .id = CLI_OPT_WARMUP_REQUESTS, .long_name = "warmup-requests", .kind = CLI_INT, .value_name = "W",
	  .help = "requests per worker before it reports ready", .def = "3", .max = 1000000000L, CLI_RUN },
	{ .id = CLI_OPT_START_TIMEOUT, .long_name = "start-timeout", .kind = CLI_DURATION, .value_name = "D",
	  .help = "bound of the start barrier", .def = "120s", CLI_RUN },
	{ .id = CLI_OPT_GPU, .long_name = "gpu", .kind = CLI_STRING, .value_name = "IDX|UUID", .help = "GPU to use",
	  .def = "0", CLI_RUN },
	{ .id = CLI_OPT_MPS_PIPE_DIR, .long_name = "mps-pipe-dir", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "use the MPS daemon running there (left running)", CLI_RUN },
};

static const struct cli_opt tune_rate_opt[] = {
	{ .id = CLI_OPEN_RATE, .long_name = "rate", .kind = CLI_NUMBER, .value_name = "R",
	  .help = "with --slo: the rate per second where each run's peak search starts",
	  .to = CLI_TO_CALL, .call = set_rate },
};

static const struct cli_group tune_groups[] = {
	CLI_GROUP("Options", tune_opts, NULL),
	CLI_GROUP("Per run, as for gpushare bench", tune_run_opts, NULL),
	{ "Your own program as the worker (after '--')", cli_program_opts, CLI_N_PROGRAM_OPTS,
	  "  (each --batch value reaches it as GPUSHARE_BATCH)" },
	{ "Goal: the highest open-loop rate within a bound (--slo pNN=D --rate R)", cli_peak_opts, CLI_N_PEAK_OPTS,
	  NULL },
	CLI_GROUP(NULL, tune_rate_opt, NULL),
	{ NULL, cli_openloop_opts, CLI_N_OPENLOOP_OPTS,
	  "  (each probe and run is the peak search of gpushare bench --find-peak, from rate R;\n"
	  "  --load open and --find-peak are implied by --slo)" },
};

const struct cli_cmd cli_tune_cmd = {
	.name = "tune",
	.usage = "gpushare tune --out DIR [options] [--<workload option> VALUE]...\n"
		 "gpushare tune --out DIR [options] [--mode request|job] [--jobs K] -- CMD [ARGS...]",
	.about = "Find the best configuration of one workload: strategy x workers per GPU x batch, by\n"
		 "successive halving. Every candidate gets one probe (an eighth of --duration); those below\n"
		 "half the best probe are dropped, and of the rest the best eighth (at least 2) go on to\n"
		 "full runs, interleaved. After each round a candidate significantly below the leader\n"
		 "(Welch's t test on log throughput, 95%) is dropped and the better half goes on, until\n"
		 "one is left, --max-repeats rounds or --budget. Probes are recorded in DIR/" GPUSHARE_TUNE_PROBES_FILE ",\n"
		 "full runs in DIR/" GPUSHARE_SWEEP_RESULTS_FILE " as a sweep's (gpushare report reads them).",
	.groups = tune_groups,
	.n_groups = CLI_N(tune_groups),
	.epilog = "At the end: the pick, what it beat and by how much (95% t intervals), what was dropped\n"
		  "and why, and the gpushare bench (and farm) command that runs the pick.\n"
		  "Not tune options: --repeats, --target-noise (the race picks the repeats), --gpus\n"
		  "(one GPU), --metrics-listen, --metrics-buckets. See gpushare-tune(1).",
	.notes = (const struct cli_exit_note[]){ { EXIT_PARTIAL, "some runs failed (they are recorded)" },
						 { EXIT_IO, "DIR or its results file unusable" } },
	.n_notes = 2,
};

/* ---- progress ---- */

static void cell_name(const struct gpushare_sweep_cell *c, char *buf, size_t len);

static void show_progress(void *arg, const struct gpushare_sweep_progress *p)
{
	char ips[32], name[80];

	(void)arg;
	if (!p->run_done)
		return;
	if (p->run_ok && p->peak && p->peak->found) {
		char r[24];

		snprintf(ips, sizeof(ips), "peak %s/s", gpushare_fmt_si(p->peak->rate, r, sizeof(r)));
	} else if (p->run_ok && p->peak)
		snprintf(ips, sizeof(ips), "no rate met the bound");
	else if (p->run_ok && !p->peak)
		gpushare_fmt_rate(p->items_per_second, p->cell->n_mix >= 2 ? "score" : "items/s", ips, sizeof(ips));
	else if (!p->run_ok)
		snprintf(ips, sizeof(ips), "failed or partial");
	cell_name(p->cell, name, sizeof(name));
	if (p->repeat < 0)
		fprintf(stderr, "gpushare: tune: probe %u %s: %s\n", p->runs_done, name, ips);
	else
		fprintf(stderr, "gpushare: tune: run %u %s #%d: %s\n", p->runs_done, name, p->repeat + 1, ips);
	fflush(stderr);
}

/* "mps w2 b4"; an mps-split cell with its thread percentage: "mps-split
 * w4 b1 t50%". */
static void cell_name(const struct gpushare_sweep_cell *c, char *buf, size_t len)
{
	int l = snprintf(buf, len, "%s w%d b%ld", gpushare_strategy_name(c->strategy), c->workers, c->batch);
	char pct[32];

	if (gpushare_strategy_client_share(c->strategy) && l >= 0 && (size_t)l < len)
		snprintf(buf + l, len - (size_t)l, " t%s%%", gpushare_sweep_cell_thread_pct_text(c, pct, sizeof(pct)));
}

static void cand_name(const struct gpushare_tune_candidate *c, char *buf, size_t len)
{
	cell_name(&c->cell, buf, len);
}

/* "0.41x (0.38x-0.44x, p < 0.001)" */
static void fmt_cmp(const struct gpushare_comparison *c, char *buf, size_t len)
{
	char r[24], lo[24], hi[24];

	gpushare_fmt_ratio(c->ratio, r, sizeof(r));
	if (c->method == GPUSHARE_METHOD_NONE) {
		snprintf(buf, len, "%s (too few runs: no verdict)", r);
		return;
	}
	if (c->method == GPUSHARE_METHOD_ORDER) {   /* no t test (a run at 0): the order statistics' rule */
		gpushare_fmt_ratio(c->ratio_lo, lo, sizeof(lo));
		gpushare_fmt_ratio(c->ratio_hi, hi, sizeof(hi));
		snprintf(buf, len, "%s (%s-%s, order statistics, %s%s)", r, lo, hi, gpushare_verdict_name(c->verdict),
			 c->verdict == GPUSHARE_VERDICT_TIE || c->significant ? "" : ", not significant");
		return;
	}
	gpushare_fmt_ratio(c->t_lo, lo, sizeof(lo));
	gpushare_fmt_ratio(c->t_hi, hi, sizeof(hi));
	if (c->p_value < 0.001)
		snprintf(buf, len, "%s (%s-%s, %s, p < 0.001)", r, lo, hi, gpushare_verdict_name(c->verdict));
	else
		snprintf(buf, len, "%s (%s-%s, %s, p = %.2g)", r, lo, hi, gpushare_verdict_name(c->verdict), c->p_value);
}

/* Why a candidate was dropped, in words: "its probe 0.31x of timeslice w2
 * b4's, below the cut 0.5x". */
static void why_text(const struct gpushare_tune_config *t, const struct gpushare_tune_result *res, int k, char *buf,
		     size_t len)
{
	const struct gpushare_tune_candidate *cands = res->cands, *c = &cands[k];
	char by[64] = "", r[24], cut[24], cmp[128];

	if (c->dropped_by >= 0)
		cand_name(&cands[c->dropped_by], by, sizeof(by));
	gpushare_fmt_ratio(c->drop_ratio, r, sizeof(r));
	gpushare_fmt_ratio(t->probe_cut, cut, sizeof(cut));
	switch (c->why) {
	case GPUSHARE_TUNE_DROP_NOTHING:
		snprintf(buf, len, "%s", t->sweep.bench.find_peak ? "no successful search met the bound"
					 : "no successful run (failed, or nothing finished in its window)");
		break;
	case GPUSHARE_TUNE_DROP_PROBE_CUT:
		snprintf(buf, len, "its probe %s of %s's, below the cut %s", r, by, cut);
		break;
	case GPUSHARE_TUNE_DROP_PROBE_RANK:
		snprintf(buf, len, "its probe %s of %s's, rank %d of %zu: only the best %zu went on", r, by,
			 c->probe_rank, res->n_cands, res->keep);
		break;
	case GPUSHARE_TUNE_DROP_CUT:
		snprintf(buf, len, "its full run %s of %s's, below the cut %s", r, by, cut);
		break;
	case GPUSHARE_TUNE_DROP_WELCH:
		fmt_cmp(&c->at_drop, cmp, sizeof(cmp));
		snprintf(buf, len, "%s of %s", cmp, by);
		break;
	case GPUSHARE_TUNE_DROP_HALF:
		snprintf(buf, len, "%s of %s: outside the better half of round %d", r, by, c->dropped_round);
		break;
	case GPUSHARE_TUNE_NOT_RUN:
		snprintf(buf, len, "not probed: the budget ran out");
		break;
	case GPUSHARE_TUNE_RACING:
		snprintf(buf, len, "racing");
		break;
	}
}

/* What show_event() needs: the configuration and the result it fills. */
struct event_ctx {
	const struct gpushare_tune_config *t;
	const struct gpushare_tune_result *res;
};

static void show_event(void *arg, const struct gpushare_tune_event *e)
{
	const struct event_ctx *ec = arg;
	char name[64], why[256];

	if (e->candidate < 0) {
		if (e->leader >= 0) {
			cand_name(&e->cands[e->leader], name, sizeof(name));
			if (e->round == 0)
				fprintf(stderr, "gpushare: tune: after the probes: %zu go on, best probe %s\n", e->active,
					name);
			else
				fprintf(stderr, "gpushare: tune: after round %d: %zu racing, leader %s\n", e->round,
					e->active, name);
		}
		return;
	}
	if (e->cands[e->candidate].why == GPUSHARE_TUNE_NOT_RUN)
		return;
	cand_name(&e->cands[e->candidate], name, sizeof(name));
	why_text(ec->t, ec->res, e->candidate, why, sizeof(why));
	fprintf(stderr, "gpushare: tune: dropped %s: %s\n", name, why);
}

static void print_result(const struct gpushare_tune_config *t, const struct gpushare_tune_result *res, FILE *f)
{
	const char *unit = t->sweep.bench.find_peak ? "/s peak within the bound"
			   : t->sweep.shapes[0].n_mix >= 2 ? "score" : "items/s";
	char name[64], v[32], cmp[128], why[256], pct[32];
	size_t not_run = 0;

	if (res->best < 0) {
		fprintf(f, "No pick: no candidate had a successful run%s.\n",
			t->sweep.bench.find_peak ? " that met the bound" : "");
		return;
	}
	cand_name(&res->cands[res->best], name, sizeof(name));
	if (t->sweep.shapes[0].n_mix >= 2)
		fprintf(f, "A mix of %d workloads: each candidate's score is the geometric mean of their items/s\n",
			t->sweep.shapes[0].n_mix);
	if (res->probes_only)
		fprintf(f, "Pick: %s, %s in its probe; the budget ran out before any full run: the best probe so far\n",
			name, gpushare_fmt_rate(res->cands[res->best].probe, unit, v, sizeof(v)));
	else if (res->tie) {
		/* The race ended with the leader not told apart: no pick. */
		char words[256];
		size_t shown = 0;

		gpushare_tune_tie_text(res, words, sizeof(words));
		fprintf(f, "Tie between %s", name);
		for (size_t i = 0; i < res->n_tied; i++) {
			if (!res->cands[res->tied[i]].vs_best.underpowered)
				continue;
			cand_name(&res->cands[res->tied[i]], name, sizeof(name));
			fprintf(f, "%s %s", ++shown == res->n_unsettled ? " and" : ",", name);
		}
		fprintf(f, " (%s)%s\n", words, res->sum.budget_out ? "; the budget ran out" : "");
		cand_name(&res->cands[res->best], name, sizeof(name));
		fprintf(f, "  %s: %s (median of %zu full run%s)\n", name,
			gpushare_fmt_rate(res->cands[res->best].ci.median, unit, v, sizeof(v)), res->cands[res->best].runs,
			res->cands[res->best].runs == 1 ? "" : "s");
	} else
		fprintf(f, "Pick: %s, %s (median of %zu full run%s)%s\n", name,
			gpushare_fmt_rate(res->cands[res->best].ci.median, unit, v, sizeof(v)),
			res->cands[res->best].runs, res->cands[res->best].runs == 1 ? "" : "s",
			res->sum.budget_out ? "; the budget ran out: the leader so far" : "");
	fprintf(f, "Searched: %zu candidates, %u probes (%.1f s), %u full runs in %d rounds (%.1f s)\n", res->n_cands,
		res->probe_sum.runs_done + res->probe_sum.runs_skipped, res->probe_seconds,
		res->sum.runs_done + res->sum.runs_skipped, res->rounds, res->full_seconds);
	if (res->n_tied) {
		fprintf(f, "Tied with it (no clear win: the 95%% interval holds 1, or not significant):");
		for (size_t i = 0; i < res->n_tied; i++) {
			cand_name(&res->cands[res->tied[i]], name, sizeof(name));
			fmt_cmp(&res->cands[res->tied[i]].vs_best, cmp, sizeof(cmp));
			fprintf(f, "%s %s %s", i ? ";" : "", name, cmp);
		}
		fprintf(f, "\n");
	}
	for (size_t k = 0; k < res->n_cands; k++) {
		const struct gpushare_tune_candidate *c = &res->cands[k];
		bool tied = false;

		for (size_t i = 0; i < res->n_tied; i++)
			tied |= res->tied[i] == (int)k;
		if ((int)k == res->best || tied)
			continue;
		if (c->active) {   /* the search stopped (budget, --max-repeats) with it still racing */
			cand_name(c, name, sizeof(name));
			if (!c->runs || res->probes_only) {
				fprintf(f, "  racing %s: no full run yet\n", name);
				continue;
			}
			fmt_cmp(&c->vs_best, cmp, sizeof(cmp));
			fprintf(f, "  %-4s %-19s %s, %zu run%s: the pick is %s; still racing when the search stopped\n",
				gpushare_compare_clear(&c->vs_best, GPUSHARE_VERDICT_HIGHER) ? "beat" : "vs",
				name, gpushare_fmt_rate(c->ci.median, unit, v, sizeof(v)), c->runs, c->runs == 1 ? "" : "s",
				cmp);
			continue;
		}
		if (c->why == GPUSHARE_TUNE_NOT_RUN) {
			not_run++;
			continue;
		}
		cand_name(c, name, sizeof(name));
		why_text(t, res, (int)k, why, sizeof(why));
		if (c->runs && c->why != GPUSHARE_TUNE_DROP_NOTHING && !res->probes_only) {
			fmt_cmp(&c->vs_best, cmp, sizeof(cmp));
			fprintf(f, "  %-4s %-19s %s, %zu run%s: the pick is %s; dropped after round %d: %s\n",
				gpushare_compare_clear(&c->vs_best, GPUSHARE_VERDICT_HIGHER) ? "beat"
				: c->vs_best.verdict == GPUSHARE_VERDICT_TIE  ? "tie"
									      : "vs",
				name, gpushare_fmt_rate(c->ci.median, unit, v, sizeof(v)), c->runs, c->runs == 1 ? "" : "s",
				cmp, c->dropped_round, why);
		} else if (c->probe > 0 && c->dropped_round == 0) {
			fprintf(f, "  dropped %s after its probe (%s): %s\n", name,
				gpushare_fmt_rate(c->probe, unit, v, sizeof(v)), why);
		} else if (c->dropped_round > 0) {
			fprintf(f, "  dropped %s after round %d: %s\n", name, c->dropped_round, why);
		} else {
			fprintf(f, "  dropped %-16s %s\n", name, why);
		}
	}
	if (not_run)
		fprintf(f, "  not probed: %zu candidates (the budget ran out)\n", not_run);
	if (res->tie)
		fprintf(f, "The commands below run the first of the tied.\n");
	fprintf(f, "Run it: %s\n", res->bench_command);
	if (res->farm_command[0])
		fprintf(f, "Jobs this way: %s\n", res->farm_command);
	else if (gpushare_strategy_client_share(res->cands[res->best].cell.strategy))
		fprintf(f, "Jobs this way: none: gpushare farm gives each mps-split slot the default share 100/N (%g%% "
			"here), not the pick's %s%s%%\n", gpushare_sweep_default_thread_pct(res->cands[res->best].cell.workers),
			res->cands[res->best].cell.n_mix >= 2 ? "split " : "",
			gpushare_sweep_cell_thread_pct_text(&res->cands[res->best].cell, pct, sizeof(pct)));
	if (res->exec_command[0])
		fprintf(f, "Ranks this way: %s\n", res->exec_command);
	if (res->plan_command[0])
		fprintf(f, "Plan it: %s (TARGET: slurm, k8s-device-plugin, k8s-dra or env)\n", res->plan_command);
}

/* ---- options ---- */

static int bad_value(const char *opt, const char *value)
{
	return cli_bad_value("tune", opt, value);
}

/* Options that do not change what is measured or decided: given again
 * with --resume, they apply. */
static const char *const tune_free_opts[] = { "out", "resume", "quiet", "json", "no-report", "start-timeout",
					      "mps-pipe-dir", "budget", "preload",
					      "fresh-workers" };

static int cmd_tune_run(int argc, char **argv);

/* After each option: what the pick's bench command needs of the open-loop
 * and peak-search options (--load, --find-peak, --slo and --rate are written
 * there anyway). */
static void tune_each(struct cli_parse *p, void *args)
{
	struct tune_args *a = args;
	int id = p->opt ? p->opt->id : 0;

	if (id == CLI_OPEN_SLO) {
		a->slo_text = p->arg;
	} else if (id == CLI_OPEN_ARRIVAL || id == CLI_OPEN_SEED || id == CLI_OPEN_DISPATCH || id == CLI_OPEN_DRAIN ||
		   id == CLI_OPEN_RESOLUTION || id == CLI_OPEN_TAIL_SAMPLES || id == CLI_OPEN_RATE_MAX) {
		size_t l = strlen(a->open_extra);

		snprintf(a->open_extra + l, sizeof(a->open_extra) - l, " --%s %s", p->opt->long_name, p->arg);
	}
}

int cmd_tune(int argc, char **argv)
{
	static const struct cli_resume r = { &cli_tune_cmd, GPUSHARE_TUNE_PROBES_FILE, tune_free_opts,
					     CLI_N(tune_free_opts), cmd_tune_run, true, GPUSHARE_SWEEP_RESULTS_FILE };

	return cli_resume(&r, argc, argv);
}

static int cmd_tune_run(int argc, char **argv)
{
	static struct tune_args a;  /* large: kept off the stack */
	struct gpushare_tune_config *t = &a.t;
	struct gpushare_sweep_config *s = &t->sweep;
	struct cli_parse p;
	const char *wl_names[MAX_WL_OPTS];
	const char *wl_values[MAX_WL_OPTS] = { 0 };
	size_t n_wl = cli_sweep_prescan(&cli_tune_cmd, argc, argv, wl_names, MAX_WL_OPTS);
	const char *out;
	char path[GPUSHARE_PATH_MAX + 64], **cmdline;
	bool workload_given, slo_given, tp_given;
	struct cli_command_opts *co = &a.sw.run.co;
	struct gpushare_tune_result res;
	struct event_ctx ec = { t, &res };
	int rc, code;

	memset(&a, 0, sizeof(a));
	a.sw.s = s;
	a.sw.run.c = &s->bench;
	a.workload = "matmul";
	if (gpushare_tune_config_init(t))
		return cli_fail(GPUSHARE_E_NOT_FOUND, "tune");
	s->bench.duration_ns = 500000000ull;
	/* Everything after the first "--" is the command; options stop there. */
	cli_command_scan(co, argc, argv);
	cli_parse_init(&p, &cli_tune_cmd, co->opt_argc, argv);
	p.extra = wl_names;
	p.n_extra = n_wl;
	p.whose = "the workload";
	p.extra_values = wl_values;
	p.each = tune_each;
	if (!cli_parse_options(&p, &a))
		return p.status;
	workload_given = cli_parse_given(&p, "workload");
	slo_given = cli_parse_given(&p, "slo");
	tp_given = cli_parse_given(&p, "thread-percentage");
	if (p.optind < co->opt_argc)
		return cli_unexpected_argument("tune", argv[p.optind]);
	out = a.out;
	if (!out)
		return cli_error(EXIT_USAGE, "tune: --out DIR is required (where results and report go)");
	if (slo_given) {
		if (s->n_rates != 1)
			return cli_error(EXIT_USAGE, "tune: --slo needs --rate R, the first rate each peak search tries");
		s->bench.load = GPUSHARE_LOAD_OPEN;
		s->bench.find_peak = true;
	} else if (s->bench.find_peak) {
		return cli_error(EXIT_USAGE, "tune: --find-peak needs --slo pNN=D");
	}
	if ((code = cli_sweep_apply_command(co, "tune", argc, argv, workload_given, s)))
		return code;
	/* The probes and rounds run on the workers the run before left warm. */
	s->bench.reuse_workers = s->bench.preload && !a.fresh_workers;
	{
		bool split = false;

		for (size_t i = 0; i < s->n_strategies; i++)
			split |= gpushare_strategy_client_share(s->strategies[i]);
		if (!split && tp_given)
			return cli_error(EXIT_USAGE, "tune: --thread-percentage is an axis of the mps-split candidates only; "
					 "add mps-split to --strategy or leave it out");
		if (!split)
			s->n_thread_pcts = 0;   /* the default auto list: nothing to search */
	}
	if (s->bench.command) {
		if (gpushare_sweep_set_command(s, s->bench.command, s->bench.command_mode))
			return cli_error(EXIT_USAGE, "tune: %s", gpushare_errdetail());
	} else if (gpushare_sweep_add_shape(s, a.workload)) {
		return bad_value("--workload", a.workload);
	}
	if ((code = cli_sweep_shape_options("tune", s, n_wl, wl_names, wl_values)))
		return code;
	if (gpushare_sweep_config_check(s))
		return cli_error(EXIT_USAGE, "tune: %s", gpushare_errdetail());
	/* What the pick's bench command needs besides strategy, workers, batch. */
	for (size_t i = 0, l = 0; i < n_wl; i++)
		if (wl_values[i] && l < sizeof(t->bench_extra))
			l += (size_t)snprintf(t->bench_extra + l, sizeof(t->bench_extra) - l, " --%s %s", wl_names[i],
					      wl_values[i]);
	if (slo_given) {
		size_t l = strlen(t->bench_extra);

		snprintf(t->bench_extra + l, sizeof(t->bench_extra) - l, " --load open --rate %.9g --find-peak --slo %s%s",
			 s->rates[0], a.slo_text, a.open_extra);
	}
	if (!*out)
		return cli_error(EXIT_USAGE, "tune: empty --out");
	if (mkdir(out, 0755) != 0 && errno != EEXIST)
		return cli_error(EXIT_IO, "tune: cannot create --out '%s': %s", out, strerror(errno));
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", out, GPUSHARE_SWEEP_RESULTS_FILE) >= sizeof(path))
		return cli_error(EXIT_USAGE, "tune: --out '%s' is too long", out);
	{
		struct stat st;
		char probes[GPUSHARE_PATH_MAX + 64];

		snprintf(probes, sizeof(probes), "%s/%s", out, GPUSHARE_TUNE_PROBES_FILE);
		if (!s->resume && stat(path, &st) == 0 && st.st_size > 0)
			return cli_error(EXIT_USAGE, "tune: '%s' already holds runs; give --resume to continue, or another --out",
					 path);
		if (!s->resume && stat(probes, &st) == 0 && st.st_size > 0)
			return cli_error(EXIT_USAGE, "tune: '%s' already holds runs; give --resume to continue, or another --out",
					 probes);
	}
	cmdline = cli_command_line(argc, argv);
	if (!cmdline)
		return cli_fail(GPUSHARE_E_NOMEM, "tune");
	s->bench.argc = argc + 1;
	s->bench.argv = cmdline;
	if (!a.quiet) {
		s->progress = show_progress;
		t->event = show_event;
		t->event_arg = &ec;
	}
	cli_catch_interrupts();
	cli_announce_preload("tune", a.quiet);

	rc = gpushare_tune_run(t, path, &res);
	gpushare_bench_preload_release();
	code = EXIT_OK;
	if (rc == GPUSHARE_E_INTERRUPTED)
		code = cli_error(EXIT_INTERRUPTED, "tune: interrupted; %u runs recorded in '%s' (continue with --resume)",
				 res.sum.runs_done + res.probe_sum.runs_done, out);
	else if (rc)
		code = cli_run_failed("tune", rc);
	if (!code && !a.no_report && (res.sum.runs_done || res.sum.runs_skipped))
		code = cli_report_run(out, out, 0, CLI_REPORT_SILENT);
	/* Refused before the first run (a budget no run fits in): nothing to show. */
	if (rc != GPUSHARE_E_INTERRUPTED && rc != GPUSHARE_E_INVAL && res.n_cands) {
		if (a.json) {
			char *doc;

			if (gpushare_tune_json(t, &res, &doc) == GPUSHARE_OK) {
				int jc = cli_print_json_and_free(doc);

				if (!code)
					code = jc;
			}
		} else {
			print_result(t, &res, stdout);
		}
		if (!a.quiet)
			fprintf(stderr, "gpushare: tune: %u probes in '%s/%s', %u full runs in %d rounds in '%s'%s\n",
				res.probe_sum.runs_done, out, GPUSHARE_TUNE_PROBES_FILE, res.sum.runs_done, res.rounds, path,
				res.sum.budget_out || res.probe_sum.budget_out ? " (budget spent)" : "");
	}
	if (!code && res.sum.runs_failed + res.probe_sum.runs_failed)
		code = cli_error(EXIT_PARTIAL, "tune: %u of %u runs failed or were partial; they are recorded with their error",
				 res.sum.runs_failed + res.probe_sum.runs_failed, res.sum.runs_done + res.probe_sum.runs_done);
	gpushare_tune_result_release(&res);
	free(cmdline);
	gpushare_sweep_config_release(s);
	return cli_finish_stdout(code);
}
