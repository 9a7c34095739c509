/*
 * The sweep engine's parser of the grid's lists and its reading of the
 * recorded command line (sweep and tune --resume), for the command line.
 *
 * Not installed: include/gpushare/internal/ holds what only the command
 * line (cli/) uses of the library, so that the installed API is what an
 * embedding program needs. lib/LAYERS places each of these headers with its
 * module's public one.
 */
#ifndef GPUSHARE_INTERNAL_SWEEP_H
#define GPUSHARE_INTERNAL_SWEEP_H

#include <stddef.h>

/* The command line that recorded the first run of a results file (its
 * metadata.command_line: "gpushare", "sweep", ...), NULL-terminated; free
 * with gpushare_sweep_argv_free(). GPUSHARE_E_NOT_FOUND when the file is
 * missing or holds no line; GPUSHARE_E_INVAL when it holds lines but none
 * with a command line (null, empty: the grid they are of is not known);
 * the errors of gpushare_read_file(). */
int gpushare_sweep_recorded_argv(const char *results_path, char ***argv);
/* The same over the file's bytes (len of them, not NUL-terminated); name
 * for the messages. */
int gpushare_sweep_recorded_argv_buffer(const char *data, size_t len, const char *name, char ***argv);
void gpushare_sweep_argv_free(char **argv);

/* Parse a non-empty comma list of whole numbers in [min, max] ("1,3,5,7"),
 * without duplicates, into out[] (at most GPUSHARE_SWEEP_MAX_VALUES).
 * GPUSHARE_E_INVAL naming the bad item. */
int gpushare_sweep_parse_int_list(const char *s, long min, long max, long *out, size_t *n);

#endif
