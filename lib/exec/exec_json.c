/* The JSON line of `gpushare exec --dry-run --json` (docs/exec.md), in the
 * one dialect of json.h: unknown ranks are null, strings valid UTF-8. */
#include <stdio.h>
#include <string.h>

#include "gpushare/exec.h"
#include "gpushare/strategy.h"

#include "json.h"

static bool env_json(cJSON *o, char *const *env)
{
	cJSON *set = gpushare_json_obj(o, "set"), *unset = gpushare_json_arr(o, "unset");
	bool ok = set && unset;

	for (char *const *e = env; ok && e && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (eq) {
			char name[256];

			snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
			ok = gpushare_json_str(set, name, eq + 1);
		} else {
			ok = gpushare_json_str(unset, NULL, *e);
		}
	}
	return ok;
}

char *gpushare_exec_dry_run_json(const struct gpushare_exec *x, enum gpushare_strategy strategy)
{
	cJSON *o = cJSON_CreateObject(), *gpu, *d, *sl;
	bool ok = gpushare_json_str(o, "launcher", x->launcher) && gpushare_json_int_known(o, "rank", x->rank) &&
		  gpushare_json_int_known(o, "size", x->size) && gpushare_json_int_known(o, "local_rank", x->local_rank) &&
		  gpushare_json_int_known(o, "local_size", x->local_size) && gpushare_json_str(o, "node", x->node) &&
		  gpushare_json_str(o, "job_key", x->job_key) &&
		  gpushare_json_str(o, "strategy", gpushare_strategy_name(strategy)) &&
		  (gpu = gpushare_json_obj(o, "gpu")) != NULL && gpushare_json_int(gpu, "index", x->gpu_index) &&
		  gpushare_json_str(gpu, "uuid", x->gpu_uuid) && gpushare_json_int(o, "usable_gpus", (long long)x->n_gpus) &&
		  gpushare_json_int(o, "ranks_on_gpu", x->ranks_on_gpu) &&
		  gpushare_json_int(o, "max_ranks_per_gpu", x->max_ranks_per_gpu);

	if (ok && x->uses_mps)
		ok = (d = gpushare_json_obj(o, "daemon")) != NULL && gpushare_json_str(d, "pipe_dir", x->pipe_dir) &&
		     gpushare_json_bool(d, "running", x->daemon_pid > 0) &&
		     gpushare_json_str(d, "source", x->daemon_source ? x->daemon_source : "job") &&
		     gpushare_json_num_if(d, "pid", x->daemon_pid, x->daemon_pid > 0);
	else if (ok)
		ok = gpushare_json_null(o, "daemon");
	if (ok && x->slurm_job_id[0])
		ok = (sl = gpushare_json_obj(o, "slurm")) != NULL && gpushare_json_str(sl, "job_id", x->slurm_job_id) &&
		     gpushare_json_num_if(sl, "mps_percentage", x->slurm_mps_percentage, x->slurm_mps_percentage > 0) &&
		     gpushare_json_num_if(sl, "shards_on_node", x->slurm_shards, x->slurm_shards > 0) &&
		     gpushare_json_str(sl, "honoured", x->honoured);
	else if (ok)
		ok = gpushare_json_null(o, "slurm");
	ok = ok && gpushare_json_num_if(o, "thread_percentage", x->thread_percentage, x->thread_percentage > 0);
	ok = ok && env_json(o, x->env);
	return gpushare_json_finish(o, ok, false);
}
