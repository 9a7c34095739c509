/*
 * Repeated benchmark runs (`gpushare bench --repeats K`): K runs of every
 * configured strategy, interleaved as the sweep does (repeat 0 of each
 * strategy in order, then repeat 1, ...), so a slow drift of the machine
 * spreads over all strategies alike; then per strategy the spread over its
 * OK runs (mean +- standard deviation, min...max, the median with its
 * order-statistic interval) and the comparisons the table and the JSON
 * summary print. Each repeat is one gpushare_bench_run() with the whole
 * configuration.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/stats.h"

/* Errors that concern one run (a worker): the next repeat may well work.
 * Anything else (no driver, no MPS, a directory) would fail every repeat. */
static bool run_error_passes(int rc)
{
	return rc == GPUSHARE_E_WORKER || rc == GPUSHARE_E_MPS_MAX_CLIENTS || rc == GPUSHARE_E_TIMEOUT ||
	       rc == GPUSHARE_E_CUDA;
}

struct repeat_progress {
	gpushare_bench_progress_fn fn;
	void *arg;
	int repeat, n_repeats;
};

static void forward_progress(void *arg, const struct gpushare_bench_progress *p)
{
	struct repeat_progress *rp = arg;
	struct gpushare_bench_progress q = *p;

	q.repeat = rp->repeat;
	q.n_repeats = rp->n_repeats;
	rp->fn(rp->arg, &q);
}

/* Move the results of one run into r, stamped with their repeat. */
static int gather(struct gpushare_bench_report *r, struct gpushare_bench_report *one, int repeat)
{
	struct gpushare_bench_result *nr;

	if (one->n_results) {
		nr = realloc(r->results, (r->n_results + one->n_results) * sizeof(*nr));
		if (!nr)
			return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate results");
		r->results = nr;
		for (size_t i = 0; i < one->n_results; i++) {
			nr[r->n_results] = one->results[i];
			nr[r->n_results].repeat = repeat;
			r->n_results++;
		}
		free(one->results);
		one->results = NULL;
		one->n_results = 0;
	}
	if (!r->ceiling && one->ceiling) {
		r->ceiling = one->ceiling;
		one->ceiling = NULL;
	}
	if (repeat == 0) {
		memcpy(r->version, one->version, sizeof(r->version));
		memcpy(r->date, one->date, sizeof(r->date));
		memcpy(r->host, one->host, sizeof(r->host));
		r->gpu_index = one->gpu_index;
		memcpy(r->gpu_name, one->gpu_name, sizeof(r->gpu_name));
		memcpy(r->gpu_uuid, one->gpu_uuid, sizeof(r->gpu_uuid));
		memcpy(r->driver_version, one->driver_version, sizeof(r->driver_version));
		r->n_gpus = one->n_gpus; /* --gpus */
		memcpy(r->gpu_indices, one->gpu_indices, sizeof(r->gpu_indices));
		memcpy(r->gpu_uuids, one->gpu_uuids, sizeof(r->gpu_uuids));
	}
	r->partial |= one->partial;
	r->interrupted |= one->interrupted;
	/* Preloaded only when every repeat was. */
	r->preloaded = one->preloaded && (repeat == 0 || r->preloaded);
	return GPUSHARE_OK;
}

/* Every strategy's median items/s known to +-noise at >= 95% coverage. */
static bool converged(const struct gpushare_bench_report *r, double noise)
{
	for (size_t i = 0; i < r->n_summary; i++) {
		const struct gpushare_ci *ci = &r->summary[i].items_per_second.median;

		if (r->summary[i].n_ok == 0)
			continue; /* nothing to converge: it failed every time */
		if (ci->coverage < GPUSHARE_SIGNIFICANCE || gpushare_ci_rel_halfwidth(ci) > noise)
			return false;
	}
	return true;
}

int gpushare_bench_run_repeats(const struct gpushare_bench_config *c, const struct gpushare_bench_repeat_opts *o,
			       struct gpushare_bench_report *r)
{
	struct gpushare_bench_config *cc = malloc(sizeof(*cc));
	struct repeat_progress rp = { 0 };
	int k_min = o->repeats > 0 ? o->repeats : 1;
	int k_max = o->target_noise > 0 && o->max_repeats > k_min ? o->max_repeats : k_min;
	int first = GPUSHARE_OK, rc = GPUSHARE_OK;
	char detail[512] = "";

	gpushare_bench_report_init(r, c);
	if (!cc)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	*cc = *c;
	if (c->progress) {
		rp.fn = c->progress;
		rp.arg = c->progress_arg;
		rp.n_repeats = k_min;
		cc->progress = forward_progress;
		cc->progress_arg = &rp;
	}
	for (int k = 0; k < k_max; k++) {
		struct gpushare_bench_report one;
		int grc;

		if (k >= k_min) {
			if (o->target_noise <= 0 || converged(r, o->target_noise))
				break;
			rp.n_repeats = k + 1;
		}
		if (gpushare_bench_interrupted()) {
			rc = gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted");
			break;
		}
		rp.repeat = k;
		rc = gpushare_bench_run(cc, &one);
		one.config = c;
		grc = gpushare_bench_report_settle(&one, rc);
		if (rc && !first) {
			first = rc;
			snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		}
		if (!grc)
			grc = gather(r, &one, k);
		gpushare_bench_report_release(&one);
		r->repeats = k + 1;
		if (!grc)
			grc = gpushare_bench_summarise(r);
		if (grc) {
			rc = grc;
			break;
		}
		if (rc == GPUSHARE_E_INTERRUPTED || (rc && !run_error_passes(rc)))
			break;
	}
	free(cc);
	if (rc == GPUSHARE_E_INTERRUPTED) {
		r->interrupted = true;
		return rc;
	}
	if (first)
		return gpushare_fail(first, "%s", detail);
	return rc;
}

/* ---- the spread of each strategy ---- */

enum { F_ITEMS, F_REQS, F_MEAN, F_P50, F_P90, F_P99, F_P999, F_FAIR, F_EFF, N_FIGURES };

static double figure(const struct gpushare_bench_result *res, int f)
{
	switch (f) {
	case F_ITEMS: return gpushare_bench_result_score(res);   /* a mix: its score */
	case F_REQS: return res->requests_per_second;
	case F_MEAN: return res->mean_seconds;
	case F_P50: return res->p50_seconds;
	case F_P90: return res->p90_seconds;
	case F_P99: return res->p99_seconds;
	case F_P999: return res->p999_seconds;
	case F_FAIR: return res->fairness;
	default: return res->efficiency;
	}
}

static struct gpushare_sample_stats *figure_stats(struct gpushare_bench_summary *s, int f)
{
	switch (f) {
	case F_ITEMS: return &s->items_per_second;
	case F_REQS: return &s->requests_per_second;
	case F_MEAN: return &s->mean_seconds;
	case F_P50: return &s->p50_seconds;
	case F_P90: return &s->p90_seconds;
	case F_P99: return &s->p99_seconds;
	case F_P999: return &s->p999_seconds;
	case F_FAIR: return &s->fairness;
	default: return &s->efficiency;
	}
}

static void summarise_one(const struct gpushare_bench_report *r, struct gpushare_bench_summary *s, double *buf)
{
	const struct gpushare_bench_result *last = NULL;

	for (int f = 0; f < N_FIGURES; f++) {
		size_t n = 0;

		s->n_runs = 0;
		for (size_t i = 0; i < r->n_results; i++) {
			const struct gpushare_bench_result *res = &r->results[i];

			if (res->strategy != s->strategy)
				continue;
			s->n_runs++;
			last = res;
			if (res->status != GPUSHARE_RESULT_OK)
				continue;
			if (f == F_EFF && res->efficiency < 0)
				continue;
			buf[n++] = figure(res, f);
		}
		gpushare_sample_stats(buf, n, figure_stats(s, f));
		if (f == F_ITEMS)
			s->n_ok = n;
	}
	s->status = s->n_ok ? GPUSHARE_RESULT_OK : last ? last->status : GPUSHARE_RESULT_SKIPPED;
	s->reason[0] = '\0';
	if (!s->n_ok && last)
		snprintf(s->reason, sizeof(s->reason), "%s", last->failure);
}

int gpushare_bench_summarise(struct gpushare_bench_report *r)
{
	enum gpushare_strategy strat[GPUSHARE_STRATEGY_COUNT];
	size_t ns = 0;
	double *buf;

	if (r->config) {
		for (size_t i = 0; i < r->config->n_strategies && i < GPUSHARE_STRATEGY_COUNT; i++)
			strat[ns++] = r->config->strategies[i];
	} else {
		for (size_t i = 0; i < r->n_results; i++) {
			bool seen = false;

			for (size_t j = 0; j < ns; j++)
				seen |= strat[j] == r->results[i].strategy;
			if (!seen && ns < GPUSHARE_STRATEGY_COUNT)
				strat[ns++] = r->results[i].strategy;
		}
	}
	free(r->summary);
	r->summary = calloc(ns ? ns : 1, sizeof(*r->summary));
	buf = malloc((r->n_results ? r->n_results : 1) * sizeof(*buf));
	if (!r->summary || !buf) {
		free(buf);
		r->n_summary = 0;
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	r->n_summary = ns;
	for (size_t i = 0; i < ns; i++) {
		r->summary[i].strategy = strat[i];
		summarise_one(r, &r->summary[i], buf);
	}
	free(buf);
	return GPUSHARE_OK;
}

void gpushare_bench_relative(const struct gpushare_bench_summary *a, const struct gpushare_bench_summary *b,
			     struct gpushare_bench_relative *out)
{
	const struct gpushare_sample_stats *x = &a->items_per_second, *y = &b->items_per_second;

	memset(out, 0, sizeof(*out));
	out->strategy = a->strategy;
	out->reference = b->strategy;
	out->ratio_mean = out->ratio_stddev = NAN;
	if (x->n && y->n && y->mean > 0) {
		out->ratio_mean = x->mean / y->mean;
		/* Propagated as hyperfine does: relative variances add. */
		if (x->n >= 2 && y->n >= 2 && x->mean > 0)
			out->ratio_stddev = out->ratio_mean * sqrt(pow(x->stddev / x->mean, 2) + pow(y->stddev / y->mean, 2));
	}
	gpushare_compare(&x->median, &y->median, &out->throughput);
	gpushare_compare(&a->p99_seconds.median, &b->p99_seconds.median, &out->p99);
}

/* Timeslice by name: the reference is a choice of baseline (what a GPU
 * does with no sharing set up), not something a strategy can do, so the
 * strategy table has no flag for it. */
int gpushare_bench_reference(const struct gpushare_bench_report *r)
{
	for (size_t i = 0; i < r->n_summary; i++) {
		if (r->summary[i].strategy == GPUSHARE_STRATEGY_TIMESLICE && r->summary[i].n_ok)
			return (int)i;
	}
	for (size_t i = 0; i < r->n_summary; i++) {
		if (r->summary[i].n_ok)
			return (int)i;
	}
	return -1;
}
