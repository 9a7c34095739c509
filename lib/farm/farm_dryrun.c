/*
 * gpushare farm --dry-run (gpushare_farm_dry_run()): what a farm would run,
 * without running anything and without creating or changing the farm
 * directory. The job source, shard and GPUs are taken exactly as the farm
 * takes them (farm.c: the same checks and warnings); a resumed farm's
 * recorded options and its journal (which jobs finished) are read, never
 * written. One job at a time is held, as the farm holds them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpushare/buf.h"
#include "gpushare/farm.h"
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/utf8.h"
#include "json.h"
#include "farm_engine.h"
#include "farm_dir.h"
#include "farm_jobs.h"
#include "farm_copy.h"
#include "farm_journal.h"

struct dry {
	struct farm *f;                  /* passed on to farm_load_source, never read here */
	const struct farm_view *v;
	FILE *out;
	bool json, resume;
	bool shell;                      /* jobs run as /bin/sh -c LINE: LINE is shown */
	unsigned wave_k;                 /* slots per GPU known in advance; 0 unknown */
	uint64_t listed, total;
	int rc;
};

/* One job (index idx, argv) of the list: listed when it would run. */
static int dry_job(struct dry *d, uint64_t idx, char **argv)
{
	const struct farm_view *f = d->v;
	struct gpushare_buf cmd = { 0 };
	int gpu = -1, slot = -1;
	uint64_t p = d->listed;

	d->total++;
	if (!farm_shard_has(f->shard, (size_t)idx))
		return GPUSHARE_OK;
	if (d->resume && (idx >= f->rs->n_jobs || f->rs->state[idx] != FARM_JOB_PENDING))
		return GPUSHARE_OK;
	/* The first wave: jobs go to the GPU with the fewest running, the
	 * lowest free slot; after it, whichever ends first decides. */
	if (d->wave_k && f->n_gpus && p < (uint64_t)d->wave_k * f->n_gpus) {
		gpu = f->gpu_ids[p % f->n_gpus].index;
		slot = (int)(p / f->n_gpus);
	}
	d->listed++;
	if (d->shell && argv[0] && argv[1] && argv[2] && !argv[3]) {
		gpushare_buf_add(&cmd, argv[2], strlen(argv[2]));  /* the line as written */
	} else {
		for (size_t k = 0; argv[k]; k++) {
			if ((k && gpushare_buf_add(&cmd, " ", 1)) || gpushare_buf_add_sh_word(&cmd, argv[k]))
				break;
		}
	}
	if (cmd.failed) {
		gpushare_buf_release(&cmd);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	if (d->json) {
		cJSON *o = cJSON_CreateObject(), *a;
		char *text;
		bool ok = gpushare_json_int(o, "job", (long long)FARM_JOB_NUMBER(idx)) &&
			  (a = gpushare_json_arr(o, "argv")) != NULL;

		for (size_t k = 0; ok && argv[k]; k++)
			ok = gpushare_json_add(a, NULL, gpushare_json_string(argv[k]));
		ok = ok && gpushare_json_str(o, "command", gpushare_buf_str(&cmd)) &&
		     gpushare_json_num_if(o, "gpu", gpu, gpu >= 0) && gpushare_json_num_if(o, "slot", slot, slot >= 0);
		text = gpushare_json_finish(o, ok, false);
		if (!text) {
			gpushare_buf_release(&cmd);
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		}
		fprintf(d->out, "%s\n    %s", p ? "," : "", text);
		free(text);
	} else {
		struct gpushare_buf shown = { 0 }; /* as a terminal shows it: no raw escape bytes */

		if (gpushare_utf8_term(&shown, gpushare_buf_str(&cmd))) {
			gpushare_buf_release(&cmd);
			return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		}
		if (gpu >= 0)
			fprintf(d->out, "%8" PRIu64 "  %4d %5d  %s\n", FARM_JOB_NUMBER(idx), gpu, slot,
				gpushare_buf_str(&shown));
		else
			fprintf(d->out, "%8" PRIu64 "  %4s %5s  %s\n", FARM_JOB_NUMBER(idx), "-", "-", gpushare_buf_str(&shown));
		gpushare_buf_release(&shown);
	}
	gpushare_buf_release(&cmd);
	return GPUSHARE_OK;
}

static int dry_sink(void *arg, const struct farm_jobs *list)
{
	struct dry *d = arg;
	char **argv;
	int rc = gpushare_farm_jobs_argv(list, 0, &argv);

	if (!rc) {
		rc = dry_job(d, list->n_passed, argv);
		free(argv);
	}
	return rc;
}

/* The jobs from the directory's copy of the list (--resume DIR alone). */
static int dry_copy(struct dry *d)
{
	char path[GPUSHARE_PATH_MAX + 32];
	struct farm_cursor cur;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", d->v->dir, FARM_JOBS_COPY_NAME);
	rc = gpushare_farm_cursor_open(&cur, path);
	if (rc == GPUSHARE_E_NOT_FOUND)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' holds no copy of the job list; give the job list again",
				     d->v->dir);
	for (uint64_t i = 0; !rc; i++) {
		char **argv = NULL;
		int got = gpushare_farm_cursor_next(&cur, true, &argv, NULL);

		if (got <= 0) {
			rc = got;
			break;
		}
		rc = dry_job(d, i, argv);
		free(argv);
	}
	gpushare_farm_cursor_close(&cur);
	return rc;
}

static int dry_header(void *arg, struct farm_journal_data *d, const struct farm_config *cfg)
{
	(void)cfg;
	return d->n_headers == 1 ? gpushare_farm_resume_begin(arg, (size_t)d->config.n_jobs) : GPUSHARE_OK;
}

static int dry_record(void *arg, struct farm_journal_data *d, const struct farm_record *rec)
{
	(void)d;
	return gpushare_farm_resume_add(arg, rec);
}

/* Resuming: which jobs the journal holds as finished (read only). */
static int dry_journal(const struct farm_view *f, enum farm_jobs_mode *mode)
{
	char path[GPUSHARE_PATH_MAX + 32];
	const struct farm_journal_scan scan = { dry_header, dry_record, f->rs, NULL };
	struct farm_journal_data d;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", f->dir, FARM_JOURNAL_NAME);
	rc = gpushare_farm_journal_scan_path(path, &d, &scan);
	if (rc == GPUSHARE_E_NOT_FOUND)
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' holds no farm journal to resume", f->dir);
	if (rc)
		return rc;
	*mode = d.config.mode;
	if (d.config.shard.index != f->shard->index || d.config.shard.count != f->shard->count)
		rc = gpushare_fail(GPUSHARE_E_INVAL, "this is shard %lu/%lu but the journal's farm was shard %lu/%lu",
				   f->shard->index, f->shard->count, d.config.shard.index, d.config.shard.count);
	if (f->c->rerun_failed)
		gpushare_farm_resume_rerun_failed(f->rs);
	if (!rc)
		rc = gpushare_farm_resume_end(f->rs, f->shard, f->c->retries);
	gpushare_farm_journal_data_release(&d);
	return rc;
}

static void dry_intro(const struct dry *d, const char *strategy)
{
	const struct farm_view *f = d->v;
	const struct gpushare_farm_config *c = f->c;

	if (d->json) {
		cJSON *o = cJSON_CreateObject(), *g;
		char *text;
		bool ok = gpushare_json_bool(o, "dry_run", true) && gpushare_json_str(o, "dir", f->dir) &&
			  gpushare_json_bool(o, "resume", c->resume) && gpushare_json_str(o, "strategy", strategy) &&
			  gpushare_json_int(o, "shard_index", (long long)f->shard->index) &&
			  gpushare_json_int(o, "shard_count", (long long)f->shard->count) &&
			  gpushare_json_num_if(o, "slots", c->slots, c->slots > 0) &&
			  gpushare_json_bool(o, "calibrate", c->slots == 0) && gpushare_json_bool(o, "shell", d->shell) &&
			  (g = gpushare_json_arr(o, "gpus")) != NULL;

		for (size_t i = 0; ok && i < f->n_gpus; i++) {
			cJSON *e = gpushare_json_obj(g, NULL);

			ok = e && gpushare_json_int(e, "index", f->gpu_ids[i].index) &&
			     gpushare_json_str_or_null(e, "uuid", f->placed ? f->gpu_ids[i].uuid : "");
		}
		text = gpushare_json_finish(o, ok, false);
		/* The object stays open: "job_list" and the counts follow. */
		if (text && strlen(text) > 1) {
			text[strlen(text) - 1] = '\0';
			fprintf(d->out, "%s,\"job_list\":[", text);
		}
		free(text);
		return;
	}
	fprintf(d->out, "farm %s (dry run: nothing runs, the directory is not %s): %s, shard %lu/%lu, ", f->dir,
		c->resume ? "changed" : "created", strategy, f->shard->index, f->shard->count);
	if (c->slots)
		fprintf(d->out, "%u slot%s per GPU", c->slots, c->slots == 1 ? "" : "s");
	else
		fprintf(d->out, "slots by calibration");
	fprintf(d->out, " on %zu GPU%s:", f->n_gpus, f->n_gpus == 1 ? "" : "s");
	for (size_t i = 0; i < f->n_gpus; i++)
		fprintf(d->out, " %d%s%s", f->gpu_ids[i].index, f->placed ? " " : "", f->placed ? f->gpu_ids[i].uuid : "");
	fprintf(d->out, "\n%s\n", d->shell ? "each COMMAND runs as: /bin/sh -c COMMAND" :
		"each COMMAND runs as its words, without a shell (--no-shell)");
	fprintf(d->out, "%8s  %4s %5s  %s\n", "JOB", "GPU", "SLOT", "COMMAND");
}

int gpushare_farm_dry_run(const struct gpushare_farm_config *c_in, FILE *out, bool json)
{
	struct gpushare_farm_config eff = *c_in;
	struct gpushare_farm_result r;
	char gpus_buf[FARM_MAX_GPUS * 100];
	const struct gpushare_strategy_ops *st;
	struct farm f;
	struct farm_view v;
	enum farm_jobs_mode mode;
	struct dry d;
	int rc;

	farm_init(&f, &eff, &r);
	memset(&d, 0, sizeof(d));
	if (!eff.dir)
		return gpushare_fail(GPUSHARE_E_INVAL, "no farm directory: give --dir DIR or --resume DIR");
	rc = farm_dry_setup(&f, &eff, gpus_buf, sizeof(gpus_buf), &v);
	mode = eff.shell ? FARM_JOBS_SHELL : FARM_JOBS_ARGV;
	if (!rc && eff.resume && (rc = dry_journal(&v, &mode)) == GPUSHARE_OK &&
	    (eff.given & GPUSHARE_FARM_GIVEN_SHELL))
		mode = eff.shell ? FARM_JOBS_SHELL : FARM_JOBS_ARGV;
	if (!rc) {
		st = gpushare_strategy_get(eff.strategy);
		d.f = &f;
		d.v = &v;
		d.out = out;
		d.json = json;
		d.resume = eff.resume;
		d.shell = mode == FARM_JOBS_SHELL;
		/* Placement is known for the first wave: K per GPU with --slots,
		 * one per GPU in the calibration's first round; not under memory
		 * admission (free memory decides). */
		d.wave_k = eff.mem_per_job_bytes ? 0 : eff.slots ? eff.slots : 1;
		dry_intro(&d, st ? st->name : "?");
		if (eff.jobfile || eff.n_tmpl) {
			struct farm_jobs list;

			gpushare_farm_jobs_init(&list, mode);
			list.sink = dry_sink;
			list.sink_arg = &d;
			rc = farm_load_source(&f, &list);
			gpushare_farm_jobs_release(&list);
		} else {
			rc = dry_copy(&d);
		}
		if (json)
			fprintf(out, "%s],\"jobs\":%" PRIu64 ",\"would_run\":%" PRIu64 "}\n", d.listed ? "\n" : "", d.total,
				d.listed);
		else if (!rc)
			fprintf(out, "%" PRIu64 " of %" PRIu64 " job%s would run\n", d.listed, d.total,
				d.total == 1 ? "" : "s");
	}
	farm_dry_release(&f);
	return rc;
}
