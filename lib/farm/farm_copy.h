/*
 * The farm directory's copy of the job list, DIR/jobs.jsonl
 * (lib/farm/farm_copy.c): one line of JSON per job, an array of its argv
 * strings. A farm parses its job source once into the copy (the list holds
 * one job at a time), and runs its jobs from the copy, read in job order by
 * a cursor; farm status and --dry-run read it for the jobs' commands.
 */
#ifndef GPUSHARE_FARM_COPY_H
#define GPUSHARE_FARM_COPY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "farm_jobs.h"

#define FARM_JOBS_COPY_NAME "jobs.jsonl"

/* A sink (struct farm_jobs.sink) that writes each job as one line of JSON,
 * an array of its argv strings, to the stdio stream `arg` (a FILE *). */
int gpushare_farm_jobs_copy_sink(void *arg, const struct farm_jobs *list);

/* Reads a copy in job order, one job at a time. */
struct farm_cursor {
	FILE *f;
	char *line;
	size_t cap;
	uint64_t index;          /* the number of the next job */
	char path[4096 + 64];
};

/* Open a copy for reading: a symbolic link, anything but a regular file,
 * or a file of another user is refused (GPUSHARE_E_DIR); a missing file is
 * GPUSHARE_E_NOT_FOUND. */
int gpushare_farm_cursor_open(struct farm_cursor *c, const char *path);
/* The next job: 1 and its argv (malloc'ed, NULL-terminated, the strings in
 * the same allocation: free(*argv) frees all; argv may be NULL) and hash
 * (may be NULL); 0 at the end; GPUSHARE_E_INVAL naming the line when it is
 * not an array of strings. With parse false the job is skipped unread. */
int gpushare_farm_cursor_next(struct farm_cursor *c, bool parse, char ***argv, uint64_t *hash);
/* Back to job 0. */
int gpushare_farm_cursor_rewind(struct farm_cursor *c);
/* Read the whole copy for its count and list hash, then rewind. */
int gpushare_farm_cursor_scan(struct farm_cursor *c, enum farm_jobs_mode mode, uint64_t *n_jobs,
			      uint64_t *list_hash);
void gpushare_farm_cursor_close(struct farm_cursor *c);

#endif
