/* A private MPS session for a run (lib/mps/mps_session.h). */
#include <stdio.h>
#include <string.h>

#include "sys.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "mps_session.h"

int gpushare_mps_session_open(struct gpushare_mps_session *s, const char *base_dir, const char *existing_pipe_dir,
			      const char *visible_devices, const struct gpushare_mps_limits *limits)
{
	char pipe[GPUSHARE_PATH_MAX], log[GPUSHARE_PATH_MAX];
	struct gpushare_mps_start_opts o;
	struct gpushare_mps_start_info info;
	pid_t pid = 0;
	int rc;

	memset(s, 0, sizeof(*s));
	if (existing_pipe_dir && existing_pipe_dir[0]) {
		rc = gpushare_mps_init(&s->m, existing_pipe_dir, NULL);
		if (!rc)
			rc = gpushare_mps_probe(&s->m, &pid);
		if (rc == GPUSHARE_E_MPS_NOT_RUNNING)
			return gpushare_fail(rc, "no MPS control daemon answers at '%s'", existing_pipe_dir);
		if (!rc)
			s->open = true;
		return rc;
	}
	if ((size_t)snprintf(pipe, sizeof(pipe), "%s/pipe", base_dir) >= sizeof(pipe) ||
	    (size_t)snprintf(log, sizeof(log), "%s/log", base_dir) >= sizeof(log))
		return gpushare_fail(GPUSHARE_E_DIR, "run directory path too long");
	rc = gpushare_private_dir(pipe);
	if (!rc)
		rc = gpushare_private_dir(log);
	if (!rc)
		rc = gpushare_mps_init(&s->m, pipe, log);
	if (rc)
		return rc;
	memset(&o, 0, sizeof(o));
	o.visible_devices = visible_devices && *visible_devices ? visible_devices : NULL;
	if (limits)
		o.limits = *limits;
	else
		gpushare_mps_limits_init(&o.limits);
	memset(&info, 0, sizeof(info));
	rc = gpushare_mps_start(&s->m, &o, &info);
	if (rc)
		return rc;
	s->open = true;
	s->started = !info.already_running;
	return GPUSHARE_OK;
}

int gpushare_mps_session_join_dirs(struct gpushare_mps_session *s, const char *pipe_dir, const char *log_dir,
				   bool answers)
{
	int rc;

	memset(s, 0, sizeof(*s));
	rc = gpushare_mps_init(&s->m, pipe_dir, log_dir && *log_dir ? log_dir : NULL);
	if (!rc)
		s->open = answers;
	return rc;
}

int gpushare_mps_session_join(struct gpushare_mps_session *s, const char *base_dir, bool answers)
{
	char pipe[GPUSHARE_PATH_MAX], log[GPUSHARE_PATH_MAX];

	if ((size_t)snprintf(pipe, sizeof(pipe), "%s/pipe", base_dir) >= sizeof(pipe) ||
	    (size_t)snprintf(log, sizeof(log), "%s/log", base_dir) >= sizeof(log)) {
		memset(s, 0, sizeof(*s));
		return gpushare_fail(GPUSHARE_E_DIR, "run directory path too long");
	}
	return gpushare_mps_session_join_dirs(s, pipe, log, answers);
}

int gpushare_mps_session_client_env(const struct gpushare_mps_session *s, bool keep_limits,
				    struct gpushare_strv *env)
{
	char pipe_env[GPUSHARE_PATH_MAX + 64], log_env[GPUSHARE_PATH_MAX + 64];
	int rc = gpushare_mps_client_env(&s->m, pipe_env, sizeof(pipe_env), log_env, sizeof(log_env));

	if (!rc)
		rc = gpushare_strv_addf(env, "%s", pipe_env);
	if (!rc && log_env[0])
		rc = gpushare_strv_addf(env, "%s", log_env);
	if (!rc && !keep_limits)
		rc = gpushare_strv_addf(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	if (!rc && !keep_limits)
		rc = gpushare_strv_addf(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
	if (!rc && !keep_limits)
		rc = gpushare_strv_addf(env, "CUDA_MPS_CLIENT_PRIORITY");
	return rc;
}

int gpushare_mps_session_close(struct gpushare_mps_session *s, int rc)
{
	struct gpushare_mps_stop_info info;
	struct gpushare_errsave e;
	int src;

	if (!s->started) {
		s->open = false;
		return rc;
	}
	gpushare_error_save(&e);
	memset(&info, 0, sizeof(info));
	src = gpushare_mps_stop(&s->m, true, &info);
	s->started = s->open = false;
	return rc ? gpushare_error_restore(&e, rc) : src;
}
