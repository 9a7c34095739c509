/*
 * gpushare slurm prolog|epilog: one MPS daemon per GPU and user for the
 * jobs that hold gres/mps, run by slurmd as Prolog= and Epilog=
 * (docs/slurm.md).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gpushare/gpushare.h"
#include "gpushare/slurm.h"

static const char usage_text[] =
	"usage: gpushare slurm prolog|epilog [--state-dir DIR] [--hpc-job-mapping-dir DIR]\n"
	"\n"
	"Run by slurmd as the node's Prolog= and Epilog= (through a two-line script:\n"
	"slurm.conf takes a program without arguments), as root with\n"
	"the job's environment (SLURM_JOB_ID, SLURM_JOB_UID, SLURM_JOB_GID,\n"
	"CUDA_VISIBLE_DEVICES or SLURM_JOB_GPUS, and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE\n"
	"for a job holding gres/mps).\n"
	"\n"
	"prolog: for a job holding gres/mps, make sure one MPS control daemon per GPU\n"
	"of the job and the job's user runs and answers before the job starts\n"
	"(started as that user, pipe directory DIR/mps-<uid>-<GPU UUID>/pipe), and\n"
	"record the job as one of its users. A job with whole GPUs (gres/gpu) gets\n"
	"no daemon. gpushare exec in the job joins that daemon.\n"
	"epilog: forget the job, and stop each of its daemons that no other job on\n"
	"the node uses.\n"
	"Both are idempotent and safe under concurrent jobs (one lock, DIR/.lock).\n"
	"\n"
	"Options:\n"
	"  --state-dir DIR       where the daemons and job records live (default\n"
	"                        $GPUSHARE_SLURM_DIR, else /run/gpushare-slurm);\n"
	"                        gpushare exec looks there too\n"
	"  --hpc-job-mapping-dir DIR\n"
	"                        dcgm-exporter's job mapping: the prolog adds the job's\n"
	"                        id to DIR/<GPU index> for each of its GPUs (any gres),\n"
	"                        the epilog removes it (files rewritten atomically)\n"
	"  -h, --help            this help\n"
	"\n"
	"One line on standard output says what was done. Exit status: 0 done (also\n"
	"when there was nothing to do), 2 usage or not run by Slurm (no\n"
	"SLURM_JOB_ID), 3 no NVIDIA driver, 4 MPS control program missing, 5 a\n"
	"daemon did not start or stop, 6 unsafe state directory, 7 the job's GPU is\n"
	"unknown, 12 the lock timed out. A prolog that fails makes Slurm drain the\n"
	"node and requeue the job. See gpushare-slurm(1).\n";

enum { OPT_STATE = 256, OPT_MAP };

int cmd_slurm(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "state-dir", required_argument, NULL, OPT_STATE },
		{ "hpc-job-mapping-dir", required_argument, NULL, OPT_MAP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gpushare_slurm_hook_opts o = { 0 };
	struct gpushare_slurm_hook_result r;
	const char *sub;
	bool prolog;
	int opt, rc;

	if (argc < 2) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage_text, stdout);
		return cli_finish_stdout(EXIT_OK);
	}
	sub = argv[1];
	if (strcmp(sub, "prolog") != 0 && strcmp(sub, "epilog") != 0)
		return cli_error(EXIT_USAGE, "slurm: unknown subcommand '%s' (expected prolog or epilog)", sub);
	prolog = !strcmp(sub, "prolog");
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc - 1, argv + 1, "+:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(usage_text, stdout);
			return cli_finish_stdout(EXIT_OK);
		case OPT_STATE:
			if (!*optarg || optarg[0] != '/')
				return cli_error(EXIT_USAGE, "slurm %s: --state-dir '%s' must be an absolute path", sub, optarg);
			o.state_dir = optarg;
			break;
		case OPT_MAP:
			if (!*optarg)
				return cli_bad_value(prolog ? "slurm prolog" : "slurm epilog", "--hpc-job-mapping-dir", optarg);
			o.hpc_job_mapping_dir = optarg;
			break;
		default:
			return cli_usage_error(prolog ? "slurm prolog" : "slurm epilog", opt, optopt, argv[optind]);
		}
	}
	if (optind + 1 < argc)
		return cli_error(EXIT_USAGE, "slurm %s: unexpected argument '%s'", sub, argv[optind + 1]);
	rc = prolog ? gpushare_slurm_prolog(&o, &r) : gpushare_slurm_epilog(&o, &r);
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
