/*
 * A mix of workloads in one run (`--workload A+B`, docs/bench.md, "A mix of
 * workloads"): the workload specs, which worker runs which member, the
 * members' shares of the GPU under mps-split, and the figures per member
 * with the score a mix is compared by (the geometric mean of the members'
 * items/s: each member's speedup weighs the same whatever its unit).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/bench.h"
#include "gpushare/buf.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "gpushare/utf8.h"

#include "bench_mix.h"
#include "items.h"
#include "strategy.h"

struct spec_walk {
	struct gpushare_wl_params *p;
	const struct gpushare_wl_desc *d; /* NULL before the name */
	char seen[GPUSHARE_BENCH_MIX_LABEL]; /* ":opt" for each option so far, then ':' */
};

/* The spec's first item is the workload's name; each later one opt=value. */
static int spec_item(void *arg, const char *s, size_t len)
{
	struct spec_walk *w = arg;
	char item[GPUSHARE_BENCH_MIX_LABEL], key[GPUSHARE_BENCH_MIX_LABEL + 2], *eq;
	int rc;

	memcpy(item, s, len); /* len < strlen(spec) < sizeof(item) */
	item[len] = '\0';
	if (!w->d) {
		w->d = gpushare_workload_find(item);
		if (!w->d)
			return gpushare_fail(GPUSHARE_E_INVAL, "unknown workload '%s'", item);
		return gpushare_wl_params_init(w->p, w->d);
	}
	eq = strchr(item, '=');
	if (!eq || eq == item || !eq[1])
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not opt=value", item);
	*eq = '\0';
	snprintf(key, sizeof(key), ":%s:", item);
	if (strstr(w->seen, key))
		return gpushare_fail(GPUSHARE_E_INVAL, "option '%s' is given twice", item);
	gpushare_str_catf(w->seen, sizeof(w->seen), "%s", key + 1);
	rc = gpushare_wl_params_set(w->p, item, eq + 1);
	if (rc == GPUSHARE_E_NOT_FOUND)
		return gpushare_fail(GPUSHARE_E_INVAL, "workload '%s' has no option '%s'", w->d->name, item);
	return rc ? GPUSHARE_E_INVAL : GPUSHARE_OK;
}

int gpushare_bench_parse_workload_spec(const char *spec, struct gpushare_wl_params *p)
{
	struct spec_walk w = { .p = p, .seen = ":" };
	char what[GPUSHARE_BENCH_MIX_LABEL + 16];

	if (!spec || !*spec)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty workload");
	if (strlen(spec) >= GPUSHARE_BENCH_MIX_LABEL)
		return gpushare_fail(GPUSHARE_E_INVAL, "workload '%.40s...' is too long", spec);
	snprintf(what, sizeof(what), "workload '%s'", spec);
	return gpushare_each_item_named(what, spec, ':', spec_item, &w);
}

/* Where gpushare_bench_parse_mix puts the members. */
struct mix_items {
	const char *spec;
	struct gpushare_bench_mix_member *m;
	int n;
};

static int mix_item(void *arg, const char *p, size_t len)
{
	struct mix_items *x = arg;
	struct gpushare_bench_mix_member *m = &x->m[x->n];

	if (x->n >= GPUSHARE_BENCH_MAX_MIX)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' mixes more than %d workloads", x->spec, GPUSHARE_BENCH_MAX_MIX);
	if (len >= sizeof(m->label))
		return gpushare_fail(GPUSHARE_E_INVAL, "workload '%.40s...' is too long", p);
	memset(m, 0, sizeof(*m));
	memcpy(m->label, p, len);
	m->label[len] = '\0';
	x->n++;
	return gpushare_bench_parse_workload_spec(m->label, &m->wl);
}

int gpushare_bench_parse_mix(const char *spec, struct gpushare_bench_mix_member *m, int *n_out)
{
	struct mix_items x = { spec, m, 0 };
	int rc;

	*n_out = 0;
	if (!spec || !*spec)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty workload");
	rc = gpushare_each_item(spec, '+', mix_item, &x);
	if (rc)
		return rc;
	*n_out = x.n;
	return GPUSHARE_OK;
}

int gpushare_bench_set_workload(struct gpushare_bench_config *c, const char *spec)
{
	struct gpushare_bench_mix_member m[GPUSHARE_BENCH_MAX_MIX];
	long batch = c->wl.batch;
	int n, rc = gpushare_bench_parse_mix(spec, m, &n);

	if (rc)
		return rc;
	c->wl = m[0].wl;
	c->wl.batch = batch;
	memset(c->mix, 0, sizeof(c->mix));
	c->n_mix = 0;
	if (n > 1) {
		memcpy(c->mix, m, sizeof(m[0]) * (size_t)n);
		c->n_mix = n;
	}
	return GPUSHARE_OK;
}

int gpushare_bench_set_wl_option(struct gpushare_bench_config *c, const char *name, const char *value)
{
	int set = 0, rc;

	if (c->n_mix < 2) {
		rc = gpushare_wl_params_set_unless_given(&c->wl, c->wl.desc ? c->wl.desc->name : "", name, value);
		if (rc < 0 || rc > 1)
			return rc;
		if (rc == 0)
			return gpushare_fail(GPUSHARE_E_NOT_FOUND, "workload '%s' has no option '%s'",
					     c->wl.desc ? c->wl.desc->name : "", name);
		return GPUSHARE_OK;
	}
	for (int i = 0; i < c->n_mix; i++) {
		rc = gpushare_wl_params_set_unless_given(&c->mix[i].wl, c->mix[i].label, name, value);
		if (rc != 0 && rc != 1)
			return rc;
		set += rc;
	}
	if (!set)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "no workload of the mix has option '%s'", name);
	{
		long batch = c->wl.batch;

		c->wl = c->mix[0].wl;
		c->wl.batch = batch;
	}
	return GPUSHARE_OK;
}

const char *gpushare_bench_workload_label(const struct gpushare_bench_config *c, char *buf, size_t size)
{
	size_t len = 0;

	if (!size)
		return "";
	buf[0] = '\0';
	if (c->command) {
		snprintf(buf, size, "command");
		return buf;
	}
	if (c->n_mix < 2) {
		snprintf(buf, size, "%s", c->wl.desc ? c->wl.desc->name : "");
		return buf;
	}
	for (int i = 0; i < c->n_mix && len < size; i++) {
		int k = snprintf(buf + len, size - len, "%s%s", i ? "+" : "", c->mix[i].label);

		if (k < 0)
			break;
		len += (size_t)k;
	}
	if (len >= size)
		buf[gpushare_utf8_cut(buf, size - 1)] = '\0';
	return buf;
}

int gpushare_bench_mix_member_of(int n_mix, int workers, int i)
{
	int per;

	if (n_mix < 2 || workers < n_mix)
		return 0;
	per = workers / n_mix;
	return i / per < n_mix ? i / per : n_mix - 1;
}

void gpushare_bench_mix_thread_percentages(const struct gpushare_bench_config *c, double *out)
{
	int per = c->n_mix >= 2 && c->workers >= c->n_mix ? c->workers / c->n_mix : 1;

	for (int i = 0; i < c->workers; i++) {
		int m = gpushare_bench_mix_member_of(c->n_mix, c->workers, i);
		double share = m < c->n_mix_share ? c->mix_share[m] : 100.0 / (c->n_mix ? c->n_mix : 1);
		double v = floor(share / per);

		out[i] = v >= 1 ? v : 1;
	}
}

/* Where gpushare_bench_parse_mix_shares puts the shares. */
struct share_items {
	const char *s;
	int n_mix, n;
	double *out;
};

static int share_item(void *arg, const char *p, size_t len)
{
	struct share_items *x = arg;
	char item[32];

	if (x->n >= x->n_mix)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' has more shares than the %d workloads of the mix", x->s, x->n_mix);
	if (len >= sizeof(item))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a split such as 30/70", x->s);
	memcpy(item, p, len);
	item[len] = '\0';
	return gpushare_parse_percent(item, &x->out[x->n++]);
}

int gpushare_bench_parse_mix_shares(const char *s, int n_mix, double *out, int *n)
{
	struct share_items x = { s, n_mix, 0, out };
	int rc;

	*n = 0;
	if (n_mix < 2)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s': shares separated by '/' split the GPU between the workloads "
				     "of a mix (--workload A+B); give one percentage or one per worker", s);
	rc = gpushare_each_item(s, '/', share_item, &x);
	if (rc)
		return rc;
	if (x.n != n_mix)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' has %d shares for a mix of %d workloads", s, x.n, n_mix);
	*n = x.n;
	return GPUSHARE_OK;
}

int bench_mix_check(const struct gpushare_bench_config *c)
{
	if (c->n_mix < 2) {
		if (c->n_mix_share)
			return gpushare_fail(GPUSHARE_E_INVAL, "--thread-percentage with '/' splits a mix: give --workload A+B");
		return GPUSHARE_OK;
	}
	if (c->command)
		return gpushare_fail(GPUSHARE_E_INVAL, "a mix runs built-in workloads, not a command");
	if (c->workers % c->n_mix)
		return gpushare_fail(GPUSHARE_E_INVAL, "--workers %d does not divide among the %d workloads of the mix "
				     "(give a multiple of %d)", c->workers, c->n_mix, c->n_mix);
	if (c->ceiling)
		return gpushare_fail(GPUSHARE_E_INVAL, "--ceiling runs one workload in one process; it does not apply to a mix");
	if (c->load == GPUSHARE_LOAD_OPEN)
		return gpushare_fail(GPUSHARE_E_INVAL, "a mix is measured in closed loop (open-loop arrivals would go to "
				     "whichever workload is free)");
	for (size_t i = 0; i < c->n_strategies; i++) {
		if (!gpushare_strategy_runs_commands(c->strategies[i]))
			return gpushare_fail(GPUSHARE_E_INVAL, "streams runs every worker in one process of one workload; "
					     "it does not apply to a mix");
		if (gpushare_strategy_partitions(c->strategies[i]) && !c->workers_given)
			return gpushare_fail(GPUSHARE_E_INVAL, "a mix on mig needs --workers (a multiple of %d): mig's own "
					     "count, one worker per MIG instance, need not divide among the workloads",
					     c->n_mix);
	}
	if (c->n_mix_share && c->n_thread_percentage)
		return gpushare_fail(GPUSHARE_E_INVAL, "--thread-percentage: give a split (30/70) or per-worker values, "
				     "not both");
	for (int i = 0; i < c->n_mix; i++) {
		struct gpushare_wl_params p = c->mix[i].wl;

		p.batch = c->wl.batch;
		if (gpushare_wl_params_check(&p))
			return gpushare_fail(GPUSHARE_E_INVAL, "workload '%s': %s", c->mix[i].label, gpushare_errdetail());
	}
	return GPUSHARE_OK;
}

/* The workers' totals (bench_mix.h): the aggregate's (bench.c) and each
 * member's. */
void bench_span_sum(const struct gpushare_bench_result *res, size_t first, size_t last, struct bench_span *s,
		    struct gpushare_hist *hist)
{
	const struct gpushare_strategy_ops *st = gpushare_strategy_get(res->strategy);
	double min_tp = INFINITY, max_tp = 0, window_sum = 0, window_max = 0;

	memset(s, 0, sizeof(*s));
	s->thread_percentage_set = -1;
	gpushare_hist_init(hist);
	for (size_t i = first; i < last && i < res->n_workers; i++) {
		const struct gpushare_bench_worker *w = &res->workers[i];

		s->requests += w->requests;
		s->items += w->items;
		window_sum += w->window_seconds;
		if (w->window_seconds > window_max)
			window_max = w->window_seconds;
		if (w->requests_per_second < min_tp)
			min_tp = w->requests_per_second;
		if (w->requests_per_second > max_tp)
			max_tp = w->requests_per_second;
		if (w->thread_percentage_set > 0)
			s->thread_percentage_set = (s->thread_percentage_set > 0 ? s->thread_percentage_set : 0) +
						   w->thread_percentage_set;
		gpushare_hist_merge(hist, &w->hist);
	}
	/* Workers run one at a time (sequential) each had the GPU alone for
	 * their own window: the total is over the sum. Concurrent workers
	 * shared one window (the longest, in requests mode). */
	s->window_seconds = st && st->layout == GPUSHARE_LAYOUT_ONE_AT_A_TIME ? window_sum : window_max;
	s->fairness = max_tp > 0 ? min_tp / max_tp : 0;
}

/* The workers pinned to GPU g of --gpus (bench_mix.h). */
void bench_gpu_sum(const struct gpushare_bench_report *r, const struct gpushare_bench_result *res, size_t g,
		   size_t *workers, double *rps, double *ips)
{
	*workers = 0;
	*rps = *ips = 0;
	for (size_t i = 0; i < res->n_workers; i++) {
		if (strcmp(res->workers[i].visible_devices, r->gpu_uuids[g]) != 0)
			continue;
		(*workers)++;
		*rps += res->workers[i].requests_per_second;
		*ips += res->workers[i].items_per_second;
	}
}

void bench_mix_compute(struct gpushare_bench_result *res)
{
	int n = res->n_mix;

	res->mix_score = 0;
	if (n < 2 || res->n_workers < (size_t)n)
		return;
	for (int m = 0; m < n; m++) {
		struct gpushare_bench_mix_result *r = &res->mix[m];
		size_t per = res->n_workers / (size_t)n;
		/* Its block of workers (gpushare_bench_mix_member_of: the last takes any rest). */
		size_t last = m == n - 1 ? res->n_workers : (size_t)(m + 1) * per;
		struct bench_span s;
		struct gpushare_hist h;

		bench_span_sum(res, (size_t)m * per, last, &s, &h);
		r->requests = s.requests;
		r->items = s.items;
		r->items_per_second = s.window_seconds > 0 ? (double)s.items / s.window_seconds : 0;
		r->requests_per_second = s.window_seconds > 0 ? (double)s.requests / s.window_seconds : 0;
		r->fairness = s.fairness;
		r->thread_percentage_set = s.thread_percentage_set;
		r->p50_seconds = h.count ? (double)gpushare_hist_quantile(&h, 0.50) / 1e9 : 0;
		r->p99_seconds = h.count ? (double)gpushare_hist_quantile(&h, 0.99) / 1e9 : 0;
	}
	{
		double log_sum = 0;
		bool zero = false;

		for (int m = 0; m < n; m++) {
			if (!(res->mix[m].items_per_second > 0))
				zero = true;
			else
				log_sum += log(res->mix[m].items_per_second);
		}
		res->mix_score = zero ? 0 : exp(log_sum / n);
	}
}

double gpushare_bench_result_score(const struct gpushare_bench_result *res)
{
	return res->n_mix >= 2 ? res->mix_score : res->items_per_second;
}

int gpushare_bench_mix_count(const char *label)
{
	int n = 1;

	if (label && !strncmp(label, "command:", 8))
		return 1;   /* a sweep's command shape: its '+' are the command's */
	for (const char *p = label; p && *p; p++)
		n += *p == '+';
	return n;
}

void gpushare_bench_mix_shares(int n_mix, double first, double *out)
{
	double rest = n_mix > 1 ? floor((100.0 - first) / (n_mix - 1)) : 0;

	out[0] = first;
	for (int m = 1; m < n_mix; m++)
		out[m] = rest >= 1 ? rest : 1;
}

const char *gpushare_bench_mix_split_text(int n_mix, double first, char *buf, size_t size)
{
	double v[GPUSHARE_BENCH_MAX_MIX];
	size_t len = 0;

	if (n_mix > GPUSHARE_BENCH_MAX_MIX)
		n_mix = GPUSHARE_BENCH_MAX_MIX;
	gpushare_bench_mix_shares(n_mix, first, v);
	buf[0] = '\0';
	for (int m = 0; m < n_mix && len < size; m++) {
		int k = snprintf(buf + len, size - len, "%s%g", m ? "/" : "", v[m]);

		if (k < 0)
			break;
		len += (size_t)k;
	}
	return buf;
}
