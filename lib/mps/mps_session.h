/*
 * A private MPS session: the one way gpushare's runs (bench, sweep, farm,
 * exec) get an MPS control daemon for their workers.
 *
 * Either it starts a daemon of its own, with pipe and log directories under
 * a private directory of the run (so no other user or run can reach it),
 * waits until it answers, and later stops it (forcefully: the run's own
 * clients are gone or being stopped); or it uses a daemon that already
 * answers at a given pipe directory and never stops it.
 */
#ifndef GPUSHARE_MPS_SESSION_H
#define GPUSHARE_MPS_SESSION_H

#include <stdbool.h>

#include "gpushare/buf.h"
#include "gpushare/mps.h"

struct gpushare_mps_session {
	struct gpushare_mps m;
	bool open;              /* a daemon answers for this session */
	bool started;           /* we started it, and stop it at close */
};

/* Open a session. existing_pipe_dir non-empty: use the daemon that answers
 * there (GPUSHARE_E_MPS_NOT_RUNNING naming the directory when none does).
 * Otherwise start one with pipe and log directories <base_dir>/pipe and
 * <base_dir>/log (created private), CUDA_VISIBLE_DEVICES=visible_devices for
 * the daemon (NULL or "": all GPUs), and `limits` as its defaults (NULL:
 * none). */
int gpushare_mps_session_open(struct gpushare_mps_session *s, const char *base_dir, const char *existing_pipe_dir,
			      const char *visible_devices, const struct gpushare_mps_limits *limits);

/* Use the daemon whose directories are <base_dir>/pipe and <base_dir>/log,
 * started and stopped by someone else (the session neither starts nor
 * stops it): `answers` says whether the caller knows that it runs (false:
 * its clients' environment is still given, as for a dry run). */
int gpushare_mps_session_join(struct gpushare_mps_session *s, const char *base_dir, bool answers);

/* The same for a daemon at pipe_dir (log_dir NULL or "": none known) that
 * someone else runs: a daemon that already serves the GPU (exec joins the
 * one of `gpushare slurm prolog`, of CUDA_MPS_PIPE_DIRECTORY or of
 * /tmp/nvidia-mps). */
int gpushare_mps_session_join_dirs(struct gpushare_mps_session *s, const char *pipe_dir, const char *log_dir,
				   bool answers);

/* Add the client environment of the session to `env`: its pipe (and log)
 * directory, and the removal of inherited per-client limits
 * (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, _PINNED_DEVICE_MEM_LIMIT,
 * _CLIENT_PRIORITY) unless `keep_limits`. */
int gpushare_mps_session_client_env(const struct gpushare_mps_session *s, bool keep_limits,
				    struct gpushare_strv *env);

/* Stop the daemon if the session started it. `rc` is the caller's result so
 * far: when it is an error, its detail survives the stop, and it is
 * returned; otherwise the stop's result is. */
int gpushare_mps_session_close(struct gpushare_mps_session *s, int rc);

#endif
