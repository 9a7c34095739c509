/*
 * `gpushare info`: what the machine offers for sharing. Driver and CUDA
 * versions; per GPU its memory, compute mode, MIG state and MIG devices,
 * telemetry and compute processes (plain, MPS server, MPS client); and for
 * each MPS pipe directory gpushare knows whether a control daemon is there.
 * A readable report, or with --json one JSON document (docs/cli.md).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "gpushare/gpu.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"

static const char usage_text[] =
	"usage: gpushare info [--json]\n"
	"\n"
	"Show the NVIDIA driver, each GPU (memory, compute mode, MIG mode and MIG\n"
	"devices, clocks, power, temperature, compute processes) and the MPS control\n"
	"daemons at gpushare's private pipe directory, $CUDA_MPS_PIPE_DIRECTORY and\n"
	"/tmp/nvidia-mps.\n"
	"\n"
	"Options:\n"
	"  --json      print one JSON document instead of the report\n"
	"  -h, --help  show this help\n"
	"\n"
	"Exit statuses:\n"
	"  0  success\n"
	"  1  unexpected failure (out of memory, system call)\n"
	"  2  unknown option or argument\n"
	"  3  no NVIDIA driver found (libnvidia-ml.so.1 missing or unusable)\n"
	"  7  the driver answered with an error\n"
	"  11 writing the output failed\n";

/* Where gpushare looks for MPS daemons (gpushare_mps_survey_add_known). */
#define MPS_DIRS_MAX 3

static const char *mps_state_name(enum gpushare_mps_state s)
{
	switch (s) {
	case GPUSHARE_MPS_ABSENT: return "absent";
	case GPUSHARE_MPS_STALE: return "stale";
	case GPUSHARE_MPS_RUNNING: return "running";
	}
	return "unknown";
}

/* ---- the readable report ---- */

static const char *fmt_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = 0;

	if (b == GPUSHARE_UNKNOWN_U64)
		return "unknown";
	while (v >= 1024.0 && u < 4) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

static const char *fmt_int(int v, const char *unit, char *buf, size_t len)
{
	if (v == GPUSHARE_UNKNOWN)
		return "unknown";
	snprintf(buf, len, "%d%s", v, unit);
	return buf;
}

static const char *on_off(int v, const char *on, const char *off)
{
	return v == GPUSHARE_UNKNOWN ? "unknown" : v ? on : off;
}

static void print_cuda_version(int v)
{
	if (v == GPUSHARE_UNKNOWN)
		printf("unknown");
	else
		printf("%d.%d", v / 1000, (v % 1000) / 10);
}

static void print_gpu(const struct gpushare_gpu_info *g)
{
	char a[32], b[32], c[32];

	printf("\nGPU %u: %s\n", g->index, g->name);
	printf("  UUID           %s\n", g->uuid);
	printf("  PCI bus id     %s\n", *g->pci_bus_id ? g->pci_bus_id : "unknown");
	printf("  SMs            %s\n", fmt_int(g->sm_count, "", a, sizeof(a)));
	printf("  memory         %s total, %s used, %s free\n", fmt_bytes(g->mem_total_bytes, a, sizeof(a)),
	       fmt_bytes(g->mem_used_bytes, b, sizeof(b)), fmt_bytes(g->mem_free_bytes, c, sizeof(c)));
	printf("  compute mode   %s\n", gpushare_compute_mode_name(g->compute_mode));
	printf("  MIG            %s", on_off(g->mig_current, "enabled", "disabled"));
	if (g->mig_pending != GPUSHARE_UNKNOWN && g->mig_pending != g->mig_current)
		printf(" (%s after reset)", on_off(g->mig_pending, "enabled", "disabled"));
	printf("\n  persistence    %s\n", on_off(g->persistence, "on", "off"));
	printf("  utilization    GPU %s, memory %s\n", fmt_int(g->util_gpu_pct, "%", a, sizeof(a)),
	       fmt_int(g->util_mem_pct, "%", b, sizeof(b)));
	printf("  SM clock       %s", fmt_int(g->clock_sm_mhz, " MHz", a, sizeof(a)));
	printf(" (max %s)\n", fmt_int(g->clock_sm_max_mhz, " MHz", a, sizeof(a)));
	printf("  memory clock   %s\n", fmt_int(g->clock_mem_mhz, " MHz", a, sizeof(a)));
	if (g->power_mw == GPUSHARE_UNKNOWN)
		printf("  power          unknown\n");
	else
		printf("  power          %.1f W\n", g->power_mw / 1000.0);
	printf("  temperature    %s\n", fmt_int(g->temperature_c, " C", a, sizeof(a)));
	if (g->n_migs > 0) {
		printf("  MIG devices:\n");
		printf("    %-3s %-10s %-5s %-5s %-6s %-21s %s\n", "IDX", "PROFILE", "GI", "CI", "SMs", "MEMORY (used/total)", "UUID");
		for (size_t i = 0; i < g->n_migs; i++) {
			const struct gpushare_mig_info *m = &g->migs[i];
			char gi[16], ci[16], sm[16], mem[80];

			snprintf(mem, sizeof(mem), "%s / %s", fmt_bytes(m->mem_used_bytes, a, sizeof(a)),
				 fmt_bytes(m->mem_total_bytes, b, sizeof(b)));
			printf("    %-3u %-10s %-5s %-5s %-6s %-21s %s\n", m->index, *m->profile ? m->profile : "?",
			       fmt_int(m->gpu_instance_id, "", gi, sizeof(gi)),
			       fmt_int(m->compute_instance_id, "", ci, sizeof(ci)),
			       fmt_int(m->sm_count, "", sm, sizeof(sm)), mem, m->uuid);
		}
	}
	if (g->n_procs == 0) {
		printf("  processes      none\n");
		return;
	}
	printf("  processes:\n");
	printf("    %-8s %-11s %-10s %s\n", "PID", "KIND", "MEMORY", "NAME");
	for (size_t i = 0; i < g->n_procs; i++) {
		const struct gpushare_proc_info *p = &g->procs[i];

		printf("    %-8d %-11s %-10s %s\n", (int)p->pid, gpushare_proc_kind_name(p->kind),
		       fmt_bytes(p->mem_used_bytes, a, sizeof(a)), *p->name ? p->name : "?");
	}
}

static void print_report(const struct gpushare_system_info *sys, const struct gpushare_mps_survey *dirs, int n_dirs)
{
	printf("driver %s, CUDA ", *sys->driver_version ? sys->driver_version : "unknown");
	print_cuda_version(sys->cuda_driver_version);
	printf(", NVML %s\n", *sys->nvml_version ? sys->nvml_version : "unknown");
	printf("%zu GPU%s\n", sys->n_gpus, sys->n_gpus == 1 ? "" : "s");
	if (*sys->cuda_error)
		printf("SM counts unknown: %s\n", sys->cuda_error);
	for (size_t i = 0; i < sys->n_gpus; i++)
		print_gpu(&sys->gpus[i]);
	printf("\nMPS control daemons:\n");
	for (int i = 0; i < n_dirs; i++) {
		const struct gpushare_mps_survey *d = &dirs[i];

		printf("  %s (", d->pipe_dir);
		for (int s = 0; s < d->n_sources; s++)
			printf("%s%s", s ? ", " : "", d->sources[s]);
		printf("): ");
		if (d->init_rc)
			printf("unknown: %s\n", d->error);
		else if (d->state == GPUSHARE_MPS_ABSENT)
			printf("none\n");
		else if (d->state == GPUSHARE_MPS_STALE)
			printf("stale pid file (pid %d gone)\n", (int)d->pid);
		else if (d->answers == 1)
			printf("running, pid %d, answers\n", (int)d->pid);
		else if (d->answers == 0)
			printf("running, pid %d, does not answer\n", (int)d->pid);
		else
			printf("running, pid %d, not probed: %s\n", (int)d->pid, d->error);
	}
}

/* ---- JSON ---- */

/* cJSON's adders return NULL when out of memory; each helper folds that
 * into *ok so the document is either complete or not printed. */
static void j_num(cJSON *o, const char *k, double v, bool *ok)
{
	*ok &= cJSON_AddNumberToObject(o, k, v) != NULL;
}

static void j_null(cJSON *o, const char *k, bool *ok)
{
	*ok &= cJSON_AddNullToObject(o, k) != NULL;
}

static void j_int(cJSON *o, const char *k, int v, bool *ok)
{
	if (v == GPUSHARE_UNKNOWN)
		j_null(o, k, ok);
	else
		j_num(o, k, v, ok);
}

static void j_u64(cJSON *o, const char *k, uint64_t v, bool *ok)
{
	if (v == GPUSHARE_UNKNOWN_U64)
		j_null(o, k, ok);
	else
		j_num(o, k, (double)v, ok);
}

static void j_bool(cJSON *o, const char *k, int v, bool *ok)
{
	if (v == GPUSHARE_UNKNOWN)
		j_null(o, k, ok);
	else
		*ok &= cJSON_AddBoolToObject(o, k, v != 0) != NULL;
}

/* A string, or null when empty. */
static void j_str(cJSON *o, const char *k, const char *s, bool *ok)
{
	if (!s || !*s)
		j_null(o, k, ok);
	else
		*ok &= cJSON_AddStringToObject(o, k, s) != NULL;
}

static cJSON *j_add_obj(cJSON *array, bool *ok)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddItemToArray(array, o)) {
		cJSON_Delete(o);
		*ok = false;
		return NULL;
	}
	return o;
}

static void json_gpu(cJSON *o, const struct gpushare_gpu_info *g, bool *ok)
{
	cJSON *migs, *procs;

	j_num(o, "index", g->index, ok);
	j_str(o, "name", g->name, ok);
	j_str(o, "uuid", g->uuid, ok);
	j_str(o, "pci_bus_id", g->pci_bus_id, ok);
	j_int(o, "sm_count", g->sm_count, ok);
	j_u64(o, "mem_total_bytes", g->mem_total_bytes, ok);
	j_u64(o, "mem_used_bytes", g->mem_used_bytes, ok);
	j_u64(o, "mem_free_bytes", g->mem_free_bytes, ok);
	j_str(o, "compute_mode", g->compute_mode == GPUSHARE_UNKNOWN ? NULL : gpushare_compute_mode_name(g->compute_mode), ok);
	j_bool(o, "mig_enabled", g->mig_current, ok);
	j_bool(o, "mig_pending_enabled", g->mig_pending, ok);
	j_bool(o, "persistence_mode", g->persistence, ok);
	j_int(o, "utilization_gpu_percent", g->util_gpu_pct, ok);
	j_int(o, "utilization_mem_percent", g->util_mem_pct, ok);
	j_int(o, "clock_sm_mhz", g->clock_sm_mhz, ok);
	j_int(o, "clock_sm_max_mhz", g->clock_sm_max_mhz, ok);
	j_int(o, "clock_mem_mhz", g->clock_mem_mhz, ok);
	if (g->power_mw == GPUSHARE_UNKNOWN)
		j_null(o, "power_watts", ok);
	else
		j_num(o, "power_watts", g->power_mw / 1000.0, ok);
	j_int(o, "temperature_celsius", g->temperature_c, ok);
	migs = cJSON_AddArrayToObject(o, "mig_devices");
	procs = cJSON_AddArrayToObject(o, "processes");
	if (!migs || !procs) {
		*ok = false;
		return;
	}
	for (size_t i = 0; i < g->n_migs && *ok; i++) {
		const struct gpushare_mig_info *m = &g->migs[i];
		cJSON *mo = j_add_obj(migs, ok);

		if (!mo)
			return;
		j_num(mo, "index", m->index, ok);
		j_str(mo, "uuid", m->uuid, ok);
		j_str(mo, "name", m->name, ok);
		j_str(mo, "profile", m->profile, ok);
		j_int(mo, "gpu_instance_id", m->gpu_instance_id, ok);
		j_int(mo, "compute_instance_id", m->compute_instance_id, ok);
		j_int(mo, "sm_count", m->sm_count, ok);
		j_u64(mo, "mem_total_bytes", m->mem_total_bytes, ok);
		j_u64(mo, "mem_used_bytes", m->mem_used_bytes, ok);
	}
	for (size_t i = 0; i < g->n_procs && *ok; i++) {
		const struct gpushare_proc_info *p = &g->procs[i];
		cJSON *po = j_add_obj(procs, ok);

		if (!po)
			return;
		j_num(po, "pid", p->pid, ok);
		j_str(po, "name", p->name, ok);
		j_str(po, "kind", gpushare_proc_kind_name(p->kind), ok);
		j_u64(po, "mem_used_bytes", p->mem_used_bytes, ok);
		j_int(po, "gpu_instance_id", p->gpu_instance_id, ok);
	}
}

static void json_mps(cJSON *arr, const struct gpushare_mps_survey *dirs, int n_dirs, bool *ok)
{
	for (int i = 0; i < n_dirs && *ok; i++) {
		const struct gpushare_mps_survey *d = &dirs[i];
		cJSON *o = j_add_obj(arr, ok), *src;

		if (!o)
			return;
		j_str(o, "pipe_dir", d->pipe_dir, ok);
		src = cJSON_AddArrayToObject(o, "sources");
		for (int s = 0; src && s < d->n_sources; s++) {
			cJSON *str = cJSON_CreateString(d->sources[s]);

			if (!str || !cJSON_AddItemToArray(src, str)) {
				cJSON_Delete(str);
				*ok = false;
			}
		}
		*ok &= src != NULL;
		j_str(o, "state", d->init_rc ? NULL : mps_state_name(d->state), ok);
		if (d->pid > 0 && !d->init_rc)
			j_num(o, "pid", d->pid, ok);
		else
			j_null(o, "pid", ok);
		j_bool(o, "answers", d->answers, ok);
		j_str(o, "error", d->error, ok);
	}
}

static char *json_report(const struct gpushare_system_info *sys, const struct gpushare_mps_survey *dirs, int n_dirs)
{
	cJSON *root = cJSON_CreateObject(), *gpus, *mps;
	bool ok = root != NULL;
	char *out = NULL;

	if (!ok)
		return NULL;
	j_str(root, "gpushare_version", gpushare_version(), &ok);
	j_str(root, "driver_version", sys->driver_version, &ok);
	j_int(root, "cuda_driver_version", sys->cuda_driver_version, &ok);
	j_str(root, "nvml_version", sys->nvml_version, &ok);
	j_str(root, "sm_count_error", sys->cuda_error, &ok);
	gpus = cJSON_AddArrayToObject(root, "gpus");
	mps = cJSON_AddArrayToObject(root, "mps");
	ok &= gpus && mps;
	for (size_t i = 0; i < sys->n_gpus && ok; i++) {
		cJSON *g = j_add_obj(gpus, &ok);

		if (g)
			json_gpu(g, &sys->gpus[i], &ok);
	}
	if (ok)
		json_mps(mps, dirs, n_dirs, &ok);
	if (ok)
		out = gpushare_utf8_fix(cJSON_Print(root));
	cJSON_Delete(root);
	return out;
}

int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gpushare_mps_survey dirs[MPS_DIRS_MAX];
	struct gpushare_system_info sys;
	bool json = false;
	int opt, rc, n_dirs;

	optind = 0; /* glibc: start afresh */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return cli_finish_stdout(EXIT_OK);
		default:
			return cli_usage_error("info", opt, optopt, argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_unexpected_argument("info", argv[optind]);
	rc = gpushare_system_query(&sys);
	if (rc)
		return cli_fail(rc, NULL);
	n_dirs = 0;
	gpushare_mps_survey_add_known(dirs, &n_dirs, MPS_DIRS_MAX);
	for (int i = 0; i < n_dirs; i++)
		gpushare_mps_survey_look(&dirs[i], &(struct gpushare_mps_survey_opts){ .max_timeout_ms = 3000 });
	if (json) {
		rc = cli_print_json_and_free(json_report(&sys, dirs, n_dirs));
	} else {
		print_report(&sys, dirs, n_dirs);
		rc = cli_finish_stdout(EXIT_OK);
	}
	gpushare_system_release(&sys);
	return rc;
}
