/*
 * Unit tests: the farm journal (records written and read back, a torn last
 * line, fsyncs in a background thread and a failed one reported, garbage
 * with line numbers, refusing symlinks and a second writer,
 * the resume set and the summary of two shards).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "farm_journal.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/gsjnXXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/* A farm of n_jobs "job i" commands. */
static void make_jobs(struct farm_jobs *list, size_t n_jobs)
{
	char line[32];

	gpushare_farm_jobs_init(list, FARM_JOBS_ARGV);
	for (size_t i = 0; i < n_jobs; i++) {
		int n = snprintf(line, sizeof(line), "job %zu", i);

		assert_int_equal(gpushare_farm_jobs_add_line(list, line, (size_t)n, i + 1), 0);
	}
}

static void make_config(struct farm_config *cfg, const struct farm_jobs *list, unsigned long shard,
			unsigned long shards, unsigned retries)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->n_jobs = list->n_jobs;
	cfg->jobs_hash = gpushare_farm_jobs_list_hash(list);
	cfg->mode = list->mode;
	snprintf(cfg->jobs_source, sizeof(cfg->jobs_source), "jobs.txt");
	cfg->shard.index = shard;
	cfg->shard.count = shards;
	cfg->retries = retries;
	cfg->slots = 4;
	snprintf(cfg->strategy, sizeof(cfg->strategy), "mps");
	snprintf(cfg->hostname, sizeof(cfg->hostname), "node%lu", shard);
	cfg->n_gpus = 2;
	cfg->gpus[0].index = 0;
	snprintf(cfg->gpus[0].uuid, sizeof(cfg->gpus[0].uuid), "GPU-aaaa");
	cfg->gpus[1].index = 1;
	snprintf(cfg->gpus[1].uuid, sizeof(cfg->gpus[1].uuid), "GPU-bbbb");
}

static struct farm_attempt attempt(const struct farm_jobs *list, size_t job, unsigned n, enum farm_outcome o,
				   const char *gpu, double start, double end)
{
	struct farm_attempt a;

	memset(&a, 0, sizeof(a));
	a.job = job;
	a.hash = list->jobs[job].hash;
	a.attempt = n;
	a.outcome = o;
	a.exit_code = o == FARM_OK ? 0 : o == FARM_FAILED ? 3 : -1;
	a.signal = o == FARM_TIMEOUT ? 9 : 0;
	a.gpu = gpu ? gpu[5] - 'a' : -1;
	snprintf(a.gpu_uuid, sizeof(a.gpu_uuid), "%s", gpu ? gpu : "");
	a.slot = gpu ? 0 : -1;
	a.start_unix_s = start;
	a.end_unix_s = end;
	a.duration_s = end - start;
	snprintf(a.stdout_path, sizeof(a.stdout_path), "out/%zu.%u.out", job, n);
	snprintf(a.stderr_path, sizeof(a.stderr_path), "out/%zu.%u.err", job, n);
	return a;
}

static void write_text(const char *path, const char *text, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | flags, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void test_round_trip(void **state)
{
	struct farm_jobs list;
	struct farm_config cfg;
	struct farm_journal j;
	struct farm_journal_data d;
	struct farm_attempt a;
	bool existing;
	char *json;

	(void)state;
	make_jobs(&list, 5);
	make_config(&cfg, &list, 0, 1, 1);
	assert_int_equal(gpushare_farm_journal_open(&j, dir, &existing), 0);
	assert_false(existing);
	assert_int_equal(gpushare_farm_journal_write_header(&j, &cfg), 0);
	a = attempt(&list, 3, 1, FARM_TIMEOUT, "GPU-bbbb", 100.5, 102.25);
	assert_int_equal(gpushare_farm_journal_write_attempt(&j, &a), 0);
	gpushare_farm_journal_close(&j);

	/* The record is JSON with the documented names. */
	json = gpushare_farm_journal_attempt_json(&a);
	assert_non_null(strstr(json, "\"outcome\":\"timeout\""));
	assert_non_null(strstr(json, "\"exit_code\":null"));
	assert_non_null(strstr(json, "\"signal\":9"));
	assert_non_null(strstr(json, "\"job\":4,"));   /* index 3 is job 4: numbered from 1 */
	assert_non_null(strstr(json, "\"stdout\":\"out/3.1.out\""));
	free(json);

	assert_int_equal(gpushare_farm_journal_load(dir, &d), 0);
	assert_int_equal(d.n_headers, 1);
	assert_true(d.config.n_jobs == 5 && d.config.jobs_hash == cfg.jobs_hash);
	assert_string_equal(d.config.strategy, "mps");
	assert_int_equal(d.config.n_gpus, 2);
	assert_string_equal(d.config.gpus[1].uuid, "GPU-bbbb");
	assert_int_equal(d.n_records, 1);
	assert_true(d.records[0].job == 3 && d.records[0].attempt == 1);
	assert_int_equal(d.records[0].outcome, FARM_TIMEOUT);
	assert_int_equal(d.records[0].exit_code, -1);
	assert_int_equal(d.records[0].signal, 9);
	assert_string_equal(d.gpus[d.records[0].gpu_ref], "GPU-bbbb");
	assert_true(d.records[0].duration_s == 1.75);
	assert_false(d.torn_tail);
	assert_int_equal(gpushare_farm_journal_check_resume(&d, &cfg, &list), 0);
	gpushare_farm_journal_data_release(&d);

	/* Reopened: it holds records already, a resumed farm appends. */
	assert_int_equal(gpushare_farm_journal_open(&j, dir, &existing), 0);
	assert_true(existing);
	gpushare_farm_journal_close(&j);
	gpushare_farm_jobs_release(&list);
}

/* With the fsyncs in a background thread: every record written before
 * gpushare_farm_journal_sync() is in the file afterwards, in order. */
static void test_background_sync(void **state)
{
	struct farm_jobs list;
	struct farm_config cfg;
	struct farm_journal j;
	struct farm_journal_data d;
	struct farm_attempt a[3];
	bool existing;

	(void)state;
	make_jobs(&list, 300);
	make_config(&cfg, &list, 0, 1, 0);
	assert_int_equal(gpushare_farm_journal_open(&j, dir, &existing), 0);
	assert_int_equal(gpushare_farm_journal_write_header(&j, &cfg), 0);
	assert_int_equal(gpushare_farm_journal_sync_in_background(&j), 0);
	assert_non_null(j.syncer);
	for (size_t i = 0; i < 300; i += 3) {
		for (size_t k = 0; k < 3; k++)
			a[k] = attempt(&list, i + k, 1, FARM_OK, "GPU-aaaa", 10.0 + (double)i, 11.0 + (double)i);
		assert_int_equal(gpushare_farm_journal_write_attempts(&j, a, i % 2 ? 3 : 1), 0);
		if (i % 2 == 0)
			for (size_t k = 1; k < 3; k++)
				assert_int_equal(gpushare_farm_journal_write_attempt(&j, &a[k]), 0);
	}
	assert_int_equal(gpushare_farm_journal_sync(&j), 0);
	gpushare_farm_journal_close(&j);
	assert_null(j.syncer);
	assert_int_equal(gpushare_farm_journal_load(dir, &d), 0);
	assert_int_equal(d.n_records, 300);
	for (size_t i = 0; i < 300; i++)
		assert_int_equal(d.records[i].job, i);
	assert_false(d.torn_tail);
	gpushare_farm_journal_data_release(&d);
	gpushare_farm_jobs_release(&list);
}

/* A failed fsync in the background is not lost: the next sync and the next
 * write report it. (fsync on a pipe fails with EINVAL.) */
static void test_background_sync_failure(void **state)
{
	struct farm_jobs list;
	struct farm_journal j;
	struct farm_attempt a;
	int p[2];
	char buf[4096];

	(void)state;
	make_jobs(&list, 2);
	assert_int_equal(pipe(p), 0);
	memset(&j, 0, sizeof(j));
	j.fd = p[1];
	snprintf(j.path, sizeof(j.path), "a pipe");
	a = attempt(&list, 1, 1, FARM_OK, "GPU-aaaa", 1.0, 2.0);
	/* Without the thread the write itself reports it. */
	assert_int_equal(gpushare_farm_journal_write_attempt(&j, &a), GPUSHARE_E_IO);
	assert_non_null(strstr(gpushare_errdetail(), "cannot sync 'a pipe'"));
	assert_int_equal(gpushare_farm_journal_sync_in_background(&j), 0);
	assert_int_equal(gpushare_farm_journal_write_attempt(&j, &a), 0);
	assert_int_equal(gpushare_farm_journal_sync(&j), GPUSHARE_E_IO);
	assert_non_null(strstr(gpushare_errdetail(), "cannot sync 'a pipe'"));
	assert_int_equal(gpushare_farm_journal_write_attempt(&j, &a), GPUSHARE_E_IO);
	assert_true(read(p[0], buf, sizeof(buf)) > 0);
	gpushare_farm_journal_close(&j);
	assert_int_equal(j.fd, -1);
	close(p[0]);
	gpushare_farm_jobs_release(&list);
}

static void test_torn_line(void **state)
{
	struct farm_jobs list;
	struct farm_config cfg;
	struct farm_journal j;
	struct farm_journal_data d;
	struct farm_attempt a;
	char path[128];
	bool existing;
	struct stat st;

	(void)state;
	make_jobs(&list, 4);
	make_config(&cfg, &list, 0, 1, 0);
	assert_int_equal(gpushare_farm_journal_open(&j, dir, &existing), 0);
	assert_int_equal(gpushare_farm_journal_write_header(&j, &cfg), 0);
	a = attempt(&list, 0, 1, FARM_OK, "GPU-aaaa", 10, 11);
	assert_int_equal(gpushare_farm_journal_write_attempt(&j, &a), 0);
	gpushare_farm_journal_close(&j);
	/* A SIGKILL in the middle of a write leaves half a record. */
	snprintf(path, sizeof(path), "%s/%s", dir, FARM_JOURNAL_NAME);
	write_text(path, "{\"type\":\"attempt\",\"job\":1,\"ha", O_APPEND);
	assert_int_equal(gpushare_farm_journal_load(dir, &d), 0);
	assert_true(d.torn_tail);
	assert_int_equal(d.n_records, 1);
	gpushare_farm_journal_data_release(&d);

	/* Opening changes nothing (a refused resume must leave the file as it
	 * was); the next write cuts the torn line off before appending and
	 * says how much it cut. */
	assert_int_equal(stat(path, &st), 0);
	off_t size = st.st_size;

	assert_int_equal(gpushare_farm_journal_open(&j, dir, &existing), 0);
	assert_true(existing);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, size);
	a = attempt(&list, 1, 1, FARM_OK, "GPU-aaaa", 11, 12);
	assert_int_equal(gpushare_farm_journal_write_attempt(&j, &a), 0);
	assert_int_equal(j.cut_bytes, strlen("{\"type\":\"attempt\",\"job\":1,\"ha"));
	gpushare_farm_journal_close(&j);
	assert_int_equal(gpushare_farm_journal_load(dir, &d), 0);
	assert_false(d.torn_tail);
	assert_int_equal(d.n_records, 2);
	assert_true(d.records[1].job == 1);
	gpushare_farm_journal_data_release(&d);
	assert_int_equal(stat(path, &st), 0);
	gpushare_farm_jobs_release(&list);
}

static void test_garbage_rejected(void **state)
{
	struct farm_jobs list;
	struct farm_config cfg;
	struct farm_journal_data d;
	char path[128], *hdr, text[4096], big[FARM_JOURNAL_LINE_MAX + 16];

	(void)state;
	make_jobs(&list, 3);
	make_config(&cfg, &list, 0, 1, 0);
	hdr = gpushare_farm_journal_header_json(&cfg);
	snprintf(path, sizeof(path), "%s/%s", dir, FARM_JOURNAL_NAME);

	snprintf(text, sizeof(text), "%s\n{\"type\":\"attempt\"}\n", hdr);
	write_text(path, text, O_TRUNC);
	assert_int_equal(gpushare_farm_journal_load(dir, &d), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), ":2: attempt without a valid job"));

	snprintf(text, sizeof(text), "%s\n\nnot json at all\n", hdr);
	write_text(path, text, O_TRUNC);
	assert_int_equal(gpushare_farm_journal_load(dir, &d), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), ":3: not a journal record"));

	write_text(path, "{\"type\":\"attempt\",\"job\":0}\n", O_TRUNC);
	assert_int_equal(gpushare_farm_journal_load(dir, &d), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), ":1: attempt record before the header"));

	/* A job number beyond the header's count (3 jobs: 1 to 3). */
	snprintf(text, sizeof(text), "%s\n{\"type\":\"attempt\",\"job\":4,\"hash\":\"0000000000000000\","
		 "\"attempt\":1,\"outcome\":\"ok\",\"exit_code\":0,\"signal\":null,\"gpu\":null,"
		 "\"gpu_uuid\":null,\"slot\":null,\"start_unix_s\":1,\"end_unix_s\":2,\"duration_seconds\":1}\n", hdr);
	write_text(path, text, O_TRUNC);
	assert_int_equal(gpushare_farm_journal_load(dir, &d), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), ":2: attempt of a job beyond"));

	/* Job 0: no job of version 2, which numbers them from 1. */
	snprintf(text, sizeof(text), "%s\n{\"type\":\"attempt\",\"job\":0,\"hash\":\"0000000000000000\","
		 "\"attempt\":1,\"outcome\":\"ok\",\"exit_code\":0,\"signal\":null,\"gpu\":null,"
		 "\"gpu_uuid\":null,\"slot\":null,\"start_unix_s\":1,\"end_unix_s\":2,\"duration_seconds\":1}\n", hdr);
	write_text(path, text, O_TRUNC);
	assert_int_equal(gpushare_farm_journal_load(dir, &d), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), ":2: attempt of job 0"));

	/* Version 1 (an earlier gpushare) numbered them from 0: read as indices. */
	{
		char *v = strstr(text, "\"version\":2");

		assert_non_null(v);
		v[strlen("\"version\":")] = '1';
	}
	write_text(path, text, O_TRUNC);
	assert_int_equal(gpushare_farm_journal_load(dir, &d), GPUSHARE_OK);
	assert_int_equal(d.config.version, 1);
	assert_int_equal(d.n_records, 1);
	assert_true(d.records[0].job == 0);
	gpushare_farm_journal_data_release(&d);

	/* A line longer than the bound, even a complete one. */
	memset(big, 'x', sizeof(big) - 2);
	big[sizeof(big) - 2] = '\n';
	big[sizeof(big) - 1] = '\0';
	snprintf(text, sizeof(text), "%s\n", hdr);
	write_text(path, text, O_TRUNC);
	write_text(path, big, O_APPEND);
	assert_int_equal(gpushare_farm_journal_load(dir, &d), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), ":2: line longer than"));

	write_text(path, "", O_TRUNC);
	assert_int_equal(gpushare_farm_journal_load(dir, &d), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "no header record"));
	unlink(path);
	assert_int_equal(gpushare_farm_journal_load(dir, &d), GPUSHARE_E_NOT_FOUND);
	free(hdr);
	gpushare_farm_jobs_release(&list);
}

static void test_open_refuses(void **state)
{
	struct farm_journal j, k;
	char path[128];
	bool existing;

	(void)state;
	snprintf(path, sizeof(path), "%s/%s", dir, FARM_JOURNAL_NAME);
	/* A symlink planted where the journal goes is not followed. */
	assert_int_equal(symlink("/tmp/gs-elsewhere-journal", path), 0);
	assert_int_equal(gpushare_farm_journal_open(&j, dir, &existing), GPUSHARE_E_DIR);
	assert_non_null(strstr(gpushare_errdetail(), "symbolic link"));
	assert_int_equal(access("/tmp/gs-elsewhere-journal", F_OK), -1);
	unlink(path);
	/* One writer at a time. */
	assert_int_equal(gpushare_farm_journal_open(&j, dir, &existing), 0);
	assert_int_equal(gpushare_farm_journal_open(&k, dir, &existing), GPUSHARE_E_BUSY);
	gpushare_farm_journal_close(&j);
	assert_int_equal(gpushare_farm_journal_open(&k, dir, &existing), 0);
	gpushare_farm_journal_close(&k);
}

/* Write a journal for cfg with the given attempts into d. */
static void write_journal(const char *d, const struct farm_config *cfg, const struct farm_attempt *a, size_t n)
{
	struct farm_journal j;
	bool existing;

	assert_int_equal(mkdir(d, 0700), 0);
	assert_int_equal(gpushare_farm_journal_open(&j, d, &existing), 0);
	assert_int_equal(gpushare_farm_journal_write_header(&j, cfg), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(gpushare_farm_journal_write_attempt(&j, &a[i]), 0);
	gpushare_farm_journal_close(&j);
}

static void test_resume_set(void **state)
{
	struct farm_jobs list;
	struct farm_config cfg;
	struct farm_journal_data d;
	struct farm_resume r;
	char sub[128];

	(void)state;
	make_jobs(&list, 6);
	make_config(&cfg, &list, 0, 1, 1);           /* one retry: two attempts */
	struct farm_attempt a[] = {
		attempt(&list, 0, 1, FARM_OK, "GPU-aaaa", 1, 2),
		attempt(&list, 1, 1, FARM_FAILED, "GPU-aaaa", 1, 2),     /* one retry left */
		attempt(&list, 2, 1, FARM_FAILED, "GPU-bbbb", 1, 2),
		attempt(&list, 2, 2, FARM_TIMEOUT, "GPU-bbbb", 2, 3),    /* used up */
		attempt(&list, 3, 1, FARM_REFUSED, NULL, 1, 1),          /* final at once */
		attempt(&list, 4, 1, FARM_STOPPED, "GPU-aaaa", 1, 2),    /* runs again */
		attempt(&list, 5, 1, FARM_FAILED, "GPU-aaaa", 1, 2),
		attempt(&list, 5, 2, FARM_OK, "GPU-aaaa", 2, 3),         /* ok on retry */
	};
	snprintf(sub, sizeof(sub), "%s/farm", dir);
	write_journal(sub, &cfg, a, sizeof(a) / sizeof(a[0]));
	assert_int_equal(gpushare_farm_journal_load(sub, &d), 0);
	uint32_t att, last;

	assert_int_equal(gpushare_farm_resume_build(&d, list.n_jobs, &cfg.shard, cfg.retries, &r), 0);
	assert_int_equal(r.state[0], FARM_JOB_DONE);
	assert_int_equal(r.state[1], FARM_JOB_PENDING);
	gpushare_farm_resume_lookup(&r, 1, &att, &last);
	assert_true(att == 1 && last == 1);
	assert_int_equal(r.state[2], FARM_JOB_FAILED);
	assert_int_equal(r.state[3], FARM_JOB_FAILED);
	assert_int_equal(r.state[4], FARM_JOB_PENDING);
	gpushare_farm_resume_lookup(&r, 4, &att, &last);
	assert_int_equal(att, 0);                    /* stopped does not count */
	assert_int_equal(last, 1);                   /* next attempt is 2 */
	assert_int_equal(r.state[5], FARM_JOB_DONE);
	assert_true(r.done == 2 && r.failed == 2 && r.pending == 2);
	/* Attempt counts are kept only for the pending jobs that ran before. */
	assert_int_equal(r.n_entries, 2);
	gpushare_farm_resume_lookup(&r, 0, &att, &last);
	assert_true(att == 0 && last == 0);
	gpushare_farm_resume_release(&r);

	/* With shard 1/2 only odd jobs are this farm's. */
	struct farm_shard odd = { 1, 2 };

	assert_int_equal(gpushare_farm_resume_build(&d, list.n_jobs, &odd, cfg.retries, &r), 0);
	assert_int_equal(r.state[0], FARM_JOB_OTHER_SHARD);
	assert_true(r.done == 1 && r.failed == 1 && r.pending == 1);
	gpushare_farm_resume_release(&r);
	gpushare_farm_journal_data_release(&d);
	gpushare_farm_jobs_release(&list);
}

static void test_resume_refuses_changed_jobs(void **state)
{
	struct farm_jobs list, changed;
	struct farm_config cfg, cfg2;
	struct farm_journal_data d;
	char sub[128];

	(void)state;
	make_jobs(&list, 4);
	make_config(&cfg, &list, 0, 1, 0);
	struct farm_attempt a[] = {
		attempt(&list, 0, 1, FARM_OK, "GPU-aaaa", 1, 2),
		attempt(&list, 2, 1, FARM_OK, "GPU-aaaa", 2, 3),
	};
	snprintf(sub, sizeof(sub), "%s/farm", dir);
	write_journal(sub, &cfg, a, 2);
	assert_int_equal(gpushare_farm_journal_load(sub, &d), 0);

	/* Job 2 edited: named. */
	gpushare_farm_jobs_init(&changed, FARM_JOBS_ARGV);
	assert_int_equal(gpushare_farm_jobs_add_line(&changed, "job 0", 5, 1), 0);
	assert_int_equal(gpushare_farm_jobs_add_line(&changed, "job 1", 5, 2), 0);
	assert_int_equal(gpushare_farm_jobs_add_line(&changed, "job 2b", 6, 3), 0);
	assert_int_equal(gpushare_farm_jobs_add_line(&changed, "job 3", 5, 4), 0);
	make_config(&cfg2, &changed, 0, 1, 0);
	assert_int_equal(gpushare_farm_journal_check_resume(&d, &cfg2, &changed), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "job 3 (jobs:3, now 'job 2b')"));   /* index 2 is job 3 */
	gpushare_farm_jobs_release(&changed);

	/* Job 3 (not run yet) edited: refused too. */
	gpushare_farm_jobs_init(&changed, FARM_JOBS_ARGV);
	assert_int_equal(gpushare_farm_jobs_add_line(&changed, "job 0", 5, 1), 0);
	assert_int_equal(gpushare_farm_jobs_add_line(&changed, "job 1", 5, 2), 0);
	assert_int_equal(gpushare_farm_jobs_add_line(&changed, "job 2", 5, 3), 0);
	assert_int_equal(gpushare_farm_jobs_add_line(&changed, "job 3x", 6, 4), 0);
	make_config(&cfg2, &changed, 0, 1, 0);
	assert_int_equal(gpushare_farm_journal_check_resume(&d, &cfg2, &changed), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "not run yet differs"));
	gpushare_farm_jobs_release(&changed);

	/* Another shard. */
	make_config(&cfg2, &list, 1, 2, 0);
	assert_int_equal(gpushare_farm_journal_check_resume(&d, &cfg2, &list), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "shard 1/2"));
	gpushare_farm_journal_data_release(&d);
	gpushare_farm_jobs_release(&list);
}

static void test_merge_two_shards(void **state)
{
	struct farm_jobs list;
	struct farm_config c0, c1;
	struct farm_summary s;
	char p0[128], p1[128];

	(void)state;
	make_jobs(&list, 8);
	make_config(&c0, &list, 0, 2, 0);
	make_config(&c1, &list, 1, 2, 0);
	/* Shard 0 (jobs 0 2 4 6): GPU-aaaa busy 100..104 with an overlap. */
	struct farm_attempt a0[] = {
		attempt(&list, 0, 1, FARM_OK, "GPU-aaaa", 100, 102),
		attempt(&list, 2, 1, FARM_OK, "GPU-aaaa", 101, 104),
		attempt(&list, 4, 1, FARM_FAILED, "GPU-aaaa", 104, 104),
		/* job 6 never recorded: running or lost when stopped */
	};
	/* Shard 1 (jobs 1 3 5 7) on another node's GPU-bbbb: 100..101, 105..110. */
	struct farm_attempt a1[] = {
		attempt(&list, 1, 1, FARM_OK, "GPU-bbbb", 100, 101),
		attempt(&list, 3, 1, FARM_OK, "GPU-bbbb", 105, 110),
		attempt(&list, 5, 1, FARM_OK, "GPU-bbbb", 105, 106),
		attempt(&list, 7, 1, FARM_REFUSED, NULL, 100, 100),
	};
	snprintf(p0, sizeof(p0), "%s/shard0", dir);
	snprintf(p1, sizeof(p1), "%s/shard1", dir);
	write_journal(p0, &c0, a0, 3);
	write_journal(p1, &c1, a1, 4);
	char j0[160], j1[160], j2[160];

	snprintf(j0, sizeof(j0), "%s/journal.jsonl", p0);
	snprintf(j1, sizeof(j1), "%s/journal.jsonl", p1);
	const char *both[] = { j0, j1 };

	assert_int_equal(gpushare_journal_summary_build(both, 2, &s), 0);
	assert_int_equal(s.n_jobs, 8);
	assert_int_equal(s.shard_count, 2);
	assert_int_equal(s.shards_seen, 2);
	assert_int_equal(s.done, 5);
	assert_int_equal(s.failed, 2);               /* job 4 (no retries), job 7 refused */
	assert_int_equal(s.unfinished, 1);           /* job 6 */
	assert_int_equal(s.attempts, 7);
	assert_true(s.makespan_s == 10.0);
	assert_true(s.jobs_per_s == 0.7);
	assert_int_equal(s.n_gpus, 2);
	assert_string_equal(s.gpus[0].id, "GPU-aaaa");
	assert_true(s.gpus[0].busy_s == 4.0);        /* 100..104, overlap counted once */
	assert_true(s.gpus[0].job_s == 5.0);
	assert_true(s.gpus[0].busy_fraction == 0.4);
	assert_string_equal(s.gpus[1].id, "GPU-bbbb");
	assert_true(s.gpus[1].busy_s == 6.0);
	assert_true(s.gpus[1].busy_fraction == 0.6);
	gpushare_journal_summary_release(&s);

	/* Only one shard given: the other's jobs are unfinished, not done. */
	assert_int_equal(gpushare_journal_summary_build(both, 1, &s), 0);
	assert_int_equal(s.shards_seen, 1);
	assert_int_equal(s.done, 2);
	assert_int_equal(s.unfinished, 5);
	gpushare_journal_summary_release(&s);

	/* A journal of another job list is refused. */
	c1.jobs_hash ^= 1;
	snprintf(p1, sizeof(p1), "%s/other", dir);
	write_journal(p1, &c1, a1, 4);
	snprintf(j2, sizeof(j2), "%s/journal.jsonl", p1);
	both[1] = j2;
	assert_int_equal(gpushare_journal_summary_build(both, 2, &s), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "different job lists"));
	gpushare_farm_jobs_release(&list);
}

/* Busy time from the busy periods the records close (gpu_busy_seconds), equal to
 * the union of the intervals that an older journal falls back to; a period
 * no record closes (a killed run) counts from its first start to its last
 * end; a GPU that two journals name is merged, not summed. */
static void test_busy_periods(void **state)
{
	struct farm_jobs list;
	struct farm_config cfg, cfg_old;
	struct farm_journal j;
	struct farm_summary s;
	bool existing;
	char p_new[128], p_old[128], p_two[128], jn[160], jo[160], jt[160];
	char *json;

	(void)state;
	make_jobs(&list, 8);
	make_config(&cfg, &list, 0, 1, 0);
	cfg.busy_periods = true;
	make_config(&cfg_old, &list, 0, 1, 0);
	/* GPU-aaaa: 100..104 (two overlapping jobs; the second closes 4 s),
	 * 106..107 (one job closing 1 s); then a resumed run that was killed:
	 * 110..111 and 110.5..112 with no closing record: 2 s. Total 7 s. */
	struct farm_attempt a[] = {
		attempt(&list, 0, 1, FARM_OK, "GPU-aaaa", 100, 102),
		attempt(&list, 1, 1, FARM_OK, "GPU-aaaa", 101, 104),
		attempt(&list, 2, 1, FARM_FAILED, "GPU-aaaa", 106, 107),
		attempt(&list, 3, 1, FARM_OK, "GPU-aaaa", 110, 111),
		attempt(&list, 4, 1, FARM_OK, "GPU-aaaa", 110.5, 112),
	};
	a[1].has_gpu_busy = true;
	a[1].gpu_busy_s = 4;
	a[2].has_gpu_busy = true;
	a[2].gpu_busy_s = 1;
	json = gpushare_farm_journal_attempt_json(&a[1]);
	assert_non_null(strstr(json, "\"gpu_busy_seconds\":4"));
	free(json);
	json = gpushare_farm_journal_attempt_json(&a[0]);
	assert_null(strstr(json, "gpu_busy_seconds"));      /* absent unless it closes a period */
	free(json);
	json = gpushare_farm_journal_header_json(&cfg);
	assert_non_null(strstr(json, "\"busy_periods\":true"));
	free(json);

	snprintf(p_new, sizeof(p_new), "%s/new", dir);
	assert_int_equal(mkdir(p_new, 0700), 0);
	assert_int_equal(gpushare_farm_journal_open(&j, p_new, &existing), 0);
	assert_int_equal(gpushare_farm_journal_write_header(&j, &cfg), 0);
	assert_int_equal(gpushare_farm_journal_write_attempts(&j, a, 3), 0);
	assert_int_equal(gpushare_farm_journal_write_header(&j, &cfg), 0);   /* resumed, then killed */
	assert_int_equal(gpushare_farm_journal_write_attempts(&j, a + 3, 2), 0);
	gpushare_farm_journal_close(&j);
	snprintf(jn, sizeof(jn), "%s/journal.jsonl", p_new);
	const char *one[] = { jn };

	assert_int_equal(gpushare_journal_summary_build(one, 1, &s), 0);
	assert_int_equal(s.n_gpus, 1);
	assert_true(s.gpus[0].busy_s == 7.0);
	assert_true(s.makespan_s == 12.0);
	assert_int_equal(s.done, 4);
	gpushare_journal_summary_release(&s);

	/* The same attempts in an older journal (no busy periods): the union. */
	for (size_t i = 0; i < 5; i++)
		a[i].has_gpu_busy = false;
	snprintf(p_old, sizeof(p_old), "%s/old", dir);
	write_journal(p_old, &cfg_old, a, 5);
	snprintf(jo, sizeof(jo), "%s/journal.jsonl", p_old);
	one[0] = jo;
	assert_int_equal(gpushare_journal_summary_build(one, 1, &s), 0);
	assert_true(s.gpus[0].busy_s == 7.0);
	gpushare_journal_summary_release(&s);

	/* A second journal (another shard) on the same GPU, 103..105 closed:
	 * merged with the first, 100..105 + 106..107 + 110..112 = 8 s. */
	struct farm_config cfg1;
	struct farm_attempt b = attempt(&list, 5, 1, FARM_OK, "GPU-aaaa", 103, 105);

	make_config(&cfg1, &list, 1, 2, 0);
	cfg1.busy_periods = true;
	make_config(&cfg, &list, 0, 2, 0);
	cfg.busy_periods = true;
	a[1].has_gpu_busy = a[2].has_gpu_busy = true;
	b.has_gpu_busy = true;
	b.gpu_busy_s = 2;
	snprintf(p_two, sizeof(p_two), "%s/two", dir);
	write_journal(p_two, &cfg1, &b, 1);
	snprintf(p_new, sizeof(p_new), "%s/new0", dir);
	write_journal(p_new, &cfg, a, 5);
	snprintf(jn, sizeof(jn), "%s/journal.jsonl", p_new);
	snprintf(jt, sizeof(jt), "%s/journal.jsonl", p_two);
	const char *two[] = { jn, jt };

	assert_int_equal(gpushare_journal_summary_build(two, 2, &s), 0);
	assert_int_equal(s.n_gpus, 1);
	assert_true(s.gpus[0].busy_s == 8.0);
	assert_true(s.gpus[0].job_s == 2 + 3 + 1 + 1 + 1.5 + 2);
	assert_int_equal(s.attempts, 6);
	gpushare_journal_summary_release(&s);
	gpushare_farm_jobs_release(&list);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_background_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(test_background_sync_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_rejected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resume_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resume_refuses_changed_jobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_two_shards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_periods, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
