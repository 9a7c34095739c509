/*
 * gpushare plan: the decision. From a summarised report (the loader and
 * summariser of lib/report/), pick the cell the measurements support for
 * the goal, check that the target can express it, and gather the sentences
 * of the comment block every output begins with; then hand the plan to its
 * target's writer (plan_internal.h).
 *
 * No strategy is named here: what a plan carries follows from what its
 * strategy is (gpushare/strategy.h). A strategy that shares a GPU is planned
 * (sequential, streams and the ceiling are references); one that partitions
 * the GPU (mig) is a layout, written by a layout target (mig-parted), any
 * other a share, written by the other targets, as time-slicing or, when it
 * uses MPS, as MPS. Its own per-client share (mps-split) is read back from
 * its runs, a layout from the devices its runs saw, and an MPS memory limit
 * derived for a strategy that uses MPS.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpushare/bench.h"
#include "gpushare/buf.h"
#include "gpushare/files.h"
#include "gpushare/format.h"
#include "gpushare/gpushare.h"
#include "gpushare/stats.h"
#include "gpushare/strategy.h"
#include "gpushare/workload.h"
#include "json.h"
#include "gpushare/internal/plan.h"
#include "plan_internal.h"
#include "report_internal.h"

static void warn(struct gpushare_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void device_plugin_warn(const struct gpushare_report *r, const struct gpushare_report_rec *rec,
			       struct gpushare_plan *p);
static void slurm_warn(const struct gpushare_report *r, const struct gpushare_report_rec *rec, struct gpushare_plan *p);

/* The targets: each writes either a GPU layout (the strategies that
 * partition a GPU) or a share of whole GPUs (the other sharing strategies),
 * by its writer; some warn of what they cannot carry over. */
static const struct plan_target {
	const char *name;
	bool layout;                    /* a layout: expresses only the strategies that partition */
	int (*render)(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
		      struct gpushare_plan_output *out);
	/* NULL: nothing to warn of. */
	void (*warn)(const struct gpushare_report *r, const struct gpushare_report_rec *rec, struct gpushare_plan *p);
} targets[GPUSHARE_PLAN_TARGET_COUNT] = {
	[GPUSHARE_PLAN_SLURM] = { "slurm", false, plan_render_slurm, slurm_warn },
	[GPUSHARE_PLAN_K8S_DEVICE_PLUGIN] = { "k8s-device-plugin", false, plan_render_device_plugin, device_plugin_warn },
	[GPUSHARE_PLAN_K8S_DRA] = { "k8s-dra", false, plan_render_dra, NULL },
	[GPUSHARE_PLAN_MIG_PARTED] = { "mig-parted", true, plan_render_mig_parted, NULL },
	[GPUSHARE_PLAN_ENV] = { "env", false, plan_render_env, NULL },
};

static const struct plan_target *target_of(int target)
{
	return target >= 0 && target < GPUSHARE_PLAN_TARGET_COUNT ? &targets[target] : NULL;
}

const char *gpushare_plan_target_name(int target)
{
	const struct plan_target *t = target_of(target);

	return t ? t->name : NULL;
}

int gpushare_plan_target_parse(const char *name)
{
	for (int i = 0; name && i < GPUSHARE_PLAN_TARGET_COUNT; i++) {
		if (!strcmp(name, targets[i].name))
			return i;
	}
	return -1;
}

void gpushare_plan_options_init(struct gpushare_plan_options *o)
{
	memset(o, 0, sizeof(*o));
	o->strategy = GPUSHARE_STRATEGY_NONE;
	o->gpus_per_node = 1;
}

/* The strategy a layout target plans when none is asked for: the one that
 * partitions a GPU; GPUSHARE_STRATEGY_NONE none. */
static enum gpushare_strategy layout_strategy(void)
{
	for (enum gpushare_strategy s = 0; s < GPUSHARE_STRATEGY_COUNT; s++) {
		if (gpushare_strategy_is_sharing(s) && gpushare_strategy_partitions(s))
			return s;
	}
	return GPUSHARE_STRATEGY_NONE;
}

static void warn(struct gpushare_plan *p, const char *fmt, ...)
{
	va_list ap;

	if (p->n_warnings >= GPUSHARE_PLAN_MAX_WARNINGS)
		return;
	va_start(ap, fmt);
	vsnprintf(p->warnings[p->n_warnings++], sizeof(p->warnings[0]), fmt, ap);
	va_end(ap);
}

/* A Slurm gres type from a model: lowercase letters, digits and '_'
 * ("NVIDIA H100 80GB HBM3" -> "h100", "NVIDIA A100-SXM4-40GB" -> "a100": the
 * first word after "NVIDIA"; of --gpu-model all of it). */
static void gres_type(const char *model, bool whole, char *out, size_t len)
{
	size_t n = 0;

	if (!strncasecmp(model, "NVIDIA ", 7))
		model += 7;
	for (; *model && n + 1 < len; model++) {
		unsigned char c = (unsigned char)*model;

		if ((c == ' ' || c == '-') && !whole)
			break;
		if (isalnum(c))
			out[n++] = (char)tolower(c);
		else if (c == ' ' || c == '-' || c == '_' || c == '.')
			out[n++] = '_';
	}
	out[n] = '\0';
}

/* The highest median throughput of rec's sharing cells (0 when none). */
static double rec_best_throughput(const struct gpushare_report *r, const struct gpushare_report_rec *rec)
{
	double best = 0;

	for (size_t i = 0; i < rec->n_at; i++) {
		int c = rec->at[i].best;

		if (c >= 0 && (size_t)c < r->n_cells && r->cells[c].throughput.median > best)
			best = r->cells[c].throughput.median;
	}
	return best;
}

/* Why the runs of shape on gpu_model ("" unknown) measured no GPU: their
 * GPU is unknown (no driver), or their workload runs on CPUs only (spin);
 * NULL when they did. */
static const char *not_measured_on_gpu(const char *shape, const char *gpu_model, char *why, size_t len)
{
	char name[64];
	size_t n = strcspn(shape, ":+");
	const struct gpushare_wl_desc *d;

	snprintf(name, sizeof(name), "%.*s", (int)(n < sizeof(name) ? n : sizeof(name) - 1), shape);
	d = gpushare_workload_find(name);
	if (d && !d->needs_gpu) {
		snprintf(why, len, "its workload '%s' runs on CPUs only: it measured no GPU", name);
		return why;
	}
	if (!gpu_model[0]) {
		snprintf(why, len, "the results name no GPU (measured without a driver)");
		return why;
	}
	return NULL;
}

/* A plan needs a GPU measurement: refused, naming why, unless the plan is
 * asked for as a template only (o->template_only), which its header says. */
static int need_gpu_measurement(const struct gpushare_plan_options *o, const struct gpushare_report_rec *rec,
				struct gpushare_plan *p)
{
	char why[160];

	if (!not_measured_on_gpu(rec->shape, p->gpu_model, why, sizeof(why)))
		return GPUSHARE_OK;
	if (!o->template_only)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "%s; plan from a sweep on the GPUs to share, or pass "
				     "--template for a plan that is a template only", why);
	warn(p, "a template only, not a measured plan: %s", why);
	return GPUSHARE_OK;
}

/* The recommendation (shape, batch) the plan is for. */
static int pick_rec(const struct gpushare_report *r, const struct gpushare_plan_options *o)
{
	int found = -1, top = -1;
	double top_rate = 0;
	size_t n = 0;

	for (size_t i = 0; i < r->n_recs; i++) {
		if (o->shape && strcmp(r->recs[i].shape, o->shape))
			continue;
		if (o->batch > 0 && r->recs[i].batch != o->batch)
			continue;
		if (found < 0)
			found = (int)i;
		if (top < 0 || rec_best_throughput(r, &r->recs[i]) > top_rate) {
			top = (int)i;
			top_rate = rec_best_throughput(r, &r->recs[i]);
		}
		n++;
	}
	if (found < 0) {
		if (o->shape || o->batch > 0)
			return gpushare_fail(GPUSHARE_E_INVAL, "the results hold no workload shape '%s'%s%.0ld",
					     o->shape ? o->shape : "(any)", o->batch > 0 ? " with batch " : "",
					     o->batch > 0 ? o->batch : 0L);
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "the results hold no closed-loop throughput cell");
	}
	if (n > 1) {
		char a[32];

		/* The hint is the one with the highest throughput, not the
		 * first of the file. */
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "the results hold %zu workload shapes or batch sizes; choose one with --shape and --batch "
				     "(the highest throughput: --shape '%s' --batch %ld, %s)",
				     n, r->recs[top].shape, r->recs[top].batch,
				     gpushare_fmt_rate(top_rate, "items/s", a, sizeof(a)));
	}
	return found;
}

/* The cell of strategy s with the most throughput in rec, and the smallest
 * worker count within noise of it (the report's scaling answer). */
static const struct gpushare_report_scaling *scaling_of(const struct gpushare_report_rec *rec, enum gpushare_strategy s)
{
	for (size_t i = 0; i < rec->n_scaling; i++) {
		if (rec->scaling[i].strategy == s && rec->scaling[i].best >= 0)
			return &rec->scaling[i];
	}
	return NULL;
}

static const struct gpushare_report_at_workers *at_of(const struct gpushare_report_rec *rec, int workers)
{
	for (size_t i = 0; i < rec->n_at; i++) {
		if (rec->at[i].workers == workers)
			return &rec->at[i];
	}
	return NULL;
}

/* An ok run of the planned cell: strategy s at `workers`, the
 * recommendation's shape and batch. */
static bool cell_run(const struct gpushare_report_run *run, enum gpushare_strategy s, int workers, const struct gpushare_report_rec *rec)
{
	return run->status == GPUSHARE_RUN_OK && run->strategy == s && run->workers == workers &&
	       run->batch == rec->batch && !strcmp(run->shape, rec->shape);
}

/* Whether target t can express strategy s; else a refusal. */
static int expressible(const struct plan_target *t, enum gpushare_strategy s)
{
	const char *sn = gpushare_strategy_name(s);

	if (!gpushare_strategy_is_sharing(s))
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
				     "%s cannot express '%s': it is a reference, not a way for processes to share a GPU", t->name,
				     sn);
	if (t->layout && !gpushare_strategy_partitions(s))
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
				     "%s needs results of the 'mig' strategy; the plan's strategy is '%s' "
				     "(sweep with --strategy mig on a GPU with MIG enabled)", t->name, sn);
	if (!t->layout && gpushare_strategy_partitions(s))
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
				     "%s cannot express '%s' (MIG instances are a layout, not a share): plan with "
				     "--for mig-parted, then expose the MIG devices", t->name, sn);
	return 0;
}

static void describe_cell(const struct gpushare_report *r, int cell, char *out, size_t len)
{
	const struct gpushare_report_cell *c = &r->cells[cell];
	char a[32], lo[32], hi[32], cov[16];

	gpushare_fmt_rate(c->throughput.median, "items/s", a, sizeof(a));
	if (gpushare_ci_has_interval(&c->throughput))
		snprintf(out, len, "%s (%s-%s, median of %zu runs, interval coverage %s)", a,
			 gpushare_fmt_si(c->throughput.lo, lo, sizeof(lo)), gpushare_fmt_si(c->throughput.hi, hi, sizeof(hi)),
			 c->throughput.n, gpushare_fmt_coverage(c->throughput.coverage, cov, sizeof(cov)));
	else
		snprintf(out, len, "%s (one run: no interval)", a);
}

/* The gains of the chosen cell over each other sharing strategy at K. */
static void gains(const struct gpushare_report *r, const struct gpushare_report_rec *rec, struct gpushare_plan *p)
{
	const struct gpushare_report_cell *me = &r->cells[p->cell];
	bool any = false;

	for (size_t i = 0; i < r->n_cells; i++) {
		const struct gpushare_report_cell *c = &r->cells[i];
		struct gpushare_comparison cmp;
		char text[512];

		if ((int)i == p->cell || strcmp(c->shape, rec->shape) || c->batch != rec->batch || c->workers != p->workers ||
		    !gpushare_strategy_is_sharing(c->strategy) || !c->n_ok)
			continue;
		gpushare_compare(&me->throughput, &c->throughput, &cmp);
		/* The report's words: each interval beside the test it belongs to. */
		gpushare_report_compare_text(&cmp, "the throughput", gpushare_strategy_name(c->strategy), text, sizeof(text));
		gpushare_str_catf(p->gains, sizeof(p->gains), "%s%s", any ? "; " : "", text);
		any = true;
	}
	if (!any)
		snprintf(p->gains, sizeof(p->gains), "no other sharing strategy was measured at %d workers", p->workers);
}

/* What the plan carries by what its strategy is (the capabilities of
 * gpushare/strategy.h); each returns an error or 0. */

/* A per-client share: the percentage the runs had, a set one (the shape's
 * label "(mps-split threads P%)"), else the default share 100/K. */
static int client_share_of_runs(const struct gpushare_report *r, const struct gpushare_report_rec *rec,
				struct gpushare_plan *p)
{
	struct gpushare_report_cursor cur;
	const struct gpushare_report_run *run;
	int rc;

	p->thread_percentage = 100 / p->workers;
	rc = gpushare_report_cursor_open(r, &cur);
	while (!rc && (run = gpushare_report_cursor_next(&cur))) {
		if (cell_run(run, p->strategy, p->workers, rec) && run->thread_pct >= 1) {
			p->thread_percentage = (int)run->thread_pct;
			break;
		}
	}
	gpushare_report_cursor_close(&cur);
	return rc;
}

/* A partition: the layout the chosen cell's runs measured (the report's:
 * each instance the workers saw counted under its profile), several
 * profiles with their counts as they ran. */
static int layout_of_runs(const struct gpushare_report *r, struct gpushare_plan *p)
{
	p->mig_layout = r->cells[p->cell].mig_layout;
	p->mig_instances = 0;
	for (size_t i = 0; i < p->mig_layout.n; i++)
		p->mig_instances += p->mig_layout.count[i];
	if (!p->mig_layout.n || p->mig_instances < 1)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
				     "the '%s' runs do not record their MIG devices (device name and instances)",
				     gpushare_strategy_name(p->strategy));
	return 0;
}

/* More memory than any GPU has: a measured figure above it is not one. */
#define PLAN_MEM_MAX_BYTES (1024.0 * 1024 * 1024 * 1024) /* 1 TiB */

/* MPS: the pinned memory limit per client, given, or (a per-client share)
 * 1.25 x the measured memory per client; 0 none. A measured figure no GPU
 * could hold sets none, and says so (cast to 64 bits it would wrap to 0 or
 * to an absurd limit). */
static uint64_t mps_memory_limit(const struct gpushare_plan_options *o, const struct gpushare_report_cell *c,
				 struct gpushare_plan *p)
{
	const double mib = 1024.0 * 1024.0;
	double limit;

	if (o->mem_per_client)
		return o->mem_per_client;
	if (!gpushare_strategy_client_share(p->strategy) || !c->mem_used_bytes.n || !isfinite(c->mem_used_bytes.median) ||
	    c->mem_used_bytes.median <= 0)
		return 0;
	limit = ceil(c->mem_used_bytes.median / p->workers * 1.25 / mib) * mib;
	if (!(limit <= PLAN_MEM_MAX_BYTES)) {
		warn(p, "the runs' measured GPU memory (%.3g bytes) is more than any GPU has: no memory limit is set "
			"(give one with --mem-per-client)", c->mem_used_bytes.median);
		return 0;
	}
	return (uint64_t)limit;
}

/* The device plugin's MPS sharing gives every replica 100/replicas of the
 * SMs: say so when the runs had no such share, or another one. */
static void device_plugin_warn(const struct gpushare_report *r, const struct gpushare_report_rec *rec,
			       struct gpushare_plan *p)
{
	const struct gpushare_report_cell *c = &r->cells[p->cell];

	if (gpushare_strategy_uses_mps(p->strategy) && !gpushare_strategy_client_share(p->strategy)) {
		int split = -1;
		char x[80] = "";

		for (size_t i = 0; i < r->n_cells; i++) {
			const struct gpushare_report_cell *d = &r->cells[i];

			if (gpushare_strategy_client_share(d->strategy) && !strcmp(d->shape, rec->shape) &&
			    d->batch == rec->batch && d->workers == p->workers && d->n_ok)
				split = (int)i;
		}
		if (split >= 0) {
			struct gpushare_comparison cmp;
			char ra[16];

			gpushare_compare(&r->cells[split].throughput, &c->throughput, &cmp);
			snprintf(x, sizeof(x), "; %s measured %s of that (%s)", gpushare_strategy_name(r->cells[split].strategy),
				 gpushare_fmt_ratio(cmp.ratio, ra, sizeof(ra)), gpushare_verdict_name(cmp.verdict));
		}
		warn(p, "the measured best is %s without limits, but the device plugin's MPS sharing gives each of the %d "
			"replicas %d%% of the SMs (100/replicas)%s", gpushare_strategy_name(p->strategy), p->workers,
		     100 / p->workers, x);
	}
	if (gpushare_strategy_client_share(p->strategy) &&
	    (100 % p->workers || p->thread_percentage != 100 / p->workers))
		warn(p, "the sweep gave each worker %d%% of the SMs; the plugin's split is 100/%d", p->thread_percentage,
		     p->workers);
	/* The plugin's MPS daemon sets each GPU's pinned memory limit to its
	 * memory / replicas (k8s-device-plugin cmd/mps-control-daemon/mps/
	 * daemon.go, perDevicePinnedDeviceMemoryLimits); its config has no
	 * per-client limit. */
	if (p->mem_limit_bytes) {
		char q[32];

		plan_quantity((unsigned long long)p->mem_limit_bytes, q, sizeof(q));
		warn(p, "the device plugin cannot set a per-client memory limit (%s): its MPS daemon limits each of the %d "
			"replicas to the GPU's memory / %d; for %s, plan --for k8s-dra", q, p->workers, p->workers, q);
	}
}

/* job.sh runs gpushare farm on a whole GPU, whose per-client share gives
 * each slot the default share: say so when the runs had another, which
 * job-mps.sh asks of gres/mps. */
static void slurm_warn(const struct gpushare_report *r, const struct gpushare_report_rec *rec, struct gpushare_plan *p)
{
	(void)r;
	(void)rec;
	if (gpushare_strategy_client_share(p->strategy) && p->thread_percentage != 100 / p->workers)
		warn(p, "the runs gave each worker %d%% of the SMs; job.sh's gpushare farm gives each of its %d slots "
			"%d%% (100/%d): for %d%%, use job-mps.sh (gres/mps, %d units per worker)", p->thread_percentage,
		     p->workers, 100 / p->workers, p->workers, p->thread_percentage, p->thread_percentage);
}

int gpushare_plan_decide(const struct gpushare_report *r, const struct gpushare_plan_options *o,
			 struct gpushare_plan *p)
{
	const struct gpushare_report_rec *rec;
	const struct gpushare_report_scaling *sc;
	const struct gpushare_report_at_workers *at;
	const struct gpushare_report_cell *c;
	const struct plan_target *t = target_of(o->target);
	size_t ok = r->n_runs - gpushare_report_n_failed(r);
	char a[320];
	int k, rc;

	memset(p, 0, sizeof(*p));
	p->rec = p->cell = -1;
	if (!t)
		return gpushare_fail(GPUSHARE_E_INVAL, "unknown plan target");
	if (!ok)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "the results hold no successful run (%zu runs, all failed)",
				     r->n_runs);
	rc = pick_rec(r, o);
	if (rc < 0)
		return rc;
	p->rec = rc;
	rec = &r->recs[p->rec];
	/* The GPU, driver and host of this shape's runs (a results file may
	 * hold several machines'); one configuration is for one GPU model. */
	{
		const struct gpushare_report_shape_meta *sm = gpushare_report_shape_meta(r, rec->shape);

		gpushare_utf8_copy(p->gpu_model, sizeof(p->gpu_model), sm ? sm->gpu_name : r->gpu_name);
		gpushare_utf8_copy(p->host, sizeof(p->host), sm ? sm->host : r->host);
		gpushare_utf8_copy(p->driver_version, sizeof(p->driver_version), sm ? sm->driver_version : r->driver_version);
		if (sm && sm->gpu_other[0])
			return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "the runs of %s were measured on more than one GPU model "
					     "('%s' and '%s'): plan from one model's runs", rec->shape, sm->gpu_name,
					     sm->gpu_other);
	}
	rc = need_gpu_measurement(o, rec, p);
	if (rc)
		return rc;
	if (o->gpu_model) {
		if (!p->gpu_model[0])
			return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
					     "--gpu-model %s: the results do not name their GPU (measured without a driver)",
					     o->gpu_model);
		if (!plan_model_matches(p->gpu_model, o->gpu_model))
			return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "--gpu-model %s: the results were measured on '%s'",
					     o->gpu_model, p->gpu_model);
		gres_type(o->gpu_model, true, p->gres_type, sizeof(p->gres_type));
	} else if (p->gpu_model[0]) {
		gres_type(p->gpu_model, false, p->gres_type, sizeof(p->gres_type));
	}
	if (o->goal == GPUSHARE_PLAN_SLO) {
		enum gpushare_strategy forced = o->strategy;
		char b[32];

		if (!(o->slo_p99_seconds > 0))
			return gpushare_fail(GPUSHARE_E_INVAL, "--goal slo needs a p99 bound (--slo-p99)");
		if (rec->slo < 0)
			return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
					     "no sharing strategy kept its median p99 under %s (%s, batch %ld)",
					     gpushare_fmt_seconds(o->slo_p99_seconds, b, sizeof(b)), rec->shape, rec->batch);
		p->cell = rec->slo;
		/* A layout target plans the runs that partition, as for the
		 * throughput goal. */
		if (forced == GPUSHARE_STRATEGY_NONE && t->layout)
			forced = layout_strategy();
		if (forced != GPUSHARE_STRATEGY_NONE && r->cells[p->cell].strategy != forced) {
			/* The forced strategy's best cell under the bound. */
			p->cell = -1;
			for (size_t i = 0; i < r->n_cells; i++) {
				c = &r->cells[i];
				if (c->strategy != forced || strcmp(c->shape, rec->shape) || c->batch != rec->batch ||
				    !c->n_ok || !(c->p99_latency.median <= o->slo_p99_seconds))
					continue;
				if (p->cell < 0 || c->throughput.median > r->cells[p->cell].throughput.median)
					p->cell = (int)i;
			}
			if (p->cell < 0)
				return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "'%s' never kept its median p99 under %s",
						     gpushare_strategy_name(forced),
						     gpushare_fmt_seconds(o->slo_p99_seconds, b, sizeof(b)));
		}
	} else {
		enum gpushare_strategy s = o->strategy;

		/* A layout target plans the layout whenever there are results of
		 * the strategy that partitions. */
		if (s == GPUSHARE_STRATEGY_NONE && t->layout)
			s = layout_strategy();
		if (s == GPUSHARE_STRATEGY_NONE) {
			/* The sharing cell with the highest median throughput. */
			int best = -1;

			for (size_t i = 0; i < rec->n_scaling; i++) {
				k = rec->scaling[i].best;
				if (k >= 0 && gpushare_strategy_is_sharing(rec->scaling[i].strategy) &&
				    (best < 0 || r->cells[k].throughput.median > r->cells[best].throughput.median))
					best = k;
			}
			if (best < 0)
				return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
						     "no sharing strategy (timeslice, mps, mps-split, mig) ran successfully for %s, batch %ld",
						     rec->shape, rec->batch);
			s = r->cells[best].strategy;
		}
		sc = scaling_of(rec, s);
		if (!sc)
			return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "the results hold no successful '%s' run for %s, batch %ld",
					     gpushare_strategy_name(s), rec->shape, rec->batch);
		/* A question the runs leave open (fewer workers they cannot tell
		 * from the best: one process or sharing, or how many) plans
		 * nothing: the report's sentence says how many runs would settle it. */
		if (gpushare_report_scaling_unsettled(r, sc, a, sizeof(a)))
			return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "%s", a);
		/* The fewest workers whose throughput ties with the strategy's best. */
		p->cell = sc->smallest >= 0 ? sc->smallest : sc->best;
	}
	c = &r->cells[p->cell];
	p->strategy = c->strategy;
	p->workers = c->workers;
	rc = expressible(t, p->strategy);
	if (rc)
		return rc;
	/* One instance per GPU is still a layout; one process, no share. */
	if (p->workers < 2 && !gpushare_strategy_partitions(p->strategy))
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
				     "the measured best is one process per GPU (%s at 1 worker): there is no sharing to configure",
				     gpushare_strategy_name(p->strategy));
	if (gpushare_bench_mix_count(rec->shape) >= 2)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
				     "'%s' is a mix of workloads measured side by side: a plan configures the processes of "
				     "one workload; run the mix as the tune or sweep measured it (gpushare bench --workload "
				     "A+B, under mps-split with the split of its label)", rec->shape);
	rc = gpushare_strategy_client_share(p->strategy) ? client_share_of_runs(r, rec, p) : 0;
	if (!rc && gpushare_strategy_partitions(p->strategy))
		rc = layout_of_runs(r, p);
	if (rc)
		return rc;
	if (gpushare_strategy_uses_mps(p->strategy))
		p->mem_limit_bytes = mps_memory_limit(o, c, p);
	else if (o->mem_per_client)
		warn(p, "--mem-per-client is a limit of MPS clients: %s shares without one, and the plan carries none",
		     gpushare_strategy_name(p->strategy));
	describe_cell(r, p->cell, a, sizeof(a));
	snprintf(p->measured, sizeof(p->measured), "%s, batch %ld: %s with %d worker%s per GPU: %s", rec->shape, rec->batch,
		 gpushare_strategy_name(p->strategy), p->workers, p->workers == 1 ? "" : "s", a);
	gains(r, rec, p);
	at = at_of(rec, p->workers);
	if (at && at->throughput_text[0])
		gpushare_str_catf(p->report_text, sizeof(p->report_text), "At %d workers: %s", p->workers, at->throughput_text);
	sc = scaling_of(rec, p->strategy);
	if (sc && sc->text[0])
		gpushare_str_catf(p->report_text, sizeof(p->report_text), "%sWorkers: %s", p->report_text[0] ? " " : "", sc->text);
	/* What the plan cannot carry over. */
	if (c->n_failed)
		warn(p, "%zu run%s of this cell failed; the figures are of the %zu that succeeded", c->n_failed,
		     c->n_failed == 1 ? "" : "s", c->n_ok);
	if (!gpushare_ci_has_interval(&c->throughput))
		warn(p, "one run per cell: the gains have no interval (sweep with --repeats 6 or more)");
	if (t->warn)
		t->warn(r, rec, p);
	return GPUSHARE_OK;
}

/* The header every output begins with: what was measured, on which GPU,
 * the gains with their intervals, the warnings, the command that measured
 * it, and the one for this plan. */
static int comment_block(struct gpushare_buf *b, const struct gpushare_report *r, const struct gpushare_plan_options *o,
			 const struct gpushare_plan *p)
{
	struct gpushare_buf t = { 0 };
	int rc;

	rc = gpushare_buf_addf(&t, "gpushare plan --for %s (gpushare %s)\n", gpushare_plan_target_name(o->target),
			       gpushare_version());
	if (!rc)
		rc = gpushare_buf_addf(&t, "Measured: %s\n", p->measured);
	if (!rc)
		rc = gpushare_buf_addf(&t, "GPU: %s%s%s%s%s\n", p->gpu_model[0] ? p->gpu_model : "unknown (no driver)",
				       p->driver_version[0] ? ", driver " : "", p->driver_version,
				       p->host[0] ? ", host " : "", p->host);
	if (!rc && o->goal == GPUSHARE_PLAN_SLO) {
		const struct gpushare_ci *l = &r->cells[p->cell].p99_latency;
		char bound[32], m[32], lo[32], hi[32];

		gpushare_fmt_seconds(o->slo_p99_seconds, bound, sizeof(bound));
		gpushare_fmt_seconds(l->median, m, sizeof(m));
		if (gpushare_ci_has_interval(l))
			rc = gpushare_buf_addf(&t, "Goal: highest throughput with median p99 under %s; its p99: %s (%s-%s, "
					       "median of %zu runs)\n", bound, m, gpushare_fmt_seconds(l->lo, lo, sizeof(lo)),
					       gpushare_fmt_seconds(l->hi, hi, sizeof(hi)), l->n);
		else
			rc = gpushare_buf_addf(&t, "Goal: highest throughput with median p99 under %s; its p99: %s (one run)\n",
					       bound, m);
	} else if (!rc) {
		rc = gpushare_buf_addf(&t, "Goal: highest throughput, fewest workers within noise\n");
	}
	if (!rc)
		rc = gpushare_buf_addf(&t, "Gain at %d workers: %s\n", p->workers, p->gains);
	if (!rc && p->report_text[0])
		rc = gpushare_buf_addf(&t, "Report: %s\n", p->report_text);
	for (size_t i = 0; !rc && i < p->n_warnings; i++)
		rc = gpushare_buf_addf(&t, "Warning: %s\n", p->warnings[i]);
	if (!rc)
		rc = gpushare_buf_addf(&t, "Dates: %s to %s\n", r->first_date[0] ? r->first_date : "?",
				       r->last_date[0] ? r->last_date : "?");
	if (!rc)
		rc = gpushare_buf_addf(&t, "Measured by: %s", r->command_line[0] ? r->command_line : "(not recorded)");
	if (!rc)
		rc = plan_comment(b, gpushare_buf_str(&t));
	gpushare_buf_release(&t);
	return rc;
}

int gpushare_plan_render(const struct gpushare_report *r, const struct gpushare_plan_options *o,
			 const struct gpushare_plan *p, struct gpushare_plan_output *out)
{
	const struct plan_target *t = target_of(o->target);
	struct gpushare_buf head = { 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	if (!t)
		return gpushare_fail(GPUSHARE_E_INVAL, "unknown plan target");
	if (!gpushare_strategy_is_sharing(p->strategy) || gpushare_strategy_partitions(p->strategy) != t->layout)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "%s cannot express '%s'", t->name,
				     gpushare_strategy_name(p->strategy));
	rc = comment_block(&head, r, o, p);
	if (!rc)
		rc = t->render(o, p, gpushare_buf_str(&head), out);
	gpushare_buf_release(&head);
	return rc;
}

void gpushare_plan_output_release(struct gpushare_plan_output *out)
{
	for (size_t i = 0; i < out->n_parts; i++)
		free(out->parts[i].text);
	memset(out, 0, sizeof(*out));
}

/* A figure's median and interval under k; false when out of memory. */
static bool ci_json(cJSON *parent, const char *k, const struct gpushare_ci *ci)
{
	bool iv = gpushare_ci_has_interval(ci);
	cJSON *o = gpushare_json_obj(parent, k);

	return o && gpushare_json_num(o, "median", ci->median) && gpushare_json_num_if(o, "lo", ci->lo, iv) &&
	       gpushare_json_num_if(o, "hi", ci->hi, iv) && gpushare_json_num_if(o, "coverage", ci->coverage, iv) &&
	       gpushare_json_int(o, "n", (long long)ci->n);
}

int gpushare_plan_json(const struct gpushare_report *r, const struct gpushare_plan_options *o,
		       const struct gpushare_plan *p, char **text)
{
	const struct gpushare_report_cell *c = &r->cells[p->cell];
	cJSON *root = cJSON_CreateObject(), *w = NULL;
	bool ok = root != NULL;

	ok = ok && gpushare_json_str(root, "target", gpushare_plan_target_name(o->target)) &&
	     gpushare_json_str(root, "goal", o->goal == GPUSHARE_PLAN_SLO ? "slo" : "throughput") &&
	     gpushare_json_str(root, "shape", c->shape) && gpushare_json_int(root, "batch", c->batch) &&
	     gpushare_json_str(root, "strategy", gpushare_strategy_name(p->strategy)) &&
	     gpushare_json_int(root, "workers_per_gpu", p->workers) &&
	     gpushare_json_num_if(root, "thread_percentage", p->thread_percentage, p->thread_percentage != 0) &&
	     gpushare_json_num_if(root, "mem_limit_bytes", (double)p->mem_limit_bytes, p->mem_limit_bytes != 0);
	if (ok && p->mig_layout.n) {
		/* mig_profile: the one profile of a layout of one (as before);
		 * mig_layout: every profile with its instances. */
		cJSON *l;

		if (p->mig_layout.n == 1)
			ok = gpushare_json_str(root, "mig_profile", p->mig_layout.profile[0]);
		ok = ok && gpushare_json_int(root, "mig_instances", p->mig_instances) &&
		     (l = gpushare_json_obj(root, "mig_layout")) != NULL;
		for (size_t i = 0; ok && i < p->mig_layout.n; i++)
			ok = gpushare_json_int(l, p->mig_layout.profile[i], p->mig_layout.count[i]);
	}
	ok = ok && gpushare_json_str(root, "gpu", p->gpu_model) &&
	     ci_json(root, "throughput_items_per_second", &c->throughput) &&
	     ci_json(root, "p99_latency_seconds", &c->p99_latency) && gpushare_json_str(root, "measured", p->measured) &&
	     gpushare_json_str(root, "gains", p->gains) && gpushare_json_str(root, "report", p->report_text) &&
	     (w = gpushare_json_arr(root, "warnings")) != NULL;
	for (size_t i = 0; ok && i < p->n_warnings; i++)
		ok = gpushare_json_str(w, NULL, p->warnings[i]);
	ok = ok && gpushare_json_str(root, "command_line", r->command_line);
	*text = gpushare_json_finish(root, ok, false);
	return *text ? GPUSHARE_OK : gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
}
