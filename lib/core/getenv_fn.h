/*
 * An environment lookup passed to the functions that read a launcher's or a
 * scheduler's variables, so they stay pure and can be tested with a table.
 */
#ifndef GPUSHARE_GETENV_FN_H
#define GPUSHARE_GETENV_FN_H

/* Returns the value of `name`, or NULL when it is not set. */
typedef const char *(*gpushare_getenv_fn)(void *ctx, const char *name);

/* The one over this process's environment is gpushare_getenv_process()
 * (lib/sys/sys.h). */

/* The one reader of a number from the environment (lib/core/parse.c, beside
 * gpushare_parse_id, whose rules it keeps): digits only (no sign, space or
 * empty value), within [min, max] (0 <= min <= max). 1 with *out when the
 * variable is set and valid, 0 when it is not set, a negative error naming
 * the variable and its value otherwise. */
int gpushare_env_number(gpushare_getenv_fn getenv_fn, void *ctx, const char *name, long min, long max, long *out);

#endif
