/*
 * Files gpushare reads and writes, safely: bounded reads of regular files
 * only, writes that never follow a symbolic link into someone else's file,
 * atomic replacement, advisory locks a dead holder does not keep, and text
 * made valid UTF-8 before it reaches JSON, HTML, plots or Prometheus.
 */
#ifndef GPUSHARE_FILES_H
#define GPUSHARE_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

/* ---- writing ---- */

/* Open `path` for appending (O_APPEND), creating it with `mode` when absent.
 * A symbolic link is never followed, and the file must be a regular file
 * owned by this user: GPUSHARE_E_IO otherwise. The descriptor is close-on-exec. */
int gpushare_open_append(const char *path, mode_t mode, int *fd);

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

/* ---- UTF-8 ---- */

/* Whether s (NUL-terminated) is valid UTF-8 (no overlong forms, surrogates
 * or code points above U+10FFFF). */
bool gpushare_utf8_valid(const char *s);

/* Copy src into dst (size bytes, size >= 1, always NUL-terminated), each
 * invalid byte sequence replaced by U+FFFD; when it does not fit, cut between
 * characters, never inside one. Returns the bytes written (without the NUL). */
size_t gpushare_utf8_copy(char *dst, size_t size, const char *src);

/* A malloc'ed copy of src with invalid sequences replaced by U+FFFD; NULL
 * when out of memory. */
char *gpushare_utf8_dup(const char *src);

/* Take a malloc'ed string (NULL passes through) and return it valid UTF-8:
 * itself when it is, else a repaired copy (and the original freed); NULL
 * when out of memory. For printed JSON documents: cJSON copies bytes of
 * strings as they are, and a repaired document is still valid JSON. */
char *gpushare_utf8_fix(char *s);

/* The length of the longest prefix of s[0..len) that does not end inside a
 * multi-byte character: where a label may be cut. */
size_t gpushare_utf8_cut(const char *s, size_t len);

#ifdef __cplusplus
}
#endif
#endif
