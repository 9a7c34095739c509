/*
 * The environment and the PATH of a child to be: an environment built from
 * this process's with a strategy's changes applied, and a program looked
 * up in PATH; the reader of this process's environment that the GPU
 * selection and the launcher detection are given. What lib/sys/child.c starts a child with, and what
 * gpushare_run() (proc.c) starts it through.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys.h"
#include "gpushare/gpushare.h"

extern char **environ;

static bool env_name_eq(const char *entry, const char *name, size_t name_len)
{
	return strncmp(entry, name, name_len) == 0 && (entry[name_len] == '=' || entry[name_len] == '\0');
}

const char *gpushare_getenv_process(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

void gpushare_test_kill_point(const char *point)
{
	const char *at = getenv("GPUSHARE_TEST_KILL_AT");

	if (at && !strcmp(at, point))
		raise(SIGKILL);
}

char **gpushare_env_build(char *const env[])
{
	size_t n = 0, extra = 0, i, j, k = 0;
	char **out;

	while (environ && environ[n])
		n++;
	while (env && env[extra])
		extra++;
	out = calloc(n + extra + 1, sizeof(*out));
	if (!out)
		return NULL;
	for (i = 0; i < n; i++) {
		bool overridden = false;

		for (j = 0; j < extra; j++) {
			size_t nl = strcspn(env[j], "=");

			if (env_name_eq(environ[i], env[j], nl)) {
				overridden = true;
				break;
			}
		}
		if (!overridden && !(out[k++] = strdup(environ[i])))
			goto oom;
	}
	for (j = 0; j < extra; j++) {
		if (!strchr(env[j], '='))
			continue; /* a bare name unsets */
		if (!(out[k++] = strdup(env[j])))
			goto oom;
	}
	out[k] = NULL;
	return out;
oom:
	gpushare_env_free(out);
	return NULL;
}

void gpushare_env_free(char **envp)
{
	if (!envp)
		return;
	for (size_t i = 0; envp[i]; i++)
		free(envp[i]);
	free(envp);
}

int gpushare_which(const char *prog, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	const char *p;

	if (!prog || !*prog)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "empty program name");
	if (strchr(prog, '/')) {
		struct stat st;

		if (access(prog, X_OK) != 0)
			return gpushare_fail(GPUSHARE_E_NOT_FOUND, "cannot execute '%s': %s", prog, strerror(errno));
		/* A directory passes access(X_OK) (it can be searched) but can
		 * never be executed: refuse it here, as the PATH search does. */
		if (stat(prog, &st) != 0 || !S_ISREG(st.st_mode))
			return gpushare_fail(GPUSHARE_E_NOT_FOUND, "'%s' is not a regular file", prog);
		if ((size_t)snprintf(buf, len, "%s", prog) >= len)
			return gpushare_fail(GPUSHARE_E_INVAL, "path '%s' too long", prog);
		return GPUSHARE_OK;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p;) {
		size_t dl = strcspn(p, ":");
		struct stat st;
		int n = snprintf(buf, len, "%.*s/%s", (int)(dl ? dl : 1), dl ? p : ".", prog);

		if (n > 0 && (size_t)n < len && stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
			return GPUSHARE_OK;
		p += dl;
		if (*p == ':')
			p++;
	}
	return gpushare_fail(GPUSHARE_E_NOT_FOUND, "'%s' not found in PATH", prog);
}
