/*
 * The shares of a plan directory for `gpushare check --plan DIR`
 * (gpushare/check.h). Every file `gpushare plan --out DIR` writes begins
 * with the same header, whose "Measured:" line names the strategy and the
 * workers per GPU ("...: mps-split with 4 workers per GPU: ..."); the env
 * target's gpushare.env also holds the MPS limit each client sets. The
 * check's clients follow from them:
 *   - timeslice, and mps without limits: N clients promised 1/N each;
 *   - mps-split: N clients under the limit of gpushare.env, else 100/N
 *     (what Slurm's gres/mps and the device plugin give);
 *   - mps for the device plugin's MPS sharing: 100/replicas limits too;
 *   - sequential: one client, the whole GPU;
 *   - mig: each instance is its own GPU, refused here.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpushare/check.h"
#include "gpushare/gpushare.h"

#define LINE_MAX_LEN 4096

struct plan_read {
	char target[64];
	char strategy[64];
	int workers;
	int pct; /* CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of gpushare.env; 0 none */
};

/* "...: <strategy> with <N> worker(s) per GPU..." of a Measured line. */
static void measured_line(const char *s, struct plan_read *p)
{
	for (const char *w = strstr(s, " with "); w; w = strstr(w + 1, " with ")) {
		const char *b = w;
		char *end;
		long n = strtol(w + 6, &end, 10);
		size_t len;

		if (end == w + 6 || n < 1 || n > 100000 || strncmp(end, " worker", 7) != 0 || !strstr(end, " per GPU"))
			continue;
		while (b > s && b[-1] != ' ')
			b--;
		len = (size_t)(w - b);
		if (len == 0 || len >= sizeof(p->strategy))
			continue;
		memcpy(p->strategy, b, len);
		p->strategy[len] = '\0';
		p->workers = (int)n;
		return;
	}
}

static void read_file(const char *path, struct plan_read *p)
{
	FILE *f = fopen(path, "re");
	char line[LINE_MAX_LEN];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!p->target[0] && sscanf(line, "# gpushare plan --for %63s", p->target) == 1)
			continue;
		if (!p->workers && strncmp(line, "# Measured: ", 12) == 0)
			measured_line(line + 12, p);
		else if (strncmp(line, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=", 34) == 0)
			p->pct = atoi(line + 34);
	}
	fclose(f);
}

int gpushare_check_plan(const char *dir, struct gpushare_check_opts *o, char *what, size_t len)
{
	struct plan_read p = { .workers = 0 };
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];
	int pct = 0;

	if (!d)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "check: cannot open the plan directory '%s': %s", dir,
				     strerror(errno));
	while ((e = readdir(d))) {
		struct stat sb;
		if (e->d_name[0] == '.' || (size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
			continue;
		if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size <= (1 << 20))
			read_file(path, &p);
	}
	closedir(d);
	if (!p.workers)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND,
				     "check: no plan in '%s' (no file with the header of `gpushare plan --out DIR`)", dir);
	if (strcmp(p.strategy, "mig") == 0)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
				     "check: a MIG plan's instances are GPUs of their own: check each with --clients 1 "
				     "(CUDA_VISIBLE_DEVICES=MIG-<uuid>)");
	if (strcmp(p.strategy, "sequential") == 0)
		p.workers = 1;
	if (p.workers > GPUSHARE_CHECK_MAX_CLIENTS)
		return gpushare_fail(GPUSHARE_E_INVAL, "check: the plan runs %d clients per GPU; check runs at most %d",
				     p.workers, GPUSHARE_CHECK_MAX_CLIENTS);
	if (strcmp(p.strategy, "mps-split") == 0 ||
	    (strcmp(p.strategy, "mps") == 0 && strcmp(p.target, "k8s-device-plugin") == 0))
		pct = p.pct > 0 && p.pct <= 100 ? p.pct : 100 / p.workers;
	o->n_clients = p.workers;
	o->limits = pct > 0;
	for (int i = 0; i < p.workers; i++)
		o->shares[i] = pct > 0 ? pct / 100.0 : 1.0 / p.workers;
	if (pct > 0)
		snprintf(what, len, "%s, %d client%s at %d%%", p.strategy, p.workers, p.workers == 1 ? "" : "s", pct);
	else
		snprintf(what, len, "%s, %d client%s promised 1/%d each", p.strategy, p.workers, p.workers == 1 ? "" : "s",
			 p.workers);
	return GPUSHARE_OK;
}
