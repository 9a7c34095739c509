/*
 * Private per-user directories. MPS pipe and log directories hold sockets
 * that any process able to reach them can use to join the daemon, so they are
 * created 0700 and an existing one is trusted only when this user owns it and
 * nobody else can write to it. Its parents matter as much: whoever may
 * rename entries of a parent can swap the directory for one of their own, so
 * every parent must belong to root or this user, and one that others may
 * write must be sticky and belong to root or this user (as /tmp).
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"

int gpushare_user_dir(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	int n;

	if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == geteuid() && strlen(xdg) < 64)
		n = snprintf(buf, len, "%s/gpushare", xdg);
	else
		n = snprintf(buf, len, "/tmp/gpushare-%u", (unsigned)geteuid());
	if (n < 0 || (size_t)n >= len)
		return gpushare_fail(GPUSHARE_E_INVAL, "user directory path too long");
	return GPUSHARE_OK;
}

static bool has_prefix(const char *name, const char *const *prefixes)
{
	for (size_t i = 0; prefixes[i]; i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

int gpushare_user_dir_each(const char *const *prefixes, const char *skip, int (*fn)(const char *path, void *arg),
			   void *arg, size_t *n)
{
	char user[GPUSHARE_PATH_MAX];
	struct dirent *e;
	DIR *d;
	int rc = gpushare_user_dir(user, sizeof(user));

	*n = 0;
	if (rc)
		return rc;
	d = opendir(user);
	if (!d)
		return GPUSHARE_OK; /* nothing was ever run here */
	while (rc >= 0 && (e = readdir(d))) {
		char path[GPUSHARE_PATH_MAX];
		struct stat st;

		if (!has_prefix(e->d_name, prefixes) || (skip && !strcmp(e->d_name, skip)))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", user, e->d_name) >= sizeof(path))
			continue;
		if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		rc = fn(path, arg);
		if (rc > 0)
			(*n)++;
	}
	closedir(d);
	return rc < 0 ? rc : GPUSHARE_OK;
}

int gpushare_check_parents(const char *path)
{
	char buf[GPUSHARE_PATH_MAX];
	char *slash;

	if (strlen(path) >= sizeof(buf))
		return gpushare_fail(GPUSHARE_E_INVAL, "path '%s' is too long", path);
	strcpy(buf, path);
	/* Walk each proper prefix: "/a", "/a/b", ... excluding path itself. */
	for (slash = strchr(buf + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		struct stat st;

		*slash = '\0';
		if (stat(buf, &st) == 0) {
			if (!S_ISDIR(st.st_mode)) {
				int err = gpushare_fail(GPUSHARE_E_DIR, "'%s' is not a directory", buf);
				return err;
			}
			if (access(buf, X_OK) != 0)
				return gpushare_fail(GPUSHARE_E_DIR, "parent directory '%s' is not searchable: %s", buf, strerror(errno));
		}
		*slash = '/';
	}
	return GPUSHARE_OK;
}

static int mkdir_parents(char *path)
{
	char *slash;

	for (slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(path, 0700) != 0 && errno != EEXIST) {
			int e = errno;

			*slash = '/';
			return gpushare_fail(GPUSHARE_E_DIR, "cannot create directory '%.*s': %s",
					     (int)(slash - path), path, strerror(e));
		}
		*slash = '/';
	}
	return GPUSHARE_OK;
}

/* Whether another user could replace path's entry in its parents. */
static int parents_safe(const char *path)
{
	char buf[GPUSHARE_PATH_MAX];
	char *slash;
	uid_t me = geteuid();

	if (strlen(path) >= sizeof(buf))
		return gpushare_fail(GPUSHARE_E_DIR, "path '%s' is too long", path);
	strcpy(buf, path);
	/* Every proper prefix, "/" included: "/", "/a", "/a/b". */
	for (slash = strchr(buf, '/'); slash; slash = strchr(slash + 1, '/')) {
		struct stat st;
		char keep = slash[1];

		slash[1] = '\0';
		if (stat(buf, &st) != 0) {
			slash[1] = keep;
			continue;
		}
		if (st.st_uid != 0 && st.st_uid != me)
			return gpushare_fail(GPUSHARE_E_DIR,
					     "parent directory '%s' of '%s' is owned by uid %u, neither root nor this user (uid %u)",
					     buf, path, (unsigned)st.st_uid, (unsigned)me);
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
			return gpushare_fail(GPUSHARE_E_DIR,
					     "parent directory '%s' of '%s' is writable by group or others and not sticky (mode %04o)",
					     buf, path, (unsigned)(st.st_mode & 07777));
		slash[1] = keep;
	}
	return GPUSHARE_OK;
}

int gpushare_private_dir(const char *path)
{
	char buf[GPUSHARE_PATH_MAX];
	struct stat st;
	size_t n;
	int rc;

	if (!path || path[0] != '/')
		return gpushare_fail(GPUSHARE_E_DIR, "directory '%s' must be an absolute path", path ? path : "");
	n = strlen(path);
	if (n >= sizeof(buf))
		return gpushare_fail(GPUSHARE_E_DIR, "directory path '%s' is too long", path);
	memcpy(buf, path, n + 1);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';

	rc = parents_safe(buf);
	if (rc)
		return rc;
	if (lstat(buf, &st) != 0) {
		if (errno != ENOENT)
			return gpushare_fail(GPUSHARE_E_DIR, "cannot inspect '%s': %s", buf, strerror(errno));
		rc = mkdir_parents(buf);
		if (rc)
			return rc;
		if (mkdir(buf, 0700) != 0 && errno != EEXIST)
			return gpushare_fail(GPUSHARE_E_DIR, "cannot create directory '%s': %s", buf, strerror(errno));
		if (lstat(buf, &st) != 0)
			return gpushare_fail(GPUSHARE_E_DIR, "cannot inspect '%s': %s", buf, strerror(errno));
	}
	if (S_ISLNK(st.st_mode))
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' is a symbolic link; refusing to use it", buf);
	if (!S_ISDIR(st.st_mode))
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' exists and is not a directory", buf);
	if (st.st_uid != geteuid())
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' is owned by uid %u, not by this user (uid %u)",
				     buf, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' is writable by group or others (mode %03o); use chmod go-w",
				     buf, (unsigned)(st.st_mode & 0777));
	/* Mode bits first: access() always says yes to root. */
	if ((st.st_mode & S_IRWXU) != S_IRWXU)
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' is not writable and searchable by its owner (mode %03o)",
				     buf, (unsigned)(st.st_mode & 0777));
	if (access(buf, R_OK | W_OK | X_OK) != 0)
		return gpushare_fail(GPUSHARE_E_DIR, "'%s' is not writable: %s", buf, strerror(errno));
	return gpushare_check_parents(buf);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void gpushare_remove_tree(const char *path)
{
	if (path && path[0])
		nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
