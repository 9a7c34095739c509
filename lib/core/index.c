/*
 * The open-addressing index of index.h.
 */
#include <stdlib.h>

#include "gpushare/gpushare.h"

#include "index.h"

int gpushare_index_room(struct gpushare_index *x, size_t first, gpushare_index_hash_fn hash, const void *ctx)
{
	size_t size;
	uint64_t *t;

	if ((x->n + 1) * 2 <= x->size)
		return GPUSHARE_OK;
	size = x->size ? x->size * 2 : first;
	t = calloc(size, sizeof(*t));
	if (!t)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	for (size_t i = 0; i < x->size; i++) {
		size_t k;

		if (!x->slot[i])
			continue;
		for (k = (size_t)hash(ctx, x->slot[i]) & (size - 1); t[k]; k = (k + 1) & (size - 1))
			;
		t[k] = x->slot[i];
	}
	free(x->slot);
	x->slot = t;
	x->size = size;
	return GPUSHARE_OK;
}

size_t gpushare_index_find(const struct gpushare_index *x, uint64_t h, gpushare_index_same_fn same, const void *ctx,
			   bool *found)
{
	size_t k = (size_t)h & (x->size - 1);

	for (; x->slot[k]; k = (k + 1) & (x->size - 1)) {
		if (same(ctx, x->slot[k])) {
			*found = true;
			return k;
		}
	}
	*found = false;
	return k;
}

void gpushare_index_put(struct gpushare_index *x, size_t k, uint64_t value)
{
	x->slot[k] = value;
	x->n++;
}

void gpushare_index_release(struct gpushare_index *x)
{
	free(x->slot);
	x->slot = NULL;
	x->size = x->n = 0;
}
