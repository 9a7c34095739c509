/*
 * The run context (lib/run/run_ctx.h): the run directory, the no-mps
 * directory, the strategy context and its MPS session, set up and taken
 * down in one place for bench, sweep, farm and exec.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sys.h"
#include "gpushare/gpushare.h"
#include "mps_session.h"
#include "rundir.h"
#include "gpushare/account.h"
#include "run_ctx.h"

void gpushare_run_ctx_init(struct gpushare_run_ctx *r, const struct gpushare_run_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->prefix = o->prefix;
	r->dry_run = o->dry_run;
	r->account = o->account;
	r->want_keeper = o->keeper;
	r->keeper_fd = -1;
	if (o->dir)
		snprintf(r->dir, sizeof(r->dir), "%s", o->dir);
	snprintf(r->visible, sizeof(r->visible), "%s", o->visible ? o->visible : "");
	r->sx.run_dir = r->dir;
	r->sx.no_mps_dir = r->no_mps_dir;
	r->sx.visible = r->visible;
	r->sx.mps_pipe_dir = o->mps_pipe_dir ? o->mps_pipe_dir : "";
}

void gpushare_run_ctx_set_gpus(struct gpushare_run_ctx *r, const struct gpushare_gpu_ref *gpus, size_t n)
{
	size_t len = 0;

	r->visible[0] = '\0';
	for (size_t i = 0; i < n && len < sizeof(r->visible); i++)
		len += (size_t)snprintf(r->visible + len, sizeof(r->visible) - len, "%s%s", i ? "," : "", gpus[i].uuid);
}

int gpushare_run_gpu_inventory(const struct gpushare_system_info *sys, struct gpushare_gpu_ref **inv, size_t *n)
{
	*n = 0;
	*inv = calloc(sys->n_gpus + 1, sizeof(**inv));
	if (!*inv)
		return gpushare_fail(GPUSHARE_E_NOMEM, "GPU list");
	for (size_t i = 0; i < sys->n_gpus; i++) {
		(*inv)[i].index = sys->gpus[i].index;
		snprintf((*inv)[i].uuid, sizeof((*inv)[i].uuid), "%s", sys->gpus[i].uuid);
	}
	*n = sys->n_gpus;
	return GPUSHARE_OK;
}

int gpushare_run_strategy(int strategy, const struct gpushare_strategy_ops **st)
{
	*st = gpushare_strategy_get(strategy);
	if (!*st)
		return gpushare_fail(GPUSHARE_E_INVAL, "unknown strategy %d", strategy);
	return GPUSHARE_OK;
}

int gpushare_run_ctx_check(struct gpushare_run_ctx *r, int strategy)
{
	const struct gpushare_strategy_ops *st;
	int rc = gpushare_run_strategy(strategy, &st);

	return rc ? rc : st->check(&r->sx);
}

int gpushare_run_ctx_open(struct gpushare_run_ctx *r)
{
	int rc;

	if (!r->prefix) {
		/* The caller's directory: its no-mps directory is made by
		 * start, for a strategy whose workers need it. */
		if ((size_t)snprintf(r->no_mps_dir, sizeof(r->no_mps_dir), "%s/no-mps", r->dir) >= sizeof(r->no_mps_dir))
			return gpushare_fail(GPUSHARE_E_DIR, "path '%s/no-mps' is too long", r->dir);
		return GPUSHARE_OK;
	}
	/* What a killed earlier run left (an MPS daemon above all) goes first. */
	gpushare_rundir_reap(NULL);
	/* Its keeper is started with it: without one a killed run's daemon
	 * and directory wait for the next run's reap. */
	rc = gpushare_rundir_create(r->prefix, r->dir, sizeof(r->dir), r->want_keeper ? &r->keeper_fd : NULL,
				    &r->keeper);
	if (rc)
		return rc;
	r->own_dir = true;
	if ((size_t)snprintf(r->no_mps_dir, sizeof(r->no_mps_dir), "%s/no-mps", r->dir) >= sizeof(r->no_mps_dir))
		return gpushare_fail(GPUSHARE_E_DIR, "run directory path too long");
	if (mkdir(r->no_mps_dir, 0700) != 0)
		return gpushare_fail(GPUSHARE_E_DIR, "cannot create '%s': %s", r->no_mps_dir, strerror(errno));
	return GPUSHARE_OK;
}

int gpushare_run_ctx_start(struct gpushare_run_ctx *r, int strategy)
{
	int rc = gpushare_run_strategy(strategy, &r->st);

	if (rc)
		return rc;
	if (!r->own_dir && !r->dry_run && !r->st->uses_mps && (rc = gpushare_private_dir(r->no_mps_dir)))
		return rc;
	rc = r->st->prepare(&r->sx);
	/* A daemon started in the caller's directory is the caller's to stop
	 * (exec: the node's last rank of the job stops it). */
	r->started = rc == GPUSHARE_OK && r->own_dir;
	return rc;
}

int gpushare_run_ctx_join(struct gpushare_run_ctx *r, int strategy, bool answers)
{
	char base[GPUSHARE_PATH_MAX];
	int rc = gpushare_run_strategy(strategy, &r->st);

	if (rc)
		return rc;
	if ((size_t)snprintf(base, sizeof(base), "%s/mps", r->dir) >= sizeof(base))
		return gpushare_fail(GPUSHARE_E_DIR, "run directory path too long");
	return gpushare_mps_session_join(&r->sx.mps, base, answers);
}

int gpushare_run_ctx_join_at(struct gpushare_run_ctx *r, int strategy, const char *pipe_dir, const char *log_dir,
			     bool answers)
{
	int rc = gpushare_run_strategy(strategy, &r->st);

	return rc ? rc : gpushare_mps_session_join_dirs(&r->sx.mps, pipe_dir, log_dir, answers);
}

int gpushare_run_ctx_env(struct gpushare_run_ctx *r, int i, const char *device, struct gpushare_strv *env,
			 struct gpushare_placement *p)
{
	char inject[4200];
	int rc;

	if (!r->st)
		return gpushare_fail(GPUSHARE_E_INVAL, "no strategy started");
	rc = r->st->worker_env(&r->sx, i, device, env, p);
	/* per-client accounting, when asked (docs/accounting.md); the promise
	 * of N processes sharing a GPU without limits is 1/N (an MPS limit is
	 * read by the library itself) */
	if (!rc && gpushare_account_inject_env(inject, sizeof(inject), r->account)) {
		double promise = gpushare_strategy_promise(r->st, r->sx.workers, p);
		rc = gpushare_strv_addf(env, "%s", inject);
		if (!rc && promise > 0)
			rc = gpushare_strv_addf(env, "GPUSHARE_ACCOUNT_PROMISED=%.6f", promise);
	}
	return rc;
}

int gpushare_run_ctx_stop(struct gpushare_run_ctx *r, int rc)
{
	if (r->started) {
		r->started = false;
		rc = r->st->teardown(&r->sx, rc);
	}
	return rc;
}

int gpushare_run_ctx_close(struct gpushare_run_ctx *r, int rc)
{
	rc = gpushare_run_ctx_stop(r, rc);
	if (r->own_dir && r->dir[0])
		gpushare_rundir_remove(r->dir);
	r->own_dir = false;
	gpushare_rundir_keeper_finish(&r->keeper_fd, &r->keeper);
	return rc;
}
