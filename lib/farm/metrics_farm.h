/*
 * The live Prometheus view of a farm (`gpushare farm --metrics-listen`,
 * docs/metrics.md): jobs queued, running, done and failed, in total and per
 * GPU, the slots per GPU, and the GPU families of the system collectors.
 * The farm's thread sets the numbers; the HTTP server's threads read them
 * under a lock.
 */
#ifndef GPUSHARE_METRICS_FARM_H
#define GPUSHARE_METRICS_FARM_H

#include <stddef.h>
#include <stdint.h>

struct gpushare_metrics_farm;

/* Serve on listen ("[ADDR:]PORT") for a farm on n_gpus GPUs. */
int gpushare_metrics_farm_start(const char *listen, size_t n_gpus, struct gpushare_metrics_farm **out);
/* A view without a server, for tests. */
int gpushare_metrics_farm_new(size_t n_gpus, struct gpushare_metrics_farm **out);
/* Name GPU i (its uuid, "" unknown, and NVML index). */
void gpushare_metrics_farm_gpu_name(struct gpushare_metrics_farm *m, size_t i, const char *uuid, int index);
void gpushare_metrics_farm_gpu(struct gpushare_metrics_farm *m, size_t i, unsigned running, uint64_t done,
			       uint64_t failed);
void gpushare_metrics_farm_totals(struct gpushare_metrics_farm *m, uint64_t queued, unsigned running, uint64_t done,
				  uint64_t failed, unsigned slots);
/* The exposition text of the farm's families (caller frees). */
int gpushare_metrics_farm_text(struct gpushare_metrics_farm *m, char **text, size_t *len);
/* Stop serving and free; NULL is fine. */
void gpushare_metrics_farm_stop(struct gpushare_metrics_farm *m);

#endif
