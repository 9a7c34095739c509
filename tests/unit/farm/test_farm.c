/*
 * Unit tests: the farm engine (lib/farm/farm.c) without a driver (jobs run
 * unplaced, as on one GPU): a farm of shell jobs end to end, retries and a
 * final failure, a timeout, resume after a partial run, the calibration's
 * choice, the summary as JSON and text (the live metrics text is
 * tests/unit/farm/test_metrics_farm.c).
 */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "gpushare/bench.h"
#include "gpushare/farm.h"
#include "gpushare/gpushare.h"
#include "farm_journal.h"

static char dir[64], fdir[96], jobs[96], side[96];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/gsfmXXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(fdir, sizeof(fdir), "%s/farm", dir);
	snprintf(jobs, sizeof(jobs), "%s/jobs.txt", dir);
	snprintf(side, sizeof(side), "%s/side", dir);
	/* No driver: the engine runs the jobs unplaced. */
	setenv("GPUSHARE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
	setenv("XDG_RUNTIME_DIR", dir, 1);
	unsetenv("CUDA_VISIBLE_DEVICES");
	unsetenv("SLURM_JOB_ID");
	unsetenv("SLURM_STEP_ID");
	unsetenv("SLURM_ARRAY_TASK_ID");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* n jobs that append their index to `side` (after sleeping `sleep` s), print
 * it (so that each attempt has its .out file) and exit with `code`. */
static void write_jobs(size_t n, const char *sleep_s, int code)
{
	FILE *f = fopen(jobs, "w");

	assert_non_null(f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "sh -c 'sleep %s; echo %zu >>%s; echo %zu; exit %d'\n", sleep_s, i, side, i, code);
	assert_int_equal(fclose(f), 0);
}

static size_t side_lines(void)
{
	FILE *f = fopen(side, "r");
	size_t n = 0;
	int c;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void config(struct gpushare_farm_config *c, unsigned slots)
{
	gpushare_farm_config_init(c);
	c->jobfile = jobs;
	c->dir = fdir;
	c->strategy = GPUSHARE_STRATEGY_TIMESLICE;
	c->slots = slots;
}

static void test_all_done(void **state)
{
	struct gpushare_farm_config c;
	struct gpushare_farm_result r;

	(void)state;
	write_jobs(6, "0", 0);
	config(&c, 3);
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_OK);
	assert_true(r.have_summary);
	assert_int_equal(r.summary.done, 6);
	assert_int_equal(r.summary.failed, 0);
	assert_int_equal(r.ended, 6);
	assert_int_equal(r.ok, 6);
	assert_int_equal(r.slots, 3);
	assert_false(r.calibrated);
	assert_int_equal(r.summary.n_gpus, 1);
	assert_non_null(strstr(r.summary.gpus[0].id, "0@"));
	assert_int_equal(side_lines(), 6);
	gpushare_farm_result_release(&r);
}

static void test_retries_then_failed(void **state)
{
	struct gpushare_farm_config c;
	struct gpushare_farm_result r;

	(void)state;
	write_jobs(2, "0", 4);
	config(&c, 2);
	c.retries = 2;
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_WORKER);
	assert_int_equal(r.ended, 6);            /* 2 jobs x (1 + 2 retries) */
	assert_int_equal(r.failed_attempts, 6);
	assert_int_equal(r.summary.failed, 2);
	assert_int_equal(side_lines(), 6);
	gpushare_farm_result_release(&r);
}

static void test_timeout(void **state)
{
	struct gpushare_farm_config c;
	struct gpushare_farm_result r;

	(void)state;
	write_jobs(1, "30", 0);
	config(&c, 1);
	c.timeout_ns = 200000000ULL;
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_WORKER);
	assert_int_equal(r.timeouts, 1);
	assert_true(r.run_s < 10);
	assert_int_equal(side_lines(), 0);
	gpushare_farm_result_release(&r);
}

static void test_resume_runs_the_rest(void **state)
{
	struct gpushare_farm_config c;
	struct gpushare_farm_result r;
	char shard[8];

	(void)state;
	write_jobs(5, "0", 0);
	config(&c, 2);
	/* Run the list as shard 0/1 first... */
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_OK);
	gpushare_farm_result_release(&r);
	/* ... then resuming runs nothing; a new farm in the same directory is refused. */
	c.resume = true;
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_OK);
	assert_int_equal(r.ended, 0);
	assert_int_equal(r.skipped, 5);
	assert_int_equal(r.summary.done, 5);
	gpushare_farm_result_release(&r);
	c.resume = false;
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_DIR);
	gpushare_farm_result_release(&r);
	/* A different shard of the same list in the same directory: refused. */
	snprintf(shard, sizeof(shard), "1/2");
	c.resume = true;
	c.shard = shard;
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_INVAL);
	gpushare_farm_result_release(&r);
	assert_int_equal(side_lines(), 5);
}

static void test_calibration_keeps_the_best(void **state)
{
	struct gpushare_farm_config c;
	struct gpushare_farm_result r;

	(void)state;
	/* Sleeping jobs scale with K: K = 1, 2, 4 tried, 4 kept. They sleep
	 * 1 s, long beside the start of a process even on a loaded machine,
	 * so that K = 4 is clearly the best. */
	write_jobs(24, "1", 0);
	config(&c, 0);
	c.max_slots = 4;
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_OK);
	assert_true(r.calibrated);
	assert_int_equal(r.n_calibration, 3);
	assert_int_equal(r.calibration[0].slots, 1);
	assert_int_equal(r.calibration[1].slots, 2);
	assert_int_equal(r.calibration[2].slots, 4);
	assert_int_equal(r.calibration[0].jobs, 2);
	assert_int_equal(r.calibration[2].jobs, 8);
	for (size_t k = 0; k < r.n_calibration; k++) /* measured; their ratio is bench/timing_cpu.sh's */
		assert_true(isfinite(r.calibration[k].jobs_per_s) && r.calibration[k].jobs_per_s > 0);
	assert_int_equal(r.slots, 4);
	assert_int_equal(r.summary.done, 24);
	gpushare_farm_result_release(&r);
}

static void test_calibration_with_few_jobs(void **state)
{
	struct gpushare_farm_config c;
	struct gpushare_farm_result r;

	(void)state;
	/* 3 jobs: the K = 1 round (2 jobs), then K = 2 with only 1 left. */
	write_jobs(3, "0", 0);
	config(&c, 0);
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_OK);
	assert_true(r.calibrated);
	assert_true(r.n_calibration >= 1);
	assert_int_equal(r.summary.done, 3);
	assert_int_equal(side_lines(), 3);
	gpushare_farm_result_release(&r);
}

static void test_summary_json_and_text(void **state)
{
	struct gpushare_farm_config c;
	struct gpushare_farm_result r;
	char *text = NULL, buf[4096];
	cJSON *doc, *sum, *run;
	FILE *f;
	size_t n;

	(void)state;
	write_file(jobs, "true\nfalse\n");
	config(&c, 1);
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_WORKER);
	assert_int_equal(gpushare_farm_summary_json(&r.summary, &r, &text), GPUSHARE_OK);
	doc = cJSON_Parse(text);
	assert_non_null(doc);
	sum = cJSON_GetObjectItem(doc, "summary");
	run = cJSON_GetObjectItem(doc, "run");
	assert_int_equal(cJSON_GetObjectItem(sum, "done")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(sum, "failed")->valueint, 1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(sum, "gpus")), 1);
	assert_string_equal(cJSON_GetObjectItem(run, "strategy")->valuestring, "timeslice");
	assert_int_equal(cJSON_GetObjectItem(run, "failed_attempts")->valueint, 1);
	cJSON_Delete(doc);
	free(text);
	f = tmpfile();
	assert_non_null(f);
	assert_int_equal(gpushare_farm_summary_write(f, &r.summary, &r), GPUSHARE_OK);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_non_null(strstr(buf, "jobs: 1 done, 1 failed, 0 unfinished of 2"));
	assert_non_null(strstr(buf, "1 slot per GPU"));
	gpushare_farm_result_release(&r);
}

static void test_bad_config(void **state)
{
	struct gpushare_farm_config c;
	struct gpushare_farm_result r;
	char *tmpl[] = { "echo", "{}", NULL };

	(void)state;
	write_jobs(1, "0", 0);
	config(&c, 1);
	c.dir = NULL;
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_INVAL);
	gpushare_farm_result_release(&r);
	config(&c, 1);
	c.jobfile = NULL;
	c.tmpl = tmpl;
	c.n_tmpl = 2;
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_INVAL); /* neither --args nor --range */
	gpushare_farm_result_release(&r);
	config(&c, 1);
	c.strategy = GPUSHARE_STRATEGY_STREAMS;
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_INVAL);
	gpushare_farm_result_release(&r);
	config(&c, 1);
	c.mem_per_job_bytes = 1ULL << 30; /* needs NVML */
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_NO_DRIVER);
	gpushare_farm_result_release(&r);
	config(&c, 1);
	c.jobfile = "/nonexistent/jobs.txt";
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_IO);
	gpushare_farm_result_release(&r);
}

/* Retries across resumes, without giving the job list again: attempt
 * numbers continue (no output file is written twice); a resume without a
 * job list needs the directory's copy, and never reads it through a link. */
static void test_resume_from_copy_numbers_attempts(void **state)
{
	struct gpushare_farm_config c;
	struct gpushare_farm_result r;
	struct farm_journal_data d;
	char path[160], copy[160];
	unsigned seen[2] = { 0, 0 };

	(void)state;
	write_jobs(2, "0", 4);
	config(&c, 2);
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_WORKER);   /* attempt 1 each */
	gpushare_farm_result_release(&r);
	unlink(jobs);                     /* the job file is gone: the copy is the list */
	c.jobfile = NULL;
	c.resume = true;
	c.retries = 2;
	c.given |= GPUSHARE_FARM_GIVEN_RETRIES; /* else the first run's (0) */
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_WORKER);   /* attempts 2 and 3 */
	assert_int_equal(r.ended, 4);
	assert_int_equal(r.skipped, 0);
	gpushare_farm_result_release(&r);
	c.retries = 3;
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_WORKER);   /* attempt 4 */
	assert_int_equal(r.ended, 2);
	assert_int_equal(r.summary.failed, 2);
	gpushare_farm_result_release(&r);
	assert_int_equal(gpushare_farm_journal_load(fdir, &d), 0);
	assert_int_equal(d.n_records, 8);
	for (size_t i = 0; i < d.n_records; i++) {
		unsigned bit = 1u << d.records[i].attempt;

		assert_true(d.records[i].attempt >= 1 && d.records[i].attempt <= 4);
		assert_false(seen[d.records[i].job] & bit);   /* never twice */
		seen[d.records[i].job] |= bit;
		snprintf(path, sizeof(path), "%s/out/%" PRIu64 ".%u.out", fdir, d.records[i].job + 1, d.records[i].attempt);
		assert_int_equal(access(path, F_OK), 0);
	}
	gpushare_farm_journal_data_release(&d);
	assert_int_equal(side_lines(), 8);

	/* The copy replaced by a link: refused, not read. */
	snprintf(copy, sizeof(copy), "%s/jobs.jsonl", fdir);
	assert_int_equal(unlink(copy), 0);
	assert_int_equal(symlink("/etc/passwd", copy), 0);
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_DIR);
	gpushare_farm_result_release(&r);
	/* No copy at all (a farm of an older gpushare): give the list again. */
	assert_int_equal(unlink(copy), 0);
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "give the job list again"));
	gpushare_farm_result_release(&r);
}

/* The busy periods the farm records: per GPU their sum equals the union of
 * the attempts' intervals, and is what the summary reports. */
static void test_busy_periods_match_the_union(void **state)
{
	struct gpushare_farm_config c;
	struct gpushare_farm_result r;
	struct farm_journal_data d;
	double sum = 0, uni = 0, cur_s = 0, cur_e = -1;
	size_t closing = 0;

	(void)state;
	write_jobs(7, "0.05", 0);
	config(&c, 3);
	assert_int_equal(gpushare_farm_run(&c, &r), GPUSHARE_OK);
	assert_int_equal(r.summary.n_gpus, 1);
	assert_int_equal(gpushare_farm_journal_load(fdir, &d), 0);
	assert_true(d.config.busy_periods);
	/* Records are in end order; the union of [start, end] by start. */
	for (size_t i = 0; i < d.n_records; i++) {
		if (d.records[i].gpu_busy_s >= 0) {
			sum += d.records[i].gpu_busy_s;
			closing++;
		}
	}
	assert_true(closing >= 1);
	assert_true(d.records[d.n_records - 1].gpu_busy_s >= 0);   /* the last end leaves the GPU idle */
	for (size_t done = 0; done < d.n_records; done++) {
		size_t k = SIZE_MAX;

		for (size_t i = 0; i < d.n_records; i++)   /* the next by start, not yet taken */
			if (d.records[i].start_unix_s > -1 && (k == SIZE_MAX || d.records[i].start_unix_s < d.records[k].start_unix_s))
				k = i;
		if (d.records[k].start_unix_s > cur_e) {
			uni += cur_e > cur_s ? cur_e - cur_s : 0;
			cur_s = d.records[k].start_unix_s;
			cur_e = d.records[k].end_unix_s;
		} else if (d.records[k].end_unix_s > cur_e) {
			cur_e = d.records[k].end_unix_s;
		}
		d.records[k].start_unix_s = -2;
	}
	uni += cur_e - cur_s;
	assert_true(fabs(sum - uni) < 1e-3 * (double)closing);
	assert_true(fabs(r.summary.gpus[0].busy_s - sum) < 1e-6);
	gpushare_farm_journal_data_release(&d);
	gpushare_farm_result_release(&r);
}

/* Group commit: three attempts in one write read back as three records. */
static void test_journal_group_commit(void **state)
{
	struct farm_journal j;
	struct farm_journal_data d;
	struct farm_attempt a[3];
	struct farm_config cfg;
	bool existing = true;

	(void)state;
	memset(a, 0, sizeof(a));
	for (int i = 0; i < 3; i++) {
		a[i].job = (uint64_t)i;
		a[i].hash = 0x1234 + (uint64_t)i;
		a[i].attempt = 1;
		a[i].outcome = i == 1 ? FARM_FAILED : FARM_OK;
		a[i].exit_code = i == 1 ? 2 : 0;
		a[i].gpu = -1;
		a[i].slot = -1;
		snprintf(a[i].stdout_path, sizeof(a[i].stdout_path), "out/%d.1.out", i);
	}
	assert_int_equal(gpushare_farm_journal_open(&j, dir, &existing), GPUSHARE_OK);
	assert_false(existing);
	memset(&cfg, 0, sizeof(cfg));
	cfg.n_jobs = 3;
	cfg.shard.count = 1;
	snprintf(cfg.strategy, sizeof(cfg.strategy), "timeslice");
	snprintf(cfg.hostname, sizeof(cfg.hostname), "h");
	assert_int_equal(gpushare_farm_journal_write_header(&j, &cfg), GPUSHARE_OK);
	assert_int_equal(gpushare_farm_journal_write_attempts(&j, a, 3), GPUSHARE_OK);
	assert_int_equal(gpushare_farm_journal_write_attempts(&j, a, 0), GPUSHARE_OK);
	gpushare_farm_journal_close(&j);
	memset(&d, 0, sizeof(d));
	assert_int_equal(gpushare_farm_journal_load(dir, &d), GPUSHARE_OK);
	assert_int_equal(d.n_records, 3);
	assert_int_equal(d.records[1].outcome, FARM_FAILED);
	assert_int_equal(d.records[1].exit_code, 2);
	assert_int_equal(d.records[2].hash, 0x1236);
	assert_false(d.torn_tail);
	gpushare_farm_journal_data_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_all_done, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retries_then_failed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resume_runs_the_rest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_calibration_keeps_the_best, setup, teardown),
		cmocka_unit_test_setup_teardown(test_calibration_with_few_jobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_summary_json_and_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_group_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resume_from_copy_numbers_attempts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_periods_match_the_union, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
