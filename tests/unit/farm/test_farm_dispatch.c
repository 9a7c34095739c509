/*
 * The farm's dispatch (lib/farm/farm_dispatch.c) on a farm put together by
 * hand, without farm.c's setup: a copy of the job list, one unplaced GPU,
 * K slots, the journal, timeslice. Small real jobs (/bin/sh) run in the
 * slots; what the dispatch decides is read back from the result, the job
 * states and the journal: retries and their numbering, jobs that cannot be
 * executed or never fit, --halt, time-outs, a stop before anything starts,
 * the calibration of K.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "clock.h"
#include "gpushare/gpushare.h"
#include "gpushare/strategy.h"
#include "farm_engine.h"

#define UNIT_TMPDIR "/tmp/gpushare-test-farm-dispatch"
#include "tmpdir.h"

struct rig {
	struct farm f;
	struct gpushare_farm_config c;
	struct gpushare_farm_result r;
};

/* A farm in dir over the jobs of text (one per line), K slots on one GPU;
 * c's other settings as set by the caller before rig_start. */
static void rig_init(struct rig *g, unsigned k, unsigned retries)
{
	gpushare_farm_config_init(&g->c);
	g->c.strategy = GPUSHARE_STRATEGY_TIMESLICE;
	g->c.retries = retries;
	g->c.slots = k;
	g->c.dir = dir;
	farm_init(&g->f, &g->c, &g->r);
	farm_stop_level = 0;
}

static void rig_start(struct rig *g, const char *text)
{
	struct farm *f = &g->f;
	struct farm_shard all = { 0, 1 };
	struct farm_jobs list;
	char path[GPUSHARE_PATH_MAX];
	uint64_t h;
	bool existing;
	FILE *in, *out;

	snprintf(f->dir, sizeof(f->dir), "%s", dir);
	snprintf(path, sizeof(path), "%s/out", dir);
	assert_int_equal(mkdir(path, 0777), 0);
	snprintf(path, sizeof(path), "%s/jobs.jsonl", dir);
	out = fopen(path, "w");
	in = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(out);
	assert_non_null(in);
	gpushare_farm_jobs_init(&list, FARM_JOBS_ARGV);
	list.sink = gpushare_farm_jobs_copy_sink;
	list.sink_arg = out;
	assert_int_equal(gpushare_farm_jobs_load_stream(&list, in, "jobs"), 0);
	gpushare_farm_jobs_release(&list);
	fclose(in);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(gpushare_farm_cursor_open(&f->q.cur, path), 0);
	assert_int_equal(gpushare_farm_cursor_scan(&f->q.cur, FARM_JOBS_ARGV, &f->q.n_jobs, &h), 0);
	assert_int_equal(gpushare_farm_resume_begin(&f->q.rs, f->q.n_jobs), 0);
	assert_int_equal(gpushare_farm_resume_end(&f->q.rs, &all, g->c.retries), 0);
	f->q.queued = f->q.rs.pending;

	f->n_gpus = 1;
	f->gpus = calloc(1, sizeof(*f->gpus));
	assert_non_null(f->gpus);
	f->gpus[0].mem_cap = UINT32_MAX;
	f->max_k = g->c.slots ? g->c.slots : 4;
	f->cur_k = g->c.slots ? g->c.slots : 1;
	f->slots = calloc(f->max_k, sizeof(*f->slots));
	assert_non_null(f->slots);
	for (unsigned i = 0; i < f->max_k; i++) {
		gpushare_child_init(&f->slots[i].ch);
		f->slots[i].index = i;
		f->slots[i].k = i;
	}
	f->pending = calloc(PENDING_MAX, sizeof(*f->pending));
	assert_non_null(f->pending);

	assert_int_equal(gpushare_farm_journal_open(&f->journal, dir, &existing), 0);
	f->journal_open = true;
	f->cfg.n_jobs = f->q.n_jobs;
	f->cfg.jobs_hash = h;
	f->cfg.shard = all;
	f->cfg.retries = g->c.retries;
	snprintf(f->cfg.strategy, sizeof(f->cfg.strategy), "timeslice");
	snprintf(f->cfg.hostname, sizeof(f->cfg.hostname), "test");
	assert_int_equal(gpushare_farm_journal_write_header(&f->journal, &f->cfg), 0);

	gpushare_run_ctx_init(&f->run, &(struct gpushare_run_opts){ .dir = dir });
	assert_int_equal(gpushare_run_ctx_check(&f->run, g->c.strategy), 0);
	assert_int_equal(gpushare_run_ctx_open(&f->run), 0);
	assert_int_equal(gpushare_run_ctx_start(&f->run, g->c.strategy), 0);
	if (!g->c.slots && f->q.queued)
		farm_calib_begin(&f->cal, f->cur_k, f->max_k, f->n_gpus, UINT32_MAX);
	f->t0_ns = f->last_progress_ns = gpushare_now_ns();
}

static void rig_release(struct rig *g)
{
	struct farm *f = &g->f;

	farm_stop_all(f);
	gpushare_run_ctx_close(&f->run, GPUSHARE_OK);
	farm_fault_free(f->faults, f->n_gpus);
	farm_queue_release(&f->q);
	gpushare_farm_journal_close(&f->journal);
	farm_timeout_release(&f->timeout);
	free(f->slots);
	free(f->gpus);
	free(f->pending);
	farm_stop_level = 0;
}

/* The journal's records, in the order written. */
static void records(struct farm_journal_data *d)
{
	assert_int_equal(gpushare_farm_journal_load(dir, d), 0);
}

static bool file_has(const char *rel, const char *what)
{
	char path[GPUSHARE_PATH_MAX], buf[4096];
	size_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	if (!(fp = fopen(path, "r")))
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	return strstr(buf, what) != NULL;
}

/* Ok, failed with a retry each, the slot's environment; each attempt
 * recorded with its number. */
static void test_retries_and_outcomes(void **state)
{
	struct farm_journal_data d;
	struct rig g;
	unsigned attempts[3] = { 0 }, ok = 0;

	(void)state;
	rig_init(&g, 2, 1);
	rig_start(&g, "sh -c 'test \"$GPUSHARE_FARM_JOB\" = 1 && test \"$GPUSHARE_FARM_ATTEMPT\" = 1'\n"
		      "false\n"
		      "sh -c 'echo out; echo err >&2; exit 3'\n");
	assert_int_equal(farm_run_loop(&g.f), 0);
	assert_int_equal(g.r.ended, 5);
	assert_int_equal(g.r.ok, 1);
	assert_int_equal(g.r.failed_attempts, 4);
	assert_int_equal(g.r.run_failed, 2);
	assert_int_equal(g.f.q.rs.done, 1);
	assert_int_equal(g.f.q.rs.failed, 2);
	assert_int_equal(g.f.q.queued, 0);
	assert_int_equal(g.f.running, 0);
	assert_int_equal(g.f.gpus[0].attempts, 5);
	assert_true(file_has("out/3.2.out", "out"));
	assert_true(file_has("out/3.2.err", "err"));

	records(&d);
	assert_int_equal(d.n_records, 5);
	for (size_t i = 0; i < d.n_records; i++) {
		const struct farm_record *rec = &d.records[i];

		assert_true(rec->job < 3);
		assert_int_equal(rec->attempt, ++attempts[rec->job]);
		ok += rec->outcome == FARM_OK;
		if (rec->job == 2)
			assert_int_equal(rec->exit_code, 3);
	}
	assert_int_equal(ok, 1);
	assert_int_equal(attempts[1], 2);
	gpushare_farm_journal_data_release(&d);
	rig_release(&g);
}

/* A job that cannot be executed is refused, once, and its .err file says
 * why; not an error of the farm. */
static void test_cannot_execute_is_refused(void **state)
{
	struct farm_journal_data d;
	struct rig g;

	(void)state;
	rig_init(&g, 1, 3);
	rig_start(&g, "/nonexistent/gpushare-no-such-program\ntrue\n");
	assert_int_equal(farm_run_loop(&g.f), 0);
	assert_int_equal(g.r.refused, 1);
	assert_int_equal(g.r.ok, 1);
	assert_int_equal(g.r.run_failed, 1);
	assert_int_equal(g.f.q.rs.state[0], FARM_JOB_FAILED);
	assert_true(file_has("out/1.1.err", "cannot execute job 1"));
	records(&d);
	assert_int_equal(d.n_records, 2);
	gpushare_farm_journal_data_release(&d);
	rig_release(&g);
}

/* --mem-per-job larger than every GPU's free memory: every job refused
 * without starting, its .err file naming the size. */
static void test_never_fits(void **state)
{
	struct rig g;

	(void)state;
	rig_init(&g, 1, 0);
	g.c.mem_per_job_bytes = 1ULL << 30;
	rig_start(&g, "true\ntrue\ntrue\n");
	g.f.gpus[0].mem_cap = 0;
	assert_int_equal(farm_run_loop(&g.f), 0);
	assert_int_equal(g.r.refused, 3);
	assert_int_equal(g.r.ok, 0);
	assert_int_equal(g.f.gpus[0].attempts, 3);
	assert_true(file_has("out/2.1.err", "--mem-per-job 1G"));
	rig_release(&g);
}

/* --halt 1: after the first job that fails for good nothing starts. */
static void test_halt(void **state)
{
	struct rig g;

	(void)state;
	rig_init(&g, 1, 0);
	g.c.halt = 1;
	rig_start(&g, "false\ntrue\ntrue\n");
	assert_int_equal(farm_run_loop(&g.f), 0);
	assert_true(g.r.halted);
	assert_int_equal(g.r.ended, 1);
	assert_int_equal(g.r.run_failed, 1);
	assert_int_equal(g.f.q.queued, 2);
	rig_release(&g);
}

/* A job past its --timeout is stopped and recorded as timed out; with a
 * retry left it runs again (and times out again). */
static void test_timeout(void **state)
{
	struct farm_journal_data d;
	struct rig g;
	uint64_t t0 = gpushare_now_ns();

	(void)state;
	rig_init(&g, 1, 1);
	g.c.timeout_ns = 200 * NS_PER_MS;
	rig_start(&g, "sleep 30\n");
	assert_int_equal(farm_run_loop(&g.f), 0);
	assert_true(gpushare_now_ns() - t0 < 20 * NS_PER_S);
	assert_int_equal(g.r.timeouts, 2);
	assert_int_equal(g.r.run_failed, 1);
	records(&d);
	assert_int_equal(d.n_records, 2);
	assert_int_equal(d.records[0].outcome, FARM_TIMEOUT);
	assert_int_equal(d.records[1].attempt, 2);
	gpushare_farm_journal_data_release(&d);
	rig_release(&g);
}

/* A stop asked before the loop: nothing starts, nothing is recorded, the
 * jobs stay queued. */
static void test_stop_before_start(void **state)
{
	struct rig g;

	(void)state;
	rig_init(&g, 2, 0);
	rig_start(&g, "true\ntrue\n");
	gpushare_farm_stop(false);
	assert_int_equal(farm_run_loop(&g.f), 0);
	assert_int_equal(g.r.ended, 0);
	assert_int_equal(g.f.q.queued, 2);
	rig_release(&g);
}

/* Without --slots the dispatch runs the calibration's rounds (2 K jobs per
 * GPU each) and ends on a K it tried. */
static void test_calibration_rounds(void **state)
{
	struct rig g;

	(void)state;
	rig_init(&g, 0, 0);
	rig_start(&g, "true\ntrue\ntrue\ntrue\ntrue\ntrue\ntrue\ntrue\n");
	assert_true(g.f.cal.on);
	assert_int_equal(farm_run_loop(&g.f), 0);
	assert_false(g.f.cal.on);
	assert_int_equal(g.r.ok, 8);
	assert_true(g.r.n_calibration >= 1);
	assert_int_equal(g.r.calibration[0].slots, 1);
	assert_int_equal(g.r.calibration[0].jobs, 2);
	assert_true(g.f.cur_k == 1 || g.f.cur_k == 2 || g.f.cur_k == 4);
	assert_int_equal(g.r.slots, g.f.cur_k);
	rig_release(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_retries_and_outcomes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cannot_execute_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_never_fits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_halt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_before_start, setup, teardown),
		cmocka_unit_test_setup_teardown(test_calibration_rounds, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
