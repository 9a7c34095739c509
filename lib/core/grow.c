/*
 * One more item's room in a growing array (grow.h).
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "gpushare/gpushare.h"

int gpushare_grow(void *items, size_t n, size_t *cap, size_t size, size_t first)
{
	size_t nc = *cap ? *cap * 2 : first;
	void *old, *p;

	if (n < *cap)
		return GPUSHARE_OK;
	/* The pointer is copied as bytes: *items may be a pointer to any
	 * object type. */
	memcpy(&old, items, sizeof(old));
	p = realloc(old, nc * size);
	if (!p)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	memcpy(items, &p, sizeof(p));
	*cap = nc;
	return GPUSHARE_OK;
}
