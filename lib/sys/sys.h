/*
 * Internal to libgpushare: the per-user state directory, private and run
 * directories (dirs.c), and small process helpers: environment building and
 * PATH lookup (env.c), /proc readers and gpushare_run() for short commands
 * (proc.c). The child processes themselves are child.c
 * (include/gpushare/child.h).
 */
#ifndef GPUSHARE_SYS_H
#define GPUSHARE_SYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpushare/util.h"

/* ---- directories ---- */

/* The per-user base directory for gpushare's private state:
 * $XDG_RUNTIME_DIR/gpushare when XDG_RUNTIME_DIR is an absolute, existing
 * directory owned by this user, else /tmp/gpushare-<uid>. Not created. */
int gpushare_user_dir(char *buf, size_t len);

/* Make sure `path` is a directory this user may keep private state in:
 * created (with missing parents) mode 0700 when absent; when present it must
 * be a real directory (not a symlink), owned by the effective user, and not
 * writable by group or others. Every parent must be searchable. Returns
 * GPUSHARE_E_DIR with a detail naming the offending path otherwise. */
int gpushare_private_dir(const char *path);

/* Call fn(path, arg) for each entry of the per-user directory
 * (gpushare_user_dir()) whose name starts with one of prefixes (a NULL-ended
 * list) and is not skip (may be NULL), and that is a directory, not a link,
 * owned by this user. fn returns > 0 for an entry to count in *n, 0 for
 * one not to, < 0 for an error that ends the walk and is returned. A user
 * directory that is not there: GPUSHARE_OK and 0. */
int gpushare_user_dir_each(const char *const *prefixes, const char *skip, int (*fn)(const char *path, void *arg),
			   void *arg, size_t *n);

/* Check that every parent of `path` is searchable by this process. */
int gpushare_check_parents(const char *path);

/* Remove path and everything under it (links are removed, never
 * followed). */
void gpushare_remove_tree(const char *path);

/* ---- child processes ---- */

struct gpushare_child;

/* Start fn(arg) (which ends with _exit()) in a child process that may
 * outlive this one (no parent-death signal), its standard streams on
 * /dev/null: a keeper or a stopper that finishes what this process began.
 * ch is initialised here; as gpushare_child_start(). */
int gpushare_child_start_detached(struct gpushare_child *ch, void (*fn)(void *arg), void *arg);

struct gpushare_run_result {
	int status;        /* exit code, or 128+signal when killed by a signal */
	bool timed_out;    /* the child was killed because the timeout ran out */
	char *out;         /* standard output, NUL-terminated (caller frees) */
	size_t out_len;
	char *err;         /* standard error, NUL-terminated (caller frees) */
	size_t err_len;
};

/* Run argv[0] (searched in PATH) with its standard input fed `input` (may be
 * NULL), capturing standard output and error (each at most 1 MiB; more is
 * discarded). `env` lists "NAME=VALUE" entries to set and "NAME" entries to
 * unset on top of this process's environment, NULL-terminated; may be NULL.
 * The child is killed (SIGKILL) if it is still running after timeout_ms.
 * Returns GPUSHARE_E_NOT_FOUND when the program cannot be executed. The
 * child is always reaped. */
int gpushare_run(char *const argv[], char *const env[], const char *input,
		 int timeout_ms, struct gpushare_run_result *res);

void gpushare_run_result_release(struct gpushare_run_result *res);

/* ---- a child's environment and program (env.c) ---- */

/* Build an environment from this process's, with `env` applied as in
 * gpushare_run(). The result and its strings are malloc'ed; free with
 * gpushare_env_free(). */
char **gpushare_env_build(char *const env[]);
void gpushare_env_free(char **envp);

/* A gpushare_getenv_fn (getenv_fn.h) over this process's environment (ctx
 * unused). */
const char *gpushare_getenv_process(void *ctx, const char *name);

/* For the tests of a kill at an exact moment: SIGKILL to this process
 * when GPUSHARE_TEST_KILL_AT names `point`. */
void gpushare_test_kill_point(const char *point);

/* Find `prog` in PATH (or take it as a path if it contains '/') and write
 * the resolved path to buf. GPUSHARE_E_NOT_FOUND if it is not executable. */
int gpushare_which(const char *prog, char *buf, size_t len);

/* ---- descriptors and /proc (proc.c) ---- */

/* Room for `need` open descriptors: the soft RLIMIT_NOFILE is raised to
 * need when it is lower (never above the hard limit; raised, not set to the
 * hard limit, so that children see a modest one). GPUSHARE_E_INVAL, saying
 * what needs them (`what`, "48 slots on 1 GPU") and the limits, when the
 * hard limit is below need. */
int gpushare_reserve_fds(size_t need, const char *what);

/* Whether process `pid` exists (kill(pid, 0) says yes or EPERM). */
bool gpushare_pid_alive(pid_t pid);

/* Start time of process pid in clock ticks since boot (/proc/<pid>/stat),
 * 0 when unreadable: with the pid, it names a process even after pid reuse. */
unsigned long long gpushare_pid_start_time(pid_t pid);

/* Read /proc/<pid>/comm (without newline) into buf; "" when unreadable. */
void gpushare_pid_comm(pid_t pid, char *buf, size_t len);

/* Read /proc/<pid>/cmdline with arguments joined by spaces; "" when unreadable. */
void gpushare_pid_cmdline(pid_t pid, char *buf, size_t len);

/* Real user id of process pid, or -1 when unreadable. */
long gpushare_pid_uid(pid_t pid);

/* The name of the real user of process pid (the uid's number when the
 * password database has no name for it); "" when unreadable. */
void gpushare_pid_user(pid_t pid, char *buf, size_t len);

#endif
