/*
 * The sandbox of a unit test file that starts strategies or MPS daemons
 * against the stand-in MPS control program: define UNIT_TMPDIR (a short
 * prefix, e.g. "/tmp/gsst", so that MPS pipe paths under it fit a socket's
 * address) before including this. sandbox_setup, for
 * cmocka_run_group_tests() or from a file's own setup, puts the control
 * program's path (tests/helpers/fake_mps_control) in `fake` and a fresh
 * directory, `xdg`, in XDG_RUNTIME_DIR, with no MPS pipe directory
 * inherited; sandbox_teardown removes it with everything in it. env_of()
 * reads a strategy's list of environment changes.
 */
#ifndef GPUSHARE_UNIT_MPS_SANDBOX_H
#define GPUSHARE_UNIT_MPS_SANDBOX_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/buf.h"

static char xdg[64], fake[1024];

static inline int sandbox_setup(void **state)
{
	const char *helpers = getenv("GPUSHARE_TEST_HELPERS");

	(void)state;
	if (!helpers)
		return -1;
	snprintf(fake, sizeof(fake), "%s/fake_mps_control", helpers);
	snprintf(xdg, sizeof(xdg), "%s.XXXXXX", UNIT_TMPDIR);
	if (!mkdtemp(xdg))
		return -1;
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	unsetenv("CUDA_MPS_PIPE_DIRECTORY");
	return 0;
}

static inline int sandbox_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", xdg);
	return system(cmd) == 0 ? 0 : -1;
}

/* The value of NAME in a list of environment changes: "" for an unset
 * entry, NULL when not named at all. */
static inline const char *env_of(const struct gpushare_strv *env, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < env->n; i++) {
		if (!strncmp(env->v[i], name, len) && env->v[i][len] == '=')
			return env->v[i] + len + 1;
		if (!strcmp(env->v[i], name))
			return "";
	}
	return NULL;
}

#endif
