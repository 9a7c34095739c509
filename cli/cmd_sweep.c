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
#include "gpushare/workload.h"

/* Options shared with bench have CLI_OPT_* values (cli/cli.h). */
enum {
	OPT_WORKLOAD = 256, OPT_WORKERS, OPT_BATCH, OPT_OUT, OPT_RESUME, OPT_SLO, OPT_NO_REPORT,
	OPT_WL_FIRST = 1000,
};

/* Its own options; those shared with bench come from cli_shared_options. */
static const struct option sweep_options[] = {
	{ "workload", required_argument, NULL, OPT_WORKLOAD },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "resume", no_argument, NULL, OPT_RESUME },
	{ "slo-p99", required_argument, NULL, OPT_SLO },
	{ "no-report", no_argument, NULL, OPT_NO_REPORT },
	/* The open-loop options (cli/cli_openloop.c), bench and sweep alike. */
	CLI_OPENLOOP_OPTIONS,
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
};
#define N_SWEEP_OPTIONS (sizeof(sweep_options) / sizeof(sweep_options[0]))
#define MAX_WL_OPTS (GPUSHARE_WL_MAX_OPTS * 5)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpushare sweep --out DIR [options] [--<workload option> VALUE]...\n"
		"       gpushare sweep --out DIR [options] [--mode request|job] [--jobs K] -- CMD [ARGS...]\n\n"
		"Run every cell of workload shapes x strategies x workers x batch sizes, repeated,\n"
		"in interleaved order; append each finished run to DIR/" GPUSHARE_SWEEP_RESULTS_FILE "; write the report.\n\n"
		"  --out DIR              results and report directory (created when absent)\n"
		"  --workload LIST        comma list of shapes NAME[:opt=value[:opt=value]...]\n"
		"                         (default matmul), e.g. matmul:size=4096,transformer\n"
		"  --strategy LIST        timeslice, mps, mps-split, mig, sequential, streams\n"
		"                         (default timeslice,mps)\n"
		"  --workers LIST         worker counts, e.g. 1,3,5,7 (default 1,2,4)\n"
		"  --batch LIST           batch sizes, e.g. 1,2,4,8 (default 1)\n"
		"  --repeats R            runs per cell (default 5); the median is reported\n"
		"  --target-noise P       repeat a cell until the interval of its median throughput,\n"
		"                         at >= 95%% coverage, is within +-P (e.g. 2%%); at least 6\n"
		"                         runs, at most --max-repeats\n"
		"  --max-repeats M        bound of --target-noise (default 20)\n"
		"  --resume               continue the sweep recorded in DIR: recorded runs are skipped\n"
		"  --duration D | --requests R | --warmup D | --warmup-requests W | --start-timeout D\n"
		"  --gpu IDX|UUID | --gpus all|LIST | --mps-pipe-dir DIR\n"
		"                         per run, as for gpushare bench\n"
		"  --metrics-listen [ADDR:]PORT  serve live Prometheus metrics at /metrics for the\n"
		"                         whole sweep, one server; each run's series are labelled\n"
		"                         shape, workers, batch, repeat\n"
		"  --metrics-buckets LIST histogram bounds in seconds (0.001,0.005,...)\n"
		"  --slo-p99 MS           the report also picks the best throughput with p99 under MS\n"
		"  --no-report            do not write the report at the end\n"
		"  -q, --quiet            no progress on stderr\n"
		"  -h, --help             this help\n\n"
		"Your own program as the worker of every run (after '--'; no --workload; as for\n"
		"gpushare bench; not with the streams strategy):\n"
		"  --mode request         (default) it reports each request through GPUSHARE_REPORT_FD;\n"
		"                         each --batch value reaches it as GPUSHARE_BATCH\n"
		"  --mode job             each run to completion is one job (wall time per job)\n"
		"  --jobs K               job mode: K jobs per worker and run (else for --duration)\n"
		"The report names the shape \"command:CMD ARGS\".\n\n"
		"Open-loop load: --load open --rate LIST (rates per second, an axis of the grid) with\n"
		"--arrival, --seed, --dispatch, --drain as for gpushare bench; the report draws p99 against\n"
		"the offered rate per strategy and marks the highest rate within --slo-p99.\n"
		"Peak search: --load open --rate R --find-peak --slo pNN=D [--resolution F]\n"
		"[--tail-samples K] [--rate-max R]: every cell searches the highest rate within the bound\n"
		"as gpushare bench --find-peak does, starting at R (one rate, not a list); the report\n"
		"tabulates the peaks per strategy and worker count and names the highest.\n\n"
		"Workload options (gpushare bench --help lists them) apply to every shape whose\n"
		"workload has them. mps and mps-split cells share one private MPS daemon, started\n"
		"once and stopped at the end (or on Ctrl-C).\n\n"
		"Exit statuses: 0 ok, 2 bad option, 3 no driver, 4/5 MPS, 6 directory, 10 some runs\n"
		"failed (recorded), 11 DIR or its results file unusable, 13 --metrics-listen address\n"
		"in use, 130 interrupted.\n"
		"See gpushare-sweep(1).\n");
}

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
	snprintf(what, sizeof(what), "%s %s w%d b%ld #%d", p->shape_label, gpushare_strategy_name(p->cell->strategy),
		 p->cell->workers, p->cell->batch, p->repeat + 1);
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
			gpushare_fmt_rate(p->items_per_second, "items/s", ips, sizeof(ips)), el, eta);
	} else {
		fprintf(stderr, "gpushare: sweep: %u/%u %s: failed or partial; elapsed %s, ETA %s\n", p->runs_done,
			p->runs_planned, what, el, eta);
	}
	fflush(stderr);
}

/* ---- options ---- */

/* Workload options of every workload named in --workload, so they join the
 * option table. names[] point into the static workload tables. */
static size_t prescan_options(int argc, char **argv, const char **names, size_t max)
{
	size_t n = 0;

	for (int i = 1; i < argc; i++) {
		const char *v;
		char buf[512], *save = NULL, *item;

		if (!strcmp(argv[i], "--"))
			break;
		if (!(v = cli_workload_arg(argc, argv, &i)))
			continue;
		snprintf(buf, sizeof(buf), "%s", v);
		for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
			const struct gpushare_wl_desc *d;

			item[strcspn(item, ":")] = '\0';
			d = gpushare_workload_find(item);
			for (size_t j = 0; d && j < d->n_opts; j++) {
				bool seen = false;

				seen |= cli_option_named(sweep_options, N_SWEEP_OPTIONS, d->opts[j].name);
				for (size_t k = 0; k < n; k++)
					seen |= !strcmp(names[k], d->opts[j].name);
				if (!seen && n < max)
					names[n++] = d->opts[j].name;
			}
		}
	}
	return n;
}

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

int cmd_sweep(int argc, char **argv)
{
	static struct gpushare_sweep_config s;  /* large: kept off the stack */
	struct option longopts[N_SWEEP_OPTIONS + CLI_MAX_SHARED_OPTIONS + MAX_WL_OPTS + 1];
	const char *wl_names[MAX_WL_OPTS];
	const char *wl_values[MAX_WL_OPTS] = { 0 };
	size_t n_wl = prescan_options(argc, argv, wl_names, MAX_WL_OPTS), nv;
	const char *workloads = "matmul", *out = NULL;
	char path[GPUSHARE_PATH_MAX + 64], **cmdline;
	bool quiet = false, no_report = false, workload_given = false;
	struct cli_command_opts co;
	struct progress_state ps = { 0 };
	struct gpushare_sweep_summary sum;
	double slo = 0;
	long vals[GPUSHARE_SWEEP_MAX_VALUES];
	int opt, rc, code;

	if (gpushare_sweep_config_init(&s))
		return cli_fail(GPUSHARE_E_NOT_FOUND, "sweep");
	cli_options_table(longopts, sweep_options, N_SWEEP_OPTIONS, wl_names, n_wl, OPT_WL_FIRST);

	/* Everything after the first "--" is the command; options stop there. */
	cli_command_scan(&co, argc, argv);
	while ((opt = getopt_long(co.opt_argc, argv, ":hq", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			return cli_finish_stdout(EXIT_OK);
		case 'q': quiet = true; break;
		case OPT_WORKLOAD:
			if (!*optarg)
				return cli_error(EXIT_USAGE, "sweep: invalid --workload '': empty list");
			workloads = optarg;
			workload_given = true;
			break;
		case OPT_WORKERS:
			if (gpushare_sweep_parse_int_list(optarg, 1, GPUSHARE_BENCH_MAX_WORKERS, vals, &nv))
				return bad_value("--workers", optarg);
			for (size_t i = 0; i < nv; i++)
				s.workers[i] = (int)vals[i];
			s.n_workers = nv;
			break;
		case OPT_BATCH:
			if (gpushare_sweep_parse_int_list(optarg, 1, 1L << 30, s.batches, &s.n_batches))
				return bad_value("--batch", optarg);
			break;
		case OPT_OUT: out = optarg; break;
		case OPT_RESUME: s.resume = true; break;
		case OPT_SLO:
			if (cli_parse_slo(optarg, &slo))
				return cli_error(EXIT_USAGE, "sweep: invalid --slo-p99 '%s' (expected milliseconds, e.g. 5 or 500us)",
						 optarg);
			break;
		case OPT_NO_REPORT: no_report = true; break;
		case ':':
		case '?':
			return cli_option_error("sweep", opt, argv[optind - 1], "the workloads");
		default:
			if (opt >= CLI_OPT_FIRST && opt < CLI_OPT_END) {
				if ((code = cli_command_option(&co, "sweep", opt, optarg, &s.bench)))
					return code;
				break;
			}
			if (opt == CLI_OPEN_RATE) {
				if ((code = cli_openloop_rate_list("sweep", optarg, s.rates, GPUSHARE_SWEEP_MAX_VALUES, &s.n_rates)))
					return code;
				break;
			}
			if (opt >= CLI_OPEN_FIRST && opt < CLI_OPEN_END) {
				if ((code = cli_openloop_option("sweep", opt, optarg, &s.bench)))
					return code;
				break;
			}
			if (opt >= OPT_WL_FIRST && opt < OPT_WL_FIRST + (int)n_wl) {
				wl_values[opt - OPT_WL_FIRST] = optarg;
				break;
			}
			return cli_usage_error("sweep", '?', optopt, argv[optind - 1]);
		}
	}
	if (optind < co.opt_argc)
		return cli_unexpected_argument("sweep", argv[optind]);
	if (!out)
		return cli_error(EXIT_USAGE, "sweep: --out DIR is required (where results and report go)");
	if ((code = cli_command_apply(&co, "sweep", argc, argv, workload_given, &s.bench)))
		return code;
	if (co.strategy_given) {
		memcpy(s.strategies, s.bench.strategies, s.bench.n_strategies * sizeof(s.strategies[0]));
		s.n_strategies = s.bench.n_strategies;
	}
	if (co.repeats)
		s.repeats = co.repeats;
	if (co.target_noise > 0)
		s.target_noise = co.target_noise;
	if (co.max_repeats)
		s.max_repeats = co.max_repeats;
	if (s.bench.command) {
		if (gpushare_sweep_set_command(&s, s.bench.command, s.bench.command_mode))
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
			if (gpushare_sweep_add_shape(&s, item))
				return bad_value("--workload", item); /* the shape at fault, not the whole list */
		}
	}
	for (size_t i = 0; i < n_wl; i++) {
		char name[80];

		if (!wl_values[i])
			continue;
		snprintf(name, sizeof(name), "--%s", wl_names[i]);
		if (gpushare_sweep_set_option(&s, wl_names[i], wl_values[i]))
			return bad_value(name, wl_values[i]);
	}
	if (gpushare_sweep_config_check(&s))
		return cli_error(EXIT_USAGE, "sweep: %s", gpushare_errdetail());
	for (size_t i = 0; i < s.n_strategies; i++) {
		if (s.strategies[i] != GPUSHARE_STRATEGY_MPS && s.strategies[i] != GPUSHARE_STRATEGY_MPS_SPLIT)
			continue;
		for (size_t w = 0; w < s.n_workers; w++) {
			if (s.workers[w] > GPUSHARE_MPS_MAX_CLIENTS_PER_GPU) {
				cli_warn_mps_clients(s.workers[w]);
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

		if (!s.resume && stat(path, &st) == 0 && st.st_size > 0)
			return cli_error(EXIT_USAGE, "sweep: '%s' already holds runs; give --resume to continue that sweep, or another --out",
					 path);
		if (s.resume && stat(path, &st) != 0)
			cli_warn("--resume: no results file '%s' yet; starting a new sweep", path);
	}

	cmdline = cli_command_line(argc, argv);
	if (!cmdline)
		return cli_fail(GPUSHARE_E_NOMEM, "sweep");
	s.bench.argc = argc + 1;
	s.bench.argv = cmdline;
	if (!quiet) {
		ps.tty = isatty(STDERR_FILENO) == 1;
		s.progress = show_progress;
		s.progress_arg = &ps;
	}
	cli_catch_interrupts();

	rc = gpushare_sweep_run(&s, path, &sum);
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
	if (!no_report && (sum.runs_done || sum.runs_skipped)) {
		int rcode = cli_report_run(out, out, slo, quiet ? CLI_REPORT_SILENT : CLI_REPORT_RECOMMENDATION);

		if (!code)
			code = rcode;
	}
	if (!code && sum.runs_failed)
		code = cli_error(EXIT_PARTIAL, "sweep: %u of %u runs failed or were partial; they are recorded with their error",
				 sum.runs_failed, sum.runs_done);
	free(cmdline);
	gpushare_sweep_config_release(&s);
	return code;
}
