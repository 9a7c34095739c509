/*
 * The job list of `gpushare farm` (farm_jobs.h): job files split into argv
 * without a shell, templates over argument files and ranges, job hashes and
 * the choice of a shard.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushare/buf.h"
#include "gpushare/gpushare.h"
#include "farm_jobs.h"
#include "gpushare/files.h"
#include "hash.h"

volatile sig_atomic_t farm_stop_level;

void gpushare_farm_jobs_init(struct farm_jobs *list, enum farm_jobs_mode mode)
{
	memset(list, 0, sizeof(*list));
	list->mode = mode;
	snprintf(list->source, sizeof(list->source), "jobs");
}

void gpushare_farm_jobs_release(struct farm_jobs *list)
{
	enum farm_jobs_mode mode = list->mode;
	char source[sizeof(list->source)];

	memcpy(source, list->source, sizeof(source));
	free(list->arena);
	free(list->jobs);
	memset(list, 0, sizeof(*list));
	list->mode = mode;
	memcpy(list->source, source, sizeof(source));
}

/* Make room for `more` bytes at the end of the arena. */
static int arena_reserve(struct farm_jobs *list, size_t more)
{
	size_t cap = list->arena_cap ? list->arena_cap : 4096;
	char *p;

	if (more > SIZE_MAX / 4 - list->arena_len)
		return gpushare_fail(GPUSHARE_E_NOMEM, "job list too large");
	while (cap - list->arena_len < more)
		cap *= 2;
	if (cap == list->arena_cap)
		return GPUSHARE_OK;
	p = realloc(list->arena, cap);
	if (!p)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot grow the job list to %zu bytes", cap);
	list->arena = p;
	list->arena_cap = cap;
	return GPUSHARE_OK;
}

static int arena_put(struct farm_jobs *list, const void *data, size_t len)
{
	int rc = arena_reserve(list, len);

	if (rc)
		return rc;
	memcpy(list->arena + list->arena_len, data, len);
	list->arena_len += len;
	return GPUSHARE_OK;
}

/* Append a job made of the arena bytes from `offset` to the end (argc
 * NUL-terminated strings). */
static int job_commit(struct farm_jobs *list, size_t offset, size_t argc, size_t lineno)
{
	struct farm_job_entry *e;

	if (farm_jobs_count(list) >= FARM_JOBS_MAX)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s: more than %lu jobs", list->source, FARM_JOBS_MAX);
	if (argc > UINT32_MAX)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s:%zu: too many words", list->source, lineno);
	if (list->n_jobs == list->jobs_cap) {
		size_t cap = list->jobs_cap ? list->jobs_cap * 2 : 256;
		struct farm_job_entry *p = realloc(list->jobs, cap * sizeof(*p));

		if (!p)
			return gpushare_fail(GPUSHARE_E_NOMEM, "cannot grow the job list to %zu jobs", cap);
		list->jobs = p;
		list->jobs_cap = cap;
	}
	e = &list->jobs[list->n_jobs++];
	e->offset = offset;
	e->argc = (uint32_t)argc;
	e->line = lineno > UINT32_MAX ? UINT32_MAX : (uint32_t)lineno;
	e->hash = gpushare_fnv1a(GPUSHARE_FNV1A_OFFSET, list->arena + offset, list->arena_len - offset);
	if (list->sink) {
		/* Hand the job on and drop it: the list holds one job at a time. */
		int rc = list->sink(list->sink_arg, list);

		list->n_jobs = 0;
		list->arena_len = 0;
		list->n_passed++;
		return rc;
	}
	return GPUSHARE_OK;
}

/* ---- splitting ---- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Words that are shell syntax when written unquoted: a --no-shell job file
 * line holding one almost certainly wanted the shell. */
static bool is_shell_operator(const char *w)
{
	static const char *const ops[] = {
		"|", "||", "&", "&&", ";", ";;", ">", ">>", "<", "<<", "2>", "2>>", "&>", "2>&1", "|&",
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(w, ops[i]))
			return true;
	return false;
}

/*
 * Split line[0..len) into NUL-terminated words written to out (which has
 * room for 2 * len + 2 bytes). On error, fills err (no location prefix) and
 * returns GPUSHARE_E_INVAL.
 */
static int split_into(const char *line, size_t len, char *out, size_t *out_len, size_t *argc,
		      char *err, size_t errlen)
{
	size_t o = 0, n = 0, i = 0;

	while (i < len) {
		bool quoted = false;
		size_t word = o;

		while (i < len && is_blank(line[i]))
			i++;
		if (i == len)
			break;
		while (i < len && !is_blank(line[i])) {
			char c = line[i];

			if (c == '\'') {
				size_t j = i + 1;

				while (j < len && line[j] != '\'')
					j++;
				if (j == len) {
					snprintf(err, errlen, "unterminated single quote (opened at column %zu)", i + 1);
					return GPUSHARE_E_INVAL;
				}
				memcpy(out + o, line + i + 1, j - i - 1);
				o += j - i - 1;
				i = j + 1;
				quoted = true;
			} else if (c == '"') {
				size_t open = i++;

				for (;;) {
					if (i == len) {
						snprintf(err, errlen, "unterminated double quote (opened at column %zu)", open + 1);
						return GPUSHARE_E_INVAL;
					}
					if (line[i] == '"')
						break;
					if (line[i] == '\\' && i + 1 < len &&
					    strchr("\"\\$`", line[i + 1])) {
						out[o++] = line[i + 1];
						i += 2;
						continue;
					}
					out[o++] = line[i++];
				}
				i++;
				quoted = true;
			} else if (c == '\\') {
				if (i + 1 == len) {
					snprintf(err, errlen, "line ends with a backslash (continuation lines are not supported)");
					return GPUSHARE_E_INVAL;
				}
				out[o++] = line[i + 1];
				i += 2;
				quoted = true;
			} else {
				out[o++] = c;
				i++;
			}
		}
		out[o++] = '\0';
		if (!quoted && is_shell_operator(out + word)) {
			snprintf(err, errlen, "'%s' is shell syntax, but --no-shell runs job lines without a shell (quote it, or drop --no-shell)",
				 out + word);
			return GPUSHARE_E_INVAL;
		}
		n++;
	}
	*out_len = o;
	*argc = n;
	return GPUSHARE_OK;
}

int gpushare_farm_jobs_split(const char *line, size_t len, char ***argv, size_t *argc)
{
	char err[256];
	size_t n, used;
	char *buf, **v;
	int rc;

	if (len > FARM_JOB_LINE_MAX)
		return gpushare_fail(GPUSHARE_E_INVAL, "line longer than %d bytes", FARM_JOB_LINE_MAX);
	buf = malloc(2 * len + 2);
	if (!buf)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory splitting a line");
	rc = split_into(line, len, buf, &used, &n, err, sizeof(err));
	if (rc) {
		free(buf);
		return gpushare_fail(rc, "%s", err);
	}
	v = malloc((n + 1) * sizeof(char *) + used + 1);
	if (!v) {
		free(buf);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory splitting a line");
	}
	char *s = (char *)(v + n + 1);

	memcpy(s, buf, used);
	free(buf);
	for (size_t k = 0; k < n; k++) {
		v[k] = s;
		s += strlen(s) + 1;
	}
	v[n] = NULL;
	*argv = v;
	*argc = n;
	return GPUSHARE_OK;
}

static const char sh_prefix[] = "/bin/sh\0-c";   /* two strings, with the final NUL */

int gpushare_farm_jobs_add_line(struct farm_jobs *list, const char *line, size_t len, size_t lineno)
{
	size_t i = 0, start = list->arena_len, used, argc;
	char err[256];
	int rc;

	if (len && line[len - 1] == '\r')
		len--;
	if (memchr(line, '\0', len))
		return gpushare_fail(GPUSHARE_E_INVAL, "%s:%zu: line holds a NUL byte", list->source, lineno);
	if (len > FARM_JOB_LINE_MAX)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s:%zu: line longer than %d bytes", list->source,
				     lineno, FARM_JOB_LINE_MAX);
	while (i < len && is_blank(line[i]))
		i++;
	if (i == len || line[i] == '#')
		return GPUSHARE_OK;
	if (list->mode == FARM_JOBS_SHELL) {
		size_t end = len;

		while (end > i && is_blank(line[end - 1]))
			end--;
		if ((rc = arena_reserve(list, sizeof(sh_prefix) + end - i + 1)))
			return rc;
		arena_put(list, sh_prefix, sizeof(sh_prefix));
		arena_put(list, line + i, end - i);
		arena_put(list, "", 1);
		return job_commit(list, start, 3, lineno);
	}
	if ((rc = arena_reserve(list, 2 * len + 2)))
		return rc;
	rc = split_into(line, len, list->arena + start, &used, &argc, err, sizeof(err));
	if (rc)
		return gpushare_fail(rc, "%s:%zu: %s", list->source, lineno, err);
	if (argc == 0)
		return GPUSHARE_OK;
	list->arena_len += used;
	return job_commit(list, start, argc, lineno);
}

/* Read lines from f and hand each to fn; stops at the first error. A line
 * is refused at its limit while it is read; a failed read is an error,
 * never the end of the list; a stop signal ends the reading. */
static int read_lines(FILE *f, const char *name,
		      int (*fn)(void *ctx, const char *line, size_t len, size_t lineno), void *ctx)
{
	char *line = NULL;
	size_t cap = 0, lineno = 0, len;
	int rc;

	while ((rc = gpushare_read_line(f, name, lineno + 1, FARM_JOB_LINE_MAX, &farm_stop_level, &line, &cap, &len,
					NULL)) == 1) {
		lineno++;
		if ((rc = fn(ctx, line, len, lineno)))
			break;
	}
	free(line);
	return rc < 0 ? rc : GPUSHARE_OK;
}

static int add_line_cb(void *ctx, const char *line, size_t len, size_t lineno)
{
	return gpushare_farm_jobs_add_line(ctx, line, len, lineno);
}

int gpushare_farm_jobs_load_stream(struct farm_jobs *list, FILE *f, const char *name)
{
	snprintf(list->source, sizeof(list->source), "%s", name);
	return read_lines(f, name, add_line_cb, list);
}

/* Open path ("-" = stdin) for reading; *name is the name for messages. */
static int open_input(const char *path, FILE **f, const char **name)
{
	if (!strcmp(path, "-")) {
		*f = stdin;
		*name = "stdin";
		return GPUSHARE_OK;
	}
	*name = path;
	*f = fopen(path, "re");
	if (!*f)
		return gpushare_fail(errno == ENOENT ? GPUSHARE_E_NOT_FOUND : GPUSHARE_E_IO,
				     "cannot open '%s': %s", path, strerror(errno));
	return GPUSHARE_OK;
}

int gpushare_farm_jobs_load_file(struct farm_jobs *list, const char *path)
{
	const char *name;
	FILE *f;
	int rc = open_input(path, &f, &name);

	if (rc)
		return rc;
	rc = gpushare_farm_jobs_load_stream(list, f, name);
	if (f != stdin)
		fclose(f);
	return rc;
}

/* ---- templates ---- */

/* Append s as one shell word (gpushare_buf_add_sh_word, the one shell
 * quoting). */
static int put_sh_quoted(struct farm_jobs *list, const char *s)
{
	struct gpushare_buf b = { 0 };
	int rc = gpushare_buf_add_sh_word(&b, s);

	if (!rc)
		rc = arena_put(list, b.s, b.len);
	gpushare_buf_release(&b);
	return rc;
}

/* Append template word w with the placeholders replaced; *used tells
 * whether it held {}. */
static int put_expanded(struct farm_jobs *list, const char *w, const char *arg, const char *num,
			bool quote_arg, bool *used)
{
	int rc = GPUSHARE_OK;

	while (!rc && *w) {
		if (w[0] == '{' && w[1] == '}') {
			rc = quote_arg ? put_sh_quoted(list, arg) : arena_put(list, arg, strlen(arg));
			*used = true;
			w += 2;
		} else if (w[0] == '{' && w[1] == '#' && w[2] == '}') {
			rc = arena_put(list, num, strlen(num));
			w += 3;
		} else {
			size_t n = strcspn(w + 1, "{") + 1;

			rc = arena_put(list, w, n);
			w += n;
		}
	}
	return rc;
}

/* A shell template puts the argument, single-quoted, where {} stands in
 * the line /bin/sh reads. That quoting holds only where the shell reads
 * words unquoted: inside the template's own '...' or "..." it would close
 * and reopen quotes around the argument's text (`echo "{}"` with the
 * argument `$(touch F)` runs touch). Such templates are refused. */
static int check_shell_template(char *const tmpl[], size_t n_tmpl)
{
	enum { OUT, SQ, DQ } q = OUT;
	size_t col = 0;

	for (size_t k = 0; k < n_tmpl; k++, col++) {
		for (const char *w = tmpl[k]; *w; w++, col++) {
			if (q == OUT && *w == '\\' && w[1]) {
				w++, col++;
			} else if (q == DQ && *w == '\\' && w[1]) {
				w++, col++;
			} else if (q == OUT && *w == '\'') {
				q = SQ;
			} else if (q == SQ && *w == '\'') {
				q = OUT;
			} else if (q == OUT && *w == '"') {
				q = DQ;
			} else if (q == DQ && *w == '"') {
				q = OUT;
			} else if (q != OUT && w[0] == '{' && w[1] == '}') {
				return gpushare_fail(GPUSHARE_E_INVAL,
						     "template: {} at column %zu is inside %s quotes, where the "
						     "argument's own quoting would not hold (a '$(...)' in it would run); "
						     "write {} unquoted: gpushare quotes each argument itself", col + 1,
						     q == SQ ? "single" : "double");
			}
		}
	}
	return GPUSHARE_OK;
}

int gpushare_farm_jobs_add_template_arg(struct farm_jobs *list, char *const tmpl[], size_t n_tmpl,
			       const char *arg, size_t lineno)
{
	size_t start = list->arena_len, argc = 0;
	bool used = false, shell = list->mode == FARM_JOBS_SHELL;
	char num[32];
	int rc = GPUSHARE_OK;

	if (!n_tmpl)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty command template");
	if (shell && (rc = check_shell_template(tmpl, n_tmpl)))
		return rc;
	snprintf(num, sizeof(num), "%zu", farm_jobs_count(list) + 1);
	if (shell) {
		rc = arena_put(list, sh_prefix, sizeof(sh_prefix));
		argc = 2;
	}
	for (size_t k = 0; !rc && k < n_tmpl; k++) {
		if (shell && k)
			rc = arena_put(list, " ", 1);
		if (!rc)
			rc = put_expanded(list, tmpl[k], arg, num, shell, &used);
		if (!rc && !shell) {
			rc = arena_put(list, "", 1);
			argc++;
		}
	}
	if (!rc && !used) {
		if (shell) {
			rc = arena_put(list, " ", 1);
			if (!rc)
				rc = put_sh_quoted(list, arg);
		} else {
			rc = arena_put(list, arg, strlen(arg) + 1);
			argc++;
		}
	}
	if (!rc && shell) {
		rc = arena_put(list, "", 1);
		argc++;
	}
	if (rc) {
		list->arena_len = start;
		return rc;
	}
	return job_commit(list, start, argc, lineno);
}

static int parse_ll(const char *s, const char *end, long long *out)
{
	char buf[32], *e;
	size_t n = (size_t)(end - s);

	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (!(buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9')))
		return -1;
	errno = 0;
	*out = strtoll(buf, &e, 10);
	return errno || *e ? -1 : 0;
}

int gpushare_farm_range_parse(const char *s, struct farm_range *out)
{
	const char *dots = s ? strstr(s, "..") : NULL, *colon;
	struct farm_range r = { 0, 0, 1 };

	if (!dots)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a range (expected START..END[:STEP], e.g. 1..1000)",
				     s ? s : "");
	colon = strchr(dots + 2, ':');
	if (parse_ll(s, dots, &r.start) ||
	    parse_ll(dots + 2, colon ? colon : dots + strlen(dots), &r.end) ||
	    (colon && parse_ll(colon + 1, colon + strlen(colon), &r.step)))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a range (expected START..END[:STEP], e.g. 1..1000)", s);
	if (r.step < 1)
		return gpushare_fail(GPUSHARE_E_INVAL, "range '%s': the step must be at least 1", s);
	if (r.start > r.end)
		return gpushare_fail(GPUSHARE_E_INVAL, "range '%s': START is larger than END", s);
	if (gpushare_farm_range_count(&r) > FARM_JOBS_MAX)
		return gpushare_fail(GPUSHARE_E_INVAL, "range '%s' has more than %lu values", s, FARM_JOBS_MAX);
	*out = r;
	return GPUSHARE_OK;
}

uint64_t gpushare_farm_range_count(const struct farm_range *r)
{
	uint64_t steps = ((uint64_t)r->end - (uint64_t)r->start) / (uint64_t)r->step;

	/* All of int64 at step 1 holds 2^64 values: saturate rather than
	 * wrap to 0, so the limit check refuses it. */
	return steps == UINT64_MAX ? UINT64_MAX : steps + 1;
}

int gpushare_farm_jobs_template_range(struct farm_jobs *list, char *const tmpl[], size_t n_tmpl,
			     const struct farm_range *range)
{
	uint64_t n = gpushare_farm_range_count(range);

	snprintf(list->source, sizeof(list->source), "range %lld..%lld:%lld", range->start, range->end,
		 range->step);
	for (uint64_t k = 0; k < n; k++) {
		char arg[32];
		int rc;

		snprintf(arg, sizeof(arg), "%lld", (long long)((uint64_t)range->start + k * (uint64_t)range->step));
		if ((rc = gpushare_farm_jobs_add_template_arg(list, tmpl, n_tmpl, arg, (size_t)k + 1)))
			return rc;
	}
	return GPUSHARE_OK;
}

struct tmpl_ctx {
	struct farm_jobs *list;
	char *const *tmpl;
	size_t n_tmpl;
	const char *name;
};

static int add_arg_cb(void *ctx, const char *line, size_t len, size_t lineno)
{
	struct tmpl_ctx *t = ctx;
	char *arg;
	int rc;

	if (len && line[len - 1] == '\r')
		len--;
	if (!len)
		return GPUSHARE_OK;
	if (memchr(line, '\0', len))
		return gpushare_fail(GPUSHARE_E_INVAL, "%s:%zu: line holds a NUL byte", t->name, lineno);
	arg = strndup(line, len);
	if (!arg)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	rc = gpushare_farm_jobs_add_template_arg(t->list, t->tmpl, t->n_tmpl, arg, lineno);
	free(arg);
	return rc;
}

int gpushare_farm_jobs_template_stream(struct farm_jobs *list, char *const tmpl[], size_t n_tmpl, FILE *f,
				       const char *name)
{
	struct tmpl_ctx t = { list, tmpl, n_tmpl, name };

	snprintf(list->source, sizeof(list->source), "%s", name);
	return read_lines(f, name, add_arg_cb, &t);
}

int gpushare_farm_jobs_template_file(struct farm_jobs *list, char *const tmpl[], size_t n_tmpl, const char *path)
{
	const char *name;
	FILE *f;
	int rc = open_input(path, &f, &name);

	if (rc)
		return rc;
	rc = gpushare_farm_jobs_template_stream(list, tmpl, n_tmpl, f, name);
	if (f != stdin)
		fclose(f);
	return rc;
}

/* ---- using the list ---- */

int gpushare_farm_jobs_argv(const struct farm_jobs *list, size_t i, char ***argv)
{
	const struct farm_job_entry *e;
	char **v, *s;

	if (i >= list->n_jobs)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "no job %zu (the list has %zu)", i, list->n_jobs);
	e = &list->jobs[i];
	v = malloc(((size_t)e->argc + 1) * sizeof(*v));
	if (!v)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	s = list->arena + e->offset;
	for (uint32_t k = 0; k < e->argc; k++) {
		v[k] = s;
		s += strlen(s) + 1;
	}
	v[e->argc] = NULL;
	*argv = v;
	return GPUSHARE_OK;
}

void gpushare_farm_jobs_format(const struct farm_jobs *list, size_t i, char *buf, size_t len)
{
	const struct farm_job_entry *e;
	const char *s;
	struct gpushare_buf out = { 0 };
	uint32_t k = 0;
	int rc = GPUSHARE_OK;

	if (!len)
		return;
	buf[0] = '\0';
	if (i >= list->n_jobs)
		return;
	e = &list->jobs[i];
	s = list->arena + e->offset;
	if (list->mode == FARM_JOBS_SHELL) {
		s += sizeof(sh_prefix);     /* show the line itself */
		k = 2;
	}
	for (; !rc && k < e->argc; k++) {
		size_t n = strlen(s);

		if (out.len)
			rc = gpushare_buf_add(&out, " ", 1);
		if (!rc)
			rc = list->mode == FARM_JOBS_SHELL ? gpushare_buf_add(&out, s, n) : gpushare_buf_add_sh_word(&out, s);
		s += n + 1;
	}
	if (!rc && out.len < len) {
		memcpy(buf, out.s ? out.s : "", out.len + 1);
	} else if (!rc) {
		memcpy(buf, out.s, len - 1);
		buf[len - 1] = '\0';
		if (len > 4)
			memcpy(buf + len - 4, "...", 4);
	}
	gpushare_buf_release(&out);
}

uint64_t gpushare_farm_list_hash_begin(enum farm_jobs_mode mode, uint64_t n_jobs)
{
	unsigned char b[8];
	uint64_t h = GPUSHARE_FNV1A_OFFSET;

	b[0] = (unsigned char)mode;
	h = gpushare_fnv1a(h, b, 1);
	for (int k = 0; k < 8; k++)
		b[k] = (unsigned char)(n_jobs >> (8 * k));
	return gpushare_fnv1a(h, b, 8);
}

uint64_t gpushare_farm_list_hash_add(uint64_t h, uint64_t job_hash)
{
	unsigned char b[8];

	for (int k = 0; k < 8; k++)
		b[k] = (unsigned char)(job_hash >> (8 * k));
	return gpushare_fnv1a(h, b, 8);
}

uint64_t gpushare_farm_jobs_list_hash(const struct farm_jobs *list)
{
	uint64_t h = gpushare_farm_list_hash_begin(list->mode, list->n_jobs);

	for (size_t i = 0; i < list->n_jobs; i++)
		h = gpushare_farm_list_hash_add(h, list->jobs[i].hash);
	return h;
}

uint64_t gpushare_farm_argv_hash(char *const *argv)
{
	uint64_t h = GPUSHARE_FNV1A_OFFSET;

	for (size_t k = 0; argv[k]; k++)
		h = gpushare_fnv1a(h, argv[k], strlen(argv[k]) + 1);
	return h;
}

/* ---- sharding ---- */

int gpushare_farm_shard_parse(const char *s, struct farm_shard *out)
{
	unsigned long long i, n;
	char *end;

	if (!s || !(*s >= '0' && *s <= '9'))
		goto bad;
	errno = 0;
	i = strtoull(s, &end, 10);
	if (errno || *end != '/' || !(end[1] >= '0' && end[1] <= '9'))
		goto bad;
	n = strtoull(end + 1, &end, 10);
	if (errno || *end)
		goto bad;
	if (n == 0 || n > FARM_JOBS_MAX || i >= n)
		return gpushare_fail(GPUSHARE_E_INVAL, "shard '%s': expected I/N with 0 <= I < N (and N >= 1)", s);
	out->index = (unsigned long)i;
	out->count = (unsigned long)n;
	return GPUSHARE_OK;
bad:
	return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a shard (expected I/N, e.g. 0/4)", s ? s : "");
}

int gpushare_farm_shard_from_env(gpushare_getenv_fn getenv_fn, void *ctx, struct farm_shard *out, bool *from_env)
{
	long id = 0, min = 0, max = 0, step = 1, count = 0, procid = 0, ntasks = 1;
	unsigned long a_index = 0, a_count = 1;
	int has_id, has_min, has_max, has_count, rc;
	bool in_step = getenv_fn(ctx, "SLURM_STEP_ID") != NULL;

	out->index = 0;
	out->count = 1;
	*from_env = false;
	/* Every id and count stays within the jobs a list holds: no product of them overflows. */
	if ((has_id = gpushare_env_number(getenv_fn, ctx, "SLURM_ARRAY_TASK_ID", 0, FARM_JOBS_MAX, &id)) < 0)
		return has_id;
	if (has_id) {
		if ((has_min = gpushare_env_number(getenv_fn, ctx, "SLURM_ARRAY_TASK_MIN", 0, FARM_JOBS_MAX, &min)) < 0)
			return has_min;
		if ((has_max = gpushare_env_number(getenv_fn, ctx, "SLURM_ARRAY_TASK_MAX", 0, FARM_JOBS_MAX, &max)) < 0)
			return has_max;
		if ((rc = gpushare_env_number(getenv_fn, ctx, "SLURM_ARRAY_TASK_STEP", 1, FARM_JOBS_MAX, &step)) < 0)
			return rc;
		if ((has_count = gpushare_env_number(getenv_fn, ctx, "SLURM_ARRAY_TASK_COUNT", 1, FARM_JOBS_MAX, &count)) < 0)
			return has_count;
		if (!has_min || (!has_max && !has_count))
			return gpushare_fail(GPUSHARE_E_INVAL,
					     "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT "
					     "(or _MAX) are not; pass --shard I/N");
		if (!has_count)
			count = max >= min ? (max - min) / step + 1 : 0;
		if (id < min || (id - min) % step || (unsigned long)((id - min) / step) >= (unsigned long)count)
			return gpushare_fail(GPUSHARE_E_INVAL,
					     "SLURM_ARRAY_TASK_ID=%ld does not fit an array of %ld elements from %ld in steps "
					     "of %ld (a sparse --array list?); pass --shard I/N", id, count, min, step);
		a_index = (unsigned long)((id - min) / step);
		a_count = (unsigned long)count;
		*from_env = true;
	}
	if (in_step) {
		int has_p, has_n;

		if ((has_p = gpushare_env_number(getenv_fn, ctx, "SLURM_PROCID", 0, FARM_JOBS_MAX, &procid)) < 0)
			return has_p;
		if ((has_n = gpushare_env_number(getenv_fn, ctx, "SLURM_NTASKS", 1, FARM_JOBS_MAX, &ntasks)) < 0)
			return has_n;
		if (has_p != has_n)
			return gpushare_fail(GPUSHARE_E_INVAL, "only one of SLURM_PROCID and SLURM_NTASKS is set; pass --shard I/N");
		if (!has_n)
			ntasks = 1;
		if (procid >= ntasks)
			return gpushare_fail(GPUSHARE_E_INVAL, "SLURM_PROCID=%ld is not below SLURM_NTASKS=%ld", procid, ntasks);
		if (ntasks > 1)
			*from_env = true;
	}
	if (a_count * (unsigned long)ntasks > FARM_JOBS_MAX) /* both <= 10^8: no overflow in 64 bits */
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "%lu array elements of %ld tasks make more than %lu shards; pass --shard I/N", a_count,
				     ntasks, FARM_JOBS_MAX);
	out->index = a_index * (unsigned long)ntasks + (unsigned long)procid;
	out->count = a_count * (unsigned long)ntasks;
	return GPUSHARE_OK;
}

size_t gpushare_farm_shard_size(const struct farm_shard *s, size_t n)
{
	return n / s->count + (s->index < n % s->count ? 1 : 0);
}
