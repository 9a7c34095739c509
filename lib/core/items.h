/*
 * The one walk of a list of items with a separator ("1,2,4", a mix
 * "A+B", a split "30/70"): each item handed on, empty ones refused.
 */
#ifndef GPUSHARE_ITEMS_H
#define GPUSHARE_ITEMS_H

#include <stdbool.h>
#include <stddef.h>

/* Give each item of s (p, len: not empty, without the separator) to
 * item(arg, p, len), stopping at its first error (any non-zero return, which
 * is returned). An empty s, an empty item and a separator at the end are
 * refused: GPUSHARE_E_INVAL naming s. */
int gpushare_each_item(const char *s, char sep, int (*item)(void *arg, const char *p, size_t len), void *arg);

/* The same, with `what` naming the list in those refusals instead of s
 * ("CUDA_VISIBLE_DEVICES='0,,1'", "memory limit '0=1G,'"). */
int gpushare_each_item_named(const char *what, const char *s, char sep,
			     int (*item)(void *arg, const char *p, size_t len), void *arg);

/* The item of list (items separated by sep; empty ones never match) that
 * equals s, ignoring ASCII case when nocase; NULL when none does. *len (when
 * not NULL) gets the item's length. */
const char *gpushare_find_item(const char *list, char sep, const char *s, bool nocase, size_t *len);

#endif
