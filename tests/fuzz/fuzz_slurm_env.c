/*
 * libFuzzer harness for what the Slurm hooks and `exec`/`farm` read from a
 * job's environment, which whoever submits the job controls in part:
 *  - the identity reader gpushare_parse_id (lib/core/parse.c) over
 *    SLURM_JOB_ID, SLURM_JOB_UID and SLURM_JOB_GID, against its own rule
 *    written out here: accepted exactly when the text is one or more digits
 *    whose value is at most the maximum, and then read as that value;
 *  - the job's GPU list (CUDA_VISIBLE_DEVICES, or SLURM_JOB_GPUS in its
 *    place) with a --gpus list through gpushare_gpu_select
 *    (lib/gpu/gpu_select.c): a success names only GPUs of the inventory,
 *    each once, at most all of them;
 *  - the job's share (gpushare_slurm_share_read, lib/slurm/slurm.c):
 *    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE in (0, 100], SLURM_SHARDS_ON_NODE in
 *    1..100000, and its description always a terminated string.
 * The input is up to seven fields separated by '\n', in this order: job id,
 * uid, gid, the GPU list, the percentage, the shard count, the --gpus list;
 * a missing field is an unset variable. Built with clang and
 * -DGPUSHARE_FUZZ=ON (tests/CMakeLists.txt); seeds in
 * tests/fuzz/corpus_slurm_env/.
 *
 *   build-fuzz/tests/fuzz_slurm_env -max_total_time=20 tests/fuzz/corpus_slurm_env
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "gpushare/slurm.h"
#include "gpushare/util.h"
#include "gpu_select.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { F_JOB, F_UID, F_GID, F_GPUS, F_PCT, F_SHARDS, F_SPEC, N_FIELDS };

/* The identity rule, written independently of the reader: digits only, at
 * least one, value at most max. */
static bool id_expected(const char *s, unsigned long max, unsigned long *value)
{
	unsigned __int128 v = 0;

	if (!*s)
		return false;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (unsigned)(*p - '0');
		if (v > max)
			return false;
	}
	*value = (unsigned long)v;
	return true;
}

static void check_id(const char *what, const char *s, unsigned long max)
{
	unsigned long got = 12345, want = 0;
	int rc = gpushare_parse_id(what, s, max, &got);
	bool ok = s && id_expected(s, max, &want);

	if ((rc == GPUSHARE_OK) != ok || (ok && got != want))
		abort();
	if (rc != GPUSHARE_OK && (got != 12345 || !*gpushare_errdetail()))
		abort(); /* a refusal leaves the output alone and says why */
	gpushare_clear_error();
}

/* The inventory: four GPUs, NVML indices with a gap, as on a node where one
 * GPU is hidden. */
static const struct gpushare_gpu_ref inventory[] = {
	{ 0, "GPU-8e4a3c1d-1f2b-4c5d-9e6f-0a1b2c3d4e5f" },
	{ 1, "GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70" },
	{ 3, "GPU-5f0c1e2a-0000-4c7e-8a1f-2b3c4d5e6f71" },
	{ 7, "GPU-11111111-2222-3333-4444-555555555555" },
};
#define N_INV (sizeof(inventory) / sizeof(inventory[0]))

static const char *fake_getenv(void *ctx, const char *name)
{
	return strcmp(name, "CUDA_VISIBLE_DEVICES") ? NULL : ctx;
}

static void check_select(const char *list, const char *spec)
{
	struct gpushare_gpu_ref out[N_INV + 1];
	size_t n = 99;
	int rc;

	memset(out, 0xA5, sizeof(out));
	rc = gpushare_gpu_select(inventory, N_INV, spec, fake_getenv, (void *)list, out, &n);
	if (rc == GPUSHARE_OK) {
		if (n < 1 || n > N_INV)
			abort();
		for (size_t i = 0; i < n; i++) {
			bool known = false;

			for (size_t k = 0; k < N_INV; k++)
				known |= out[i].index == inventory[k].index && !strcmp(out[i].uuid, inventory[k].uuid);
			if (!known)
				abort();
			for (size_t k = 0; k < i; k++)
				if (out[k].index == out[i].index)
					abort(); /* each GPU once */
		}
	} else if (!*gpushare_errdetail()) {
		abort();
	}
	gpushare_clear_error();
}

static void set(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
}

static void check_share(const char *job, const char *pct, const char *shards)
{
	struct gpushare_slurm_share s;
	char text[48];
	int rc;

	set("SLURM_JOB_ID", job);
	set("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", pct);
	set("SLURM_SHARDS_ON_NODE", shards);
	rc = gpushare_slurm_share_read(&s);
	if (rc == GPUSHARE_OK) {
		if (s.in_job != (job && *job) || !memchr(s.job_id, '\0', sizeof(s.job_id)))
			abort();
		if (s.mps_percentage < 0 || s.mps_percentage > 100 || (s.mps_percentage == 0) != !(s.in_job && pct && *pct))
			abort();
		if (s.shards > 100000 || (s.shards == 0) != !(s.in_job && shards && *shards))
			abort();
		memset(text, 0xA5, sizeof(text));
		gpushare_slurm_share_describe(&s, text, sizeof(text));
		if (!memchr(text, '\0', sizeof(text)))
			abort();
	} else if (!*gpushare_errdetail()) {
		abort();
	}
	gpushare_clear_error();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *field[N_FIELDS] = { 0 };
	size_t start = 0, f = 0;

	/* Environment values cannot hold a NUL: a field ends at its first. */
	for (size_t i = 0; i <= size && f < N_FIELDS; i++) {
		if (i == size || data[i] == '\n') {
			size_t len = i - start;
			const uint8_t *nul = memchr(data + start, '\0', len);

			if (nul)
				len = (size_t)(nul - (data + start));
			if (!(field[f] = malloc(len + 1)))
				goto out;
			memcpy(field[f], data + start, len);
			field[f][len] = '\0';
			f++;
			start = i + 1;
		}
	}
	check_id("SLURM_JOB_ID", field[F_JOB], UINT32_MAX);
	check_id("SLURM_JOB_UID", field[F_UID], UINT32_MAX - 1);
	check_id("SLURM_JOB_GID", field[F_GID], UINT32_MAX - 1);
	check_select(field[F_GPUS], field[F_SPEC]);
	check_share(field[F_JOB], field[F_PCT], field[F_SHARDS]);
out:
	for (size_t i = 0; i < N_FIELDS; i++)
		free(field[i]);
	return 0;
}
