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
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "gpushare/slurm.h"

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
