/*
 * The farm's queue (farm_queue.h): retries first, in the order they failed,
 * then the directory's copy of the job list in job order.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "grow.h"
#include "farm_queue.h"

int farm_queue_push(struct farm_queue *q, const struct job_ref *j)
{
	if (q->n_retry == q->retry_cap) {
		size_t cap = q->retry_cap ? q->retry_cap * 2 : 16;
		struct job_ref *nr = malloc(cap * sizeof(*nr));

		if (!nr)
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		for (size_t i = 0; i < q->n_retry; i++)
			nr[i] = q->retry[(q->retry_head + i) % q->retry_cap];
		free(q->retry);
		q->retry = nr;
		q->retry_cap = cap;
		q->retry_head = 0;
	}
	q->retry[(q->retry_head + q->n_retry) % q->retry_cap] = *j;
	q->n_retry++;
	return GPUSHARE_OK;
}

int farm_queue_push_alone(struct farm_queue *q, const struct job_ref *j)
{
	if (gpushare_grow(&q->alone, q->n_alone, &q->cap_alone, sizeof(*q->alone), 4))
		return GPUSHARE_E_NOMEM;
	q->alone[q->n_alone++] = *j;
	return GPUSHARE_OK;
}

int farm_queue_next(struct farm_queue *q, struct job_ref *j)
{
	memset(j, 0, sizeof(*j));
	if (q->n_retry) {
		*j = q->retry[q->retry_head];
		q->retry_head = (q->retry_head + 1) % q->retry_cap;
		q->n_retry--;
		return 1;
	}
	while (q->cur.index < q->n_jobs) {
		uint64_t i = q->cur.index;
		bool pending = q->rs.state[i] == FARM_JOB_PENDING;
		uint32_t attempts, last;
		int rc = gpushare_farm_cursor_next(&q->cur, pending, &j->argv, &j->hash);

		if (rc < 0)
			return rc;
		if (rc == 0)
			return gpushare_fail(GPUSHARE_E_IO, "'%s' ends after %" PRIu64 " of its %" PRIu64 " jobs",
					     q->cur.path, i, q->n_jobs);
		if (!pending)
			continue;
		gpushare_farm_resume_lookup(&q->rs, i, &attempts, &last);
		j->job = (size_t)i;
		j->attempts = attempts;
		j->last_attempt = last;
		return 1;
	}
	return 0;
}

bool farm_queue_next_alone(struct farm_queue *q, struct job_ref *j)
{
	if (!q->n_alone)
		return false;
	*j = q->alone[0];
	memmove(q->alone, q->alone + 1, (q->n_alone - 1) * sizeof(*q->alone));
	q->n_alone--;
	return true;
}

void farm_queue_done(struct farm_queue *q, size_t job)
{
	q->rs.state[job] = FARM_JOB_DONE;
	q->rs.done++;
}

void farm_queue_failed(struct farm_queue *q, size_t job)
{
	q->rs.state[job] = FARM_JOB_FAILED;
	q->rs.failed++;
}

void farm_queue_begin(struct farm_queue *q)
{
	q->queued = q->rs.pending;
}

uint64_t farm_queue_queued(const struct farm_queue *q)
{
	return q->queued;
}

uint64_t farm_queue_n_jobs(const struct farm_queue *q)
{
	return q->n_jobs;
}

size_t farm_queue_n_done(const struct farm_queue *q)
{
	return q->rs.done;
}

size_t farm_queue_n_failed(const struct farm_queue *q)
{
	return q->rs.failed;
}

struct farm_resume *farm_queue_states(struct farm_queue *q)
{
	return &q->rs;
}

void farm_queue_release(struct farm_queue *q)
{
	for (size_t i = 0; i < q->n_retry; i++)
		free(q->retry[(q->retry_head + i) % q->retry_cap].argv);
	free(q->retry);
	q->retry = NULL;
	q->n_retry = q->retry_head = q->retry_cap = 0;
	for (size_t i = 0; i < q->n_alone; i++)
		free(q->alone[i].argv);
	free(q->alone);
	q->alone = NULL;
	q->n_alone = q->cap_alone = 0;
	gpushare_farm_cursor_close(&q->cur);
	gpushare_farm_resume_release(&q->rs);
}
