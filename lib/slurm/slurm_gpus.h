/*
 * The environment a GPU choice reads, with the GPUs Slurm gave the job
 * standing in for a CUDA_VISIBLE_DEVICES Slurm left unset
 * (gpushare_slurm_job_gpus, include/gpushare/slurm.h): farm and exec pass
 * gpushare_slurm_getenv to gpushare_gpu_select, so that a job holding a
 * share of a GPU never takes every GPU of the node.
 */
#ifndef GPUSHARE_SLURM_GPUS_H
#define GPUSHARE_SLURM_GPUS_H

#include "gpu_select.h"

struct gpushare_slurm_env {
	char visible[4096];             /* the job's GPUs; "" when Slurm's own variables stand */
	const char *source;             /* where they came from (see gpushare_slurm_job_gpus); NULL none */
};

/* Fill e for this process (GPUSHARE_E_NOT_FOUND, said, for a share whose
 * GPU nothing names). */
int gpushare_slurm_env_read(struct gpushare_slurm_env *e);

/* A gpushare_getenv_fn over this process's environment, ctx a struct
 * gpushare_slurm_env: CUDA_VISIBLE_DEVICES is e->visible when that is set. */
const char *gpushare_slurm_getenv(void *ctx, const char *name);

#endif
