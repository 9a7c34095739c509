/*
 * Plans from measurements (`gpushare plan DIR --for TARGET`): read a sweep's
 * results through the report's loader and summariser, pick the strategy and
 * the number of processes per GPU the measurements support (the report's
 * recommendation), and write the configuration of a scheduler or runtime
 * that shares GPUs that way: Slurm's gres.conf/slurm.conf lines and a job
 * script, the NVIDIA device plugin's sharing config, a DRA
 * ResourceClaimTemplate with the NVIDIA DRA driver's GpuConfig, a
 * mig-parted config, or the CUDA_MPS_* environment. docs/plan.md.
 *
 * Usage:
 *   gpushare_report_load(path, &r); gpushare_report_summarise(&r, slo);
 *   rc = gpushare_plan_decide(&r, &opts, &plan);     GPUSHARE_E_UNSUPPORTED: refused
 *   rc = gpushare_plan_render(&r, &opts, &plan, &out);
 *   ... out.parts[i].name, out.parts[i].text ...
 *   gpushare_plan_output_release(&out);
 * YAML is written by libyaml's emitter, Slurm's key=value files by one
 * writer that refuses what Slurm cannot parse.
 */
#ifndef GPUSHARE_PLAN_H
#define GPUSHARE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpushare/report.h"

#ifdef __cplusplus
extern "C" {
#endif

enum gpushare_plan_target {
	GPUSHARE_PLAN_SLURM,
	GPUSHARE_PLAN_K8S_DEVICE_PLUGIN,
	GPUSHARE_PLAN_K8S_DRA,
	GPUSHARE_PLAN_MIG_PARTED,
	GPUSHARE_PLAN_ENV,
	GPUSHARE_PLAN_TARGET_COUNT,
};

enum gpushare_plan_goal {
	GPUSHARE_PLAN_THROUGHPUT,    /* the highest median throughput, with the fewest workers within noise */
	GPUSHARE_PLAN_SLO,           /* the highest throughput with median p99 under slo_p99_seconds */
};

/* "slurm", "k8s-device-plugin", "k8s-dra", "mig-parted", "env"; NULL unknown. */
const char *gpushare_plan_target_name(int target);

struct gpushare_plan_options {
	int target;                  /* enum gpushare_plan_target */
	int goal;                    /* enum gpushare_plan_goal */
	double slo_p99_seconds;      /* GPUSHARE_PLAN_SLO: the bound (the report was summarised with it) */
	enum gpushare_strategy strategy; /* GPUSHARE_STRATEGY_NONE: the measured best; else plan for this one */
	const char *gpu_model;       /* NULL: any; else the results' GPU must be this model */
	const char *shape;           /* NULL: the only shape of the results */
	long batch;                  /* 0: the only batch of that shape */
	const char *name;            /* Kubernetes object / mig-parted config name; NULL: derived */
	const char *k8s_namespace;   /* Kubernetes: the device plugin's ConfigMap's (NULL: the chart's,
				      * nvidia-device-plugin), the DRA claim's and pods' (NULL: none) */
	/* Plan from results that measured no GPU (its GPU unknown, a CPU-only
	 * workload such as spin) as a template, said in its header; false:
	 * such results are refused (GPUSHARE_E_UNSUPPORTED). */
	bool template_only;
	/* Slurm: */
	const char *nodes;           /* NodeName; NULL: the results' host */
	int gpus_per_node;           /* GPUs of that model per node (default 1) */
	const char *device_file;     /* gres File=; NULL: /dev/nvidia0 or /dev/nvidia[0-G-1] */
	const char *hook_dir;        /* where the Prolog=/Epilog= scripts go; NULL: GPUSHARE_PLAN_HOOK_DIR */
	const char *gpushare_path;   /* the gpushare the hooks run; NULL: GPUSHARE_PLAN_GPUSHARE_PATH */
	/* The site's slurm.conf (its text, and its name for the diff): the
	 * output's slurm.conf is it with the plan merged in, and a
	 * slurm.conf.diff; NULL: a fragment to add by hand. */
	const char *slurm_conf_text;
	const char *slurm_conf_name;
	/* MPS: the pinned device memory limit per client; 0: derived from the
	 * measured memory use when known, else none. */
	uint64_t mem_per_client;
	const char *mps_pipe_dir;    /* env: CUDA_MPS_PIPE_DIRECTORY to set; NULL: none */
};

#define GPUSHARE_PLAN_HOOK_DIR "/etc/slurm"
#define GPUSHARE_PLAN_GPUSHARE_PATH "/usr/local/bin/gpushare"

void gpushare_plan_options_init(struct gpushare_plan_options *o);

#define GPUSHARE_PLAN_MAX_WARNINGS 8

/* What the measurements support. */
struct gpushare_plan {
	int rec;                     /* index into r->recs */
	int cell;                    /* the chosen cell (r->cells) */
	enum gpushare_strategy strategy; /* its strategy */
	int workers;                 /* K: processes per GPU */
	int thread_percentage;       /* mps-split: 100 / K; else 0 */
	uint64_t mem_limit_bytes;    /* MPS pinned memory limit per client; 0 none */
	char gpu_model[96];          /* the GPU the chosen shape's runs name ("" unknown) */
	char host[256], driver_version[80];   /* where they ran: their first record's */
	char gres_type[48];          /* Slurm gres Type (from --gpu-model or the GPU name); "" none */
	/* mig: the layout per GPU the chosen cell's runs measured, several
	 * profiles with their counts (1g.10gb x2 + 3g.40gb x1); n 0 none. */
	struct gpushare_report_mig_layout mig_layout;
	int mig_instances;           /* mig: instances per GPU, all profiles */
	/* The comment block: one sentence per entry, no newlines. */
	char measured[640];          /* "matmul, batch 1: mps, 4 workers per GPU: 34.5k items/s (...)" */
	char gains[1536];            /* against every other sharing strategy at K */
	char report_text[1024];      /* the report's own answer at K and its scaling sentence */
	char warnings[GPUSHARE_PLAN_MAX_WARNINGS][320];
	size_t n_warnings;
};

/* Decide the plan for o->target from a summarised report. Refusals (the
 * results cannot support a plan for this target: no successful run, a
 * strategy the target cannot express, another GPU model, one process per
 * GPU) return GPUSHARE_E_UNSUPPORTED with a one-line reason as the detail;
 * an ambiguous choice (several shapes or batches without --shape/--batch,
 * an unknown shape) GPUSHARE_E_INVAL. */
int gpushare_plan_decide(const struct gpushare_report *r, const struct gpushare_plan_options *o,
			 struct gpushare_plan *p);

#define GPUSHARE_PLAN_MAX_PARTS 8

/* The rendered plan: one part for env and mig-parted; for Slurm gres.conf,
 * slurm.conf (with --slurm-conf the merged file and slurm.conf.diff) and
 * job.sh, and for MPS job-mps.sh, gpushare-prolog.sh and gpushare-epilog.sh;
 * for the device plugin configmap.yaml (and aside config.yaml, values.yaml);
 * for DRA resourceclaimtemplate.yaml (and aside values.yaml,
 * shared-claim.yaml). */
struct gpushare_plan_output {
	struct {
		char name[32];       /* a file name: "gres.conf", "device-plugin.yaml" */
		bool aside;          /* written by --out DIR only, never printed: not a Kubernetes
				      * object, or another way than the printed one */
		char *text;          /* malloc'ed, NUL-terminated */
		size_t len;
	} parts[GPUSHARE_PLAN_MAX_PARTS];
	size_t n_parts;
};

/* Write the plan's configuration. GPUSHARE_E_INVAL when a value cannot be
 * written safely (a node name Slurm cannot parse, an invalid object name),
 * GPUSHARE_E_NOMEM. out is always initialised (release it). */
int gpushare_plan_render(const struct gpushare_report *r, const struct gpushare_plan_options *o,
			 const struct gpushare_plan *p, struct gpushare_plan_output *out);

/* The plan as one JSON document (the decision and its figures); caller frees *text. */
int gpushare_plan_json(const struct gpushare_report *r, const struct gpushare_plan_options *o,
		       const struct gpushare_plan *p, char **text);

void gpushare_plan_output_release(struct gpushare_plan_output *out);

#ifdef __cplusplus
}
#endif
#endif
