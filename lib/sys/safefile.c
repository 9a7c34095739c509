/*
 * The one place where gpushare reads an input file whole and where it writes
 * an output file. Reads take only regular files of bounded size, opened
 * without blocking (a FIFO or a link to /dev/zero is refused at once, not
 * read forever). Writes go into directories gpushare may not have created
 * (--out DIR, a report directory), where someone else may have planted a
 * symbolic link: they never follow one, and they refuse a file owned by
 * another user. Every write is staged (gpushare_write_files_staged()): the
 * files of one output are all checked, then all written into temporary
 * files beside their targets, then renamed, so an output of several files
 * is written whole or not at all. A `.NAME.tmp-PID-XXXXXX` file stays only
 * when its writer is killed mid-write, and the next write of NAME removes
 * such leftovers once their writer is gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"

/* Read fd into buf[*n..want) (from offset at + *n when at >= 0, else from
 * where the file stands), retrying when interrupted, until want bytes or
 * the end of the file: 0 when full, 1 at the end. On an error buf is
 * freed, fd closed and the read of path fails. */
static int fill(int fd, char *buf, size_t *n, size_t want, off_t at, const char *path)
{
	while (*n < want) {
		ssize_t r = at >= 0 ? pread(fd, buf + *n, want - *n, at + (off_t)*n) : read(fd, buf + *n, want - *n);
		int e;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno;
			free(buf);
			close(fd);
			return gpushare_fail(GPUSHARE_E_IO, "cannot read '%s': %s", path, strerror(e));
		}
		if (r == 0)
			return 1;
		*n += (size_t)r;
	}
	return 0;
}

int gpushare_read_file(const char *path, size_t max_bytes, char **data, size_t *len)
{
	struct stat st;
	size_t cap, n = 0;
	char *buf;
	int fd, e;

	*data = NULL;
	*len = 0;
	/* O_NONBLOCK: opening a FIFO with no writer must not wait. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return gpushare_fail(errno == ENOENT ? GPUSHARE_E_NOT_FOUND : GPUSHARE_E_IO, "cannot open '%s': %s", path,
				     strerror(errno));
	if (fstat(fd, &st) != 0) {
		e = errno;
		close(fd);
		return gpushare_fail(GPUSHARE_E_IO, "cannot inspect '%s': %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is not a regular file; refusing to read it", path);
	}
	if ((uint64_t)st.st_size > max_bytes) {
		close(fd);
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is %lld bytes, more than the %zu bytes read at most", path,
				     (long long)st.st_size, max_bytes);
	}
	/* The file may grow while read: read at most max_bytes + 1 to tell. */
	cap = (size_t)st.st_size + 1 < max_bytes ? (size_t)st.st_size + 1 : max_bytes + 1;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory reading '%s'", path);
	}
	for (;;) {
		if (n == cap) {
			size_t nc = cap * 2 < max_bytes + 1 ? cap * 2 : max_bytes + 1;
			char *nb;

			if (nc == cap)
				break;
			nb = realloc(buf, nc + 1);
			if (!nb) {
				free(buf);
				close(fd);
				return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory reading '%s'", path);
			}
			buf = nb;
			cap = nc;
		}
		e = fill(fd, buf, &n, cap, -1, path);
		if (e < 0)
			return e;
		if (e > 0)
			break;
	}
	close(fd);
	if (n > max_bytes) {
		free(buf);
		return gpushare_fail(GPUSHARE_E_IO, "'%s' grew past the %zu bytes read at most", path, max_bytes);
	}
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return GPUSHARE_OK;
}

static int line_grow(char **line, size_t *cap, size_t want, size_t max)
{
	size_t nc = *cap ? *cap : 256;
	char *nb;

	while (nc < want)
		nc = nc > (max + 2) / 2 ? max + 2 : nc * 2;
	if (nc < want)
		nc = want;
	nb = realloc(*line, nc);
	if (!nb)
		return -1;
	*line = nb;
	*cap = nc;
	return 0;
}

int gpushare_read_line(FILE *f, const char *name, size_t lineno, size_t max, const volatile sig_atomic_t *stop,
		       char **line, size_t *cap, size_t *len, bool *newline)
{
	size_t n = 0;
	int c, rc = 1;

	if (newline)
		*newline = false;
	*len = 0;
	if ((!*line || *cap < 2) && line_grow(line, cap, 2, max))
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory reading '%s'", name);
	flockfile(f);
	for (;;) {
		errno = 0;
		c = getc_unlocked(f);
		if (c == EOF) {
			int e = errno;

			if (!ferror_unlocked(f)) {
				rc = n ? 1 : 0;
				break;
			}
			if (e == EINTR && !(stop && *stop)) {
				clearerr_unlocked(f);
				continue;
			}
			if (e == EINTR) {
				rc = gpushare_fail(GPUSHARE_E_INTERRUPTED, "reading '%s' was interrupted by a stop", name);
				break;
			}
			rc = gpushare_fail(GPUSHARE_E_IO, "cannot read '%s': %s", name, strerror(e ? e : EIO));
			break;
		}
		if (c == '\n') {
			if (newline)
				*newline = true;
			rc = 1;
			break;
		}
		if (n == max) {
			rc = gpushare_fail(GPUSHARE_E_INVAL, "%s:%zu: line longer than %zu bytes", name, lineno, max);
			break;
		}
		if (n + 2 > *cap && line_grow(line, cap, n + 2, max)) {
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory reading line %zu of '%s'", lineno, name);
			break;
		}
		(*line)[n++] = (char)c;
	}
	funlockfile(f);
	(*line)[n] = '\0';
	*len = rc >= 0 ? n : 0;
	return rc;
}

int gpushare_read_file_tail(const char *path, size_t max_bytes, char **data, size_t *len)
{
	struct stat st;
	off_t from;
	size_t n = 0, want;
	char *buf;
	int fd, e;

	*data = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return gpushare_fail(errno == ENOENT ? GPUSHARE_E_NOT_FOUND : GPUSHARE_E_IO, "cannot open '%s': %s", path,
				     strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is not a regular file; refusing to read it", path);
	}
	from = (uint64_t)st.st_size > max_bytes ? st.st_size - (off_t)max_bytes : 0;
	want = (size_t)(st.st_size - from);
	buf = malloc(want + 1);
	if (!buf) {
		close(fd);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory reading '%s'", path);
	}
	e = fill(fd, buf, &n, want, from, path);
	if (e < 0)
		return e;
	close(fd);
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return GPUSHARE_OK;
}

/* A file we are about to write into or replace must be ours: a regular
 * file owned by this user. */
static int check_ours(const char *path, const struct stat *st)
{
	if (S_ISLNK(st->st_mode))
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is a symbolic link; refusing to write through it", path);
	if (!S_ISREG(st->st_mode))
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is not a regular file; refusing to write it", path);
	if (st->st_uid != geteuid())
		return gpushare_fail(GPUSHARE_E_IO, "'%s' is owned by uid %u, not by this user (uid %u); refusing to write it",
				     path, (unsigned)st->st_uid, (unsigned)geteuid());
	return GPUSHARE_OK;
}

int gpushare_open_append(const char *path, mode_t mode, int *fd)
{
	struct stat st;
	int e, rc;

	*fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, mode);
	if (*fd < 0) {
		e = errno;
		/* O_NOFOLLOW on a link: ELOOP. Name the link, not the errno. */
		if (e == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
			return gpushare_fail(GPUSHARE_E_IO, "'%s' is a symbolic link; refusing to write through it", path);
		return gpushare_fail(GPUSHARE_E_IO, "cannot open '%s': %s", path, strerror(e));
	}
	if (fstat(*fd, &st) != 0) {
		e = errno;
		close(*fd);
		*fd = -1;
		return gpushare_fail(GPUSHARE_E_IO, "cannot inspect '%s': %s", path, strerror(e));
	}
	rc = check_ours(path, &st);
	if (!rc && fcntl(*fd, F_SETFL, O_WRONLY | O_APPEND) != 0)
		rc = gpushare_fail(GPUSHARE_E_IO, "cannot set up '%s': %s", path, strerror(errno));
	if (rc) {
		close(*fd);
		*fd = -1;
	}
	return rc;
}

static int split_path(const char *path, char *dir, size_t dlen, char *base, size_t blen)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!*path || path[strlen(path) - 1] == '/')
		return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': not a file name", path);
	if (!slash) {
		snprintf(dir, dlen, ".");
		n = strlen(path);
		if (n >= blen)
			return gpushare_fail(GPUSHARE_E_IO, "output path '%s' is too long", path);
		memcpy(base, path, n + 1);
		return GPUSHARE_OK;
	}
	n = (size_t)(slash - path);
	if (n == 0)
		n = 1; /* "/name" lives in "/" */
	if (n >= dlen || strlen(slash + 1) >= blen)
		return gpushare_fail(GPUSHARE_E_IO, "output path '%s' is too long", path);
	memcpy(dir, path, n);
	dir[n] = '\0';
	memcpy(base, slash + 1, strlen(slash + 1) + 1);
	return GPUSHARE_OK;
}

/* Remove `.BASE.tmp-PID-*` files of writers that are gone. Best effort: a
 * leftover that cannot be removed only costs disk space. */
static void reap_stale_temps(const char *dir, const char *base)
{
	char prefix[GPUSHARE_PATH_MAX + 16];
	size_t plen;
	struct dirent *de;
	DIR *d;
	int dfd;

	plen = (size_t)snprintf(prefix, sizeof(prefix), ".%s.tmp-", base);
	if (plen >= sizeof(prefix))
		return;
	d = opendir(dir);
	if (!d)
		return;
	dfd = dirfd(d);
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		char *end;
		long pid;

		if (strncmp(de->d_name, prefix, plen) != 0)
			continue;
		errno = 0;
		pid = strtol(de->d_name + plen, &end, 10);
		if (errno || end == de->d_name + plen || *end != '-' || pid <= 0 || pid == (long)getpid())
			continue;
		if (gpushare_pid_alive((pid_t)pid))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
		    st.st_uid == geteuid())
			unlinkat(dfd, de->d_name, 0);
	}
	closedir(d);
}

int gpushare_check_writable(const char *path)
{
	char dir[GPUSHARE_PATH_MAX], base[GPUSHARE_PATH_MAX];
	struct stat st;
	int rc;

	if (!path || !*path)
		return gpushare_fail(GPUSHARE_E_IO, "invalid output path ''");
	if (path[strlen(path) - 1] == '/' || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': it is a directory", path);
	if ((rc = split_path(path, dir, sizeof(dir), base, sizeof(base))))
		return rc;
	if (stat(dir, &st) != 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': directory '%s': %s", path, dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': '%s' is not a directory", path, dir);
	if (access(dir, W_OK | X_OK) != 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': directory '%s': %s", path, dir, strerror(errno));
	return GPUSHARE_OK;
}

int gpushare_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = ENOSPC;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int gpushare_write_file_atomic(const char *path, const char *data, size_t len)
{
	return gpushare_write_file_atomic_mode(path, data, len, 0644);
}

int gpushare_write_file_atomic_mode(const char *path, const char *data, size_t len, mode_t mode)
{
	struct gpushare_staged_file f = { path, data, len, mode };

	return gpushare_write_files_staged(&f, 1);
}

/* The target of a staged write: where it goes, and its temporary file. */
struct staged {
	char dir[GPUSHARE_PATH_MAX], base[GPUSHARE_PATH_MAX], tmp[GPUSHARE_PATH_MAX + 64];
	bool made;                   /* tmp exists */
};

/* Whether path may be replaced: absent, or a regular file of ours. */
static int check_target(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? GPUSHARE_OK
				       : gpushare_fail(GPUSHARE_E_IO, "cannot inspect '%s': %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': it is a directory", path);
	return check_ours(path, &st);
}

/* Write data into a fresh temporary file beside its target (mkstemp:
 * O_CREAT | O_EXCL, so a planted link or file is never opened), in its
 * final mode, synced. */
static int stage_one(struct staged *t, const struct gpushare_staged_file *f)
{
	int fd, e;

	if ((size_t)snprintf(t->tmp, sizeof(t->tmp), "%s/.%s.tmp-%ld-XXXXXX", t->dir, t->base, (long)getpid()) >=
	    sizeof(t->tmp))
		return gpushare_fail(GPUSHARE_E_IO, "output path '%s' is too long", f->path);
	reap_stale_temps(t->dir, t->base);
	fd = mkostemp(t->tmp, O_CLOEXEC);
	if (fd < 0)
		return gpushare_fail(GPUSHARE_E_IO, "cannot create a temporary file in '%s': %s", t->dir, strerror(errno));
	t->made = true;
	/* The mode before the rename: the file is never seen with another. */
	if (fchmod(fd, f->mode) == 0 && gpushare_write_all(fd, f->data, f->len) == 0 && fsync(fd) == 0) {
		if (close(fd) == 0)
			return GPUSHARE_OK;
		fd = -1;
	}
	e = errno;
	if (fd >= 0)
		close(fd);
	return gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s", f->path, strerror(e));
}

int gpushare_write_files_staged(const struct gpushare_staged_file *files, size_t n)
{
	struct staged *t;
	int rc = GPUSHARE_OK;
	size_t i, done = 0;

	if (!n)
		return GPUSHARE_OK;
	t = calloc(n, sizeof(*t));
	if (!t)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	/* Every target checked before any file is written. */
	for (i = 0; !rc && i < n; i++) {
		rc = split_path(files[i].path, t[i].dir, sizeof(t[i].dir), t[i].base, sizeof(t[i].base));
		if (!rc)
			rc = check_target(files[i].path);
		for (size_t j = 0; !rc && j < i; j++) {
			if (!strcmp(files[i].path, files[j].path))
				rc = gpushare_fail(GPUSHARE_E_IO, "'%s' is to be written twice", files[i].path);
		}
	}
	for (i = 0; !rc && i < n; i++)
		rc = stage_one(&t[i], &files[i]);
	/* Checked again just before the renames: a link planted meanwhile is
	 * refused while nothing has been replaced. */
	for (i = 0; !rc && i < n; i++)
		rc = check_target(files[i].path);
	/* rename() replaces a name, never what a link points at. */
	for (i = 0; !rc && i < n; i++, done++) {
		if (rename(t[i].tmp, files[i].path) != 0)
			rc = gpushare_fail(GPUSHARE_E_IO, "cannot write '%s': %s%s", files[i].path, strerror(errno),
					   i ? " (the files before it were replaced)" : "");
		else
			t[i].made = false;
	}
	for (i = 0; i < n; i++) {
		if (t[i].made)
			unlink(t[i].tmp);
	}
	/* Make the renames themselves durable. */
	for (i = 0; i < done; i++) {
		int dfd = open(t[i].dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	free(t);
	return rc;
}
