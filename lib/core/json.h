/*
 * The one way gpushare writes JSON (every document of the library and the
 * command line is built with these; the one exception is a farm's copy of
 * its job list, DIR/jobs.jsonl, which keeps a job's bytes as given because
 * it is read back to run them: lib/farm/farm_jobs.c):
 *
 *  - a number that is not finite, or the project's unknown
 *    (GPUSHARE_UNKNOWN, GPUSHARE_UNKNOWN_U64), is null, never 0;
 *  - a string is valid UTF-8: invalid bytes become U+FFFD (utf8.c), so a
 *    directory or label of any bytes never makes the document invalid;
 *  - every add is checked: each adder returns false when cJSON ran out of
 *    memory or the parent is NULL (a failed add before it), so writers chain
 *    them with && and return an error, never a document missing a field.
 *
 * An adder puts its value under key k of object o, or when k is NULL at the
 * end of array o.
 */
#ifndef GPUSHARE_JSON_H
#define GPUSHARE_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Add v (taken: freed when it cannot be added); false when v is NULL. */
bool gpushare_json_add(cJSON *o, const char *k, cJSON *v);

/* A number; null when v is not finite. */
bool gpushare_json_num(cJSON *o, const char *k, double v);
/* A number when known (and finite), else null. */
bool gpushare_json_num_if(cJSON *o, const char *k, double v, bool known);
/* An integer (exact up to 2^53, as every JSON reader sees numbers). */
bool gpushare_json_int(cJSON *o, const char *k, long long v);
/* An integer; null when v is GPUSHARE_UNKNOWN. */
bool gpushare_json_int_known(cJSON *o, const char *k, long long v);
/* An unsigned 64-bit count; null when v is GPUSHARE_UNKNOWN_U64. */
bool gpushare_json_u64_known(cJSON *o, const char *k, uint64_t v);

/* A string repaired to valid UTF-8; null when s is NULL. */
bool gpushare_json_str(cJSON *o, const char *k, const char *s);
/* A string; null when s is NULL or empty. */
bool gpushare_json_str_or_null(cJSON *o, const char *k, const char *s);

bool gpushare_json_bool(cJSON *o, const char *k, bool b);
bool gpushare_json_null(cJSON *o, const char *k);

/* A new empty object or array added to o; NULL when it could not be. */
cJSON *gpushare_json_obj(cJSON *o, const char *k);
cJSON *gpushare_json_arr(cJSON *o, const char *k);

/* Values not yet placed (for gpushare_json_add): a number (null when not
 * finite), a repaired string (null when s is NULL). NULL when out of memory. */
cJSON *gpushare_json_number(double v);
cJSON *gpushare_json_string(const char *s);

struct gpushare_comparison;
/* The rules behind a comparison (gpushare/stats.h): "method", the t test's
 * "gm_ratio", "t_lo", "t_hi", "t_df", "p_value" and the order-statistic
 * rule's "order_verdict", "order_confidence" (null where unknown). */
bool gpushare_json_compare_method(cJSON *o, const struct gpushare_comparison *c);

/* Reading back (what gpushare wrote, or a file someone edited): the whole
 * number at key k of o when it lies in [0, max] (u64) or [lo, hi] (int);
 * false when absent, not a number, a fraction or out of range (*out then
 * untouched). Never a conversion C leaves undefined. */
bool gpushare_json_get_u64(const cJSON *o, const char *k, uint64_t max, uint64_t *out);
bool gpushare_json_get_int(const cJSON *o, const char *k, long long lo, long long hi, long long *out);

/* The text of doc, indented when pretty, always valid UTF-8 (a string that
 * came in some other way, say parsed from a file, is repaired too); NULL
 * when doc is NULL or out of memory. Free with free(). */
char *gpushare_json_print(const cJSON *doc, bool pretty);

/* The last step of a writer: doc printed when ok (every add succeeded), then
 * freed either way; NULL when !ok or out of memory. */
char *gpushare_json_finish(cJSON *doc, bool ok, bool pretty);

#endif
