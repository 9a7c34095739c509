/*
 * Unit tests of open-loop load (lib/bench/openloop.c and the rings of
 * lib/worker/region.c): the arrival schedules, the rings under concurrent
 * consumers, the open-loop recording rule, quantiles with unserved
 * requests, the per-step request rule, the peak search against analytic
 * capacities, the --slo parser, and the dispatcher handing out a schedule
 * (spinning, sleeping, or choosing) and how it chooses to spin.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/region.h"
#include "gpushare/internal/bench.h"
#include "openloop.h"

static void test_uniform_schedule(void **state)
{
	struct gpushare_arrivals a;

	(void)state;
	gpushare_arrivals_init(&a, GPUSHARE_ARRIVAL_UNIFORM, 3.0, 1, 1000);
	assert_int_equal(gpushare_arrivals_next(&a), 1000);
	assert_int_equal(gpushare_arrivals_next(&a), 1000 + 333333333);
	assert_int_equal(gpushare_arrivals_next(&a), 1000 + 666666667);
	/* No drift: arrival n is at n / rate, to the nanosecond. */
	for (int i = 3; i < 3000000; i++)
		gpushare_arrivals_next(&a);
	assert_int_equal(gpushare_arrivals_next(&a), 1000 + 1000000000ULL * 1000000ULL);
}

static void test_poisson_schedule(void **state)
{
	struct gpushare_arrivals a, b;
	uint64_t t = 0, prev = 0, n = 200000, gaps_below_mean = 0;
	double rate = 1000;

	(void)state;
	gpushare_arrivals_init(&a, GPUSHARE_ARRIVAL_POISSON, rate, 42, 0);
	gpushare_arrivals_init(&b, GPUSHARE_ARRIVAL_POISSON, rate, 42, 0);
	for (uint64_t i = 0; i < n; i++) {
		t = gpushare_arrivals_next(&a);
		assert_true(t >= prev);
		assert_int_equal(t, gpushare_arrivals_next(&b));   /* same seed, same schedule */
		gaps_below_mean += (t - prev) < 1000000;
		prev = t;
	}
	/* Mean gap 1 ms within 1% (n = 200000: sd of the mean 0.22%). */
	assert_true(fabs((double)t / (double)n - 1e6) < 1e4);
	/* Exponential: P(gap < mean) = 1 - 1/e = 0.632. */
	assert_true(fabs((double)gaps_below_mean / (double)n - (1 - exp(-1))) < 0.01);
	gpushare_arrivals_init(&b, GPUSHARE_ARRIVAL_POISSON, rate, 43, 0);
	gpushare_arrivals_init(&a, GPUSHARE_ARRIVAL_POISSON, rate, 42, 0);
	assert_true(gpushare_arrivals_next(&a) != gpushare_arrivals_next(&b));
}

static struct gpushare_region_header *open_region(uint32_t slots, uint32_t rings, uint32_t entries, int *fd)
{
	struct gpushare_region_header *r = NULL;

	assert_int_equal(gpushare_region_create_rings(slots, rings, entries, &r, fd), GPUSHARE_OK);
	r->load = GPUSHARE_LOAD_OPEN;
	r->dispatch = rings > 1 ? GPUSHARE_DISPATCH_ROUND_ROBIN : GPUSHARE_DISPATCH_SHARED;
	return r;
}

static void test_ring_order_and_full(void **state)
{
	struct gpushare_ring_entry e;
	struct gpushare_region_header *r, *r2;
	struct gpushare_ring *q;
	int fd;

	(void)state;
	r = open_region(2, 1, 4, &fd);
	q = gpushare_region_ring(r, 0);
	assert_non_null(q);
	assert_null(gpushare_region_ring(r, 1));
	assert_ptr_equal(gpushare_region_ring_of_slot(r, 1), q);   /* shared: every slot, ring 0 */
	assert_false(gpushare_ring_claim(q, 4, &e));
	for (uint64_t i = 0; i < 4; i++)
		assert_true(gpushare_ring_push(q, 4, 100 + i, i));
	assert_false(gpushare_ring_push(q, 4, 999, 4));             /* full */
	assert_int_equal(gpushare_ring_depth(q), 4);
	assert_true(gpushare_ring_claim(q, 4, &e));
	assert_int_equal(e.seq, 0);
	assert_int_equal(e.t_sched_ns, 100);
	assert_true(gpushare_ring_push(q, 4, 104, 4));              /* room again, wraps */
	for (uint64_t i = 1; i <= 4; i++) {
		assert_true(gpushare_ring_claim(q, 4, &e));
		assert_int_equal(e.seq, i);
		assert_int_equal(e.t_sched_ns, 100 + i);
	}
	assert_false(gpushare_ring_claim(q, 4, &e));
	/* A worker attaching sees the same layout. */
	assert_int_equal(gpushare_region_attach(fd, &r2), GPUSHARE_OK);
	assert_int_equal(r2->n_rings, 1);
	assert_int_equal(r2->ring_entries, 4);
	gpushare_region_unmap(r2);
	gpushare_region_unmap(r);
	close(fd);
	/* Bad layouts are refused. */
	assert_int_equal(gpushare_region_create_rings(2, 1, 6, &r, &fd), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_region_create_rings(2, 3, 8, &r, &fd), GPUSHARE_E_INVAL);
}

struct consumer {
	struct gpushare_ring *q;
	uint32_t entries;
	uint64_t total;
	int *seen;
	int *stop;
	uint64_t count;
};

static void *consume(void *arg)
{
	struct consumer *c = arg;
	struct gpushare_ring_entry e;

	for (;;) {
		if (gpushare_ring_claim(c->q, c->entries, &e)) {
			assert_true(e.seq < c->total);
			assert_int_equal(e.t_sched_ns, e.seq * 3);
			__atomic_add_fetch(&c->seen[e.seq], 1, __ATOMIC_RELAXED);
			c->count++;
		} else if (__atomic_load_n(c->stop, __ATOMIC_ACQUIRE)) {
			if (!gpushare_ring_claim(c->q, c->entries, &e))
				break;
			__atomic_add_fetch(&c->seen[e.seq], 1, __ATOMIC_RELAXED);
			c->count++;
		}
	}
	return NULL;
}

/* Three consumers race for one small ring: every arrival is claimed exactly
 * once, with the values the producer wrote. */
static void test_ring_concurrent_claims(void **state)
{
	enum { N = 200000, C = 3 };
	struct gpushare_region_header *r;
	struct consumer cs[C];
	pthread_t tid[C];
	int fd, stop = 0, *seen = calloc(N, sizeof(int));
	uint64_t sum = 0;

	(void)state;
	assert_non_null(seen);
	r = open_region(C, 1, 64, &fd);
	for (int i = 0; i < C; i++) {
		cs[i] = (struct consumer){ gpushare_region_ring(r, 0), 64, N, seen, &stop, 0 };
		assert_int_equal(pthread_create(&tid[i], NULL, consume, &cs[i]), 0);
	}
	for (uint64_t i = 0; i < N; i++) {
		while (!gpushare_ring_push(gpushare_region_ring(r, 0), 64, i * 3, i))
			;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < C; i++) {
		pthread_join(tid[i], NULL);
		sum += cs[i].count;
	}
	assert_int_equal(sum, N);
	for (int i = 0; i < N; i++)
		assert_int_equal(seen[i], 1);
	free(seen);
	gpushare_region_unmap(r);
	close(fd);
}

struct sleeper {
	struct gpushare_ring *q;
	uint64_t woke_after_ns;
	bool claimed;
};

static void *sleep_on_ring(void *arg)
{
	struct sleeper *sl = arg;
	struct gpushare_ring_entry e;
	uint64_t t0 = gpushare_now_ns();

	while (!gpushare_ring_claim(sl->q, 16, &e) && gpushare_now_ns() - t0 < 5000000000ULL)
		gpushare_ring_wait(sl->q, 5000000000ULL);
	sl->woke_after_ns = gpushare_now_ns() - t0;
	sl->claimed = e.seq == 7;
	return NULL;
}

/* A consumer asleep on an empty ring is woken by the publish (a futex),
 * long before its 5 s timeout; on a non-empty ring it does not sleep. */
static void test_ring_wait(void **state)
{
	struct gpushare_region_header *r;
	struct gpushare_ring *q;
	struct sleeper sl = { 0 };
	pthread_t tid;
	uint64_t t0;
	int fd;

	(void)state;
	r = open_region(1, 1, 16, &fd);
	q = gpushare_region_ring(r, 0);
	sl.q = q;
	assert_int_equal(pthread_create(&tid, NULL, sleep_on_ring, &sl), 0);
	/* The sleeper is registered before it sleeps: publishing says so, and
	 * the arrival is claimable before the wake (the dispatcher notes its
	 * hand-over time in between). */
	while (!__atomic_load_n(&q->waiters, __ATOMIC_SEQ_CST))
		usleep(1000);
	usleep(100000);
	assert_int_equal(gpushare_ring_publish(q, 16, 1, 7), GPUSHARE_RING_WAKE);
	assert_int_equal(gpushare_ring_depth(q), 1);
	gpushare_ring_wake(q);
	pthread_join(tid, NULL);
	assert_true(sl.claimed);
	assert_true(sl.woke_after_ns < 3000000000ULL);
	assert_int_equal(q->waiters, 0);
	assert_int_equal(gpushare_ring_publish(q, 16, 2, 8), GPUSHARE_RING_PUBLISHED); /* nobody sleeps */
	t0 = gpushare_now_ns();
	gpushare_ring_wait(q, 5000000000ULL);
	assert_true(gpushare_now_ns() - t0 < 1000000000ULL);
	gpushare_region_unmap(r);
	close(fd);
}

static void test_record_open(void **state)
{
	struct gpushare_region_header *r;
	struct gpushare_slot *s;
	struct gpushare_slot_window w;
	int fd;

	(void)state;
	r = open_region(1, 1, 16, &fd);
	r->t_warmup_start_ns = 1000;
	r->t_measure_start_ns = 2000;
	r->t_measure_end_ns = 3000;
	s = gpushare_region_slot(r, 0);
	gpushare_slot_begin(s, 1, NULL, NULL, 1);
	gpushare_slot_window_read(&w, r, s);
	/* Arrived before the window, ended in it: completed, not recorded. */
	assert_false(gpushare_slot_record_open(s, &w, 1500, 1900, 2100));
	assert_int_equal(s->completed_in_window, 1);
	/* Arrived in the window, waited 300, served 100. */
	assert_true(gpushare_slot_record_open(s, &w, 2200, 2500, 2600));
	/* Arrived in the window, served after it: recorded with its whole wait. */
	assert_true(gpushare_slot_record_open(s, &w, 2900, 3500, 4000));
	assert_int_equal(s->completed_in_window, 2);
	assert_int_equal(s->requests, 2);
	assert_int_equal(s->total_requests, 3);
	assert_int_equal(s->hist.max_ns, 1100);          /* 4000 - 2900 */
	assert_int_equal(s->queue_hist.max_ns, 600);     /* 3500 - 2900 */
	assert_int_equal(s->service_hist.max_ns, 500);
	assert_int_equal(s->hist.min_ns, 400);
	/* Arrived at the end: not in the window. */
	assert_false(gpushare_slot_record_open(s, &w, 3000, 3000, 3100));
	gpushare_region_unmap(r);
	close(fd);
}

static void test_quantile_with_unfinished(void **state)
{
	struct gpushare_hist h;

	(void)state;
	gpushare_hist_init(&h);
	for (uint64_t v = 1; v <= 100; v++)
		gpushare_hist_record(&h, v);
	assert_int_equal(gpushare_openloop_quantile(&h, 0, 0.99), 99);
	assert_int_equal(gpushare_openloop_quantile(&h, 0, 0.50), 50);
	/* 2 more that never finished: 102 in all; p99 is rank 101, unfinished. */
	assert_int_equal(gpushare_openloop_quantile(&h, 2, 0.99), UINT64_MAX);
	/* 1 unfinished: rank ceil(0.99 * 101) = 100, the largest finished. */
	assert_int_equal(gpushare_openloop_quantile(&h, 1, 0.99), 100);
	assert_int_equal(gpushare_openloop_quantile(&h, 100, 0.50), 100);
	assert_int_equal(gpushare_openloop_quantile(&h, 101, 0.50), UINT64_MAX);
}

static void test_min_requests_rule(void **state)
{
	(void)state;
	assert_int_equal(gpushare_peak_min_requests(0.99, 100), 10000);
	assert_int_equal(gpushare_peak_min_requests(0.999, 100), 100000);
	assert_int_equal(gpushare_peak_min_requests(0.9, 20), 200);
	assert_int_equal(gpushare_peak_min_requests(0.5, 1), 2);
}

/* The search against a service of known capacity: a step passes iff its
 * rate is at most the capacity. */
static double search(double capacity, double start, double resolution, int *steps)
{
	struct gpushare_peak_search s;
	double rate;

	gpushare_peak_search_init(&s, start, resolution, start / 1024, 1e7);
	while (gpushare_peak_search_next(&s, &rate))
		gpushare_peak_search_result(&s, rate, rate <= capacity);
	*steps = s.steps;
	assert_true(s.fail > 0 && s.fail <= s.pass * (1 + resolution) * (1 + 1e-12));
	assert_true(s.pass <= capacity && capacity < s.fail);
	return s.pass;
}

static void test_peak_search(void **state)
{
	const double caps[] = { 1, 37, 500, 1234.5, 99999 };
	int steps;

	(void)state;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		double got = search(caps[i], 100, 0.05, &steps);

		assert_true(got >= caps[i] / 1.05 && got <= caps[i]);
		assert_true(steps < GPUSHARE_PEAK_MAX_STEPS);
	}
	/* Finer resolution, more steps, a tighter answer. */
	assert_true(search(500, 100, 0.01, &steps) >= 500 / 1.01);
}

static void test_peak_search_ends(void **state)
{
	struct gpushare_peak_search s;
	double rate;
	int n = 0;

	(void)state;
	/* Always passes: stops at rate_max and says so. */
	gpushare_peak_search_init(&s, 10, 0.05, 10.0 / 1024, 1000);
	while (gpushare_peak_search_next(&s, &rate) && n++ < 100)
		gpushare_peak_search_result(&s, rate, true);
	assert_true(s.done);
	assert_true(s.pass == 1000);
	assert_non_null(strstr(s.why, "highest rate"));
	/* Never passes: stops at rate_min. */
	gpushare_peak_search_init(&s, 10, 0.05, 10.0 / 1024, 1000);
	n = 0;
	while (gpushare_peak_search_next(&s, &rate) && n++ < 100)
		gpushare_peak_search_result(&s, rate, false);
	assert_true(s.done);
	assert_true(s.pass == 0);
	assert_non_null(strstr(s.why, "lowest rate"));
}

static void test_slo_parse(void **state)
{
	double q;
	uint64_t ns;

	(void)state;
	assert_int_equal(gpushare_slo_parse("p99=50ms", &q, &ns), GPUSHARE_OK);
	assert_true(fabs(q - 0.99) < 1e-12);
	assert_int_equal(ns, 50000000);
	assert_int_equal(gpushare_slo_parse("p99.9=1s", &q, &ns), GPUSHARE_OK);
	assert_true(fabs(q - 0.999) < 1e-12);
	assert_int_equal(gpushare_slo_parse("p50=250us", &q, &ns), GPUSHARE_OK);
	assert_int_equal(ns, 250000);
	assert_int_equal(gpushare_slo_parse("99=50ms", &q, &ns), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_slo_parse("p100=50ms", &q, &ns), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_slo_parse("p0=50ms", &q, &ns), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_slo_parse("p99=0ms", &q, &ns), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_slo_parse("p99=", &q, &ns), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_slo_parse("p=5ms", &q, &ns), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_slo_parse("p-5=5ms", &q, &ns), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_slo_parse("p1e1=5ms", &q, &ns), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_slo_parse(NULL, &q, &ns), GPUSHARE_E_INVAL);
}

/* Every run's length is known before it starts: warm-up, window, drain, and
 * a peak search's first step, refused above the step limit. */
static void test_run_plan(void **state)
{
	struct gpushare_bench_config c;
	struct gpushare_bench_plan p;

	(void)state;
	assert_int_equal(gpushare_bench_config_init(&c), GPUSHARE_OK);
	c.duration_ns = 3000000000ull;
	c.warmup_ns = 1000000000ull;
	assert_int_equal(gpushare_bench_plan(&c, &p), GPUSHARE_OK);
	assert_true(fabs(p.run_seconds - 4.0) < 1e-9 && p.drain_seconds == 0);
	assert_true(fabs(p.total_seconds - 8.0) < 1e-9);   /* two strategies */
	c.load = GPUSHARE_LOAD_OPEN;
	c.rate = 100;
	assert_int_equal(gpushare_bench_plan(&c, &p), GPUSHARE_OK);
	assert_true(fabs(p.drain_seconds - 3.0) < 1e-9);   /* the window's length, 1 s to 10 s */
	/* p99 at 100/s: 10,000 arrivals need 100 s, longer than the window. */
	c.find_peak = true;
	c.slo_quantile = 0.99;
	c.slo_ns = 10000000;
	assert_int_equal(gpushare_bench_plan(&c, &p), GPUSHARE_OK);
	assert_true(fabs(p.step_need_seconds - 100.0) < 1e-6 && fabs(p.window_seconds - 100.0) < 1e-6);
	assert_true(fabs(p.drain_seconds - 10.0) < 1e-9);
	/* p99.999999 at 100/s: 1e8 s; p99 at 1e-6/s: 1e10 s. Refused. */
	c.slo_quantile = 0.99999999;
	assert_int_equal(gpushare_bench_plan(&c, &p), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "p99.999999 "));
	assert_int_equal(gpushare_bench_open_check(&c), GPUSHARE_E_INVAL);
	c.slo_quantile = 0.99;
	c.rate = 1e-6;
	assert_int_equal(gpushare_bench_plan(&c, &p), GPUSHARE_E_INVAL);
	c.rate = 10000.0 / GPUSHARE_PEAK_STEP_MAX_SECONDS;   /* exactly at the limit */
	assert_int_equal(gpushare_bench_plan(&c, &p), GPUSHARE_OK);
}

/* A percentile as given, never rounded up to p100. */
static void test_fmt_percentile(void **state)
{
	char b[48];

	(void)state;
	assert_string_equal(gpushare_fmt_percentile(0.99, b, sizeof(b)), "p99");
	assert_string_equal(gpushare_fmt_percentile(0.999, b, sizeof(b)), "p99.9");
	assert_string_equal(gpushare_fmt_percentile(0.5, b, sizeof(b)), "p50");
	assert_string_equal(gpushare_fmt_percentile(0.99999999, b, sizeof(b)), "p99.999999");
	assert_string_equal(gpushare_fmt_percentile(0.9999999999999, b, sizeof(b)), "p99.99999999999");
}

static void dispatch_schedule(enum gpushare_dispatch_wait wait)
{
	struct gpushare_region_header *r;
	struct gpushare_dispatcher d;
	struct gpushare_ring_entry e;
	uint64_t t0, n = 0, in_window = 0, last = 0;
	int fd;

	r = open_region(2, 2, 4096, &fd);
	memset(&d, 0, sizeof(d));
	t0 = gpushare_now_ns() + 5000000;
	d.reg = r;
	d.wait = wait;
	d.arrival = GPUSHARE_ARRIVAL_UNIFORM;
	d.rate = 10000;
	d.t_go = t0;
	d.t_start = t0 + 50000000;
	d.t_end = t0 + 150000000;                    /* 1500 arrivals, 1000 in the window */
	assert_int_equal(gpushare_dispatcher_start(&d), GPUSHARE_OK);
	while (!gpushare_dispatcher_finished(&d))
		usleep(1000);
	gpushare_dispatcher_stop(&d);
	assert_int_equal(d.issued, 1500);
	assert_int_equal(d.offered, 1000);
	assert_int_equal(d.lateness.count, 1500);
	assert_int_equal(d.queued_at_end, 1500);     /* nobody claimed anything */
	/* Round-robin: even arrivals in ring 0, odd in ring 1. */
	for (uint32_t ring = 0; ring < 2; ring++) {
		while (gpushare_ring_claim(gpushare_region_ring(r, ring), 4096, &e)) {
			assert_int_equal(e.seq % 2, ring);
			assert_true(e.t_sched_ns >= t0 && e.t_sched_ns < d.t_end);
			in_window += e.t_sched_ns >= d.t_start;
			if (ring == 0) {
				assert_true(e.t_sched_ns >= last);
				last = e.t_sched_ns;
			}
			n++;
		}
	}
	assert_int_equal(n, 1500);
	assert_int_equal(in_window, 1000);
	/* Each wake-up publishes what is due: at least one arrival a batch. */
	assert_true(d.batches >= 1 && d.batches <= d.issued);
	assert_true(d.spin_ns <= d.run_ns);
	if (wait == GPUSHARE_DISPATCH_WAIT_SLEEP)
		assert_int_equal(d.spin_ns, 0);
	if (wait == GPUSHARE_DISPATCH_WAIT_SPIN)
		assert_int_equal(d.spin_ns, d.run_ns);
	gpushare_region_unmap(r);
	close(fd);
}

/* The dispatcher hands out a whole uniform schedule, in order, counting
 * the arrivals of the window, and says when it is done: the same whether
 * it spins before each arrival, sleeps to it, or chooses as it goes. */
static void test_dispatcher(void **state)
{
	(void)state;
	dispatch_schedule(GPUSHARE_DISPATCH_WAIT_AUTO);
	dispatch_schedule(GPUSHARE_DISPATCH_WAIT_SPIN);
	dispatch_schedule(GPUSHARE_DISPATCH_WAIT_SLEEP);
}

struct claimer {
	struct gpushare_ring *q;
	uint64_t want, got;        /* want: atomic, UINT64_MAX until known */
};

static void *sleep_and_claim(void *arg)
{
	struct claimer *c = arg;
	struct gpushare_ring_entry e;
	uint64_t t_end = gpushare_now_ns() + 60 * 1000000000ULL;

	/* A lost wake leaves this asleep for the whole minute. */
	while (c->got < __atomic_load_n(&c->want, __ATOMIC_ACQUIRE) && gpushare_now_ns() < t_end) {
		if (gpushare_ring_claim(c->q, 4096, &e))
			c->got++;
		else
			gpushare_ring_wait(c->q, 60 * 1000000000ULL);
	}
	return NULL;
}

/* A worker asleep on the ring is woken for what a batch published: the
 * wakes come after the batch, none is lost. */
static void dispatch_wakes(enum gpushare_dispatch_wait wait)
{
	struct gpushare_region_header *r;
	struct gpushare_dispatcher d;
	struct claimer c;
	pthread_t tid;
	uint64_t t0, t_start;
	int fd;

	r = open_region(1, 1, 4096, &fd);
	memset(&d, 0, sizeof(d));
	c.q = gpushare_region_ring(r, 0);
	c.want = UINT64_MAX;
	c.got = 0;
	assert_int_equal(pthread_create(&tid, NULL, sleep_and_claim, &c), 0);
	t0 = gpushare_now_ns() + 5000000;
	d.reg = r;
	d.wait = wait;
	d.arrival = GPUSHARE_ARRIVAL_POISSON;
	d.rate = 2000;
	d.seed = 7;
	d.t_go = d.t_start = t0;
	d.t_end = t0 + 200000000;                   /* about 400 arrivals */
	assert_int_equal(gpushare_dispatcher_start(&d), GPUSHARE_OK);
	while (!gpushare_dispatcher_finished(&d))
		usleep(1000);
	gpushare_dispatcher_stop(&d);
	/* Every arrival out: wait (a minute at most) for the sleeper to have
	 * them all before it learns how many there were. */
	t_start = gpushare_now_ns();
	while (__atomic_load_n(&c.got, __ATOMIC_RELAXED) < d.issued && gpushare_now_ns() - t_start < 60000000000ULL)
		usleep(1000);
	__atomic_store_n(&c.want, d.issued, __ATOMIC_RELEASE);
	gpushare_ring_wake(c.q);
	pthread_join(tid, NULL);
	assert_int_equal(c.got, d.issued);
	gpushare_region_unmap(r);
	close(fd);
}

static void test_dispatcher_wakes(void **state)
{
	(void)state;
	dispatch_wakes(GPUSHARE_DISPATCH_WAIT_SPIN);
	dispatch_wakes(GPUSHARE_DISPATCH_WAIT_SLEEP);
}

/* Spin only with about one and a half CPUs free (idle, plus what the
 * dispatcher used itself), go on with one and a quarter unless its thread
 * waits for a CPU; never on one CPU. */
static void test_dispatch_spin_ok(void **state)
{
	struct gpushare_dispatch_probe idle2 = { 2, 1.9, 0.02, 0 };        /* an idle 2-CPU host */
	struct gpushare_dispatch_probe hog2 = { 2, 0.0, 0.05, 0 };         /* beside stress-ng --cpu 2, asleep */
	struct gpushare_dispatch_probe spin_idle = { 2, 0.85, 1.0, 0.001 }; /* spinning, the other CPU free */
	struct gpushare_dispatch_probe spin_hog = { 2, 0.0, 0.67, 0.33 };   /* spinning beside two hogs */
	struct gpushare_dispatch_probe spin_one = { 2, 0.1, 1.0, 0.0 };     /* spinning, the other CPU busy */
	struct gpushare_dispatch_probe waited = { 2, 0.9, 0.9, 0.10 };      /* free CPUs, but kept waiting */
	struct gpushare_dispatch_probe unknown = { 2, 0.9, 0.9, -1 };       /* no schedstat */
	struct gpushare_dispatch_probe one = { 1, 1.0, 0.0, 0 };            /* one CPU, idle */
	struct gpushare_dispatch_probe half = { 16, 1.2, 0.0, 0 };          /* 16 CPUs, 1.2 idle */

	(void)state;
	assert_true(gpushare_dispatch_spin_ok(false, &idle2));
	assert_false(gpushare_dispatch_spin_ok(false, &hog2));
	assert_true(gpushare_dispatch_spin_ok(true, &spin_idle));
	assert_false(gpushare_dispatch_spin_ok(true, &spin_hog));
	assert_false(gpushare_dispatch_spin_ok(true, &spin_one));
	assert_false(gpushare_dispatch_spin_ok(true, &waited));
	assert_true(gpushare_dispatch_spin_ok(true, &unknown));
	assert_false(gpushare_dispatch_spin_ok(false, &one));
	assert_false(gpushare_dispatch_spin_ok(true, &one));
	assert_false(gpushare_dispatch_spin_ok(false, &half));
	assert_false(gpushare_dispatch_spin_ok(true, &half));
}

/* The waiter reads the host: with two CPUs or more it samples /proc/stat
 * and decides at each probe (which way is the host's business); forced,
 * it never looks. */
static void test_dispatch_waiter(void **state)
{
	struct gpushare_dispatch_waiter w;
	uint64_t t0 = gpushare_now_ns();

	(void)state;
	gpushare_dispatch_waiter_open(&w, GPUSHARE_DISPATCH_WAIT_AUTO, t0);
	assert_false(w.spin);                       /* it starts asleep */
	if (w.cpus >= 2) {
		assert_true(w.have_sample);
		assert_true(w.total_ticks > 0 && w.idle_ticks <= w.total_ticks);
		usleep(150000);
		gpushare_dispatch_waiter_probe(&w, gpushare_now_ns());
		assert_true(w.have_sample);
		assert_true(w.probes <= 1);
	}
	gpushare_dispatch_waiter_close(&w, gpushare_now_ns());
	assert_true(w.spin_ns <= w.total_ns);
	gpushare_dispatch_waiter_open(&w, GPUSHARE_DISPATCH_WAIT_SPIN, t0);
	assert_true(w.spin);
	gpushare_dispatch_waiter_probe(&w, t0 + 1000000000ULL);
	assert_true(w.spin && w.probes == 0);
	gpushare_dispatch_waiter_close(&w, t0 + 1000000000ULL);
	assert_int_equal(w.spin_ns, 1000000000ULL);
}

/* se.slice of the calling thread from /proc/thread-self/sched (ns); 0
 * when the kernel does not show it. */
static uint64_t thread_slice_ns(void)
{
	char line[256];
	uint64_t v = 0;
	FILE *f = fopen("/proc/thread-self/sched", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "se.slice", 8) == 0 && strchr(line, ':'))
			v = strtoull(strchr(line, ':') + 1, NULL, 10);
	fclose(f);
	return v;
}

static void *slice_thread(void *arg)
{
	uint64_t *out = arg;

	out[0] = gpushare_sched_short_slice(0);
	out[1] = thread_slice_ns();
	out[2] = gpushare_sched_short_slice(100000);
	out[3] = thread_slice_ns();
	return NULL;
}

/* The dispatcher's short slice: nothing asked, nothing got; asked, the
 * kernel either keeps the 100 us (and its scheduler shows it for the thread,
 * and only for it) or reports none (a kernel before 6.12). */
static void test_dispatch_short_slice(void **state)
{
	uint64_t got[4] = { 1, 0, 1, 0 }, mine = thread_slice_ns();
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, slice_thread, got), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(got[0], 0);
	assert_true(got[2] == 0 || got[2] == 100000);
	if (got[2] && got[1] && got[3]) {
		assert_int_equal(got[3], 100000);
		assert_int_not_equal(got[1], 100000); /* the default before */
		assert_int_equal(thread_slice_ns(), mine); /* the other threads keep theirs */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uniform_schedule),
		cmocka_unit_test(test_poisson_schedule),
		cmocka_unit_test(test_ring_order_and_full),
		cmocka_unit_test(test_ring_concurrent_claims),
		cmocka_unit_test(test_ring_wait),
		cmocka_unit_test(test_record_open),
		cmocka_unit_test(test_quantile_with_unfinished),
		cmocka_unit_test(test_min_requests_rule),
		cmocka_unit_test(test_peak_search),
		cmocka_unit_test(test_peak_search_ends),
		cmocka_unit_test(test_slo_parse),
		cmocka_unit_test(test_run_plan),
		cmocka_unit_test(test_fmt_percentile),
		cmocka_unit_test(test_dispatcher),
		cmocka_unit_test(test_dispatcher_wakes),
		cmocka_unit_test(test_dispatch_spin_ok),
		cmocka_unit_test(test_dispatch_waiter),
		cmocka_unit_test(test_dispatch_short_slice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
