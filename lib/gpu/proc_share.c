/*
 * What NVML says of one process on one GPU, for the per-client figures the
 * accounting library cannot give (gpushare/gpu.h): its share of the GPU
 * without MPS, its device memory.
 */
#include <stddef.h>
#include <stdint.h>

#include "gpushare/gpu.h"

double gpushare_gpu_process_share(const struct gpushare_system_info *sys, long gpu, int64_t pid)
{
	for (size_t i = 0; sys && gpu >= 0 && i < sys->n_gpus; i++) {
		const struct gpushare_gpu_info *g = &sys->gpus[i];
		double share = -1;

		if ((long)g->index != gpu)
			continue;
		for (size_t k = 0; k < g->n_procs; k++) {
			if (g->procs[k].kind == GPUSHARE_PROC_MPS_SERVER)
				return -1;
			if ((int64_t)g->procs[k].pid == pid && g->procs[k].sm_percent >= 0)
				share = g->procs[k].sm_percent / 100.0;
		}
		return share;
	}
	return -1;
}

uint64_t gpushare_gpu_process_memory(const struct gpushare_system_info *sys, long gpu, int64_t pid)
{
	for (size_t i = 0; sys && gpu >= 0 && i < sys->n_gpus; i++) {
		const struct gpushare_gpu_info *g = &sys->gpus[i];

		if ((long)g->index != gpu)
			continue;
		for (size_t k = 0; k < g->n_procs; k++)
			if ((int64_t)g->procs[k].pid == pid)
				return g->procs[k].mem_used_bytes;
		return GPUSHARE_UNKNOWN_U64;
	}
	return GPUSHARE_UNKNOWN_U64;
}
