/*
 * Shared pieces of the gpushare command line: the subcommand signature,
 * exit statuses and error printing. Subcommands use libgpushare only through
 * its public headers.
 */
#ifndef GPUSHARE_CLI_H
#define GPUSHARE_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

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

/* Report an unknown option or missing argument from getopt_long and return
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
int cmd_sweep(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* gpushare_parse_int() that first refuses text that is not a whole number
 * ("abc", which strtol() would read as 0). GPUSHARE_E_INVAL with a detail. */
int cli_parse_whole(const char *s, long min, long max, long *out);

/* The bring-your-own-command options shared by bench and sweep
 * (cli/util.c): "-- CMD [ARGS...]", --mode request|job, --jobs K
 * (docs/protocol.md). Usage: cli_command_scan() before getopt_long (hand it
 * o.opt_argc so options stop at "--"), cli_command_parse_mode/_jobs() for
 * the two options, cli_command_apply() after the options. */
struct gpushare_bench_config;
struct cli_command_opts {
	int cmd_at;                /* index of the first "--" in argv, -1 none */
	int opt_argc;              /* argc for getopt_long */
	bool mode_given;
	int mode;                  /* enum gpushare_cmd_mode */
	uint64_t jobs;             /* --jobs K; 0 none */
};
void cli_command_scan(struct cli_command_opts *o, int argc, char **argv);
/* Each returns an exit status; messages start with "<cmd>: ". */
int cli_command_parse_mode(struct cli_command_opts *o, const char *cmd, const char *arg);
int cli_command_parse_jobs(struct cli_command_opts *o, const char *cmd, const char *arg);
/* After the options: check the combination (a command after "--", not with
 * --workload; --jobs only in job mode, not with --duration; --requests not in
 * job mode; --mode/--jobs only with a command) and point c->command at the
 * tail of argv (argv[argc] must be NULL, as main's is), set c->command_mode,
 * and in job mode c->requests = jobs and, unless warmup_given, no warm-up.
 * Whether the program can run is gpushare_bench_command_check()'s job. */
int cli_command_apply(const struct cli_command_opts *o, const char *cmd, int argc, char **argv, bool workload_given,
		      bool duration_given, bool warmup_given, struct gpushare_bench_config *c);

/* --metrics-listen [ADDR:]PORT and --metrics-buckets LIST into c (docs/metrics.md);
 * exit statuses, messages start with "<cmd>: ". */
int cli_parse_metrics_listen(const char *cmd, const char *arg, struct gpushare_bench_config *c);
int cli_parse_metrics_buckets(const char *cmd, const char *arg, struct gpushare_bench_config *c);

/* Shared by sweep and report (cli/cmd_report.c): write the report of the
 * sweep in dir into out_dir, warning about corrupt lines; mode says what goes
 * to stdout. Returns an exit status. */
enum { CLI_REPORT_SILENT, CLI_REPORT_MARKDOWN, CLI_REPORT_RECOMMENDATION };
int cli_report_run(const char *dir, const char *out_dir, double slo_p99_seconds, int mode);
/* --slo-p99: milliseconds ("5") or a duration ("500us"); 0 on success. */
int cli_parse_slo(const char *s, double *seconds);

#endif
