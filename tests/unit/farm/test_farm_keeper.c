/*
 * Unit tests: the farm's keeper (lib/farm/farm_keeper.c), driven through
 * its link alone, with no farm: a journal in a temporary directory, three
 * slots on one GPU, and the mirrors' messages sent by hand.
 *
 * Finished by its owner, the keeper leaves at once and writes nothing. Its
 * owner killed (SIGKILL), it writes the records of the attempts that ended
 * without the owner recording them (an ok and a failed one, with their GPU
 * and slot), never one the owner had recorded, and exits.
 *
 * This process is a child subreaper, so that a keeper whose owner was
 * killed is reaped here; pass or fail, the teardown kills and reaps what a
 * test started.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "children.h"
#include "clock.h"
#include "gpushare/gpushare.h"
#include "farm_journal.h"
#include "farm_keeper.h"
#include "farm_slot.h"

#define N_SLOTS 3

static char dir[64];

static int setup(void **state)
{
	(void)state;
	n_started = 0;
	strcpy(dir, "/tmp/gskpXXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	kill_started(state);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

struct fixture {
	struct farm_journal journal;
	struct slot slots[N_SLOTS];
	struct farm_gpu_id gpu;
	struct farm_keeper_link link;
};

/* The journal (with its header), the slots and the link, as a farm fills
 * them. */
static int fixture_open(struct fixture *x)
{
	struct farm_config cfg;
	bool existing = false;
	int rc;

	memset(x, 0, sizeof(*x));
	if ((rc = gpushare_farm_journal_open(&x->journal, dir, &existing)) != 0)
		return rc;
	memset(&cfg, 0, sizeof(cfg));
	cfg.n_jobs = 10;
	cfg.shard.count = 1;
	cfg.slots = N_SLOTS;
	snprintf(cfg.strategy, sizeof(cfg.strategy), "timeslice");
	snprintf(cfg.hostname, sizeof(cfg.hostname), "node");
	cfg.n_gpus = 1;
	cfg.gpus[0].index = 2;
	snprintf(cfg.gpus[0].uuid, sizeof(cfg.gpus[0].uuid), "GPU-aaaa");
	if ((rc = gpushare_farm_journal_write_header(&x->journal, &cfg)) != 0)
		return rc;
	x->gpu = cfg.gpus[0];
	for (unsigned i = 0; i < N_SLOTS; i++) {
		x->slots[i].index = i;
		x->slots[i].gpu = 0;
		x->slots[i].k = i;
	}
	farm_keeper_init(&x->link);
	x->link.journal = &x->journal;
	x->link.slots = x->slots;
	x->link.n_slots = N_SLOTS;
	x->link.gpu_ids = &x->gpu;
	x->link.placed = true;
	return farm_keeper_start(&x->link);
}

/* A job's attempt on slot i, as its mirror reports it: started, then
 * ended with wstatus. */
static void run_job(struct fixture *x, unsigned i, size_t job, unsigned attempt, int wstatus)
{
	struct slot *s = &x->slots[i];

	s->job = job;
	s->hash = 1000 + job;
	s->attempt = attempt;
	s->start_ns = gpushare_now_ns();
	s->start_unix_s = 1.7e9 + (double)job;
	farm_keeper_job_started(s);
	farm_keeper_job_ended(s, wstatus);
}

static void test_keeper_finish(void **state)
{
	struct fixture x;
	struct farm_journal_data d;
	pid_t pid;

	(void)state;
	assert_int_equal(fixture_open(&x), 0);
	assert_true(farm_keeper_linked(&x.link));
	pid = x.link.pid;
	assert_true(pid > 0);
	track(pid);
	run_job(&x, 0, 3, 1, 0);
	farm_keeper_finish(&x.link);
	assert_false(farm_keeper_linked(&x.link));
	assert_int_equal(x.link.pid, 0);
	/* Reaped by finish: no longer ours. */
	assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
	n_started = 0;
	gpushare_farm_journal_close(&x.journal);
	assert_int_equal(gpushare_farm_journal_load(dir, &d), 0);
	assert_int_equal(d.n_records, 0); /* the owner's to record, not the keeper's */
	gpushare_farm_journal_data_release(&d);
}

static const struct farm_record *find(const struct farm_journal_data *d, uint64_t job)
{
	for (size_t i = 0; i < d->n_records; i++) {
		if (d->records[i].job == job)
			return &d->records[i];
	}
	return NULL;
}

static void test_keeper_owner_killed(void **state)
{
	struct farm_journal_data d;
	const struct farm_record *r;
	pid_t owner, keeper = 0;
	int p[2], st;

	(void)state;
	assert_int_equal(pipe(p), 0);
	owner = fork();
	assert_true(owner >= 0);
	if (owner == 0) {
		struct fixture x;
		struct farm_attempt a;

		close(p[0]);
		setpgid(0, 0); /* the keeper kills the jobs' groups: ours, not the test's */
		if (fixture_open(&x) != 0)
			_exit(2);
		run_job(&x, 0, 3, 1, 0);          /* ended ok, not recorded */
		run_job(&x, 1, 4, 2, 1 << 8);     /* exited 1, not recorded */
		run_job(&x, 2, 5, 1, 0);          /* ended ok and recorded */
		memset(&a, 0, sizeof(a));
		a.job = 5;
		a.attempt = 1;
		a.outcome = FARM_OK;
		a.gpu = 2;
		a.start_unix_s = a.end_unix_s = 1.7e9;
		snprintf(a.stdout_path, sizeof(a.stdout_path), "out/6.1.out");
		snprintf(a.stderr_path, sizeof(a.stderr_path), "out/6.1.err");
		if (gpushare_farm_journal_write_attempts(&x.journal, &a, 1) != 0)
			_exit(3);
		farm_keeper_recorded(&x.link, &a, 1);
		if (write(p[1], &x.link.pid, sizeof(x.link.pid)) != (ssize_t)sizeof(x.link.pid))
			_exit(4);
		raise(SIGKILL);
		_exit(5);
	}
	track(owner);
	close(p[1]);
	assert_int_equal(read(p[0], &keeper, sizeof(keeper)), (ssize_t)sizeof(keeper));
	close(p[0]);
	track(keeper);
	st = reap(owner, 30000);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* Its keeper is ours now (a subreaper): it cleans up and exits 0. */
	st = reap(keeper, 30000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	n_started = 0;

	assert_int_equal(gpushare_farm_journal_load(dir, &d), 0);
	assert_int_equal(d.n_records, 3); /* 5 by the owner, 3 and 4 by the keeper */
	r = find(&d, 3);
	assert_non_null(r);
	assert_int_equal(r->outcome, FARM_OK);
	assert_int_equal(r->attempt, 1);
	assert_int_equal(r->slot, 0);
	assert_true(r->gpu_ref >= 0 && (size_t)r->gpu_ref < d.n_gpus);
	assert_string_equal(d.gpus[r->gpu_ref], "GPU-aaaa");
	r = find(&d, 4);
	assert_non_null(r);
	assert_int_equal(r->outcome, FARM_FAILED);
	assert_int_equal(r->exit_code, 1);
	assert_int_equal(r->attempt, 2);
	assert_int_equal(r->slot, 1);
	r = find(&d, 5);
	assert_non_null(r);
	assert_int_equal(r->slot, 0); /* the owner's record, not a second one */
	gpushare_farm_journal_data_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_keeper_finish, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keeper_owner_killed, setup, teardown),
	};

	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
