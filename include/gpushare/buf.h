/*
 * Growable buffers: bytes (struct gpushare_buf, always NUL-terminated) and
 * lists of strings (struct gpushare_strv, always NULL-terminated, e.g. an
 * argv or a list of environment changes). Zero-initialised structs are empty
 * and ready; _release frees the contents.
 *
 * A byte buffer remembers a failed append (`failed`): later appends do
 * nothing and fail too, so a writer may append a whole document and check
 * once at the end (the reports do) or check every call.
 */
#ifndef GPUSHARE_BUF_H
#define GPUSHARE_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gpushare_buf {
	char *s;        /* NULL while empty and never grown */
	size_t len, cap;
	bool failed;    /* an append failed: the contents are incomplete */
};

/* Append n bytes; GPUSHARE_E_NOMEM on failure (the contents are unchanged
 * and `failed` is set). */
int gpushare_buf_add(struct gpushare_buf *b, const void *data, size_t n);
int gpushare_buf_addf(struct gpushare_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int gpushare_buf_vaddf(struct gpushare_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Append w as one word a POSIX shell reads back as w (eval, sh -c, a
 * script): as it is when it holds only characters no shell reads
 * specially, else single-quoted, each ' written '\''. The shell quoting of
 * every text gpushare prints for a shell. */
int gpushare_buf_add_sh_word(struct gpushare_buf *b, const char *w);
/* The contents ("" when empty), owned by the buffer. */
const char *gpushare_buf_str(const struct gpushare_buf *b);
/* Hand the contents over (malloc'ed, never NULL unless out of memory). */
char *gpushare_buf_take(struct gpushare_buf *b);
void gpushare_buf_release(struct gpushare_buf *b);

struct gpushare_strv {
	char **v;       /* NULL-terminated once anything was added */
	size_t n, cap;
};

/* Append a formatted string. */
int gpushare_strv_addf(struct gpushare_strv *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int gpushare_strv_vaddf(struct gpushare_strv *l, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* The NULL-terminated list; an empty list gives a pointer to NULL. */
char *const *gpushare_strv_list(const struct gpushare_strv *l);
void gpushare_strv_release(struct gpushare_strv *l);

/* Append a formatted string to the NUL-terminated string in buf, an array
 * of len bytes, cut to fit: for text of a bounded size (a title, a line of
 * words) kept in a fixed array; a buf that is already full is left as it is. */
void gpushare_str_catf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif
