/*
 * libFuzzer harness for the worker reporting protocol parser (lib/worker/proto.c):
 * feeds arbitrary bytes in arbitrary pieces, the way a misbehaving worker
 * writes them, and checks the parser's promises: it never reads or writes
 * out of bounds (the sanitizers watch), it never holds more than one line,
 * every message it delivers is well-formed, and once it fails it stays
 * failed; a version-2 stream never delivers a version-1 report and a
 * version-1 stream never delivers "done". Built with clang and -DGPUSHARE_FUZZ=ON (tests/CMakeLists.txt);
 * seeds in tests/fuzz/corpus_proto/.
 *
 *   build-fuzz/tests/fuzz_proto -max_total_time=20 tests/fuzz/corpus_proto
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "gpushare/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check_msg(void *arg, const struct gpushare_msg *m)
{
	const struct gpushare_proto *p = arg;

	if (m->type < GPUSHARE_MSG_HELLO || m->type > GPUSHARE_MSG_DONE)
		abort();
	if (m->type == GPUSHARE_MSG_HELLO && (m->a < 1 || m->a > GPUSHARE_PROTO_VERSION))
		abort();
	if (m->type != GPUSHARE_MSG_HELLO && p->version == 1 && m->type == GPUSHARE_MSG_DONE)
		abort();
	if (p->version == 2 && (m->type == GPUSHARE_MSG_SPAN || m->type == GPUSHARE_MSG_REQ))
		abort();
	if (m->type == GPUSHARE_MSG_SPAN && m->b < m->a)
		abort();
	if (strlen(m->text) > GPUSHARE_PROTO_MAX_TEXT)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gpushare_proto p;
	size_t off = 0;
	uint64_t now = 1;
	bool failed = false;

	if (size == 0)
		return 0;
	gpushare_proto_init(&p);
	/* The first byte picks the piece size: whole, or 1..255 byte writes. */
	{
		size_t piece = data[0] ? data[0] : size;

		data++;
		size--;
		while (off < size) {
			size_t n = size - off < piece ? size - off : piece;
			int rc = gpushare_proto_feed(&p, (const char *)data + off, n, now, check_msg, &p);

			if (failed && rc == GPUSHARE_OK)
				abort(); /* a failure must be final */
			if (rc != GPUSHARE_OK)
				failed = true;
			if (p.len >= GPUSHARE_PROTO_MAX_LINE)
				abort(); /* bounded: never a whole line's worth pending */
			off += n;
			now += 1000;
		}
	}
	gpushare_proto_finish(&p);
	return 0;
}
