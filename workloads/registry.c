/*
 * wl_ops_find(): the workloads built into this gpushare-worker. spin is
 * always there; the CUDA workloads exist only in builds with CUDA
 * (GPUSHARE_WORKER_CUDA, set by workloads/CMakeLists.txt when it compiles
 * the .cu files), so this is the one place that knows which were built.
 */
#include <string.h>

#include "worker.h"

static const struct wl_ops *const built[] = {
	&wl_spin_ops,
#ifdef GPUSHARE_WORKER_CUDA
	&wl_matmul_ops,
	&wl_tiny_ops,
	&wl_hybrid_ops,
	&wl_transformer_ops,
#endif
};

const struct wl_ops *wl_ops_find(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(built) / sizeof(built[0]); i++) {
		if (strcmp(built[i]->name, name) == 0)
			return built[i];
	}
	return NULL;
}
