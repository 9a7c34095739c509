/*
 * mpi_jacobi: an MPI + CUDA 2-D Jacobi solver, the classic "several ranks on
 * one GPU" program. The grid is split into horizontal strips, one per rank
 * (1-D domain decomposition); every iteration each rank exchanges its first
 * and last interior rows with its neighbours (halo exchange, staged through
 * host memory with MPI_Sendrecv, so no CUDA-aware MPI is needed) and then
 * updates its strip with one kernel launch. Per-rank domains are small, so
 * one rank alone leaves most of a modern GPU idle: run several ranks per GPU
 * and compare time to solution with and without MPS:
 *
 *   mpirun -np 4 gpushare exec -- build/mpi_jacobi --nx 1024 --ny 256 --iters 2000
 *   srun -n 4 gpushare exec --strategy mps -- build/mpi_jacobi
 *
 * The problem: Laplace's equation on an nx x (ny * ranks) interior grid with
 * the top boundary held at 1 and the other three at 0, from zero. --ny is
 * per rank, so the same global problem with R ranks needs --ny G/R; the
 * checksum then agrees up to rounding (sums are taken in another order).
 *
 * Options: --nx N (columns, default 1024), --ny N (rows per rank, default
 * 256), --iters N (default 1000). Prints, from rank 0, one line with the
 * time to solution (slowest rank, from after the first barrier to the last
 * iteration's end), the start-up time (end of MPI_Init to a ready CUDA
 * context, slowest rank), the residual as the L2 norm of the last
 * iteration's update (update_l2; it falls as the solution converges) and a
 * checksum (the sum of all interior values). Each rank uses the GPU of its node-local rank
 * among those visible (the only one when gpushare exec has bound it). Exits
 * 1 on a CUDA or MPI error or when no GPU is visible, 2 on a bad option.
 */
#include <cuda_runtime.h>
#include <mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank_ = -1;

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "mpi_jacobi: rank %d: %s: %s\n", rank_, what, detail);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

#define CHECK(call)                                                     \
	do {                                                            \
		cudaError_t err_ = (call);                              \
		if (err_ != cudaSuccess)                                \
			fail(#call, cudaGetErrorString(err_));          \
	} while (0)

#define MPI_CHECK(call)                                                 \
	do {                                                            \
		int err_ = (call);                                      \
		if (err_ != MPI_SUCCESS) {                              \
			char msg_[MPI_MAX_ERROR_STRING];                \
			int len_ = 0;                                   \
			MPI_Error_string(err_, msg_, &len_);            \
			fail(#call, msg_);                              \
		}                                                       \
	} while (0)

/* One Jacobi sweep over the interior rows 1..ny of a (ny + 2) x nx strip
 * (rows 0 and ny + 1 are halos or fixed boundary rows; columns 0 and nx - 1
 * are the fixed side boundary). Accumulates the squared update into *sq. */
__global__ void sweep(const float *in, float *out, int nx, int ny, double *sq)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y + 1;
	double d = 0.0;

	if (x >= 1 && x < nx - 1 && y <= ny) {
		int i = y * nx + x;
		float v = 0.25f * (in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx]);

		out[i] = v;
		d = (double)(v - in[i]) * (double)(v - in[i]);
	}
	if (sq && d != 0.0)
		atomicAdd(sq, d);
}

/* Sum of the interior rows 1..ny into *sum. */
__global__ void total(const float *a, int nx, int ny, double *sum)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y + 1;

	if (x < nx && y <= ny)
		atomicAdd(sum, (double)a[y * nx + x]);
}

static long arg_long(int argc, char **argv, const char *name, long def, long min, long max)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], name))
			continue;
		char *end = NULL;
		long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;

		if (i + 1 >= argc || *end || v < min || v > max) {
			if (rank_ <= 0)
				fprintf(stderr, "mpi_jacobi: %s must be a whole number in [%ld, %ld]\n", name, min, max);
			MPI_Finalize();
			exit(2);
		}
		return v;
	}
	return def;
}

int main(int argc, char **argv)
{
	double t_start, t_ready, t0, t1, elapsed, init_s, sq_sum, sum_all;
	int size, local_rank, n_dev = 0;
	MPI_Comm node;

	MPI_CHECK(MPI_Init(&argc, &argv));
	t_start = MPI_Wtime();
	MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
	MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--nx") || !strcmp(argv[i], "--ny") || !strcmp(argv[i], "--iters")) {
			i++;
			continue;
		}
		if (rank_ == 0)
			fprintf(stderr, "mpi_jacobi: unknown option '%s' (use --nx N --ny N --iters N)\n", argv[i]);
		MPI_Finalize();
		return 2;
	}
	int nx = (int)arg_long(argc, argv, "--nx", 1024, 3, 1 << 16);
	int ny = (int)arg_long(argc, argv, "--ny", 256, 1, 1 << 16);
	long iters = arg_long(argc, argv, "--iters", 1000, 1, 100000000);

	/* The node-local rank picks among several visible GPUs. */
	MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
	MPI_CHECK(MPI_Comm_rank(node, &local_rank));
	cudaError_t derr = cudaGetDeviceCount(&n_dev);

	if (derr != cudaSuccess || n_dev == 0)
		fail("no CUDA GPU visible", derr != cudaSuccess ? cudaGetErrorString(derr) : "device count 0");
	CHECK(cudaSetDevice(local_rank % n_dev));
	CHECK(cudaFree(0));
	t_ready = MPI_Wtime();

	size_t cells = (size_t)(ny + 2) * (size_t)nx, bytes = cells * sizeof(float);
	float *a, *b, *host = (float *)calloc(cells, sizeof(float));
	float *send_up = (float *)malloc(nx * sizeof(float)), *send_down = (float *)malloc(nx * sizeof(float));
	float *recv_up = (float *)malloc(nx * sizeof(float)), *recv_down = (float *)malloc(nx * sizeof(float));
	double *d_sq;

	if (!host || !send_up || !send_down || !recv_up || !recv_down)
		fail("malloc", "out of host memory");
	/* Rank 0's top halo row is the hot boundary, the last rank's bottom
	 * halo row the cold one; neither is ever overwritten. */
	if (rank_ == 0)
		for (int x = 0; x < nx; x++)
			host[x] = 1.0f;
	CHECK(cudaMalloc(&a, bytes));
	CHECK(cudaMalloc(&b, bytes));
	CHECK(cudaMalloc(&d_sq, sizeof(double)));
	CHECK(cudaMemcpy(a, host, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(b, host, bytes, cudaMemcpyHostToDevice));

	int up = rank_ > 0 ? rank_ - 1 : MPI_PROC_NULL;
	int down = rank_ < size - 1 ? rank_ + 1 : MPI_PROC_NULL;
	dim3 block(32, 8), grid((nx + 31) / 32, (ny + 7) / 8);

	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	t0 = MPI_Wtime();
	for (long it = 0; it < iters; it++) {
		bool last = it == iters - 1;

		/* Halo exchange: my first interior row goes up, my last goes
		 * down; the neighbours' rows come into my halo rows. */
		CHECK(cudaMemcpy(send_up, a + nx, nx * sizeof(float), cudaMemcpyDeviceToHost));
		CHECK(cudaMemcpy(send_down, a + (size_t)ny * nx, nx * sizeof(float), cudaMemcpyDeviceToHost));
		MPI_CHECK(MPI_Sendrecv(send_up, nx, MPI_FLOAT, up, 0, recv_down, nx, MPI_FLOAT, down, 0,
				       MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		MPI_CHECK(MPI_Sendrecv(send_down, nx, MPI_FLOAT, down, 1, recv_up, nx, MPI_FLOAT, up, 1,
				       MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		if (up != MPI_PROC_NULL)
			CHECK(cudaMemcpy(a, recv_up, nx * sizeof(float), cudaMemcpyHostToDevice));
		if (down != MPI_PROC_NULL)
			CHECK(cudaMemcpy(a + (size_t)(ny + 1) * nx, recv_down, nx * sizeof(float), cudaMemcpyHostToDevice));
		if (last)
			CHECK(cudaMemset(d_sq, 0, sizeof(double)));
		sweep<<<grid, block>>>(a, b, nx, ny, last ? d_sq : NULL);
		CHECK(cudaGetLastError());
		float *t = a;
		a = b;
		b = t;
	}
	CHECK(cudaDeviceSynchronize());
	t1 = MPI_Wtime();

	double local[2], global[2];

	CHECK(cudaMemcpy(&local[0], d_sq, sizeof(double), cudaMemcpyDeviceToHost));
	CHECK(cudaMemset(d_sq, 0, sizeof(double)));
	total<<<grid, block>>>(a, nx, ny, d_sq);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(&local[1], d_sq, sizeof(double), cudaMemcpyDeviceToHost));
	MPI_CHECK(MPI_Reduce(local, global, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
	elapsed = t1 - t0;
	MPI_CHECK(MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : &elapsed, &elapsed, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
	init_s = t_ready - t_start;
	MPI_CHECK(MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : &init_s, &init_s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
	sq_sum = global[0];
	sum_all = global[1];
	if (rank_ == 0)
		printf("mpi_jacobi: ranks=%d grid=%dx%d (%d rows per rank) iters=%ld time_to_solution_s=%.6f "
		       "startup_s=%.6f update_l2=%.6e checksum=%.9e\n",
		       size, nx, ny * size, ny, iters, elapsed, init_s, sqrt(sq_sum), sum_all);

	CHECK(cudaFree(a));
	CHECK(cudaFree(b));
	CHECK(cudaFree(d_sq));
	free(host);
	free(send_up);
	free(send_down);
	free(recv_up);
	free(recv_down);
	MPI_Comm_free(&node);
	MPI_Finalize();
	return 0;
}
