/*
 * Where a rank started by mpirun or srun stands on its node, and which GPU
 * it gets: the pure part of `gpushare exec` (docs/exec.md).
 *
 * Every function reads the environment through a gpushare_getenv_fn, so the
 * rules can be tested with tables of variables, and none prints.
 */
#ifndef GPUSHARE_LAUNCHER_H
#define GPUSHARE_LAUNCHER_H

#include <stdbool.h>
#include <stddef.h>

#include "getenv_fn.h"

enum launcher_kind {
	LAUNCHER_OPENMPI,    /* OMPI_COMM_WORLD_LOCAL_RANK / _LOCAL_SIZE */
	LAUNCHER_MPICH,      /* MPI_LOCALRANKID / MPI_LOCALNRANKS (Hydra) */
	LAUNCHER_PMIX,       /* PMIX_LOCAL_RANK / PMIX_LOCAL_SIZE */
	LAUNCHER_SLURM,      /* SLURM_LOCALID with the step's tasks per node */
};

/* "openmpi", "mpich", "pmix", "slurm". */
const char *gpushare_launcher_kind_name(enum launcher_kind k);

struct launcher_info {
	enum launcher_kind kind;
	long local_rank, local_size;  /* on this node; 0 <= local_rank < local_size */
	long rank, size;              /* in the whole job, -1 when not known */
	/* Names the job (and step) for one daemon per node and job: made of
	 * [A-Za-z0-9._-] only, so it can be part of a file name; "" when the
	 * launcher gives no job id. */
	char job_key[128];
	const char *rank_var, *size_var;  /* the variables read, for messages */
};

/*
 * Find the node-local rank and count. The launchers are tried in the order
 * Open MPI, MPICH/Hydra, PMIx, Slurm: mpirun inside a Slurm allocation
 * leaves the batch step's SLURM_* variables in the ranks' environment, and
 * the MPI launcher's own variables are the ones that describe the ranks.
 *
 * Slurm: SLURM_LOCALID is used only inside a job step (SLURM_STEP_ID set:
 * srun), never in the batch script itself, which is one process. The count
 * is this node's entry of SLURM_STEP_TASKS_PER_NODE (compressed form
 * "4(x2),3", the node picked by SLURM_NODEID), else SLURM_NTASKS_PER_NODE.
 *
 * The job key: Open MPI's OMPI_MCA_orte_ess_jobid (4.x) or
 * OMPI_MCA_ess_base_jobid, else PMIX_NAMESPACE (Open MPI 5, PMIx, srun
 * --mpi=pmix); Slurm's SLURM_JOB_ID.SLURM_STEP_ID; any launcher without its
 * own id falls back to the Slurm one when set.
 *
 * GPUSHARE_E_NOT_FOUND when no launcher's variables are set;
 * GPUSHARE_E_INVAL naming the variables when they are inconsistent.
 */
int gpushare_launcher_detect(gpushare_getenv_fn getenv_fn, void *ctx, struct launcher_info *out);

/* This node's count in a Slurm tasks-per-node list such as "4(x2),3,1":
 * node 0 and 1 have 4, node 2 has 3, node 3 has 1. */
int gpushare_launcher_parse_tasks_per_node(const char *s, long node, long *count);


/* ---- binding ranks to GPUs ---- */

enum gpushare_launcher_bind {
	LAUNCHER_BIND_ROUND_ROBIN,   /* local rank r -> GPU r mod G */
	LAUNCHER_BIND_BLOCK,         /* contiguous groups, sizes differing by at most one */
};

/* "round-robin" or "block". */
int gpushare_launcher_bind_parse(const char *s, enum gpushare_launcher_bind *out);
const char *gpushare_launcher_bind_name(enum gpushare_launcher_bind b);

struct launcher_binding {
	size_t gpu;                  /* position in the selected GPU list */
	size_t gpus_used;            /* GPUs that get at least one rank */
	unsigned ranks_on_gpu;       /* ranks sharing this rank's GPU */
	unsigned max_ranks_per_gpu;  /* the most ranks on any one GPU: more than
	                              * one means NCCL cannot put all ranks of a
	                              * communicator on distinct GPUs */
};

/*
 * Bind local rank r of n to one of g GPUs.
 *  - ranks_per_gpu 0: every GPU is used when n >= g (round-robin: r mod g;
 *    block: the first n mod g GPUs get ceil(n/g) ranks, the rest floor).
 *  - ranks_per_gpu K: every GPU used gets exactly K ranks, so n must be a
 *    multiple of K and n / K <= g; the first n / K GPUs are used (block:
 *    ranks K*i .. K*i+K-1 on GPU i; round-robin: r mod (n / K)).
 * GPUSHARE_E_INVAL with the numbers otherwise.
 */
int gpushare_launcher_bind(enum gpushare_launcher_bind policy, long local_rank, long local_size, size_t n_gpus,
		  unsigned ranks_per_gpu, struct launcher_binding *out);

#endif
