/*
 * Run directories: private per-run state under the user directory (an MPS
 * daemon's pipe and log directories, an empty pipe directory for plain
 * workers). Each holds an `owner` file naming the process that created it
 * (pid and start time, so a reused pid is not mistaken for it). gpushare
 * removes its run directory when the run ends; if it was killed first, the
 * run's keeper (below) cleans it up at once, and failing that
 * gpushare_rundir_reap() — called at the start of every bench, sweep and farm —
 * stops any MPS daemon left under a dead owner's directory and removes it,
 * so a killed run leaves nothing running for long. It also cleans up after
 * `gpushare exec` jobs whose ranks on this node were all killed
 * (gpushare_exec_reap()).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "loop.h"
#include "sys.h"
#include "rundir.h"
#include "jobdir.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/util.h"

#define OWNER_FILE "owner"

static int keeper_cleanup(void *dir)
{
	gpushare_rundir_cleanup(dir);
	return 0;
}

/* The run's keeper (rundir.h), started on `dir` before it exists. */
static void keeper_start(const char *dir, int *fd, struct gpushare_child *ch)
{
	struct gpushare_keeper k;

	gpushare_keeper_init(&k);
	k.flags = GPUSHARE_KEEPER_LINK | GPUSHARE_KEEPER_OWNER;
	k.cleanup = keeper_cleanup;
	k.arg = (void *)dir;
	if (gpushare_keeper_start(&k) != GPUSHARE_OK)
		gpushare_clear_error();
	*fd = k.fd;
	*ch = k.ch;
}

/* A fresh name <user dir>/<prefix>-XXXXXX (mkdtemp's alphabet), not made. */
static int rundir_name(const char *prefix, char *out, size_t len)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	char user[GPUSHARE_PATH_MAX];
	unsigned char rnd[6];
	int rc = gpushare_user_dir(user, sizeof(user));
	size_t n;

	if (!rc)
		rc = gpushare_private_dir(user);
	if (rc)
		return rc;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return gpushare_fail(GPUSHARE_E_SYS, "getrandom: %s", strerror(errno));
	n = (size_t)snprintf(out, len, "%s/%s-XXXXXX", user, prefix);
	if (n >= len)
		return gpushare_fail(GPUSHARE_E_DIR, "run directory path too long");
	for (size_t i = 0; i < sizeof(rnd); i++)
		out[n - sizeof(rnd) + i] = alphabet[rnd[i] % (sizeof(alphabet) - 1)];
	return GPUSHARE_OK;
}

/* Make the directory `dir` with its owner file. *taken: the name exists. */
static int rundir_make(const char *dir, bool *taken)
{
	char owner[GPUSHARE_PATH_MAX + 16];
	FILE *f;

	*taken = false;
	if (mkdir(dir, 0700) != 0) {
		*taken = errno == EEXIST;
		return gpushare_fail(GPUSHARE_E_DIR, "cannot create the run directory '%s': %s", dir, strerror(errno));
	}
	snprintf(owner, sizeof(owner), "%s/" OWNER_FILE, dir);
	f = fopen(owner, "wxe");
	if (!f || fprintf(f, "%d %llu\n", (int)getpid(), gpushare_pid_start_time(getpid())) < 0 || fclose(f) != 0) {
		int e = errno;

		gpushare_rundir_remove(dir);
		return gpushare_fail(GPUSHARE_E_DIR, "cannot write '%s': %s", owner, strerror(e));
	}
	/* GPUSHARE_TEST_KILL_AT=rundir-made: the test of a kill at the
	 * moment a run directory has just appeared. */
	gpushare_test_kill_point("rundir-made");
	return GPUSHARE_OK;
}

int gpushare_rundir_create(const char *prefix, char *out, size_t len, int *fd, struct gpushare_child *ch)
{
	int rc = GPUSHARE_E_DIR;

	if (fd)
		*fd = -1;
	/* The keeper starts first, on the name the directory will have: a
	 * kill at any moment after the directory appears finds its keeper
	 * there to remove it. A name already taken (another run's) is never
	 * the keeper's to clean: it is told 'D', and a new name is drawn. */
	for (int attempt = 0; attempt < 16; attempt++) {
		bool taken;

		rc = rundir_name(prefix, out, len);
		if (rc)
			break;
		if (fd)
			keeper_start(out, fd, ch);
		rc = rundir_make(out, &taken);
		if (!rc)
			return GPUSHARE_OK;
		if (fd)
			gpushare_rundir_keeper_finish(fd, ch);
		if (!taken)
			break;
		gpushare_clear_error();
	}
	out[0] = '\0';
	return rc;
}

void gpushare_rundir_remove(const char *dir)
{
	if (dir && dir[0])
		gpushare_remove_tree(dir);
}

/* Is the process recorded in <dir>/owner still the one that wrote it? */
static bool owner_alive(const char *dir)
{
	char path[GPUSHARE_PATH_MAX + 16];
	unsigned long long t = 0;
	int pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/" OWNER_FILE, dir);
	f = fopen(path, "re");
	if (!f)
		return true; /* being created, or not ours: leave it */
	if (fscanf(f, "%d %llu", &pid, &t) != 2)
		pid = 0;
	fclose(f);
	if (pid <= 0)
		return true;
	return gpushare_pid_alive(pid) && gpushare_pid_start_time(pid) == t;
}

/* Stop the daemon of every <run>/<sub>/pipe that has one. */
static void stop_daemons(const char *run)
{
	DIR *d = opendir(run);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char pipe[GPUSHARE_PATH_MAX], log[GPUSHARE_PATH_MAX];
		struct gpushare_mps m;

		if (e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(pipe, sizeof(pipe), "%s/%s/pipe", run, e->d_name) >= sizeof(pipe) ||
		    (size_t)snprintf(log, sizeof(log), "%s/%s/log", run, e->d_name) >= sizeof(log))
			continue;
		if (access(pipe, F_OK) != 0 || gpushare_mps_init(&m, pipe, log) != GPUSHARE_OK)
			continue;
		m.timeout_ms = 5000;
		/* The dead owner may have been starting it. */
		gpushare_mps_wait_start(&m);
		if (gpushare_mps_state(&m, NULL) == GPUSHARE_MPS_RUNNING)
			gpushare_mps_stop(&m, true, NULL);
	}
	closedir(d);
}

void gpushare_rundir_cleanup(const char *dir)
{
	if (!dir || !dir[0])
		return;
	stop_daemons(dir);
	gpushare_rundir_remove(dir);
}

/* ---- the run's keeper ---- */

void gpushare_rundir_keeper_finish(int *fd, struct gpushare_child *ch)
{
	struct gpushare_keeper k;

	if (*fd < 0)
		return;
	gpushare_keeper_init(&k);
	k.fd = *fd;
	k.ch = *ch;
	/* It ends at once; reaped here, so that a sweep leaves no zombie per run. */
	gpushare_keeper_finish(&k, 5 * NS_PER_S);
	*fd = -1;
	*ch = k.ch;
}

/* A run directory whose gpushare is gone: its daemons stopped, removed. */
static int reap_run(const char *run, void *arg)
{
	(void)arg;
	if (owner_alive(run))
		return 0;
	stop_daemons(run);
	gpushare_rundir_remove(run);
	return 1;
}

int gpushare_rundir_reap(size_t *reaped)
{
	static const char *const prefixes[] = { "bench-", "sweep-", "farm-", NULL };
	size_t n;
	int rc = gpushare_user_dir_each(prefixes, NULL, reap_run, NULL, &n);

	if (reaped)
		*reaped = 0;
	if (rc)
		return rc;
	/* Jobs of gpushare exec whose ranks here were all killed. */
	{
		size_t jobs = 0;

		if (gpushare_jobdir_reap(NULL, &jobs) == GPUSHARE_OK)
			n += jobs;
		gpushare_clear_error();
	}
	if (reaped)
		*reaped = n;
	return GPUSHARE_OK;
}
