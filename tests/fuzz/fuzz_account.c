/*
 * libFuzzer harness for the accounting records (lib/account/account.c),
 * which any process of the user may write into the directory the exporter
 * reads: a record the reader accepts has only labels of the safe
 * characters and a GPU UUID empty or of its one form, formats again and
 * reads back the same; the cgroup reader
 * returns terminated, bounded strings. Built with clang and
 * -DGPUSHARE_FUZZ=ON; seeds in tests/fuzz/corpus_account/.
 *
 *   build-fuzz/tests/fuzz_account -max_total_time=20 tests/fuzz/corpus_account
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/account.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_label(const char *s)
{
	size_t n = strnlen(s, GPUSHARE_ACCOUNT_LABEL_MAX);
	char copy[GPUSHARE_ACCOUNT_LABEL_MAX];

	if (n >= GPUSHARE_ACCOUNT_LABEL_MAX)
		abort();
	gpushare_account_label(copy, s);
	if (strcmp(copy, s) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gpushare_account_record r, back;
	char text[GPUSHARE_ACCOUNT_RECORD_MAX], pod[64], ctr[64], *z;

	if (gpushare_account_parse((const char *)data, size, &r) == 0) {
		const struct gpushare_account_owner *o = &r.owner;
		int n;
		check_label(o->slurm_job), check_label(o->slurm_step), check_label(o->k8s_namespace);
		check_label(o->k8s_pod), check_label(o->k8s_container), check_label(o->farm_job), check_label(o->rank);
		if (strnlen(r.gpu_uuid, sizeof(r.gpu_uuid)) >= sizeof(r.gpu_uuid) ||
		    (r.gpu_uuid[0] && !gpushare_account_uuid_valid(r.gpu_uuid)))
			abort();
		n = gpushare_account_format(&r, text, sizeof(text));
		if (n < 0 || gpushare_account_parse(text, (size_t)n, &back) != 0 || back.pid != r.pid ||
		    back.busy_ns != r.busy_ns || back.window_ns != r.window_ns || back.device != r.device ||
		    memcmp(&back.owner, &r.owner, sizeof(r.owner)) != 0 ||
		    memcmp(back.gpu_uuid, r.gpu_uuid, sizeof(r.gpu_uuid)) != 0)
			abort();
	}
	if ((z = malloc(size + 1))) {
		memcpy(z, data, size);
		z[size] = '\0';
		gpushare_account_cgroup_pod(z, pod, sizeof(pod), ctr, sizeof(ctr));
		if (strnlen(pod, sizeof(pod)) >= sizeof(pod) || strnlen(ctr, sizeof(ctr)) >= sizeof(ctr))
			abort();
		free(z);
	}
	return 0;
}
