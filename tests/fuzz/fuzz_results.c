/*
 * libFuzzer harness for the results loader (lib/report_load.c), which both
 * `gpushare report` and `sweep --resume` use on a file anyone may have
 * edited, truncated or planted: arbitrary bytes as a results file. Checks
 * the loader's promises: no read or write out of bounds (the sanitizers
 * watch, with the buffer exactly as long as the input), every line is either
 * a run or a corrupt line, every name it keeps is valid UTF-8 and
 * NUL-terminated within its field, and capping the shapes keeps only runs of
 * the first shapes. Built with clang and -DGPUSHARE_FUZZ=ON
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gpushare_report r;
	/* An exact-size copy: a read one byte past the input is caught. */
	char *buf = malloc(size ? size : 1);
	size_t lines = 0, n_runs;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (gpushare_report_load_buffer(buf, size, &r) != GPUSHARE_OK)
		abort(); /* only out of memory may fail */
	for (size_t i = 0; i < size; i++)
		lines += buf[i] == '\n';
	if (r.n_runs + r.n_bad > lines + 1 || r.n_bad_kept > r.n_bad)
		abort();
	for (size_t i = 0; i < r.n_runs; i++) {
		const struct gpushare_report_run *run = &r.runs[i];

		check_ptr(run->shape);
		check_ptr(run->workload);
		check_ptr(run->key);
		if (run->workers < 1 || run->batch < 1 || run->repeat < 0 || run->line < 1 || run->line > lines + 1)
			abort();
	}
	for (size_t i = 0; i < r.n_bad_kept; i++)
		check_str(r.bad[i].reason, sizeof(r.bad[i].reason));
	check_str(r.host, sizeof(r.host));
	check_str(r.command_line, sizeof(r.command_line));
	check_str(r.gpu_name, sizeof(r.gpu_name));
	n_runs = r.n_runs;
	if (gpushare_report_cap_shapes(&r, 2) != GPUSHARE_OK || r.n_runs + r.n_runs_omitted != n_runs)
		abort();
	for (size_t i = 0; i < r.n_runs && i < 64; i++) {
		size_t distinct = 0;

		for (size_t j = 0; j <= i && distinct <= 2; j++) {
			bool seen = false;

			for (size_t k = 0; k < j && !seen; k++)
				seen = !strcmp(r.runs[k].shape, r.runs[j].shape);
			distinct += !seen;
		}
		if (distinct > 2)
			abort();
	}
	gpushare_report_release(&r);
	free(buf);
	return 0;
}
