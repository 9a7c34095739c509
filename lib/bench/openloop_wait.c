/*
 * How the open-loop dispatcher waits for its next arrival: spinning the
 * last stretch when a core is free, sleeping to the deadline when none is.
 *
 * Spinning hands an arrival over within a microsecond of its time, but
 * only while the spinning thread keeps a core of its own. On a busy host a
 * thread that never sleeps is one more CPU-bound task: the scheduler gives
 * it its share and preempts it for milliseconds at a time, and every
 * arrival due meanwhile is late by that much. A thread that sleeps to each
 * deadline (clock_nanosleep, TIMER_ABSTIME) uses little CPU, so when its
 * timer fires the scheduler runs it ahead of the CPU-bound tasks.
 *
 * So the dispatcher looks, every PROBE_NS, at how much CPU the rest of the
 * host left unused (/proc/stat: idle and iowait over the CPUs it may run
 * on, plus what the dispatcher itself used) and at how long its own thread waited for a
 * CPU while runnable (/proc/thread-self/schedstat): it spins only while
 * about one and a half CPUs are free (one and a quarter to go on spinning)
 * and its thread is not kept waiting; after it stops spinning for want of
 * a core it sleeps for at least HOLD_NS. Two reads of small files every
 * 100 ms, nothing per arrival. When /proc cannot be read, or the thread
 * may run on one CPU only, it always sleeps.
 *
 * Sleeping alone is not enough under EEVDF (Linux 6.6 and later): a task
 * woken by its timer preempts the running CPU-bound task only when its
 * deadline is earlier, and with equal slices a hog that was just picked
 * keeps the CPU to the end of its slice (milliseconds: the lateness a
 * bare sleeper sees now and then, and the dispatcher, which also wakes its
 * workers, more often). A shorter slice gives an earlier deadline, and a
 * waking task with a shorter slice may preempt (the scheduler's
 * PREEMPT_SHORT): the dispatcher's thread asks for 100 us, the kernel's
 * least (GPUSHARE_DISPATCH_SLICE_US, 0 to leave the default). It costs the
 * hogs nothing in share: a slice sets how often a task runs, not how much
 * (gpushare_sched_short_slice, lib/core/sched.c). The workers it wakes ask
 * for the same (workloads/worker_main.c): a worker woken with the default
 * slice waits behind the hogs, and the dispatcher that woke it with it.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "openloop.h"

#define PROBE_NS (100 * 1000000ULL)    /* look at the host this often */
#define HOLD_NS (1000 * 1000000ULL)    /* after contention, sleep at least this long */
#define FREE_TO_START 1.5              /* free CPUs (others' idle + our own use) to start spinning */
#define FREE_TO_STAY 1.25              /* ... and to go on spinning */
#define DELAY_TO_STAY 0.05             /* the share of an interval the spinning thread may wait for a CPU */

bool gpushare_dispatch_spin_ok(bool spinning, const struct gpushare_dispatch_probe *p)
{
	double free_cpus = p->idle_cpus + p->own_cpus;

	if (p->cpus < 2)
		return false;
	if (!spinning)
		return free_cpus >= FREE_TO_START;
	return free_cpus >= FREE_TO_STAY && !(p->run_delay > DELAY_TO_STAY);
}

/* The CPUs the thread may run on, from /proc/stat's lines "cpuN user nice
 * system idle iowait irq softirq steal guest guest_nice" (clock ticks; guest
 * time is in user): their idle (and iowait) ticks, and all their ticks. */
static bool read_cpu_ticks(struct gpushare_dispatch_waiter *w, uint64_t *idle, uint64_t *total)
{
	ssize_t n = pread(w->stat_fd, w->buf, w->buf_len - 1, 0);
	char *p = w->buf, *end;
	unsigned seen = 0;

	if (n < 5)
		return false;
	w->buf[n] = '\0';
	*idle = *total = 0;
	while ((p = strchr(p, '\n')) != NULL && strncmp(++p, "cpu", 3) == 0) {
		unsigned long cpu = strtoul(p + 3, &end, 10);
		uint64_t v[8];

		if (end == p + 3)
			return false;
		p = end;
		for (int i = 0; i < 8; i++) {
			v[i] = strtoull(p, &end, 10);
			if (end == p)
				return false;
			p = end;
		}
		if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &w->set))
			continue;
		*idle += v[3] + v[4];
		for (int i = 0; i < 8; i++)
			*total += v[i];
		seen++;
	}
	return seen > 0;
}

/* The thread's time spent runnable but waiting for a CPU (ns, the second
 * field of its schedstat); false when not available. */
static bool read_run_delay(int fd, uint64_t *delay)
{
	char buf[128], *p;
	ssize_t n;

	if (fd < 0)
		return false;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strchr(buf, ' ');
	if (!p)
		return false;
	*delay = strtoull(p + 1, NULL, 10);
	return true;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Take a sample into w->last; false when /proc/stat cannot be read. */
static bool sample(struct gpushare_dispatch_waiter *w)
{
	if (w->stat_fd < 0 || !read_cpu_ticks(w, &w->idle_ticks, &w->total_ticks))
		return false;
	w->own_ns = thread_cpu_ns();
	if (!read_run_delay(w->sched_fd, &w->delay_ns))
		w->delay_ns = UINT64_MAX;
	return true;
}

void gpushare_dispatch_waiter_open(struct gpushare_dispatch_waiter *w, enum gpushare_dispatch_wait wait, uint64_t now)
{
	long conf = sysconf(_SC_NPROCESSORS_CONF);

	memset(w, 0, sizeof(*w));
	w->wait = wait;
	w->spin = wait == GPUSHARE_DISPATCH_WAIT_SPIN;
	w->stat_fd = w->sched_fd = -1;
	w->t_probe = w->t_mode = now;
	if (wait != GPUSHARE_DISPATCH_WAIT_AUTO)
		return;
	CPU_ZERO(&w->set);
	if (sched_getaffinity(0, sizeof(w->set), &w->set) != 0)
		return;
	w->cpus = CPU_COUNT(&w->set);
	if (w->cpus < 2)
		return;      /* one CPU: never spin */
	/* Room for every CPU's line (under 120 characters each). */
	w->buf_len = (size_t)(conf > 0 ? conf + 1 : CPU_SETSIZE) * 160 + 256;
	w->buf = malloc(w->buf_len);
	if (!w->buf)
		return;
	w->stat_fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	/* The calling thread's: the dispatcher opens it on its own thread. */
	w->sched_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	w->have_sample = sample(w);
}

/* Account the time since the last change of mode. */
static void account(struct gpushare_dispatch_waiter *w, uint64_t now)
{
	if (now <= w->t_mode)
		return;
	if (w->spin)
		w->spin_ns += now - w->t_mode;
	w->total_ns += now - w->t_mode;
	w->t_mode = now;
}

void gpushare_dispatch_waiter_probe(struct gpushare_dispatch_waiter *w, uint64_t now)
{
	uint64_t idle0 = w->idle_ticks, total0 = w->total_ticks, own0 = w->own_ns, delay0 = w->delay_ns;
	struct gpushare_dispatch_probe p;
	double interval;
	bool spin;

	if (w->wait != GPUSHARE_DISPATCH_WAIT_AUTO || !w->have_sample || now < w->t_probe + PROBE_NS)
		return;
	interval = (double)(now - w->t_probe);
	w->t_probe = now;
	if (!sample(w)) {
		account(w, now);
		w->spin = false;
		w->have_sample = false;
		return;
	}
	if (w->total_ticks <= total0) {
		/* No tick yet: decide at the next probe, over the longer interval. */
		w->idle_ticks = idle0;
		w->total_ticks = total0;
		w->own_ns = own0;
		w->delay_ns = delay0;
		w->t_probe = now - (uint64_t)interval;
		return;
	}
	p.cpus = w->cpus;
	p.idle_cpus = w->cpus * (double)(w->idle_ticks - idle0) / (double)(w->total_ticks - total0);
	p.own_cpus = (double)(w->own_ns - own0) / interval;
	p.run_delay = w->delay_ns == UINT64_MAX || delay0 == UINT64_MAX || w->delay_ns < delay0
			      ? -1
			      : (double)(w->delay_ns - delay0) / interval;
	spin = gpushare_dispatch_spin_ok(w->spin, &p) && now >= w->hold_until;
	w->probes++;
	if (spin == w->spin)
		return;
	account(w, now);
	if (w->spin)
		w->hold_until = now + HOLD_NS;
	w->spin = spin;
	w->switches++;
}

void gpushare_dispatch_waiter_close(struct gpushare_dispatch_waiter *w, uint64_t now)
{
	account(w, now);
	if (w->stat_fd >= 0)
		close(w->stat_fd);
	if (w->sched_fd >= 0)
		close(w->sched_fd);
	w->stat_fd = w->sched_fd = -1;
	free(w->buf);
	w->buf = NULL;
}
