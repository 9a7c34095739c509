/*
 * Node-local rank detection and GPU binding for `gpushare exec`
 * (launcher.h): pure functions over an environment lookup.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "items.h"
#include "launcher.h"

const char *gpushare_launcher_kind_name(enum launcher_kind k)
{
	switch (k) {
	case LAUNCHER_OPENMPI: return "openmpi";
	case LAUNCHER_MPICH: return "mpich";
	case LAUNCHER_PMIX: return "pmix";
	case LAUNCHER_SLURM: return "slurm";
	}
	return "unknown";
}

struct tasks_walk {
	long node, seen, count;
	bool bad; /* an item is not N or N(xR) */
};

enum { TASKS_FOUND = 1 }; /* stops the walk: a count found (errors are < 0) */

/* One item N or N(xR) of a tasks-per-node list. */
static int tasks_item(void *arg, const char *p, size_t len)
{
	struct tasks_walk *w = arg;
	const char *stop = p + len;
	char *end;
	long n, rep = 1;

	w->bad = true;
	errno = 0;
	n = strtol(p, &end, 10);
	if (errno || end == p || n < 0 || *p == '-' || *p == '+')
		return GPUSHARE_E_INVAL;
	if (end < stop && *end == '(') {
		if (end[1] != 'x' || end[2] == '-' || end[2] == '+')
			return GPUSHARE_E_INVAL;
		p = end + 2;
		rep = strtol(p, &end, 10);
		if (errno || end == p || rep < 1 || *end != ')')
			return GPUSHARE_E_INVAL;
		end++;
	}
	if (end != stop)
		return GPUSHARE_E_INVAL;
	w->bad = false;
	if (w->node - w->seen < rep) {   /* node >= seen here: no overflow, nor in seen += rep after */
		w->count = n;
		return TASKS_FOUND;
	}
	w->seen += rep;
	return GPUSHARE_OK;
}

int gpushare_launcher_parse_tasks_per_node(const char *s, long node, long *count)
{
	struct tasks_walk w = { node, 0, 0, false };
	char what[96];
	int rc;

	if (!s || !*s || node < 0)
		goto bad;
	snprintf(what, sizeof(what), "tasks-per-node list '%.60s'", s);
	rc = gpushare_each_item_named(what, s, ',', tasks_item, &w);
	if (rc == TASKS_FOUND) {
		*count = w.count;
		return GPUSHARE_OK;
	}
	if (w.bad)
		goto bad;
	if (rc)
		return rc;
	return gpushare_fail(GPUSHARE_E_INVAL, "tasks-per-node list '%s' has no entry for node %ld", s, node);
bad:
	return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a tasks-per-node list (expected e.g. 4(x2),3)",
			     s ? s : "");
}

/* Copy v into key as a file-name-safe string with a prefix. */
static void set_key(char *key, size_t len, const char *prefix, const char *v, const char *v2)
{
	size_t o = (size_t)snprintf(key, len, "%s-", prefix);

	for (int part = 0; part < 2; part++) {
		const char *s = part ? v2 : v;

		if (!s)
			continue;
		if (part && o + 1 < len)
			key[o++] = '.';
		for (; *s && o + 1 < len; s++) {
			char c = *s;
			bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
				  c == '.' || c == '_' || c == '-';

			key[o++] = ok ? c : '_';
		}
	}
	key[o < len ? o : len - 1] = '\0';
}

static const char *nonempty(gpushare_getenv_fn getenv_fn, void *ctx, const char *name)
{
	const char *v = getenv_fn(ctx, name);

	return v && *v ? v : NULL;
}

/* Read the rank/size pair of one launcher: 1 found, 0 not this one, <0. */
static int read_pair(gpushare_getenv_fn getenv_fn, void *ctx, const char *rank_var, const char *size_var,
		     struct launcher_info *out)
{
	int r = gpushare_env_number(getenv_fn, ctx, rank_var, 0, LONG_MAX, &out->local_rank), s;

	if (r <= 0)
		return r;
	s = gpushare_env_number(getenv_fn, ctx, size_var, 0, LONG_MAX, &out->local_size);
	if (s < 0)
		return s;
	if (s == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s is set but %s is not", rank_var, size_var);
	out->rank_var = rank_var;
	out->size_var = size_var;
	return 1;
}

static int read_slurm(gpushare_getenv_fn getenv_fn, void *ctx, struct launcher_info *out)
{
	const char *tpn;
	long node = 0;
	int rc;

	if (!getenv_fn(ctx, "SLURM_STEP_ID"))
		return 0;               /* the batch script itself: one process */
	if ((rc = gpushare_env_number(getenv_fn, ctx, "SLURM_LOCALID", 0, LONG_MAX, &out->local_rank)) <= 0)
		return rc;
	out->rank_var = "SLURM_LOCALID";
	if ((tpn = nonempty(getenv_fn, ctx, "SLURM_STEP_TASKS_PER_NODE"))) {
		if ((rc = gpushare_env_number(getenv_fn, ctx, "SLURM_NODEID", 0, LONG_MAX, &node)) < 0)
			return rc;
		if ((rc = gpushare_launcher_parse_tasks_per_node(tpn, node, &out->local_size)))
			return gpushare_fail(rc, "SLURM_STEP_TASKS_PER_NODE: %s", gpushare_errdetail());
		out->size_var = "SLURM_STEP_TASKS_PER_NODE";
		return 1;
	}
	if ((rc = gpushare_env_number(getenv_fn, ctx, "SLURM_NTASKS_PER_NODE", 0, LONG_MAX, &out->local_size)) < 0)
		return rc;
	if (rc == 0)
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "SLURM_LOCALID is set but neither SLURM_STEP_TASKS_PER_NODE nor SLURM_NTASKS_PER_NODE is");
	out->size_var = "SLURM_NTASKS_PER_NODE";
	return 1;
}

int gpushare_launcher_detect(gpushare_getenv_fn getenv_fn, void *ctx, struct launcher_info *out)
{
	const char *slurm_job = nonempty(getenv_fn, ctx, "SLURM_JOB_ID");
	const char *slurm_step = nonempty(getenv_fn, ctx, "SLURM_STEP_ID");
	const char *id = NULL;
	int found;

	memset(out, 0, sizeof(*out));
	out->rank = out->size = -1;
	if ((found = read_pair(getenv_fn, ctx, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", out))) {
		out->kind = LAUNCHER_OPENMPI;
		if (found > 0 && gpushare_env_number(getenv_fn, ctx, "OMPI_COMM_WORLD_RANK", 0, LONG_MAX, &out->rank) <= 0)
			out->rank = -1;
		if (found > 0 && gpushare_env_number(getenv_fn, ctx, "OMPI_COMM_WORLD_SIZE", 0, LONG_MAX, &out->size) <= 0)
			out->size = -1;
		if ((id = nonempty(getenv_fn, ctx, "OMPI_MCA_orte_ess_jobid")) ||
		    (id = nonempty(getenv_fn, ctx, "OMPI_MCA_ess_base_jobid")) ||
		    (id = nonempty(getenv_fn, ctx, "PMIX_NAMESPACE")))
			set_key(out->job_key, sizeof(out->job_key), "ompi", id, NULL);
	} else if ((found = read_pair(getenv_fn, ctx, "MPI_LOCALRANKID", "MPI_LOCALNRANKS", out))) {
		out->kind = LAUNCHER_MPICH;
		if (found > 0 && gpushare_env_number(getenv_fn, ctx, "PMI_RANK", 0, LONG_MAX, &out->rank) <= 0)
			out->rank = -1;
		if (found > 0 && gpushare_env_number(getenv_fn, ctx, "PMI_SIZE", 0, LONG_MAX, &out->size) <= 0)
			out->size = -1;
		if ((id = nonempty(getenv_fn, ctx, "PMIX_NAMESPACE")) || (id = nonempty(getenv_fn, ctx, "PMI_KVSNAME")))
			set_key(out->job_key, sizeof(out->job_key), "mpich", id, NULL);
	} else if ((found = read_pair(getenv_fn, ctx, "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE", out))) {
		out->kind = LAUNCHER_PMIX;
		if (found > 0 && gpushare_env_number(getenv_fn, ctx, "PMIX_RANK", 0, LONG_MAX, &out->rank) <= 0)
			out->rank = -1;
		if ((id = nonempty(getenv_fn, ctx, "PMIX_NAMESPACE")))
			set_key(out->job_key, sizeof(out->job_key), "pmix", id, NULL);
	} else if ((found = read_slurm(getenv_fn, ctx, out))) {
		out->kind = LAUNCHER_SLURM;
		if (found > 0 && gpushare_env_number(getenv_fn, ctx, "SLURM_PROCID", 0, LONG_MAX, &out->rank) <= 0)
			out->rank = -1;
		if (found > 0 && gpushare_env_number(getenv_fn, ctx, "SLURM_NTASKS", 0, LONG_MAX, &out->size) <= 0)
			out->size = -1;
	}
	if (found < 0)
		return found;
	if (!found)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND,
				     "no launcher found: none of OMPI_COMM_WORLD_LOCAL_RANK (Open MPI), MPI_LOCALRANKID "
				     "(MPICH), PMIX_LOCAL_RANK (PMIx) or SLURM_LOCALID in a job step (srun) is set; "
				     "start gpushare exec under mpirun or srun");
	if (out->local_size < 1 || out->local_rank >= out->local_size)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s=%ld does not fit %s=%ld", out->rank_var,
				     out->local_rank, out->size_var, out->local_size);
	if (out->rank >= 0 && out->size >= 0 && out->rank >= out->size)
		return gpushare_fail(GPUSHARE_E_INVAL, "the %s launcher's rank %ld is not below its job's size %ld; "
				     "the environment is inconsistent", gpushare_launcher_kind_name(out->kind), out->rank,
				     out->size);
	if (out->size >= 0 && out->local_size > out->size)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s=%ld is more than the job's %ld ranks", out->size_var,
				     out->local_size, out->size);
	if (!out->job_key[0] && slurm_job)
		set_key(out->job_key, sizeof(out->job_key), "slurm", slurm_job, slurm_step);
	return GPUSHARE_OK;
}


/* ---- binding ---- */

int gpushare_launcher_bind_parse(const char *s, enum gpushare_launcher_bind *out)
{
	if (s && !strcmp(s, "round-robin"))
		*out = LAUNCHER_BIND_ROUND_ROBIN;
	else if (s && !strcmp(s, "block"))
		*out = LAUNCHER_BIND_BLOCK;
	else
		return gpushare_fail(GPUSHARE_E_INVAL, "unknown binding '%s' (expected round-robin or block)",
				     s ? s : "");
	return GPUSHARE_OK;
}

const char *gpushare_launcher_bind_name(enum gpushare_launcher_bind b)
{
	return b == LAUNCHER_BIND_BLOCK ? "block" : "round-robin";
}

int gpushare_launcher_bind(enum gpushare_launcher_bind policy, long local_rank, long local_size, size_t n_gpus,
		  unsigned ranks_per_gpu, struct launcher_binding *out)
{
	size_t n, g, r, used, q, rem;

	if (n_gpus == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "no GPU to bind ranks to");
	if (local_size < 1 || local_rank < 0 || local_rank >= local_size)
		return gpushare_fail(GPUSHARE_E_INVAL, "local rank %ld does not fit %ld local ranks", local_rank,
				     local_size);
	n = (size_t)local_size;
	r = (size_t)local_rank;
	g = n_gpus;
	if (ranks_per_gpu) {
		if (n % ranks_per_gpu)
			return gpushare_fail(GPUSHARE_E_INVAL,
					     "%zu ranks on this node are not a multiple of --ranks-per-gpu %u", n,
					     ranks_per_gpu);
		if (n / ranks_per_gpu > g)
			return gpushare_fail(GPUSHARE_E_INVAL,
					     "%zu ranks on this node at --ranks-per-gpu %u need %zu GPUs, but %zu %s usable",
					     n, ranks_per_gpu, n / ranks_per_gpu, g, g == 1 ? "is" : "are");
		g = n / ranks_per_gpu;
	}
	used = n < g ? n : g;
	q = n / g;
	rem = n % g;
	if (policy == LAUNCHER_BIND_ROUND_ROBIN) {
		out->gpu = r % g;
	} else if (r < rem * (q + 1)) {
		out->gpu = r / (q + 1);
	} else {
		out->gpu = rem + (r - rem * (q + 1)) / q;
	}
	/* Both policies give the first n mod g GPUs one rank more. */
	out->ranks_on_gpu = (unsigned)(q + (out->gpu < rem ? 1 : 0));
	out->max_ranks_per_gpu = (unsigned)(q + (rem ? 1 : 0));
	out->gpus_used = used;
	return GPUSHARE_OK;
}
