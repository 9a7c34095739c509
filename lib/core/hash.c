/* FNV-1a 64 (hash.h). */
#include <string.h>

#include "hash.h"

#define FNV1A_PRIME 0x100000001b3ULL

uint64_t gpushare_fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= FNV1A_PRIME;
	}
	return h;
}

uint64_t gpushare_fnv1a_str(const char *s)
{
	return gpushare_fnv1a(GPUSHARE_FNV1A_OFFSET, s, strlen(s));
}
