/*
 * The worker reporting protocol (versions 1 and 2): how a program run with
 * `gpushare bench -- CMD` tells gpushare that it is ready and how long each
 * of its requests took. This header is the parser gpushare runs over what a
 * worker writes; docs/protocol.md is the specification, and the clients are
 * include/gpushare/client.h (C, header-only) and python/gpushare_client.py.
 *
 * Framing: text lines ending in '\n' (an optional '\r' before it is
 * dropped), at most GPUSHARE_PROTO_MAX_LINE bytes each, newline included;
 * printable ASCII and tab only. Worker to gpushare:
 *
 *   hello <version>        first line, always; version 1 or 2
 *   ready                  warm-up done; wait for "go"
 *   span <start> <end>     v1: one request: CLOCK_MONOTONIC start and end, ns
 *   req <latency>          v1: one request that just ended, latency in ns
 *   done <id>              v2: request <id> (as gpushare sent it) is finished
 *   error [text]           one request failed (v2: the one in hand); the run goes on
 *   fail [text]            the worker gives up; it should exit next
 *
 * gpushare to worker: "go <measure_start_ns> <measure_end_ns>" after the
 * start barrier (end 0 when the window has no fixed end), v2: "req <id>"
 * for each request it hands over, one at a time, and "stop".
 *
 * Version 1 workers run their own loop and say how long each request took;
 * version 2 workers are handed their requests, which open-loop load needs
 * (gpushare decides when a request arrives). gpushare speaks both and
 * follows the worker's hello.
 *
 * The parser holds at most one line: memory is bounded whatever the worker
 * writes. It stops at the first error (a line too long, a byte that is not
 * printable, an unknown message, bad numbers, a message before hello, a
 * version it does not speak, more than GPUSHARE_PROTO_MAX_RATE messages in
 * one second) and stays failed: gpushare then stops that worker.
 */
#ifndef GPUSHARE_PROTO_H
#define GPUSHARE_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSHARE_PROTO_VERSION 2u       /* the highest version gpushare speaks */
#define GPUSHARE_PROTO_VERSION_MIN 1u
#define GPUSHARE_PROTO_MAX_LINE 256      /* bytes, newline included */
/* Messages per second before it counts as a flood. An empty request through
 * the C client costs about 0.2 us, so a real program may send 5 million
 * spans a second; the bound is four times that. */
#define GPUSHARE_PROTO_MAX_RATE 20000000u
#define GPUSHARE_PROTO_MAX_TEXT 200      /* error/fail text kept, bytes */

enum gpushare_msg_type {
	GPUSHARE_MSG_HELLO = 1,
	GPUSHARE_MSG_READY,
	GPUSHARE_MSG_SPAN,
	GPUSHARE_MSG_REQ,
	GPUSHARE_MSG_ERROR,
	GPUSHARE_MSG_FAIL,
	GPUSHARE_MSG_DONE,             /* version 2 */
};

struct gpushare_msg {
	enum gpushare_msg_type type;
	uint64_t a, b;                 /* hello: a = version; span: a = start, b = end (ns);
					* req: a = latency (ns); done: a = request id */
	char text[GPUSHARE_PROTO_MAX_TEXT + 1]; /* error/fail: the text, "" none */
};

/* Called for each complete message; a non-zero return stops the feed, which
 * then returns that value. */
typedef int (*gpushare_proto_fn)(void *arg, const struct gpushare_msg *m);

struct gpushare_proto {
	char line[GPUSHARE_PROTO_MAX_LINE];
	size_t len;                    /* bytes of the current, unfinished line */
	bool hello;                    /* a valid hello was seen */
	unsigned version;              /* the version it said, once hello was seen */
	bool failed;                   /* sticky: the first error ends parsing */
	char error[160];               /* that error, one line */
	uint64_t messages, bytes;      /* totals, for reports */
	uint64_t rate_start_ns;        /* start of the current one-second window */
	uint64_t rate_count;           /* messages in it */
	uint64_t max_rate;             /* the flood bound (init: GPUSHARE_PROTO_MAX_RATE) */
};

void gpushare_proto_init(struct gpushare_proto *p);

/* Parse one line (without its newline). GPUSHARE_E_INVAL with a detail for
 * anything but a well-formed message; does not know about hello order. */
int gpushare_proto_parse_line(const char *line, size_t len, struct gpushare_msg *m);

/* Feed len bytes read from the worker at time now_ns (CLOCK_MONOTONIC; used
 * only for the flood bound). Complete messages go to fn in order. Returns
 * GPUSHARE_OK, fn's non-zero value, or GPUSHARE_E_INVAL on a protocol error
 * (detail in p->error and gpushare_errdetail()); once failed, every later
 * call returns GPUSHARE_E_INVAL without parsing. */
int gpushare_proto_feed(struct gpushare_proto *p, const char *buf, size_t len, uint64_t now_ns,
			gpushare_proto_fn fn, void *arg);

/* End of stream: GPUSHARE_E_INVAL when a partial line is left over. */
int gpushare_proto_finish(struct gpushare_proto *p);

#ifdef __cplusplus
}
#endif
#endif
