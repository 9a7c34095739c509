/*
 * Open-loop load: the arrival schedule (uniform or Poisson, seeded), the
 * dispatcher thread that publishes each arrival into the region's rings at
 * its scheduled time, the reading of a step's quantile with the requests
 * that never finished, and the search for the highest rate within a bound.
 *
 * The dispatcher runs in gpushare itself, beside the loop that watches the
 * workers. While a core is free it sleeps until shortly before the next
 * arrival and spins the rest of the way (a pause instruction per turn), so
 * an arrival is handed over within a microsecond of its time without
 * burning a core at low rates; on a busy host it sleeps to the deadline
 * instead (openloop_wait.c says how it tells). Each time it wakes it
 * publishes every arrival that is due in one batch and wakes the sleeping
 * workers after it. Arrivals that are due are published at once, late ones
 * included: the schedule never slips, and every latency counts from the
 * scheduled time, so a late hand-over or a stalled worker shows in the numbers
 * instead of silently delaying the next arrival (no coordinated omission).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "clock.h"
#include "gpushare/format.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "getenv_fn.h"
#include "openloop.h"
#include "sys.h"

#define SPIN_NS (200 * 1000ULL)         /* spin, not sleep, this close to an arrival */
#define MAX_SLEEP_NS (10 * 1000000ULL)  /* look at the stop flag at least this often */
#define FULL_WAIT_NS (20 * 1000ULL)     /* a full ring: wait this long before trying again */
#define WAKE_BATCH 64                   /* wakes held back until a batch is published, at most */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}


/* ---- the arrival schedule ---- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256**: fast, and good enough for exponential gaps. */
static uint64_t next_u64(uint64_t *s)
{
	uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double gpushare_arrivals_uniform(struct gpushare_arrivals *a)
{
	return (double)(next_u64(a->rng) >> 11) * 0x1.0p-53;
}

void gpushare_arrivals_init(struct gpushare_arrivals *a, int kind, double rate, uint64_t seed, uint64_t t0)
{
	uint64_t x = seed;

	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->interval_ns = rate > 0 ? 1e9 / rate : 1e18;
	a->t0 = t0;
	for (int i = 0; i < 4; i++)
		a->rng[i] = splitmix64(&x);
}

uint64_t gpushare_arrivals_next(struct gpushare_arrivals *a)
{
	uint64_t n = a->n++;

	if (a->kind == GPUSHARE_ARRIVAL_UNIFORM)
		/* From the index, not by adding gaps: no drift over millions. */
		return a->t0 + (uint64_t)llround((double)n * a->interval_ns);
	/* Exponential gap: -ln(1 - U) * mean, U in [0, 1). */
	a->t_ns += -log1p(-gpushare_arrivals_uniform(a)) * a->interval_ns;
	return a->t0 + (uint64_t)llround(a->t_ns);
}

/* ---- the dispatcher ---- */

static bool stop_asked(const struct gpushare_dispatcher *d)
{
	return __atomic_load_n(&d->stop, __ATOMIC_ACQUIRE) != 0;
}

/* Wait until t, sleeping until SPIN_NS before it and spinning the rest;
 * false when asked to stop first. */
static bool spin_until(const struct gpushare_dispatcher *d, uint64_t t)
{
	uint64_t now;

	while ((now = gpushare_now_ns()) < t) {
		if (t - now > SPIN_NS) {
			uint64_t ns = t - now - SPIN_NS;

			if (stop_asked(d))
				return false;
			gpushare_sleep_ns(ns < MAX_SLEEP_NS ? ns : MAX_SLEEP_NS);
		} else {
			cpu_relax();
		}
	}
	return !stop_asked(d);
}

/* Wait until t asleep (an absolute deadline: no drift from the time spent
 * computing it); false when asked to stop first. */
static bool sleep_until(const struct gpushare_dispatcher *d, uint64_t t)
{
	uint64_t now;

	while ((now = gpushare_now_ns()) < t) {
		uint64_t until = t - now > MAX_SLEEP_NS ? now + MAX_SLEEP_NS : t;
		struct timespec ts = { (time_t)(until / NS_PER_S), (long)(until % NS_PER_S) };

		if (stop_asked(d))
			return false;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	return !stop_asked(d);
}

static bool wait_until(const struct gpushare_dispatcher *d, const struct gpushare_dispatch_waiter *w, uint64_t t)
{
	return w->spin ? spin_until(d, t) : sleep_until(d, t);
}

/* The wakes a batch's publications asked for, made once it is out. */
struct wakes {
	struct gpushare_ring *ring[WAKE_BATCH];
	unsigned n;
};

static void wakes_flush(struct wakes *k)
{
	for (unsigned i = 0; i < k->n; i++)
		gpushare_ring_wake(k->ring[i]); /* the wake's cost lands in the queueing time */
	k->n = 0;
}

static void wakes_add(struct wakes *k, struct gpushare_ring *q)
{
	if (k->n == WAKE_BATCH)
		wakes_flush(k);
	k->ring[k->n++] = q;
}

static struct gpushare_ring *ring_for(const struct gpushare_dispatcher *d, uint64_t seq)
{
	struct gpushare_region_header *r = d->reg;

	return gpushare_region_ring(r, r->dispatch == GPUSHARE_DISPATCH_ROUND_ROBIN ? (uint32_t)(seq % r->n_rings) : 0);
}

/* Waiting requests at this moment: published and unclaimed, plus the
 * arrivals due before `until` that are not published yet (a full ring). */
static uint64_t backlog(const struct gpushare_dispatcher *d, const struct gpushare_arrivals *a, uint64_t next,
			uint64_t until)
{
	struct gpushare_arrivals copy = *a;
	uint64_t n = 0;

	for (uint32_t i = 0; i < d->reg->n_rings; i++)
		n += gpushare_ring_depth(gpushare_region_ring(d->reg, i));
	while (next < until) {
		n++;
		next = gpushare_arrivals_next(&copy);
	}
	return n;
}

static void *dispatch_main(void *arg)
{
	struct gpushare_dispatcher *d = arg;
	struct gpushare_arrivals a;
	struct gpushare_dispatch_waiter w;
	struct wakes k = { .n = 0 };
	uint32_t entries = d->reg->ring_entries;
	uint64_t next, seq = 0;
	bool blocked = false, snapshot = false, stopped = false;

	/* Wake-ups on time: the spin, when there is one, covers the rest. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
	/* ... and ahead of the CPU-bound tasks (openloop_wait.c). */
	d->slice_granted_ns = gpushare_sched_short_slice(d->slice_ns);
	gpushare_dispatch_waiter_open(&w, d->wait, gpushare_now_ns());
	gpushare_arrivals_init(&a, d->arrival, d->rate, d->seed, d->t_go);
	next = gpushare_arrivals_next(&a);
	while (next < d->t_end && !stopped) {
		uint64_t now = gpushare_now_ns(), due, published = 0;
		bool full = false;

		if (!snapshot && now >= d->t_end) {
			/* The window closed while arrivals waited for room. */
			d->queued_at_end = backlog(d, &a, next, d->t_end);
			snapshot = true;
		}
		if (now < next) {
			gpushare_dispatch_waiter_probe(&w, now);
			if (!wait_until(d, &w, next))
				break;
			now = gpushare_now_ns();
		}
		/* Every arrival due by now, in one batch. */
		for (due = now; next < d->t_end && next <= due;) {
			struct gpushare_ring *q = ring_for(d, seq);
			int pub = gpushare_ring_publish(q, entries, next, seq);
			uint64_t t, depth;

			if (pub == GPUSHARE_RING_FULL) {
				if (!blocked)
					d->ring_full++;
				blocked = full = true;
				break;
			}
			t = gpushare_now_ns(); /* visible to a claiming worker from now */
			if (pub == GPUSHARE_RING_WAKE)
				wakes_add(&k, q);
			if (!blocked)
				gpushare_hist_record(&d->lateness, t > next ? t - next : 0);
			blocked = false;
			depth = gpushare_ring_depth(q);
			if (depth > d->queue_max)
				d->queue_max = depth;
			d->issued++;
			if (next >= d->t_start)
				d->offered++;
			seq++;
			published++;
			next = gpushare_arrivals_next(&a);
		}
		wakes_flush(&k);
		if (published)
			d->batches++;
		if (full) {
			if (stop_asked(d))
				stopped = true;
			else
				gpushare_sleep_ns(FULL_WAIT_NS);
		}
	}
	if (!snapshot) {
		/* Every arrival is out: the backlog at the end is what is still
		 * waiting when the window closes. */
		if (wait_until(d, &w, d->t_end) || gpushare_now_ns() >= d->t_end)
			d->queued_at_end = backlog(d, &a, UINT64_MAX, 0);
		else
			d->queued_at_end = backlog(d, &a, next, gpushare_now_ns());
	}
	gpushare_dispatch_waiter_close(&w, gpushare_now_ns());
	d->run_ns = w.total_ns;
	d->spin_ns = w.spin_ns;
	if (next >= d->t_end)
		__atomic_store_n(&d->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

int gpushare_dispatcher_start(struct gpushare_dispatcher *d)
{
	int rc;

	d->issued = d->offered = d->queue_max = d->queued_at_end = d->ring_full = d->batches = 0;
	d->run_ns = d->spin_ns = d->slice_granted_ns = 0;
	d->stop = d->finished = 0;
	gpushare_hist_init(&d->lateness);
	if (!d->reg || d->reg->n_rings == 0 || d->reg->ring_entries == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "the region has no rings for arrivals");
	if (!(d->rate > 0))
		return gpushare_fail(GPUSHARE_E_INVAL, "the arrival rate must be positive");
	rc = pthread_create(&d->tid, NULL, dispatch_main, d);
	if (rc)
		return gpushare_fail(GPUSHARE_E_SYS, "cannot start the dispatcher thread: %s", strerror(rc));
	d->running = true;
	return GPUSHARE_OK;
}

bool gpushare_dispatcher_finished(const struct gpushare_dispatcher *d)
{
	return __atomic_load_n(&d->finished, __ATOMIC_ACQUIRE) != 0;
}

void gpushare_dispatcher_stop(struct gpushare_dispatcher *d)
{
	if (!d->running)
		return;
	__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
	pthread_join(d->tid, NULL);
	d->running = false;
}

/* ---- the session's hooks ---- */

/* Entries per ring: room for 65536 waiting arrivals in all, at least 4096
 * per ring. A full ring holds the next arrivals back in the dispatcher
 * (counted in ring_full); they keep their scheduled times. */
#define RING_TOTAL (1u << 16)
#define RING_MIN (1u << 12)

int gpushare_openloop_region(const struct gpushare_bench_config *c, uint32_t n_slots,
			     struct gpushare_region_header **reg, int *fd)
{
	uint32_t n_rings, entries = RING_MIN;
	int rc;

	if (c->load != GPUSHARE_LOAD_OPEN)
		return gpushare_region_create(n_slots, reg, fd);
	n_rings = c->dispatch == GPUSHARE_DISPATCH_ROUND_ROBIN ? n_slots : 1;
	while (entries < RING_TOTAL / n_rings)
		entries <<= 1;
	rc = gpushare_region_create_rings(n_slots, n_rings, entries, reg, fd);
	if (rc)
		return rc;
	(*reg)->load = GPUSHARE_LOAD_OPEN;
	(*reg)->dispatch = (uint32_t)c->dispatch;
	return GPUSHARE_OK;
}

/* GPUSHARE_DISPATCH_WAIT: spin, sleep, else auto. */
static enum gpushare_dispatch_wait dispatch_wait(const char *v)
{
	if (v && strcmp(v, "spin") == 0)
		return GPUSHARE_DISPATCH_WAIT_SPIN;
	if (v && strcmp(v, "sleep") == 0)
		return GPUSHARE_DISPATCH_WAIT_SLEEP;
	return GPUSHARE_DISPATCH_WAIT_AUTO;
}

int gpushare_openloop_go(struct gpushare_dispatcher *d, const struct gpushare_bench_config *c,
			 struct gpushare_region_header *reg, uint64_t t_go, uint64_t t_start, uint64_t t_end)
{
	long slice_us = 0;
	int rc;

	memset(d, 0, sizeof(*d));
	if (c->load != GPUSHARE_LOAD_OPEN)
		return GPUSHARE_OK;
	d->reg = reg;
	d->arrival = c->arrival;
	d->rate = c->rate;
	d->seed = c->seed;
	d->t_go = t_go;
	d->t_start = t_start;
	d->t_end = t_end;
	d->wait = dispatch_wait(getenv("GPUSHARE_DISPATCH_WAIT"));
	/* The slice its thread asks for, in us: 100, the kernel's least, unless set. */
	rc = gpushare_env_number(gpushare_getenv_process, NULL, "GPUSHARE_DISPATCH_SLICE_US", 0, 100000, &slice_us);
	if (rc < 0)
		return rc;
	d->slice_ns = (uint64_t)(rc ? slice_us : 100) * 1000;
	/* ... and its workers (workloads/worker_main.c reads it): refused here */
	rc = gpushare_env_number(gpushare_getenv_process, NULL, "GPUSHARE_WORKER_SLICE_US", 0, 100000, &slice_us);
	if (rc < 0)
		return rc;
	return gpushare_dispatcher_start(d);
}

/* The drain after a window of d ns: drain_ns when set, else the window's
 * length, from 1 s to 10 s. */
static uint64_t drain_after(uint64_t drain_ns, uint64_t d)
{
	if (drain_ns)
		return drain_ns;
	return d < NS_PER_S ? NS_PER_S : d > 10 * NS_PER_S ? 10 * NS_PER_S : d;
}

uint64_t gpushare_openloop_drain_ns(const struct gpushare_bench_config *c)
{
	return drain_after(c->drain_ns, c->duration_ns);
}

bool gpushare_openloop_drained(const struct gpushare_dispatcher *d, struct gpushare_region_header *reg)
{
	uint64_t served = 0;

	if (!d->running || !gpushare_dispatcher_finished(d))
		return false;
	for (uint32_t i = 0; i < reg->n_slots; i++)
		served += __atomic_load_n(&gpushare_region_slot(reg, i)->requests, __ATOMIC_RELAXED);
	/* The dispatcher's own count is final once it finished (acquire). */
	return served >= d->offered;
}

void gpushare_openloop_collect(struct gpushare_dispatcher *d, const struct gpushare_bench_config *c,
			       struct gpushare_bench_result *res, uint64_t t_end, uint64_t t_stopped)
{
	struct gpushare_bench_openloop *o = &res->open;

	if (c->load != GPUSHARE_LOAD_OPEN)
		return;
	gpushare_dispatcher_stop(d);
	o->on = true;
	o->rate = c->rate;
	o->offered += d->offered;
	o->queued_at_end += d->queued_at_end;
	if (d->queue_max > o->queue_max)
		o->queue_max = d->queue_max;
	o->ring_full += d->ring_full;
	o->dispatch_seconds += (double)d->run_ns / 1e9;
	o->dispatch_spin_seconds += (double)d->spin_ns / 1e9;
	o->dispatch_slice_seconds = (double)d->slice_granted_ns / 1e9;
	gpushare_hist_merge(&o->lateness, &d->lateness);
	if (t_stopped > t_end && t_end)
		o->drain_seconds += (double)(t_stopped - t_end) / 1e9;
}

/* ---- reading a step ---- */

uint64_t gpushare_openloop_quantile(const struct gpushare_hist *h, uint64_t unfinished, double q)
{
	uint64_t n = h->count + unfinished, rank;

	if (n == 0)
		return 0;
	if (q <= 0)
		return h->count ? h->min_ns : UINT64_MAX;
	rank = (uint64_t)ceil(q * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		return UINT64_MAX;
	/* The value of that rank among the finished ones. */
	return gpushare_hist_quantile(h, ((double)rank - 0.5) / (double)h->count);
}

uint64_t gpushare_peak_min_requests(double q, unsigned tail_samples)
{
	if (q >= 1 || q <= 0)
		return tail_samples;
	return (uint64_t)ceil((double)tail_samples / (1 - q) - 1e-9);
}

/* ---- the search ---- */

void gpushare_peak_search_init(struct gpushare_peak_search *s, double start, double resolution, double rate_min,
			       double rate_max)
{
	memset(s, 0, sizeof(*s));
	s->start = start;
	s->resolution = resolution;
	s->rate_min = rate_min;
	s->rate_max = rate_max;
}

bool gpushare_peak_search_next(struct gpushare_peak_search *s, double *rate)
{
	if (s->done)
		return false;
	if (s->pass == 0 && s->fail == 0) {
		*rate = s->start;
	} else if (s->fail == 0) {
		if (s->pass >= s->rate_max) {
			char r[24];

			snprintf(s->why, sizeof(s->why), "meets the bound at the highest rate allowed (%s/s, --rate-max)",
				 gpushare_fmt_si(s->rate_max, r, sizeof(r)));
			s->done = true;
			return false;
		}
		*rate = s->pass * 2 < s->rate_max ? s->pass * 2 : s->rate_max;
	} else if (s->pass == 0) {
		if (s->fail <= s->rate_min) {
			char r[24];

			snprintf(s->why, sizeof(s->why), "misses the bound even at the lowest rate tried (%s/s)",
				 gpushare_fmt_si(s->fail, r, sizeof(r)));
			s->done = true;
			return false;
		}
		*rate = s->fail / 2 > s->rate_min ? s->fail / 2 : s->rate_min;
	} else if (s->fail <= s->pass * (1 + s->resolution)) {
		s->done = true;
		return false;
	} else {
		*rate = sqrt(s->pass * s->fail);
	}
	return true;
}

void gpushare_peak_search_result(struct gpushare_peak_search *s, double rate, bool pass)
{
	s->steps++;
	if (pass && rate > s->pass)
		s->pass = rate;
	else if (!pass && (s->fail == 0 || rate < s->fail))
		s->fail = rate;
}

/* ---- a run's plan ---- */

const char *gpushare_fmt_percentile(double quantile, char *buf, size_t len)
{
	double pct = quantile * 100;

	/* The fewest digits that read back as this quantile and stay below
	 * 100 (p99.999999 at 6 digits would print as p100). */
	for (int digits = 2; digits <= 17; digits++) {
		char t[40];
		double back;

		snprintf(t, sizeof(t), "%.*g", digits, pct);
		back = strtod(t, NULL);
		if (fabs(back - pct) <= 1e-9 * fabs(pct) && (back < 100 || !(pct < 100))) {
			snprintf(buf, len, "p%s", t);
			return buf;
		}
	}
	snprintf(buf, len, "p%.17g", pct);
	return buf;
}

int gpushare_bench_plan(const struct gpushare_bench_config *c, struct gpushare_bench_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	plan->window_seconds = c->requests ? 0 : (double)c->duration_ns / 1e9;
	plan->warmup_seconds = c->requests ? 0 : (double)c->warmup_ns / 1e9;
	if (c->load == GPUSHARE_LOAD_OPEN && c->find_peak && c->rate > 0) {
		double need = (double)gpushare_peak_min_requests(c->slo_quantile, c->tail_samples) / c->rate;

		plan->step_need_seconds = need;
		if (!(need <= GPUSHARE_PEAK_STEP_MAX_SECONDS)) {
			char q[48], r[24], n[24];

			return gpushare_fail(GPUSHARE_E_INVAL,
					     "--find-peak: the first step at --rate %s/s needs %.3g s to offer the %s arrivals "
					     "%s rests on (%u beyond it); a step may take at most %.0f s: give a higher --rate, "
					     "a lower quantile or fewer --tail-samples",
					     gpushare_fmt_si(c->rate, r, sizeof(r)), need,
					     gpushare_fmt_si((double)gpushare_peak_min_requests(c->slo_quantile, c->tail_samples), n,
							     sizeof(n)),
					     gpushare_fmt_percentile(c->slo_quantile, q, sizeof(q)), c->tail_samples,
					     GPUSHARE_PEAK_STEP_MAX_SECONDS);
		}
		if (need > plan->window_seconds)
			plan->window_seconds = ceil(need * 1e9) / 1e9;
	}
	if (c->load == GPUSHARE_LOAD_OPEN)
		plan->drain_seconds = (double)drain_after(c->drain_ns, (uint64_t)(plan->window_seconds * 1e9)) / 1e9;
	plan->run_seconds = plan->warmup_seconds + plan->window_seconds + plan->drain_seconds;
	plan->total_seconds = plan->run_seconds * (c->n_strategies ? (double)c->n_strategies : 1);
	return GPUSHARE_OK;
}
