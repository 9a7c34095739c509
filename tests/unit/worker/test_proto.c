/*
 * Unit tests of the worker reporting protocol parser (lib/worker/proto.c,
 * docs/protocol.md): every message, every kind of malformed line, partial
 * writes split at every byte, the line bound, the flood bound, and that a
 * failure is final.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "gpushare/proto.h"

#define MAX_SEEN 64

struct seen {
	struct gpushare_msg m[MAX_SEEN];
	size_t n;
	size_t stop_at;                /* return 99 on this message number (1-based), 0 never */
};

static int collect(void *arg, const struct gpushare_msg *m)
{
	struct seen *s = arg;

	if (s->n < MAX_SEEN)
		s->m[s->n] = *m;
	s->n++;
	return s->stop_at && s->n == s->stop_at ? 99 : 0;
}

static int feed_str(struct gpushare_proto *p, struct seen *s, const char *text)
{
	return gpushare_proto_feed(p, text, strlen(text), 1000, collect, s);
}

static void test_parse_each_message(void **state)
{
	struct gpushare_msg m;

	(void)state;
	assert_int_equal(gpushare_proto_parse_line("hello 1", 7, &m), GPUSHARE_OK);
	assert_int_equal(m.type, GPUSHARE_MSG_HELLO);
	assert_int_equal(m.a, 1);
	assert_int_equal(gpushare_proto_parse_line("ready", 5, &m), GPUSHARE_OK);
	assert_int_equal(m.type, GPUSHARE_MSG_READY);
	assert_int_equal(gpushare_proto_parse_line("span 100 250", 12, &m), GPUSHARE_OK);
	assert_int_equal(m.type, GPUSHARE_MSG_SPAN);
	assert_int_equal(m.a, 100);
	assert_int_equal(m.b, 250);
	assert_int_equal(gpushare_proto_parse_line("span\t7  7\r", 10, &m), GPUSHARE_OK);
	assert_int_equal(m.a, 7);
	assert_int_equal(gpushare_proto_parse_line("req 18446744073709551615", 24, &m), GPUSHARE_OK);
	assert_int_equal(m.type, GPUSHARE_MSG_REQ);
	assert_true(m.a == UINT64_MAX);
	assert_int_equal(gpushare_proto_parse_line("error", 5, &m), GPUSHARE_OK);
	assert_int_equal(m.type, GPUSHARE_MSG_ERROR);
	assert_string_equal(m.text, "");
	assert_int_equal(gpushare_proto_parse_line("fail  CUDA error 2: out of memory", 33, &m), GPUSHARE_OK);
	assert_int_equal(m.type, GPUSHARE_MSG_FAIL);
	assert_string_equal(m.text, "CUDA error 2: out of memory");
}

static void test_parse_rejects(void **state)
{
	static const char *bad[] = {
		"", "   ", "hello", "hello x", "hello 1 2", "ready now", "span 1", "span 5 4", "span -1 3",
		"span 1 2 3", "req", "req 18446744073709551616", "req 1e6", "req +5", "Req 5", "stop", "go 1 2",
		"req 123456789012345678901",
	};
	struct gpushare_msg m;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (gpushare_proto_parse_line(bad[i], strlen(bad[i]), &m) != GPUSHARE_E_INVAL)
			fail_msg("accepted '%s'", bad[i]);
		assert_true(gpushare_errdetail()[0] != '\0');
	}
	assert_int_equal(gpushare_proto_parse_line("req 5\0", 6, &m), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_proto_parse_line("error caf\xc3\xa9", 10, &m), GPUSHARE_E_INVAL);
	assert_non_null(strstr(gpushare_errdetail(), "0xc3"));
}

static void test_feed_whole_and_split(void **state)
{
	static const char text[] = "hello 1\nready\r\nspan 10 20\nreq 5\nerror oops\nfail bye\n";
	struct gpushare_proto p;
	struct seen whole = { 0 };

	(void)state;
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &whole, text), GPUSHARE_OK);
	assert_int_equal(whole.n, 6);
	assert_int_equal(gpushare_proto_finish(&p), GPUSHARE_OK);
	/* Any split point, and byte by byte, gives the same messages. */
	for (size_t cut = 0; cut <= sizeof(text) - 1; cut++) {
		struct seen s = { 0 };

		gpushare_proto_init(&p);
		assert_int_equal(gpushare_proto_feed(&p, text, cut, 1000, collect, &s), GPUSHARE_OK);
		assert_int_equal(gpushare_proto_feed(&p, text + cut, sizeof(text) - 1 - cut, 1000, collect, &s),
				 GPUSHARE_OK);
		assert_int_equal(s.n, 6);
		assert_memory_equal(s.m, whole.m, sizeof(whole.m[0]) * 6);
	}
	{
		struct seen s = { 0 };

		gpushare_proto_init(&p);
		for (size_t i = 0; i < sizeof(text) - 1; i++)
			assert_int_equal(gpushare_proto_feed(&p, text + i, 1, 1000, collect, &s), GPUSHARE_OK);
		assert_int_equal(s.n, 6);
		assert_string_equal(s.m[5].text, "bye");
		assert_int_equal(p.messages, 6);
	}
}

static void test_order_and_version(void **state)
{
	struct gpushare_proto p;
	struct seen s = { 0 };

	(void)state;
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "ready\n"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(p.error, "first message must be 'hello 1'"));
	assert_int_equal(s.n, 0);
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 3\n"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(p.error, "version 3 is not supported"));
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 1\nhello 1\n"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(p.error, "second 'hello'"));
}

/* Version 2: requests are handed over and answered with "done ID"; the
 * version-1 reports are refused from a version-2 worker and vice versa. */
static void test_version_2(void **state)
{
	struct gpushare_proto p;
	struct seen s = { 0 };

	(void)state;
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 2\nready\ndone 0\ndone 18446744073709551615\nerror bad input\n"),
			 GPUSHARE_OK);
	assert_int_equal(p.version, 2);
	assert_int_equal(s.n, 5);
	assert_int_equal(s.m[2].type, GPUSHARE_MSG_DONE);
	assert_int_equal(s.m[2].a, 0);
	assert_true(s.m[3].a == UINT64_MAX);
	assert_int_equal(s.m[4].type, GPUSHARE_MSG_ERROR);
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 2\nspan 1 2\n"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(p.error, "not 'span'"));
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 2\nreq 5\n"), GPUSHARE_E_INVAL);
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 1\ndone 3\n"), GPUSHARE_E_INVAL);
	assert_non_null(strstr(p.error, "version 2 message"));
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 0\n"), GPUSHARE_E_INVAL);
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 2\ndone\n"), GPUSHARE_E_INVAL);
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 2\ndone x\n"), GPUSHARE_E_INVAL);
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 2\ndone 1 2\n"), GPUSHARE_E_INVAL);
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 2\ndone 18446744073709551616\n"), GPUSHARE_E_INVAL);
}

static void test_failure_is_final(void **state)
{
	struct gpushare_proto p;
	struct seen s = { 0 };

	(void)state;
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 1\nbogus\nready\n"), GPUSHARE_E_INVAL);
	assert_int_equal(s.n, 1);
	assert_non_null(strstr(p.error, "line 2: unknown message 'bogus'"));
	assert_true(p.failed);
	assert_int_equal(feed_str(&p, &s, "ready\n"), GPUSHARE_E_INVAL);
	assert_int_equal(s.n, 1);
	assert_int_equal(gpushare_proto_finish(&p), GPUSHARE_E_INVAL);
}

static void test_line_bound(void **state)
{
	char line[GPUSHARE_PROTO_MAX_LINE + 8];
	struct gpushare_proto p;
	struct seen s = { 0 };

	(void)state;
	/* 255 bytes and the newline: the longest line there is. */
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 1\n"), GPUSHARE_OK);
	memset(line, ' ', sizeof(line));
	memcpy(line, "error x", 7);
	line[GPUSHARE_PROTO_MAX_LINE - 1] = '\n';
	assert_int_equal(gpushare_proto_feed(&p, line, GPUSHARE_PROTO_MAX_LINE, 1000, collect, &s), GPUSHARE_OK);
	assert_int_equal(s.n, 2);
	assert_int_equal(strlen(s.m[1].text), GPUSHARE_PROTO_MAX_TEXT); /* cut, not overflowed */
	/* One more byte is too long, whether it comes at once or in pieces. */
	line[GPUSHARE_PROTO_MAX_LINE - 1] = ' ';
	line[GPUSHARE_PROTO_MAX_LINE] = '\n';
	assert_int_equal(gpushare_proto_feed(&p, line, GPUSHARE_PROTO_MAX_LINE + 1, 1000, collect, &s),
			 GPUSHARE_E_INVAL);
	assert_non_null(strstr(p.error, "longer than 256 bytes"));
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 1\n"), GPUSHARE_OK);
	for (size_t i = 0; i < GPUSHARE_PROTO_MAX_LINE - 1; i++)
		assert_int_equal(gpushare_proto_feed(&p, "x", 1, 1000, collect, &s), GPUSHARE_OK);
	assert_int_equal(gpushare_proto_feed(&p, "x", 1, 1000, collect, &s), GPUSHARE_E_INVAL);
	/* A stream that ends inside a line. */
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 1\nrea"), GPUSHARE_OK);
	assert_int_equal(gpushare_proto_finish(&p), GPUSHARE_E_INVAL);
	assert_non_null(strstr(p.error, "ended inside a line"));
}

static void test_flood_bound(void **state)
{
	static const char req[] = "req 1\n";
	struct gpushare_proto p;
	uint64_t i;

	(void)state;
	gpushare_proto_init(&p);
	assert_int_equal(p.max_rate, GPUSHARE_PROTO_MAX_RATE);
	assert_true(GPUSHARE_PROTO_MAX_RATE >= 5000000u); /* an empty request loop of the C client */
	p.max_rate = 1000; /* the same rule at a bound the test can reach quickly */
	assert_int_equal(gpushare_proto_feed(&p, "hello 1\n", 8, 5, NULL, NULL), GPUSHARE_OK);
	/* The bound holds per second: as many again a second later is fine. */
	for (i = 1; i < p.max_rate; i++)
		assert_int_equal(gpushare_proto_feed(&p, req, 6, 10, NULL, NULL), GPUSHARE_OK);
	for (i = 0; i < p.max_rate; i++)
		assert_int_equal(gpushare_proto_feed(&p, req, 6, 10 + 1000000000ULL, NULL, NULL), GPUSHARE_OK);
	assert_int_equal(gpushare_proto_feed(&p, req, 6, 10 + 1000000000ULL, NULL, NULL), GPUSHARE_E_INVAL);
	assert_non_null(strstr(p.error, "flood"));
}

static void test_callback_stops(void **state)
{
	struct gpushare_proto p;
	struct seen s = { .stop_at = 2 };

	(void)state;
	gpushare_proto_init(&p);
	assert_int_equal(feed_str(&p, &s, "hello 1\nready\nreq 5\n"), 99);
	assert_int_equal(s.n, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_each_message),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_feed_whole_and_split),
		cmocka_unit_test(test_order_and_version),
		cmocka_unit_test(test_failure_is_final),
		cmocka_unit_test(test_line_bound),
		cmocka_unit_test(test_flood_bound),
		cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_version_2),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
