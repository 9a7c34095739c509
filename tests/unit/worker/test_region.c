/*
 * Unit tests of lib/worker/region.c: creating a sealed region, attaching from
 * another process through the descriptor, and refusing regions that are not
 * ours (bad magic, version, slot size, file size, unsealed files).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "gpushare/region.h"

static void test_size(void **state)
{
	(void)state;
	assert_true(gpushare_region_size(1) >= sizeof(struct gpushare_region_header) + sizeof(struct gpushare_slot));
	assert_int_equal(gpushare_region_size(5) - gpushare_region_size(4), sizeof(struct gpushare_slot));
}

static void test_create_bad_count(void **state)
{
	struct gpushare_region_header *r = NULL;
	int fd = -1;

	(void)state;
	assert_int_equal(gpushare_region_create(0, &r, &fd), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "slots"));
	assert_null(r);
}

static void test_create(void **state)
{
	struct gpushare_region_header *r;
	struct gpushare_slot *s;
	struct stat st;
	uint32_t i;
	int fd, seals;

	(void)state;
	assert_int_equal(gpushare_region_create(4, &r, &fd), GPUSHARE_OK);
	assert_int_equal(r->magic, GPUSHARE_REGION_MAGIC);
	assert_int_equal(r->version, GPUSHARE_REGION_VERSION);
	assert_int_equal(r->n_slots, 4);
	assert_int_equal(r->slot_size, sizeof(struct gpushare_slot));
	assert_int_equal(r->slots_offset % 64, 0);
	assert_true(r->slots_offset >= sizeof(*r));
	assert_int_equal(r->phase, GPUSHARE_PHASE_INIT);
	for (i = 0; i < 4; i++) {
		s = gpushare_region_slot(r, i);
		assert_non_null(s);
		assert_int_equal(s->state, GPUSHARE_SLOT_EMPTY);
		assert_int_equal(s->hist.min_ns, UINT64_MAX);
		assert_int_equal(s->sm_count, -1);
		assert_float_equal(s->thread_percentage, -1.0, 0.0);
	}
	assert_null(gpushare_region_slot(r, 4));
	assert_int_equal((char *)gpushare_region_slot(r, 1) - (char *)gpushare_region_slot(r, 0), sizeof(struct gpushare_slot));
	/* Close-on-exec (the launcher clears it for its workers), sealed size. */
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	seals = fcntl(fd, F_GET_SEALS);
	assert_true(seals & F_SEAL_SHRINK);
	assert_true(seals & F_SEAL_GROW);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal((size_t)st.st_size, gpushare_region_size(4));
	assert_int_equal(ftruncate(fd, 4096), -1);
	assert_int_equal(errno, EPERM);
	gpushare_region_unmap(r);
	close(fd);
}

static void test_child_writes_slot(void **state)
{
	struct gpushare_region_header *r;
	struct gpushare_slot *s;
	int fd, status;
	pid_t pid;

	(void)state;
	assert_int_equal(gpushare_region_create(3, &r, &fd), GPUSHARE_OK);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct gpushare_region_header *c;
		struct gpushare_slot *cs;

		/* A fresh mapping of the same file, as a worker gets after exec. */
		if (gpushare_region_attach(fd, &c) != GPUSHARE_OK)
			_exit(10);
		if (c == r || c->n_slots != 3)
			_exit(11);
		cs = gpushare_region_slot(c, 2);
		cs->pid = (int32_t)getpid();
		cs->requests = 42;
		gpushare_hist_record(&cs->hist, 1500);
		snprintf(cs->message, sizeof(cs->message), "hello from the child");
		__atomic_store_n(&cs->state, GPUSHARE_SLOT_DONE, __ATOMIC_RELEASE);
		gpushare_region_unmap(c);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	s = gpushare_region_slot(r, 2);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), GPUSHARE_SLOT_DONE);
	assert_int_equal(s->pid, pid);
	assert_int_equal(s->requests, 42);
	assert_int_equal(s->hist.count, 1);
	assert_int_equal(s->hist.min_ns, 1500);
	assert_string_equal(s->message, "hello from the child");
	assert_int_equal(gpushare_region_slot(r, 1)->state, GPUSHARE_SLOT_EMPTY);
	gpushare_region_unmap(r);
	close(fd);
}

/* Corrupt one header field and check that attach refuses with `err` and a
 * detail containing `word`. */
static void check_refused(void (*corrupt)(struct gpushare_region_header *), int err, const char *word)
{
	struct gpushare_region_header *r, *a = NULL, saved;
	int fd;

	assert_int_equal(gpushare_region_create(2, &r, &fd), GPUSHARE_OK);
	saved = *r;
	corrupt(r);
	gpushare_clear_error();
	assert_int_equal(gpushare_region_attach(fd, &a), err);
	assert_null(a);
	if (!strstr(gpushare_errdetail(), word))
		fail_msg("detail '%s' lacks '%s'", gpushare_errdetail(), word);
	*r = saved;  /* unmap needs the true slot count */
	gpushare_region_unmap(r);
	close(fd);
}

static void bad_magic(struct gpushare_region_header *r) { r->magic = 0x1122334455667788ULL; }
static void bad_version(struct gpushare_region_header *r) { r->version = GPUSHARE_REGION_VERSION + 1; }
static void bad_slot_size(struct gpushare_region_header *r) { r->slot_size -= 8; }
static void bad_n_slots(struct gpushare_region_header *r) { r->n_slots = 3; }
static void zero_slots(struct gpushare_region_header *r) { r->n_slots = 0; }

static void test_bad_magic(void **state) { (void)state; check_refused(bad_magic, GPUSHARE_E_INVAL, "magic"); }
static void test_bad_version(void **state) { (void)state; check_refused(bad_version, GPUSHARE_E_UNSUPPORTED, "version"); }
static void test_bad_slot_size(void **state) { (void)state; check_refused(bad_slot_size, GPUSHARE_E_INVAL, "slot"); }
static void test_bad_file_size(void **state) { (void)state; check_refused(bad_n_slots, GPUSHARE_E_INVAL, "size"); }
static void test_zero_slots(void **state) { (void)state; check_refused(zero_slots, GPUSHARE_E_INVAL, "slots"); }

static void test_not_a_region(void **state)
{
	struct gpushare_region_header *a = NULL;
	int fds[2], mfd;

	(void)state;
	assert_int_equal(gpushare_region_attach(-1, &a), GPUSHARE_E_SYS);
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(gpushare_region_attach(fds[0], &a), GPUSHARE_E_INVAL);
	close(fds[0]);
	close(fds[1]);
	/* A memfd of the right size but unsealed: refused before reading. */
	mfd = memfd_create("not-sealed", MFD_CLOEXEC);
	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, (off_t)gpushare_region_size(1)), 0);
	assert_int_equal(gpushare_region_attach(mfd, &a), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "sealed"));
	close(mfd);
	assert_null(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_create_bad_count),
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_child_writes_slot),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_bad_version),
		cmocka_unit_test(test_bad_slot_size),
		cmocka_unit_test(test_bad_file_size),
		cmocka_unit_test(test_zero_slots),
		cmocka_unit_test(test_not_a_region),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
