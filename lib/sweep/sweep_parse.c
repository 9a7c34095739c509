/*
 * The lists a sweep's axes are given as (gpushare/sweep.h): whole numbers
 * (--workers, --batch) and mps-split's active thread percentages
 * (--thread-percentage: percentages, or multiples Kx of the default share
 * 100/N), with the default share itself.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "gpushare/sweep.h"
#include "gpushare/util.h"

int gpushare_sweep_parse_int_list(const char *s, long min, long max, long *out, size_t *n)
{
	const char *p = s;

	*n = 0;
	if (!s || !*s)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty list (expected e.g. 1,3,5)");
	for (;;) {
		size_t len = strcspn(p, ",");
		char item[32];
		long v;

		if (len == 0)
			return gpushare_fail(GPUSHARE_E_INVAL, "'%s' has an empty item", s);
		if (len >= sizeof(item) || strspn(p, "0123456789") != len)
			return gpushare_fail(GPUSHARE_E_INVAL, "'%.*s' is not a whole number", (int)(len < 32 ? len : 32), p);
		memcpy(item, p, len);
		item[len] = '\0';
		if (gpushare_parse_int(item, min, max, &v))
			return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is out of range (expected %ld to %ld)", item, min, max);
		for (size_t j = 0; j < *n; j++) {
			if (out[j] == v)
				return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is listed twice", item);
		}
		if (*n >= GPUSHARE_SWEEP_MAX_VALUES)
			return gpushare_fail(GPUSHARE_E_INVAL, "more than %d values", GPUSHARE_SWEEP_MAX_VALUES);
		out[(*n)++] = v;
		p += len;
		if (!*p)
			break;
		p++;
		if (!*p)
			return gpushare_fail(GPUSHARE_E_INVAL, "'%s' ends with a comma", s);
	}
	return GPUSHARE_OK;
}

int gpushare_sweep_parse_thread_pcts(const char *s, struct gpushare_sweep_tpct *out, size_t *n)
{
	const char *p = s;

	*n = 0;
	if (!s || !*s)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty list (expected e.g. 25,50,100 or 1x,2x,100)");
	if (!strcmp(s, "auto"))
		s = p = GPUSHARE_SWEEP_THREAD_PCTS_AUTO;
	for (;;) {
		size_t len = strcspn(p, ",");
		char item[32];
		struct gpushare_sweep_tpct v = { 0, false };

		if (len == 0)
			return gpushare_fail(GPUSHARE_E_INVAL, "'%s' has an empty item", s);
		if (len >= sizeof(item))
			return gpushare_fail(GPUSHARE_E_INVAL, "'%.32s...' is not a percentage", p);
		memcpy(item, p, len);
		item[len] = '\0';
		if (item[len - 1] == 'x') {
			char *end = NULL;

			item[len - 1] = '\0';
			errno = 0;
			v.value = strtod(item, &end);
			v.times = true;
			if (!*item || *end || errno || !(v.value > 0 && v.value <= 100) || !strchr("0123456789.", *item))
				return gpushare_fail(GPUSHARE_E_INVAL, "'%sx' is not a multiple of the default share (expected "
						     "e.g. 2x, in (0x, 100x])", item);
		} else if (gpushare_parse_percent(item, &v.value)) {
			return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a percentage in (0, 100] nor a multiple Kx "
					     "of the default share", item);
		}
		for (size_t j = 0; j < *n; j++) {
			if (out[j].value == v.value && out[j].times == v.times)
				return gpushare_fail(GPUSHARE_E_INVAL, "'%.*s' is listed twice", (int)len, p);
		}
		if (*n >= GPUSHARE_SWEEP_MAX_VALUES)
			return gpushare_fail(GPUSHARE_E_INVAL, "more than %d values", GPUSHARE_SWEEP_MAX_VALUES);
		out[(*n)++] = v;
		p += len;
		if (!*p)
			break;
		p++;
		if (!*p)
			return gpushare_fail(GPUSHARE_E_INVAL, "'%s' ends with a comma", s);
	}
	return GPUSHARE_OK;
}

double gpushare_sweep_default_thread_pct(int workers)
{
	double share = floor(100.0 / (workers > 0 ? workers : 1));

	return share >= 1 ? share : 1;
}

double gpushare_sweep_cell_thread_pct(const struct gpushare_sweep_cell *cell)
{
	if (cell->strategy != GPUSHARE_STRATEGY_MPS_SPLIT)
		return 0;
	return cell->thread_pct > 0 ? cell->thread_pct : gpushare_sweep_default_thread_pct(cell->workers);
}
