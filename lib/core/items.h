/*
 * The one walk of a list of items with a separator ("1,2,4", a mix
 * "A+B", a split "30/70"): each item handed on, empty ones refused.
 */
#ifndef GPUSHARE_ITEMS_H
#define GPUSHARE_ITEMS_H

#include <stddef.h>

/* Give each item of s (p, len: not empty, without the separator) to
 * item(arg, p, len), stopping at its first error. An empty s, an empty item
 * and a separator at the end are refused: GPUSHARE_E_INVAL naming s. */
int gpushare_each_item(const char *s, char sep, int (*item)(void *arg, const char *p, size_t len), void *arg);

#endif
