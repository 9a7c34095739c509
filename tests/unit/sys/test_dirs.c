/*
 * Unit tests of lib/sys/dirs.c: the per-user directory, private directories
 * (created 0700, refused when a link, group-writable or foreign) and
 * removing a tree without following links.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sys.h"
#include "gpushare/gpushare.h"

#define UNIT_TMPDIR "/tmp/gpushare-test-dirs"
#include "tmpdir.h"

static void test_user_dir(void **state)
{
	char buf[256], want[256], small[8];
	const char *old = getenv("XDG_RUNTIME_DIR");
	char *saved = old ? strdup(old) : NULL;

	(void)state;
	setenv("XDG_RUNTIME_DIR", dir, 1);
	assert_int_equal(gpushare_user_dir(buf, sizeof(buf)), GPUSHARE_OK);
	snprintf(want, sizeof(want), "%s/gpushare", dir);
	assert_string_equal(buf, want);
	/* Not absolute, or absent: the fallback in /tmp. */
	snprintf(want, sizeof(want), "/tmp/gpushare-%u", (unsigned)geteuid());
	setenv("XDG_RUNTIME_DIR", "relative", 1);
	assert_int_equal(gpushare_user_dir(buf, sizeof(buf)), GPUSHARE_OK);
	assert_string_equal(buf, want);
	unsetenv("XDG_RUNTIME_DIR");
	assert_int_equal(gpushare_user_dir(buf, sizeof(buf)), GPUSHARE_OK);
	assert_string_equal(buf, want);
	assert_int_equal(gpushare_user_dir(small, sizeof(small)), GPUSHARE_E_INVAL);
	if (saved)
		setenv("XDG_RUNTIME_DIR", saved, 1);
	free(saved);
	gpushare_clear_error();
}

static void test_private_dir(void **state)
{
	char p[256], link[256];
	struct stat st;

	(void)state;
	/* Created with its missing parents, mode 0700. */
	snprintf(p, sizeof(p), "%s/a/b/c", dir);
	assert_int_equal(gpushare_private_dir(p), GPUSHARE_OK);
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	/* Present and private: fine again. */
	assert_int_equal(gpushare_private_dir(p), GPUSHARE_OK);
	/* Writable by others: refused. */
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(gpushare_private_dir(p), GPUSHARE_E_DIR);
	assert_non_null(strstr(gpushare_errdetail(), p));
	assert_int_equal(chmod(p, 0700), 0);
	/* A symbolic link to a directory: refused. */
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(symlink(p, link), 0);
	assert_int_equal(gpushare_private_dir(link), GPUSHARE_E_DIR);
	assert_int_equal(gpushare_check_parents(p), GPUSHARE_OK);
	gpushare_clear_error();
}

static void test_remove_tree(void **state)
{
	char top[256], f[300], outside[256], link[300];
	FILE *fp;

	(void)state;
	snprintf(top, sizeof(top), "%s/tree", dir);
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	assert_int_equal(mkdir(top, 0700), 0);
	assert_int_equal(mkdir(outside, 0700), 0);
	snprintf(f, sizeof(f), "%s/sub", top);
	assert_int_equal(mkdir(f, 0700), 0);
	snprintf(f, sizeof(f), "%s/sub/file", top);
	fp = fopen(f, "w");
	assert_non_null(fp);
	fclose(fp);
	snprintf(f, sizeof(f), "%s/keep", outside);
	fp = fopen(f, "w");
	assert_non_null(fp);
	fclose(fp);
	/* A link out of the tree is removed, what it points at kept. */
	snprintf(link, sizeof(link), "%s/sub/out", top);
	assert_int_equal(symlink(outside, link), 0);
	gpushare_remove_tree(top);
	assert_int_equal(access(top, F_OK), -1);
	assert_int_equal(access(f, F_OK), 0);
	gpushare_remove_tree(top); /* gone already: nothing to do */
}

static int count_entry(const char *path, void *arg)
{
	const char *name = strrchr(path, '/') + 1;

	(void)arg;
	/* "farm-b" is not counted; "farm-stop" ends the walk with an error. */
	if (!strcmp(name, "farm-stop"))
		return GPUSHARE_E_IO;
	return strcmp(name, "farm-b") != 0;
}

static void test_user_dir_each(void **state)
{
	static const char *const prefixes[] = { "bench-", "farm-", NULL };
	const char *old = getenv("XDG_RUNTIME_DIR");
	char *saved = old ? strdup(old) : NULL;
	char user[256], path[320];
	size_t n = 99;

	(void)state;
	setenv("XDG_RUNTIME_DIR", dir, 1);
	/* No user directory yet: nothing. */
	assert_int_equal(gpushare_user_dir_each(prefixes, NULL, count_entry, NULL, &n), GPUSHARE_OK);
	assert_int_equal(n, 0);
	snprintf(user, sizeof(user), "%s/gpushare", dir);
	assert_int_equal(mkdir(user, 0700), 0);
	for (size_t i = 0; i < 5; i++) {
		static const char *const names[] = { "bench-a", "farm-a", "farm-b", "sweep-a", "bench-skip" };

		snprintf(path, sizeof(path), "%s/%s", user, names[i]);
		assert_int_equal(mkdir(path, 0700), 0);
	}
	/* A file and a link with the prefix are passed over. */
	snprintf(path, sizeof(path), "%s/farm-file", user);
	fclose(fopen(path, "w"));
	snprintf(path, sizeof(path), "%s/farm-link", user);
	assert_int_equal(symlink("farm-a", path), 0);
	assert_int_equal(gpushare_user_dir_each(prefixes, "bench-skip", count_entry, NULL, &n), GPUSHARE_OK);
	assert_int_equal(n, 2); /* bench-a, farm-a */
	assert_int_equal(gpushare_user_dir_each(prefixes, NULL, count_entry, NULL, &n), GPUSHARE_OK);
	assert_int_equal(n, 3);
	snprintf(path, sizeof(path), "%s/farm-stop", user);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(gpushare_user_dir_each(prefixes, NULL, count_entry, NULL, &n), GPUSHARE_E_IO);
	gpushare_clear_error();
	if (saved)
		setenv("XDG_RUNTIME_DIR", saved, 1);
	else
		unsetenv("XDG_RUNTIME_DIR");
	free(saved);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_user_dir),
		cmocka_unit_test(test_private_dir),
		cmocka_unit_test(test_remove_tree),
		cmocka_unit_test(test_user_dir_each),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
