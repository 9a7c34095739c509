/*
 * SM counts of full GPUs from libcuda, which NVML does not report.
 *
 * Initialising CUDA in gpushare's own process would have two costs: the
 * process would hold a CUDA context-to-be (memory, a slot under exclusive
 * compute modes) for as long as it runs, and with an MPS daemon answering at
 * CUDA_MPS_PIPE_DIRECTORY (or /tmp/nvidia-mps) it would become an MPS client
 * and start a server. So the query runs in a short-lived forked child whose
 * CUDA_MPS_PIPE_DIRECTORY names a fresh, empty directory of its own, which
 * reports over a pipe and is killed when it takes longer than the caller
 * allows. The child is always reaped and the directory removed.
 *
 * The child calls dlopen and setenv after fork(), which glibc makes safe
 * enough for a process with a few threads (its allocator and loader locks
 * are reset in the child); the command line calls this before starting any.
 *
 * Protocol on the pipe (child to parent, native byte order, one message):
 * struct cuda_reply, then reply.n entries of struct gpushare_cuda_dev.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/child.h"
#include "gpushare/files.h"
#include "cuda_types.h"
#include "gpu_internal.h"
#include "gpushare/gpushare.h"
#include "gpushare/gpu.h"
#include "gpushare/util.h"

#define CUDA_DEFAULT_LIBRARY "libcuda.so.1"
#define CUDA_MAX_DEVICES 64

struct cuda_api {
#define X(required, ret, name, params) ret (*name) params;
	CUDA_SYMBOLS(X)
#undef X
};

static const struct cuda_sym {
	const char *name;
	size_t offset;
	bool required;
} cuda_syms[] = {
#define X(required, ret, name, params) { #name, offsetof(struct cuda_api, name), required },
	CUDA_SYMBOLS(X)
#undef X
};

_Static_assert(sizeof(void *) == sizeof(CUresult (*)(void)), "function pointers stored from dlsym");

struct cuda_reply {
	int32_t status;                /* GPUSHARE_OK, GPUSHARE_E_NO_DRIVER, GPUSHARE_E_DRIVER */
	uint32_t n;                    /* devices that follow */
	char detail[224];              /* why, when status is not OK */
};

void gpushare_uuid_format(const unsigned char b[16], const char *prefix, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%s%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 prefix ? prefix : "", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
		 b[10], b[11], b[12], b[13], b[14], b[15]);
}

bool gpushare_uuid_matches(const char *nvml_uuid, const unsigned char bytes[16])
{
	char hex[40];
	const char *p = nvml_uuid;

	/* Skip a "GPU-" or "MIG-" style prefix: letters then a dash. */
	while (*p && ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
		p++;
	if (*p == '-' && p != nvml_uuid)
		p++;
	else
		p = nvml_uuid;
	gpushare_uuid_format(bytes, "", hex, sizeof(hex));
	return strcasecmp(p, hex) == 0;
}

static const char *cuda_errname(const struct cuda_api *cu, CUresult r)
{
	const char *name = NULL;

	if (cu->cuGetErrorName && cu->cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
		return name;
	return "CUDA error";
}

/* Runs in the child: load libcuda and fill rep and devs. */
static void cuda_child_query(struct cuda_reply *rep, struct gpushare_cuda_dev *devs)
{
	const char *path = getenv("GPUSHARE_CUDA_LIBRARY");
	struct cuda_api cu;
	void *h;
	CUresult r;
	int count = 0;

	if (!path || !*path)
		path = CUDA_DEFAULT_LIBRARY;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();

		rep->status = GPUSHARE_E_NO_DRIVER;
		snprintf(rep->detail, sizeof(rep->detail), "%s", e ? e : path);
		return;
	}
	memset(&cu, 0, sizeof(cu));
	for (size_t i = 0; i < sizeof(cuda_syms) / sizeof(cuda_syms[0]); i++) {
		void *sym = dlsym(h, cuda_syms[i].name);

		if (!sym && cuda_syms[i].required) {
			rep->status = GPUSHARE_E_NO_DRIVER;
			snprintf(rep->detail, sizeof(rep->detail), "%s: no symbol %s", path, cuda_syms[i].name);
			return;
		}
		memcpy((char *)&cu + cuda_syms[i].offset, &sym, sizeof(sym));
	}
	if (!cu.cuDeviceGetUuid_v2 && !cu.cuDeviceGetUuid) {
		rep->status = GPUSHARE_E_NO_DRIVER;
		snprintf(rep->detail, sizeof(rep->detail), "%s: no symbol cuDeviceGetUuid", path);
		return;
	}
	r = cu.cuInit(0);
	if (r == CUDA_SUCCESS)
		r = cu.cuDeviceGetCount(&count);
	if (r != CUDA_SUCCESS) {
		rep->status = GPUSHARE_E_DRIVER;
		snprintf(rep->detail, sizeof(rep->detail), "cuInit: %s (%d)", cuda_errname(&cu, r), r);
		return;
	}
	if (count > CUDA_MAX_DEVICES)
		count = CUDA_MAX_DEVICES;
	for (int i = 0; i < count; i++) {
		struct gpushare_cuda_dev *d = &devs[rep->n];
		CUuuid uuid;
		CUdevice dev;
		int sm = -1;

		if (cu.cuDeviceGet(&dev, i) != CUDA_SUCCESS)
			continue;
		r = cu.cuDeviceGetUuid_v2 ? cu.cuDeviceGetUuid_v2(&uuid, dev) : cu.cuDeviceGetUuid(&uuid, dev);
		if (r != CUDA_SUCCESS)
			continue;
		if (cu.cuDeviceGetAttribute(&sm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS)
			sm = GPUSHARE_UNKNOWN;
		memcpy(d->uuid, uuid.bytes, sizeof(d->uuid));
		d->sm_count = sm;
		rep->n++;
	}
	rep->status = GPUSHARE_OK;
	/* No dlclose and no cuda teardown: the child exits right away. */
}

static _Noreturn void cuda_child(int fd, const char *pipe_dir)
{
	struct gpushare_cuda_dev devs[CUDA_MAX_DEVICES];
	struct cuda_reply rep;
	int null;

	memset(&rep, 0, sizeof(rep));
	memset(devs, 0, sizeof(devs));
	/* libcuda could print; keep the caller's standard output clean. */
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		close(null);
	}
	if (setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1) != 0 || unsetenv("CUDA_VISIBLE_DEVICES") != 0) {
		rep.status = GPUSHARE_E_SYS;
		snprintf(rep.detail, sizeof(rep.detail), "setenv: %s", strerror(errno));
	} else {
		cuda_child_query(&rep, devs);
	}
	if (gpushare_write_all(fd, &rep, sizeof(rep)) != 0 ||
	    gpushare_write_all(fd, devs, rep.n * sizeof(devs[0])) != 0)
		_exit(1);
	_exit(0);
}

/* Remove the child's pipe directory and anything libcuda left in it. */
static void remove_pipe_dir(const char *dir)
{
	DIR *d;
	struct dirent *e;

	if (rmdir(dir) == 0 || errno == ENOENT)
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
	rmdir(dir);
}

/* Read the child's message until end of file, the buffer is full or the
 * deadline passes. Returns the bytes read, or -1 on timeout. */
static ssize_t read_reply(int fd, char *buf, size_t cap, uint64_t deadline)
{
	size_t got = 0;

	for (;;) {
		uint64_t now = gpushare_now_ns();
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t r;
		int pr;

		if (now >= deadline)
			return -1;
		pr = poll(&pf, 1, (int)((deadline - now) / 1000000u) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue; /* timeout is checked at the top */
		if (got == cap)
			return (ssize_t)got;
		r = read(fd, buf + got, cap - got);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			return (ssize_t)got;
		got += (size_t)r;
	}
}

struct probe {
	int fd;
	const char *dir;
};

static void probe_main(void *arg)
{
	const struct probe *p = arg;

	cuda_child(p->fd, p->dir);
}

int gpushare_cuda_query(struct gpushare_cuda_dev **devs, size_t *n, int timeout_ms)
{
	const size_t cap = sizeof(struct cuda_reply) + CUDA_MAX_DEVICES * sizeof(struct gpushare_cuda_dev);
	const char *tmp = getenv("TMPDIR");
	char dir[GPUSHARE_PATH_MAX];
	struct cuda_reply rep;
	struct gpushare_child ch;
	struct probe pr;
	uint64_t deadline;
	int p[2], status, rc;
	ssize_t got;
	char *buf;

	*devs = NULL;
	*n = 0;
	if (!tmp || tmp[0] != '/' || strlen(tmp) > 200)
		tmp = "/tmp";
	snprintf(dir, sizeof(dir), "%s/gpushare-cuda-XXXXXX", tmp);
	if (!mkdtemp(dir)) /* mode 0700, new and empty */
		return gpushare_fail(GPUSHARE_E_SYS, "cannot create a directory in '%s': %s", tmp, strerror(errno));
	buf = malloc(cap);
	if (!buf) {
		remove_pipe_dir(dir);
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate the libcuda reply");
	}
	if (pipe2(p, O_CLOEXEC) != 0) {
		rc = gpushare_fail(GPUSHARE_E_SYS, "pipe: %s", strerror(errno));
		goto out;
	}
	deadline = gpushare_now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 1) * 1000000u;
	gpushare_child_init(&ch);
	pr.fd = p[1];
	pr.dir = dir;
	ch.fn = probe_main;
	ch.arg = &pr;
	ch.in = GPUSHARE_CHILD_DEVNULL;
	rc = gpushare_child_start(&ch);
	close(p[1]);
	if (rc) {
		close(p[0]);
		goto out;
	}
	got = read_reply(p[0], buf, cap, deadline);
	close(p[0]);
	if (got < 0) {
		gpushare_child_signal(&ch, SIGKILL);
		gpushare_child_wait(&ch, UINT64_MAX);
	} else {
		uint64_t now = gpushare_now_ns();

		if (gpushare_child_wait(&ch, now < deadline ? deadline - now : 0) != GPUSHARE_OK)
			gpushare_child_stop(&ch, 0);
	}
	gpushare_clear_error();
	gpushare_child_release(&ch);
	status = ch.wstatus;
	if (got < 0) {
		rc = gpushare_fail(GPUSHARE_E_TIMEOUT, "libcuda did not answer within %d ms", timeout_ms);
		goto out;
	}
	if ((size_t)got < sizeof(rep)) {
		if (WIFSIGNALED(status))
			rc = gpushare_fail(GPUSHARE_E_DRIVER, "the libcuda query was killed by signal %d",
					   WTERMSIG(status));
		else
			rc = gpushare_fail(GPUSHARE_E_DRIVER, "the libcuda query exited with status %d and no answer",
					   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		goto out;
	}
	memcpy(&rep, buf, sizeof(rep));
	rep.detail[sizeof(rep.detail) - 1] = '\0';
	if (rep.status != GPUSHARE_OK) {
		rc = gpushare_fail(rep.status, "%s", rep.detail);
		goto out;
	}
	if (rep.n > CUDA_MAX_DEVICES || (size_t)got < sizeof(rep) + rep.n * sizeof(**devs)) {
		rc = gpushare_fail(GPUSHARE_E_DRIVER, "short answer from the libcuda query");
		goto out;
	}
	rc = GPUSHARE_OK;
	if (rep.n > 0) {
		*devs = malloc(rep.n * sizeof(**devs));
		if (!*devs) {
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "cannot store libcuda devices");
			goto out;
		}
		memcpy(*devs, buf + sizeof(rep), rep.n * sizeof(**devs));
		*n = rep.n;
	}
out:
	free(buf);
	remove_pipe_dir(dir);
	return rc;
}
