/* One GPU as JSON (gpu_json.h): unknown figures are null (json.h). */
#include "gpu_json.h"
#include "json.h"

/* 0/1, or null when GPUSHARE_UNKNOWN. */
static bool tristate(cJSON *o, const char *k, int v)
{
	return v == GPUSHARE_UNKNOWN ? gpushare_json_null(o, k) : gpushare_json_bool(o, k, v != 0);
}

bool gpushare_gpu_json(cJSON *o, const struct gpushare_gpu_info *g)
{
	cJSON *migs, *procs;
	char reasons[256];
	bool ok = gpushare_json_int(o, "index", g->index) && gpushare_json_str_or_null(o, "name", g->name) &&
		  gpushare_json_str_or_null(o, "uuid", g->uuid) &&
		  gpushare_json_str_or_null(o, "pci_bus_id", g->pci_bus_id) &&
		  gpushare_json_int_known(o, "sm_count", g->sm_count) &&
		  gpushare_json_u64_known(o, "mem_total_bytes", g->mem_total_bytes) &&
		  gpushare_json_u64_known(o, "mem_used_bytes", g->mem_used_bytes) &&
		  gpushare_json_u64_known(o, "mem_free_bytes", g->mem_free_bytes) &&
		  gpushare_json_str_or_null(o, "compute_mode", g->compute_mode == GPUSHARE_UNKNOWN
									  ? NULL
									  : gpushare_compute_mode_name(g->compute_mode)) &&
		  tristate(o, "mig_enabled", g->mig_current) && tristate(o, "mig_pending_enabled", g->mig_pending) &&
		  tristate(o, "persistence_mode", g->persistence) &&
		  gpushare_json_int_known(o, "utilization_gpu_percent", g->util_gpu_pct) &&
		  gpushare_json_int_known(o, "utilization_mem_percent", g->util_mem_pct) &&
		  gpushare_json_int_known(o, "clock_sm_mhz", g->clock_sm_mhz) &&
		  gpushare_json_int_known(o, "clock_sm_max_mhz", g->clock_sm_max_mhz) &&
		  gpushare_json_int_known(o, "clock_mem_mhz", g->clock_mem_mhz) &&
		  gpushare_json_num_if(o, "power_watts", g->power_mw / 1000.0, g->power_mw != GPUSHARE_UNKNOWN) &&
		  gpushare_json_num_if(o, "power_limit_watts", g->power_limit_mw / 1000.0,
				       g->power_limit_mw != GPUSHARE_UNKNOWN) &&
		  gpushare_json_int_known(o, "temperature_celsius", g->temperature_c) &&
		  gpushare_json_str_or_null(o, "throttle_reasons",
					    g->throttle_reasons == GPUSHARE_UNKNOWN_U64
						    ? NULL
						    : gpushare_throttle_reasons_str(g->throttle_reasons, reasons,
										    sizeof(reasons))) &&
		  (migs = gpushare_json_arr(o, "mig_devices")) != NULL &&
		  (procs = gpushare_json_arr(o, "processes")) != NULL;

	for (size_t i = 0; ok && i < g->n_migs; i++) {
		const struct gpushare_mig_info *m = &g->migs[i];
		cJSON *mo = gpushare_json_obj(migs, NULL);

		ok = gpushare_json_int(mo, "index", m->index) && gpushare_json_str_or_null(mo, "uuid", m->uuid) &&
		     gpushare_json_str_or_null(mo, "name", m->name) && gpushare_json_str_or_null(mo, "profile", m->profile) &&
		     gpushare_json_int_known(mo, "gpu_instance_id", m->gpu_instance_id) &&
		     gpushare_json_int_known(mo, "compute_instance_id", m->compute_instance_id) &&
		     gpushare_json_int_known(mo, "sm_count", m->sm_count) &&
		     gpushare_json_u64_known(mo, "mem_total_bytes", m->mem_total_bytes) &&
		     gpushare_json_u64_known(mo, "mem_used_bytes", m->mem_used_bytes);
	}
	for (size_t i = 0; ok && i < g->n_procs; i++) {
		const struct gpushare_proc_info *p = &g->procs[i];
		cJSON *po = gpushare_json_obj(procs, NULL);

		ok = gpushare_json_int(po, "pid", p->pid) && gpushare_json_str_or_null(po, "name", p->name) &&
		     gpushare_json_str_or_null(po, "user", p->user) &&
		     gpushare_json_str_or_null(po, "command", p->command) &&
		     gpushare_json_str_or_null(po, "kind", gpushare_proc_kind_name(p->kind)) &&
		     gpushare_json_u64_known(po, "mem_used_bytes", p->mem_used_bytes) &&
		     gpushare_json_int_known(po, "gpu_instance_id", p->gpu_instance_id) &&
		     gpushare_json_int_known(po, "sm_percent", p->sm_percent);
	}
	return ok;
}
