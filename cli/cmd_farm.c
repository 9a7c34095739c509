/*
 * gpushare farm: run a queue of jobs on K slots per GPU (lib/farm.c), and
 * gpushare farm status: summarise farm directories (docs/farm.md).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gpushare/bench.h"
#include "gpushare/farm.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpushare farm [OPTIONS] --dir DIR JOBFILE|-\n"
		"       gpushare farm [OPTIONS] --dir DIR --args FILE|--range START..END[:STEP] -- CMD [ARGS...]\n"
		"       gpushare farm [OPTIONS] --resume DIR [JOBFILE|-|(--args ...|--range ...) -- CMD ...]\n"
		"       gpushare farm status [--json] DIR [DIR...]\n\n"
		"Run a queue of jobs, K at once on each chosen GPU, under MPS by default. A job file has\n"
		"one command line per line, run without a shell (quotes and backslashes as in a shell;\n"
		"'#' lines skipped). A template after -- runs once per line of --args FILE or per number\n"
		"of --range, with {} replaced by the argument and {#} by the job number (from 1).\n"
		"Every attempt is recorded in DIR/journal.jsonl; its output goes to DIR/out/JOB.ATTEMPT.out\n"
		"and .err; DIR/jobs.jsonl keeps the job list. --resume DIR runs exactly the jobs that\n"
		"did not finish.\n\n"
		"  --dir DIR              the farm directory (created; must not hold a journal yet)\n"
		"  --resume DIR           continue the farm in DIR: its jobs come from DIR/jobs.jsonl, or\n"
		"                         from a job list given again, which must be the same\n"
		"  --slots K              jobs at once per GPU (1..%d); default: a short calibration\n"
		"                         at K = 1, 2, 4, ... keeping the best jobs/s (stated in the output)\n"
		"  --max-slots K          the largest K the calibration tries (default 16)\n"
		"  --strategy S           mps (default), mps-split (each job gets 1/K of the SMs and,\n"
		"                         with --mem-per-job, that pinned-memory limit) or timeslice\n"
		"  --gpus all|LIST        GPUs to use: NVML indices or UUIDs, comma-separated (default:\n"
		"                         those CUDA_VISIBLE_DEVICES allows, else all)\n"
		"  --mem-per-job SIZE     never start a job that would not fit in the GPU's free memory\n"
		"                         (e.g. 8G; each running job counts SIZE)\n"
		"  --retries N            run a failed or timed-out job up to N more times (default 0)\n"
		"  --timeout DURATION     stop a job that runs longer (e.g. 10m; SIGTERM, SIGKILL 2 s later)\n"
		"  --shard I/N            run only the jobs whose number mod N is I (default under Slurm:\n"
		"                         the task's rank of the step's tasks, or the array element)\n"
		"  --args FILE            template arguments, one per line ('-': standard input)\n"
		"  --range START..END[:STEP]  template arguments: the integers START to END\n"
		"  --shell                run each job line (or template) with /bin/sh -c\n"
		"  --mps-pipe-dir DIR     use the MPS daemon that answers there (never stopped)\n"
		"  --hpc-job-mapping-dir DIR  dcgm-exporter's job mapping: SLURM_JOB_ID (else farm-PID)\n"
		"                         in DIR/<GPU index> of each GPU used while the farm runs\n"
		"  --metrics-listen [ADDR:]PORT  serve live Prometheus metrics (gpushare-exporter(1))\n"
		"  --json                 print the summary as JSON on stdout\n"
		"  -q, --quiet            no progress lines on stderr\n"
		"  -h, --help             this help\n\n"
		"In a Slurm job, SLURM_SHARDS_ON_NODE (--gres=shard) bounds the slots (and the\n"
		"calibration) to shards / GPUs per GPU, and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE\n"
		"(--gres=mps) caps every job (mps-split: that / K each); said in the summary.\n"
		"Jobs see GPUSHARE_FARM_JOB (number from 0), _ATTEMPT, _SLOT, _GPU (UUID) and _DIR.\n"
		"Ctrl-C once: no new jobs, the running ones finish; twice (or SIGTERM): they are\n"
		"stopped too. Either way --resume DIR continues.\n"
		"Exit statuses: 0 every job done, 2 bad option or job file or above Slurm's share, 3 no driver (with --gpus or\n"
		"--mem-per-job), 4 no MPS control program, 5 MPS daemon, 6 farm directory unusable or in\n"
		"use, 7 GPU not found, 8 some jobs failed, 11 a file cannot be read or written, 13\n"
		"--metrics-listen address in use, 130 stopped. See gpushare-farm(1).\n",
		GPUSHARE_FARM_MAX_SLOTS);
}

static void status_usage(FILE *f)
{
	fprintf(f, "usage: gpushare farm status [--json] DIR [DIR...]\n\n"
		   "Summarise one farm directory, or the shard directories of one farm (merged), also\n"
		   "while a farm runs: jobs done, failed and unfinished, makespan, jobs/s, and per GPU the\n"
		   "attempts and busy fraction.\n\n"
		   "  --json       the summary as JSON\n"
		   "  -h, --help   this help\n\n"
		   "Exit statuses: 0 ok, 2 bad option or journals of different job lists, 11 a journal is\n"
		   "missing or unreadable. See gpushare-farm(1).\n");
}

/* ---- signals: first Ctrl-C drains, second (or SIGTERM) stops ---- */

static volatile sig_atomic_t interrupts;

static void on_signal(int sig)
{
	static const char drain[] = "\ngpushare: farm: stopping: no new jobs; the running ones finish "
				    "(Ctrl-C again stops them)\n";
	static const char now[] = "\ngpushare: farm: stopping the running jobs\n";

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
	bool tty, quiet, open_line;
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
	char eta[32];

	if (ps->quiet)
		return;
	eta_text(p->eta_s, eta, sizeof(eta));
	if (ps->tty) {
		fprintf(stderr, "\r\033[Kfarm: %llu/%llu done, %llu failed, %llu running, %llu queued, K=%u%s, %.1fs, ETA %s",
			(unsigned long long)p->done, (unsigned long long)p->total, (unsigned long long)p->failed,
			(unsigned long long)p->running, (unsigned long long)p->queued, p->slots,
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
	fprintf(stderr, "farm: %llu/%llu done, %llu failed, %llu running, %llu queued, K=%u%s, %.1fs, ETA %s\n",
		(unsigned long long)p->done, (unsigned long long)p->total, (unsigned long long)p->failed,
		(unsigned long long)p->running, (unsigned long long)p->queued, p->slots,
		p->calibrating ? " (calibrating)" : "", p->elapsed_s, eta);
}

/* ---- farm status ---- */

static int print_summary(const struct gpushare_farm_summary *s, const struct gpushare_farm_result *r, bool json)
{
	if (json) {
		char *text = NULL;

		if (gpushare_farm_summary_json(s, r, &text))
			return cli_error(EXIT_FAILURE_GENERIC, "farm: %s", gpushare_errdetail());
		return cli_print_json_and_free(text);
	}
	if (gpushare_farm_summary_write(stdout, s, r))
		return cli_error(EXIT_IO, "farm: %s", gpushare_errdetail());
	return EXIT_OK;
}

static int cmd_farm_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct gpushare_farm_summary s;
	bool json = false;
	int opt, rc, code;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			status_usage(stdout);
			return cli_finish_stdout(EXIT_OK);
		case 'j': json = true; break;
		default:
			return cli_usage_error("farm status", opt, optopt, argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_error(EXIT_USAGE, "farm status: give at least one farm directory");
	rc = gpushare_farm_status((const char *const *)argv + optind, (size_t)(argc - optind), &s);
	if (rc) {
		int exit_code = rc == GPUSHARE_E_INVAL ? EXIT_USAGE : rc == GPUSHARE_E_NOMEM ? EXIT_FAILURE_GENERIC : EXIT_IO;

		if (rc == GPUSHARE_E_NOT_FOUND)
			return cli_error(EXIT_IO, "farm status: no journal: %s", gpushare_errdetail());
		return cli_error(exit_code, "farm status: %s", gpushare_errdetail());
	}
	code = print_summary(&s, NULL, json);
	gpushare_farm_summary_release(&s);
	return cli_finish_stdout(code);
}

/* ---- farm ---- */

enum {
	OPT_DIR = 256, OPT_RESUME, OPT_SLOTS, OPT_MAX_SLOTS, OPT_STRATEGY, OPT_GPUS, OPT_MEM, OPT_RETRIES, OPT_TIMEOUT,
	OPT_SHARD, OPT_ARGS, OPT_RANGE, OPT_SHELL, OPT_PIPE, OPT_MAP, OPT_METRICS, OPT_JSON,
};

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
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "resume", required_argument, NULL, OPT_RESUME },
		{ "slots", required_argument, NULL, OPT_SLOTS },
		{ "max-slots", required_argument, NULL, OPT_MAX_SLOTS },
		{ "strategy", required_argument, NULL, OPT_STRATEGY },
		{ "gpus", required_argument, NULL, OPT_GPUS },
		{ "mem-per-job", required_argument, NULL, OPT_MEM },
		{ "retries", required_argument, NULL, OPT_RETRIES },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "shard", required_argument, NULL, OPT_SHARD },
		{ "args", required_argument, NULL, OPT_ARGS },
		{ "range", required_argument, NULL, OPT_RANGE },
		{ "shell", no_argument, NULL, OPT_SHELL },
		{ "mps-pipe-dir", required_argument, NULL, OPT_PIPE },
		{ "hpc-job-mapping-dir", required_argument, NULL, OPT_MAP },
		{ "metrics-listen", required_argument, NULL, OPT_METRICS },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct gpushare_farm_config c;
	struct gpushare_farm_result r;
	struct progress_state ps = { 0 };
	int opt_argc = argc, opt, rc, code;
	bool json = false, dir_given = false;
	long v;

	if (argc > 1 && !strcmp(argv[1], "status"))
		return cmd_farm_status(argc - 1, argv + 1);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			opt_argc = i;
			break;
		}
	}
	gpushare_farm_config_init(&c);
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(opt_argc, argv, ":hq", opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			return cli_finish_stdout(EXIT_OK);
		case 'q': ps.quiet = true; break;
		case OPT_DIR:
		case OPT_RESUME:
			if (dir_given)
				return cli_error(EXIT_USAGE, "farm: give one of --dir and --resume, once");
			dir_given = true;
			c.dir = optarg;
			c.resume = opt == OPT_RESUME;
			break;
		case OPT_SLOTS:
		case OPT_MAX_SLOTS:
			if (cli_parse_whole(optarg, 1, GPUSHARE_FARM_MAX_SLOTS, &v))
				return cli_bad_value("farm", opt == OPT_SLOTS ? "--slots" : "--max-slots", optarg);
			if (opt == OPT_SLOTS)
				c.slots = (unsigned)v;
			else
				c.max_slots = (unsigned)v;
			break;
		case OPT_STRATEGY:
			if (cli_parse_sharing_strategy(optarg, &c.strategy))
				return cli_error(EXIT_USAGE, "farm: invalid --strategy '%s' (expected mps, mps-split or timeslice)",
						 optarg);
			break;
		case OPT_GPUS: c.gpus = optarg; break;
		case OPT_MEM: {
			uint64_t b;

			if (gpushare_parse_size(optarg, &b) || b == 0)
				return cli_error(EXIT_USAGE, "farm: invalid --mem-per-job '%s' (expected a size such as 8G or 512M)",
						 optarg);
			c.mem_per_job_bytes = b;
			break;
		}
		case OPT_RETRIES:
			if (cli_parse_whole(optarg, 0, 1000, &v))
				return cli_bad_value("farm", "--retries", optarg);
			c.retries = (unsigned)v;
			break;
		case OPT_TIMEOUT:
			if (gpushare_parse_duration(optarg, &c.timeout_ns) || c.timeout_ns == 0)
				return cli_error(EXIT_USAGE, "farm: invalid --timeout '%s' (expected a duration such as 90s or 10m)",
						 optarg);
			break;
		case OPT_SHARD: c.shard = optarg; break;
		case OPT_ARGS: c.args_file = optarg; break;
		case OPT_RANGE: c.range = optarg; break;
		case OPT_SHELL: c.shell = true; break;
		case OPT_PIPE: c.mps_pipe_dir = optarg; break;
		case OPT_MAP: c.hpc_job_mapping_dir = optarg; break;
		case OPT_METRICS: c.metrics_listen = optarg; break;
		case OPT_JSON: json = true; break;
		default:
			return cli_usage_error("farm", opt, optopt, argv[optind - 1]);
		}
	}
	if (!dir_given)
		return cli_error(EXIT_USAGE, "farm: give --dir DIR (a new farm) or --resume DIR (see 'gpushare farm --help')");
	if (opt_argc < argc) {
		if (optind < opt_argc)
			return cli_error(EXIT_USAGE, "farm: unexpected '%s' before '--' (a job file and a command do not go together)",
					 argv[optind]);
		if (opt_argc + 1 >= argc)
			return cli_error(EXIT_USAGE, "farm: no command after '--'");
		c.tmpl = argv + opt_argc + 1;
		c.n_tmpl = (size_t)(argc - opt_argc - 1);
	} else {
		if (optind >= argc && !c.resume)
			return cli_error(EXIT_USAGE, "farm: no jobs: give a job file, '-' for standard input, or -- CMD");
		if (optind + 1 < argc)
			return cli_error(EXIT_USAGE, "farm: unexpected argument '%s' (one job file)", argv[optind + 1]);
		c.jobfile = optind < argc ? argv[optind] : NULL;
	}
	if (c.slots && c.max_slots)
		return cli_error(EXIT_USAGE, "farm: --max-slots bounds the calibration; it does not go with --slots");
	ps.tty = isatty(STDERR_FILENO);
	c.progress = on_progress;
	c.progress_arg = &ps;
	cli_catch_stop_signals(on_signal, 0);
	rc = gpushare_farm_run(&c, &r);
	if (ps.open_line)
		fputc('\n', stderr);
	if (r.have_summary || rc == GPUSHARE_OK || rc == GPUSHARE_E_WORKER || rc == GPUSHARE_E_INTERRUPTED) {
		if (r.have_summary) {
			code = print_summary(&r.summary, &r, json);
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
	return cli_error(code, "farm: %s", gpushare_errdetail());
}
