/*
 * UTF-8 checks and repair (lib/core/utf8.c): everything gpushare writes for
 * machines or browsers (JSON, HTML, plot and Prometheus labels) is valid
 * UTF-8, whatever bytes a command line, label or directory name holds.
 */
#ifndef GPUSHARE_UTF8_H
#define GPUSHARE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "gpushare/buf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether s (NUL-terminated) is valid UTF-8 (no overlong forms, surrogates
 * or code points above U+10FFFF). */
bool gpushare_utf8_valid(const char *s);

/* Copy src into dst (size bytes, size >= 1, always NUL-terminated), each
 * invalid byte sequence replaced by U+FFFD; when it does not fit, cut between
 * characters, never inside one. Returns the bytes written (without the NUL). */
size_t gpushare_utf8_copy(char *dst, size_t size, const char *src);

/* A malloc'ed copy of src with invalid sequences replaced by U+FFFD; NULL
 * when out of memory. */
char *gpushare_utf8_dup(const char *src);

/* Take a malloc'ed string (NULL passes through) and return it valid UTF-8:
 * itself when it is, else a repaired copy (and the original freed); NULL
 * when out of memory. For printed JSON documents: cJSON copies bytes of
 * strings as they are, and a repaired document is still valid JSON. */
char *gpushare_utf8_fix(char *s);

/* The length of the longest prefix of s[0..len) that does not end inside a
 * multi-byte character: where a label may be cut. */
size_t gpushare_utf8_cut(const char *s, size_t len);

/* The one terminal sanitiser: append src to b as text a terminal shows as
 * it reads, for anything user-controlled printed to a terminal (job
 * commands, file names in messages). A control character (C0, DEL, C1) is
 * written as \xHH (\u00HH for C1, \t, \n and \r as such), a bidi
 * control (U+202A..U+202E, U+2066..U+2069) as \uHHHH, each byte of an
 * invalid sequence as \xHH; all else is copied. Returns 0 or
 * GPUSHARE_E_NOMEM (b's `failed` set). */
int gpushare_utf8_term(struct gpushare_buf *b, const char *src);

/* A stream for a whole text a terminal shows (a table, a report, a log):
 * what is written to it reaches out through gpushare_utf8_term, line by
 * line, its line breaks kept (a character cut between two writes waits for
 * its end). fclose() writes the rest and flushes out, which stays open; it
 * returns EOF when a write failed. NULL when out of memory. Machine output
 * (JSON, CSV) never goes through it. */
FILE *gpushare_utf8_term_stream(FILE *out);

#ifdef __cplusplus
}
#endif

#endif
