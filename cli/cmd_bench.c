/*
 * gpushare bench: run N workers under each sharing strategy and compare.
 * Parses the options (the workload's own options come from its table in
 * include/gpushare/workload.h), hands the run to gpushare_bench_run(), shows
 * progress on stderr and prints the results as a table, JSON or CSV.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gpushare/bench.h"
#include "gpushare/format.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/utf8.h"
#include "gpushare/workload.h"
#include "gpushare/internal/bench.h"

/* ---- options ---- */

#define STR_(x) #x
#define STR(x) STR_(x)

/* The mps-split lists, parsed once the workers are known. */
struct raw_lists {
	const char *thread_pct, *mem_limit, *priority;
};

/* Where bench's options go (cli_parse_options()). */
struct bench_args {
	struct cli_run_args run;          /* first: the shared options' place; run.c = &c */
	struct gpushare_bench_config c;
	struct raw_lists raw;
	bool json, csv, quiet, verbose;
	const char *out;
};

#define AT(field) CLI_AT(struct bench_args, field)

static const struct cli_opt bench_opts[] = {
	{ .id = OPT_WORKLOAD, .long_name = "workload", .kind = CLI_ENUM, .value_name = "NAME|A+B",
	  .help = "workload (see below), or a mix of 2 to 4 sharing the GPU, each NAME[:opt=value]..., "
	  "e.g. transformer+matmul:size=1024", .def = "matmul", .values = "@workloads",
	  .to = CLI_TO_NONE /* prescan_workload() */ },
	{ .id = OPT_BATCH, .long_name = "batch", .kind = CLI_INT, .value_name = "B", .help = "items per request",
	  .def = "1", .min = 1, .max = 1L << 30, .to = CLI_TO_LONG, AT(c.wl.batch) },
	{ .id = OPT_WORKERS, .long_name = "workers", .kind = CLI_INT, .value_name = "N",
	  .help = "workers (1.." STR(GPUSHARE_BENCH_MAX_WORKERS) "; MPS allows 48 clients per GPU)", .def = "4",
	  .min = 1, .max = GPUSHARE_BENCH_MAX_WORKERS, .to = CLI_TO_INT, AT(c.workers) },
	{ .id = OPT_ACCOUNT, .long_name = "account", .kind = CLI_FLAG,
	  .help = "load the accounting library (libgpushare-account.so; accounting.md in the documentation) into the workers: per-client GPU time and attained share, at a cost of several per cent of a launch-bound workload's rate; GPUSHARE_ACCOUNT=1 does the same",
	  .to = CLI_TO_TRUE, AT(c.account) },
};

static const struct cli_opt bench_split_opts[] = {
	{ .id = OPT_THREAD_PCT, .long_name = "thread-percentage", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "mps-split: SM share per worker, one value or one per worker; a mix: each workload's share, 30/70",
	  .def = "100/N", .to = CLI_TO_STR, AT(raw.thread_pct) },
	{ .id = OPT_MEM_LIMIT, .long_name = "mem-limit", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "mps-split: pinned device memory per worker (4G or 4G,2G,...)", .to = CLI_TO_STR, AT(raw.mem_limit) },
	{ .id = OPT_PRIORITY, .long_name = "priority", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "mps-split: client priority per worker (0 normal, 1 below)", .to = CLI_TO_STR, AT(raw.priority) },
	{ .id = OPT_CEILING, .long_name = "ceiling", .kind = CLI_FLAG,
	  .help = "also run one process with batch x N and report E_N", .to = CLI_TO_TRUE, AT(c.ceiling) },
	{ .id = CLI_OPT_REPEATS, .long_name = "repeats", .kind = CLI_INT, .value_name = "K",
	  .help = "run every strategy K times, interleaved (default 1); prints mean +- sd, min...max and a relative summary",
	  .min = 1, .max = 10000, CLI_RUN },
	{ .id = CLI_OPT_TARGET_NOISE, .long_name = "target-noise", .kind = CLI_PERCENT, .value_name = "P",
	  .help = "after K, repeat until each median items/s is known to +-P (e.g. 2%) at >= 95% coverage (at least 6 runs)",
	  CLI_RUN },
	{ .id = CLI_OPT_MAX_REPEATS, .long_name = "max-repeats", .kind = CLI_INT, .value_name = "M",
	  .help = "bound of --target-noise", .def = "20", .min = 1, .max = 10000, CLI_RUN },
	{ .id = OPT_JSON, .long_name = "json", .kind = CLI_FLAG, .help = "JSON on stdout (not with --csv)",
	  .to = CLI_TO_TRUE, AT(json) },
	{ .id = OPT_CSV, .long_name = "csv", .kind = CLI_FLAG, .help = "CSV on stdout (not with --json)",
	  .to = CLI_TO_TRUE, AT(csv) },
	{ .id = OPT_OUT, .long_name = "out", .kind = CLI_FILE, .value_name = "FILE",
	  .help = "also write the JSON document to FILE (atomically)", .to = CLI_TO_STR, AT(out) },
	{ .id = 'q', .short_name = 'q', .long_name = "quiet", .kind = CLI_FLAG, .help = "no progress on stderr",
	  .to = CLI_TO_TRUE, AT(quiet) },
	{ .id = 'v', .short_name = 'v', .long_name = "verbose", .kind = CLI_FLAG,
	  .help = "one line per worker in the table", .to = CLI_TO_TRUE, AT(verbose) },
};

static const struct cli_opt bench_rate_opt[] = {
	{ .id = CLI_OPEN_RATE, .long_name = "rate", .kind = CLI_NUMBER, .value_name = "R",
	  .help = "arrivals per second, all workers together", CLI_OPEN },
};

static void bench_more_help(FILE *f);

static const struct cli_group bench_groups[] = {
	CLI_GROUP("Options", bench_opts, NULL),
	{ NULL, cli_run_opts, CLI_N_RUN_OPTS, NULL },
	CLI_GROUP(NULL, bench_split_opts, NULL),
	{ NULL, cli_metrics_opts, CLI_N_METRICS_OPTS, NULL },
	{ "Your own program as the worker (after '--'; run without a shell)", cli_program_opts, CLI_N_PROGRAM_OPTS, NULL },
	{ "Open-loop load", cli_openloop_opts, CLI_N_OPENLOOP_OPTS, NULL },
	CLI_GROUP(NULL, bench_rate_opt, NULL),
	{ NULL, cli_peak_opts, CLI_N_PEAK_OPTS, NULL },
};

const struct cli_cmd cli_bench_cmd = {
	.name = "bench",
	.usage = "gpushare bench [options] [--<workload option> VALUE]...\n"
		 "gpushare bench [options] [--mode request|job] [--jobs K] -- CMD [ARGS...]",
	.about = "Run N workers under each sharing strategy in turn, everything else equal, and\n"
		 "compare throughput, latency and fairness.",
	.groups = bench_groups,
	.n_groups = CLI_N(bench_groups),
	.more_help = bench_more_help,
};

static void bench_more_help(FILE *f)
{
	const struct gpushare_wl_desc *list;
	size_t n = gpushare_workloads(&list);

	fprintf(f, "\nA mix (--workload A+B, up to 4 workloads) runs --workers / M workers of each of its M\n"
		"workloads side by side; an option given as --NAME applies to every workload of the mix that has\n"
		"it, one in a spec (A:size=1024) to that one. Under mps-split, --thread-percentage 30/70 gives\n"
		"each workload its share of the GPU.\n");
	fprintf(f, "\nWorkloads and their options:\n");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "  %-12s %s\n", list[i].name, list[i].summary);
		for (size_t j = 0; j < list[i].n_opts; j++)
			fprintf(f, "      --%-14s %s (default %s)\n", list[i].opts[j].name, list[i].opts[j].help,
				list[i].opts[j].def);
	}
}

/* ---- progress on stderr ---- */

struct progress_state {
	bool tty;
	int last_strategy, last_phase, last_run, last_repeat;
	double last_plain;                  /* elapsed of the last plain line */
	bool line_open;                     /* a \r line is on the terminal */
};

static const char *phase_name(int phase)
{
	switch (phase) {
	case GPUSHARE_BENCH_STARTING: return "starting";
	case GPUSHARE_BENCH_WARMUP: return "warm-up";
	case GPUSHARE_BENCH_MEASURING: return "measuring";
	default: return "stopping";
	}
}

static void show_progress(void *arg, const struct gpushare_bench_progress *p)
{
	struct progress_state *ps = arg;
	char run[64] = "", step[96] = "", what[96], util[24] = "";
	bool changed = (int)p->strategy != ps->last_strategy || (int)p->phase != ps->last_phase || p->run != ps->last_run ||
		       p->repeat != ps->last_repeat;

	if (p->n_repeats > 1 && p->n_runs > 1)
		snprintf(run, sizeof(run), " #%d/%d worker %d/%d", p->repeat + 1, p->n_repeats, p->run + 1, p->n_runs);
	else if (p->n_repeats > 1)
		snprintf(run, sizeof(run), " #%d/%d", p->repeat + 1, p->n_repeats);
	else if (p->n_runs > 1)
		snprintf(run, sizeof(run), " worker %d/%d", p->run + 1, p->n_runs);
	if (p->peak_step > 0) {
		char rate[32];

		snprintf(step, sizeof(step), " peak search step %d at %s/s", p->peak_step,
			 gpushare_fmt_si(p->rate, rate, sizeof(rate)));
	}
	if (p->phase == GPUSHARE_BENCH_STARTING)
		snprintf(what, sizeof(what), "%u/%u ready", p->ready, p->n_slots);
	else if (p->total_seconds > 0)
		snprintf(what, sizeof(what), "%.1f/%.1f s, %" PRIu64 " requests", p->elapsed_seconds, p->total_seconds,
			 p->requests);
	else if (p->requests_target)
		snprintf(what, sizeof(what), "%" PRIu64 "/%" PRIu64 " requests", p->requests, p->requests_target);
	else
		snprintf(what, sizeof(what), "%.1f s, %" PRIu64 " requests", p->elapsed_seconds, p->requests);
	if (p->util_gpu_pct >= 0)
		snprintf(util, sizeof(util), ", GPU %d%%", p->util_gpu_pct);
	if (ps->tty) {
		fprintf(stderr, "\r\033[K%s%s%s: %s %s%s", gpushare_strategy_name(p->strategy), run, step,
			phase_name(p->phase), what, util);
		ps->line_open = true;
	} else if (changed || p->elapsed_seconds - ps->last_plain >= 5.0) {
		fprintf(stderr, "gpushare: %s%s%s: %s %s%s\n", gpushare_strategy_name(p->strategy), run, step,
			phase_name(p->phase), what, util);
		ps->last_plain = changed ? 0 : p->elapsed_seconds;
	}
	fflush(stderr);
	ps->last_strategy = p->strategy;
	ps->last_phase = p->phase;
	ps->last_run = p->run;
	ps->last_repeat = p->repeat;
}

/* A run-to-run spread above this coefficient of variation is warned about. */
#define SPREAD_WARN_CV 0.05

/* Warn about strategies whose throughput varied much between repeats. */
static void warn_spread(const struct gpushare_bench_report *r, double target_noise)
{
	for (size_t i = 0; i < r->n_summary; i++) {
		const struct gpushare_bench_summary *s = &r->summary[i];
		const struct gpushare_sample_stats *t = &s->items_per_second;
		char cv[16];

		if (t->n < 2 || !(t->cv > SPREAD_WARN_CV))
			continue;
		gpushare_fmt_percent(t->cv, cv, sizeof(cv));
		if (target_noise > 0)
			cli_warn("%s: throughput varies %s run to run (coefficient of variation over %zu runs); "
				 "the machine may be busy", gpushare_strategy_name(s->strategy), cv, t->n);
		else
			cli_warn("%s: throughput varies %s run to run (coefficient of variation over %zu runs); "
				 "more --repeats, or --target-noise 2%%, give a narrower interval",
				 gpushare_strategy_name(s->strategy), cv, t->n);
	}
}

/* The workload named by --workload, looked up before the real parse so its
 * options can join the option table. */
static const char *prescan_workload(int argc, char **argv)
{
	const char *name = NULL;

	for (int i = 1; i < argc; i++) {
		const char *v;

		if (!strcmp(argv[i], "--"))
			break;
		if ((v = cli_workload_arg(argc, argv, &i)))
			name = v;
	}
	return name;
}

static int bad_value(const char *opt, const char *value)
{
	return cli_bad_value("bench", opt, value);
}

/* Whether any strategy (or the ceiling) ran: a table of strategies that
 * all were skipped for the one error would only repeat it. */
static bool ran_any(const struct gpushare_bench_report *r)
{
	if (r->ceiling && r->ceiling->status != GPUSHARE_RESULT_SKIPPED)
		return true;
	for (size_t i = 0; i < r->n_results; i++) {
		if (r->results[i].status != GPUSHARE_RESULT_SKIPPED)
			return true;
	}
	return false;
}

static int output_report(const struct gpushare_bench_report *r, bool json, bool csv, bool verbose,
			 const char *out)
{
	int code = EXIT_OK;

	if (json) {
		char *text;

		if (gpushare_bench_report_json(r, &text))
			return cli_fail(GPUSHARE_E_NOMEM, "bench");
		code = cli_print_json_and_free(text);
	} else if (csv) {
		if (gpushare_bench_write_csv(r, stdout))
			code = cli_fail(GPUSHARE_E_IO, "bench");
		code = cli_finish_stdout(code);
	} else {
		/* Labels, commands and failure reasons: through the terminal sanitiser. */
		FILE *t = gpushare_utf8_term_stream(stdout);

		if (!t || gpushare_bench_write_table(r, t, verbose))
			code = cli_fail(t ? GPUSHARE_E_IO : GPUSHARE_E_NOMEM, "bench");
		if (t && fclose(t) != 0 && code == EXIT_OK)
			code = cli_fail(GPUSHARE_E_IO, "bench");
		code = cli_finish_stdout(code);
	}
	if (out) {
		char *text;
		int rc = gpushare_bench_report_json(r, &text);

		if (!rc) {
			rc = gpushare_write_file_atomic(out, text, strlen(text));
			free(text);
		}
		if (rc)
			code = cli_fail(rc, "bench: --out");
	}
	return code;
}

int cmd_bench(int argc, char **argv)
{
	static struct bench_args a;  /* large: kept off the stack */
	struct gpushare_bench_config *c = &a.c;
	struct cli_parse p;
	const struct gpushare_wl_desc *wl;
	const char *wl_name = prescan_workload(argc, argv);
	const char *wl_names[GPUSHARE_WL_MAX_OPTS * GPUSHARE_BENCH_MAX_MIX];
	const char *wl_values[GPUSHARE_WL_MAX_OPTS * GPUSHARE_BENCH_MAX_MIX] = { 0 };
	char label[GPUSHARE_BENCH_MAX_MIX * GPUSHARE_BENCH_MIX_LABEL];
	const struct raw_lists *raw = &a.raw;
	struct cli_command_opts *co = &a.run.co;
	struct progress_state ps = { .last_strategy = -1, .last_phase = -1, .last_run = -1 };
	struct gpushare_bench_report report;
	struct gpushare_bench_repeat_opts rep;
	char **cmdline;
	size_t n_wl = 0;
	int rc, code;
	char whose[GPUSHARE_BENCH_MAX_MIX * GPUSHARE_BENCH_MIX_LABEL + 16];

	memset(&a, 0, sizeof(a));
	a.run.c = c;
	if (gpushare_bench_config_init(c))
		return cli_fail(GPUSHARE_E_NOT_FOUND, "bench");
	if (wl_name && !strpbrk(wl_name, "+:") && !gpushare_workload_find(wl_name)) {
		const struct gpushare_wl_desc *list;
		size_t n = gpushare_workloads(&list);
		char names[256] = "";

		for (size_t i = 0; i < n; i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "", list[i].name);
		return cli_error(EXIT_USAGE, "bench: unknown workload '%s' (expected %s)", wl_name, names);
	}
	if (wl_name && gpushare_bench_set_workload(c, wl_name))
		return cli_error(EXIT_USAGE, "bench: --workload: %s", gpushare_errdetail());
	wl = c->wl.desc;
	/* The workload options that join the table: every member's, once. */
	for (int m = 0; m < (c->n_mix >= 2 ? c->n_mix : 1); m++) {
		const struct gpushare_wl_desc *d = c->n_mix >= 2 ? c->mix[m].wl.desc : wl;

		for (size_t i = 0; i < d->n_opts && i < GPUSHARE_WL_MAX_OPTS; i++) {
			bool seen = false;

			for (size_t k = 0; k < n_wl; k++)
				seen |= !strcmp(wl_names[k], d->opts[i].name);
			if (!seen)
				wl_names[n_wl++] = d->opts[i].name;
		}
	}
	/* Everything after the first "--" is the command; options stop there.
	 * A bench option of the same name as a workload option wins. */
	cli_command_scan(co, argc, argv);
	cli_parse_init(&p, &cli_bench_cmd, co->opt_argc, argv);
	p.extra = wl_names;
	p.n_extra = n_wl;
	snprintf(whose, sizeof(whose), "workload '%s'", gpushare_bench_workload_label(c, label, sizeof(label)));
	p.whose = whose;
	p.extra_values = wl_values;
	if (!cli_parse_options(&p, &a))
		return p.status;
	if (cli_parse_given(&p, "workers"))
		c->workers_given = true;
	if (p.optind < co->opt_argc)
		return cli_unexpected_argument("bench", argv[p.optind]);
	if ((code = cli_command_apply(co, "bench", argc, argv, wl_name != NULL, c)))
		return code;
	if (c->command) {
		for (size_t i = 0; i < n_wl; i++) {
			if (wl_values[i])
				return cli_error(EXIT_USAGE, "bench: --%s is an option of workload '%s', not of a command",
						 wl_names[i], wl->name);
		}
		if (c->ceiling && c->command_mode == GPUSHARE_CMD_JOB)
			return cli_error(EXIT_USAGE, "bench: --ceiling needs request mode (it runs one worker with batch x N)");
		if (gpushare_bench_command_check(c))
			return cli_error(EXIT_USAGE, "bench: %s", gpushare_errdetail());
	}
	for (size_t i = 0; i < n_wl; i++) {
		char name[80];

		if (!wl_values[i])
			continue;
		if (gpushare_bench_set_wl_option(c, wl_names[i], wl_values[i])) {
			snprintf(name, sizeof(name), "--%s", wl_names[i]);
			return bad_value(name, wl_values[i]);
		}
	}
	if (c->n_mix < 2 && gpushare_wl_params_check(&c->wl))
		return cli_error(EXIT_USAGE, "bench: invalid options of workload '%s': %s", wl->name, gpushare_errdetail());
	if (a.json && a.csv)
		return cli_error(EXIT_USAGE, "bench: give --json or --csv, not both");
	if (raw->thread_pct && strchr(raw->thread_pct, '/')) {
		if (gpushare_bench_parse_mix_shares(raw->thread_pct, c->n_mix, c->mix_share, &c->n_mix_share))
			return bad_value("--thread-percentage", raw->thread_pct);
	} else if (raw->thread_pct && gpushare_bench_parse_percent_list(raw->thread_pct, c->workers, c->thread_percentage,
								       &c->n_thread_percentage)) {
		return bad_value("--thread-percentage", raw->thread_pct);
	}
	if (raw->mem_limit && gpushare_bench_parse_size_list(raw->mem_limit, c->workers, c->mem_limit_bytes, &c->n_mem_limit))
		return bad_value("--mem-limit", raw->mem_limit);
	if (raw->priority && gpushare_bench_parse_priority_list(raw->priority, c->workers, c->priority, &c->n_priority))
		return bad_value("--priority", raw->priority);
	if (gpushare_bench_config_check(c))
		return cli_error(EXIT_USAGE, "bench: %s", gpushare_errdetail());
	if (a.out && gpushare_check_writable(a.out))
		return cli_error(EXIT_IO, "bench: --out: %s", gpushare_errdetail());
	{
		bool split = false, mps = false;

		for (size_t i = 0; i < c->n_strategies; i++) {
			split |= gpushare_strategy_client_share(c->strategies[i]);
			mps |= gpushare_strategy_uses_mps(c->strategies[i]);
		}
		if (!split && (raw->thread_pct || raw->mem_limit || raw->priority))
			cli_warn("--thread-percentage, --mem-limit and --priority only affect the mps-split strategy");
		if (mps && c->workers > GPUSHARE_MPS_MAX_CLIENTS_PER_GPU)
			cli_warn_mps_clients(c->workers);
	}
	/* The command line for the report, with the program name first. */
	cmdline = cli_command_line(argc, argv);
	if (!cmdline)
		return cli_fail(GPUSHARE_E_NOMEM, "bench");
	c->argc = argc + 1;
	c->argv = cmdline;
	if (!a.quiet) {
		ps.tty = isatty(STDERR_FILENO) == 1;
		c->progress = show_progress;
		c->progress_arg = &ps;
	}
	cli_catch_interrupts();
	cli_announce_metrics("bench");
	cli_announce_preload("bench", a.quiet);

	rep.repeats = co->repeats ? co->repeats : 1;
	rep.target_noise = co->target_noise;
	rep.max_repeats = co->max_repeats ? co->max_repeats : 20;
	if (rep.max_repeats < rep.repeats)
		rep.max_repeats = rep.repeats;
	rc = gpushare_bench_run_repeats(c, &rep, &report);
	gpushare_bench_preload_release();
	if (ps.line_open)
		fputs("\r\033[K", stderr);
	if (rc != GPUSHARE_OK && rc != GPUSHARE_E_INTERRUPTED)
		cli_run_failed("bench", rc);
	warn_spread(&report, rep.target_noise);
	code = EXIT_OK;
	if ((report.n_results > 0 || report.ceiling) && (a.json || a.csv || a.out || rc == GPUSHARE_OK || ran_any(&report)))
		code = output_report(&report, a.json, a.csv, a.verbose, a.out);
	if (rc == GPUSHARE_E_INTERRUPTED) {
		cli_error(EXIT_INTERRUPTED, "bench: interrupted; the results above are partial");
		code = EXIT_INTERRUPTED;
	} else if (rc != GPUSHARE_OK) {
		code = cli_exit_for(rc);
	} else if (report.partial) {
		for (size_t i = 0; i < report.n_results; i++) {
			if (report.results[i].partial)
				cli_error(EXIT_PARTIAL, "bench: %s: %s; marked failed, its workers' measurements kept",
					  gpushare_strategy_name(report.results[i].strategy), report.results[i].failure);
		}
		if (report.ceiling && report.ceiling->partial)
			cli_error(EXIT_PARTIAL, "bench: ceiling: %s; marked failed, its worker's measurements kept",
				  report.ceiling->failure);
		code = EXIT_PARTIAL;
	} else if (code == EXIT_OK) {
		/* A strategy whose window saw no request has no result: the run
		 * is not a success (exit 10, its reason on stderr). */
		for (size_t i = 0; i < report.n_results; i++) {
			if (report.results[i].status == GPUSHARE_RESULT_FAILED) {
				cli_error(EXIT_PARTIAL, "bench: %s: %s", gpushare_strategy_name(report.results[i].strategy),
					  report.results[i].failure);
				code = EXIT_PARTIAL;
			}
		}
	}
	gpushare_bench_report_release(&report);
	free(cmdline);
	return code;
}
