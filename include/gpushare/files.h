/*
 * Files gpushare reads and writes, safely: bounded reads of regular files
 * only, writes that never follow a symbolic link into someone else's file,
 * atomic replacement and advisory locks a dead holder does not keep. The
 * UTF-8 repair of text read from files is in gpushare/utf8.h (included).
 */
#ifndef GPUSHARE_FILES_H
#define GPUSHARE_FILES_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "gpushare/utf8.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- reading ---- */

/* Read the whole of `path` into a malloc'ed, NUL-terminated buffer (*len
 * excludes the NUL). Only a regular file is read: a FIFO, a device (a link
 * to /dev/zero), a socket or a directory is refused without blocking, and
 * so is a file of more than max_bytes. GPUSHARE_E_NOT_FOUND when absent,
 * GPUSHARE_E_IO otherwise, with a detail naming the path. */
int gpushare_read_file(const char *path, size_t max_bytes, char **data, size_t *len);

/* The last max_bytes (at most) of the regular file `path`, NUL-terminated:
 * for logs that may have grown large. Same refusals as gpushare_read_file(). */
int gpushare_read_file_tail(const char *path, size_t max_bytes, char **data, size_t *len);

/* One line of a stream, bounded while it is read: at most max bytes
 * before the newline are ever held, and a longer line is refused as soon
 * as its (max + 1)th byte arrives (GPUSHARE_E_INVAL, "line N longer than
 * max bytes"), never read whole first. *line (grown as needed, *cap its
 * size; start with NULL and 0, free() it at the end) receives the line
 * without its newline, NUL-terminated; *len its length; *newline (may be
 * NULL) whether it ended with one (false only for a last line without it).
 * Returns 1 for a line, 0 at the end of the stream, and an error code
 * otherwise: a failed read is never taken for the end (GPUSHARE_E_IO with
 * the system's reason, GPUSHARE_E_NOMEM). A read interrupted by a signal
 * is retried, unless *stop (may be NULL) is non-zero then:
 * GPUSHARE_E_INTERRUPTED. `name` and `lineno` are used in messages. */
int gpushare_read_line(FILE *f, const char *name, size_t lineno, size_t max, const volatile sig_atomic_t *stop,
		       char **line, size_t *cap, size_t *len, bool *newline);

/* ---- writing ---- */

/* Open `path` for appending (O_APPEND), creating it with `mode` when absent.
 * A symbolic link is never followed, and the file must be a regular file
 * owned by this user: GPUSHARE_E_IO otherwise. The descriptor is close-on-exec. */
int gpushare_open_append(const char *path, mode_t mode, int *fd);

/* Write all len bytes of buf to fd, through EINTR and short writes: 0, or
 * -1 with errno set (ENOSPC when a write took no byte, so that a full disk
 * is said as such and never as a "short write"). */
int gpushare_write_all(int fd, const void *buf, size_t len);

/* Check that a file can be created at path (its directory exists and is
 * writable), so a long run does not end in a failed write. */
int gpushare_check_writable(const char *path);

/* Replace `path` with `data` atomically: written to a fresh temporary file
 * `.NAME.tmp-PID-XXXXXX` beside it (O_EXCL, never through a link), synced,
 * renamed over path. An existing path that is a symbolic link, not a regular
 * file or owned by another user is refused (GPUSHARE_E_IO). Temporary files
 * of the same name left by a writer that is gone (killed mid-write) are
 * removed first. Mode 0644. */
int gpushare_write_file_atomic(const char *path, const char *data, size_t len);
/* The same with the file's mode (a script: 0755), set before the rename. */
int gpushare_write_file_atomic_mode(const char *path, const char *data, size_t len, mode_t mode);

/* One file of a staged write. */
struct gpushare_staged_file {
	const char *path;
	const char *data;
	size_t len;
	mode_t mode;                 /* 0644, a script 0755 */
};

/* Write n files all or nothing: every target is checked first (as
 * gpushare_write_file_atomic() does, and no path twice), then every file is
 * written, synced and checked in its temporary file beside its target, and
 * only when all are, each is renamed over its target. On any refusal or
 * failure before the renames no target was touched and no temporary file is
 * left. gpushare_write_file_atomic() is this writer with one file. */
int gpushare_write_files_staged(const struct gpushare_staged_file *files, size_t n);

/* ---- locks ---- */

/* Take the exclusive lock of `path`: a lock file created 0600 when absent
 * (never through a symbolic link; it must be a regular file owned by this
 * user), locked with flock(), so the kernel drops the lock when its holder
 * dies however it ends. Waits at most wait_ns (0: one try). The holder's pid
 * is written into the file. On success *fd holds the lock until
 * gpushare_lock_release(); close-on-exec, so programs started meanwhile do
 * not inherit it. GPUSHARE_E_BUSY when another process holds it (the detail
 * names its pid), GPUSHARE_E_IO when the file cannot be used. *holder (may
 * be NULL) receives the holder's pid on GPUSHARE_E_BUSY, 0 if unknown. */
int gpushare_lock_acquire(const char *path, uint64_t wait_ns, int *fd, pid_t *holder);

/* Release a lock taken by gpushare_lock_acquire() (fd < 0: nothing). The
 * file stays: removing it would let two later takers lock different files. */
void gpushare_lock_release(int fd);

#ifdef __cplusplus
}
#endif
#endif
