/*
 * The calibration of K (farm_calib.h): rounds at doubling K, each one's
 * rate from its first start to its last end.
 */
#include <string.h>

#include "farm_calib.h"

#define N_ROUNDS(r) (sizeof((r)->calibration) / sizeof((r)->calibration[0]))

static void round_begin(struct farm_calib *cb, unsigned k)
{
	cb->quota = 2ULL * k * cb->n_gpus;
	cb->started = cb->ended = cb->ok = 0;
	cb->t0_ns = cb->last_end_ns = 0;
}

void farm_calib_begin(struct farm_calib *cb, unsigned k, unsigned max_k, size_t n_gpus, unsigned min_mem_cap)
{
	memset(cb, 0, sizeof(*cb));
	cb->on = true;
	cb->max_k = max_k;
	cb->n_gpus = n_gpus;
	cb->min_mem_cap = min_mem_cap;
	round_begin(cb, k);
}

bool farm_calib_full(const struct farm_calib *cb)
{
	return cb->on && cb->started >= cb->quota;
}

void farm_calib_started(struct farm_calib *cb, uint64_t start_ns)
{
	if (!cb->on)
		return;
	if (!cb->started)
		cb->t0_ns = start_ns;
	cb->started++;
}

void farm_calib_ended(struct farm_calib *cb, uint64_t end_ns, bool ok)
{
	if (!cb->on)
		return;
	cb->ended++;
	if (ok) {
		cb->ok++;
		cb->last_end_ns = end_ns;
	}
}

bool farm_calib_due(const struct farm_calib *cb, unsigned running, uint64_t queued)
{
	return cb->on && running == 0 && (cb->started >= cb->quota || (!queued && cb->started));
}

unsigned farm_calib_step(struct farm_calib *cb, unsigned k, struct gpushare_farm_result *r)
{
	double span = cb->last_end_ns > cb->t0_ns ? (double)(cb->last_end_ns - cb->t0_ns) / 1e9 : 0;
	double rate = span > 0 && cb->ok ? (double)cb->ok / span : 0;
	bool complete = cb->started >= cb->quota;
	bool settle = false;

	if (r->n_calibration < N_ROUNDS(r)) {
		r->calibration[r->n_calibration].slots = k;
		r->calibration[r->n_calibration].jobs_per_s = rate;
		r->calibration[r->n_calibration].jobs = cb->ok;
		r->n_calibration++;
	}
	if (!cb->ok || rate <= 0) {
		/* Nothing to rate K by: keep what was measured, or this K
		 * unmeasured. */
		settle = true;
		if (!cb->best_k) {
			cb->best_k = k;
			r->calibration_failed = true;
		}
	} else if (!cb->best_k || rate >= cb->best_rate * CALIBRATION_GAIN) {
		cb->best_k = k;
		cb->best_rate = rate;
	} else {
		settle = true;  /* no gain from the larger K */
	}
	if (!complete || k * 2 > cb->max_k || r->n_calibration >= N_ROUNDS(r))
		settle = true;
	if (cb->min_mem_cap <= k)
		settle = true; /* memory admits no more */
	if (settle) {
		cb->on = false;
		r->slots = cb->best_k;
		return cb->best_k;
	}
	round_begin(cb, k * 2);
	return k * 2;
}

unsigned farm_calib_finish(struct farm_calib *cb, unsigned k, struct gpushare_farm_result *r)
{
	if (!cb->on)
		return k;
	cb->on = false;
	if (cb->ended)
		k = farm_calib_step(cb, k, r);
	cb->on = false;
	if (cb->best_k)
		k = r->slots = cb->best_k;
	return k;
}
