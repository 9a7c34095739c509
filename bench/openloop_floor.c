/*
 * The floor of the open-loop dispatcher (bench/openloop_dispatch.sh): a bare
 * clock_nanosleep loop over the same uniform schedule, that sleeps to each
 * arrival's time (CLOCK_MONOTONIC, TIMER_ABSTIME; 1 us timer slack, as the
 * dispatcher's thread) and takes its lateness the way the dispatcher does:
 * the time it is running again minus the scheduled time; an arrival already
 * due when the last one is out goes without a sleep. It publishes
 * nothing and wakes nobody, so it is what any sleeping dispatcher could do
 * at best on this host.
 *
 * With SLICE_US it first asks the scheduler for that slice, as the
 * dispatcher's thread does (gpushare_sched_short_slice): the floor of a
 * sleeper that asks for the same short slice. With `wake` after it, a
 * partner process waits on a futex and the loop wakes it after each
 * arrival, as the dispatcher wakes its worker; the partner polls a few
 * microseconds (2,000 pause instructions) before it sleeps again, as the
 * worker does: the floor of a sleeper that hands each arrival to another
 * process; with `wake-slice` the partner asks for the same slice, as the
 * dispatcher's workers do.
 *
 * Usage: openloop_floor RATE SECONDS [SLICE_US [wake|wake-slice]]
 * Prints one JSON object: rate_per_second, arrivals, offered_per_second,
 * achieved_per_second (arrivals handed over by the end of the schedule, per
 * second of it), slice_seconds (the slice the kernel then reports, 0 the
 * default) and lateness {p50,p99,p999,max}_seconds.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/hist.h"
#include "gpushare/util.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The partner of `wake`: waits for the word to change, polls a while
 * first; ends with its parent (the loop kills it). */
static void partner(volatile uint32_t *word, long slice_us)
{
	uint32_t seen = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (slice_us > 0)
		gpushare_sched_short_slice((uint64_t)slice_us * 1000);
	for (;;) {
		for (int i = 0; i < 2000 && __atomic_load_n(word, __ATOMIC_SEQ_CST) == seen; i++)
			__builtin_ia32_pause();
		if (__atomic_load_n(word, __ATOMIC_SEQ_CST) == seen)
			syscall(SYS_futex, word, FUTEX_WAIT, seen, NULL, NULL, 0);
		seen = __atomic_load_n(word, __ATOMIC_SEQ_CST);
	}
}

int main(int argc, char **argv)
{
	static struct gpushare_hist h;
	double rate, seconds, interval;
	uint64_t t0, t_end, n = 0, on_time = 0, slice = 0;
	volatile uint32_t *word = NULL;
	long slice_us = argc >= 4 ? strtol(argv[3], NULL, 10) : 0;
	pid_t pid = -1;

	if (argc < 3 || argc > 5 || (argc == 5 && strcmp(argv[4], "wake") != 0 && strcmp(argv[4], "wake-slice") != 0) ||
	    (rate = strtod(argv[1], NULL)) <= 0 || (seconds = strtod(argv[2], NULL)) <= 0) {
		fprintf(stderr, "usage: openloop_floor RATE SECONDS [SLICE_US [wake|wake-slice]]\n");
		return 2;
	}
	if (argc == 5) {
		word = mmap(NULL, sizeof(*word), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (word == MAP_FAILED || (pid = fork()) < 0) {
			perror("openloop_floor: the partner");
			return 1;
		}
		if (pid == 0)
			partner(word, strcmp(argv[4], "wake-slice") == 0 ? slice_us : 0);
	}
	if (slice_us > 0)
		slice = gpushare_sched_short_slice((uint64_t)slice_us * 1000);
	interval = 1e9 / rate;
	gpushare_hist_init(&h);
	prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
	t0 = now_ns() + 1000000;
	t_end = t0 + (uint64_t)(seconds * 1e9);
	for (;;) {
		/* From the index, as the dispatcher's schedule: no drift. */
		uint64_t next = t0 + (uint64_t)llround((double)n * interval), t;
		struct timespec ts = { (time_t)(next / 1000000000ULL), (long)(next % 1000000000ULL) };

		if (next >= t_end)
			break;
		/* A late arrival goes at once, as the dispatcher's. */
		while ((t = now_ns()) < next && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		t = now_ns();
		gpushare_hist_record(&h, t > next ? t - next : 0);
		if (t <= t_end)
			on_time++;
		n++;
		if (word) {
			__atomic_add_fetch(word, 1, __ATOMIC_SEQ_CST);
			syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
		}
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	printf("{\"rate_per_second\": %.17g, \"arrivals\": %llu, \"offered_per_second\": %.17g, "
	       "\"achieved_per_second\": %.17g, \"slice_seconds\": %.9g, \"lateness\": {\"p50_seconds\": %.9g, \"p99_seconds\": %.9g, "
	       "\"p999_seconds\": %.9g, \"max_seconds\": %.9g}}\n",
	       rate, (unsigned long long)n, (double)n / seconds, (double)on_time / seconds, (double)slice / 1e9,
	       (double)gpushare_hist_quantile(&h, 0.5) / 1e9, (double)gpushare_hist_quantile(&h, 0.99) / 1e9,
	       (double)gpushare_hist_quantile(&h, 0.999) / 1e9, (double)h.max_ns / 1e9);
	return 0;
}
