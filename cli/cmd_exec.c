/*
 * gpushare exec: run one rank of an MPI or srun job on its GPU, with one MPS
 * daemon per node and job (docs/exec.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gpushare/child.h"
#include "cli.h"
#include "gpushare/bench.h"
#include "gpushare/exec.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"

static const char usage_text[] =
	"usage: gpushare exec [options] -- PROGRAM [ARGS...]\n"
	"  as each rank of a job: mpirun -np N gpushare exec [options] -- PROGRAM ...\n"
	"                         srun -n N gpushare exec [options] -- PROGRAM ...\n"
	"\n"
	"Run one rank of an MPI or srun job: find its place on the node from the\n"
	"launcher's environment (Open MPI, MPICH/Hydra, PMIx, Slurm), bind it to a GPU,\n"
	"make sure one MPS daemon serves the node for the whole job (started by the\n"
	"first rank, stopped after the last rank has exited or died), and run PROGRAM\n"
	"as a child with the launcher's environment plus the binding. Signals (INT,\n"
	"TERM, HUP, QUIT) are passed on to PROGRAM; its exit status is gpushare's.\n"
	"\n"
	"Options:\n"
	"  --strategy S          mps (default), mps-split or timeslice\n"
	"  --bind round-robin|block\n"
	"                        local rank r on GPU r mod G (default), or contiguous\n"
	"                        groups of ranks per GPU\n"
	"  --ranks-per-gpu K     check that every GPU used gets exactly K ranks (the\n"
	"                        node's rank count must be a multiple of K and need at\n"
	"                        most as many GPUs as are usable)\n"
	"  --gpus all|LIST       GPUs to bind to: NVML indices and UUIDs (or unique\n"
	"                        UUID prefixes of 8+ characters), within\n"
	"                        CUDA_VISIBLE_DEVICES when it is set (default all)\n"
	"  --thread-percentage P mps-split: each rank's active thread percentage,\n"
	"                        (0,100] (default 100 / the ranks sharing its GPU;\n"
	"                        under --gres=mps Slurm's share / those ranks, and\n"
	"                        never above Slurm's share)\n"
	"  --mps-pipe-dir DIR    use the MPS daemon that answers at DIR (left\n"
	"                        running); default: one the Slurm prolog, the site\n"
	"                        or an earlier step runs for this GPU and user, else\n"
	"                        the job's own\n"
	"  --hpc-job-mapping-dir DIR\n"
	"                        dcgm-exporter's job mapping: the job's id (SLURM_JOB_ID,\n"
	"                        else the job key) in DIR/<GPU index> while it runs\n"
	"  --dry-run             print, per rank, its GPU, the environment it would get\n"
	"                        and the daemon it would use; run nothing\n"
	"  --json                with --dry-run: one JSON object per rank and line\n"
	"  -h, --help            this help\n"
	"\n"
	"With more than one rank on a GPU, one warning per job says that NCCL cannot\n"
	"put two ranks of one communicator on one GPU.\n"
	"\n"
	"Slurm's share is the job's cap: with --gres=mps:N every rank gets at most N%\n"
	"of its GPU (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=N; mps-split: N / the ranks on\n"
	"the GPU); timeslice is refused there. One line per job says what was\n"
	"honoured and which daemon was joined.\n"
	"\n"
	"Exit status: PROGRAM's (128+N when it was killed by signal N); before it\n"
	"runs: 2 usage or no launcher found or a binding the ranks do not fit or\n"
	"a share above Slurm's, 3 no NVIDIA driver, 4 MPS control program missing,\n"
	"5 MPS daemon failed (or none answers at --mps-pipe-dir),\n"
	"6 unsafe directory, 7 no such GPU, 12 the job's lock or daemon timed out,\n"
	"127 PROGRAM could not be started, 128+N a signal N arrived before it ran.\n"
	"See gpushare-exec(1).\n";

enum { OPT_STRATEGY = 256, OPT_BIND, OPT_RPG, OPT_GPUS, OPT_TPCT, OPT_DRY, OPT_JSON, OPT_PIPE, OPT_MAP };

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

		if (x->slurm_mps_percentage > 0 && strategy == GPUSHARE_STRATEGY_MPS_SPLIT)
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
	if (json) {
		cJSON *o = cJSON_CreateObject(), *gpu, *set, *unset, *d;
		char *s;

		if (!o)
			return cli_error(EXIT_FAILURE_GENERIC, "exec: out of memory");
		cJSON_AddStringToObject(o, "launcher", x->launcher);
		cJSON_AddNumberToObject(o, "rank", (double)x->rank);
		cJSON_AddNumberToObject(o, "size", (double)x->size);
		cJSON_AddNumberToObject(o, "local_rank", (double)x->local_rank);
		cJSON_AddNumberToObject(o, "local_size", (double)x->local_size);
		cJSON_AddStringToObject(o, "node", x->node);
		cJSON_AddStringToObject(o, "job_key", x->job_key);
		cJSON_AddStringToObject(o, "strategy", gpushare_strategy_name(strategy));
		gpu = cJSON_AddObjectToObject(o, "gpu");
		if (gpu) {
			cJSON_AddNumberToObject(gpu, "index", x->gpu_index);
			cJSON_AddStringToObject(gpu, "uuid", x->gpu_uuid);
		}
		cJSON_AddNumberToObject(o, "usable_gpus", (double)x->n_gpus);
		cJSON_AddNumberToObject(o, "ranks_on_gpu", x->ranks_on_gpu);
		cJSON_AddNumberToObject(o, "max_ranks_per_gpu", x->max_ranks_per_gpu);
		if (x->uses_mps) {
			d = cJSON_AddObjectToObject(o, "daemon");
			if (d) {
				cJSON_AddStringToObject(d, "pipe_dir", x->pipe_dir);
				cJSON_AddBoolToObject(d, "running", x->daemon_pid > 0);
				cJSON_AddStringToObject(d, "source", x->daemon_source ? x->daemon_source : "job");
				if (x->daemon_pid > 0)
					cJSON_AddNumberToObject(d, "pid", x->daemon_pid);
				else
					cJSON_AddNullToObject(d, "pid");
			}
		} else {
			cJSON_AddNullToObject(o, "daemon");
		}
		if (x->slurm_job_id[0]) {
			cJSON *sl = cJSON_AddObjectToObject(o, "slurm");

			if (sl) {
				cJSON_AddStringToObject(sl, "job_id", x->slurm_job_id);
				if (x->slurm_mps_percentage > 0)
					cJSON_AddNumberToObject(sl, "mps_percentage", x->slurm_mps_percentage);
				else
					cJSON_AddNullToObject(sl, "mps_percentage");
				if (x->slurm_shards > 0)
					cJSON_AddNumberToObject(sl, "shards_on_node", x->slurm_shards);
				else
					cJSON_AddNullToObject(sl, "shards_on_node");
				cJSON_AddStringToObject(sl, "honoured", x->honoured);
			}
		} else {
			cJSON_AddNullToObject(o, "slurm");
		}
		if (x->thread_percentage > 0)
			cJSON_AddNumberToObject(o, "thread_percentage", x->thread_percentage);
		else
			cJSON_AddNullToObject(o, "thread_percentage");
		set = cJSON_AddObjectToObject(o, "set");
		unset = cJSON_AddArrayToObject(o, "unset");
		for (char *const *e = x->env; e && *e; e++) {
			const char *eq = strchr(*e, '=');

			if (eq) {
				char name[256];

				snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
				cJSON_AddStringToObject(set, name, eq + 1);
			} else {
				cJSON_AddItemToArray(unset, cJSON_CreateString(*e));
			}
		}
		s = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
		if (!s)
			return cli_error(EXIT_FAILURE_GENERIC, "exec: out of memory");
		return cli_print_json_and_free(s);
	}
	printf("rank %ld/%ld local %ld/%ld node %s job %s: GPU %u %s (%u rank%s on it), strategy %s", x->rank,
	       x->size, x->local_rank, x->local_size, x->node, x->job_key, x->gpu_index, x->gpu_uuid, x->ranks_on_gpu,
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
	static const struct option longopts[] = {
		{ "strategy", required_argument, NULL, OPT_STRATEGY },
		{ "bind", required_argument, NULL, OPT_BIND },
		{ "ranks-per-gpu", required_argument, NULL, OPT_RPG },
		{ "gpus", required_argument, NULL, OPT_GPUS },
		{ "thread-percentage", required_argument, NULL, OPT_TPCT },
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "mps-pipe-dir", required_argument, NULL, OPT_PIPE },
		{ "hpc-job-mapping-dir", required_argument, NULL, OPT_MAP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gpushare_exec_opts o = { .strategy = GPUSHARE_STRATEGY_MPS };
	struct gpushare_exec x;
	struct gpushare_exec_leave leave;
	struct gpushare_child ch;
	bool json = false;
	long v;
	int opt, rc, code;

	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(usage_text, stdout);
			return cli_finish_stdout(EXIT_OK);
		case OPT_STRATEGY:
			if (cli_parse_sharing_strategy(optarg, &o.strategy))
				return cli_error(EXIT_USAGE, "exec: invalid --strategy '%s': exec runs ranks under mps, "
							     "mps-split or timeslice", optarg);
			break;
		case OPT_BIND:
			if (strcmp(optarg, "round-robin") != 0 && strcmp(optarg, "block") != 0)
				return cli_error(EXIT_USAGE, "exec: invalid --bind '%s': round-robin or block", optarg);
			o.bind = optarg;
			break;
		case OPT_RPG:
			if (cli_parse_whole(optarg, 1, 4096, &v))
				return cli_bad_value("exec", "--ranks-per-gpu", optarg);
			o.ranks_per_gpu = (unsigned)v;
			break;
		case OPT_GPUS:
			o.gpus = optarg;
			break;
		case OPT_TPCT:
			if (gpushare_parse_percent(optarg, &o.thread_percentage))
				return cli_bad_value("exec", "--thread-percentage", optarg);
			break;
		case OPT_DRY:
			o.dry_run = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_PIPE:
			if (!*optarg)
				return cli_bad_value("exec", "--mps-pipe-dir", optarg);
			o.mps_pipe_dir = optarg;
			break;
		case OPT_MAP:
			if (!*optarg)
				return cli_bad_value("exec", "--hpc-job-mapping-dir", optarg);
			o.hpc_job_mapping_dir = optarg;
			break;
		default:
			return cli_usage_error("exec", opt, optopt, argv[optind - 1]);
		}
	}
	if (json && !o.dry_run)
		return cli_error(EXIT_USAGE, "exec: --json goes with --dry-run");
	if (o.thread_percentage > 0 && o.strategy != GPUSHARE_STRATEGY_MPS_SPLIT)
		return cli_error(EXIT_USAGE, "exec: --thread-percentage goes with --strategy mps-split");
	if (optind >= argc && !o.dry_run)
		return cli_error(EXIT_USAGE, "exec: no program given (usage: gpushare exec [options] -- PROGRAM [ARGS...])");

	if (catch_signals() != 0)
		return cli_error(EXIT_FAILURE_GENERIC, "exec: pipe: %s", strerror(errno));
	o.interrupted = &pending_signal;
	rc = gpushare_exec_open(&x, &o);
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
		say_once(&x, o.strategy);
	if (o.dry_run) {
		code = print_dry_run(&x, o.strategy, json);
		gpushare_exec_close(&x, NULL);
		return code;
	}
	if (pending_signal) {
		code = 128 + pending_signal;
		gpushare_exec_close(&x, NULL);
		return code;
	}

	gpushare_child_init(&ch);
	ch.argv = argv + optind;
	ch.env_set = x.env;
	rc = gpushare_child_start(&ch);
	if (rc) {
		code = cli_error(127, "exec: cannot run '%s': %s", argv[optind], gpushare_errdetail());
		gpushare_exec_close(&x, NULL);
		return code;
	}
	if (gpushare_exec_started(&x, ch.pgid))
		cli_warn("exec: %s", gpushare_errdetail());
	wait_forwarding(&ch);
	code = gpushare_child_exit_code(ch.wstatus);
	gpushare_child_reap_group(&ch);
	gpushare_child_release(&ch);

	rc = gpushare_exec_close(&x, &leave);
	if (rc)
		cli_warn("exec: the job's MPS daemon on this node: %s", *gpushare_errdetail() ? gpushare_errdetail()
												: gpushare_strerror(rc));
	else if (leave.last && leave.missing)
		cli_warn("exec: %zu rank(s) of this node never arrived within %d ms; the job's daemon was stopped",
			 leave.missing, GPUSHARE_EXEC_GRACE_MS);
	return code;
}
