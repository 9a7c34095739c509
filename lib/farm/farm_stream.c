/*
 * What the farm watches while jobs run, beside their ends (farm_engine.h):
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
#include "farm_engine.h"

#define TAIL_LINE_MAX (64 * 1024)   /* a longer line is passed in pieces of this size */

struct farm_tail {
	int fd[2];                      /* out, err; -1 closed */
	struct gpushare_buf part[2];    /* a line not ended yet */
};

int farm_tail_open(struct farm *f, struct slot *s)
{
	const char *rel[2] = { s->out_rel, s->err_rel };
	struct farm_tail *t;

	if (!f->c->output)
		return GPUSHARE_OK;
	if (!(t = calloc(1, sizeof(*t))))
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (int i = 0; i < 2; i++) {
		char path[GPUSHARE_PATH_MAX * 2];

		snprintf(path, sizeof(path), "%s/%s", f->dir, rel[i]);
		t->fd[i] = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (t->fd[i] < 0) {
			int e = errno;

			if (i)
				close(t->fd[0]);
			free(t);
			return gpushare_fail(GPUSHARE_E_IO, "cannot read '%s': %s", path, strerror(e));
		}
	}
	s->tail = t;
	return GPUSHARE_OK;
}

static void emit(struct farm *f, const struct slot *s, int stream, const char *line, size_t len)
{
	f->c->output(FARM_JOB_NUMBER(s->job), s->attempt, stream + 1, line, len, f->c->output_arg);
}

/* Pass the complete lines read so far (and, last, the rest). */
static void drain(struct farm *f, const struct slot *s, struct farm_tail *t, int i, bool last)
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
					emit(f, s, i, b->s, b->len);
				b->len = 0;
			} else {
				emit(f, s, i, chunk + from, k - from);
			}
			from = chunk[k] == '\n' ? k + 1 : k;
		}
		if (from < (size_t)n && gpushare_buf_add(b, chunk + from, (size_t)n - from) != GPUSHARE_OK)
			b->len = 0; /* out of memory: the piece is lost to the terminal, not to the file */
	}
	if (last && b->len) {
		emit(f, s, i, b->s, b->len);
		b->len = 0;
	}
}

void farm_tail_read(struct farm *f, struct slot *s, bool last)
{
	struct farm_tail *t = s->tail;

	if (!t)
		return;
	for (int i = 0; i < 2; i++)
		drain(f, s, t, i, last);
	if (!last)
		return;
	for (int i = 0; i < 2; i++) {
		close(t->fd[i]);
		gpushare_buf_release(&t->part[i]);
	}
	free(t);
	s->tail = NULL;
}

void farm_tail_all(struct farm *f)
{
	for (size_t i = 0; f->c->output && i < f->n_gpus * f->max_k; i++) {
		if (f->slots[i].busy)
			farm_tail_read(f, &f->slots[i], false);
	}
}

/* ---- --timeout Nx ---- */

uint64_t farm_deadline(const struct farm *f, uint64_t start_ns)
{
	if (f->c->timeout_ns)
		return start_ns + f->c->timeout_ns;
	return f->rel_timeout_ns ? start_ns + f->rel_timeout_ns : 0;
}

int farm_ok_duration(struct farm *f, uint64_t ns)
{
	double t;

	if (f->c->timeout_factor <= 0)
		return GPUSHARE_OK;
	if (!f->ok_hist) {
		if (!(f->ok_hist = malloc(sizeof(*f->ok_hist))))
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		gpushare_hist_init(f->ok_hist);
	}
	gpushare_hist_record(f->ok_hist, ns / 1000 ? ns / 1000 : 1);
	if (f->ok_hist->count < GPUSHARE_FARM_TIMEOUT_MIN_OK)
		return GPUSHARE_OK;
	t = f->c->timeout_factor * (double)gpushare_hist_quantile(f->ok_hist, 0.5) * 1000.0;
	f->rel_timeout_ns = t < (double)GPUSHARE_FARM_TIMEOUT_FLOOR_NS ? GPUSHARE_FARM_TIMEOUT_FLOOR_NS
		: t > 1e18 ? (uint64_t)1e18 : (uint64_t)t;
	/* The running attempts get the new deadline too (one not yet being
	 * stopped: a stop under way keeps its course). */
	for (size_t i = 0; i < f->n_gpus * f->max_k; i++) {
		struct slot *s = &f->slots[i];

		if (s->busy && !s->kill_ns)
			s->deadline_ns = s->start_ns + f->rel_timeout_ns;
	}
	return GPUSHARE_OK;
}
