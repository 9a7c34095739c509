/*
 * gpushare mps start | stop | status | set: manage the MPS control daemon.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpushare/gpu.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/internal/mps.h"
#include "gpushare/utf8.h"

struct mps_args {
	const char *sub;
	const char *pipe_dir, *log_dir;
	const char *gpus;
	const char *mem_limit;
	int timeout_ms;
	bool json, force, has_limits;
	long log_lines;
	long server;
	struct gpushare_mps_limits limits;
};

#define AT(field) CLI_AT(struct mps_args, field)
#define CALL(fn) .to = CLI_TO_CALL, .call = fn

/* "mps SUB: --NAME: <the library's detail>", EXIT_USAGE. */
static int bad_value(const struct cli_parse *p)
{
	return cli_error(EXIT_USAGE, "%s: %s: %s", p->name, cli_parse_optname(p), gpushare_errdetail());
}

static int set_gpus(struct cli_parse *p, void *args)
{
	const char *arg = p->arg;

	if (!*arg)
		return cli_error(EXIT_USAGE, "mps start: --gpus needs a list of GPU indices or UUIDs");
	if (arg[0] == ',' || arg[strlen(arg) - 1] == ',' || strstr(arg, ",,"))
		return cli_error(EXIT_USAGE, "mps start: --gpus '%s' has an empty item", arg);
	((struct mps_args *)args)->gpus = arg;
	return EXIT_OK;
}

static int set_timeout(struct cli_parse *p, void *args)
{
	uint64_t ns;
	int rc = gpushare_parse_duration(p->arg, &ns);

	if (!rc && (ns < 1000000ULL || ns > 3600ULL * 1000000000ULL))
		rc = gpushare_fail(GPUSHARE_E_INVAL, "'%s' is out of range (1ms to 1h)", p->arg);
	if (rc)
		return bad_value(p);
	((struct mps_args *)args)->timeout_ms = (int)(ns / 1000000ULL);
	return EXIT_OK;
}

static int set_thread_percentage(struct cli_parse *p, void *args)
{
	struct mps_args *a = args;

	a->has_limits = true;
	return gpushare_parse_percent(p->arg, &a->limits.thread_percentage) ? bad_value(p) : EXIT_OK;
}

static int set_mem_limit(struct cli_parse *p, void *args)
{
	struct mps_args *a = args;

	a->mem_limit = p->arg;
	a->has_limits = true;
	return EXIT_OK;
}

static int set_priority(struct cli_parse *p, void *args)
{
	struct mps_args *a = args;
	long v;

	a->has_limits = true;
	if (gpushare_parse_int(p->arg, 0, 1, &v)) {
		gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a client priority (0 normal, 1 below normal)", p->arg);
		return bad_value(p);
	}
	a->limits.priority = (int)v;
	return EXIT_OK;
}

static int set_log(struct cli_parse *p, void *args)
{
	return gpushare_parse_int(p->arg, 0, 100000, &((struct mps_args *)args)->log_lines) ? bad_value(p) : EXIT_OK;
}

static int set_server(struct cli_parse *p, void *args)
{
	if (gpushare_parse_int(p->arg, 1, 0x7fffffff, &((struct mps_args *)args)->server)) {
		gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a server pid", p->arg);
		return bad_value(p);
	}
	return EXIT_OK;
}

static const struct cli_opt mps_common_opts[] = {
	{ .id = OPT_PIPE_DIR, .long_name = "pipe-dir", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "pipe directory (default: $CUDA_MPS_PIPE_DIRECTORY, else gpushare's private <user dir>/mps/pipe)",
	  .to = CLI_TO_STR, AT(pipe_dir) },
	{ .id = OPT_LOG_DIR, .long_name = "log-dir", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "log directory (default: $CUDA_MPS_LOG_DIRECTORY, else <user dir>/mps/log)",
	  .to = CLI_TO_STR, AT(log_dir) },
	{ .id = OPT_TIMEOUT, .long_name = "timeout", .kind = CLI_DURATION, .value_name = "DURATION",
	  .help = "bound for each wait, 1ms to 1h", .def = "10s",
	  CALL(set_timeout) },
	{ .id = OPT_JSON, .long_name = "json", .kind = CLI_FLAG, .help = "machine-readable output",
	  .to = CLI_TO_TRUE, AT(json) },
};

static const struct cli_opt mps_start_opts[] = {
	{ .id = OPT_GPUS, .long_name = "gpus", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "GPUs the daemon serves (indices or UUIDs; its CUDA_VISIBLE_DEVICES)", .only = "start",
	  CALL(set_gpus) },
	{ .id = OPT_THREAD_PCT, .long_name = "thread-percentage", .kind = CLI_PERCENT, .value_name = "P",
	  .help = "default active thread percentage for clients, (0,100]", .only = "start set",
	  CALL(set_thread_percentage) },
	{ .id = OPT_MEM_LIMIT, .long_name = "mem-limit", .kind = CLI_STRING, .value_name = "SPEC",
	  .help = "default pinned device memory limit: SIZE for every device, or DEV=SIZE,... (e.g. 4G or 0=4G,1=512M)",
	  .only = "start set",
	  CALL(set_mem_limit) },
	{ .id = OPT_PRIORITY, .long_name = "priority", .kind = CLI_ENUM, .value_name = "0|1",
	  .help = "default client priority (0 normal, 1 below normal)", .max = 1, .values = "0 1",
	  .only = "start set",
	  CALL(set_priority) },
};

static const struct cli_opt mps_stop_opts[] = {
	{ .id = OPT_FORCE, .long_name = "force", .kind = CLI_FLAG,
	  .help = "terminate attached clients first (through MPS; a client still running 5 s later gets SIGTERM, then SIGKILL); "
	  "without it, attached clients are reported and the daemon is left running", .only = "stop",
	  .to = CLI_TO_TRUE, AT(force) },
};

static const struct cli_opt mps_status_opts[] = {
	{ .id = OPT_LOG, .long_name = "log", .kind = CLI_INT, .value_name = "N",
	  .help = "also show the last N lines of control.log", .max = 100000, .flags = CLI_RAW, .only = "status",
	  CALL(set_log) },
};

static const struct cli_opt mps_set_opts[] = {
	{ .id = OPT_SERVER, .long_name = "server", .kind = CLI_INT, .value_name = "PID",
	  .help = "apply to that running server (its new clients) instead of the daemon defaults (servers started later)",
	  .min = 1, .max = 0x7fffffff, .flags = CLI_RAW, .only = "set",
	  CALL(set_server) },
};

static const struct cli_group mps_groups[] = {
	CLI_GROUP("Options for every subcommand", mps_common_opts, NULL),
	CLI_GROUP("start", mps_start_opts, NULL),
	CLI_GROUP("stop", mps_stop_opts, NULL),
	CLI_GROUP("status", mps_status_opts, NULL),
	CLI_GROUP("set", mps_set_opts, "  --thread-percentage P, --mem-limit SPEC, --priority 0|1   as for start"),
};

const struct cli_cmd cli_mps_cmd = {
	.name = "mps",
	.usage = "gpushare mps <start|stop|status|set> [options]",
	.about = "Manage an NVIDIA MPS control daemon in a private pipe directory.\n"
		 "\n"
		 "  start    start a daemon and wait until it answers (idempotent)\n"
		 "  stop     quit the daemon and wait until it and its servers are gone\n"
		 "  status   show the daemon, its servers, clients and limits\n"
		 "  set      change default limits, or a running server's limits",
	.groups = mps_groups,
	.n_groups = CLI_N(mps_groups),
	.subcommands = "start stop status set",
	.epilog = "The compute mode is read before start: Prohibited is refused; in Default mode\n"
		  "plain processes can still time-slice beside MPS clients (gpushare never changes\n"
		  "the compute mode).",
	.notes = (const struct cli_exit_note[]){ { EXIT_USAGE, "usage" },
						 { EXIT_NO_MPS_BINARY, "control program missing" },
						 { EXIT_MPS, "daemon not running / not answering / clients still attached" },
						 { EXIT_GPU, "GPU compute mode Prohibited or --gpus not found" },
						 { EXIT_IO, "output not writable" },
						 { EXIT_TIMEOUT, "timeout (--timeout)" } },
	.n_notes = 6,
	.name_options = true,
};


/* An exit status, or -1 when --help was printed. */
static int parse_args(int argc, char **argv, struct mps_args *a)
{
	struct cli_parse p;
	char what[64];

	memset(a, 0, sizeof(*a));
	gpushare_mps_limits_init(&a->limits);
	a->timeout_ms = 10000;
	a->sub = argv[0];
	snprintf(what, sizeof(what), "mps %s", a->sub);
	cli_parse_init(&p, &cli_mps_cmd, argc, argv);
	p.name = what;
	p.sub = a->sub;
	if (!cli_parse_options(&p, a))
		return p.status == EXIT_OK && p.opt && p.opt->id == 'h' ? -1 : p.status;
	if (p.optind < argc)
		return cli_error(EXIT_USAGE, "mps %s: unexpected argument '%s'", a->sub, argv[p.optind]);
	return EXIT_OK;
}

/* How many device ordinals the daemon numbers: the --gpus list, else every
 * GPU NVML sees, else 1. */
static int device_count(const char *gpus)
{
	unsigned n = 0;

	if (gpus && *gpus) {
		int k = 1;

		for (const char *p = gpus; *p; p++)
			k += *p == ',';
		return k > 16 ? 16 : k;
	}
	if (gpushare_nvml_open() == GPUSHARE_OK) {
		if (gpushare_gpu_count(&n) != GPUSHARE_OK)
			n = 0;
		gpushare_nvml_close();
	}
	return n ? (int)(n > 16 ? 16 : n) : 1;
}

static int open_mps(const struct mps_args *a, struct gpushare_mps *m)
{
	int rc = gpushare_mps_init(m, a->pipe_dir, a->log_dir);

	if (rc)
		return cli_fail(rc, "mps");
	m->timeout_ms = a->timeout_ms;
	return EXIT_OK;
}

static int do_start(struct mps_args *a)
{
	struct gpushare_mps m;
	struct gpushare_mps_start_opts o = { .visible_devices = a->gpus };
	struct gpushare_mps_start_info info;
	bool default_mode = false;
	int rc;

	if ((rc = open_mps(a, &m)))
		return rc;
	if (a->mem_limit) {
		rc = gpushare_mps_parse_mem_limits(a->mem_limit, device_count(a->gpus), &a->limits);
		if (rc)
			return cli_error(EXIT_USAGE, "mps start: --mem-limit: %s", gpushare_errdetail());
	}
	o.limits = a->limits;
	/* A missing control program is the one error to report, not a
	 * compute-mode warning before it. */
	{
		char path[GPUSHARE_PATH_MAX];

		rc = gpushare_mps_find_control(&m, path, sizeof(path));
		if (rc)
			return cli_fail(rc, "mps start");
	}
	rc = gpushare_mps_check_compute_mode(a->gpus, &default_mode);
	if (rc == GPUSHARE_E_PROHIBITED)
		return cli_fail(rc, "mps start");
	if (rc == GPUSHARE_E_NO_DRIVER)
		cli_warn("cannot read the GPU compute mode: %s", gpushare_errdetail());
	else if (rc == GPUSHARE_E_NOT_FOUND || rc == GPUSHARE_E_INVAL)
		return cli_fail(rc, "mps start: --gpus");
	else if (rc)
		cli_warn("cannot read the GPU compute mode: %s", gpushare_errdetail());
	else if (default_mode)
		cli_warn("compute mode is Default: plain CUDA processes can still time-slice beside MPS clients");
	rc = gpushare_mps_start(&m, &o, &info);
	if (rc)
		return cli_fail(rc, "mps start");
	if (info.already_running && a->has_limits)
		cli_warn("limits not applied: the daemon was already running (use 'gpushare mps set')");
	if (a->json)
		return cli_print_json_and_free(gpushare_mps_start_json(&m, &info));
	if (info.cleaned_stale)
		printf("removed stale MPS state in %s\n", m.pipe_dir);
	if (info.already_running)
		printf("MPS control daemon already running: pid %d, pipe dir %s (left as it is)\n", (int)info.pid, m.pipe_dir);
	else
		printf("MPS control daemon started: pid %d\n  pipe dir %s\n  log dir  %s\n"
		       "clients need: export CUDA_MPS_PIPE_DIRECTORY=%s\n",
		       (int)info.pid, m.pipe_dir, m.log_dir, m.pipe_dir);
	return cli_finish_stdout(EXIT_OK);
}

static int do_stop(struct mps_args *a)
{
	struct gpushare_mps m;
	struct gpushare_mps_stop_info info;
	int rc;

	if ((rc = open_mps(a, &m)))
		return rc;
	rc = gpushare_mps_stop(&m, a->force, &info);
	if (rc)
		return cli_fail(rc, "mps stop");
	if (a->json)
		return cli_print_json_and_free(gpushare_mps_stop_json(&m, &info));
	if (!info.was_running)
		printf("no MPS control daemon running at %s\n", m.pipe_dir);
	else
		printf("MPS control daemon %d stopped (%zu client(s) were attached, %zu terminated, %zu signalled)\n",
		       (int)info.pid, info.clients_attached, info.clients_terminated, info.clients_signalled);
	return cli_finish_stdout(EXIT_OK);
}

static void print_limits(FILE *o, const char *indent, char lim[][16], int n)
{
	fprintf(o, "%spinned memory limit:", indent);
	for (int d = 0; d < n; d++)
		fprintf(o, " dev%d=%s", d, lim[d][0] ? lim[d] : "none");
	fprintf(o, "\n");
}

/* The log directory of daemon pid, from its environment
 * (CUDA_MPS_LOG_DIRECTORY, readable for this user's own processes), into
 * m->log_dir; false when unknown (m->log_dir is then emptied). */
static bool daemon_log_dir(pid_t pid, struct gpushare_mps *m)
{
	char path[64], *env = NULL;
	size_t len = 0;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if (pid > 0 && gpushare_read_file(path, (size_t)1 << 20, &env, &len) == GPUSHARE_OK) {
		for (size_t off = 0; off < len && !found; off += strlen(env + off) + 1) {
			const char *v = env + off;

			if (!strncmp(v, "CUDA_MPS_LOG_DIRECTORY=", 23) && v[23] == '/' &&
			    strlen(v + 23) < sizeof(m->log_dir)) {
				snprintf(m->log_dir, sizeof(m->log_dir), "%s", v + 23);
				found = true;
			}
		}
	}
	free(env);
	gpushare_clear_error();
	if (!found)
		m->log_dir[0] = '\0';
	return found;
}

static int do_status(struct mps_args *a)
{
	struct gpushare_mps m;
	struct gpushare_mps_status st;
	enum gpushare_mps_state state;
	char *log = NULL;
	FILE *o = NULL;
	bool log_known = true;
	pid_t pid;
	int rc, code = EXIT_OK;

	if ((rc = open_mps(a, &m)))
		return rc;
	state = gpushare_mps_state(&m, &pid);
	/* --pipe-dir without --log-dir: the default log directory is another
	 * daemon's; the log is this daemon's own (from its environment) or none. */
	if (a->pipe_dir && !a->log_dir && !daemon_log_dir(state == GPUSHARE_MPS_RUNNING ? pid : 0, &m))
		log_known = false;
	rc = state == GPUSHARE_MPS_RUNNING ? gpushare_mps_status(&m, device_count(NULL), &st)
					   : gpushare_fail(GPUSHARE_E_MPS_NOT_RUNNING, "no daemon");
	if (rc && rc != GPUSHARE_E_MPS_NOT_RUNNING)
		return cli_fail(rc, "mps status");
	if (rc)
		code = EXIT_MPS;
	if (log_known && a->log_lines > 0 && gpushare_mps_log_tail(&m, (int)a->log_lines, &log) != GPUSHARE_OK)
		log = NULL;
	/* The text through the terminal sanitiser: client commands and the
	 * daemon's log are anyone's bytes. */
	if (!a->json && !(o = gpushare_utf8_term_stream(stdout))) {
		free(log);
		if (rc == GPUSHARE_OK)
			gpushare_mps_status_release(&st);
		return cli_fail(GPUSHARE_E_NOMEM, "mps status");
	}
	if (a->json) {
		char *doc = gpushare_mps_status_json(&m, state, rc == GPUSHARE_OK ? &st : NULL, log);

		if (cli_print_json_and_free(doc) != EXIT_OK)
			code = EXIT_IO;
	} else if (rc) {
		/* A failing exit says why on stderr, like every other command. */
		if (state == GPUSHARE_MPS_STALE)
			cli_error(code, "mps status: no MPS control daemon at '%s' (stale pid file: pid %d is not running; "
				  "'gpushare mps start' cleans it)", m.pipe_dir, (int)pid);
		else
			cli_error(code, "mps status: no MPS control daemon at '%s'", m.pipe_dir);
	} else if (o) {
		fprintf(o, "MPS control daemon: pid %d\n  pipe dir %s\n  log dir  %s\n", (int)st.daemon_pid, m.pipe_dir,
			m.log_dir[0] ? m.log_dir : "unknown (give --log-dir)");
		fprintf(o, "defaults (for servers started later):\n");
		if (st.default_thread_percentage >= 0)
			fprintf(o, "  active thread percentage: %g\n", st.default_thread_percentage);
		print_limits(o, "  ", st.default_mem_limit, st.n_default_mem_limit);
		if (st.default_priority >= 0)
			fprintf(o, "  client priority: %d (%s)\n", st.default_priority, st.default_priority ? "below normal" : "normal");
		if (!st.n_servers)
			fprintf(o, "servers: none (a server starts when the first client connects)\n");
		for (size_t i = 0; i < st.n_servers; i++) {
			struct gpushare_mps_server *s = &st.servers[i];

			fprintf(o, "server %d: uid %ld, %s, active thread percentage %g, %zu client(s)\n", (int)s->pid, s->uid,
				s->status, s->thread_percentage, s->n_clients);
			print_limits(o, "  ", s->mem_limit, s->n_mem_limit);
			for (size_t k = 0; k < s->n_clients; k++)
				fprintf(o, "  client %d: %s\n", (int)s->clients[k].pid, s->clients[k].command);
		}
	}
	if (o && log)
		fprintf(o, "--- last %ld lines of %s/control.log ---\n%s\n", a->log_lines, m.log_dir, log);
	if (o && fclose(o) != 0 && code == EXIT_OK)
		code = EXIT_IO;
	free(log);
	if (rc == GPUSHARE_OK)
		gpushare_mps_status_release(&st);
	return cli_finish_stdout(code);
}

static int do_set(struct mps_args *a)
{
	struct gpushare_mps m;
	int rc;

	if ((rc = open_mps(a, &m)))
		return rc;
	if (!a->has_limits)
		return cli_error(EXIT_USAGE, "mps set: nothing to set (give --thread-percentage, --mem-limit or --priority)");
	if (a->mem_limit) {
		rc = gpushare_mps_parse_mem_limits(a->mem_limit, device_count(NULL), &a->limits);
		if (rc)
			return cli_error(EXIT_USAGE, "mps set: --mem-limit: %s", gpushare_errdetail());
	}
	rc = gpushare_mps_probe(&m, NULL);
	if (!rc)
		rc = gpushare_mps_set(&m, (pid_t)a->server, &a->limits);
	if (rc)
		return cli_fail(rc, "mps set");
	if (!a->json) {
		if (a->server)
			printf("limits set on server %ld (they apply to its new clients)\n", a->server);
		else
			printf("default limits set (they apply to servers started from now on)\n");
		return cli_finish_stdout(EXIT_OK);
	}
	return cli_print_json_and_free(gpushare_mps_set_json((pid_t)a->server));
}

int cmd_mps(int argc, char **argv)
{
	struct mps_args a;
	int rc;

	if (argc < 2) {
		cli_help(stderr, &cli_mps_cmd);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return cli_help_stdout(&cli_mps_cmd);
	if (strcmp(argv[1], "start") && strcmp(argv[1], "stop") && strcmp(argv[1], "status") && strcmp(argv[1], "set"))
		return cli_error(EXIT_USAGE, "mps: unknown subcommand '%s' (expected start, stop, status or set)", argv[1]);
	rc = parse_args(argc - 1, argv + 1, &a);
	if (rc == -1)
		return EXIT_OK;
	if (rc)
		return rc;
	if (!strcmp(a.sub, "start"))
		return do_start(&a);
	if (!strcmp(a.sub, "stop"))
		return do_stop(&a);
	if (!strcmp(a.sub, "status"))
		return do_status(&a);
	return do_set(&a);
}
