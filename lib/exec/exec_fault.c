/*
 * GPU faults under MPS in `gpushare exec` (exec_fault.h). A fatal fault of
 * one client of an MPS server is reported to every client of that server
 * (lib/mps/mps_fault.h): the ranks beside the faulting one fail with it.
 * exec does not capture the programs' output, so what tells a fault from an
 * ordinary failure is the server: its state when a rank's program failed,
 * and its log, where a server names the client that faulted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare/buf.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "jobdir.h"
#include "mps_fault.h"
#include "exec_fault.h"

#define MAX_FAILURES 4096

int exec_fault_record(const char *dir, const struct exec_failure *f)
{
	char path[GPUSHARE_PATH_MAX], line[256];
	int fd, n, rc = gpushare_jobdir_path(path, sizeof(path), dir, "failed");

	if (rc)
		return rc;
	n = snprintf(line, sizeof(line), "%ld %ld %u %u %d %llu %d %d\n", f->local_rank, f->rank, f->gpu_index,
		     f->ranks_on_gpu, (int)f->pid, (unsigned long long)f->end_ns, f->code, f->server_fault ? 1 : 0);
	rc = gpushare_open_append(path, 0600, &fd);
	if (rc)
		return rc;
	if (write(fd, line, (size_t)n) != n)
		rc = gpushare_fail(GPUSHARE_E_IO, "cannot record the failure in '%s': %s", path, strerror(errno));
	close(fd);
	return rc;
}

static size_t read_failures(const char *dir, struct exec_failure **out)
{
	char path[GPUSHARE_PATH_MAX], *data = NULL, *line, *save = NULL;
	size_t len, n = 0;
	struct exec_failure *f;

	*out = NULL;
	if (gpushare_jobdir_path(path, sizeof(path), dir, "failed") || gpushare_read_file(path, 1 << 20, &data, &len)) {
		gpushare_clear_error();
		return 0;
	}
	f = calloc(MAX_FAILURES, sizeof(*f));
	for (line = strtok_r(data, "\n", &save); f && line && n < MAX_FAILURES; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long end;
		int pid, fault;

		if (sscanf(line, "%ld %ld %u %u %d %llu %d %d", &f[n].local_rank, &f[n].rank, &f[n].gpu_index,
			   &f[n].ranks_on_gpu, &pid, &end, &f[n].code, &fault) != 8)
			continue;
		f[n].pid = (pid_t)pid;
		f[n].end_ns = end;
		f[n].server_fault = fault != 0;
		n++;
	}
	free(data);
	*out = f;
	return f ? n : 0;
}

static bool named_in(pid_t pid, const pid_t *named, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (named[i] == pid)
			return true;
	return false;
}

size_t exec_fault_pick(const struct exec_failure *f, size_t n, const pid_t *named, size_t n_named, bool *from_log)
{
	size_t first = 0;

	*from_log = false;
	for (size_t i = 0; i < n; i++) {
		if (named_in(f[i].pid, named, n_named)) {
			*from_log = true;
			return i;
		}
		if (f[i].end_ns < f[first].end_ns)
			first = i;
	}
	return first;
}

static int by_rank(const void *a, const void *b)
{
	const struct exec_failure *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->local_rank > y->local_rank) - (x->local_rank < y->local_rank);
}

static void add_rank(struct gpushare_buf *b, const struct exec_failure *f)
{
	if (f->rank >= 0)
		gpushare_buf_addf(b, "rank %ld", f->rank);
	else
		gpushare_buf_addf(b, "local rank %ld", f->local_rank);
}

/* What the server log says: the clients it names as the culprit (a server
 * that names one), the clients a fault tore down (R580), and whether it
 * records a fatal fault at all; own: the daemon is the job's own, so every
 * client of it is a rank of this job. */
struct fault_log {
	struct gpushare_mps_fault_log log;
	bool own, matched; /* matched: some failed rank is among log.affected */
};

/* Whether the failures g[0..n) of one GPU had a fault: a rank saw the
 * server in FAULT (R580 holds that state for some 50 ms only), the log names
 * a rank as the culprit or among the clients the fault tore down, or, when
 * no failed rank is among those (a rank's program forked the CUDA process),
 * the job's own daemon logged a fatal fault. */
static bool had_fault(const struct exec_failure *g, size_t n, const struct fault_log *L)
{
	for (size_t i = 0; i < n; i++)
		if (g[i].server_fault || named_in(g[i].pid, L->log.named, L->log.n_named) ||
		    named_in(g[i].pid, L->log.affected, L->log.n_affected))
			return true;
	return L->log.fatal && L->own && !L->matched;
}

/* The line for the failures g[0..n) of one GPU, when they had a fault. */
static void report_gpu(struct gpushare_buf *b, const char *node, const struct exec_failure *g, size_t n,
		       const struct fault_log *L)
{
	bool from_log;
	size_t c, others = 0, k = 0;

	if (!had_fault(g, n, L))
		return;
	c = exec_fault_pick(g, n, L->log.named, L->log.n_named, &from_log);
	if (gpushare_buf_str(b)[0])
		gpushare_buf_addf(b, "\n");
	gpushare_buf_addf(b, "GPU fault under MPS on node %s GPU %u: ", node, g[c].gpu_index);
	add_rank(b, &g[c]);
	gpushare_buf_addf(b, from_log ? " faulted (named by the server log)"
				      : " is the suspect (the first to fail; the server log names no culprit)");
	for (size_t i = 0; i < n; i++) {
		if (i == c)
			continue;
		gpushare_buf_addf(b, others++ ? "," : "; ");
		if (others == 1)
			gpushare_buf_addf(b, "%srank%s ", g[i].rank >= 0 ? "" : "local ", n > 2 ? "s" : "");
		gpushare_buf_addf(b, "%ld", g[i].rank >= 0 ? g[i].rank : g[i].local_rank);
	}
	for (size_t i = 0; i < n; i++)
		if (g[i].ranks_on_gpu > k)
			k = g[i].ranks_on_gpu;
	if (others)
		gpushare_buf_addf(b, " failed with it (blast radius %zu of %zu ranks on the GPU)", others, k);
	else
		gpushare_buf_addf(b, "; no other rank on the GPU failed (blast radius 0 of %zu)", k);
}

void exec_fault_report(const char *dir, const char *node, const char *log_dir, bool own_daemon, char *out,
		       size_t len)
{
	struct exec_failure *f = NULL, *g;
	struct fault_log L = { 0 };
	size_t n = read_failures(dir, &f);
	struct gpushare_buf b = { 0 };

	if (len)
		out[0] = '\0';
	if (!n || !(g = calloc(n, sizeof(*g)))) {
		free(f);
		return;
	}
	gpushare_mps_fault_log_read(log_dir, &L.log);
	L.own = own_daemon;
	for (size_t i = 0; i < n; i++)
		L.matched = L.matched || named_in(f[i].pid, L.log.affected, L.log.n_affected);
	/* GPU by GPU, in the order of their first failure. */
	for (size_t i = 0; i < n; i++) {
		size_t m = 0;
		bool done = false;

		for (size_t j = 0; j < i && !done; j++)
			done = f[j].gpu_index == f[i].gpu_index;
		if (done)
			continue;
		for (size_t j = i; j < n; j++)
			if (f[j].gpu_index == f[i].gpu_index)
				g[m++] = f[j];
		qsort(g, m, sizeof(*g), by_rank);
		report_gpu(&b, node, g, m, &L);
	}
	if (len)
		snprintf(out, len, "%s", gpushare_buf_str(&b));
	gpushare_buf_release(&b);
	free(g);
	free(f);
}
