/*
 * CSV field quoting (RFC 4180) for the CSV outputs of bench and report.
 */
#include <stdio.h>
#include <string.h>

#include "csv.h"

void gpushare_csv_write_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}
