/*
 * Unit tests: node-local rank detection for each launcher, Slurm's
 * compressed tasks-per-node lists, GPU selection against
 * CUDA_VISIBLE_DEVICES and the binding rules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "gpu_select.h"
#include "launcher.h"

/* A NULL-terminated table of NAME, VALUE pairs as an environment. */
static const char *table_env(void *ctx, const char *name)
{
	const char *const *t = ctx;

	for (; t[0]; t += 2)
		if (!strcmp(t[0], name))
			return t[1];
	return NULL;
}

static int detect(const char *const *env, struct launcher_info *info)
{
	return gpushare_launcher_detect(table_env, (void *)env, info);
}

static void test_openmpi(void **state)
{
	struct launcher_info li;

	(void)state;
	assert_int_equal(detect((const char *[]){ "OMPI_COMM_WORLD_LOCAL_RANK", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "4",
						  "OMPI_COMM_WORLD_RANK", "6", "OMPI_COMM_WORLD_SIZE", "8",
						  "OMPI_MCA_orte_ess_jobid", "1234567", NULL }, &li), 0);
	assert_int_equal(li.kind, LAUNCHER_OPENMPI);
	assert_true(li.local_rank == 2 && li.local_size == 4 && li.rank == 6 && li.size == 8);
	assert_string_equal(li.job_key, "ompi-1234567");
	/* mpirun inside an sbatch script: the batch step's SLURM_* are there
	 * too, Open MPI's variables win; the job key is still Open MPI's. */
	assert_int_equal(detect((const char *[]){ "SLURM_LOCALID", "0", "SLURM_STEP_ID", "0",
						  "SLURM_STEP_TASKS_PER_NODE", "1", "SLURM_JOB_ID", "77",
						  "OMPI_COMM_WORLD_LOCAL_RANK", "1", "OMPI_COMM_WORLD_LOCAL_SIZE", "3",
						  "PMIX_NAMESPACE", "prterun-vm-123@1", NULL }, &li), 0);
	assert_int_equal(li.kind, LAUNCHER_OPENMPI);
	assert_true(li.local_rank == 1 && li.local_size == 3 && li.rank == -1);
	assert_string_equal(li.job_key, "ompi-prterun-vm-123_1");
	/* Without an id of its own: the Slurm job's. */
	assert_int_equal(detect((const char *[]){ "OMPI_COMM_WORLD_LOCAL_RANK", "0", "OMPI_COMM_WORLD_LOCAL_SIZE", "1",
						  "SLURM_JOB_ID", "77", NULL }, &li), 0);
	assert_string_equal(li.job_key, "slurm-77");
	/* Half a pair, or a rank beyond the size. */
	assert_int_equal(detect((const char *[]){ "OMPI_COMM_WORLD_LOCAL_RANK", "0", NULL }, &li), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "OMPI_COMM_WORLD_LOCAL_SIZE is not"));
	assert_int_equal(detect((const char *[]){ "OMPI_COMM_WORLD_LOCAL_RANK", "4", "OMPI_COMM_WORLD_LOCAL_SIZE", "4",
						  NULL }, &li), GPUSHARE_E_INVAL);
	assert_int_equal(detect((const char *[]){ "OMPI_COMM_WORLD_LOCAL_RANK", "x", "OMPI_COMM_WORLD_LOCAL_SIZE", "4",
						  NULL }, &li), GPUSHARE_E_INVAL);
	assert_int_equal(detect((const char *[]){ "OMPI_COMM_WORLD_LOCAL_RANK", "0", "OMPI_COMM_WORLD_LOCAL_SIZE", "0",
						  NULL }, &li), GPUSHARE_E_INVAL);
	/* The one reader of numbers: empty, signed or spaced values refused, the variable named. */
	assert_int_equal(detect((const char *[]){ "OMPI_COMM_WORLD_LOCAL_RANK", "", "OMPI_COMM_WORLD_LOCAL_SIZE", "4",
						  NULL }, &li), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "OMPI_COMM_WORLD_LOCAL_RANK is empty"));
	assert_int_equal(detect((const char *[]){ "OMPI_COMM_WORLD_LOCAL_RANK", "+1", "OMPI_COMM_WORLD_LOCAL_SIZE", "4",
						  NULL }, &li), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "OMPI_COMM_WORLD_LOCAL_RANK='+1'"));
	assert_int_equal(detect((const char *[]){ "OMPI_COMM_WORLD_LOCAL_RANK", "1", "OMPI_COMM_WORLD_LOCAL_SIZE", " 4",
						  NULL }, &li), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "OMPI_COMM_WORLD_LOCAL_SIZE=' 4'"));
}

static void test_mpich_pmix(void **state)
{
	struct launcher_info li;

	(void)state;
	assert_int_equal(detect((const char *[]){ "MPI_LOCALRANKID", "3", "MPI_LOCALNRANKS", "5", "PMI_RANK", "8",
						  "PMI_SIZE", "10", NULL }, &li), 0);
	assert_int_equal(li.kind, LAUNCHER_MPICH);
	assert_true(li.local_rank == 3 && li.local_size == 5 && li.rank == 8 && li.size == 10);
	assert_string_equal(li.job_key, "");
	assert_int_equal(detect((const char *[]){ "PMIX_LOCAL_RANK", "1", "PMIX_LOCAL_SIZE", "2", "PMIX_RANK", "5",
						  "PMIX_NAMESPACE", "slurm.pmix.42.0", NULL }, &li), 0);
	assert_int_equal(li.kind, LAUNCHER_PMIX);
	assert_true(li.local_rank == 1 && li.local_size == 2 && li.rank == 5);
	assert_string_equal(li.job_key, "pmix-slurm.pmix.42.0");
}

static void test_slurm(void **state)
{
	struct launcher_info li;

	(void)state;
	/* srun -N3 -n11: 4(x2),3; this task is on node 2. */
	assert_int_equal(detect((const char *[]){ "SLURM_STEP_ID", "0", "SLURM_LOCALID", "2", "SLURM_NODEID", "2",
						  "SLURM_STEP_TASKS_PER_NODE", "4(x2),3", "SLURM_PROCID", "10",
						  "SLURM_NTASKS", "11", "SLURM_JOB_ID", "42", NULL }, &li), 0);
	assert_int_equal(li.kind, LAUNCHER_SLURM);
	assert_true(li.local_rank == 2 && li.local_size == 3 && li.rank == 10 && li.size == 11);
	assert_string_equal(li.job_key, "slurm-42.0");
	/* SLURM_NTASKS_PER_NODE without the step's list. */
	assert_int_equal(detect((const char *[]){ "SLURM_STEP_ID", "1", "SLURM_LOCALID", "1",
						  "SLURM_NTASKS_PER_NODE", "2", NULL }, &li), 0);
	assert_int_equal(li.local_size, 2);
	assert_string_equal(li.size_var, "SLURM_NTASKS_PER_NODE");
	/* The batch script itself is no rank. */
	assert_int_equal(detect((const char *[]){ "SLURM_LOCALID", "0", "SLURM_JOB_ID", "42",
						  "SLURM_TASKS_PER_NODE", "2", NULL }, &li), GPUSHARE_E_NOT_FOUND);
	assert_non_null(strstr(gpushare_errdetail(), "no launcher found"));
	assert_int_equal(detect((const char *[]){ "SLURM_STEP_ID", "0", "SLURM_LOCALID", "0", NULL }, &li),
			 GPUSHARE_E_INVAL);
	assert_int_equal(detect((const char *[]){ "SLURM_STEP_ID", "0", "SLURM_LOCALID", "3", "SLURM_NODEID", "0",
						  "SLURM_STEP_TASKS_PER_NODE", "2,4", NULL }, &li), GPUSHARE_E_INVAL);
	assert_int_equal(detect((const char *[]){ NULL }, &li), GPUSHARE_E_NOT_FOUND);
}

static void test_tasks_per_node(void **state)
{
	long n;

	(void)state;
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("4(x2),3,1", 0, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("4(x2),3,1", 1, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("4(x2),3,1", 2, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("4(x2),3,1", 3, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("4(x2),3,1", 4, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("16", 0, &n), 0);
	assert_int_equal(n, 16);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("2(x1000)", 999, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("4(2)", 0, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("4(x0)", 0, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("4(x2", 0, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("", 0, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("a", 0, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("4;3", 1, &n), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "is not a tasks-per-node list"));
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("4,,3", 1, &n), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "has an empty item"));
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("4(x2)3", 2, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("4(x-1)", 0, &n), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_launcher_parse_tasks_per_node("4(x2),3", 3, &n), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "no entry for node 3"));
}

static const struct gpushare_gpu_ref inv[] = {
	{ 0, "GPU-aaaa1111-0000-0000-0000-000000000000" },
	{ 1, "GPU-bbbb2222-0000-0000-0000-000000000000" },
	{ 2, "GPU-bbbb3333-0000-0000-0000-000000000000" },
	{ 3, "GPU-dddd4444-0000-0000-0000-000000000000" },
};

/* Select with spec under env; returns rc and the indices as "i,j,...". */
static int sel(const char *spec, const char *const *env, char *got)
{
	struct gpushare_gpu_ref out[4];
	size_t n;
	int rc = gpushare_gpu_select(inv, 4, spec, table_env, (void *)env, out, &n);

	got[0] = '\0';
	for (size_t i = 0; !rc && i < n; i++)
		sprintf(got + strlen(got), "%s%u", i ? "," : "", out[i].index);
	return rc;
}

static void test_select_gpus(void **state)
{
	const char *none[] = { NULL };
	char got[64];

	(void)state;
	assert_int_equal(sel(NULL, none, got), 0);
	assert_string_equal(got, "0,1,2,3");
	assert_int_equal(sel("all", none, got), 0);
	assert_string_equal(got, "0,1,2,3");
	assert_int_equal(sel("3,1", none, got), 0);
	assert_string_equal(got, "3,1");
	assert_int_equal(sel("GPU-dddd4444-0000-0000-0000-000000000000,0", none, got), 0);
	assert_string_equal(got, "3,0");
	assert_int_equal(sel("GPU-bbbb3", none, got), 0);      /* unique prefix */
	assert_string_equal(got, "2");
	assert_int_equal(sel("GPU-bbbb", none, got), GPUSHARE_E_INVAL);   /* ambiguous */
	assert_int_equal(sel("GPU-b", none, got), GPUSHARE_E_NOT_FOUND);  /* too short */
	assert_int_equal(sel(",,,", none, got), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "empty item"));
	assert_int_equal(sel("0,", none, got), GPUSHARE_E_INVAL);
	assert_int_equal(sel("", none, got), GPUSHARE_E_INVAL);
	assert_int_equal(sel("1,1", none, got), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "twice"));
	assert_int_equal(sel("0,GPU-aaaa1111-0000-0000-0000-000000000000", none, got), GPUSHARE_E_INVAL);
	assert_int_equal(sel("4", none, got), GPUSHARE_E_NOT_FOUND);
	assert_int_equal(sel("1x", none, got), GPUSHARE_E_INVAL);

	/* CUDA_VISIBLE_DEVICES: indices or UUIDs, in its order. */
	assert_int_equal(sel("all", (const char *[]){ "CUDA_VISIBLE_DEVICES", "2,0", NULL }, got), 0);
	assert_string_equal(got, "2,0");
	assert_int_equal(sel(NULL, (const char *[]){ "CUDA_VISIBLE_DEVICES",
						    "GPU-dddd4444-0000-0000-0000-000000000000,GPU-aaaa1111", NULL }, got), 0);
	assert_string_equal(got, "3,0");
	assert_int_equal(sel("0", (const char *[]){ "CUDA_VISIBLE_DEVICES", "2,0", NULL }, got), 0);
	assert_string_equal(got, "0");
	assert_int_equal(sel("1", (const char *[]){ "CUDA_VISIBLE_DEVICES", "2,0", NULL }, got), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "does not allow"));
	assert_int_equal(sel(NULL, (const char *[]){ "CUDA_VISIBLE_DEVICES", "", NULL }, got), GPUSHARE_E_NOT_FOUND);
	assert_int_equal(sel(NULL, (const char *[]){ "CUDA_VISIBLE_DEVICES", "NoDevFiles", NULL }, got),
			 GPUSHARE_E_NOT_FOUND);
	assert_int_equal(sel(NULL, (const char *[]){ "CUDA_VISIBLE_DEVICES", "-1", NULL }, got), GPUSHARE_E_NOT_FOUND);
	assert_int_equal(sel(NULL, (const char *[]){ "CUDA_VISIBLE_DEVICES", "0,9", NULL }, got), GPUSHARE_E_NOT_FOUND);
	assert_non_null(strstr(gpushare_errdetail(), "CUDA_VISIBLE_DEVICES"));
	assert_int_equal(sel(NULL, (const char *[]){ "CUDA_VISIBLE_DEVICES", "0,,1", NULL }, got), GPUSHARE_E_INVAL);
}

/* The GPU positions of all n ranks as "a,b,c". */
static int bind_all(enum gpushare_launcher_bind b, long n, size_t g, unsigned k, char *got, unsigned *max)
{
	struct launcher_binding lb;
	int rc = 0;

	got[0] = '\0';
	for (long r = 0; r < n && !rc; r++) {
		rc = gpushare_launcher_bind(b, r, n, g, k, &lb);
		if (!rc)
			sprintf(got + strlen(got), "%s%zu", r ? "," : "", lb.gpu);
	}
	if (!rc)
		*max = lb.max_ranks_per_gpu;
	return rc;
}

static void test_bind(void **state)
{
	char got[128];
	unsigned max;
	struct launcher_binding lb;
	enum gpushare_launcher_bind b;

	(void)state;
	assert_int_equal(bind_all(LAUNCHER_BIND_ROUND_ROBIN, 5, 2, 0, got, &max), 0);
	assert_string_equal(got, "0,1,0,1,0");
	assert_int_equal(max, 3);
	assert_int_equal(bind_all(LAUNCHER_BIND_BLOCK, 5, 2, 0, got, &max), 0);
	assert_string_equal(got, "0,0,0,1,1");
	assert_int_equal(bind_all(LAUNCHER_BIND_BLOCK, 10, 4, 0, got, &max), 0);
	assert_string_equal(got, "0,0,0,1,1,1,2,2,3,3");
	assert_int_equal(max, 3);
	/* Fewer ranks than GPUs: one each, never two on one GPU. */
	assert_int_equal(bind_all(LAUNCHER_BIND_BLOCK, 3, 4, 0, got, &max), 0);
	assert_string_equal(got, "0,1,2");
	assert_int_equal(max, 1);
	assert_int_equal(gpushare_launcher_bind(LAUNCHER_BIND_BLOCK, 2, 3, 4, 0, &lb), 0);
	assert_true(lb.gpus_used == 3 && lb.ranks_on_gpu == 1);
	assert_int_equal(gpushare_launcher_bind(LAUNCHER_BIND_ROUND_ROBIN, 4, 5, 2, 0, &lb), 0);
	assert_true(lb.gpu == 0 && lb.ranks_on_gpu == 3 && lb.gpus_used == 2);
	assert_int_equal(gpushare_launcher_bind(LAUNCHER_BIND_ROUND_ROBIN, 3, 5, 2, 0, &lb), 0);
	assert_true(lb.gpu == 1 && lb.ranks_on_gpu == 2);

	/* --ranks-per-gpu K: exactly K on each GPU used. */
	assert_int_equal(bind_all(LAUNCHER_BIND_BLOCK, 6, 4, 2, got, &max), 0);
	assert_string_equal(got, "0,0,1,1,2,2");
	assert_int_equal(max, 2);
	assert_int_equal(bind_all(LAUNCHER_BIND_ROUND_ROBIN, 6, 4, 2, got, &max), 0);
	assert_string_equal(got, "0,1,2,0,1,2");
	assert_int_equal(bind_all(LAUNCHER_BIND_BLOCK, 9, 4, 2, got, &max), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "not a multiple of --ranks-per-gpu 2"));
	assert_int_equal(bind_all(LAUNCHER_BIND_BLOCK, 10, 4, 2, got, &max), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "need 5 GPUs, but 4 are usable"));
	assert_int_equal(bind_all(LAUNCHER_BIND_BLOCK, 8, 4, 2, got, &max), 0);

	assert_int_equal(gpushare_launcher_bind(LAUNCHER_BIND_BLOCK, 0, 1, 0, 0, &lb), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_launcher_bind(LAUNCHER_BIND_BLOCK, 1, 1, 1, 0, &lb), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_launcher_bind_parse("block", &b), 0);
	assert_int_equal(b, LAUNCHER_BIND_BLOCK);
	assert_int_equal(gpushare_launcher_bind_parse("round-robin", &b), 0);
	assert_int_equal(b, LAUNCHER_BIND_ROUND_ROBIN);
	assert_int_equal(gpushare_launcher_bind_parse("scatter", &b), GPUSHARE_E_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openmpi),
		cmocka_unit_test(test_mpich_pmix),
		cmocka_unit_test(test_slurm),
		cmocka_unit_test(test_tasks_per_node),
		cmocka_unit_test(test_select_gpus),
		cmocka_unit_test(test_bind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
