/*
 * Accounting records (gpushare/account.h): their text, the owner of the
 * process, the per-user directory, the atomic write and the reader. Only the
 * C library: libgpushare-account.so, loaded into any CUDA process, links this
 * file and nothing else of gpushare.
 *
 * A record is lines of "key value", the first the magic line:
 *   gpushare-account 1
 *   pid 4242
 *   ...
 * Unknown keys are skipped (a newer writer), a malformed value refuses the
 * whole record: the reader trusts no file of the directory. Keys are only
 * ever added, never changed in meaning, so the magic line stays at 1: an
 * older reader skips a newer key (gpu_uuid was added so, and such a reader
 * groups by the ordinal as it always did), and a record without one reads
 * with its field empty.
 */
#include <ctype.h>
#include <dirent.h>
#include <glob.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/account.h"

double gpushare_account_share(const struct gpushare_account_record *r)
{
	if (r->window_ns == 0)
		return -1.0;
	return (double)r->busy_ns / (double)r->window_ns;
}

double gpushare_account_gpu_seconds(const struct gpushare_account_record *r)
{
	double s = gpushare_account_share(r);
	return s < 0 ? 0.0 : s * (double)r->wall_ns / 1e9;
}

double gpushare_account_mean_kernel_ns(const struct gpushare_account_record *r)
{
	return r->kernels ? (double)r->kernel_ns / (double)r->kernels : -1.0;
}

double gpushare_account_slowdown(const struct gpushare_account_record *r)
{
	if (!r->window_mean_ns || !r->best_mean_ns)
		return -1.0;
	return r->window_mean_ns <= r->best_mean_ns ? 1.0 : (double)r->window_mean_ns / (double)r->best_mean_ns;
}

void gpushare_account_held(const struct gpushare_account_record *r, const long *gpu, const double *shares, size_t n,
			   double tolerance, int *held)
{
	for (size_t i = 0; i < n; i++) {
		double share = shares ? shares[i] : gpushare_account_share(&r[i]), sum = 0;

		held[i] = -1;
		if (r[i].promised < 0 || share < 0)
			continue;
		for (size_t k = 0; k < n; k++) {
			double s = shares ? shares[k] : gpushare_account_share(&r[k]);
			if (gpu[k] == gpu[i] && s > 0)
				sum += s;
		}
		/* under its promise, with work (a kernel in its windows), on a GPU with room */
		held[i] = share < r[i].promised - tolerance - 1e-9 && r[i].kernels > 0 && sum < 1.0 - tolerance - 1e-9;
	}
}

void gpushare_account_gpu_keys(const struct gpushare_account_record *r, size_t n, long *gpu)
{
	/* on return: indexes >= 0; -2 - j for the UUID of record j (its first);
	 * -(n + 2) - device for a record naming no GPU */
	for (size_t i = 0; i < n; i++) {
		size_t first = i;
		long key;

		if (gpu[i] >= 0)
			continue;
		if (!r[i].gpu_uuid[0]) {
			gpu[i] = -(long)n - 2 - (long)r[i].device;
			continue;
		}
		key = -1;
		for (size_t k = 0; k < n && key < 0; k++) {
			if (k == i || strcmp(r[k].gpu_uuid, r[i].gpu_uuid) != 0)
				continue;
			if (gpu[k] >= 0)
				key = gpu[k];
			else if (k < first)
				first = k;
		}
		gpu[i] = key >= 0 ? key : -2 - (long)first;
	}
}

double gpushare_account_work_rate(const struct gpushare_account_record *r)
{
	return r->window_ns ? (double)r->kernels * 1e9 / (double)r->window_ns : -1.0;
}

/* shared / alone, capped at 1 (no client runs faster than alone on the whole
 * GPU: above 1 is noise); negative when either is unknown */
static double ratio_capped(double shared, double alone)
{
	if (!(alone > 0) || shared < 0)
		return -1.0;
	return shared >= alone ? 1.0 : shared / alone;
}

int gpushare_account_verdict(const struct gpushare_account_record *alone, const struct gpushare_account_record *client,
			     double promised, double tolerance, struct gpushare_account_verdict *v)
{
	double ka = gpushare_account_mean_kernel_ns(alone), kc = gpushare_account_mean_kernel_ns(client);

	v->promised = v->expected = promised;
	v->error = 0.0;
	v->pass = -1;
	/* a kernel's time: alone / shared, so the ratio of the inverses */
	v->attained_kernel = ka > 0 && kc > 0 ? ratio_capped(1.0 / kc, 1.0 / ka) : -1.0;
	v->attained = ratio_capped(gpushare_account_work_rate(client), gpushare_account_work_rate(alone));
	if (v->attained < 0)
		return v->pass;
	v->error = v->attained - promised;
	v->pass = fabs(v->error) <= tolerance + 1e-9;
	return v->pass;
}

static bool label_char(int c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '_' || c == ':' || c == '/' || c == '@' || c == '-';
}

void gpushare_account_label(char *dst, const char *src)
{
	size_t n;

	memset(dst, 0, GPUSHARE_ACCOUNT_LABEL_MAX); /* a record compares whole */
	if (!src)
		return;
	n = strlen(src);
	if (n >= GPUSHARE_ACCOUNT_LABEL_MAX)
		return;
	for (size_t i = 0; i < n; i++)
		if (!label_char(src[i]))
			return;
	memcpy(dst, src, n + 1);
}

/* ---- the owner ---- */

static void copy_span(char *dst, size_t len, const char *s, size_t n)
{
	if (n >= len)
		n = len - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* One path segment [s, e): a pod's, in the cgroupfs driver's form
 * ("pod<uid>") or the systemd driver's ("kubepods-burstable-pod<uid>.slice",
 * the uid's dashes written as underscores). */
static bool pod_segment(const char *s, const char *e, char *uid, size_t len)
{
	const char *p = NULL;
	size_t n;

	if (e - s > 3 && strncmp(s, "pod", 3) == 0)
		p = s + 3;
	else
		for (const char *q = s; q + 4 <= e; q++)
			if (strncmp(q, "-pod", 4) == 0)
				p = q + 4;
	if (!p)
		return false;
	n = (size_t)(e - p);
	if (n > 6 && strncmp(e - 6, ".slice", 6) == 0)
		n -= 6;
	if (n < 8 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)p[i]) && p[i] != '-' && p[i] != '_')
			return false;
	copy_span(uid, len, p, n);
	for (char *c = uid; *c; c++)
		if (*c == '_')
			*c = '-';
	return true;
}

/* A container's segment: "<id>", "cri-containerd-<id>.scope",
 * "docker-<id>.scope" or "crio-<id>.scope"; the id is hex. */
static bool container_segment(const char *s, const char *e, char *id, size_t len)
{
	const char *dash = NULL;
	size_t n;

	if (e - s > 6 && strncmp(e - 6, ".scope", 6) == 0)
		e -= 6;
	for (const char *q = s; q < e; q++)
		if (*q == '-')
			dash = q;
	if (dash)
		s = dash + 1;
	n = (size_t)(e - s);
	if (n < 12)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	copy_span(id, len, s, n < 12 ? n : 12);
	return true;
}

int gpushare_account_cgroup_pod(const char *text, char *pod_uid, size_t pod_len, char *container,
				size_t container_len)
{
	const char *line = text;

	pod_uid[0] = container[0] = '\0';
	if (!text)
		return 0;
	while (*line) {
		const char *end = strchr(line, '\n'), *path;
		if (!end)
			end = line + strlen(line);
		/* "hierarchy:controllers:path": the path follows the second ':' */
		path = memchr(line, ':', (size_t)(end - line));
		path = path ? memchr(path + 1, ':', (size_t)(end - path - 1)) : NULL;
		if (path && memmem(path, (size_t)(end - path), "kubepods", 8)) {
			const char *s = path + 1;
			bool in_pod = false;
			while (s < end) {
				const char *e = memchr(s, '/', (size_t)(end - s));
				if (!e)
					e = end;
				if (e > s) {
					if (in_pod)
						container_segment(s, e, container, container_len);
					else if (pod_segment(s, e, pod_uid, pod_len))
						in_pod = true;
				}
				s = e + 1;
			}
			if (in_pod)
				return 1;
		}
		line = *end ? end + 1 : end;
	}
	pod_uid[0] = container[0] = '\0';
	return 0;
}

static void env_label(char *dst, const char *const *names)
{
	dst[0] = '\0';
	for (; *names && !dst[0]; names++)
		gpushare_account_label(dst, getenv(*names));
}

void gpushare_account_owner_fill(struct gpushare_account_owner *o, const char *cgroup_text)
{
	static const char *const job[] = { "SLURM_JOB_ID", NULL }, *const step[] = { "SLURM_STEP_ID", NULL },
			      *const ns[] = { "POD_NAMESPACE", "KUBERNETES_NAMESPACE", NULL },
			      *const pod[] = { "POD_NAME", NULL }, *const farm[] = { "GPUSHARE_FARM_JOB", NULL },
			      *const rank[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", NULL };
	char uid[GPUSHARE_ACCOUNT_LABEL_MAX], cid[GPUSHARE_ACCOUNT_LABEL_MAX];

	memset(o, 0, sizeof(*o));
	env_label(o->slurm_job, job);
	env_label(o->slurm_step, step);
	env_label(o->farm_job, farm);
	env_label(o->rank, rank);
	if (gpushare_account_cgroup_pod(cgroup_text, uid, sizeof(uid), cid, sizeof(cid))) {
		env_label(o->k8s_namespace, ns);
		env_label(o->k8s_pod, pod);
		if (!o->k8s_pod[0])
			gpushare_account_label(o->k8s_pod, uid);
		gpushare_account_label(o->k8s_container, cid);
	}
}

/* ---- the directory ---- */

int gpushare_account_dir(char *buf, size_t len)
{
	const char *env = getenv("GPUSHARE_ACCOUNT_DIR"), *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/gpushare/account");
	else if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/gpushare/account", xdg);
	else
		n = snprintf(buf, len, "/tmp/gpushare-%u/account", (unsigned)geteuid());
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* ---- the text ---- */

void gpushare_account_uuid(char dst[GPUSHARE_ACCOUNT_UUID_MAX], const unsigned char b[16], bool mig)
{
	snprintf(dst, GPUSHARE_ACCOUNT_UUID_MAX,
		 "%s-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", mig ? "MIG" : "GPU", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

int gpushare_account_uuid_valid(const char *s)
{
	static const char form[] = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";

	if (strncmp(s, "GPU-", 4) != 0 && strncmp(s, "MIG-", 4) != 0)
		return 0;
	s += 4;
	for (size_t i = 0; i < sizeof(form) - 1; i++) {
		bool hex = (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f');
		if (form[i] == '-' ? s[i] != '-' : !hex)
			return 0;
	}
	return s[sizeof(form) - 1] == '\0';
}

#define U64_FIELDS(X)                                                                                             \
	X(start_ns) X(updated_ns) X(wall_ns) X(window_ns) X(busy_ns) X(kernel_ns) X(kernels) X(window_mean_ns)      \
	X(best_mean_ns)
#define LABEL_FIELDS(X)                                                                                           \
	X(slurm_job) X(slurm_step) X(k8s_namespace) X(k8s_pod) X(k8s_container) X(farm_job) X(rank)

int gpushare_account_format(const struct gpushare_account_record *r, char *buf, size_t len)
{
	size_t off = 0;
	int n;

#define PUT(...)                                                                                                  \
	do {                                                                                                      \
		n = snprintf(buf + off, len - off, __VA_ARGS__);                                                  \
		if (n < 0 || (size_t)n >= len - off)                                                              \
			return -1;                                                                                \
		off += (size_t)n;                                                                                 \
	} while (0)
	if (len == 0)
		return -1;
	PUT("%s\npid %" PRId64 "\nuid %" PRId64 "\ndevice %" PRIu32 "\n", GPUSHARE_ACCOUNT_MAGIC, r->pid, r->uid,
	    r->device);
	if (r->gpu_uuid[0])
		PUT("gpu_uuid %s\n", r->gpu_uuid);
#define X(f) PUT(#f " %" PRIu64 "\n", r->f);
	U64_FIELDS(X)
#undef X
	if (r->memory_known)
		PUT("memory_bytes %" PRIu64 "\n", r->memory_bytes);
	if (r->timing == GPUSHARE_ACCOUNT_TIMING_LAUNCHES)
		PUT("timing launches\n");
	PUT("promised %.6f\n", r->promised < 0 ? -1.0 : r->promised);
#define X(f)                                                                                                      \
	if (r->owner.f[0])                                                                                        \
		PUT(#f " %s\n", r->owner.f);
	LABEL_FIELDS(X)
#undef X
#undef PUT
	return (int)off;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

static bool parse_i64(const char *s, int64_t *out)
{
	uint64_t v;
	bool neg = *s == '-';

	if (!parse_u64(s + neg, &v) || v > (uint64_t)INT64_MAX)
		return false;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return true;
}

static int parse_line(const char *key, const char *val, struct gpushare_account_record *r, bool *pid)
{
	uint64_t u;

	if (strcmp(key, "pid") == 0) {
		*pid = true;
		return parse_i64(val, &r->pid) && r->pid > 0 ? 0 : -1;
	}
	if (strcmp(key, "uid") == 0)
		return parse_i64(val, &r->uid) ? 0 : -1;
	if (strcmp(key, "device") == 0) {
		if (!parse_u64(val, &u) || u > UINT32_MAX)
			return -1;
		r->device = (uint32_t)u;
		return 0;
	}
	if (strcmp(key, "gpu_uuid") == 0) {
		if (!gpushare_account_uuid_valid(val))
			return -1;
		memcpy(r->gpu_uuid, val, strlen(val) + 1); /* 40 bytes and the NUL */
		return 0;
	}
	if (strcmp(key, "memory_bytes") == 0) {
		r->memory_known = true;
		return parse_u64(val, &r->memory_bytes) ? 0 : -1;
	}
	if (strcmp(key, "timing") == 0) {
		if (strcmp(val, "kernels") == 0)
			r->timing = GPUSHARE_ACCOUNT_TIMING_KERNELS;
		else if (strcmp(val, "launches") == 0)
			r->timing = GPUSHARE_ACCOUNT_TIMING_LAUNCHES;
		else
			return -1;
		return 0;
	}
	if (strcmp(key, "promised") == 0) {
		char *end;
		double d;
		errno = 0;
		d = strtod(val, &end);
		if (errno || *end || end == val || !isfinite(d) || d > 1.0)
			return -1;
		r->promised = d < 0 ? -1.0 : d;
		return 0;
	}
#define X(f)                                                                                                      \
	if (strcmp(key, #f) == 0)                                                                                 \
		return parse_u64(val, &r->f) ? 0 : -1;
	U64_FIELDS(X)
#undef X
#define X(f)                                                                                                      \
	if (strcmp(key, #f) == 0) {                                                                               \
		gpushare_account_label(r->owner.f, val);                                                          \
		return r->owner.f[0] ? 0 : -1;                                                                    \
	}
	LABEL_FIELDS(X)
#undef X
	return 0; /* a key of a newer writer */
}

int gpushare_account_parse(const char *text, size_t len, struct gpushare_account_record *r)
{
	char line[160];
	size_t off = 0, magic = strlen(GPUSHARE_ACCOUNT_MAGIC);
	bool first = true, pid = false;

	memset(r, 0, sizeof(*r));
	r->promised = -1.0;
	if (len > GPUSHARE_ACCOUNT_RECORD_MAX)
		return -1;
	while (off < len) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (text + off)) : len - off;
		char *sp;
		if (n >= sizeof(line) || memchr(text + off, '\0', n))
			return -1;
		memcpy(line, text + off, n);
		line[n] = '\0';
		off += n + (nl ? 1 : 0);
		if (first) {
			if (n != magic || memcmp(line, GPUSHARE_ACCOUNT_MAGIC, magic) != 0)
				return -1;
			first = false;
			continue;
		}
		if (n == 0)
			continue;
		if (!(sp = strchr(line, ' ')))
			return -1;
		*sp = '\0';
		if (parse_line(line, sp + 1, r, &pid) < 0)
			return -1;
	}
	return !first && pid ? 0 : -1;
}

/* ---- the directory's files ---- */

static int make_dirs(const char *dir)
{
	char path[4096];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, n + 1);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int gpushare_account_write(const char *dir, const struct gpushare_account_record *r)
{
	char text[GPUSHARE_ACCOUNT_RECORD_MAX], path[4096], tmp[4096 + 16];
	int len = gpushare_account_format(r, text, sizeof(text)), fd, rc = 0, n;
	ssize_t w;

	if (len < 0)
		return -EOVERFLOW;
	n = snprintf(path, sizeof(path), "%s/%" PRId64 "-%" PRIu32 ".rec", dir, r->pid, r->device);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == ENOENT) {
		if ((rc = make_dirs(dir)) < 0)
			return rc;
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	}
	if (fd < 0)
		return -errno;
	w = write(fd, text, (size_t)len);
	if (w != len)
		rc = w < 0 ? -errno : -EIO;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}

/* "<digits>-<digits>.rec" */
static bool record_name(const char *name)
{
	const char *p = name;
	int parts = 0;

	while (parts < 2) {
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
		parts++;
		if (parts == 1 && *p++ != '-')
			return false;
	}
	return strcmp(p, ".rec") == 0;
}

int gpushare_account_read_dir(const char *dir, double stale_s, gpushare_account_fn fn, void *arg)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct timespec now;
	int count = 0, dfd;

	if (!d)
		return -errno;
	dfd = dirfd(d);
	clock_gettime(CLOCK_REALTIME, &now);
	while ((e = readdir(d))) {
		char text[GPUSHARE_ACCOUNT_RECORD_MAX + 1];
		struct gpushare_account_record r;
		struct stat st;
		ssize_t n;
		int fd;
		if (!record_name(e->d_name))
			continue;
		fd = openat(dfd, e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > GPUSHARE_ACCOUNT_RECORD_MAX) {
			close(fd);
			continue;
		}
		n = read(fd, text, sizeof(text));
		close(fd);
		if (n < 0 || gpushare_account_parse(text, (size_t)n, &r) < 0)
			continue;
		if (stale_s > 0 && kill((pid_t)r.pid, 0) < 0 && errno == ESRCH &&
		    (double)(now.tv_sec - st.st_mtime) > stale_s) {
			unlinkat(dfd, e->d_name, 0);
			continue;
		}
		count++;
		if (fn && fn(&r, arg))
			break;
	}
	closedir(d);
	return count;
}

/* ---- every record the caller may see ---- */

struct collect {
	struct gpushare_account_record *r;
	size_t n, max;
};

/* Keep a record; of two for one process and GPU (two directories), the newer. */
static int keep(const struct gpushare_account_record *r, void *arg)
{
	struct collect *c = arg;

	for (size_t i = 0; i < c->n; i++)
		if (c->r[i].pid == r->pid && c->r[i].device == r->device) {
			if (r->updated_ns > c->r[i].updated_ns)
				c->r[i] = *r;
			return 0;
		}
	if (c->n >= c->max)
		return 1;
	c->r[c->n++] = *r;
	return 0;
}

#define MAX_USER_DIRS 256

size_t gpushare_account_collect(struct gpushare_account_record *out, size_t max, double stale_s)
{
	struct collect c = { .r = out, .max = max };
	char dir[4096];
	glob_t g;

	if (gpushare_account_dir(dir, sizeof(dir)) == 0)
		gpushare_account_read_dir(dir, stale_s, keep, &c);
	if (geteuid() != 0 || getenv("GPUSHARE_ACCOUNT_DIR"))
		return c.n;
	/* root sees every user's records */
	if (glob("/run/user/*/gpushare/account", GLOB_ONLYDIR | GLOB_NOSORT, NULL, &g) != 0)
		return c.n;
	for (size_t i = 0; i < g.gl_pathc && i < MAX_USER_DIRS; i++)
		gpushare_account_read_dir(g.gl_pathv[i], stale_s, keep, &c);
	globfree(&g);
	return c.n;
}

/* ---- loading it into the processes gpushare starts ---- */

int gpushare_account_library(char *buf, size_t len)
{
	static const char *const rel[] = { "libgpushare-account.so", "../lib/gpushare/libgpushare-account.so",
					   "../lib/x86_64-linux-gnu/gpushare/libgpushare-account.so",
					   "../lib/aarch64-linux-gnu/gpushare/libgpushare-account.so",
					   "../lib64/gpushare/libgpushare-account.so" };
	const char *env = getenv("GPUSHARE_ACCOUNT_LIB");
	char self[4096], *slash;
	ssize_t n;

	if (env && *env) {
		if ((size_t)snprintf(buf, len, "%s", env) >= len)
			return -1;
		return access(buf, R_OK) == 0 ? 0 : -1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	if (!(slash = strrchr(self, '/')))
		return -1;
	slash[1] = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		int w = snprintf(buf, len, "%s%s", self, rel[i]);
		if (w > 0 && (size_t)w < len && access(buf, R_OK) == 0)
			return 0;
	}
	return -1;
}

int gpushare_account_inject_env(char *buf, size_t len, bool asked)
{
	const char *env = getenv("GPUSHARE_ACCOUNT"), *own = getenv("CUDA_INJECTION64_PATH");
	char lib[4096];

	/* asked by the command's option or GPUSHARE_ACCOUNT=1; GPUSHARE_ACCOUNT=0 wins */
	if (!(asked || (env && strcmp(env, "1") == 0)) || (env && strcmp(env, "0") == 0) || (own && *own) ||
	    gpushare_account_library(lib, sizeof(lib)) < 0)
		return 0;
	return (size_t)snprintf(buf, len, "CUDA_INJECTION64_PATH=%s", lib) < len;
}
