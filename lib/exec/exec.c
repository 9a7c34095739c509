/*
 * One rank of an MPI or srun job (include/gpushare/exec.h, docs/exec.md).
 *
 * The job directory <user dir>/exec-<job key>@<node> has its lock beside it
 * (<dir>.lock, lib/sys/lock.c); every decision below is taken under it. It holds:
 *   ranks/<r>    one file per local rank that arrived, "pid start-time"
 *                and, once its program runs, the program's process group
 *                and start time,
 *                held with an exclusive flock() by that rank for its whole
 *                life: a rank is alive exactly while its file is locked,
 *                whatever killed it (the kernel drops the lock)
 *   gpus         the node's GPUs ("index uuid" lines), read from NVML by the
 *                first rank so the others need not load it
 *   daemon       the job's MPS daemon: "pid start-time" and the GPUs it
 *                serves
 *   keeper       the job's keeper (exec_keeper.c): "pid start-time"
 *   mps/pipe, mps/log   its directories
 *   no-mps       an empty pipe directory for timeslice ranks
 *   shared-gpu-warned   the marker that the once-per-job warning was given
 *   failed       under MPS, one line per rank whose program failed
 *                (exec_fault.c): read by the node's last rank for the
 *                fault report
 *
 * Whoever removes the directory holds its lock while doing so and unlinks
 * the lock file last; a rank that was waiting for that lock then finds it
 * is no longer the file at that path and starts over.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "sys.h"
#include "gpushare/buf.h"
#include "gpushare/child.h"
#include "gpushare/strategy.h"
#include "gpushare/exec.h"
#include "gpushare/files.h"
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/slurm.h"
#include "gpushare/util.h"
#include "gpu_select.h"
#include "slurm_gpus.h"
#include "items.h"
#include "jobdir.h"
#include "launcher.h"
#include "exec_keeper.h"
#include "exec_fault.h"
#include "mps_fault.h"
#include "run_ctx.h"
#include "strategy.h"

#define POLL_NS (50 * NS_PER_MS)
/* A job directory with no rank file yet is being created: leave it. */
#define YOUNG_DIR_S 10

struct gpushare_exec_priv {
	const struct gpushare_strategy_ops *ops;
	struct gpushare_run_ctx run;    /* in the job directory; visible: the selected GPUs' UUIDs */
	struct gpushare_strv env;
	int rank_fd;                    /* our ranks/<r>, locked; -1 none */
	bool dry_run;
	const volatile sig_atomic_t *interrupted;
	const char *map_dir;            /* --hpc-job-mapping-dir, NULL none */
	pid_t pgid;                     /* the program's group (its leader's pid); 0 none */
};

/* ---- the node's GPUs ---- */

static int inventory_nvml(struct gpushare_gpu_ref **inv, size_t *n)
{
	struct gpushare_system_info sys;
	int rc = gpushare_system_query_nvml(&sys);

	if (rc)
		return rc;
	rc = gpushare_run_gpu_inventory(&sys, inv, n);
	gpushare_system_release(&sys);
	return rc;
}

/* The cached list, GPUSHARE_E_NOT_FOUND when there is none (or it does not
 * parse: then NVML is asked again). */
static int inventory_cached(const char *path, struct gpushare_gpu_ref **inv, size_t *n)
{
	char *data = NULL, *line, *save = NULL;
	size_t len, cap = 0;
	int rc = gpushare_read_file(path, 1 << 20, &data, &len);

	*inv = NULL;
	*n = 0;
	if (rc) {
		gpushare_clear_error();
		return GPUSHARE_E_NOT_FOUND;
	}
	for (line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct gpushare_gpu_ref g;
		char uuid[96];

		if (sscanf(line, "%u %95s", &g.index, uuid) != 2)
			goto bad;
		snprintf(g.uuid, sizeof(g.uuid), "%s", uuid);
		if (*n == cap) {
			struct gpushare_gpu_ref *p = realloc(*inv, (cap = cap ? cap * 2 : 8) * sizeof(*p));

			if (!p)
				goto bad;
			*inv = p;
		}
		(*inv)[(*n)++] = g;
	}
	free(data);
	if (*n == 0)
		return GPUSHARE_E_NOT_FOUND;
	return GPUSHARE_OK;
bad:
	free(data);
	free(*inv);
	*inv = NULL;
	*n = 0;
	return GPUSHARE_E_NOT_FOUND;
}

static int inventory(const char *dir, bool write_cache, struct gpushare_gpu_ref **inv, size_t *n)
{
	char path[GPUSHARE_PATH_MAX];
	struct gpushare_buf b = { 0 };
	int rc = gpushare_jobdir_path(path, sizeof(path), dir, "gpus");

	if (rc)
		return rc;
	if (inventory_cached(path, inv, n) == GPUSHARE_OK)
		return GPUSHARE_OK;
	rc = inventory_nvml(inv, n);
	if (rc || !write_cache)
		return rc;
	for (size_t i = 0; i < *n && !rc; i++)
		rc = gpushare_buf_addf(&b, "%u %s\n", (*inv)[i].index, (*inv)[i].uuid);
	if (!rc && *n)
		rc = gpushare_write_file_atomic(path, gpushare_buf_str(&b), strlen(gpushare_buf_str(&b)));
	gpushare_buf_release(&b);
	if (rc) /* only a cache */
		gpushare_clear_error();
	return GPUSHARE_OK;
}

/* ---- the daemon record ---- */

struct daemon_record {
	pid_t pid;
	unsigned long long start;
	char gpus[GPUSHARE_RUN_VISIBLE_MAX];
};

static bool record_read(const char *dir, struct daemon_record *r)
{
	char path[GPUSHARE_PATH_MAX];
	char *data = NULL;
	size_t len;
	int pid = 0, at = 0;

	memset(r, 0, sizeof(*r));
	if (gpushare_jobdir_path(path, sizeof(path), dir, "daemon") ||
	    gpushare_read_file(path, GPUSHARE_RUN_VISIBLE_MAX + 64, &data, &len)) {
		gpushare_clear_error();
		return false;
	}
	if (sscanf(data, "%d %llu %n", &pid, &r->start, &at) >= 2 && at > 0) {
		size_t n = strcspn(data + at, " \n");   /* the GPU list: what record_write wrote */

		if (n < sizeof(r->gpus)) {
			memcpy(r->gpus, data + at, n);
			r->gpus[n] = '\0';
		}
	}
	if (!at || pid <= 0) {
		free(data);
		return false;
	}
	free(data);
	r->pid = (pid_t)pid;
	return gpushare_pid_alive(r->pid) && gpushare_pid_start_time(r->pid) == r->start;
}

static int record_write(const char *dir, pid_t pid, const char *gpus)
{
	char path[GPUSHARE_PATH_MAX], text[GPUSHARE_RUN_VISIBLE_MAX + 64];
	int n = snprintf(text, sizeof(text), "%d %llu %s\n", (int)pid, gpushare_pid_start_time(pid),
			 gpus && *gpus ? gpus : "all");
	int rc = gpushare_jobdir_path(path, sizeof(path), dir, "daemon");

	if (!rc && (n < 0 || (size_t)n >= sizeof(text)))
		rc = gpushare_fail(GPUSHARE_E_INVAL, "the job's GPU list is too long to record");
	if (!rc)
		rc = gpushare_write_file_atomic(path, text, (size_t)n);
	return rc;
}

static bool list_has(const char *list, const char *item)
{
	return !strcmp(list, "all") || gpushare_find_item(list, ',', item, false, NULL);
}

/* ---- open ---- */

static void release_priv(struct gpushare_exec *x)
{
	struct gpushare_exec_priv *p = x->priv;

	if (!p)
		return;
	if (p->rank_fd >= 0)
		close(p->rank_fd);
	gpushare_run_ctx_close(&p->run, GPUSHARE_OK); /* the job's daemon and directory stay */
	gpushare_strv_release(&p->env);
	free(p);
	x->priv = NULL;
	x->env = NULL;
}

/* Register local rank r: ranks/<r>, created and locked. A file of the same
 * rank already there means a previous job of the same key whose ranks all
 * died (it is cleaned up first), or a second copy of this rank (refused). */
static int register_rank(struct gpushare_exec *x, const char *own)
{
	char ranks[GPUSHARE_PATH_MAX], path[GPUSHARE_PATH_MAX + 32], text[64];
	size_t arrived, alive;
	pid_t other;
	int rc = gpushare_jobdir_path(ranks, sizeof(ranks), x->job_dir, "ranks"), fd, n;

	if (!rc)
		rc = gpushare_private_dir(ranks);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/%s", ranks, own);
	switch (gpushare_jobdir_rank_state(path)) {
	case GPUSHARE_RANK_ALIVE:
		return gpushare_fail(GPUSHARE_E_BUSY,
				     "local rank %ld of job '%s' already runs on node %s (see '%s'): two jobs with one "
				     "job key, or a rank started twice", x->local_rank, x->job_key, x->node, path);
	case GPUSHARE_RANK_DEAD:
		gpushare_jobdir_scan_ranks(x->job_dir, own, &arrived, &alive, &other);
		if (alive)
			return gpushare_fail(GPUSHARE_E_BUSY,
					     "local rank %ld of job '%s' already arrived on node %s while rank pid %d "
					     "of that job still runs: two jobs with one job key?",
					     x->local_rank, x->job_key, x->node, (int)other);
		/* A killed job of the same key: its daemon and records go. */
		rc = gpushare_jobdir_stop_daemon(x->job_dir, NULL);
		if (rc)
			return rc;
		{
			char sub[GPUSHARE_PATH_MAX];
			static const char *const names[] = { "ranks", "daemon", "keeper", "mps", "shared-gpu-warned", "said",
							      "failed" };

			for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
				if (!gpushare_jobdir_path(sub, sizeof(sub), x->job_dir, names[i]))
					gpushare_remove_tree(sub);
			}
			gpushare_clear_error();
		}
		rc = gpushare_private_dir(ranks);
		if (rc)
			return rc;
		break;
	case GPUSHARE_RANK_ABSENT:
		break;
	}
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0)
		return gpushare_fail(GPUSHARE_E_DIR, "cannot create '%s': %s", path, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;

		close(fd);
		return gpushare_fail(GPUSHARE_E_BUSY, "cannot lock '%s': %s", path, strerror(e));
	}
	n = snprintf(text, sizeof(text), "%d %llu\n", (int)getpid(), gpushare_pid_start_time(getpid()));
	if (ftruncate(fd, 0) != 0 || write(fd, text, (size_t)n) != n) {
		/* only informative */
	}
	x->priv->rank_fd = fd;
	return GPUSHARE_OK;
}

/* Whether the daemon process pid runs as this user or as root (a site's
 * daemon serves every user). */
static bool daemon_ours(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return stat(path, &st) == 0 && (st.st_uid == getuid() || st.st_uid == 0);
}

/* A daemon runs (and, unless dry_run, answers) at pipe_dir: *pid. */
static bool daemon_at(const char *pipe_dir, const char *log_dir, bool dry_run, pid_t *pid)
{
	struct gpushare_mps m;
	bool ok;

	*pid = 0;
	if (gpushare_mps_init(&m, pipe_dir, log_dir) != GPUSHARE_OK ||
	    gpushare_mps_state(&m, pid) != GPUSHARE_MPS_RUNNING || *pid <= 0 || !daemon_ours(*pid)) {
		gpushare_clear_error();
		return false;
	}
	ok = dry_run || gpushare_mps_probe(&m, pid) == GPUSHARE_OK;
	gpushare_clear_error();
	return ok;
}

/* A daemon that already serves this rank's GPU and user, joined instead of
 * starting the job's own: --mps-pipe-dir (checked to answer before), else
 * the one `gpushare slurm prolog` started for the GPU and user, else one at
 * $CUDA_MPS_PIPE_DIRECTORY, else at /tmp/nvidia-mps. Sets x->daemon_source;
 * false when there is none. */
static bool find_daemon(struct gpushare_exec *x, const char *opt_dir, bool dry_run, char *pipe, size_t plen,
			char *log, size_t llen, pid_t *pid)
{
	const char *env = getenv("CUDA_MPS_PIPE_DIRECTORY"), *env_log = getenv("CUDA_MPS_LOG_DIRECTORY");
	char state[GPUSHARE_PATH_MAX];

	log[0] = '\0';
	if (opt_dir && *opt_dir) {
		snprintf(pipe, plen, "%s", opt_dir);
		x->daemon_source = "option";
		daemon_at(pipe, NULL, true, pid); /* it answered the check; this finds its pid */
		return true;
	}
	gpushare_slurm_state_dir(NULL, state, sizeof(state));
	if (gpushare_slurm_daemon_pipe(state, getuid(), x->gpu_uuid, pipe, plen) == GPUSHARE_OK) {
		char *slash = strrchr(pipe, '/');

		snprintf(log, llen, "%.*s/log", (int)(slash - pipe), pipe);
		if (daemon_at(pipe, log, dry_run, pid)) {
			x->daemon_source = "prolog";
			return true;
		}
	}
	gpushare_clear_error();
	log[0] = '\0';
	if (env && *env && daemon_at(env, NULL, dry_run, pid)) {
		snprintf(pipe, plen, "%s", env);
		snprintf(log, llen, "%s", env_log ? env_log : "");
		x->daemon_source = "env";
		return true;
	}
	if ((!env || strcmp(env, GPUSHARE_MPS_DEFAULT_PIPE_DIR) != 0) &&
	    daemon_at(GPUSHARE_MPS_DEFAULT_PIPE_DIR, NULL, dry_run, pid)) {
		snprintf(pipe, plen, "%s", GPUSHARE_MPS_DEFAULT_PIPE_DIR);
		snprintf(log, llen, "%s", env_log ? env_log : "");
		x->daemon_source = "default";
		return true;
	}
	return false;
}

/* Under MPS: join a daemon that already serves the GPU (find_daemon; the
 * run context neither starts nor stops it), else use the job's daemon when
 * it is recorded and alive, else start it (cleaning up dead jobs' daemons
 * first). */
static int join_daemon(struct gpushare_exec *x, const char *opt_dir, bool dry_run)
{
	struct gpushare_exec_priv *p = x->priv;
	char pipe[GPUSHARE_PATH_MAX], log[GPUSHARE_PATH_MAX], name[GPUSHARE_PATH_MAX];
	struct daemon_record r;
	bool alive;
	pid_t pid = 0;
	int rc;

	if (find_daemon(x, opt_dir, dry_run, pipe, sizeof(pipe), log, sizeof(log), &pid)) {
		snprintf(x->pipe_dir, sizeof(x->pipe_dir), "%s", pipe);
		rc = gpushare_run_ctx_join_at(&p->run, p->ops->id, pipe, log, !dry_run);
		if (rc)
			return rc;
		x->daemon_pid = pid;
		return GPUSHARE_OK;
	}
	x->daemon_source = "job";
	if ((rc = gpushare_jobdir_path(pipe, sizeof(pipe), x->job_dir, "mps/pipe")) ||
	    (rc = gpushare_jobdir_path(log, sizeof(log), x->job_dir, "mps/log")))
		return rc;
	snprintf(x->pipe_dir, sizeof(x->pipe_dir), "%s", pipe);
	alive = record_read(x->job_dir, &r);
	if (alive && !list_has(r.gpus, x->gpu_uuid))
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "GPU %s of local rank %ld is not served by the job's MPS daemon on node %s (it serves "
				     "%s): the ranks of one job on one node must see the same GPUs",
				     x->gpu_uuid, x->local_rank, x->node, r.gpus);
	if (alive || dry_run) {
		rc = gpushare_run_ctx_join(&p->run, p->ops->id, alive);
		if (rc)
			return rc;
		x->daemon_pid = alive ? r.pid : 0;
		return GPUSHARE_OK;
	}
	snprintf(name, sizeof(name), "%s", strrchr(x->job_dir, '/') ? strrchr(x->job_dir, '/') + 1 : x->job_dir);
	gpushare_exec_reap(name, &x->reaped);
	gpushare_clear_error();
	rc = gpushare_run_ctx_start(&p->run, p->ops->id);
	if (rc)
		return rc;
	x->daemon_started = p->run.sx.mps.started;
	if (gpushare_mps_state(&p->run.sx.mps.m, &pid) != GPUSHARE_MPS_RUNNING || pid <= 0)
		return gpushare_fail(GPUSHARE_E_MPS_NOT_RUNNING, "the MPS daemon at '%s' started but records no pid", pipe);
	x->daemon_pid = pid;
	return record_write(x->job_dir, pid, p->run.visible);
}

/* The once-per-job warning: on the job's first node (SLURM_NODEID 0 when
 * Slurm says), by the first rank to take the marker. */
static bool once_marker(struct gpushare_exec *x, const char *marker, bool dry_run)
{
	const char *nodeid = getenv("SLURM_NODEID");
	char path[GPUSHARE_PATH_MAX];
	int fd;

	if (nodeid && *nodeid && strcmp(nodeid, "0") != 0)
		return false;
	if (dry_run)
		return x->local_rank == 0;
	if (gpushare_jobdir_path(path, sizeof(path), x->job_dir, marker)) {
		gpushare_clear_error();
		return false;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static int job_key(const struct launcher_info *li, char *out, size_t len)
{
	pid_t pp = getppid();

	if (li->job_key[0]) {
		snprintf(out, len, "%s", li->job_key);
		return GPUSHARE_OK;
	}
	/* No job id: the ranks of one node share the launcher's process that
	 * started them (orted, hydra_pmi_proxy, slurmstepd). */
	snprintf(out, len, "ppid-%d.%llu", (int)pp, gpushare_pid_start_time(pp));
	return GPUSHARE_OK;
}

/* The job's id in dcgm-exporter's job mapping: Slurm's, else the job key. */
static const char *map_job_id(const struct gpushare_exec *x)
{
	return x->slurm_job_id[0] ? x->slurm_job_id : x->job_key;
}

static int open_locked(struct gpushare_exec *x, const struct gpushare_exec_opts *o, const struct launcher_info *li,
		       enum gpushare_launcher_bind bind, int lock_fd)
{
	struct gpushare_exec_priv *p = x->priv;
	struct gpushare_gpu_ref *inv = NULL, *sel = NULL;
	struct launcher_binding b;
	struct gpushare_placement pl;
	struct gpushare_slurm_env senv;
	size_t n_inv = 0, n_sel = 0;
	char own[32];
	int rc;

	/* The job's GPUs as Slurm gave them, also where Slurm set no
	 * CUDA_VISIBLE_DEVICES (a share under GresTypes=gpu,mps,shard). */
	if ((rc = gpushare_slurm_env_read(&senv)))
		return rc;
	rc = inventory(x->job_dir, !o->dry_run, &inv, &n_inv);
	if (rc)
		return rc;
	sel = calloc(n_inv + 1, sizeof(*sel));
	if (!sel) {
		free(inv);
		return gpushare_fail(GPUSHARE_E_NOMEM, "GPU list");
	}
	rc = gpushare_gpu_select(inv, n_inv, o->gpus, gpushare_slurm_getenv, &senv, sel, &n_sel);
	if (!rc && n_sel == 0)
		rc = gpushare_fail(GPUSHARE_E_NOT_FOUND, "no GPU to bind the ranks to");
	if (!rc)
		rc = gpushare_launcher_bind(bind, li->local_rank, li->local_size, n_sel, o->ranks_per_gpu, &b);
	if (!rc) {
		x->gpu_index = sel[b.gpu].index;
		snprintf(x->gpu_uuid, sizeof(x->gpu_uuid), "%s", sel[b.gpu].uuid);
		x->n_gpus = n_sel;
		x->gpus_used = b.gpus_used;
		x->ranks_on_gpu = b.ranks_on_gpu;
		x->max_ranks_per_gpu = b.max_ranks_per_gpu;
		gpushare_run_ctx_set_gpus(&p->run, sel, n_sel);
	}
	free(inv);
	free(sel);
	if (rc)
		return rc;

	p->run.sx.workers = (int)x->ranks_on_gpu;
	if (o->thread_percentage > 0) {
		p->run.sx.thread_percentage = &o->thread_percentage;
		p->run.sx.n_thread_percentage = 1;
	}
	p->run.sx.thread_cap = x->slurm_mps_percentage;
	if ((rc = gpushare_run_ctx_open(&p->run)))
		return rc;

	snprintf(own, sizeof(own), "%ld", x->local_rank);
	if (!o->dry_run && (rc = register_rank(x, own)))
		return rc;
	/* Under MPS the job's daemon (never stopped by this rank's run
	 * context: the last rank of the node stops it, see close). */
	if (p->ops->uses_mps)
		rc = join_daemon(x, o->mps_pipe_dir, o->dry_run);
	else
		rc = gpushare_run_ctx_start(&p->run, p->ops->id);
	if (rc)
		return rc;
	if (!o->dry_run && !exec_keeper_alive(x->job_dir))
		x->keeper_pid = exec_keeper_start(x->job_dir, x->local_size, p->rank_fd, lock_fd);
	x->warn_shared_gpu = x->max_ranks_per_gpu > 1 && once_marker(x, "shared-gpu-warned", o->dry_run);
	x->say_once = (x->honoured[0] || (x->daemon_source && strcmp(x->daemon_source, "job") != 0)) &&
		      once_marker(x, "said", o->dry_run);
	rc = gpushare_run_ctx_env(&p->run, (int)x->local_rank, x->gpu_uuid, &p->env, &pl);
	if (rc)
		return rc;
	x->thread_percentage = pl.thread_percentage;
	x->env = gpushare_strv_list(&p->env);
	if (p->map_dir && !o->dry_run)
		return gpushare_slurm_job_map(p->map_dir, x->gpu_index, map_job_id(x), true);
	return GPUSHARE_OK;
}

/* Slurm's share of the GPU is the job's cap (docs/slurm.md, "exec and farm
 * honour the share"): mps gives each rank the gres/mps percentage,
 * mps-split divides it among the ranks on a GPU, --thread-percentage may not
 * exceed it, and timeslice cannot keep it. */
static int honour_slurm(struct gpushare_exec *x, const struct gpushare_exec_opts *o)
{
	struct gpushare_slurm_share sh;
	int rc = gpushare_slurm_share_read(&sh);

	if (rc)
		return rc;
	snprintf(x->slurm_job_id, sizeof(x->slurm_job_id), "%s", sh.job_id);
	x->slurm_mps_percentage = sh.mps_percentage;
	x->slurm_shards = sh.shards;
	gpushare_slurm_share_describe(&sh, x->honoured, sizeof(x->honoured));
	if (sh.mps_percentage <= 0)
		return GPUSHARE_OK;
	if (!gpushare_strategy_uses_mps(o->strategy))
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "--strategy timeslice cannot keep Slurm's gres/mps share of %g%% of the GPU "
				     "(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE); use mps or mps-split", sh.mps_percentage);
	if (o->thread_percentage > sh.mps_percentage)
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "--thread-percentage %g is above Slurm's gres/mps share of %g%% of the GPU "
				     "(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE)", o->thread_percentage, sh.mps_percentage);
	return GPUSHARE_OK;
}

int gpushare_exec_open(struct gpushare_exec *x, const struct gpushare_exec_opts *o)
{
	struct launcher_info li;
	enum gpushare_launcher_bind bind = LAUNCHER_BIND_ROUND_ROBIN;
	char user[GPUSHARE_PATH_MAX], name[GPUSHARE_PATH_MAX];
	struct gpushare_exec_priv *p;
	int rc, lock_fd = -1;

	memset(x, 0, sizeof(*x));
	x->rank = x->size = -1;
	if (!gpushare_strategy_runs_jobs(o->strategy))
		return gpushare_fail(GPUSHARE_E_INVAL, "exec runs ranks under mps, mps-split or timeslice only");
	if (o->bind && (rc = gpushare_launcher_bind_parse(o->bind, &bind)))
		return rc;
	if (o->thread_percentage < 0 || o->thread_percentage > 100)
		return gpushare_fail(GPUSHARE_E_INVAL, "thread percentage %g is not in (0,100]", o->thread_percentage);
	rc = gpushare_launcher_detect(gpushare_getenv_process, NULL, &li);
	if (rc)
		return rc;
	if ((rc = honour_slurm(x, o)))
		return rc;
	x->launcher = gpushare_launcher_kind_name(li.kind);
	x->rank = li.rank;
	x->size = li.size;
	x->local_rank = li.local_rank;
	x->local_size = li.local_size;
	job_key(&li, x->job_key, sizeof(x->job_key));
	gpushare_jobdir_node_name(x->node, sizeof(x->node));
	if ((rc = gpushare_user_dir(user, sizeof(user))))
		return rc;
	/* The daemon's sockets go in DIR/mps/pipe, at most 80 characters (see
	 * lib/mps): a long job key is shortened to fit under this user
	 * directory; what still does not fit is refused here, before anything
	 * of the job is created. */
	{
		size_t room = sizeof(name);

		if (gpushare_strategy_get(o->strategy)->uses_mps && strlen(user) + 1 + strlen("/mps/pipe") < 80 &&
		    80 - strlen(user) - 1 - strlen("/mps/pipe") + 1 < room)
			room = 80 - strlen(user) - 1 - strlen("/mps/pipe") + 1;
		rc = gpushare_exec_dir_name(x->job_key, x->node, name, room);
		if (rc && room < sizeof(name))
			return gpushare_fail(GPUSHARE_E_INVAL, "no room under '%s' for the job's pipe directory (the MPS "
					     "daemon's sockets need a path of at most 80 characters); use a shorter "
					     "XDG_RUNTIME_DIR", user);
		if (!rc)
			rc = gpushare_jobdir_path(x->job_dir, sizeof(x->job_dir), user, name);
		if (rc)
			return rc;
	}
	if (gpushare_strategy_get(o->strategy)->uses_mps && strlen(x->job_dir) + strlen("/mps/pipe") > 80)
		return gpushare_fail(GPUSHARE_E_INVAL, "the job's pipe directory '%s/mps/pipe' would be longer than 80 "
				     "characters (the MPS daemon's sockets go there); use a shorter XDG_RUNTIME_DIR or job id",
				     x->job_dir);

	p = calloc(1, sizeof(*p));
	if (!p)
		return gpushare_fail(GPUSHARE_E_NOMEM, "exec state");
	x->priv = p;
	p->rank_fd = -1;
	p->dry_run = o->dry_run;
	p->interrupted = o->interrupted;
	p->map_dir = o->hpc_job_mapping_dir && *o->hpc_job_mapping_dir ? o->hpc_job_mapping_dir : NULL;
	p->ops = gpushare_strategy_get(o->strategy);
	x->uses_mps = p->ops->uses_mps;
	if (o->mps_pipe_dir && *o->mps_pipe_dir && !x->uses_mps) {
		release_priv(x);
		return gpushare_fail(GPUSHARE_E_INVAL, "--mps-pipe-dir goes with --strategy mps or mps-split");
	}
	/* --mps-pipe-dir: the strategy's check makes sure a daemon answers there. */
	gpushare_run_ctx_init(&p->run, &(struct gpushare_run_opts){ .dir = x->job_dir, .dry_run = o->dry_run,
								   .mps_pipe_dir = o->mps_pipe_dir, .account = o->account });
	rc = gpushare_run_ctx_check(&p->run, o->strategy);
	if (!rc && !o->dry_run) {
		rc = gpushare_private_dir(user);
		if (!rc)
			rc = gpushare_jobdir_lock(x->job_dir, true, GPUSHARE_EXEC_LOCK_WAIT_MS * NS_PER_MS, &lock_fd);
	}
	if (!rc)
		rc = open_locked(x, o, &li, bind, lock_fd);
	if (rc && p->rank_fd >= 0) {
		/* Leave as if this rank had exited at once. */
		struct gpushare_errsave e;

		gpushare_error_save(&e);
		gpushare_lock_release(lock_fd);
		lock_fd = -1;
		gpushare_exec_close(x, NULL);
		return gpushare_error_restore(&e, rc);
	}
	if (rc && lock_fd >= 0) {
		struct gpushare_errsave e;
		size_t arrived, alive;

		/* Refused before any rank arrived (a binding the ranks do not
		 * fit): leave no directory behind. */
		gpushare_error_save(&e);
		gpushare_jobdir_scan_ranks(x->job_dir, NULL, &arrived, &alive, NULL);
		if (arrived == 0) {
			gpushare_jobdir_remove_locked(x->job_dir, lock_fd);
			lock_fd = -1;
		}
		rc = gpushare_error_restore(&e, rc);
	}
	gpushare_lock_release(lock_fd);
	if (rc)
		release_priv(x);
	return rc;
}

/* ---- the program ---- */

int gpushare_exec_started(struct gpushare_exec *x, pid_t pgid)
{
	char text[128];
	int n;

	if (!x->priv || x->priv->rank_fd < 0)
		return GPUSHARE_OK;
	x->priv->pgid = pgid;
	n = snprintf(text, sizeof(text), "%d %llu %d %llu\n", (int)getpid(), gpushare_pid_start_time(getpid()),
		     (int)pgid, gpushare_pid_start_time(pgid));
	if (pwrite(x->priv->rank_fd, text, (size_t)n, 0) != n)
		return gpushare_fail(GPUSHARE_E_IO, "cannot record the program in the rank file: %s", strerror(errno));
	return GPUSHARE_OK;
}

int gpushare_exec_finished(struct gpushare_exec *x, int wstatus)
{
	struct gpushare_exec_priv *p = x->priv;
	struct exec_failure f = { 0 };
	int rc;

	f.code = gpushare_child_exit_code(wstatus);
	if (!p || p->dry_run || p->rank_fd < 0 || !x->uses_mps || f.code == 0)
		return GPUSHARE_OK;
	f.end_ns = gpushare_now_ns();
	f.local_rank = x->local_rank;
	f.rank = x->rank;
	f.gpu_index = x->gpu_index;
	f.ranks_on_gpu = x->ranks_on_gpu;
	f.pid = p->pgid;
	f.server_fault = gpushare_mps_fault_server(&p->run.sx.mps.m, false);
	rc = exec_fault_record(x->job_dir, &f);
	return rc;
}

/* ---- close ---- */

int gpushare_exec_close(struct gpushare_exec *x, struct gpushare_exec_leave *info)
{
	struct gpushare_exec_priv *p = x->priv;
	struct gpushare_exec_leave dummy;
	uint64_t grace_end;
	char own[32];
	int fd = -1, rc = GPUSHARE_OK;

	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	if (!p)
		return GPUSHARE_OK;
	if (p->dry_run || p->rank_fd < 0) {
		release_priv(x);
		return GPUSHARE_OK;
	}
	snprintf(own, sizeof(own), "%ld", x->local_rank);
	grace_end = gpushare_now_ns() + GPUSHARE_EXEC_GRACE_MS * NS_PER_MS;
	for (;;) {
		size_t arrived, alive;

		rc = gpushare_jobdir_lock(x->job_dir, false, GPUSHARE_EXEC_LOCK_WAIT_MS * NS_PER_MS, &fd);
		if (rc)
			break;
		gpushare_jobdir_scan_ranks(x->job_dir, own, &arrived, &alive, NULL);
		if (alive)
			break;
		if ((long)arrived >= x->local_size || gpushare_now_ns() >= grace_end ||
		    (p->interrupted && *p->interrupted)) {
			info->last = true;
			info->missing = (long)arrived < x->local_size ? (size_t)(x->local_size - (long)arrived) : 0;
			break;
		}
		/* Some rank of this node has not arrived yet: hold on (as a
		 * live rank) so that it finds the daemon, or the grace ends. */
		gpushare_lock_release(fd);
		fd = -1;
		gpushare_sleep_ns(POLL_NS);
	}
	if (!rc && info->last) {
		close(p->rank_fd);
		p->rank_fd = -1;
		if (x->uses_mps)
			exec_fault_report(x->job_dir, x->node, p->run.sx.mps.m.log_dir,
					  x->daemon_source && !strcmp(x->daemon_source, "job"), info->fault,
					  sizeof(info->fault));
		if (p->map_dir && gpushare_slurm_job_unmap_all(p->map_dir, map_job_id(x)) != GPUSHARE_OK)
			gpushare_clear_error(); /* the mapping is informative; the daemon's stop matters */
		rc = exec_stop_detached(x->job_dir, fd, &info->daemon_stopped);
		fd = -1;
	}
	if (p->rank_fd >= 0) {
		/* Not the last: our file stays as the mark that we arrived,
		 * without a program to kill (its group is gone). */
		char text[64];
		int n = snprintf(text, sizeof(text), "%d %llu 0 0\n", (int)getpid(), gpushare_pid_start_time(getpid()));

		if (ftruncate(p->rank_fd, 0) != 0 || pwrite(p->rank_fd, text, (size_t)n, 0) != n) {
			/* the group is empty anyway */
		}
		close(p->rank_fd);
		p->rank_fd = -1;
	}
	gpushare_lock_release(fd);
	release_priv(x);
	if (rc == GPUSHARE_E_NOT_FOUND) {
		/* Our directory went away under a live rank: nothing left to stop. */
		gpushare_clear_error();
		rc = GPUSHARE_OK;
	}
	return rc;
}

/* ---- the job directory (lib/run/jobdir.c) ---- */

int gpushare_exec_dir_name(const char *job_key, const char *node, char *out, size_t len)
{
	return gpushare_jobdir_name(job_key, node, out, len);
}

int gpushare_exec_reap(const char *skip, size_t *reaped)
{
	return gpushare_jobdir_reap(skip, reaped);
}
