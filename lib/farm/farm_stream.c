/*
 * What the farm watches while jobs run, beside their ends (farm_stream.h):
 *
 * --tag: each running attempt's out/JOB.ATTEMPT.out and .err files are read
 * as they grow (about every TAIL_NS, and once more when the attempt ends),
 * and each complete line goes to the caller's output callback. The job
 * writes its files directly, as without --tag (no pipe: a job is never held
 * up by a slow terminal, and its files are the same either way); the farm
 * only reads them.
 *
 * --timeout Nx: the durations of this run's ok attempts in a log-linear
 * histogram (core/hist.c, in microseconds: under 1 % from the true value, up
 * to 51 days, constant memory), their median once GPUSHARE_FARM_TIMEOUT_MIN_OK
 * attempts ended ok, and N times it (at least GPUSHARE_FARM_TIMEOUT_FLOOR_NS)
 * as every running attempt's deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare/buf.h"
#include "gpushare/farm.h"
#include "gpushare/gpushare.h"
#include "gpushare/hist.h"
#include "gpushare/util.h"
#include "farm_journal.h"
#include "farm_stream.h"

#define TAIL_LINE_MAX (64 * 1024)   /* a longer line is passed in pieces of this size */

struct farm_tail {
	int fd[2];                      /* out, err; -1 closed */
	struct gpushare_buf part[2];    /* a line not ended yet */
	uint64_t job;                   /* its job's number (FARM_JOB_NUMBER) */
	unsigned attempt;
};

int farm_tail_open(const struct gpushare_farm_config *c, const char *dir, const char *out_rel, const char *err_rel,
		   uint64_t job, unsigned attempt, struct farm_tail **tp)
{
	const char *rel[2] = { out_rel, err_rel };
	struct farm_tail *t;

	if (!c->output)
		return GPUSHARE_OK;
	if (!(t = calloc(1, sizeof(*t))))
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (int i = 0; i < 2; i++) {
		char path[GPUSHARE_PATH_MAX * 2];

		snprintf(path, sizeof(path), "%s/%s", dir, rel[i]);
		t->fd[i] = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (t->fd[i] < 0) {
			int e = errno;

			if (i)
				close(t->fd[0]);
			free(t);
			return gpushare_fail(GPUSHARE_E_IO, "cannot read '%s': %s", path, strerror(e));
		}
	}
	t->job = FARM_JOB_NUMBER(job);
	t->attempt = attempt;
	*tp = t;
	return GPUSHARE_OK;
}

static void emit(const struct gpushare_farm_config *c, const struct farm_tail *t, int stream, const char *line,
		 size_t len)
{
	c->output(t->job, t->attempt, stream + 1, line, len, c->output_arg);
}

/* Pass the complete lines read so far (and, last, the rest). */
static void drain(const struct gpushare_farm_config *c, struct farm_tail *t, int i, bool last)
{
	struct gpushare_buf *b = &t->part[i];
	char chunk[16384];
	ssize_t n;

	while ((n = read(t->fd[i], chunk, sizeof(chunk))) > 0) {
		size_t from = 0;

		for (size_t k = 0; k < (size_t)n; k++) {
			if (chunk[k] != '\n' && b->len + (k - from) < TAIL_LINE_MAX)
				continue;
			if (b->len) {
				if (gpushare_buf_add(b, chunk + from, k - from) == GPUSHARE_OK)
					emit(c, t, i, b->s, b->len);
				b->len = 0;
			} else {
				emit(c, t, i, chunk + from, k - from);
			}
			from = chunk[k] == '\n' ? k + 1 : k;
		}
		if (from < (size_t)n && gpushare_buf_add(b, chunk + from, (size_t)n - from) != GPUSHARE_OK)
			b->len = 0; /* out of memory: the piece is lost to the terminal, not to the file */
	}
	if (last && b->len) {
		emit(c, t, i, b->s, b->len);
		b->len = 0;
	}
}

void farm_tail_read(const struct gpushare_farm_config *c, struct farm_tail **tp, bool last)
{
	struct farm_tail *t = *tp;

	if (!t)
		return;
	for (int i = 0; i < 2; i++)
		drain(c, t, i, last);
	if (!last)
		return;
	for (int i = 0; i < 2; i++) {
		close(t->fd[i]);
		gpushare_buf_release(&t->part[i]);
	}
	free(t);
	*tp = NULL;
}

/* ---- --timeout Nx ---- */

uint64_t farm_deadline(const struct farm_timeout *t, const struct gpushare_farm_config *c, uint64_t start_ns)
{
	if (c->timeout_ns)
		return start_ns + c->timeout_ns;
	return t->rel_ns ? start_ns + t->rel_ns : 0;
}

int farm_ok_duration(struct farm_timeout *t, const struct gpushare_farm_config *c, uint64_t ns)
{
	double x;

	if (c->timeout_factor <= 0)
		return 0;
	if (!t->ok_hist) {
		if (!(t->ok_hist = malloc(sizeof(*t->ok_hist))))
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		gpushare_hist_init(t->ok_hist);
	}
	gpushare_hist_record(t->ok_hist, ns / 1000 ? ns / 1000 : 1);
	if (t->ok_hist->count < GPUSHARE_FARM_TIMEOUT_MIN_OK)
		return 0;
	x = c->timeout_factor * (double)gpushare_hist_quantile(t->ok_hist, 0.5) * 1000.0;
	t->rel_ns = x < (double)GPUSHARE_FARM_TIMEOUT_FLOOR_NS ? GPUSHARE_FARM_TIMEOUT_FLOOR_NS
		: x > 1e18 ? (uint64_t)1e18 : (uint64_t)x;
	return 1;
}

void farm_timeout_release(struct farm_timeout *t)
{
	free(t->ok_hist);
	t->ok_hist = NULL;
	t->rel_ns = 0;
}
