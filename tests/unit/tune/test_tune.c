/*
 * Unit tests of lib/tune without running a workload: the race's decisions
 * (tune_race.c) driven by hand-made probes and samples (who is dropped
 * after the probes and after each full round, and why; the pick), and the
 * pick's commands (tune_commands.c) for each kind of strategy.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "gpushare/gpushare.h"
#include "gpushare/strategy.h"
#include "gpushare/tune.h"
#include "tune_internal.h"

#define MAX_CANDS 16

struct race {
	struct gpushare_tune_config t;
	struct gpushare_tune_result res;
	struct gpushare_tune_candidate cands[MAX_CANDS];
	struct tune_ctx x;
	int events, summaries;
};

static void on_event(void *arg, const struct gpushare_tune_event *e)
{
	struct race *r = arg;

	r->events++;
	r->summaries += e->candidate < 0;
}

/* n candidates, all racing, as gpushare_tune_run() starts them. */
static void race_init(struct race *r, size_t n)
{
	memset(r, 0, sizeof(*r));
	assert_int_equal(gpushare_tune_config_init(&r->t), GPUSHARE_OK);
	r->t.event = on_event;
	r->t.event_arg = r;
	r->res.best = -1;
	r->res.cands = r->cands;
	r->res.n_cands = n;
	for (size_t k = 0; k < n; k++) {
		struct gpushare_tune_candidate *c = &r->cands[k];

		c->cell.strategy = GPUSHARE_STRATEGY_MPS;
		c->cell.workers = (int)k + 1;
		c->cell.batch = 1;
		snprintf(c->cell.key, sizeof(c->cell.key), "spin|mps|w%zu|b1", k + 1);
		c->active = true;
		c->probe = NAN;
		c->drop_ratio = NAN;
		c->dropped_round = -1;
		c->dropped_by = -1;
		c->ci.median = c->ci.log_mean = NAN;
	}
	r->x = (struct tune_ctx){ &r->t, &r->res, false, GPUSHARE_OK, 0 };
}

/* After the probes: the failed, the never run and those below half the
 * best are out; of the rest the best keep_fraction (at least 2) go on. */
static void probes_screen(void **state)
{
	static const double probe[] = { 100, 90, 40, 0, NAN, 80, 70, 60, 55, 52 };
	struct race r;

	(void)state;
	race_init(&r, 10);
	for (size_t k = 0; k < 10; k++)
		r.cands[k].probe = probe[k];
	assert_true(tune_screen_probes(&r.x));
	assert_int_equal(r.res.keep, 2);   /* ceil(0.125 x 10), at least 2 */
	assert_int_equal(tune_n_active(&r.res), 2);
	assert_true(r.cands[0].active && r.cands[1].active);
	assert_int_equal(r.cands[0].probe_rank, 1);
	assert_int_equal(r.cands[1].probe_rank, 2);
	assert_int_equal(r.cands[2].probe_rank, 8);
	assert_int_equal(r.cands[3].probe_rank, 0);
	assert_int_equal(r.cands[2].why, GPUSHARE_TUNE_DROP_PROBE_CUT);
	assert_float_equal(r.cands[2].drop_ratio, 0.4, 1e-12);
	assert_int_equal(r.cands[2].dropped_by, 0);
	assert_int_equal(r.cands[3].why, GPUSHARE_TUNE_DROP_NOTHING);
	assert_int_equal(r.cands[3].dropped_by, -1);
	assert_int_equal(r.cands[4].why, GPUSHARE_TUNE_NOT_RUN);
	for (size_t k = 5; k < 10; k++) {
		assert_int_equal(r.cands[k].why, GPUSHARE_TUNE_DROP_PROBE_RANK);
		assert_int_equal(r.cands[k].dropped_round, 0);
		assert_float_equal(r.cands[k].drop_ratio, probe[k] / 100, 1e-12);
	}
	assert_int_equal(r.events, 9);     /* 8 drops and the round's summary */
	assert_int_equal(r.summaries, 1);

	/* The budget ran out before any probe: nothing to keep. */
	race_init(&r, 3);
	assert_true(tune_screen_probes(&r.x));
	assert_int_equal(tune_n_active(&r.res), 0);
	tune_pick(&r.res);
	assert_int_equal(r.res.best, -1);
}

/* One round's samples: samples[k][0..n-1]. */
static bool round_of(struct race *r, int round, const double (*v)[8], size_t n, bool *active)
{
	const double *rows[MAX_CANDS];
	size_t ns[MAX_CANDS];

	for (size_t k = 0; k < r->res.n_cands; k++) {
		rows[k] = v[k];
		ns[k] = n;
	}
	return tune_full_select(&r->x, round, NULL, r->res.n_cands, rows, ns, active);
}

/* The full rounds: with one run the probe's cut; a better half that keeps
 * two until both have min_runs runs; then one goes (its tie with the
 * leader settled: within noise, with runs enough for it). */
static void full_rounds_halve(void **state)
{
	static const double v[3][8] = { { 100, 100.2 }, { 99.9, 100 }, { 30, 31 } };
	bool active[3];
	struct race r;

	(void)state;
	race_init(&r, 3);
	assert_false(round_of(&r, -1, v, 0, active));   /* before the first round: all run */
	assert_true(active[0] && active[1] && active[2]);
	/* Round 0: a resumed tune has round 1 recorded too; only round 0 counts. */
	assert_false(round_of(&r, 0, v, 2, active));
	assert_int_equal(r.cands[0].runs, 1);
	assert_int_equal(r.cands[2].why, GPUSHARE_TUNE_DROP_CUT);
	assert_int_equal(r.cands[2].dropped_round, 1);
	assert_int_equal(r.cands[2].dropped_by, 0);
	assert_true(active[0] && active[1] && !active[2]);   /* two kept: short of min_runs */
	/* Round 1: no clear difference, and both have 2 runs: the better half. */
	assert_true(round_of(&r, 1, v, 2, active));
	assert_int_equal(r.res.rounds, 2);
	assert_int_equal(r.cands[1].why, GPUSHARE_TUNE_DROP_HALF);
	assert_true(active[0] && !active[1]);
	tune_pick(&r.res);
	assert_int_equal(r.res.best, 0);
	assert_false(r.res.probes_only);
	assert_false(r.res.tie);
	assert_true(r.x.rc == GPUSHARE_OK);
}

/* Whether candidate a's geometric mean is below b's (the halving's rank). */
static bool centre_below(const struct race *r, int a, int b)
{
	return r->cands[a].ci.log_mean < r->cands[b].ci.log_mean;
}

/* The pick's JSON into a parsed document. */
static cJSON *pick_json(struct race *r)
{
	char *text = NULL;
	cJSON *doc;

	assert_int_equal(gpushare_tune_json(&r->t, &r->res, &text), GPUSHARE_OK);
	doc = cJSON_Parse(text);
	assert_non_null(doc);
	free(text);
	return doc;
}

/* Two leaders the runs cannot tell apart (2 runs a side, 5% apart with a
 * few percent of noise): the runner-up is not halved away but races on;
 * when the race ends so (the budget, max_repeats), the pick is a tie,
 * with the runs that would settle it, in the text's words and the JSON. */
static void full_rounds_unsettled(void **state)
{
	static const double v[2][8] = { { 100, 106, 103, 99, 104, 101 }, { 97, 101, 95, 100, 98, 99 } };
	bool active[2];
	struct race r;
	char words[256];
	cJSON *doc, *tie;

	(void)state;
	race_init(&r, 2);
	assert_int_equal(gpushare_sweep_add_shape(&r.t.sweep, "spin"), GPUSHARE_OK);
	assert_false(round_of(&r, 0, v, 1, active));
	assert_false(round_of(&r, 1, v, 2, active));   /* the old race dropped 1 here and ended */
	assert_true(active[0] && active[1]);
	assert_int_equal(r.cands[1].why, GPUSHARE_TUNE_RACING);
	assert_false(round_of(&r, 2, v, 3, active));
	assert_true(active[0] && active[1]);
	tune_pick(&r.res);
	assert_int_equal(r.res.best, 0);
	assert_true(r.res.tie);
	assert_int_equal(r.res.n_unsettled, 1);
	assert_int_equal(r.res.tie_with, 1);
	assert_true(r.cands[1].vs_best.underpowered);
	assert_true(gpushare_tune_tie_text(&r.res, words, sizeof(words)));
	assert_non_null(strstr(words, "cannot tell them apart with 3 runs; "));
	assert_non_null(strstr(words, " more runs a side would settle a difference of "));
	doc = pick_json(&r);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(doc, "tie")));
	assert_string_equal(cJSON_GetObjectItem(doc, "best")->valuestring, "spin|mps|w1|b1");
	tie = cJSON_GetObjectItem(doc, "tie_between");
	assert_int_equal(cJSON_GetArraySize(tie), 2);
	assert_string_equal(cJSON_GetArrayItem(tie, 0)->valuestring, "spin|mps|w1|b1");
	assert_string_equal(cJSON_GetArrayItem(tie, 1)->valuestring, "spin|mps|w2|b1");
	assert_string_equal(cJSON_GetObjectItem(doc, "unsettled")->valuestring, words);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "candidates"), 1), "best_vs_this"),
		"underpowered")));
	cJSON_Delete(doc);

	/* A settled race is no tie: JSON says so with nulls. */
	r.cands[1].active = false;
	tune_pick(&r.res);
	assert_false(r.res.tie);
	assert_false(gpushare_tune_tie_text(&r.res, words, sizeof(words)));
	assert_string_equal(words, "");
	doc = pick_json(&r);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(doc, "tie")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(doc, "tie_between")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(doc, "unsettled")));
	cJSON_Delete(doc);
}

/* The halving still keeps the better half by rank and drops the settled
 * below it, but not one below it the leader cannot be told from yet. */
static void full_rounds_halve_spares_unsettled(void **state)
{
	static const double v[4][8] = {
		{ 100, 100.2 }, { 94, 104 }, { 99.8, 100 }, { 99.7, 99.9 },
	};
	bool active[4];
	struct race r;

	(void)state;
	race_init(&r, 4);
	assert_false(round_of(&r, 1, v, 2, active));   /* 2 runs each (as resumed) */
	assert_true(r.cands[1].runs == 2 && centre_below(&r, 1, 3));
	assert_true(active[0] && active[1] && active[2] && !active[3]);
	assert_int_equal(r.cands[1].why, GPUSHARE_TUNE_RACING);
	assert_int_equal(r.cands[3].why, GPUSHARE_TUNE_DROP_HALF);
}

/* With runs enough, a candidate clearly below the leader is dropped by the
 * comparison (at_drop kept); one that found nothing is out at once. */
static void full_rounds_compare(void **state)
{
	static const double v[3][8] = {
		{ 100, 101, 99, 100, 102 }, { 50, 51, 49, 50, 52 }, { NAN, NAN, NAN, NAN, NAN },
	};
	bool active[3];
	struct race r;

	(void)state;
	race_init(&r, 3);
	assert_true(round_of(&r, 4, v, 5, active));
	assert_int_equal(r.cands[2].why, GPUSHARE_TUNE_DROP_NOTHING);
	assert_int_equal(r.cands[1].why, GPUSHARE_TUNE_DROP_WELCH);
	assert_int_equal(r.cands[1].at_drop.verdict, GPUSHARE_VERDICT_LOWER);
	assert_float_equal(r.cands[1].drop_ratio, r.cands[1].at_drop.ratio, 0);
	assert_true(active[0] && !active[1] && !active[2]);
	tune_pick(&r.res);
	assert_int_equal(r.res.best, 0);
	assert_int_equal(r.res.n_tied, 0);
}

/* Without a full run, the pick is the best probe still racing. */
static void pick_probes_only(void **state)
{
	struct race r;

	(void)state;
	race_init(&r, 3);
	r.cands[0].probe = 80;
	r.cands[1].probe = 90;
	r.cands[2].probe = 99;
	r.cands[2].active = false;
	tune_pick(&r.res);
	assert_int_equal(r.res.best, 1);
	assert_true(r.res.probes_only);
}

/* The pick's commands for a pick of strategy s at 4 workers. */
static void commands_for(struct race *r, enum gpushare_strategy s, int workers, double thread_pct)
{
	struct gpushare_sweep_cell *c = &r->cands[0].cell;

	race_init(r, 1);
	assert_int_equal(gpushare_sweep_add_shape(&r->t.sweep, "spin:request-us=500"), GPUSHARE_OK);
	c->strategy = s;
	c->workers = workers;
	c->thread_pct = thread_pct;
	r->res.best = 0;
	tune_commands(&r->t, "/tmp/tune-dir/results.jsonl", &r->res);
}

static void commands(void **state)
{
	struct race r;

	(void)state;
	commands_for(&r, GPUSHARE_STRATEGY_TIMESLICE, 4, 0);
	assert_string_equal(r.res.bench_command,
			    "gpushare bench --strategy timeslice --workers 4 --batch 1 --workload spin --request-us 500");
	assert_string_equal(r.res.farm_command, "gpushare farm --dir FARMDIR --slots 4 --strategy timeslice JOBFILE");
	assert_string_equal(r.res.plan_command, "gpushare plan /tmp/tune-dir --for TARGET --shape spin:request-us=500 "
						"--batch 1 --strategy timeslice");
	assert_string_equal(r.res.exec_command, "");   /* a workload, not a command */

	/* A per-client share: its percentage, the default one too; farm only
	 * at the default share. */
	commands_for(&r, GPUSHARE_STRATEGY_MPS_SPLIT, 4, 0);
	assert_non_null(strstr(r.res.bench_command, "--strategy mps-split --workers 4 --batch 1 --thread-percentage 25 "));
	assert_string_equal(r.res.farm_command, "gpushare farm --dir FARMDIR --slots 4 --strategy mps-split JOBFILE");
	commands_for(&r, GPUSHARE_STRATEGY_MPS_SPLIT, 4, 50);
	assert_non_null(strstr(r.res.bench_command, "--thread-percentage 50 "));
	assert_string_equal(r.res.farm_command, "");
	assert_non_null(strstr(r.res.plan_command, "--strategy mps-split"));
	assert_non_null(strstr(r.res.plan_command, "50%"));

	/* No plan for one worker, a reference or a partition; no farm for a
	 * strategy that runs no jobs. */
	commands_for(&r, GPUSHARE_STRATEGY_MPS, 1, 0);
	assert_string_equal(r.res.plan_command, "");
	assert_string_equal(r.res.farm_command, "gpushare farm --dir FARMDIR --slots 1 --strategy mps JOBFILE");
	for (int s = 0; s < GPUSHARE_STRATEGY_COUNT; s++) {
		commands_for(&r, (enum gpushare_strategy)s, 4, 0);
		assert_non_null(strstr(r.res.bench_command, gpushare_strategy_name(s)));
		assert_int_equal(r.res.farm_command[0] != '\0', gpushare_strategy_runs_jobs(s));
		assert_int_equal(r.res.plan_command[0] != '\0',
				 gpushare_strategy_is_sharing(s) && !gpushare_strategy_partitions(s));
	}
}

/* A command's pick in request mode: exec runs it as ranks. */
static void commands_exec(void **state)
{
	static char *argv[] = { "./app", "two words", NULL };
	struct race r;

	(void)state;
	race_init(&r, 1);
	assert_int_equal(gpushare_sweep_set_command(&r.t.sweep, argv, GPUSHARE_CMD_REQUEST), GPUSHARE_OK);
	r.cands[0].cell.strategy = GPUSHARE_STRATEGY_MPS_SPLIT;
	r.cands[0].cell.workers = 2;
	r.cands[0].cell.batch = 8;
	r.res.best = 0;
	tune_commands(&r.t, "results.jsonl", &r.res);
	assert_string_equal(r.res.exec_command, "mpirun -np 2 -x GPUSHARE_BATCH=8 gpushare exec --strategy mps-split "
						"--ranks-per-gpu 2 --thread-percentage 50 -- ./app 'two words'");
	r.cands[0].cell.strategy = GPUSHARE_STRATEGY_SEQUENTIAL;
	memset(r.res.exec_command, 0, sizeof(r.res.exec_command));
	tune_commands(&r.t, "results.jsonl", &r.res);
	assert_string_equal(r.res.exec_command, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(probes_screen),    cmocka_unit_test(full_rounds_halve), cmocka_unit_test(full_rounds_compare),
		cmocka_unit_test(full_rounds_unsettled), cmocka_unit_test(full_rounds_halve_spares_unsettled),
		cmocka_unit_test(pick_probes_only), cmocka_unit_test(commands),          cmocka_unit_test(commands_exec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
