/*
 * Driving the NVIDIA MPS control daemon (nvidia-cuda-mps-control).
 *
 * A daemon is identified by its pipe directory: every CUDA process whose
 * CUDA_MPS_PIPE_DIRECTORY names a directory where a daemon answers silently
 * becomes an MPS client. Commands are sent the way the control program
 * expects them, one per run on its standard input; its exit status is 0 even
 * for an unknown command, so replies are parsed. Servers start lazily: there
 * are none until the first client connects.
 */
#ifndef GPUSHARE_MPS_H
#define GPUSHARE_MPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpushare/util.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSHARE_MPS_DEFAULT_PIPE_DIR "/tmp/nvidia-mps"
#define GPUSHARE_MPS_PID_FILE "nvidia-cuda-mps-control.pid"
#define GPUSHARE_MPS_MAX_CLIENTS_PER_GPU 48

/* Where a daemon lives and how to reach it. */
struct gpushare_mps {
	char pipe_dir[GPUSHARE_PATH_MAX];
	char log_dir[GPUSHARE_PATH_MAX];
	/* The control program: "nvidia-cuda-mps-control" unless overridden by
	 * the GPUSHARE_MPS_CONTROL environment variable (tests use a double). */
	char control[GPUSHARE_PATH_MAX];
	int timeout_ms; /* bound for each command and for start/stop waits */
};

/* Fill m. pipe_dir/log_dir: the given values, else CUDA_MPS_PIPE_DIRECTORY /
 * CUDA_MPS_LOG_DIRECTORY, else gpushare's private per-user directories
 * (<user dir>/mps/pipe and <user dir>/mps/log). Nothing is created. */
int gpushare_mps_init(struct gpushare_mps *m, const char *pipe_dir, const char *log_dir);

/* gpushare's own private pipe and log directories for this user. */
int gpushare_mps_private_dirs(char *pipe_dir, size_t plen, char *log_dir, size_t llen);

/* Resolve m->control in PATH into path. GPUSHARE_E_NO_MPS_BINARY, with a
 * detail saying how to get it, when it is not there. */
int gpushare_mps_find_control(const struct gpushare_mps *m, char *path, size_t len);

/* What is at a pipe directory. */
enum gpushare_mps_state {
	GPUSHARE_MPS_ABSENT,   /* no pid file */
	GPUSHARE_MPS_STALE,    /* a pid file whose process is gone or is not the daemon */
	GPUSHARE_MPS_RUNNING,  /* the daemon process is alive */
};

/* Look at the pid file in m->pipe_dir. Sets *pid when one is recorded. */
enum gpushare_mps_state gpushare_mps_state(const struct gpushare_mps *m, pid_t *pid);

/* Whether a daemon answers at m->pipe_dir: running and replying to a query.
 * Returns GPUSHARE_OK (and *pid), GPUSHARE_E_MPS_NOT_RUNNING, or another
 * error (control program missing, timeout). */
int gpushare_mps_probe(const struct gpushare_mps *m, pid_t *pid);

/* Send one command and return its reply (trimmed of trailing white space;
 * caller frees). Returns GPUSHARE_E_MPS_REPLY with the reply as detail when
 * the daemon says "Unknown command". */
int gpushare_mps_command(const struct gpushare_mps *m, const char *cmd, char **reply);

/* Defaults applied when a daemon starts, and by gpushare_mps_set(). */
struct gpushare_mps_limits {
	double thread_percentage;      /* (0,100]; 0 = leave unset */
	/* Pinned device memory limit per device ordinal (as the daemon numbers
	 * them, after CUDA_VISIBLE_DEVICES); 0 = leave unset. */
	uint64_t mem_limit_bytes[16];
	int n_mem_limits;              /* entries used in mem_limit_bytes */
	int priority;                  /* 0 normal, 1 below normal, -1 = leave unset */
};

void gpushare_mps_limits_init(struct gpushare_mps_limits *l);

struct gpushare_mps_start_opts {
	const char *visible_devices;   /* daemon's CUDA_VISIBLE_DEVICES, or NULL */
	struct gpushare_mps_limits limits;
};

struct gpushare_mps_start_info {
	pid_t pid;
	bool already_running;          /* a daemon answered already; left alone */
	bool cleaned_stale;            /* a stale pid file/sockets were removed first */
};

/* Start a daemon at m->pipe_dir (created private when absent, checked when
 * present) and wait until it answers. Idempotent: when a daemon answers
 * already, reports it and changes nothing. */
int gpushare_mps_start(const struct gpushare_mps *m, const struct gpushare_mps_start_opts *o,
		       struct gpushare_mps_start_info *info);

/* Apply limits as daemon defaults (for servers started later), or to the
 * running server server_pid when > 0 (for its new clients). */
int gpushare_mps_set(const struct gpushare_mps *m, pid_t server_pid, const struct gpushare_mps_limits *l);

struct gpushare_mps_client {
	pid_t pid;
	char command[256];
};

struct gpushare_mps_server {
	pid_t pid;
	long uid;                      /* GPUSHARE_UNKNOWN when unknown */
	char status[16];               /* "ACTIVE", "FAULT", ... as reported */
	double thread_percentage;      /* -1 when unknown */
	char mem_limit[16][16];        /* per device as reported ("4G"), "" when none */
	int n_mem_limit;
	struct gpushare_mps_client *clients;
	size_t n_clients;
};

struct gpushare_mps_status {
	pid_t daemon_pid;
	double default_thread_percentage;  /* -1 when unknown */
	char default_mem_limit[16][16];    /* per device, "" when none */
	int n_default_mem_limit;
	int default_priority;              /* GPUSHARE_UNKNOWN when unknown */
	struct gpushare_mps_server *servers;
	size_t n_servers;
};

/* Query a running daemon. ndev: how many device ordinals to ask limits for
 * (at most 16). */
int gpushare_mps_status(const struct gpushare_mps *m, int ndev, struct gpushare_mps_status *st);
void gpushare_mps_status_release(struct gpushare_mps_status *st);

struct gpushare_mps_stop_info {
	pid_t pid;
	bool was_running;
	size_t clients_attached;       /* clients attached when stop began */
	size_t clients_terminated;     /* with force: terminated through MPS */
	size_t clients_signalled;      /* with force: still running after the grace period, sent SIGTERM */
};

/* Stop the daemon: "quit" and wait until the daemon and its servers are
 * gone. Attached clients: without force, GPUSHARE_E_BUSY naming them and the
 * daemon is left untouched (the control program's quit would wait for them);
 * with force they are terminated through MPS first, and signalled (SIGTERM,
 * then SIGKILL) if still running after a grace period. */
int gpushare_mps_stop(const struct gpushare_mps *m, bool force, struct gpushare_mps_stop_info *info);

/* Wait, bounded, for a start of a daemon in m->pipe_dir that another
 * process began (its `control -d` may still be forking the daemon when that
 * process dies): until the daemon is up, or the start's own deadline has
 * passed. For cleaning up after a dead gpushare: a stop right after it would
 * miss a daemon that comes up a moment later. Returns at once when no start
 * is in flight. */
void gpushare_mps_wait_start(const struct gpushare_mps *m);

/* Remove a stale pid file and sockets from m->pipe_dir. */
int gpushare_mps_clean_stale(const struct gpushare_mps *m);

/* The last n lines of <log_dir>/control.log (caller frees). */
int gpushare_mps_log_tail(const struct gpushare_mps *m, int n, char **text);

/* Environment entries ("NAME=VALUE") that make a process a client of this
 * daemon; writes at most 2 entries into env (strings owned by caller's bufs). */
int gpushare_mps_client_env(const struct gpushare_mps *m, char *pipe_env, size_t plen,
			    char *log_env, size_t llen);

/* Read the compute mode of the GPUs a daemon would serve (visible_devices:
 * comma list of indices or UUIDs; NULL or "" for all). Returns
 * GPUSHARE_E_PROHIBITED when one of them is Prohibited (MPS cannot run
 * there), GPUSHARE_E_NO_DRIVER without NVML; otherwise OK with *default_mode
 * set when at least one is in Default mode (plain processes can then still
 * time-slice beside MPS clients). gpushare never changes the compute mode. */
int gpushare_mps_check_compute_mode(const char *visible_devices, bool *default_mode);

/* ---- the survey: which pipe directories have a daemon (lib/mps/mps_survey.c) ---- */

/* One pipe directory looked at by `info` and the exporter. */
#define GPUSHARE_MPS_SURVEY_SOURCES 4
struct gpushare_mps_survey {
	char pipe_dir[GPUSHARE_PATH_MAX];  /* trailing '/' removed */
	/* Why it is looked at, each name once: "given" (asked for by name),
	 * "gpushare" (gpushare's private one), "env" ($CUDA_MPS_PIPE_DIRECTORY),
	 * "default" (/tmp/nvidia-mps). */
	const char *sources[GPUSHARE_MPS_SURVEY_SOURCES];
	int n_sources;
	/* Filled by gpushare_mps_survey_look(): */
	int init_rc;                       /* gpushare_mps_init's result */
	enum gpushare_mps_state state;
	pid_t pid;                         /* from the pid file; 0 none */
	int answers;                       /* the probe: 1, 0, GPUSHARE_UNKNOWN not probed or failed */
	char error[256];                   /* why init failed or answers is unknown */
	bool up;                           /* the status was asked for and read into st */
	struct gpushare_mps_status st;     /* release with gpushare_mps_survey_release() */
};

/* Add dir (a source named `source`) to dirs[0..*n), at most max: once per
 * directory, a directory named again only gains the source. Empty, too long
 * or beyond max: ignored. */
void gpushare_mps_survey_add(struct gpushare_mps_survey *dirs, int *n, int max, const char *dir, const char *source);
/* Add the usual pipe directories, in this order: gpushare's private one,
 * $CUDA_MPS_PIPE_DIRECTORY and /tmp/nvidia-mps. */
void gpushare_mps_survey_add_known(struct gpushare_mps_survey *dirs, int *n, int max);

/* How to look. */
struct gpushare_mps_survey_opts {
	int timeout_ms;       /* > 0: each control-program command's bound */
	int max_timeout_ms;   /* > 0: and at most this (a daemon that is up answers at once) */
	int status_ndev;      /* > 0: read the daemon's status (servers, clients) for this
			       * many devices into st; 0: only probe whether it answers */
};

/* Look at one directory: what is there, and for a running daemon whether it
 * answers (or its status). Never fails: what went wrong is in d. */
void gpushare_mps_survey_look(struct gpushare_mps_survey *d, const struct gpushare_mps_survey_opts *o);
void gpushare_mps_survey_release(struct gpushare_mps_survey *d);

/* ---- JSON documents (docs/cli.md) ----
 *
 * What `gpushare mps ... --json` and `gpushare info --json` print: each
 * returns a malloc'ed, valid UTF-8 JSON text (caller frees), NULL when out
 * of memory. */

/* "absent", "stale" or "running". */
const char *gpushare_mps_state_name(enum gpushare_mps_state s);

/* `mps start`: the daemon's pid, whether it was running already or stale
 * state was cleaned, its pipe and log directories. */
char *gpushare_mps_start_json(const struct gpushare_mps *m, const struct gpushare_mps_start_info *info);

/* `mps stop`. */
char *gpushare_mps_stop_json(const struct gpushare_mps *m, const struct gpushare_mps_stop_info *info);

/* `mps status`: state is gpushare_mps_state()'s answer; st the daemon's
 * status, NULL when no daemon answers ("running": false); log the tail of its
 * log, NULL to leave it out. */
char *gpushare_mps_status_json(const struct gpushare_mps *m, enum gpushare_mps_state state,
			       const struct gpushare_mps_status *st, const char *log);

/* `mps set`: server_pid when limits were set on one server, else 0. */
char *gpushare_mps_set_json(pid_t server_pid);

/* A private MPS daemon of one of gpushare's own runs: bench, sweep and farm
 * start them under their run directories (<user dir>/<kind>-XXXXXX), `exec`
 * under its job directory (<user dir>/exec-<job>). */
struct gpushare_mps_private {
	char kind[16];                     /* "bench", "sweep", "farm", "exec" */
	char run_dir[GPUSHARE_PATH_MAX];
	char pipe_dir[GPUSHARE_PATH_MAX];
	pid_t daemon_pid;                  /* the running control daemon */
	pid_t owner_pid;                   /* the run's process (exec: a rank); 0 unknown */
	bool owner_alive;                  /* false: a daemon left behind by a killed run */
	char owner_command[256];           /* the owner's command line; "" when gone */
};

/* The running daemons under this user's run directories, found from pid files
 * and /proc alone (nothing probed). *out is malloc'd (free()), NULL when n is 0. */
int gpushare_mps_private_list(struct gpushare_mps_private **out, size_t *n);

struct gpushare_system_info;

/* `gpushare info --json`: the driver, every GPU of sys
 * (gpushare_system_query()), the n_dirs surveyed pipe directories
 * (gpushare_mps_survey_look()) and the n_priv private daemons of gpushare's
 * runs ("private_mps"). */
char *gpushare_info_json(const struct gpushare_system_info *sys, const struct gpushare_mps_survey *dirs,
			 int n_dirs, const struct gpushare_mps_private *priv, size_t n_priv);
/* `gpushare info --json` when the driver cannot be asked: {"driver": null,
 * "driver_version": null, "error": error, "gpus": []}. */
char *gpushare_info_error_json(const char *error);

#ifdef __cplusplus
}
#endif
#endif
