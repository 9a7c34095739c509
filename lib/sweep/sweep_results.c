/*
 * A sweep's results file: one sweep writes a results directory at a time
 * (its lock file), each finished run is appended as one line and synced,
 * and --resume reads back what is recorded (through report_load.c) and
 * resumes only when every recorded run of this grid was measured with the
 * same configuration. The record format lives in sweep_record.c.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys.h"
#include "json.h"
#include "gpushare/bench.h"
#include "gpushare/files.h"
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"
#include "gpushare/mps.h"
#include "gpushare/report.h"
#include "gpushare/sweep.h"
#include "run_ctx.h"
#include "sweep_internal.h"

/* ---- the results directory: one writer, and resume only what matches ---- */

/* The cell of this grid that run belongs to, -1 none. */
static int find_cell(const struct sweep_ctx *x, const struct gpushare_report_run *run)
{
	for (size_t i = 0; i < x->n_cells; i++) {
		const struct gpushare_sweep_cell *c = &x->cells[i];

		char label[128];   /* a run's shape: at most 127 bytes */

		if (c->strategy != run->strategy || c->workers != run->workers || c->batch != run->batch ||
		    c->rate != run->rate || c->thread_pct != run->thread_pct)
			continue;
		/* A run at a set thread percentage is read back under its label. */
		gpushare_report_shape_label(x->s->shapes[c->shape].label, c->thread_pct, label, sizeof(label));
		if (!strcmp(label, run->shape))
			return (int)i;
	}
	return -1;
}

/* The sample of round r's run of a cell. */
int sweep_add_sample(struct cell_state *st, int r, double v)
{
	double *nv = realloc(st->tput, (st->n_tput + 1) * sizeof(*nv));

	if (!nv)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	st->tput = nv;
	st->tput[st->n_tput++] = v;
	st->val[r] = v;
	return GPUSHARE_OK;
}

/* The lock file beside the results file: one sweep writes a results
 * directory at a time, and a sweep that died holds nothing (flock). */
int sweep_lock_results(struct sweep_ctx *x)
{
	char path[GPUSHARE_PATH_MAX + 32];
	const char *slash = strrchr(x->path, '/');
	int dlen = slash ? (int)(slash - x->path) : 1;
	pid_t holder;
	int rc;

	if ((size_t)snprintf(path, sizeof(path), "%.*s/%s", dlen, slash ? x->path : ".",
			     GPUSHARE_SWEEP_LOCK_FILE) >= sizeof(path))
		return gpushare_fail(GPUSHARE_E_INVAL, "results path '%s' is too long", x->path);
	rc = gpushare_lock_acquire(path, 0, &x->lock_fd, &holder);
	if (rc == GPUSHARE_E_BUSY) {
		if (holder)
			return gpushare_fail(GPUSHARE_E_DIR, "results directory '%.*s' is in use by another sweep (pid %ld)",
					     dlen, slash ? x->path : ".", (long)holder);
		return gpushare_fail(GPUSHARE_E_DIR, "results directory '%.*s' is in use by another sweep", dlen,
				     slash ? x->path : ".");
	}
	if (rc) {
		char detail[512];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		return gpushare_fail(GPUSHARE_E_DIR, "%s", detail);
	}
	return GPUSHARE_OK;
}

/* The fields of a run's bench configuration that change what is measured;
 * a resumed sweep must ask for the same ones (strategy, workers and batch
 * are the cell itself; the start timeout and the MPS pipe directory are not
 * part of the measurement). The open-loop ones were added later: a record
 * without them was measured in closed loop (see closed_default()). */
static const char *const resume_fields[] = {
	"workload", "workload_options", "command", "command_mode", "batch", "workers", "mode",
	"duration_seconds", "requests_per_worker", "warmup_seconds", "warmup_requests", "gpu",
	"thread_percentage", "mem_limit_bytes", "priority", "load", "rate_per_second", "arrival", "seed",
	"dispatch", "find_peak",
};

/* The record's settings of a peak search (root "peak_search"): the bound,
 * resolution, tail samples, rate limit and first rate must match too. */
#define RESUME_PEAK_FIELD "peak_search"

/* What an absent field of an older record stands for: the closed-loop
 * value (null, false, "closed"). */
static bool closed_default(const cJSON *v)
{
	return !v || cJSON_IsNull(v) || cJSON_IsFalse(v) || (cJSON_IsString(v) && !strcmp(v->valuestring, "closed"));
}

/* What a run of cell k records: an object with "config" (bench.config) and
 * "peak_search", as the record of that run has them. */
static cJSON *expected_config(struct sweep_ctx *x, size_t k)
{
	struct gpushare_bench_report r;
	cJSON *doc, *out, *item;
	char *text = NULL;
	bool ok;

	sweep_cell_config(x->s, &x->cells[k], x->c);
	memset(&r, 0, sizeof(r));
	r.gpu_index = -1;
	r.config = x->c;
	if (gpushare_sweep_record(&x->cells[k], x->s->shapes[x->cells[k].shape].label, 0, &r, GPUSHARE_OK, NULL, -1,
				  &text))
		return NULL;
	doc = cJSON_Parse(text);
	free(text);
	out = cJSON_CreateObject();
	if (!doc || !out) {
		cJSON_Delete(doc);
		cJSON_Delete(out);
		return NULL;
	}
	item = cJSON_DetachItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "bench"), "config");
	ok = !item || gpushare_json_add(out, "config", item);
	item = ok ? cJSON_DetachItemFromObjectCaseSensitive(doc, RESUME_PEAK_FIELD) : NULL;
	ok = ok && (!item || gpushare_json_add(out, RESUME_PEAK_FIELD, item));
	cJSON_Delete(doc);
	if (!ok) {
		cJSON_Delete(out);
		return NULL;
	}
	return out;
}

/* Whether a recorded field matches what this sweep asks for; an absent one
 * (an older record) stands for the closed-loop value. */
static bool field_matches(const cJSON *got, const cJSON *want)
{
	if (!got)
		return closed_default(want);
	return want && cJSON_Compare(got, want, true);
}

static void short_json(const cJSON *v, char *buf, size_t len)
{
	char *t = gpushare_json_print(v, false);

	snprintf(buf, len, "%s", t ? t : "(absent)");
	if (t && strlen(t) >= len && len > 4)
		memcpy(buf + gpushare_utf8_cut(buf, len - 4), "...", 4);
	free(t);
}

/* The cell of this grid whose key a record names ("cell"."key"), -1 none. */
static int cell_of_key(const struct sweep_ctx *x, const cJSON *root)
{
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "cell"), "key");

	for (size_t i = 0; cJSON_IsString(key) && i < x->n_cells; i++) {
		if (!strcmp(x->cells[i].key, key->valuestring))
			return (int)i;
	}
	return -1;
}

/* A record naming a cell of this grid must be that cell's run, read back
 * whole: settings that agree with its key, and an ok run's figure (its
 * throughput, or a search's peak) a positive number. Otherwise resume
 * cannot tell whether the cell ran: running it again would record it twice,
 * skipping it would take a figure that is none. A line that is not JSON at
 * all (torn by a kill) stays a corrupt line, as before. */
static int check_record_cell(const struct sweep_ctx *x, const cJSON *root, const char *text, size_t len, size_t line)
{
	struct gpushare_report_run run;
	int k = cell_of_key(x, root), rc;
	const char *why = NULL;

	if (k < 0)
		return GPUSHARE_OK;
	if (gpushare_report_parse_line(text, len, &run) != GPUSHARE_OK) {
		char detail[256];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "--resume: line %zu of '%s' records cell '%s' but cannot be read back (%s); "
				     "resume cannot tell whether that cell ran: give another --out",
				     line, x->path, x->cells[k].key, detail);
	}
	if (find_cell(x, &run) != k)
		why = "settings (strategy, workers, batch, rate, shape) that disagree with its key";
	else if (run.status == GPUSHARE_RUN_OK && !run.find_peak && !(isfinite(run.items_per_second) && run.items_per_second > 0))
		why = "an ok run without a positive throughput";
	else if (run.status == GPUSHARE_RUN_OK && run.find_peak && run.peak_found &&
		 !(isfinite(run.peak_rate) && run.peak_rate > 0))
		why = "an ok search without a positive peak rate";
	gpushare_report_run_release(&run);
	rc = why ? gpushare_fail(GPUSHARE_E_INVAL,
				 "--resume: line %zu of '%s' records cell '%s' with %s; resume cannot tell whether that "
				 "cell ran: give another --out",
				 line, x->path, x->cells[k].key, why)
		 : GPUSHARE_OK;
	return rc;
}

/* A line that is not JSON: torn by a kill mid-write, it stays a corrupt line
 * (the run it was to record runs again). A whole one (closed by its '}')
 * naming a cell of this grid is a record that cannot be read (a NaN
 * figure): resume cannot tell whether that cell ran. */
static int check_unreadable_line(const struct sweep_ctx *x, const char *text, size_t len, size_t line)
{
	char *copy;
	int rc = GPUSHARE_OK;

	while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\r' || text[len - 1] == '\t'))
		len--;
	if (len < 2 || text[0] != '{' || text[len - 1] != '}')
		return GPUSHARE_OK;
	copy = malloc(len + 1);
	if (!copy)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	memcpy(copy, text, len);
	copy[len] = '\0';
	for (size_t i = 0; i < x->n_cells && !rc; i++) {
		cJSON *str = gpushare_json_string(x->cells[i].key);
		char *quoted = str ? gpushare_json_print(str, false) : NULL;
		char *at = quoted ? strstr(copy, "\"key\":") : NULL;

		if (!quoted) {
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
			break;
		}
		if (at)
			at += 6 + strspn(at + 6, " \t");
		if (at && !strncmp(at, quoted, strlen(quoted)))
			rc = gpushare_fail(GPUSHARE_E_INVAL,
					   "--resume: line %zu of '%s' records cell '%s' but is not JSON (a NaN or "
					   "infinite figure?); resume cannot tell whether that cell ran: give another --out",
					   line, x->path, x->cells[i].key);
		free(quoted);
		cJSON_Delete(str);
	}
	free(copy);
	return rc;
}

/* Refuse to resume when a recorded run of a cell of this grid was measured
 * with another configuration: its samples would be merged with the new ones. */
static int check_resume_config(struct sweep_ctx *x)
{
	cJSON **want = calloc(x->n_cells, sizeof(*want));
	size_t len = 0, pos = 0, line = 0;
	char *data = NULL;
	int rc = want ? GPUSHARE_OK : gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");

	if (!rc)
		rc = gpushare_read_file(x->path, (size_t)1 << 30, &data, &len);
	while (!rc && pos < len) {
		const char *s = data + pos, *nl = memchr(s, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - s) : len - pos;
		struct gpushare_report_run run;
		cJSON *root;
		const cJSON *got;
		int k;

		pos += l + (nl ? 1 : 0);
		line++;
		root = cJSON_ParseWithLength(s, l);
		if (!root) {
			rc = check_unreadable_line(x, s, l, line);
			continue;
		}
		got = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "bench"), "config");
		k = -1;
		rc = check_record_cell(x, root, s, l, line);
		if (!rc && cJSON_IsObject(got)) {
			char *t = cJSON_PrintUnformatted(root);

			if (t && gpushare_report_parse_line(t, strlen(t), &run) == GPUSHARE_OK) {
				k = find_cell(x, &run);
				gpushare_report_run_release(&run);
			}
			free(t);
		}
		if (k >= 0 && !want[k] && !(want[k] = expected_config(x, (size_t)k)))
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		for (size_t f = 0; !rc && k >= 0 && f <= sizeof(resume_fields) / sizeof(resume_fields[0]); f++) {
			/* The last round compares the peak search's settings. */
			bool peak = f == sizeof(resume_fields) / sizeof(resume_fields[0]);
			const char *name = peak ? RESUME_PEAK_FIELD : resume_fields[f];
			const cJSON *a = cJSON_GetObjectItemCaseSensitive(peak ? root : got, name);
			const cJSON *b = cJSON_GetObjectItemCaseSensitive(
				peak ? want[k] : cJSON_GetObjectItemCaseSensitive(want[k], "config"), name);
			char ra[160], rb[160];

			char sub[64];

			if (field_matches(a, b))
				continue;
			snprintf(sub, sizeof(sub), "%s", name);
			/* Name the setting of the search that differs, not the whole object. */
			if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
				for (const cJSON *w = b->child; w; w = w->next) {
					const cJSON *g = cJSON_GetObjectItemCaseSensitive(a, w->string);

					if (g && cJSON_Compare(g, w, true))
						continue;
					snprintf(sub, sizeof(sub), "%s.%s", name, w->string);
					a = g;
					b = w;
					break;
				}
			}
			name = sub;
			short_json(a, ra, sizeof(ra));
			short_json(b, rb, sizeof(rb));
			rc = gpushare_fail(GPUSHARE_E_INVAL,
					   "--resume: line %zu of '%s' was measured with %s %s, this sweep asks for %s; "
					   "resume with the options of that sweep, or give another --out",
					   line, x->path, name, ra, rb);
		}
		cJSON_Delete(root);
	}
	for (size_t k = 0; want && k < x->n_cells; k++)
		cJSON_Delete(want[k]);
	free(want);
	free(data);
	return rc;
}

/* Read what is recorded already. Without resume the file must be empty. */
int sweep_load_existing(struct sweep_ctx *x)
{
	struct gpushare_report rep;
	struct gpushare_report_cursor cur;
	const struct gpushare_report_run *run;
	struct stat sb;
	int rc;

	if (lstat(x->path, &sb) != 0) {
		if (errno == ENOENT)
			return GPUSHARE_OK;
		return gpushare_fail(GPUSHARE_E_IO, "cannot read '%s': %s", x->path, strerror(errno));
	}
	if (S_ISLNK(sb.st_mode))
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is a symbolic link; refusing to write through it", x->path);
	if (!S_ISREG(sb.st_mode))
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is not a regular file", x->path);
	if (sb.st_size == 0)
		return GPUSHARE_OK;
	if (!x->s->resume)
		return gpushare_fail(GPUSHARE_E_BUSY,
				     "results file '%s' already holds runs; give --resume to continue that sweep, or another --out",
				     x->path);
	rc = check_resume_config(x);
	if (rc)
		return rc;
	rc = gpushare_report_load(x->path, &rep);
	if (rc) {
		gpushare_report_release(&rep);
		return rc;
	}
	x->sum->bad_lines = (unsigned)rep.n_bad;
	/* In file order: the first record of a (cell, repeat) counts. */
	rc = gpushare_report_cursor_open(&rep, &cur);
	while (!rc && (run = gpushare_report_cursor_next(&cur))) {
		int k = find_cell(x, run);

		if (k < 0 && x->s->resume_same_grid) {
			rc = gpushare_fail(GPUSHARE_E_INVAL,
					   "--resume: '%s' records cell '%s', which is not of this grid (%zu cells); "
					   "resume with the options that recorded it, or give another --out",
					   x->path, run->key ? run->key : "(no key)", x->n_cells);
			break;
		}
		/* Failed runs are tried again, except in a race, whose decisions
		 * took them as they were (a resumed race takes the same ones);
		 * runs of cells outside this grid stay in the file for the
		 * report. */
		if (k < 0 || run->repeat < 0 || run->repeat >= x->rounds ||
		    (run->status == GPUSHARE_RUN_FAILED && !x->s->select))
			continue;
		if (x->st[k].recorded[run->repeat])
			continue;
		x->st[k].recorded[run->repeat] = true;
		if (run->status == GPUSHARE_RUN_OK && !run->find_peak)
			rc = sweep_add_sample(&x->st[k], run->repeat, run->items_per_second);
		else if (run->status == GPUSHARE_RUN_OK && run->peak_found)
			rc = sweep_add_sample(&x->st[k], run->repeat, run->peak_rate);
	}
	gpushare_report_cursor_close(&cur);
	gpushare_report_release(&rep);
	return rc;
}

int sweep_open_results(struct sweep_ctx *x)
{
	struct stat sb;

	int rc = gpushare_open_append(x->path, 0644, &x->fd);

	if (rc)
		return rc;
	/* A torn last line (a sweep killed mid-write) stays a corrupt line of
	 * its own instead of swallowing the next record. */
	if (fstat(x->fd, &sb) == 0 && sb.st_size > 0) {
		char last = '\n';
		int rfd = open(x->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

		if (rfd >= 0) {
			if (pread(rfd, &last, 1, sb.st_size - 1) != 1)
				last = '\n';
			close(rfd);
		}
		if (last != '\n' && write(x->fd, "\n", 1) != 1)
			return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s", x->path, strerror(errno));
	}
	return GPUSHARE_OK;
}

int sweep_append_line(struct sweep_ctx *x, const char *line)
{
	size_t len = strlen(line), off = 0;
	char *buf = malloc(len + 2);

	if (!buf)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	memcpy(buf, line, len);
	buf[len++] = '\n';
	/* One write for the whole line: O_APPEND keeps it in one piece. */
	while (off < len) {
		ssize_t w = write(x->fd, buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;

			free(buf);
			return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s", x->path, strerror(e));
		}
		off += (size_t)w;
	}
	free(buf);
	if (fsync(x->fd) != 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot sync '%s': %s", x->path, strerror(errno));
	return GPUSHARE_OK;
}
