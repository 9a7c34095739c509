/*
 * Unit tests of lib/sys/safefile.c: bounded reads that refuse what is not a
 * regular file, writes that refuse links, and the atomic write's clean-up
 * of a dead writer's temporary file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpushare/files.h"
#include "gpushare/gpushare.h"

#define UNIT_TMPDIR "/tmp/gpushare-test-safefile"
#include "tmpdir.h"

static void test_read_file(void **state)
{
	char path[128], *data;
	size_t len;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/in", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("hello\n", f);
	fclose(f);
	assert_int_equal(gpushare_read_file(path, 100, &data, &len), GPUSHARE_OK);
	assert_int_equal(len, 6);
	assert_string_equal(data, "hello\n");
	free(data);
	assert_int_equal(gpushare_read_file(path, 5, &data, &len), GPUSHARE_E_IO); /* too large */
	assert_non_null(strstr(gpushare_errdetail(), "more than"));
	assert_int_equal(gpushare_read_file_tail(path, 3, &data, &len), GPUSHARE_OK);
	assert_string_equal(data, "lo\n");
	free(data);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(gpushare_read_file(path, 100, &data, &len), GPUSHARE_E_IO); /* at once, no writer */
	assert_int_equal(gpushare_read_file("/dev/zero", 100, &data, &len), GPUSHARE_E_IO);
	assert_int_equal(gpushare_read_file("/nonexistent/x", 100, &data, &len), GPUSHARE_E_NOT_FOUND);
}

static void test_writes_refuse_links(void **state)
{
	char target[128], link[128], path[128];
	int fd;
	struct stat st;

	(void)state;
	snprintf(target, sizeof(target), "%s/target", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	fd = open(target, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(gpushare_open_append(link, 0644, &fd), GPUSHARE_E_IO);
	assert_non_null(strstr(gpushare_errdetail(), "symbolic link"));
	assert_int_equal(gpushare_write_file_atomic(link, "x", 1), GPUSHARE_E_IO);
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 0); /* the target untouched */
	snprintf(path, sizeof(path), "%s/appended", dir);
	assert_int_equal(gpushare_open_append(path, 0644, &fd), GPUSHARE_OK);
	assert_int_equal(write(fd, "a\n", 2), 2);
	close(fd);
}

static void test_atomic_write_reaps_dead_temps(void **state)
{
	char path[128], stale[160], live[160];
	pid_t pid;
	int fd, status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	snprintf(path, sizeof(path), "%s/out.json", dir);
	snprintf(stale, sizeof(stale), "%s/.out.json.tmp-%d-abcdef", dir, (int)pid);
	snprintf(live, sizeof(live), "%s/.out.json.tmp-%d-abcdef", dir, (int)getppid());
	fd = open(stale, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	fd = open(live, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(gpushare_write_file_atomic(path, "{}\n", 3), GPUSHARE_OK);
	assert_int_not_equal(access(stale, F_OK), 0); /* its writer is gone */
	assert_int_equal(access(live, F_OK), 0);      /* its writer lives */
}

/* Several files all or nothing: a link planted as the last target is
 * refused before the first is replaced, and no temporary file stays; a
 * clean set replaces all, each in its mode. */
static void test_staged_write_all_or_nothing(void **state)
{
	char a[128], b[128], c[128], sub[96], cmd[192], buf[8];
	struct gpushare_staged_file f[3];
	struct stat st;
	int fd;

	(void)state;
	snprintf(sub, sizeof(sub), "%s/staged", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(a, sizeof(a), "%s/staged/a.conf", dir);
	snprintf(b, sizeof(b), "%s/staged/b.conf", dir);
	snprintf(c, sizeof(c), "%s/staged/c.sh", dir);
	fd = open(a, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "old", 3), 3);
	close(fd);
	assert_int_equal(symlink("/nonexistent", c), 0);
	f[0] = (struct gpushare_staged_file){ a, "new-a", 5, 0644 };
	f[1] = (struct gpushare_staged_file){ b, "new-b", 5, 0644 };
	f[2] = (struct gpushare_staged_file){ c, "new-c", 5, 0755 };
	assert_int_equal(gpushare_write_files_staged(f, 3), GPUSHARE_E_IO);
	assert_non_null(strstr(gpushare_errdetail(), "c.sh' is a symbolic link"));
	fd = open(a, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 3);
	close(fd);
	assert_memory_equal(buf, "old", 3);
	assert_int_not_equal(access(b, F_OK), 0);
	assert_int_equal(unlink(c), 0);
	/* Only a.conf is left: no temporary file. */
	snprintf(cmd, sizeof(cmd), "test $(ls -A '%s' | wc -l) -eq 1", sub);
	assert_int_equal(system(cmd), 0);
	/* The same path twice is refused. */
	f[1].path = a;
	assert_int_equal(gpushare_write_files_staged(f, 2), GPUSHARE_E_IO);
	f[1].path = b;
	assert_int_equal(gpushare_write_files_staged(f, 3), GPUSHARE_OK);
	assert_int_equal(stat(c, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
	assert_int_equal(stat(a, &st), 0);
	assert_int_equal(st.st_size, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_writes_refuse_links),
		cmocka_unit_test(test_atomic_write_reaps_dead_temps),
		cmocka_unit_test(test_staged_write_all_or_nothing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
