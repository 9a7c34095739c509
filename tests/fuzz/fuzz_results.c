/*
 * libFuzzer harness for the results loader (lib/report/report_load.c), which both
 * `gpushare report` and `sweep --resume` use on a file anyone may have
 * edited, truncated or planted: arbitrary bytes as a results file. Checks
 * the loader's promises: no read or write out of bounds (the sanitizers
 * watch, with the buffer exactly as long as the input), every line is either
 * a run or a corrupt line, every name it keeps is valid UTF-8 and
 * NUL-terminated within its field, every run is read back once in file
 * order whether kept whole or folded (only ok closed-loop runs are), and
 * capping the shapes keeps only runs of the first shapes. Built with clang and -DGPUSHARE_FUZZ=ON
 * (tests/CMakeLists.txt); seeds in tests/fuzz/corpus_results/.
 *
 *   build-fuzz/tests/fuzz_results -max_total_time=20 tests/fuzz/corpus_results
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s, size_t size)
{
	if (!memchr(s, '\0', size) || !gpushare_utf8_valid(s))
		abort();
}

/* A run's strings point into the report's own copies: present and valid. */
static void check_ptr(const char *s)
{
	if (!s || !gpushare_utf8_valid(s))
		abort();
}

/* Every run through the cursor, in file order: each line at most once,
 * names valid; the first 64 shapes (up to 64 runs) into shapes. The count. */
static size_t walk(const struct gpushare_report *r, size_t lines, const char **shapes, size_t *n_shapes)
{
	struct gpushare_report_cursor c;
	const struct gpushare_report_run *run;
	size_t n = 0, last = 0;

	if (gpushare_report_cursor_open(r, &c) != GPUSHARE_OK)
		abort(); /* only out of memory may fail */
	while ((run = gpushare_report_cursor_next(&c))) {
		check_ptr(run->shape);
		check_ptr(run->workload);
		check_ptr(run->key);
		if (run->workers < 1 || run->batch < 1 || run->repeat < 0 || run->line <= last || run->line > lines + 1)
			abort();
		last = run->line;
		if (n < 64)
			shapes[n] = run->shape;
		n++;
	}
	gpushare_report_cursor_close(&c);
	*n_shapes = n < 64 ? n : 64;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gpushare_report r;
	/* An exact-size copy: a read one byte past the input is caught. */
	char *buf = malloc(size ? size : 1);
	const char *shapes[64];
	size_t lines = 0, n_runs, n_shapes;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (gpushare_report_load_buffer(buf, size, &r) != GPUSHARE_OK)
		abort(); /* only out of memory may fail */
	for (size_t i = 0; i < size; i++)
		lines += buf[i] == '\n';
	if (r.n_runs + r.n_bad > lines + 1 || r.n_bad_kept > r.n_bad)
		abort();
	/* Every run once, whole or folded: ok closed-loop runs folded only. */
	if (walk(&r, lines, shapes, &n_shapes) != r.n_runs)
		abort();
	for (size_t i = 0; i < r.n_whole; i++) {
		const struct gpushare_report_run *run = &r.whole[i];

		if (run->status == GPUSHARE_RUN_OK && !(run->rate > 0) && !run->find_peak)
			abort();
	}
	for (size_t i = 0; i < r.n_bad_kept; i++)
		check_str(r.bad[i].reason, sizeof(r.bad[i].reason));
	check_str(r.host, sizeof(r.host));
	check_str(r.command_line, sizeof(r.command_line));
	check_str(r.gpu_name, sizeof(r.gpu_name));
	n_runs = r.n_runs;
	if (gpushare_report_cap_shapes(&r, 2) != GPUSHARE_OK || r.n_runs + r.n_runs_omitted != n_runs ||
	    walk(&r, lines, shapes, &n_shapes) != r.n_runs)
		abort();
	for (size_t i = 0; i < n_shapes; i++) {
		size_t distinct = 0;

		for (size_t j = 0; j <= i && distinct <= 2; j++) {
			bool seen = false;

			for (size_t k = 0; k < j && !seen; k++)
				seen = !strcmp(shapes[k], shapes[j]);
			distinct += !seen;
		}
		if (distinct > 2)
			abort();
	}
	gpushare_report_release(&r);
	free(buf);
	return 0;
}
