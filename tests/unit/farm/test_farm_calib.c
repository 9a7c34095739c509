/*
 * The calibration of K (lib/farm/farm_calib.c), driven by hand: rounds of
 * 2 K jobs per GPU at doubling K, the best K kept unless a larger one is 5 %
 * faster, and the bounds (--max-slots, memory, a queue that runs dry, a
 * farm that ends mid-round).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "clock.h"
#include "farm_calib.h"

/* A calibration under test: the calibrator, the farm's result it fills,
 * and the K it has set. */
struct calib {
	struct farm_calib cb;
	struct gpushare_farm_result r;
	unsigned k;
};

/* Begin at K = k (farm_calib_begin's bounds), the result cleared. */
static void begin(struct calib *c, unsigned k, unsigned max_k, size_t n_gpus, unsigned min_mem_cap)
{
	memset(&c->r, 0, sizeof(c->r));
	c->k = k;
	farm_calib_begin(&c->cb, k, max_k, n_gpus, min_mem_cap);
}

/* The round is over: the K it sets. */
static unsigned step(struct calib *c)
{
	c->k = farm_calib_step(&c->cb, c->k, &c->r);
	return c->k;
}

/* One round at the current quota: n jobs started at t0, all ended by
 * t0 + span_ns. */
static void run_round(struct farm_calib *cb, uint64_t n, uint64_t t0, uint64_t span_ns)
{
	for (uint64_t i = 0; i < n; i++) {
		assert_false(farm_calib_full(cb));
		farm_calib_started(cb, t0);
	}
	assert_int_equal(farm_calib_due(cb, 1, 5), false);  /* one still running */
	for (uint64_t i = 0; i < n; i++)
		farm_calib_ended(cb, t0 + span_ns * (i + 1) / n, true);
}

/* K = 1, 2, 4 faster each time by more than 5 %; K = 8 no faster: 4 kept. */
static void test_keeps_the_best(void **state)
{
	struct calib c;

	(void)state;
	begin(&c, 1, 16, 2, UINT32_MAX);
	assert_int_equal(c.cb.quota, 4);                /* 2 K jobs on each of 2 GPUs */
	run_round(&c.cb, 4, NS_PER_S, NS_PER_S);        /* 4 jobs/s */
	assert_true(farm_calib_full(&c.cb));
	assert_true(farm_calib_due(&c.cb, 0, 100));
	assert_int_equal(step(&c), 2);
	assert_true(c.cb.on);
	assert_int_equal(c.cb.quota, 8);
	run_round(&c.cb, 8, 3 * NS_PER_S, NS_PER_S);    /* 8 jobs/s */
	assert_int_equal(step(&c), 4);
	run_round(&c.cb, 16, 5 * NS_PER_S, NS_PER_S);   /* 16 jobs/s */
	assert_int_equal(step(&c), 8);
	run_round(&c.cb, 32, 7 * NS_PER_S, 2 * NS_PER_S); /* 16 jobs/s: no gain */
	assert_int_equal(step(&c), 4);
	assert_false(c.cb.on);
	assert_int_equal(c.r.slots, 4);
	assert_int_equal(c.r.n_calibration, 4);
	assert_int_equal(c.r.calibration[0].slots, 1);
	assert_int_equal(c.r.calibration[0].jobs, 4);
	assert_true(c.r.calibration[2].jobs_per_s > 15.9 && c.r.calibration[2].jobs_per_s < 16.1);
	/* Calibrated: counts nothing more, never full. */
	farm_calib_started(&c.cb, 9 * NS_PER_S);
	assert_false(farm_calib_full(&c.cb));
	assert_false(farm_calib_due(&c.cb, 0, 0));
	assert_int_equal(farm_calib_finish(&c.cb, c.k, &c.r), 4);
}

/* A larger K only 4 % faster is no gain. */
static void test_gain_below_five_percent_settles(void **state)
{
	struct calib c;

	(void)state;
	begin(&c, 1, 16, 1, UINT32_MAX);
	run_round(&c.cb, 2, 0, 1000 * NS_PER_MS);
	step(&c);
	run_round(&c.cb, 4, 2 * NS_PER_S, 1923 * NS_PER_MS); /* 2.08/s against 2/s */
	assert_int_equal(step(&c), 1);
	assert_int_equal(c.r.slots, 1);
	assert_false(c.cb.on);
}

/* --max-slots and the memory bound stop the doubling. */
static void test_bounds(void **state)
{
	struct calib c;

	(void)state;
	begin(&c, 1, 2, 1, UINT32_MAX);
	run_round(&c.cb, 2, 0, NS_PER_S);
	assert_int_equal(step(&c), 2);
	run_round(&c.cb, 4, 2 * NS_PER_S, NS_PER_S);
	assert_int_equal(step(&c), 2);                 /* 4 > --max-slots 2 */
	assert_false(c.cb.on);

	begin(&c, 1, 16, 1, 1);                         /* memory admits one job */
	run_round(&c.cb, 2, 0, NS_PER_S);
	assert_int_equal(step(&c), 1);
	assert_false(c.cb.on);
	assert_int_equal(c.r.n_calibration, 1);
}

/* The queue runs dry mid-round: the round is due with what started, and
 * being incomplete it settles. */
static void test_queue_runs_dry(void **state)
{
	struct calib c;

	(void)state;
	begin(&c, 2, 16, 1, UINT32_MAX);
	assert_false(farm_calib_due(&c.cb, 0, 0));      /* nothing started yet */
	farm_calib_started(&c.cb, 0);
	farm_calib_ended(&c.cb, NS_PER_S, true);
	assert_false(farm_calib_due(&c.cb, 0, 3));      /* more wait: not over */
	assert_true(farm_calib_due(&c.cb, 0, 0));
	assert_int_equal(step(&c), 2);
	assert_false(c.cb.on);
	assert_int_equal(c.r.calibration[0].jobs, 1);
}

/* The farm ends mid-calibration: the round so far counts, and the best K
 * is reported; with nothing ended the K stays. */
static void test_finish_mid_round(void **state)
{
	struct calib c;

	(void)state;
	begin(&c, 1, 16, 1, UINT32_MAX);
	run_round(&c.cb, 2, 0, NS_PER_S);
	step(&c);
	farm_calib_started(&c.cb, 2 * NS_PER_S);
	farm_calib_ended(&c.cb, 3 * NS_PER_S, true);        /* 1 of 4, then a stop */
	assert_int_equal(farm_calib_finish(&c.cb, c.k, &c.r), 1);
	assert_int_equal(c.r.slots, 1);
	assert_int_equal(c.r.n_calibration, 2);
	assert_false(c.cb.on);

	begin(&c, 1, 16, 1, UINT32_MAX);
	farm_calib_started(&c.cb, 0);
	assert_int_equal(farm_calib_finish(&c.cb, 1, &c.r), 1);
	assert_int_equal(c.r.n_calibration, 0);
	assert_int_equal(c.r.slots, 0);                 /* the caller's, unchanged */
}

/* Jobs that fail or are refused at once are not throughput: a round at
 * K = 2 whose 6 failed jobs end within a millisecond and whose 2 ok ones
 * take a second rates 2 jobs/s, not 8, and K = 1 (4 jobs/s) stays. */
static void test_only_ok_jobs_count(void **state)
{
	struct calib c;

	(void)state;
	begin(&c, 1, 16, 2, UINT32_MAX);
	run_round(&c.cb, 4, NS_PER_S, NS_PER_S);        /* 4 jobs/s */
	assert_int_equal(step(&c), 2);
	for (int i = 0; i < 8; i++)
		farm_calib_started(&c.cb, 3 * NS_PER_S);
	for (int i = 0; i < 6; i++)
		farm_calib_ended(&c.cb, 3 * NS_PER_S + NS_PER_MS, false);
	farm_calib_ended(&c.cb, 4 * NS_PER_S, true);
	farm_calib_ended(&c.cb, 4 * NS_PER_S, true);
	assert_int_equal(step(&c), 1);
	assert_false(c.cb.on);
	assert_int_equal(c.r.calibration[1].jobs, 2);
	assert_true(c.r.calibration[1].jobs_per_s < 2.5);
	assert_false(c.r.calibration_failed);
}

/* No job of the first round ends ok: nothing to calibrate by. It stops
 * there, at that K, and says so. */
static void test_cannot_calibrate(void **state)
{
	struct calib c;

	(void)state;
	begin(&c, 1, 16, 2, UINT32_MAX);
	for (int i = 0; i < 4; i++)
		farm_calib_started(&c.cb, NS_PER_S);
	for (int i = 0; i < 4; i++)
		farm_calib_ended(&c.cb, NS_PER_S + NS_PER_MS, false);
	assert_int_equal(step(&c), 1);
	assert_false(c.cb.on);
	assert_true(c.r.calibration_failed);
	assert_int_equal(c.r.slots, 1);
	assert_int_equal(c.r.n_calibration, 1);
	assert_int_equal(c.r.calibration[0].jobs, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keeps_the_best),
		cmocka_unit_test(test_gain_below_five_percent_settles),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_queue_runs_dry),
		cmocka_unit_test(test_finish_mid_round),
		cmocka_unit_test(test_only_ok_jobs_count),
		cmocka_unit_test(test_cannot_calibrate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
