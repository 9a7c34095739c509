/*
 * Unit tests: the farm's job list (quoting, comments, errors with line
 * numbers, templates over argument files and ranges, shell mode, hashes,
 * shards and the Slurm defaults for them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "farm_jobs.h"
#include "farm_copy.h"
#include "hash.h"

/* Load text as a job file (through a temporary file). */
static int load_text(struct farm_jobs *list, const char *text)
{
	char path[] = "/tmp/gsfjXXXXXX";
	int fd = mkstemp(path), rc;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	rc = gpushare_farm_jobs_load_file(list, path);
	unlink(path);
	return rc;
}

static void assert_argv(const struct farm_jobs *list, size_t i, const char *const *want)
{
	char **argv;
	size_t n = 0;

	assert_int_equal(gpushare_farm_jobs_argv(list, i, &argv), 0);
	while (want[n]) {
		assert_non_null(argv[n]);
		assert_string_equal(argv[n], want[n]);
		n++;
	}
	assert_null(argv[n]);
	free(argv);
}

static void test_quoting(void **state)
{
	struct farm_jobs list;

	(void)state;
	gpushare_farm_jobs_init(&list, FARM_JOBS_ARGV);
	assert_int_equal(load_text(&list,
		"# a comment\n"
		"\n"
		"   \t\n"
		"  # indented comment\n"
		"./sim --alpha 0.5   --name 'two words'\n"
		"echo \"a \\\"quoted\\\" \\\\ word\" \\$HOME back\\ slash ''\n"
		"printf '%s\\n' a#b\r\n"
		"x'y'\"z\" \"it's\"\n"), 0);
	assert_int_equal(list.n_jobs, 4);
	assert_argv(&list, 0, (const char *[]){ "./sim", "--alpha", "0.5", "--name", "two words", NULL });
	assert_argv(&list, 1, (const char *[]){ "echo", "a \"quoted\" \\ word", "$HOME", "back slash", "", NULL });
	assert_argv(&list, 2, (const char *[]){ "printf", "%s\\n", "a#b", NULL });
	assert_argv(&list, 3, (const char *[]){ "xyz", "it's", NULL });
	/* Index is the ordinal among jobs; line is the source line. */
	assert_int_equal(list.jobs[0].line, 5);
	assert_int_equal(list.jobs[3].line, 8);
	gpushare_farm_jobs_release(&list);
}

static void test_errors_name_the_line(void **state)
{
	struct farm_jobs list;

	(void)state;
	gpushare_farm_jobs_init(&list, FARM_JOBS_ARGV);
	assert_int_equal(load_text(&list, "ok 1\nok 2\necho 'open\n"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), ":3: unterminated single quote"));
	gpushare_farm_jobs_release(&list);

	gpushare_farm_jobs_init(&list, FARM_JOBS_ARGV);
	assert_int_equal(load_text(&list, "echo \"open \\\"\n"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), ":1: unterminated double quote"));
	gpushare_farm_jobs_release(&list);

	gpushare_farm_jobs_init(&list, FARM_JOBS_ARGV);
	assert_int_equal(load_text(&list, "a\nb\\\n"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), ":2: line ends with a backslash"));
	gpushare_farm_jobs_release(&list);

	/* Unquoted shell syntax without --shell is refused, quoted is fine. */
	gpushare_farm_jobs_init(&list, FARM_JOBS_ARGV);
	assert_int_equal(load_text(&list, "echo '|' ok\necho hi > out\n"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), ":2: '>' is shell syntax"));
	assert_int_equal(list.n_jobs, 1);
	gpushare_farm_jobs_release(&list);

	gpushare_farm_jobs_init(&list, FARM_JOBS_ARGV);
	assert_int_equal(gpushare_farm_jobs_load_file(&list, "/nonexistent/jobs.txt"), GPUSHARE_E_NOT_FOUND);
	gpushare_farm_jobs_release(&list);
}

static void test_split(void **state)
{
	char **argv;
	size_t argc;
	const char *line = "  a 'b c'  \"d\\\\e\" ";

	(void)state;
	assert_int_equal(gpushare_farm_jobs_split(line, strlen(line), &argv, &argc), 0);
	assert_int_equal(argc, 3);
	assert_string_equal(argv[0], "a");
	assert_string_equal(argv[1], "b c");
	assert_string_equal(argv[2], "d\\e");
	assert_null(argv[3]);
	free(argv);
	assert_int_equal(gpushare_farm_jobs_split("a 'b", 4, &argv, &argc), GPUSHARE_E_INVAL);
}

static void test_shell_mode(void **state)
{
	struct farm_jobs list;
	char buf[64];

	(void)state;
	gpushare_farm_jobs_init(&list, FARM_JOBS_SHELL);
	assert_int_equal(load_text(&list, "# c\necho a | wc -c > 'out file'  \n"), 0);
	assert_int_equal(list.n_jobs, 1);
	assert_argv(&list, 0, (const char *[]){ "/bin/sh", "-c", "echo a | wc -c > 'out file'", NULL });
	gpushare_farm_jobs_format(&list, 0, buf, sizeof(buf));
	assert_string_equal(buf, "echo a | wc -c > 'out file'");
	gpushare_farm_jobs_release(&list);
}

static void test_format(void **state)
{
	struct farm_jobs list;
	char buf[64], small[12];

	(void)state;
	gpushare_farm_jobs_init(&list, FARM_JOBS_ARGV);
	assert_int_equal(load_text(&list, "./sim --name 'two words' \"it's\" ''\n"), 0);
	gpushare_farm_jobs_format(&list, 0, buf, sizeof(buf));
	assert_string_equal(buf, "./sim --name 'two words' 'it'\\''s' ''");
	/* Too long: cut, and marked with "...". */
	gpushare_farm_jobs_format(&list, 0, small, sizeof(small));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_string_equal(small + sizeof(small) - 4, "...");
	gpushare_farm_jobs_format(&list, 5, buf, sizeof(buf));
	assert_string_equal(buf, "");
	gpushare_farm_jobs_release(&list);
}

static void test_hashes(void **state)
{
	struct farm_jobs a, b, c;

	(void)state;
	gpushare_farm_jobs_init(&a, FARM_JOBS_ARGV);
	gpushare_farm_jobs_init(&b, FARM_JOBS_ARGV);
	gpushare_farm_jobs_init(&c, FARM_JOBS_ARGV);
	assert_int_equal(load_text(&a, "x 1\ny 2\n"), 0);
	/* Same words, other quoting and comments: same jobs. */
	assert_int_equal(load_text(&b, "# header\n'x' \"1\"\n\ny   2\n"), 0);
	/* "x 1" and "'x 1'" differ: one word against two. */
	assert_int_equal(load_text(&c, "'x 1'\ny 2\n"), 0);
	assert_true(a.jobs[0].hash == b.jobs[0].hash);
	assert_true(a.jobs[1].hash == b.jobs[1].hash);
	assert_true(gpushare_farm_jobs_list_hash(&a) == gpushare_farm_jobs_list_hash(&b));
	assert_true(a.jobs[0].hash != c.jobs[0].hash);
	assert_true(a.jobs[1].hash == c.jobs[1].hash);
	assert_true(gpushare_farm_jobs_list_hash(&a) != gpushare_farm_jobs_list_hash(&c));
	/* FNV-1a 64 reference value of "a". */
	assert_true(gpushare_fnv1a(GPUSHARE_FNV1A_OFFSET, "a", 1) == 0xaf63dc4c8601ec8cULL);
	gpushare_farm_jobs_release(&a);
	gpushare_farm_jobs_release(&b);
	gpushare_farm_jobs_release(&c);
}

static void test_range(void **state)
{
	struct farm_range r;

	(void)state;
	assert_int_equal(gpushare_farm_range_parse("1..1000", &r), 0);
	assert_true(r.start == 1 && r.end == 1000 && r.step == 1);
	assert_true(gpushare_farm_range_count(&r) == 1000);
	assert_int_equal(gpushare_farm_range_parse("-5..5:5", &r), 0);
	assert_true(gpushare_farm_range_count(&r) == 3);
	assert_int_equal(gpushare_farm_range_parse("0..10:3", &r), 0);
	assert_true(gpushare_farm_range_count(&r) == 4);      /* 0 3 6 9 */
	assert_int_equal(gpushare_farm_range_parse("7..7", &r), 0);
	assert_true(gpushare_farm_range_count(&r) == 1);
	assert_int_equal(gpushare_farm_range_parse("5..1", &r), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_farm_range_parse("1..5:0", &r), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_farm_range_parse("1-5", &r), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_farm_range_parse("a..5", &r), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_farm_range_parse("1..", &r), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_farm_range_parse("1..5:", &r), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_farm_range_parse("0..999999999999", &r), GPUSHARE_E_INVAL);
	/* All of int64: 2^64 values, whose count must not wrap to 0. */
	assert_int_equal(gpushare_farm_range_parse("-9223372036854775808..9223372036854775807", &r),
			 GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_farm_range_parse("-9223372036854775808..9223372036854775807:2", &r),
			 GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_farm_range_parse("9223372036854775807..9223372036854775807", &r), 0);
	assert_true(gpushare_farm_range_count(&r) == 1);
	assert_int_equal(gpushare_farm_range_parse("-9223372036854775808..9223372036854775807:9223372036854775807",
						   &r), 0);
	assert_true(gpushare_farm_range_count(&r) == 3);
	assert_int_equal(gpushare_farm_range_parse("-9223372036854775809..0", &r), GPUSHARE_E_INVAL);
}

static void test_template_range(void **state)
{
	struct farm_jobs list;
	struct farm_range r;
	char *tmpl[] = { "./sim", "--seed={}", "--out", "run{#}.dat" };
	char *bare[] = { "echo", "n" };

	(void)state;
	gpushare_farm_jobs_init(&list, FARM_JOBS_ARGV);
	assert_int_equal(gpushare_farm_range_parse("10..30:10", &r), 0);
	assert_int_equal(gpushare_farm_jobs_template_range(&list, tmpl, 4, &r), 0);
	assert_int_equal(list.n_jobs, 3);
	assert_argv(&list, 0, (const char *[]){ "./sim", "--seed=10", "--out", "run1.dat", NULL });
	assert_argv(&list, 2, (const char *[]){ "./sim", "--seed=30", "--out", "run3.dat", NULL });
	gpushare_farm_jobs_release(&list);

	/* No {}: the argument is appended, as GNU parallel does. */
	gpushare_farm_jobs_init(&list, FARM_JOBS_ARGV);
	assert_int_equal(gpushare_farm_range_parse("1..2", &r), 0);
	assert_int_equal(gpushare_farm_jobs_template_range(&list, bare, 2, &r), 0);
	assert_argv(&list, 1, (const char *[]){ "echo", "n", "2", NULL });
	gpushare_farm_jobs_release(&list);
}

static void test_template_file(void **state)
{
	struct farm_jobs list;
	char path[] = "/tmp/gsfaXXXXXX";
	const char *text = "a file.txt\n\nit's\r\n{}\n";
	char *tmpl[] = { "convert", "{}", "{}.{#}" };
	char *sh[] = { "wc -c < {} > out.{#}" };
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	gpushare_farm_jobs_init(&list, FARM_JOBS_ARGV);
	assert_int_equal(gpushare_farm_jobs_template_file(&list, tmpl, 3, path), 0);
	assert_int_equal(list.n_jobs, 3);
	assert_argv(&list, 0, (const char *[]){ "convert", "a file.txt", "a file.txt.1", NULL });
	assert_argv(&list, 1, (const char *[]){ "convert", "it's", "it's.2", NULL });
	/* An argument holding "{}" is not expanded again. */
	assert_argv(&list, 2, (const char *[]){ "convert", "{}", "{}.3", NULL });
	assert_int_equal(list.jobs[1].line, 3);
	gpushare_farm_jobs_release(&list);

	/* Shell mode: the argument is quoted so that it stays one word. */
	gpushare_farm_jobs_init(&list, FARM_JOBS_SHELL);
	assert_int_equal(gpushare_farm_jobs_template_file(&list, sh, 1, path), 0);
	assert_argv(&list, 0, (const char *[]){ "/bin/sh", "-c", "wc -c < 'a file.txt' > out.1", NULL });
	assert_argv(&list, 1, (const char *[]){ "/bin/sh", "-c", "wc -c < 'it'\\''s' > out.2", NULL });
	gpushare_farm_jobs_release(&list);
	unlink(path);
}

static void test_many_jobs_compact(void **state)
{
	struct farm_jobs list;
	char line[64];

	(void)state;
	gpushare_farm_jobs_init(&list, FARM_JOBS_ARGV);
	for (size_t i = 0; i < 200000; i++) {
		int n = snprintf(line, sizeof(line), "./job --index %zu", i);

		assert_int_equal(gpushare_farm_jobs_add_line(&list, line, (size_t)n, i + 1), 0);
	}
	assert_int_equal(list.n_jobs, 200000);
	/* Text (about 21 bytes a job) plus the table: well under 64 bytes a job
	 * of arena (growth doubles, so at most twice the text). */
	assert_true(list.arena_cap < 200000 * 48);
	assert_argv(&list, 123456, (const char *[]){ "./job", "--index", "123456", NULL });
	gpushare_farm_jobs_release(&list);
}

/* The farm directory's copy: every job written as it is parsed (the list
 * holding one job at a time), read back by the cursor with the same argv
 * bytes, hashes and list hash. */
static void test_copy_round_trip(void **state)
{
	static const char text[] =
		"./sim --name 'two words' \"q\\\"uote\" back\\\\slash\n"
		"# a comment\n"
		"printf '\x01\xff\xc3\xa9 \\t'\n"
		"./x {} '' end\n";
	char path[] = "/tmp/gsfcXXXXXX", tmpl_num[32];
	char *const tmpl[] = { "./run", "--n={#}", NULL };
	struct farm_jobs whole, streamed;
	struct farm_cursor cur;
	uint64_t n, h, jh;
	char **argv;
	FILE *out;
	int fd;

	(void)state;
	gpushare_farm_jobs_init(&whole, FARM_JOBS_ARGV);
	assert_int_equal(load_text(&whole, text), 0);
	assert_int_equal(whole.n_jobs, 3);

	fd = mkstemp(path);
	assert_true(fd >= 0);
	out = fdopen(fd, "w");
	assert_non_null(out);
	gpushare_farm_jobs_init(&streamed, FARM_JOBS_ARGV);
	streamed.sink = gpushare_farm_jobs_copy_sink;
	streamed.sink_arg = out;
	assert_int_equal(load_text(&streamed, text), 0);
	assert_int_equal(streamed.n_jobs, 0);       /* nothing held */
	assert_int_equal(farm_jobs_count(&streamed), 3);
	/* Templates count their {#} across the jobs handed on. */
	streamed.mode = FARM_JOBS_ARGV;
	assert_int_equal(gpushare_farm_jobs_add_template_arg(&streamed, tmpl, 2, "a", 1), 0);
	assert_int_equal(farm_jobs_count(&streamed), 4);
	assert_int_equal(fclose(out), 0);
	gpushare_farm_jobs_release(&streamed);

	assert_int_equal(gpushare_farm_cursor_open(&cur, path), 0);
	for (size_t i = 0; i < 3; i++) {
		char **want;

		assert_int_equal(gpushare_farm_cursor_next(&cur, true, &argv, &jh), 1);
		assert_int_equal(gpushare_farm_jobs_argv(&whole, i, &want), 0);
		for (size_t k = 0; want[k] || argv[k]; k++) {
			assert_non_null(argv[k]);
			assert_non_null(want[k]);
			assert_string_equal(argv[k], want[k]);
		}
		assert_true(jh == whole.jobs[i].hash);
		free(want);
		free(argv);
	}
	assert_int_equal(gpushare_farm_cursor_next(&cur, true, &argv, NULL), 1);
	snprintf(tmpl_num, sizeof(tmpl_num), "--n=%d", 4);
	assert_string_equal(argv[1], tmpl_num);
	assert_string_equal(argv[2], "a");
	free(argv);
	assert_int_equal(gpushare_farm_cursor_next(&cur, true, &argv, NULL), 0);
	/* Scanning gives the count and the same list hash as the whole list. */
	assert_int_equal(gpushare_farm_cursor_scan(&cur, FARM_JOBS_ARGV, &n, &h), 0);
	assert_true(n == 4);
	assert_int_equal(gpushare_farm_jobs_add_template_arg(&whole, tmpl, 2, "a", 1), 0);
	assert_true(h == gpushare_farm_jobs_list_hash(&whole));
	/* Skipping jobs unread keeps the numbering. */
	assert_int_equal(gpushare_farm_cursor_next(&cur, false, NULL, NULL), 1);
	assert_int_equal(gpushare_farm_cursor_next(&cur, true, NULL, &jh), 1);
	assert_true(cur.index == 2 && jh == whole.jobs[1].hash);
	gpushare_farm_cursor_close(&cur);
	gpushare_farm_jobs_release(&whole);

	/* A line that is not an array of strings is an error naming it. */
	out = fopen(path, "w");
	assert_non_null(out);
	fputs("[\"ok\"]\n[1, 2]\n", out);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(gpushare_farm_cursor_open(&cur, path), 0);
	assert_int_equal(gpushare_farm_cursor_next(&cur, true, &argv, NULL), 1);
	free(argv);
	assert_int_equal(gpushare_farm_cursor_next(&cur, true, &argv, NULL), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), ":2: not a JSON array of strings"));
	gpushare_farm_cursor_close(&cur);
	unlink(path);

	/* A symbolic link is not read through. */
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(gpushare_farm_cursor_open(&cur, path), GPUSHARE_E_DIR);
	unlink(path);
}

static void test_shard_parse(void **state)
{
	struct farm_shard s;

	(void)state;
	assert_int_equal(gpushare_farm_shard_parse("1/4", &s), 0);
	assert_true(s.index == 1 && s.count == 4);
	assert_true(farm_shard_has(&s, 5) && !farm_shard_has(&s, 4));
	assert_int_equal(gpushare_farm_shard_size(&s, 10), 3);   /* 1 5 9 */
	s.index = 3;
	assert_int_equal(gpushare_farm_shard_size(&s, 10), 2);   /* 3 7 */
	assert_int_equal(gpushare_farm_shard_parse("0/1", &s), 0);
	assert_int_equal(gpushare_farm_shard_parse("4/4", &s), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_farm_shard_parse("0/0", &s), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_farm_shard_parse("-1/4", &s), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_farm_shard_parse("1/", &s), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_farm_shard_parse("1", &s), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_farm_shard_parse("1/4x", &s), GPUSHARE_E_INVAL);
}

/* A NULL-terminated table of NAME, VALUE pairs as an environment. */
static const char *table_env(void *ctx, const char *name)
{
	const char *const *t = ctx;

	for (; t[0]; t += 2)
		if (!strcmp(t[0], name))
			return t[1];
	return NULL;
}

static int shard_env(const char *const *env, unsigned long *i, unsigned long *n, bool *from)
{
	struct farm_shard s;
	int rc = gpushare_farm_shard_from_env(table_env, (void *)env, &s, from);

	*i = s.index;
	*n = s.count;
	return rc;
}

static void test_shard_env(void **state)
{
	unsigned long i, n;
	bool from;

	(void)state;
	assert_int_equal(shard_env((const char *[]){ NULL }, &i, &n, &from), 0);
	assert_true(i == 0 && n == 1 && !from);
	/* srun -n 4: a job step of 4 tasks. */
	assert_int_equal(shard_env((const char *[]){ "SLURM_STEP_ID", "0", "SLURM_PROCID", "2",
						     "SLURM_NTASKS", "4", NULL }, &i, &n, &from), 0);
	assert_true(i == 2 && n == 4 && from);
	/* The batch script of a 4-task job is one process: not split. */
	assert_int_equal(shard_env((const char *[]){ "SLURM_PROCID", "0", "SLURM_NTASKS", "4", NULL },
				   &i, &n, &from), 0);
	assert_true(i == 0 && n == 1 && !from);
	/* --array=1-10:3 -> ids 1 4 7 10 */
	assert_int_equal(shard_env((const char *[]){ "SLURM_ARRAY_TASK_ID", "7", "SLURM_ARRAY_TASK_MIN", "1",
						     "SLURM_ARRAY_TASK_MAX", "10", "SLURM_ARRAY_TASK_STEP", "3", NULL },
				   &i, &n, &from), 0);
	assert_true(i == 2 && n == 4 && from);
	/* COUNT wins over MIN/MAX. */
	assert_int_equal(shard_env((const char *[]){ "SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_MIN", "5",
						     "SLURM_ARRAY_TASK_COUNT", "3", NULL }, &i, &n, &from), 0);
	assert_true(i == 0 && n == 3);
	/* An array of 3 elements, each a step of 2 tasks: 6 shards. */
	assert_int_equal(shard_env((const char *[]){ "SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_MIN", "0",
						     "SLURM_ARRAY_TASK_COUNT", "3", "SLURM_STEP_ID", "0",
						     "SLURM_PROCID", "1", "SLURM_NTASKS", "2", NULL }, &i, &n, &from), 0);
	assert_true(i == 5 && n == 6);
	/* A sparse array (--array=1,5,9 has COUNT 3) does not fit. */
	assert_int_equal(shard_env((const char *[]){ "SLURM_ARRAY_TASK_ID", "9", "SLURM_ARRAY_TASK_MIN", "1",
						     "SLURM_ARRAY_TASK_MAX", "9", "SLURM_ARRAY_TASK_COUNT", "3", NULL },
				   &i, &n, &from), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "--shard"));
	assert_int_equal(shard_env((const char *[]){ "SLURM_ARRAY_TASK_ID", "1", NULL }, &i, &n, &from),
			 GPUSHARE_E_INVAL);
	assert_int_equal(shard_env((const char *[]){ "SLURM_STEP_ID", "0", "SLURM_PROCID", "4",
						     "SLURM_NTASKS", "4", NULL }, &i, &n, &from), GPUSHARE_E_INVAL);
	assert_int_equal(shard_env((const char *[]){ "SLURM_STEP_ID", "0", "SLURM_PROCID", "x",
						     "SLURM_NTASKS", "4", NULL }, &i, &n, &from), GPUSHARE_E_INVAL);
	/* The one reader of numbers: signed, empty or beyond a farm's jobs refused, the variable named. */
	assert_int_equal(shard_env((const char *[]){ "SLURM_STEP_ID", "0", "SLURM_PROCID", "+1",
						     "SLURM_NTASKS", "4", NULL }, &i, &n, &from), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "SLURM_PROCID='+1'"));
	assert_int_equal(shard_env((const char *[]){ "SLURM_ARRAY_TASK_ID", "", NULL }, &i, &n, &from),
			 GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "SLURM_ARRAY_TASK_ID is empty"));
	assert_int_equal(shard_env((const char *[]){ "SLURM_ARRAY_TASK_ID", "0", "SLURM_ARRAY_TASK_MIN", "0",
						     "SLURM_ARRAY_TASK_COUNT", "100000001", NULL }, &i, &n, &from),
			 GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "SLURM_ARRAY_TASK_COUNT="));
	assert_int_equal(shard_env((const char *[]){ "SLURM_ARRAY_TASK_ID", "0", "SLURM_ARRAY_TASK_MIN", "0",
						     "SLURM_ARRAY_TASK_STEP", "0", "SLURM_ARRAY_TASK_COUNT", "2", NULL },
				   &i, &n, &from), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "SLURM_ARRAY_TASK_STEP='0' is out of range (at least 1)"));
}

/* A shell line that is one plain command runs as its words; anything the
 * shell would expand, redirect, assign or run itself stays the shell's. */
static void test_direct(void **state)
{
	static const char *const plain[] = {
		"./sim --seed 3", "sh -c 'kill -9 $$'", "python3 \"a b.py\" -x=1", "/bin/echo a\\ b",
	};
	static const char *const shell[] = {
		"sleep 1; echo ok", "echo $HOME", "a | b", "cmd 2>/dev/null", "FOO=1 ./sim", "ls *.txt", "echo hi",
		"cd /tmp", "exit 3", "x=$(date)", "echo `id`", "./a && ./b", "./sim # note", "~/bin/sim",
		"./sim \"$X\"", "true", "'unterminated",
	};
	char **d;

	(void)state;
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		char *argv[] = { "/bin/sh", "-c", (char *)plain[i], NULL };

		assert_int_equal(gpushare_farm_jobs_direct(argv, &d), GPUSHARE_OK);
		assert_non_null(d);
		free(d);
	}
	for (size_t i = 0; i < sizeof(shell) / sizeof(shell[0]); i++) {
		char *argv[] = { "/bin/sh", "-c", (char *)shell[i], NULL };

		assert_int_equal(gpushare_farm_jobs_direct(argv, &d), GPUSHARE_OK);
		if (d)
			fail_msg("'%s' taken as plain", shell[i]);
	}
	{
		char *argv[] = { "/bin/sh", "-c", "python3 \"a b.py\" -x=1", NULL };

		assert_int_equal(gpushare_farm_jobs_direct(argv, &d), GPUSHARE_OK);
		assert_string_equal(d[0], "python3");
		assert_string_equal(d[1], "a b.py");
		assert_string_equal(d[2], "-x=1");
		assert_null(d[3]);
		free(d);
	}
	{
		char *argv[] = { "./sim", "--seed", "3", NULL }; /* an argv job: never */

		assert_int_equal(gpushare_farm_jobs_direct(argv, &d), GPUSHARE_OK);
		assert_null(d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quoting),
		cmocka_unit_test(test_errors_name_the_line),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_shell_mode),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_hashes),
		cmocka_unit_test(test_range),
		cmocka_unit_test(test_template_range),
		cmocka_unit_test(test_template_file),
		cmocka_unit_test(test_many_jobs_compact),
		cmocka_unit_test(test_copy_round_trip),
		cmocka_unit_test(test_shard_parse),
		cmocka_unit_test(test_shard_env),
		cmocka_unit_test(test_direct),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
