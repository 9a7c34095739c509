/*
 * The clock: nanosecond units, the monotonic time (gpushare_now_ns() of
 * gpushare/util.h) and a sleep, in one home.
 */
#ifndef GPUSHARE_CLOCK_H
#define GPUSHARE_CLOCK_H

#include <stdint.h>

#define NS_PER_US 1000ULL
#define NS_PER_MS 1000000ULL
#define NS_PER_S 1000000000ULL

/* Sleep for ns nanoseconds; a signal may end it early (callers loop on
 * their own condition). */
void gpushare_sleep_ns(uint64_t ns);

#endif
