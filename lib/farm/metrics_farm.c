/* The live metrics of a farm (lib/farm/metrics_farm.h). */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"
#include "metrics_farm.h"

struct farm_gpu_view {
	char uuid[96], index[16];
	unsigned running;
	uint64_t done, failed;
};

struct gpushare_metrics_farm {
	pthread_mutex_t lock;
	struct gpushare_metrics_server *srv;
	struct farm_gpu_view *gpus;
	size_t n_gpus;
	uint64_t queued, done, failed;
	unsigned running, slots;
};

int gpushare_metrics_farm_new(size_t n_gpus, struct gpushare_metrics_farm **out)
{
	struct gpushare_metrics_farm *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m || !(m->gpus = calloc(n_gpus ? n_gpus : 1, sizeof(*m->gpus)))) {
		free(m);
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate the metrics view");
	}
	m->n_gpus = n_gpus;
	pthread_mutex_init(&m->lock, NULL);
	*out = m;
	return GPUSHARE_OK;
}

void gpushare_metrics_farm_gpu_name(struct gpushare_metrics_farm *m, size_t i, const char *uuid, int index)
{
	if (!m || i >= m->n_gpus)
		return;
	pthread_mutex_lock(&m->lock);
	snprintf(m->gpus[i].uuid, sizeof(m->gpus[i].uuid), "%s", uuid ? uuid : "");
	snprintf(m->gpus[i].index, sizeof(m->gpus[i].index), "%d", index);
	pthread_mutex_unlock(&m->lock);
}

void gpushare_metrics_farm_gpu(struct gpushare_metrics_farm *m, size_t i, unsigned running, uint64_t done,
			       uint64_t failed)
{
	if (!m || i >= m->n_gpus)
		return;
	pthread_mutex_lock(&m->lock);
	m->gpus[i].running = running;
	m->gpus[i].done = done;
	m->gpus[i].failed = failed;
	pthread_mutex_unlock(&m->lock);
}

void gpushare_metrics_farm_totals(struct gpushare_metrics_farm *m, uint64_t queued, unsigned running, uint64_t done,
				  uint64_t failed, unsigned slots)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->queued = queued;
	m->running = running;
	m->done = done;
	m->failed = failed;
	m->slots = slots;
	pthread_mutex_unlock(&m->lock);
}

static void per_gpu(struct gpushare_metrics_buf *b, const struct gpushare_metrics_farm *m, const char *name,
		    const char *type, const char *help, int which)
{
	gpushare_metrics_family(b, name, type, help);
	for (size_t i = 0; i < m->n_gpus; i++) {
		const struct farm_gpu_view *g = &m->gpus[i];
		struct gpushare_metrics_label l[2] = { { "gpu", g->index }, { "uuid", g->uuid } };
		uint64_t v = which == 0 ? g->running : which == 1 ? g->done : g->failed;

		gpushare_metrics_sample_u64(b, name, l, 2, v);
	}
}

int gpushare_metrics_farm_text(struct gpushare_metrics_farm *m, char **text, size_t *len)
{
	struct gpushare_metrics_buf b;

	gpushare_metrics_buf_init(&b);
	pthread_mutex_lock(&m->lock);
	gpushare_metrics_family(&b, "gpushare_farm_jobs_queued", "gauge", "Jobs of the farm waiting to start.");
	gpushare_metrics_sample_u64(&b, "gpushare_farm_jobs_queued", NULL, 0, m->queued);
	gpushare_metrics_family(&b, "gpushare_farm_jobs_running", "gauge", "Jobs of the farm running now.");
	gpushare_metrics_sample_u64(&b, "gpushare_farm_jobs_running", NULL, 0, m->running);
	gpushare_metrics_family(&b, "gpushare_farm_jobs_done", "gauge",
				"Jobs of the farm done (exit status 0), also in earlier runs of a resumed farm.");
	gpushare_metrics_sample_u64(&b, "gpushare_farm_jobs_done", NULL, 0, m->done);
	gpushare_metrics_family(&b, "gpushare_farm_jobs_failed", "gauge",
				"Jobs of the farm failed for good (retries used up, or refused).");
	gpushare_metrics_sample_u64(&b, "gpushare_farm_jobs_failed", NULL, 0, m->failed);
	gpushare_metrics_family(&b, "gpushare_farm_slots", "gauge", "Slots per GPU (jobs at once on each GPU).");
	gpushare_metrics_sample_u64(&b, "gpushare_farm_slots", NULL, 0, m->slots);
	per_gpu(&b, m, "gpushare_farm_gpu_jobs_running", "gauge", "Jobs running on the GPU now.", 0);
	per_gpu(&b, m, "gpushare_farm_gpu_jobs_done_total", "counter", "Jobs done on the GPU in this run.", 1);
	per_gpu(&b, m, "gpushare_farm_gpu_jobs_failed_total", "counter",
		"Jobs failed for good on the GPU in this run.", 2);
	pthread_mutex_unlock(&m->lock);
	return gpushare_metrics_buf_finish(&b, text, len);
}

static int produce(void *arg, char **text, size_t *len)
{
	struct gpushare_metrics_farm *m = arg;
	struct gpushare_metrics_system_opts o;
	struct gpushare_metrics_buf b;
	char *own = NULL, *sys = NULL;
	size_t own_len = 0, sys_len = 0;
	int rc = gpushare_metrics_farm_text(m, &own, &own_len);

	if (rc)
		return rc;
	gpushare_metrics_system_opts_init(&o);
	o.default_pipe_dirs = false;
	o.processes = false;
	gpushare_metrics_buf_init(&b);
	gpushare_metrics_write_system(&b, &o, NULL);
	rc = gpushare_metrics_buf_finish(&b, &sys, &sys_len);
	if (rc) {
		free(own);
		return rc;
	}
	*text = malloc(own_len + sys_len + 1);
	if (!*text) {
		free(own);
		free(sys);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	memcpy(*text, own, own_len);
	memcpy(*text + own_len, sys, sys_len);
	(*text)[own_len + sys_len] = '\0';
	*len = own_len + sys_len;
	free(own);
	free(sys);
	return GPUSHARE_OK;
}

int gpushare_metrics_farm_start(const char *listen, size_t n_gpus, struct gpushare_metrics_farm **out)
{
	char addr[GPUSHARE_METRICS_ADDR_MAX];
	uint16_t port;
	int rc;

	*out = NULL;
	if (!listen || !listen[0])
		return GPUSHARE_OK;
	rc = gpushare_metrics_parse_listen(listen, addr, sizeof(addr), &port);
	if (!rc)
		rc = gpushare_metrics_farm_new(n_gpus, out);
	if (rc)
		return rc;
	rc = gpushare_metrics_server_start(addr, port, produce, *out, &(*out)->srv);
	if (rc) {
		char detail[512];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		gpushare_metrics_farm_stop(*out);
		*out = NULL;
		return gpushare_fail(rc, "--metrics-listen: %s", detail);
	}
	return GPUSHARE_OK;
}

void gpushare_metrics_farm_stop(struct gpushare_metrics_farm *m)
{
	if (!m)
		return;
	gpushare_metrics_server_stop(m->srv);
	pthread_mutex_destroy(&m->lock);
	free(m->gpus);
	free(m);
}
