/*
 * The scratch directory of a unit test file: define UNIT_TMPDIR (e.g.
 * "/tmp/gpushare-test-lock") before including this; setup and teardown,
 * for cmocka_run_group_tests(), make a fresh `dir` and remove it with
 * everything in it.
 */
#ifndef GPUSHARE_UNIT_TMPDIR_H
#define GPUSHARE_UNIT_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s.XXXXXX", UNIT_TMPDIR);
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

#endif
