/*
 * UTF-8 checks and repair. Everything that reaches JSON, HTML, the plots'
 * labels or Prometheus labels passes through here: command lines, workload
 * labels and names read back from a results file may hold any bytes, and a
 * single invalid byte would make the document invalid (cJSON writes bytes as
 * they are; a browser, Prometheus or cairo then refuses the whole output).
 * And the one sanitiser for text printed to a terminal, where an escape
 * byte in a job's command would recolour, retitle or rewrite the screen.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "gpushare/gpushare.h"
#include "gpushare/utf8.h"

static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* Length of the valid character at s (n bytes available), 0 when invalid. */
static size_t char_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned cp, min;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		cp = c & 0x1F;
		min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		cp = c & 0x0F;
		min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		cp = c & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

bool gpushare_utf8_valid(const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; i < n;) {
		size_t l = char_len((const unsigned char *)s + i, n - i);

		if (!l)
			return false;
		i += l;
	}
	return true;
}

size_t gpushare_utf8_copy(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src), out = 0;

	for (size_t i = 0; i < n;) {
		size_t l = char_len((const unsigned char *)src + i, n - i);
		const char *piece = l ? src + i : replacement;
		size_t plen = l ? l : sizeof(replacement) - 1;

		if (out + plen > size - 1)
			break;
		memcpy(dst + out, piece, plen);
		out += plen;
		i += l ? l : 1;
	}
	dst[out] = '\0';
	return out;
}

char *gpushare_utf8_dup(const char *src)
{
	/* Each invalid byte becomes at most three bytes. */
	size_t size = strlen(src) * 3 + 1;
	char *d = malloc(size);

	if (d)
		gpushare_utf8_copy(d, size, src);
	return d;
}

char *gpushare_utf8_fix(char *s)
{
	char *d;

	if (!s || gpushare_utf8_valid(s))
		return s;
	d = gpushare_utf8_dup(s);
	free(s);
	return d;
}

size_t gpushare_utf8_cut(const char *s, size_t len)
{
	size_t i = len;

	/* Step back over continuation bytes to the lead byte of the last
	 * character; keep it only when the whole character fits. */
	while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80 && len - i < 3)
		i--;
	if (i > 0 && (unsigned char)s[i - 1] >= 0xC0) {
		size_t l = char_len((const unsigned char *)s + i - 1, len - (i - 1));

		return l && i - 1 + l == len ? len : i - 1;
	}
	return len;
}

/* The code point of the valid character at s, of l bytes (from char_len). */
static unsigned char_cp(const unsigned char *s, size_t l)
{
	static const unsigned char lead_mask[] = { 0, 0x7F, 0x1F, 0x0F, 0x07 };
	unsigned cp = s[0] & lead_mask[l];

	for (size_t i = 1; i < l; i++)
		cp = (cp << 6) | (s[i] & 0x3F);
	return cp;
}

int gpushare_utf8_term(struct gpushare_buf *b, const char *src)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t n = strlen(src), i = 0;

	while (i < n && !b->failed) {
		size_t run = i, l;
		unsigned cp;

		/* Copy the longest run of characters that need no escape. */
		while (run < n && (l = char_len(s + run, n - run)) != 0) {
			cp = char_cp(s + run, l);
			if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
			    (cp >= 0x2066 && cp <= 0x2069))
				break;
			run += l;
		}
		if (run > i && gpushare_buf_add(b, s + i, run - i))
			break;
		i = run;
		if (i >= n)
			break;
		l = char_len(s + i, n - i);
		if (!l) {
			gpushare_buf_addf(b, "\\x%02X", s[i]);
			i++;
			continue;
		}
		cp = char_cp(s + i, l);
		if (cp == '\t' || cp == '\n' || cp == '\r')
			gpushare_buf_addf(b, "\\%c", cp == '\t' ? 't' : cp == '\n' ? 'n' : 'r');
		else if (cp < 0x80)
			gpushare_buf_addf(b, "\\x%02X", cp);
		else
			gpushare_buf_addf(b, "\\u%04X", cp);
		i += l;
	}
	return b->failed ? GPUSHARE_E_NOMEM : 0;
}

/* ---- a stream of terminal text ---- */

struct term_stream {
	FILE *out;
	char tail[4];   /* the start of a character cut by a write, for the next one */
	size_t n_tail;
	bool failed;
};

/* Write s[0..len) through the sanitiser, line by line: the line breaks are
 * the text's own and stay; a NUL byte is shown as \x00. */
static int term_put(struct term_stream *t, const char *s, size_t len)
{
	struct gpushare_buf shown = { 0 };
	size_t i = 0;

	while (i < len && !shown.failed) {
		size_t j = i;
		char *seg;

		while (j < len && s[j] != '\n' && s[j] != '\0')
			j++;
		if (!(seg = malloc(j - i + 1)))
			return -1;
		memcpy(seg, s + i, j - i);
		seg[j - i] = '\0';
		gpushare_utf8_term(&shown, seg);
		free(seg);
		if (j < len)
			gpushare_buf_add(&shown, s[j] == '\n' ? "\n" : "\\x00", s[j] == '\n' ? 1 : 4);
		i = j + 1;
	}
	if (shown.failed || (shown.len && fwrite(shown.s, 1, shown.len, t->out) != shown.len)) {
		gpushare_buf_release(&shown);
		return -1;
	}
	gpushare_buf_release(&shown);
	return 0;
}

static ssize_t term_write(void *cookie, const char *buf, size_t size)
{
	struct term_stream *t = cookie;
	size_t total = t->n_tail + size, cut;
	char *all = malloc(total ? total : 1);

	if (!all) {
		t->failed = true;
		return -1;
	}
	memcpy(all, t->tail, t->n_tail);
	memcpy(all + t->n_tail, buf, size);
	/* A character cut between two writes waits for its end. */
	cut = gpushare_utf8_cut(all, total);
	if (total - cut > sizeof(t->tail))
		cut = total;
	if (term_put(t, all, cut) != 0) {
		free(all);
		t->failed = true;
		return -1;
	}
	t->n_tail = total - cut;
	memcpy(t->tail, all + cut, t->n_tail);
	free(all);
	return (ssize_t)size;
}

static int term_close(void *cookie)
{
	struct term_stream *t = cookie;
	int rc = t->failed ? -1 : term_put(t, t->tail, t->n_tail);

	if (fflush(t->out) != 0)
		rc = -1;
	free(t);
	return rc;
}

FILE *gpushare_utf8_term_stream(FILE *out)
{
	struct term_stream *t = calloc(1, sizeof(*t));
	FILE *f;

	if (!t)
		return NULL;
	t->out = out;
	f = fopencookie(t, "w", (cookie_io_functions_t){ .write = term_write, .close = term_close });
	if (!f)
		free(t);
	return f;
}
