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
#include "gpushare/internal/sweep.h"
#include "items.h"

struct int_list {
	long min, max;
	long *out;
	size_t *n;
};

static int int_item(void *arg, const char *p, size_t len)
{
	struct int_list *l = arg;
	char item[32];
	long v;

	if (len >= sizeof(item) || strspn(p, "0123456789") != len)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%.*s' is not a whole number", (int)(len < 32 ? len : 32), p);
	memcpy(item, p, len);
	item[len] = '\0';
	if (gpushare_parse_int(item, l->min, l->max, &v))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is out of range (expected %ld to %ld)", item, l->min, l->max);
	for (size_t j = 0; j < *l->n; j++) {
		if (l->out[j] == v)
			return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is listed twice", item);
	}
	if (*l->n >= GPUSHARE_SWEEP_MAX_VALUES)
		return gpushare_fail(GPUSHARE_E_INVAL, "more than %d values", GPUSHARE_SWEEP_MAX_VALUES);
	l->out[(*l->n)++] = v;
	return GPUSHARE_OK;
}

int gpushare_sweep_parse_int_list(const char *s, long min, long max, long *out, size_t *n)
{
	struct int_list l = { min, max, out, n };

	*n = 0;
	if (!s || !*s)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty list (expected e.g. 1,3,5)");
	return gpushare_each_item(s, ',', int_item, &l);
}

struct tpct_list {
	struct gpushare_sweep_tpct *out;
	size_t *n;
};

static int tpct_item(void *arg, const char *p, size_t len)
{
	struct tpct_list *l = arg;
	char item[32];
	struct gpushare_sweep_tpct v = { 0, false };

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
	for (size_t j = 0; j < *l->n; j++) {
		if (l->out[j].value == v.value && l->out[j].times == v.times)
			return gpushare_fail(GPUSHARE_E_INVAL, "'%.*s' is listed twice", (int)len, p);
	}
	if (*l->n >= GPUSHARE_SWEEP_MAX_VALUES)
		return gpushare_fail(GPUSHARE_E_INVAL, "more than %d values", GPUSHARE_SWEEP_MAX_VALUES);
	l->out[(*l->n)++] = v;
	return GPUSHARE_OK;
}

int gpushare_sweep_parse_thread_pcts(const char *s, struct gpushare_sweep_tpct *out, size_t *n)
{
	struct tpct_list l = { out, n };

	*n = 0;
	if (!s || !*s)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty list (expected e.g. 25,50,100 or 1x,2x,100)");
	if (!strcmp(s, "auto"))
		s = GPUSHARE_SWEEP_THREAD_PCTS_AUTO;
	return gpushare_each_item(s, ',', tpct_item, &l);
}

int gpushare_sweep_set_thread_pcts(struct gpushare_sweep_config *s, const char *text)
{
	int rc = gpushare_sweep_parse_thread_pcts(text, s->thread_pcts, &s->n_thread_pcts);

	s->thread_pcts_auto = !rc && !strcmp(text, "auto");
	return rc;
}

double gpushare_sweep_default_thread_pct(int workers)
{
	double share = floor(100.0 / (workers > 0 ? workers : 1));

	return share >= 1 ? share : 1;
}

double gpushare_sweep_cell_thread_pct(const struct gpushare_sweep_cell *cell)
{
	if (!gpushare_strategy_client_share(cell->strategy))
		return 0;
	if (cell->thread_pct > 0)
		return cell->thread_pct;
	if (cell->n_mix >= 2)
		return floor(100.0 / cell->n_mix);   /* a mix: the first workload's even share */
	return gpushare_sweep_default_thread_pct(cell->workers);
}

const char *gpushare_sweep_cell_thread_pct_text(const struct gpushare_sweep_cell *cell, char *buf, size_t len)
{
	if (cell->n_mix >= 2)
		return gpushare_bench_mix_split_text(cell->n_mix, gpushare_sweep_cell_thread_pct(cell), buf, len);
	snprintf(buf, len, "%g", gpushare_sweep_cell_thread_pct(cell));
	return buf;
}
