/*
 * An open-addressing index: a power-of-two table of nonzero 64-bit values
 * (a 1-based position in the caller's array, a pointer, a packed key),
 * linear probing, at most half full. The caller hashes and compares; the
 * index holds the values and finds their slots. The one home of that table
 * for the library's look-ups by content (the report's names, cells and
 * duplicate runs).
 */
#ifndef GPUSHARE_INDEX_H
#define GPUSHARE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gpushare_index {
	uint64_t *slot;                 /* size slots, 0 empty */
	size_t size;                    /* 0 or a power of two */
	size_t n;                       /* values held */
};

/* The hash of a value already held (to place it again when the table
 * grows), and whether a held value is the one looked for. */
typedef uint64_t (*gpushare_index_hash_fn)(const void *ctx, uint64_t value);
typedef bool (*gpushare_index_same_fn)(const void *ctx, uint64_t value);

/* Room for one more value: when it would be more than half full the table
 * doubles (first: `first` slots, a power of two) and every value is placed
 * again by hash(ctx, value). GPUSHARE_OK, or GPUSHARE_E_NOMEM with "out of
 * memory" and the index as it was. */
int gpushare_index_room(struct gpushare_index *x, size_t first, gpushare_index_hash_fn hash, const void *ctx);

/* The slot of the value with hash h for which same(ctx, value) holds, or
 * the empty slot where it would go: *found says which. The table must have
 * a slot (after gpushare_index_room). */
size_t gpushare_index_find(const struct gpushare_index *x, uint64_t h, gpushare_index_same_fn same, const void *ctx,
			   bool *found);

/* Put value (nonzero) in the empty slot k gpushare_index_find gave. */
void gpushare_index_put(struct gpushare_index *x, size_t k, uint64_t value);

/* Free the table (not what the values point at). */
void gpushare_index_release(struct gpushare_index *x);

#endif
