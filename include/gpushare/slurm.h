/*
 * Slurm's share of a GPU, as a job sees it, and the node's prolog and
 * epilog that keep one MPS daemon per GPU and user for the jobs holding
 * gres/mps (docs/slurm.md).
 *
 * With --gres=mps:N Slurm gives every task, and the prolog,
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=N: the job's part of the GPU's SMs.
 * With --gres=shard:N it gives SLURM_SHARDS_ON_NODE=N: how many shards of
 * the node's GPUs the job holds (Slurm enforces nothing for shards; the job
 * is trusted to run at most that many things at once). gpushare exec and
 * farm take both as caps: never exceeded.
 */
#ifndef GPUSHARE_SLURM_H
#define GPUSHARE_SLURM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "gpushare/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What Slurm gave the job on this node. */
struct gpushare_slurm_share {
	bool in_job;                    /* SLURM_JOB_ID is set */
	char job_id[32];
	double mps_percentage;          /* gres/mps: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; 0 none */
	bool mps_clamped;               /* Slurm said more than 100: taken as 100 */
	unsigned shards;                /* gres/shard: SLURM_SHARDS_ON_NODE; 0 none */
};

/* Read the share from this process's environment. Outside a Slurm job
 * (no SLURM_JOB_ID) the share is empty: an inherited
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is then not Slurm's. GPUSHARE_E_INVAL
 * naming the variable when a value is not a number. */
int gpushare_slurm_share_read(struct gpushare_slurm_share *s);

/* Whether Slurm gave anything to honour. */
static inline bool gpushare_slurm_share_any(const struct gpushare_slurm_share *s)
{
	return s->mps_percentage > 0 || s->shards > 0;
}

/* One phrase for people: "gres/mps 50% (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50)",
 * "gres/shard 2 (SLURM_SHARDS_ON_NODE=2)", or both; "" when none. */
void gpushare_slurm_share_describe(const struct gpushare_slurm_share *s, char *buf, size_t len);

/* ---- which GPUs Slurm gave ---- */

/* The GPUs Slurm gave the job on this node, for a process whose
 * CUDA_VISIBLE_DEVICES Slurm left unset (with GresTypes=gpu,mps,shard
 * Slurm 22.05 gives gres/mps tasks no CUDA_VISIBLE_DEVICES, nor
 * SLURM_STEP_GPUS or SLURM_JOB_GPUS): as a CUDA_VISIBLE_DEVICES value in
 * out, from SLURM_STEP_GPUS, else SLURM_JOB_GPUS (indices), else the
 * prolog's record of the job (<state dir>/jobs/<job id>: the GPUs, by UUID,
 * that Slurm named to the prolog). out is "" when there is nothing to add:
 * outside a Slurm job, or CUDA_VISIBLE_DEVICES is set, or the job holds no
 * share and Slurm named no GPU (a node without gres). A job holding a share
 * (gres/mps or gres/shard) whose GPU none of these names is refused,
 * GPUSHARE_E_NOT_FOUND saying so: never every GPU of the node. *source
 * names where the list came from ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS",
 * "prolog"; NULL when out is ""). state_dir NULL: gpushare_slurm_state_dir. */
int gpushare_slurm_job_gpus(const char *state_dir, char *out, size_t len, const char **source);

/* ---- the site's configuration files ---- */

/* The text of a Slurm configuration file (gres.conf, slurm.conf) as Slurm
 * reads it: each Include line replaced by the file it names, a relative name
 * taken from the including file's directory (Slurm's
 * src/common/parse_config.c). *text is malloc'ed (the caller frees it). A
 * loop of Includes is refused (GPUSHARE_E_INVAL), as is an Include whose file
 * cannot be read (GPUSHARE_E_IO), each naming the file, the including file
 * and its line; path itself missing: GPUSHARE_E_NOT_FOUND. */
int gpushare_slurm_conf_read(const char *path, char **text, size_t *len);

/* Whether line (n bytes) is an Include line as Slurm reads one: "include"
 * in any case at its start (after white space), white space, then the file
 * name, a word copied into name (cut to fit len). */
bool gpushare_slurm_include_line(const char *line, size_t n, char *name, size_t len);

/* ---- dcgm-exporter's HPC job mapping ---- */

/* dcgm-exporter's --hpc-job-mapping-dir: one file per GPU, named by its
 * index, holding the ids of the jobs that use it, one per line; the exporter
 * labels that GPU's metrics with them. Add (idempotent) or remove job_id in
 * the file of gpu_index: rewritten atomically (a hidden temporary file
 * renamed over it) under an flock() of the directory, so concurrent jobs
 * never lose each other's lines; a file left empty is removed. */
int gpushare_slurm_job_map(const char *dir, unsigned gpu_index, const char *job_id, bool add);
/* The same for the file of any name dcgm-exporter reads: a GPU's NVML index
 * ("2"), or a MIG device's, its parent's NVML index and its GPU instance id
 * ("2.1"); another name is refused (GPUSHARE_E_INVAL). */
int gpushare_slurm_job_map_name(const char *dir, const char *name, const char *job_id, bool add);

/* Remove job_id from every GPU's file in dir (the job's end, whatever GPUs
 * it had). */
int gpushare_slurm_job_unmap_all(const char *dir, const char *job_id);

/* ---- the node's MPS daemons for gres/mps jobs (prolog and epilog) ---- */

/* Where the prolog keeps its daemons and job records: GPUSHARE_SLURM_DIR
 * when set, else this. */
#define GPUSHARE_SLURM_DEFAULT_DIR "/run/gpushare-slurm"

/* The state directory (dir given, else $GPUSHARE_SLURM_DIR, else the default). */
void gpushare_slurm_state_dir(const char *dir, char *out, size_t len);

/* The pipe directory of the prolog's daemon for a GPU and user:
 * <state dir>/mps-<uid>-<GPU UUID>/pipe (whether or not it runs). */
int gpushare_slurm_daemon_pipe(const char *state_dir, uid_t uid, const char *gpu_uuid, char *out, size_t len);

struct gpushare_slurm_hook_opts {
	const char *state_dir;          /* NULL: gpushare_slurm_state_dir(NULL) */
	const char *hpc_job_mapping_dir;/* NULL: none */
};

struct gpushare_slurm_hook_result {
	char job_id[32];
	bool mps;                       /* the job holds gres/mps */
	size_t n_gpus;                  /* its GPUs on this node */
	size_t started, joined;         /* prolog: daemons started / already running */
	size_t stopped, kept;           /* epilog: daemons stopped / still used by other jobs */
	bool already;                   /* prolog: the job was recorded already; epilog: was not */
	char warning[400];              /* what was not done but fails nothing (the job mapping); "" none */
};

/* The prolog: for a job holding gres/mps, make sure one daemon per GPU of
 * the job (and the job's user) runs and answers, and record the job as a
 * user of each. Whole GPUs get nothing. Idempotent. GPUSHARE_E_NOT_FOUND
 * outside Slurm's prolog environment (no SLURM_JOB_ID). */
int gpushare_slurm_prolog(const struct gpushare_slurm_hook_opts *o, struct gpushare_slurm_hook_result *r);

/* The epilog: forget the job; stop each daemon no other recorded job uses
 * (jobs whose records remain are only those whose epilog has not run).
 * Idempotent. */
int gpushare_slurm_epilog(const struct gpushare_slurm_hook_opts *o, struct gpushare_slurm_hook_result *r);

/* ---- a task's environment (`gpushare slurm env`, a TaskProlog) ---- */

/* What a plain CUDA program of the job needs to stay on Slurm's GPU and
 * reach the prolog's daemon. */
struct gpushare_slurm_task_env {
	char visible[GPUSHARE_PATH_MAX]; /* CUDA_VISIBLE_DEVICES to set; "" when Slurm's own stands */
	char pipe_dir[GPUSHARE_PATH_MAX];/* CUDA_MPS_PIPE_DIRECTORY of the prolog's daemon; "" none (no gres/mps) */
	char log_dir[GPUSHARE_PATH_MAX]; /* CUDA_MPS_LOG_DIRECTORY beside it */
	char gpu_uuid[96];               /* the task's GPU under gres/mps */
	const char *source;              /* where the GPUs came from (gpushare_slurm_job_gpus); NULL Slurm's own */
};

/* For this task: the GPUs Slurm gave (gpushare_slurm_job_gpus) and, for a
 * job holding gres/mps, the daemon `gpushare slurm prolog` runs for this
 * user on the task's GPU (with several GPUs, the one at SLURM_LOCALID
 * modulo their count, which becomes the task's CUDA_VISIBLE_DEVICES).
 * GPUSHARE_E_NOT_FOUND outside a Slurm job or when Slurm named no GPU;
 * GPUSHARE_E_MPS_NOT_RUNNING when the prolog's daemon does not run. */
int gpushare_slurm_task_env(const char *state_dir, struct gpushare_slurm_task_env *e);

#ifdef __cplusplus
}
#endif
#endif
