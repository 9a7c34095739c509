/*
 * The strategy table (lib/strategy/strategy.h): timeslice, mps, mps-split, mig,
 * sequential, streams, and the ceiling run.
 *
 * Workers that must not reach any MPS daemon (every strategy but mps and
 * mps-split) get CUDA_MPS_PIPE_DIRECTORY pointing at an empty private
 * directory, so they never attach to a daemon by accident, and no inherited
 * per-client MPS limits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/strategy.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/util.h"
#include "items.h"
#include "strategy.h"

static void placement_reset(struct gpushare_placement *p, const char *visible)
{
	memset(p, 0, sizeof(*p));
	p->priority = -1;
	snprintf(p->visible, sizeof(p->visible), "%s", visible ? visible : "");
}

static const char *device_of(const struct gpushare_strategy_ctx *x, const char *device)
{
	return device && *device ? device : x->visible;
}

/* ---- plain processes ---- */

static int plain_env(const struct gpushare_strategy_ctx *x, const char *visible, struct gpushare_strv *env,
		     struct gpushare_placement *p)
{
	int rc = gpushare_strv_addf(env, "CUDA_MPS_PIPE_DIRECTORY=%s", x->no_mps_dir);

	placement_reset(p, visible);
	if (!rc && visible && *visible)
		rc = gpushare_strv_addf(env, "CUDA_VISIBLE_DEVICES=%s", visible);
	if (!rc)
		rc = gpushare_strv_addf(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	if (!rc)
		rc = gpushare_strv_addf(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
	if (!rc)
		rc = gpushare_strv_addf(env, "CUDA_MPS_CLIENT_PRIORITY");
	return rc;
}

static int plain_worker_env(const struct gpushare_strategy_ctx *x, int i, const char *device,
			    struct gpushare_strv *env, struct gpushare_placement *p)
{
	(void)i;
	return plain_env(x, device_of(x, device), env, p);
}

int gpushare_strategy_check_no_daemon(void)
{
	const char *env = getenv("CUDA_MPS_PIPE_DIRECTORY");
	struct gpushare_mps m;
	pid_t pid = 0;
	int rc;

	rc = gpushare_mps_init(&m, env && *env ? env : GPUSHARE_MPS_DEFAULT_PIPE_DIR, NULL);
	if (rc)
		return rc;
	if (gpushare_mps_state(&m, &pid) != GPUSHARE_MPS_RUNNING)
		return GPUSHARE_OK;
	if (gpushare_mps_probe(&m, &pid) != GPUSHARE_OK) {
		gpushare_clear_error();
		return GPUSHARE_OK;
	}
	return gpushare_fail(GPUSHARE_E_BUSY,
			     "an MPS control daemon (pid %d) answers at '%s'; timeslice needs the GPU without MPS; "
			     "stop it with 'gpushare mps stop --pipe-dir %s'", (int)pid, m.pipe_dir, m.pipe_dir);
}

static int timeslice_check(const struct gpushare_strategy_ctx *x)
{
	(void)x;
	return gpushare_strategy_check_no_daemon();
}

static int no_check(const struct gpushare_strategy_ctx *x)
{
	(void)x;
	return GPUSHARE_OK;
}

static int as_asked(const struct gpushare_strategy_ctx *x, int asked, bool given, int *n)
{
	(void)x;
	(void)given;
	*n = asked;
	return GPUSHARE_OK;
}

static int nothing_to_prepare(struct gpushare_strategy_ctx *x)
{
	(void)x;
	return GPUSHARE_OK;
}

static int nothing_to_tear_down(struct gpushare_strategy_ctx *x, int rc)
{
	(void)x;
	return rc;
}

/* ---- MPS ---- */

static int mps_check(const struct gpushare_strategy_ctx *x)
{
	struct gpushare_mps m;
	char path[GPUSHARE_PATH_MAX];
	pid_t pid = 0;
	int rc;

	if (x->mps_pipe_dir && x->mps_pipe_dir[0]) {
		rc = gpushare_mps_init(&m, x->mps_pipe_dir, NULL);
		if (!rc)
			rc = gpushare_mps_probe(&m, &pid);
		if (rc == GPUSHARE_E_MPS_NOT_RUNNING)
			return gpushare_fail(rc, "no MPS control daemon answers at '%s' (--mps-pipe-dir)", x->mps_pipe_dir);
		return rc;
	}
	rc = gpushare_mps_init(&m, NULL, NULL);
	if (!rc)
		rc = gpushare_mps_find_control(&m, path, sizeof(path));
	return rc;
}

/* The daemon's directories are <run>/mps/{pipe,log}, where a later run
 * finds and stops it should this one be killed (lib/run/rundir.c). */
static int mps_prepare(struct gpushare_strategy_ctx *x)
{
	char base[GPUSHARE_PATH_MAX];

	if ((size_t)snprintf(base, sizeof(base), "%s/mps", x->run_dir) >= sizeof(base))
		return gpushare_fail(GPUSHARE_E_DIR, "run directory path too long");
	return gpushare_mps_session_open(&x->mps, base, x->mps_pipe_dir, x->visible, NULL);
}

static int mps_teardown(struct gpushare_strategy_ctx *x, int rc)
{
	return gpushare_mps_session_close(&x->mps, rc);
}

/* With the daemon holding CUDA_VISIBLE_DEVICES, an ordinal in a client
 * would be remapped by it; only a UUID is safe to repeat. */
static int mps_visible(const char *dev, struct gpushare_strv *env, struct gpushare_placement *p)
{
	bool uuid = dev && (strncmp(dev, "GPU-", 4) == 0 || strncmp(dev, "MIG-", 4) == 0);

	placement_reset(p, uuid ? dev : "");
	if (uuid)
		return gpushare_strv_addf(env, "CUDA_VISIBLE_DEVICES=%s", dev);
	return gpushare_strv_addf(env, "CUDA_VISIBLE_DEVICES");
}

static int mps_worker_env(const struct gpushare_strategy_ctx *x, int i, const char *device,
			  struct gpushare_strv *env, struct gpushare_placement *p)
{
	int rc = gpushare_mps_session_client_env(&x->mps, x->thread_cap > 0, env);

	(void)i;
	if (!rc)
		rc = mps_visible(device_of(x, device), env, p);
	if (rc || x->thread_cap <= 0)
		return rc;
	/* The job's cap: every client at most that (MPS per-client semantics). */
	p->thread_percentage = x->thread_cap;
	rc = gpushare_strv_addf(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%g", x->thread_cap);
	if (!rc)
		rc = gpushare_strv_addf(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
	if (!rc)
		rc = gpushare_strv_addf(env, "CUDA_MPS_CLIENT_PRIORITY");
	return rc;
}

/* mps-split's default share of one client: the GPU (or the job's cap on
 * it) divided among the clients that share it, rounded down, at least 1. */
static double split_share(const struct gpushare_strategy_ctx *x)
{
	double whole = x->thread_cap > 0 ? x->thread_cap : 100;
	double share = floor(whole / (x->workers > 0 ? x->workers : 1));

	return share >= 1 ? share : 1;
}

static int split_worker_env(const struct gpushare_strategy_ctx *x, int i, const char *device,
			    struct gpushare_strv *env, struct gpushare_placement *p)
{
	int rc = gpushare_mps_session_client_env(&x->mps, true, env);

	if (!rc)
		rc = mps_visible(device_of(x, device), env, p);
	if (rc)
		return rc;
	p->thread_percentage = x->n_thread_percentage == 0 ? split_share(x)
			       : x->thread_percentage[x->n_thread_percentage == 1 ? 0 : i];
	rc = gpushare_strv_addf(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%g", p->thread_percentage);
	if (!rc && x->n_mem_limit) {
		char size[32];

		p->mem_limit_bytes = x->mem_limit_bytes[x->n_mem_limit == 1 ? 0 : i];
		rc = gpushare_format_mps_size(p->mem_limit_bytes, size, sizeof(size));
		if (!rc)
			rc = gpushare_strv_addf(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%s", size);
	} else if (!rc) {
		rc = gpushare_strv_addf(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
	}
	if (!rc && x->n_priority) {
		p->priority = x->priority[x->n_priority == 1 ? 0 : i];
		rc = gpushare_strv_addf(env, "CUDA_MPS_CLIENT_PRIORITY=%d", p->priority);
	} else if (!rc) {
		rc = gpushare_strv_addf(env, "CUDA_MPS_CLIENT_PRIORITY");
	}
	return rc;
}

/* ---- MIG ---- */

static const struct gpushare_gpu_info *mig_gpu(const struct gpushare_strategy_ctx *x)
{
	for (size_t i = 0; x->sys && i < x->sys->n_gpus; i++) {
		if (x->sys->gpus[i].index == x->gpu_index)
			return &x->sys->gpus[i];
	}
	return NULL;
}

static int mig_check(const struct gpushare_strategy_ctx *x)
{
	const struct gpushare_gpu_info *g = mig_gpu(x);

	if (!x->sys)
		return gpushare_fail(GPUSHARE_E_NO_DRIVER, "the mig strategy needs the NVIDIA driver (NVML)");
	if (!g || g->mig_current != 1 || g->n_migs == 0)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
				     "MIG is %s on GPU %u; gpushare never changes the MIG layout; see nvidia-smi mig",
				     g && g->mig_current == 1 ? "enabled but has no instances" : "disabled", x->gpu_index);
	return GPUSHARE_OK;
}

static int mig_workers(const struct gpushare_strategy_ctx *x, int asked, bool given, int *n)
{
	const struct gpushare_gpu_info *g = mig_gpu(x);
	int rc = mig_check(x);

	if (rc)
		return rc;
	*n = given ? asked : (int)g->n_migs;
	if (*n % (int)g->n_migs != 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "--workers %d is not a multiple of the %zu MIG instances of GPU %u",
				     asked, g->n_migs, x->gpu_index);
	return GPUSHARE_OK;
}

static int mig_worker_env(const struct gpushare_strategy_ctx *x, int i, const char *device,
			  struct gpushare_strv *env, struct gpushare_placement *p)
{
	const struct gpushare_gpu_info *g = mig_gpu(x);

	(void)device;
	if (!g || g->n_migs == 0)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "no MIG instances on GPU %u", x->gpu_index);
	return plain_env(x, g->migs[(size_t)i % g->n_migs].uuid, env, p);
}

/* ---- the table ---- */

#define PLAIN(ID, NAME, LAYOUT, CMDS, JOBS, SHARING, CHECK)                                          \
	{ .id = ID, .name = NAME, .layout = LAYOUT, .runs_commands = CMDS, .runs_jobs = JOBS, .sharing = SHARING, \
	  .check = CHECK, .workers = as_asked, .prepare = nothing_to_prepare, .worker_env = plain_worker_env,         \
	  .teardown = nothing_to_tear_down }

static const struct gpushare_strategy_ops table[] = {
	PLAIN(GPUSHARE_STRATEGY_TIMESLICE, "timeslice", GPUSHARE_LAYOUT_CONCURRENT, true, true, true, timeslice_check),
	{ .id = GPUSHARE_STRATEGY_MPS, .name = "mps", .layout = GPUSHARE_LAYOUT_CONCURRENT, .runs_commands = true,
	  .uses_mps = true, .runs_jobs = true, .sharing = true, .check = mps_check, .workers = as_asked,
	  .prepare = mps_prepare, .worker_env = mps_worker_env, .teardown = mps_teardown },
	{ .id = GPUSHARE_STRATEGY_MPS_SPLIT, .name = "mps-split", .layout = GPUSHARE_LAYOUT_CONCURRENT,
	  .runs_commands = true, .uses_mps = true, .runs_jobs = true, .sharing = true, .client_share = true,
	  .check = mps_check, .workers = as_asked, .prepare = mps_prepare, .worker_env = split_worker_env,
	  .teardown = mps_teardown },
	{ .id = GPUSHARE_STRATEGY_MIG, .name = "mig", .layout = GPUSHARE_LAYOUT_CONCURRENT, .runs_commands = true,
	  .sharing = true, .needs_driver = true, .partitions = true, .check = mig_check, .workers = mig_workers,
	  .prepare = nothing_to_prepare, .worker_env = mig_worker_env, .teardown = nothing_to_tear_down },
	PLAIN(GPUSHARE_STRATEGY_SEQUENTIAL, "sequential", GPUSHARE_LAYOUT_ONE_AT_A_TIME, true, false, false, no_check),
	PLAIN(GPUSHARE_STRATEGY_STREAMS, "streams", GPUSHARE_LAYOUT_THREADS, false, false, false, no_check),
	PLAIN(GPUSHARE_STRATEGY_CEILING, "ceiling", GPUSHARE_LAYOUT_CONCURRENT, true, false, false, no_check),
};

const struct gpushare_strategy_ops *gpushare_strategy_get(enum gpushare_strategy id)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (table[i].id == id)
			return &table[i];
	}
	return NULL;
}

/* The table's flags for the public API; false for an unknown strategy. */
#define CAPABILITY(FN, FIELD)                                                    \
	bool FN(enum gpushare_strategy strategy)                                 \
	{                                                                        \
		const struct gpushare_strategy_ops *st = gpushare_strategy_get(strategy); \
		return st && st->FIELD;                                          \
	}

CAPABILITY(gpushare_strategy_runs_commands, runs_commands)
CAPABILITY(gpushare_strategy_runs_jobs, runs_jobs)
CAPABILITY(gpushare_strategy_uses_mps, uses_mps)
CAPABILITY(gpushare_strategy_is_sharing, sharing)
CAPABILITY(gpushare_strategy_client_share, client_share)
CAPABILITY(gpushare_strategy_needs_driver, needs_driver)
CAPABILITY(gpushare_strategy_partitions, partitions)

/* ---- names: the table's ---- */

const char *gpushare_strategy_name(enum gpushare_strategy strategy)
{
	const struct gpushare_strategy_ops *st = gpushare_strategy_get(strategy);

	return st ? st->name : "unknown";
}

/* Where gpushare_strategy_parse_list puts the strategies. */
struct strategy_items {
	enum gpushare_strategy *out;
	size_t *n;
};

static int strategy_item(void *arg, const char *p, size_t len)
{
	struct strategy_items *x = arg;
	enum gpushare_strategy found = GPUSHARE_STRATEGY_NONE;

	/* The strategies one asks for by name (not the ceiling). */
	for (int i = 0; i < GPUSHARE_STRATEGY_COUNT; i++) {
		const char *name = gpushare_strategy_get(i)->name;

		if (strlen(name) == len && strncmp(p, name, len) == 0)
			found = (enum gpushare_strategy)i;
	}
	if (found == GPUSHARE_STRATEGY_NONE)
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "unknown strategy '%.*s' (expected timeslice, mps, mps-split, mig, sequential or streams)",
				     (int)len, p);
	for (size_t j = 0; j < *x->n; j++) {
		if (x->out[j] == found)
			return gpushare_fail(GPUSHARE_E_INVAL, "strategy '%s' is listed twice", gpushare_strategy_name(found));
	}
	x->out[(*x->n)++] = found;
	return GPUSHARE_OK;
}

int gpushare_strategy_parse_list(const char *s, enum gpushare_strategy *out, size_t *n)
{
	struct strategy_items x = { out, n };

	*n = 0;
	if (!s || !*s)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty strategy list (expected e.g. timeslice,mps)");
	return gpushare_each_item(s, ',', strategy_item, &x);
}

double gpushare_strategy_promise(const struct gpushare_strategy_ops *st, int workers,
				 const struct gpushare_placement *p)
{
	if (!st || !st->sharing || st->partitions || st->layout != GPUSHARE_LAYOUT_CONCURRENT || workers < 1 ||
	    (p && p->thread_percentage > 0))
		return -1.0;
	return 1.0 / workers;
}
