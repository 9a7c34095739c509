/*
 * Open-loop load (internal to libgpushare): the arrival schedule, the
 * dispatcher thread that hands arrivals to the workers through the region's
 * rings at their scheduled times, and the search for the highest rate that
 * meets a latency bound. lib/bench/bench_run.c drives them; the rings and the
 * workers' side are in gpushare/region.h.
 */
#ifndef GPUSHARE_OPENLOOP_H
#define GPUSHARE_OPENLOOP_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gpushare/bench.h"
#include "gpushare/hist.h"
#include "gpushare/region.h"

/* ---- the arrival schedule ---- */

struct gpushare_arrivals {
	enum gpushare_arrival kind;
	double interval_ns;        /* 1e9 / rate */
	uint64_t t0;               /* first arrival (uniform: exactly; poisson: t0 + first gap) */
	uint64_t n;                /* arrivals generated */
	double t_ns;               /* poisson: last arrival, relative to t0 */
	uint64_t rng[4];           /* xoshiro256** state */
};

/* Arrivals at `rate` per second from t0: uniform (every 1/rate, the first at
 * t0) or poisson (exponential gaps of mean 1/rate, seeded: the same seed
 * gives the same schedule). */
void gpushare_arrivals_init(struct gpushare_arrivals *a, int kind, double rate, uint64_t seed, uint64_t t0);

/* Scheduled time of the next arrival (CLOCK_MONOTONIC ns), in order. */
uint64_t gpushare_arrivals_next(struct gpushare_arrivals *a);

/* A uniform double in [0, 1) from the generator (for tests). */
double gpushare_arrivals_uniform(struct gpushare_arrivals *a);

/* ---- the dispatcher ---- */

/* How the dispatcher waits for an arrival: spin the last stretch while a
 * core is free, else sleep to the deadline (auto, the default); or always
 * one way (for tests and measurements). */
enum gpushare_dispatch_wait {
	GPUSHARE_DISPATCH_WAIT_AUTO,
	GPUSHARE_DISPATCH_WAIT_SPIN,
	GPUSHARE_DISPATCH_WAIT_SLEEP,
};

struct gpushare_dispatcher {
	/* Set by the caller before start. */
	struct gpushare_region_header *reg;
	enum gpushare_dispatch_wait wait;
	uint64_t slice_ns;         /* the scheduler slice to ask for (GPUSHARE_DISPATCH_SLICE_US); 0 leave it */
	enum gpushare_arrival arrival;
	double rate;               /* per second, all workers together */
	uint64_t seed;
	uint64_t t_go, t_start, t_end; /* arrivals from t_go until t_end; the window is [t_start, t_end) */
	/* Owned by the thread until stop() returns. */
	pthread_t tid;
	bool running;
	int stop;                  /* atomic: stop() asks the thread to end */
	int finished;              /* atomic: every arrival up to t_end handed over */
	uint64_t issued;           /* arrivals published */
	uint64_t offered;          /* of them, scheduled inside the window */
	uint64_t queue_max;        /* deepest ring seen right after a publish */
	uint64_t queued_at_end;    /* published and unclaimed, or due and unpublished, at t_end */
	uint64_t ring_full;        /* arrivals that found their ring full and waited */
	uint64_t batches;          /* wake-ups that published arrivals (each publishes all that are due) */
	uint64_t run_ns, spin_ns;  /* its running time, of it spinning before arrivals (a core was free) */
	uint64_t slice_granted_ns; /* the slice the scheduler holds for its thread after asking; 0 none */
	struct gpushare_hist lateness; /* publish time - scheduled time, arrivals that found room */
};

/* Start the thread (after GO). GPUSHARE_E_SYS when it cannot. */
int gpushare_dispatcher_start(struct gpushare_dispatcher *d);

/* Whether every arrival of the schedule has been handed over. */
bool gpushare_dispatcher_finished(const struct gpushare_dispatcher *d);

/* Ask the thread to end and join it; its counters are final afterwards. */
void gpushare_dispatcher_stop(struct gpushare_dispatcher *d);

/* ---- how the dispatcher waits (lib/bench/openloop_wait.c) ---- */

/* What one look at the host over an interval found, in CPUs. */
struct gpushare_dispatch_probe {
	double cpus;               /* CPUs the dispatcher may run on */
	double idle_cpus;          /* idle over the interval, all CPUs together */
	double own_cpus;           /* the dispatcher thread's own use */
	double run_delay;          /* the share of the interval the thread was runnable but not running; < 0 unknown */
};

/* Whether to spin over the next interval, given whether it spun over the
 * last one: only with about one and a half CPUs free (one and a quarter to
 * go on), and while spinning its thread is not kept waiting for a CPU. */
bool gpushare_dispatch_spin_ok(bool spinning, const struct gpushare_dispatch_probe *p);

/* The dispatcher thread's waiting state (its own, on its stack). */
struct gpushare_dispatch_waiter {
	enum gpushare_dispatch_wait wait;
	bool spin;                 /* now: spin the last stretch, else sleep to the deadline */
	bool have_sample;
	int stat_fd, sched_fd;     /* /proc/stat, the thread's schedstat; -1 unread */
	cpu_set_t set;             /* the CPUs it may run on */
	double cpus;
	char *buf;                 /* for /proc/stat */
	size_t buf_len;
	uint64_t t_probe, hold_until, t_mode;
	uint64_t idle_ticks, total_ticks, own_ns, delay_ns; /* the last sample */
	uint64_t spin_ns, total_ns, probes, switches;
};

/* Open on the dispatcher's thread (it reads that thread's schedstat). */
void gpushare_dispatch_waiter_open(struct gpushare_dispatch_waiter *w, enum gpushare_dispatch_wait wait, uint64_t now);
/* Look at the host again when the last look is PROBE_NS old; cheap otherwise. */
void gpushare_dispatch_waiter_probe(struct gpushare_dispatch_waiter *w, uint64_t now);
/* Close; w->spin_ns of w->total_ns spent spinning. */
void gpushare_dispatch_waiter_close(struct gpushare_dispatch_waiter *w, uint64_t now);

/* ---- the session's hooks (lib/bench/bench_workers.c) ---- */

/* Create the region for a run of n_slots slots: with the rings the
 * configuration's dispatch needs under open loop, plain otherwise. */
int gpushare_openloop_region(const struct gpushare_bench_config *c, uint32_t n_slots,
			     struct gpushare_region_header **reg, int *fd);

/* After GO: start handing arrivals out over [t_go, t_end) (no-op in closed
 * loop). */
int gpushare_openloop_go(struct gpushare_dispatcher *d, const struct gpushare_bench_config *c,
			 struct gpushare_region_header *reg, uint64_t t_go, uint64_t t_start, uint64_t t_end);

/* How long after the window the workers may serve the backlog. */
uint64_t gpushare_openloop_drain_ns(const struct gpushare_bench_config *c);

/* Every arrival of the window handed out and served (none left to wait for). */
bool gpushare_openloop_drained(const struct gpushare_dispatcher *d, struct gpushare_region_header *reg);

/* After the workers stopped: add the dispatcher's counts to res->open. */
void gpushare_openloop_collect(struct gpushare_dispatcher *d, const struct gpushare_bench_config *c,
			       struct gpushare_bench_result *res, uint64_t t_end, uint64_t t_stopped);

/* ---- reading a step ---- */

/* Quantile q of the latencies in h with `unfinished` more requests counted
 * as longer than any: UINT64_MAX when the quantile falls among them. */
uint64_t gpushare_openloop_quantile(const struct gpushare_hist *h, uint64_t unfinished, double q);

/* Arrivals a find-peak step needs so that its quantile q rests on at least
 * tail_samples requests beyond it: ceil(tail_samples / (1 - q)). */
uint64_t gpushare_peak_min_requests(double q, unsigned tail_samples);

/* ---- the search for the peak rate ---- */

/* The search state: exponential bracketing from a start rate (doubling
 * after a pass, halving after a failure) until a passing and a failing rate
 * are known, then bisection (at the geometric middle) until
 * fail / pass <= 1 + resolution. */
struct gpushare_peak_search {
	double start, resolution, rate_min, rate_max;
	double pass, fail;         /* best passing, lowest failing rate; 0 unknown */
	int steps;
	bool done;
	char why[160];             /* how it ended, when not by bracketing a peak */
};

void gpushare_peak_search_init(struct gpushare_peak_search *s, double start, double resolution, double rate_min,
			       double rate_max);

/* The next rate to try; false when the search is over (s->done). */
bool gpushare_peak_search_next(struct gpushare_peak_search *s, double *rate);

/* The outcome of the step at `rate`. */
void gpushare_peak_search_result(struct gpushare_peak_search *s, double rate, bool pass);

/* ---- printing (lib/bench/openloop_output.c, called by lib/bench/bench_output.c) ---- */

struct cJSON;
/* Add "open_loop" and "peak" (objects or null) to a result object. */
bool gpushare_openloop_json_result(struct cJSON *o, const struct gpushare_bench_result *res,
				   const struct gpushare_bench_config *c);
/* Add the configuration's load, rate, arrival, seed, dispatch, find_peak. */
bool gpushare_openloop_json_config(struct cJSON *o, const struct gpushare_bench_config *c);
/* The lines under a strategy's row of the table (nothing in closed loop). */
void gpushare_openloop_table(FILE *f, const struct gpushare_bench_result *res, const struct gpushare_bench_config *c);

#endif
