/*
 * The farm directory's copy of the job list, DIR/jobs.jsonl (farm_copy.h):
 * written one job at a time as the source is parsed, read back one job at
 * a time in job order by a cursor.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gpushare/gpushare.h"
#include "gpushare/files.h"
#include "farm_copy.h"

/* The one JSON writer that does not use json.h on purpose: the copy is read
 * back to run the jobs, so an argument keeps its bytes as given (cJSON writes
 * them unchanged) instead of being repaired to valid UTF-8. */
int gpushare_farm_jobs_copy_sink(void *arg, const struct farm_jobs *list)
{
	FILE *out = arg;
	const struct farm_job_entry *e = &list->jobs[list->n_jobs - 1];
	const char *s = list->arena + e->offset;
	cJSON *a = cJSON_CreateArray();
	bool ok = a != NULL;
	char *text;

	for (uint32_t k = 0; ok && k < e->argc; k++) {
		cJSON *v = cJSON_CreateString(s);

		ok = v && cJSON_AddItemToArray(a, v);
		s += strlen(s) + 1;
	}
	text = ok ? cJSON_PrintUnformatted(a) : NULL;
	cJSON_Delete(a);
	if (!text)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory writing the job list");
	if (strlen(text) > FARM_COPY_LINE_MAX) {
		free(text);
		return gpushare_fail(GPUSHARE_E_INVAL, "%s:%u: the job is longer than %d bytes as JSON", list->source, e->line,
				     FARM_COPY_LINE_MAX);
	}
	ok = fputs(text, out) >= 0 && fputc('\n', out) != EOF;
	free(text);
	if (!ok)
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the farm's copy of the job list: %s", strerror(errno));
	return GPUSHARE_OK;
}

int gpushare_farm_cursor_open(struct farm_cursor *c, const char *path)
{
	struct stat st;
	int fd;

	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "%s", path);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return gpushare_fail(GPUSHARE_E_NOT_FOUND, "'%s' does not exist", path);
		if (errno == ELOOP)
			return gpushare_fail(GPUSHARE_E_DIR, "'%s' is a symbolic link; refusing to read through it", path);
		return gpushare_fail(GPUSHARE_E_IO, "cannot open '%s': %s", path, strerror(errno));
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' is not a regular file of this user; refusing it", path);
	}
	c->f = fdopen(fd, "r");
	if (!c->f) {
		close(fd);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	return GPUSHARE_OK;
}

/* argv from one line of a copy; NULL with *why when it is not one. */
static char **argv_from_json(const char *line, size_t len, const char **why)
{
	cJSON *a = cJSON_ParseWithLength(line, len), *v;
	size_t n = 0, bytes = 0;
	char **argv = NULL, *s;

	*why = "not a JSON array of strings";
	if (!cJSON_IsArray(a))
		goto out;
	cJSON_ArrayForEach(v, a) {
		if (!cJSON_IsString(v))
			goto out;
		n++;
		bytes += strlen(v->valuestring) + 1;
	}
	if (!n) {
		*why = "an empty job";
		goto out;
	}
	argv = malloc((n + 1) * sizeof(*argv) + bytes);
	if (!argv) {
		*why = "out of memory";
		goto out;
	}
	s = (char *)(argv + n + 1);
	n = 0;
	cJSON_ArrayForEach(v, a) {
		size_t l = strlen(v->valuestring) + 1;

		memcpy(s, v->valuestring, l);
		argv[n++] = s;
		s += l;
	}
	argv[n] = NULL;
out:
	cJSON_Delete(a);
	return argv;
}

int gpushare_farm_cursor_next(struct farm_cursor *c, bool parse, char ***argv, uint64_t *hash)
{
	bool newline;
	int rc;
	size_t len;
	const char *why;
	char **v;

	if (argv)
		*argv = NULL;
	rc = gpushare_read_line(c->f, c->path, (size_t)c->index + 1, FARM_COPY_LINE_MAX, NULL, &c->line, &c->cap, &len,
				&newline);
	if (rc <= 0)
		return rc;
	if (!newline)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s:%" PRIu64 ": the last line is cut short", c->path,
				     c->index + 1);
	c->index++;
	if (!parse)
		return 1;
	v = argv_from_json(c->line, len, &why);
	if (!v)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s:%" PRIu64 ": %s", c->path, c->index, why);
	if (hash)
		*hash = gpushare_farm_argv_hash(v);
	if (argv)
		*argv = v;
	else
		free(v);
	return 1;
}

int gpushare_farm_cursor_rewind(struct farm_cursor *c)
{
	if (fseeko(c->f, 0, SEEK_SET) != 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot rewind '%s': %s", c->path, strerror(errno));
	clearerr(c->f);
	c->index = 0;
	return GPUSHARE_OK;
}

int gpushare_farm_cursor_scan(struct farm_cursor *c, enum farm_jobs_mode mode, uint64_t *n_jobs,
			      uint64_t *list_hash)
{
	uint64_t n = 0, h;
	int rc;

	/* The list hash starts with the count: count first, then hash. */
	if ((rc = gpushare_farm_cursor_rewind(c)))
		return rc;
	while ((rc = gpushare_farm_cursor_next(c, false, NULL, NULL)) == 1)
		n++;
	if (rc < 0 || (rc = gpushare_farm_cursor_rewind(c)))
		return rc;
	h = gpushare_farm_list_hash_begin(mode, n);
	for (;;) {
		uint64_t jh;

		rc = gpushare_farm_cursor_next(c, true, NULL, &jh);
		if (rc <= 0)
			break;
		h = gpushare_farm_list_hash_add(h, jh);
	}
	if (rc < 0 || (rc = gpushare_farm_cursor_rewind(c)))
		return rc;
	*n_jobs = n;
	*list_hash = h;
	return GPUSHARE_OK;
}

void gpushare_farm_cursor_close(struct farm_cursor *c)
{
	if (c->f)
		fclose(c->f);
	free(c->line);
	memset(c, 0, sizeof(*c));
}
