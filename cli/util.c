/*
 * Error printing and exit statuses for the command line, and the option
 * parsing that bench and sweep share (a command after "--", --mode, --jobs,
 * --metrics-listen, --metrics-buckets).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"

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

int cli_fail(int err, const char *what)
{
	const char *detail = gpushare_errdetail();

	fprintf(stderr, "gpushare: %s%s%s%s%s\n", what ? what : "", what ? ": " : "",
		gpushare_strerror(err), *detail ? ": " : "", detail);
	return cli_exit_for(err);
}

int cli_error(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("gpushare: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	fputs("gpushare: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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
	const char *p = s + (*s == '-' || *s == '+');

	if (!*p || strspn(p, "0123456789") != strlen(p))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a whole number", s);
	return gpushare_parse_int(s, min, max, out);
}

static int bad_value(const char *cmd, const char *opt, const char *value)
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

int cli_command_parse_mode(struct cli_command_opts *o, const char *cmd, const char *arg)
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

int cli_command_parse_jobs(struct cli_command_opts *o, const char *cmd, const char *arg)
{
	long v;

	if (cli_parse_whole(arg, 1, 1000000000L, &v))
		return bad_value(cmd, "--jobs", arg);
	o->jobs = (uint64_t)v;
	return EXIT_OK;
}

int cli_command_apply(const struct cli_command_opts *o, const char *cmd, int argc, char **argv, bool workload_given,
		      bool duration_given, bool warmup_given, struct gpushare_bench_config *c)
{
	if (o->cmd_at < 0) {
		if (o->mode_given || o->jobs)
			return cli_error(EXIT_USAGE, "%s: --mode and --jobs apply to a command given after '--'", cmd);
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
		if (!warmup_given)
			c->warmup_ns = 0;
	} else if (o->jobs) {
		return cli_error(EXIT_USAGE, "%s: --jobs needs --mode job", cmd);
	}
	c->command_mode = o->mode;
	c->command = &argv[o->cmd_at + 1];
	return EXIT_OK;
}

int cli_parse_metrics_listen(const char *cmd, const char *arg, struct gpushare_bench_config *c)
{
	char addr[GPUSHARE_METRICS_ADDR_MAX];
	uint16_t port;

	if (gpushare_metrics_parse_listen(arg, addr, sizeof(addr), &port))
		return bad_value(cmd, "--metrics-listen", arg);
	snprintf(c->metrics_listen, sizeof(c->metrics_listen), "%s", arg);
	return EXIT_OK;
}

int cli_parse_metrics_buckets(const char *cmd, const char *arg, struct gpushare_bench_config *c)
{
	if (gpushare_metrics_parse_buckets(arg, c->metrics_buckets, &c->n_metrics_buckets))
		return bad_value(cmd, "--metrics-buckets", arg);
	return EXIT_OK;
}
