/*
 * The job directory of `gpushare exec`: names, the job's lock, rank files,
 * the daemon under it, removal and reaping (jobdir.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "hash.h"
#include "sys.h"
#include "gpushare/child.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/util.h"
#include "jobdir.h"

#define POLL_NS (50 * NS_PER_MS)
/* A job directory with no rank file yet is being created: leave it. */
#define YOUNG_DIR_S 10

/* ---- names ---- */

static void sanitize(char *s)
{
	for (; *s; s++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '-'))
			*s = '_';
	}
}

int gpushare_jobdir_name(const char *job_key, const char *node, char *out, size_t len)
{
	char name[256], key[128], host[96];
	/* At most 48 characters after "exec-", fewer when out is shorter: a
	 * longer name keeps its start and ends in a hash of the whole. */
	size_t max = len > 6 ? len - 6 : 0;

	if (!job_key || !*job_key || !node || !*node)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty job key or node name");
	snprintf(key, sizeof(key), "%s", job_key);
	snprintf(host, sizeof(host), "%s", node);
	sanitize(key);
	sanitize(host);
	snprintf(name, sizeof(name), "%s@%s", key, host);
	if (max > 48)
		max = 48;
	if (strlen(name) > max) {
		uint64_t h = gpushare_fnv1a_str(name);

		if (max < 17 + 4)
			return gpushare_fail(GPUSHARE_E_INVAL, "no room for a job directory name (%zu characters)", max);
		name[max - 17] = '\0';
		snprintf(name + max - 17, sizeof(name) - (max - 17), "-%016llx", (unsigned long long)h);
	}
	if ((size_t)snprintf(out, len, "exec-%s", name) >= len)
		return gpushare_fail(GPUSHARE_E_INVAL, "job directory name too long");
	return GPUSHARE_OK;
}

void gpushare_jobdir_node_name(char *out, size_t len)
{
	const char *s = getenv("SLURMD_NODENAME");
	char host[256];

	if (s && *s) {
		snprintf(out, len, "%s", s);
	} else if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		host[strcspn(host, ".")] = '\0';
		/* A name longer than out is cut; it only names a directory. */
		if (snprintf(out, len, "%s", host[0] ? host : "localhost") >= (int)len)
			out[len - 1] = '\0';
	} else {
		snprintf(out, len, "localhost");
	}
	sanitize(out);
}

int gpushare_jobdir_path(char *out, size_t len, const char *dir, const char *name)
{
	if ((size_t)snprintf(out, len, "%s/%s", dir, name) >= len)
		return gpushare_fail(GPUSHARE_E_DIR, "path '%s/%s' is too long", dir, name);
	return GPUSHARE_OK;
}


/* ---- the job's lock ---- */

/* The lock of the job directory `dir` is the file `dir`.lock beside it, so
 * that removing the directory never races with a rank creating the lock
 * file inside it. Whoever removes the directory unlinks the lock file while
 * holding it; a rank that was waiting then holds a lock on a file no longer
 * at that path, notices, and starts over. */
static int lock_path(const char *dir, char *out, size_t len)
{
	if ((size_t)snprintf(out, len, "%s.lock", dir) >= len)
		return gpushare_fail(GPUSHARE_E_DIR, "path '%s.lock' is too long", dir);
	return GPUSHARE_OK;
}

/* Take the job's lock, creating the directory when `create`.
 * GPUSHARE_E_NOT_FOUND when !create and the directory is gone. */
int gpushare_jobdir_lock(const char *dir, bool create, uint64_t wait_ns, int *fd)
{
	char path[GPUSHARE_PATH_MAX];
	uint64_t deadline = gpushare_now_ns() + wait_ns;
	int rc = lock_path(dir, path, sizeof(path));

	*fd = -1;
	if (!rc && !create && access(dir, F_OK) != 0)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "'%s' is gone", dir);
	while (!rc) {
		struct stat a, b;
		uint64_t now = gpushare_now_ns();
		pid_t holder = 0;

		rc = gpushare_lock_acquire(path, deadline > now ? deadline - now : 0, fd, &holder);
		if (rc == GPUSHARE_E_BUSY)
			return gpushare_fail(GPUSHARE_E_TIMEOUT, "the job directory '%s' stays locked by process %ld",
					     dir, (long)holder);
		if (rc)
			return rc;
		if (!(stat(path, &a) == 0 && fstat(*fd, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)) {
			gpushare_lock_release(*fd); /* removed while we waited */
			*fd = -1;
			continue;
		}
		if (create) {
			rc = gpushare_private_dir(dir);
			if (!rc)
				return GPUSHARE_OK;
		} else if (access(dir, F_OK) == 0) {
			return GPUSHARE_OK;
		} else {
			rc = gpushare_fail(GPUSHARE_E_NOT_FOUND, "'%s' is gone", dir);
		}
		/* We made the lock file of a directory that is not there. */
		unlink(path);
		gpushare_lock_release(*fd);
		*fd = -1;
	}
	return rc;
}

/* Remove the job directory and its lock file, then release the lock. */
void gpushare_jobdir_remove_locked(const char *dir, int lock_fd)
{
	char path[GPUSHARE_PATH_MAX];

	gpushare_remove_tree(dir);
	if (!lock_path(dir, path, sizeof(path)))
		unlink(path);
	gpushare_clear_error();
	gpushare_lock_release(lock_fd);
}


/* ---- rank files ---- */


enum gpushare_rank_state gpushare_jobdir_rank_state(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	enum gpushare_rank_state s = GPUSHARE_RANK_DEAD;

	if (fd < 0)
		return errno == ENOENT ? GPUSHARE_RANK_ABSENT : GPUSHARE_RANK_DEAD;
	if (flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK)
		s = GPUSHARE_RANK_ALIVE;
	close(fd);
	return s;
}

/* Count the rank files in <dir>/ranks and those alive, leaving out the
 * one named `own` (our own, which we hold). *alive_pid: one live rank. */
void gpushare_jobdir_scan_ranks(const char *dir, const char *own, size_t *arrived, size_t *alive, pid_t *alive_pid)
{
	char ranks[GPUSHARE_PATH_MAX], path[GPUSHARE_PATH_MAX + 32];
	struct dirent *e;
	DIR *d;

	*arrived = *alive = 0;
	if (alive_pid)
		*alive_pid = 0;
	if (gpushare_jobdir_path(ranks, sizeof(ranks), dir, "ranks") || !(d = opendir(ranks))) {
		gpushare_clear_error();
		return;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		(*arrived)++;
		if (own && !strcmp(e->d_name, own))
			continue;
		if (strlen(e->d_name) > 20 || (size_t)snprintf(path, sizeof(path), "%s/%.20s", ranks, e->d_name) >= sizeof(path))
			continue;
		if (gpushare_jobdir_rank_state(path) == GPUSHARE_RANK_ALIVE) {
			(*alive)++;
			if (alive_pid && !*alive_pid) {
				FILE *f = fopen(path, "re");
				int pid = 0;

				if (f) {
					if (fscanf(f, "%d", &pid) != 1)
						pid = 0;
					fclose(f);
				}
				*alive_pid = pid;
			}
		}
	}
	closedir(d);
}

/* The process group of the program of every rank that died (its file no
 * longer locked) is killed: a rank killed by SIGKILL could not stop it, and
 * only the group's leader dies with it. A group id is taken as that
 * program's only while its leader is gone or is still the recorded process
 * (pid and start time); a group id is not reused while the group has
 * members. */
void gpushare_jobdir_kill_orphans(const char *dir)
{
	char ranks[GPUSHARE_PATH_MAX], path[GPUSHARE_PATH_MAX + 32];
	struct dirent *e;
	DIR *d;

	if (gpushare_jobdir_path(ranks, sizeof(ranks), dir, "ranks") || !(d = opendir(ranks))) {
		gpushare_clear_error();
		return;
	}
	while ((e = readdir(d))) {
		unsigned long long start = 0, app_start = 0;
		int pid = 0, pgid = 0;
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || strlen(e->d_name) > 20)
			continue;
		snprintf(path, sizeof(path), "%s/%.20s", ranks, e->d_name);
		if (gpushare_jobdir_rank_state(path) != GPUSHARE_RANK_DEAD || !(f = fopen(path, "re")))
			continue;
		if (fscanf(f, "%d %llu %d %llu", &pid, &start, &pgid, &app_start) != 4)
			pgid = 0;
		fclose(f);
		if (pgid <= 1 || (gpushare_pid_alive(pgid) && gpushare_pid_start_time(pgid) != app_start))
			continue;
		gpushare_pgroup_kill(pgid);
	}
	closedir(d);
}

/* Stop the daemon under dir (if one runs there). */
int gpushare_jobdir_stop_daemon(const char *dir, bool *stopped)
{
	char pipe[GPUSHARE_PATH_MAX], log[GPUSHARE_PATH_MAX];
	struct gpushare_mps m;
	int rc;

	if (stopped)
		*stopped = false;
	if (gpushare_jobdir_path(pipe, sizeof(pipe), dir, "mps/pipe") || gpushare_jobdir_path(log, sizeof(log), dir, "mps/log"))
		return gpushare_fail(GPUSHARE_E_DIR, "path too long");
	if (access(pipe, F_OK) != 0)
		return GPUSHARE_OK;
	rc = gpushare_mps_init(&m, pipe, log);
	if (rc)
		return rc;
	if (gpushare_mps_state(&m, NULL) != GPUSHARE_MPS_RUNNING)
		return GPUSHARE_OK;
	rc = gpushare_mps_stop(&m, true, NULL);
	if (!rc && stopped)
		*stopped = true;
	return rc;
}

/* Stop the daemon and remove the directory; the caller holds its lock
 * (released here). */
int gpushare_jobdir_remove(const char *dir, int lock_fd, bool *stopped)
{
	int rc;

	gpushare_jobdir_kill_orphans(dir);
	rc = gpushare_jobdir_stop_daemon(dir, stopped);
	/* A daemon that would not stop keeps its directory: the next reap
	 * tries again. */
	if (!rc)
		gpushare_jobdir_remove_locked(dir, lock_fd);
	else
		gpushare_lock_release(lock_fd);
	return rc;
}

/* ---- reaping dead jobs ---- */

static bool reap_one(const char *dir)
{
	size_t arrived, alive;
	struct stat st;
	int fd;

	if (gpushare_jobdir_lock(dir, false, 0, &fd)) {
		gpushare_clear_error();
		return false;
	}
	gpushare_jobdir_scan_ranks(dir, NULL, &arrived, &alive, NULL);
	if (alive || (arrived == 0 && (stat(dir, &st) != 0 || time(NULL) - st.st_mtime < YOUNG_DIR_S))) {
		gpushare_clear_error();
		gpushare_lock_release(fd);
		return false;
	}
	if (gpushare_jobdir_remove(dir, fd, NULL)) {
		gpushare_clear_error();
		return false;
	}
	return true;
}

static int reap_entry(const char *dir, void *arg)
{
	(void)arg;
	return reap_one(dir);
}

int gpushare_jobdir_reap(const char *skip, size_t *reaped)
{
	static const char *const prefixes[] = { "exec-", NULL };
	size_t n;
	int rc = gpushare_user_dir_each(prefixes, skip, reap_entry, NULL, &n);

	if (reaped)
		*reaped = n;
	return rc;
}
