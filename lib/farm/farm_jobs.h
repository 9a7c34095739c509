/*
 * The job list of `gpushare farm`: what to run, parsed once, stored compactly.
 *
 * Jobs come from one of three sources (docs/farm.md, "Job files"):
 *  - a job file, one command line per line, split into argv WITHOUT a shell
 *    (single quotes, double quotes with backslash escapes, backslash; lines
 *    that are blank or start with '#' are skipped);
 *  - the same file in shell mode: each line kept as one string, run as
 *    `/bin/sh -c LINE`;
 *  - a template `CMD ARGS...` whose words may hold the placeholders `{}` (the
 *    argument) and `{#}` (the 1-based job number), expanded over the lines of
 *    an argument file or over an integer range START..END[:STEP].
 *
 * Each job has a stable index (0-based, in the order of the source; skipped
 * lines do not count) and a content hash (FNV-1a 64 over its argv strings,
 * each with its terminating NUL), so a resumed farm can tell that a job file
 * changed. All strings live in one growing arena and each job costs one small
 * table entry. Lines can be added one at a time (gpushare_farm_jobs_add_line), so
 * a reader of standard input can feed the list as the lines arrive.
 *
 * A farm never holds its whole list: with a sink set, each job is handed on
 * as soon as it is parsed and dropped from the list, and the farm keeps the
 * list in its directory instead (DIR/jobs.jsonl, one JSON array of argv
 * strings per line), read back in order by a cursor.
 */
#ifndef GPUSHARE_FARM_JOBS_H
#define GPUSHARE_FARM_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "getenv_fn.h"

/* The longest job line accepted (bytes, without the newline). */
#define FARM_JOB_LINE_MAX (1024 * 1024)
/* The longest line of the farm directory's copy of the list (one job as
 * JSON); the writer refuses a job that would not fit, so that its reader
 * never meets one. */
#define FARM_COPY_LINE_MAX (16 * FARM_JOB_LINE_MAX)
/* Stop requests (gpushare_farm_stop(), async-signal-safe; defined in
 * farm_jobs.c, the lowest file that reads it): 1 no new jobs, 2 stop the running ones too. Set while a
 * list is read, a read it interrupts ends the loading with
 * GPUSHARE_E_INTERRUPTED. */
#include <signal.h>
extern volatile sig_atomic_t farm_stop_level;
/* The most jobs a list may hold (a range larger than this is refused). */
#define FARM_JOBS_MAX 100000000UL

enum farm_jobs_mode {
	FARM_JOBS_ARGV,      /* each line split into argv, no shell */
	FARM_JOBS_SHELL,     /* each line run as /bin/sh -c LINE */
};

struct farm_job_entry {
	uint64_t hash;       /* FNV-1a 64 of the argv strings with their NULs */
	size_t offset;       /* first byte of the job's strings in the arena */
	uint32_t argc;       /* number of strings */
	uint32_t line;       /* 1-based source line (argument line or range
	                      * position for templates), for messages */
};

struct farm_jobs {
	enum farm_jobs_mode mode;
	char *arena;         /* argv strings of every job, each NUL-terminated */
	size_t arena_len, arena_cap;
	struct farm_job_entry *jobs;
	size_t n_jobs, jobs_cap;
	char source[256];    /* file name for messages ("-" shown as "stdin") */
	/* When set, each job is handed to sink(sink_arg, list) as job 0 of the
	 * list right after it is added, then dropped (n_passed counts them):
	 * the list holds at most one job at a time. A non-zero return stops
	 * the loading with that code. */
	int (*sink)(void *arg, const struct farm_jobs *list);
	void *sink_arg;
	size_t n_passed;
};

/* An empty list; no allocation. */
void gpushare_farm_jobs_init(struct farm_jobs *list, enum farm_jobs_mode mode);
/* Free what the list holds; it is empty (and reusable) afterwards. */
void gpushare_farm_jobs_release(struct farm_jobs *list);

/* Add one line of a job file (without its newline; a trailing CR is
 * dropped). `lineno` is its 1-based line number, used in messages. Blank
 * lines and lines whose first non-blank character is '#' add nothing.
 * GPUSHARE_E_INVAL with "FILE:LINE: unterminated double quote" etc. */
int gpushare_farm_jobs_add_line(struct farm_jobs *list, const char *line, size_t len, size_t lineno);

/* Read a whole job file ("-" = standard input), line by line. */
int gpushare_farm_jobs_load_file(struct farm_jobs *list, const char *path);
/* The same from an open stream; `name` is used in messages. */
int gpushare_farm_jobs_load_stream(struct farm_jobs *list, FILE *f, const char *name);

/* Jobs added so far, including those handed to a sink. */
static inline size_t farm_jobs_count(const struct farm_jobs *list)
{
	return list->n_passed + list->n_jobs;
}

/* Split one command line into words with the job-file quoting rules. On
 * success *argv is a malloc'ed NULL-terminated array whose strings are in
 * the same allocation (free(*argv) frees all). The error detail has no file
 * or line prefix. Exposed for tests and for the `-- CMD` form. */
int gpushare_farm_jobs_split(const char *line, size_t len, char ***argv, size_t *argc);

/* ---- templates ---- */

/* An integer range START..END[:STEP], both ends inclusive, STEP >= 1
 * (default 1), START <= END; numbers may be negative. */
struct farm_range {
	long long start, end, step;
};
int gpushare_farm_range_parse(const char *s, struct farm_range *out);
/* Number of values in the range. */
uint64_t gpushare_farm_range_count(const struct farm_range *r);

/* Add one job per value: the template words with `{}` replaced by the value
 * and `{#}` by the 1-based job number. A template holding no `{}` gets the
 * value appended as one more word, as GNU parallel does. In shell mode the
 * words are joined with spaces into one line for /bin/sh -c, and the
 * argument is single-quoted there so that it stays one word. */
int gpushare_farm_jobs_add_template_arg(struct farm_jobs *list, char *const tmpl[], size_t n_tmpl,
			       const char *arg, size_t lineno);
int gpushare_farm_jobs_template_range(struct farm_jobs *list, char *const tmpl[], size_t n_tmpl,
			     const struct farm_range *range);
/* Arguments from a file ("-" = stdin), one per line taken verbatim (no
 * quoting; a trailing CR is dropped); empty lines are skipped. */
int gpushare_farm_jobs_template_file(struct farm_jobs *list, char *const tmpl[], size_t n_tmpl,
			    const char *path);
/* The same from an open stream; `name` is used in messages. */
int gpushare_farm_jobs_template_stream(struct farm_jobs *list, char *const tmpl[], size_t n_tmpl, FILE *f,
				       const char *name);

/* ---- using the list ---- */

/* The argv of job i as a malloc'ed NULL-terminated array of pointers into
 * the arena (free only the array; valid while the list is not changed). In
 * shell mode: { "/bin/sh", "-c", LINE, NULL }. */
int gpushare_farm_jobs_argv(const struct farm_jobs *list, size_t i, char ***argv);


/* A shell-mode job { "/bin/sh", "-c", LINE } whose LINE is one plain
 * command (words of safe characters and quotes, no expansion, operator,
 * redirection, glob, assignment or shell builtin) means what its words
 * mean: *direct gets them (as gpushare_farm_jobs_split() gives them) and
 * the farm executes them itself, so that a signal that ends the command and
 * a program that cannot run are recorded as such (a shell would report
 * exit 128+N or 127). Otherwise *direct is NULL. */
int gpushare_farm_jobs_direct(char *const argv[], char ***direct);

/* Job i as one readable line (words shell-quoted where needed), truncated
 * with "..." to fit buf. For messages and `--dry-run`. */
void gpushare_farm_jobs_format(const struct farm_jobs *list, size_t i, char *buf, size_t len);

/* The hash of the whole list: its mode, its count and every job's hash in
 * order. Two lists with the same value hold the same jobs. */
uint64_t gpushare_farm_jobs_list_hash(const struct farm_jobs *list);
/* The same computed as the jobs go by: begin with the mode and the count,
 * then add every job's hash in order. */
uint64_t gpushare_farm_list_hash_begin(enum farm_jobs_mode mode, uint64_t n_jobs);
uint64_t gpushare_farm_list_hash_add(uint64_t h, uint64_t job_hash);
/* The hash of one job from its argv (NULL-terminated). */
uint64_t gpushare_farm_argv_hash(char *const *argv);

/* ---- sharding ---- */

/* Shard I of N: the jobs whose index mod N == I. {0, 1} is all jobs. */
struct farm_shard {
	unsigned long index, count;
};

/* "I/N" with 0 <= I < N. */
int gpushare_farm_shard_parse(const char *s, struct farm_shard *out);

/* The default shard from a Slurm environment (docs/farm.md, "Sharding"):
 *  - in an array job (SLURM_ARRAY_TASK_ID set): the element's position
 *    (ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP among
 *    SLURM_ARRAY_TASK_COUNT elements (or (MAX - MIN) / STEP + 1 without COUNT);
 *  - in a job step of several tasks (SLURM_STEP_ID set and SLURM_NTASKS > 1):
 *    SLURM_PROCID of SLURM_NTASKS;
 *  - both: shard (array position) * NTASKS + PROCID of COUNT * NTASKS;
 *  - otherwise {0, 1}, and *from_env is false.
 * A batch script itself (no job step) never splits by SLURM_PROCID: it is
 * one process however many tasks the job has. Inconsistent values (a task
 * id outside MIN..MAX, a sparse array without a step that fits) are
 * GPUSHARE_E_INVAL naming the variables; pass --shard explicitly then. */
int gpushare_farm_shard_from_env(gpushare_getenv_fn getenv_fn, void *ctx, struct farm_shard *out,
			bool *from_env);

static inline bool farm_shard_has(const struct farm_shard *s, size_t index)
{
	return index % s->count == s->index;
}

/* Number of jobs of a list of n that shard s selects. */
size_t gpushare_farm_shard_size(const struct farm_shard *s, size_t n);

#endif
