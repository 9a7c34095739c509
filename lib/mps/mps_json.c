/*
 * The JSON documents of `gpushare mps start|stop|status|set --json` and of
 * `gpushare info --json` (docs/cli.md), built here so library users get the
 * same documents as the command line, in the one dialect of json.h.
 */
#include <stdio.h>
#include <string.h>

#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"

#include "gpu_json.h"
#include "json.h"

const char *gpushare_mps_state_name(enum gpushare_mps_state s)
{
	switch (s) {
	case GPUSHARE_MPS_ABSENT: return "absent";
	case GPUSHARE_MPS_STALE: return "stale";
	case GPUSHARE_MPS_RUNNING: return "running";
	}
	return "unknown";
}

char *gpushare_mps_start_json(const struct gpushare_mps *m, const struct gpushare_mps_start_info *info)
{
	cJSON *j = cJSON_CreateObject();
	bool ok = gpushare_json_int(j, "pid", info->pid) &&
		  gpushare_json_bool(j, "already_running", info->already_running) &&
		  gpushare_json_bool(j, "cleaned_stale", info->cleaned_stale) &&
		  gpushare_json_str(j, "pipe_dir", m->pipe_dir) && gpushare_json_str(j, "log_dir", m->log_dir);

	return gpushare_json_finish(j, ok, true);
}

char *gpushare_mps_stop_json(const struct gpushare_mps *m, const struct gpushare_mps_stop_info *info)
{
	cJSON *j = cJSON_CreateObject();
	bool ok = gpushare_json_bool(j, "was_running", info->was_running) &&
		  (!info->was_running || gpushare_json_int(j, "pid", info->pid)) &&
		  gpushare_json_int(j, "clients_attached", (long long)info->clients_attached) &&
		  gpushare_json_int(j, "clients_terminated", (long long)info->clients_terminated) &&
		  gpushare_json_int(j, "clients_signalled", (long long)info->clients_signalled) &&
		  gpushare_json_str(j, "pipe_dir", m->pipe_dir);

	return gpushare_json_finish(j, ok, true);
}

/* {"0": "4G", "1": null, ...}: the pinned memory limit per device. */
static bool limits_json(cJSON *o, const char *k, const char lim[][16], int n)
{
	cJSON *l = gpushare_json_obj(o, k);
	bool ok = l != NULL;

	for (int d = 0; ok && d < n; d++) {
		char key[16];

		snprintf(key, sizeof(key), "%d", d);
		ok = gpushare_json_str_or_null(l, key, lim[d]);
	}
	return ok;
}

static bool server_json(cJSON *servers, const struct gpushare_mps_server *s)
{
	cJSON *o = gpushare_json_obj(servers, NULL), *cl;
	bool ok = gpushare_json_int(o, "pid", s->pid) && gpushare_json_num_if(o, "uid", (double)s->uid, s->uid >= 0) &&
		  gpushare_json_str(o, "status", s->status) &&
		  gpushare_json_num_if(o, "thread_percentage", s->thread_percentage, s->thread_percentage >= 0) &&
		  limits_json(o, "pinned_mem_limit", s->mem_limit, s->n_mem_limit) &&
		  (cl = gpushare_json_arr(o, "clients")) != NULL;

	for (size_t k = 0; ok && k < s->n_clients; k++) {
		cJSON *c = gpushare_json_obj(cl, NULL);

		ok = gpushare_json_int(c, "pid", s->clients[k].pid) && gpushare_json_str(c, "command", s->clients[k].command);
	}
	return ok;
}

char *gpushare_mps_status_json(const struct gpushare_mps *m, enum gpushare_mps_state state,
			       const struct gpushare_mps_status *st, const char *log)
{
	cJSON *j = cJSON_CreateObject(), *servers;
	bool ok = gpushare_json_str(j, "pipe_dir", m->pipe_dir) && gpushare_json_str_or_null(j, "log_dir", m->log_dir) &&
		  gpushare_json_str(j, "state", gpushare_mps_state_name(state)) &&
		  gpushare_json_bool(j, "running", st != NULL);

	if (ok && st) {
		ok = gpushare_json_int(j, "daemon_pid", st->daemon_pid) &&
		     gpushare_json_num_if(j, "default_thread_percentage", st->default_thread_percentage,
					  st->default_thread_percentage >= 0) &&
		     limits_json(j, "default_pinned_mem_limit", st->default_mem_limit, st->n_default_mem_limit) &&
		     gpushare_json_num_if(j, "default_client_priority", st->default_priority, st->default_priority >= 0) &&
		     (servers = gpushare_json_arr(j, "servers")) != NULL;
		for (size_t i = 0; ok && i < st->n_servers; i++)
			ok = server_json(servers, &st->servers[i]);
	}
	if (ok && log)
		ok = gpushare_json_str(j, "log", log);
	return gpushare_json_finish(j, ok, true);
}

char *gpushare_mps_set_json(pid_t server_pid)
{
	cJSON *j = cJSON_CreateObject();
	bool ok = gpushare_json_bool(j, "ok", true) && (server_pid <= 0 || gpushare_json_int(j, "server_pid", server_pid));

	return gpushare_json_finish(j, ok, true);
}

/* ---- gpushare info ---- */

static bool dir_json(cJSON *arr, const struct gpushare_mps_survey *d)
{
	cJSON *o = gpushare_json_obj(arr, NULL), *src;
	bool ok = gpushare_json_str_or_null(o, "pipe_dir", d->pipe_dir) && (src = gpushare_json_arr(o, "sources")) != NULL;

	for (int s = 0; ok && s < d->n_sources; s++)
		ok = gpushare_json_str(src, NULL, d->sources[s]);
	return ok && gpushare_json_str_or_null(o, "state", d->init_rc ? NULL : gpushare_mps_state_name(d->state)) &&
	       gpushare_json_num_if(o, "pid", d->pid, d->pid > 0 && !d->init_rc) &&
	       (d->answers == GPUSHARE_UNKNOWN ? gpushare_json_null(o, "answers")
					       : gpushare_json_bool(o, "answers", d->answers != 0)) &&
	       gpushare_json_str_or_null(o, "error", d->error);
}

char *gpushare_info_json(const struct gpushare_system_info *sys, const struct gpushare_mps_survey *dirs,
			 int n_dirs)
{
	cJSON *root = cJSON_CreateObject(), *gpus, *mps;
	bool ok = gpushare_json_str_or_null(root, "gpushare_version", gpushare_version()) &&
		  gpushare_json_str_or_null(root, "driver_version", sys->driver_version) &&
		  gpushare_json_int_known(root, "cuda_driver_version", sys->cuda_driver_version) &&
		  gpushare_json_str_or_null(root, "nvml_version", sys->nvml_version) &&
		  gpushare_json_str_or_null(root, "sm_count_error", sys->cuda_error) &&
		  (gpus = gpushare_json_arr(root, "gpus")) != NULL && (mps = gpushare_json_arr(root, "mps")) != NULL;

	for (size_t i = 0; ok && i < sys->n_gpus; i++)
		ok = gpushare_gpu_json(gpushare_json_obj(gpus, NULL), &sys->gpus[i]);
	for (int i = 0; ok && i < n_dirs; i++)
		ok = dir_json(mps, &dirs[i]);
	return gpushare_json_finish(root, ok, true);
}
