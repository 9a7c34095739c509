/*
 * A sweep's configuration and its grid: the shapes (workloads, or the
 * user's command), the options every run shares, the cells (shape x
 * strategy x workers x batch x rate x thread percentage) in the order they
 * run, and each cell's bench configuration (sweep_cell_config(), what a run
 * of the cell and a resumed record are measured with).
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
#include "gpushare/format.h"
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"
#include "gpushare/mps.h"
#include "gpushare/report.h"
#include "gpushare/sweep.h"
#include "run_ctx.h"
#include "sweep_internal.h"

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
void sweep_cell_config(const struct gpushare_sweep_config *s, const struct gpushare_sweep_cell *cell,
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

/* The sweep's cells (*cells, *n) and a bench config to fill for each in
 * turn (*c): both to free. */
static int cells_and_config(const struct gpushare_sweep_config *s, struct gpushare_sweep_cell **cells, size_t *n,
			    struct gpushare_bench_config **c)
{
	int rc = gpushare_sweep_cells(s, cells, n);

	if (rc)
		return rc;
	*c = malloc(sizeof(**c));
	if (!*c) {
		free(*cells);
		*cells = NULL;
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
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
	rc = cells_and_config(s, &cells, &n, &c);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		sweep_cell_config(s, &cells[i], c);
		rc = gpushare_bench_config_check(c);
	}
	if (!rc && s->bench.command) {
		/* Once for every strategy: the streams refusal, and the program
		 * resolved before any run (bench's own check, so the same words). */
		sweep_cell_config(s, &cells[0], c);
		memcpy(c->strategies, s->strategies, s->n_strategies * sizeof(c->strategies[0]));
		c->n_strategies = s->n_strategies;
		rc = gpushare_bench_command_check(c);
	}
	free(c);
	free(cells);
	return rc;
}

int gpushare_sweep_plan(const struct gpushare_sweep_config *s, struct gpushare_bench_plan *longest)
{
	struct gpushare_sweep_cell *cells = NULL;
	struct gpushare_bench_config *c;
	size_t n = 0;
	int rc;

	memset(longest, 0, sizeof(*longest));
	rc = cells_and_config(s, &cells, &n, &c);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		struct gpushare_bench_plan p;

		sweep_cell_config(s, &cells[i], c);
		rc = gpushare_bench_plan(c, &p);
		if (!rc && p.total_seconds > longest->total_seconds)
			*longest = p;
	}
	free(c);
	free(cells);
	return rc;
}

int gpushare_sweep_budget_check(const struct gpushare_sweep_config *s)
{
	struct gpushare_bench_plan p;
	char b[32], w[32], win[32], d[48], t[32], all[32];
	int rc;

	if (!(s->budget_seconds > 0))
		return GPUSHARE_OK;
	rc = gpushare_sweep_plan(s, &p);
	if (rc || p.total_seconds <= s->budget_seconds)
		return rc;
	if (p.drain_seconds > 0)
		snprintf(d, sizeof(d), " + drain %s", gpushare_fmt_seconds(p.drain_seconds, t, sizeof(t)));
	else
		d[0] = '\0';
	return gpushare_fail(GPUSHARE_E_INVAL,
			     "--budget %s is shorter than one run (warm-up %s + window %s%s = %s planned); "
			     "give a longer --budget or a shorter --duration",
			     gpushare_fmt_seconds(s->budget_seconds, b, sizeof(b)),
			     gpushare_fmt_seconds(p.warmup_seconds, w, sizeof(w)),
			     gpushare_fmt_seconds(p.window_seconds, win, sizeof(win)), d,
			     gpushare_fmt_seconds(p.total_seconds, all, sizeof(all)));
}
