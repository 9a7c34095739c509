/*
 * How open-loop results print: the "open_loop" and "peak" objects of a
 * result in the JSON document (docs/bench-schema.json), the configuration's
 * open-loop fields, and the lines under a strategy's row in the table.
 * Called from lib/bench/bench_output.c.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>

#include "gpushare/bench.h"
#include "gpushare/format.h"
#include "json.h"
#include "openloop.h"

static bool quantiles(cJSON *parent, const char *k, double p50, double p99, double p999, double max, bool with_p999)
{
	cJSON *o = gpushare_json_obj(parent, k);

	return o && gpushare_json_num(o, "p50_seconds", p50) && gpushare_json_num(o, "p99_seconds", p99) &&
	       (!with_p999 || gpushare_json_num(o, "p999_seconds", p999)) && gpushare_json_num(o, "max_seconds", max);
}

static cJSON *open_json(const struct gpushare_bench_openloop *o)
{
	cJSON *j = cJSON_CreateObject();
	bool ok = j && gpushare_json_num(j, "rate_per_second", o->rate) &&
		  gpushare_json_num(j, "offered", (double)o->offered) &&
		  gpushare_json_num(j, "completed", (double)o->completed) &&
		  gpushare_json_num(j, "offered_per_second", o->offered_rate) &&
		  gpushare_json_num(j, "achieved_per_second", o->achieved_rate) &&
		  gpushare_json_num(j, "queued_at_end", (double)o->queued_at_end) &&
		  gpushare_json_num(j, "unfinished", (double)o->unfinished) &&
		  gpushare_json_num(j, "queue_max", (double)o->queue_max) &&
		  gpushare_json_num(j, "ring_full", (double)o->ring_full) &&
		  gpushare_json_num_if(j, "dispatcher_spinning", o->dispatch_spin_seconds / o->dispatch_seconds,
				       o->dispatch_seconds > 0) &&
		  gpushare_json_num_if(j, "dispatcher_slice_seconds", o->dispatch_slice_seconds,
				       o->dispatch_slice_seconds > 0) &&
		  gpushare_json_num(j, "drain_seconds", o->drain_seconds) &&
		  quantiles(j, "queue", o->queue_p50_seconds, o->queue_p99_seconds, 0, o->queue_max_seconds, false) &&
		  quantiles(j, "service", o->service_p50_seconds, o->service_p99_seconds, 0, o->service_max_seconds, false) &&
		  quantiles(j, "lateness", o->lateness_p50_seconds, o->lateness_p99_seconds, o->lateness_p999_seconds,
			    o->lateness_max_seconds, true);

	if (!ok) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

static cJSON *peak_json(const struct gpushare_bench_peak *p, const struct gpushare_bench_config *c)
{
	cJSON *j = cJSON_CreateObject(), *slo, *steps;
	bool ok = j && (slo = gpushare_json_obj(j, "slo")) != NULL &&
		  gpushare_json_num(slo, "quantile", c ? c->slo_quantile : 0) &&
		  gpushare_json_num(slo, "bound_seconds", c ? (double)c->slo_ns / 1e9 : 0) &&
		  gpushare_json_bool(j, "found", p->found) &&
		  gpushare_json_num_if(j, "rate_per_second", p->rate, p->found) &&
		  gpushare_json_num_if(j, "missed_at_per_second", p->upper, p->upper > 0) &&
		  gpushare_json_num(j, "resolution", c ? c->resolution : 0) &&
		  gpushare_json_num(j, "min_requests_per_step", (double)p->min_requests) &&
		  gpushare_json_num(j, "repeated_steps", p->repeated) &&
		  gpushare_json_str_or_null(j, "note", p->note) &&
		  (steps = gpushare_json_arr(j, "steps")) != NULL;

	for (int i = 0; ok && i < p->n_steps; i++) {
		const struct gpushare_peak_step *s = &p->steps[i];
		cJSON *o = gpushare_json_obj(steps, NULL);

		ok = gpushare_json_num(o, "rate_per_second", s->rate) &&
		     gpushare_json_bool(o, "pass", s->pass) &&
		     gpushare_json_num_if(o, "quantile_seconds", s->quantile_seconds, s->quantile_seconds >= 0) &&
		     gpushare_json_num(o, "achieved_per_second", s->achieved_rate) &&
		     gpushare_json_num(o, "offered", (double)s->offered) &&
		     gpushare_json_num(o, "unfinished", (double)s->unfinished) &&
		     gpushare_json_bool(o, "failed_run", s->failed_run);
	}
	if (!ok) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

bool gpushare_openloop_json_result(struct cJSON *o, const struct gpushare_bench_result *res,
				   const struct gpushare_bench_config *c)
{
	/* Only an ok result has figures: a failed or skipped one has null. */
	return gpushare_json_add(o, "open_loop", res->open.on && res->status == GPUSHARE_RESULT_OK
							 ? open_json(&res->open)
							 : cJSON_CreateNull()) &&
	       gpushare_json_add(o, "peak", res->peak.searched ? peak_json(&res->peak, c) : cJSON_CreateNull());
}

bool gpushare_openloop_json_config(struct cJSON *o, const struct gpushare_bench_config *c)
{
	bool open = c->load == GPUSHARE_LOAD_OPEN;

	return gpushare_json_str(o, "load", gpushare_load_name(c->load)) &&
	       gpushare_json_num_if(o, "rate_per_second", c->rate, open) &&
	       gpushare_json_str(o, "arrival", open ? gpushare_arrival_name(c->arrival) : NULL) &&
	       gpushare_json_num_if(o, "seed", (double)c->seed, open) &&
	       gpushare_json_str(o, "dispatch", open ? gpushare_dispatch_name(c->dispatch) : NULL) &&
	       gpushare_json_bool(o, "find_peak", c->find_peak);
}

static const char *fmt_s(double s, char *buf, size_t len)
{
	return gpushare_fmt_seconds(s > 0 ? s : 0, buf, len);
}

static const char *fmt_r(double v, char *buf, size_t len)
{
	return gpushare_fmt_si(v > 0 ? v : 0, buf, len);
}

void gpushare_openloop_table(FILE *f, const struct gpushare_bench_result *res, const struct gpushare_bench_config *c)
{
	const struct gpushare_bench_openloop *o = &res->open;
	const struct gpushare_bench_peak *p = &res->peak;
	char a[24], b[24], d[24], e[24], g[24], h[24], q[48];

	if (!o->on)
		return;
	/* Only an ok result has figures; the failure line says why not. */
	if (res->status == GPUSHARE_RESULT_OK) {
		fprintf(f, "  open loop: offered %s/s (asked %s/s), achieved %s/s; queued at the end %" PRIu64
			", unserved %" PRIu64 ", deepest queue %" PRIu64 "\n",
			fmt_r(o->offered_rate, a, sizeof(a)), fmt_r(o->rate, b, sizeof(b)),
			fmt_r(o->achieved_rate, d, sizeof(d)), o->queued_at_end, o->unfinished, o->queue_max);
		fprintf(f, "  latency from the scheduled arrival = queueing p50 %s p99 %s + service p50 %s p99 %s; "
			"hand-over late p99 %s p99.9 %s\n",
			fmt_s(o->queue_p50_seconds, a, sizeof(a)), fmt_s(o->queue_p99_seconds, b, sizeof(b)),
			fmt_s(o->service_p50_seconds, d, sizeof(d)), fmt_s(o->service_p99_seconds, e, sizeof(e)),
			fmt_s(o->lateness_p99_seconds, g, sizeof(g)), fmt_s(o->lateness_p999_seconds, h, sizeof(h)));
	}
	if (!p->searched || !c)
		return;
	if (p->found)
		fprintf(f, "  peak within %s <= %s: %s/s", gpushare_fmt_percentile(c->slo_quantile, q, sizeof(q)),
			fmt_s((double)c->slo_ns / 1e9, a, sizeof(a)), fmt_r(p->rate, b, sizeof(b)));
	else
		fprintf(f, "  peak within %s <= %s: none found", gpushare_fmt_percentile(c->slo_quantile, q, sizeof(q)),
			fmt_s((double)c->slo_ns / 1e9, a, sizeof(a)));
	if (p->upper > 0)
		fprintf(f, " (missed at %s/s)", fmt_r(p->upper, a, sizeof(a)));
	fprintf(f, "; %d steps of >= %" PRIu64 " requests", p->n_steps, p->min_requests);
	if (p->repeated)
		fprintf(f, " (%d run again: gpushare handed arrivals over late)", p->repeated);
	fprintf(f, "%s%s\n", p->note[0] ? "; " : "", p->note);
}
