/*
 * Error codes and the per-thread detail of the last failure.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpushare/gpushare.h"

static _Thread_local char errdetail[512];

const char *gpushare_strerror(int err)
{
	switch ((enum gpushare_error)err) {
	case GPUSHARE_OK: return "success";
	case GPUSHARE_E_INVAL: return "invalid argument";
	case GPUSHARE_E_NOMEM: return "out of memory";
	case GPUSHARE_E_SYS: return "system call failed";
	case GPUSHARE_E_NO_DRIVER: return "no NVIDIA driver found";
	case GPUSHARE_E_DRIVER: return "NVIDIA driver error";
	case GPUSHARE_E_NO_MPS_BINARY: return "MPS control program not found";
	case GPUSHARE_E_MPS_NOT_RUNNING: return "no MPS control daemon running";
	case GPUSHARE_E_MPS_REPLY: return "unexpected reply from the MPS control daemon";
	case GPUSHARE_E_DIR: return "unsafe or unusable directory";
	case GPUSHARE_E_PROHIBITED: return "GPU compute mode is Prohibited";
	case GPUSHARE_E_TIMEOUT: return "timed out";
	case GPUSHARE_E_BUSY: return "resource busy";
	case GPUSHARE_E_NOT_FOUND: return "not found";
	case GPUSHARE_E_IO: return "input/output error";
	case GPUSHARE_E_WORKER: return "worker failed";
	case GPUSHARE_E_INTERRUPTED: return "interrupted";
	case GPUSHARE_E_UNSUPPORTED: return "not supported";
	case GPUSHARE_E_CUDA: return "CUDA error";
	case GPUSHARE_E_MPS_MAX_CLIENTS: return "too many MPS clients";
	case GPUSHARE_E_ADDR_IN_USE: return "address already in use";
	}
	return "unknown error";
}

const char *gpushare_errdetail(void)
{
	return errdetail;
}

int gpushare_fail(int err, const char *fmt, ...)
{
	va_list ap;

	/* Through a copy: an argument may be gpushare_errdetail() itself. */
	char buf[sizeof(errdetail)];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	memcpy(errdetail, buf, sizeof(buf));
	return err;
}

void gpushare_clear_error(void)
{
	errdetail[0] = '\0';
}

void gpushare_error_save(struct gpushare_errsave *e)
{
	snprintf(e->detail, sizeof(e->detail), "%s", errdetail);
}

int gpushare_error_restore(const struct gpushare_errsave *e, int rc)
{
	if (rc)
		snprintf(errdetail, sizeof(errdetail), "%s", e->detail);
	return rc;
}

const char *gpushare_version(void)
{
	return GPUSHARE_VERSION;
}
