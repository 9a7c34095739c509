/*
 * `gpushare slurm prolog` and `epilog` (include/gpushare/slurm.h,
 * docs/slurm.md): one MPS daemon per GPU and user for the jobs that hold
 * gres/mps, started before the job's first task and stopped after the last
 * job using it has ended.
 *
 * The state directory (root's, mode 0755 so that the jobs' users reach
 * their daemons) holds, under its lock `.lock` (an flock() lock the kernel
 * drops when its holder dies):
 *   jobs/<job id>          one record per job holding gres/mps: "uid U" and
 *                          one "gpu UUID" line per GPU of the job here;
 *                          jobs/ is 0711 and records 0644, so that a task
 *                          of the job that Slurm told no GPU (gres/mps with
 *                          GresTypes=gpu,mps,shard) reads its GPUs here
 *                          (gpushare_slurm_job_gpus), yet lists no others
 *   mps-<uid>-<UUID>/      the daemon of that user on that GPU: pipe/ and
 *                          log/, owned by the user, mode 0700
 * A daemon's users are the job records naming its user and GPU: the epilog
 * that removes the last of them stops it. Every step is idempotent: a
 * prolog run twice finds its record and its daemons running, an epilog run
 * twice (or for a job the prolog gave nothing) finds no record.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "gpushare/buf.h"
#include "sys.h"
#include "gpu_select.h"
#include "run_ctx.h"
#include "slurm_conf.h"
#include "slurm_gpus.h"
#include "gpushare/child.h"
#include "gpushare/files.h"
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/slurm.h"

#define HOOK_LOCK_WAIT_NS (60ull * NS_PER_S)
#define HOOK_MAX_GPUS 64

struct job_record {
	uid_t uid;
	gid_t gid;
	char gpus[HOOK_MAX_GPUS][96];
	unsigned indices[HOOK_MAX_GPUS]; /* NVML indices (not recorded) */
	size_t n_gpus;
	/* MIG devices Slurm gave, by dcgm-exporter's name for them:
	 * "<parent's NVML index>.<GPU instance id>" (job mapping only; not recorded) */
	char migs[HOOK_MAX_GPUS][32];
	size_t n_migs;
};

/* The state directory must be a real directory of this user that no one
 * else may write: the prolog and the epilog alike act on nothing else (a
 * record planted in a directory others write would name the daemons root
 * stops). */
static int state_dir_safe(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' is not a directory", dir);
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' must belong to uid %u and be writable by it alone", dir,
				     (unsigned)geteuid());
	return GPUSHARE_OK;
}

/* The state directory: created mode 0755 when absent, then checked. */
static int state_dir_ready(const char *dir)
{
	char sub[GPUSHARE_PATH_MAX];
	int rc;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return gpushare_fail(GPUSHARE_E_DIR, "cannot create '%s': %s", dir, strerror(errno));
	if ((rc = state_dir_safe(dir)))
		return rc;
	if ((size_t)snprintf(sub, sizeof(sub), "%s/jobs", dir) >= sizeof(sub))
		return gpushare_fail(GPUSHARE_E_DIR, "'%s': path too long", dir);
	if ((rc = gpushare_private_dir(sub)))
		return rc;
	if (chmod(sub, 0711) != 0)
		return gpushare_fail(GPUSHARE_E_DIR, "cannot chmod '%s': %s", sub, strerror(errno));
	return GPUSHARE_OK;
}

static int lock_state(const char *dir, int *fd)
{
	char path[GPUSHARE_PATH_MAX];
	pid_t holder = 0;
	int rc;

	if ((size_t)snprintf(path, sizeof(path), "%s/.lock", dir) >= sizeof(path))
		return gpushare_fail(GPUSHARE_E_DIR, "'%s': path too long", dir);
	rc = gpushare_lock_acquire(path, HOOK_LOCK_WAIT_NS, fd, &holder);
	/* Held the whole wait: a timeout (exit 12, docs/slurm.md), as the other
	 * locks say it. */
	if (rc == GPUSHARE_E_BUSY)
		rc = gpushare_fail(GPUSHARE_E_TIMEOUT, "'%s' still held by pid %ld after %llu s", path, (long)holder,
				   (unsigned long long)(HOOK_LOCK_WAIT_NS / NS_PER_S));
	return rc;
}

/* The job's record: jobs/<job id>, the id a number (job_id() made sure). */
static int job_path(const char *dir, const char *job, char *out, size_t len)
{
	if ((size_t)snprintf(out, len, "%s/jobs/%s", dir, job) >= len)
		return gpushare_fail(GPUSHARE_E_DIR, "'%s': path too long", dir);
	return GPUSHARE_OK;
}

static bool record_read(const char *path, struct job_record *r)
{
	char *data = NULL, *line, *save = NULL;
	size_t len;

	memset(r, 0, sizeof(*r));
	if (gpushare_read_file(path, 1 << 16, &data, &len)) {
		gpushare_clear_error();
		return false;
	}
	for (line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned v;
		char uuid[96];

		if (sscanf(line, "uid %u", &v) == 1)
			r->uid = (uid_t)v;
		else if (sscanf(line, "gid %u", &v) == 1)
			r->gid = (gid_t)v;
		else if (sscanf(line, "gpu %95s", uuid) == 1 && r->n_gpus < HOOK_MAX_GPUS)
			snprintf(r->gpus[r->n_gpus++], sizeof(r->gpus[0]), "%s", uuid);
	}
	free(data);
	return true;
}

static int record_write(const char *path, const struct job_record *r)
{
	struct gpushare_buf b = { 0 };
	int rc = gpushare_buf_addf(&b, "uid %u\ngid %u\n", (unsigned)r->uid, (unsigned)r->gid);

	for (size_t i = 0; !rc && i < r->n_gpus; i++)
		rc = gpushare_buf_addf(&b, "gpu %s\n", r->gpus[i]);
	if (!rc)
		rc = gpushare_write_file_atomic_mode(path, gpushare_buf_str(&b), strlen(gpushare_buf_str(&b)), 0644);
	gpushare_buf_release(&b);
	return rc;
}

/* ---- Slurm's GPU indices to NVML's (slurm_conf.h) ----
 *
 * The node's GPUs are read from the gres.conf beside SLURM_CONF (slurmd sets
 * it for its hooks); without one, or without a gpu line for this node
 * (AutoDetect), an index is taken as NVML's. */

/* Rewrite Slurm's list of the job's GPUs with NVML's indices in place of
 * Slurm's (UUIDs pass as they are); an index Slurm gives a MIG device of
 * gres.conf (MultipleFiles=) goes to r->migs instead, by dcgm-exporter's
 * name for it (split_migs). */
static int slurm_gpus_to_nvml(const char *list, struct job_record *r, char *out, size_t olen)
{
	struct gpushare_gres_gpu gres[GPUSHARE_GRES_MAX_FILES];
	size_t n_gres = 0;
	struct gpushare_buf b = { 0 };
	int rc;

	snprintf(out, olen, "%s", list);
	if ((rc = gpushare_gres_gpus(gres, GPUSHARE_GRES_MAX_FILES, &n_gres))) {
		char why[600];

		snprintf(why, sizeof(why), "%s", gpushare_errdetail());
		return gpushare_fail(rc, "the node's gres.conf: %s", why);
	}
	if (!n_gres)
		return GPUSHARE_OK;
	if ((rc = gpushare_nvml_open()))
		return rc;
	for (const char *p = list; !rc && *p;) {
		size_t n = strcspn(p, ",");
		char *end;
		unsigned long k = strtoul(p, &end, 10);
		unsigned index;

		if (end == p + n && n > 0 && k < n_gres) {
			rc = gpushare_gpu_by_minor(gres[k].minor, &index);
			if (rc == GPUSHARE_E_UNSUPPORTED) {
				gpushare_clear_error();
				index = (unsigned)k;
				rc = GPUSHARE_OK;
			}
			if (!rc && gres[k].gi == -2)
				rc = gpushare_fail(GPUSHARE_E_INVAL, "Slurm's GPU %lu is a MIG device of gres.conf "
						   "(MultipleFiles=) whose GPU instance the driver's mig-minors does not "
						   "name", k);
			else if (!rc && gres[k].gi >= 0 && r->n_migs < HOOK_MAX_GPUS)
				snprintf(r->migs[r->n_migs++], sizeof(r->migs[0]), "%u.%d", index, gres[k].gi);
			else if (!rc && gres[k].gi < 0)
				rc = gpushare_buf_addf(&b, "%s%u", b.len ? "," : "", index);
		} else {
			rc = gpushare_buf_addf(&b, "%s%.*s", b.len ? "," : "", (int)n, p);
		}
		p += n;
		if (*p == ',')
			p++;
	}
	if (!rc && (size_t)snprintf(out, olen, "%s", gpushare_buf_str(&b)) >= olen)
		rc = gpushare_fail(GPUSHARE_E_INVAL, "the job's GPU list is too long: %s", list);
	gpushare_buf_release(&b);
	gpushare_nvml_close();
	return rc;
}

/* The MIG devices of Slurm's list (the entries "MIG-<UUID>": Slurm names a
 * MIG device by its UUID) into r->migs, by the name dcgm-exporter reads for
 * them: "<parent GPU's NVML index>.<GPU instance id>" (NVIDIA/dcgm-exporter
 * since 4.5.3-4.8.2, internal/pkg/transformation/hpc.go: hpcMapper.Process
 * keys a MIG device's metrics by GPU "." GPUInstanceID, NVML's GPU instance
 * id, and getGPUFiles reads names of the form <GPU_ID>.<GPU_INSTANCE_ID>).
 * The other entries, whole GPUs, are left in rest. */
static int split_migs(const char *list, const struct gpushare_system_info *sys, struct job_record *r, char *rest,
		      size_t len)
{
	size_t n = 0;

	rest[0] = '\0';
	for (const char *p = list; *p;) {
		size_t w = strcspn(p, ",");
		bool found = false;

		if (w > 4 && !strncmp(p, "MIG-", 4)) {
			for (size_t g = 0; g < sys->n_gpus && !found; g++) {
				for (size_t m = 0; m < sys->gpus[g].n_migs && !found; m++) {
					const struct gpushare_mig_info *mi = &sys->gpus[g].migs[m];

					if (strlen(mi->uuid) != w || strncmp(mi->uuid, p, w) || mi->gpu_instance_id < 0)
						continue;
					found = true;
					if (r->n_migs < HOOK_MAX_GPUS)
						snprintf(r->migs[r->n_migs++], sizeof(r->migs[0]), "%u.%d", sys->gpus[g].index,
							 mi->gpu_instance_id);
				}
			}
			if (!found)
				return gpushare_fail(GPUSHARE_E_INVAL, "Slurm gave the MIG device '%.*s', which NVML does "
						     "not show (or without its GPU instance)", (int)w, p);
		} else if (n + w + 2 < len) {
			n += (size_t)snprintf(rest + n, len - n, "%s%.*s", n ? "," : "", (int)w, p);
		}
		p += w + (p[w] == ',');
	}
	return GPUSHARE_OK;
}

/* The node's GPUs (sys) that CUDA_VISIBLE_DEVICES, read through getenv_fn,
 * allows, as gpushare_gpu_select() chooses them: *sel (to free), *n_sel. */
static int allowed_gpus(const struct gpushare_system_info *sys, gpushare_getenv_fn getenv_fn, void *ctx,
			struct gpushare_gpu_ref **sel, size_t *n_sel)
{
	struct gpushare_gpu_ref *inv;
	size_t n_inv;
	int rc = gpushare_run_gpu_inventory(sys, &inv, &n_inv);

	*sel = NULL;
	*n_sel = 0;
	if (rc)
		return rc;
	*sel = calloc(n_inv + 1, sizeof(**sel));
	if (!*sel)
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "GPU list");
	else
		rc = gpushare_gpu_select(inv, n_inv, NULL, getenv_fn, ctx, *sel, n_sel);
	free(inv);
	return rc;
}

/* The job's user and its GPUs here, by UUID, from Slurm's prolog
 * environment (CUDA_VISIBLE_DEVICES, else SLURM_JOB_GPUS, as indices); the
 * user only where a daemon will run as it (needs_user). */
static int job_from_env(struct job_record *r, bool needs_user)
{
	const char *uid = getenv("SLURM_JOB_UID"), *gid = getenv("SLURM_JOB_GID");
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES"), *jg = getenv("SLURM_JOB_GPUS");
	struct gpushare_system_info sys;
	struct gpushare_gpu_ref *sel = NULL;
	char gpus[4096], whole[4096];
	size_t n_sel = 0;
	int rc;

	unsigned long v;

	memset(r, 0, sizeof(*r));
	/* What the daemon runs as: Slurm always sets both; a missing, empty,
	 * signed or garbled value is refused, never read as 0 (root) or as the
	 * hook's own user (root too). (uid_t)-1 means "no user" to the kernel. */
	if (needs_user) {
		if (gpushare_parse_id("SLURM_JOB_UID", uid, UINT32_MAX - 1, &v))
			return GPUSHARE_E_INVAL;
		r->uid = (uid_t)v;
		if (gpushare_parse_id("SLURM_JOB_GID", gid, UINT32_MAX - 1, &v))
			return GPUSHARE_E_INVAL;
		r->gid = (gid_t)v;
	}
	if ((!cvd || !*cvd) && (!jg || !*jg))
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "the job has no GPU on this node (no CUDA_VISIBLE_DEVICES "
				     "or SLURM_JOB_GPUS)");
	rc = gpushare_system_query_nvml(&sys);
	if (rc)
		return rc;
	if ((rc = slurm_gpus_to_nvml(cvd && *cvd ? cvd : jg, r, gpus, sizeof(gpus))) ||
	    (rc = split_migs(gpus, &sys, r, whole, sizeof(whole))))
		goto out;
	if (!whole[0])
		goto out; /* MIG devices only */
	if (setenv("CUDA_VISIBLE_DEVICES", whole, 1) != 0) {
		rc = gpushare_fail(GPUSHARE_E_SYS, "setenv: %s", strerror(errno));
		goto out;
	}
	rc = allowed_gpus(&sys, gpushare_getenv_process, NULL, &sel, &n_sel);
	for (size_t i = 0; !rc && i < n_sel && i < HOOK_MAX_GPUS; i++) {
		r->indices[r->n_gpus] = sel[i].index;
		snprintf(r->gpus[r->n_gpus++], sizeof(r->gpus[0]), "%s", sel[i].uuid);
	}
out:
	if (!rc && r->n_gpus == 0 && r->n_migs == 0)
		rc = gpushare_fail(GPUSHARE_E_NOT_FOUND, "the job has no GPU on this node");
	free(sel);
	gpushare_system_release(&sys);
	return rc;
}

static int daemon_dir(const char *state, uid_t uid, const char *uuid, char *base, size_t blen)
{
	char pipe[GPUSHARE_PATH_MAX];
	int rc = gpushare_slurm_daemon_pipe(state, uid, uuid, pipe, sizeof(pipe));

	if (rc)
		return rc;
	*strrchr(pipe, '/') = '\0';
	snprintf(base, blen, "%s", pipe);
	return GPUSHARE_OK;
}

struct start_arg {
	const char *base, *uuid;
	uid_t uid;
	gid_t gid;
};

/* In a child of a hook run as root for someone else: become that user, with
 * the user's groups (a site may give /dev/nvidia* to a group). Exits 1 when
 * it cannot. */
static void become_user(uid_t uid, gid_t gid)
{
	struct passwd *pw;

	if (uid == geteuid())
		return;
	pw = getpwuid(uid);
	if ((pw ? initgroups(pw->pw_name, gid) : setgroups(0, NULL)) != 0 || setgid(gid) != 0 || setuid(uid) != 0) {
		fprintf(stderr, "cannot become uid %u: %s\n", (unsigned)uid, strerror(errno));
		_exit(1);
	}
}

/* In a child: become the job's user (when the prolog runs as root for
 * someone else), then start the daemon and wait until it answers. Exit 0
 * started, 3 already running, 4 no control program, 1 failed (the reason on
 * standard error). */
static _Noreturn void start_main(void *argp)
{
	const struct start_arg *a = argp;
	char pipe[GPUSHARE_PATH_MAX + 8], log[GPUSHARE_PATH_MAX + 8];
	struct gpushare_mps m;
	struct gpushare_mps_start_opts o;
	struct gpushare_mps_start_info info;
	int rc;

	become_user(a->uid, a->gid);
	/* The daemon serves every job of the user on the GPU: the first job's
	 * share must not become its default (a client can only lower it). */
	unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	unsetenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
	unsetenv("CUDA_MPS_CLIENT_PRIORITY");
	snprintf(pipe, sizeof(pipe), "%s/pipe", a->base);
	snprintf(log, sizeof(log), "%s/log", a->base);
	memset(&o, 0, sizeof(o));
	memset(&info, 0, sizeof(info));
	o.visible_devices = a->uuid;
	gpushare_mps_limits_init(&o.limits);
	rc = gpushare_private_dir(pipe);
	if (!rc)
		rc = gpushare_private_dir(log);
	if (!rc)
		rc = gpushare_mps_init(&m, pipe, log);
	if (!rc)
		rc = gpushare_mps_start(&m, &o, &info);
	if (rc) {
		fprintf(stderr, "%s\n", *gpushare_errdetail() ? gpushare_errdetail() : gpushare_strerror(rc));
		_exit(rc == GPUSHARE_E_NO_MPS_BINARY ? 4 : 1);
	}
	_exit(info.already_running ? 3 : 0);
}

/* Run fn(arg) in a child (it becomes the job's user first: become_user) and
 * wait for it, at most the lock's wait (then it is stopped): its exit code
 * in *code (-1 when it did not exit), and when not 0 or 3 the one line of
 * reason it wrote on standard error in err ("no reason given" when none). */
static int as_user(void (*fn)(void *), void *arg, int *code, char *err, size_t len)
{
	struct gpushare_child ch;
	ssize_t n;
	int rc;

	*code = -1;
	snprintf(err, len, "no reason given");
	gpushare_child_init(&ch);
	ch.fn = fn;
	ch.arg = arg;
	ch.in = ch.out = GPUSHARE_CHILD_DEVNULL;
	ch.err = GPUSHARE_CHILD_PIPE;
	ch.flags = GPUSHARE_CHILD_NO_PDEATHSIG;
	rc = gpushare_child_start(&ch);
	if (rc)
		return rc;
	/* Its one line of reason fits the pipe: read after it has ended. */
	rc = gpushare_child_wait(&ch, HOOK_LOCK_WAIT_NS);
	if (!rc) {
		*code = WIFEXITED(ch.wstatus) ? WEXITSTATUS(ch.wstatus) : -1;
		if (*code != 0 && *code != 3 && ch.err_fd >= 0 && (n = read(ch.err_fd, err, len - 1)) > 0) {
			err[n] = '\0';
			err[strcspn(err, "\n")] = '\0';
		}
	} else if (rc == GPUSHARE_E_TIMEOUT) {
		struct gpushare_errsave e;

		gpushare_error_save(&e);
		gpushare_child_stop(&ch, NS_PER_S);
		gpushare_error_restore(&e, rc);
	}
	gpushare_child_release(&ch);
	return rc;
}

/* Make sure the daemon of uid on GPU uuid runs and answers. */
static int ensure_daemon(const char *state, const struct job_record *r, const char *uuid, bool *started)
{
	char base[GPUSHARE_PATH_MAX], err[512];
	struct start_arg a = { base, uuid, r->uid, r->gid };
	struct stat st;
	int code, rc = daemon_dir(state, r->uid, uuid, base, sizeof(base));

	*started = false;
	if (rc)
		return rc;
	if (mkdir(base, 0700) != 0 && errno != EEXIST)
		return gpushare_fail(GPUSHARE_E_DIR, "cannot create '%s': %s", base, strerror(errno));
	if (lstat(base, &st) != 0 || !S_ISDIR(st.st_mode))
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' is not a directory", base);
	if (st.st_uid != r->uid && lchown(base, r->uid, r->gid) != 0)
		return gpushare_fail(GPUSHARE_E_DIR, "cannot give '%s' to uid %u: %s", base, (unsigned)r->uid,
				     strerror(errno));
	rc = as_user(start_main, &a, &code, err, sizeof(err));
	if (!rc && code != 0 && code != 3)
		rc = gpushare_fail(code == 4 ? GPUSHARE_E_NO_MPS_BINARY : GPUSHARE_E_MPS_NOT_RUNNING,
				   "the MPS daemon for uid %u on %s did not start: %s", (unsigned)r->uid, uuid, err);
	if (!rc)
		*started = code == 0;
	return rc;
}

/* slurmd runs the prolog and epilog with no PATH at all: the control
 * program is then looked up in the usual system directories (where the
 * driver's packages install it). */
#define HOOK_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static void hook_init(const struct gpushare_slurm_hook_opts *o, struct gpushare_slurm_hook_result *r, char *state,
		      size_t len)
{
	const char *path = getenv("PATH");

	if ((!path || !*path) && setenv("PATH", HOOK_DEFAULT_PATH, 1) != 0) {
		/* the lookup then fails and says so */
	}
	memset(r, 0, sizeof(*r));
	gpushare_slurm_state_dir(o ? o->state_dir : NULL, state, len);
}

/* The job's id: Slurm's job ids are numbers (uint32_t). Anything else
 * (".1", "..", a sign) is refused, exit 2: it would name a record the
 * reference count skips, or no record at all. */
static int job_id(struct gpushare_slurm_hook_result *r, const char *what)
{
	const char *job = getenv("SLURM_JOB_ID");
	unsigned long v;

	if (!job || !*job)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND,
				     "not run by Slurm: SLURM_JOB_ID is not set (gpushare slurm %s runs as slurm.conf's "
				     "%s=; see docs/slurm.md)", what, !strcmp(what, "prolog") ? "Prolog" : "Epilog");
	if (gpushare_parse_id("SLURM_JOB_ID", job, UINT32_MAX, &v))
		return GPUSHARE_E_INVAL;
	snprintf(r->job_id, sizeof(r->job_id), "%lu", v);
	return GPUSHARE_OK;
}

static bool record_has_gpu(const struct job_record *r, const char *uuid)
{
	for (size_t i = 0; i < r->n_gpus; i++) {
		if (!strcmp(r->gpus[i], uuid))
			return true;
	}
	return false;
}

static int stop_daemon(const char *state, const struct job_record *r, const char *uuid, bool *stopped);
static bool daemon_used(const char *state, const char *skip, uid_t uid, const char *uuid);

/* A prolog for a job id already recorded with another user or other GPUs (a
 * requeued job whose epilog never ran here): the old record's daemons that
 * the new one does not name, and no other job uses, are stopped before the
 * record is replaced; replaced without that, they would run on unowned. */
static int forget_old_record(const char *state, const char *job, const struct job_record *old,
			     const struct job_record *now)
{
	int first = GPUSHARE_OK;

	for (size_t i = 0; i < old->n_gpus; i++) {
		bool stopped;
		int rc;

		if ((old->uid == now->uid && record_has_gpu(now, old->gpus[i])) ||
		    daemon_used(state, job, old->uid, old->gpus[i]))
			continue;
		rc = stop_daemon(state, old, old->gpus[i], &stopped);
		if (rc && !first)
			first = rc;
		else if (rc)
			gpushare_clear_error();
	}
	return first;
}

/* dcgm-exporter's mapping is monitoring, never the job's need: a mapping
 * that cannot be written is a warning (r->warning, said on standard error,
 * which slurmd logs), never a failed hook that drains the node. Its
 * directory is created when missing (/run is emptied at every boot). */
static void map_job(const char *dir, const struct job_record *job, struct gpushare_slurm_hook_result *r)
{
	int rc = GPUSHARE_OK;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		rc = gpushare_fail(GPUSHARE_E_DIR, "cannot create --hpc-job-mapping-dir '%s': %s", dir, strerror(errno));
	for (size_t i = 0; !rc && i < job->n_gpus; i++)
		rc = gpushare_slurm_job_map(dir, job->indices[i], r->job_id, true);
	for (size_t i = 0; !rc && i < job->n_migs; i++)
		rc = gpushare_slurm_job_map_name(dir, job->migs[i], r->job_id, true);
	if (rc) {
		snprintf(r->warning, sizeof(r->warning), "the job mapping was not written: %s", gpushare_errdetail());
		gpushare_clear_error();
	}
}

int gpushare_slurm_prolog(const struct gpushare_slurm_hook_opts *o, struct gpushare_slurm_hook_result *r)
{
	char state[GPUSHARE_PATH_MAX], path[GPUSHARE_PATH_MAX];
	struct job_record job, old;
	int rc, fd = -1;

	hook_init(o, r, state, sizeof(state));
	if ((rc = job_id(r, "prolog")))
		return rc;
	{
		const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");

		r->mps = pct && *pct; /* Slurm sets it for gres/mps only */
	}
	if (!r->mps && !(o && o->hpc_job_mapping_dir))
		return GPUSHARE_OK;
	if ((rc = job_from_env(&job, r->mps))) {
		/* A job holding no gres/mps needs nothing of gpushare: it never
		 * fails here (no GPU: nothing to map; anything else: said). */
		if (!r->mps && rc != GPUSHARE_E_NOT_FOUND)
			snprintf(r->warning, sizeof(r->warning), "the job mapping was not written: %s",
				 gpushare_errdetail());
		if (!r->mps) {
			gpushare_clear_error();
			return GPUSHARE_OK;
		}
		return rc;
	}
	r->n_gpus = job.n_gpus;
	if (o && o->hpc_job_mapping_dir)
		map_job(o->hpc_job_mapping_dir, &job, r);
	if (!r->mps)
		return GPUSHARE_OK;
	if ((rc = state_dir_ready(state)) || (rc = job_path(state, r->job_id, path, sizeof(path))) ||
	    (rc = lock_state(state, &fd)))
		return rc;
	r->already = record_read(path, &old);
	if (r->already)
		rc = forget_old_record(state, r->job_id, &old, &job);
	/* The record first: an epilog that runs after a failed prolog stops
	 * what was started. */
	if (!rc)
		rc = record_write(path, &job);
	for (size_t i = 0; !rc && i < job.n_gpus; i++) {
		bool started = false;

		rc = ensure_daemon(state, &job, job.gpus[i], &started);
		if (!rc && started)
			r->started++;
		else if (!rc)
			r->joined++;
	}
	gpushare_lock_release(fd);
	return rc;
}

/* Whether a job record other than `skip` names uid and uuid. */
static bool daemon_used(const char *state, const char *skip, uid_t uid, const char *uuid)
{
	char dir[GPUSHARE_PATH_MAX], path[GPUSHARE_PATH_MAX + 260];
	struct dirent *e;
	bool used = false;
	DIR *d;

	if ((size_t)snprintf(dir, sizeof(dir), "%s/jobs", state) >= sizeof(dir))
		return false;
	d = opendir(dir);
	if (!d)
		return false;
	while (!used && (e = readdir(d))) {
		struct job_record r;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, skip))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (!record_read(path, &r) || r.uid != uid)
			continue;
		for (size_t i = 0; i < r.n_gpus && !used; i++)
			used = !strcmp(r.gpus[i], uuid);
	}
	closedir(d);
	return used;
}

/* In a child, as the job's user: the daemon's directory is the user's (the
 * prolog gave it away), so what it holds (the pipe, the log, the clients the
 * daemon names) is acted on with the user's rights only, never root's. Stop
 * the daemon, then remove its pipe and log directories. Exit 0 stopped, 3
 * none was running, 1 failed (the reason on standard error). */
static _Noreturn void stop_main(void *argp)
{
	const struct start_arg *a = argp;
	char pipe[GPUSHARE_PATH_MAX + 8], log[GPUSHARE_PATH_MAX + 8];
	struct gpushare_mps m;
	struct gpushare_mps_stop_info info;
	bool running = false;
	pid_t pid = 0;
	int rc;

	become_user(a->uid, a->gid);
	snprintf(pipe, sizeof(pipe), "%s/pipe", a->base);
	snprintf(log, sizeof(log), "%s/log", a->base);
	rc = gpushare_mps_init(&m, pipe, log);
	if (!rc && gpushare_mps_state(&m, &pid) == GPUSHARE_MPS_RUNNING) {
		running = true;
		rc = gpushare_mps_stop(&m, true, &info);
	}
	if (rc) {
		fprintf(stderr, "%s\n", *gpushare_errdetail() ? gpushare_errdetail() : gpushare_strerror(rc));
		_exit(1);
	}
	gpushare_remove_tree(pipe);
	gpushare_remove_tree(log);
	_exit(running ? 0 : 3);
}

static int stop_daemon(const char *state, const struct job_record *r, const char *uuid, bool *stopped)
{
	char base[GPUSHARE_PATH_MAX], err[512];
	struct start_arg a = { base, uuid, r->uid, r->gid };
	int code, rc = daemon_dir(state, r->uid, uuid, base, sizeof(base));

	*stopped = false;
	if (rc)
		return rc;
	if (access(base, F_OK) != 0)
		return GPUSHARE_OK;   /* nothing was started there */
	rc = as_user(stop_main, &a, &code, err, sizeof(err));
	if (!rc && code != 0 && code != 3)
		rc = gpushare_fail(GPUSHARE_E_MPS_REPLY, "the MPS daemon for uid %u on %s did not stop: %s",
				   (unsigned)r->uid, uuid, err);
	if (!rc) {
		*stopped = code == 0;
		/* Root removes only the directory it made, when the user's
		 * child left it empty (anything else in it stays, as the user's). */
		(void)rmdir(base);
	}
	return rc;
}

int gpushare_slurm_epilog(const struct gpushare_slurm_hook_opts *o, struct gpushare_slurm_hook_result *r)
{
	char state[GPUSHARE_PATH_MAX], path[GPUSHARE_PATH_MAX];
	struct job_record job;
	struct stat st;
	int rc, first = GPUSHARE_OK, fd = -1;

	hook_init(o, r, state, sizeof(state));
	if ((rc = job_id(r, "epilog")))
		return rc;
	/* A mapping that cannot be updated is a warning (map_job): the job's
	 * daemons are stopped all the same, and the node is not drained. A
	 * missing directory (a reboot emptied /run) holds nothing to remove. */
	if (o && o->hpc_job_mapping_dir && access(o->hpc_job_mapping_dir, F_OK) == 0 &&
	    gpushare_slurm_job_unmap_all(o->hpc_job_mapping_dir, r->job_id)) {
		snprintf(r->warning, sizeof(r->warning), "the job mapping was not updated: %s", gpushare_errdetail());
		gpushare_clear_error();
	}
	if (lstat(state, &st) != 0 && errno == ENOENT) {
		r->already = true; /* no prolog ever ran here */
		return GPUSHARE_OK;
	}
	if ((rc = state_dir_safe(state)) || (rc = job_path(state, r->job_id, path, sizeof(path))) ||
	    (rc = lock_state(state, &fd)))
		return rc;
	if (!record_read(path, &job)) {
		r->already = true;
		gpushare_lock_release(fd);
		return GPUSHARE_OK;
	}
	r->mps = true;
	r->n_gpus = job.n_gpus;
	for (size_t i = 0; i < job.n_gpus; i++) {
		bool stopped = false;

		if (daemon_used(state, r->job_id, job.uid, job.gpus[i])) {
			r->kept++;
			continue;
		}
		rc = stop_daemon(state, &job, job.gpus[i], &stopped);
		if (rc && !first)
			first = rc;
		else if (rc)
			gpushare_clear_error(); /* the first failure is the one said */
		else if (stopped)
			r->stopped++;
	}
	/* Forgotten only once its daemons are stopped: a failed stop is tried
	 * again by the next epilog of this job (Slurm reruns none, but an
	 * operator may). */
	if (!first && unlink(path) != 0 && errno != ENOENT)
		first = gpushare_fail(GPUSHARE_E_IO, "cannot remove '%s': %s", path, strerror(errno));
	gpushare_lock_release(fd);
	return first;
}

/* ---- a task's environment ---- */

/* The GPUs in a CUDA_VISIBLE_DEVICES value (indices or UUIDs), by UUID, through
 * NVML; the task's one (SLURM_LOCALID modulo their count) in uuid. */
static int task_gpu(struct gpushare_slurm_env *senv, char *uuid, size_t len, size_t *n_gpus)
{
	const char *lid = getenv("SLURM_LOCALID");
	struct gpushare_system_info sys;
	struct gpushare_gpu_ref *sel = NULL;
	unsigned long local = 0;
	size_t n_sel = 0;
	int rc;

	if (lid && *lid && gpushare_parse_id("SLURM_LOCALID", lid, UINT32_MAX, &local))
		return GPUSHARE_E_INVAL;
	if ((rc = gpushare_system_query_nvml(&sys)))
		return rc;
	rc = allowed_gpus(&sys, gpushare_slurm_getenv, senv, &sel, &n_sel);
	if (!rc && n_sel == 0)
		rc = gpushare_fail(GPUSHARE_E_NOT_FOUND, "the job has no GPU on this node");
	if (!rc)
		snprintf(uuid, len, "%s", sel[local % n_sel].uuid);
	*n_gpus = n_sel;
	free(sel);
	gpushare_system_release(&sys);
	return rc;
}

int gpushare_slurm_task_env(const char *state_dir, struct gpushare_slurm_task_env *e)
{
	struct gpushare_slurm_share sh;
	struct gpushare_slurm_env senv;
	char state[GPUSHARE_PATH_MAX];
	size_t n = 0;
	int rc;

	memset(e, 0, sizeof(*e));
	if ((rc = gpushare_slurm_share_read(&sh)))
		return rc;
	if (!sh.in_job)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "not in a Slurm job: SLURM_JOB_ID is not set");
	if ((rc = gpushare_slurm_env_read(&senv)))
		return rc;
	e->source = senv.source;
	snprintf(e->visible, sizeof(e->visible), "%s", senv.visible);
	if (sh.mps_percentage <= 0)
		return GPUSHARE_OK;
	if ((rc = task_gpu(&senv, e->gpu_uuid, sizeof(e->gpu_uuid), &n)))
		return rc;
	/* Each daemon serves one GPU: a task with several is given its own. */
	if (n > 1 || e->visible[0])
		snprintf(e->visible, sizeof(e->visible), "%s", e->gpu_uuid);
	gpushare_slurm_state_dir(state_dir, state, sizeof(state));
	if ((rc = gpushare_slurm_daemon_pipe(state, getuid(), e->gpu_uuid, e->pipe_dir, sizeof(e->pipe_dir))))
		return rc;
	snprintf(e->log_dir, sizeof(e->log_dir), "%.*s/log", (int)(strrchr(e->pipe_dir, '/') - e->pipe_dir),
		 e->pipe_dir);
	if (access(e->pipe_dir, X_OK) != 0)
		return gpushare_fail(GPUSHARE_E_MPS_NOT_RUNNING,
				     "job %s holds %g%% of GPU %s (gres/mps) but the prolog's MPS daemon is not there "
				     "('%s': %s); is `gpushare slurm prolog` slurm.conf's Prolog= (docs/slurm.md)?",
				     sh.job_id, sh.mps_percentage, e->gpu_uuid, e->pipe_dir, strerror(errno));
	return GPUSHARE_OK;
}
