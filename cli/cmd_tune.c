/*
 * gpushare tune: find the best configuration of one workload (strategy x
 * workers per GPU x batch) by a race run through the sweep engine
 * (gpushare/tune.h): short probes, two runs each, then repeats only for
 * the candidates still open; those clearly behind the leader are dropped.
 * Runs are recorded in OUT/results.jsonl as a sweep's (gpushare report
 * reads them; --resume continues). Written the way cmd_sweep.c is.
 */
#include <errno.h>
#include <getopt.h>
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

enum {
	OPT_WORKLOAD = 256, OPT_WORKERS, OPT_BATCH, OPT_OUT, OPT_RESUME, OPT_BUDGET, OPT_JSON, OPT_NO_REPORT,
	OPT_WL_FIRST = 1000,
};

static const struct option tune_options[] = {
	{ "workload", required_argument, NULL, OPT_WORKLOAD },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "resume", no_argument, NULL, OPT_RESUME },
	{ "budget", required_argument, NULL, OPT_BUDGET },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "no-report", no_argument, NULL, OPT_NO_REPORT },
	CLI_OPENLOOP_OPTIONS,
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
};
#define N_TUNE_OPTIONS (sizeof(tune_options) / sizeof(tune_options[0]))
#define MAX_WL_OPTS GPUSHARE_WL_MAX_OPTS

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpushare tune --out DIR [options] [--<workload option> VALUE]...\n"
		"       gpushare tune --out DIR [options] [--mode request|job] [--jobs K] -- CMD [ARGS...]\n\n"
		"Find the best configuration of one workload: strategy x workers per GPU x batch. Every\n"
		"candidate gets two short runs, interleaved; after each round the candidates whose\n"
		"throughput is significantly below the leader's (Welch's t test on log throughput, 95%%)\n"
		"are dropped and only the open ones run again, up to --max-repeats runs or --budget.\n"
		"Runs are recorded in DIR/" GPUSHARE_SWEEP_RESULTS_FILE " as a sweep's (gpushare report reads them).\n\n"
		"  --out DIR              results and report directory (created when absent)\n"
		"  --workload SHAPE       NAME[:opt=value[:opt=value]...] (default matmul)\n"
		"  --strategy LIST        candidates' strategies (default timeslice,mps,mps-split)\n"
		"  --workers LIST         workers per GPU (default 1,2,4)\n"
		"  --batch LIST           batch sizes (default 1)\n"
		"  --duration D           each probe's window (default 500ms); --warmup D as for bench\n"
		"  --max-repeats M        runs a candidate gets at most (default 6, at least 2)\n"
		"  --budget TIME          start no run past TIME (e.g. 10m) of this invocation; the pick\n"
		"                         is then the leader so far, and says so\n"
		"  --slo pNN=D --rate R   goal: the highest open-loop rate within the bound (each probe is\n"
		"                         the peak search of gpushare bench --find-peak, from rate R;\n"
		"                         --resolution, --tail-samples, --rate-max, --arrival as for bench)\n"
		"  --resume               continue the tune recorded in DIR (same options)\n"
		"  --json                 print the result as JSON on stdout\n"
		"  --no-report            do not write the report at the end\n"
		"  --requests R | --warmup-requests W | --start-timeout D | --gpu IDX|UUID\n"
		"  --mps-pipe-dir DIR     per run, as for gpushare bench\n"
		"  -q, --quiet            no progress on stderr\n"
		"  -h, --help             this help\n\n"
		"Your own program as the worker (after '--', as for gpushare bench): --mode request\n"
		"(default; each --batch value reaches it as GPUSHARE_BATCH) or --mode job, --jobs K.\n\n"
		"At the end: the pick, what it beat and by how much (95%% t intervals), what was dropped\n"
		"and why, and the gpushare bench (and farm) command that runs the pick.\n\n"
		"Exit statuses: 0 ok, 2 bad option, 3 no driver, 4/5 MPS, 6 directory, 10 some runs\n"
		"failed (recorded), 11 DIR or its results file unusable, 130 interrupted.\n"
		"See gpushare-tune(1).\n");
}

/* ---- progress ---- */

static void show_progress(void *arg, const struct gpushare_sweep_progress *p)
{
	char ips[32];

	(void)arg;
	if (!p->run_done)
		return;
	if (p->run_ok && p->peak && p->peak->found) {
		char r[24];

		snprintf(ips, sizeof(ips), "peak %s/s", gpushare_fmt_si(p->peak->rate, r, sizeof(r)));
	} else if (p->run_ok && p->peak)
		snprintf(ips, sizeof(ips), "no rate met the bound");
	else if (p->run_ok && !p->peak)
		gpushare_fmt_rate(p->items_per_second, "items/s", ips, sizeof(ips));
	else if (!p->run_ok)
		snprintf(ips, sizeof(ips), "failed or partial");
	fprintf(stderr, "gpushare: tune: run %u %s w%d b%ld #%d: %s; elapsed %.0fs\n", p->runs_done,
		gpushare_strategy_name(p->cell->strategy), p->cell->workers, p->cell->batch, p->repeat + 1, ips,
		p->elapsed_seconds);
	fflush(stderr);
}

static void cand_name(const struct gpushare_tune_candidate *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s w%d b%ld", gpushare_strategy_name(c->cell.strategy), c->cell.workers, c->cell.batch);
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
	gpushare_fmt_ratio(c->t_lo, lo, sizeof(lo));
	gpushare_fmt_ratio(c->t_hi, hi, sizeof(hi));
	if (c->p_value < 0.001)
		snprintf(buf, len, "%s (%s-%s, %s, p < 0.001)", r, lo, hi, gpushare_verdict_name(c->verdict));
	else
		snprintf(buf, len, "%s (%s-%s, %s, p = %.2g)", r, lo, hi, gpushare_verdict_name(c->verdict), c->p_value);
}

static void show_event(void *arg, const struct gpushare_tune_event *e)
{
	char name[64], by[64], cmp[128];

	(void)arg;
	if (e->candidate < 0) {
		if (e->leader >= 0) {
			cand_name(&e->cands[e->leader], name, sizeof(name));
			fprintf(stderr, "gpushare: tune: after round %d: %zu racing, leader %s\n", e->round + 1, e->active,
				name);
		}
		return;
	}
	cand_name(&e->cands[e->candidate], name, sizeof(name));
	if (e->leader < 0) {
		fprintf(stderr, "gpushare: tune: dropped %s: %s\n", name,
			e->cands[e->candidate].runs ? "nothing finished in its windows"
						    : "no successful run (a peak search: none met the bound)");
		return;
	}
	cand_name(&e->cands[e->leader], by, sizeof(by));
	fmt_cmp(&e->cands[e->candidate].at_drop, cmp, sizeof(cmp));
	fprintf(stderr, "gpushare: tune: dropped %s: %s of %s\n", name, cmp, by);
}

static void print_result(const struct gpushare_tune_config *t, const struct gpushare_tune_result *res, FILE *f)
{
	const char *unit = t->sweep.bench.find_peak ? "/s peak within the bound" : "items/s";
	char name[64], v[32], cmp[128];

	if (res->best < 0) {
		fprintf(f, "No pick: no candidate had a successful run%s.\n",
			t->sweep.bench.find_peak ? " that met the bound" : "");
		return;
	}
	cand_name(&res->cands[res->best], name, sizeof(name));
	fprintf(f, "Pick: %s, %s (median of %zu runs)%s\n", name,
		gpushare_fmt_rate(res->cands[res->best].ci.median, unit, v, sizeof(v)), res->cands[res->best].runs,
		res->sum.budget_out ? "; the budget ran out: the leader so far" : "");
	if (res->n_tied) {
		fprintf(f, "Tied with it (the 95%% t interval holds 1):");
		for (size_t i = 0; i < res->n_tied; i++) {
			cand_name(&res->cands[res->tied[i]], name, sizeof(name));
			fmt_cmp(&res->cands[res->tied[i]].vs_best, cmp, sizeof(cmp));
			fprintf(f, "%s %s %s", i ? ";" : "", name, cmp);
		}
		fprintf(f, "\n");
	}
	for (size_t k = 0; k < res->n_cands; k++) {
		const struct gpushare_tune_candidate *c = &res->cands[k];

		if ((int)k == res->best || (c->active && c->vs_best.verdict != GPUSHARE_VERDICT_HIGHER))
			continue;
		cand_name(c, name, sizeof(name));
		if (c->nothing || !c->runs) {
			fprintf(f, "  dropped %-16s %s\n", name,
				t->sweep.bench.find_peak ? "no successful search met the bound"
				: !c->runs		 ? "no successful run"
							 : "nothing finished in its windows");
			continue;
		}
		fmt_cmp(&c->vs_best, cmp, sizeof(cmp));
		fprintf(f, "  beat %-19s %s, %zu runs: the pick is %s", name,
			gpushare_fmt_rate(c->ci.median, unit, v, sizeof(v)), c->runs, cmp);
		if (c->dropped_round >= 0)
			fprintf(f, "; dropped after round %d", c->dropped_round + 1);
		fprintf(f, "\n");
	}
	fprintf(f, "Run it: %s\n", res->bench_command);
	if (res->farm_command[0])
		fprintf(f, "Jobs this way: %s\n", res->farm_command);
}

/* ---- options ---- */

static size_t prescan_options(int argc, char **argv, const char **names, size_t max)
{
	size_t n = 0;

	for (int i = 1; i < argc; i++) {
		const char *v;
		char buf[512];
		const struct gpushare_wl_desc *d;

		if (!strcmp(argv[i], "--"))
			break;
		if (!(v = cli_workload_arg(argc, argv, &i)))
			continue;
		snprintf(buf, sizeof(buf), "%s", v);
		buf[strcspn(buf, ":,")] = '\0';
		d = gpushare_workload_find(buf);
		for (size_t j = 0; d && j < d->n_opts && n < max; j++)
			if (!cli_option_named(tune_options, N_TUNE_OPTIONS, d->opts[j].name))
				names[n++] = d->opts[j].name;
	}
	return n;
}

static int bad_value(const char *opt, const char *value)
{
	return cli_bad_value("tune", opt, value);
}

int cmd_tune(int argc, char **argv)
{
	static struct gpushare_tune_config t;  /* large: kept off the stack */
	struct gpushare_sweep_config *s = &t.sweep;
	struct option longopts[N_TUNE_OPTIONS + CLI_MAX_SHARED_OPTIONS + MAX_WL_OPTS + 1];
	const char *wl_names[MAX_WL_OPTS];
	const char *wl_values[MAX_WL_OPTS] = { 0 };
	size_t n_wl = prescan_options(argc, argv, wl_names, MAX_WL_OPTS), nv;
	const char *workload = "matmul", *out = NULL, *slo_text = NULL;
	char path[GPUSHARE_PATH_MAX + 64], **cmdline;
	bool quiet = false, json = false, no_report = false, workload_given = false, slo_given = false;
	struct cli_command_opts co;
	struct gpushare_tune_result res;
	long vals[GPUSHARE_SWEEP_MAX_VALUES];
	int opt, rc, code;

	if (gpushare_tune_config_init(&t))
		return cli_fail(GPUSHARE_E_NOT_FOUND, "tune");
	s->bench.duration_ns = 500000000ull;
	cli_options_table(longopts, tune_options, N_TUNE_OPTIONS, wl_names, n_wl, OPT_WL_FIRST);
	cli_command_scan(&co, argc, argv);
	while ((opt = getopt_long(co.opt_argc, argv, ":hq", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			return cli_finish_stdout(EXIT_OK);
		case 'q': quiet = true; break;
		case OPT_WORKLOAD:
			if (!*optarg || strchr(optarg, ','))
				return cli_error(EXIT_USAGE, "tune: invalid --workload '%s': one shape NAME[:opt=value...]",
						 optarg);
			workload = optarg;
			workload_given = true;
			break;
		case OPT_WORKERS:
			if (gpushare_sweep_parse_int_list(optarg, 1, GPUSHARE_BENCH_MAX_WORKERS, vals, &nv))
				return bad_value("--workers", optarg);
			for (size_t i = 0; i < nv; i++)
				s->workers[i] = (int)vals[i];
			s->n_workers = nv;
			break;
		case OPT_BATCH:
			if (gpushare_sweep_parse_int_list(optarg, 1, 1L << 30, s->batches, &s->n_batches))
				return bad_value("--batch", optarg);
			break;
		case OPT_OUT: out = optarg; break;
		case OPT_RESUME: s->resume = true; break;
		case OPT_BUDGET: {
			uint64_t ns;

			if (gpushare_parse_duration(optarg, &ns) || ns == 0)
				return cli_error(EXIT_USAGE, "tune: invalid --budget '%s' (expected a duration, e.g. 10m)", optarg);
			s->budget_seconds = (double)ns / 1e9;
			break;
		}
		case OPT_JSON: json = true; break;
		case OPT_NO_REPORT: no_report = true; break;
		case ':':
		case '?':
			return cli_option_error("tune", opt, argv[optind - 1], "the workload");
		default:
			if (opt >= CLI_OPT_FIRST && opt < CLI_OPT_END) {
				if (opt == CLI_OPT_REPEATS || opt == CLI_OPT_TARGET_NOISE || opt == CLI_OPT_GPUS ||
				    opt == CLI_OPT_METRICS_LISTEN || opt == CLI_OPT_METRICS_BUCKETS)
					return cli_error(EXIT_USAGE, "tune: --repeats, --target-noise, --gpus and --metrics-* "
							 "are not tune options (the race picks the repeats; one GPU)");
				if (opt == CLI_OPT_MAX_REPEATS) {
					long m;

					if (cli_parse_whole(optarg, 2, 10000, &m))
						return cli_error(EXIT_USAGE, "tune: invalid --max-repeats '%s': %s", optarg,
								 gpushare_errdetail());
					s->max_repeats = (int)m;
					break;
				}
				if ((code = cli_command_option(&co, "tune", opt, optarg, &s->bench)))
					return code;
				break;
			}
			if (opt == CLI_OPEN_RATE) {
				if ((code = cli_openloop_rate_list("tune", optarg, s->rates, 1, &s->n_rates)))
					return code;
				break;
			}
			if (opt >= CLI_OPEN_FIRST && opt < CLI_OPEN_END) {
				if (opt == CLI_OPEN_SLO) {
					slo_given = true;
					slo_text = optarg;
				}
				if ((code = cli_openloop_option("tune", opt, optarg, &s->bench)))
					return code;
				break;
			}
			if (opt >= OPT_WL_FIRST && opt < OPT_WL_FIRST + (int)n_wl) {
				wl_values[opt - OPT_WL_FIRST] = optarg;
				break;
			}
			return cli_usage_error("tune", '?', optopt, argv[optind - 1]);
		}
	}
	if (optind < co.opt_argc)
		return cli_unexpected_argument("tune", argv[optind]);
	if (!out)
		return cli_error(EXIT_USAGE, "tune: --out DIR is required (where results and report go)");
	if (slo_given) {
		if (s->n_rates != 1)
			return cli_error(EXIT_USAGE, "tune: --slo needs --rate R, the first rate each peak search tries");
		if ((code = cli_openloop_option("tune", CLI_OPEN_LOAD, "open", &s->bench)) ||
		    (code = cli_openloop_option("tune", CLI_OPEN_FIND_PEAK, NULL, &s->bench)))
			return code;
	} else if (s->bench.find_peak) {
		return cli_error(EXIT_USAGE, "tune: --find-peak needs --slo pNN=D");
	}
	if ((code = cli_command_apply(&co, "tune", argc, argv, workload_given, &s->bench)))
		return code;
	if (co.strategy_given) {
		memcpy(s->strategies, s->bench.strategies, s->bench.n_strategies * sizeof(s->strategies[0]));
		s->n_strategies = s->bench.n_strategies;
	}
	if (s->bench.command) {
		if (gpushare_sweep_set_command(s, s->bench.command, s->bench.command_mode))
			return cli_error(EXIT_USAGE, "tune: %s", gpushare_errdetail());
	} else if (gpushare_sweep_add_shape(s, workload)) {
		return bad_value("--workload", workload);
	}
	for (size_t i = 0; i < n_wl; i++) {
		char name[80];

		if (!wl_values[i])
			continue;
		snprintf(name, sizeof(name), "--%s", wl_names[i]);
		if (gpushare_sweep_set_option(s, wl_names[i], wl_values[i]))
			return bad_value(name, wl_values[i]);
	}
	if (gpushare_sweep_config_check(s))
		return cli_error(EXIT_USAGE, "tune: %s", gpushare_errdetail());
	/* What the pick's bench command needs besides strategy, workers, batch. */
	for (size_t i = 0, l = 0; i < n_wl; i++)
		if (wl_values[i] && l < sizeof(t.bench_extra))
			l += (size_t)snprintf(t.bench_extra + l, sizeof(t.bench_extra) - l, " --%s %s", wl_names[i],
					      wl_values[i]);
	if (slo_given) {
		size_t l = strlen(t.bench_extra);

		snprintf(t.bench_extra + l, sizeof(t.bench_extra) - l, " --load open --rate %.9g --find-peak --slo %s",
			 s->rates[0], slo_text);
	}
	if (!*out)
		return cli_error(EXIT_USAGE, "tune: empty --out");
	if (mkdir(out, 0755) != 0 && errno != EEXIST)
		return cli_error(EXIT_IO, "tune: cannot create --out '%s': %s", out, strerror(errno));
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", out, GPUSHARE_SWEEP_RESULTS_FILE) >= sizeof(path))
		return cli_error(EXIT_USAGE, "tune: --out '%s' is too long", out);
	{
		struct stat st;

		if (!s->resume && stat(path, &st) == 0 && st.st_size > 0)
			return cli_error(EXIT_USAGE, "tune: '%s' already holds runs; give --resume to continue, or another --out",
					 path);
	}
	cmdline = cli_command_line(argc, argv);
	if (!cmdline)
		return cli_fail(GPUSHARE_E_NOMEM, "tune");
	s->bench.argc = argc + 1;
	s->bench.argv = cmdline;
	if (!quiet) {
		s->progress = show_progress;
		t.event = show_event;
	}
	cli_catch_interrupts();

	rc = gpushare_tune_run(&t, path, &res);
	code = EXIT_OK;
	if (rc == GPUSHARE_E_INTERRUPTED)
		code = cli_error(EXIT_INTERRUPTED, "tune: interrupted; %u runs recorded in '%s' (continue with --resume)",
				 res.sum.runs_done, path);
	else if (rc)
		code = cli_run_failed("tune", rc);
	if (!code && !no_report && (res.sum.runs_done || res.sum.runs_skipped))
		code = cli_report_run(out, out, 0, CLI_REPORT_SILENT);
	if (rc != GPUSHARE_E_INTERRUPTED && res.n_cands) {
		if (json) {
			char *doc;

			if (gpushare_tune_json(&t, &res, &doc) == GPUSHARE_OK) {
				int jc = cli_print_json_and_free(doc);

				if (!code)
					code = jc;
			}
		} else {
			print_result(&t, &res, stdout);
		}
		if (!quiet)
			fprintf(stderr, "gpushare: tune: %u runs in %d rounds recorded in '%s'%s\n", res.sum.runs_done,
				res.rounds, path, res.sum.budget_out ? " (budget spent)" : "");
	}
	if (!code && res.sum.runs_failed)
		code = cli_error(EXIT_PARTIAL, "tune: %u of %u runs failed or were partial; they are recorded with their error",
				 res.sum.runs_failed, res.sum.runs_done);
	gpushare_tune_result_release(&res);
	free(cmdline);
	gpushare_sweep_config_release(s);
	return cli_finish_stdout(code);
}
