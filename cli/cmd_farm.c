/*
 * gpushare farm: run a queue of jobs on K slots per GPU (lib/farm/farm.c), and
 * gpushare farm status: summarise farm directories (docs/farm.md).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gpushare/bench.h"
#include "gpushare/farm.h"
#include "gpushare/gpushare.h"
#include "gpushare/utf8.h"
#include "gpushare/util.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* Where farm's options go (cli_parse_options()). */
struct farm_args {
	struct gpushare_farm_config c;
	bool dir_given, dry_run, tag, json, quiet, shell, no_shell, no_account;
};

#define AT(field) CLI_AT(struct farm_args, field)

/* --dir DIR or --resume DIR, one of them once. */
static int set_dir(struct cli_parse *p, void *args)
{
	struct farm_args *a = args;

	if (a->dir_given)
		return cli_error(EXIT_USAGE, "farm: give one of --dir, --resume and --rerun-failed, once");
	a->dir_given = true;
	a->c.dir = p->arg;
	a->c.resume = p->opt->id == OPT_RESUME || p->opt->id == OPT_RERUN_FAILED;
	a->c.rerun_failed = p->opt->id == OPT_RERUN_FAILED;
	return EXIT_OK;
}

static int set_strategy(struct cli_parse *p, void *args)
{
	if (cli_parse_sharing_strategy(p->arg, &((struct farm_args *)args)->c.strategy))
		return cli_error(EXIT_USAGE, "farm: invalid --strategy '%s' (expected mps, mps-split or timeslice)", p->arg);
	return EXIT_OK;
}

static int set_mem_per_job(struct cli_parse *p, void *args)
{
	uint64_t b;

	if (gpushare_parse_size(p->arg, &b) || b == 0)
		return cli_error(EXIT_USAGE, "farm: invalid --mem-per-job '%s' (expected a size such as 8G or 512M)", p->arg);
	((struct farm_args *)args)->c.mem_per_job_bytes = b;
	return EXIT_OK;
}

/* --timeout DURATION, or Nx: N times the median of the jobs that ended ok. */
static int set_timeout(struct cli_parse *p, void *args)
{
	struct gpushare_farm_config *c = &((struct farm_args *)args)->c;
	const char *arg = p->arg;
	size_t len = strlen(arg);
	char *end = NULL;

	c->timeout_ns = 0;
	c->timeout_factor = 0;
	if (len > 1 && arg[len - 1] == 'x') {
		c->timeout_factor = strtod(arg, &end);
		if (end != arg + len - 1 || !(c->timeout_factor >= 1 && c->timeout_factor <= 1000000))
			return cli_error(EXIT_USAGE, "farm: invalid --timeout '%s' (expected Nx with N from 1 to "
					 "1000000, e.g. 5x, or a duration such as 90s)", arg);
	} else if (gpushare_parse_duration(arg, &c->timeout_ns) || c->timeout_ns == 0) {
		return cli_error(EXIT_USAGE, "farm: invalid --timeout '%s' (expected a duration such as 90s or 10m, "
				 "or Nx: N times the median job, e.g. 5x)", arg);
	}
	return EXIT_OK;
}

/* The options whose giving the journal records (gpushare_farm_config.given). */
static const struct {
	const char *name;
	unsigned bit;
} farm_given[] = {
	{ "slots", GPUSHARE_FARM_GIVEN_SLOTS }, { "strategy", GPUSHARE_FARM_GIVEN_STRATEGY },
	{ "gpus", GPUSHARE_FARM_GIVEN_GPUS }, { "mem-per-job", GPUSHARE_FARM_GIVEN_MEM_PER_JOB },
	{ "retries", GPUSHARE_FARM_GIVEN_RETRIES }, { "timeout", GPUSHARE_FARM_GIVEN_TIMEOUT },
};

static const struct cli_opt farm_opts[] = {
	{ .id = OPT_DIR, .long_name = "dir", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "the farm directory (created; must not hold a journal yet)",
	  .to = CLI_TO_CALL, .call = set_dir },
	{ .id = OPT_RESUME, .long_name = "resume", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "continue the farm in DIR: its jobs come from DIR/jobs.jsonl, or from a job list given again, which must be the same",
	  .to = CLI_TO_CALL, .call = set_dir },
	{ .id = OPT_RERUN_FAILED, .long_name = "rerun-failed", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "continue the farm in DIR as --resume does, and run again the jobs that failed for good (failed or "
	  "timed out with their retries used up, or refused), each with the recorded options and 1 + --retries attempts",
	  .to = CLI_TO_CALL, .call = set_dir },
	{ .id = OPT_SLOTS, .long_name = "slots", .kind = CLI_INT, .value_name = "K",
	  .help = "jobs at once per GPU (1.." STR(GPUSHARE_FARM_MAX_SLOTS) "); default: a short calibration "
	  "at K = 1, 2, 4, ... keeping the best jobs/s (stated in the output)", .min = 1,
	  .max = GPUSHARE_FARM_MAX_SLOTS,
	  .to = CLI_TO_UINT, AT(c.slots) },
	{ .id = OPT_MAX_SLOTS, .long_name = "max-slots", .kind = CLI_INT, .value_name = "K",
	  .help = "the largest K the calibration tries", .def = "16", .min = 1, .max = GPUSHARE_FARM_MAX_SLOTS,
	  .to = CLI_TO_UINT, AT(c.max_slots) },
	{ .id = OPT_STRATEGY, .long_name = "strategy", .kind = CLI_ENUM, .value_name = "S",
	  .help = "mps (default), mps-split (each job gets 1/K of the SMs and, with --mem-per-job, that pinned-memory limit) or "
	  "timeslice", .values = "mps mps-split timeslice",
	  .to = CLI_TO_CALL, .call = set_strategy },
	{ .id = OPT_GPUS, .long_name = "gpus", .kind = CLI_LIST, .value_name = "all|LIST",
	  .help = "GPUs to use: NVML indices or UUIDs, comma-separated (default: those CUDA_VISIBLE_DEVICES allows, else all)",
	  .values = "all",
	  .to = CLI_TO_STR, AT(c.gpus) },
	{ .id = OPT_MEM_PER_JOB, .long_name = "mem-per-job", .kind = CLI_SIZE, .value_name = "SIZE",
	  .help = "never start a job that would not fit in the GPU's free memory (e.g. 8G; each running job counts SIZE)",
	  .to = CLI_TO_CALL, .call = set_mem_per_job },
	{ .id = OPT_RETRIES, .long_name = "retries", .kind = CLI_INT, .value_name = "N",
	  .help = "run a failed or timed-out job up to N more times", .def = "0", .max = 1000,
	  .to = CLI_TO_UINT, AT(c.retries) },
	{ .id = OPT_TIMEOUT, .long_name = "timeout", .kind = CLI_DURATION, .value_name = "DURATION|Nx",
	  .help = "stop a job that runs longer (e.g. 10m; SIGTERM, SIGKILL 2 s later); Nx: N times the median duration of "
	  "this run's ok jobs, once " STR(GPUSHARE_FARM_TIMEOUT_MIN_OK) " ended ok, at least 1 s (e.g. 5x)",
	  .to = CLI_TO_CALL, .call = set_timeout },
	{ .id = OPT_HALT, .long_name = "halt", .kind = CLI_INT, .value_name = "N",
	  .help = "start no more jobs once N jobs failed for good in this run (retries used up, or refused); the running "
	  "ones finish; exit 8, and --resume DIR continues", .min = 1, .max = 100000000,
	  .to = CLI_TO_UINT, AT(c.halt) },
	{ .id = OPT_DRY_RUN, .long_name = "dry-run", .kind = CLI_FLAG,
	  .help = "print what would run (job number, command, GPU and slot where known, strategy) and run nothing; the "
	  "farm directory is neither created nor changed",
	  .to = CLI_TO_TRUE, AT(dry_run) },
	{ .id = OPT_TAG, .long_name = "tag", .kind = CLI_FLAG,
	  .help = "stream each line the jobs write to the terminal as it comes, prefixed with JOB (JOB.ATTEMPT for a "
	  "retry) and a tab: stdout to stdout, stderr to stderr (both to stderr with --json); the out/ files are "
	  "written as always",
	  .to = CLI_TO_TRUE, AT(tag) },
	{ .id = OPT_SHARD, .long_name = "shard", .kind = CLI_STRING, .value_name = "I/N",
	  .help = "run only shard I of N: jobs I+1, I+1+N, I+1+2N, ... (default under Slurm: the task's rank of the step's "
	  "tasks, or the array element)",
	  .to = CLI_TO_STR, AT(c.shard) },
	{ .id = OPT_ARGS, .long_name = "args", .kind = CLI_FILE, .value_name = "FILE",
	  .help = "template arguments, one per line ('-': standard input)",
	  .to = CLI_TO_STR, AT(c.args_file) },
	{ .id = OPT_RANGE, .long_name = "range", .kind = CLI_STRING, .value_name = "START..END[:STEP]",
	  .help = "template arguments: the integers START to END",
	  .to = CLI_TO_STR, AT(c.range) },
	{ .id = OPT_SHELL, .long_name = "shell", .kind = CLI_FLAG,
	  .help = "run each job line (or template) with /bin/sh -c (the default)",
	  .to = CLI_TO_TRUE, AT(shell) },
	{ .id = OPT_NO_SHELL, .long_name = "no-shell", .kind = CLI_FLAG,
	  .help = "split each job line into words and run them without a shell (quotes and backslashes as in a shell; "
	  "a word such as '|' or ';' is refused)",
	  .to = CLI_TO_TRUE, AT(no_shell) },
	{ .id = OPT_MPS_PIPE_DIR, .long_name = "mps-pipe-dir", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "use the MPS daemon that answers there (never stopped)",
	  .to = CLI_TO_STR, AT(c.mps_pipe_dir) },
	{ .id = OPT_ACCOUNT, .long_name = "account", .kind = CLI_FLAG,
	  .help = "load the accounting library (libgpushare-account.so; accounting.md in the documentation) into the jobs: per-client GPU time and attained share (the default where the library is installed; under 1% of the transformer workload's rate)",
	  .to = CLI_TO_TRUE, AT(c.account) },
	{ .id = OPT_NO_ACCOUNT, .long_name = "no-account", .kind = CLI_FLAG,
	  .help = "do not load the accounting library into the jobs (GPUSHARE_ACCOUNT=0 does the same)",
	  .to = CLI_TO_TRUE, AT(no_account) },
	{ .id = OPT_HPC_JOB_MAPPING_DIR, .long_name = "hpc-job-mapping-dir", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "dcgm-exporter's job mapping: SLURM_JOB_ID (else farm-PID) in DIR/<GPU index> of each GPU used "
	  "while the farm runs",
	  .to = CLI_TO_STR, AT(c.hpc_job_mapping_dir) },
	{ .id = OPT_METRICS_LISTEN, .long_name = "metrics-listen", .kind = CLI_STRING, .value_name = "[ADDR:]PORT",
	  .help = "serve live Prometheus metrics (gpushare-exporter(1))",
	  .to = CLI_TO_STR, AT(c.metrics_listen) },
	{ .id = OPT_JSON, .long_name = "json", .kind = CLI_FLAG, .help = "print the summary as JSON on stdout",
	  .to = CLI_TO_TRUE, AT(json) },
	{ .id = 'q', .short_name = 'q', .long_name = "quiet", .kind = CLI_FLAG, .help = "no progress lines on stderr",
	  .to = CLI_TO_TRUE, AT(quiet) },
};

static const struct cli_group farm_groups[] = { CLI_GROUP("Options", farm_opts, NULL) };

const struct cli_cmd cli_farm_cmd = {
	.name = "farm",
	.usage = "gpushare farm [OPTIONS] --dir DIR JOBFILE|-\n"
		 "gpushare farm [OPTIONS] --dir DIR --args FILE|--range START..END[:STEP] -- CMD [ARGS...]\n"
		 "gpushare farm [OPTIONS] --resume DIR [JOBFILE|-|(--args ...|--range ...) -- CMD ...]\n"
		 "gpushare farm [OPTIONS] --rerun-failed DIR\n"
		 "gpushare farm status [--json] [--failed] DIR [DIR...]",
	.about = "Run a queue of jobs, K at once on each chosen GPU, under MPS by default. A job file has\n"
		 "one shell command line per line, run with /bin/sh -c as GNU parallel does ('#' lines\n"
		 "skipped; --no-shell splits it into words instead). A template after -- runs once per\n"
		 "line of --args FILE or per number of --range, with {} replaced by the argument, quoted\n"
		 "for the shell so that it stays one word and never runs, and {#} by the job number.\n"
		 "Every attempt is recorded in DIR/journal.jsonl; its output goes to DIR/out/JOB.ATTEMPT.out\n"
		 "and .err; DIR/jobs.jsonl keeps the job list. --resume DIR runs exactly the jobs that\n"
		 "did not finish.",
	.groups = farm_groups,
	.n_groups = CLI_N(farm_groups),
	.subcommands = "status",
	.subs = (const struct cli_cmd *const[]){ &cli_farm_status_cmd, NULL },
	.epilog = "In a Slurm job, SLURM_SHARDS_ON_NODE (--gres=shard) bounds the slots (and the\n"
		  "calibration) to shards / GPUs per GPU, and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE\n"
		  "(--gres=mps) caps every job (mps-split: that / K each); said in the summary.\n"
		  "Jobs see GPUSHARE_FARM_JOB (from 1, as {#}), _ATTEMPT, _SLOT, _GPU (UUID), _DIR.\n"
		  "Ctrl-C once: no new jobs, the running ones finish; twice (or SIGTERM): they are\n"
		  "stopped too. Either way --resume DIR continues, as after --halt.\n"
		  "--tag: on a terminal the progress line is cleared before each job line and drawn\n"
		  "again at its next update; -q leaves only the jobs' lines. --halt is not recorded:\n"
		  "give it again on --resume. --timeout Nx is, like --timeout DURATION.\n"
		  "\n"
		  "Examples:\n"
		  "  gpushare farm --dir scan --dry-run jobs.txt\n"
		  "  gpushare farm --dir scan --halt 5 --timeout 5x jobs.txt\n"
		  "  gpushare farm --dir scan --tag -q --range 1..100 -- ./sim --seed {}\n"
		  "  gpushare farm --resume scan\n"
		  "  gpushare farm --rerun-failed scan",
	.notes = (const struct cli_exit_note[]){ { EXIT_OK, "every job done" },
						 { EXIT_USAGE, "bad option or job file, above Slurm's share or the open-file limit" },
						 { EXIT_NO_DRIVER, "no driver (with --gpus or --mem-per-job)" },
						 { EXIT_MPS, "MPS daemon" },
						 { EXIT_DIR, "farm directory unusable or in use" },
						 { EXIT_GPU, "GPU not found" },
						 { EXIT_WORKER, "some jobs failed (also: halted by --halt)" },
						 { EXIT_IO, "a file cannot be read or written" },
						 { EXIT_INTERRUPTED, "stopped" } },
	.n_notes = 9,
};

/* Where farm status's options go. */
struct farm_status_args {
	bool json, failed_only;
};

static const struct cli_opt farm_status_opts[] = {
	{ .id = OPT_JSON, .long_name = "json", .kind = CLI_FLAG, .help = "the summary as JSON",
	  .to = CLI_TO_TRUE, CLI_AT(struct farm_status_args, json) },
	{ .id = OPT_FAILED, .long_name = "failed", .kind = CLI_FLAG,
	  .help = "list only the jobs that failed (for good, or waiting for a retry), not the running ones",
	  .to = CLI_TO_TRUE, CLI_AT(struct farm_status_args, failed_only) },
};

static const struct cli_group farm_status_groups[] = { CLI_GROUP("Options", farm_status_opts, NULL) };

const struct cli_cmd cli_farm_status_cmd = {
	.name = "farm status",
	.usage = "gpushare farm status [--json] [--failed] DIR [DIR...]",
	.about = "Summarise one farm directory, or the shard directories of one farm (merged), also\n"
		 "while a farm runs: jobs done, failed and unfinished, makespan, jobs/s, and per GPU the\n"
		 "attempts and busy fraction; then the jobs that failed or run now, each with its\n"
		 "number, attempts, last exit status or signal, stderr file and command.",
	.groups = farm_status_groups,
	.n_groups = CLI_N(farm_status_groups),
	.notes = (const struct cli_exit_note[]){ { EXIT_USAGE, "bad option or journals of different job lists" },
						 { EXIT_IO, "a journal is missing or unreadable" } },
	.n_notes = 2,
};

/* ---- signals: first Ctrl-C drains, second (or SIGTERM) stops ---- */

static volatile sig_atomic_t interrupts;
/* Set once the farm reports its first progress, that is once it can start
 * jobs: before, a stop has no running jobs to talk of. */
static volatile sig_atomic_t farm_started;

static void on_signal(int sig)
{
	static const char drain[] = "\ngpushare: farm: stopping: no new jobs; the running ones finish "
				    "(Ctrl-C again stops them)\n";
	static const char now[] = "\ngpushare: farm: stopping the running jobs\n";
	static const char early[] = "\ngpushare: farm: stopping before any job started\n";

	if (!farm_started) {
		gpushare_farm_stop(true);
		if (interrupts++ == 0 && write(STDERR_FILENO, early, sizeof(early) - 1) < 0)
			return;
		return;
	}
	if (sig == SIGINT && interrupts++ == 0) {
		gpushare_farm_stop(false);
		if (write(STDERR_FILENO, drain, sizeof(drain) - 1) < 0)
			return;
		return;
	}
	gpushare_farm_stop(true);
	if (write(STDERR_FILENO, now, sizeof(now) - 1) < 0)
		return;
}

/* ---- progress ---- */

struct progress_state {
	bool tty, quiet, open_line, json;
	uint64_t batch, next_line, last_ended, last_running;
	bool printed;
};

static void eta_text(double s, char *buf, size_t len)
{
	if (s < 0)
		snprintf(buf, len, "?");
	else if (s < 100)
		snprintf(buf, len, "%.0fs", s);
	else if (s < 6000)
		snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)s % 60);
	else
		snprintf(buf, len, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

static void on_progress(const struct gpushare_farm_progress *p, void *arg)
{
	struct progress_state *ps = arg;
	uint64_t ended = p->done + p->failed;
	char eta[32], queued[32];

	farm_started = 1;
	if (ps->quiet)
		return;
	eta_text(p->eta_s, eta, sizeof(eta));
	/* Once stopping, nothing more starts: no queue to count. */
	if (p->stopping)
		snprintf(queued, sizeof(queued), "stopping");
	else
		snprintf(queued, sizeof(queued), "%llu queued", (unsigned long long)p->queued);
	if (ps->tty) {
		fprintf(stderr, "\r\033[Kfarm: %llu/%llu done, %llu failed, %llu running, %s, K=%u%s, %.1fs, ETA %s",
			(unsigned long long)p->done, (unsigned long long)p->total, (unsigned long long)p->failed,
			(unsigned long long)p->running, queued, p->slots,
			p->calibrating ? " (calibrating)" : "", p->elapsed_s, eta);
		ps->open_line = true;
		return;
	}
	if (!ps->batch)
		ps->batch = p->total / 20 ? p->total / 20 : 1;
	if (ended < ps->next_line && (p->running || p->queued))
		return;
	if (ps->printed && ended == ps->last_ended && p->running == ps->last_running)
		return;
	ps->printed = true;
	ps->last_ended = ended;
	ps->last_running = p->running;
	while (ps->next_line <= ended)
		ps->next_line += ps->batch;
	fprintf(stderr, "farm: %llu/%llu done, %llu failed, %llu running, %s, K=%u%s, %.1fs, ETA %s\n",
		(unsigned long long)p->done, (unsigned long long)p->total, (unsigned long long)p->failed,
		(unsigned long long)p->running, queued, p->slots,
		p->calibrating ? " (calibrating)" : "", p->elapsed_s, eta);
}

/* --tag: a line of a job, "JOB<TAB>line" ("JOB.ATTEMPT" for a retry), on
 * stdout (its stdout; stderr with --json, which keeps stdout for the
 * document) or stderr, written and flushed whole by the farm's one thread,
 * so that lines never mix. A progress line being rewritten on the terminal
 * is cleared first; the next update draws it again below. */
static void on_output(uint64_t job, unsigned attempt, int stream, const char *line, size_t len, void *arg)
{
	struct progress_state *ps = arg;
	FILE *f = stream == 1 && !ps->json ? stdout : stderr;

	if (ps->open_line) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		ps->open_line = false;
	}
	if (attempt > 1)
		fprintf(f, "%llu.%u\t", (unsigned long long)job, attempt);
	else
		fprintf(f, "%llu\t", (unsigned long long)job);
	fwrite(line, 1, len, f);
	fputc('\n', f);
	fflush(f);
}

static void on_warn(const char *text, void *arg)
{
	(void)arg;
	cli_warn("farm: %s", text);
}

/* ---- farm status ---- */

static int exit_for(int rc);

/* The summary or the dry run's listing as text, through the terminal
 * sanitiser: directories, GPU ids, commands and notes are recorded or
 * given text. */
static int write_text(const struct gpushare_farm_summary *s, const struct gpushare_farm_result *r,
		      const struct gpushare_farm_config *dry)
{
	FILE *t = gpushare_utf8_term_stream(stdout);
	int rc;

	if (!t)
		return cli_fail(GPUSHARE_E_NOMEM, "farm");
	rc = dry ? gpushare_farm_dry_run(dry, t, false) : gpushare_farm_summary_write(t, s, r);
	if (fclose(t) != 0 && !rc)
		rc = gpushare_fail(GPUSHARE_E_IO, "cannot write the listing");
	if (rc && dry)
		return cli_error(exit_for(rc), "farm: %s", gpushare_errdetail());
	return rc ? cli_error(EXIT_IO, "farm: %s", gpushare_errdetail()) : EXIT_OK;
}

static int print_summary(const struct gpushare_farm_summary *s, const struct gpushare_farm_result *r, bool json)
{
	if (json) {
		char *text = NULL;

		if (gpushare_farm_summary_json(s, r, &text))
			return cli_error(EXIT_FAILURE_GENERIC, "farm: %s", gpushare_errdetail());
		return cli_print_json_and_free(text);
	}
	return write_text(s, r, NULL);
}

static int cmd_farm_status(int argc, char **argv)
{
	struct cli_parse p;
	struct gpushare_farm_summary s;
	struct farm_status_args a = { .json = false };
	int rc, code, first;

	cli_parse_init(&p, &cli_farm_status_cmd, argc, argv);
	if (!cli_parse_options(&p, &a))
		return p.status;
	first = p.optind;
	if (first >= argc)
		return cli_error(EXIT_USAGE, "farm status: give at least one farm directory");
	rc = gpushare_farm_status((const char *const *)argv + first, (size_t)(argc - first), &s);
	if (rc) {
		int exit_code = rc == GPUSHARE_E_INVAL ? EXIT_USAGE : rc == GPUSHARE_E_NOMEM ? EXIT_FAILURE_GENERIC : EXIT_IO;

		if (rc == GPUSHARE_E_NOT_FOUND)
			return cli_error(EXIT_IO, "farm status: no journal: %s", gpushare_errdetail());
		return cli_error(exit_code, "farm status: %s", gpushare_errdetail());
	}
	if (a.failed_only) {
		size_t keep = 0;

		for (size_t i = 0; i < s.n_job_list; i++) {
			if (s.job_list[i].running)
				free(s.job_list[i].command);
			else
				s.job_list[keep++] = s.job_list[i];
		}
		s.n_job_list = keep;
	}
	code = print_summary(&s, NULL, a.json);
	gpushare_farm_summary_release(&s);
	return cli_finish_stdout(code);
}

/* ---- farm ---- */

static int exit_for(int rc)
{
	switch (rc) {
	case GPUSHARE_E_NOT_FOUND: return EXIT_GPU;
	case GPUSHARE_E_BUSY: return EXIT_DIR;
	default: return cli_exit_for(rc);
	}
}

int cmd_farm(int argc, char **argv)
{
	struct cli_parse p;
	struct farm_args a = { 0 };
	struct gpushare_farm_config *c = &a.c;
	struct gpushare_farm_result r;
	struct progress_state ps = { 0 };
	int opt_argc = argc, rc, code, first;

	if (argc > 1 && !strcmp(argv[1], "status"))
		return cmd_farm_status(argc - 1, argv + 1);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			opt_argc = i;
			break;
		}
	}
	gpushare_farm_config_init(c);
	cli_parse_init(&p, &cli_farm_cmd, opt_argc, argv);
	if (!cli_parse_options(&p, &a))
		return p.status;
	for (size_t i = 0; i < CLI_N(farm_given); i++) {
		if (cli_parse_given(&p, farm_given[i].name))
			c->given |= farm_given[i].bit;
	}
	if (a.shell && a.no_shell)
		return cli_error(EXIT_USAGE, "farm: --shell and --no-shell do not go together");
	if (c->account && a.no_account)
		return cli_error(EXIT_USAGE, "farm: --account and --no-account do not go together");
	c->account = !a.no_account; /* loaded by default */
	c->shell = !a.no_shell;
	if (a.shell || a.no_shell)
		c->given |= GPUSHARE_FARM_GIVEN_SHELL;
	ps.quiet = a.quiet;
	first = p.optind;
	if (!a.dir_given)
		return cli_error(EXIT_USAGE, "farm: give --dir DIR (a new farm), --resume DIR or --rerun-failed DIR "
				 "(see 'gpushare farm --help')");
	if (opt_argc < argc) {
		if (first < opt_argc)
			return cli_error(EXIT_USAGE, "farm: unexpected '%s' before '--' (a job file and a command do not go together)",
					 argv[first]);
		if (opt_argc + 1 >= argc)
			return cli_error(EXIT_USAGE, "farm: no command after '--'");
		c->tmpl = argv + opt_argc + 1;
		c->n_tmpl = (size_t)(argc - opt_argc - 1);
	} else {
		if (first >= argc && !c->resume)
			return cli_error(EXIT_USAGE, "farm: no jobs: give a job file, '-' for standard input, or -- CMD");
		if (first + 1 < argc)
			return cli_error(EXIT_USAGE, "farm: unexpected argument '%s' (one job file)", argv[first + 1]);
		c->jobfile = first < argc ? argv[first] : NULL;
	}
	if (c->slots && c->max_slots)
		return cli_error(EXIT_USAGE, "farm: --max-slots bounds the calibration; it does not go with --slots");
	ps.tty = isatty(STDERR_FILENO);
	ps.json = a.json;
	c->warn = on_warn;
	if (a.dry_run) {
		if (c->metrics_listen || a.tag)
			return cli_error(EXIT_USAGE, "farm: --dry-run runs nothing: it does not go with %s",
					 c->metrics_listen ? "--metrics-listen" : "--tag");
		if (!a.json)
			return cli_finish_stdout(write_text(NULL, NULL, c));
		rc = gpushare_farm_dry_run(c, stdout, a.json);
		code = cli_finish_stdout(rc ? exit_for(rc) : EXIT_OK);
		return rc ? cli_error(code, "farm: %s", gpushare_errdetail()) : code;
	}
	if (a.tag) {
		c->output = on_output;
		c->output_arg = &ps;
	}
	c->progress = on_progress;
	c->progress_arg = &ps;
	cli_catch_stop_signals(on_signal, 0);
	cli_announce_metrics("farm");
	rc = gpushare_farm_run(c, &r);
	if (ps.open_line)
		fputc('\n', stderr);
	if (r.torn_cut_bytes)
		fprintf(stderr, "gpushare: warning: farm: the journal's last line was torn (%llu bytes without a newline, "
			"a write cut short by a crash); it was cut off before appending\n",
			(unsigned long long)r.torn_cut_bytes);
	if (r.have_summary || rc == GPUSHARE_OK || rc == GPUSHARE_E_WORKER || rc == GPUSHARE_E_INTERRUPTED) {
		if (r.have_summary) {
			code = print_summary(&r.summary, &r, a.json);
			if (code != EXIT_OK) {
				gpushare_farm_result_release(&r);
				return code;
			}
		}
	}
	gpushare_farm_result_release(&r);
	if (rc == GPUSHARE_OK)
		return cli_finish_stdout(EXIT_OK);
	code = cli_finish_stdout(exit_for(rc));
	if (rc == GPUSHARE_E_NO_MPS_BINARY)
		return cli_error(code, "farm: %s; without MPS, --strategy timeslice runs the jobs as plain processes",
				 gpushare_errdetail());
	return cli_error(code, "farm: %s", gpushare_errdetail());
}
