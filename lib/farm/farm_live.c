/*
 * DIR/running.json (farm_live.h): written by a running farm, read by
 * `farm status`, by its job lists and by a --resume that waits for a dead
 * farm's keeper.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gpushare/buf.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "json.h"
#include "sys.h"
#include "farm_journal.h"
#include "farm_live.h"

void farm_live_write(const char *dir, const struct farm_live_head *h, const struct farm_live_job *run, size_t n)
{
	char path[GPUSHARE_PATH_MAX + 32], tmp[GPUSHARE_PATH_MAX + 32];
	cJSON *o = cJSON_CreateObject(), *jobs;
	char *text = NULL;
	int fd;
	bool built = gpushare_json_int(o, "pid", getpid()) && gpushare_json_str(o, "host", h->host) &&
		  gpushare_json_num(o, "started_unix_s", h->started_unix_s) &&
		  gpushare_json_num(o, "updated_unix_s", farm_unix_now()) && gpushare_json_int(o, "slots", h->slots) &&
		  gpushare_json_int(o, "queued", (long long)h->queued) && gpushare_json_int(o, "running", h->running) &&
		  (jobs = gpushare_json_arr(o, "jobs")) != NULL;

	for (size_t i = 0; built && i < n; i++) {
		const struct farm_live_job *s = &run[i];
		cJSON *j;

		built = (j = gpushare_json_obj(jobs, NULL)) != NULL && gpushare_json_int(j, "job", (long long)FARM_JOB_NUMBER(s->job)) &&
		     gpushare_json_int(j, "attempt", s->attempt) && gpushare_json_int(j, "gpu", s->gpu) &&
		     gpushare_json_int(j, "slot", s->slot) && gpushare_json_num(j, "start_unix_s", s->start_unix_s);
	}
	/* A document missing a job is not written: the last one stays. */
	text = gpushare_json_finish(o, built, false);
	if (!text)
		return;
	snprintf(path, sizeof(path), "%s/" FARM_LIVE_NAME, dir);
	snprintf(tmp, sizeof(tmp), "%s/." FARM_LIVE_NAME ".tmp", dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd >= 0) {
		size_t len = strlen(text);
		bool ok = write(fd, text, len) == (ssize_t)len;

		if (close(fd) == 0 && ok)
			rename(tmp, path);
		else
			unlink(tmp);
	}
	free(text);
}

void farm_live_remove(const char *dir)
{
	char path[GPUSHARE_PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/" FARM_LIVE_NAME, dir);
	unlink(path);
}

cJSON *farm_live_parse(const char *dir)
{
	char path[GPUSHARE_PATH_MAX + 32], chunk[4096];
	struct gpushare_buf text = { 0 };
	cJSON *o;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/" FARM_LIVE_NAME, dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0 && text.len < (16u << 20)) {
		if (gpushare_buf_add(&text, chunk, (size_t)n) != GPUSHARE_OK)
			break;
	}
	close(fd);
	o = cJSON_Parse(gpushare_buf_str(&text));
	gpushare_buf_release(&text);
	return o;
}

bool farm_live_read(const char *dir, struct gpushare_farm_live *l)
{
	char host[256];
	const cJSON *v;
	cJSON *o = farm_live_parse(dir);
	long long n;
	uint64_t u;

	if (!o)
		return false;
	memset(l, 0, sizeof(*l));
	snprintf(l->dir, sizeof(l->dir), "%s", dir);
	if (gpushare_json_get_int(o, "pid", 1, INT_MAX, &n))
		l->pid = (long)n;
	if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(o, "host")))
		snprintf(l->host, sizeof(l->host), "%s", v->valuestring);
	gpushare_json_get_u64(o, "running", UINT64_MAX, &l->running);
	gpushare_json_get_u64(o, "queued", UINT64_MAX, &l->queued);
	if (gpushare_json_get_u64(o, "slots", UINT_MAX, &u))
		l->slots = (unsigned)u;
	if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(o, "updated_unix_s")))
		l->updated_unix_s = v->valuedouble;
	cJSON_Delete(o);
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		l->stale = strcmp(host, l->host) == 0 && (l->pid <= 0 || !gpushare_pid_alive((pid_t)l->pid));
	}
	return true;
}
