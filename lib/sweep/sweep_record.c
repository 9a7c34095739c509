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
#include <sys/stat.h>

#include "gpushare/bench.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/sweep.h"
#include "gpushare/internal/sweep.h"

#include "json.h"

/* "peak_search": what a --find-peak run searched for, null otherwise. */
static bool add_peak_search(cJSON *doc, const struct gpushare_bench_config *c)
{
	cJSON *o, *slo;

	if (!c || !c->find_peak)
		return gpushare_json_null(doc, "peak_search");
	return (o = gpushare_json_obj(doc, "peak_search")) != NULL &&
	       (slo = gpushare_json_obj(o, "slo")) != NULL &&
	       gpushare_json_num(slo, "quantile", c->slo_quantile) &&
	       gpushare_json_num(slo, "bound_seconds", (double)c->slo_ns / 1e9) &&
	       gpushare_json_num(o, "first_rate_per_second", c->rate) &&
	       gpushare_json_num(o, "resolution", c->resolution) &&
	       gpushare_json_num(o, "tail_samples", c->tail_samples) &&
	       gpushare_json_num(o, "rate_max_per_second", c->rate_max);
}

int gpushare_sweep_record(const struct gpushare_sweep_cell *cell, const char *shape_label, int repeat,
			  const struct gpushare_bench_report *r, int rc, const char *error,
			  int cuda_driver_version, char **line)
{
	cJSON *doc = cJSON_CreateObject(), *c, *m, *gpu, *cmd, *err, *bench = NULL;
	/* A command has no built-in workload: "command", as in the bench
	 * document; a mix "mix" (its members are in bench.config.mix). */
	const char *workload = !r->config ? "" : r->config->command ? "command" : r->config->n_mix >= 2 ? "mix"
				 : r->config->wl.desc ? r->config->wl.desc->name : "";
	/* A run the bench settled as failed (no request in its window) is
	 * recorded failed with its reason, as the report reads it. */
	const struct gpushare_bench_result *res = r->n_results == 1 ? &r->results[0] : NULL;
	bool no_result = rc == GPUSHARE_OK && res && !r->partial && res->status == GPUSHARE_RESULT_FAILED;
	const char *status = rc != GPUSHARE_OK || !res || no_result ? "failed" : r->partial ? "partial" : "ok";
	char *text = NULL;
	bool ok = doc != NULL;

	*line = NULL;
	ok = ok && gpushare_json_num(doc, "gpushare_sweep_record", GPUSHARE_SWEEP_RECORD_VERSION) &&
	     (c = gpushare_json_obj(doc, "cell")) != NULL && gpushare_json_str(c, "key", cell->key) &&
	     gpushare_json_str(c, "shape", shape_label) && gpushare_json_str(c, "workload", workload) &&
	     gpushare_json_str(c, "strategy", gpushare_strategy_name(cell->strategy)) &&
	     gpushare_json_num(c, "workers", cell->workers) &&
	     gpushare_json_num(c, "batch", (double)cell->batch) &&
	     (cell->rate <= 0 || gpushare_json_num(c, "rate_per_second", cell->rate)) &&
	     (cell->thread_pct <= 0 || gpushare_json_num(c, "thread_percentage", cell->thread_pct)) &&
	     gpushare_json_num(doc, "repeat", repeat) && gpushare_json_str(doc, "status", status);
	if (ok && rc != GPUSHARE_OK) {
		ok = (err = gpushare_json_obj(doc, "error")) != NULL &&
		     gpushare_json_str(err, "code", gpushare_strerror(rc)) &&
		     gpushare_json_str(err, "message", error && *error ? error : gpushare_strerror(rc));
	} else if (ok && no_result) {
		ok = (err = gpushare_json_obj(doc, "error")) != NULL && gpushare_json_str(err, "code", "no result") &&
		     gpushare_json_str(err, "message", res->failure[0] ? res->failure : "the run has no result");
	} else if (ok) {
		ok = gpushare_json_null(doc, "error");
	}
	ok = ok && (m = gpushare_json_obj(doc, "metadata")) != NULL &&
	     gpushare_json_str(m, "gpushare_version", gpushare_version()) &&
	     gpushare_json_str_or_null(m, "date", r->date) && gpushare_json_str_or_null(m, "host", r->host) &&
	     (gpu = gpushare_json_obj(m, "gpu")) != NULL &&
	     gpushare_json_num_if(gpu, "index", r->gpu_index, r->gpu_index >= 0) &&
	     gpushare_json_str_or_null(gpu, "name", r->gpu_name) &&
	     gpushare_json_str_or_null(gpu, "uuid", r->gpu_uuid) &&
	     gpushare_json_str_or_null(m, "driver_version", r->driver_version) &&
	     gpushare_json_num_if(m, "cuda_driver_version", cuda_driver_version, cuda_driver_version > 0) &&
	     (cmd = gpushare_json_arr(m, "command_line")) != NULL;
	for (int i = 0; ok && r->config && i < r->config->argc; i++)
		ok = gpushare_json_str(cmd, NULL, r->config->argv[i]);
	ok = ok && add_peak_search(doc, r->config);
	if (ok) {
		if (gpushare_bench_report_json(r, &text)) {
			ok = false;
		} else {
			bench = cJSON_Parse(text);
			free(text);
			ok = gpushare_json_add(doc, "bench", bench);
		}
	}
	*line = gpushare_json_finish(doc, ok, false);
	if (!*line)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory while building a results record");
	return GPUSHARE_OK;
}

void gpushare_sweep_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

/* argv from one line's metadata.command_line; NULL when it has none. */
static char **line_argv(const char *line, size_t len)
{
	cJSON *o = cJSON_ParseWithLength(line, len), *meta, *cl, *e;
	char **argv = NULL;
	size_t n = 0;

	meta = o ? cJSON_GetObjectItemCaseSensitive(o, "metadata") : NULL;
	cl = meta ? cJSON_GetObjectItemCaseSensitive(meta, "command_line") : NULL;
	if (cJSON_IsArray(cl) && cJSON_GetArraySize(cl) > 0 && (argv = calloc((size_t)cJSON_GetArraySize(cl) + 1, sizeof(*argv)))) {
		cJSON_ArrayForEach(e, cl) {
			if (!cJSON_IsString(e) || !(argv[n++] = strdup(e->valuestring))) {
				gpushare_sweep_argv_free(argv);
				argv = NULL;
				break;
			}
		}
	}
	cJSON_Delete(o);
	return argv;
}

int gpushare_sweep_recorded_argv_buffer(const char *data, size_t len, const char *name, char ***argv)
{
	bool any = false;

	*argv = NULL;
	for (size_t start = 0; start < len && !*argv;) {
		const char *nl = memchr(data + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - data) : len;

		for (size_t i = start; i < end && !any; i++)
			any = data[i] != ' ' && data[i] != '\t' && data[i] != '\r';
		*argv = line_argv(data + start, end - start);
		start = end + 1;
	}
	if (*argv)
		return GPUSHARE_OK;
	/* Lines, but none names its command line (null, empty, not strings):
	 * what grid they are of cannot be told. */
	if (any)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' holds lines but no run with its command line", name);
	return gpushare_fail(GPUSHARE_E_NOT_FOUND, "'%s' holds no run", name);
}

int gpushare_sweep_recorded_argv(const char *results_path, char ***argv)
{
	char *data = NULL;
	size_t len = 0;
	struct stat st;
	int rc;

	*argv = NULL;
	/* Never read through a link planted in the results directory: refused
	 * as the append refuses it, before anything is read. */
	if (lstat(results_path, &st) == 0 && S_ISLNK(st.st_mode))
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is a symbolic link; refusing to write through it", results_path);
	rc = gpushare_read_file(results_path, (size_t)1 << 30, &data, &len);
	if (rc)
		return rc;
	rc = gpushare_sweep_recorded_argv_buffer(data, len, results_path, argv);
	free(data);
	return rc;
}
