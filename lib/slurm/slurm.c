/*
 * Slurm's share of a GPU as a job sees it (include/gpushare/slurm.h).
 *
 * Checked with Slurm 22.05 (Debian 12): --gres=mps:N sets
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=N (and CUDA_VISIBLE_DEVICES of the one
 * GPU) in every task and in the prolog; --gres=shard:N sets
 * SLURM_SHARDS_ON_NODE=N (and CUDA_VISIBLE_DEVICES); --gres=gpu:N sets
 * neither. Slurm computes N * 100 / the GPU's mps count, which a
 * configuration mixing gres can push above 100 (625 was seen): such a value
 * is taken as 100.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "gpushare/buf.h"
#include "gpushare/files.h"

#include "gpushare/gpushare.h"
#include "gpushare/slurm.h"
#include "slurm_gpus.h"

int gpushare_slurm_share_read(struct gpushare_slurm_share *s)
{
	const char *job = getenv("SLURM_JOB_ID"), *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
		   *shards = getenv("SLURM_SHARDS_ON_NODE");
	char *end;

	memset(s, 0, sizeof(*s));
	if (!job || !*job)
		return GPUSHARE_OK;
	s->in_job = true;
	snprintf(s->job_id, sizeof(s->job_id), "%s", job);
	if (pct && *pct) {
		double v;

		errno = 0;
		v = strtod(pct, &end);
		if (errno || end == pct || *end || !isfinite(v) || v <= 0)
			return gpushare_fail(GPUSHARE_E_INVAL,
					     "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE='%s' (Slurm's gres/mps share) is not a "
					     "percentage in (0, 100]", pct);
		if (v > 100) {
			v = 100;
			s->mps_clamped = true;
		}
		s->mps_percentage = v;
	}
	if (shards && *shards) {
		unsigned long v;

		errno = 0;
		v = strtoul(shards, &end, 10);
		if (errno || end == shards || *end || *shards == '-' || v == 0 || v > 100000)
			return gpushare_fail(GPUSHARE_E_INVAL,
					     "SLURM_SHARDS_ON_NODE='%s' (Slurm's gres/shard count) is not a positive count",
					     shards);
		s->shards = (unsigned)v;
	}
	return GPUSHARE_OK;
}

void gpushare_slurm_share_describe(const struct gpushare_slurm_share *s, char *buf, size_t len)
{
	size_t n = 0;

	if (!len)
		return;
	buf[0] = '\0';
	if (s->mps_percentage > 0)
		n += (size_t)snprintf(buf, len, "gres/mps %g%% (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE%s)", s->mps_percentage,
				      s->mps_clamped ? " above 100, taken as 100" : "");
	if (s->shards > 0 && n < len)
		snprintf(buf + n, len - n, "%sgres/shard %u (SLURM_SHARDS_ON_NODE)", n ? ", " : "", s->shards);
}

void gpushare_slurm_state_dir(const char *dir, char *out, size_t len)
{
	const char *env = getenv("GPUSHARE_SLURM_DIR");

	snprintf(out, len, "%s", dir && *dir ? dir : env && *env ? env : GPUSHARE_SLURM_DEFAULT_DIR);
}

int gpushare_slurm_daemon_pipe(const char *state_dir, uid_t uid, const char *gpu_uuid, char *out, size_t len)
{
	for (const char *p = gpu_uuid; *p; p++) {
		if (!(*p == '-' || *p == '_' || *p == '.' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z')))
			return gpushare_fail(GPUSHARE_E_INVAL, "GPU id '%s' is not a UUID", gpu_uuid);
	}
	if (!*gpu_uuid || (size_t)snprintf(out, len, "%s/mps-%u-%s/pipe", state_dir, (unsigned)uid, gpu_uuid) >= len)
		return gpushare_fail(GPUSHARE_E_DIR, "the prolog's pipe directory for '%s' is too long", gpu_uuid);
	return GPUSHARE_OK;
}

/* ---- which GPUs Slurm gave ---- */

/* The GPUs of the prolog's record of job (its "gpu UUID" lines), comma-
 * separated in out; false when there is no readable record or it names
 * none. */
static bool record_gpus(const char *state_dir, const char *job, char *out, size_t len)
{
	char path[GPUSHARE_PATH_MAX], *data = NULL, *line, *save = NULL;
	size_t n = 0, dlen;

	out[0] = '\0';
	if (strchr(job, '/') || (size_t)snprintf(path, sizeof(path), "%s/jobs/%s", state_dir, job) >= sizeof(path))
		return false;
	if (gpushare_read_file(path, 1 << 16, &data, &dlen) != GPUSHARE_OK) {
		gpushare_clear_error();
		return false;
	}
	for (line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char uuid[96];

		if (sscanf(line, "gpu %95s", uuid) == 1 && n < len)
			n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "," : "", uuid);
	}
	free(data);
	if (n >= len)
		out[0] = '\0'; /* cut short: a partial list would be wrong */
	return out[0] != '\0';
}

int gpushare_slurm_job_gpus(const char *state_dir, char *out, size_t len, const char **source)
{
	static const char *const vars[] = { "SLURM_STEP_GPUS", "SLURM_JOB_GPUS" };
	struct gpushare_slurm_share sh;
	char state[GPUSHARE_PATH_MAX], share[200];
	int rc;

	*source = NULL;
	out[0] = '\0';
	if (getenv("CUDA_VISIBLE_DEVICES"))
		return GPUSHARE_OK; /* Slurm named them (or the user did) */
	if ((rc = gpushare_slurm_share_read(&sh)))
		return rc;
	if (!sh.in_job)
		return GPUSHARE_OK;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);

		if (v && *v) {
			if ((size_t)snprintf(out, len, "%s", v) >= len)
				return gpushare_fail(GPUSHARE_E_INVAL, "%s='%.60s...' is too long", vars[i], v);
			*source = vars[i];
			return GPUSHARE_OK;
		}
	}
	gpushare_slurm_state_dir(state_dir, state, sizeof(state));
	if (record_gpus(state, sh.job_id, out, len)) {
		*source = "prolog";
		return GPUSHARE_OK;
	}
	if (!gpushare_slurm_share_any(&sh))
		return GPUSHARE_OK;
	gpushare_slurm_share_describe(&sh, share, sizeof(share));
	return gpushare_fail(GPUSHARE_E_NOT_FOUND,
			     "Slurm granted job %s %s but named no GPU: CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS and "
			     "SLURM_JOB_GPUS are unset and '%s/jobs/%s' (written by `gpushare slurm prolog`) names none; "
			     "refusing to take every GPU of the node. Run `gpushare slurm prolog` as slurm.conf's Prolog= "
			     "(docs/slurm.md), or give the GPU with CUDA_VISIBLE_DEVICES", sh.job_id, share, state,
			     sh.job_id);
}

/* ---- dcgm-exporter's HPC job mapping ---- */

static int map_lock(const char *dir, int *fd)
{
	*fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0)
		return gpushare_fail(GPUSHARE_E_DIR, "--hpc-job-mapping-dir '%s': %s", dir, strerror(errno));
	while (flock(*fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			int e = errno;

			close(*fd);
			*fd = -1;
			return gpushare_fail(GPUSHARE_E_IO, "cannot lock '%s': %s", dir, strerror(e));
		}
	}
	return GPUSHARE_OK;
}

static bool valid_job_id(const char *job_id)
{
	if (!*job_id)
		return false;
	for (const char *p = job_id; *p; p++) {
		if (*p == '\n' || *p == '/' || *p == ' ')
			return false;
	}
	return true;
}

/* Rewrite path with job_id added or removed (the caller holds the lock). */
static int map_edit(const char *path, const char *job_id, bool add)
{
	char *data = NULL, *line, *save = NULL;
	struct gpushare_buf b = { 0 };
	bool found = false;
	size_t len = 0;
	int rc = GPUSHARE_OK;

	if (gpushare_read_file(path, 1 << 20, &data, &len) != GPUSHARE_OK) {
		gpushare_clear_error();
		data = NULL;
	}
	for (line = data ? strtok_r(data, "\n", &save) : NULL; line && !rc; line = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(line, job_id)) {
			found = true;
			if (!add)
				continue;
		}
		rc = gpushare_buf_addf(&b, "%s\n", line);
	}
	free(data);
	if (!rc && add && !found)
		rc = gpushare_buf_addf(&b, "%s\n", job_id);
	if (!rc && (add ? !found : found)) {
		const char *text = gpushare_buf_str(&b);

		if (*text)
			rc = gpushare_write_file_atomic(path, text, strlen(text));
		else if (unlink(path) != 0 && errno != ENOENT)
			rc = gpushare_fail(GPUSHARE_E_IO, "cannot remove '%s': %s", path, strerror(errno));
	}
	gpushare_buf_release(&b);
	return rc;
}

int gpushare_slurm_job_map(const char *dir, unsigned gpu_index, const char *job_id, bool add)
{
	char name[16];

	snprintf(name, sizeof(name), "%u", gpu_index);
	return gpushare_slurm_job_map_name(dir, name, job_id, add);
}

int gpushare_slurm_job_map_name(const char *dir, const char *name, const char *job_id, bool add)
{
	char path[GPUSHARE_PATH_MAX];
	size_t digits = strspn(name, "0123456789");
	int fd, rc;

	if (!valid_job_id(job_id))
		return gpushare_fail(GPUSHARE_E_INVAL, "job id '%s' cannot go into a job mapping file", job_id);
	/* dcgm-exporter reads <GPU_ID> or <GPU_ID>.<GPU_INSTANCE_ID> only */
	if (!digits || (name[digits] &&
			(name[digits] != '.' || !name[digits + 1] ||
			 strspn(name + digits + 1, "0123456789") != strlen(name + digits + 1))))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is no GPU's job mapping file (a GPU index, or a GPU index "
				     "and a GPU instance id: 2.1)", name);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return gpushare_fail(GPUSHARE_E_DIR, "--hpc-job-mapping-dir '%s': path too long", dir);
	if ((rc = map_lock(dir, &fd)))
		return rc;
	rc = map_edit(path, job_id, add);
	close(fd);
	return rc;
}

int gpushare_slurm_job_unmap_all(const char *dir, const char *job_id)
{
	char path[GPUSHARE_PATH_MAX + 260];
	struct dirent *e;
	int fd, rc, first = GPUSHARE_OK;
	DIR *d;

	if (!valid_job_id(job_id))
		return gpushare_fail(GPUSHARE_E_INVAL, "job id '%s' cannot go into a job mapping file", job_id);
	if ((rc = map_lock(dir, &fd)))
		return rc;
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' || strspn(e->d_name, "0123456789.") != strlen(e->d_name))
			continue; /* only the GPUs' files ("0", "2.1" for a MIG instance) */
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		rc = map_edit(path, job_id, false);
		if (rc && !first)
			first = rc;
	}
	if (d)
		closedir(d);
	close(fd);
	return first;
}

/* ---- the GPU choice's environment (slurm_gpus.h) ---- */

int gpushare_slurm_env_read(struct gpushare_slurm_env *e)
{
	return gpushare_slurm_job_gpus(NULL, e->visible, sizeof(e->visible), &e->source);
}

const char *gpushare_slurm_getenv(void *ctx, const char *name)
{
	const struct gpushare_slurm_env *e = ctx;

	if (e && e->visible[0] && !strcmp(name, "CUDA_VISIBLE_DEVICES"))
		return e->visible;
	return getenv(name);
}
