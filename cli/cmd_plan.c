/*
 * gpushare plan DIR --for TARGET: from the results a sweep recorded in DIR,
 * the configuration that shares GPUs the way the measurements say wins:
 * Slurm gres and a job script, the NVIDIA device plugin's sharing config, a
 * DRA ResourceClaimTemplate, a mig-parted config or a CUDA_MPS_* environment.
 */
#include <errno.h>
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
#include "gpushare/internal/plan.h"

/* Where plan's options go (cli_parse_options()). */
struct plan_args {
	struct gpushare_plan_options o;
	const char *out;
	const char *slurm_conf;
	bool json;
};

#define AT(field) CLI_AT(struct plan_args, field)

static int set_target(struct cli_parse *p, void *args)
{
	struct gpushare_plan_options *o = &((struct plan_args *)args)->o;

	o->target = gpushare_plan_target_parse(p->arg);
	if (o->target < 0)
		return cli_error(EXIT_USAGE, "plan: invalid --for '%s' (slurm, k8s-device-plugin, k8s-dra, mig-parted or env)",
				 p->arg);
	return EXIT_OK;
}

static int set_goal(struct cli_parse *p, void *args)
{
	struct gpushare_plan_options *o = &((struct plan_args *)args)->o;

	if (!strcmp(p->arg, "throughput"))
		o->goal = GPUSHARE_PLAN_THROUGHPUT;
	else if (!strcmp(p->arg, "slo"))
		o->goal = GPUSHARE_PLAN_SLO;
	else
		return cli_error(EXIT_USAGE, "plan: invalid --goal '%s' (throughput or slo)", p->arg);
	return EXIT_OK;
}

static int set_slo_p99(struct cli_parse *p, void *args)
{
	if (cli_parse_slo(p->arg, &((struct plan_args *)args)->o.slo_p99_seconds))
		return cli_error(EXIT_USAGE, "plan: invalid --slo-p99 '%s' (expected milliseconds, e.g. 5 or 500us)", p->arg);
	return EXIT_OK;
}

/* --strategy S: one strategy. */
static int set_strategy(struct cli_parse *p, void *args)
{
	int s[GPUSHARE_STRATEGY_COUNT];
	size_t n = 0;

	if (gpushare_strategy_parse_list(p->arg, s, &n) || n != 1)
		return cli_error(EXIT_USAGE, "plan: invalid --strategy '%s' (one of timeslice, mps, mps-split, mig)", p->arg);
	((struct plan_args *)args)->o.strategy = s[0];
	return EXIT_OK;
}

static int set_gpu_model(struct cli_parse *p, void *args)
{
	if (!*p->arg)
		return cli_error(EXIT_USAGE, "plan: empty --gpu-model");
	((struct plan_args *)args)->o.gpu_model = p->arg;
	return EXIT_OK;
}

static int set_mem_per_client(struct cli_parse *p, void *args)
{
	struct gpushare_plan_options *o = &((struct plan_args *)args)->o;

	if (gpushare_parse_size(p->arg, &o->mem_per_client) || !o->mem_per_client)
		return cli_bad_value("plan", "--mem-per-client", p->arg);
	return EXIT_OK;
}

static int set_out(struct cli_parse *p, void *args)
{
	if (!*p->arg)
		return cli_error(EXIT_USAGE, "plan: empty --out");
	((struct plan_args *)args)->out = p->arg;
	return EXIT_OK;
}

#define CALL(fn) .to = CLI_TO_CALL, .call = fn

static const struct cli_opt plan_opts[] = {
	{ .id = 'f', .long_name = "for", .kind = CLI_ENUM, .value_name = "TARGET",
	  .values = "slurm k8s-device-plugin k8s-dra mig-parted env",
	  .help = "required: slurm (gres.conf lines, GresTypes=/Gres= for slurm.conf and a job script running "
		  "gpushare farm with the measured K), k8s-device-plugin (the NVIDIA device plugin's config, "
		  "sharing.timeSlicing or sharing.mps with replicas K, and a ConfigMap carrying it), k8s-dra (a "
		  "ResourceClaimTemplate with the NVIDIA DRA driver's GpuConfig), mig-parted (a mig-parted config of "
		  "the MIG layout the 'mig' runs used, never applied) or env (the CUDA_MPS_* variables for a container, "
		  "a Ray actor or a batch script)",
	  CALL(set_target) },
	{ .id = 'g', .long_name = "goal", .kind = CLI_ENUM, .value_name = "G", .values = "throughput slo",
	  .def = "throughput",
	  .help = "throughput: the highest median throughput, with the fewest workers within noise of it; slo: the "
		  "highest throughput whose median p99 is under --slo-p99",
	  CALL(set_goal) },
	{ .id = OPT_SLO_P99, .long_name = "slo-p99", .kind = CLI_STRING, .value_name = "MS",
	  .help = "the p99 bound of --goal slo, in milliseconds or with a unit (500us)",
	  CALL(set_slo_p99) },
	{ .id = OPT_STRATEGY, .long_name = "strategy", .kind = CLI_ENUM, .value_name = "S",
	  .values = "timeslice mps mps-split mig", .help = "plan for S instead of the best",
	  CALL(set_strategy) },
	{ .id = 'm', .long_name = "gpu-model", .kind = CLI_STRING, .value_name = "NAME",
	  .help = "refuse unless the results were measured on this GPU model (H100); also the Slurm gres Type",
	  CALL(set_gpu_model) },
	{ .id = 's', .long_name = "shape", .kind = CLI_STRING, .value_name = "LABEL",
	  .help = "the workload shape to plan for (when the results hold several)",
	  .to = CLI_TO_STR, AT(o.shape) },
	{ .id = OPT_BATCH, .long_name = "batch", .kind = CLI_INT, .value_name = "B", .min = 1, .max = 1000000000000L,
	  .help = "the batch size to plan for (when the results hold several)",
	  .to = CLI_TO_LONG, AT(o.batch) },
	{ .id = 'n', .long_name = "name", .kind = CLI_STRING, .value_name = "NAME",
	  .help = "the Kubernetes object or mig-parted config name",
	  .to = CLI_TO_STR, AT(o.name) },
	{ .id = OPT_NAMESPACE, .long_name = "namespace", .kind = CLI_STRING, .value_name = "NS",
	  .help = "k8s-device-plugin: the ConfigMap's namespace, the chart's (default nvidia-device-plugin); k8s-dra: "
		  "the claim's and the pods' (default none: kubectl's)",
	  .to = CLI_TO_STR, AT(o.k8s_namespace) },
	{ .id = 'N', .long_name = "nodes", .kind = CLI_STRING, .value_name = "LIST",
	  .help = "slurm: NodeName (a Slurm host list; default the measured host)",
	  .to = CLI_TO_STR, AT(o.nodes) },
	{ .id = 'G', .long_name = "gpus-per-node", .kind = CLI_INT, .value_name = "G", .min = 1, .max = 64,
	  .def = "1", .help = "slurm: GPUs of this model per node",
	  .to = CLI_TO_INT, AT(o.gpus_per_node) },
	{ .id = 'd', .long_name = "device-file", .kind = CLI_FILE, .value_name = "PATH",
	  .help = "slurm: gres File= (default /dev/nvidia0, /dev/nvidia[0-G-1])",
	  .to = CLI_TO_STR, AT(o.device_file) },
	{ .id = 'H', .long_name = "hook-dir", .kind = CLI_DIR, .value_name = "DIR",
	  .def = GPUSHARE_PLAN_HOOK_DIR,
	  .help = "slurm, MPS: where the nodes get gpushare-prolog.sh and gpushare-epilog.sh (Prolog=, Epilog=)",
	  .to = CLI_TO_STR, AT(o.hook_dir) },
	{ .id = 'P', .long_name = "gpushare-path", .kind = CLI_FILE, .value_name = "PATH",
	  .def = GPUSHARE_PLAN_GPUSHARE_PATH, .help = "slurm, MPS: the gpushare the hooks run on the nodes",
	  .to = CLI_TO_STR, AT(o.gpushare_path) },
	{ .id = 'C', .long_name = "slurm-conf", .kind = CLI_FILE, .value_name = "FILE",
	  .help = "slurm: the site's slurm.conf: write it with the plan merged in (GresTypes=, the hooks, Gres= on "
		  "the nodes' one NodeName line) and slurm.conf.diff, instead of lines to add by hand",
	  .to = CLI_TO_STR, AT(slurm_conf) },
	{ .id = OPT_MEM_LIMIT, .long_name = "mem-per-client", .kind = CLI_SIZE, .value_name = "SIZE",
	  .help = "MPS pinned device memory limit per client (10G); default for mps-split 1.25x the measured "
		  "memory per worker, when recorded",
	  CALL(set_mem_per_client) },
	{ .id = OPT_MPS_PIPE_DIR, .long_name = "mps-pipe-dir", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "env: the CUDA_MPS_PIPE_DIRECTORY to set",
	  .to = CLI_TO_STR, AT(o.mps_pipe_dir) },
	{ .id = OPT_OUT, .long_name = "out", .kind = CLI_FILE, .value_name = "PATH",
	  .help = "write there (atomically) instead of stdout; PATH is a directory for slurm (gres.conf, slurm.conf, "
		  "job.sh), k8s-device-plugin (configmap.yaml, config.yaml, values.yaml) and k8s-dra "
		  "(resourceclaimtemplate.yaml, values.yaml, shared-claim.yaml)",
	  CALL(set_out) },
	{ .id = 'T', .long_name = "template", .kind = CLI_FLAG,
	  .help = "plan from results that measured no GPU (GPU unknown, or a CPU-only workload such as spin) as a "
		  "template, said in its header; without it such results are refused",
	  .to = CLI_TO_TRUE, AT(o.template_only) },
	{ .id = OPT_JSON, .long_name = "json", .kind = CLI_FLAG,
	  .help = "print the decision as one JSON document instead",
	  .to = CLI_TO_TRUE, AT(json) },
};

static const struct cli_group plan_groups[] = { CLI_GROUP("Options", plan_opts, NULL) };

const struct cli_cmd cli_plan_cmd = {
	.name = "plan",
	.usage = "gpushare plan DIR --for TARGET [--goal throughput|slo] [--slo-p99 MS] [--gpu-model NAME]\n"
		 "                     [--strategy S] [--shape LABEL] [--batch B] [--out PATH] [--json] [options]",
	.about = "Write the configuration that shares GPUs the way the sweep in DIR measured best: the\n"
		 "strategy and the processes per GPU (K) of the report's recommendation, for a scheduler\n"
		 "or runtime. Every output begins with a comment block: what was measured, on which GPU,\n"
		 "the gain over the other strategies with its interval, and the command that measured it.",
	.groups = plan_groups,
	.n_groups = CLI_N(plan_groups),
	.notes = (const struct cli_exit_note[]){
		{ EXIT_USAGE, "bad option, or an ambiguous choice (several shapes)" },
		{ EXIT_IO, "results missing or unreadable, or the output cannot be written" },
		{ EXIT_PLAN_REFUSED, "refused: the results cannot support this plan (no successful run, no GPU measured "
				     "without --template, a strategy the target cannot express, another GPU model, one "
				     "process per GPU)" } },
	.n_notes = 3,
	.name_options = true,
};

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

/* Each part into PATH (one part) or PATH/NAME (several), all or nothing:
 * every file is checked and written before any is replaced. */
static int write_out(const char *path, const struct gpushare_plan_output *out)
{
	struct gpushare_staged_file f[GPUSHARE_PLAN_MAX_PARTS];
	char p[GPUSHARE_PLAN_MAX_PARTS][GPUSHARE_PATH_MAX + 64];

	if (out->n_parts > 1) {
		struct stat st;

		if (mkdir(path, 0755) && errno != EEXIST)
			return cli_error(EXIT_IO, "plan: cannot create directory '%s': %s", path, strerror(errno));
		/* Never through a link someone put in its place. */
		if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
			return cli_error(EXIT_IO, "plan: --out '%s' is not a directory (a symbolic link is not followed)", path);
	}
	for (size_t i = 0; i < out->n_parts; i++) {
		bool script = strstr(out->parts[i].name, ".sh") != NULL;

		if ((size_t)snprintf(p[i], sizeof(p[i]), "%s%s%s", path, out->n_parts > 1 ? "/" : "",
				     out->n_parts > 1 ? out->parts[i].name : "") >= sizeof(p[i]))
			return cli_error(EXIT_USAGE, "plan: path '%s' is too long", path);
		f[i] = (struct gpushare_staged_file){ p[i], out->parts[i].text, out->parts[i].len, script ? 0755 : 0644 };
	}
	if (gpushare_write_files_staged(f, out->n_parts))
		return cli_error(EXIT_IO, "plan: %s", detail());
	return EXIT_OK;
}

static int plan_run(const char *dir, struct gpushare_plan_options *o, const char *out_path, bool json)
{
	char *conf = NULL;
	size_t conf_len;
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
	if (o->slurm_conf_name) {
		if (gpushare_read_file(o->slurm_conf_name, 1 << 20, &conf, &conf_len)) {
			gpushare_report_release(&r);
			return cli_error(EXIT_IO, "plan: --slurm-conf: %s", detail());
		}
		if (strlen(conf) != conf_len) {
			free(conf);
			gpushare_report_release(&r);
			return cli_error(EXIT_USAGE, "plan: --slurm-conf '%s' holds a NUL byte", o->slurm_conf_name);
		}
		o->slurm_conf_text = conf;
	}
	rc = gpushare_plan_render(&r, o, &p, &out);
	if (rc) {
		code = cli_error(rc == GPUSHARE_E_UNSUPPORTED ? EXIT_PLAN_REFUSED
				 : rc == GPUSHARE_E_INVAL     ? EXIT_USAGE
							      : EXIT_FAILURE_GENERIC,
				 "plan: %s%s", rc == GPUSHARE_E_UNSUPPORTED ? "refused: " : "", detail());
	} else if (out_path) {
		code = write_out(out_path, &out);
	} else if (!json) {
		size_t shown = 0, k = 0;

		/* What --out DIR writes beside the objects is never printed. */
		for (size_t i = 0; i < out.n_parts; i++)
			shown += !out.parts[i].aside;
		for (size_t i = 0; i < out.n_parts; i++) {
			if (out.parts[i].aside)
				continue;
			if (shown > 1)
				printf("%s# ==== %s ====\n", k++ ? "\n" : "", out.parts[i].name);
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
	free(conf);
	return code;
}

int cmd_plan(int argc, char **argv)
{
	struct plan_args a = { .out = NULL };
	struct gpushare_plan_options *o = &a.o;
	struct cli_parse p;

	gpushare_plan_options_init(o);
	o->target = -1;
	cli_parse_init(&p, &cli_plan_cmd, argc, argv);
	if (!cli_parse_options(&p, &a))
		return p.status;
	if (p.optind >= argc)
		return cli_error(EXIT_USAGE, "plan: no directory given (usage: gpushare plan DIR --for TARGET)");
	if (p.optind + 1 < argc)
		return cli_unexpected_argument("plan", argv[p.optind + 1]);
	if (!*argv[p.optind])
		return cli_error(EXIT_USAGE, "plan: empty directory name");
	if (o->target < 0)
		return cli_error(EXIT_USAGE, "plan: --for TARGET is required (slurm, k8s-device-plugin, k8s-dra, mig-parted or env)");
	if (o->goal == GPUSHARE_PLAN_SLO && !(o->slo_p99_seconds > 0))
		return cli_error(EXIT_USAGE, "plan: --goal slo needs --slo-p99 MS");
	if (o->slo_p99_seconds > 0 && !cli_parse_given(&p, "goal"))
		o->goal = GPUSHARE_PLAN_SLO;
	if (a.slurm_conf && o->target != GPUSHARE_PLAN_SLURM)
		return cli_error(EXIT_USAGE, "plan: --slurm-conf is for --for slurm");
	o->slurm_conf_name = a.slurm_conf;
	return plan_run(argv[p.optind], o, a.out, a.json);
}
