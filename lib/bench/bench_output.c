/*
 * Printers of benchmark results: CSV (one row per strategy x worker plus an
 * aggregate row per strategy) and the aligned table people read (the JSON
 * document is bench_json.c's). They change only how results look, never
 * what was measured. The atomic file write used for --out is in safefile.c.
 *
 * Machine output uses base units with the unit in the name (_seconds,
 * _bytes); unknown values are JSON null and empty CSV fields. Only a
 * result with status ok has figures: a failed or skipped strategy prints
 * null, empty fields and blank table cells, never zeros.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushare/bench.h"
#include "gpushare/format.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/region.h"

#include "bench_mix.h"
#include "csv.h"
#include "openloop.h"
#include "json.h"

/* ---- CSV ---- */

static const char csv_header[] =
	"strategy,row,worker,pid,requests,items,errors,window_seconds,requests_per_second,items_per_second,"
	"mean_seconds,stddev_seconds,p50_seconds,p90_seconds,p99_seconds,p999_seconds,max_seconds,"
	"sm_count,mem_free_bytes,thread_percentage,mem_limit,fairness,efficiency,tflops,partial,failed,"
	"repeat,status,"
	"offered_per_second,achieved_per_second,queued_at_end,unfinished,queue_p99_seconds,service_p99_seconds,"
	"workload,workers\n";

/* ",v" or "," when unknown. */
static void csv_num(FILE *f, double v, bool known)
{
	if (known && isfinite(v))
		fprintf(f, ",%.9g", v);
	else
		fputc(',', f);
}

static void csv_u64(FILE *f, uint64_t v, bool known)
{
	if (known)
		fprintf(f, ",%" PRIu64, v);
	else
		fputc(',', f);
}

/* The open-loop columns and the end of the line: known on the aggregate
 * row of an ok open-loop result, empty otherwise. */
/* The key columns every row ends with: "workload,workers" (the workload's
 * name, "command" for a command of one's own; the configured worker count),
 * so that CSVs of several runs can be joined. */
static char csv_key[GPUSHARE_BENCH_MAX_MIX * GPUSHARE_BENCH_MIX_LABEL + 32];

static void csv_open(FILE *f, const struct gpushare_bench_result *res, bool aggregate)
{
	static const struct gpushare_bench_openloop none;
	const struct gpushare_bench_openloop *o = res ? &res->open : &none;
	bool known = res && aggregate && o->on && res->status == GPUSHARE_RESULT_OK;

	csv_num(f, o->offered_rate, known);
	csv_num(f, o->achieved_rate, known);
	csv_u64(f, o->queued_at_end, known);
	csv_u64(f, o->unfinished, known);
	csv_num(f, o->queue_p99_seconds, known);
	csv_num(f, o->service_p99_seconds, known);
	fprintf(f, ",%s\n", csv_key);
}

static void csv_result(FILE *f, const struct gpushare_bench_result *res)
{
	const char *name = gpushare_strategy_name(res->strategy);
	bool fig = res->status == GPUSHARE_RESULT_OK, lat = fig && res->hist.count > 0;

	for (size_t i = 0; i < res->n_workers; i++) {
		const struct gpushare_bench_worker *w = &res->workers[i];
		bool ran = w->pid > 0, wl = ran && w->hist.count > 0, tp = ran && w->window_seconds > 0;

		fprintf(f, "%s,worker,%d,", name, w->index);
		if (ran)
			fprintf(f, "%d", (int)w->pid);
		csv_u64(f, w->requests, ran);
		csv_u64(f, w->items, ran);
		csv_u64(f, w->errors, ran);
		csv_num(f, w->window_seconds, tp);
		csv_num(f, w->requests_per_second, tp);
		csv_num(f, w->items_per_second, tp);
		csv_num(f, w->mean_seconds, wl);
		csv_num(f, w->stddev_seconds, wl);
		csv_num(f, w->p50_seconds, wl);
		csv_num(f, w->p90_seconds, wl);
		csv_num(f, w->p99_seconds, wl);
		csv_num(f, w->p999_seconds, wl);
		csv_num(f, w->max_seconds, wl);
		fputc(',', f);
		if (w->sm_count >= 0)
			fprintf(f, "%d", w->sm_count);
		fputc(',', f);
		if (w->mem_total_bytes > 0)
			fprintf(f, "%" PRIu64, w->mem_free_bytes);
		fputc(',', f);
		if (w->thread_percentage_seen >= 0)
			fprintf(f, "%g", w->thread_percentage_seen);
		fputc(',', f);
		gpushare_csv_write_field(f, w->mem_limit_seen);
		fprintf(f, ",,,,%s,%s,%d,%s", res->partial ? "true" : "false", w->failed ? "true" : "false",
			res->repeat, gpushare_result_status_name(res->status));
		csv_open(f, res, false);
	}
	fprintf(f, "%s,aggregate,,", name);
	csv_u64(f, res->requests, fig);
	csv_u64(f, res->items, fig);
	csv_u64(f, res->errors, fig);
	csv_num(f, res->window_seconds, fig);
	csv_num(f, res->requests_per_second, fig);
	csv_num(f, res->items_per_second, fig);
	csv_num(f, res->mean_seconds, lat);
	csv_num(f, res->stddev_seconds, lat);
	csv_num(f, res->p50_seconds, lat);
	csv_num(f, res->p90_seconds, lat);
	csv_num(f, res->p99_seconds, lat);
	csv_num(f, res->p999_seconds, lat);
	csv_num(f, res->max_seconds, lat);
	fputs(",,,,", f);
	csv_num(f, res->fairness, fig && res->n_workers > 0);
	csv_num(f, res->efficiency, fig && res->efficiency >= 0);
	csv_num(f, res->tflops, fig && res->tflops >= 0);
	fprintf(f, ",%s,%s,%d,%s", res->partial ? "true" : "false", fig ? "false" : "true", res->repeat,
		gpushare_result_status_name(res->status));
	csv_open(f, res, true);
	/* A mix: a row per member ("mix", the member's index in the worker
	 * column), its workers' figures together. */
	for (int m = 0; res->n_mix >= 2 && m < res->n_mix; m++) {
		const struct gpushare_bench_mix_result *x = &res->mix[m];
		bool ml = fig && x->requests > 0;

		fprintf(f, "%s,mix,%d,", name, m);
		csv_u64(f, x->requests, fig);
		csv_u64(f, x->items, fig);
		fputs(",,", f);
		csv_num(f, x->requests_per_second, fig);
		csv_num(f, x->items_per_second, fig);
		fputs(",,", f);
		csv_num(f, x->p50_seconds, ml);
		fputc(',', f);
		csv_num(f, x->p99_seconds, ml);
		fputs(",,,,", f);
		csv_num(f, x->thread_percentage_set, x->thread_percentage_set > 0);
		fputc(',', f);
		csv_num(f, x->fairness, fig);
		fprintf(f, ",,,%s,%s,%d,%s", res->partial ? "true" : "false", fig ? "false" : "true", res->repeat,
			gpushare_result_status_name(res->status));
		csv_open(f, NULL, false);
	}
}

/* Figure k (mean, stddev, min, max, median, lo, hi) of st; NaN unknown. */
static double stat_value(const struct gpushare_sample_stats *st, size_t k)
{
	if (!st->n)
		return NAN;
	switch (k) {
	case 0: return st->mean;
	case 1: return st->stddev;
	case 2: return st->min;
	case 3: return st->max;
	case 4: return st->median.median;
	case 5: return st->median.lo;
	default: return st->median.hi;
	}
}

/* Rows mean, stddev, min, max, median, lo, hi of a strategy over its
 * repeats, in the aggregate's columns. */
static void csv_summary(FILE *f, const struct gpushare_bench_summary *s)
{
	static const char *const rows[] = { "mean", "stddev", "min", "max", "median", "lo", "hi" };
	const struct gpushare_sample_stats *col[] = {
		&s->requests_per_second, &s->items_per_second, &s->mean_seconds, NULL, &s->p50_seconds,
		&s->p90_seconds, &s->p99_seconds, &s->p999_seconds, NULL,
	};

	for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
		fprintf(f, "%s,%s,,,,,,", gpushare_strategy_name(s->strategy), rows[k]);
		for (size_t c = 0; c < sizeof(col) / sizeof(col[0]); c++)
			csv_num(f, col[c] ? stat_value(col[c], k) : NAN, col[c] != NULL);
		fputs(",,,,", f);
		csv_num(f, stat_value(&s->fairness, k), true);
		csv_num(f, stat_value(&s->efficiency, k), true);
		fprintf(f, ",,,%s,,%s", s->n_ok ? "false" : "true", gpushare_result_status_name(s->status));
		csv_open(f, NULL, false);
	}
}

int gpushare_bench_write_csv(const struct gpushare_bench_report *r, FILE *f)
{
	const struct gpushare_bench_config *c = r->config;
	char label[GPUSHARE_BENCH_MAX_MIX * GPUSHARE_BENCH_MIX_LABEL];
	const char *wl = !c ? "" : gpushare_bench_workload_label(c, label, sizeof(label));

	snprintf(csv_key, sizeof(csv_key), "%s,", strpbrk(wl, ",\"\n") ? "" : wl);
	if (c)
		snprintf(csv_key + strlen(csv_key), sizeof(csv_key) - strlen(csv_key), "%d", c->workers);
	fputs(csv_header, f);
	if (r->ceiling)
		csv_result(f, r->ceiling);
	for (size_t i = 0; i < r->n_results; i++)
		csv_result(f, &r->results[i]);
	for (size_t i = 0; r->repeats >= 2 && i < r->n_summary; i++)
		csv_summary(f, &r->summary[i]);
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write CSV: %s", strerror(errno));
	return GPUSHARE_OK;
}

/* ---- table ---- */

/* A cell of the table: the formatted value, or "" when unknown. */
static const char *cell_seconds(double s, bool known, char *buf, size_t len)
{
	if (!known || !isfinite(s)) {
		buf[0] = '\0';
		return buf;
	}
	return gpushare_fmt_seconds(s, buf, len);
}

static const char *cell_si(double v, bool known, char *buf, size_t len)
{
	if (!known || !isfinite(v)) {
		buf[0] = '\0';
		return buf;
	}
	return gpushare_fmt_si(v, buf, len);
}

static const char *cell_sig(double v, bool known, char *buf, size_t len)
{
	if (!known || !isfinite(v)) {
		buf[0] = '\0';
		return buf;
	}
	return gpushare_fmt_sig(v, buf, len);
}

#define ROW_FMT "%-11s %7s %10s %9s %9s %9s %9s %9s %8s %6s  %s\n"
/* Job mode: a count of jobs, jobs/s, seconds per job. */
#define JOB_ROW_FMT "%-11s %7s %10s %9s %9s %10s %10s %12s %8s %6s  %s\n"

/* Job mode: a command run to completion per request, often a handful of
 * times, where p99 of 5 jobs is only their maximum. A quantile q is shown
 * when at least one sample lies beyond it (n (1 - q) >= 1: p50 from 2
 * jobs, p99 from 100, p99.9 from 1000); else "-", and the time line says
 * how many there were. */
static bool enough_for(uint64_t n, double q)
{
	return (double)n * (1 - q) >= 1 - 1e-9;
}

static const char *cell_quantile(double s, bool known, uint64_t n, double q, char *buf, size_t len)
{
	if (known && !enough_for(n, q)) {
		snprintf(buf, len, "-");
		return buf;
	}
	return cell_seconds(s, known, buf, len);
}

/* hyperfine's figures of the time per job, over all of h's jobs:
 * "  time per job: mean ± σ 12.7 ms ± 872 us, min … max 11.5 ms … 13.9 ms,
 * 6 jobs (too few for p99, 100 needed; p99.9, 1000)". The percentiles
 * were of runs of n jobs (repeats: the fewest of a run). */
static void job_time_line(FILE *f, const struct gpushare_hist *h, uint64_t n, const char *indent)
{
	char m[24], sd[24], lo[24], hi[24], few[128] = "", run[48] = "";

	if (!h->count)
		return;
	if (n != h->count)
		snprintf(run, sizeof(run), "%" PRIu64 " a run: ", n);
	if (!enough_for(n, 0.99))
		snprintf(few, sizeof(few), " (%stoo few for %sp99, 100 needed; p99.9, 1000)", run,
			 enough_for(n, 0.5) ? "" : "p50, 2 needed; ");
	else if (!enough_for(n, 0.999))
		snprintf(few, sizeof(few), " (%stoo few for p99.9, 1000 needed)", run);
	fprintf(f, "%stime per job: mean \u00b1 \u03c3 %s \u00b1 %s, min \u2026 max %s \u2026 %s, %" PRIu64 " job%s%s\n",
		indent, gpushare_fmt_seconds(gpushare_hist_mean(h) / 1e9, m, sizeof(m)),
		h->count >= 2 ? gpushare_fmt_seconds(gpushare_hist_stddev(h) / 1e9, sd, sizeof(sd)) : "-",
		gpushare_fmt_seconds((double)h->min_ns / 1e9, lo, sizeof(lo)),
		gpushare_fmt_seconds((double)h->max_ns / 1e9, hi, sizeof(hi)), h->count, h->count == 1 ? "" : "s", few);
}

static bool job_mode(const struct gpushare_bench_config *c)
{
	return c && c->command && c->command_mode == GPUSHARE_CMD_JOB;
}

/* A telemetry value the driver did not give (negative) reads "unknown",
 * as JSON's null. */
static const char *known_or(double v, const char *text)
{
	return v >= 0 ? text : "unknown";
}

static void table_telemetry(FILE *f, const struct gpushare_bench_telemetry *t)
{
	char mem[24], util[16], umax[16], clk[24], thr[16], pw[24], num[24], ut[64];

	if (!t->samples)
		return;
	gpushare_fmt_percent(t->util_mean_pct / 100, util, sizeof(util));
	gpushare_fmt_percent(t->util_max_pct / 100, umax, sizeof(umax));
	gpushare_fmt_bytes((double)t->mem_used_max_bytes, mem, sizeof(mem));
	snprintf(clk, sizeof(clk), "%s MHz", gpushare_fmt_sig(t->sm_clock_mean_mhz, num, sizeof(num)));
	gpushare_fmt_percent(t->throttled_fraction, thr, sizeof(thr));
	snprintf(pw, sizeof(pw), "%s W", gpushare_fmt_sig(t->power_mean_watts, num, sizeof(num)));
	/* NVML gives no utilization under MIG: say so once, not "unknown" twice. */
	if (t->util_mean_pct < 0 && t->util_max_pct < 0)
		snprintf(ut, sizeof(ut), "utilization not measured");
	else
		snprintf(ut, sizeof(ut), "util %s mean, %s max", known_or(t->util_mean_pct, util),
			 known_or(t->util_max_pct, umax));
	fprintf(f, "  gpu: %s; memory %s max; SM clock %s mean; throttled %s; power %s mean\n", ut,
		t->mem_used_max_bytes > 0 ? mem : "unknown", known_or(t->sm_clock_mean_mhz, clk),
		known_or(t->throttled_fraction, thr), known_or(t->power_mean_watts, pw));
}

static void table_workers(FILE *f, const struct gpushare_bench_result *res, const char *indent, bool jobs)
{
	for (size_t i = 0; i < res->n_workers; i++) {
		const struct gpushare_bench_worker *w = &res->workers[i];
		char a[24], b[24], c[24], mean[24], tp[24], mem[24] = "-", sm[16] = "-";
		bool lat = w->pid > 0 && w->hist.count > 0;

		if (w->pid <= 0) {
			fprintf(f, "%sworker %-3d did not start\n", indent, w->index + 1); /* from 1, as errors say */
			continue;
		}
		if (w->sm_count >= 0)
			snprintf(sm, sizeof(sm), "%d", w->sm_count);
		if (w->mem_total_bytes > 0)
			gpushare_fmt_bytes((double)w->mem_free_bytes, mem, sizeof(mem));
		fprintf(f, "%sworker %-3d pid %-7d %9" PRIu64 " %s %9s %s  mean %s p50 %s p99 %s max %s  sm %s  free %s%s%s\n",
			indent, w->index + 1, (int)w->pid, w->requests, jobs ? "jobs" : "req",
			cell_si(w->requests_per_second, w->window_seconds > 0, tp, sizeof(tp)), jobs ? "jobs/s" : "req/s",
			lat ? gpushare_fmt_seconds(w->mean_seconds, mean, sizeof(mean)) : "-",
			lat && (!jobs || enough_for(w->hist.count, 0.5)) ? gpushare_fmt_seconds(w->p50_seconds, a, sizeof(a)) : "-",
			lat && (!jobs || enough_for(w->hist.count, 0.99)) ? gpushare_fmt_seconds(w->p99_seconds, b, sizeof(b)) : "-",
			lat ? gpushare_fmt_seconds(w->max_seconds, c, sizeof(c)) : "-", sm, mem,
			w->failed ? "  FAILED" : "", w->errors ? "  (errors)" : "");
	}
}

/* A mix: a line per member, then the score. */
static void table_mix(FILE *f, const struct gpushare_bench_result *res, const struct gpushare_bench_config *cfg)
{
	bool fig = res->status == GPUSHARE_RESULT_OK;
	char a[24], b[24], c[24], d[24], share[48] = "";

	if (res->n_mix < 2 || !fig)
		return;
	for (int m = 0; m < res->n_mix; m++) {
		const struct gpushare_bench_mix_result *x = &res->mix[m];
		bool lat = x->requests > 0;

		if (x->thread_percentage_set > 0)
			snprintf(share, sizeof(share), ", threads %g%%", x->thread_percentage_set);
		fprintf(f, "  %s (%zu workers%s): %s, %s, p50 %s, p99 %s\n",
			cfg && m < cfg->n_mix ? cfg->mix[m].label : "?", res->n_workers / (size_t)res->n_mix, share,
			gpushare_fmt_rate(x->requests_per_second, "req/s", a, sizeof(a)),
			gpushare_fmt_rate(x->items_per_second, "items/s", b, sizeof(b)),
			lat ? gpushare_fmt_seconds(x->p50_seconds, c, sizeof(c)) : "-",
			lat ? gpushare_fmt_seconds(x->p99_seconds, d, sizeof(d)) : "-");
	}
	fprintf(f, "  score %s (the geometric mean of the workloads' items/s)\n",
		res->mix_score > 0 ? gpushare_fmt_sig(res->mix_score, a, sizeof(a)) : "none (a workload did nothing)");
}

static void table_row(FILE *f, const struct gpushare_bench_result *res, bool verbose,
		      const struct gpushare_bench_config *cfg)
{
	char workers[16], req[24], rps[24], ips[24], p50[24], p99[24], p999[24], fair[16], en[16];
	bool fig = res->status == GPUSHARE_RESULT_OK, lat = fig && res->hist.count > 0, jobs = job_mode(cfg);
	const char *status = gpushare_result_status_name(res->status);

	if (fig && res->interrupted)
		status = "interrupted";
	snprintf(workers, sizeof(workers), "%zu", res->n_workers);
	if (fig)
		snprintf(req, sizeof(req), "%" PRIu64, res->requests);
	else
		req[0] = '\0';
	if (fig && res->efficiency < 0)
		snprintf(en, sizeof(en), "-");
	else
		cell_sig(res->efficiency, fig, en, sizeof(en));
	if (jobs)
		fprintf(f, JOB_ROW_FMT, gpushare_strategy_name(res->strategy),
			res->status == GPUSHARE_RESULT_SKIPPED ? "" : workers, req,
			cell_si(res->requests_per_second, fig, rps, sizeof(rps)),
			cell_si(res->items_per_second, fig, ips, sizeof(ips)),
			cell_quantile(res->p50_seconds, lat, res->hist.count, 0.5, p50, sizeof(p50)),
			cell_quantile(res->p99_seconds, lat, res->hist.count, 0.99, p99, sizeof(p99)),
			cell_quantile(res->p999_seconds, lat, res->hist.count, 0.999, p999, sizeof(p999)),
			cell_sig(res->fairness, fig && res->n_workers > 0, fair, sizeof(fair)), en, status);
	else
		fprintf(f, ROW_FMT, gpushare_strategy_name(res->strategy),
			res->status == GPUSHARE_RESULT_SKIPPED ? "" : workers, req,
			cell_si(res->requests_per_second, fig, rps, sizeof(rps)),
			cell_si(res->items_per_second, fig, ips, sizeof(ips)),
			cell_seconds(res->p50_seconds, lat, p50, sizeof(p50)),
			cell_seconds(res->p99_seconds, lat, p99, sizeof(p99)),
			cell_seconds(res->p999_seconds, lat, p999, sizeof(p999)),
			cell_sig(res->fairness, fig && res->n_workers > 0, fair, sizeof(fair)), en, status);
	if (res->failure[0])
		fprintf(f, "  ! %s\n", res->failure);
	if (fig && res->tflops >= 0) {
		char tf[24];

		fprintf(f, "  %s TFLOP/s\n", gpushare_fmt_sig(res->tflops, tf, sizeof(tf)));
	}
	if (jobs && lat)
		job_time_line(f, &res->hist, res->hist.count, "  ");
	table_mix(f, res, cfg);
	gpushare_openloop_table(f, res, cfg);
	table_telemetry(f, &res->telemetry);
	if (verbose && res->status != GPUSHARE_RESULT_SKIPPED)
		table_workers(f, res, "  ", jobs);
}

/* "9.98k ± 120" (one run: "9.98k"). */
static const char *mean_pm(const struct gpushare_sample_stats *st, bool seconds, char *buf, size_t len)
{
	char m[24], sd[24];

	if (seconds) {
		gpushare_fmt_seconds(st->mean, m, sizeof(m));
		gpushare_fmt_seconds(st->stddev, sd, sizeof(sd));
	} else {
		gpushare_fmt_si(st->mean, m, sizeof(m));
		gpushare_fmt_si(st->stddev, sd, sizeof(sd));
	}
	if (st->n >= 2)
		snprintf(buf, len, "%s \u00b1 %s", m, sd);
	else
		snprintf(buf, len, "%s", m);
	return buf;
}

/* "min...max" of a figure. */
static const char *min_max(const struct gpushare_sample_stats *st, bool seconds, char *buf, size_t len)
{
	char a[24], b[24];

	if (seconds)
		snprintf(buf, len, "%s...%s", gpushare_fmt_seconds(st->min, a, sizeof(a)), gpushare_fmt_seconds(st->max, b, sizeof(b)));
	else
		snprintf(buf, len, "%s...%s", gpushare_fmt_si(st->min, a, sizeof(a)), gpushare_fmt_si(st->max, b, sizeof(b)));
	return buf;
}

/* "median 9.99k, 75% interval 9.85k-10.1k" or "no interval (1 run)". */
static const char *median_iv(const struct gpushare_ci *ci, bool seconds, char *buf, size_t len)
{
	char m[24], lo[24], hi[24], cov[16];

	if (seconds)
		gpushare_fmt_seconds(ci->median, m, sizeof(m));
	else
		gpushare_fmt_si(ci->median, m, sizeof(m));
	if (!gpushare_ci_has_interval(ci)) {
		snprintf(buf, len, "median %s, no interval (%zu run)", m, ci->n);
		return buf;
	}
	if (seconds) {
		gpushare_fmt_seconds(ci->lo, lo, sizeof(lo));
		gpushare_fmt_seconds(ci->hi, hi, sizeof(hi));
	} else {
		gpushare_fmt_si(ci->lo, lo, sizeof(lo));
		gpushare_fmt_si(ci->hi, hi, sizeof(hi));
	}
	snprintf(buf, len, "median %s, %s interval %s-%s", m, gpushare_fmt_coverage(ci->coverage, cov, sizeof(cov)), lo,
		 hi);
	return buf;
}

/* The table of repeated runs: one row per strategy of means over its OK
 * runs, each followed by its spread. */
static void summary_row(FILE *f, const struct gpushare_bench_report *r, const struct gpushare_bench_summary *s,
			bool verbose)
{
	char runs[24], rps[24], ips[24], p50[24], p99[24], p999[24], fair[16], en[16], a[64], b[64], c[96];
	bool fig = s->n_ok > 0, jobs = job_mode(r->config);
	int workers = r->config ? r->config->workers : 0;
	char wk[16];
	uint64_t fewest = UINT64_MAX;   /* job mode: the fewest jobs of an ok run */
	struct gpushare_hist *all = NULL; /* job mode: every ok run's jobs */

	if (jobs && fig && (all = malloc(sizeof(*all))) != NULL)
		gpushare_hist_init(all);
	for (size_t i = 0; jobs && i < r->n_results; i++) {
		const struct gpushare_bench_result *res = &r->results[i];

		if (res->strategy != s->strategy || res->status != GPUSHARE_RESULT_OK)
			continue;
		if (res->hist.count < fewest)
			fewest = res->hist.count;
		if (all)
			gpushare_hist_merge(all, &res->hist);
	}
	snprintf(wk, sizeof(wk), "%d", workers);
	snprintf(runs, sizeof(runs), "%zu/%zu ok", s->n_ok, s->n_runs);
	if (fig && !s->efficiency.n)
		snprintf(en, sizeof(en), "-");
	else
		cell_sig(s->efficiency.mean, fig, en, sizeof(en));
	if (jobs)
		fprintf(f, JOB_ROW_FMT, gpushare_strategy_name(s->strategy), wk, runs,
			cell_si(s->requests_per_second.mean, fig, rps, sizeof(rps)),
			cell_si(s->items_per_second.mean, fig, ips, sizeof(ips)),
			cell_quantile(s->p50_seconds.mean, fig && s->p50_seconds.n, fewest, 0.5, p50, sizeof(p50)),
			cell_quantile(s->p99_seconds.mean, fig && s->p99_seconds.n, fewest, 0.99, p99, sizeof(p99)),
			cell_quantile(s->p999_seconds.mean, fig && s->p999_seconds.n, fewest, 0.999, p999, sizeof(p999)),
			cell_sig(s->fairness.mean, fig && s->fairness.n, fair, sizeof(fair)), en,
			gpushare_result_status_name(s->status));
	else
		fprintf(f, ROW_FMT, gpushare_strategy_name(s->strategy), wk, runs,
			cell_si(s->requests_per_second.mean, fig, rps, sizeof(rps)),
			cell_si(s->items_per_second.mean, fig, ips, sizeof(ips)),
			cell_seconds(s->p50_seconds.mean, fig && s->p50_seconds.n, p50, sizeof(p50)),
			cell_seconds(s->p99_seconds.mean, fig && s->p99_seconds.n, p99, sizeof(p99)),
			cell_seconds(s->p999_seconds.mean, fig && s->p999_seconds.n, p999, sizeof(p999)),
			cell_sig(s->fairness.mean, fig && s->fairness.n, fair, sizeof(fair)), en,
			gpushare_result_status_name(s->status));
	if (all) {
		job_time_line(f, all, fewest, "  ");
		free(all);
	}
	if (fig) {
		fprintf(f, "  items/s %s, %s, %s\n", mean_pm(&s->items_per_second, false, a, sizeof(a)),
			min_max(&s->items_per_second, false, b, sizeof(b)),
			median_iv(&s->items_per_second.median, false, c, sizeof(c)));
		if (s->p99_seconds.n && (!jobs || enough_for(fewest, 0.99)))
			fprintf(f, "  p99     %s, %s, %s\n", mean_pm(&s->p99_seconds, true, a, sizeof(a)),
				min_max(&s->p99_seconds, true, b, sizeof(b)),
				median_iv(&s->p99_seconds.median, true, c, sizeof(c)));
	}
	for (size_t i = 0; i < r->n_results; i++) {
		const struct gpushare_bench_result *res = &r->results[i];

		if (res->strategy != s->strategy)
			continue;
		if (res->failure[0])
			fprintf(f, "  ! repeat %d: %s: %s\n", res->repeat + 1, gpushare_result_status_name(res->status),
				res->failure);
		if (!verbose)
			continue;
		fprintf(f, "  repeat %d: %s items/s, p99 %s, %s\n", res->repeat + 1,
			cell_si(res->items_per_second, res->status == GPUSHARE_RESULT_OK, ips, sizeof(ips)),
			cell_seconds(res->p99_seconds, res->status == GPUSHARE_RESULT_OK &&
			res->hist.count, p99, sizeof(p99)),
			gpushare_result_status_name(res->status));
		table_telemetry(f, &res->telemetry);
		if (res->status != GPUSHARE_RESULT_SKIPPED)
			table_workers(f, res, "    ", jobs);
	}
}

int gpushare_bench_write_relative(const struct gpushare_bench_report *r, FILE *f)
{
	int ref = gpushare_bench_reference(r);

	for (size_t i = 0; ref >= 0 && i < r->n_summary; i++) {
		const struct gpushare_bench_summary *s = &r->summary[i], *b = &r->summary[ref];
		struct gpushare_bench_relative rel;
		char ratio[24], sd[24], pa[24], pb[24], conf[16], verdict[256];

		if ((int)i == ref || !s->n_ok)
			continue;
		gpushare_bench_relative(s, b, &rel);
		gpushare_fmt_sig(rel.ratio_mean, ratio, sizeof(ratio));
		if (isfinite(rel.ratio_stddev))
			snprintf(sd, sizeof(sd), " \u00b1 %s", gpushare_fmt_sig(rel.ratio_stddev, pa, sizeof(pa)));
		else
			sd[0] = '\0';
		switch (rel.throughput.verdict) {
		case GPUSHARE_VERDICT_TIE:
			/* A tie the runs cannot settle is no result: say what would. */
			if (gpushare_compare_unsettled_text(&rel.throughput, gpushare_strategy_name(s->strategy),
							    gpushare_strategy_name(b->strategy), verdict, sizeof(verdict)))
				break;
			if (rel.throughput.method == GPUSHARE_METHOD_WELCH_LOG)
				snprintf(verdict, sizeof(verdict), "tie: the 95%% t interval on logs holds 1");
			else
				snprintf(verdict, sizeof(verdict), "tie: the intervals of the medians overlap");
			break;
		case GPUSHARE_VERDICT_HIGHER:
		case GPUSHARE_VERDICT_LOWER:
			if (rel.throughput.method == GPUSHARE_METHOD_WELCH_LOG) {
				char lo[24], hi[24];

				snprintf(verdict, sizeof(verdict), "%s, significant: %s-%s, t test on logs, p %s %.2g",
					 rel.throughput.verdict == GPUSHARE_VERDICT_HIGHER ? "higher" : "lower",
					 gpushare_fmt_ratio(rel.throughput.t_lo, lo, sizeof(lo)),
					 gpushare_fmt_ratio(rel.throughput.t_hi, hi, sizeof(hi)),
					 rel.throughput.p_value < 0.001 ? "<" : "=",
					 rel.throughput.p_value < 0.001 ? 0.001 : rel.throughput.p_value);
				break;
			}
			gpushare_fmt_coverage(rel.throughput.confidence, conf, sizeof(conf));
			snprintf(verdict, sizeof(verdict), "%s at %s confidence%s",
				 rel.throughput.verdict == GPUSHARE_VERDICT_HIGHER ? "higher" : "lower", conf,
				 rel.throughput.significant ? "" : ", below 95%: not significant");
			break;
		default:
			snprintf(verdict, sizeof(verdict), "no interval with %zu run%s: give --repeats 2 or more for a verdict",
				 s->n_ok < b->n_ok ? s->n_ok : b->n_ok, (s->n_ok < b->n_ok ? s->n_ok : b->n_ok) == 1 ? "" : "s");
			break;
		}
		if (job_mode(r->config)) /* a few jobs have no p99: their mean time */
			fprintf(f, "%s: %s%s times the throughput of %s, %s vs %s per job (means) (%s)\n",
				gpushare_strategy_name(s->strategy), ratio, sd, gpushare_strategy_name(b->strategy),
				gpushare_fmt_seconds(s->mean_seconds.mean, pa, sizeof(pa)),
				gpushare_fmt_seconds(b->mean_seconds.mean, pb, sizeof(pb)), verdict);
		else
			fprintf(f, "%s: %s%s times the throughput of %s, p99 %s vs %s (%s)\n",
				gpushare_strategy_name(s->strategy), ratio, sd, gpushare_strategy_name(b->strategy),
				/* The table's p99 (the mean over the repeats), so that one p99 is shown. */
				gpushare_fmt_seconds(s->p99_seconds.mean, pa, sizeof(pa)),
				gpushare_fmt_seconds(b->p99_seconds.mean, pb, sizeof(pb)), verdict);
	}
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the table: %s", strerror(errno));
	return GPUSHARE_OK;
}

int gpushare_bench_write_table(const struct gpushare_bench_report *r, FILE *f, bool verbose)
{
	const struct gpushare_bench_config *c = r->config;
	bool jobs = job_mode(c);
	bool repeated = r->repeats >= 2 && r->n_summary;
	char label[GPUSHARE_BENCH_MAX_MIX * GPUSHARE_BENCH_MIX_LABEL];

	if (c && c->command)
		fprintf(f, "command '%s' in %s mode, batch %ld, %d worker%s, ", c->command[0],
			gpushare_cmd_mode_name(c->command_mode), c->wl.batch, c->workers, c->workers == 1 ? "" : "s");
	else if (c && c->n_mix >= 2)
		fprintf(f, "a mix of %d workloads (%s), batch %ld, %d workers (%d each), ", c->n_mix,
			gpushare_bench_workload_label(c, label, sizeof(label)), c->wl.batch, c->workers,
			c->workers / c->n_mix);
	else if (c && c->wl.desc)
		fprintf(f, "workload %s, batch %ld, %d worker%s, ", c->wl.desc->name, c->wl.batch, c->workers,
			c->workers == 1 ? "" : "s");
	if (c && (c->wl.desc || c->command)) {
		char d[24], w[24], rate[32];

		if (c->load == GPUSHARE_LOAD_OPEN)
			fprintf(f, "open loop, %s arrivals at %s/s, %s dispatch%s, ", gpushare_arrival_name(c->arrival),
				gpushare_fmt_si(c->rate, rate, sizeof(rate)), gpushare_dispatch_name(c->dispatch),
				c->find_peak ? " (first step of --find-peak)" : "");
		if (c->requests)
			fprintf(f, "%" PRIu64 " %s per worker", c->requests, jobs ? "jobs" : "requests");
		else
			fprintf(f, "%s window", gpushare_fmt_seconds((double)c->duration_ns / 1e9, d, sizeof(d)));
		if (c->warmup_adaptive && !c->requests && c->load != GPUSHARE_LOAD_OPEN && !c->command)
			fprintf(f, " after a warm-up until the rate is stable (at most %s)",
				gpushare_fmt_seconds((double)c->warmup_ns / 1e9, w, sizeof(w)));
		else
			fprintf(f, " after %s warm-up", gpushare_fmt_seconds((double)c->warmup_ns / 1e9, w, sizeof(w)));
		if (repeated)
			fprintf(f, ", %d repeats (interleaved; figures are means)", r->repeats);
		if (r->gpu_name[0])
			fprintf(f, ", GPU %d %s", r->gpu_index, r->gpu_name);
		fputc('\n', f);
	}
	if (jobs)
		fprintf(f, JOB_ROW_FMT, "strategy", "workers", repeated ? "runs" : "jobs", "jobs/s", "items/s", "p50 s/job",
			"p99 s/job", "p99.9 s/job", "fairness", "E_N", "status");
	else
		fprintf(f, ROW_FMT, "strategy", "workers", repeated ? "runs" : "requests", "req/s", "items/s", "p50", "p99",
			"p99.9", "fairness", "E_N", "status");
	if (r->ceiling)
		table_row(f, r->ceiling, verbose, c);
	if (repeated) {
		for (size_t i = 0; i < r->n_summary; i++)
			summary_row(f, r, &r->summary[i], verbose);
	} else {
		for (size_t i = 0; i < r->n_results; i++) {
			table_row(f, &r->results[i], verbose, c);
			for (size_t g = 0; r->n_gpus > 1 && g < r->n_gpus; g++) {
				char rb[24], ib[24];
				size_t n;
				double rps, ips;

				bench_gpu_sum(r, &r->results[i], g, &n, &rps, &ips);
				fprintf(f, "  GPU %d %s: %zu workers, %s, %s\n", r->gpu_indices[g], r->gpu_uuids[g], n,
					gpushare_fmt_rate(rps, "req/s", rb, sizeof(rb)),
					gpushare_fmt_rate(ips, "items/s", ib, sizeof(ib)));
			}
			/* Job mode: "requests" are jobs and the window of K jobs is the makespan. */
			if (jobs && c->requests && r->results[i].status == GPUSHARE_RESULT_OK) {
				char ms[24], jr[24];

				fprintf(f, "  jobs: %" PRIu64 " in a makespan of %s, %s\n", r->results[i].requests,
					gpushare_fmt_seconds(r->results[i].window_seconds, ms, sizeof(ms)),
					gpushare_fmt_rate(r->results[i].requests_per_second, "jobs/s", jr, sizeof(jr)));
			}
		}
	}
	if (c && c->n_mix >= 2 && (repeated || r->n_summary >= 2))
		fprintf(f, "(a mix: items/s over the repeats and the comparison below are of the score, the geometric "
			"mean of its workloads' items/s)\n");
	if (r->n_summary)
		gpushare_bench_write_relative(r, f);
	if (ferror(f))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write the table: %s", strerror(errno));
	return GPUSHARE_OK;
}

