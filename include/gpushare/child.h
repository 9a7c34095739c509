/*
 * Child processes: the one place in gpushare that forks.
 *
 * A struct gpushare_child describes what to start (a program, or a function
 * to run in a forked copy of this process), which descriptors it gets and how
 * it may be stopped. gpushare_child_start() forks it into a process group of
 * its own (unless asked not to), so that gpushare_child_stop() reaches
 * everything it started: a shell's `cmd &`, a Python program's helpers. The
 * child dies with its parent (PR_SET_PDEATHSIG) and, should exec fail, the
 * parent learns why before start returns. Waiting uses a pidfd where the
 * kernel has one, and a short poll otherwise.
 *
 * Every started child must be finished: gpushare_child_wait() until it has
 * exited, or gpushare_child_stop(); then gpushare_child_release().
 * After the leader has been reaped, gpushare_child_reap_group() kills what
 * is left of its process group and says how many it found.
 */
#ifndef GPUSHARE_CHILD_H
#define GPUSHARE_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Descriptor choices for stdin/stdout/stderr. */
#define GPUSHARE_CHILD_INHERIT (-1)   /* keep ours */
#define GPUSHARE_CHILD_DEVNULL (-2)   /* /dev/null */
#define GPUSHARE_CHILD_PIPE (-3)      /* a pipe; our end in in_fd/out_fd/err_fd */

enum gpushare_child_flags {
	/* Stay in gpushare's process group (a daemonizing program such as
	 * the MPS control program, whose daemon must outlive the group). */
	GPUSHARE_CHILD_SAME_PGROUP = 1u << 0,
	/* Do not die with gpushare (the MPS control program's `-d`). */
	GPUSHARE_CHILD_NO_PDEATHSIG = 1u << 1,
	/* Ignore SIGINT, so that a Ctrl-C reaches only gpushare, which then
	 * stops its children in order and keeps what they measured. */
	GPUSHARE_CHILD_IGNORE_SIGINT = 1u << 2,
	/* The stdout the child would get is gpushare's stderr (workers'
	 * chatter never reaches JSON or CSV on stdout). */
	GPUSHARE_CHILD_STDOUT_TO_STDERR = 1u << 3,
	/* Run the program under a mirror: a child that shares gpushare's
	 * memory and runs its code (lib/sys/child.c says how), does not die
	 * with gpushare, keeps every signal blocked (and has none of
	 * gpushare's handlers), forks (vfork) and executes the program in its
	 * own process group, calls
	 * mirror_start once the program is forked, waits for it, calls
	 * mirror_exit with its wait status and then ends the same way (that
	 * exit status, or that signal). Signals to the group reach the
	 * program; the child's pid is the group's id. For a keeper that must
	 * learn how a job ended even when gpushare was killed
	 * (lib/farm/farm_keeper.c). Not with fn or SAME_PGROUP. */
	GPUSHARE_CHILD_MIRROR = 1u << 4,
	/* With MIRROR: do not wait for the program's exec. Start returns once
	 * the mirror runs, so that a dispatcher does not wait, job after
	 * job, for a fork, a vfork and an exec in turn; a failed exec is known
	 * once the child has been reaped (exec_errno). A program not found in
	 * PATH is still refused by start itself. */
	GPUSHARE_CHILD_LATE_EXEC_ERROR = 1u << 5,
	/* Set by gpushare_child_adopt(): another process of ours forked it
	 * and tells its wait status (a preloaded command, lib/bench). */
	GPUSHARE_CHILD_ADOPTED = 1u << 6,
	/* With MIRROR, LATE_EXEC_ERROR, out_path and err_path: the two files
	 * are made on the program's first byte to each, not before it runs.
	 * Its stdout and stderr are pipes that the mirror copies (splice) into
	 * the files as it writes, until the program has ended (what it left
	 * running and still writes then gets EPIPE); a stream that gets no byte
	 * makes no file. Creating two files per job costs most of a farm's CPU
	 * on ext4 or xfs (the inode allocator, the directory's lock). A file
	 * that cannot be made is open_errno once reaped; the program's further
	 * writes to that stream then fail (EPIPE). */
	GPUSHARE_CHILD_LAZY_FILES = 1u << 7,
};

struct gpushare_child {
	/* ---- what to start (filled by the caller) ---- */
	/* The program and its arguments. `path` is executed as it is when set;
	 * otherwise argv[0] is looked up in PATH. Ignored when `fn` is set. */
	const char *path;
	char *const *argv;
	/* The whole environment of the child (NULL: build one from ours with
	 * `env_set` applied, see gpushare_env_build()). */
	char *const *envp;
	char *const *env_set;
	/* Run fn(arg) in the forked child instead of exec; it must not return
	 * (it ends with _exit()). For a relay that plays a protocol on behalf
	 * of another program. */
	void (*fn)(void *arg);
	void *arg;
	/* stdin, stdout, stderr: a descriptor of ours to give it, or one of
	 * GPUSHARE_CHILD_INHERIT (default when 0 is meant, set explicitly),
	 * _DEVNULL, _PIPE. */
	int in, out, err;
	/* When set, the child itself creates (truncates) this file and gives it
	 * as stdout / stderr (out / err are then ignored): opened after the
	 * fork, with O_NOFOLLOW and mode 0666, so that a dispatcher does not
	 * create two files per job on its own thread. A failure to open is
	 * E_IO from start, or, with LATE_EXEC_ERROR, open_errno once reaped. */
	const char *out_path, *err_path;
	/* Descriptors that stay open in the child (their close-on-exec flag is
	 * cleared there), at most 8. */
	int keep_fds[8];
	size_t n_keep_fds;
	unsigned flags;                /* enum gpushare_child_flags */
	/* GPUSHARE_CHILD_MIRROR: called in the mirror, which shares this
	 * process's memory (lib/sys/child.c says how): they must only read
	 * what does not change while the job runs and write to descriptors,
	 * taking no lock and allocating nothing. */
	void (*mirror_start)(void *arg);
	void (*mirror_exit)(void *arg, int wstatus);
	void *mirror_arg;

	/* ---- filled by gpushare_child_start() ---- */
	pid_t pid;                     /* 0 before start */
	pid_t pgid;                    /* its process group (== pid unless SAME_PGROUP) */
	int pidfd;                     /* readable once it has ended: a pidfd, or an
					* adopted child's status socket; -1 none */
	int in_fd, out_fd, err_fd;     /* our ends of _PIPE descriptors, else -1 */
	int report_fd;                 /* LATE_EXEC_ERROR: where an exec failure comes, else -1 */
	int spawn_state;               /* MIRROR, internal: the mirror runs (1) or could not start (-errno) */

	/* ---- filled as it ends ---- */
	bool exited;                   /* reaped */
	int wstatus;                   /* as from waitpid(), or GPUSHARE_CHILD_STATUS_LOST */
	int signalled;                 /* the last signal stop sent, 0 none */
	size_t stragglers;             /* group members killed after the leader exited */
	int exec_errno;                /* LATE_EXEC_ERROR: exec's errno once reaped, 0 when it ran */
	int open_errno;                /* LATE_EXEC_ERROR: out_path's or err_path's open errno, or 0 */
	const char *open_path;         /* which of the two it was */
};

/* Set defaults: INHERIT for the three streams, no flags, no fds kept. */
void gpushare_child_init(struct gpushare_child *ch);

/* Fork (and exec) the child. GPUSHARE_E_NOT_FOUND when the program cannot
 * be executed (the detail says why: not found, not executable, exec's
 * errno); the child is then already reaped. */
int gpushare_child_start(struct gpushare_child *ch);

/* Track a process that another process of ours forked on our behalf (a
 * fork server): pid leads a process group of its own, and its wait status
 * (an int, as from waitpid()) arrives on status_fd, a socket that ch owns
 * from now on; end of file without it means the status is lost
 * (GPUSHARE_CHILD_STATUS_LOST). ch is initialised here; poll, wait, signal,
 * stop, reap_group and release then work as for a child of ours. */
void gpushare_child_adopt(struct gpushare_child *ch, pid_t pid, int status_fd);

/* Reap the child if it has exited; true once it has been reaped. */
bool gpushare_child_poll(struct gpushare_child *ch);

/* Wait up to timeout_ns (UINT64_MAX: no bound) for the child to exit.
 * GPUSHARE_E_TIMEOUT when it is still running then. */
int gpushare_child_wait(struct gpushare_child *ch, uint64_t timeout_ns);

/* Send sig to the child's process group (to the child alone when it shares
 * ours). Records the signal in ch->signalled. */
void gpushare_child_signal(struct gpushare_child *ch, int sig);

/* Stop the child: SIGTERM to its group, up to term_ns for it to exit, then
 * SIGKILL to the group and up to 5 s more. Returns GPUSHARE_OK once it has
 * been reaped, GPUSHARE_E_TIMEOUT when even SIGKILL did not end it (stuck in
 * the kernel: it stays tracked). Also kills what is left of its group. */
int gpushare_child_stop(struct gpushare_child *ch, uint64_t term_ns);

/* Kill (SIGKILL) every process left in the child's process group after the
 * leader was reaped; returns how many there were (also added to
 * ch->stragglers). A no-op for SAME_PGROUP children. */
size_t gpushare_child_reap_group(struct gpushare_child *ch);

/* The wstatus of a child that something else in this process reaped: its
 * status is lost. Neither an exit nor a signal (exit code 255, not ok). A
 * child start refuses while SIGCHLD is ignored, which would lose every one. */
#define GPUSHARE_CHILD_STATUS_LOST 0xff7f

/* Whether signal sig's action in this process is SIG_IGN (as a parent may
 * leave it across exec: SIGCHLD, or nohup's SIGHUP). */
bool gpushare_signal_ignored(int sig);

/* Close our descriptors of the child (pipes, pidfd). Does not wait. */
void gpushare_child_release(struct gpushare_child *ch);

/* exit status, or 128 + signal for a child killed by a signal */
int gpushare_child_exit_code(int wstatus);

/* true when the child exited with status 0 */
bool gpushare_child_ok(int wstatus);

/* "exited with status 3", "was killed by signal 9 (SIGKILL)" */
void gpushare_child_describe(int wstatus, char *buf, size_t len);

/* Call fn for every process in /proc but zombies, with its process group. */
void gpushare_proc_each(void (*fn)(pid_t pid, pid_t pgrp, void *arg), void *arg);

/* How many processes are in process group pgid (by /proc), excluding
 * zombies. */
size_t gpushare_pgroup_count(pid_t pgid);

/* Kill (SIGKILL) every process in process group pgid and wait, bounded,
 * until they are gone; returns how many there were. For a group whose
 * leader is not a struct gpushare_child of ours (a command started by a
 * relay that was itself killed). */
size_t gpushare_pgroup_kill(pid_t pgid);

#endif
