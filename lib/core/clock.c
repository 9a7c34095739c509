/*
 * The clock (clock.h): CLOCK_MONOTONIC in nanoseconds and a sleep.
 */
#include <time.h>

#include "clock.h"
#include "gpushare/util.h"

uint64_t gpushare_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

void gpushare_sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / NS_PER_S), (long)(ns % NS_PER_S) };

	nanosleep(&ts, NULL);
}
