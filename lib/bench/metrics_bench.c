/*
 * The live view of a benchmark for Prometheus (`gpushare bench
 * --metrics-listen`): per-worker request-duration histograms, request and
 * error counters and the run phase, read from the shared region the workers
 * write, plus the machine's GPU and MPS state (metrics_system.c).
 *
 * Workers are never slowed by a scrape: they write their slots with relaxed
 * atomic stores and never take a lock; a scrape copies each slot's histogram
 * with atomic loads. The only lock, `lock`, guards the pointer to the
 * current region against the launcher unmapping it: the launcher attaches a
 * region after creating it and detaches it before unmapping it, and detach
 * waits for a scrape that is copying (a few microseconds per worker).
 *
 * When a region is detached its final values are kept (`retained`), so a
 * strategy's series stay in the exposition, unchanged, until the run ends:
 * counters never go backwards and Prometheus keeps the last values.
 *
 * A view may outlive one run (a sweep serves all its runs from one server):
 * gpushare_metrics_bench_set_run() then gives the series of each run labels
 * of their own (the run's shape, workers, batch, repeat), carried by each
 * view, so the retained series of earlier runs never collide with the live
 * ones.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"

#define HIST_NAME "gpushare_request_duration_seconds"
#define N_FIXED_LABELS 3               /* strategy, workload, worker */

/* The labels a run adds to its series (gpushare_metrics_bench_set_run). */
struct run_labels {
	char workload[64];
	size_t n;
	char name[GPUSHARE_METRICS_MAX_RUN_LABELS][GPUSHARE_METRICS_RUN_LABEL_NAME_MAX];
	char value[GPUSHARE_METRICS_MAX_RUN_LABELS][GPUSHARE_METRICS_RUN_LABEL_VALUE_MAX];
};

/* The values of one worker's series. */
struct worker_view {
	int strategy;
	int worker;
	struct run_labels run;
	uint64_t cum[GPUSHARE_METRICS_MAX_BUCKETS];
	uint64_t count;                /* all buckets: le="+Inf" and _count */
	double sum_seconds;
	uint64_t requests, errors;
};

struct gpushare_metrics_bench {
	struct gpushare_metrics_server *srv;
	double le[GPUSHARE_METRICS_MAX_BUCKETS];
	size_t n_le;
	int strategies[GPUSHARE_STRATEGY_COUNT + 1];
	size_t n_strategies;

	pthread_mutex_t lock;          /* guards everything below */
	struct run_labels next;        /* for the next region attached */
	struct run_labels live;        /* of the region attached */
	struct gpushare_region_header *reg;
	uint32_t n_slots;
	size_t offset;
	int strategy;
	char mps_pipe_dir[GPUSHARE_PATH_MAX];
	bool done[GPUSHARE_STRATEGY_COUNT + 1];
	struct worker_view *retained;
	size_t n_retained, cap_retained;
};

static int strategy_slot(const struct gpushare_metrics_bench *m, int strategy)
{
	for (size_t i = 0; i < m->n_strategies; i++) {
		if (m->strategies[i] == strategy)
			return (int)i;
	}
	return -1;
}

/* Fill v from a live slot; tmp is scratch for the histogram copy. */
static void view_slot(const struct gpushare_metrics_bench *m, struct gpushare_slot *sl, struct gpushare_hist *tmp,
		      struct worker_view *v)
{
	gpushare_hist_snapshot(&sl->hist, tmp);
	v->count = gpushare_metrics_hist_cum(tmp, m->le, m->n_le, v->cum);
	v->sum_seconds = (double)tmp->sum_ns / 1e9;
	v->requests = __atomic_load_n(&sl->requests, __ATOMIC_RELAXED);
	v->errors = __atomic_load_n(&sl->errors, __ATOMIC_RELAXED);
}

static const char *const phase_names[] = { "pending", "starting", "warmup", "measuring", "stopping", "done" };
#define N_PHASES (sizeof(phase_names) / sizeof(phase_names[0]))

/* Phase of the attached region, from its header. */
static int live_phase(const struct gpushare_region_header *reg)
{
	uint32_t ph = __atomic_load_n(&reg->phase, __ATOMIC_ACQUIRE);
	uint64_t now = gpushare_now_ns();

	if (ph == GPUSHARE_PHASE_INIT)
		return 1;
	if (ph == GPUSHARE_PHASE_GO) {
		if (now < __atomic_load_n(&reg->t_measure_start_ns, __ATOMIC_RELAXED))
			return 2;
		if (now < __atomic_load_n(&reg->t_measure_end_ns, __ATOMIC_RELAXED))
			return 3;
	}
	return 4;
}

/* A consistent copy of everything the exposition shows, taken under the lock. */
struct snapshot {
	struct worker_view *views;
	size_t n_views;
	int phase[GPUSHARE_STRATEGY_COUNT + 1];
	char mps_pipe_dir[GPUSHARE_PATH_MAX];
};

static int take_snapshot(struct gpushare_metrics_bench *m, struct snapshot *s)
{
	struct gpushare_hist *tmp = malloc(sizeof(*tmp));
	size_t n;
	int rc = GPUSHARE_OK;

	if (!tmp)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate a histogram copy");
	pthread_mutex_lock(&m->lock);
	n = m->n_retained + (m->reg ? m->n_slots : 0);
	s->views = calloc(n ? n : 1, sizeof(*s->views));
	if (!s->views) {
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate the metrics snapshot");
		goto out;
	}
	for (size_t i = 0; i < m->n_retained; i++)
		s->views[s->n_views++] = m->retained[i];
	for (uint32_t i = 0; m->reg && i < m->n_slots; i++) {
		struct worker_view *v = &s->views[s->n_views++];

		v->strategy = m->strategy;
		v->worker = (int)(m->offset + i);
		v->run = m->live;
		view_slot(m, gpushare_region_slot(m->reg, i), tmp, v);
	}
	for (size_t i = 0; i < m->n_strategies; i++)
		s->phase[i] = m->done[i] ? 5 : 0;
	if (m->reg && strategy_slot(m, m->strategy) >= 0)
		s->phase[strategy_slot(m, m->strategy)] = live_phase(m->reg);
	snprintf(s->mps_pipe_dir, sizeof(s->mps_pipe_dir), "%s", m->reg ? m->mps_pipe_dir : "");
out:
	pthread_mutex_unlock(&m->lock);
	free(tmp);
	return rc;
}

struct view_labels {
	char worker[16];
	struct gpushare_metrics_label l[N_FIXED_LABELS + GPUSHARE_METRICS_MAX_RUN_LABELS];
	size_t n;
};

static void view_labels(const struct worker_view *v, struct view_labels *vl)
{
	snprintf(vl->worker, sizeof(vl->worker), "%d", v->worker);
	vl->l[0] = (struct gpushare_metrics_label){ "strategy", gpushare_strategy_name(v->strategy) };
	vl->l[1] = (struct gpushare_metrics_label){ "workload", v->run.workload };
	vl->l[2] = (struct gpushare_metrics_label){ "worker", vl->worker };
	vl->n = N_FIXED_LABELS;
	for (size_t i = 0; i < v->run.n; i++)
		vl->l[vl->n++] = (struct gpushare_metrics_label){ v->run.name[i], v->run.value[i] };
}

int gpushare_metrics_bench_render(struct gpushare_metrics_bench *m, char **text, size_t *len)
{
	struct gpushare_metrics_system_opts o;
	struct gpushare_metrics_buf b;
	struct snapshot s;
	int rc;

	memset(&s, 0, sizeof(s));
	rc = take_snapshot(m, &s);
	if (rc)
		return rc;
	gpushare_metrics_buf_init(&b);
	gpushare_metrics_family(&b, "gpushare_bench_phase", "gauge",
				"1 for the phase each strategy of the run is in (pending, starting, warmup, measuring, "
				"stopping, done), 0 for the others.");
	for (size_t i = 0; i < m->n_strategies; i++) {
		for (size_t p = 0; p < N_PHASES; p++) {
			struct gpushare_metrics_label l[2] = {
				{ "strategy", gpushare_strategy_name(m->strategies[i]) }, { "phase", phase_names[p] },
			};

			gpushare_metrics_sample(&b, "gpushare_bench_phase", l, 2, s.phase[i] == (int)p);
		}
	}
	gpushare_metrics_family(&b, HIST_NAME, "histogram",
				"Duration of the requests a worker recorded in the measurement window, seconds.");
	for (size_t i = 0; i < s.n_views; i++) {
		struct view_labels vl;

		view_labels(&s.views[i], &vl);
		gpushare_metrics_histogram_cum(&b, HIST_NAME, vl.l, vl.n, s.views[i].cum, m->le, m->n_le, s.views[i].count,
					       s.views[i].sum_seconds);
	}
	gpushare_metrics_family(&b, "gpushare_requests_total", "counter",
				"Requests a worker recorded in the measurement window.");
	for (size_t i = 0; i < s.n_views; i++) {
		struct view_labels vl;

		view_labels(&s.views[i], &vl);
		gpushare_metrics_sample_u64(&b, "gpushare_requests_total", vl.l, vl.n, s.views[i].requests);
	}
	gpushare_metrics_family(&b, "gpushare_request_errors_total", "counter",
				"Requests of a worker that failed without ending the run.");
	for (size_t i = 0; i < s.n_views; i++) {
		struct view_labels vl;

		view_labels(&s.views[i], &vl);
		gpushare_metrics_sample_u64(&b, "gpushare_request_errors_total", vl.l, vl.n, s.views[i].errors);
	}
	free(s.views);
	gpushare_metrics_system_opts_init(&o);
	o.default_pipe_dirs = false;
	if (s.mps_pipe_dir[0]) {
		snprintf(o.pipe_dirs[0], sizeof(o.pipe_dirs[0]), "%s", s.mps_pipe_dir);
		o.n_pipe_dirs = 1;
	}
	gpushare_metrics_write_system(&b, &o, NULL);
	return gpushare_metrics_buf_finish(&b, text, len);
}

static int produce(void *arg, char **text, size_t *len)
{
	return gpushare_metrics_bench_render(arg, text, len);
}

int gpushare_metrics_bench_start(const struct gpushare_bench_config *c, struct gpushare_metrics_bench **out)
{
	struct gpushare_metrics_bench *m;
	char addr[GPUSHARE_METRICS_ADDR_MAX];
	uint16_t port;
	int rc;

	*out = NULL;
	if (!c->metrics_listen[0])
		return GPUSHARE_OK;
	rc = gpushare_metrics_parse_listen(c->metrics_listen, addr, sizeof(addr), &port);
	if (rc)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate the metrics view");
	pthread_mutex_init(&m->lock, NULL);
	/* Command mode runs no built-in workload: "command", as in the JSON. */
	{
		char label[GPUSHARE_BENCH_MAX_MIX * GPUSHARE_BENCH_MIX_LABEL];

		snprintf(m->next.workload, sizeof(m->next.workload), "%s",
			 gpushare_bench_workload_label(c, label, sizeof(label)));
	}
	m->live = m->next;
	if (c->n_metrics_buckets) {
		m->n_le = c->n_metrics_buckets > GPUSHARE_METRICS_MAX_BUCKETS ? GPUSHARE_METRICS_MAX_BUCKETS
									   : c->n_metrics_buckets;
		memcpy(m->le, c->metrics_buckets, m->n_le * sizeof(*m->le));
	} else {
		m->n_le = gpushare_metrics_default_buckets(m->le, GPUSHARE_METRICS_MAX_BUCKETS);
	}
	if (c->ceiling)
		m->strategies[m->n_strategies++] = GPUSHARE_STRATEGY_CEILING;
	for (size_t i = 0; i < c->n_strategies && i < GPUSHARE_STRATEGY_COUNT; i++)
		m->strategies[m->n_strategies++] = c->strategies[i];
	rc = gpushare_metrics_server_start(addr, port, produce, m, &m->srv);
	if (rc) {
		char detail[512];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		pthread_mutex_destroy(&m->lock);
		free(m);
		return gpushare_fail(rc, "--metrics-listen: %s", detail);
	}
	*out = m;
	return GPUSHARE_OK;
}

void gpushare_metrics_bench_attach(struct gpushare_metrics_bench *m, enum gpushare_strategy strategy,
				   struct gpushare_region_header *reg, uint32_t n_slots, size_t offset,
				   const char *mps_pipe_dir)
{
	int k;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->reg = reg;
	m->n_slots = n_slots;
	m->offset = offset;
	m->strategy = strategy;
	m->live = m->next;
	snprintf(m->mps_pipe_dir, sizeof(m->mps_pipe_dir), "%s", mps_pipe_dir ? mps_pipe_dir : "");
	k = strategy_slot(m, strategy);
	if (k >= 0)
		m->done[k] = false;
	pthread_mutex_unlock(&m->lock);
}

static bool same_run(const struct run_labels *a, const struct run_labels *b)
{
	if (strcmp(a->workload, b->workload) || a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		if (strcmp(a->name[i], b->name[i]) || strcmp(a->value[i], b->value[i]))
			return false;
	}
	return true;
}

/* Keep v, replacing an earlier entry of the same series (strategy, worker
 * and run labels). */
static void retain(struct gpushare_metrics_bench *m, const struct worker_view *v)
{
	for (size_t i = 0; i < m->n_retained; i++) {
		if (m->retained[i].strategy == v->strategy && m->retained[i].worker == v->worker &&
		    same_run(&m->retained[i].run, &v->run)) {
			m->retained[i] = *v;
			return;
		}
	}
	if (m->n_retained == m->cap_retained) {
		size_t cap = m->cap_retained ? 2 * m->cap_retained : 16;
		struct worker_view *r = realloc(m->retained, cap * sizeof(*r));

		if (!r)
			return; /* the series just ends, as it would without retention */
		m->retained = r;
		m->cap_retained = cap;
	}
	m->retained[m->n_retained++] = *v;
}

void gpushare_metrics_bench_detach(struct gpushare_metrics_bench *m)
{
	struct gpushare_hist *tmp;
	int k;

	if (!m)
		return;
	tmp = malloc(sizeof(*tmp));
	pthread_mutex_lock(&m->lock);
	for (uint32_t i = 0; tmp && m->reg && i < m->n_slots; i++) {
		struct worker_view v;

		memset(&v, 0, sizeof(v));
		v.strategy = m->strategy;
		v.worker = (int)(m->offset + i);
		v.run = m->live;
		view_slot(m, gpushare_region_slot(m->reg, i), tmp, &v);
		retain(m, &v);
	}
	k = strategy_slot(m, m->strategy);
	if (m->reg && k >= 0)
		m->done[k] = true;
	m->reg = NULL;
	m->mps_pipe_dir[0] = '\0';
	pthread_mutex_unlock(&m->lock);
	free(tmp);
}

static bool valid_run_label_name(const char *name)
{
	static const char *const taken[] = { "strategy", "workload", "worker", "le", "phase" };

	if (!name || !*name || strlen(name) >= GPUSHARE_METRICS_RUN_LABEL_NAME_MAX || (name[0] >= '0' && name[0] <= '9'))
		return false;
	if (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(name))
		return false;
	for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
		if (!strcmp(name, taken[i]))
			return false;
	}
	return true;
}

int gpushare_metrics_bench_set_run(struct gpushare_metrics_bench *m, const char *workload,
				   const struct gpushare_metrics_label *labels, size_t n_labels)
{
	if (!m)
		return GPUSHARE_OK;
	if (n_labels > GPUSHARE_METRICS_MAX_RUN_LABELS)
		return gpushare_fail(GPUSHARE_E_INVAL, "%zu run labels (at most %d)", n_labels,
				     GPUSHARE_METRICS_MAX_RUN_LABELS);
	for (size_t i = 0; i < n_labels; i++) {
		if (!valid_run_label_name(labels[i].name))
			return gpushare_fail(GPUSHARE_E_INVAL, "'%s' cannot be a run label name",
					     labels[i].name ? labels[i].name : "(null)");
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(labels[i].name, labels[j].name))
				return gpushare_fail(GPUSHARE_E_INVAL, "run label '%s' given twice", labels[i].name);
		}
	}
	pthread_mutex_lock(&m->lock);
	if (workload && *workload)
		snprintf(m->next.workload, sizeof(m->next.workload), "%s", workload);
	m->next.n = n_labels;
	for (size_t i = 0; i < n_labels; i++) {
		snprintf(m->next.name[i], sizeof(m->next.name[i]), "%s", labels[i].name);
		snprintf(m->next.value[i], sizeof(m->next.value[i]), "%s", labels[i].value ? labels[i].value : "");
	}
	pthread_mutex_unlock(&m->lock);
	return GPUSHARE_OK;
}

void gpushare_metrics_bench_stop(struct gpushare_metrics_bench *m)
{
	if (!m)
		return;
	gpushare_metrics_server_stop(m->srv);
	pthread_mutex_destroy(&m->lock);
	free(m->retained);
	free(m);
}
