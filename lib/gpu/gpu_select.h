/*
 * Which GPUs a run uses (bench, farm and exec choose them here).
 */
#ifndef GPUSHARE_GPU_SELECT_H
#define GPUSHARE_GPU_SELECT_H

#include <stddef.h>

#include "getenv_fn.h"

/* ---- which GPUs ---- */

struct gpushare_gpu_ref {
	unsigned index;              /* NVML index */
	char uuid[96];               /* "GPU-..." */
};

/*
 * The GPUs to use, from the node's inventory (NVML order), the --gpus value
 * (NULL or "all", or a comma-separated list of NVML indices and UUIDs; a
 * UUID may be shortened to a unique prefix of at least 8 characters) and
 * CUDA_VISIBLE_DEVICES when it is set (indices, taken as NVML indices, or
 * UUIDs, as CUDA accepts them):
 *  - "all": the GPUs CUDA_VISIBLE_DEVICES allows, in its order, else the
 *    whole inventory;
 *  - a list: those GPUs in the order given, each of which must be allowed.
 * Empty items (",,"), duplicates (also the same GPU by index and UUID),
 * unknown GPUs and a CUDA_VISIBLE_DEVICES that allows nothing ("", "-1",
 * "NoDevFiles") are errors. `out` has room for n_inv entries.
 */
int gpushare_gpu_select(const struct gpushare_gpu_ref *inv, size_t n_inv, const char *spec,
			 gpushare_getenv_fn getenv_fn, void *ctx, struct gpushare_gpu_ref *out, size_t *n_out);

#endif
