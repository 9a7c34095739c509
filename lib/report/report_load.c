/*
 * Reading a sweep's results file (JSON Lines, one record per finished run;
 * format in docs/sweep.md). A line that is not JSON, lacks a field or has a
 * field of the wrong type is listed with its line number and skipped: a
 * sweep killed mid-write leaves at most one torn line, and a hand-edited
 * file must not crash the report. One record is read by report_parse.c.
 *
 * The file is streamed, one line at a time, once: memory does not grow with
 * the file's size. A run keeps its figures but not its histogram: the
 * histograms of ok closed-loop runs are merged per cell as they are read
 * (sparse: only buckets some run filled), which is all the report draws
 * from them. An ok closed-loop run is folded into its group (80 bytes of
 * figures, report_runs.c); the others stay whole (struct
 * gpushare_report_run). Duplicates are found as they arrive, among both.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushare/bench.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "grow.h"
#include "hash.h"
#include "index.h"
#include "report_internal.h"
#include "report_load_curve.h"
#include "report_peak.h"

#define MAX_BAD_KEPT 1000
/* A results file larger than this is refused (about 200,000 runs;
 * docs/sweep.md): it is streamed, but a report must end in bounded time. */
#define GPUSHARE_REPORT_MAX_FILE_BYTES ((size_t)1 << 30)
/* A longer line is no record a sweep writes (64 workers with histograms
 * stay under 2 MiB): refused as soon as it is seen, never read whole. */
#define GPUSHARE_REPORT_MAX_LINE_BYTES ((size_t)16 << 20)

static const char empty_name[1] = "";

/* The report's names: each distinct string once, in an index of their
 * pointers. */
struct gpushare_report_names {
	struct gpushare_index ix;
};

void gpushare_report_names_free(struct gpushare_report_names *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->ix.size; i++)
		free((char *)(uintptr_t)n->ix.slot[i]);
	gpushare_index_release(&n->ix);
	free(n);
}

static uint64_t name_hash(const void *ctx, uint64_t value)
{
	(void)ctx;
	return gpushare_fnv1a_str((const char *)(uintptr_t)value);
}

static bool name_same(const void *ctx, uint64_t value)
{
	return !strcmp((const char *)(uintptr_t)value, ctx);
}

/* The report's copy of s ("" needs none); NULL out of memory. */
static const char *name_keep(struct gpushare_report *r, const char *s)
{
	struct gpushare_report_names *n = r->names;
	bool found;
	size_t k;
	char *copy;

	if (!*s)
		return empty_name;
	if (!n) {
		n = r->names = calloc(1, sizeof(*n));
		if (!n)
			return NULL;
	}
	if (gpushare_index_room(&n->ix, 64, name_hash, NULL))
		return NULL;
	k = gpushare_index_find(&n->ix, gpushare_fnv1a_str(s), name_same, s, &found);
	if (found)
		return (const char *)(uintptr_t)n->ix.slot[k];
	copy = strdup(s);
	if (!copy)
		return NULL;
	gpushare_index_put(&n->ix, k, (uint64_t)(uintptr_t)copy);
	return copy;
}

/* Point run's names at the report's copies of t's. */
static int names_take(struct gpushare_report *r, struct gpushare_report_run *run, const struct gpushare_report_text *t)
{
	run->text = NULL;
	if (!(run->shape = name_keep(r, t->shape)) || !(run->workload = name_keep(r, t->workload)) ||
	    !(run->key = name_keep(r, t->key)) || !(run->error = name_keep(r, t->error)) ||
	    !(run->peak_note = name_keep(r, t->peak_note)) || !(run->device_name = name_keep(r, t->device_name)) ||
	    !(run->mig_layout = name_keep(r, t->mig_layout))) {
		gpushare_report_run_blank(run);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	return GPUSHARE_OK;
}

static void copy_str(char *dst, size_t len, const cJSON *o, const char *k)
{
	const char *s = gpushare_report_get_str(o, k);

	if (s)
		gpushare_utf8_copy(dst, len, s);
}

const struct gpushare_report_shape_meta *gpushare_report_shape_meta(const struct gpushare_report *r, const char *shape)
{
	for (size_t i = r->n_shape_meta; i-- > 0;) {
		if (!strcmp(r->shape_meta[i].shape, shape))
			return &r->shape_meta[i];
	}
	return NULL;
}

static void take_metadata(struct gpushare_report *r, const cJSON *root, bool first)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "metadata");
	const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(m, "gpu");
	const char *date = gpushare_report_get_str(m, "date");

	if (date && strlen(date) < sizeof(r->first_date) && gpushare_utf8_valid(date)) {
		if (!r->first_date[0] || strcmp(date, r->first_date) < 0)
			snprintf(r->first_date, sizeof(r->first_date), "%s", date);
		if (strcmp(date, r->last_date) > 0)
			snprintf(r->last_date, sizeof(r->last_date), "%s", date);
	}
	if (!first)
		return;
	copy_str(r->version, sizeof(r->version), m, "gpushare_version");
	copy_str(r->host, sizeof(r->host), m, "host");
	copy_str(r->driver_version, sizeof(r->driver_version), m, "driver_version");
	copy_str(r->gpu_name, sizeof(r->gpu_name), gpu, "name");
	copy_str(r->gpu_uuid, sizeof(r->gpu_uuid), gpu, "uuid");
	{
		const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(m, "command_line"), *a;
		size_t off = 0;

		cJSON_ArrayForEach(a, cmd) {
			if (!cJSON_IsString(a))
				continue;
			if (off && off + 2 < sizeof(r->command_line))
				r->command_line[off++] = ' ';
			if (off + 1 >= sizeof(r->command_line))
				break;
			off += gpushare_utf8_copy(r->command_line + off, sizeof(r->command_line) - off, a->valuestring);
		}
	}
}

/* Whether the l bytes at s are only spaces, tabs and carriage returns. */
static bool blank(const char *s, size_t l)
{
	for (size_t i = 0; i < l; i++) {
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	}
	return true;
}

static int add_bad(struct gpushare_report *r, size_t line, const char *reason)
{
	r->n_bad++;
	if (r->n_bad_kept >= MAX_BAD_KEPT)
		return GPUSHARE_OK;
	if (r->n_bad_kept % 64 == 0) {
		struct gpushare_report_bad_line *nb = realloc(r->bad, (r->n_bad_kept + 64) * sizeof(*nb));

		if (!nb)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		r->bad = nb;
	}
	r->bad[r->n_bad_kept].line = line;
	gpushare_utf8_copy(r->bad[r->n_bad_kept].reason, sizeof(r->bad[0].reason), reason);
	r->n_bad_kept++;
	return GPUSHARE_OK;
}

/* ---- streaming: one line at a time ---- */

struct loader {
	struct gpushare_report *r;
	size_t cap;                  /* of r->whole */
	/* Ok and partial runs by cell and repeat, 0 free: a whole run as its
	 * 1-based index in r->whole, a folded one as DUP_FOLDED | group << 32 |
	 * sample. */
	struct gpushare_index dup;
	struct report_folder fold;
	struct gpushare_index hist;  /* r->hist_acc by cell: 1-based index */
	size_t hist_cap;
	size_t line;
	bool have_meta;
	size_t cap_meta, last_meta;  /* of r->shape_meta; the last one taken */
};

/* The record's GPU, driver and host for its shape: the first of the shape
 * kept, another GPU model noted. */
static int take_shape_meta(struct loader *ld, const cJSON *m, const char *shape)
{
	struct gpushare_report *r = ld->r;
	const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(m, "gpu");
	struct gpushare_report_shape_meta *sm = ld->last_meta < r->n_shape_meta &&
							!strcmp(r->shape_meta[ld->last_meta].shape, shape)
						? &r->shape_meta[ld->last_meta]
						: (struct gpushare_report_shape_meta *)gpushare_report_shape_meta(r, shape);
	char name[sizeof(sm->gpu_name)] = "";

	if (!sm) {
		int rc = gpushare_grow(&r->shape_meta, r->n_shape_meta, &ld->cap_meta, sizeof(*r->shape_meta), 8);

		if (rc)
			return rc;
		sm = &r->shape_meta[r->n_shape_meta++];
		memset(sm, 0, sizeof(*sm));
		snprintf(sm->shape, sizeof(sm->shape), "%s", shape);
		copy_str(sm->gpu_name, sizeof(sm->gpu_name), gpu, "name");
		copy_str(sm->host, sizeof(sm->host), m, "host");
		copy_str(sm->driver_version, sizeof(sm->driver_version), m, "driver_version");
	} else {
		copy_str(name, sizeof(name), gpu, "name");
		if (name[0] && sm->gpu_name[0] && strcmp(name, sm->gpu_name) && !sm->gpu_other[0])
			snprintf(sm->gpu_other, sizeof(sm->gpu_other), "%s", name);
	}
	ld->last_meta = (size_t)(sm - r->shape_meta);
	return GPUSHARE_OK;
}

#define DUP_FOLDED ((uint64_t)1 << 63)

/* What a duplicate is known by, of a run whole or folded. */
struct dup_key {
	const char *shape;
	enum gpushare_strategy strategy;
	int workers;
	long batch;
	double rate;
	int repeat;
	size_t line;
};

static void key_of_run(const struct gpushare_report_run *run, struct dup_key *k)
{
	k->shape = run->shape;
	k->strategy = run->strategy;
	k->workers = run->workers;
	k->batch = run->batch;
	k->rate = run->rate;
	k->repeat = run->repeat;
	k->line = run->line;
}

static void key_of_entry(const struct loader *ld, uint64_t e, struct dup_key *k)
{
	const struct gpushare_report_group *g;
	const struct gpushare_report_sample *s;

	if (!(e & DUP_FOLDED)) {
		key_of_run(&ld->r->whole[e - 1], k);
		return;
	}
	g = &ld->r->groups[(e & ~DUP_FOLDED) >> 32];
	s = &g->samples[e & 0xffffffffu];
	k->shape = g->shape;
	k->strategy = g->strategy;
	k->workers = g->workers;
	k->batch = g->batch;
	k->rate = 0;
	k->repeat = s->repeat;
	k->line = s->line;
}

static uint64_t cell_hash(const char *shape, enum gpushare_strategy strategy, int workers, long batch)
{
	return gpushare_fnv1a_str(shape) ^ ((uint64_t)strategy << 56) ^ ((uint64_t)workers << 40) ^
	       ((uint64_t)batch * 0x100000001b3ull);
}

static uint64_t repeat_hash(const struct dup_key *k)
{
	uint64_t rate_bits;

	memcpy(&rate_bits, &k->rate, sizeof(rate_bits));
	return cell_hash(k->shape, k->strategy, k->workers, k->batch) ^ ((uint64_t)k->repeat * 0x9e3779b97f4a7c15ull) ^
	       (rate_bits * 0xff51afd7ed558ccdull);
}

/* The cell is its shape, strategy, workers, batch and, under open loop,
 * offered rate (its "key" is only a label). */
static bool same_repeat(const struct dup_key *a, const struct dup_key *b)
{
	return a->repeat == b->repeat && a->strategy == b->strategy && a->workers == b->workers && a->batch == b->batch &&
	       a->rate == b->rate && !strcmp(a->shape, b->shape);
}

static uint64_t dup_hash(const void *ctx, uint64_t e)
{
	struct dup_key k;

	key_of_entry(ctx, e, &k);
	return repeat_hash(&k);
}

/* What dup_same compares against: the new run's key, and the held run's
 * key when it matches. */
struct dup_probe {
	const struct loader *ld;
	const struct dup_key *k;
	struct dup_key *o;
};

static bool dup_same(const void *ctx, uint64_t e)
{
	const struct dup_probe *p = ctx;

	key_of_entry(p->ld, e, p->o);
	return same_repeat(p->o, p->k);
}

/* A (cell, repeat) recorded twice with status ok or partial (two sweeps
 * writing one file, a file appended to itself) would count twice: the later
 * records are listed as bad lines and left out. A failed run recorded before
 * its retry is not a duplicate. *slot: where the run goes when it is new;
 * true with the earlier run's key in *o when it is not. */
static bool dup_find(struct loader *ld, const struct gpushare_report_run *run, size_t *slot, struct dup_key *o)
{
	struct dup_key k;
	struct dup_probe p = { ld, &k, o };
	bool found;

	key_of_run(run, &k);
	*slot = gpushare_index_find(&ld->dup, repeat_hash(&k), dup_same, &p, &found);
	return found;
}

static uint64_t hist_hash(const void *ctx, uint64_t i)
{
	const struct gpushare_report_hist_acc *a = &((const struct gpushare_report *)ctx)->hist_acc[i - 1];

	return cell_hash(a->shape, a->strategy, a->workers, a->batch);
}

/* What hist_same compares against: the run and the report. */
struct hist_probe {
	const struct gpushare_report *r;
	const struct gpushare_report_run *run;
};

static bool hist_same(const void *ctx, uint64_t i)
{
	const struct hist_probe *p = ctx;
	const struct gpushare_report_hist_acc *o = &p->r->hist_acc[i - 1];

	return o->strategy == p->run->strategy && o->workers == p->run->workers && o->batch == p->run->batch &&
	       !strcmp(o->shape, p->run->shape);
}

/* Merge an ok closed-loop run's histogram into its cell's: sparse, buckets
 * ascending (gpushare_hist_bucket of each upper bound), counts added. */
static int fold_hist(struct loader *ld, const struct gpushare_report_run *run)
{
	struct gpushare_report *r = ld->r;
	struct gpushare_report_hist_acc *a = NULL;
	uint32_t *nb;
	uint64_t *nc;
	size_t slot, i = 0, j = 0, n = 0;
	struct hist_probe p = { r, run };
	bool found;

	if (gpushare_grow(&r->hist_acc, r->n_hist_acc, &ld->hist_cap, sizeof(*r->hist_acc), 64) ||
	    gpushare_index_room(&ld->hist, 256, hist_hash, r))
		return GPUSHARE_E_NOMEM;
	slot = gpushare_index_find(&ld->hist, cell_hash(run->shape, run->strategy, run->workers, run->batch), hist_same,
				   &p, &found);
	if (found)
		a = &r->hist_acc[ld->hist.slot[slot] - 1];
	if (!a) {
		a = &r->hist_acc[r->n_hist_acc++];
		memset(a, 0, sizeof(*a));
		snprintf(a->shape, sizeof(a->shape), "%s", run->shape);
		a->strategy = run->strategy;
		a->workers = run->workers;
		a->batch = run->batch;
		gpushare_index_put(&ld->hist, slot, r->n_hist_acc);
	}
	nb = malloc((a->n + run->hist_n) * sizeof(*nb));
	nc = malloc((a->n + run->hist_n) * sizeof(*nc));
	if (!nb || !nc) {
		free(nb);
		free(nc);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	while (i < a->n || j < run->hist_n) {
		uint32_t b = j < run->hist_n ? (uint32_t)gpushare_hist_bucket(run->hist_le_ns[j]) : UINT32_MAX;

		if (i < a->n && a->bucket[i] <= b) {
			nb[n] = a->bucket[i];
			nc[n] = a->count[i++];
			if (nb[n] == b)
				nc[n] += run->hist_counts[j++];
		} else {
			nb[n] = b;
			nc[n] = run->hist_counts[j++];
		}
		/* Two bounds of one bucket (a hand-edited file): one entry. */
		if (n && nb[n - 1] == nb[n])
			nc[n - 1] += nc[n];
		else
			n++;
	}
	free(a->bucket);
	free(a->count);
	a->bucket = nb;
	a->count = nc;
	a->n = n;
	return GPUSHARE_OK;
}

/* One line of the file: a run kept (whole, or folded into its group; its
 * histogram merged into its cell's), or a bad line listed. torn: the last
 * line, without its newline. */
static int loader_line(struct loader *ld, const char *s, size_t l, bool torn)
{
	struct gpushare_report *r = ld->r;
	struct gpushare_report_run run;
	struct gpushare_report_text t;
	struct dup_key o;
	size_t slot = 0, group, sample;
	uint64_t entry;
	cJSON *root;
	int rc;

	ld->line++;
	if (blank(s, l))
		return GPUSHARE_OK;
	root = cJSON_ParseWithLength(s, l);
	if (!root)
		return add_bad(r, ld->line, torn ? "not valid JSON (torn last line)" : "not valid JSON");
	if (gpushare_report_parse_root(root, &run, &t) != GPUSHARE_OK) {
		gpushare_report_run_release(&run);
		rc = add_bad(r, ld->line, gpushare_errdetail());
		cJSON_Delete(root);
		return rc;
	}
	if ((rc = names_take(r, &run, &t))) {
		gpushare_report_run_release(&run);
		cJSON_Delete(root);
		return rc;
	}
	run.line = ld->line;
	take_metadata(r, root, !ld->have_meta);
	ld->have_meta = true;
	if (run.status != GPUSHARE_RUN_FAILED) {
		if ((rc = gpushare_index_room(&ld->dup, 1024, dup_hash, ld))) {
			gpushare_report_run_release(&run);
			cJSON_Delete(root);
			return rc;
		}
		if (dup_find(ld, &run, &slot, &o)) {
			char why[200], rate[40] = "";

			if (o.rate > 0)
				snprintf(rate, sizeof(rate), "|r%.9g", o.rate);
			snprintf(why, sizeof(why), "cell %.60s|%s|w%d|b%ld%s repeat %d is recorded already (line %zu); left out",
				 o.shape, gpushare_strategy_name(o.strategy), o.workers, o.batch, rate, run.repeat, o.line);
			gpushare_report_run_release(&run);
			cJSON_Delete(root);
			return add_bad(r, ld->line, why);
		}
	}
	/* A run kept: where it ran counts for its shape. */
	rc = take_shape_meta(ld, cJSON_GetObjectItemCaseSensitive(root, "metadata"), run.shape);
	cJSON_Delete(root);
	if (rc) {
		gpushare_report_run_release(&run);
		return rc;
	}
	if (run.status == GPUSHARE_RUN_OK && !(run.rate > 0) && !run.find_peak && run.hist_n)
		rc = fold_hist(ld, &run);
	/* The histogram lives on in its cell's; the run keeps its figures. */
	gpushare_report_run_release(&run);
	if (rc)
		return rc;
	if (gpushare_report_foldable(&run)) {
		if ((rc = gpushare_report_fold(r, &ld->fold, &run, &group, &sample)))
			return rc;
		entry = DUP_FOLDED | (uint64_t)group << 32 | sample;
	} else {
		if ((rc = gpushare_grow(&r->whole, r->n_whole, &ld->cap, sizeof(*r->whole), 64)))
			return rc;
		r->whole[r->n_whole++] = run;
		entry = r->n_whole;
	}
	r->n_runs++;
	if (run.status != GPUSHARE_RUN_FAILED) {
		gpushare_index_put(&ld->dup, slot, entry);
	}
	return GPUSHARE_OK;
}

static void loader_done(struct loader *ld, int rc)
{
	gpushare_index_release(&ld->dup);
	gpushare_index_release(&ld->hist);
	gpushare_report_fold_done(ld->r, &ld->fold);
	/* Hand back only what the runs use. */
	if (!rc && ld->r->n_whole && ld->r->n_whole < ld->cap) {
		struct gpushare_report_run *nr = realloc(ld->r->whole, ld->r->n_whole * sizeof(*nr));

		if (nr)
			ld->r->whole = nr;
	}
	if (!rc)
		gpushare_clear_error();
}

/* The lines of the results file, read in blocks (a byte at a time through
 * stdio cost a third more CPU on a large file). A line inside a block is
 * used where it lies; one across blocks is gathered in `line`, at most max
 * bytes of it ever held (a longer one is refused as soon as it is seen). */
#define READ_BLOCK ((size_t)1 << 20)

struct block_reader {
	int fd;
	const char *path;
	char *blk;
	size_t pos, end;
	bool eof;
	char *line;
	size_t cap;
};

/* 1: a line in *s, *len bytes, *newline whether it ended with one; 0: the
 * end; an error code: a failed read (never taken for the end) or an
 * overlong line. */
static int next_line(struct block_reader *b, size_t lineno, const char **s, size_t *len, bool *newline)
{
	size_t n = 0;

	for (;;) {
		const char *p, *q;
		size_t avail, take;

		if (b->pos == b->end) {
			ssize_t got;

			if (b->eof) {
				*s = b->line;
				*len = n;
				*newline = false;
				return n ? 1 : 0;
			}
			got = read(b->fd, b->blk, READ_BLOCK);
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
				return gpushare_fail(GPUSHARE_E_IO, "cannot read '%s': %s", b->path, strerror(errno));
			b->eof = got == 0;
			b->pos = 0;
			b->end = (size_t)got;
			continue;
		}
		p = b->blk + b->pos;
		avail = b->end - b->pos;
		q = memchr(p, '\n', avail);
		take = q ? (size_t)(q - p) : avail;
		if (n + take > GPUSHARE_REPORT_MAX_LINE_BYTES)
			return gpushare_fail(GPUSHARE_E_INVAL, "%s:%zu: line longer than %zu bytes", b->path, lineno,
					     GPUSHARE_REPORT_MAX_LINE_BYTES);
		b->pos += take + (q ? 1 : 0);
		if (q && n == 0) {
			*s = p;
			*len = take;
			*newline = true;
			return 1;
		}
		if (n + take > b->cap) {
			size_t nc = b->cap ? b->cap : 4096;
			char *nl;

			while (nc < n + take)
				nc *= 2;
			nl = realloc(b->line, nc);
			if (!nl)
				return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory reading '%s'", b->path);
			b->line = nl;
			b->cap = nc;
		}
		memcpy(b->line + n, p, take);
		n += take;
		if (q) {
			*s = b->line;
			*len = n;
			*newline = true;
			return 1;
		}
	}
}

int gpushare_report_load(const char *path, struct gpushare_report *r)
{
	struct loader ld = { .r = r };
	struct block_reader br = { .path = path };
	struct stat st;
	const char *line = NULL;
	size_t len = 0, total = 0;
	bool newline = false;
	int e, rc;

	memset(r, 0, sizeof(*r));
	/* Only a regular file of bounded size (O_NONBLOCK: a FIFO with no
	 * writer must not wait); then read as a stream. */
	br.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (br.fd < 0)
		return gpushare_fail(errno == ENOENT ? GPUSHARE_E_NOT_FOUND : GPUSHARE_E_IO, "cannot open '%s': %s", path,
				     strerror(errno));
	if (fstat(br.fd, &st) != 0) {
		e = errno;
		close(br.fd);
		return gpushare_fail(GPUSHARE_E_IO, "cannot inspect '%s': %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(br.fd);
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is not a regular file; refusing to read it", path);
	}
	if ((uint64_t)st.st_size > GPUSHARE_REPORT_MAX_FILE_BYTES) {
		close(br.fd);
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is %lld bytes, more than the %zu bytes read at most", path,
				     (long long)st.st_size, GPUSHARE_REPORT_MAX_FILE_BYTES);
	}
	br.blk = malloc(READ_BLOCK);
	if (!br.blk) {
		close(br.fd);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory reading '%s'", path);
	}
	while ((rc = next_line(&br, ld.line + 1, &line, &len, &newline)) == 1) {
		total += len + newline;
		if (total > GPUSHARE_REPORT_MAX_FILE_BYTES) {
			rc = gpushare_fail(GPUSHARE_E_IO, "'%s' grew past the %zu bytes read at most while it was read", path,
					   GPUSHARE_REPORT_MAX_FILE_BYTES);
			break;
		}
		if ((rc = loader_line(&ld, line, len, !newline)))
			break;
	}
	free(br.blk);
	free(br.line);
	close(br.fd);
	loader_done(&ld, rc);
	return rc;
}

int gpushare_report_load_buffer(const char *data, size_t len, struct gpushare_report *r)
{
	struct loader ld = { .r = r };
	size_t pos = 0;
	int rc = GPUSHARE_OK;

	memset(r, 0, sizeof(*r));
	while (pos < len && !rc) {
		const char *s = data + pos;
		const char *nl = memchr(s, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - s) : len - pos;

		pos += l + (nl ? 1 : 0);
		rc = loader_line(&ld, s, l, !nl);
	}
	loader_done(&ld, rc);
	return rc;
}

/* ---- release: what the loader and the summary made ---- */

void gpushare_report_release(struct gpushare_report *r)
{
	gpushare_report_summary_release(r);
	for (size_t i = 0; r->whole && i < r->n_whole; i++)
		gpushare_report_run_release(&r->whole[i]);
	free(r->whole);
	for (size_t i = 0; r->groups && i < r->n_groups; i++)
		free(r->groups[i].samples);
	free(r->groups);
	for (size_t i = 0; r->hist_acc && i < r->n_hist_acc; i++) {
		free(r->hist_acc[i].bucket);
		free(r->hist_acc[i].count);
	}
	free(r->hist_acc);
	gpushare_report_names_free(r->names);
	free(r->bad);
	free(r->shape_meta);
	memset(r, 0, sizeof(*r));
}
