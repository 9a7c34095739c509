/*
 * libFuzzer harness for the farm journal reader (lib/farm/farm_journal_read.c),
 * which `farm --resume` and `farm status` use on DIR/journal.jsonl, a file a
 * crash may have torn and a user may have edited: arbitrary bytes as a
 * journal. Checks the reader's promises: no read or write out of bounds, no
 * overflow (the sanitizers watch), an error or a journal with a header;
 * every record names a job of the header's list and a GPU the journal named;
 * and the resume set built from it accounts for every job of the shard once.
 * Built with clang and -DGPUSHARE_FUZZ=ON (tests/CMakeLists.txt); seeds in
 * tests/fuzz/corpus_journal/.
 *
 *   build-fuzz/tests/fuzz_journal -max_total_time=20 tests/fuzz/corpus_journal
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "farm_jobs.h"
#include "farm_journal.h"
#include "gpushare/gpushare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	struct farm_journal_data d;
	int rc;

	if (fd < 0) {
		fd = memfd_create("journal", MFD_CLOEXEC);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	rc = gpushare_farm_journal_load_path(path, &d);
	if (rc != GPUSHARE_OK) {
		if (rc != GPUSHARE_E_INVAL && rc != GPUSHARE_E_NOMEM)
			abort(); /* a regular file that reads: only bad content or memory */
		return 0;
	}
	if (d.n_headers < 1 || d.config.n_jobs > FARM_JOBS_MAX || d.config.shard.count == 0 ||
	    d.config.shard.index >= d.config.shard.count)
		abort();
	for (size_t i = 0; i < d.n_records; i++) {
		const struct farm_record *r = &d.records[i];

		if (r->gpu_ref >= 0 && (size_t)r->gpu_ref >= d.n_gpus)
			abort();
	}
	if (d.config.n_jobs <= 100000) {
		struct farm_resume rs;

		/* Records of jobs beyond the list are refused, never indexed. */
		if (gpushare_farm_resume_build(&d, (size_t)d.config.n_jobs, &d.config.shard, d.retries_last, &rs) ==
		    GPUSHARE_OK) {
			size_t in_shard = gpushare_farm_shard_size(&d.config.shard, (size_t)d.config.n_jobs);

			if (rs.pending + rs.done + rs.failed != in_shard)
				abort();
			gpushare_farm_resume_release(&rs);
		}
	}
	gpushare_farm_journal_data_release(&d);
	return 0;
}
