/*
 * The farm's queue (lib/farm/farm_queue.c): retries before the copy, in the
 * order they failed, across the ring's growth; the copy read in job order,
 * finished jobs skipped and a failed job's attempts carried; the retries
 * that run alone kept apart; a copy shorter than its count an error.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "farm_queue.h"

#define UNIT_TMPDIR "/tmp/gpushare-test-farm-queue"
#include "tmpdir.h"

/* DIR/jobs.jsonl holding "echo 0" .. "echo n-1"; the queue's cursor on it
 * and every job pending (no journal records). */
static void open_copy(struct farm_queue *q, unsigned n, const struct farm_record *recs, size_t n_recs)
{
	char path[128], text[256] = "";
	struct farm_jobs list;
	struct farm_shard all = { 0, 1 };
	uint64_t h;
	FILE *in, *out;

	for (unsigned i = 0; i < n; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "echo %u\n", i);
	snprintf(path, sizeof(path), "%s/jobs.jsonl", dir);
	out = fopen(path, "w");
	in = fmemopen(text, strlen(text), "r");
	assert_non_null(out);
	assert_non_null(in);
	gpushare_farm_jobs_init(&list, FARM_JOBS_ARGV);
	list.sink = gpushare_farm_jobs_copy_sink;
	list.sink_arg = out;
	assert_int_equal(gpushare_farm_jobs_load_stream(&list, in, "jobs"), 0);
	gpushare_farm_jobs_release(&list);
	fclose(in);
	assert_int_equal(fclose(out), 0);

	memset(q, 0, sizeof(*q));
	assert_int_equal(gpushare_farm_cursor_open(&q->cur, path), 0);
	assert_int_equal(gpushare_farm_cursor_scan(&q->cur, FARM_JOBS_ARGV, &q->n_jobs, &h), 0);
	assert_int_equal(q->n_jobs, n);
	assert_int_equal(gpushare_farm_resume_begin(&q->rs, n), 0);
	for (size_t i = 0; i < n_recs; i++)
		assert_int_equal(gpushare_farm_resume_add(&q->rs, &recs[i]), 0);
	assert_int_equal(gpushare_farm_resume_end(&q->rs, &all, 3), 0);
	q->queued = q->rs.pending;
}

static struct job_ref ref(size_t job, unsigned attempts)
{
	struct job_ref j;

	memset(&j, 0, sizeof(j));
	j.job = job;
	j.attempts = attempts;
	j.last_attempt = attempts;
	j.argv = calloc(1, sizeof(char *));
	assert_non_null(j.argv);
	return j;
}

static void expect_job(struct farm_queue *q, size_t job, unsigned attempts, const char *word)
{
	struct job_ref j;

	assert_int_equal(farm_queue_next(q, &j), 1);
	assert_int_equal(j.job, job);
	assert_int_equal(j.attempts, attempts);
	if (word) {
		assert_string_equal(j.argv[0], "echo");
		assert_string_equal(j.argv[1], word);
	}
	free(j.argv);
}

/* Finished jobs are skipped, a failed one comes with its attempts; a retry
 * pushed meanwhile goes before the rest of the copy. */
static void test_copy_in_order_retries_first(void **state)
{
	struct farm_record recs[2];
	struct farm_queue q;
	struct job_ref j, r;

	(void)state;
	memset(recs, 0, sizeof(recs));
	recs[0].job = 1;
	recs[0].attempt = 1;
	recs[0].outcome = FARM_OK;
	recs[1].job = 2;
	recs[1].attempt = 1;
	recs[1].outcome = FARM_FAILED;
	open_copy(&q, 4, recs, 2);
	assert_int_equal(q.queued, 3);

	expect_job(&q, 0, 0, "0");
	r = ref(0, 1);
	assert_int_equal(farm_queue_push(&q, &r), 0);
	expect_job(&q, 0, 1, NULL);                 /* the retry, before job 2 */
	expect_job(&q, 2, 1, "2");                  /* job 1 finished: skipped */
	expect_job(&q, 3, 0, "3");
	assert_int_equal(farm_queue_next(&q, &j), 0);

	farm_queue_done(&q, 0);
	farm_queue_failed(&q, 2);
	assert_int_equal(q.rs.done, 2);
	assert_int_equal(q.rs.failed, 1);
	assert_int_equal(q.rs.state[0], FARM_JOB_DONE);
	assert_int_equal(q.rs.state[2], FARM_JOB_FAILED);
	farm_queue_release(&q);
}

/* The retries' ring keeps their order while it grows around its end. */
static void test_retry_ring_keeps_order(void **state)
{
	struct farm_queue q;
	struct job_ref j;
	size_t want = 0, next = 0;

	(void)state;
	open_copy(&q, 0, NULL, 0);
	for (; next < 20; next++) {
		j = ref(next, 1);
		assert_int_equal(farm_queue_push(&q, &j), 0);
	}
	for (; want < 5; want++)
		expect_job(&q, want, 1, NULL);
	for (; next < 60; next++) {
		j = ref(next, 1);
		assert_int_equal(farm_queue_push(&q, &j), 0);
		if (next % 3 == 0)
			expect_job(&q, want++, 1, NULL);
	}
	while (want < 60)
		expect_job(&q, want++, 1, NULL);
	assert_int_equal(farm_queue_next(&q, &j), 0);
	/* Left in the queue: freed with it. */
	j = ref(7, 2);
	assert_int_equal(farm_queue_push(&q, &j), 0);
	farm_queue_release(&q);
	assert_null(q.retry);
}

/* Retries that run alone come only from their own list, in order. */
static void test_alone_kept_apart(void **state)
{
	struct farm_queue q;
	struct job_ref j;

	(void)state;
	open_copy(&q, 1, NULL, 0);
	j = ref(5, 1);
	j.culprit = true;
	assert_int_equal(farm_queue_push_alone(&q, &j), 0);
	j = ref(6, 1);
	j.isolate = true;
	assert_int_equal(farm_queue_push_alone(&q, &j), 0);
	expect_job(&q, 0, 0, "0");
	assert_int_equal(farm_queue_next(&q, &j), 0);
	assert_true(farm_queue_next_alone(&q, &j));
	assert_int_equal(j.job, 5);
	assert_true(j.culprit);
	free(j.argv);
	j = ref(8, 1);
	assert_int_equal(farm_queue_push_alone(&q, &j), 0);
	assert_true(farm_queue_next_alone(&q, &j));
	assert_int_equal(j.job, 6);
	assert_true(j.isolate);
	free(j.argv);
	farm_queue_release(&q);  /* job 8's argv with it */
}

/* A copy that ends before its count: an error naming it. */
static void test_short_copy_is_an_error(void **state)
{
	struct farm_queue q;
	struct job_ref j;

	(void)state;
	open_copy(&q, 2, NULL, 0);
	q.n_jobs = 3;
	free(q.rs.state);
	q.rs.state = calloc(3, 1);
	assert_non_null(q.rs.state);
	expect_job(&q, 0, 0, "0");
	expect_job(&q, 1, 0, "1");
	assert_int_equal(farm_queue_next(&q, &j), GPUSHARE_E_IO);
	assert_non_null(strstr(gpushare_errdetail(), "ends after 2 of its 3 jobs"));
	gpushare_clear_error();
	farm_queue_release(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_copy_in_order_retries_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_ring_keeps_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alone_kept_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_copy_is_an_error, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
