/*
 * Per-client series from the accounting records (gpushare/account.h): one
 * sample per process and GPU, labelled with its owner. The labels are
 * bounded by the records' reader (at most 63 bytes of safe characters each)
 * and their number by GPUSHARE_METRICS_MAX_CLIENTS. A record of a process
 * that is gone stays served for STALE_S seconds, then is removed.
 */
#include <pwd.h>
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

/* The GPU a client runs on, for the flag's "had room": the index of the
 * GPU whose compute processes NVML lists the client's pid among, else its
 * device ordinal as the process sees it (right on a node of one GPU, the
 * common case of sharing), kept apart from the indexes. */
static long client_gpu(const struct gpushare_account_record *r, const struct gpushare_system_info *sys)
{
	for (size_t i = 0; sys && i < sys->n_gpus; i++)
		for (size_t k = 0; k < sys->gpus[i].n_procs; k++)
			if ((int64_t)sys->gpus[i].procs[k].pid == r->pid)
				return (long)sys->gpus[i].index;
	return (1L << 20) + (long)r->device;
}

struct client_labels {
	char pid[24], device[16], user[64];
	struct gpushare_metrics_label l[10];
};

static void client_labels(const struct gpushare_account_record *r, struct client_labels *cl)
{
	struct passwd pw, *found = NULL;
	char buf[1024];
	const struct gpushare_account_owner *o = &r->owner;

	snprintf(cl->pid, sizeof(cl->pid), "%lld", (long long)r->pid);
	snprintf(cl->device, sizeof(cl->device), "%u", (unsigned)r->device);
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
			   "Attained share estimate of a client: the part of its sampling windows in which a kernel "
			   "of it ran on the device, 0..1 (docs/accounting.md says what it means under "
			   "time-slicing, MPS and MIG)." },
	[SERIES_PROMISED] = { "gpushare_client_share_promised_ratio", "gauge",
			      "Share promised to a client, 0..1: GPUSHARE_ACCOUNT_PROMISED, else its MPS active "
			      "thread percentage / 100; absent when nothing promised one." },
	[SERIES_MEMORY] = { "gpushare_client_memory_bytes", "gauge",
			    "Device memory a client allocated and has not freed, bytes." },
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
	int *held = calloc(GPUSHARE_METRICS_MAX_CLIENTS, sizeof(*held));
	struct {
		struct gpushare_account_record *r;
		size_t n;
	} c = { .r = r0, .n = 0 };

	if (!r0 || !gpu || !held) {
		b->text.failed = true;
		free(r0), free(gpu), free(held);
		return;
	}
	c.n = gpushare_account_collect(c.r, GPUSHARE_METRICS_MAX_CLIENTS, STALE_S);
	for (size_t i = 0; i < c.n; i++)
		gpu[i] = client_gpu(&c.r[i], sys);
	gpushare_account_held(c.r, gpu, c.n, HELD_TOLERANCE, held);
	for (size_t s = 0; s < sizeof(series) / sizeof(series[0]); s++) {
		gpushare_metrics_family(b, series[s].name, series[s].type, series[s].help);
		for (size_t i = 0; i < c.n; i++) {
			const struct gpushare_account_record *r = &c.r[i];
			struct client_labels cl;
			double share = gpushare_account_share(r);
			client_labels(r, &cl);
			switch ((enum client_series)s) {
			case SERIES_SECONDS:
				gpushare_metrics_sample(b, series[s].name, cl.l, 10, gpushare_account_gpu_seconds(r));
				break;
			case SERIES_SHARE:
				if (share >= 0)
					gpushare_metrics_sample(b, series[s].name, cl.l, 10, share);
				break;
			case SERIES_PROMISED:
				if (r->promised >= 0)
					gpushare_metrics_sample(b, series[s].name, cl.l, 10, r->promised);
				break;
			case SERIES_MEMORY:
				gpushare_metrics_sample_u64(b, series[s].name, cl.l, 10, r->memory_bytes);
				break;
			case SERIES_KERNELS:
				gpushare_metrics_sample_u64(b, series[s].name, cl.l, 10, r->kernels);
				break;
			case SERIES_SLOWDOWN:
				if (gpushare_account_slowdown(r) > 0)
					gpushare_metrics_sample(b, series[s].name, cl.l, 10, gpushare_account_slowdown(r));
				break;
			case SERIES_HELD:
				if (held[i] >= 0)
					gpushare_metrics_sample(b, series[s].name, cl.l, 10, held[i]);
				break;
			}
		}
	}
	free(r0), free(gpu), free(held);
}
