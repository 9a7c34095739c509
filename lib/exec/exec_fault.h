/*
 * GPU faults under MPS in `gpushare exec` (lib/exec/exec_fault.c,
 * docs/exec.md, "GPU faults under MPS"): each rank whose program fails
 * records it in the job directory's file "failed"; the node's last rank
 * reads the records and the server log and says, per GPU, which rank
 * faulted and which ranks failed with it.
 */
#ifndef GPUSHARE_EXEC_FAULT_H
#define GPUSHARE_EXEC_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gpushare_mps;

/* One failed rank, as recorded: one line of "failed". */
struct exec_failure {
	long local_rank, rank;          /* rank: -1 when the launcher does not say */
	unsigned gpu_index, ranks_on_gpu;
	pid_t pid;                      /* the program (its process group's leader) */
	uint64_t end_ns;                /* CLOCK_MONOTONIC when its end was seen */
	int code;                       /* exit status, 128+N for signal N */
	bool server_fault;              /* a server of the daemon said FAULT then */
};

/* Append f to dir/failed: one line, one write (O_APPEND). */
int exec_fault_record(const char *dir, const struct exec_failure *f);

/* The report for the failures recorded in dir, with the server log of
 * log_dir (may be NULL or ""): one line per GPU that had a fault (a rank
 * saw the server in FAULT, the log names a rank's program as the culprit or
 * among the clients the fault tore down, or, own_daemon (the job's own
 * daemon, whose clients are all this job's ranks), the log records a fatal
 * fault that names no failed rank's program), without "gpushare: exec: "
 * and separated by '\n'. "" when no fault. */
void exec_fault_report(const char *dir, const char *node, const char *log_dir, bool own_daemon, char *out,
		       size_t len);

/* The culprit among n failures of one GPU: the one whose pid is in named
 * (the server log's faulting clients), else the first to fail (*from_log
 * false). n > 0. */
size_t exec_fault_pick(const struct exec_failure *f, size_t n, const pid_t *named, size_t n_named, bool *from_log);

#endif
