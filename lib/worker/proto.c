/*
 * Parser of the worker reporting protocol (include/gpushare/proto.h,
 * docs/protocol.md): splits what a worker writes into lines, checks each
 * byte and each field, and hands complete messages to a callback. Written to
 * be fed anything (tests/fuzz/fuzz_proto.c): it never holds more than one
 * line, never reads past what it was given, and fails once, for good.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "gpushare/gpushare.h"
#include "gpushare/proto.h"


void gpushare_proto_init(struct gpushare_proto *p)
{
	memset(p, 0, sizeof(*p));
	p->max_rate = GPUSHARE_PROTO_MAX_RATE;
}

static int proto_error(struct gpushare_proto *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int proto_error(struct gpushare_proto *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->error, sizeof(p->error), fmt, ap);
	va_end(ap);
	p->failed = true;
	return gpushare_fail(GPUSHARE_E_INVAL, "%s", p->error);
}

/* The next field of line[*pos..len): skips blanks, returns its length. */
static size_t next_field(const char *line, size_t len, size_t *pos, const char **field)
{
	size_t start, i = *pos;

	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	start = i;
	while (i < len && line[i] != ' ' && line[i] != '\t')
		i++;
	*field = line + start;
	*pos = i;
	return i - start;
}

/* A decimal number of 1 to 20 digits that fits in 64 bits. */
static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 20)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return false;
		d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool field_is(const char *f, size_t n, const char *word)
{
	return n == strlen(word) && memcmp(f, word, n) == 0;
}

/* Parse `count` numbers, then require the end of the line. */
static int parse_numbers(const char *line, size_t len, size_t pos, const char *what, int count, uint64_t *a,
			 uint64_t *b)
{
	const char *f;
	size_t n;

	for (int i = 0; i < count; i++) {
		n = next_field(line, len, &pos, &f);
		if (!parse_u64(f, n, i == 0 ? a : b))
			return gpushare_fail(GPUSHARE_E_INVAL, "'%s' needs %d whole number%s of nanoseconds%s", what, count,
					     count > 1 ? "s" : "", n ? "" : " (missing)");
	}
	if (next_field(line, len, &pos, &f) != 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' has extra fields", what);
	return GPUSHARE_OK;
}

int gpushare_proto_parse_line(const char *line, size_t len, struct gpushare_msg *m)
{
	const char *f;
	size_t pos = 0, n;

	memset(m, 0, sizeof(*m));
	if (len > 0 && line[len - 1] == '\r')
		len--;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)line[i];

		if ((ch < 0x20 && ch != '\t') || ch > 0x7e)
			return gpushare_fail(GPUSHARE_E_INVAL, "byte 0x%02x at column %zu is not printable text", ch, i + 1);
	}
	n = next_field(line, len, &pos, &f);
	if (n == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty line");
	if (field_is(f, n, "hello")) {
		m->type = GPUSHARE_MSG_HELLO;
		return parse_numbers(line, len, pos, "hello", 1, &m->a, NULL);
	}
	if (field_is(f, n, "ready")) {
		m->type = GPUSHARE_MSG_READY;
		return parse_numbers(line, len, pos, "ready", 0, NULL, NULL);
	}
	if (field_is(f, n, "span")) {
		m->type = GPUSHARE_MSG_SPAN;
		if (parse_numbers(line, len, pos, "span", 2, &m->a, &m->b))
			return GPUSHARE_E_INVAL;
		if (m->b < m->a)
			return gpushare_fail(GPUSHARE_E_INVAL, "'span' ends before it starts");
		return GPUSHARE_OK;
	}
	if (field_is(f, n, "req")) {
		m->type = GPUSHARE_MSG_REQ;
		return parse_numbers(line, len, pos, "req", 1, &m->a, NULL);
	}
	if (field_is(f, n, "done")) {
		m->type = GPUSHARE_MSG_DONE;
		if (parse_numbers(line, len, pos, "done", 1, &m->a, NULL))
			return gpushare_fail(GPUSHARE_E_INVAL, "'done' needs the request's id, a whole number");
		return GPUSHARE_OK;
	}
	if (field_is(f, n, "error") || field_is(f, n, "fail")) {
		m->type = f[0] == 'e' ? GPUSHARE_MSG_ERROR : GPUSHARE_MSG_FAIL;
		while (pos < len && (line[pos] == ' ' || line[pos] == '\t'))
			pos++;
		n = len - pos;
		if (n > GPUSHARE_PROTO_MAX_TEXT)
			n = GPUSHARE_PROTO_MAX_TEXT;
		memcpy(m->text, line + pos, n);
		m->text[n] = '\0';
		return GPUSHARE_OK;
	}
	return gpushare_fail(GPUSHARE_E_INVAL, "unknown message '%.*s'", (int)(n > 24 ? 24 : n), f);
}

/* A complete line: parse, check order and rate, deliver. */
static int take_line(struct gpushare_proto *p, const char *line, size_t len, uint64_t now_ns, gpushare_proto_fn fn,
		     void *arg)
{
	struct gpushare_msg m;

	if (now_ns - p->rate_start_ns >= NS_PER_S || now_ns < p->rate_start_ns) {
		p->rate_start_ns = now_ns;
		p->rate_count = 0;
	}
	if (++p->rate_count > p->max_rate)
		return proto_error(p, "flood: more than %" PRIu64 " messages in one second", p->max_rate);
	if (gpushare_proto_parse_line(line, len, &m)) {
		char detail[128];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		return proto_error(p, "line %" PRIu64 ": %s", p->messages + 1, detail);
	}
	p->messages++;
	if (!p->hello) {
		if (m.type != GPUSHARE_MSG_HELLO)
			return proto_error(p, "the first message must be 'hello 1' or 'hello 2'");
		if (m.a < GPUSHARE_PROTO_VERSION_MIN || m.a > GPUSHARE_PROTO_VERSION)
			return proto_error(p, "protocol version %" PRIu64 " is not supported (gpushare speaks 1 and 2)", m.a);
		p->hello = true;
		p->version = (unsigned)m.a;
	} else if (m.type == GPUSHARE_MSG_HELLO) {
		return proto_error(p, "line %" PRIu64 ": a second 'hello'", p->messages);
	} else if (p->version < 2 && m.type == GPUSHARE_MSG_DONE) {
		return proto_error(p, "line %" PRIu64 ": 'done' is a version 2 message; the worker said 'hello 1'", p->messages);
	} else if (p->version >= 2 && (m.type == GPUSHARE_MSG_SPAN || m.type == GPUSHARE_MSG_REQ)) {
		return proto_error(p, "line %" PRIu64 ": a version 2 worker reports with 'done ID', not '%s'", p->messages,
				   m.type == GPUSHARE_MSG_SPAN ? "span" : "req");
	}
	return fn ? fn(arg, &m) : GPUSHARE_OK;
}

int gpushare_proto_feed(struct gpushare_proto *p, const char *buf, size_t len, uint64_t now_ns,
			gpushare_proto_fn fn, void *arg)
{
	size_t i = 0;

	if (p->failed)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s", p->error);
	p->bytes += len;
	while (i < len) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t chunk = nl ? (size_t)(nl - (buf + i)) : len - i;
		int rc;

		/* The line so far plus this piece (and its newline) must fit. */
		if (p->len + chunk + (nl ? 1 : 0) > GPUSHARE_PROTO_MAX_LINE ||
		    (!nl && p->len + chunk == GPUSHARE_PROTO_MAX_LINE))
			return proto_error(p, "line %" PRIu64 " is longer than %d bytes", p->messages + 1,
					   GPUSHARE_PROTO_MAX_LINE);
		if (!nl) {
			memcpy(p->line + p->len, buf + i, chunk);
			p->len += chunk;
			break;
		}
		if (p->len == 0) {
			rc = take_line(p, buf + i, chunk, now_ns, fn, arg);
		} else {
			memcpy(p->line + p->len, buf + i, chunk);
			rc = take_line(p, p->line, p->len + chunk, now_ns, fn, arg);
			p->len = 0;
		}
		if (rc)
			return rc;
		i += chunk + 1;
	}
	return GPUSHARE_OK;
}

int gpushare_proto_finish(struct gpushare_proto *p)
{
	if (p->failed)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s", p->error);
	if (p->len > 0)
		return proto_error(p, "the stream ended inside a line (%zu bytes without a newline)", p->len);
	return GPUSHARE_OK;
}
