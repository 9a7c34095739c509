/*
 * gpushare tune's commands for the pick (tune_internal.h): bench to run it,
 * and where they apply farm for jobs, plan for a scheduler's configuration
 * and exec for MPI or srun ranks. Which apply follows from what the pick's
 * strategy can do (gpushare/strategy.h).
 */
#include <stdio.h>
#include <string.h>

#include "gpushare/buf.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "gpushare/strategy.h"
#include "tune_internal.h"

/* Append " WORD" to buf (l used of len) as one shell word
 * (gpushare_buf_add_sh_word, the one shell quoting). */
static size_t shell_word(char *buf, size_t l, size_t len, const char *w)
{
	struct gpushare_buf b = { 0 };

	if (l >= len)
		return l;
	if (gpushare_buf_add_sh_word(&b, w) == GPUSHARE_OK)
		l += (size_t)snprintf(buf + l, len - l, " %s", b.s);
	gpushare_buf_release(&b);
	return l;
}

/* "spin:request-us=500" -> "--workload spin --request-us 500"; a command:
 * "-- ARGV..." (arguments with spaces or quotes single-quoted). */
static void workload_args(const struct gpushare_tune_config *t, char *buf, size_t len)
{
	const struct gpushare_sweep_shape *sh = &t->sweep.shapes[0];
	size_t l = 0;

	buf[0] = '\0';
	if (sh->command && t->sweep.bench.command) {
		if (t->sweep.bench.command_mode == GPUSHARE_CMD_JOB)
			l += (size_t)snprintf(buf + l, l < len ? len - l : 0, " --mode job");
		if (t->sweep.bench.command_mode == GPUSHARE_CMD_JOB && t->sweep.bench.requests)
			l += (size_t)snprintf(buf + l, l < len ? len - l : 0, " --jobs %llu",
					      (unsigned long long)t->sweep.bench.requests);
		if (t->sweep.bench.preload)
			l += (size_t)snprintf(buf + l, l < len ? len - l : 0, " --preload");
		l += (size_t)snprintf(buf + l, l < len ? len - l : 0, " --");
		for (char **a = t->sweep.bench.command; *a && l < len; a++)
			l = shell_word(buf, l, len, *a);
		return;
	}
	if (sh->n_mix >= 2) {
		/* A mix: its spec as it was given (bench takes the same). */
		snprintf(buf, len, " --workload %s", sh->label);
		return;
	}
	{
		char label[sizeof(sh->label)], *save = NULL, *item;
		bool first = true;

		snprintf(label, sizeof(label), "%s", sh->label);
		for (item = strtok_r(label, ":", &save); item && l < len; item = strtok_r(NULL, ":", &save)) {
			char *eq = strchr(item, '=');

			if (first)
				l += (size_t)snprintf(buf + l, len - l, " --workload %s", item);
			else if (eq) {
				*eq = '\0';
				l += (size_t)snprintf(buf + l, len - l, " --%s %s", item, eq + 1);
			}
			first = false;
		}
	}
}

/* The pick's plan: `gpushare plan DIR --for TARGET` on the tune's results
 * for the pick's shape (with its set percentage), batch and strategy;
 * "" where plan has nothing to configure (see gpushare/tune.h). */
static void plan_command(const struct gpushare_tune_config *t, const struct gpushare_sweep_cell *c,
			 const char *results_path, struct gpushare_tune_result *res)
{
	char dir[GPUSHARE_PATH_MAX], shape[160], *slash;
	size_t l;
	enum gpushare_strategy s = c->strategy;

	/* plan writes shares of whole GPUs from closed-loop runs: not a
	 * reference, nor a partition (whose layout tune does not search). */
	if (res->probes_only || t->sweep.bench.find_peak || t->sweep.bench.load == GPUSHARE_LOAD_OPEN ||
	    c->n_mix >= 2 || c->workers < 2 || !gpushare_strategy_is_sharing(s) || gpushare_strategy_partitions(s))
		return;
	snprintf(dir, sizeof(dir), "%s", results_path);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	gpushare_report_shape_label(t->sweep.shapes[0].label, gpushare_strategy_client_share(s) ? c->thread_pct : 0, shape,
				    sizeof(shape));
	l = (size_t)snprintf(res->plan_command, sizeof(res->plan_command), "gpushare plan");
	l = shell_word(res->plan_command, l, sizeof(res->plan_command), dir);
	l += (size_t)snprintf(res->plan_command + l, l < sizeof(res->plan_command) ? sizeof(res->plan_command) - l : 0,
			      " --for TARGET --shape");
	l = shell_word(res->plan_command, l, sizeof(res->plan_command), shape);
	if (l < sizeof(res->plan_command))
		snprintf(res->plan_command + l, sizeof(res->plan_command) - l, " --batch %ld --strategy %s", c->batch,
			 gpushare_strategy_name(s));
}

/* A command's pick as MPI or srun ranks: `gpushare exec` with the pick's
 * strategy, ranks per GPU and percentage; its batch, as bench gives it,
 * in GPUSHARE_BATCH (exec sets none: Open MPI's -x exports it). */
static void exec_command(const struct gpushare_tune_config *t, const struct gpushare_sweep_cell *c,
			 struct gpushare_tune_result *res)
{
	char pct[32], tp[64] = "", batch[48] = "";
	size_t l;
	enum gpushare_strategy s = c->strategy;

	if (!t->sweep.shapes[0].command || !t->sweep.bench.command || t->sweep.bench.command_mode != GPUSHARE_CMD_REQUEST ||
	    !gpushare_strategy_runs_jobs(s))
		return;
	if (gpushare_strategy_client_share(s))
		snprintf(tp, sizeof(tp), " --thread-percentage %s", gpushare_sweep_cell_thread_pct_text(c, pct, sizeof(pct)));
	if (c->batch != 1)
		snprintf(batch, sizeof(batch), " -x GPUSHARE_BATCH=%ld", c->batch);
	l = (size_t)snprintf(res->exec_command, sizeof(res->exec_command),
			     "mpirun -np %d%s gpushare exec --strategy %s --ranks-per-gpu %d%s --", c->workers, batch,
			     gpushare_strategy_name(s), c->workers, tp);
	for (char **a = t->sweep.bench.command; *a && l < sizeof(res->exec_command); a++)
		l = shell_word(res->exec_command, l, sizeof(res->exec_command), *a);
}

void tune_commands(const struct gpushare_tune_config *t, const char *results_path, struct gpushare_tune_result *res)
{
	const struct gpushare_sweep_cell *c;
	char wl[1024], tp[64] = "", pct[32];
	enum gpushare_strategy s;

	if (res->best < 0)
		return;
	c = &res->cands[res->best].cell;
	s = c->strategy;
	workload_args(t, wl, sizeof(wl));
	/* A per-client share (mps-split): the picked percentage, also when it
	 * is the default. */
	if (gpushare_strategy_client_share(s))
		snprintf(tp, sizeof(tp), " --thread-percentage %s",
			 gpushare_sweep_cell_thread_pct_text(c, pct, sizeof(pct)));
	snprintf(res->bench_command, sizeof(res->bench_command),
		 "gpushare bench --strategy %s --workers %d --batch %ld%s%s%s", gpushare_strategy_name(s), c->workers,
		 c->batch, tp, t->sweep.shapes[0].command ? t->bench_extra : wl,
		 t->sweep.shapes[0].command ? wl : t->bench_extra);
	/* farm gives each of its slots the default share: no farm command for a
	 * pick at another percentage. */
	if (gpushare_strategy_runs_jobs(s) && (!gpushare_strategy_client_share(s) || c->thread_pct <= 0))
		snprintf(res->farm_command, sizeof(res->farm_command),
			 "gpushare farm --dir FARMDIR --slots %d --strategy %s JOBFILE", c->workers, gpushare_strategy_name(s));
	plan_command(t, c, results_path, res);
	exec_command(t, c, res);
}
