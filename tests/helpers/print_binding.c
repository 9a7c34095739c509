/*
 * A test program for the launcher rules: run under mpirun or srun, it prints
 * on one line what lib/exec/launcher.c makes of the current environment, the
 * launcher, the ranks, the job key and the GPU this rank would be bound to
 * (GPUs from NVML, the stand-in one in tests). Usage:
 *   print_binding [--gpus SPEC] [--bind round-robin|block] [--ranks-per-gpu K]
 *   print_binding --shard     (only the farm shard the Slurm variables give)
 * Output: key=value pairs separated by spaces; exit 2 with "print_binding:
 * ..." on stderr when the rules refuse the environment.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "gpushare/gpu.h"
#include "gpushare/util.h"
#include "farm_jobs.h"
#include "gpu_select.h"
#include "launcher.h"
#include "sys.h"

static int die(const char *what, int rc)
{
	fprintf(stderr, "print_binding: %s: %s\n", what, gpushare_errdetail()[0] ? gpushare_errdetail()
										  : gpushare_strerror(rc));
	return 2;
}

int main(int argc, char **argv)
{
	const char *spec = NULL;
	enum gpushare_launcher_bind bind = LAUNCHER_BIND_ROUND_ROBIN;
	long rpg = 0;
	struct launcher_info li;
	struct gpushare_system_info sys;
	struct gpushare_gpu_ref *inv, *sel;
	struct launcher_binding b;
	size_t n_sel;
	int rc;

	if (argc == 2 && !strcmp(argv[1], "--shard")) {
		struct farm_shard sh;
		bool from_env;

		if ((rc = gpushare_farm_shard_from_env(gpushare_getenv_process, NULL, &sh, &from_env)))
			return die("shard", rc);
		printf("shard=%lu/%lu from_env=%d\n", sh.index, sh.count, from_env);
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--gpus") && v)
			spec = v;
		else if (!strcmp(argv[i], "--bind") && v && !(rc = gpushare_launcher_bind_parse(v, &bind)))
			;
		else if (!strcmp(argv[i], "--ranks-per-gpu") && v && !(rc = gpushare_parse_int(v, 1, 1024, &rpg)))
			;
		else {
			fprintf(stderr, "usage: print_binding [--gpus SPEC] [--bind round-robin|block] [--ranks-per-gpu K]\n");
			return 2;
		}
		i++;
	}
	if ((rc = gpushare_launcher_detect(gpushare_getenv_process, NULL, &li)))
		return die("launcher", rc);
	if ((rc = gpushare_system_query_nvml(&sys)))
		return die("gpus", rc);
	inv = calloc(sys.n_gpus + 1, sizeof(*inv));
	sel = calloc(sys.n_gpus + 1, sizeof(*sel));
	if (!inv || !sel)
		return 2;
	for (size_t i = 0; i < sys.n_gpus; i++) {
		inv[i].index = sys.gpus[i].index;
		snprintf(inv[i].uuid, sizeof(inv[i].uuid), "%s", sys.gpus[i].uuid);
	}
	rc = gpushare_gpu_select(inv, sys.n_gpus, spec, gpushare_getenv_process, NULL, sel, &n_sel);
	gpushare_system_release(&sys);
	if (rc)
		return die("gpus", rc);
	if ((rc = gpushare_launcher_bind(bind, li.local_rank, li.local_size, n_sel, (unsigned)rpg, &b)))
		return die("binding", rc);
	printf("launcher=%s rank=%ld size=%ld local_rank=%ld local_size=%ld job_key=%s gpus=%zu "
	       "gpu=%u uuid=%s ranks_on_gpu=%u max_ranks_per_gpu=%u\n",
	       gpushare_launcher_kind_name(li.kind), li.rank, li.size, li.local_rank, li.local_size,
	       li.job_key[0] ? li.job_key : "-", n_sel, sel[b.gpu].index, sel[b.gpu].uuid, b.ranks_on_gpu,
	       b.max_ranks_per_gpu);
	free(inv);
	free(sel);
	return 0;
}
