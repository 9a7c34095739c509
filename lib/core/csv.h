/*
 * CSV writing shared by the printers of benchmark results (bench_output.c)
 * and of sweep reports (report_text.c). Internal to libgpushare.
 */
#ifndef GPUSHARE_CSV_H
#define GPUSHARE_CSV_H

#include <stdio.h>

/* Write s as one CSV field: quoted when it holds a comma, quote or line
 * break, with quotes doubled (RFC 4180). Errors show in ferror(f). */
void gpushare_csv_write_field(FILE *f, const char *s);

#endif
