/*
 * `gpushare exporter`: a standalone Prometheus exporter of GPU, MIG, process
 * and MPS state (docs/metrics.md). Serves GET /metrics until SIGTERM,
 * SIGINT, SIGHUP or SIGQUIT, or with --once prints one exposition and exits.
 *
 * Signals are blocked before the server's threads start and taken
 * synchronously with sigwait(), so shutdown is an ordinary code path: stop
 * the server (joins its threads), then exit 0.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"

struct exporter {
	struct gpushare_metrics_system_opts opts;
	pthread_mutex_t lock;          /* guards warned_no_driver (the server runs
					* one collection at a time and shares it) */
	bool warned_no_driver;
};

/* Where exporter's options go. */
struct exporter_args {
	struct exporter *e;
	char addr[GPUSHARE_METRICS_ADDR_MAX];
	uint16_t port;
	bool once, no_processes;
};

static int set_listen(struct cli_parse *p, void *args)
{
	struct exporter_args *a = args;

	if (gpushare_metrics_parse_listen(p->arg, a->addr, sizeof(a->addr), &a->port))
		return cli_error(EXIT_USAGE, "exporter: invalid --listen '%s': %s", p->arg, gpushare_errdetail());
	return EXIT_OK;
}

/* --pipe-dir DIR, repeatable: one more directory to report. */
static int add_pipe_dir(struct cli_parse *p, void *args)
{
	struct gpushare_metrics_system_opts *o = &((struct exporter_args *)args)->e->opts;

	if (p->arg[0] != '/' || strlen(p->arg) >= GPUSHARE_PATH_MAX)
		return cli_error(EXIT_USAGE, "exporter: invalid --pipe-dir '%s' (expected an absolute path)", p->arg);
	if (o->n_pipe_dirs >= GPUSHARE_METRICS_MAX_PIPE_DIRS)
		return cli_error(EXIT_USAGE, "exporter: at most %d --pipe-dir options", GPUSHARE_METRICS_MAX_PIPE_DIRS);
	snprintf(o->pipe_dirs[o->n_pipe_dirs++], GPUSHARE_PATH_MAX, "%s", p->arg);
	return EXIT_OK;
}

static const struct cli_opt exporter_opts[] = {
	{ .id = OPT_LISTEN, .long_name = "listen", .kind = CLI_STRING, .value_name = "[ADDR:]PORT",
	  .help = "where to serve (default 127.0.0.1:9400; ADDR defaults to 127.0.0.1; port 0 picks a free port, printed on stderr)",
	  .to = CLI_TO_CALL, .call = set_listen },
	{ .id = OPT_ONCE, .long_name = "once", .kind = CLI_FLAG, .help = "print one exposition on stdout and exit",
	  .to = CLI_TO_TRUE, CLI_AT(struct exporter_args, once) },
	{ .id = OPT_PIPE_DIR, .long_name = "pipe-dir", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "MPS pipe directory to report (repeatable; default: gpushare's own, $CUDA_MPS_PIPE_DIRECTORY, /tmp/nvidia-mps)",
	  .to = CLI_TO_CALL, .call = add_pipe_dir },
	{ .id = OPT_NO_PROCESSES, .long_name = "no-processes", .kind = CLI_FLAG,
	  .help = "leave out the per-process GPU memory and per-client accounting series",
	  .to = CLI_TO_TRUE, CLI_AT(struct exporter_args, no_processes) },
};

static const struct cli_group exporter_groups[] = { CLI_GROUP("Options", exporter_opts, NULL) };

const struct cli_cmd cli_exporter_cmd = {
	.name = "exporter",
	.usage = "gpushare exporter [--listen [ADDR:]PORT] [--once] [--pipe-dir DIR]...\n"
		 "                  [--no-processes]",
	.about = "Export GPU, MIG instance, compute process and MPS metrics in the Prometheus\n"
		 "text format at http://ADDR:PORT/metrics.",
	.groups = exporter_groups,
	.n_groups = CLI_N(exporter_groups),
	.epilog = "Without an NVIDIA driver the server keeps running and exports\n"
		  "gpushare_nvidia_driver_up 0; --once prints the exposition and exits 3.\n"
		  "SIGTERM, SIGINT, SIGHUP or SIGQUIT stops the server cleanly (exit 0).\n"
		  "\n"
		  "Examples:\n"
		  "  gpushare exporter --listen 0.0.0.0:9401   serve /metrics on every address, port 9401\n"
		  "  gpushare exporter --once | promtool check metrics",
	.notes = (const struct cli_exit_note[]){ { EXIT_NO_DRIVER, "--once: no NVIDIA driver found (the exposition is still "
								   "printed)" },
						 { EXIT_IO, "writing the output failed" } },
	.n_notes = 2,
};


static int produce(void *arg, char **text, size_t *len)
{
	struct exporter *e = arg;
	struct gpushare_metrics_buf b;
	bool up = false;
	int rc;

	gpushare_metrics_buf_init(&b);
	pthread_mutex_lock(&e->lock);
	rc = gpushare_metrics_write_system(&b, &e->opts, &up);
	if (!up && !e->warned_no_driver) {
		cli_warn("exporter: no NVIDIA driver found; exporting gpushare_nvidia_driver_up 0");
		e->warned_no_driver = true;
	} else if (up) {
		e->warned_no_driver = false;
	}
	pthread_mutex_unlock(&e->lock);
	if (rc) {
		gpushare_metrics_buf_release(&b);
		return rc;
	}
	return gpushare_metrics_buf_finish(&b, text, len);
}

static int run_once(struct exporter *e)
{
	struct gpushare_metrics_buf b;
	char *text;
	size_t len;
	bool up = false;
	int rc, code;

	gpushare_metrics_buf_init(&b);
	rc = gpushare_metrics_write_system(&b, &e->opts, &up);
	if (!rc)
		rc = gpushare_metrics_buf_finish(&b, &text, &len);
	else
		gpushare_metrics_buf_release(&b);
	if (rc)
		return cli_fail(rc, "exporter");
	fwrite(text, 1, len, stdout);
	free(text);
	code = cli_finish_stdout(EXIT_OK);
	if (code == EXIT_OK && !up)
		code = cli_error(EXIT_NO_DRIVER, "exporter: no NVIDIA driver found; gpushare_nvidia_driver_up is 0");
	return code;
}

static int serve(struct exporter *e, const char *addr, uint16_t port)
{
	struct gpushare_metrics_server *srv;
	sigset_t set;
	int sig = 0, rc;

	/* Blocked before the server's threads exist, so they inherit it and
	 * the signals wait for sigwait() below. */
	cli_stop_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	rc = gpushare_metrics_server_start(addr, port, produce, e, &srv);
	if (rc)
		return cli_error(cli_exit_for(rc), "exporter: %s", gpushare_errdetail());
	fprintf(stderr, "gpushare: exporter: serving http://%s%s%s:%u/metrics\n", strchr(addr, ':') ? "[" : "", addr,
		strchr(addr, ':') ? "]" : "", (unsigned)gpushare_metrics_server_port(srv));
	fflush(stderr);
	while (sigwait(&set, &sig) != 0)
		;
	gpushare_metrics_server_stop(srv);
	fprintf(stderr, "gpushare: exporter: stopped by SIG%s\n",
		sig == SIGTERM ? "TERM" : sig == SIGHUP ? "HUP" : sig == SIGQUIT ? "QUIT" : "INT");
	return EXIT_OK;
}

int cmd_exporter(int argc, char **argv)
{
	static struct exporter e;  /* large (pipe directories): off the stack */
	struct exporter_args a = { .e = &e, .addr = "127.0.0.1", .port = GPUSHARE_METRICS_EXPORTER_PORT };
	struct cli_parse p;
	int code;

	gpushare_metrics_system_opts_init(&e.opts);
	cli_parse_init(&p, &cli_exporter_cmd, argc, argv);
	if (!cli_parse_options(&p, &a))
		return p.status;
	if (a.no_processes)
		e.opts.processes = e.opts.clients = false;
	if (p.optind < argc)
		return cli_unexpected_argument("exporter", argv[p.optind]);
	if (a.once)
		return run_once(&e);
	pthread_mutex_init(&e.lock, NULL);
	code = serve(&e, a.addr, a.port);
	pthread_mutex_destroy(&e.lock);
	return code;
}
