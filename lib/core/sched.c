/*
 * A short scheduler slice for the calling thread (gpushare/util.h): under
 * EEVDF (Linux 6.6 and later) a task woken by its timer or by another task
 * preempts the running CPU-bound task only when its deadline is earlier,
 * and with equal slices a hog that was just picked keeps the CPU to the end
 * of its slice (milliseconds). A shorter slice gives an earlier deadline,
 * and a waking task with a shorter slice may preempt (the scheduler's
 * PREEMPT_SHORT). It costs the others nothing in share: a slice sets how
 * often a task runs, not how much. The open-loop dispatcher's thread and
 * the workers it wakes ask for one (lib/bench/openloop_wait.c).
 */
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpushare/util.h"

/* struct sched_attr of the kernel's uapi (linux/sched/types.h, whose
 * struct sched_param clashes with the C library's <sched.h>): its first
 * version, with the utilisation clamps (SCHED_ATTR_SIZE_VER1, 56 bytes). */
struct kernel_sched_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};
#define KERNEL_SCHED_FLAG_RESET_ON_FORK 0x01

uint64_t gpushare_sched_short_slice(uint64_t want_ns)
{
	struct kernel_sched_attr a;

	memset(&a, 0, sizeof(a));
	if (!want_ns || syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) != 0)
		return 0;
	if (a.sched_policy != SCHED_OTHER && a.sched_policy != SCHED_BATCH)
		return 0; /* a real-time or idle policy chosen by someone: left alone */
	a.size = sizeof(a);
	a.sched_flags &= KERNEL_SCHED_FLAG_RESET_ON_FORK; /* nice and policy as they are; no clamps changed */
	a.sched_runtime = want_ns;
	if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
		return 0;
	memset(&a, 0, sizeof(a));
	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) != 0)
		return 0;
	return a.sched_runtime; /* 0 where the kernel keeps no slice of its own for SCHED_OTHER */
}
