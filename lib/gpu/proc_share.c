/*
 * NVML's share of a process (gpushare_gpu_process_share, gpushare/gpu.h).
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
