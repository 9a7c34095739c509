/*
 * Summaries of farm journals (farm_journal.h): one or several shard
 * journals of one job list read in one pass each; jobs counted once, busy
 * time per GPU from the busy periods the records close.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "grow.h"
#include "gpushare/gpushare.h"
#include "gpushare/buf.h"
#include "farm_journal.h"

/* ---- status ---- */

struct interval {
	double start, end;
};

static int cmp_interval(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

void gpushare_journal_summary_release(struct farm_summary *s)
{
	free(s->gpus);
	memset(s, 0, sizeof(*s));
}

/* What the status keeps per GPU beside its summary entry. */
struct gpu_acc {
	double busy;                 /* the busy periods summed */
	struct interval *iv;         /* to merge: attempts of runs without busy
	                              * periods, and the periods of a shared GPU */
	size_t n_iv, cap_iv;
	double open_start, open_end; /* the period no record has closed yet */
	uint64_t open_n;
	size_t last_journal;         /* 1 + the last journal that named it */
	unsigned n_journals;
	bool shared;                 /* several journals name it: merged */
};

struct status_ctx {
	struct farm_summary *s;
	struct gpu_acc *g;           /* parallel to s->gpus */
	uint8_t *state;              /* enum farm_job_state per job, over all journals */
	size_t n_jobs;
	char first_path[4096];
	struct farm_config first;
	size_t journal;              /* the journal read now */
	struct farm_shard *seen;
	bool seg_busy;               /* this run writes busy periods */
	int phase;                   /* 1: everything; 2: the shared GPUs' periods */
	uint64_t *fails;             /* failed and timed-out jobs of this journal */
	size_t n_fails, cap_fails;
};

static int add_interval(struct gpu_acc *g, double start, double end)
{
	if (gpushare_grow(&g->iv, g->n_iv, &g->cap_iv, sizeof(*g->iv), 64))
		return GPUSHARE_E_NOMEM;
	g->iv[g->n_iv++] = (struct interval){ start, end };
	return GPUSHARE_OK;
}

static int add_period(struct gpu_acc *g, double start, double end)
{
	if (g->shared)
		return add_interval(g, start, end);
	g->busy += end - start;
	return GPUSHARE_OK;
}

/* The periods still open at the end of a run (a header or the end of a
 * journal): counted from their first start to their last end. */
static int close_open_periods(struct status_ctx *c)
{
	int rc = GPUSHARE_OK;

	for (size_t i = 0; !rc && i < c->s->n_gpus; i++) {
		struct gpu_acc *g = &c->g[i];

		if (g->open_n && (c->phase == 1 || g->shared))
			rc = add_period(g, g->open_start, g->open_end);
		g->open_n = 0;
	}
	return rc;
}

/* The summary entry of GPU id, added when new; -1 on no memory. */
static ssize_t status_gpu(struct status_ctx *c, const char *id)
{
	struct farm_summary *s = c->s;
	struct farm_gpu_summary *p;
	struct gpu_acc *g;

	for (size_t i = 0; i < s->n_gpus; i++)
		if (!strcmp(s->gpus[i].id, id))
			return (ssize_t)i;
	p = realloc(s->gpus, (s->n_gpus + 1) * sizeof(*p));
	if (!p)
		return -1;
	s->gpus = p;
	g = realloc(c->g, (s->n_gpus + 1) * sizeof(*g));
	if (!g)
		return -1;
	c->g = g;
	memset(&c->g[s->n_gpus], 0, sizeof(*g));
	p = &s->gpus[s->n_gpus];
	memset(p, 0, sizeof(*p));
	snprintf(p->id, sizeof(p->id), "%s", id);
	return (ssize_t)s->n_gpus++;
}

static int status_header(void *arg, struct farm_journal_data *d, const struct farm_config *cfg)
{
	struct status_ctx *c = arg;
	struct farm_summary *s = c->s;
	int rc = close_open_periods(c);

	if (rc)
		return rc;
	c->seg_busy = cfg->busy_periods;
	if (d->n_headers != 1 || c->phase != 1)
		return GPUSHARE_OK;
	/* The first header of a journal. */
	if (!c->state) {
		c->first = *cfg;
		snprintf(c->first_path, sizeof(c->first_path), "%s", d->path);
		c->n_jobs = (size_t)cfg->n_jobs;
		c->state = calloc(c->n_jobs ? c->n_jobs : 1, 1);
		if (!c->state)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory for %zu jobs", c->n_jobs);
		s->n_jobs = cfg->n_jobs;
		s->shard_count = cfg->shard.count;
	} else if (cfg->jobs_hash != c->first.jobs_hash || cfg->n_jobs != c->first.n_jobs ||
		   cfg->mode != c->first.mode) {
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' and '%s' are journals of different job lists",
				     c->first_path, d->path);
	}
	bool dup = false;

	for (size_t m = 0; m < s->shards_seen; m++)
		dup = dup || (c->seen[m].index == cfg->shard.index && c->seen[m].count == cfg->shard.count);
	if (!dup)
		c->seen[s->shards_seen++] = cfg->shard;
	if (cfg->shard.count > s->shard_count)
		s->shard_count = cfg->shard.count;
	return GPUSHARE_OK;
}

static int status_record(void *arg, struct farm_journal_data *d, const struct farm_record *r)
{
	struct status_ctx *c = arg;
	struct farm_summary *s = c->s;
	struct gpu_acc *g = NULL;
	ssize_t gi = -1;

	if (r->gpu_ref >= 0) {
		if ((gi = status_gpu(c, d->gpus[r->gpu_ref])) < 0)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		g = &c->g[gi];
	}
	if (c->phase == 1) {
		s->attempts++;
		if (r->start_unix_s < s->first_start_unix_s)
			s->first_start_unix_s = r->start_unix_s;
		if (r->end_unix_s > s->last_end_unix_s)
			s->last_end_unix_s = r->end_unix_s;
		if (r->outcome == FARM_OK) {
			c->state[r->job] = FARM_JOB_DONE;
		} else if (r->outcome == FARM_REFUSED) {
			if (c->state[r->job] != FARM_JOB_DONE)
				c->state[r->job] = FARM_JOB_FAILED;
		} else if (r->outcome == FARM_FAILED || r->outcome == FARM_TIMEOUT) {
			if (gpushare_grow(&c->fails, c->n_fails, &c->cap_fails, sizeof(*c->fails), 64))
				return GPUSHARE_E_NOMEM;
			c->fails[c->n_fails++] = r->job;
		}
		if (g) {
			s->gpus[gi].attempts++;
			s->gpus[gi].job_s += r->duration_s;
			if (g->last_journal != c->journal + 1) {
				g->last_journal = c->journal + 1;
				g->n_journals++;
			}
		}
	}
	if (!g || (c->phase == 2 && !g->shared))
		return GPUSHARE_OK;
	if (!c->seg_busy)
		return add_interval(g, r->start_unix_s, r->end_unix_s);
	if (!g->open_n || r->start_unix_s < g->open_start)
		g->open_start = r->start_unix_s;
	if (!g->open_n || r->end_unix_s > g->open_end)
		g->open_end = r->end_unix_s;
	g->open_n++;
	if (r->gpu_busy_s >= 0) {
		g->open_n = 0;
		return add_period(g, r->end_unix_s - r->gpu_busy_s, r->end_unix_s);
	}
	return GPUSHARE_OK;
}

static int status_fault(void *arg, struct farm_journal_data *d, const struct farm_fault_record *f)
{
	struct status_ctx *c = arg;
	struct farm_summary *s = c->s;

	(void)d;
	if (c->phase != 1)
		return GPUSHARE_OK;
	s->faults++;
	s->bystanders += f->n_bystanders;
	s->culprits_failed += f->culprit_failed;
	s->fault_recovery_s += f->recovered_unix_s - f->start_unix_s;
	if (s->n_culprits < sizeof(s->culprits) / sizeof(s->culprits[0]))
		s->culprits[s->n_culprits++] = f->culprit;
	return GPUSHARE_OK;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The end of a journal: its failed jobs whose retries are used up. */
static void status_journal_end(struct status_ctx *c, unsigned retries_last)
{
	if (c->n_fails)
		qsort(c->fails, c->n_fails, sizeof(*c->fails), cmp_u64);
	for (size_t i = 0; i < c->n_fails;) {
		size_t k = i;

		while (k < c->n_fails && c->fails[k] == c->fails[i])
			k++;
		if (k - i >= (size_t)retries_last + 1 && c->state[c->fails[i]] != FARM_JOB_DONE)
			c->state[c->fails[i]] = FARM_JOB_FAILED;
		i = k;
	}
	c->n_fails = 0;
}

static double union_length(struct interval *iv, size_t m)
{
	double busy = 0, cur_s = 0, cur_e = 0;

	if (!m)
		return 0;
	qsort(iv, m, sizeof(*iv), cmp_interval);
	for (size_t i = 0; i < m; i++) {
		if (i == 0 || iv[i].start > cur_e) {
			busy += cur_e - cur_s;
			cur_s = iv[i].start;
			cur_e = iv[i].end;
		} else if (iv[i].end > cur_e) {
			cur_e = iv[i].end;
		}
	}
	return m ? busy + cur_e - cur_s : 0;
}

static int status_pass(struct status_ctx *c, const char *const *paths, size_t n)
{
	const struct farm_journal_scan scan = { status_header, status_record, c, status_fault };
	int rc = GPUSHARE_OK;

	for (size_t k = 0; k < n && !rc; k++) {
		struct farm_journal_data d;

		c->journal = k;
		c->seg_busy = false;
		rc = gpushare_farm_journal_scan_path(paths[k], &d, &scan);
		if (!rc)
			rc = close_open_periods(c);
		if (!rc && c->phase == 1) {
			c->s->torn_tail = c->s->torn_tail || d.torn_tail;
			status_journal_end(c, d.retries_last);
		}
		gpushare_farm_journal_data_release(&d);
	}
	return rc;
}

int gpushare_journal_summary_build(const char *const *paths, size_t n, struct farm_summary *s)
{
	struct status_ctx c;
	bool shared = false;
	int rc;

	memset(s, 0, sizeof(*s));
	memset(&c, 0, sizeof(c));
	if (!n)
		return gpushare_fail(GPUSHARE_E_INVAL, "no farm journal to summarise");
	c.s = s;
	c.phase = 1;
	c.seen = calloc(n, sizeof(*c.seen));
	if (!c.seen)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	s->first_start_unix_s = INFINITY;
	s->last_end_unix_s = -INFINITY;
	rc = status_pass(&c, paths, n);
	/* A GPU that several journals name: its periods may overlap; read
	 * them again and merge them. */
	for (size_t i = 0; !rc && i < s->n_gpus; i++) {
		if (c.g[i].n_journals > 1) {
			c.g[i].shared = shared = true;
			c.g[i].busy = 0;
			c.g[i].n_iv = 0;
		}
	}
	if (!rc && shared) {
		c.phase = 2;
		rc = status_pass(&c, paths, n);
	}
	if (rc)
		goto out;
	for (size_t i = 0; i < c.n_jobs; i++) {
		if (c.state[i] == FARM_JOB_DONE)
			s->done++;
		else if (c.state[i] == FARM_JOB_FAILED)
			s->failed++;
	}
	s->unfinished = s->n_jobs - s->done - s->failed;
	if (s->attempts) {
		s->makespan_s = s->last_end_unix_s - s->first_start_unix_s;
		if (s->makespan_s > 0)
			s->jobs_per_s = (double)(s->done + s->failed) / s->makespan_s;
	} else {
		s->first_start_unix_s = s->last_end_unix_s = 0;
	}
	for (size_t i = 0; i < s->n_gpus; i++) {
		s->gpus[i].busy_s = c.g[i].busy + union_length(c.g[i].iv, c.g[i].n_iv);
		s->gpus[i].busy_fraction = s->makespan_s > 0 ? s->gpus[i].busy_s / s->makespan_s : 0;
	}
out:
	for (size_t i = 0; c.g && i < s->n_gpus; i++)
		free(c.g[i].iv);
	free(c.g);
	free(c.state);
	free(c.seen);
	free(c.fails);
	if (rc)
		gpushare_journal_summary_release(s);
	return rc;
}
