/*
 * FNV-1a 64, the one hash of the project: farm job and list hashes (recorded
 * in farm journals, so they must never change), the shortened names of exec
 * job directories and in-memory tables of names.
 */
#ifndef GPUSHARE_HASH_H
#define GPUSHARE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The FNV-1a 64 offset basis: where a hash starts. */
#define GPUSHARE_FNV1A_OFFSET 0xcbf29ce484222325ULL

/* FNV-1a 64 over len bytes, continuing from h (start with
 * GPUSHARE_FNV1A_OFFSET). */
uint64_t gpushare_fnv1a(uint64_t h, const void *data, size_t len);
/* FNV-1a 64 of a NUL-terminated string (without its NUL). */
uint64_t gpushare_fnv1a_str(const char *s);

#endif
