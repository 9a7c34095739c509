/*
 * One line of a sweep's results file (JSON Lines, docs/sweep.md): the cell,
 * the repeat, how the run ended, the sweep's metadata, the settings of a
 * peak search (so --resume can check them, and a failed search still says
 * which bound it searched for), and the whole bench
 * JSON document of the run (docs/bench-schema.json), so nothing measured is
 * lost and the report can be recomputed from the file alone.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/sweep.h"

static bool str_or_null(cJSON *o, const char *k, const char *s)
{
	return s && *s ? cJSON_AddStringToObject(o, k, s) != NULL : cJSON_AddNullToObject(o, k) != NULL;
}

/* "peak_search": what a --find-peak run searched for, null otherwise. */
static bool add_peak_search(cJSON *doc, const struct gpushare_bench_config *c)
{
	cJSON *o, *slo;

	if (!c || !c->find_peak)
		return cJSON_AddNullToObject(doc, "peak_search") != NULL;
	return (o = cJSON_AddObjectToObject(doc, "peak_search")) != NULL &&
	       (slo = cJSON_AddObjectToObject(o, "slo")) != NULL &&
	       cJSON_AddNumberToObject(slo, "quantile", c->slo_quantile) &&
	       cJSON_AddNumberToObject(slo, "bound_seconds", (double)c->slo_ns / 1e9) &&
	       cJSON_AddNumberToObject(o, "first_rate_per_second", c->rate) &&
	       cJSON_AddNumberToObject(o, "resolution", c->resolution) &&
	       cJSON_AddNumberToObject(o, "tail_samples", c->tail_samples) &&
	       cJSON_AddNumberToObject(o, "rate_max_per_second", c->rate_max);
}

int gpushare_sweep_record(const struct gpushare_sweep_cell *cell, const char *shape_label, int repeat,
			  const struct gpushare_bench_report *r, int rc, const char *error,
			  int cuda_driver_version, char **line)
{
	cJSON *doc = cJSON_CreateObject(), *c, *m, *gpu, *cmd, *err, *bench = NULL;
	/* A command has no built-in workload: "command", as in the bench document. */
	const char *workload = !r->config ? "" : r->config->command ? "command"
				 : r->config->wl.desc ? r->config->wl.desc->name : "";
	const char *status = rc != GPUSHARE_OK || r->n_results != 1 ? "failed" : r->partial ? "partial" : "ok";
	char *text = NULL;
	bool ok = doc != NULL;

	*line = NULL;
	ok = ok && cJSON_AddNumberToObject(doc, "gpushare_sweep_record", GPUSHARE_SWEEP_RECORD_VERSION) &&
	     (c = cJSON_AddObjectToObject(doc, "cell")) != NULL && cJSON_AddStringToObject(c, "key", cell->key) &&
	     cJSON_AddStringToObject(c, "shape", shape_label) && cJSON_AddStringToObject(c, "workload", workload) &&
	     cJSON_AddStringToObject(c, "strategy", gpushare_strategy_name(cell->strategy)) &&
	     cJSON_AddNumberToObject(c, "workers", cell->workers) &&
	     cJSON_AddNumberToObject(c, "batch", (double)cell->batch) &&
	     (cell->rate <= 0 || cJSON_AddNumberToObject(c, "rate_per_second", cell->rate)) &&
	     cJSON_AddNumberToObject(doc, "repeat", repeat) && cJSON_AddStringToObject(doc, "status", status);
	if (ok && rc != GPUSHARE_OK) {
		ok = (err = cJSON_AddObjectToObject(doc, "error")) != NULL &&
		     cJSON_AddStringToObject(err, "code", gpushare_strerror(rc)) &&
		     cJSON_AddStringToObject(err, "message", error && *error ? error : gpushare_strerror(rc));
	} else if (ok) {
		ok = cJSON_AddNullToObject(doc, "error") != NULL;
	}
	ok = ok && (m = cJSON_AddObjectToObject(doc, "metadata")) != NULL &&
	     cJSON_AddStringToObject(m, "gpushare_version", gpushare_version()) &&
	     str_or_null(m, "date", r->date) && str_or_null(m, "host", r->host) &&
	     (gpu = cJSON_AddObjectToObject(m, "gpu")) != NULL &&
	     (r->gpu_index >= 0 ? cJSON_AddNumberToObject(gpu, "index", r->gpu_index) != NULL
				: cJSON_AddNullToObject(gpu, "index") != NULL) &&
	     str_or_null(gpu, "name", r->gpu_name) && str_or_null(gpu, "uuid", r->gpu_uuid) &&
	     str_or_null(m, "driver_version", r->driver_version) &&
	     (cuda_driver_version > 0 ? cJSON_AddNumberToObject(m, "cuda_driver_version", cuda_driver_version) != NULL
				      : cJSON_AddNullToObject(m, "cuda_driver_version") != NULL) &&
	     (cmd = cJSON_AddArrayToObject(m, "command_line")) != NULL;
	for (int i = 0; ok && r->config && i < r->config->argc; i++) {
		cJSON *a = cJSON_CreateString(r->config->argv[i]);

		ok = a && cJSON_AddItemToArray(cmd, a);
	}
	ok = ok && add_peak_search(doc, r->config);
	if (ok) {
		if (gpushare_bench_report_json(r, &text)) {
			ok = false;
		} else {
			bench = cJSON_Parse(text);
			free(text);
			ok = bench && cJSON_AddItemToObject(doc, "bench", bench);
			if (!ok)
				cJSON_Delete(bench);
		}
	}
	if (ok)
		*line = gpushare_utf8_fix(cJSON_PrintUnformatted(doc));
	cJSON_Delete(doc);
	if (!*line)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory while building a results record");
	return GPUSHARE_OK;
}
