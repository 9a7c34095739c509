/*
 * The farm's queue (lib/farm/farm_queue.c): the jobs of the shard that wait
 * to run. First the retries (a FIFO of jobs whose attempt failed, each
 * holding its argv), then the directory's copy of the job list read in job
 * order by a cursor, skipping the jobs the journal says are finished. Beside
 * them the retries that must run alone on a GPU (the suspects and culprits
 * of a fault under MPS), which the dispatch takes first. The queue also
 * holds each job's state (the resume state: pending, done or failed), since
 * that decides which jobs of the copy it hands out.
 *
 * Nothing here starts a process or writes a file: the farm's setup fills
 * the cursor and the states (farm.c), the dispatch takes and returns jobs.
 */
#ifndef GPUSHARE_FARM_QUEUE_H
#define GPUSHARE_FARM_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "farm_copy.h"
#include "farm_journal.h"

/* A job taken from the queue: from the copy, or waiting for a retry. */
struct job_ref {
	size_t job;
	uint64_t hash;
	char **argv;                       /* owned */
	unsigned attempts, last_attempt;
	bool culprit;                      /* a culprit's retry: runs alone on a GPU */
	bool isolate;                      /* runs alone on a GPU (a suspect of a fault) */
};

struct farm_queue {
	struct farm_cursor cur;            /* DIR/jobs.jsonl, read in order */
	uint64_t n_jobs;                   /* jobs in the copy (all shards) */
	struct farm_resume rs;             /* each job's state; the shard's counts */
	struct job_ref *retry;             /* jobs to try again, a FIFO (a ring) */
	size_t n_retry, retry_head, retry_cap;
	struct job_ref *alone;             /* retries that run alone on a GPU, in order */
	size_t n_alone, cap_alone;
	uint64_t queued;                   /* jobs of the shard waiting (the lists and the copy) */
};

/* Queue a retry (takes j->argv; the caller counts it in queued). */
int farm_queue_push(struct farm_queue *q, const struct job_ref *j);
/* Queue a retry that runs alone on a GPU (takes j->argv, likewise). */
int farm_queue_push_alone(struct farm_queue *q, const struct job_ref *j);
/* The next job to start: 1 and *j (its argv is the caller's); 0 when none
 * is waiting; < 0 when the copy cannot be read. Never an alone retry. */
int farm_queue_next(struct farm_queue *q, struct job_ref *j);
/* The oldest alone retry: true and *j (its argv the caller's), else false. */
bool farm_queue_next_alone(struct farm_queue *q, struct job_ref *j);
/* The job's final state, counted in the shard's done or failed. */
void farm_queue_done(struct farm_queue *q, size_t job);
void farm_queue_failed(struct farm_queue *q, size_t job);
/* The run begins: every pending job of the shard is queued. */
void farm_queue_begin(struct farm_queue *q);
/* Jobs waiting (the retries and the copy's rest). */
uint64_t farm_queue_queued(const struct farm_queue *q);
/* Jobs in the copy (all shards). */
uint64_t farm_queue_n_jobs(const struct farm_queue *q);
/* The shard's jobs finished for good: done, or failed. */
size_t farm_queue_n_done(const struct farm_queue *q);
size_t farm_queue_n_failed(const struct farm_queue *q);
/* Each job's state, for the dry run to read a journal into. */
struct farm_resume *farm_queue_states(struct farm_queue *q);
/* The retries' argv and lists, the cursor and the states. */
void farm_queue_release(struct farm_queue *q);

#endif
