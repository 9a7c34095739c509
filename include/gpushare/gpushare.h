/*
 * gpushare: the public API of libgpushare.
 *
 * The library finds GPUs, drives the MPS control daemon and runs and measures
 * workers. Every function returns an error code from enum gpushare_error (zero
 * on success, negative on failure) and never prints or exits: callers decide
 * what to tell the user. When a function fails it also leaves a one-line
 * detail (which path, which command, what the driver said) that
 * gpushare_errdetail() returns until the next failure in the same thread.
 */
#ifndef GPUSHARE_GPUSHARE_H
#define GPUSHARE_GPUSHARE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * "Unknown" (not measured, not reported by the driver, not given): one
 * spelling per type, for new fields and every field documented as
 * "... unknown":
 *  - int and long (counts, indices, percentages, modes that also hold a
 *    non-enum value): GPUSHARE_UNKNOWN, -1 (never a valid value there);
 *  - uint64_t (bytes, nanoseconds): GPUSHARE_UNKNOWN_U64;
 *  - double (measurements): NAN (isnan()); formatted by gpushare/format.h
 *    as "-", written to JSON as null;
 *  - strings in fixed arrays: "" (the empty string);
 *  - enum fields: a value of their enum (never -1).
 * A field where 0 cannot be a value may say "0 when none/not set" (a pid,
 * a limit that was not asked for): that is absence, not unknown.
 * Older fields that still hold -1 in a double or 0 in a uint64_t say so in
 * their comment; their recorded values (JSON files of bench and sweep) keep
 * that spelling, so they change only with a format version.
 */
#define GPUSHARE_UNKNOWN (-1)
#define GPUSHARE_UNKNOWN_U64 UINT64_MAX

enum gpushare_error {
	GPUSHARE_OK = 0,
	GPUSHARE_E_INVAL = -1,          /* an argument or option value is invalid */
	GPUSHARE_E_NOMEM = -2,          /* out of host memory */
	GPUSHARE_E_SYS = -3,            /* a system call failed (detail names it) */
	GPUSHARE_E_NO_DRIVER = -4,      /* libnvidia-ml / libcuda could not be loaded */
	GPUSHARE_E_DRIVER = -5,         /* the driver answered with an error */
	GPUSHARE_E_NO_MPS_BINARY = -6,  /* nvidia-cuda-mps-control not found */
	GPUSHARE_E_MPS_NOT_RUNNING = -7,/* no MPS control daemon answers at the pipe dir */
	GPUSHARE_E_MPS_REPLY = -8,      /* the control daemon gave an unexpected reply */
	GPUSHARE_E_DIR = -9,            /* a directory is unsafe: foreign owner, bad mode, not writable */
	GPUSHARE_E_PROHIBITED = -10,    /* the GPU's compute mode is Prohibited */
	GPUSHARE_E_TIMEOUT = -11,       /* a bounded wait ran out */
	GPUSHARE_E_BUSY = -12,          /* something still holds the resource (clients attached) */
	GPUSHARE_E_NOT_FOUND = -13,     /* no such GPU, server, process or file */
	GPUSHARE_E_IO = -14,            /* reading or writing a file or pipe failed */
	GPUSHARE_E_WORKER = -15,        /* a worker process failed */
	GPUSHARE_E_INTERRUPTED = -16,   /* stopped by a signal (SIGINT/SIGTERM) */
	GPUSHARE_E_UNSUPPORTED = -17,   /* the GPU, driver or build does not support this */
	GPUSHARE_E_CUDA = -18,          /* a CUDA call failed in a worker */
	GPUSHARE_E_MPS_MAX_CLIENTS = -19,/* CUDA error 808: too many MPS clients on the GPU */
	GPUSHARE_E_ADDR_IN_USE = -20,   /* a listen address is taken (or cannot be bound) */
};

/* A short, lowercase description of an error code ("invalid argument"). */
const char *gpushare_strerror(int err);

/* Detail of the last failure in this thread ("cannot open '/x': Permission
 * denied"), or "" if none was recorded. Valid until the next failure. */
const char *gpushare_errdetail(void);

/* Record a detail for the current failure and return err, so library code can
 * write `return gpushare_fail(GPUSHARE_E_DIR, "...", ...)`. */
int gpushare_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clear the detail of the last failure. */
void gpushare_clear_error(void);

/* Keep a failure's detail across clean-up that may fail too:
 *   gpushare_error_save(&e); cleanup(); return gpushare_error_restore(&e, rc);
 * restore sets the saved detail again when rc is an error and returns rc. */
struct gpushare_errsave {
	char detail[512];
};
void gpushare_error_save(struct gpushare_errsave *e);
int gpushare_error_restore(const struct gpushare_errsave *e, int rc);

/* The library's version string ("0.1.0"). */
const char *gpushare_version(void);

#ifdef __cplusplus
}
#endif
#endif
