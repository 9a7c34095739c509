/*
 * libFuzzer harness for tune's probe files (DIR/probes.jsonl), read back by
 * `tune --resume` from a file anyone may have edited, truncated or planted:
 * arbitrary bytes as a probes file, through the three readers a resume
 * uses: the recorded command line (gpushare_sweep_recorded_argv_buffer(),
 * which the resume's grid check starts from), the results loader, and the
 * probes taken from it (tune_probes_from_report(), lib/tune/tune.c).
 * Checks their promises: no read or write out of bounds (the sanitizers
 * watch, the buffer exactly as long as the input); a command line found is
 * non-empty and NULL-terminated (its words are the bytes recorded: a file
 * name need not be UTF-8); none found is
 * GPUSHARE_E_NOT_FOUND for a file of blank lines and GPUSHARE_E_INVAL
 * otherwise (a resume refuses it); every candidate's probe is NAN (no record), 0 (failed, or no
 * positive figure) or a finite positive figure, never negative or NaN from
 * a record. Built with clang and -DGPUSHARE_FUZZ=ON (tests/CMakeLists.txt);
 * seeds in tests/fuzz/corpus_probes/.
 *
 *   build-fuzz/tests/fuzz_probes -max_total_time=20 tests/fuzz/corpus_probes
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "gpushare/tune.h"
#include "gpushare/internal/sweep.h"
#include "tune_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The seeds' cells: two of one shape, one of another, one of a command. */
static const char *const keys[] = {
	"spin|timeslice|w1|b1", "spin|mps|w2|b4", "matmul:size=512|mps-split|w2|b1",
	"command:./w --x|timeslice|w1|b1",
};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static void check_argv(const char *data, size_t size)
{
	char **argv = NULL;
	int rc = gpushare_sweep_recorded_argv_buffer(data, size, "probes.jsonl", &argv);
	bool blank = true;

	for (size_t i = 0; i < size && blank; i++)
		blank = data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n';
	if (rc == GPUSHARE_OK) {
		if (!argv || !argv[0])
			abort();
		for (size_t i = 0; argv[i]; i++)
			if (strlen(argv[i]) > size)
				abort();
		gpushare_sweep_argv_free(argv);
	} else if (argv || rc != (blank ? GPUSHARE_E_NOT_FOUND : GPUSHARE_E_INVAL)) {
		if (rc != GPUSHARE_E_NOMEM)
			abort();
	}
	gpushare_clear_error();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gpushare_tune_candidate cands[N_KEYS];
	struct gpushare_tune_result res;
	struct gpushare_report rep;
	/* An exact-size copy: a read one byte past the input is caught. */
	char *buf = malloc(size ? size : 1);

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	check_argv(buf, size);
	memset(&res, 0, sizeof(res));
	memset(cands, 0, sizeof(cands));
	for (size_t k = 0; k < N_KEYS; k++) {
		snprintf(cands[k].cell.key, sizeof(cands[k].cell.key), "%s", keys[k]);
		cands[k].probe = NAN;
	}
	res.cands = cands;
	res.n_cands = N_KEYS;
	if (gpushare_report_load_buffer(buf, size, &rep) != GPUSHARE_OK)
		abort(); /* only out of memory may fail */
	tune_probes_from_report(&rep, &res);
	for (size_t k = 0; k < N_KEYS; k++) {
		double p = cands[k].probe;

		if (!isnan(p) && !(p == 0 || (isfinite(p) && p > 0)))
			abort();
	}
	gpushare_report_release(&rep);
	gpushare_clear_error();
	free(buf);
	return 0;
}
