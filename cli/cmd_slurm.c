/*
 * gpushare slurm prolog|epilog: one MPS daemon per GPU and user for the
 * jobs that hold gres/mps, run by slurmd as Prolog= and Epilog=; and
 * gpushare slurm env, a task's environment for that daemon and Slurm's GPU
 * (docs/slurm.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpushare/buf.h"
#include "gpushare/gpushare.h"
#include "gpushare/slurm.h"

static int set_state_dir(struct cli_parse *p, void *args)
{
	if (p->arg[0] != '/')
		return cli_error(EXIT_USAGE, "%s: --state-dir '%s' must be an absolute path", p->name, p->arg);
	((struct gpushare_slurm_hook_opts *)args)->state_dir = p->arg;
	return EXIT_OK;
}

/* The options go to a struct gpushare_slurm_hook_opts. */
static const struct cli_opt slurm_opts[] = {
	{ .id = OPT_STATE_DIR, .long_name = "state-dir", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "where the daemons and job records live; gpushare exec looks there too",
	  .def = "$GPUSHARE_SLURM_DIR, else /run/gpushare-slurm",
	  .to = CLI_TO_CALL, .call = set_state_dir },
	{ .id = OPT_HPC_JOB_MAPPING_DIR, .long_name = "hpc-job-mapping-dir", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "dcgm-exporter's job mapping: the prolog adds the job's id to DIR/<GPU index> for each of its GPUs "
	  "(any gres; DIR/<GPU index>.<GPU instance id> for a MIG device), the epilog removes it (files rewritten "
	  "atomically)",
	  .to = CLI_TO_STR, CLI_AT(struct gpushare_slurm_hook_opts, hpc_job_mapping_dir) },
};

static const struct cli_group slurm_groups[] = { CLI_GROUP("Options", slurm_opts, NULL) };

const struct cli_cmd cli_slurm_cmd = {
	.name = "slurm",
	.usage = "gpushare slurm prolog|epilog [--state-dir DIR] [--hpc-job-mapping-dir DIR]\n"
		 "gpushare slurm env [--state-dir DIR]",
	.about = "Run by slurmd as the node's Prolog= and Epilog= (through a two-line script:\n"
		 "slurm.conf takes a program without arguments), as root with\n"
		 "the job's environment (SLURM_JOB_ID, SLURM_JOB_UID, SLURM_JOB_GID,\n"
		 "CUDA_VISIBLE_DEVICES or SLURM_JOB_GPUS, and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE\n"
		 "for a job holding gres/mps).\n"
		 "\n"
		 "  prolog   for a job holding gres/mps, make sure one MPS control daemon per GPU\n"
		 "           of the job and the job's user runs and answers before the job starts\n"
		 "           (started as that user, pipe directory DIR/mps-<uid>-<GPU UUID>/pipe),\n"
		 "           and record the job as one of its users. A job with whole GPUs\n"
		 "           (gres/gpu) gets no daemon. gpushare exec in the job joins that daemon.\n"
		 "  epilog   forget the job, and stop each of its daemons that no other job on\n"
		 "           the node uses.\n"
		 "Both are idempotent and safe under concurrent jobs (one lock, DIR/.lock).\n"
		 "  env      in a task of the job (or as slurm.conf's TaskProlog=): print the\n"
		 "           `export NAME=VALUE` lines a plain CUDA program needs: the prolog's\n"
		 "           daemon for the task's GPU (CUDA_MPS_PIPE_DIRECTORY,\n"
		 "           CUDA_MPS_LOG_DIRECTORY) under gres/mps, and CUDA_VISIBLE_DEVICES\n"
		 "           where Slurm set none (from SLURM_STEP_GPUS, SLURM_JOB_GPUS or the\n"
		 "           prolog's record of the job). Use: eval \"$(gpushare slurm env)\".",
	.groups = slurm_groups,
	.n_groups = CLI_N(slurm_groups),
	.subcommands = "prolog epilog env",
	.epilog = "prolog and epilog: one line on standard output says what was done; a\n"
		  "failure's cause on standard error, which slurmd logs. A prolog that fails\n"
		  "makes Slurm drain the node and requeue the job: a job holding no gres/mps\n"
		  "never fails in it, and a job mapping that cannot be written is a warning.",
	.notes = (const struct cli_exit_note[]){ { EXIT_OK, "done (also when there was nothing to do)" },
						 { EXIT_USAGE, "usage, or not run by Slurm (no SLURM_JOB_ID)" },
						 { EXIT_MPS, "a daemon did not start or stop" },
						 { EXIT_DIR, "unsafe state directory" },
						 { EXIT_GPU, "the job's GPU is unknown" },
						 { EXIT_TIMEOUT, "the lock timed out" } },
	.n_notes = 6,
	.name_options = true,
};

/* `gpushare slurm env`: the lines a shell's eval and Slurm's TaskProlog
 * both take (TaskProlog= sets each `export NAME=VALUE` line it prints in
 * the task); nothing when there is nothing to set. */
static void export_line(struct gpushare_buf *out, const char *name, const char *value)
{
	gpushare_buf_addf(out, "export %s=", name);
	gpushare_buf_add_sh_word(out, value);
	gpushare_buf_add(out, "\n", 1);
}

static int task_env(const struct gpushare_slurm_hook_opts *o)
{
	struct gpushare_buf out = { 0 };
	struct gpushare_slurm_task_env e;
	int rc = gpushare_slurm_task_env(o->state_dir, &e);

	if (rc == GPUSHARE_E_NOT_FOUND && !getenv("SLURM_JOB_ID"))
		return cli_error(EXIT_USAGE, "slurm env: %s", gpushare_errdetail());
	if (rc)
		return cli_run_failed("slurm env", rc);
	/* Each value one shell word: a state directory may hold spaces. */
	if (e.visible[0])
		export_line(&out, "CUDA_VISIBLE_DEVICES", e.visible);
	if (e.pipe_dir[0]) {
		export_line(&out, "CUDA_MPS_PIPE_DIRECTORY", e.pipe_dir);
		export_line(&out, "CUDA_MPS_LOG_DIRECTORY", e.log_dir);
	}
	if (out.failed) {
		gpushare_buf_release(&out);
		return cli_fail(GPUSHARE_E_NOMEM, "slurm env");
	}
	fputs(gpushare_buf_str(&out), stdout);
	gpushare_buf_release(&out);
	return cli_finish_stdout(EXIT_OK);
}

int cmd_slurm(int argc, char **argv)
{
	struct gpushare_slurm_hook_opts o = { 0 };
	struct gpushare_slurm_hook_result r;
	struct cli_parse p;
	char what[32];
	const char *sub;
	bool prolog;
	int rc;

	if (argc < 2) {
		cli_help(stderr, &cli_slurm_cmd);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return cli_help_stdout(&cli_slurm_cmd);
	sub = argv[1];
	if (strcmp(sub, "prolog") != 0 && strcmp(sub, "epilog") != 0 && strcmp(sub, "env") != 0)
		return cli_error(EXIT_USAGE, "slurm: unknown subcommand '%s' (expected prolog, epilog or env)", sub);
	prolog = !strcmp(sub, "prolog");
	snprintf(what, sizeof(what), "slurm %s", sub);
	cli_parse_init(&p, &cli_slurm_cmd, argc - 1, argv + 1);
	p.name = what;
	if (!cli_parse_options(&p, &o))
		return p.status;
	if (p.optind < argc - 1)
		return cli_error(EXIT_USAGE, "slurm %s: unexpected argument '%s'", sub, argv[p.optind + 1]);
	if (!strcmp(sub, "env"))
		return task_env(&o);
	rc = prolog ? gpushare_slurm_prolog(&o, &r) : gpushare_slurm_epilog(&o, &r);
	/* On standard error, which slurmd logs (at its default level, with
	 * the hook's output, when the hook fails). */
	if (r.warning[0])
		fprintf(stderr, "gpushare %s: warning: job %s: %s\n", what, r.job_id, r.warning);
	if (rc == GPUSHARE_E_NOT_FOUND && !r.job_id[0])
		return cli_error(EXIT_USAGE, "slurm %s: %s", sub, gpushare_errdetail());
	if (rc)
		return cli_run_failed(prolog ? "slurm prolog" : "slurm epilog", rc);
	if (prolog && !r.mps)
		printf("gpushare slurm prolog: job %s holds no gres/mps: no MPS daemon%s\n", r.job_id,
		       o.hpc_job_mapping_dir && r.n_gpus ? "; its GPUs are in the job mapping" : "");
	else if (prolog)
		printf("gpushare slurm prolog: job %s: %zu GPU%s, %zu MPS daemon%s started, %zu already running%s\n",
		       r.job_id, r.n_gpus, r.n_gpus == 1 ? "" : "s", r.started, r.started == 1 ? "" : "s", r.joined,
		       r.already ? " (the job was recorded already)" : "");
	else if (r.already)
		printf("gpushare slurm epilog: job %s has no record here: nothing to stop\n", r.job_id);
	else
		printf("gpushare slurm epilog: job %s: %zu MPS daemon%s stopped, %zu still used by other jobs\n", r.job_id,
		       r.stopped, r.stopped == 1 ? "" : "s", r.kept);
	return cli_finish_stdout(EXIT_OK);
}
