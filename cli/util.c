/*
 * Error printing and exit statuses for the command line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpushare/gpushare.h"

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
