/*
 * `gpushare info`: what the machine offers for sharing. Driver and CUDA
 * versions; per GPU its memory, compute mode, MIG state and MIG devices,
 * telemetry and compute processes (plain, MPS server, MPS client); and for
 * each MPS pipe directory gpushare knows whether a control daemon is there.
 * A readable report, or with --json one JSON document (docs/cli.md).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gpushare/account.h"
#include "gpushare/gpu.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/buf.h"
#include "gpushare/utf8.h"

#define QUERY_FIELDS                                                                                   \
	"timestamp index name uuid pci.bus_id compute_mode utilization.gpu utilization.memory memory.used " \
	"memory.total memory.free power.draw power.limit clocks.sm clocks.mem clocks.max.sm temperature.gpu "  \
	"throttle_reasons"

/* Where info's options go. */
struct info_args {
	bool json, watch, clients;
	long count;
	const char *query, *format;
};

#define AT(field) CLI_AT(struct info_args, field)

static const struct cli_opt info_opts[] = {
	{ .id = OPT_JSON, .long_name = "json", .kind = CLI_FLAG,
	  .help = "print one JSON document instead of the report",
	  .to = CLI_TO_TRUE, AT(json) },
	{ .id = OPT_WATCH, .long_name = "watch", .kind = CLI_FLAG,
	  .help = "keep showing each GPU's telemetry every INTERVAL (the operand after the options, a "
		  "duration; default 1s): on a terminal a view redrawn in place (the GPUs, then their "
		  "processes with user, memory and command), otherwise one line per GPU "
		  "and interval, as nvidia-smi dmon prints; Ctrl-C stops it",
	  .to = CLI_TO_TRUE, AT(watch) },
	{ .id = OPT_CLIENTS, .long_name = "clients", .kind = CLI_FLAG,
	  .help = "show the accounted clients instead (accounting.md in the documentation): per process and GPU the GPU "
		  "(its index, else its UUID's short form, else the process's device ordinal marked *), its user, "
		  "owner, promised and attained share, memory, slowdown and the held-under-promise flag; with "
		  "--json one document (one a line with --watch)",
	  .to = CLI_TO_TRUE, AT(clients) },
	{ .id = OPT_COUNT, .long_name = "count", .kind = CLI_INT, .value_name = "N", .min = 1, .max = 1000000000,
	  .help = "with --watch: stop after N intervals", .def = "until stopped",
	  .to = CLI_TO_LONG, AT(count) },
	{ .id = OPT_QUERY, .long_name = "query", .kind = CLI_LIST, .value_name = "FIELDS", .values = QUERY_FIELDS,
	  .help = "print only these fields of each GPU, one CSV line per GPU (nvidia-smi's names; "
		  "\"temperature\" and \"clocks_event_reasons\" are accepted too); with --watch, every interval",
	  .to = CLI_TO_STR, AT(query) },
	{ .id = OPT_FORMAT, .long_name = "format", .kind = CLI_LIST, .value_name = "FORMAT",
	  .values = "csv noheader nounits",
	  .help = "the format of --query: csv, with noheader (no header line) and nounits (bare numbers) "
		  "added as in csv,noheader,nounits", .def = "csv",
	  .to = CLI_TO_STR, AT(format) },
};

static const struct cli_group info_groups[] = { CLI_GROUP("Options", info_opts, NULL) };

const struct cli_cmd cli_info_cmd = {
	.name = "info",
	.usage = "gpushare info [--json]\n"
		 "gpushare info --watch [--count N] [INTERVAL]\n"
		 "gpushare info --clients [--json] [--watch [--count N] [INTERVAL]]\n"
		 "gpushare info --query FIELDS [--format csv[,noheader][,nounits]] [--watch [--count N] [INTERVAL]]",
	.about = "Show the NVIDIA driver, each GPU (memory, compute mode, MIG mode and MIG\n"
		 "devices, clocks, power and power limit, temperature, throttle reasons,\n"
		 "compute processes), the MPS control daemons at gpushare's private pipe\n"
		 "directory, $CUDA_MPS_PIPE_DIRECTORY and /tmp/nvidia-mps, and the private\n"
		 "daemons of gpushare's own bench, sweep, farm and exec runs with the process\n"
		 "that owns each.",
	.groups = info_groups,
	.n_groups = CLI_N(info_groups),
	.epilog = "Examples:\n"
		  "  gpushare info --watch                 redraw every second until Ctrl-C\n"
		  "  gpushare info --watch 500ms --count 20 > log.txt\n"
		  "  gpushare info --clients --watch 2s     the accounted clients, every 2 s\n"
		  "  gpushare info --query index,utilization.gpu,memory.used,power.draw,power.limit --format csv\n"
		  "  gpushare info --query index,clocks.sm,throttle_reasons --watch 2s",
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

/* What a process runs: its command line, else its name, else "?". */
/* s as a terminal may show it (the one sanitiser: another user's command
 * line, a user or directory name may hold escape sequences), cut to len. */
static const char *term(const char *s, char *buf, size_t len)
{
	struct gpushare_buf b = { 0 };

	gpushare_utf8_term(&b, s);
	snprintf(buf, len, "%s", b.s && !b.failed ? b.s : "?");
	gpushare_buf_release(&b);
	return buf;
}

static const char *proc_command(const struct gpushare_proc_info *p, char *buf, size_t len)
{
	return term(*p->command ? p->command : *p->name ? p->name : "?", buf, len);
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
		printf("  power          unknown");
	else
		printf("  power          %.1f W", g->power_mw / 1000.0);
	if (g->power_limit_mw != GPUSHARE_UNKNOWN)
		printf(" (limit %.0f W)", g->power_limit_mw / 1000.0);
	printf("\n  temperature    %s\n", fmt_int(g->temperature_c, " C", a, sizeof(a)));
	{
		char r[256];

		printf("  throttling     %s\n", gpushare_throttle_reasons_str(g->throttle_reasons, r, sizeof(r)));
	}
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
	printf("    %-8s %-11s %-10s %-10s %s\n", "PID", "KIND", "USER", "MEMORY", "COMMAND");
	for (size_t i = 0; i < g->n_procs; i++) {
		const struct gpushare_proc_info *p = &g->procs[i];
		char cmd[1024], user[128];

		printf("    %-8d %-11s %-10s %-10s %s\n", (int)p->pid, gpushare_proc_kind_name(p->kind),
		       term(*p->user ? p->user : "?", user, sizeof(user)), fmt_bytes(p->mem_used_bytes, a, sizeof(a)),
		       proc_command(p, cmd, sizeof(cmd)));
	}
}

static void print_private(const struct gpushare_mps_private *priv, size_t n)
{
	printf("\ngpushare's private MPS daemons: %s\n", n ? "" : "none");
	for (size_t i = 0; i < n; i++) {
		const struct gpushare_mps_private *p = &priv[i];
		char t[1024];

		printf("  %-5s daemon pid %d, %s\n", p->kind, (int)p->daemon_pid, term(p->pipe_dir, t, sizeof(t)));
		if (p->owner_alive)
			printf("        owner pid %d: %s\n", (int)p->owner_pid,
			       term(*p->owner_command ? p->owner_command : "?", t, sizeof(t)));
		else if (p->owner_pid > 0)
			printf("        owner pid %d gone: left behind (the next bench, sweep or farm stops it)\n",
			       (int)p->owner_pid);
		else
			printf("        owner unknown\n");
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

/* ---- --query: nvidia-smi's CSV ---- */

struct field {
	const char *name, *unit;
};

static const struct field fields[] = {
	{ "timestamp", NULL }, { "index", NULL }, { "name", NULL }, { "uuid", NULL }, { "pci.bus_id", NULL },
	{ "compute_mode", NULL }, { "utilization.gpu", "%" }, { "utilization.memory", "%" },
	{ "memory.used", "MiB" }, { "memory.total", "MiB" }, { "memory.free", "MiB" }, { "power.draw", "W" },
	{ "power.limit", "W" }, { "clocks.sm", "MHz" }, { "clocks.mem", "MHz" }, { "clocks.max.sm", "MHz" },
	{ "temperature.gpu", "C" }, { "throttle_reasons", NULL },
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))
#define MAX_QUERY 64

struct query {
	int f[MAX_QUERY];
	size_t n;
	bool header, units;
};

static int field_index(const char *name, size_t len)
{
	if (len == 11 && !strncmp(name, "temperature", len))
		return 16;
	if (len == 27 && !strncmp(name, "clocks_event_reasons.active", len))
		return 17;
	if (len == 20 && !strncmp(name, "clocks_event_reasons", len))
		return 17;
	for (size_t i = 0; i < N_FIELDS; i++) {
		if (strlen(fields[i].name) == len && !strncmp(fields[i].name, name, len))
			return (int)i;
	}
	return -1;
}

static int parse_query(const char *list, struct query *q)
{
	const char *p = list;

	q->n = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		int f = field_index(p, len);

		if (f < 0)
			return cli_error(EXIT_USAGE, "info: unknown --query field '%.*s' (one of: %s)", (int)len, p,
					 "timestamp, index, name, uuid, pci.bus_id, compute_mode, utilization.gpu, "
					 "utilization.memory, memory.used, memory.total, memory.free, power.draw, "
					 "power.limit, clocks.sm, clocks.mem, clocks.max.sm, temperature.gpu, "
					 "throttle_reasons");
		if (q->n == MAX_QUERY)
			return cli_error(EXIT_USAGE, "info: more than %d --query fields", MAX_QUERY);
		q->f[q->n++] = f;
		p += len;
		if (*p == ',')
			p++;
	}
	if (q->n == 0)
		return cli_error(EXIT_USAGE, "info: --query names no field");
	return EXIT_OK;
}

static int parse_format(const char *list, struct query *q)
{
	const char *p = list;
	bool csv = false;

	q->header = q->units = true;
	while (*p) {
		size_t len = strcspn(p, ",");

		if (len == 3 && !strncmp(p, "csv", 3))
			csv = true;
		else if (len == 8 && !strncmp(p, "noheader", 8))
			q->header = false;
		else if (len == 7 && !strncmp(p, "nounits", 7))
			q->units = false;
		else
			return cli_error(EXIT_USAGE, "info: unknown --format word '%.*s' (csv, noheader, nounits)",
					 (int)len, p);
		p += len;
		if (*p == ',')
			p++;
	}
	if (!csv)
		return cli_error(EXIT_USAGE, "info: --format must include csv (csv[,noheader][,nounits])");
	return EXIT_OK;
}

static void csv_text(const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s == '\n' ? ' ' : *s);
	}
	putchar('"');
}

static void csv_int(int v, const char *unit)
{
	if (v == GPUSHARE_UNKNOWN)
		fputs("[N/A]", stdout);
	else
		printf("%d%s%s", v, unit ? " " : "", unit ? unit : "");
}

static void csv_mib(uint64_t b, const char *unit)
{
	if (b == GPUSHARE_UNKNOWN_U64)
		fputs("[N/A]", stdout);
	else
		printf("%" PRIu64 "%s%s", b / (1024 * 1024), unit ? " " : "", unit ? unit : "");
}

static void csv_watts(int mw, const char *unit)
{
	if (mw == GPUSHARE_UNKNOWN)
		fputs("[N/A]", stdout);
	else
		printf("%.2f%s%s", mw / 1000.0, unit ? " " : "", unit ? unit : "");
}

/* The local time to the millisecond (nvidia-smi's "2026/11/28
 * 13:04:05.250"), with the date too when `date`: a watch at 100ms has one
 * stamp per line, not ten alike. */
static void wall_time(char *buf, size_t len, bool date)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || !localtime_r(&ts.tv_sec, &tm) ||
	    !(n = strftime(buf, len, date ? "%Y/%m/%d %H:%M:%S" : "%H:%M:%S", &tm))) {
		snprintf(buf, len, "?");
		return;
	}
	snprintf(buf + n, len - n, ".%03ld", ts.tv_nsec / 1000000L);
}

static void print_query_header(const struct query *q)
{
	for (size_t i = 0; i < q->n; i++) {
		const struct field *f = &fields[q->f[i]];

		printf("%s%s", i ? ", " : "", f->name);
		if (q->units && f->unit)
			printf(" [%s]", f->unit);
	}
	putchar('\n');
}

static void print_query_rows(const struct query *q, const struct gpushare_system_info *sys)
{
	char stamp[64], r[256];

	wall_time(stamp, sizeof(stamp), true);
	for (size_t g = 0; g < sys->n_gpus; g++) {
		const struct gpushare_gpu_info *d = &sys->gpus[g];

		for (size_t i = 0; i < q->n; i++) {
			const char *u = q->units ? fields[q->f[i]].unit : NULL;

			if (i)
				fputs(", ", stdout);
			switch (q->f[i]) {
			case 0: fputs(stamp, stdout); break;
			case 1: printf("%u", d->index); break;
			case 2: csv_text(d->name); break;
			case 3: csv_text(d->uuid); break;
			case 4: csv_text(*d->pci_bus_id ? d->pci_bus_id : "[N/A]"); break;
			case 5: csv_text(gpushare_compute_mode_name(d->compute_mode)); break;
			case 6: csv_int(d->util_gpu_pct, u); break;
			case 7: csv_int(d->util_mem_pct, u); break;
			case 8: csv_mib(d->mem_used_bytes, u); break;
			case 9: csv_mib(d->mem_total_bytes, u); break;
			case 10: csv_mib(d->mem_free_bytes, u); break;
			case 11: csv_watts(d->power_mw, u); break;
			case 12: csv_watts(d->power_limit_mw, u); break;
			case 13: csv_int(d->clock_sm_mhz, u); break;
			case 14: csv_int(d->clock_mem_mhz, u); break;
			case 15: csv_int(d->clock_sm_max_mhz, u); break;
			case 16: csv_int(d->temperature_c, u); break;
			default:
				if (d->throttle_reasons == GPUSHARE_UNKNOWN_U64)
					fputs("[N/A]", stdout);
				else
					csv_text(gpushare_throttle_reasons_str(d->throttle_reasons, r, sizeof(r)));
				break;
			}
		}
		putchar('\n');
	}
}

/* ---- the accounted clients (docs/accounting.md) ---- */

#define CLIENTS_MAX 1024
#define CLIENTS_STALE_S 60.0
#define HELD_TOLERANCE 0.05

struct clients {
	struct gpushare_account_record r[CLIENTS_MAX];
	long index[CLIENTS_MAX]; /* the NVML index of its GPU, -1 unknown */
	long gpu[CLIENTS_MAX];   /* its GPU's key for the flag */
	int held[CLIENTS_MAX];
	double att[CLIENTS_MAX]; /* the attained share: NVML's where it can attribute, else the record's */
	bool from_nvml[CLIENTS_MAX];
	uint64_t mem[CLIENTS_MAX]; /* the record's memory, else NVML's; GPUSHARE_UNKNOWN_U64 unknown */
	size_t n;
	int nvml;                /* NVML: 0 not opened yet, 1 open, -1 not there */
};

/* The NVML index of each client's GPU, where its record names the GPU by
 * UUID and NVML knows it (a MIG instance's UUID is not an index's); -1
 * elsewhere. NVML is opened the first time a record names a GPU: without
 * one, or without a driver, the records alone are shown. */
static void clients_index(struct clients *c)
{
	for (size_t i = 0; i < c->n; i++) {
		const char *uuid = c->r[i].gpu_uuid;
		unsigned idx;
		size_t k;

		c->index[i] = -1;
		if (strncmp(uuid, "GPU-", 4) != 0)
			continue;
		for (k = 0; k < i && strcmp(c->r[k].gpu_uuid, uuid) != 0; k++)
			;
		if (k < i) {
			c->index[i] = c->index[k]; /* a GPU asked about already */
			continue;
		}
		if (c->nvml == 0) {
			c->nvml = gpushare_nvml_open() == GPUSHARE_OK ? 1 : -1;
			if (c->nvml < 0)
				gpushare_clear_error();
		}
		if (c->nvml > 0 && gpushare_gpu_find(uuid, &idx) == GPUSHARE_OK)
			c->index[i] = (long)idx;
		else if (c->nvml > 0)
			gpushare_clear_error();
	}
}

/* Every record the user may see, each with its flag. Clients share a GPU
 * when their records name the same one (by UUID, mapped to its NVML index
 * where NVML knows it); a record naming none counts by its device ordinal,
 * which is right on a node of one GPU only (docs/accounting.md). */
static void clients_read(struct clients *c)
{
	struct gpushare_system_info sys;
	bool have_sys = false;

	c->n = gpushare_account_collect(c->r, CLIENTS_MAX, CLIENTS_STALE_S);
	clients_index(c);
	/* NVML's per-process share where it can attribute one (no MPS server on
	 * the GPU): asked only when a client's GPU is known to NVML */
	for (size_t i = 0; i < c->n && !have_sys; i++)
		if (c->index[i] >= 0 && c->nvml > 0) {
			have_sys = gpushare_system_query_nvml(&sys) == GPUSHARE_OK;
			if (!have_sys)
				gpushare_clear_error();
		}
	for (size_t i = 0; i < c->n; i++) {
		c->gpu[i] = c->index[i];
		c->att[i] = have_sys ? gpushare_gpu_process_share(&sys, c->index[i], c->r[i].pid) : -1;
		c->mem[i] = c->r[i].memory_known ? c->r[i].memory_bytes
			  : have_sys ? gpushare_gpu_process_memory(&sys, c->index[i], c->r[i].pid) : GPUSHARE_UNKNOWN_U64;
		c->from_nvml[i] = c->att[i] >= 0;
		if (!c->from_nvml[i])
			c->att[i] = gpushare_account_share(&c->r[i]);
	}
	if (have_sys)
		gpushare_system_release(&sys);
	gpushare_account_gpu_keys(c->r, c->n, c->gpu);
	gpushare_account_held(c->r, c->gpu, c->att, c->n, HELD_TOLERANCE, c->held);
}

/* The GPU column: the NVML index, else the UUID's short form (its kind and
 * first 8 hex digits, "GPU-5f0c1e2a", longer where two GPUs of the table
 * begin alike), else the device ordinal marked '*'. */
static const char *client_gpu(const struct clients *c, size_t i, char *buf, size_t len)
{
	const struct gpushare_account_record *r = &c->r[i];
	size_t n = 12;

	if (c->index[i] >= 0) {
		snprintf(buf, len, "%ld", c->index[i]);
		return buf;
	}
	if (!r->gpu_uuid[0]) {
		snprintf(buf, len, "%u*", (unsigned)r->device);
		return buf;
	}
	for (size_t k = 0; k < c->n; k++) {
		const char *a = r->gpu_uuid, *b = c->r[k].gpu_uuid;
		size_t same = 0;
		if (!b[0] || strcmp(a, b) == 0)
			continue;
		while (a[same] && a[same] == b[same])
			same++;
		if (same + 1 > n)
			n = same + 1;
	}
	snprintf(buf, len, "%.*s", (int)n, r->gpu_uuid);
	return buf;
}

static void client_user(const struct gpushare_account_record *r, char *buf, size_t len)
{
	struct passwd pw, *found = NULL;
	char pwbuf[1024], name[GPUSHARE_ACCOUNT_LABEL_MAX];

	name[0] = '\0';
	if (getpwuid_r((uid_t)r->uid, &pw, pwbuf, sizeof(pwbuf), &found) == 0 && found)
		gpushare_account_label(name, pw.pw_name); /* safe characters only, or none */
	if (name[0])
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "%lld", (long long)r->uid);
}

/* Who owns it, in short: "slurm:JOB.STEP k8s:NS/POD/CONTAINER farm:N rank:N". */
static void client_owner(const struct gpushare_account_owner *o, char *buf, size_t len)
{
	buf[0] = '\0';
	if (o->slurm_job[0])
		gpushare_str_catf(buf, len, "slurm:%s%s%s", o->slurm_job, o->slurm_step[0] ? "." : "", o->slurm_step);
	if (o->k8s_pod[0])
		gpushare_str_catf(buf, len, "%sk8s:%s%s%s%s%s", buf[0] ? " " : "", o->k8s_namespace, o->k8s_namespace[0] ? "/" : "",
				  o->k8s_pod, o->k8s_container[0] ? "/" : "", o->k8s_container);
	if (o->farm_job[0])
		gpushare_str_catf(buf, len, "%sfarm:%s", buf[0] ? " " : "", o->farm_job);
	if (o->rank[0])
		gpushare_str_catf(buf, len, "%srank:%s", buf[0] ? " " : "", o->rank);
	if (!buf[0])
		snprintf(buf, len, "-");
}

static const char *pct_or_dash(double v, char *buf, size_t len)
{
	if (v < 0)
		return "-";
	snprintf(buf, len, "%.1f%%", v * 100);
	return buf;
}

/* The table, nvtop's process list's way. */
static void print_clients(const struct clients *c)
{
	bool ordinal = false;

	printf("%-12s %-8s %-10s %-28s %8s %8s %9s %8s  %s\n", "GPU", "PID", "USER", "OWNER", "PROMISED", "ATTAINED",
	       "MEM MiB", "SLOWDOWN", "FLAG");
	if (c->n == 0)
		printf("(no accounted client: processes load libgpushare-account.so; accounting.md in the documentation)\n");
	for (size_t i = 0; i < c->n; i++) {
		const struct gpushare_account_record *r = &c->r[i];
		char user[64], owner[256], prom[16], att[16], slow[16] = "-", mem[24] = "-", gpu[GPUSHARE_ACCOUNT_UUID_MAX];
		double sd = gpushare_account_slowdown(r);

		ordinal |= !r->gpu_uuid[0];
		client_user(r, user, sizeof(user));
		client_owner(&r->owner, owner, sizeof(owner));
		if (sd > 0)
			snprintf(slow, sizeof(slow), "%.2fx", sd);
		if (c->mem[i] != GPUSHARE_UNKNOWN_U64)
			snprintf(mem, sizeof(mem), "%" PRIu64, c->mem[i] / (1024 * 1024));
		printf("%-12s %-8lld %-10.10s %-28.28s %8s %8s %9s %8s  %s\n", client_gpu(c, i, gpu, sizeof(gpu)),
		       (long long)r->pid, user, owner, pct_or_dash(r->promised, prom, sizeof(prom)),
		       pct_or_dash(c->att[i], att, sizeof(att)), mem, slow,
		       c->held[i] == 1 ? "HELD" : "");
	}
	if (ordinal)
		printf("(*: the CUDA device ordinal in the process; its record names no GPU, so clients are placed by "
		       "ordinal: accounting.md in the documentation)\n");
}

static void json_num(const char *key, double v, bool known)
{
	if (known)
		printf(",\"%s\":%.6g", key, v);
	else
		printf(",\"%s\":null", key);
}

/* One JSON document (a line): {"time", "clients": [...]}. Every string is a
 * record's label (safe characters only) or a number. */
static void print_clients_json(const struct clients *c)
{
	char stamp[64];

	wall_time(stamp, sizeof(stamp), true);
	printf("{\"time\":\"%s\",\"clients\":[", stamp);
	for (size_t i = 0; i < c->n; i++) {
		const struct gpushare_account_record *r = &c->r[i];
		const struct gpushare_account_owner *o = &r->owner;
		char user[64];
		double sd = gpushare_account_slowdown(r), share = c->att[i];

		client_user(r, user, sizeof(user));
		printf("%s{\"pid\":%lld,\"device\":%u", i ? "," : "", (long long)r->pid, (unsigned)r->device);
		if (r->gpu_uuid[0])
			printf(",\"gpu_uuid\":\"%s\"", r->gpu_uuid);
		else
			printf(",\"gpu_uuid\":null");
		json_num("gpu", (double)c->index[i], c->index[i] >= 0);
		printf(",\"user\":\"%s\",\"uid\":%lld", user, (long long)r->uid);
		printf(",\"owner\":{\"slurm_job_id\":\"%s\",\"slurm_step\":\"%s\",\"k8s_namespace\":\"%s\",\"k8s_pod\":\"%s\","
		       "\"k8s_container\":\"%s\",\"farm_job\":\"%s\",\"rank\":\"%s\"}",
		       o->slurm_job, o->slurm_step, o->k8s_namespace, o->k8s_pod, o->k8s_container, o->farm_job, o->rank);
		json_num("promised", r->promised, r->promised >= 0);
		json_num("attained", share, share >= 0);
		printf(",\"attained_source\":%s", share < 0 ? "null" : c->from_nvml[i] ? "\"nvml\"" : "\"library\"");
		if (c->mem[i] != GPUSHARE_UNKNOWN_U64)
			printf(",\"memory_bytes\":%" PRIu64, c->mem[i]);
		else
			printf(",\"memory_bytes\":null");
		printf(",\"timing\":\"%s\"", r->timing == GPUSHARE_ACCOUNT_TIMING_LAUNCHES ? "launches" : "kernels");
		json_num("slowdown", sd, sd > 0);
		printf(",\"kernels\":%" PRIu64 ",\"held_under_promise\":%s}", r->kernels,
		       c->held[i] < 0 ? "null" : c->held[i] ? "true" : "false");
	}
	printf("]}\n");
}

/* ---- --watch ---- */

static const char *dash_int(int v, char *buf, size_t len)
{
	if (v == GPUSHARE_UNKNOWN)
		return "-";
	snprintf(buf, len, "%d", v);
	return buf;
}

static const char *dash_watts(int mw, char *buf, size_t len)
{
	if (mw == GPUSHARE_UNKNOWN)
		return "-";
	snprintf(buf, len, "%.0f", mw / 1000.0);
	return buf;
}

static const char *dash_mib(uint64_t b, char *buf, size_t len)
{
	if (b == GPUSHARE_UNKNOWN_U64)
		return "-";
	snprintf(buf, len, "%" PRIu64, b / (1024 * 1024));
	return buf;
}

/* One line per GPU, nvidia-smi dmon's way: a header once, then a time stamp
 * on every line so that a log can be read alone. */
static void print_dmon(const struct gpushare_system_info *sys, bool header)
{
	char stamp[32], a[32], b[32], c[32], d[32], e[32], f[32], r[256];

	if (header) {
		printf("#%-12s %3s %5s %9s %6s %6s %6s %5s %s\n", "time", "gpu", "sm%", "mem_mib", "pwr_w", "lim_w",
		       "sm_mhz", "tmp_c", "throttle");
	}
	wall_time(stamp, sizeof(stamp), false);
	for (size_t i = 0; i < sys->n_gpus; i++) {
		const struct gpushare_gpu_info *g = &sys->gpus[i];

		printf(" %-12s %3u %5s %9s %6s %6s %6s %5s %s\n", stamp, g->index,
		       dash_int(g->util_gpu_pct, a, sizeof(a)), dash_mib(g->mem_used_bytes, b, sizeof(b)),
		       dash_watts(g->power_mw, c, sizeof(c)), dash_watts(g->power_limit_mw, d, sizeof(d)),
		       dash_int(g->clock_sm_mhz, e, sizeof(e)), dash_int(g->temperature_c, f, sizeof(f)),
		       gpushare_throttle_reasons_str(g->throttle_reasons, r, sizeof(r)));
	}
}

/* The terminal view, redrawn in place: a table of the GPUs, then gpushare's
 * private daemons. */
static void print_view(const struct gpushare_system_info *sys, const struct gpushare_mps_private *priv, size_t n_priv,
		       const struct clients *clients, const char *interval, unsigned long round)
{
	char stamp[32], mem[80], a[32], b[32], c[32], d[32], e[32], r[256];

	wall_time(stamp, sizeof(stamp), false);
	fputs("\033[H\033[2J", stdout);
	printf("gpushare info --watch %s   %s   (#%lu, Ctrl-C stops)\n", interval, stamp, round);
	printf("driver %s, %zu GPU%s\n\n", *sys->driver_version ? sys->driver_version : "unknown", sys->n_gpus,
	       sys->n_gpus == 1 ? "" : "s");
	printf("%-3s %-22s %5s %-19s %-13s %7s %5s %5s %s\n", "GPU", "NAME", "UTIL", "MEMORY used/total", "POWER/LIMIT",
	       "SM MHz", "TEMP", "PROCS", "THROTTLE");
	for (size_t i = 0; i < sys->n_gpus; i++) {
		const struct gpushare_gpu_info *g = &sys->gpus[i];
		char util[16], pw[80];

		snprintf(mem, sizeof(mem), "%s/%s MiB", dash_mib(g->mem_used_bytes, a, sizeof(a)),
			 dash_mib(g->mem_total_bytes, b, sizeof(b)));
		snprintf(pw, sizeof(pw), "%s/%s W", dash_watts(g->power_mw, c, sizeof(c)),
			 dash_watts(g->power_limit_mw, d, sizeof(d)));
		if (g->util_gpu_pct == GPUSHARE_UNKNOWN)
			snprintf(util, sizeof(util), "-");
		else
			snprintf(util, sizeof(util), "%d%%", g->util_gpu_pct);
		printf("%-3u %-22.22s %5s %-19s %-13s %7s %4s%s %5zu %s\n", g->index, g->name, util, mem, pw,
		       dash_int(g->clock_sm_mhz, e, sizeof(e)), dash_int(g->temperature_c, a, sizeof(a)),
		       g->temperature_c == GPUSHARE_UNKNOWN ? " " : "C", g->n_procs,
		       gpushare_throttle_reasons_str(g->throttle_reasons, r, sizeof(r)));
	}
	/* The processes, nvtop's way: who runs what, with how much memory. */
	printf("\n%-3s %-8s %-10s %-11s %9s  %s\n", "GPU", "PID", "USER", "KIND", "MEM MiB", "COMMAND");
	for (size_t i = 0; i < sys->n_gpus; i++) {
		const struct gpushare_gpu_info *g = &sys->gpus[i];

		for (size_t k = 0; k < g->n_procs; k++) {
			const struct gpushare_proc_info *p = &g->procs[k];
			char cmd[1024], user[128];

			printf("%-3u %-8d %-10.10s %-11s %9s  %.100s\n", g->index, (int)p->pid,
			       term(*p->user ? p->user : "?", user, sizeof(user)), gpushare_proc_kind_name(p->kind),
			       dash_mib(p->mem_used_bytes, a, sizeof(a)), proc_command(p, cmd, sizeof(cmd)));
		}
	}
	print_private(priv, n_priv);
	if (clients && clients->n) {
		printf("\n");
		print_clients(clients);
	}
}

static void sleep_until(uint64_t deadline_ns)
{
	uint64_t now = gpushare_now_ns();
	struct timespec ts;

	if (now >= deadline_ns)
		return;
	ts.tv_sec = (time_t)((deadline_ns - now) / 1000000000ULL);
	ts.tv_nsec = (long)((deadline_ns - now) % 1000000000ULL);
	while (nanosleep(&ts, &ts) != 0) {
	}
}

struct watch {
	bool on, tty, clients, json;
	long count;          /* 0: until stopped */
	uint64_t interval_ns;
	const char *interval;
};

/* --clients: the records alone, no driver needed. */
static int run_clients(const struct watch *w)
{
	static struct clients c; /* large: off the stack */
	uint64_t next = gpushare_now_ns();

	for (unsigned long round = 1; !w->on || w->count == 0 || round <= (unsigned long)w->count; round++) {
		clients_read(&c);
		if (w->json) {
			print_clients_json(&c);
		} else {
			if (w->on && w->tty)
				fputs("\033[H\033[2J", stdout);
			if (w->on) {
				char stamp[32];
				wall_time(stamp, sizeof(stamp), false);
				printf("%sgpushare info --clients --watch %s   %s   (#%lu)\n", round > 1 && !w->tty ? "\n" : "",
				       w->interval, stamp, round);
			}
			print_clients(&c);
		}
		if (fflush(stdout) != 0 || ferror(stdout) || !w->on)
			break;
		if (w->count && round == (unsigned long)w->count)
			break;
		next += w->interval_ns;
		sleep_until(next);
	}
	if (c.nvml > 0)
		gpushare_nvml_close();
	return cli_finish_stdout(EXIT_OK);
}

static int run_watch(const struct watch *w, const struct query *q)
{
	static struct clients clients; /* large: off the stack */
	uint64_t next = gpushare_now_ns();
	int rc = gpushare_nvml_open();

	if (rc)
		return cli_fail(rc, NULL);
	clients.nvml = 1; /* open here already */
	for (unsigned long round = 1; w->count == 0 || round <= (unsigned long)w->count; round++) {
		struct gpushare_system_info sys;
		struct gpushare_mps_private *priv = NULL;
		size_t n_priv = 0;

		rc = gpushare_system_query_nvml(&sys);
		if (rc) {
			gpushare_nvml_close();
			return cli_fail(rc, NULL);
		}
		if (q) {
			if (round == 1 && q->header)
				print_query_header(q);
			print_query_rows(q, &sys);
		} else if (w->tty) {
			if (gpushare_mps_private_list(&priv, &n_priv))
				gpushare_clear_error();
			clients_read(&clients);
			print_view(&sys, priv, n_priv, &clients, w->interval, round);
			free(priv);
		} else {
			print_dmon(&sys, round == 1);
		}
		gpushare_system_release(&sys);
		if (fflush(stdout) != 0 || ferror(stdout))
			break;
		if (w->count && round == (unsigned long)w->count)
			break;
		next += w->interval_ns;
		sleep_until(next);
	}
	gpushare_nvml_close();
	return cli_finish_stdout(EXIT_OK);
}

int cmd_info(int argc, char **argv)
{
	struct cli_parse p;
	struct gpushare_mps_survey dirs[MPS_DIRS_MAX];
	struct gpushare_system_info sys;
	struct gpushare_mps_private *priv = NULL;
	struct watch w = { .interval_ns = 1000000000ULL, .interval = "1s" };
	struct query q = { .header = true, .units = true };
	struct info_args a = { .query = NULL };
	const char *query, *format;
	bool json, count_given;
	size_t n_priv = 0;
	int rc, n_dirs;

	cli_parse_init(&p, &cli_info_cmd, argc, argv);
	if (!cli_parse_options(&p, &a))
		return p.status;
	json = a.json;
	w.on = a.watch;
	w.clients = a.clients;
	w.json = a.json;
	w.count = a.count;
	count_given = cli_parse_given(&p, "count");
	query = a.query;
	format = a.format;
	if (w.on && p.optind < argc) {
		if (gpushare_parse_duration(argv[p.optind], &w.interval_ns) || w.interval_ns < 10000000ULL ||
		    w.interval_ns > 86400000000000ULL)
			return cli_error(EXIT_USAGE, "info: invalid --watch interval '%s': a duration from 10ms to 24h "
					 "(2s, 500ms; a bare number is seconds)", argv[p.optind]);
		w.interval = argv[p.optind++];
	}
	if (p.optind < argc)
		return cli_unexpected_argument("info", argv[p.optind]);
	if (count_given && !w.on)
		return cli_error(EXIT_USAGE, "info: --count needs --watch");
	if (w.clients && (query || format))
		return cli_error(EXIT_USAGE, "info: --clients goes without --query and --format");
	if (w.clients) {
		w.tty = isatty(STDOUT_FILENO) == 1;
		return run_clients(&w);
	}
	if (json && (w.on || query || format))
		return cli_error(EXIT_USAGE, "info: --json goes alone, not with --watch, --query or --format");
	if (format && !query)
		return cli_error(EXIT_USAGE, "info: --format needs --query FIELDS");
	if (query && ((rc = parse_query(query, &q)) || (format && (rc = parse_format(format, &q)))))
		return rc;
	if (w.on) {
		w.tty = isatty(STDOUT_FILENO) == 1;
		return run_watch(&w, query ? &q : NULL);
	}
	if (query) {
		rc = gpushare_system_query_nvml(&sys);
		if (rc)
			return cli_fail(rc, NULL);
		if (q.header)
			print_query_header(&q);
		print_query_rows(&q, &sys);
		gpushare_system_release(&sys);
		return cli_finish_stdout(EXIT_OK);
	}
	rc = gpushare_system_query(&sys);
	if (rc && json) {
		/* A document still, for scripts: the error in it, the status kept. */
		char what[1024];
		int code;

		snprintf(what, sizeof(what), "%s: %s", gpushare_strerror(rc), gpushare_errdetail());
		code = cli_fail(rc, NULL);
		rc = cli_print_json_and_free(gpushare_info_error_json(what));
		return rc != EXIT_OK ? rc : code;
	}
	if (rc)
		return cli_fail(rc, NULL);
	n_dirs = 0;
	gpushare_mps_survey_add_known(dirs, &n_dirs, MPS_DIRS_MAX);
	for (int i = 0; i < n_dirs; i++)
		gpushare_mps_survey_look(&dirs[i], &(struct gpushare_mps_survey_opts){ .max_timeout_ms = 3000 });
	if (gpushare_mps_private_list(&priv, &n_priv))
		gpushare_clear_error();
	if (json) {
		rc = cli_print_json_and_free(gpushare_info_json(&sys, dirs, n_dirs, priv, n_priv));
	} else {
		print_report(&sys, dirs, n_dirs);
		print_private(priv, n_priv);
		rc = cli_finish_stdout(EXIT_OK);
	}
	for (int i = 0; i < n_dirs; i++)
		gpushare_mps_survey_release(&dirs[i]);
	free(priv);
	gpushare_system_release(&sys);
	return rc;
}
