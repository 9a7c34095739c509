/*
 * libFuzzer harness for the device-file expression of gres File=
 * (`plan --for slurm --device-file`, lib/plan/plan_slurm.c): arbitrary
 * bytes as the expression. Checks the parser's promises: no overflow and no
 * read out of bounds (the sanitizers watch); an error, or a count of 1 to
 * GPUSHARE_PLAN_DEVICE_FILES_MAX files for an expression Slurm reads back
 * as it is (gpushare_slurm_value_ok()), with every '[' closed by a ']' and
 * no ".." path component. Built with clang and -DGPUSHARE_FUZZ=ON
 * (tests/CMakeLists.txt); seeds in tests/fuzz/corpus_device_file/.
 *
 *   build-fuzz/tests/fuzz_device_file -max_total_time=20 tests/fuzz/corpus_device_file
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "plan_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	int open = 0, n;

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	n = plan_device_files_count(s);
	if (n < 0) {
		if (n != GPUSHARE_E_INVAL && n != GPUSHARE_E_NOMEM)
			abort();
		free(s);
		return 0;
	}
	if (n < 1 || n > GPUSHARE_PLAN_DEVICE_FILES_MAX || !gpushare_slurm_value_ok(s) || strstr(s, "/../") ||
	    strstr(s, "//"))
		abort();
	for (const char *c = s; *c; c++) {
		if (*c == '[' && open++)
			abort();
		if (*c == ']' && !open--)
			abort();
	}
	if (open)
		abort();
	free(s);
	return 0;
}
