/*
 * gpushare plan DIR --for TARGET: from the results a sweep recorded in DIR,
 * the configuration that shares GPUs the way the measurements say wins:
 * Slurm gres and a job script, the NVIDIA device plugin's sharing config, a
 * DRA ResourceClaimTemplate, a mig-parted config or a CUDA_MPS_* environment.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/plan.h"
#include "gpushare/report.h"
#include "gpushare/strategy.h"
#include "gpushare/sweep.h"
#include "gpushare/util.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpushare plan DIR --for TARGET [--goal throughput|slo] [--slo-p99 MS] [--gpu-model NAME]\n"
		   "                     [--strategy S] [--shape LABEL] [--batch B] [--out PATH] [--json] [options]\n\n"
		   "Write the configuration that shares GPUs the way the sweep in DIR measured best: the\n"
		   "strategy and the processes per GPU (K) of the report's recommendation, for a scheduler\n"
		   "or runtime. Every output begins with a comment block: what was measured, on which GPU,\n"
		   "the gain over the other strategies with its interval, and the command that measured it.\n\n"
		   "Targets (--for):\n"
		   "  slurm              gres.conf lines (Name=shard Count=K for timeslice, Name=mps Count=100\n"
		   "                     for mps and mps-split), GresTypes=/Gres= for slurm.conf, and a job\n"
		   "                     script running gpushare farm with the measured K\n"
		   "  k8s-device-plugin  the NVIDIA device plugin's config (sharing.timeSlicing or sharing.mps,\n"
		   "                     replicas K) and a ConfigMap carrying it\n"
		   "  k8s-dra            a ResourceClaimTemplate with the NVIDIA DRA driver's GpuConfig (MPS\n"
		   "                     thread percentage and pinned memory, or TimeSlicing)\n"
		   "  mig-parted         a mig-parted config of the MIG layout the 'mig' runs used (never applied)\n"
		   "  env                the CUDA_MPS_* variables for a container, a Ray actor or a batch script\n\n"
		   "Options:\n"
		   "  --for TARGET          required: slurm, k8s-device-plugin, k8s-dra, mig-parted, env\n"
		   "  --goal G              throughput (default): the highest median throughput, with the fewest\n"
		   "                        workers within noise of it; slo: the highest throughput whose median\n"
		   "                        p99 is under --slo-p99\n"
		   "  --slo-p99 MS          the p99 bound of --goal slo, in milliseconds or with a unit (500us)\n"
		   "  --strategy S          plan for S (timeslice, mps, mps-split, mig) instead of the best\n"
		   "  --gpu-model NAME      refuse unless the results were measured on this GPU model (H100);\n"
		   "                        also the Slurm gres Type\n"
		   "  --shape LABEL         the workload shape to plan for (when the results hold several)\n"
		   "  --batch B             the batch size to plan for (when the results hold several)\n"
		   "  --name NAME           the Kubernetes object or mig-parted config name\n"
		   "  --nodes LIST          slurm: NodeName (a Slurm host list; default the measured host)\n"
		   "  --gpus-per-node G     slurm: GPUs of this model per node (default 1)\n"
		   "  --device-file PATH    slurm: gres File= (default /dev/nvidia0, /dev/nvidia[0-G-1])\n"
		   "  --mem-per-client SIZE MPS pinned device memory limit per client (10G); default for\n"
		   "                        mps-split 1.25x the measured memory per worker, when recorded\n"
		   "  --mps-pipe-dir DIR    env: the CUDA_MPS_PIPE_DIRECTORY to set\n"
		   "  --out PATH            write there (atomically) instead of stdout; for slurm PATH is a\n"
		   "                        directory that gets gres.conf, slurm.conf and job.sh\n"
		   "  --json                print the decision as one JSON document instead\n"
		   "  -h, --help            this help\n\n"
		   "Exit statuses: 0 ok, 2 bad option or an ambiguous choice (several shapes), 11 results\n"
		   "missing or unreadable, or the output cannot be written, 14 refused: the results cannot\n"
		   "support this plan (no successful run, a strategy the target cannot express, another GPU\n"
		   "model, one process per GPU). See gpushare-plan(1).\n");
}

/* The library's detail on one line: user text it quotes (a --name, a node
 * list) may hold line breaks or other control characters. */
static const char *detail(void)
{
	static char d[512];

	snprintf(d, sizeof(d), "%s", gpushare_errdetail());
	for (char *c = d; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	}
	return d;
}

enum {
	OPT_FOR = 256, OPT_GOAL, OPT_SLO, OPT_STRATEGY, OPT_GPU_MODEL, OPT_SHAPE, OPT_BATCH, OPT_NAME, OPT_NODES,
	OPT_GPUS_PER_NODE, OPT_DEVICE_FILE, OPT_MEM, OPT_PIPE, OPT_OUT, OPT_JSON,
};

/* Each part into PATH (one part) or PATH/NAME (several). */
static int write_out(const char *path, const struct gpushare_plan_output *out)
{
	char p[GPUSHARE_PATH_MAX + 64];

	if (out->n_parts == 1) {
		if (gpushare_write_file_atomic(path, out->parts[0].text, out->parts[0].len))
			return cli_error(EXIT_IO, "plan: %s", detail());
		return EXIT_OK;
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		return cli_error(EXIT_IO, "plan: cannot create directory '%s': %s", path, strerror(errno));
	for (size_t i = 0; i < out->n_parts; i++) {
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", path, out->parts[i].name) >= sizeof(p))
			return cli_error(EXIT_USAGE, "plan: path '%s' is too long", path);
		if (gpushare_write_file_atomic(p, out->parts[i].text, out->parts[i].len))
			return cli_error(EXIT_IO, "plan: %s", detail());
		if (strstr(out->parts[i].name, ".sh") && chmod(p, 0755))
			return cli_error(EXIT_IO, "plan: cannot make '%s' executable: %s", p, strerror(errno));
	}
	return EXIT_OK;
}

static int plan_run(const char *dir, struct gpushare_plan_options *o, const char *out_path, bool json)
{
	char path[GPUSHARE_PATH_MAX + 64];
	struct gpushare_report r;
	struct gpushare_plan p;
	struct gpushare_plan_output out;
	int rc, code = EXIT_OK;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, GPUSHARE_SWEEP_RESULTS_FILE) >= sizeof(path))
		return cli_error(EXIT_USAGE, "plan: path '%s' is too long", dir);
	rc = gpushare_report_load(path, &r);
	if (rc) {
		gpushare_report_release(&r);
		if (rc == GPUSHARE_E_NOT_FOUND)
			return cli_error(EXIT_IO, "plan: no results file '%s' (is '%s' the --out of a sweep?)", path, dir);
		return cli_error(rc == GPUSHARE_E_NOMEM ? EXIT_FAILURE_GENERIC : EXIT_IO, "plan: %s", detail());
	}
	for (size_t i = 0; i < r.n_bad_kept; i++)
		cli_warn("%s line %zu: %s; line skipped", path, r.bad[i].line, r.bad[i].reason);
	if (r.n_bad > r.n_bad_kept)
		cli_warn("%s: %zu more corrupt lines skipped", path, r.n_bad - r.n_bad_kept);
	if (r.n_runs == 0) {
		gpushare_report_release(&r);
		return cli_error(EXIT_PLAN_REFUSED, "plan: refused: '%s' holds no usable run", path);
	}
	rc = gpushare_report_cap_shapes(&r, GPUSHARE_REPORT_MAX_SHAPES);
	if (!rc)
		rc = gpushare_report_summarise(&r, o->goal == GPUSHARE_PLAN_SLO ? o->slo_p99_seconds : 0);
	if (rc) {
		code = cli_error(rc == GPUSHARE_E_NOMEM ? EXIT_FAILURE_GENERIC : EXIT_IO, "plan: %s", detail());
		gpushare_report_release(&r);
		return code;
	}
	rc = gpushare_plan_decide(&r, o, &p);
	if (rc) {
		if (rc == GPUSHARE_E_UNSUPPORTED)
			code = cli_error(EXIT_PLAN_REFUSED, "plan: refused: %s", detail());
		else
			code = cli_error(rc == GPUSHARE_E_INVAL ? EXIT_USAGE : EXIT_FAILURE_GENERIC, "plan: %s",
					 detail());
		gpushare_report_release(&r);
		return code;
	}
	for (size_t i = 0; i < p.n_warnings; i++)
		cli_warn("plan: %s", p.warnings[i]);
	rc = gpushare_plan_render(&r, o, &p, &out);
	if (rc) {
		code = cli_error(rc == GPUSHARE_E_UNSUPPORTED ? EXIT_PLAN_REFUSED
				 : rc == GPUSHARE_E_INVAL     ? EXIT_USAGE
							      : EXIT_FAILURE_GENERIC,
				 "plan: %s%s", rc == GPUSHARE_E_UNSUPPORTED ? "refused: " : "", detail());
	} else if (out_path) {
		code = write_out(out_path, &out);
	} else if (!json) {
		for (size_t i = 0; i < out.n_parts; i++) {
			if (out.n_parts > 1)
				printf("%s# ==== %s ====\n", i ? "\n" : "", out.parts[i].name);
			fwrite(out.parts[i].text, 1, out.parts[i].len, stdout);
		}
		code = cli_finish_stdout(EXIT_OK);
	}
	if (!code && json) {
		char *text = NULL;

		if (gpushare_plan_json(&r, o, &p, &text))
			code = cli_error(EXIT_FAILURE_GENERIC, "plan: %s", detail());
		else
			code = cli_print_json_and_free(text);
	}
	gpushare_plan_output_release(&out);
	gpushare_report_release(&r);
	return code;
}

int cmd_plan(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "for", required_argument, NULL, OPT_FOR },
		{ "goal", required_argument, NULL, OPT_GOAL },
		{ "slo-p99", required_argument, NULL, OPT_SLO },
		{ "strategy", required_argument, NULL, OPT_STRATEGY },
		{ "gpu-model", required_argument, NULL, OPT_GPU_MODEL },
		{ "shape", required_argument, NULL, OPT_SHAPE },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "nodes", required_argument, NULL, OPT_NODES },
		{ "gpus-per-node", required_argument, NULL, OPT_GPUS_PER_NODE },
		{ "device-file", required_argument, NULL, OPT_DEVICE_FILE },
		{ "mem-per-client", required_argument, NULL, OPT_MEM },
		{ "mps-pipe-dir", required_argument, NULL, OPT_PIPE },
		{ "out", required_argument, NULL, OPT_OUT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct gpushare_plan_options o;
	const char *out = NULL;
	bool json = false, goal_given = false;
	long v;
	int opt;

	gpushare_plan_options_init(&o);
	o.target = -1;
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			return cli_finish_stdout(EXIT_OK);
		case OPT_FOR:
			o.target = gpushare_plan_target_parse(optarg);
			if (o.target < 0)
				return cli_error(EXIT_USAGE,
						 "plan: invalid --for '%s' (slurm, k8s-device-plugin, k8s-dra, mig-parted or env)",
						 optarg);
			break;
		case OPT_GOAL:
			if (!strcmp(optarg, "throughput"))
				o.goal = GPUSHARE_PLAN_THROUGHPUT;
			else if (!strcmp(optarg, "slo"))
				o.goal = GPUSHARE_PLAN_SLO;
			else
				return cli_error(EXIT_USAGE, "plan: invalid --goal '%s' (throughput or slo)", optarg);
			goal_given = true;
			break;
		case OPT_SLO:
			if (cli_parse_slo(optarg, &o.slo_p99_seconds))
				return cli_error(EXIT_USAGE, "plan: invalid --slo-p99 '%s' (expected milliseconds, e.g. 5 or 500us)",
						 optarg);
			break;
		case OPT_STRATEGY: {
			int s[GPUSHARE_STRATEGY_COUNT];
			size_t n = 0;

			if (gpushare_strategy_parse_list(optarg, s, &n) || n != 1)
				return cli_error(EXIT_USAGE, "plan: invalid --strategy '%s' (one of timeslice, mps, mps-split, mig)",
						 optarg);
			o.strategy = s[0];
			break;
		}
		case OPT_GPU_MODEL:
			if (!*optarg)
				return cli_error(EXIT_USAGE, "plan: empty --gpu-model");
			o.gpu_model = optarg;
			break;
		case OPT_SHAPE: o.shape = optarg; break;
		case OPT_BATCH:
			if (cli_parse_whole(optarg, 1, 1000000000000L, &v))
				return cli_bad_value("plan", "--batch", optarg);
			o.batch = v;
			break;
		case OPT_NAME: o.name = optarg; break;
		case OPT_NODES: o.nodes = optarg; break;
		case OPT_GPUS_PER_NODE:
			if (cli_parse_whole(optarg, 1, 64, &v))
				return cli_bad_value("plan", "--gpus-per-node", optarg);
			o.gpus_per_node = (int)v;
			break;
		case OPT_DEVICE_FILE: o.device_file = optarg; break;
		case OPT_MEM:
			if (gpushare_parse_size(optarg, &o.mem_per_client) || !o.mem_per_client)
				return cli_bad_value("plan", "--mem-per-client", optarg);
			break;
		case OPT_PIPE: o.mps_pipe_dir = optarg; break;
		case OPT_OUT:
			if (!*optarg)
				return cli_error(EXIT_USAGE, "plan: empty --out");
			out = optarg;
			break;
		case OPT_JSON: json = true; break;
		default:
			return cli_usage_error("plan", opt, optopt, argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_error(EXIT_USAGE, "plan: no directory given (usage: gpushare plan DIR --for TARGET)");
	if (optind + 1 < argc)
		return cli_unexpected_argument("plan", argv[optind + 1]);
	if (!*argv[optind])
		return cli_error(EXIT_USAGE, "plan: empty directory name");
	if (o.target < 0)
		return cli_error(EXIT_USAGE, "plan: --for TARGET is required (slurm, k8s-device-plugin, k8s-dra, mig-parted or env)");
	if (o.goal == GPUSHARE_PLAN_SLO && !(o.slo_p99_seconds > 0))
		return cli_error(EXIT_USAGE, "plan: --goal slo needs --slo-p99 MS");
	if (o.slo_p99_seconds > 0 && !goal_given)
		o.goal = GPUSHARE_PLAN_SLO;
	return plan_run(argv[optind], &o, out, json);
}
