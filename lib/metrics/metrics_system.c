/*
 * GPU, MIG, process and MPS metrics: what `gpushare exporter` serves, and
 * the machine part of `gpushare bench --metrics-listen`.
 *
 * Everything is read fresh on each call: GPUs, MIG devices and compute
 * processes from NVML alone (gpushare_system_query_nvml: no libcuda child, so
 * a scrape never initialises CUDA beside a benchmark), MPS state from the
 * control daemon of each pipe directory. A missing driver or daemon is a
 * value (driver up 0, daemon up 0), never an error: Prometheus then still
 * gets an answer and can alert on it.
 *
 * Units are base units (bytes, hertz, watts, ratios 0..1); the MPS thread
 * percentage stays a percentage because that is the daemon's own setting.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"
#include "gpushare/mps.h"
#include "metrics_account.h"
#include "sys.h"

#define MPS_TIMEOUT_MS 3000

void gpushare_metrics_system_opts_init(struct gpushare_metrics_system_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->processes = true;
	o->clients = true;
	o->default_pipe_dirs = true;
	o->mps_timeout_ms = MPS_TIMEOUT_MS;
}

/* ---- GPUs ---- */

struct gpu_labels {
	char index[16];
	struct gpushare_metrics_label l[2];
};

static void gpu_labels(const struct gpushare_gpu_info *g, struct gpu_labels *gl)
{
	snprintf(gl->index, sizeof(gl->index), "%u", g->index);
	gl->l[0] = (struct gpushare_metrics_label){ "gpu", gl->index };
	gl->l[1] = (struct gpushare_metrics_label){ "uuid", g->uuid };
}

/* One gauge per GPU from an int field; unknown values are left out. */
static void gpu_gauge(struct gpushare_metrics_buf *b, const struct gpushare_system_info *sys, const char *name,
		      const char *help, size_t field, double scale)
{
	gpushare_metrics_family(b, name, "gauge", help);
	for (size_t i = 0; i < sys->n_gpus; i++) {
		const struct gpushare_gpu_info *g = &sys->gpus[i];
		int v = *(const int *)((const char *)g + field);
		struct gpu_labels gl;

		if (v == GPUSHARE_UNKNOWN)
			continue;
		gpu_labels(g, &gl);
		gpushare_metrics_sample(b, name, gl.l, 2, (double)v * scale);
	}
}

static void gpu_memory(struct gpushare_metrics_buf *b, const struct gpushare_system_info *sys, bool used)
{
	const char *name = used ? "gpushare_gpu_memory_used_bytes" : "gpushare_gpu_memory_total_bytes";

	gpushare_metrics_family(b, name, "gauge",
				used ? "Device memory in use (NVML), bytes." : "Device memory in total (NVML), bytes.");
	for (size_t i = 0; i < sys->n_gpus; i++) {
		const struct gpushare_gpu_info *g = &sys->gpus[i];
		uint64_t v = used ? g->mem_used_bytes : g->mem_total_bytes;
		struct gpu_labels gl;

		if (v == GPUSHARE_UNKNOWN_U64)
			continue;
		gpu_labels(g, &gl);
		gpushare_metrics_sample_u64(b, name, gl.l, 2, v);
	}
}

static const char *mig_mode(int v)
{
	return v == 1 ? "enabled" : v == 0 ? "disabled" : "unknown";
}

static void write_gpus(struct gpushare_metrics_buf *b, const struct gpushare_system_info *sys)
{
	gpushare_metrics_family(b, "gpushare_gpu_info", "gauge",
				"Always 1; labels name each GPU: index, UUID, model, PCI bus id, compute mode, MIG mode.");
	for (size_t i = 0; i < sys->n_gpus; i++) {
		const struct gpushare_gpu_info *g = &sys->gpus[i];
		struct gpu_labels gl;
		struct gpushare_metrics_label l[7];

		gpu_labels(g, &gl);
		l[0] = gl.l[0];
		l[1] = gl.l[1];
		l[2] = (struct gpushare_metrics_label){ "name", g->name };
		l[3] = (struct gpushare_metrics_label){ "pci_bus_id", g->pci_bus_id };
		l[4] = (struct gpushare_metrics_label){ "compute_mode", gpushare_compute_mode_name(g->compute_mode) };
		l[5] = (struct gpushare_metrics_label){ "mig_mode", mig_mode(g->mig_current) };
		l[6] = (struct gpushare_metrics_label){ "driver_version", sys->driver_version };
		gpushare_metrics_sample(b, "gpushare_gpu_info", l, 7, 1);
	}
	gpu_gauge(b, sys, "gpushare_gpu_utilization_ratio",
		  "Fraction of the last sample period a kernel ran on the GPU (NVML utilization.gpu / 100).",
		  offsetof(struct gpushare_gpu_info, util_gpu_pct), 0.01);
	gpu_memory(b, sys, true);
	gpu_memory(b, sys, false);
	gpu_gauge(b, sys, "gpushare_gpu_sm_clock_hertz", "Current SM clock, hertz.",
		  offsetof(struct gpushare_gpu_info, clock_sm_mhz), 1e6);
	gpu_gauge(b, sys, "gpushare_gpu_sm_clock_max_hertz", "Maximum SM clock, hertz.",
		  offsetof(struct gpushare_gpu_info, clock_sm_max_mhz), 1e6);
	gpu_gauge(b, sys, "gpushare_gpu_power_watts", "Power draw, watts.",
		  offsetof(struct gpushare_gpu_info, power_mw), 1e-3);
	gpu_gauge(b, sys, "gpushare_gpu_power_limit_watts", "The enforced power limit, watts.",
		  offsetof(struct gpushare_gpu_info, power_limit_mw), 1e-3);
	gpushare_metrics_family(b, "gpushare_gpu_clocks_event_reasons", "gauge",
				"NVML's clocks-event (throttle) reasons bitmask, as DCGM_FI_DEV_CLOCK_THROTTLE_REASONS: "
				"1 idle, 2 application clocks, 4 SW power cap, 8 HW slowdown, 32 SW thermal, "
				"64 HW thermal, 128 HW power brake; 0 none.");
	for (size_t i = 0; i < sys->n_gpus; i++) {
		const struct gpushare_gpu_info *g = &sys->gpus[i];
		struct gpu_labels gl;

		if (g->throttle_reasons == GPUSHARE_UNKNOWN_U64)
			continue;
		gpu_labels(g, &gl);
		gpushare_metrics_sample_u64(b, "gpushare_gpu_clocks_event_reasons", gl.l, 2, g->throttle_reasons);
	}
	/* The same one series per reason, 0 or 1, which PromQL can test
	 * (`== 1`) and sum, as it cannot a bitmask. */
	gpushare_metrics_family(b, "gpushare_gpu_clocks_event_reason", "gauge",
				"1 while NVML names this clocks-event (throttle) reason for the GPU, else 0: "
				"one series per reason (nvidia-smi's names).");
	for (size_t i = 0; i < sys->n_gpus; i++) {
		const struct gpushare_gpu_info *g = &sys->gpus[i];
		struct gpushare_metrics_label l[3];
		struct gpu_labels gl;

		if (g->throttle_reasons == GPUSHARE_UNKNOWN_U64)
			continue;
		gpu_labels(g, &gl);
		l[0] = gl.l[0];
		l[1] = gl.l[1];
		for (unsigned bit = 0; gpushare_throttle_reason_name(bit); bit++) {
			l[2] = (struct gpushare_metrics_label){ "reason", gpushare_throttle_reason_name(bit) };
			gpushare_metrics_sample(b, "gpushare_gpu_clocks_event_reason", l, 3,
						(g->throttle_reasons >> bit) & 1 ? 1 : 0);
		}
	}
	gpu_gauge(b, sys, "gpushare_gpu_temperature_celsius", "GPU core temperature, degrees Celsius.",
		  offsetof(struct gpushare_gpu_info, temperature_c), 1);
	gpu_gauge(b, sys, "gpushare_gpu_multiprocessors", "Streaming multiprocessors of the GPU (when NVML reports it).",
		  offsetof(struct gpushare_gpu_info, sm_count), 1);
}

/* ---- MIG devices ---- */

struct mig_labels {
	char gpu[16], gi[16], ci[16];
	struct gpushare_metrics_label l[5];
};

static void mig_labels(const struct gpushare_gpu_info *g, const struct gpushare_mig_info *m, struct mig_labels *ml)
{
	snprintf(ml->gpu, sizeof(ml->gpu), "%u", g->index);
	snprintf(ml->gi, sizeof(ml->gi), "%d", m->gpu_instance_id);
	snprintf(ml->ci, sizeof(ml->ci), "%d", m->compute_instance_id);
	ml->l[0] = (struct gpushare_metrics_label){ "gpu", ml->gpu };
	ml->l[1] = (struct gpushare_metrics_label){ "mig_uuid", m->uuid };
	ml->l[2] = (struct gpushare_metrics_label){ "profile", m->profile };
	ml->l[3] = (struct gpushare_metrics_label){ "gpu_instance", ml->gi };
	ml->l[4] = (struct gpushare_metrics_label){ "compute_instance", ml->ci };
}

static size_t count_migs(const struct gpushare_system_info *sys)
{
	size_t n = 0;

	for (size_t i = 0; i < sys->n_gpus; i++)
		n += sys->gpus[i].n_migs;
	return n;
}

static void write_migs(struct gpushare_metrics_buf *b, const struct gpushare_system_info *sys)
{
	static const struct {
		const char *name, *help;
		int what;
	} fams[] = {
		{ "gpushare_mig_memory_used_bytes", "Device memory in use on a MIG instance, bytes.", 0 },
		{ "gpushare_mig_memory_total_bytes", "Device memory of a MIG instance, bytes.", 1 },
		{ "gpushare_mig_multiprocessors", "Streaming multiprocessors of a MIG instance.", 2 },
	};

	if (count_migs(sys) == 0)
		return;
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		gpushare_metrics_family(b, fams[f].name, "gauge", fams[f].help);
		for (size_t i = 0; i < sys->n_gpus; i++) {
			const struct gpushare_gpu_info *g = &sys->gpus[i];

			for (size_t k = 0; k < g->n_migs; k++) {
				const struct gpushare_mig_info *m = &g->migs[k];
				struct mig_labels ml;

				if (fams[f].what == 2 && m->sm_count == GPUSHARE_UNKNOWN)
					continue;
				mig_labels(g, m, &ml);
				if (fams[f].what == 0)
					gpushare_metrics_sample_u64(b, fams[f].name, ml.l, 5, m->mem_used_bytes);
				else if (fams[f].what == 1)
					gpushare_metrics_sample_u64(b, fams[f].name, ml.l, 5, m->mem_total_bytes);
				else
					gpushare_metrics_sample(b, fams[f].name, ml.l, 5, m->sm_count);
			}
		}
	}
}

/* ---- compute processes ---- */

/* The Slurm job a process belongs to: SLURM_JOB_ID in its environment (for
 * processes of this user, or any as root), else a "job_N" component of its
 * cgroup path (proctrack/cgroup); "" when neither says. */
static void slurm_job_of(pid_t pid, char *out, size_t len)
{
	char path[64], buf[65536];
	ssize_t n;
	int fd;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0)
			buf[n] = '\0';
		for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(buf + i) + 1) {
			if (!strncmp(buf + i, "SLURM_JOB_ID=", 13) && buf[i + 13]) {
				snprintf(out, len, "%.*s", (int)strspn(buf + i + 13, "0123456789_"), buf + i + 13);
				return;
			}
		}
	}
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *p = strstr(buf, "/job_"); p; p = strstr(p + 1, "/job_")) {
		size_t d = strspn(p + 5, "0123456789");

		if (d && (p[5 + d] == '/' || p[5 + d] == '\n' || p[5 + d] == '\0')) {
			snprintf(out, len, "%.*s", (int)d, p + 5);
			return;
		}
	}
}

static void write_processes(struct gpushare_metrics_buf *b, const struct gpushare_system_info *sys)
{
	gpushare_metrics_family(b, "gpushare_gpu_processes", "gauge",
				"Compute processes on a GPU by kind: plain, mps-server, mps-client.");
	for (size_t i = 0; i < sys->n_gpus; i++) {
		const struct gpushare_gpu_info *g = &sys->gpus[i];

		for (enum gpushare_proc_kind kind = GPUSHARE_PROC_PLAIN; kind <= GPUSHARE_PROC_MPS_CLIENT; kind++) {
			struct gpushare_metrics_label l[3];
			struct gpu_labels gl;
			unsigned n = 0;

			for (size_t k = 0; k < g->n_procs; k++)
				n += g->procs[k].kind == kind;
			gpu_labels(g, &gl);
			l[0] = gl.l[0];
			l[1] = gl.l[1];
			l[2] = (struct gpushare_metrics_label){ "kind", gpushare_proc_kind_name(kind) };
			gpushare_metrics_sample(b, "gpushare_gpu_processes", l, 3, n);
		}
	}
	gpushare_metrics_family(b, "gpushare_process_gpu_memory_bytes", "gauge",
				"Device memory of one compute process, bytes; MPS clients are listed with their own "
				"memory (kind mps-client), which NVML's plain process list attributes to the server; "
				"slurm_job_id: the process's Slurm job (\"\" when none).");
	for (size_t i = 0; i < sys->n_gpus; i++) {
		const struct gpushare_gpu_info *g = &sys->gpus[i];

		for (size_t k = 0; k < g->n_procs; k++) {
			const struct gpushare_proc_info *p = &g->procs[k];
			struct gpushare_metrics_label l[7];
			struct gpu_labels gl;
			char pid[24], gi[16] = "", job[32];

			if (p->mem_used_bytes == GPUSHARE_UNKNOWN_U64)
				continue;
			gpu_labels(g, &gl);
			snprintf(pid, sizeof(pid), "%d", (int)p->pid);
			if (p->gpu_instance_id != GPUSHARE_UNKNOWN)
				snprintf(gi, sizeof(gi), "%d", p->gpu_instance_id);
			l[0] = gl.l[0];
			l[1] = gl.l[1];
			l[2] = (struct gpushare_metrics_label){ "pid", pid };
			l[3] = (struct gpushare_metrics_label){ "name", p->name };
			l[4] = (struct gpushare_metrics_label){ "kind", gpushare_proc_kind_name(p->kind) };
			l[5] = (struct gpushare_metrics_label){ "gpu_instance", gi };
			slurm_job_of(p->pid, job, sizeof(job));
			l[6] = (struct gpushare_metrics_label){ "slurm_job_id", job };
			gpushare_metrics_sample_u64(b, "gpushare_process_gpu_memory_bytes", l, 7, p->mem_used_bytes);
		}
	}
}

/* ---- MPS ---- */

/* A limit as the daemon prints it ("4G", "512M"), in bytes; 0 when none. */
static uint64_t limit_bytes(const char *s)
{
	uint64_t v = 0;

	if (!s || !*s || gpushare_parse_size(s, &v) != GPUSHARE_OK)
		return 0;
	return v;
}

static size_t total_clients(const struct gpushare_mps_status *st)
{
	size_t n = 0;

	for (size_t i = 0; i < st->n_servers; i++)
		n += st->servers[i].n_clients;
	return n;
}

/* gpushare's own runs' private daemons and their owners (pid files and
 * /proc only: cheap, nothing probed). */
static void write_private(struct gpushare_metrics_buf *b)
{
	struct gpushare_mps_private *p = NULL;
	size_t n = 0;

	if (gpushare_mps_private_list(&p, &n) != GPUSHARE_OK) {
		gpushare_clear_error();
		return;
	}
	gpushare_metrics_family(b, "gpushare_mps_private_daemon_info", "gauge",
				"Always 1: an MPS control daemon of one of gpushare's runs (bench, sweep, farm, exec) "
				"and the process that owns it; owner_alive=\"false\" when the run is gone and left it.");
	for (size_t i = 0; i < n; i++) {
		char pid[24], owner[24], comm[64] = "";
		struct gpushare_metrics_label l[6];
		size_t run_len = strlen(p[i].run_dir);
		const char *pipe = p[i].pipe_dir;

		snprintf(pid, sizeof(pid), "%d", (int)p[i].daemon_pid);
		snprintf(owner, sizeof(owner), "%d", (int)p[i].owner_pid);
		/* Bounded labels: the pipe directory inside its run ("mps/pipe";
		 * the run's own directory has a new random name each run) and
		 * the owner's command name, never its command line (unbounded,
		 * and it may carry secrets). `gpushare info` shows both whole. */
		if (!strncmp(pipe, p[i].run_dir, run_len) && pipe[run_len] == '/')
			pipe += run_len + 1;
		if (p[i].owner_alive)
			gpushare_pid_comm(p[i].owner_pid, comm, sizeof(comm));
		l[0] = (struct gpushare_metrics_label){ "run", p[i].kind };
		l[1] = (struct gpushare_metrics_label){ "pipe_dir", pipe };
		l[2] = (struct gpushare_metrics_label){ "pid", pid };
		l[3] = (struct gpushare_metrics_label){ "owner_pid", p[i].owner_pid > 0 ? owner : "" };
		l[4] = (struct gpushare_metrics_label){ "owner_alive", p[i].owner_alive ? "true" : "false" };
		l[5] = (struct gpushare_metrics_label){ "owner_command", comm };
		gpushare_metrics_sample(b, "gpushare_mps_private_daemon_info", l, 6, 1);
	}
	free(p);
}

static void write_mps(struct gpushare_metrics_buf *b, struct gpushare_mps_survey *dirs, int n)
{
	gpushare_metrics_family(b, "gpushare_mps_daemon_up", "gauge",
				"1 when an MPS control daemon answers at the pipe directory, else 0.");
	for (int i = 0; i < n; i++) {
		struct gpushare_metrics_label l = { "pipe_dir", dirs[i].pipe_dir };

		gpushare_metrics_sample(b, "gpushare_mps_daemon_up", &l, 1, dirs[i].up);
	}
	gpushare_metrics_family(b, "gpushare_mps_servers", "gauge", "MPS servers the daemon runs.");
	for (int i = 0; i < n; i++) {
		struct gpushare_metrics_label l = { "pipe_dir", dirs[i].pipe_dir };

		if (dirs[i].up)
			gpushare_metrics_sample(b, "gpushare_mps_servers", &l, 1, (double)dirs[i].st.n_servers);
	}
	gpushare_metrics_family(b, "gpushare_mps_clients", "gauge", "MPS client processes of all the daemon's servers.");
	for (int i = 0; i < n; i++) {
		struct gpushare_metrics_label l = { "pipe_dir", dirs[i].pipe_dir };

		if (dirs[i].up)
			gpushare_metrics_sample(b, "gpushare_mps_clients", &l, 1, (double)total_clients(&dirs[i].st));
	}
	gpushare_metrics_family(b, "gpushare_mps_default_active_thread_percent", "gauge",
				"Default active thread percentage for new servers (set_default_active_thread_percentage).");
	for (int i = 0; i < n; i++) {
		struct gpushare_metrics_label l = { "pipe_dir", dirs[i].pipe_dir };

		if (dirs[i].up && dirs[i].st.default_thread_percentage >= 0)
			gpushare_metrics_sample(b, "gpushare_mps_default_active_thread_percent", &l, 1,
						dirs[i].st.default_thread_percentage);
	}
	gpushare_metrics_family(b, "gpushare_mps_default_pinned_mem_limit_bytes", "gauge",
				"Default pinned device memory limit per device ordinal for new servers, bytes (set only).");
	for (int i = 0; i < n; i++) {
		for (int dev = 0; dirs[i].up && dev < dirs[i].st.n_default_mem_limit; dev++) {
			uint64_t v = limit_bytes(dirs[i].st.default_mem_limit[dev]);
			char devs[16];
			struct gpushare_metrics_label l[2] = { { "pipe_dir", dirs[i].pipe_dir }, { "device", devs } };

			if (!v)
				continue;
			snprintf(devs, sizeof(devs), "%d", dev);
			gpushare_metrics_sample_u64(b, "gpushare_mps_default_pinned_mem_limit_bytes", l, 2, v);
		}
	}
	gpushare_metrics_family(b, "gpushare_mps_server_info", "gauge",
				"Always 1; one per MPS server with its status and user id.");
	for (int i = 0; i < n; i++) {
		for (size_t s = 0; dirs[i].up && s < dirs[i].st.n_servers; s++) {
			const struct gpushare_mps_server *sv = &dirs[i].st.servers[s];
			char pid[24], uid[24];
			struct gpushare_metrics_label l[4] = {
				{ "pipe_dir", dirs[i].pipe_dir }, { "server_pid", pid }, { "uid", uid }, { "status", sv->status },
			};

			snprintf(pid, sizeof(pid), "%d", (int)sv->pid);
			snprintf(uid, sizeof(uid), "%ld", sv->uid);
			gpushare_metrics_sample(b, "gpushare_mps_server_info", l, 4, 1);
		}
	}
	gpushare_metrics_family(b, "gpushare_mps_server_clients", "gauge", "Client processes of one MPS server.");
	for (int i = 0; i < n; i++) {
		for (size_t s = 0; dirs[i].up && s < dirs[i].st.n_servers; s++) {
			const struct gpushare_mps_server *sv = &dirs[i].st.servers[s];
			char pid[24];
			struct gpushare_metrics_label l[2] = { { "pipe_dir", dirs[i].pipe_dir }, { "server_pid", pid } };

			snprintf(pid, sizeof(pid), "%d", (int)sv->pid);
			gpushare_metrics_sample(b, "gpushare_mps_server_clients", l, 2, (double)sv->n_clients);
		}
	}
	gpushare_metrics_family(b, "gpushare_mps_server_active_thread_percent", "gauge",
				"Active thread percentage of one MPS server (for its new clients).");
	for (int i = 0; i < n; i++) {
		for (size_t s = 0; dirs[i].up && s < dirs[i].st.n_servers; s++) {
			const struct gpushare_mps_server *sv = &dirs[i].st.servers[s];
			char pid[24];
			struct gpushare_metrics_label l[2] = { { "pipe_dir", dirs[i].pipe_dir }, { "server_pid", pid } };

			if (sv->thread_percentage < 0)
				continue;
			snprintf(pid, sizeof(pid), "%d", (int)sv->pid);
			gpushare_metrics_sample(b, "gpushare_mps_server_active_thread_percent", l, 2, sv->thread_percentage);
		}
	}
	gpushare_metrics_family(b, "gpushare_mps_server_pinned_mem_limit_bytes", "gauge",
				"Pinned device memory limit of one MPS server per device ordinal, bytes (set only).");
	for (int i = 0; i < n; i++) {
		for (size_t s = 0; dirs[i].up && s < dirs[i].st.n_servers; s++) {
			const struct gpushare_mps_server *sv = &dirs[i].st.servers[s];

			for (int dev = 0; dev < sv->n_mem_limit; dev++) {
				uint64_t v = limit_bytes(sv->mem_limit[dev]);
				char pid[24], devs[16];
				struct gpushare_metrics_label l[3] = {
					{ "pipe_dir", dirs[i].pipe_dir }, { "server_pid", pid }, { "device", devs },
				};

				if (!v)
					continue;
				snprintf(pid, sizeof(pid), "%d", (int)sv->pid);
				snprintf(devs, sizeof(devs), "%d", dev);
				gpushare_metrics_sample_u64(b, "gpushare_mps_server_pinned_mem_limit_bytes", l, 3, v);
			}
		}
	}
	gpushare_metrics_family(b, "gpushare_mps_client_info", "gauge",
				"Always 1; one per MPS client process with its server and command line.");
	for (int i = 0; i < n; i++) {
		for (size_t s = 0; dirs[i].up && s < dirs[i].st.n_servers; s++) {
			const struct gpushare_mps_server *sv = &dirs[i].st.servers[s];

			for (size_t c = 0; c < sv->n_clients; c++) {
				char spid[24], cpid[24];
				struct gpushare_metrics_label l[4] = {
					{ "pipe_dir", dirs[i].pipe_dir }, { "server_pid", spid }, { "pid", cpid },
					{ "command", sv->clients[c].command },
				};

				snprintf(spid, sizeof(spid), "%d", (int)sv->pid);
				snprintf(cpid, sizeof(cpid), "%d", (int)sv->clients[c].pid);
				gpushare_metrics_sample(b, "gpushare_mps_client_info", l, 4, 1);
			}
		}
	}
}

/* ---- the whole machine ---- */

int gpushare_metrics_write_system(struct gpushare_metrics_buf *b, const struct gpushare_metrics_system_opts *o,
				  bool *driver_up)
{
	struct gpushare_system_info sys;
	struct gpushare_mps_survey_opts look = { .timeout_ms = o->mps_timeout_ms };
	struct gpushare_mps_survey *dirs;
	bool up;
	int n = 0, ndev;

	memset(&sys, 0, sizeof(sys));
	up = gpushare_system_query_nvml(&sys) == GPUSHARE_OK;
	gpushare_clear_error();
	if (driver_up)
		*driver_up = up;
	gpushare_metrics_family(b, "gpushare_build_info", "gauge", "Always 1; the label version is gpushare's version.");
	gpushare_metrics_sample(b, "gpushare_build_info",
				&(struct gpushare_metrics_label){ "version", gpushare_version() }, 1, 1);
	gpushare_metrics_family(b, "gpushare_nvidia_driver_up", "gauge",
				"1 when the NVIDIA driver (NVML) answered this scrape, else 0.");
	gpushare_metrics_sample(b, "gpushare_nvidia_driver_up", NULL, 0, up);
	if (up) {
		write_gpus(b, &sys);
		write_migs(b, &sys);
		if (o->processes)
			write_processes(b, &sys);
	}
	if (o->clients)
		gpushare_metrics_write_clients(b, up ? &sys : NULL);
	ndev = up && sys.n_gpus > 0 ? (int)sys.n_gpus : 1;
	if (ndev > 16)
		ndev = 16;
	look.status_ndev = ndev;
	if (up)
		gpushare_system_release(&sys);

	dirs = calloc(GPUSHARE_METRICS_MAX_PIPE_DIRS, sizeof(*dirs));
	if (!dirs) {
		b->text.failed = true;
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate MPS state");
	}
	for (int i = 0; i < o->n_pipe_dirs; i++)
		gpushare_mps_survey_add(dirs, &n, GPUSHARE_METRICS_MAX_PIPE_DIRS, o->pipe_dirs[i], "given");
	if (o->n_pipe_dirs == 0 && o->default_pipe_dirs)
		gpushare_mps_survey_add_known(dirs, &n, GPUSHARE_METRICS_MAX_PIPE_DIRS);
	for (int i = 0; i < n; i++)
		gpushare_mps_survey_look(&dirs[i], &look);
	if (o->default_pipe_dirs)
		write_private(b);
	gpushare_clear_error();
	if (n > 0)
		write_mps(b, dirs, n);
	for (int i = 0; i < n; i++)
		gpushare_mps_survey_release(&dirs[i]);
	free(dirs);
	return b->text.failed ? gpushare_fail(GPUSHARE_E_NOMEM, "cannot build the metrics exposition") : GPUSHARE_OK;
}
