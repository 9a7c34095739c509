/*
 * gpushare exec: run one rank of an MPI or srun job on its GPU, with one MPS
 * daemon per node and job (docs/exec.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare/child.h"
#include "cli.h"
#include "gpushare/bench.h"
#include "gpushare/exec.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"

/* Where exec's options go (cli_parse_options()). */
struct exec_args {
	struct gpushare_exec_opts o;
	bool json, no_account;
};

#define AT(field) CLI_AT(struct exec_args, field)

static int set_strategy(struct cli_parse *p, void *args)
{
	if (cli_parse_sharing_strategy(p->arg, &((struct exec_args *)args)->o.strategy))
		return cli_error(EXIT_USAGE, "exec: invalid --strategy '%s': exec runs ranks under mps, mps-split or timeslice",
				 p->arg);
	return EXIT_OK;
}

static int set_bind(struct cli_parse *p, void *args)
{
	if (strcmp(p->arg, "round-robin") != 0 && strcmp(p->arg, "block") != 0)
		return cli_error(EXIT_USAGE, "exec: invalid --bind '%s': round-robin or block", p->arg);
	((struct exec_args *)args)->o.bind = p->arg;
	return EXIT_OK;
}

static int set_thread_percentage(struct cli_parse *p, void *args)
{
	if (gpushare_parse_percent(p->arg, &((struct exec_args *)args)->o.thread_percentage))
		return cli_bad_value("exec", "--thread-percentage", p->arg);
	return EXIT_OK;
}

static const struct cli_opt exec_opts[] = {
	{ .id = OPT_STRATEGY, .long_name = "strategy", .kind = CLI_ENUM, .value_name = "S",
	  .help = "mps, mps-split or timeslice", .def = "mps", .values = "mps mps-split timeslice",
	  .to = CLI_TO_CALL, .call = set_strategy },
	{ .id = OPT_BIND, .long_name = "bind", .kind = CLI_ENUM, .value_name = "round-robin|block",
	  .help = "local rank r on GPU r mod G (default), or contiguous groups of ranks per GPU",
	  .values = "round-robin block",
	  .to = CLI_TO_CALL, .call = set_bind },
	{ .id = OPT_RANKS_PER_GPU, .long_name = "ranks-per-gpu", .kind = CLI_INT, .value_name = "K",
	  .help = "check that every GPU used gets exactly K ranks (the node's rank count must be a multiple of K and need at "
	  "most as many GPUs as are usable)", .min = 1, .max = 4096,
	  .to = CLI_TO_UINT, AT(o.ranks_per_gpu) },
	{ .id = OPT_GPUS, .long_name = "gpus", .kind = CLI_LIST, .value_name = "all|LIST",
	  .help = "GPUs to bind to: NVML indices and UUIDs (or unique UUID prefixes of 8+ characters), within "
	  "CUDA_VISIBLE_DEVICES when it is set", .def = "all", .values = "all",
	  .to = CLI_TO_STR, AT(o.gpus) },
	{ .id = OPT_THREAD_PCT, .long_name = "thread-percentage", .kind = CLI_PERCENT, .value_name = "P",
	  .help = "mps-split: each rank's active thread percentage, (0,100]; under --gres=mps never above Slurm's "
	  "share", .def = "100 / the ranks sharing its GPU; under --gres=mps Slurm's share / those ranks",
	  .to = CLI_TO_CALL, .call = set_thread_percentage },
	{ .id = OPT_MPS_PIPE_DIR, .long_name = "mps-pipe-dir", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "use the MPS daemon that answers at DIR (left running)",
	  .def = "one the Slurm prolog, the site or an earlier step runs for this GPU and user, else the job's own",
	  .to = CLI_TO_STR, AT(o.mps_pipe_dir) },
	{ .id = OPT_HPC_JOB_MAPPING_DIR, .long_name = "hpc-job-mapping-dir", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "dcgm-exporter's job mapping: the job's id (SLURM_JOB_ID, else the job key) in DIR/<GPU index> "
	  "while it runs",
	  .to = CLI_TO_STR, AT(o.hpc_job_mapping_dir) },
	{ .id = OPT_ACCOUNT, .long_name = "account", .kind = CLI_FLAG,
	  .help = "load the accounting library (libgpushare-account.so; accounting.md in the documentation) into the ranks: per-client GPU time and attained share (the default where the library is installed; under 1% of the transformer workload's rate)",
	  .to = CLI_TO_TRUE, AT(o.account) },
	{ .id = OPT_NO_ACCOUNT, .long_name = "no-account", .kind = CLI_FLAG,
	  .help = "do not load the accounting library into the ranks (GPUSHARE_ACCOUNT=0 does the same)",
	  .to = CLI_TO_TRUE, AT(no_account) },
	{ .id = OPT_DRY_RUN, .long_name = "dry-run", .kind = CLI_FLAG,
	  .help = "print, per rank, its GPU, the environment it would get and the daemon it would use; run nothing",
	  .to = CLI_TO_TRUE, AT(o.dry_run) },
	{ .id = OPT_JSON, .long_name = "json", .kind = CLI_FLAG,
	  .help = "with --dry-run: one JSON object per rank and line",
	  .to = CLI_TO_TRUE, AT(json) },
};

static const struct cli_group exec_groups[] = { CLI_GROUP("Options", exec_opts, NULL) };

const struct cli_cmd cli_exec_cmd = {
	.name = "exec",
	.usage = "gpushare exec [options] -- PROGRAM [ARGS...]\n"
		 "as each rank of a job: mpirun -np N gpushare exec [options] -- PROGRAM ...\n"
		 "                       srun -n N gpushare exec [options] -- PROGRAM ...",
	.about = "Run one rank of an MPI or srun job: find its place on the node from the\n"
		 "launcher's environment (Open MPI, MPICH/Hydra, PMIx, Slurm), bind it to a GPU,\n"
		 "make sure one MPS daemon serves the node for the whole job (started by the\n"
		 "first rank, stopped after the last rank has exited or died), and run PROGRAM\n"
		 "as a child with the launcher's environment plus the binding. Signals (INT,\n"
		 "TERM, HUP, QUIT) are passed on to PROGRAM; its exit status is gpushare's.",
	.groups = exec_groups,
	.n_groups = CLI_N(exec_groups),
	.epilog = "With more than one rank on a GPU, one warning per job says that NCCL cannot\n"
		  "put two ranks of one communicator on one GPU.\n"
		  "\n"
		  "Slurm's share is the job's cap: with --gres=mps:N every rank gets at most N%\n"
		  "of its GPU (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=N; mps-split: N / the ranks on\n"
		  "the GPU); timeslice is refused there. One line per job says what was\n"
		  "honoured and which daemon was joined.\n"
		  "\n"
		  "Under mps and mps-split, when ranks fail in a fatal GPU fault, the node's\n"
		  "last rank says per GPU which rank faulted (named by the server log, else the\n"
		  "first to fail, a suspect) and which ranks failed with it (the blast radius).",
	.exit_intro = "PROGRAM's (128+N when it was killed by signal N); before it runs, gpushare's own\n"
		      "(127 PROGRAM could not be started, 128+N a signal N arrived before it ran):",
	.notes = (const struct cli_exit_note[]){ { EXIT_USAGE, "usage, no launcher found, a binding the ranks do not fit, or a "
								 "share above Slurm's" },
						 { EXIT_MPS, "MPS daemon failed (or none answers at --mps-pipe-dir), or this "
							     "rank of the job already runs" },
						 { EXIT_GPU, "no such GPU" },
						 { EXIT_TIMEOUT, "the job's lock or daemon timed out" } },
	.n_notes = 4,
	.stop_at_operand = true,
};

static volatile sig_atomic_t pending_signal;
static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	unsigned char b = (unsigned char)sig;
	int e = errno;

	pending_signal = sig;
	if (sig_pipe[1] >= 0 && write(sig_pipe[1], &b, 1) < 0) {
		/* full: the flag still says it */
	}
	errno = e;
}

static int catch_signals(void)
{
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	cli_catch_stop_signals(on_signal, SA_RESTART);
	return 0;
}

static const char *source_text(const char *source)
{
	if (!strcmp(source, "option"))
		return "--mps-pipe-dir";
	if (!strcmp(source, "prolog"))
		return "started by gpushare slurm prolog";
	if (!strcmp(source, "env"))
		return "CUDA_MPS_PIPE_DIRECTORY";
	if (!strcmp(source, "default"))
		return "the default pipe directory";
	return "the job's own";
}

/* Once per job: what of Slurm's share was honoured, and the daemon joined. */
static void say_once(const struct gpushare_exec *x, int strategy)
{
	if (x->honoured[0]) {
		char how[160] = "";

		if (x->slurm_mps_percentage > 0 && gpushare_strategy_client_share(strategy))
			snprintf(how, sizeof(how), "; mps-split: %g%% per rank (%u rank%s on its GPU)", x->thread_percentage,
				 x->ranks_on_gpu, x->ranks_on_gpu == 1 ? "" : "s");
		else if (x->slurm_mps_percentage > 0)
			snprintf(how, sizeof(how), "; every rank at most %g%% of its GPU", x->slurm_mps_percentage);
		fprintf(stderr, "gpushare: exec: job %s honours Slurm's share: %s%s\n", x->slurm_job_id, x->honoured, how);
	}
	if (x->uses_mps && x->daemon_source && strcmp(x->daemon_source, "job") != 0)
		fprintf(stderr, "gpushare: exec: joined the MPS daemon%s%.0d at %s (%s); it is left running\n",
			x->daemon_pid > 0 ? " pid " : "", (int)x->daemon_pid, x->pipe_dir, source_text(x->daemon_source));
}

static int print_dry_run(const struct gpushare_exec *x, int strategy, bool json)
{
	if (json)
		return cli_print_json_and_free(gpushare_exec_dry_run_json(x, strategy));
	char rank[48], size[24];

	/* A launcher may not say the rank or the job's size (PMIx has no size
	 * variable): "?" then, never -1. */
	snprintf(rank, sizeof(rank), x->rank >= 0 ? "%ld" : "?", x->rank);
	snprintf(size, sizeof(size), x->size >= 0 ? "%ld" : "?", x->size);
	printf("rank %s/%s local %ld/%ld node %s job %s: GPU %u %s (%u rank%s on it), strategy %s", rank, size,
	       x->local_rank, x->local_size, x->node, x->job_key, x->gpu_index, x->gpu_uuid, x->ranks_on_gpu,
	       x->ranks_on_gpu == 1 ? "" : "s", gpushare_strategy_name(strategy));
	if (x->uses_mps) {
		if (x->daemon_source && strcmp(x->daemon_source, "job") != 0)
			printf(", daemon %s (joined: %s, pid %d)", x->pipe_dir, source_text(x->daemon_source),
			       (int)x->daemon_pid);
		else if (x->daemon_pid > 0)
			printf(", daemon %s (running, pid %d)", x->pipe_dir, (int)x->daemon_pid);
		else
			printf(", daemon %s (started by the first rank)", x->pipe_dir);
	}
	printf("; env:");
	for (char *const *e = x->env; e && *e; e++)
		printf(strchr(*e, '=') ? " %s" : " -%s", *e);
	printf("\n");
	return cli_finish_stdout(EXIT_OK);
}

/* Wait for the program, passing on the signals gpushare receives. */
static void wait_forwarding(struct gpushare_child *ch)
{
	while (!gpushare_child_poll(ch)) {
		struct pollfd pf[2] = { { .fd = sig_pipe[0], .events = POLLIN }, { .fd = ch->pidfd, .events = POLLIN } };
		unsigned char sigs[16];
		ssize_t n;

		poll(pf, ch->pidfd >= 0 ? 2 : 1, ch->pidfd >= 0 ? 1000 : 50);
		while ((n = read(sig_pipe[0], sigs, sizeof(sigs))) > 0) {
			for (ssize_t i = 0; i < n; i++)
				gpushare_child_signal(ch, sigs[i]);
		}
	}
}

int cmd_exec(int argc, char **argv)
{
	struct cli_parse p;
	struct exec_args a = { .o = { .strategy = GPUSHARE_STRATEGY_MPS } };
	struct gpushare_exec_opts *o = &a.o;
	struct gpushare_exec x;
	struct gpushare_exec_leave leave;
	struct gpushare_child ch;
	int rc, code, first;

	cli_parse_init(&p, &cli_exec_cmd, argc, argv);
	if (!cli_parse_options(&p, &a))
		return p.status;
	first = p.optind;
	if (o->account && a.no_account)
		return cli_error(EXIT_USAGE, "exec: --account and --no-account do not go together");
	o->account = !a.no_account; /* loaded by default */
	if (a.json && !o->dry_run)
		return cli_error(EXIT_USAGE, "exec: --json goes with --dry-run");
	if (o->thread_percentage > 0 && !gpushare_strategy_client_share(o->strategy))
		return cli_error(EXIT_USAGE, "exec: --thread-percentage goes with --strategy mps-split");
	if (first >= argc && !o->dry_run)
		return cli_error(EXIT_USAGE, "exec: no program given (usage: gpushare exec [options] -- PROGRAM [ARGS...])");

	if (catch_signals() != 0)
		return cli_error(EXIT_FAILURE_GENERIC, "exec: pipe: %s", strerror(errno));
	o->interrupted = &pending_signal;
	rc = gpushare_exec_open(&x, o);
	if (rc == GPUSHARE_E_NOT_FOUND && !x.launcher)
		return cli_error(EXIT_USAGE, "%s", gpushare_errdetail());
	if (rc)
		return cli_run_failed("exec", rc);
	if (x.warn_shared_gpu) {
		cli_warn("up to %u ranks share a GPU (job %s, node %s): NCCL cannot put two ranks of one "
			 "communicator on one GPU; use MPI or host collectives between them, or one rank per GPU",
			 x.max_ranks_per_gpu, x.job_key, x.node);
		if (x.uses_mps && x.max_ranks_per_gpu > GPUSHARE_MPS_MAX_CLIENTS_PER_GPU)
			cli_warn_mps_clients((int)x.max_ranks_per_gpu);
	}
	if (x.say_once)
		say_once(&x, o->strategy);
	if (o->dry_run) {
		code = print_dry_run(&x, o->strategy, a.json);
		gpushare_exec_close(&x, NULL);
		return code;
	}
	if (pending_signal) {
		code = 128 + pending_signal;
		gpushare_exec_close(&x, NULL);
		return code;
	}

	gpushare_child_init(&ch);
	ch.argv = argv + first;
	ch.env_set = x.env;
	rc = gpushare_child_start(&ch);
	if (rc) {
		code = cli_error(127, "exec: cannot run '%s': %s", argv[first], gpushare_errdetail());
		gpushare_exec_close(&x, NULL);
		return code;
	}
	if (gpushare_exec_started(&x, ch.pgid))
		cli_warn("exec: %s", gpushare_errdetail());
	wait_forwarding(&ch);
	code = gpushare_child_exit_code(ch.wstatus);
	if (gpushare_exec_finished(&x, ch.wstatus))
		cli_warn("exec: %s", gpushare_errdetail());
	gpushare_child_reap_group(&ch);
	gpushare_child_release(&ch);

	rc = gpushare_exec_close(&x, &leave);
	if (rc)
		cli_warn("exec: the job's MPS daemon on this node: %s", *gpushare_errdetail() ? gpushare_errdetail()
												: gpushare_strerror(rc));
	for (const char *l = leave.fault; *l;) {
		size_t n = strcspn(l, "\n");

		fprintf(stderr, "gpushare: exec: %.*s\n", (int)n, l);
		l += n + (l[n] == '\n');
	}
	if (!rc && leave.last && leave.missing)
		cli_warn("exec: %zu rank(s) of this node never arrived within %d ms; the job's daemon was stopped",
			 leave.missing, GPUSHARE_EXEC_GRACE_MS);
	return code;
}
