/*
 * A loaded report's runs, in their two forms (include/gpushare/report.h,
 * struct gpushare_report): the runs kept whole (struct
 * gpushare_report_run) and the ok closed-loop runs folded into groups, one
 * per cell and names, of 80-byte samples. Here: folding a run as it is
 * loaded, reading every run back in file order (the cursor), the runs as
 * units in the order of their first line (summarise, cap_shapes), and
 * capping the shapes.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "grow.h"
#include "hash.h"
#include "report_internal.h"

/* Samples are addressed by a 32-bit line and, in the loader's duplicate
 * table, by a 31-bit group index: a run beyond either stays whole. */
#define MAX_GROUPS ((size_t)1 << 31)

bool gpushare_report_foldable(const struct gpushare_report_run *run)
{
	return run->status == GPUSHARE_RUN_OK && !(run->rate > 0) && !run->find_peak && run->line <= UINT32_MAX;
}

void gpushare_report_run_release(struct gpushare_report_run *run)
{
	free(run->hist_le_ns);
	free(run->hist_counts);
	run->hist_le_ns = run->hist_counts = NULL;
	run->hist_n = 0;
	if (run->text) {
		free(run->text);
		run->text = NULL;
		run->shape = run->workload = run->key = run->error = run->peak_note = run->device_name = run->mig_layout = "";
	}
}

/* ---- folding ---- */

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;
}

/* The names are the report's one copy of each string: compared and hashed
 * as pointers. */
static uint64_t group_hash(const char *shape, const char *workload, const char *key, const char *device,
			   const char *layout, int strategy, int workers, long batch, double thread_pct, int n_devices)
{
	uint64_t h = GPUSHARE_FNV1A_OFFSET, tp;

	memcpy(&tp, &thread_pct, sizeof(tp));
	h = mix(h, (uint64_t)(uintptr_t)shape);
	h = mix(h, (uint64_t)(uintptr_t)workload);
	h = mix(h, (uint64_t)(uintptr_t)key);
	h = mix(h, (uint64_t)(uintptr_t)device);
	h = mix(h, (uint64_t)(uintptr_t)layout);
	h = mix(h, ((uint64_t)(uint32_t)strategy << 32) | (uint32_t)workers);
	h = mix(h, (uint64_t)batch);
	h = mix(h, tp);
	h = mix(h, (uint64_t)(uint32_t)n_devices);
	return h ^ (h >> 29);
}

static uint64_t hash_of_group(const struct gpushare_report_group *g)
{
	return group_hash(g->shape, g->workload, g->key, g->device_name, g->mig_layout, g->strategy, g->workers, g->batch,
			  g->thread_pct, g->n_devices);
}

static bool is_group_of(const struct gpushare_report_group *g, const struct gpushare_report_run *run)
{
	return g->shape == run->shape && g->workload == run->workload && g->key == run->key &&
	       g->device_name == run->device_name && g->mig_layout == run->mig_layout && g->strategy == run->strategy && g->workers == run->workers &&
	       g->batch == run->batch && g->thread_pct == run->thread_pct && g->n_devices == run->n_devices;
}

static uint64_t group_index_hash(const void *ctx, uint64_t i)
{
	return hash_of_group(&((const struct gpushare_report *)ctx)->groups[i - 1]);
}

/* What group_same compares against: the run and the report. */
struct group_probe {
	const struct gpushare_report *r;
	const struct gpushare_report_run *run;
};

static bool group_same(const void *ctx, uint64_t i)
{
	const struct group_probe *p = ctx;

	return is_group_of(&p->r->groups[i - 1], p->run);
}

int gpushare_report_fold(struct gpushare_report *r, struct report_folder *f, const struct gpushare_report_run *run,
			 size_t *group, size_t *sample)
{
	struct gpushare_report_group *g = NULL;
	struct gpushare_report_sample *s;
	struct group_probe p = { r, run };
	bool found;
	size_t k;
	int rc;

	if ((rc = gpushare_index_room(&f->ix, 256, group_index_hash, r)))
		return rc;
	k = gpushare_index_find(&f->ix,
				group_hash(run->shape, run->workload, run->key, run->device_name, run->mig_layout, run->strategy,
					   run->workers, run->batch, run->thread_pct, run->n_devices),
				group_same, &p, &found);
	if (found)
		g = &r->groups[f->ix.slot[k] - 1];
	if (!g) {
		if (r->n_groups >= MAX_GROUPS - 1)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory (more than 2^31 cells)");
		if ((rc = gpushare_grow(&r->groups, r->n_groups, &f->groups_cap, sizeof(*r->groups), 16)) ||
		    (rc = gpushare_grow(&f->cap, r->n_groups, &f->cap_room, sizeof(*f->cap), 16)))
			return rc;
		g = &r->groups[r->n_groups];
		memset(g, 0, sizeof(*g));
		g->shape = run->shape;
		g->workload = run->workload;
		g->key = run->key;
		g->device_name = run->device_name;
		g->mig_layout = run->mig_layout;
		g->strategy = run->strategy;
		g->workers = run->workers;
		g->batch = run->batch;
		g->thread_pct = run->thread_pct;
		g->n_devices = run->n_devices;
		f->cap[r->n_groups] = 0;
		gpushare_index_put(&f->ix, k, ++r->n_groups);
	}
	if ((rc = gpushare_grow(&g->samples, g->n_samples, &f->cap[g - r->groups], sizeof(*g->samples), 8)))
		return rc;
	s = &g->samples[g->n_samples];
	s->items_per_second = run->items_per_second;
	s->mean_seconds = run->mean_seconds;
	s->p50_seconds = run->p50_seconds;
	s->p90_seconds = run->p90_seconds;
	s->p99_seconds = run->p99_seconds;
	s->p999_seconds = run->p999_seconds;
	s->fairness = run->fairness;
	s->util_mean_pct = run->util_mean_pct;
	s->mem_used_max_bytes = run->mem_used_max_bytes;
	s->line = (uint32_t)run->line;
	s->repeat = (int32_t)run->repeat;
	*group = (size_t)(g - r->groups);
	*sample = g->n_samples++;
	return GPUSHARE_OK;
}

void gpushare_report_fold_done(struct gpushare_report *r, struct report_folder *f)
{
	for (size_t i = 0; i < r->n_groups; i++) {
		struct gpushare_report_group *g = &r->groups[i];

		if (i < f->cap_room && g->n_samples < f->cap[i]) {
			struct gpushare_report_sample *ns = realloc(g->samples, g->n_samples * sizeof(*ns));

			if (ns)
				g->samples = ns;
		}
	}
	if (r->n_groups && r->n_groups < f->groups_cap) {
		struct gpushare_report_group *ng = realloc(r->groups, r->n_groups * sizeof(*ng));

		if (ng)
			r->groups = ng;
	}
	gpushare_index_release(&f->ix);
	free(f->cap);
	memset(f, 0, sizeof(*f));
}

void gpushare_report_group_run(const struct gpushare_report_group *g, const struct gpushare_report_sample *s,
			       struct gpushare_report_run *run)
{
	memset(run, 0, sizeof(*run));
	run->shape = g->shape;
	run->workload = g->workload;
	run->key = g->key;
	run->error = run->peak_note = "";
	run->device_name = g->device_name;
	run->mig_layout = g->mig_layout;
	run->n_devices = g->n_devices;
	run->strategy = g->strategy;
	run->workers = g->workers;
	run->batch = g->batch;
	run->thread_pct = g->thread_pct;
	run->repeat = s->repeat;
	run->status = GPUSHARE_RUN_OK;
	run->line = s->line;
	run->items_per_second = s->items_per_second;
	run->requests_per_second = NAN;
	run->mean_seconds = s->mean_seconds;
	run->p50_seconds = s->p50_seconds;
	run->p90_seconds = s->p90_seconds;
	run->p99_seconds = s->p99_seconds;
	run->p999_seconds = s->p999_seconds;
	run->fairness = s->fairness;
	run->util_mean_pct = s->util_mean_pct;
	run->mem_used_max_bytes = s->mem_used_max_bytes;
}

size_t gpushare_report_n_failed(const struct gpushare_report *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_whole; i++)
		n += r->whole[i].status != GPUSHARE_RUN_OK;
	return n;
}

/* ---- units: whole runs and groups by their first line ---- */

const char *gpushare_report_unit_shape(const struct report_unit *u)
{
	return u->run ? u->run->shape : u->group->shape;
}

size_t gpushare_report_unit_line(const struct report_unit *u)
{
	return u->run ? u->run->line : u->group->samples[0].line;
}

struct first_line {
	size_t line, group;
};

static int cmp_first_line(const void *a, const void *b)
{
	const struct first_line *x = a, *y = b;

	if (x->line != y->line)
		return (x->line > y->line) - (x->line < y->line);
	return (x->group > y->group) - (x->group < y->group);
}

int gpushare_report_units(const struct gpushare_report *r, struct report_unit **units, size_t *n)
{
	size_t total = r->n_whole + r->n_groups, w = 0, g = 0, k = 0;
	struct first_line *order = calloc(r->n_groups ? r->n_groups : 1, sizeof(*order));
	struct report_unit *u = calloc(total ? total : 1, sizeof(*u));

	*units = NULL;
	*n = 0;
	if (!order || !u) {
		free(order);
		free(u);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < r->n_groups; i++) {
		order[i].line = r->groups[i].n_samples ? r->groups[i].samples[0].line : SIZE_MAX;
		order[i].group = i;
	}
	qsort(order, r->n_groups, sizeof(*order), cmp_first_line);
	while (w < r->n_whole || g < r->n_groups) {
		if (w < r->n_whole && (g == r->n_groups || r->whole[w].line <= order[g].line)) {
			u[k].run = &r->whole[w];
			u[k++].index = w++;
		} else {
			if (r->groups[order[g].group].n_samples) {
				u[k].group = &r->groups[order[g].group];
				u[k++].index = order[g].group;
			}
			g++;
		}
	}
	free(order);
	*units = u;
	*n = k;
	return GPUSHARE_OK;
}

/* ---- every run in file order ---- */

static size_t next_line(const struct gpushare_report_cursor *c, size_t h)
{
	size_t g = c->heap[h];

	return c->r->groups[g].samples[c->next[g]].line;
}

static void sift_down(struct gpushare_report_cursor *c, size_t h)
{
	for (;;) {
		size_t l = 2 * h + 1, m = h, t;

		if (l < c->n_heap && next_line(c, l) < next_line(c, m))
			m = l;
		if (l + 1 < c->n_heap && next_line(c, l + 1) < next_line(c, m))
			m = l + 1;
		if (m == h)
			return;
		t = c->heap[h];
		c->heap[h] = c->heap[m];
		c->heap[m] = t;
		h = m;
	}
}

int gpushare_report_cursor_open(const struct gpushare_report *r, struct gpushare_report_cursor *c)
{
	memset(c, 0, sizeof(*c));
	c->r = r;
	if (!r->n_groups)
		return GPUSHARE_OK;
	c->heap = malloc(r->n_groups * sizeof(*c->heap));
	c->next = calloc(r->n_groups, sizeof(*c->next));
	if (!c->heap || !c->next) {
		free(c->heap);
		free(c->next);
		c->heap = c->next = NULL;
		c->whole = r->n_whole;
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < r->n_groups; i++) {
		if (r->groups[i].n_samples)
			c->heap[c->n_heap++] = i;
	}
	for (size_t h = c->n_heap / 2; h-- > 0;)
		sift_down(c, h);
	return GPUSHARE_OK;
}

const struct gpushare_report_run *gpushare_report_cursor_next(struct gpushare_report_cursor *c)
{
	const struct gpushare_report *r = c->r;
	const struct gpushare_report_group *g;
	size_t top;

	if (c->whole < r->n_whole && (!c->n_heap || r->whole[c->whole].line <= next_line(c, 0)))
		return &r->whole[c->whole++];
	if (!c->n_heap)
		return NULL;
	top = c->heap[0];
	g = &r->groups[top];
	gpushare_report_group_run(g, &g->samples[c->next[top]], &c->view);
	if (++c->next[top] == g->n_samples)
		c->heap[0] = c->heap[--c->n_heap];
	sift_down(c, 0);
	return &c->view;
}

void gpushare_report_cursor_close(struct gpushare_report_cursor *c)
{
	free(c->heap);
	free(c->next);
	memset(c, 0, sizeof(*c));
}

/* ---- capping the shapes ---- */

/* A shape's id: the names by id, one looked for. */
struct shape_probe {
	const char *const *names;
	const char *shape;
};

static uint64_t shape_hash(const void *ctx, uint64_t id)
{
	return gpushare_fnv1a_str(((const struct shape_probe *)ctx)->names[id - 1]);
}

static bool shape_same(const void *ctx, uint64_t id)
{
	const struct shape_probe *p = ctx;

	return !strcmp(p->names[id - 1], p->shape);
}

int gpushare_report_cap_shapes(struct gpushare_report *r, size_t max_shapes)
{
	size_t n_ids = 0, n_units = 0, kept = 0, omitted = 0;
	struct report_unit *units = NULL;
	struct gpushare_index ix = { 0 };
	const char **names;
	bool *drop_whole, *drop_group;
	int rc;

	r->n_shapes_omitted = r->n_runs_omitted = 0;
	if ((rc = gpushare_report_units(r, &units, &n_units)))
		return rc;
	/* The shapes' ids in order of first appearance, found before any run
	 * moves: names[id] is the shape, the index finds the id (+1). */
	names = calloc(n_units ? n_units : 1, sizeof(*names));
	drop_whole = calloc(r->n_whole ? r->n_whole : 1, sizeof(*drop_whole));
	drop_group = calloc(r->n_groups ? r->n_groups : 1, sizeof(*drop_group));
	if (!names || !drop_whole || !drop_group) {
		free(units);
		free(names);
		free(drop_whole);
		free(drop_group);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < n_units; i++) {
		struct shape_probe p = { names, gpushare_report_unit_shape(&units[i]) };
		size_t slot, id;
		bool found;

		if ((rc = gpushare_index_room(&ix, 16, shape_hash, &p))) {
			free(units);
			free(names);
			free(drop_whole);
			free(drop_group);
			return rc;
		}
		slot = gpushare_index_find(&ix, gpushare_fnv1a_str(p.shape), shape_same, &p, &found);
		if (!found) {
			names[n_ids++] = p.shape;
			gpushare_index_put(&ix, slot, n_ids);
		}
		id = (size_t)ix.slot[slot] - 1;
		if (id < max_shapes)
			continue;
		if (units[i].run)
			drop_whole[units[i].index] = true;
		else
			drop_group[units[i].index] = true;
	}
	gpushare_index_release(&ix);
	for (size_t i = 0; i < r->n_whole; i++) {
		if (drop_whole[i]) {
			omitted++;
			gpushare_report_run_release(&r->whole[i]);
			continue;
		}
		if (kept != i)
			r->whole[kept] = r->whole[i];
		kept++;
	}
	r->n_whole = kept;
	kept = 0;
	for (size_t i = 0; i < r->n_groups; i++) {
		if (drop_group[i]) {
			omitted += r->groups[i].n_samples;
			free(r->groups[i].samples);
			continue;
		}
		if (kept != i)
			r->groups[kept] = r->groups[i];
		kept++;
	}
	r->n_groups = kept;
	r->n_shapes_omitted = n_ids > max_shapes ? n_ids - max_shapes : 0;
	r->n_runs_omitted = omitted;
	r->n_runs -= omitted < r->n_runs ? omitted : r->n_runs;
	free(units);
	free(names);
	free(drop_whole);
	free(drop_group);
	return GPUSHARE_OK;
}
