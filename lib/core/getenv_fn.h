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

#endif
