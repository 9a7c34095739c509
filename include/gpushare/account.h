/*
 * Per-client GPU accounting records (docs/accounting.md): what the injected
 * library libgpushare-account.so measures in a CUDA process, one small text
 * file per process and GPU in a per-user directory, replaced atomically, and
 * read back by the exporter. This layer uses only the C library, so that the
 * injected library links it without the rest of gpushare.
 */
#ifndef GPUSHARE_ACCOUNT_H
#define GPUSHARE_ACCOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The first line of every record; a record of another version is refused. */
#define GPUSHARE_ACCOUNT_MAGIC "gpushare-account 1"
/* A label value: at most this many bytes of [A-Za-z0-9._:/@-]. */
#define GPUSHARE_ACCOUNT_LABEL_MAX 64
/* The largest record file read back. */
#define GPUSHARE_ACCOUNT_RECORD_MAX 4096
/* A GPU's UUID as text, "GPU-" or "MIG-" and 36 characters, with its NUL. */
#define GPUSHARE_ACCOUNT_UUID_MAX 48

/* Who owns the process: each field empty when unknown. */
struct gpushare_account_owner {
	char slurm_job[GPUSHARE_ACCOUNT_LABEL_MAX];     /* SLURM_JOB_ID */
	char slurm_step[GPUSHARE_ACCOUNT_LABEL_MAX];    /* SLURM_STEP_ID */
	char k8s_namespace[GPUSHARE_ACCOUNT_LABEL_MAX]; /* POD_NAMESPACE (the downward API) */
	char k8s_pod[GPUSHARE_ACCOUNT_LABEL_MAX];       /* POD_NAME, else the pod's UID from the cgroup path */
	char k8s_container[GPUSHARE_ACCOUNT_LABEL_MAX]; /* the container's id (first 12 hex digits) from the cgroup path */
	char farm_job[GPUSHARE_ACCOUNT_LABEL_MAX];      /* GPUSHARE_FARM_JOB */
	char rank[GPUSHARE_ACCOUNT_LABEL_MAX];          /* the launcher's rank: OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID */
};

/* How a record's kernel figures were timed (docs/accounting.md, "Timing"):
 * each kernel from CUPTI's kernel records (CUPTI attached all along), or each
 * launch (a kernel or a whole graph) with CUDA events, CUPTI attached only
 * during windows. A record without the key is one of kernels. */
enum { GPUSHARE_ACCOUNT_TIMING_KERNELS = 0, GPUSHARE_ACCOUNT_TIMING_LAUNCHES = 1 };

/* One process on one GPU. The sampled figures cover only the sampling
 * windows (window_ns of wall time in all); wall_ns is the whole time the
 * process was watched. */
struct gpushare_account_record {
	int64_t pid;
	int64_t uid;
	uint32_t device;           /* CUDA device ordinal in the process (0 for every process that
				    * CUDA_VISIBLE_DEVICES gives one GPU, whichever it is) */
	char gpu_uuid[GPUSHARE_ACCOUNT_UUID_MAX]; /* the GPU CUDA gave that ordinal: "GPU-<uuid>", or
				    * "MIG-<uuid>" for a MIG instance; "" unknown (an older
				    * library, or a driver that did not say) */
	uint64_t start_ns;         /* CLOCK_REALTIME when the watch began */
	uint64_t updated_ns;       /* CLOCK_REALTIME of this record */
	uint64_t wall_ns;          /* watched wall time */
	uint64_t window_ns;        /* wall time inside sampling windows */
	uint64_t busy_ns;          /* union of kernel intervals inside windows */
	uint64_t kernel_ns;        /* sum of kernel durations inside windows */
	uint64_t kernels;          /* kernels that ended inside windows */
	uint64_t memory_bytes;     /* device memory allocated and not freed; meaningful only when memory_known */
	bool memory_known;         /* the record has memory_bytes (kernel timing with memory records on) */
	int timing;                /* how the figures were timed: GPUSHARE_ACCOUNT_TIMING_* */
	uint64_t window_mean_ns;   /* mean kernel duration of the last window with kernels; 0 none */
	uint64_t best_mean_ns;     /* the lowest such mean of any window since the start; 0 none */
	double promised;           /* promised share in [0,1]; negative when none */
	struct gpushare_account_owner owner;
};

/* ---- derived figures (docs/accounting.md defines them) ---- */

/* busy_ns / window_ns: the attained SM share estimate; negative without a window. */
double gpushare_account_share(const struct gpushare_account_record *r);
/* busy time scaled to the whole watched time, in seconds. */
double gpushare_account_gpu_seconds(const struct gpushare_account_record *r);

/* kernel_ns / kernels: a kernel's mean duration inside windows, ns;
 * negative without kernels. */
double gpushare_account_mean_kernel_ns(const struct gpushare_account_record *r);

/* window_mean_ns / best_mean_ns, at least 1: the slowdown of the process's
 * kernels now against its own fastest window (its uncontended times if it
 * ever ran alone); negative when unknown. */
double gpushare_account_slowdown(const struct gpushare_account_record *r);

/* The flag "held under its promise while the GPU had room"
 * (docs/accounting.md): for each of n records, held[i] is 1 when the
 * client has a promise, ran a kernel in its windows and attained a share
 * more than `tolerance` below it while the shares of all the clients of its
 * GPU (those of equal gpu[]) add up to less than 1 - tolerance; 0 when not;
 * -1 without a promise or a share. The attained shares are share[] when
 * given (negative: unknown), else each record's (busy_ns / window_ns). */
void gpushare_account_held(const struct gpushare_account_record *r, const long *gpu, const double *share, size_t n,
			   double tolerance, int *held);

/* The GPU of each of n records as a key for gpushare_account_held(): on
 * entry gpu[i] is the system-wide index of the record's GPU where the
 * caller could tell (>= 0), negative where not; on return each negative one
 * is a key no index takes: the index of another record of the same
 * gpu_uuid when one has it, else one key per gpu_uuid, else (a record
 * naming no GPU) one per device ordinal, which is right on a node of one
 * GPU only. */
void gpushare_account_gpu_keys(const struct gpushare_account_record *r, size_t n, long *gpu);

/* kernels / window_ns, per second: the work rate, kernels recorded per
 * second of sampled wall time; negative without a window. */
double gpushare_account_work_rate(const struct gpushare_account_record *r);

/* A client's verdict in a conformance run (`gpushare check`): the probe,
 * whose kernels each do a fixed amount of work, run alone on the whole GPU
 * and then under the share. The share attained is its work rate shared over
 * its work rate alone (docs/accounting.md, "Work rate"): that holds under
 * time-slicing (where a short kernel is not sliced out mid-kernel, so its
 * duration does not grow) and under MPS, with or without limits. The
 * kernel-time figure (alone / shared mean kernel time) is given beside it. */
struct gpushare_account_verdict {
	double promised;        /* 0..1 */
	double attained;        /* by work rate, 0..1; negative when unknown */
	double attained_kernel; /* by mean kernel time, 0..1; negative when unknown */
	double expected;        /* the share judged against: the promise, or under a sharing without limits the
				 * client's part of what the clients attained together (gpushare_check_run) */
	double error;           /* attained - expected, in share (0.05 is 5 points) */
	int pass;               /* 1 within the tolerance, 0 outside, -1 unknown (no window, or none alone) */
};

/* The verdict of `client` against the probe's run `alone`, for the share
 * promised and a tolerance (both 0..1). Returns v->pass. */
int gpushare_account_verdict(const struct gpushare_account_record *alone, const struct gpushare_account_record *client,
			     double promised, double tolerance, struct gpushare_account_verdict *v);

/* ---- the owner ---- */

/* Fill *o from the environment (getenv) and from the text of a
 * /proc/<pid>/cgroup file (may be NULL). */
void gpushare_account_owner_fill(struct gpushare_account_owner *o, const char *cgroup_text);
/* From a cgroup path alone: the pod's UID and the container's id of a
 * kubelet-made path (cgroupfs or systemd driver). Returns 1 when the path
 * is a pod's, 0 otherwise. */
int gpushare_account_cgroup_pod(const char *cgroup_text, char *pod_uid, size_t pod_len, char *container,
				size_t container_len);
/* Copy src into dst when it is a valid label value (bounded, of the safe
 * characters); dst empty otherwise. */
void gpushare_account_label(char *dst, const char *src);

/* ---- records ---- */

/* The text of a GPU's UUID (cuDeviceGetUuid's 16 bytes) into dst:
 * "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" in lower case, "MIG-..." for a
 * MIG instance's. */
void gpushare_account_uuid(char dst[GPUSHARE_ACCOUNT_UUID_MAX], const unsigned char bytes[16], bool mig);
/* 1 when s is such a text ("GPU-" or "MIG-", then 8-4-4-4-12 lower-case
 * hex digits), else 0. */
int gpushare_account_uuid_valid(const char *s);

/* The directory of the caller's records: $GPUSHARE_ACCOUNT_DIR, else
 * /run/gpushare/account for root, else $XDG_RUNTIME_DIR/gpushare/account,
 * else /tmp/gpushare-<uid>/account. Returns 0, or -1 when it does not fit. */
int gpushare_account_dir(char *buf, size_t len);
/* The text of a record into buf; returns its length, or -1 when it does not fit. */
int gpushare_account_format(const struct gpushare_account_record *r, char *buf, size_t len);
/* Parse a record's text (len bytes, need not be NUL-terminated). Returns 0,
 * or -1 for anything malformed: a bad magic line, a number that does not
 * parse or overflows, a label of other characters, a gpu_uuid not of the
 * form above, a missing pid. A record without gpu_uuid (an older writer's)
 * reads with it empty. */
int gpushare_account_parse(const char *text, size_t len, struct gpushare_account_record *r);
/* Write r as <dir>/<pid>-<device>.rec, atomically (a temporary file renamed
 * over it), making dir (mode 0700) when absent. Returns 0 or -errno. */
int gpushare_account_write(const char *dir, const struct gpushare_account_record *r);

/* Called for each valid record of a directory; a nonzero return stops the walk. */
typedef int (*gpushare_account_fn)(const struct gpushare_account_record *r, void *arg);
/* Read every <pid>-<device>.rec of dir (regular files only, bounded) and
 * call fn on each that parses; the others are skipped. With stale_s > 0 a
 * record of a process that is gone (kill(pid, 0) fails with ESRCH) is
 * removed when older than stale_s seconds. Returns the number read, or -errno
 * when dir cannot be opened. */
int gpushare_account_read_dir(const char *dir, double stale_s, gpushare_account_fn fn, void *arg);

/* Every record the caller may see, at most max into out: its own
 * directory's and, for root (without GPUSHARE_ACCOUNT_DIR), every user's
 * under /run/user/<uid>/gpushare/account; of two for one process and GPU,
 * the newer. A gone process's record older than stale_s is removed (0:
 * none is). Returns the number kept. */
size_t gpushare_account_collect(struct gpushare_account_record *out, size_t max, double stale_s);

/* ---- loading it ---- */

/* The accounting library: $GPUSHARE_ACCOUNT_LIB, else beside the running
 * program (a build tree), else where the package installs it
 * (<prefix>/lib/gpushare/, lib/<multiarch>/gpushare/, lib64/gpushare/ next to
 * the program's bin/). Returns 0 with its path in buf when the file is
 * there, -1 otherwise. */
int gpushare_account_library(char *buf, size_t len);

/* The variable that loads the library into a process gpushare starts
 * (bench workers, farm jobs, exec ranks) when asked (the command's
 * --account, given as asked, or GPUSHARE_ACCOUNT=1):
 * "CUDA_INJECTION64_PATH=<path>" into buf, returning 1; 0 (nothing to add)
 * when not asked, when GPUSHARE_ACCOUNT=0, when the caller's environment
 * names its own CUDA_INJECTION64_PATH, or when the library is not there. */
int gpushare_account_inject_env(char *buf, size_t len, bool asked);

#ifdef __cplusplus
}
#endif

#endif
