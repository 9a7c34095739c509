/*
 * Shared pieces of the gpushare command line: the subcommand signature,
 * exit statuses and error printing. Subcommands use libgpushare only through
 * its public headers, and the uninstalled include/gpushare/internal/ ones
 * for what only the command line uses (its option parsers and notices).
 */
#ifndef GPUSHARE_CLI_H
#define GPUSHARE_CLI_H

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "opt.h"

/* Exit statuses, documented in docs/cli.md. Keep the two in step. */
enum cli_exit {
	EXIT_OK = 0,
	EXIT_FAILURE_GENERIC = 1,  /* unexpected failure (system call, out of memory) */
	EXIT_USAGE = 2,            /* unknown command or option, bad option value */
	EXIT_NO_DRIVER = 3,        /* no NVIDIA driver (NVML/libcuda) found */
	EXIT_NO_MPS_BINARY = 4,    /* nvidia-cuda-mps-control not found */
	EXIT_MPS = 5,              /* MPS daemon not running, not ready, bad reply, clients left */
	EXIT_DIR = 6,              /* unsafe or unusable directory */
	EXIT_GPU = 7,              /* GPU refuses: prohibited compute mode, unsupported, not found */
	EXIT_WORKER = 8,           /* a worker failed to start or run */
	EXIT_MPS_MAX_CLIENTS = 9,  /* CUDA error 808: too many MPS clients */
	EXIT_PARTIAL = 10,         /* a worker failed mid-run; partial results were kept */
	EXIT_IO = 11,              /* reading or writing a file failed */
	EXIT_TIMEOUT = 12,         /* a bounded wait ran out */
	EXIT_LISTEN = 13,          /* --listen / --metrics-listen: address in use or cannot be bound */
	EXIT_PLAN_REFUSED = 14,    /* plan: the results cannot support the asked plan */
	EXIT_CHECK_FAILED = 15,    /* check: a client attained a share outside the tolerance */
	EXIT_INTERRUPTED = 130,    /* stopped by SIGINT/SIGTERM */
};

typedef int (*cli_fn)(int argc, char **argv);

/* Map a libgpushare error code to an exit status. */
int cli_exit_for(int err);

/* Print "gpushare: <what>: <strerror>: <detail>" to stderr and return the
 * exit status for err. `what` may be NULL. */
int cli_fail(int err, const char *what);

/* Print "gpushare: <message>" to stderr and return `code`. */
int cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print a warning line to stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Report an unknown option or missing argument (getopt_long's ":" or "?") and return
 * EXIT_USAGE. `cmd` names the subcommand ("mps start"). */
int cli_usage_error(const char *cmd, int opt, int optopt_, const char *arg);

/* Write `s` followed by a newline to stdout, checking the write; returns an
 * exit status. Used for JSON documents. */
int cli_print_json_and_free(char *s);

/* Check that stdout was written and flushed without error (ENOSPC, EPIPE). */
int cli_finish_stdout(int code);

/* Subcommands. */
int cmd_info(int argc, char **argv);
int cmd_mps(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_exporter(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_farm(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_slurm(int argc, char **argv);
int cmd_plan(int argc, char **argv);

/* gpushare_parse_int() that first refuses text that is not a whole number
 * written as digits only ("abc", which strtol() would read as 0, "+2",
 * "-1", " 3"). GPUSHARE_E_INVAL with a detail. */
int cli_parse_whole(const char *s, long min, long max, long *out);

/* The options bench and sweep share (cli/util.c): their tables
 * (cli_run_opts, cli_program_opts, cli_metrics_opts in cli/opt.h) and one
 * parse by cli_command_option(): the bring-your-own-command ones,
 * "-- CMD [ARGS...]", --mode request|job, --jobs K (docs/protocol.md); the
 * run's --strategy LIST, --duration D, --requests R, --warmup D,
 * --warmup-requests W, --start-timeout D, --gpu IDX|UUID, --gpus all|LIST,
 * --mps-pipe-dir DIR, --metrics-listen [ADDR:]PORT, --metrics-buckets LIST
 * (docs/metrics.md); the repeats --repeats K, --target-noise P,
 * --max-repeats M (each command's own entries, with its own help). Whole
 * numbers are checked by the parser; durations need a unit or are
 * microseconds as gpushare_parse_duration() says, and every bad value gives
 * "<cmd>: invalid <opt> '<value>': <why>". Usage: cli_command_scan() before
 * the parse (hand its o.opt_argc to the parser so options stop at "--"),
 * cli_command_option() for the CLI_OPT_* ids (the tables bind them to it
 * through cli_run_option()), cli_command_apply() after the options. */
struct gpushare_bench_config;
struct cli_command_opts {
	int cmd_at;                /* index of the first "--" in argv, -1 none */
	int opt_argc;              /* argc for the parser: options end there */
	bool mode_given;
	int mode;                  /* enum gpushare_cmd_mode */
	uint64_t jobs;             /* --jobs K; 0 none */
	bool preload;              /* --preload */
	bool warmup_given;
	bool duration_given;
	bool strategy_given;       /* --strategy went into c->strategies */
	int repeats;               /* --repeats K; 0 not given */
	double target_noise;       /* --target-noise P as a fraction; 0 not given */
	int max_repeats;           /* --max-repeats M; 0 not given */
};
void cli_command_scan(struct cli_command_opts *o, int argc, char **argv);
/* The option p found, if a CLI_OPT_* one, with its value into o or c.
 * Returns an exit status; messages start with "<cmd>: ". CLI_NOT_MINE when
 * opt is not one of them. */
#define CLI_NOT_MINE (-1)
int cli_command_option(struct cli_command_opts *o, const struct cli_parse *p, struct gpushare_bench_config *c);
/* After the options: check the combination (a command after "--", not with
 * --workload; --jobs only in job mode, not with --duration; --requests not in
 * job mode; --mode/--jobs only with a command; --duration or --requests, not
 * both; --max-repeats not below --repeats) and point c->command at the tail
 * of argv (argv[argc] must be NULL, as main's is), set c->command_mode, and
 * in job mode c->requests = jobs and, unless --warmup was given, no warm-up.
 * Whether the program can run is gpushare_bench_command_check()'s job. */
int cli_command_apply(const struct cli_command_opts *o, const char *cmd, int argc, char **argv, bool workload_given,
		      struct gpushare_bench_config *c);

/* Where the options of the shared tables go (cli_run_opts, cli_program_opts,
 * cli_metrics_opts, cli_openloop_opts, cli_peak_opts, and a command's own
 * entries with CLI_OPT_* or CLI_OPEN_* ids bound by CLI_RUN or CLI_OPEN): a
 * command that has them puts this at the start of the args it gives
 * cli_parse_options(), with co scanned (cli_command_scan()) and c set. */
struct cli_run_args {
	struct cli_command_opts co;
	struct gpushare_bench_config *c;
};
/* cli_command_option() into the struct cli_run_args at args. */
int cli_run_option(struct cli_parse *p, void *args);
/* cli_openloop_option() into the struct cli_run_args at args. */
int cli_openloop_call(struct cli_parse *p, void *args);
#define CLI_RUN .to = CLI_TO_CALL, .call = cli_run_option
#define CLI_OPEN .to = CLI_TO_CALL, .call = cli_openloop_call

/* The open-loop options bench and sweep share (cli/cli_openloop.c): the
 * CLI_OPEN_* ids of cli_openloop_opts and cli_peak_opts (cli/opt.h), parsed by
 * cli_openloop_option() (bound through cli_openloop_call()); each command has
 * its own --rate entry. */
/* The option p found, if a CLI_OPEN_* one, into c; an exit status or CLI_NOT_MINE. */
int cli_openloop_option(const struct cli_parse *p, struct gpushare_bench_config *c);
/* --rate R: a number of arrivals per second above 0. Returns an exit status. */
int cli_openloop_rate(const char *cmd, const char *arg, double *rate);
/* sweep --rate LIST: at most max distinct rates into out. An exit status. */
int cli_openloop_rate_list(const char *cmd, const char *arg, double *out, size_t max, size_t *n);

/* What sweep and tune share (cli/cli_sweep.c). */
struct gpushare_sweep_config;
/* The options of every workload that a --workload names (each item of a
 * list) and cmd has not, each once, into names (at most max; they point
 * into the workload tables): they join the option table. Their count. */
size_t cli_sweep_prescan(const struct cli_cmd *cmd, int argc, char **argv, const char **names, size_t max);
/* --workers, --batch or --thread-percentage (opt) into s: an exit status
 * ("<cmd>: invalid <option> ..."), or CLI_NOT_MINE for another option. */
int cli_sweep_axis_option(const char *cmd, int opt, const char *arg, struct gpushare_sweep_config *s);
/* The start of sweep's and tune's argument structs (cli_parse_options()):
 * run.c = &s->bench. */
struct cli_sweep_args {
	struct cli_run_args run;
	struct gpushare_sweep_config *s;
};
/* cli_sweep_axis_option() of the option p found into the struct
 * cli_sweep_args at args. */
int cli_sweep_axis_call(struct cli_parse *p, void *args);
/* The workload options given (values[i] for names[i], NULL when not given)
 * set on s's shapes: an exit status. */
int cli_sweep_shape_options(const char *cmd, struct gpushare_sweep_config *s, size_t n, const char **names,
			    const char **values);

/* After the parse: the command-mode options into s->bench
 * (cli_command_apply) and --strategy as the sweep's strategies. An exit
 * status. */
int cli_sweep_apply_command(const struct cli_command_opts *co, const char *cmd, int argc, char **argv,
			    bool workload_given, struct gpushare_sweep_config *s);

/* sweep and tune: a command line without --resume (or with --help) goes to
 * run() as it is. With --resume --out DIR, the options recorded in
 * DIR/file's first record apply; those given again must be the same, except
 * free_opts (they measure nothing: given again, they apply); a command after
 * "--" must be the recorded one. Runs run() with that command line; an exit
 * status. */
struct cli_resume {
	const struct cli_cmd *cmd;
	const char *file;
	const char *const *free_opts;
	size_t n_free;
	int (*run)(int argc, char **argv);
	/* Set (tune): --resume with nothing recorded in file is refused, not
	 * a new run; so is one where file holds nothing but also_file runs. */
	bool need_record;
	const char *also_file;
};
int cli_resume(const struct cli_resume *r, int argc, char **argv);

/* More of what bench and sweep share (cli/util.c). */

/* "<cmd>: invalid <opt> '<value>': <gpushare_errdetail()>", EXIT_USAGE. */
int cli_bad_value(const char *cmd, const char *opt, const char *value);
/* getopt_long's ':' or '?' (its opt) for the option in arg. An unknown long
 * option is "neither a <cmd> option nor an option of <whose>", whose naming
 * the workloads whose options joined the table. */
int cli_option_error(const char *cmd, int opt, const char *arg, const char *whose);
/* A word left after the options: "<cmd>: unexpected argument '<arg>' (see
 * 'gpushare <cmd> --help')", EXIT_USAGE. */
int cli_unexpected_argument(const char *cmd, const char *arg);
/* The value of a --workload option at argv[*i] ("--workload V", advancing *i
 * past V, or "--workload=V"); NULL when argv[*i] is another word. For the
 * scans that find the workloads before the parse. */
const char *cli_workload_arg(int argc, char **argv, int *i);
/* A copy of the argv array with "gpushare" in front, for the record of the
 * command line (the strings are not copied); free() it. NULL when out of memory. */
char **cli_command_line(int argc, char **argv);
/* SIGINT and SIGTERM stop the running benchmark (gpushare_bench_interrupt());
 * SIGPIPE is ignored. */
void cli_catch_interrupts(void);
/* The signals a command stops on: SIGINT, SIGTERM, SIGHUP and SIGQUIT, but
 * SIGHUP when it is ignored (nohup). */
void cli_stop_signals(sigset_t *set);
/* cli_stop_signals() to handler (sigaction flags), SIGPIPE ignored. */
void cli_catch_stop_signals(void (*handler)(int), int flags);
/* At the start of every command, what a parent may leave across exec that
 * would break it: SIGCHLD back to its default action (ignored, children's
 * exit statuses are lost) and the stop signals above unblocked. Other
 * dispositions (nohup's ignored SIGHUP) are kept. 0, or -1 on failure. */
int cli_reset_inherited_signals(void);
/* "mps", "mps-split" or "timeslice" (the strategies farm and exec run): 0, or -1. */
int cli_parse_sharing_strategy(const char *s, int *out);
/* After a failed run: the library's detail when it has one, else
 * cli_fail(rc, cmd). Returns the exit status for rc. */
int cli_run_failed(const char *cmd, int rc);
/* Say on stderr where a --metrics-listen server serves, with the port it
 * took ("gpushare: CMD: serving metrics at http://127.0.0.1:PORT/metrics"). */
void cli_announce_metrics(const char *cmd);
/* --preload's notices on stderr: "gpushare: CMD: ..." (warnings also when quiet). */
void cli_announce_preload(const char *cmd, bool quiet);
/* Warn that `workers` exceed the MPS clients a GPU accepts (CUDA error 808). */
void cli_warn_mps_clients(int workers);

/* Shared by sweep and report (cli/cmd_report.c): write the report of the
 * sweep in dir into out_dir, warning about corrupt lines; mode says what goes
 * to stdout. Returns an exit status. */
enum { CLI_REPORT_SILENT, CLI_REPORT_MARKDOWN, CLI_REPORT_RECOMMENDATION };
int cli_report_run(const char *dir, const char *out_dir, double slo_p99_seconds, int mode);
/* --slo-p99: milliseconds ("5") or a duration ("500us"); 0 on success. */
int cli_parse_slo(const char *s, double *seconds);

#endif
