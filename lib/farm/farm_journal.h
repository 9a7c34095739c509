/*
 * The journal of a farm: what happened to every job, kept so that a farm
 * stopped in any way (Ctrl-C, SIGTERM, SIGKILL, a reboot) can be resumed
 * with nothing lost and nothing repeated, and so that `farm status` can
 * summarise one farm directory or several shard directories.
 *
 * Format (docs/farm.md, "The journal"): DIR/journal.jsonl, JSON Lines. The
 * first record is a header ("type":"header") with the farm's configuration;
 * a resumed farm appends another header. Then one record per ended attempt
 * ("type":"attempt"). Each record is written with one write() of the whole
 * line and fsync'ed (a running farm fsyncs in a background thread, so that
 * a slow disk does not hold back the next job; records written during one
 * fsync share the next), to a file opened O_APPEND | O_NOFOLLOW | O_CLOEXEC and
 * locked (flock) by its one writer. A crash can leave only the last line
 * torn (without its newline); readers ignore such a line, and the next
 * writer cuts it off before appending.
 *
 * A job whose attempt was running when the farm was killed has no record
 * and runs again on resume (attempts are recorded when they end).
 */
#ifndef GPUSHARE_FARM_JOURNAL_H
#define GPUSHARE_FARM_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "farm_jobs.h"

#define FARM_JOURNAL_NAME "journal.jsonl"
/* Version 2 numbers jobs from 1 in its attempt records (as in out/JOB.ATTEMPT
 * file names, GPUSHARE_FARM_JOB and {#}); version 1 (an earlier gpushare)
 * numbered them from 0. Readers take both; a farm appends only to version 2. */
#define FARM_JOURNAL_VERSION 2
/* The number people, files, variables and the journal give the job of
 * index i (0-based inside the farm). */
#define FARM_JOB_NUMBER(i) ((uint64_t)(i) + 1)

/* The wall clock, in seconds since the epoch (the records' times). */
static inline double farm_unix_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The longest record a reader accepts (bytes, with the newline). */
#define FARM_JOURNAL_LINE_MAX (64 * 1024)
#define FARM_MAX_GPUS 64

enum farm_outcome {
	FARM_OK,        /* exit status 0 */
	FARM_FAILED,    /* non-zero exit status or killed by a signal */
	FARM_TIMEOUT,   /* killed by gpushare when --timeout ran out */
	FARM_REFUSED,   /* never started: cannot be executed, or can never fit */
	FARM_STOPPED,   /* killed by gpushare on a stop (second Ctrl-C, SIGTERM):
	                 * runs again on resume, not counted against --retries */
	FARM_BYSTANDER, /* failed by another job's fatal GPU fault under MPS:
	                 * runs again, not counted against --retries */
};

/* "ok", "failed", "timeout", "refused", "stopped", "bystander". */
const char *gpushare_farm_outcome_name(enum farm_outcome o);
/* The inverse; -1 when unknown. */
int gpushare_farm_outcome_parse(const char *s);
/* "argv" or "shell", as a header records it. */
const char *gpushare_farm_jobs_mode_name(enum farm_jobs_mode m);

struct farm_gpu_id {
	int index;                     /* NVML index */
	char uuid[96];                 /* "GPU-..." ("" unknown) */
};

/* The configuration a header records. Resuming requires the same jobs
 * (count, list hash, mode) and the same shard; the other fields may change
 * from one run to the next and are recorded for the reader. */
struct farm_config {
	unsigned version;              /* the header's journal version (read); 1 numbered jobs from 0 */
	uint64_t n_jobs;               /* jobs in the whole list (all shards) */
	uint64_t jobs_hash;            /* gpushare_farm_jobs_list_hash() */
	enum farm_jobs_mode mode;
	char jobs_source[256];         /* job file or template source, informative */
	struct farm_shard shard;
	unsigned retries;              /* attempts after the first that a failed
	                                * or timed-out job gets */
	unsigned slots;                /* jobs at once per GPU */
	char strategy[32];             /* "mps", "mps-split", "timeslice" */
	uint64_t timeout_ns;           /* 0 = none */
	double timeout_factor;         /* --timeout Nx: N; 0 = none */
	uint64_t mem_per_job_bytes;    /* 0 = not set */
	char hostname[256];
	struct farm_gpu_id gpus[FARM_MAX_GPUS];
	size_t n_gpus;
	char slurm[160];               /* Slurm's share honoured, "" none (informative) */
	bool busy_periods;             /* the attempts of this run carry gpu_busy_seconds
	                                * where they close a GPU's busy period */
};

/* One ended attempt. */
struct farm_attempt {
	uint64_t job;                  /* job index, 0-based (the record says FARM_JOB_NUMBER) */
	uint64_t hash;                 /* the job's hash */
	unsigned attempt;              /* 1-based */
	enum farm_outcome outcome;
	int exit_code;                 /* -1 when killed by a signal or never started */
	int signal;                    /* 0 when none */
	int gpu;                       /* NVML index, -1 when never placed */
	char gpu_uuid[96];
	int slot;                      /* slot on that GPU, -1 when none */
	double start_unix_s, end_unix_s;  /* wall clock, seconds since the epoch */
	double duration_s;             /* measured on the monotonic clock */
	char stdout_path[256];         /* relative to the farm directory */
	char stderr_path[256];
	/* The attempt left its GPU idle: gpu_busy_s is the length of the busy
	 * period it closed (first start on the idle GPU to this end). */
	bool has_gpu_busy;
	double gpu_busy_s;
	/* A failed attempt that caused a fatal GPU fault under MPS ("fault":
	 * "culprit" in the record); counted against --retries as any failure. */
	bool culprit;
};

/* A fatal GPU fault under MPS and its containment ("type":"fault", written
 * after the attempts it names): the culprit's attempt, the bystanders
 * (attempts failed by it, requeued without charge), from the first failure
 * to the server serving again. */
struct farm_fault_record {
	int gpu;                       /* NVML index */
	char gpu_uuid[96];
	uint64_t culprit;              /* job */
	unsigned culprit_attempt;
	bool culprit_failed;           /* failed for good (faulted again, or no retry left) */
	char evidence[32];             /* how the culprit was told: "server log", "alone",
	                                * "earlier fault", "first to fail" */
	const uint64_t *bystanders;    /* jobs; the reader keeps only their count */
	size_t n_bystanders;
	double start_unix_s;           /* the first failure */
	double recovered_unix_s;       /* the server serves again */
	bool server_restarted;         /* it did not recover in time and was shut down */
};

/* ---- writing ---- */

struct farm_journal_syncer;

struct farm_journal {
	int fd;
	char path[4096];
	struct farm_journal_syncer *syncer;  /* NULL: each write fsyncs itself */
	bool torn;           /* the file ends in a torn line, cut before the first write */
	off_t keep;          /* where that line starts */
	uint64_t cut_bytes;  /* the torn bytes the first write cut off, for a warning */
};

/* Open (creating when absent) DIR/journal.jsonl for appending, refusing a
 * symlink or anything but a regular file of this user, and take an
 * exclusive lock: GPUSHARE_E_BUSY when another process writes it. Opening
 * changes nothing in the file: a torn last line left by a crash is only
 * noted, and cut off by the first write (cut_bytes tells how many bytes),
 * so that a farm refused after opening leaves the journal as it was.
 * *existing tells whether the file holds anything (even only a torn line). */
int gpushare_farm_journal_open(struct farm_journal *j, const char *dir, bool *existing);
/* Cut a torn last line off the journal (its writer died mid-write); for
 * the farm's keeper, which appends after a killed farm. */
int gpushare_farm_journal_cut_torn(struct farm_journal *j);
/* Make the journal's writes durable in the background from now on: a
 * thread fsyncs whenever records were written since its last fsync, so a
 * write returns once its record is in the file (safe against a kill of
 * gpushare at once; against a crash of the machine once the fsync that
 * started after it has finished) and the records written during one fsync
 * share the next one (group commit). A failed fsync is returned by the next
 * write or gpushare_farm_journal_sync(). */
int gpushare_farm_journal_sync_in_background(struct farm_journal *j);
/* Wait until every record written so far is fsync'ed (with or without the
 * background thread). GPUSHARE_E_IO when an fsync failed. */
int gpushare_farm_journal_sync(struct farm_journal *j);
/* Wait for the last fsync, stop the thread, release the lock and close. */
void gpushare_farm_journal_close(struct farm_journal *j);

/* Append a header / an attempt record: one write(), then fsync() (or, in
 * the background, an fsync that starts after the write). */
int gpushare_farm_journal_write_header(struct farm_journal *j, const struct farm_config *cfg);
int gpushare_farm_journal_write_attempt(struct farm_journal *j, const struct farm_attempt *a);

/* Append n attempt records with one write() and one fsync() (a farm
 * records the attempts that ended together at once). A
 * crash mid-write can leave only the last line torn, as for one record. */
int gpushare_farm_journal_write_attempts(struct farm_journal *j, const struct farm_attempt *a, size_t n);
int gpushare_farm_journal_write_fault(struct farm_journal *j, const struct farm_fault_record *f);

/* The JSON of a record (for --json output and tests); caller frees. */
char *gpushare_farm_journal_header_json(const struct farm_config *cfg);
char *gpushare_farm_journal_attempt_json(const struct farm_attempt *a);
char *gpushare_farm_journal_fault_json(const struct farm_fault_record *f);

/* ---- reading ---- */

/* A compact attempt as the reader keeps it (no paths). */
struct farm_record {
	uint64_t job, hash;
	double start_unix_s, end_unix_s, duration_s;
	uint32_t attempt;
	int16_t gpu_ref;               /* index into farm_journal_data.gpus, -1 none */
	uint8_t outcome;
	int exit_code, signal, slot;
	double gpu_busy_s;             /* < 0: the record closes no busy period */
};

struct farm_journal_data {
	struct farm_config config;     /* from the first header */
	size_t n_headers;
	struct farm_record *records;
	size_t n_records, cap;
	/* The GPUs records name (by uuid, or "index@host" without one). */
	char (*gpus)[128];
	size_t n_gpus;
	unsigned retries_last;         /* --retries of the last header */
	bool torn_tail;                /* the last line had no newline: ignored */
	char path[4096];
};

/* What a reader does with each record as it goes (a scan): `header` for
 * every header (d->config holds the first one), `record` for every attempt;
 * either may be NULL. A non-zero return stops the scan with that code. */
struct farm_journal_scan {
	int (*header)(void *arg, struct farm_journal_data *d, const struct farm_config *cfg);
	int (*record)(void *arg, struct farm_journal_data *d, const struct farm_record *r);
	void *arg;
	/* for every fault record (bystanders NULL, their count kept); may be NULL */
	int (*fault)(void *arg, struct farm_journal_data *d, const struct farm_fault_record *f);
};

/* Read the journal file at path in one pass, keeping no record (d->records
 * stays empty): memory does not grow with the journal. Errors as for
 * gpushare_farm_journal_load. `d` is filled as by a load; release it. */
int gpushare_farm_journal_scan_path(const char *path, struct farm_journal_data *d,
				    const struct farm_journal_scan *scan);

/* Read DIR/journal.jsonl. A torn last line is ignored (torn_tail); any other
 * line that is not a valid record is GPUSHARE_E_INVAL with
 * "PATH:LINE: ...". A missing file is GPUSHARE_E_NOT_FOUND. */
int gpushare_farm_journal_load(const char *dir, struct farm_journal_data *out);
/* The same from a path to the journal file itself. */
int gpushare_farm_journal_load_path(const char *path, struct farm_journal_data *out);
void gpushare_farm_journal_data_release(struct farm_journal_data *d);

/* Check that a journal belongs to this farm before resuming: same job
 * count, mode and shard, and every recorded job's hash equal to the job's
 * hash in `jobs`. GPUSHARE_E_INVAL naming the first differing job
 * ("job 17 (line 18) differs from the journal's: ...") otherwise. */
int gpushare_farm_journal_check_resume(const struct farm_journal_data *d, const struct farm_config *cfg,
			      const struct farm_jobs *jobs);

/* ---- resuming ---- */

enum farm_job_state {
	FARM_JOB_PENDING = 0,   /* must run (again) */
	FARM_JOB_DONE = 1,      /* finished with exit status 0 */
	FARM_JOB_FAILED = 2,    /* failed, timed out or refused, retries used up */
	FARM_JOB_OTHER_SHARD = 3,
};

/* A job still to run that has earlier attempts. */
struct farm_resume_entry {
	uint64_t job;
	uint32_t attempts;       /* attempts that count against --retries so far */
	uint32_t last_attempt;   /* highest attempt number recorded, any outcome:
	                          * the next attempt is this + 1, so output file
	                          * names never repeat */
};

/* What a resumed farm still has to run: one byte per job, and attempt
 * counts only for the pending jobs that have failed, timed-out or stopped
 * attempts (sorted by job). */
struct farm_resume {
	uint8_t *state;          /* enum farm_job_state per job index */
	struct farm_resume_entry *entries;
	size_t n_entries;
	size_t n_jobs;
	size_t pending, done, failed;   /* in this shard */
	/* Set between begin and end: the jobs that failed for good (retries
	 * used up, or refused) are pending again, with no attempt counted
	 * against --retries (gpushare_farm_config.rerun_failed). */
	bool rerun_failed;
	/* while records are added: the failed, timed-out and stopped ones */
	struct farm_resume_entry *notes;
	size_t n_notes, cap_notes;
};

/* Which jobs of the shard still have to run: those with no ok record and,
 * when they failed or timed out, fewer than 1 + retries such attempts. A
 * refused job is final, unless rerun_failed is set. A job with an ok record is never run again, even
 * if it also has failed records. Built as records go by: begin, add each
 * record, end. */
int gpushare_farm_resume_begin(struct farm_resume *r, size_t n_jobs);
/* --rerun-failed: set between begin and end (rerun_failed above). */
void gpushare_farm_resume_rerun_failed(struct farm_resume *r);
int gpushare_farm_resume_add(struct farm_resume *r, const struct farm_record *rec);
int gpushare_farm_resume_end(struct farm_resume *r, const struct farm_shard *shard, unsigned retries);
/* The same from a loaded journal (d NULL: no records). */
int gpushare_farm_resume_build(const struct farm_journal_data *d, size_t n_jobs, const struct farm_shard *shard,
		      unsigned retries, struct farm_resume *out);
/* Attempts so far and the last attempt number of a pending job (0, 0 when
 * it has none). */
void gpushare_farm_resume_lookup(const struct farm_resume *r, uint64_t job, uint32_t *attempts,
				 uint32_t *last_attempt);
void gpushare_farm_resume_release(struct farm_resume *r);

/* ---- status ---- */

struct farm_gpu_summary {
	char id[128];            /* uuid, or "index@host" */
	uint64_t attempts;
	double busy_s;           /* time with at least one job running on it */
	double job_s;            /* sum of attempt durations on it */
	double busy_fraction;    /* busy_s / makespan_s */
};

struct farm_summary {
	uint64_t n_jobs;         /* jobs in the whole list */
	unsigned long shard_count;   /* N of the shards (1 unsharded) */
	size_t shards_seen;      /* distinct shards among the journals */
	uint64_t done, failed;   /* jobs, each counted once */
	uint64_t unfinished;     /* running, queued, or in a shard not given */
	uint64_t attempts;       /* records read */
	double first_start_unix_s, last_end_unix_s;
	double makespan_s;       /* last end - first start, 0 without records */
	double jobs_per_s;       /* (done + failed) / makespan_s, 0 when undefined */
	struct farm_gpu_summary *gpus;
	size_t n_gpus;
	bool torn_tail;          /* some journal had a torn last line */
	/* fatal GPU faults under MPS (fault records) */
	uint64_t faults, bystanders, culprits_failed;
	double fault_recovery_s; /* summed: first failure to serving again */
	uint64_t culprits[16];   /* the culprits' jobs, the first 16 faults */
	size_t n_culprits;
};

/* Summarise one or more journal files of the same job list (shards of one
 * farm, or one farm), reading each in one pass: one byte per job, sums per
 * GPU. Journals of different job lists are GPUSHARE_E_INVAL. A job counts
 * as failed once its journal's last --retries are used up; until then it is
 * unfinished. Each job is counted once, whichever journals name it.
 *
 * Busy time per GPU: the sum of the busy periods the records close
 * (gpu_busy_seconds); a period no record closes (a farm running now, or killed)
 * counts from its first recorded start to its last recorded end. Runs of
 * older journals without busy periods fall back to the union of their
 * attempts' intervals (memory per attempt). A GPU that several journals
 * name (shards sharing a GPU) is read again, its periods merged. */
int gpushare_journal_summary_build(const char *const *paths, size_t n, struct farm_summary *out);
void gpushare_journal_summary_release(struct farm_summary *s);

#endif
