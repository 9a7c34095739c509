/*
 * The growth of an array held as a pointer, a count and a capacity: one
 * more item's room, the capacity doubling. The one home of that step for
 * the library's growing lists (jobs, intervals, histograms ...).
 */
#ifndef GPUSHARE_GROW_H
#define GPUSHARE_GROW_H

#include <stddef.h>

/* Room for one more item in the array *items (items is the address of the
 * array's pointer, of any type) that holds n items of size bytes in *cap:
 * when n == *cap, the array is reallocated with *cap doubled (first when
 * 0). GPUSHARE_OK, or GPUSHARE_E_NOMEM with "out of memory" and the array
 * as it was. */
int gpushare_grow(void *items, size_t n, size_t *cap, size_t size, size_t first);

#endif
