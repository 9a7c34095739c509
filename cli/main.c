/*
 * gpushare: command-line entry point. Dispatches to one function per
 * subcommand from a table.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gpushare/gpushare.h"

const struct cli_command cli_commands[] = {
	{ &cli_info_cmd, cmd_info, "show driver, GPUs, MIG devices, compute processes and MPS state" },
	{ &cli_mps_cmd, cmd_mps, "start, stop, inspect and configure the MPS control daemon" },
	{ &cli_bench_cmd, cmd_bench, "run N workers under each sharing strategy and compare" },
	{ &cli_exporter_cmd, cmd_exporter, "serve GPU, MIG, process and MPS metrics to Prometheus" },
	{ &cli_check_cmd, cmd_check, "check that each client of a sharing attains its promised share" },
	{ &cli_sweep_cmd, cmd_sweep, "run a grid of strategies x workers x batch sizes, repeated" },
	{ &cli_tune_cmd, cmd_tune, "find the best strategy, workers and batch for a workload by a race of short runs" },
	{ &cli_report_cmd, cmd_report, "tables, plots and a recommendation from a sweep's results" },
	{ &cli_plan_cmd, cmd_plan, "Slurm, Kubernetes, mig-parted or MPS configuration from a sweep's results" },
	{ &cli_farm_cmd, cmd_farm, "run a queue of jobs, K at once on each GPU, with a journal to resume" },
	{ &cli_exec_cmd, cmd_exec, "run one rank of an MPI or srun job on its GPU, one MPS daemon per node and job" },
	{ &cli_slurm_cmd, cmd_slurm, "Slurm prolog and epilog: one MPS daemon per GPU and user for gres/mps jobs" },
	{ &cli_version_cmd, cmd_version, "print the gpushare version" },
};
const size_t cli_n_commands = CLI_N(cli_commands);

/* The command table's row called name, or NULL. */
static const struct cli_command *find_command(const char *name)
{
	for (size_t i = 0; i < cli_n_commands; i++) {
		if (!strcmp(cli_commands[i].cmd->name, name))
			return &cli_commands[i];
	}
	return NULL;
}

/*
 * The edit distance between a and b (insertions, deletions, substitutions
 * and swaps of two neighbours, each 1), for "did you mean". Names longer
 * than 31 bytes are far from every command.
 */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), d[32][32];

	if (la > 31 || lb > 31)
		return 32;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb];
}

/* "unknown command", with the commands close to name (a typo, or the
 * start of one) as git says them. */
static int unknown_command(const char *name)
{
	char list[256];
	size_t used = 0, n = 0, len = strlen(name);

	list[0] = '\0';
	for (size_t i = 0; i < cli_n_commands; i++) {
		const char *cmd = cli_commands[i].cmd->name;
		size_t near = len >= 4 ? 2 : 1;

		if (distance(name, cmd) > near && !(len >= 2 && !strncmp(cmd, name, len)))
			continue;
		if (used < sizeof(list)) {
			int w = snprintf(list + used, sizeof(list) - used, "%s'%s'", n ? " or " : "", cmd);

			used += w > 0 ? (size_t)w : 0;
		}
		n++;
	}
	if (n)
		return cli_error(EXIT_USAGE, "unknown command '%s'; did you mean %s? (see 'gpushare --help')", name, list);
	return cli_error(EXIT_USAGE, "unknown command '%s' (see 'gpushare --help')", name);
}

/* The man page gpushare(1) is generated from this text (man/help2man.py). */
static void usage(FILE *f)
{
	fprintf(f, "usage: gpushare [--help] [--version] <command> [<args>]\n\n"
		   "Share NVIDIA GPUs among processes and measure which way of sharing wins.\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < cli_n_commands; i++)
		fprintf(f, "  %-9s %s\n", cli_commands[i].cmd->name, cli_commands[i].summary);
	fprintf(f, "\nRun 'gpushare <command> --help' for a command's options; its manual is\n"
		   "gpushare-<command>(1).\n\n"
		   "Options:\n"
		   "  --version   print the gpushare version (as 'gpushare version')\n"
		   "  -h, --help  this help\n\n"
		   "Exit statuses (every command):\n");
	cli_help_exit_statuses(f, NULL, NULL, 0);
}

const struct cli_cmd cli_version_cmd = {
	.name = "version",
	.usage = "gpushare version",
	.about = "Print the gpushare version.",
};

int cmd_version(int argc, char **argv)
{
	struct cli_parse p;

	cli_parse_init(&p, &cli_version_cmd, argc, argv);
	if (!cli_parse_options(&p, NULL))
		return p.status;
	if (p.optind < argc)
		return cli_error(EXIT_USAGE, "version: unexpected argument '%s'", argv[p.optind]);
	printf("gpushare %s\n", gpushare_version());
	return cli_finish_stdout(EXIT_OK);
}

/*
 * Descriptors 0, 1 and 2 are reserved before anything is opened: a command
 * started with one of them closed (`2>&-`, `<&-`) would otherwise get it
 * for the first file it opens (a farm's journal, a sweep's lock file), and
 * then write progress into that file or read it as its input. A closed one
 * becomes /dev/null (read-only for 0, write-only for 1 and 2). Returns -1
 * when that is impossible; nothing can be reported then but the status.
 */
static int reserve_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		int nfd;

		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		nfd = open("/dev/null", (fd == 0 ? O_RDONLY : O_WRONLY) | O_NOCTTY);
		if (nfd < 0)
			return -1;
		if (nfd != fd) { /* a lower one was open: move it into place */
			if (dup2(nfd, fd) != fd) {
				close(nfd);
				return -1;
			}
			close(nfd);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (reserve_std_fds() != 0)
		return EXIT_FAILURE_GENERIC;
	if (cli_reset_inherited_signals() != 0)
		return EXIT_FAILURE_GENERIC;
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		if (argc > 2 && strcmp(argv[1], "help") == 0) {
			char *sub[] = { argv[2], "--help", NULL };
			const struct cli_command *c = find_command(argv[2]);

			if (c)
				return c->fn(2, sub);
			return unknown_command(argv[2]);
		}
		usage(stdout);
		return cli_finish_stdout(EXIT_OK);
	}
	if (!strcmp(argv[1], "--complete")) {
		/* For the shell completion (completion/): hidden from --help. */
		return cli_complete(argc - 2, argv + 2);
	}
	if (!strcmp(argv[1], "--doc")) {
		/* For docs/cli.md (scripts/gen_cli_doc.py): hidden from --help. */
		const struct cli_cmd *c = argc == 3 ? cli_find_cmd(argv[2]) : NULL;

		if (argc == 3 && !strcmp(argv[2], "workloads")) {
			cli_doc_workloads(stdout);
			return cli_finish_stdout(EXIT_OK);
		}
		if (!c)
			return cli_error(EXIT_USAGE, "--doc: expected one command");
		cli_doc(stdout, c);
		return cli_finish_stdout(EXIT_OK);
	}
	if (!strcmp(argv[1], "--version"))
		return cmd_version(1, argv + 1);
	{
		const struct cli_command *c = find_command(argv[1]);

		if (c)
			return c->fn(argc - 1, argv + 1);
	}
	if (argv[1][0] == '-')
		return cli_error(EXIT_USAGE, "unknown option '%s' (see 'gpushare --help')", argv[1]);
	return unknown_command(argv[1]);
}
