/*
 * Per-client series from the accounting records (gpushare/account.h): one
 * sample per process and GPU, labelled with its owner. The labels are
 * bounded by the records' reader (at most 63 bytes of safe characters each,
 * the GPU's UUID of its fixed form), one value each per record, and their
 * number by GPUSHARE_METRICS_MAX_CLIENTS. A record of a process
 * that is gone stays served for STALE_S seconds, then is removed.
 */
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare/account.h"
#include "gpushare/gpu.h"
#include "gpushare/metrics.h"
#include "metrics_account.h"

#define STALE_S 60.0
#define HELD_TOLERANCE 0.05 /* 5 points, as gpushare check's default */

/* Whether NVML's UUID text names the same device as a record's: the same
 * 36 characters after the kind ("GPU-", "MIG-"), which a driver could
 * give a MIG instance wrongly (gpushare/account.h). */
static bool same_uuid(const char *nvml, const char *rec)
{
	return strlen(nvml) == strlen(rec) && strlen(rec) > 4 && strcmp(nvml + 4, rec + 4) == 0;
}

/* The NVML index of the GPU a record names by UUID (the GPU's own, or that
 * of one of its MIG instances), -1 when it names none NVML lists; *text
 * NVML's text of that UUID when one is found. */
static long uuid_gpu(const struct gpushare_account_record *r, const struct gpushare_system_info *sys, const char **text)
{
	for (size_t i = 0; sys && r->gpu_uuid[0] && i < sys->n_gpus; i++) {
		const struct gpushare_gpu_info *g = &sys->gpus[i];
		if (same_uuid(g->uuid, r->gpu_uuid)) {
			*text = g->uuid;
			return (long)g->index;
		}
		for (size_t m = 0; m < g->n_migs; m++)
			if (same_uuid(g->migs[m].uuid, r->gpu_uuid)) {
				*text = g->migs[m].uuid;
				return (long)g->index;
			}
	}
	return -1;
}

/* The GPU a client runs on, for the flag's "had room": the NVML index of
 * the GPU its record names by UUID (a MIG instance is a GPU of its own: its
 * UUID's key, by gpushare_account_gpu_keys()); a record naming none, the
 * GPU whose compute processes NVML lists its pid among; else -1, for
 * gpushare_account_gpu_keys() (its device ordinal, kept apart from the
 * indexes). */
static long client_gpu(const struct gpushare_account_record *r, const struct gpushare_system_info *sys)
{
	const char *text = NULL;
	long at;

	if (r->gpu_uuid[0]) {
		at = uuid_gpu(r, sys, &text);
		return at >= 0 && strncmp(text, "GPU-", 4) == 0 ? at : -1;
	}
	for (size_t i = 0; sys && i < sys->n_gpus; i++)
		for (size_t k = 0; k < sys->gpus[i].n_procs; k++)
			if ((int64_t)sys->gpus[i].procs[k].pid == r->pid)
				return (long)sys->gpus[i].index;
	return -1;
}

#define N_LABELS 12

struct client_labels {
	char pid[24], device[16], gpu[24], user[64];
	struct gpushare_metrics_label l[N_LABELS];
};

/* gpu: the NVML index of the GPU the record names, -1 when unknown; uuid:
 * its UUID (NVML's text where NVML lists it, else the record's). */
static void client_labels(const struct gpushare_account_record *r, long gpu, const char *uuid,
			  struct client_labels *cl)
{
	struct passwd pw, *found = NULL;
	char buf[1024];
	const struct gpushare_account_owner *o = &r->owner;

	snprintf(cl->pid, sizeof(cl->pid), "%lld", (long long)r->pid);
	snprintf(cl->device, sizeof(cl->device), "%u", (unsigned)r->device);
	if (gpu >= 0)
		snprintf(cl->gpu, sizeof(cl->gpu), "%ld", gpu);
	else
		cl->gpu[0] = '\0';
	if (getpwuid_r((uid_t)r->uid, &pw, buf, sizeof(buf), &found) == 0 && found)
		gpushare_account_label(cl->user, pw.pw_name);
	else
		cl->user[0] = '\0';
	if (!cl->user[0])
		snprintf(cl->user, sizeof(cl->user), "%lld", (long long)r->uid);
	cl->l[0] = (struct gpushare_metrics_label){ "pid", cl->pid };
	cl->l[1] = (struct gpushare_metrics_label){ "device", cl->device };
	cl->l[2] = (struct gpushare_metrics_label){ "user", cl->user };
	cl->l[3] = (struct gpushare_metrics_label){ "slurm_job_id", o->slurm_job };
	cl->l[4] = (struct gpushare_metrics_label){ "slurm_step", o->slurm_step };
	cl->l[5] = (struct gpushare_metrics_label){ "k8s_namespace", o->k8s_namespace };
	cl->l[6] = (struct gpushare_metrics_label){ "k8s_pod", o->k8s_pod };
	cl->l[7] = (struct gpushare_metrics_label){ "k8s_container", o->k8s_container };
	cl->l[8] = (struct gpushare_metrics_label){ "farm_job", o->farm_job };
	cl->l[9] = (struct gpushare_metrics_label){ "rank", o->rank };
	cl->l[10] = (struct gpushare_metrics_label){ "gpu", cl->gpu };
	cl->l[11] = (struct gpushare_metrics_label){ "uuid", uuid };
}

enum client_series {
	SERIES_SECONDS, SERIES_SHARE, SERIES_PROMISED, SERIES_MEMORY, SERIES_KERNELS, SERIES_SLOWDOWN, SERIES_HELD
};

static const struct {
	const char *name, *type, *help;
} series[] = {
	[SERIES_SECONDS] = { "gpushare_client_gpu_seconds_total", "counter",
			     "Estimated GPU time of a client process on one of its devices, seconds: the sampled "
			     "busy fraction times its watched wall time (docs/accounting.md)." },
	[SERIES_SHARE] = { "gpushare_client_sm_share_ratio", "gauge",
			   "Attained share estimate of a client, 0..1: NVML's SM utilisation of the process where "
			   "NVML can attribute it (source=\"nvml\": no MPS server on its GPU), else the part of its "
			   "sampling windows in which a kernel of it ran on the device (source=\"library\"; "
			   "docs/accounting.md says what each means under time-slicing, MPS and MIG)." },
	[SERIES_PROMISED] = { "gpushare_client_share_promised_ratio", "gauge",
			      "Share promised to a client, 0..1: GPUSHARE_ACCOUNT_PROMISED, else its MPS active "
			      "thread percentage / 100; absent when nothing promised one." },
	[SERIES_MEMORY] = { "gpushare_client_memory_bytes", "gauge",
			    "Device memory a client allocated and has not freed, bytes: the library's figure (kernel "
			    "timing), else NVML's for the process (MPS clients too); absent when neither has one." },
	[SERIES_KERNELS] = { "gpushare_client_sampled_kernels_total", "counter",
			     "Kernels of a client seen inside its sampling windows." },
	[SERIES_SLOWDOWN] = { "gpushare_client_slowdown_ratio", "gauge",
			      "Mean kernel time of a client's last window over that of its fastest window, at least 1 "
			      "(docs/accounting.md)." },
	[SERIES_HELD] = { "gpushare_client_held_under_promise", "gauge",
			  "1 when a client with work attained a share more than 5 points below its promise while "
			  "its GPU had room (its clients' shares add up to under 0.95), else 0; absent without a "
			  "promise (docs/accounting.md)." },
};

void gpushare_metrics_write_clients(struct gpushare_metrics_buf *b, const struct gpushare_system_info *sys)
{
	struct gpushare_account_record *r0 = calloc(GPUSHARE_METRICS_MAX_CLIENTS, sizeof(*r0));
	long *gpu = calloc(GPUSHARE_METRICS_MAX_CLIENTS, sizeof(*gpu));
	long *index = calloc(GPUSHARE_METRICS_MAX_CLIENTS, sizeof(*index));
	const char **uuid = calloc(GPUSHARE_METRICS_MAX_CLIENTS, sizeof(*uuid));
	int *held = calloc(GPUSHARE_METRICS_MAX_CLIENTS, sizeof(*held));
	double *att = calloc(GPUSHARE_METRICS_MAX_CLIENTS, sizeof(*att));
	bool *from_nvml = calloc(GPUSHARE_METRICS_MAX_CLIENTS, sizeof(*from_nvml));
	uint64_t *mem = calloc(GPUSHARE_METRICS_MAX_CLIENTS, sizeof(*mem));
	struct {
		struct gpushare_account_record *r;
		size_t n;
	} c = { .r = r0, .n = 0 };

	if (!r0 || !gpu || !index || !uuid || !held || !att || !from_nvml || !mem) {
		b->text.failed = true;
		free(r0), free(gpu), free(index), free(uuid), free(held), free(att), free(from_nvml), free(mem);
		return;
	}
	c.n = gpushare_account_collect(c.r, GPUSHARE_METRICS_MAX_CLIENTS, STALE_S);
	for (size_t i = 0; i < c.n; i++) {
		gpu[i] = client_gpu(&c.r[i], sys);
		uuid[i] = c.r[i].gpu_uuid;
		index[i] = uuid_gpu(&c.r[i], sys, &uuid[i]);
		att[i] = gpushare_gpu_process_share(sys, gpu[i], c.r[i].pid);
		mem[i] = gpushare_gpu_process_memory(sys, gpu[i], c.r[i].pid);
		from_nvml[i] = att[i] >= 0;
		if (!from_nvml[i])
			att[i] = gpushare_account_share(&c.r[i]);
	}
	gpushare_account_gpu_keys(c.r, c.n, gpu);
	gpushare_account_held(c.r, gpu, att, c.n, HELD_TOLERANCE, held);
	for (size_t s = 0; s < sizeof(series) / sizeof(series[0]); s++) {
		gpushare_metrics_family(b, series[s].name, series[s].type, series[s].help);
		for (size_t i = 0; i < c.n; i++) {
			const struct gpushare_account_record *r = &c.r[i];
			struct client_labels cl;
			struct gpushare_metrics_label l[N_LABELS + 1];
			double share = att[i];
			client_labels(r, index[i], uuid[i], &cl);
			switch ((enum client_series)s) {
			case SERIES_SECONDS:
				gpushare_metrics_sample(b, series[s].name, cl.l, N_LABELS, gpushare_account_gpu_seconds(r));
				break;
			case SERIES_SHARE:
				memcpy(l, cl.l, sizeof(cl.l));
				l[N_LABELS] = (struct gpushare_metrics_label){ "source", from_nvml[i] ? "nvml" : "library" };
				if (share >= 0)
					gpushare_metrics_sample(b, series[s].name, l, N_LABELS + 1, share);
				break;
			case SERIES_PROMISED:
				if (r->promised >= 0)
					gpushare_metrics_sample(b, series[s].name, cl.l, N_LABELS, r->promised);
				break;
			case SERIES_MEMORY:
				if (r->memory_known)
					gpushare_metrics_sample_u64(b, series[s].name, cl.l, N_LABELS, r->memory_bytes);
				else if (mem[i] != GPUSHARE_UNKNOWN_U64) /* launch timing: NVML's figure */
					gpushare_metrics_sample_u64(b, series[s].name, cl.l, N_LABELS, mem[i]);
				break;
			case SERIES_KERNELS:
				gpushare_metrics_sample_u64(b, series[s].name, cl.l, N_LABELS, r->kernels);
				break;
			case SERIES_SLOWDOWN:
				if (gpushare_account_slowdown(r) > 0)
					gpushare_metrics_sample(b, series[s].name, cl.l, N_LABELS, gpushare_account_slowdown(r));
				break;
			case SERIES_HELD:
				if (held[i] >= 0)
					gpushare_metrics_sample(b, series[s].name, cl.l, N_LABELS, held[i]);
				break;
			}
		}
	}
	free(r0), free(gpu), free(index), free(uuid), free(held), free(att), free(from_nvml), free(mem);
}
