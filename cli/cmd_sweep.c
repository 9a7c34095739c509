/*
 * gpushare sweep: run the grid workload shapes x strategies x workers x
 * batch sizes, R repeats each (or until the median is known to a target
 * noise), appending every finished run to OUT/results.jsonl, then write the
 * report. Parses options, shows progress (a bar with elapsed time and ETA on
 * a terminal, plain lines otherwise) and hands the work to
 * gpushare_sweep_run(). The options it shares with bench (a command after
 * "--", --mode, --jobs, --metrics-*, --warmup, --gpu, --mps-pipe-dir) are
 * parsed by cli/util.c for both.
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
#include "gpushare/buf.h"
#include "gpushare/format.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/sweep.h"
#include "gpushare/utf8.h"
#include "gpushare/workload.h"

#define MAX_WL_OPTS (GPUSHARE_WL_MAX_OPTS * 5)

/* Where sweep's options go (cli_parse_options()). */
struct sweep_args {
	struct cli_sweep_args sw;         /* first: the shared options' place; sw.s = &s */
	struct gpushare_sweep_config s;
	const char *workloads, *out;
	bool quiet, no_report;
	double slo_seconds;               /* --slo-p99; 0 none */
};

#define AT(field) CLI_AT(struct sweep_args, field)

static int set_workloads(struct cli_parse *p, void *args)
{
	if (!*p->arg)
		return cli_error(EXIT_USAGE, "sweep: invalid --workload '': empty list");
	((struct sweep_args *)args)->workloads = p->arg;
	return EXIT_OK;
}

static int set_slo_p99(struct cli_parse *p, void *args)
{
	if (cli_parse_slo(p->arg, &((struct sweep_args *)args)->slo_seconds))
		return cli_error(EXIT_USAGE, "sweep: invalid --slo-p99 '%s' (expected milliseconds, e.g. 5 or 500us)",
				 p->arg);
	return EXIT_OK;
}

/* --rate LIST: an axis of the grid. */
static int set_rates(struct cli_parse *p, void *args)
{
	struct gpushare_sweep_config *s = &((struct sweep_args *)args)->s;

	return cli_openloop_rate_list("sweep", p->arg, s->rates, GPUSHARE_SWEEP_MAX_VALUES, &s->n_rates);
}

#define AXIS .to = CLI_TO_CALL, .call = cli_sweep_axis_call

static const struct cli_opt sweep_opts[] = {
	{ .id = OPT_OUT, .long_name = "out", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "results and report directory (created when absent)",
	  .to = CLI_TO_STR, AT(out) },
	{ .id = OPT_WORKLOAD, .long_name = "workload", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "comma list of shapes NAME[:opt=value[:opt=value]...], e.g. matmul:size=4096,transformer",
	  .def = "matmul", .values = "@workloads",
	  .to = CLI_TO_CALL, .call = set_workloads },
	{ .id = OPT_WORKERS, .long_name = "workers", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "worker counts, e.g. 1,3,5,7", .def = "1,2,4",
	  AXIS },
	{ .id = OPT_BATCH, .long_name = "batch", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "batch sizes, e.g. 1,2,4,8", .def = "1",
	  AXIS },
	{ .id = OPT_THREAD_PCT, .long_name = "thread-percentage", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "mps-split only: active thread percentages per worker, an axis of the mps-split cells, e.g. 25,50,100 "
	  "or 1x,2x,100 (K x the default share 100/N; auto: 1x,2x,100); default: 100/N only",
	  AXIS },
	{ .id = CLI_OPT_REPEATS, .long_name = "repeats", .kind = CLI_INT, .value_name = "R",
	  .help = "runs per cell (default 5); the median is reported", .min = 1, .max = 10000,
	  CLI_RUN },
	{ .id = CLI_OPT_TARGET_NOISE, .long_name = "target-noise", .kind = CLI_PERCENT, .value_name = "P",
	  .help = "repeat a cell until the interval of its median throughput, at >= 95% coverage, is within +-P (e.g. 2%); "
	  "at least 6 runs, at most --max-repeats",
	  CLI_RUN },
	{ .id = CLI_OPT_MAX_REPEATS, .long_name = "max-repeats", .kind = CLI_INT, .value_name = "M",
	  .help = "bound of --target-noise", .def = "20", .min = 1, .max = 10000,
	  CLI_RUN },
	{ .id = OPT_RESUME, .long_name = "resume", .kind = CLI_FLAG,
	  .help = "continue the sweep recorded in DIR: recorded runs are skipped",
	  .to = CLI_TO_TRUE, AT(s.resume) },
	{ .id = OPT_SLO_P99, .long_name = "slo-p99", .kind = CLI_STRING, .value_name = "MS",
	  .help = "the report also picks the best throughput with p99 under MS",
	  .to = CLI_TO_CALL, .call = set_slo_p99 },
	{ .id = OPT_NO_REPORT, .long_name = "no-report", .kind = CLI_FLAG,
	  .help = "do not write the report at the end",
	  .to = CLI_TO_TRUE, AT(no_report) },
	{ .id = OPT_HALT, .long_name = "halt", .kind = CLI_INT, .value_name = "N",
	  .help = "start no more runs once N runs of this invocation failed (exit 10; the report covers what ran; "
	  "--resume continues)", .min = 1, .max = 1000000,
	  .to = CLI_TO_UINT, AT(s.halt) },
	{ .id = 'q', .short_name = 'q', .long_name = "quiet", .kind = CLI_FLAG, .help = "no progress on stderr",
	  .to = CLI_TO_TRUE, AT(quiet) },
};

static const struct cli_opt sweep_rate_opt[] = {
	{ .id = CLI_OPEN_RATE, .long_name = "rate", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "--load open: rates per second, an axis of the grid; with --find-peak one rate R, where the search starts",
	  .to = CLI_TO_CALL, .call = set_rates },
};

static const struct cli_group sweep_groups[] = {
	CLI_GROUP("Options", sweep_opts, NULL),
	{ "Per run, as for gpushare bench", cli_run_opts, CLI_N_RUN_OPTS, NULL },
	{ NULL, cli_metrics_opts, CLI_N_METRICS_OPTS,
	  "  (one metrics server for the whole sweep; each run's series are labelled\n"
	  "  shape, workers, batch, repeat)" },
	{ "Your own program as the worker of every run (after '--')", cli_program_opts, CLI_N_PROGRAM_OPTS,
	  "  (not with --workload nor the streams strategy; each --batch value reaches it\n"
	  "  as GPUSHARE_BATCH; the report names the shape \"command:CMD ARGS\")" },
	{ "Open-loop load, as for gpushare bench", cli_openloop_opts, CLI_N_OPENLOOP_OPTS, NULL },
	CLI_GROUP(NULL, sweep_rate_opt, NULL),
	{ NULL, cli_peak_opts, CLI_N_PEAK_OPTS, NULL },
};

const struct cli_cmd cli_sweep_cmd = {
	.name = "sweep",
	.usage = "gpushare sweep --out DIR [options] [--<workload option> VALUE]...\n"
		 "gpushare sweep --out DIR [options] [--mode request|job] [--jobs K] -- CMD [ARGS...]",
	.about = "Run every cell of workload shapes x strategies x workers x batch sizes, repeated,\n"
		 "in interleaved order; append each finished run to DIR/" GPUSHARE_SWEEP_RESULTS_FILE "; write the report.",
	.groups = sweep_groups,
	.n_groups = CLI_N(sweep_groups),
	.epilog = "Open-loop load: --load open --rate LIST; the report draws p99 against the offered\n"
		  "rate per strategy and marks the highest rate within --slo-p99.\n"
		  "Peak search: --load open --rate R --find-peak --slo pNN=D: every cell searches the\n"
		  "highest rate within the bound as gpushare bench --find-peak does, starting at R\n"
		  "(one rate, not a list); the report tabulates the peaks per strategy and worker\n"
		  "count and names the highest.\n"
		  "\n"
		  "Workload options (gpushare bench --help lists them) apply to every shape whose\n"
		  "workload has them. mps and mps-split cells share one private MPS daemon, started\n"
		  "once and stopped at the end (or on Ctrl-C).",
	.notes = (const struct cli_exit_note[]){ { EXIT_PARTIAL, "some runs failed (they are recorded)" },
						 { EXIT_IO, "DIR or its results file unusable" } },
	.n_notes = 2,
};

/* ---- progress ---- */

struct progress_state {
	bool tty;
	bool line_open;
	/* The peak-search step last shown, so each step gets one line. */
	const struct gpushare_sweep_cell *step_cell;
	int step_repeat, step;
};

static void fmt_clock(double s, char *buf, size_t len)
{
	/* Clamped to 99:59:59 so the text always fits. */
	int t = s < 0 || !isfinite(s) ? -1 : s > 359999.0 ? 359999 : (int)(s + 0.5);

	if (t < 0)
		snprintf(buf, len, "--:--");
	else if (t >= 3600)
		snprintf(buf, len, "%d:%02d:%02d", t / 3600 % 100, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%02d:%02d", t / 60 % 60, t % 60);
}

/* A finished peak search in words: "peak 389/s (missed at 424/s), 6 steps". */
static void fmt_peak(const struct gpushare_bench_peak *pk, char *buf, size_t len)
{
	char a[32], b[32];

	if (!pk->found)
		snprintf(buf, len, "no rate tried met the bound (%s)", pk->note[0] ? pk->note : "none passed");
	else if (pk->upper > 0)
		snprintf(buf, len, "peak %s/s (missed at %s/s), %d steps", gpushare_fmt_si(pk->rate, a, sizeof(a)),
			 gpushare_fmt_si(pk->upper, b, sizeof(b)), pk->n_steps);
	else
		snprintf(buf, len, "peak at least %s/s, no rate tried missed the bound (%s), %d steps",
			 gpushare_fmt_si(pk->rate, a, sizeof(a)), pk->note[0] ? pk->note : "search stopped", pk->n_steps);
}

static void show_progress(void *arg, const struct gpushare_sweep_progress *p)
{
	struct progress_state *ps = arg;
	char el[16], eta[16], what[160], rate[32];
	unsigned total = p->runs_planned ? p->runs_planned : 1;
	int step = !p->run_done && p->bench ? p->bench->peak_step : 0;

	fmt_clock(p->elapsed_seconds, el, sizeof(el));
	fmt_clock(p->eta_seconds, eta, sizeof(eta));
	{
		char tp[40] = "", pct[32];
		struct gpushare_buf shape = { 0 };

		/* A set thread percentage of mps-split: " t50%", a mix's split " t25/75%". */
		if (p->cell->thread_pct > 0)
			snprintf(tp, sizeof(tp), " t%s%%", gpushare_sweep_cell_thread_pct_text(p->cell, pct, sizeof(pct)));
		/* The shape is the user's command or label: through the terminal sanitiser. */
		gpushare_utf8_term(&shape, p->shape_label);
		snprintf(what, sizeof(what), "%s %s w%d b%ld%s #%d", shape.failed ? "?" : gpushare_buf_str(&shape),
			 gpushare_strategy_name(p->cell->strategy), p->cell->workers, p->cell->batch, tp, p->repeat + 1);
		gpushare_buf_release(&shape);
	}
	if (ps->tty) {
		char bar[31];
		unsigned filled = (unsigned)(30.0 * p->runs_done / total);

		for (unsigned i = 0; i < 30; i++)
			bar[i] = i < filled ? '#' : '-';
		bar[30] = '\0';
		fprintf(stderr, "\r\033[K[%s] %u/%u  %s", bar, p->runs_done, p->runs_planned, what);
		if (step > 0)
			fprintf(stderr, " peak step %d at %s/s", step, gpushare_fmt_si(p->bench->rate, rate, sizeof(rate)));
		if (!p->run_done && p->bench && p->bench->phase == GPUSHARE_BENCH_MEASURING && p->bench->total_seconds > 0)
			fprintf(stderr, " %.1f/%.1fs", p->bench->elapsed_seconds, p->bench->total_seconds);
		fprintf(stderr, "  elapsed %s  ETA %s", el, eta);
		ps->line_open = true;
		fflush(stderr);
		return;
	}
	if (!p->run_done) {
		/* A peak search: one line as each step starts. */
		if (step > 0 && (step != ps->step || p->cell != ps->step_cell || p->repeat != ps->step_repeat)) {
			ps->step = step;
			ps->step_cell = p->cell;
			ps->step_repeat = p->repeat;
			fprintf(stderr, "gpushare: sweep: %u/%u %s: peak search step %d at %s/s\n", p->runs_done + 1,
				p->runs_planned, what, step, gpushare_fmt_si(p->bench->rate, rate, sizeof(rate)));
			fflush(stderr);
		}
		return;
	}
	if (p->run_ok && p->peak) {
		char pk[256];

		fmt_peak(p->peak, pk, sizeof(pk));
		fprintf(stderr, "gpushare: sweep: %u/%u %s: %s; elapsed %s, ETA %s\n", p->runs_done, p->runs_planned, what,
			pk, el, eta);
	} else if (p->run_ok) {
		char ips[32];

		fprintf(stderr, "gpushare: sweep: %u/%u %s: %s; elapsed %s, ETA %s\n", p->runs_done, p->runs_planned, what,
			gpushare_fmt_rate(p->items_per_second, p->cell && p->cell->n_mix >= 2 ? "score" : "items/s", ips, sizeof(ips)), el, eta);
	} else {
		fprintf(stderr, "gpushare: sweep: %u/%u %s: failed or partial; elapsed %s, ETA %s\n", p->runs_done,
			p->runs_planned, what, el, eta);
	}
	fflush(stderr);
}

/* ---- options ---- */

static int bad_value(const char *opt, const char *value)
{
	return cli_bad_value("sweep", opt, value);
}

static int make_out_dir(const char *out)
{
	struct stat st;

	if (!*out)
		return cli_error(EXIT_USAGE, "sweep: empty --out");
	if (mkdir(out, 0755) != 0 && errno != EEXIST)
		return cli_error(EXIT_IO, "sweep: cannot create --out '%s': %s", out, strerror(errno));
	if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode))
		return cli_error(EXIT_IO, "sweep: --out '%s' is not a directory", out);
	if (access(out, W_OK | X_OK) != 0)
		return cli_error(EXIT_IO, "sweep: cannot write in --out '%s': %s", out, strerror(errno));
	return EXIT_OK;
}

/* Options that do not change what is measured: given again, they apply. */
static const char *const sweep_free_opts[] = { "out", "resume", "quiet", "no-report", "metrics-listen",
					       "metrics-buckets", "slo-p99", "start-timeout", "mps-pipe-dir", "halt" };

static int cmd_sweep_run(int argc, char **argv);

int cmd_sweep(int argc, char **argv)
{
	static const struct cli_resume r = { &cli_sweep_cmd, GPUSHARE_SWEEP_RESULTS_FILE, sweep_free_opts,
					     CLI_N(sweep_free_opts), cmd_sweep_run, false, NULL };

	return cli_resume(&r, argc, argv);
}

static int cmd_sweep_run(int argc, char **argv)
{
	static struct sweep_args a;  /* large: kept off the stack */
	struct gpushare_sweep_config *s = &a.s;
	struct cli_parse p;
	const char *wl_names[MAX_WL_OPTS];
	const char *wl_values[MAX_WL_OPTS] = { 0 };
	size_t n_wl = cli_sweep_prescan(&cli_sweep_cmd, argc, argv, wl_names, MAX_WL_OPTS);
	const char *workloads, *out;
	char path[GPUSHARE_PATH_MAX + 64], **cmdline;
	bool quiet, workload_given;
	struct cli_command_opts *co = &a.sw.run.co;
	struct progress_state ps = { 0 };
	struct gpushare_sweep_summary sum;
	int rc, code;

	memset(&a, 0, sizeof(a));
	a.sw.s = s;
	a.sw.run.c = &s->bench;
	a.workloads = "matmul";
	if (gpushare_sweep_config_init(s))
		return cli_fail(GPUSHARE_E_NOT_FOUND, "sweep");

	/* Everything after the first "--" is the command; options stop there. */
	cli_command_scan(co, argc, argv);
	cli_parse_init(&p, &cli_sweep_cmd, co->opt_argc, argv);
	p.extra = wl_names;
	p.n_extra = n_wl;
	p.whose = "the workloads";
	p.extra_values = wl_values;
	if (!cli_parse_options(&p, &a))
		return p.status;
	workloads = a.workloads;
	out = a.out;
	quiet = a.quiet;
	workload_given = cli_parse_given(&p, "workload");
	if (p.optind < co->opt_argc)
		return cli_unexpected_argument("sweep", argv[p.optind]);
	if (!out)
		return cli_error(EXIT_USAGE, "sweep: --out DIR is required (where results and report go)");
	if ((code = cli_sweep_apply_command(co, "sweep", argc, argv, workload_given, s)))
		return code;
	if (co->repeats)
		s->repeats = co->repeats;
	if (co->target_noise > 0)
		s->target_noise = co->target_noise;
	if (co->max_repeats)
		s->max_repeats = co->max_repeats;
	if (s->bench.command) {
		if (gpushare_sweep_set_command(s, s->bench.command, s->bench.command_mode))
			return cli_error(EXIT_USAGE, "sweep: %s", gpushare_errdetail());
	} else {
		char buf[1024], *save = NULL, *item;
		size_t len = strlen(workloads);

		if (len >= sizeof(buf))
			return cli_error(EXIT_USAGE, "sweep: --workload list is too long");
		if (workloads[0] == ',' || workloads[len - 1] == ',' || strstr(workloads, ",,"))
			return cli_error(EXIT_USAGE, "sweep: invalid --workload '%s': empty item", workloads);
		snprintf(buf, sizeof(buf), "%s", workloads);
		for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
			if (gpushare_sweep_add_shape(s, item))
				return bad_value("--workload", item); /* the shape at fault, not the whole list */
		}
	}
	if ((code = cli_sweep_shape_options("sweep", s, n_wl, wl_names, wl_values)))
		return code;
	if (gpushare_sweep_config_check(s))
		return cli_error(EXIT_USAGE, "sweep: %s", gpushare_errdetail());
	for (size_t i = 0; i < s->n_strategies; i++) {
		if (!gpushare_strategy_uses_mps(s->strategies[i]))
			continue;
		for (size_t w = 0; w < s->n_workers; w++) {
			if (s->workers[w] > GPUSHARE_MPS_MAX_CLIENTS_PER_GPU) {
				cli_warn_mps_clients(s->workers[w]);
				break;
			}
		}
	}
	code = make_out_dir(out);
	if (code)
		return code;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", out, GPUSHARE_SWEEP_RESULTS_FILE) >= sizeof(path))
		return cli_error(EXIT_USAGE, "sweep: --out '%s' is too long", out);
	{
		struct stat st;

		if (!s->resume && stat(path, &st) == 0 && st.st_size > 0)
			return cli_error(EXIT_USAGE, "sweep: '%s' already holds runs; give --resume to continue that sweep, or another --out",
					 path);
		if (s->resume && stat(path, &st) != 0)
			cli_warn("--resume: no results file '%s' yet; starting a new sweep", path);
	}

	cmdline = cli_command_line(argc, argv);
	if (!cmdline)
		return cli_fail(GPUSHARE_E_NOMEM, "sweep");
	s->bench.argc = argc + 1;
	s->bench.argv = cmdline;
	if (!quiet) {
		ps.tty = isatty(STDERR_FILENO) == 1;
		s->progress = show_progress;
		s->progress_arg = &ps;
	}
	cli_catch_interrupts();
	cli_announce_metrics("sweep");
	cli_announce_preload("sweep", quiet);

	rc = gpushare_sweep_run(s, path, &sum);
	gpushare_bench_preload_release();
	if (ps.line_open)
		fputs("\r\033[K", stderr);
	code = EXIT_OK;
	if (rc == GPUSHARE_E_INTERRUPTED) {
		code = cli_error(EXIT_INTERRUPTED, "sweep: interrupted; %u runs recorded in '%s' (continue with --resume)",
				 sum.runs_done, path);
	} else if (rc) {
		code = cli_run_failed("sweep", rc);
	} else if (!quiet) {
		fprintf(stderr, "gpushare: sweep: %u runs recorded in '%s'%s", sum.runs_done, path,
			sum.runs_skipped ? "" : "\n");
		if (sum.runs_skipped)
			fprintf(stderr, ", %u found there already\n", sum.runs_skipped);
	}
	if (!a.no_report && (sum.runs_done || sum.runs_skipped)) {
		int rcode = cli_report_run(out, out, a.slo_seconds, quiet ? CLI_REPORT_SILENT : CLI_REPORT_RECOMMENDATION);

		if (!code)
			code = rcode;
	}
	if (!code && sum.halted)
		code = cli_error(EXIT_PARTIAL, "sweep: halted after %u failed runs (--halt %u); %u runs recorded in '%s', "
				 "%u of them ok; continue with --resume", sum.runs_failed, s->halt, sum.runs_done, path,
				 sum.runs_done - sum.runs_failed);
	else if (!code && sum.runs_failed)
		code = cli_error(EXIT_PARTIAL, "sweep: %u of %u runs failed or were partial; they are recorded with their error",
				 sum.runs_failed, sum.runs_done);
	free(cmdline);
	gpushare_sweep_config_release(s);
	return code;
}
