/*
 * Fatal GPU faults under MPS (docs/farm.md, "Faults under MPS"). On Volta
 * and later a fatal fault of one client (an illegal address, error 700) is
 * reported to every client of that GPU's server, without naming the one
 * that caused it; the server refuses new clients (807) until all of them
 * have left. These read what a client and the server leave behind: the
 * error text in a client's standard error, and the server log's lines that
 * name a client as the one that faulted, where a server writes them.
 */
#ifndef GPUSHARE_MPS_FAULT_H
#define GPUSHARE_MPS_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "gpushare/mps.h"

enum gpushare_mps_fault {
	GPUSHARE_MPS_FAULT_NONE = 0,
	GPUSHARE_MPS_FAULT_FATAL,      /* a sticky error: illegal address (700), launch failure (719) ... */
	GPUSHARE_MPS_FAULT_NOT_READY,  /* the server refused the client while in fault (807) */
};

/* What an error output says, case-insensitively: the CUDA runtime's and the
 * driver's names and texts of the sticky errors 700 and 714 to 719, "error
 * 700"-style numbers, and 807 (the server not ready). A fatal fault wins
 * over 807. */
enum gpushare_mps_fault gpushare_mps_fault_text(const char *text, size_t len);

/* The same for the last 16 KiB of a file (a job's .err file); NONE when it
 * cannot be read. */
enum gpushare_mps_fault gpushare_mps_fault_file(const char *path);

/* What the server log (log_dir/server.log, its last 256 KiB, read once)
 * says of fatal faults:
 * - named: the client pids it names as having caused one, from lines that
 *   say "fatal" and "client <pid>", in the order of the log (the first to
 *   fault first). The stand-in server writes such lines; a server that
 *   names no client gives none; R580's "Client {PID: N, ...}" lines are not
 *   taken (see affected).
 * - fatal: whether it records a fatal fault whatever it names ("fatal GPU
 *   error", as R580 writes "Client {PID: N, Context: C} encountered a fatal
 *   GPU error" and "Server is handling a fatal GPU error");
 * - affected: the clients it tore down or set a sticky error on ("Client
 *   {PID: N, ...} ... to be torn down", the list after "have a sticky error
 *   set:"). R580 names in its "encountered" line the client that first saw
 *   the error, which on an H100 was a bystander, not the client that
 *   faulted: these are the fault's clients, never its culprit.
 * At most GPUSHARE_MPS_FAULT_LOG_MAX of each; all empty when there is no
 * log. */
#define GPUSHARE_MPS_FAULT_LOG_MAX 64

struct gpushare_mps_fault_log {
	pid_t named[GPUSHARE_MPS_FAULT_LOG_MAX], affected[GPUSHARE_MPS_FAULT_LOG_MAX];
	size_t n_named, n_affected;
	bool fatal;
};

void gpushare_mps_fault_log_read(const char *log_dir, struct gpushare_mps_fault_log *log);

/* Whether a server of the daemon m says FAULT (get_server_list, then
 * get_server_status of each). Without shut, the first that says so ends
 * the search; with shut, every one that says so is shut down
 * (shutdown_server: the next client starts a new one). Errors count as
 * not; the error is cleared. */
bool gpushare_mps_fault_server(const struct gpushare_mps *m, bool shut);

#endif
