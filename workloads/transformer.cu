/*
 * The transformer workload: inference of a BERT-base-like encoder (post-LN,
 * fp16 storage, fp32 accumulation and fp32 math in every kernel) on random
 * weights and a random input of B sequences of S tokens (hidden states: no
 * embedding, no attention mask, no pooler).
 *
 * Layout: activations are row-major [tokens, features] with tokens = B·S and
 * token t = b·S + s; a weight W of a projection y = x·W + bias is row-major
 * [in, out]. cuBLAS is column-major, so y[T,N] = x[T,K]·W[K,N] is computed
 * as the column-major product yᵀ(N×T) = Wᵀ(N×K)·xᵀ(K×T), which reads the
 * same memory without any transpose (see gemm_rm()).
 *
 * Per layer, input `in`, output `out` (11 kernels):
 *   qkv   = in·Wqkv                       [T, 3H]  Q | K | V, head h at cols h·d..
 *   qkv  += bqkv                          bias kernel
 *   sc    = Q·Kᵀ/√d per (b, h)            batched GEMM, fp32 out [B·heads, S, S]
 *   p     = softmax(sc) by rows           fp32 math, fp16 out
 *   ctx   = p·V per (b, h)                batched GEMM into [T, H] at cols h·d..
 *   tmp   = ctx·Wo                        [T, H]
 *   x1    = LN(in + tmp + bo)             residual + bias + layernorm kernel
 *   ffn   = GELU(x1·W1 + b1)              [T, 4H], GEMM then bias+GELU kernel
 *   tmp   = ffn·W2
 *   out   = LN(x1 + tmp + b2)
 * With graph=on the whole forward pass is captured once at init into a CUDA
 * graph that each request replays. Counted flops (GEMMs only), per request:
 * layers · (24·T·H² + 4·B·S²·H).
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "gpushare/gpushare.h"
#include "worker.h"

/* Per-layer weights: pointers into the weight arena. */
struct tf_layer {
	__half *wqkv, *bqkv;   /* [H, 3H], [3H] */
	__half *wo, *bo;       /* [H, H], [H] */
	__half *ln1_g, *ln1_b; /* [H] */
	__half *w1, *b1;       /* [H, 4H], [4H] */
	__half *w2, *b2;       /* [4H, H], [H] */
	__half *ln2_g, *ln2_b; /* [H] */
};

struct tf {
	int layers, hidden, heads, seq, batch;
	int head_dim, tokens;
	bool use_graph;
	cudaStream_t stream;
	cublasHandle_t blas;
	void *workspace;
	__half *weights;                 /* arena of all layers' weights */
	struct tf_layer *layer;          /* host array of `layers` */
	__half *x0;                      /* the input, never written by a pass */
	__half *act[2];                  /* layer outputs, alternating */
	__half *qkv, *ctx, *tmp, *x1, *ffn, *probs;
	float *scores;
	void **ptrs;                     /* device pointer arrays of the batched GEMMs */
	cudaGraph_t graph;
	cudaGraphExec_t exec;
};

/* ---- kernels ---- */

__device__ static float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ static float warp_max(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* Sum over the block; red holds 32 floats of shared memory. Every thread
 * gets the result. */
__device__ static float block_sum(float v, float *red)
{
	int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
	int nwarps = (blockDim.x + 31) >> 5;

	v = warp_sum(v);
	if (lane == 0)
		red[wid] = v;
	__syncthreads();
	if (wid == 0) {
		v = lane < nwarps ? red[lane] : 0.0f;
		v = warp_sum(v);
		if (lane == 0)
			red[0] = v;
	}
	__syncthreads();
	v = red[0];
	__syncthreads(); /* red may be reused right after */
	return v;
}

/* x[r, c] += bias[c] for a row-major [rows, cols] matrix, cols even. */
__global__ static void bias_add_kernel(__half *x, const __half *bias, size_t rows, int cols)
{
	size_t pairs = rows * (size_t)cols / 2;
	size_t stride = (size_t)gridDim.x * blockDim.x;
	__half2 *x2 = (__half2 *)x;
	const __half2 *b2 = (const __half2 *)bias;
	int half_cols = cols / 2;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += stride) {
		float2 v = __half22float2(x2[i]);
		float2 b = __half22float2(b2[i % half_cols]);

		x2[i] = __floats2half2_rn(v.x + b.x, v.y + b.y);
	}
}

__device__ static float gelu(float x)
{
	return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

/* x[r, c] = GELU(x[r, c] + bias[c]) (erf form), cols even. */
__global__ static void bias_gelu_kernel(__half *x, const __half *bias, size_t rows, int cols)
{
	size_t pairs = rows * (size_t)cols / 2;
	size_t stride = (size_t)gridDim.x * blockDim.x;
	__half2 *x2 = (__half2 *)x;
	const __half2 *b2 = (const __half2 *)bias;
	int half_cols = cols / 2;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += stride) {
		float2 v = __half22float2(x2[i]);
		float2 b = __half22float2(b2[i % half_cols]);

		x2[i] = __floats2half2_rn(gelu(v.x + b.x), gelu(v.y + b.y));
	}
}

/* Row softmax: out[r, :] = softmax(in[r, :]), one warp per row (grid-stride
 * over rows), fp32 math. `in` is already scaled by 1/√d. blockDim.x must be
 * a multiple of 32 so that a warp never straddles two rows. */
__global__ static void softmax_kernel(const float *in, __half *out, int rows, int cols)
{
	size_t warps = (size_t)gridDim.x * blockDim.x / 32;
	int lane = threadIdx.x & 31;

	for (size_t row = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; row < (size_t)rows;
	     row += warps) {
		const float *r = in + row * cols;
		__half *o = out + row * cols;
		float m = -INFINITY, s = 0.0f, inv;

		for (int j = lane; j < cols; j += 32)
			m = fmaxf(m, r[j]);
		m = warp_max(m);
		for (int j = lane; j < cols; j += 32)
			s += expf(r[j] - m);
		s = warp_sum(s);
		inv = 1.0f / s;
		for (int j = lane; j < cols; j += 32)
			o[j] = __float2half_rn(expf(r[j] - m) * inv);
	}
}

/* out[t, :] = LN(a[t, :] + b[t, :] + bias) · gamma + beta, one block per
 * row; the row is kept in fp32 in dynamic shared memory (cols floats). Two
 * passes over it (mean, then variance) for accuracy. out may alias a or b:
 * a block has read its whole row (the barriers in block_sum) before it
 * writes. */
__global__ static void add_layernorm_kernel(__half *out, const __half *a, const __half *b,
					    const __half *bias, const __half *gamma,
					    const __half *beta, int cols, float eps)
{
	extern __shared__ float row[];
	__shared__ float red[32];
	size_t base = (size_t)blockIdx.x * cols;
	float sum = 0.0f, sq = 0.0f, mean, rstd;

	for (int c = threadIdx.x; c < cols; c += blockDim.x) {
		float v = __half2float(a[base + c]) + __half2float(b[base + c]) +
			  __half2float(bias[c]);
		row[c] = v;
		sum += v;
	}
	mean = block_sum(sum, red) / (float)cols;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) {
		float d = row[c] - mean;
		sq += d * d;
	}
	rstd = rsqrtf(block_sum(sq, red) / (float)cols + eps);
	for (int c = threadIdx.x; c < cols; c += blockDim.x)
		out[base + c] = __float2half_rn((row[c] - mean) * rstd * __half2float(gamma[c]) +
						__half2float(beta[c]));
}

/* ---- host side ---- */

static unsigned grid_for(size_t work, unsigned threads)
{
	size_t blocks = (work + threads - 1) / threads;

	if (blocks < 1)
		blocks = 1;
	return blocks > 65535 ? 65535u : (unsigned)blocks;
}

/* y[T, N] = x[T, K] · W[K, N], all row-major fp16, fp32 accumulation. */
static int gemm_rm(struct tf *t, __half *y, const __half *x, const __half *w, int T, int N,
		   int K, const char *what, struct wl_error *err)
{
	const float alpha = 1.0f, beta = 0.0f;

	return wl_cublas(cublasGemmEx(t->blas, CUBLAS_OP_N, CUBLAS_OP_N, N, T, K, &alpha, w,
				      CUDA_R_16F, N, x, CUDA_R_16F, K, &beta, y, CUDA_R_16F, N,
				      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
			 err, "cublasGemmEx(%s, %dx%dx%d)", what, T, N, K);
}

/* Attention of one layer: qkv (biased) -> ctx. */
static int attention(struct tf *t, struct wl_error *err)
{
	const int S = t->seq, d = t->head_dim, H = t->hidden;
	const int nb = t->batch * t->heads;
	const float scale = 1.0f / sqrtf((float)d), one = 1.0f, zero = 0.0f;
	void **p = t->ptrs;
	int rc;

	/* Column-major view: scoresᵀ(S_j × S_i) = K(S_j × d) · Qᵀ(d × S_i), where
	 * the memory of K and Q per (b, h) is the d×S column-major matrix with
	 * leading dimension 3H, so K takes OP_T. scores is row-major [i][j]. */
	rc = wl_cublas(cublasGemmBatchedEx(t->blas, CUBLAS_OP_T, CUBLAS_OP_N, S, S, d, &scale,
					   (const void *const *)(p + 0 * nb), CUDA_R_16F, 3 * H,
					   (const void *const *)(p + 1 * nb), CUDA_R_16F, 3 * H,
					   &zero, p + 2 * nb, CUDA_R_32F, S, nb, CUBLAS_COMPUTE_32F,
					   CUBLAS_GEMM_DEFAULT),
		       err, "cublasGemmBatchedEx(QK^T, %dx%dx%d, batch %d)", S, S, d, nb);
	if (rc)
		return rc;
	softmax_kernel<<<grid_for((size_t)nb * S * 32, 256), 256, 0, t->stream>>>(
		t->scores, t->probs, nb * S, S);
	if ((rc = wl_cuda_launch(err, "softmax_kernel")) != 0)
		return rc;
	/* ctxᵀ(d × S_i) = Vᵀ(d × S_j) · pᵀ(S_j × S_i); ctx rows have stride H. */
	return wl_cublas(cublasGemmBatchedEx(t->blas, CUBLAS_OP_N, CUBLAS_OP_N, d, S, S, &one,
					     (const void *const *)(p + 3 * nb), CUDA_R_16F, 3 * H,
					     (const void *const *)(p + 4 * nb), CUDA_R_16F, S,
					     &zero, p + 5 * nb, CUDA_R_16F, H, nb,
					     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
			 err, "cublasGemmBatchedEx(PV, %dx%dx%d, batch %d)", d, S, S, nb);
}

static int layer_forward(struct tf *t, const struct tf_layer *w, const __half *in, __half *out,
			 struct wl_error *err)
{
	const int T = t->tokens, H = t->hidden;
	const unsigned ln_threads = H >= 1024 ? 1024u : (unsigned)((H + 31) / 32 * 32);
	const size_t ln_smem = (size_t)H * sizeof(float);
	int rc;

	if ((rc = gemm_rm(t, t->qkv, in, w->wqkv, T, 3 * H, H, "QKV", err)) != 0)
		return rc;
	bias_add_kernel<<<grid_for((size_t)T * 3 * H / 2, 256), 256, 0, t->stream>>>(
		t->qkv, w->bqkv, (size_t)T, 3 * H);
	if ((rc = wl_cuda_launch(err, "bias_add_kernel")) != 0)
		return rc;
	if ((rc = attention(t, err)) != 0)
		return rc;
	if ((rc = gemm_rm(t, t->tmp, t->ctx, w->wo, T, H, H, "attention output", err)) != 0)
		return rc;
	add_layernorm_kernel<<<T, ln_threads, ln_smem, t->stream>>>(t->x1, in, t->tmp, w->bo,
								    w->ln1_g, w->ln1_b, H, 1e-12f);
	if ((rc = wl_cuda_launch(err, "add_layernorm_kernel")) != 0)
		return rc;
	if ((rc = gemm_rm(t, t->ffn, t->x1, w->w1, T, 4 * H, H, "FFN up", err)) != 0)
		return rc;
	bias_gelu_kernel<<<grid_for((size_t)T * 4 * H / 2, 256), 256, 0, t->stream>>>(
		t->ffn, w->b1, (size_t)T, 4 * H);
	if ((rc = wl_cuda_launch(err, "bias_gelu_kernel")) != 0)
		return rc;
	if ((rc = gemm_rm(t, t->tmp, t->ffn, w->w2, T, H, 4 * H, "FFN down", err)) != 0)
		return rc;
	add_layernorm_kernel<<<T, ln_threads, ln_smem, t->stream>>>(out, t->x1, t->tmp, w->b2,
								    w->ln2_g, w->ln2_b, H, 1e-12f);
	return wl_cuda_launch(err, "add_layernorm_kernel");
}

/* Enqueue the whole forward pass; the result is in tf_output(t). */
static int tf_forward(struct tf *t, struct wl_error *err)
{
	const __half *in = t->x0;
	int rc;

	for (int l = 0; l < t->layers; l++) {
		__half *out = t->act[l % 2];

		if ((rc = layer_forward(t, &t->layer[l], in, out, err)) != 0)
			return rc;
		in = out;
	}
	return 0;
}

static const __half *tf_output(const struct tf *t)
{
	return t->act[(t->layers - 1) % 2];
}

static int tf_run(struct tf *t, bool graph, struct wl_error *err)
{
	int rc;

	if (graph) {
		if ((rc = wl_cuda(cudaGraphLaunch(t->exec, t->stream), err, "cudaGraphLaunch")) != 0)
			return rc;
	} else if ((rc = tf_forward(t, err)) != 0) {
		return rc;
	}
	return wl_cuda(cudaStreamSynchronize(t->stream), err, "cudaStreamSynchronize");
}

static void tf_free(struct tf *t)
{
	if (!t)
		return;
	if (t->stream)
		cudaStreamSynchronize(t->stream);
	if (t->exec)
		cudaGraphExecDestroy(t->exec);
	if (t->graph)
		cudaGraphDestroy(t->graph);
	if (t->blas)
		cublasDestroy(t->blas);
	/* cudaFree(NULL) would (re)try to create the context: skip NULLs */
	void *bufs[] = {t->workspace, t->weights, t->x0,  t->act[0], t->act[1], t->qkv, t->ctx,
			t->tmp,       t->x1,      t->ffn, t->probs,  t->scores, t->ptrs};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		if (bufs[i])
			cudaFree(bufs[i]);
	if (t->stream)
		cudaStreamDestroy(t->stream);
	free(t->layer);
	free(t);
}

/* cudaMalloc with a message naming the buffer and its size. */
static int tf_alloc(void **p, size_t bytes, const char *what, struct wl_error *err)
{
	char sz[32];

	return wl_cuda(cudaMalloc(p, bytes), err, "cudaMalloc(%s) (%s)",
		       wl_fmt_bytes(bytes, sz, sizeof(sz)), what);
}

/* Allocate and fill an fp16 activation buffer. */
static int tf_alloc_act(struct tf *t, __half **p, size_t elems, const char *what, uint64_t seed,
			struct wl_error *err)
{
	int rc;

	if ((rc = tf_alloc((void **)p, elems * sizeof(__half), what, err)) != 0)
		return rc;
	return wl_fill_f16(*p, elems, -1.0f, 1.0f, seed, t->stream, err);
}

/* Elements of one layer's weights, each tensor padded to 128 elements
 * (256 bytes) so that every tensor is well aligned for the tensor cores. */
static size_t pad128(size_t n)
{
	return (n + 127) / 128 * 128;
}

static size_t layer_elems(size_t H)
{
	return pad128(H * 3 * H) + pad128(3 * H) + pad128(H * H) + pad128(H) * 2 + pad128(H) * 2 +
	       pad128(H * 4 * H) + pad128(4 * H) + pad128(4 * H * H) + pad128(H) * 3;
}

/* Carve one layer's tensors out of the arena at `base` and fill them:
 * matrices uniform ±√(3/fan_in) (unit variance in, unit variance out),
 * biases and LN shifts ±0.1, LN scales in [0.8, 1.2]. */
static int layer_init(struct tf *t, struct tf_layer *w, __half *base, uint64_t seed,
		      struct wl_error *err)
{
	const size_t H = (size_t)t->hidden;
	const float a_h = sqrtf(3.0f / (float)H), a_4h = sqrtf(3.0f / (float)(4 * H));
	struct {
		__half **p;
		size_t n;
		float lo, hi;
	} spec[] = {
		{&w->wqkv, H * 3 * H, -a_h, a_h},  {&w->bqkv, 3 * H, -0.1f, 0.1f},
		{&w->wo, H * H, -a_h, a_h},        {&w->bo, H, -0.1f, 0.1f},
		{&w->ln1_g, H, 0.8f, 1.2f},        {&w->ln1_b, H, -0.1f, 0.1f},
		{&w->w1, H * 4 * H, -a_h, a_h},    {&w->b1, 4 * H, -0.1f, 0.1f},
		{&w->w2, 4 * H * H, -a_4h, a_4h},  {&w->b2, H, -0.1f, 0.1f},
		{&w->ln2_g, H, 0.8f, 1.2f},        {&w->ln2_b, H, -0.1f, 0.1f},
	};
	__half *p = base;
	int rc;

	for (size_t i = 0; i < sizeof(spec) / sizeof(spec[0]); i++) {
		*spec[i].p = p;
		if ((rc = wl_fill_f16(p, spec[i].n, spec[i].lo, spec[i].hi, seed + i, t->stream,
				      err)) != 0)
			return rc;
		p += pad128(spec[i].n);
	}
	return 0;
}

/* The pointer arrays of the two batched attention GEMMs, for z = b·heads+h:
 * [0] K_z, [1] Q_z, [2] scores_z, [3] V_z, [4] probs_z, [5] ctx_z. */
static int tf_init_ptrs(struct tf *t, struct wl_error *err)
{
	const int nb = t->batch * t->heads, S = t->seq, H = t->hidden, d = t->head_dim;
	void **host = (void **)calloc((size_t)6 * nb, sizeof(void *));
	int rc;

	if (!host)
		return wl_fail(err, GPUSHARE_E_NOMEM, "transformer: out of host memory");
	for (int b = 0; b < t->batch; b++) {
		for (int h = 0; h < t->heads; h++) {
			int z = b * t->heads + h;
			__half *row0 = t->qkv + (size_t)b * S * 3 * H;

			host[0 * nb + z] = row0 + H + (size_t)h * d;
			host[1 * nb + z] = row0 + (size_t)h * d;
			host[2 * nb + z] = t->scores + (size_t)z * S * S;
			host[3 * nb + z] = row0 + 2 * H + (size_t)h * d;
			host[4 * nb + z] = t->probs + (size_t)z * S * S;
			host[5 * nb + z] = t->ctx + (size_t)b * S * H + (size_t)h * d;
		}
	}
	rc = tf_alloc((void **)&t->ptrs, (size_t)6 * nb * sizeof(void *), "attention pointers", err);
	if (rc == 0)
		rc = wl_cuda(cudaMemcpy(t->ptrs, host, (size_t)6 * nb * sizeof(void *),
					cudaMemcpyHostToDevice),
			     err, "cudaMemcpy(attention pointers)");
	free(host);
	return rc;
}

/* Build a model: validate the shape, allocate and fill everything, run one
 * eager pass (loads the kernels, lets cuBLAS pick its algorithms) and with
 * use_graph capture the forward pass into a graph and replay it once. */
static int tf_create(struct tf **out, int layers, int hidden, int heads, int seq, int batch,
		     bool use_graph, int thread_index, struct wl_error *err)
{
	struct tf *t;
	size_t T, H, per_layer, nb;
	int rc;

	*out = NULL;
	if (layers < 1 || hidden < 2 || heads < 1 || seq < 1 || batch < 1 || hidden % heads != 0 ||
	    hidden % 2 != 0)
		return wl_fail(err, GPUSHARE_E_INVAL,
			       "transformer: bad shape layers %d hidden %d heads %d seq %d batch %d "
			       "(hidden must be even and divisible by heads)",
			       layers, hidden, heads, seq, batch);
	/* The layernorm row lives in the default 48 KiB of shared memory. */
	if (hidden > 12288)
		return wl_fail(err, GPUSHARE_E_INVAL, "transformer: hidden %d above 12288", hidden);
	if ((long long)batch * seq > INT_MAX / 4 / hidden ||
	    (long long)batch * heads * seq > INT_MAX / 32)
		return wl_fail(err, GPUSHARE_E_INVAL, "transformer: batch·seq too large");
	t = (struct tf *)calloc(1, sizeof(*t));
	if (!t)
		return wl_fail(err, GPUSHARE_E_NOMEM, "transformer: out of host memory");
	t->layers = layers;
	t->hidden = hidden;
	t->heads = heads;
	t->seq = seq;
	t->batch = batch;
	t->head_dim = hidden / heads;
	t->tokens = batch * seq;
	t->use_graph = use_graph;
	T = (size_t)t->tokens;
	H = (size_t)hidden;
	nb = (size_t)batch * heads;
	per_layer = layer_elems(H);
	t->layer = (struct tf_layer *)calloc((size_t)layers, sizeof(*t->layer));
	if (!t->layer) {
		rc = wl_fail(err, GPUSHARE_E_NOMEM, "transformer: out of host memory");
		goto fail;
	}

	if ((rc = wl_context_init(err)) != 0)
		goto fail;
	if ((rc = wl_cuda(cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking), err,
			  "cudaStreamCreateWithFlags")) != 0)
		goto fail;
	if ((rc = wl_cublas(cublasCreate(&t->blas), err, "cublasCreate")) != 0)
		goto fail;
	if ((rc = wl_cublas(cublasSetStream(t->blas, t->stream), err, "cublasSetStream")) != 0)
		goto fail;
	if ((rc = tf_alloc(&t->workspace, WL_CUBLAS_WORKSPACE_BYTES, "cuBLAS workspace", err)) != 0)
		goto fail;
	/* A workspace of our own: cuBLAS then allocates nothing while the
	 * forward pass is captured. */
	if ((rc = wl_cublas(cublasSetWorkspace(t->blas, t->workspace, WL_CUBLAS_WORKSPACE_BYTES),
			    err, "cublasSetWorkspace")) != 0)
		goto fail;

	if ((rc = tf_alloc((void **)&t->weights, per_layer * layers * sizeof(__half), "weights",
			   err)) != 0)
		goto fail;
	for (int l = 0; l < layers; l++)
		if ((rc = layer_init(t, &t->layer[l], t->weights + per_layer * l,
				     wl_seed(thread_index, 100 + 16 * l), err)) != 0)
			goto fail;
	if ((rc = tf_alloc_act(t, &t->x0, T * H, "input", wl_seed(thread_index, 1), err)) != 0 ||
	    (rc = tf_alloc_act(t, &t->act[0], T * H, "activations", wl_seed(thread_index, 2),
			       err)) != 0 ||
	    (rc = tf_alloc_act(t, &t->act[1], T * H, "activations", wl_seed(thread_index, 3),
			       err)) != 0 ||
	    (rc = tf_alloc_act(t, &t->qkv, T * 3 * H, "qkv", wl_seed(thread_index, 4), err)) != 0 ||
	    (rc = tf_alloc_act(t, &t->ctx, T * H, "context", wl_seed(thread_index, 5), err)) != 0 ||
	    (rc = tf_alloc_act(t, &t->tmp, T * H, "projection", wl_seed(thread_index, 6), err)) !=
		    0 ||
	    (rc = tf_alloc_act(t, &t->x1, T * H, "attention block output", wl_seed(thread_index, 7),
			       err)) != 0 ||
	    (rc = tf_alloc_act(t, &t->ffn, T * 4 * H, "FFN", wl_seed(thread_index, 8), err)) != 0 ||
	    (rc = tf_alloc_act(t, &t->probs, nb * seq * seq, "probabilities",
			       wl_seed(thread_index, 9), err)) != 0)
		goto fail;
	if ((rc = tf_alloc((void **)&t->scores, nb * seq * seq * sizeof(float), "scores", err)) != 0)
		goto fail;
	if ((rc = wl_fill_f32(t->scores, nb * seq * seq, -1.0f, 1.0f, wl_seed(thread_index, 10),
			      t->stream, err)) != 0)
		goto fail;
	if ((rc = tf_init_ptrs(t, err)) != 0)
		goto fail;

	/* Eager warm-up pass (also the check that every call works). */
	if ((rc = tf_run(t, false, err)) != 0)
		goto fail;
	if (use_graph) {
		cudaError_t e;

		/* Thread-local capture: other instances of this process (the
		 * streams strategy) may allocate on their threads meanwhile. */
		if ((rc = wl_cuda(cudaStreamBeginCapture(t->stream, cudaStreamCaptureModeThreadLocal),
				  err, "cudaStreamBeginCapture")) != 0)
			goto fail;
		rc = tf_forward(t, err);
		e = cudaStreamEndCapture(t->stream, &t->graph);
		if (rc != 0)
			goto fail;
		if ((rc = wl_cuda(e, err, "cudaStreamEndCapture")) != 0)
			goto fail;
		if ((rc = wl_cuda(cudaGraphInstantiate(&t->exec, t->graph, 0), err,
				  "cudaGraphInstantiate")) != 0)
			goto fail;
		if ((rc = wl_cuda(cudaGraphUpload(t->exec, t->stream), err, "cudaGraphUpload")) != 0)
			goto fail;
		if ((rc = tf_run(t, true, err)) != 0)
			goto fail;
	}
	*out = t;
	return 0;
fail:
	tf_free(t);
	return rc;
}

static double tf_flops(const struct tf *t)
{
	double T = t->tokens, H = t->hidden, S = t->seq, B = t->batch;

	return t->layers * (24.0 * T * H * H + 4.0 * B * S * S * H);
}

/* ---- the workload ---- */

static void transformer_fini(void *state)
{
	tf_free((struct tf *)state);
}

static int transformer_request(void *state, struct wl_error *err)
{
	struct tf *t = (struct tf *)state;

	return tf_run(t, t->use_graph, err);
}

static int transformer_init(const struct gpushare_wl_params *p, int thread_index, void **state,
			    struct wl_info *info, struct wl_error *err)
{
	long layers = gpushare_wl_get_int(p, "layers"), hidden = gpushare_wl_get_int(p, "hidden");
	long heads = gpushare_wl_get_int(p, "heads"), seq = gpushare_wl_get_int(p, "seq");
	bool graph = gpushare_wl_get_bool(p, "graph");
	struct tf *t;
	int rc;

	*state = NULL;
	if (layers < 1 || layers > 1000 || hidden < 2 || hidden > 65536 || heads < 1 ||
	    heads > 1024 || seq < 1 || seq > 65536 || p->batch < 1 || p->batch > 65536)
		return wl_fail(err, GPUSHARE_E_INVAL,
			       "transformer: shape out of range (layers %ld hidden %ld heads %ld "
			       "seq %ld batch %ld)",
			       layers, hidden, heads, seq, p->batch);
	if ((rc = tf_create(&t, (int)layers, (int)hidden, (int)heads, (int)seq, (int)p->batch,
			    graph, thread_index, err)) != 0)
		return rc;
	if ((rc = wl_device_info(info, err)) != 0) {
		tf_free(t);
		return rc;
	}
	info->flops_per_request = tf_flops(t);
	*state = t;
	return 0;
}

extern "C" const struct wl_ops wl_transformer_ops = {
	"transformer",
	transformer_init,
	transformer_request,
	transformer_fini,
};

/* ---- self-check against a CPU reference ---- */

static float round_half(float v)
{
	return __half2float(__float2half_rn(v));
}

static int copy_to_host(float *dst, const __half *src, size_t n, struct wl_error *err)
{
	__half *tmp = (__half *)malloc(n * sizeof(__half));
	int rc;

	if (!tmp)
		return wl_fail(err, GPUSHARE_E_NOMEM, "transformer check: out of host memory");
	rc = wl_cuda(cudaMemcpy(tmp, src, n * sizeof(__half), cudaMemcpyDeviceToHost), err,
		     "cudaMemcpy(device to host)");
	for (size_t i = 0; rc == 0 && i < n; i++)
		dst[i] = __half2float(tmp[i]);
	free(tmp);
	return rc;
}

/* y[T, N] = x[T, K] · W[K, N] (+ bias), fp32 with fp16 rounding of y. */
static void ref_linear(float *y, const float *x, const float *w, const float *bias, int T, int N,
		       int K)
{
	for (int r = 0; r < T; r++)
		for (int c = 0; c < N; c++) {
			double acc = 0.0;

			for (int k = 0; k < K; k++)
				acc += (double)x[(size_t)r * K + k] * w[(size_t)k * N + c];
			y[(size_t)r * N + c] = round_half((float)acc);
			if (bias)
				y[(size_t)r * N + c] = round_half(y[(size_t)r * N + c] + bias[c]);
		}
}

static void ref_add_ln(float *out, const float *a, const float *b, const float *bias,
		       const float *g, const float *beta, int T, int H)
{
	for (int r = 0; r < T; r++) {
		double mean = 0.0, var = 0.0;

		for (int c = 0; c < H; c++)
			mean += (double)a[(size_t)r * H + c] + b[(size_t)r * H + c] + bias[c];
		mean /= H;
		for (int c = 0; c < H; c++) {
			double v = (double)a[(size_t)r * H + c] + b[(size_t)r * H + c] + bias[c] - mean;
			var += v * v;
		}
		var /= H;
		for (int c = 0; c < H; c++) {
			double v = (double)a[(size_t)r * H + c] + b[(size_t)r * H + c] + bias[c];
			out[(size_t)r * H + c] =
				round_half((float)((v - mean) / sqrt(var + 1e-12) * g[c] + beta[c]));
		}
	}
}

/* One layer on the CPU with the GPU's storage roundings. */
static void ref_layer(const struct tf *t, const float *const *w, const float *in, float *out,
		      float *qkv, float *ctx, float *tmp, float *x1, float *ffn)
{
	const int T = t->tokens, H = t->hidden, S = t->seq, d = t->head_dim;
	const float scale = 1.0f / sqrtf((float)d);
	float *p = (float *)malloc((size_t)S * sizeof(float));

	ref_linear(qkv, in, w[0], w[1], T, 3 * H, H);
	for (int b = 0; b < t->batch; b++)
		for (int h = 0; h < t->heads; h++)
			for (int i = 0; i < S; i++) {
				const float *q = qkv + ((size_t)b * S + i) * 3 * H + (size_t)h * d;
				double m = -INFINITY, sum = 0.0;

				for (int j = 0; j < S; j++) {
					const float *k =
						qkv + ((size_t)b * S + j) * 3 * H + H + (size_t)h * d;
					double acc = 0.0;

					for (int x = 0; x < d; x++)
						acc += (double)q[x] * k[x];
					p[j] = (float)(acc * scale);
					m = p[j] > m ? p[j] : m;
				}
				for (int j = 0; j < S; j++) {
					p[j] = (float)exp(p[j] - m);
					sum += p[j];
				}
				for (int j = 0; j < S; j++)
					p[j] = round_half((float)(p[j] / sum));
				for (int x = 0; x < d; x++) {
					double acc = 0.0;

					for (int j = 0; j < S; j++)
						acc += (double)p[j] *
						       qkv[((size_t)b * S + j) * 3 * H + 2 * H +
							   (size_t)h * d + x];
					ctx[((size_t)b * S + i) * H + (size_t)h * d + x] =
						round_half((float)acc);
				}
			}
	ref_linear(tmp, ctx, w[2], NULL, T, H, H);
	ref_add_ln(x1, in, tmp, w[3], w[4], w[5], T, H);
	ref_linear(ffn, x1, w[6], NULL, T, 4 * H, H);
	for (size_t i = 0; i < (size_t)T * 4 * H; i++) {
		float v = ffn[i] + w[7][i % (4 * H)];
		ffn[i] = round_half(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));
	}
	ref_linear(tmp, ffn, w[8], NULL, T, H, 4 * H);
	ref_add_ln(out, x1, tmp, w[9], w[10], w[11], T, H);
	free(p);
}

extern "C" int wl_transformer_selfcheck(int layers, int hidden, int heads, int seq, int batch,
					double *rel_err, double *graph_diff, struct wl_error *err)
{
	struct tf *t = NULL;
	const size_t H = (size_t)hidden;
	float *host = NULL, *wts[12] = {NULL};
	float *in, *out, *qkv, *ctx, *tmp, *x1, *ffn, *gpu_eager, *gpu_graph;
	size_t T, sizes[12];
	double max_ref = 0.0, max_err = 0.0, max_gd = 0.0;
	bool ok;
	int rc;

	if ((rc = tf_create(&t, layers, hidden, heads, seq, batch, true, 0, err)) != 0)
		return rc;
	T = (size_t)t->tokens;
	{
		size_t s[12] = {H * 3 * H, 3 * H, H * H, H, H, H, H * 4 * H, 4 * H, 4 * H * H, H, H, H};
		memcpy(sizes, s, sizeof(s));
	}
	/* in, out, qkv, ctx, tmp, x1, ffn, gpu_eager, gpu_graph */
	host = (float *)malloc((T * H * 7 + T * 3 * H + T * 4 * H) * sizeof(float));
	ok = host != NULL;
	for (int i = 0; i < 12; i++) {
		wts[i] = (float *)malloc(sizes[i] * sizeof(float));
		ok = ok && wts[i] != NULL;
	}
	if (!ok) {
		rc = wl_fail(err, GPUSHARE_E_NOMEM, "transformer check: out of host memory");
		goto out;
	}
	in = host;
	out = in + T * H;
	ctx = out + T * H;
	tmp = ctx + T * H;
	x1 = tmp + T * H;
	gpu_eager = x1 + T * H;
	gpu_graph = gpu_eager + T * H;
	qkv = gpu_graph + T * H;
	ffn = qkv + T * 3 * H;

	/* GPU: the graph pass of tf_create() left its output; an eager pass
	 * now must give the same. */
	if ((rc = copy_to_host(gpu_graph, tf_output(t), T * H, err)) != 0)
		goto out;
	if ((rc = tf_run(t, false, err)) != 0)
		goto out;
	if ((rc = copy_to_host(gpu_eager, tf_output(t), T * H, err)) != 0)
		goto out;
	for (size_t i = 0; i < T * H; i++)
		max_gd = fmax(max_gd, fabs((double)gpu_graph[i] - gpu_eager[i]));

	/* CPU reference, layer by layer from the same input and weights. */
	if ((rc = copy_to_host(in, t->x0, T * H, err)) != 0)
		goto out;
	for (int l = 0; l < layers; l++) {
		const struct tf_layer *w = &t->layer[l];
		const __half *src[12] = {w->wqkv, w->bqkv, w->wo,  w->bo, w->ln1_g, w->ln1_b,
					 w->w1,   w->b1,   w->w2,  w->b2, w->ln2_g, w->ln2_b};

		for (int i = 0; i < 12; i++)
			if ((rc = copy_to_host(wts[i], src[i], sizes[i], err)) != 0)
				goto out;
		ref_layer(t, wts, in, out, qkv, ctx, tmp, x1, ffn);
		memcpy(in, out, T * H * sizeof(float));
	}
	for (size_t i = 0; i < T * H; i++) {
		max_ref = fmax(max_ref, fabs((double)out[i]));
		max_err = fmax(max_err, fabs((double)gpu_eager[i] - out[i]));
		if (!isfinite(gpu_eager[i]))
			max_err = INFINITY;
	}
	*rel_err = max_ref > 0.0 ? max_err / max_ref : INFINITY;
	*graph_diff = max_gd;
out:
	for (int i = 0; i < 12; i++)
		free(wts[i]);
	free(host);
	tf_free(t);
	return rc;
}

/* Time `iters` requests of a model (graph or eager); mean seconds each. */
extern "C" int wl_transformer_time(int layers, int hidden, int heads, int seq, int batch,
				   bool graph, int iters, double *seconds, double *flops,
				   struct wl_error *err)
{
	struct tf *t = NULL;
	cudaEvent_t e0 = NULL, e1 = NULL;
	float ms = 0.0f;
	int rc;

	if ((rc = tf_create(&t, layers, hidden, heads, seq, batch, graph, 0, err)) != 0)
		return rc;
	if ((rc = wl_cuda(cudaEventCreate(&e0), err, "cudaEventCreate")) != 0 ||
	    (rc = wl_cuda(cudaEventCreate(&e1), err, "cudaEventCreate")) != 0)
		goto out;
	for (int i = 0; i < 10 && rc == 0; i++)
		rc = tf_run(t, graph, err);
	if (rc != 0 || (rc = wl_cuda(cudaEventRecord(e0, t->stream), err, "cudaEventRecord")) != 0)
		goto out;
	/* like the harness: one request at a time, synchronised */
	for (int i = 0; i < iters && rc == 0; i++)
		rc = tf_run(t, graph, err);
	if (rc != 0 || (rc = wl_cuda(cudaEventRecord(e1, t->stream), err, "cudaEventRecord")) != 0 ||
	    (rc = wl_cuda(cudaEventSynchronize(e1), err, "cudaEventSynchronize")) != 0 ||
	    (rc = wl_cuda(cudaEventElapsedTime(&ms, e0, e1), err, "cudaEventElapsedTime")) != 0)
		goto out;
	*seconds = ms * 1e-3 / (iters > 0 ? iters : 1);
	*flops = tf_flops(t);
out:
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	tf_free(t);
	return rc;
}
