/*
 * Error printing and exit statuses for the command line, and what bench and
 * sweep share: the option parsing (a command after "--", --mode, --jobs,
 * --metrics-listen, --metrics-buckets, --warmup, --gpu, --mps-pipe-dir, the
 * --workload scan, option errors), the recorded command line, the signal
 * handling and the messages after a run.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpushare/bench.h"
#include "gpushare/child.h"
#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"
#include "gpushare/mps.h"
#include "gpushare/utf8.h"
#include "gpushare/internal/bench.h"
#include "gpushare/internal/metrics.h"

int cli_exit_for(int err)
{
	switch (err) {
	case GPUSHARE_OK: return EXIT_OK;
	case GPUSHARE_E_INVAL: return EXIT_USAGE;
	case GPUSHARE_E_NO_DRIVER: return EXIT_NO_DRIVER;
	case GPUSHARE_E_NO_MPS_BINARY: return EXIT_NO_MPS_BINARY;
	case GPUSHARE_E_MPS_NOT_RUNNING:
	case GPUSHARE_E_MPS_REPLY:
	case GPUSHARE_E_BUSY: return EXIT_MPS;
	case GPUSHARE_E_DIR: return EXIT_DIR;
	case GPUSHARE_E_PROHIBITED:
	case GPUSHARE_E_UNSUPPORTED:
	case GPUSHARE_E_DRIVER:
	case GPUSHARE_E_NOT_FOUND: return EXIT_GPU;
	case GPUSHARE_E_WORKER:
	case GPUSHARE_E_CUDA: return EXIT_WORKER;
	case GPUSHARE_E_MPS_MAX_CLIENTS: return EXIT_MPS_MAX_CLIENTS;
	case GPUSHARE_E_IO: return EXIT_IO;
	case GPUSHARE_E_TIMEOUT: return EXIT_TIMEOUT;
	case GPUSHARE_E_ADDR_IN_USE: return EXIT_LISTEN;
	case GPUSHARE_E_INTERRUPTED: return EXIT_INTERRUPTED;
	default: return EXIT_FAILURE_GENERIC;
	}
}

/* Every message line on stderr: "gpushare: " KIND, then the text through the
 * terminal sanitiser, since it quotes file names, commands and job lines. */
static void __attribute__((format(printf, 2, 0))) cli_vmessage(const char *kind, const char *fmt, va_list ap)
{
	struct gpushare_buf raw = { 0 }, shown = { 0 };

	gpushare_buf_vaddf(&raw, fmt, ap);
	gpushare_utf8_term(&shown, gpushare_buf_str(&raw));
	fprintf(stderr, "gpushare: %s%s\n", kind,
		shown.failed ? "(out of memory while writing a message)" : gpushare_buf_str(&shown));
	gpushare_buf_release(&raw);
	gpushare_buf_release(&shown);
}

static void __attribute__((format(printf, 2, 3))) cli_message(const char *kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vmessage(kind, fmt, ap);
	va_end(ap);
}

int cli_fail(int err, const char *what)
{
	const char *detail = gpushare_errdetail();

	const char *words = gpushare_strerror(err);
	const char *second = strchr(words, ' ');
	size_t n = second ? (size_t)(strchr(second + 1, ' ') ? strchr(second + 1, ' ') - words : 0) : 0;

	/* The code's words, then the detail; not both when the detail starts
	 * the same way ("no MPS control daemon running: no MPS control daemon at"). */
	if (n && !strncmp(words, detail, n))
		words = "";
	cli_message("", "%s%s%s%s%s", what ? what : "", what ? ": " : "", words, *words && *detail ? ": " : "", detail);
	return cli_exit_for(err);
}

int cli_error(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vmessage("", fmt, ap);
	va_end(ap);
	return code;
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vmessage("warning: ", fmt, ap);
	va_end(ap);
}

int cli_usage_error(const char *cmd, int opt, int optopt_, const char *arg)
{
	if (opt == ':')
		return cli_error(EXIT_USAGE, "%s: option '%s' needs a value (see 'gpushare %s --help')", cmd, arg, cmd);
	(void)optopt_;
	return cli_error(EXIT_USAGE, "%s: unknown option '%s' (see 'gpushare %s --help')", cmd, arg, cmd);
}

int cli_print_json_and_free(char *s)
{
	if (!s)
		return cli_error(EXIT_FAILURE_GENERIC, "out of memory while writing JSON");
	fputs(s, stdout);
	fputc('\n', stdout);
	free(s);
	return cli_finish_stdout(EXIT_OK);
}

int cli_finish_stdout(int code)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "gpushare: cannot write output: %s\n", strerror(errno));
		return code == EXIT_OK ? EXIT_IO : code;
	}
	return code;
}

int cli_parse_whole(const char *s, long min, long max, long *out)
{
	if (!*s || strspn(s, "0123456789") != strlen(s))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a whole number (digits only)", s);
	return gpushare_parse_int(s, min, max, out);
}

int cli_bad_value(const char *cmd, const char *opt, const char *value)
{
	return cli_error(EXIT_USAGE, "%s: invalid %s '%s': %s", cmd, opt, value, gpushare_errdetail());
}

void cli_command_scan(struct cli_command_opts *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	o->cmd_at = -1;
	o->opt_argc = argc;
	o->mode = GPUSHARE_CMD_REQUEST;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			o->cmd_at = i;
			o->opt_argc = i;
			break;
		}
	}
}

static int parse_mode(struct cli_command_opts *o, const char *cmd, const char *arg)
{
	if (!strcmp(arg, "request"))
		o->mode = GPUSHARE_CMD_REQUEST;
	else if (!strcmp(arg, "job"))
		o->mode = GPUSHARE_CMD_JOB;
	else
		return cli_error(EXIT_USAGE, "%s: invalid --mode '%s' (expected request or job)", cmd, arg);
	o->mode_given = true;
	return EXIT_OK;
}

int cli_command_apply(const struct cli_command_opts *o, const char *cmd, int argc, char **argv, bool workload_given,
		      struct gpushare_bench_config *c)
{
	bool duration_given = o->duration_given;

	if (duration_given && c->requests)
		return cli_error(EXIT_USAGE, "%s: give --duration or --requests, not both", cmd);
	if (o->max_repeats && o->max_repeats < (o->repeats ? o->repeats : 1))
		return cli_error(EXIT_USAGE, "%s: --max-repeats %d is below --repeats %d", cmd, o->max_repeats,
				 o->repeats ? o->repeats : 1);
	if (o->max_repeats && !(o->target_noise > 0))
		return cli_error(EXIT_USAGE, "%s: --max-repeats bounds --target-noise; give both", cmd);
	if (o->cmd_at < 0) {
		if (o->mode_given || o->jobs || o->preload)
			return cli_error(EXIT_USAGE, "%s: --mode, --jobs and --preload apply to a command given after '--'",
					 cmd);
		/* Without --warmup a built-in workload's warm-up ends once its rate
		 * is stable, at most the default 2 s (docs/bench.md). */
		c->warmup_adaptive = !o->warmup_given;
		return EXIT_OK;
	}
	if (o->cmd_at + 1 >= argc || !argv[o->cmd_at + 1][0])
		return cli_error(EXIT_USAGE, "%s: no command after '--'", cmd);
	if (workload_given)
		return cli_error(EXIT_USAGE, "%s: give --workload or a command after '--', not both", cmd);
	if (o->mode == GPUSHARE_CMD_JOB) {
		if (c->requests)
			return cli_error(EXIT_USAGE, "%s: job mode counts jobs: give --jobs K, not --requests", cmd);
		if (o->jobs && duration_given)
			return cli_error(EXIT_USAGE, "%s: give --duration or --jobs, not both", cmd);
		c->requests = o->jobs;
		if (!o->warmup_given)
			c->warmup_ns = 0;
	} else if (o->jobs) {
		return cli_error(EXIT_USAGE, "%s: --jobs needs --mode job", cmd);
	}
	if (o->preload && o->mode == GPUSHARE_CMD_JOB)
		return cli_error(EXIT_USAGE, "%s: --preload forks request-mode workers; job mode runs the command to "
				 "completion each time", cmd);
	c->preload = o->preload;
	c->command_mode = o->mode;
	c->command = &argv[o->cmd_at + 1];
	return EXIT_OK;
}

static int parse_metrics_listen(const char *cmd, const char *arg, struct gpushare_bench_config *c)
{
	char addr[GPUSHARE_METRICS_ADDR_MAX];
	uint16_t port;

	if (gpushare_metrics_parse_listen(arg, addr, sizeof(addr), &port))
		return cli_bad_value(cmd, "--metrics-listen", arg);
	snprintf(c->metrics_listen, sizeof(c->metrics_listen), "%s", arg);
	return EXIT_OK;
}

static int parse_metrics_buckets(const char *cmd, const char *arg, struct gpushare_bench_config *c)
{
	if (gpushare_metrics_parse_buckets(arg, c->metrics_buckets, &c->n_metrics_buckets))
		return cli_bad_value(cmd, "--metrics-buckets", arg);
	return EXIT_OK;
}

static int parse_warmup(struct cli_command_opts *o, const char *cmd, const char *arg, struct gpushare_bench_config *c)
{
	uint64_t ns;

	if (gpushare_parse_duration(arg, &ns))
		return cli_bad_value(cmd, "--warmup", arg);
	c->warmup_ns = ns;
	o->warmup_given = true;
	return EXIT_OK;
}

static int parse_gpu(const char *cmd, const char *arg, struct gpushare_bench_config *c)
{
	if (!*arg || strlen(arg) >= sizeof(c->gpu))
		return cli_error(EXIT_USAGE, "%s: invalid --gpu '%s' (expected an index or a UUID)", cmd, arg);
	snprintf(c->gpu, sizeof(c->gpu), "%s", arg);
	return EXIT_OK;
}

static int parse_mps_pipe_dir(const char *cmd, const char *arg, struct gpushare_bench_config *c)
{
	if (arg[0] != '/' || strlen(arg) >= sizeof(c->mps_pipe_dir))
		return cli_error(EXIT_USAGE, "%s: invalid --mps-pipe-dir '%s' (expected an absolute path)", cmd, arg);
	snprintf(c->mps_pipe_dir, sizeof(c->mps_pipe_dir), "%s", arg);
	return EXIT_OK;
}

/* A duration longer than zero. */
static int parse_window(const char *cmd, const char *opt, const char *arg, uint64_t *ns)
{
	if (gpushare_parse_duration(arg, ns))
		return cli_bad_value(cmd, opt, arg);
	if (*ns == 0)
		return cli_error(EXIT_USAGE, "%s: invalid %s '%s': must be longer than zero", cmd, opt, arg);
	return EXIT_OK;
}

/* "2%" or "2" (both 2 percent), in (0, 100). */
static int parse_noise(const char *cmd, const char *arg, double *out)
{
	char buf[32], *end;
	size_t len = strlen(arg);
	double v;

	if (len && len < sizeof(buf)) {
		snprintf(buf, sizeof(buf), "%s", arg);
		if (buf[len - 1] == '%')
			buf[len - 1] = '\0';
		v = strtod(buf, &end);
		if (end != buf && !*end && buf[0] != '+' && buf[0] != '-' && v > 0 && v < 100) {
			*out = v / 100;
			return EXIT_OK;
		}
	}
	return cli_error(EXIT_USAGE, "%s: invalid --target-noise '%s' (expected a percentage such as 2%%)", cmd, arg);
}

/* What bench and sweep share; each command adds its own --repeats,
 * --target-noise and --max-repeats (their help differs). */
const struct cli_opt cli_run_opts[] = {
	{ .id = CLI_OPT_STRATEGY, CLI_RUN, .long_name = "strategy", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "comma list of timeslice, mps, mps-split, mig, sequential, streams", .def = "timeslice,mps",
	  .values = "timeslice mps mps-split mig sequential streams" },
	{ .id = CLI_OPT_DURATION, CLI_RUN, .long_name = "duration", .kind = CLI_DURATION, .value_name = "D",
	  .help = "measurement window", .def = "10s" },
	{ .id = CLI_OPT_REQUESTS, CLI_RUN, .long_name = "requests", .kind = CLI_INT, .value_name = "R",
	  .help = "instead of a window: R recorded requests per worker", .min = 1, .max = 1000000000000L },
	{ .id = CLI_OPT_WARMUP, CLI_RUN, .long_name = "warmup", .kind = CLI_DURATION, .value_name = "D",
	  .help = "window after the start barrier, not recorded", .def = "2s" },
	{ .id = CLI_OPT_WARMUP_REQUESTS, CLI_RUN, .long_name = "warmup-requests", .kind = CLI_INT, .value_name = "W",
	  .help = "requests per worker before it reports ready", .def = "3", .max = 1000000000L },
	{ .id = CLI_OPT_START_TIMEOUT, CLI_RUN, .long_name = "start-timeout", .kind = CLI_DURATION, .value_name = "D",
	  .help = "bound of the start barrier", .def = "120s" },
	{ .id = CLI_OPT_GPU, CLI_RUN, .long_name = "gpu", .kind = CLI_STRING, .value_name = "IDX|UUID", .help = "GPU to use",
	  .def = "0" },
	{ .id = CLI_OPT_GPUS, CLI_RUN, .long_name = "gpus", .kind = CLI_LIST, .value_name = "all|LIST",
	  .help = "several GPUs (indices or UUIDs): worker i on GPU i mod G, one MPS daemon for all; results per GPU and in total",
	  .values = "all" },
	{ .id = CLI_OPT_MPS_PIPE_DIR, CLI_RUN, .long_name = "mps-pipe-dir", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "use the MPS daemon running there (left running)" },
};
_Static_assert(CLI_N(cli_run_opts) == CLI_N_RUN_OPTS, "CLI_N_RUN_OPTS");

const struct cli_opt cli_program_opts[] = {
	{ .id = CLI_OPT_MODE, CLI_RUN, .long_name = "mode", .kind = CLI_ENUM, .value_name = "request|job",
	  .help = "request (default): it reports ready and each request through "
	  "GPUSHARE_REPORT_FD (<gpushare/client.h> in C, the gpushare_client "
	  "module in Python); job: each run to completion is one job: wall time "
	  "per job, jobs/s, makespan; no warm-up unless --warmup is given", .values = "request job" },
	{ .id = CLI_OPT_JOBS, CLI_RUN, .long_name = "jobs", .kind = CLI_INT, .value_name = "K",
	  .help = "job mode: K jobs per worker (else jobs for --duration)", .min = 1, .max = 1000000000L },
	{ .id = CLI_OPT_PRELOAD, CLI_RUN, .long_name = "preload", .kind = CLI_FLAG,
	  .help = "request mode, Python client: start the command once and fork each run's workers from "
	  "it at its first gpushare call, so its imports are paid once (see gpushare-bench(1))" },
};
_Static_assert(CLI_N(cli_program_opts) == CLI_N_PROGRAM_OPTS, "CLI_N_PROGRAM_OPTS");

const struct cli_opt cli_metrics_opts[] = {
	{ .id = CLI_OPT_METRICS_LISTEN, CLI_RUN, .long_name = "metrics-listen", .kind = CLI_STRING, .value_name = "[ADDR:]PORT",
	  .help = "serve live Prometheus metrics at /metrics while it runs (address default 127.0.0.1)" },
	{ .id = CLI_OPT_METRICS_BUCKETS, CLI_RUN, .long_name = "metrics-buckets", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "histogram bounds in seconds (0.001,0.005,...)" },
};
_Static_assert(CLI_N(cli_metrics_opts) == CLI_N_METRICS_OPTS, "CLI_N_METRICS_OPTS");

int cli_command_option(struct cli_command_opts *o, const struct cli_parse *p, struct gpushare_bench_config *c)
{
	const char *cmd = p->name, *arg = p->arg;
	int code;

	switch (p->opt ? p->opt->id : 0) {
	case CLI_OPT_STRATEGY:
		if (gpushare_strategy_parse_list(arg, c->strategies, &c->n_strategies))
			return cli_bad_value(cmd, "--strategy", arg);
		o->strategy_given = true;
		return EXIT_OK;
	case CLI_OPT_DURATION:
		code = parse_window(cmd, "--duration", arg, &c->duration_ns);
		o->duration_given = code == EXIT_OK;
		return code;
	case CLI_OPT_START_TIMEOUT: return parse_window(cmd, "--start-timeout", arg, &c->start_timeout_ns);
	case CLI_OPT_REQUESTS:
		c->requests = (uint64_t)p->num;
		return EXIT_OK;
	case CLI_OPT_WARMUP_REQUESTS:
		c->warmup_requests = (uint64_t)p->num;
		return EXIT_OK;
	case CLI_OPT_REPEATS:
		o->repeats = (int)p->num;
		return EXIT_OK;
	case CLI_OPT_MAX_REPEATS:
		o->max_repeats = (int)p->num;
		return EXIT_OK;
	case CLI_OPT_TARGET_NOISE: return parse_noise(cmd, arg, &o->target_noise);
	case CLI_OPT_MODE: return parse_mode(o, cmd, arg);
	case CLI_OPT_JOBS:
		o->jobs = (uint64_t)p->num;
		return EXIT_OK;
	case CLI_OPT_PRELOAD:
		o->preload = true;
		return EXIT_OK;
	case CLI_OPT_WARMUP: return parse_warmup(o, cmd, arg, c);
	case CLI_OPT_GPU: return parse_gpu(cmd, arg, c);
	case CLI_OPT_GPUS:
		if (!*arg || strlen(arg) >= sizeof(c->gpus))
			return cli_error(EXIT_USAGE, "%s: invalid --gpus '%s' (expected all or a list of indices and UUIDs)",
					 cmd, arg);
		snprintf(c->gpus, sizeof(c->gpus), "%s", arg);
		return EXIT_OK;
	case CLI_OPT_MPS_PIPE_DIR: return parse_mps_pipe_dir(cmd, arg, c);
	case CLI_OPT_METRICS_LISTEN: return parse_metrics_listen(cmd, arg, c);
	case CLI_OPT_METRICS_BUCKETS: return parse_metrics_buckets(cmd, arg, c);
	default: return CLI_NOT_MINE;
	}
}

int cli_run_option(struct cli_parse *p, void *args)
{
	struct cli_run_args *a = args;

	return cli_command_option(&a->co, p, a->c);
}

int cli_option_error(const char *cmd, int opt, const char *arg, const char *whose)
{
	if (opt == '?' && arg[0] == '-' && arg[1] == '-')
		return cli_error(EXIT_USAGE, "%s: unknown option '%s' (not a %s option nor an option of %s; see 'gpushare %s --help')",
				 cmd, arg, cmd, whose, cmd);
	return cli_usage_error(cmd, opt, optopt, arg);
}

int cli_unexpected_argument(const char *cmd, const char *arg)
{
	return cli_error(EXIT_USAGE, "%s: unexpected argument '%s' (see 'gpushare %s --help')", cmd, arg, cmd);
}

const char *cli_workload_arg(int argc, char **argv, int *i)
{
	if (!strcmp(argv[*i], "--workload") && *i + 1 < argc)
		return argv[++*i];
	if (!strncmp(argv[*i], "--workload=", 11))
		return argv[*i] + 11;
	return NULL;
}

char **cli_command_line(int argc, char **argv)
{
	char **cmdline = calloc((size_t)argc + 2, sizeof(*cmdline));

	if (!cmdline)
		return NULL;
	cmdline[0] = "gpushare";
	for (int i = 0; i < argc; i++)
		cmdline[i + 1] = argv[i];
	return cmdline;
}

static void on_interrupt(int sig)
{
	(void)sig;
	gpushare_bench_interrupt();
}

/* The signals a command stops on. */
static const int stop_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

void cli_stop_signals(sigset_t *set)
{
	sigemptyset(set);
	for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++)
		sigaddset(set, stop_sigs[i]);
	/* nohup: the user asked for the hangup to be ignored. */
	if (gpushare_signal_ignored(SIGHUP))
		sigdelset(set, SIGHUP);
}

int cli_reset_inherited_signals(void)
{
	sigset_t set;

	/* SIGCHLD ignored would make the kernel reap every child, and every
	 * job's, worker's and daemon's exit status would be lost. */
	if (signal(SIGCHLD, SIG_DFL) == SIG_ERR)
		return -1;
	/* Blocked (a launcher's thread that had blocked them), they would stay
	 * pending: a SIGTERM from the user, timeout or scancel would never stop
	 * the command. */
	cli_stop_signals(&set);
	return sigprocmask(SIG_UNBLOCK, &set, NULL);
}

void cli_catch_stop_signals(void (*handler)(int), int flags)
{
	struct sigaction sa;
	sigset_t set;

	cli_stop_signals(&set);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++)
		if (sigismember(&set, stop_sigs[i]))
			sigaction(stop_sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

void cli_catch_interrupts(void)
{
	/* A closed terminal (SIGHUP) or SIGQUIT stops the run the same way:
	 * workers stopped, the private MPS daemon stopped, the run directory
	 * removed, what was measured kept. */
	cli_catch_stop_signals(on_interrupt, 0);
}

int cli_parse_sharing_strategy(const char *s, int *out)
{
	static const int allowed[] = { GPUSHARE_STRATEGY_MPS, GPUSHARE_STRATEGY_MPS_SPLIT, GPUSHARE_STRATEGY_TIMESLICE };

	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		if (!strcmp(s, gpushare_strategy_name(allowed[i]))) {
			*out = allowed[i];
			return 0;
		}
	}
	return -1;
}

/* What to try instead, after an error that would stop every run. */
static const char *run_hint(const char *cmd, int rc)
{
	switch (rc) {
	case GPUSHARE_E_NO_DRIVER:
		return strcmp(cmd, "exec") ? "; without a GPU, --workload spin (CPU only) or your own program (-- CMD) runs" : "";
	case GPUSHARE_E_NO_MPS_BINARY:
		return strcmp(cmd, "exec") ? "; without MPS, --strategy timeslice runs the workers as plain processes"
					   : "; without MPS, --strategy timeslice runs the ranks as plain processes";
	default:
		return "";
	}
}

int cli_run_failed(const char *cmd, int rc)
{
	const char *d = gpushare_errdetail(), *hint = run_hint(cmd, rc);

	if (!*d)
		return cli_fail(rc, cmd);
	return cli_error(cli_exit_for(rc), "%s: %s%s", cmd, d, hint[0] && strstr(d, hint + 2) ? "" : hint);
}

void cli_warn_mps_clients(int workers)
{
	cli_warn("%d workers exceed the %d MPS clients a GPU accepts; expect CUDA error 808", workers,
		 GPUSHARE_MPS_MAX_CLIENTS_PER_GPU);
}

static void metrics_notice(const char *addr, uint16_t port, void *arg)
{
	bool v6 = strchr(addr, ':') != NULL;

	fprintf(stderr, "gpushare: %s: serving metrics at http://%s%s%s:%u/metrics\n", (const char *)arg, v6 ? "[" : "",
		addr, v6 ? "]" : "", (unsigned)port);
	fflush(stderr);
}

void cli_announce_metrics(const char *cmd)
{
	gpushare_metrics_set_listen_notice(metrics_notice, (void *)cmd);
}

struct preload_notice {
	const char *cmd;
	bool quiet;
};

static void preload_notice(void *arg, bool warning, const char *text)
{
	const struct preload_notice *n = arg;

	if (n->quiet && !warning)
		return;
	cli_message("", "%s: %s%s", n->cmd, warning ? "warning: " : "", text);
	fflush(stderr);
}

void cli_announce_preload(const char *cmd, bool quiet)
{
	static struct preload_notice n;

	n = (struct preload_notice){ cmd, quiet };
	gpushare_bench_set_preload_notice(preload_notice, &n);
}
