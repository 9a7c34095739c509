/* Growable byte buffers and string lists (buf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/buf.h"
#include "gpushare/gpushare.h"

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return GPUSHARE_OK;
	while (ncap < need) {
		if (ncap > ((size_t)-1) / 2 / elem)
			return gpushare_fail(GPUSHARE_E_NOMEM, "buffer too large");
		ncap *= 2;
	}
	np = realloc(*p, ncap * elem);
	if (!np)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot grow a buffer to %zu bytes", ncap * elem);
	*p = np;
	*cap = ncap;
	return GPUSHARE_OK;
}

/* A byte buffer that cannot take more: it failed before, or cannot grow to
 * need bytes now. */
static int refuse(struct gpushare_buf *b, size_t need)
{
	if (b->failed)
		return gpushare_fail(GPUSHARE_E_NOMEM, "a buffer failed to grow before");
	if (grow((void **)&b->s, &b->cap, need, 1)) {
		b->failed = true;
		return GPUSHARE_E_NOMEM;
	}
	return GPUSHARE_OK;
}

int gpushare_buf_add(struct gpushare_buf *b, const void *data, size_t n)
{
	int rc = refuse(b, b->len + n + 1);

	if (rc)
		return rc;
	if (n)
		memcpy(b->s + b->len, data, n);
	b->len += n;
	b->s[b->len] = '\0';
	return GPUSHARE_OK;
}

int gpushare_buf_vaddf(struct gpushare_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	int n, rc;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "bad format");
	rc = refuse(b, b->len + (size_t)n + 1);
	if (rc)
		return rc;
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return GPUSHARE_OK;
}

int gpushare_buf_addf(struct gpushare_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = gpushare_buf_vaddf(b, fmt, ap);
	va_end(ap);
	return rc;
}

int gpushare_buf_add_sh_word(struct gpushare_buf *b, const char *w)
{
	size_t n = strlen(w), plain = strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%_+=:,./-");
	int rc;

	if (n && plain == n)
		return gpushare_buf_add(b, w, n);
	rc = gpushare_buf_add(b, "'", 1);
	for (const char *p = w, *q; !rc && *p; p = q) {
		q = strchr(p, '\'');
		if (!q) {
			rc = gpushare_buf_add(b, p, strlen(p));
			break;
		}
		rc = gpushare_buf_add(b, p, (size_t)(q - p));
		if (!rc)
			rc = gpushare_buf_add(b, "'\\''", 4);
		q++;
	}
	return rc ? rc : gpushare_buf_add(b, "'", 1);
}

const char *gpushare_buf_str(const struct gpushare_buf *b)
{
	return b->s ? b->s : "";
}

char *gpushare_buf_take(struct gpushare_buf *b)
{
	char *s = b->s ? b->s : calloc(1, 1);

	b->s = NULL;
	b->len = b->cap = 0;
	b->failed = false;
	return s;
}

void gpushare_buf_release(struct gpushare_buf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
	b->failed = false;
}

int gpushare_strv_addf(struct gpushare_strv *l, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = gpushare_strv_vaddf(l, fmt, ap);
	va_end(ap);
	return rc;
}

int gpushare_strv_vaddf(struct gpushare_strv *l, const char *fmt, va_list ap)
{
	struct gpushare_buf b = { 0 };
	int rc = gpushare_buf_vaddf(&b, fmt, ap);

	if (!rc)
		rc = grow((void **)&l->v, &l->cap, l->n + 2, sizeof(*l->v));
	if (rc) {
		gpushare_buf_release(&b);
		return rc;
	}
	l->v[l->n++] = gpushare_buf_take(&b);
	l->v[l->n] = NULL;
	return l->v[l->n - 1] ? GPUSHARE_OK : gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
}

char *const *gpushare_strv_list(const struct gpushare_strv *l)
{
	static char *const empty[1] = { NULL };

	return l->v ? l->v : empty;
}

void gpushare_strv_release(struct gpushare_strv *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

void gpushare_str_catf(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}
