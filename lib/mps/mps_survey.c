/*
 * The survey of MPS daemons (gpushare/mps.h): which pipe directories to
 * look at, each once, and what is at each, for `gpushare info` and the
 * exporter's system metrics.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "gpushare/mps.h"

void gpushare_mps_survey_add(struct gpushare_mps_survey *dirs, int *n, int max, const char *dir, const char *source)
{
	size_t len;

	if (!dir || !*dir || strlen(dir) >= sizeof(dirs->pipe_dir))
		return;
	len = strlen(dir);
	while (len > 1 && dir[len - 1] == '/')
		len--;
	for (int i = 0; i < *n; i++) {
		struct gpushare_mps_survey *d = &dirs[i];

		if (strlen(d->pipe_dir) != len || strncmp(d->pipe_dir, dir, len))
			continue;
		for (int k = 0; k < d->n_sources; k++) {
			if (!strcmp(d->sources[k], source))
				return;
		}
		if (d->n_sources < GPUSHARE_MPS_SURVEY_SOURCES)
			d->sources[d->n_sources++] = source;
		return;
	}
	if (*n >= max)
		return;
	memset(&dirs[*n], 0, sizeof(dirs[*n]));
	snprintf(dirs[*n].pipe_dir, sizeof(dirs[*n].pipe_dir), "%.*s", (int)len, dir);
	dirs[*n].sources[0] = source;
	dirs[*n].n_sources = 1;
	dirs[*n].answers = GPUSHARE_UNKNOWN;
	(*n)++;
}

void gpushare_mps_survey_add_known(struct gpushare_mps_survey *dirs, int *n, int max)
{
	char pipe_dir[GPUSHARE_PATH_MAX], log_dir[GPUSHARE_PATH_MAX];

	if (gpushare_mps_private_dirs(pipe_dir, sizeof(pipe_dir), log_dir, sizeof(log_dir)) == GPUSHARE_OK)
		gpushare_mps_survey_add(dirs, n, max, pipe_dir, "gpushare");
	else
		gpushare_clear_error();
	gpushare_mps_survey_add(dirs, n, max, getenv("CUDA_MPS_PIPE_DIRECTORY"), "env");
	gpushare_mps_survey_add(dirs, n, max, GPUSHARE_MPS_DEFAULT_PIPE_DIR, "default");
}

void gpushare_mps_survey_look(struct gpushare_mps_survey *d, const struct gpushare_mps_survey_opts *o)
{
	struct gpushare_mps m;
	pid_t pid = 0;
	int rc;

	d->init_rc = gpushare_mps_init(&m, d->pipe_dir, NULL);
	if (d->init_rc) {
		snprintf(d->error, sizeof(d->error), "%s", gpushare_errdetail());
		return;
	}
	if (o->timeout_ms > 0)
		m.timeout_ms = o->timeout_ms;
	if (o->max_timeout_ms > 0 && (m.timeout_ms <= 0 || m.timeout_ms > o->max_timeout_ms))
		m.timeout_ms = o->max_timeout_ms;
	d->state = gpushare_mps_state(&m, &d->pid);
	if (d->state != GPUSHARE_MPS_RUNNING)
		return;
	if (o->status_ndev > 0) {
		d->up = gpushare_mps_status(&m, o->status_ndev, &d->st) == GPUSHARE_OK;
		if (!d->up)
			gpushare_mps_status_release(&d->st);
		return;
	}
	rc = gpushare_mps_probe(&m, &pid);
	if (rc == GPUSHARE_OK) {
		d->answers = 1;
	} else if (rc == GPUSHARE_E_MPS_NOT_RUNNING) {
		d->answers = 0;
	} else {
		snprintf(d->error, sizeof(d->error), "%s%s%s", gpushare_strerror(rc), *gpushare_errdetail() ? ": " : "",
			 gpushare_errdetail());
	}
}

void gpushare_mps_survey_release(struct gpushare_mps_survey *d)
{
	if (d->up)
		gpushare_mps_status_release(&d->st);
	d->up = false;
}
