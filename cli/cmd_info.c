/*
 * `gpushare info`: what the machine offers for sharing. Driver and CUDA
 * versions; per GPU its memory, compute mode, MIG state and MIG devices,
 * telemetry and compute processes (plain, MPS server, MPS client); and for
 * each MPS pipe directory gpushare knows whether a control daemon is there.
 * A readable report, or with --json one JSON document (docs/cli.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpushare/gpu.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"

static const struct cli_opt info_opts[] = {
	{ .id = OPT_JSON, .long_name = "json", .kind = CLI_FLAG,
	  .help = "print one JSON document instead of the report" },
};

static const struct cli_group info_groups[] = { CLI_GROUP("Options", info_opts, NULL) };

const struct cli_cmd cli_info_cmd = {
	.name = "info",
	.usage = "gpushare info [--json]",
	.about = "Show the NVIDIA driver, each GPU (memory, compute mode, MIG mode and MIG\n"
		 "devices, clocks, power, temperature, compute processes) and the MPS control\n"
		 "daemons at gpushare's private pipe directory, $CUDA_MPS_PIPE_DIRECTORY and\n"
		 "/tmp/nvidia-mps.",
	.groups = info_groups,
	.n_groups = CLI_N(info_groups),
	.notes = (const struct cli_exit_note[]){ { EXIT_USAGE, "unknown option or argument" },
						 { EXIT_NO_DRIVER, "no NVIDIA driver found (libnvidia-ml.so.1 missing or "
								   "unusable)" },
						 { EXIT_GPU, "the driver answered with an error" },
						 { EXIT_IO, "writing the output failed" } },
	.n_notes = 4,
};

/* Where gpushare looks for MPS daemons (gpushare_mps_survey_add_known). */
#define MPS_DIRS_MAX 3

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

int cmd_info(int argc, char **argv)
{
	struct cli_parse p;
	struct gpushare_mps_survey dirs[MPS_DIRS_MAX];
	struct gpushare_system_info sys;
	bool json = false;
	int opt, rc, n_dirs;

	cli_parse_init(&p, &cli_info_cmd, argc, argv);
	while ((opt = cli_parse_next(&p)) > 0) {
		if (opt == OPT_JSON)
			json = true;
	}
	if (opt < 0)
		return p.status;
	if (p.optind < argc)
		return cli_unexpected_argument("info", argv[p.optind]);
	rc = gpushare_system_query(&sys);
	if (rc)
		return cli_fail(rc, NULL);
	n_dirs = 0;
	gpushare_mps_survey_add_known(dirs, &n_dirs, MPS_DIRS_MAX);
	for (int i = 0; i < n_dirs; i++)
		gpushare_mps_survey_look(&dirs[i], &(struct gpushare_mps_survey_opts){ .max_timeout_ms = 3000 });
	if (json) {
		rc = cli_print_json_and_free(gpushare_info_json(&sys, dirs, n_dirs));
	} else {
		print_report(&sys, dirs, n_dirs);
		rc = cli_finish_stdout(EXIT_OK);
	}
	for (int i = 0; i < n_dirs; i++)
		gpushare_mps_survey_release(&dirs[i]);
	gpushare_system_release(&sys);
	return rc;
}
