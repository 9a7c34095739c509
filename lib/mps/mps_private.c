/*
 * gpushare's own private MPS daemons: those that bench, sweep and farm start
 * under their run directories (<user dir>/<kind>-XXXXXX/<sub>/pipe, the
 * owner in <run>/owner) and those of `gpushare exec` jobs
 * (<user dir>/exec-<job>/mps/pipe, the owners the ranks named in
 * <job>/ranks/). `info` and the exporter list them with the process that
 * owns each, so a daemon left behind is seen and can be traced to its run.
 * Only looks: pid files and /proc, nothing is probed or started.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/util.h"

static const char *const run_kinds[] = { "bench", "sweep", "farm", "exec" };

static const char *run_kind(const char *name)
{
	for (size_t i = 0; i < sizeof(run_kinds) / sizeof(run_kinds[0]); i++) {
		size_t l = strlen(run_kinds[i]);

		if (!strncmp(name, run_kinds[i], l) && name[l] == '-')
			return run_kinds[i];
	}
	return NULL;
}

/* <run>/owner: "pid start-time"; 0 when unreadable. */
static pid_t read_pid_file(const char *path)
{
	FILE *f = fopen(path, "re");
	int pid = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%d", &pid) != 1 || pid < 0)
		pid = 0;
	fclose(f);
	return (pid_t)pid;
}

/* An exec job's owner: the first rank whose process is alive, else the first. */
static pid_t exec_owner(const char *run)
{
	char ranks[GPUSHARE_PATH_MAX], path[GPUSHARE_PATH_MAX + 32];
	struct dirent *e;
	pid_t first = 0;
	DIR *d;

	if ((size_t)snprintf(ranks, sizeof(ranks), "%s/ranks", run) >= sizeof(ranks) || !(d = opendir(ranks)))
		return 0;
	while ((e = readdir(d))) {
		pid_t pid;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || strlen(e->d_name) > 20)
			continue;
		snprintf(path, sizeof(path), "%s/%.20s", ranks, e->d_name);
		pid = read_pid_file(path);
		if (pid > 0 && gpushare_pid_alive(pid)) {
			first = pid;
			break;
		}
		if (!first)
			first = pid;
	}
	closedir(d);
	return first;
}

static int add(struct gpushare_mps_private **list, size_t *n, size_t *cap, const struct gpushare_mps_private *p)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		struct gpushare_mps_private *l = realloc(*list, c * sizeof(**list));

		if (!l)
			return gpushare_fail(GPUSHARE_E_NOMEM, "private MPS daemon list");
		*list = l;
		*cap = c;
	}
	(*list)[(*n)++] = *p;
	return GPUSHARE_OK;
}

/* Each <run>/<sub>/pipe with a running daemon. */
static int scan_run(const char *kind, const char *run, struct gpushare_mps_private **list, size_t *n, size_t *cap)
{
	struct gpushare_mps_private p;
	char path[GPUSHARE_PATH_MAX + 16];
	struct dirent *e;
	pid_t owner;
	DIR *d = opendir(run);
	int rc = GPUSHARE_OK;

	if (!d)
		return GPUSHARE_OK;
	snprintf(path, sizeof(path), "%s/owner", run);
	owner = !strcmp(kind, "exec") ? exec_owner(run) : read_pid_file(path);
	while (!rc && (e = readdir(d))) {
		char pipe[GPUSHARE_PATH_MAX];
		struct gpushare_mps m;
		pid_t pid = 0;

		if (e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(pipe, sizeof(pipe), "%s/%s/pipe", run, e->d_name) >= sizeof(pipe) ||
		    access(pipe, F_OK) != 0 || gpushare_mps_init(&m, pipe, NULL) != GPUSHARE_OK) {
			gpushare_clear_error();
			continue;
		}
		if (gpushare_mps_state(&m, &pid) != GPUSHARE_MPS_RUNNING || pid <= 0)
			continue;
		memset(&p, 0, sizeof(p));
		snprintf(p.kind, sizeof(p.kind), "%s", kind);
		snprintf(p.run_dir, sizeof(p.run_dir), "%s", run);
		snprintf(p.pipe_dir, sizeof(p.pipe_dir), "%s", pipe);
		p.daemon_pid = pid;
		p.owner_pid = owner;
		p.owner_alive = owner > 0 && gpushare_pid_alive(owner);
		if (p.owner_alive)
			gpushare_pid_cmdline(owner, p.owner_command, sizeof(p.owner_command));
		rc = add(list, n, cap, &p);
	}
	closedir(d);
	return rc;
}

struct private_list {
	struct gpushare_mps_private *list;
	size_t n, cap;
};

static int scan_entry(const char *run, void *arg)
{
	struct private_list *l = arg;

	return scan_run(run_kind(strrchr(run, '/') + 1), run, &l->list, &l->n, &l->cap);
}

int gpushare_mps_private_list(struct gpushare_mps_private **out, size_t *n_out)
{
	static const char *const prefixes[] = { "bench-", "sweep-", "farm-", "exec-", NULL };
	struct private_list l = { NULL, 0, 0 };
	size_t runs;
	int rc;

	*out = NULL;
	*n_out = 0;
	rc = gpushare_user_dir_each(prefixes, NULL, scan_entry, &l, &runs);
	if (rc) {
		free(l.list);
		return rc;
	}
	*out = l.list;
	*n_out = l.n;
	return GPUSHARE_OK;
}
