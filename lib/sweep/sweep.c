/*
 * The sweep: a grid of bench runs (workload shape x strategy x workers x
 * batch), repeated and interleaved (round robin over the cells per repeat),
 * each finished run appended at once to a JSON Lines file with fsync, so an
 * interrupted sweep loses at most the run in progress and --resume carries
 * on where it stopped. One private MPS daemon serves every mps and mps-split
 * run, so its start-up is paid once. In command mode the one shape is the
 * user's program, run by each bench run as `gpushare bench -- CMD` would.
 * With --metrics-listen one Prometheus server serves every run, each run's
 * series labelled with its cell and repeat. With --find-peak each cell is
 * one bench peak search (the rate is then not an axis of the grid: the
 * search picks its rates, starting at the one --rate). The record format lives in
 * sweep_record.c; reading the file back is report_load.c's job.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys.h"
#include "json.h"
#include "gpushare/bench.h"
#include "gpushare/files.h"
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"
#include "gpushare/mps.h"
#include "gpushare/report.h"
#include "gpushare/sweep.h"
#include "run_ctx.h"

/* ---- configuration ---- */

int gpushare_sweep_config_init(struct gpushare_sweep_config *s)
{
	int rc;

	memset(s, 0, sizeof(*s));
	rc = gpushare_bench_config_init(&s->bench);
	if (rc)
		return rc;
	s->repeats = 5;
	s->max_repeats = 20;
	s->strategies[0] = GPUSHARE_STRATEGY_TIMESLICE;
	s->strategies[1] = GPUSHARE_STRATEGY_MPS;
	s->n_strategies = 2;
	s->workers[0] = 1;
	s->workers[1] = 2;
	s->workers[2] = 4;
	s->n_workers = 3;
	s->batches[0] = 1;
	s->n_batches = 1;
	return GPUSHARE_OK;
}

void gpushare_sweep_config_release(struct gpushare_sweep_config *s)
{
	/* Nothing is allocated today; kept so callers need not change when
	 * shapes or lists grow beyond fixed arrays. */
	(void)s;
}

int gpushare_sweep_add_shape(struct gpushare_sweep_config *s, const char *spec)
{
	struct gpushare_sweep_shape *sh;
	int rc, n;

	if (!spec || !*spec)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty workload in the list");
	if (strlen(spec) >= sizeof(sh->label))
		return gpushare_fail(GPUSHARE_E_INVAL, "workload shape '%.40s...' is too long", spec);
	if (s->n_shapes >= GPUSHARE_SWEEP_MAX_SHAPES)
		return gpushare_fail(GPUSHARE_E_INVAL, "more than %d workload shapes", GPUSHARE_SWEEP_MAX_SHAPES);
	if (s->bench.command)
		return gpushare_fail(GPUSHARE_E_INVAL, "give workloads or a command, not both");
	for (size_t i = 0; i < s->n_shapes; i++) {
		if (!strcmp(s->shapes[i].label, spec))
			return gpushare_fail(GPUSHARE_E_INVAL, "workload shape '%s' is listed twice", spec);
	}
	sh = &s->shapes[s->n_shapes];
	memset(sh, 0, sizeof(*sh));
	/* One spec, or a mix of them (the same parser as bench's --workload). */
	rc = gpushare_bench_parse_mix(spec, sh->mix, &n);
	if (rc)
		return rc;
	sh->wl = sh->mix[0].wl;
	if (n < 2)
		memset(sh->mix, 0, sizeof(sh->mix));
	sh->n_mix = n >= 2 ? n : 0;
	gpushare_utf8_copy(sh->label, sizeof(sh->label), spec);
	s->n_shapes++;
	return GPUSHARE_OK;
}

/* Append text to buf (size bytes, *len used), as valid UTF-8 and cut only
 * between characters; false when it did not all fit. */
static bool label_append(char *buf, size_t size, size_t *len, const char *text)
{
	char *fixed = gpushare_utf8_dup(text);
	size_t want, got;

	if (!fixed)
		return false;
	want = strlen(fixed);
	got = gpushare_utf8_copy(buf + *len, size - *len, fixed);
	*len += got;
	free(fixed);
	return got == want;
}

int gpushare_sweep_set_command(struct gpushare_sweep_config *s, char **argv, int mode)
{
	struct gpushare_sweep_shape *sh;
	size_t len = 0;
	bool fits;

	if (!argv || !argv[0] || !argv[0][0])
		return gpushare_fail(GPUSHARE_E_INVAL, "no command given");
	if (s->n_shapes)
		return gpushare_fail(GPUSHARE_E_INVAL, "give workloads or a command, not both");
	sh = &s->shapes[0];
	memset(sh, 0, sizeof(*sh));
	/* The bench default workload keeps the configuration checkable; a
	 * command run never looks at it (as for `bench -- CMD`). */
	sh->wl = s->bench.wl;
	sh->command = true;
	fits = label_append(sh->label, sizeof(sh->label), &len, "command:");
	for (size_t i = 0; argv[i] && fits; i++)
		fits = (i == 0 || label_append(sh->label, sizeof(sh->label), &len, " ")) &&
		       label_append(sh->label, sizeof(sh->label), &len, argv[i]);
	if (!fits)
		memcpy(sh->label + gpushare_utf8_cut(sh->label, len > 3 ? len - 3 : 0), "...", 4);
	s->bench.command = argv;
	s->bench.command_mode = mode;
	s->n_shapes = 1;
	return GPUSHARE_OK;
}

int gpushare_sweep_set_option(struct gpushare_sweep_config *s, const char *name, const char *value)
{
	size_t set = 0;

	for (size_t i = 0; i < s->n_shapes; i++) {
		int rc;

		if (s->shapes[i].command)
			continue;
		/* As bench: where the spec gave it, the option is refused. */
		for (int m = 0; m < s->shapes[i].n_mix; m++) {
			rc = gpushare_wl_params_set_unless_given(&s->shapes[i].mix[m].wl, s->shapes[i].mix[m].label, name,
								 value);
			if (rc < 0)
				return rc;
			set += (size_t)rc;
		}
		if (s->shapes[i].n_mix >= 2) {
			long batch = s->shapes[i].wl.batch;

			s->shapes[i].wl = s->shapes[i].mix[0].wl;   /* the first workload's, as when added */
			s->shapes[i].wl.batch = batch;
			continue;
		}
		rc = gpushare_wl_params_set_unless_given(&s->shapes[i].wl, s->shapes[i].label, name, value);
		if (rc < 0)
			return rc;
		set += (size_t)rc;
	}
	if (!set) {
		gpushare_clear_error();
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "no workload of the sweep has option '%s'", name);
	}
	return GPUSHARE_OK;
}

/* An item of the axis for N workers: its percentage, 0 when that is the
 * default share. */
static double resolve_tpct(const struct gpushare_sweep_shape *sh, const struct gpushare_sweep_tpct *t, int workers)
{
	/* A mix: the first workload's share, its even share 100/M the default. */
	double unit = sh->n_mix >= 2 ? 100.0 / sh->n_mix : 100.0 / (workers > 0 ? workers : 1);
	double def = sh->n_mix >= 2 ? floor(unit) : gpushare_sweep_default_thread_pct(workers);
	double v = t->times ? floor(t->value * unit) : t->value;

	if (v > 100)
		v = 100;
	if (v < 1)
		v = 1;
	return v == def ? 0 : v;
}

/* The thread percentage axis of shape sh: a mix's own under "auto". */
static const struct gpushare_sweep_tpct *tpct_axis(const struct gpushare_sweep_config *s,
						    const struct gpushare_sweep_shape *sh, size_t *n)
{
	static const struct gpushare_sweep_tpct mix_auto[] = { { 0.5, true }, { 1, true }, { 1.5, true } };

	if (sh->n_mix >= 2 && s->thread_pcts_auto && s->n_thread_pcts) {
		*n = sizeof(mix_auto) / sizeof(mix_auto[0]);
		return mix_auto;
	}
	*n = s->n_thread_pcts;
	return s->thread_pcts;
}

/* The bench configuration of one cell. */
static void cell_config(const struct gpushare_sweep_config *s, const struct gpushare_sweep_cell *cell,
			struct gpushare_bench_config *c)
{
	const struct gpushare_sweep_shape *sh = &s->shapes[cell->shape];

	*c = s->bench;
	c->wl = sh->wl;
	c->wl.batch = cell->batch;
	memcpy(c->mix, sh->mix, sizeof(c->mix));
	c->n_mix = sh->n_mix;
	c->n_mix_share = 0;
	c->workers = cell->workers;
	c->workers_given = true;
	c->strategies[0] = cell->strategy;
	c->n_strategies = 1;
	c->ceiling = false;
	c->n_thread_percentage = 0;
	if (cell->thread_pct > 0 && sh->n_mix >= 2) {
		gpushare_bench_mix_shares(sh->n_mix, cell->thread_pct, c->mix_share);
		c->n_mix_share = sh->n_mix;
	} else if (cell->thread_pct > 0) {
		c->thread_percentage[0] = cell->thread_pct;
		c->n_thread_percentage = 1;
	}
	if (cell->rate > 0)
		c->rate = cell->rate;
	else if (s->bench.find_peak && s->n_rates == 1)
		c->rate = s->rates[0];   /* the first rate of every search */
}

/* The rates that are an axis of the grid: none in closed loop and for a
 * peak search (the search picks its own). */
static size_t grid_rates(const struct gpushare_sweep_config *s)
{
	return s->bench.find_peak ? 0 : s->n_rates;
}

int gpushare_sweep_cells(const struct gpushare_sweep_config *s, struct gpushare_sweep_cell **cells, size_t *n)
{
	size_t n_rates = grid_rates(s) ? grid_rates(s) : 1, n_tp = 1;
	size_t total = s->n_shapes * s->n_strategies * s->n_workers * s->n_batches * n_rates * n_tp, k = 0;
	struct gpushare_sweep_cell *v;

	*cells = NULL;
	*n = 0;
	for (size_t a = 0; a < s->n_shapes; a++) {
		size_t m;

		(void)tpct_axis(s, &s->shapes[a], &m);
		n_tp = m > n_tp ? m : n_tp;
	}
	total = s->n_shapes * s->n_strategies * s->n_workers * s->n_batches * n_rates * n_tp;
	if (total == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "the grid is empty");
	v = calloc(total, sizeof(*v));
	if (!v)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate %zu cells", total);
	for (size_t a = 0; a < s->n_shapes; a++)
		for (size_t b = 0; b < s->n_strategies; b++)
			for (size_t w = 0; w < s->n_workers; w++)
				for (size_t h = 0; h < n_tp; h++)
					for (size_t t = 0; t < s->n_batches; t++)
						for (size_t q = 0; q < n_rates; q++) {
							struct gpushare_sweep_cell *c = &v[k];
							double tp = 0;
							bool seen = false;
							size_t len;

							const struct gpushare_sweep_shape *sh = &s->shapes[a];
							size_t n_axis;
							const struct gpushare_sweep_tpct *axis = tpct_axis(s, sh, &n_axis);

							/* The thread percentage: mps-split only; the
							 * items that come to one percentage, one cell. */
							if (gpushare_strategy_client_share(s->strategies[b]) && h < n_axis)
								tp = resolve_tpct(sh, &axis[h], s->workers[w]);
							else if (h > 0)
								continue;
							for (size_t g = 0; g < h && gpushare_strategy_client_share(s->strategies[b]); g++)
								seen |= resolve_tpct(sh, &axis[g], s->workers[w]) == tp;
							if (seen)
								continue;
							k++;
							c->shape = (int)a;
							c->n_mix = sh->n_mix;
							c->strategy = s->strategies[b];
							c->workers = s->workers[w];
							c->batch = s->batches[t];
							c->thread_pct = tp;
							c->rate = grid_rates(s) ? s->rates[q] : 0;
							snprintf(c->key, sizeof(c->key), "%s|%s|w%d|b%ld", s->shapes[a].label,
								 gpushare_strategy_name(c->strategy), c->workers, c->batch);
							len = strlen(c->key);
							if (tp > 0)
								snprintf(c->key + len, sizeof(c->key) - len, "|t%g", tp);
							len = strlen(c->key);
							if (c->rate > 0)
								snprintf(c->key + len, sizeof(c->key) - len, "|r%.9g", c->rate);
							else if (s->bench.find_peak)
								snprintf(c->key + len, sizeof(c->key) - len, "|peak");
						}
	*cells = v;
	*n = k;
	return GPUSHARE_OK;
}

int gpushare_sweep_config_check(const struct gpushare_sweep_config *s)
{
	struct gpushare_bench_config *c;
	struct gpushare_sweep_cell *cells;
	size_t n;
	int rc;

	if (s->n_shapes == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "no workload given");
	if (s->n_strategies == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "no strategy given");
	if (s->n_workers == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "no worker count given");
	if (s->n_batches == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "no batch size given");
	if (s->repeats < 1)
		return gpushare_fail(GPUSHARE_E_INVAL, "--repeats must be at least 1");
	if (s->n_thread_pcts) {
		bool split = false;

		for (size_t i = 0; i < s->n_strategies; i++)
			split |= gpushare_strategy_client_share(s->strategies[i]);
		if (!split)
			return gpushare_fail(GPUSHARE_E_INVAL, "--thread-percentage is an axis of the mps-split cells only; "
					     "add mps-split to --strategy or leave it out");
	}
	if (s->n_rates && s->bench.load != GPUSHARE_LOAD_OPEN)
		return gpushare_fail(GPUSHARE_E_INVAL, "--rate needs --load open");
	if (s->bench.find_peak && s->n_rates > 1)
		return gpushare_fail(GPUSHARE_E_INVAL, "--find-peak takes one --rate, the first rate each search tries, "
				     "not a list; without --find-peak a sweep measures the rates of --rate LIST");
	if (s->bench.find_peak && s->target_noise > 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "--target-noise does not apply to --find-peak (it repeats a cell until "
				     "its throughput is known); give --repeats");
	if (s->target_noise < 0 || s->target_noise >= 1)
		return gpushare_fail(GPUSHARE_E_INVAL, "--target-noise must be in (0%%, 100%%)");
	if (s->target_noise > 0 && s->max_repeats < s->repeats)
		return gpushare_fail(GPUSHARE_E_INVAL, "--max-repeats %d is below --repeats %d", s->max_repeats, s->repeats);
	for (size_t i = 0; i < s->n_shapes; i++) {
		struct gpushare_wl_params p = s->shapes[i].wl;

		if (s->shapes[i].command != (s->bench.command != NULL) || (s->shapes[i].command && s->n_shapes != 1))
			return gpushare_fail(GPUSHARE_E_INVAL, "give workloads or a command, not both");
		for (size_t b = 0; b < s->n_batches && !s->shapes[i].command; b++) {
			p.batch = s->batches[b];
			if (gpushare_wl_params_check(&p))
				return gpushare_fail(GPUSHARE_E_INVAL, "workload '%s': %s", s->shapes[i].label,
						     gpushare_errdetail());
			for (int m = 0; m < s->shapes[i].n_mix; m++) {
				struct gpushare_wl_params q = s->shapes[i].mix[m].wl;

				q.batch = s->batches[b];
				if (gpushare_wl_params_check(&q))
					return gpushare_fail(GPUSHARE_E_INVAL, "workload '%s': %s", s->shapes[i].mix[m].label,
							     gpushare_errdetail());
			}
		}
	}
	rc = gpushare_sweep_cells(s, &cells, &n);
	if (rc)
		return rc;
	c = malloc(sizeof(*c));
	if (!c) {
		free(cells);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < n && !rc; i++) {
		cell_config(s, &cells[i], c);
		rc = gpushare_bench_config_check(c);
	}
	if (!rc && s->bench.command) {
		/* Once for every strategy: the streams refusal, and the program
		 * resolved before any run (bench's own check, so the same words). */
		cell_config(s, &cells[0], c);
		memcpy(c->strategies, s->strategies, s->n_strategies * sizeof(c->strategies[0]));
		c->n_strategies = s->n_strategies;
		rc = gpushare_bench_command_check(c);
	}
	free(c);
	free(cells);
	return rc;
}

/* ---- the run ---- */

struct cell_state {
	bool *recorded;          /* [round]: a run with status ok or partial is in the file (racing: any status) */
	double *val;             /* [round]: that run's sample (as in tput); NAN when it left none */
	double *tput;            /* items/s of ok runs */
	size_t n_tput;
};

struct sweep_ctx {
	const struct gpushare_sweep_config *s;
	struct gpushare_sweep_summary *sum;
	struct gpushare_sweep_cell *cells;
	size_t n_cells;
	struct cell_state *st;
	int rounds;                    /* max repeats per cell */
	int fd;                        /* results file, O_APPEND */
	int lock_fd;                   /* the results directory's lock, -1 none */
	const char *path;
	struct gpushare_bench_config *c;   /* the run's configuration (large, on the heap) */
	uint64_t t0_ns;
	double run_seconds_sum;        /* of the runs done, for the ETA */
	unsigned planned;
	int cuda_version;
	bool nvml;
	struct gpushare_run_ctx run;   /* the sweep's run directory and MPS daemon, for every mps cell */
	bool want_daemon;              /* racing: start it once a cell that still runs needs it */
	char visible[128];             /* the GPUs it serves */
	struct gpushare_metrics_bench *metrics;   /* --metrics-listen: one view for every run; NULL off */
	bool metrics_owned;            /* started here (not the caller's bench.metrics) */
	/* The run in progress, for progress callbacks. */
	const struct gpushare_sweep_cell *cur;
	int cur_repeat;
};

static double eta(const struct sweep_ctx *x)
{
	unsigned done = x->sum->runs_done;

	if (done == 0 || x->planned < done)
		return -1;
	return x->run_seconds_sum / done * (x->planned - done);
}

static void report_progress(struct sweep_ctx *x, bool done, bool ok, double ips,
			    const struct gpushare_bench_progress *bp, const struct gpushare_bench_peak *peak)
{
	struct gpushare_sweep_progress p;

	if (!x->s->progress || !x->cur)
		return;
	memset(&p, 0, sizeof(p));
	p.cell = x->cur;
	p.shape_label = x->s->shapes[x->cur->shape].label;
	p.repeat = x->cur_repeat;
	p.runs_done = x->sum->runs_done;
	p.runs_planned = x->planned;
	p.runs_skipped = x->sum->runs_skipped;
	p.elapsed_seconds = (double)(gpushare_now_ns() - x->t0_ns) / 1e9;
	p.eta_seconds = eta(x);
	p.run_done = done;
	p.run_ok = ok;
	p.items_per_second = ips;
	p.bench = bp;
	p.peak = peak;
	x->s->progress(x->s->progress_arg, &p);
}

static void bench_progress(void *arg, const struct gpushare_bench_progress *bp)
{
	report_progress(arg, false, false, 0, bp, NULL);
}

static int find_cell(const struct sweep_ctx *x, const struct gpushare_report_run *run)
{
	for (size_t i = 0; i < x->n_cells; i++) {
		const struct gpushare_sweep_cell *c = &x->cells[i];

		char label[128];   /* a run's shape: at most 127 bytes */

		if (c->strategy != run->strategy || c->workers != run->workers || c->batch != run->batch ||
		    c->rate != run->rate || c->thread_pct != run->thread_pct)
			continue;
		/* A run at a set thread percentage is read back under its label. */
		gpushare_report_shape_label(x->s->shapes[c->shape].label, c->thread_pct, label, sizeof(label));
		if (!strcmp(label, run->shape))
			return (int)i;
	}
	return -1;
}

/* The sample of round r's run of a cell. */
static int add_sample(struct cell_state *st, int r, double v)
{
	double *nv = realloc(st->tput, (st->n_tput + 1) * sizeof(*nv));

	if (!nv)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	st->tput = nv;
	st->tput[st->n_tput++] = v;
	st->val[r] = v;
	return GPUSHARE_OK;
}

/* ---- the results directory: one writer, and resume only what matches ---- */

/* The lock file beside the results file: one sweep writes a results
 * directory at a time, and a sweep that died holds nothing (flock). */
static int lock_results_dir(struct sweep_ctx *x)
{
	char path[GPUSHARE_PATH_MAX + 32];
	const char *slash = strrchr(x->path, '/');
	int dlen = slash ? (int)(slash - x->path) : 1;
	pid_t holder;
	int rc;

	if ((size_t)snprintf(path, sizeof(path), "%.*s/%s", dlen, slash ? x->path : ".",
			     GPUSHARE_SWEEP_LOCK_FILE) >= sizeof(path))
		return gpushare_fail(GPUSHARE_E_INVAL, "results path '%s' is too long", x->path);
	rc = gpushare_lock_acquire(path, 0, &x->lock_fd, &holder);
	if (rc == GPUSHARE_E_BUSY) {
		if (holder)
			return gpushare_fail(GPUSHARE_E_DIR, "results directory '%.*s' is in use by another sweep (pid %ld)",
					     dlen, slash ? x->path : ".", (long)holder);
		return gpushare_fail(GPUSHARE_E_DIR, "results directory '%.*s' is in use by another sweep", dlen,
				     slash ? x->path : ".");
	}
	if (rc) {
		char detail[512];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		return gpushare_fail(GPUSHARE_E_DIR, "%s", detail);
	}
	return GPUSHARE_OK;
}

/* The fields of a run's bench configuration that change what is measured;
 * a resumed sweep must ask for the same ones (strategy, workers and batch
 * are the cell itself; the start timeout and the MPS pipe directory are not
 * part of the measurement). The open-loop ones were added later: a record
 * without them was measured in closed loop (see closed_default()). */
static const char *const resume_fields[] = {
	"workload", "workload_options", "command", "command_mode", "batch", "workers", "mode",
	"duration_seconds", "requests_per_worker", "warmup_seconds", "warmup_requests", "gpu",
	"thread_percentage", "mem_limit_bytes", "priority", "load", "rate_per_second", "arrival", "seed",
	"dispatch", "find_peak",
};

/* The record's settings of a peak search (root "peak_search"): the bound,
 * resolution, tail samples, rate limit and first rate must match too. */
#define RESUME_PEAK_FIELD "peak_search"

/* What an absent field of an older record stands for: the closed-loop
 * value (null, false, "closed"). */
static bool closed_default(const cJSON *v)
{
	return !v || cJSON_IsNull(v) || cJSON_IsFalse(v) || (cJSON_IsString(v) && !strcmp(v->valuestring, "closed"));
}

/* What a run of cell k records: an object with "config" (bench.config) and
 * "peak_search", as the record of that run has them. */
static cJSON *expected_config(struct sweep_ctx *x, size_t k)
{
	struct gpushare_bench_report r;
	cJSON *doc, *out, *item;
	char *text = NULL;
	bool ok;

	cell_config(x->s, &x->cells[k], x->c);
	memset(&r, 0, sizeof(r));
	r.gpu_index = -1;
	r.config = x->c;
	if (gpushare_sweep_record(&x->cells[k], x->s->shapes[x->cells[k].shape].label, 0, &r, GPUSHARE_OK, NULL, -1,
				  &text))
		return NULL;
	doc = cJSON_Parse(text);
	free(text);
	out = cJSON_CreateObject();
	if (!doc || !out) {
		cJSON_Delete(doc);
		cJSON_Delete(out);
		return NULL;
	}
	item = cJSON_DetachItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "bench"), "config");
	ok = !item || gpushare_json_add(out, "config", item);
	item = ok ? cJSON_DetachItemFromObjectCaseSensitive(doc, RESUME_PEAK_FIELD) : NULL;
	ok = ok && (!item || gpushare_json_add(out, RESUME_PEAK_FIELD, item));
	cJSON_Delete(doc);
	if (!ok) {
		cJSON_Delete(out);
		return NULL;
	}
	return out;
}

/* Whether a recorded field matches what this sweep asks for; an absent one
 * (an older record) stands for the closed-loop value. */
static bool field_matches(const cJSON *got, const cJSON *want)
{
	if (!got)
		return closed_default(want);
	return want && cJSON_Compare(got, want, true);
}

static void short_json(const cJSON *v, char *buf, size_t len)
{
	char *t = gpushare_json_print(v, false);

	snprintf(buf, len, "%s", t ? t : "(absent)");
	if (t && strlen(t) >= len && len > 4)
		memcpy(buf + gpushare_utf8_cut(buf, len - 4), "...", 4);
	free(t);
}

/* Refuse to resume when a recorded run of a cell of this grid was measured
 * with another configuration: its samples would be merged with the new ones. */
static int check_resume_config(struct sweep_ctx *x)
{
	cJSON **want = calloc(x->n_cells, sizeof(*want));
	size_t len = 0, pos = 0, line = 0;
	char *data = NULL;
	int rc = want ? GPUSHARE_OK : gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");

	if (!rc)
		rc = gpushare_read_file(x->path, (size_t)1 << 30, &data, &len);
	while (!rc && pos < len) {
		const char *s = data + pos, *nl = memchr(s, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - s) : len - pos;
		struct gpushare_report_run run;
		cJSON *root;
		const cJSON *got;
		int k;

		pos += l + (nl ? 1 : 0);
		line++;
		root = cJSON_ParseWithLength(s, l);
		if (!root)
			continue;
		got = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "bench"), "config");
		k = -1;
		if (cJSON_IsObject(got)) {
			char *t = cJSON_PrintUnformatted(root);

			if (t && gpushare_report_parse_line(t, strlen(t), &run) == GPUSHARE_OK) {
				k = find_cell(x, &run);
				gpushare_report_run_release(&run);
			}
			free(t);
		}
		if (k >= 0 && !want[k] && !(want[k] = expected_config(x, (size_t)k)))
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		for (size_t f = 0; !rc && k >= 0 && f <= sizeof(resume_fields) / sizeof(resume_fields[0]); f++) {
			/* The last round compares the peak search's settings. */
			bool peak = f == sizeof(resume_fields) / sizeof(resume_fields[0]);
			const char *name = peak ? RESUME_PEAK_FIELD : resume_fields[f];
			const cJSON *a = cJSON_GetObjectItemCaseSensitive(peak ? root : got, name);
			const cJSON *b = cJSON_GetObjectItemCaseSensitive(
				peak ? want[k] : cJSON_GetObjectItemCaseSensitive(want[k], "config"), name);
			char ra[160], rb[160];

			char sub[64];

			if (field_matches(a, b))
				continue;
			snprintf(sub, sizeof(sub), "%s", name);
			/* Name the setting of the search that differs, not the whole object. */
			if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
				for (const cJSON *w = b->child; w; w = w->next) {
					const cJSON *g = cJSON_GetObjectItemCaseSensitive(a, w->string);

					if (g && cJSON_Compare(g, w, true))
						continue;
					snprintf(sub, sizeof(sub), "%s.%s", name, w->string);
					a = g;
					b = w;
					break;
				}
			}
			name = sub;
			short_json(a, ra, sizeof(ra));
			short_json(b, rb, sizeof(rb));
			rc = gpushare_fail(GPUSHARE_E_INVAL,
					   "--resume: line %zu of '%s' was measured with %s %s, this sweep asks for %s; "
					   "resume with the options of that sweep, or give another --out",
					   line, x->path, name, ra, rb);
		}
		cJSON_Delete(root);
	}
	for (size_t k = 0; want && k < x->n_cells; k++)
		cJSON_Delete(want[k]);
	free(want);
	free(data);
	return rc;
}

/* Read what is recorded already. Without resume the file must be empty. */
static int load_existing(struct sweep_ctx *x)
{
	struct gpushare_report rep;
	struct gpushare_report_cursor cur;
	const struct gpushare_report_run *run;
	struct stat sb;
	int rc;

	if (lstat(x->path, &sb) != 0) {
		if (errno == ENOENT)
			return GPUSHARE_OK;
		return gpushare_fail(GPUSHARE_E_IO, "cannot read '%s': %s", x->path, strerror(errno));
	}
	if (S_ISLNK(sb.st_mode))
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is a symbolic link; refusing to write through it", x->path);
	if (!S_ISREG(sb.st_mode))
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is not a regular file", x->path);
	if (sb.st_size == 0)
		return GPUSHARE_OK;
	if (!x->s->resume)
		return gpushare_fail(GPUSHARE_E_BUSY,
				     "results file '%s' already holds runs; give --resume to continue that sweep, or another --out",
				     x->path);
	rc = check_resume_config(x);
	if (rc)
		return rc;
	rc = gpushare_report_load(x->path, &rep);
	if (rc) {
		gpushare_report_release(&rep);
		return rc;
	}
	x->sum->bad_lines = (unsigned)rep.n_bad;
	/* In file order: the first record of a (cell, repeat) counts. */
	rc = gpushare_report_cursor_open(&rep, &cur);
	while (!rc && (run = gpushare_report_cursor_next(&cur))) {
		int k = find_cell(x, run);

		/* Failed runs are tried again, except in a race, whose decisions
		 * took them as they were (a resumed race takes the same ones);
		 * runs of cells outside this grid stay in the file for the
		 * report. */
		if (k < 0 || run->repeat < 0 || run->repeat >= x->rounds ||
		    (run->status == GPUSHARE_RUN_FAILED && !x->s->select))
			continue;
		if (x->st[k].recorded[run->repeat])
			continue;
		x->st[k].recorded[run->repeat] = true;
		if (run->status == GPUSHARE_RUN_OK && !run->find_peak)
			rc = add_sample(&x->st[k], run->repeat, run->items_per_second);
		else if (run->status == GPUSHARE_RUN_OK && run->peak_found)
			rc = add_sample(&x->st[k], run->repeat, run->peak_rate);
	}
	gpushare_report_cursor_close(&cur);
	gpushare_report_release(&rep);
	return rc;
}

static int open_results(struct sweep_ctx *x)
{
	struct stat sb;

	int rc = gpushare_open_append(x->path, 0644, &x->fd);

	if (rc)
		return rc;
	/* A torn last line (a sweep killed mid-write) stays a corrupt line of
	 * its own instead of swallowing the next record. */
	if (fstat(x->fd, &sb) == 0 && sb.st_size > 0) {
		char last = '\n';
		int rfd = open(x->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

		if (rfd >= 0) {
			if (pread(rfd, &last, 1, sb.st_size - 1) != 1)
				last = '\n';
			close(rfd);
		}
		if (last != '\n' && write(x->fd, "\n", 1) != 1)
			return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s", x->path, strerror(errno));
	}
	return GPUSHARE_OK;
}

static int append_line(struct sweep_ctx *x, const char *line)
{
	size_t len = strlen(line), off = 0;
	char *buf = malloc(len + 2);

	if (!buf)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	memcpy(buf, line, len);
	buf[len++] = '\n';
	/* One write for the whole line: O_APPEND keeps it in one piece. */
	while (off < len) {
		ssize_t w = write(x->fd, buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;

			free(buf);
			return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s", x->path, strerror(e));
		}
		off += (size_t)w;
	}
	free(buf);
	if (fsync(x->fd) != 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot sync '%s': %s", x->path, strerror(errno));
	return GPUSHARE_OK;
}

/* One daemon for the whole sweep, started as the mps strategy starts its
 * own; the runs of mps cells use it (--mps-pipe-dir). */
static int start_daemon(struct sweep_ctx *x, const char *visible)
{
	int rc;

	gpushare_run_ctx_init(&x->run, &(struct gpushare_run_opts){ .prefix = "sweep", .visible = visible, .keeper = true });
	rc = gpushare_run_ctx_open(&x->run);
	if (rc)
		return rc;
	rc = gpushare_run_ctx_start(&x->run, GPUSHARE_STRATEGY_MPS);
	if (rc) {
		struct gpushare_errsave e;

		/* The run directory goes when the sweep ends: say so, so the
		 * paths in the message are not looked for. */
		gpushare_error_save(&e);
		return gpushare_fail(rc, "the sweep's MPS daemon: %s (its run directory '%s' is removed)", e.detail,
				     x->run.dir);
	}
	x->sum->mps_daemon_started = x->run.sx.mps.started;
	snprintf(x->sum->mps_pipe_dir, sizeof(x->sum->mps_pipe_dir), "%s", x->run.sx.mps.m.pipe_dir);
	return GPUSHARE_OK;
}

/* GPU facts once per sweep: the CUDA driver version for the records and the
 * UUID the daemon is pinned to (as bench pins its own daemon). NVML stays
 * open for the whole sweep so the runs do not load it again. */
static void query_gpu(struct sweep_ctx *x, char *visible, size_t len)
{
	struct gpushare_system_info sys;
	unsigned idx;

	snprintf(visible, len, "%s", x->s->bench.gpu);
	x->cuda_version = -1;
	if (gpushare_nvml_open() != GPUSHARE_OK) {
		gpushare_clear_error();
		return;
	}
	x->nvml = true;
	memset(&sys, 0, sizeof(sys));
	if (gpushare_system_query_nvml(&sys) == GPUSHARE_OK) {
		if (sys.cuda_driver_version > 0)
			x->cuda_version = sys.cuda_driver_version;
		if (gpushare_gpu_find(x->s->bench.gpu, &idx) == GPUSHARE_OK) {
			for (size_t i = 0; i < sys.n_gpus; i++) {
				if (sys.gpus[i].index == idx && sys.gpus[i].uuid[0])
					snprintf(visible, len, "%s", sys.gpus[i].uuid);
			}
		}
		gpushare_system_release(&sys);
	}
	gpushare_clear_error();
}

/* Errors of a run that concern that run only: recorded, and the sweep goes on. */
static bool run_error_recordable(int rc)
{
	return rc == GPUSHARE_E_WORKER || rc == GPUSHARE_E_MPS_MAX_CLIENTS || rc == GPUSHARE_E_TIMEOUT ||
	       rc == GPUSHARE_E_CUDA;
}

/* One server for the whole sweep: a view listing every strategy of the grid. */
static int start_metrics(struct sweep_ctx *x)
{
	const struct gpushare_sweep_config *s = x->s;
	int rc;

	if (s->bench.metrics) {
		x->metrics = s->bench.metrics;
		return GPUSHARE_OK;
	}
	if (!s->bench.metrics_listen[0])
		return GPUSHARE_OK;
	*x->c = s->bench;
	memcpy(x->c->strategies, s->strategies, s->n_strategies * sizeof(x->c->strategies[0]));
	x->c->n_strategies = s->n_strategies;
	x->c->ceiling = false;
	rc = gpushare_metrics_bench_start(x->c, &x->metrics);
	x->metrics_owned = rc == GPUSHARE_OK;
	return rc;
}

/* Label the series of the next run with its cell and repeat, so the series
 * of every run of the sweep stay apart (and keep their final values). */
static int label_metrics(struct sweep_ctx *x, const struct gpushare_sweep_cell *cell, int repeat)
{
	char workers[16], batch[24], rep[16], label[GPUSHARE_BENCH_MAX_MIX * GPUSHARE_BENCH_MIX_LABEL];
	struct gpushare_metrics_label l[] = {
		{ "shape", x->s->shapes[cell->shape].label }, { "workers", workers }, { "batch", batch },
		{ "repeat", rep },
	};

	if (!x->metrics)
		return GPUSHARE_OK;
	snprintf(workers, sizeof(workers), "%d", cell->workers);
	snprintf(batch, sizeof(batch), "%ld", cell->batch);
	snprintf(rep, sizeof(rep), "%d", repeat);
	return gpushare_metrics_bench_set_run(x->metrics, gpushare_bench_workload_label(x->c, label, sizeof(label)), l,
					      sizeof(l) / sizeof(l[0]));
}

/* Whether a worker failed in a step of the peak search. */
static bool peak_cut(const struct gpushare_bench_peak *pk)
{
	for (int i = 0; pk->searched && i < pk->n_steps; i++) {
		if (pk->steps[i].failed_run)
			return true;
	}
	return false;
}

static int run_one(struct sweep_ctx *x, size_t k, int repeat)
{
	const struct gpushare_sweep_cell *cell = &x->cells[k];
	struct gpushare_bench_report r;
	uint64_t t0 = gpushare_now_ns();
	char error[512] = "", *line = NULL;
	bool ok;
	int rc, wrc;

	cell_config(x->s, cell, x->c);
	if (gpushare_strategy_uses_mps(cell->strategy) && x->run.sx.mps.open && !x->s->bench.mps_pipe_dir[0])
		snprintf(x->c->mps_pipe_dir, sizeof(x->c->mps_pipe_dir), "%s", x->run.sx.mps.m.pipe_dir);
	x->c->progress = bench_progress;
	x->c->progress_arg = x;
	x->c->metrics = x->metrics;
	rc = label_metrics(x, cell, repeat);
	if (rc)
		return rc;
	x->cur = cell;
	x->cur_repeat = repeat;
	report_progress(x, false, false, 0, NULL, NULL);
	rc = gpushare_bench_run(x->c, &r);
	gpushare_bench_report_settle(&r, rc);
	if (rc == GPUSHARE_E_INTERRUPTED || r.interrupted || gpushare_bench_interrupted()) {
		gpushare_bench_report_release(&r);
		return gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted");
	}
	if (rc && !run_error_recordable(rc)) {
		gpushare_bench_report_release(&r);
		return rc;
	}
	if (rc)
		snprintf(error, sizeof(error), "%s", gpushare_errdetail());
	/* A peak search that a worker failing mid-step cut short keeps its
	 * best passing step, but that peak is not a search's answer: the run
	 * is partial, as any run a worker failed in. */
	if (rc == GPUSHARE_OK && r.n_results == 1 && peak_cut(&r.results[0].peak))
		r.partial = true;
	ok = rc == GPUSHARE_OK && !r.partial && r.n_results == 1 && r.results[0].status == GPUSHARE_RESULT_OK;
	wrc = gpushare_sweep_record(cell, x->s->shapes[cell->shape].label, repeat, &r, rc, error, x->cuda_version,
				    &line);
	if (!wrc)
		wrc = append_line(x, line);
	free(line);
	if (!wrc) {
		double ips = ok ? gpushare_bench_result_score(&r.results[0]) : NAN;   /* a mix: its score */

		x->sum->runs_done++;
		if (!ok)
			x->sum->runs_failed++;
		if ((rc == GPUSHARE_OK || x->s->select) && repeat < x->rounds)
			x->st[k].recorded[repeat] = true;
		if (ok && !r.results[0].peak.searched)
			wrc = add_sample(&x->st[k], repeat, ips);
		else if (ok && r.results[0].peak.found)
			wrc = add_sample(&x->st[k], repeat, r.results[0].peak.rate);   /* the sample of a search: its peak */
		x->run_seconds_sum += (double)(gpushare_now_ns() - t0) / 1e9;
		report_progress(x, true, ok, ips, NULL, ok && r.results[0].peak.searched ? &r.results[0].peak : NULL);
	}
	gpushare_bench_report_release(&r);
	return wrc;
}

static bool converged(const struct sweep_ctx *x, size_t k)
{
	struct gpushare_ci ci;

	gpushare_median_ci(x->st[k].tput, x->st[k].n_tput, 0.95, &ci);
	return ci.n >= 2 && ci.coverage >= 0.95 && gpushare_ci_rel_halfwidth(&ci) <= x->s->target_noise;
}

/* No time for one more run of the mean length within the budget. */
static bool budget_spent(struct sweep_ctx *x)
{
	double spent = (double)(gpushare_now_ns() - x->t0_ns) / 1e9;
	double per_run = x->sum->runs_done ? x->run_seconds_sum / x->sum->runs_done : x->s->budget_run_seconds;

	if (x->s->budget_seconds <= 0 || spent + per_run <= x->s->budget_seconds)
		return false;
	x->sum->budget_out = true;
	return true;
}

/* --halt: enough runs of this invocation failed; start no more. */
static bool halted(struct sweep_ctx *x)
{
	if (!x->s->halt || x->sum->runs_failed < x->s->halt)
		return false;
	x->sum->halted = true;
	return true;
}

/* Racing: each round runs the active cells, then select() narrows them. */
static int race_loop(struct sweep_ctx *x)
{
	const struct gpushare_sweep_config *s = x->s;
	bool *active = malloc(x->n_cells * sizeof(*active));
	const double **samples = malloc(x->n_cells * sizeof(*samples));
	size_t *n_samples = malloc(x->n_cells * sizeof(*n_samples));
	int rc = GPUSHARE_OK;

	if (!active || !samples || !n_samples) {
		free(active);
		free(samples);
		free(n_samples);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (size_t k = 0; k < x->n_cells; k++) {
		active[k] = true;
		samples[k] = x->st[k].val;
		n_samples[k] = 0;
	}
	/* Round -1: the caller chooses the cells that run at all. */
	int first = s->select(s->select_arg, -1, x->cells, x->n_cells, samples, n_samples, active) ? x->rounds : 0;

	/* The sweep's MPS daemon, when a cell that still runs needs one. */
	for (size_t k = 0; first < x->rounds && x->want_daemon && !x->run.sx.mps.open && !rc && k < x->n_cells; k++) {
		bool open = false;

		for (int r = 0; r < x->rounds; r++)
			open |= !x->st[k].recorded[r];
		if (active[k] && open && gpushare_strategy_uses_mps(x->cells[k].strategy))
			rc = start_daemon(x, x->visible);
	}
	for (int r = first; r < x->rounds && !rc; r++) {
		bool stop = false;

		for (size_t k = 0; k < x->n_cells && !rc && !stop; k++) {
			if (!active[k] || x->st[k].recorded[r])
				continue;
			if (gpushare_bench_interrupted()) {
				rc = gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted");
				break;
			}
			if (budget_spent(x) || halted(x)) {
				stop = true;
				break;
			}
			if (r >= s->repeats)
				x->planned++;
			rc = run_one(x, k, r);
		}
		if (rc || stop)
			break;
		for (size_t k = 0; k < x->n_cells; k++)
			n_samples[k] = (size_t)r + 1;
		if (s->select(s->select_arg, r, x->cells, x->n_cells, samples, n_samples, active))
			break;
	}
	free(active);
	free(samples);
	free(n_samples);
	return rc;
}

static int sweep_loop(struct sweep_ctx *x)
{
	const struct gpushare_sweep_config *s = x->s;
	bool adaptive = s->target_noise > 0;
	int rc = GPUSHARE_OK;

	if (s->select)
		return race_loop(x);

	for (int r = 0; r < x->rounds && !rc; r++) {
		bool any_open = false;

		for (size_t k = 0; k < x->n_cells && !rc; k++) {
			if (x->st[k].recorded[r])
				continue;
			if (r >= s->repeats) {
				if (!adaptive || converged(x, k))
					continue;
				x->planned++;
			}
			any_open = true;
			if (gpushare_bench_interrupted())
				return gpushare_fail(GPUSHARE_E_INTERRUPTED, "interrupted");
			if (halted(x))
				return GPUSHARE_OK;
			rc = run_one(x, k, r);
		}
		if (r + 1 >= s->repeats && !adaptive)
			break;
		if (r + 1 >= s->repeats && adaptive && !any_open) {
			bool all = true;

			for (size_t k = 0; k < x->n_cells && all; k++)
				all = converged(x, k);
			if (all)
				break;
		}
	}
	return rc;
}

int gpushare_sweep_run(const struct gpushare_sweep_config *s, const char *results_path,
		       struct gpushare_sweep_summary *sum)
{
	struct sweep_ctx x;
	bool need_mps = false;
	int rc;

	memset(sum, 0, sizeof(*sum));
	memset(&x, 0, sizeof(x));
	x.s = s;
	x.sum = sum;
	x.fd = -1;
	x.lock_fd = -1;
	x.path = results_path;
	x.t0_ns = gpushare_now_ns();
	x.rounds = s->target_noise > 0 || s->select ? s->max_repeats : s->repeats;
	rc = gpushare_sweep_config_check(s);
	if (!rc)
		rc = gpushare_sweep_cells(s, &x.cells, &x.n_cells);
	if (!rc) {
		x.st = calloc(x.n_cells, sizeof(*x.st));
		x.c = malloc(sizeof(*x.c));
		if (!x.st || !x.c)
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (size_t k = 0; k < x.n_cells && !rc; k++) {
		x.st[k].recorded = calloc((size_t)x.rounds, sizeof(bool));
		x.st[k].val = malloc((size_t)x.rounds * sizeof(double));
		if (!x.st[k].recorded || !x.st[k].val)
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		for (int r = 0; x.st[k].val && r < x.rounds; r++)
			x.st[k].val[r] = NAN;
	}
	if (!rc)
		rc = lock_results_dir(&x);
	if (!rc)
		rc = load_existing(&x);
	if (!rc)
		rc = start_metrics(&x);  /* a taken port stops the sweep before the results file is touched */
	if (!rc)
		rc = open_results(&x);
	for (size_t k = 0; k < x.n_cells && !rc; k++) {
		for (int r = 0; r < (s->select ? x.rounds : s->repeats); r++) {
			if (x.st[k].recorded[r])
				sum->runs_skipped++;
			else if (r < s->repeats)
				x.planned++;
		}
		need_mps |= gpushare_strategy_uses_mps(x.cells[k].strategy);
	}
	if (!rc)
		query_gpu(&x, x.visible, sizeof(x.visible));
	/* A race knows which cells run only from its first choice (race_loop). */
	x.want_daemon = need_mps && !s->bench.mps_pipe_dir[0];
	if (!rc && x.want_daemon && x.planned > 0 && !s->select)
		rc = start_daemon(&x, x.visible);
	if (!rc)
		rc = sweep_loop(&x);

	/* Always: stop the daemon we started, keep the first error's detail. */
	{
		struct gpushare_errsave e;

		gpushare_error_save(&e);
		if (x.metrics_owned)
			gpushare_metrics_bench_stop(x.metrics);
		gpushare_error_restore(&e, rc);
		rc = gpushare_run_ctx_close(&x.run, rc);
		if (x.nvml)
			gpushare_nvml_close();
		if (x.fd >= 0 && close(x.fd) != 0 && !rc)
			rc = gpushare_fail(GPUSHARE_E_IO, "cannot close '%s': %s", results_path, strerror(errno));
		gpushare_lock_release(x.lock_fd);
	}
	for (size_t k = 0; x.st && k < x.n_cells; k++) {
		free(x.st[k].recorded);
		free(x.st[k].val);
		free(x.st[k].tput);
	}
	free(x.st);
	free(x.c);
	free(x.cells);
	return rc;
}
