/* One GPU of gpushare_system_query() as a JSON object (gpu_json.c), for the
 * documents built in higher layers (`gpushare info --json`). */
#ifndef GPUSHARE_GPU_JSON_H
#define GPUSHARE_GPU_JSON_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "gpushare/gpu.h"

/* Fill the object o (NULL: a failed add before; returns false) with g;
 * false when out of memory. Figures the driver did not report are null. */
bool gpushare_gpu_json(cJSON *o, const struct gpushare_gpu_info *g);

#endif
