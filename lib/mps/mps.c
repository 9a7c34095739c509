/*
 * The MPS control daemon: start, stop, query and configure it safely.
 *
 * A daemon is found through its pipe directory. The control program writes
 * nvidia-cuda-mps-control.pid there; a pid file whose process is gone (or
 * is some other program) is stale state left by a crash, and is cleaned
 * before a new start. Commands go to a fresh run of the control program on
 * its standard input. Its exit status is 0 even for unknown commands, so
 * every reply is parsed (mps_parse.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "sys.h"
#include "gpushare/child.h"
#include "gpushare/files.h"
#include "gpushare/gpu.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/internal/mps.h"
#include "items.h"
#include "mps_parse.h"

#define DEFAULT_CONTROL "nvidia-cuda-mps-control"
#define DEFAULT_TIMEOUT_MS 10000
#define POLL_INTERVAL_NS (20 * NS_PER_MS) /* 20 ms between readiness/stop checks */
static const char *log_last_line(const struct gpushare_mps *m, char *buf, size_t len);
/* In the pipe directory: held while a daemon is started or stopped there. */
#define MPS_LOCK_FILE ".gpushare-mps.lock"

static void sleep_poll(void)
{
	gpushare_sleep_ns(POLL_INTERVAL_NS);
}

/* In the pipe directory while a start is in flight: the monotonic deadline
 * (ns) of that start, for gpushare_mps_wait_start(). */
#define MPS_STARTING_FILE ".gpushare-mps-starting"
#define MPS_WAIT_START_MAX_NS (60 * NS_PER_S)

static void starting_path(const struct gpushare_mps *m, char *path, size_t len)
{
	if ((size_t)snprintf(path, len, "%s/%s", m->pipe_dir, MPS_STARTING_FILE) >= len)
		path[0] = '\0';
}

static void starting_mark(const struct gpushare_mps *m, uint64_t deadline)
{
	char path[GPUSHARE_PATH_MAX + 32];
	int fd;

	starting_path(m, path, sizeof(path));
	if (!path[0])
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return; /* only a cleaner's wait is lost */
	dprintf(fd, "%llu\n", (unsigned long long)deadline);
	close(fd);
}

static void starting_clear(const struct gpushare_mps *m)
{
	char path[GPUSHARE_PATH_MAX + 32];

	starting_path(m, path, sizeof(path));
	if (path[0])
		unlink(path);
}

void gpushare_mps_wait_start(const struct gpushare_mps *m)
{
	char path[GPUSHARE_PATH_MAX + 32];
	unsigned long long deadline = 0;
	uint64_t now = gpushare_now_ns(), cap = now + MPS_WAIT_START_MAX_NS;
	FILE *f;

	starting_path(m, path, sizeof(path));
	if (!path[0])
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	if (fscanf(f, "%llu", &deadline) != 1)
		deadline = 0;
	fclose(f);
	if (deadline > cap)
		deadline = cap;
	while (gpushare_now_ns() < deadline && access(path, F_OK) == 0 &&
	       gpushare_mps_state(m, NULL) != GPUSHARE_MPS_RUNNING)
		sleep_poll();
}

static int copy_path(char *dst, size_t len, const char *src, const char *what)
{
	size_t n = strlen(src);

	if (n == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s is empty", what);
	if (src[0] != '/')
		return gpushare_fail(GPUSHARE_E_INVAL, "%s '%s' must be an absolute path", what, src);
	/* The daemon puts Unix sockets in the pipe directory: keep room for
	 * their names inside sun_path's 108 bytes. */
	if (n >= len || n > 80)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s '%s' is too long (at most 80 characters)", what, src);
	memcpy(dst, src, n + 1);
	while (n > 1 && dst[n - 1] == '/')
		dst[--n] = '\0';
	return GPUSHARE_OK;
}

int gpushare_mps_private_dirs(char *pipe_dir, size_t plen, char *log_dir, size_t llen)
{
	char base[GPUSHARE_PATH_MAX];
	int rc = gpushare_user_dir(base, sizeof(base));

	if (rc)
		return rc;
	if ((size_t)snprintf(pipe_dir, plen, "%s/mps/pipe", base) >= plen ||
	    (size_t)snprintf(log_dir, llen, "%s/mps/log", base) >= llen)
		return gpushare_fail(GPUSHARE_E_INVAL, "private MPS directory path too long");
	return GPUSHARE_OK;
}

int gpushare_mps_init(struct gpushare_mps *m, const char *pipe_dir, const char *log_dir)
{
	char def_pipe[GPUSHARE_PATH_MAX], def_log[GPUSHARE_PATH_MAX];
	const char *env_pipe = getenv("CUDA_MPS_PIPE_DIRECTORY");
	const char *env_log = getenv("CUDA_MPS_LOG_DIRECTORY");
	const char *control = getenv("GPUSHARE_MPS_CONTROL");
	int rc;

	memset(m, 0, sizeof(*m));
	rc = gpushare_mps_private_dirs(def_pipe, sizeof(def_pipe), def_log, sizeof(def_log));
	if (rc)
		return rc;
	if (!pipe_dir)
		pipe_dir = env_pipe && *env_pipe ? env_pipe : def_pipe;
	if (!log_dir)
		log_dir = env_log && *env_log ? env_log : def_log;
	rc = copy_path(m->pipe_dir, sizeof(m->pipe_dir), pipe_dir, "pipe directory");
	if (!rc)
		rc = copy_path(m->log_dir, sizeof(m->log_dir), log_dir, "log directory");
	if (rc)
		return rc;
	snprintf(m->control, sizeof(m->control), "%s", control && *control ? control : DEFAULT_CONTROL);
	m->timeout_ms = DEFAULT_TIMEOUT_MS;
	return GPUSHARE_OK;
}

/* Does the process look like the control daemon? Compare its comm with the
 * control program's base name (both truncated to the kernel's 15 bytes). */
static bool is_daemon_process(const struct gpushare_mps *m, pid_t pid)
{
	char comm[64];
	const char *base = strrchr(m->control, '/');

	if (!gpushare_pid_alive(pid))
		return false;
	gpushare_pid_comm(pid, comm, sizeof(comm));
	if (!comm[0])
		return true; /* cannot tell (another pid namespace): trust the pid file */
	base = base ? base + 1 : m->control;
	return strncmp(comm, base, 15) == 0;
}

enum gpushare_mps_state gpushare_mps_state(const struct gpushare_mps *m, pid_t *pid)
{
	char path[GPUSHARE_PATH_MAX + 64], buf[32];
	ssize_t r;
	long v;
	int fd;

	if (pid)
		*pid = 0;
	snprintf(path, sizeof(path), "%s/%s", m->pipe_dir, GPUSHARE_MPS_PID_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? GPUSHARE_MPS_ABSENT : GPUSHARE_MPS_STALE;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return GPUSHARE_MPS_STALE;
	buf[r] = '\0';
	v = strtol(buf, NULL, 10);
	if (v <= 0)
		return GPUSHARE_MPS_STALE;
	if (pid)
		*pid = (pid_t)v;
	return is_daemon_process(m, (pid_t)v) ? GPUSHARE_MPS_RUNNING : GPUSHARE_MPS_STALE;
}

static int control_env(const struct gpushare_mps *m, char *pipe_env, size_t plen, char *log_env, size_t llen)
{
	if ((size_t)snprintf(pipe_env, plen, "CUDA_MPS_PIPE_DIRECTORY=%s", m->pipe_dir) >= plen ||
	    (size_t)snprintf(log_env, llen, "CUDA_MPS_LOG_DIRECTORY=%s", m->log_dir) >= llen)
		return gpushare_fail(GPUSHARE_E_INVAL, "MPS directory path too long");
	return GPUSHARE_OK;
}

int gpushare_mps_client_env(const struct gpushare_mps *m, char *pipe_env, size_t plen,
			    char *log_env, size_t llen)
{
	return control_env(m, pipe_env, plen, log_env, llen);
}

int gpushare_mps_find_control(const struct gpushare_mps *m, char *path, size_t len)
{
	int rc = gpushare_which(m->control, path, len);
	struct stat st;

	if (rc && strchr(m->control, '/') && stat(m->control, &st) == 0)
		return gpushare_fail(GPUSHARE_E_NO_MPS_BINARY, "'%s' exists but cannot be executed (%s)", m->control,
				     S_ISREG(st.st_mode) ? "no execute permission" : "not a regular file");
	if (rc)
		return gpushare_fail(GPUSHARE_E_NO_MPS_BINARY,
				     strchr(m->control, '/') ? "no file '%s' (install the NVIDIA driver's MPS tools or set GPUSHARE_MPS_CONTROL)"
							     : "no '%s' in PATH (install the NVIDIA driver's MPS tools or set GPUSHARE_MPS_CONTROL)",
				     m->control);
	return GPUSHARE_OK;
}

int gpushare_mps_command(const struct gpushare_mps *m, const char *cmd, char **reply)
{
	char pipe_env[GPUSHARE_PATH_MAX + 32], log_env[GPUSHARE_PATH_MAX + 32];
	char path[GPUSHARE_PATH_MAX], *input;
	char *argv[2];
	char *env[3];
	struct gpushare_run_result res;
	size_t n = strlen(cmd);
	int rc;

	*reply = NULL;
	rc = gpushare_mps_find_control(m, path, sizeof(path));
	if (!rc)
		rc = control_env(m, pipe_env, sizeof(pipe_env), log_env, sizeof(log_env));
	if (rc)
		return rc;
	input = malloc(n + 2);
	if (!input)
		return gpushare_fail(GPUSHARE_E_NOMEM, "MPS command");
	memcpy(input, cmd, n);
	input[n] = '\n';
	input[n + 1] = '\0';
	argv[0] = path;
	argv[1] = NULL;
	env[0] = pipe_env;
	env[1] = log_env;
	env[2] = NULL;
	rc = gpushare_run(argv, env, input, m->timeout_ms, &res);
	free(input);
	if (rc == GPUSHARE_E_TIMEOUT) {
		gpushare_run_result_release(&res);
		return gpushare_fail(GPUSHARE_E_TIMEOUT, "MPS control daemon at '%s' did not answer '%s' within %d ms",
				     m->pipe_dir, cmd, m->timeout_ms);
	}
	if (rc == GPUSHARE_E_NOT_FOUND)
		return gpushare_fail(GPUSHARE_E_NO_MPS_BINARY, "%s", gpushare_errdetail());
	if (rc)
		return rc;
	gpushare_mps_trim(res.out);
	gpushare_mps_trim(res.err);
	if (res.status != 0) {
		rc = gpushare_fail(GPUSHARE_E_MPS_NOT_RUNNING, "no MPS control daemon answers at '%s' (%s exited %d%s%.200s)",
				   m->pipe_dir, m->control, res.status, res.err[0] ? ": " : "", res.err);
		gpushare_run_result_release(&res);
		return rc;
	}
	if (gpushare_mps_reply_is_unknown(res.out)) {
		rc = gpushare_fail(GPUSHARE_E_MPS_REPLY, "the MPS control daemon does not know '%s': %.200s", cmd, res.out);
		gpushare_run_result_release(&res);
		return rc;
	}
	*reply = res.out;
	res.out = NULL;
	gpushare_run_result_release(&res);
	return GPUSHARE_OK;
}

/* Send a command whose reply does not matter beyond being accepted. */
static int command_setter(const struct gpushare_mps *m, const char *cmd)
{
	char *reply;
	int rc = gpushare_mps_command(m, cmd, &reply);

	if (rc)
		return rc;
	rc = gpushare_mps_check_setter_reply(reply);
	free(reply);
	return rc;
}

int gpushare_mps_probe(const struct gpushare_mps *m, pid_t *pid)
{
	enum gpushare_mps_state st = gpushare_mps_state(m, pid);
	char *reply;
	double pct;
	int rc;

	if (st != GPUSHARE_MPS_RUNNING)
		return gpushare_fail(GPUSHARE_E_MPS_NOT_RUNNING, "no MPS control daemon at '%s'%s", m->pipe_dir,
				     st == GPUSHARE_MPS_STALE ? " (stale pid file)" : "");
	rc = gpushare_mps_command(m, "get_default_active_thread_percentage", &reply);
	if (rc)
		return rc;
	rc = gpushare_mps_parse_percentage(reply, &pct);
	free(reply);
	return rc;
}

void gpushare_mps_limits_init(struct gpushare_mps_limits *l)
{
	memset(l, 0, sizeof(*l));
	l->priority = -1;
}

struct mem_list {
	const char *s;
	unsigned seen;
	struct gpushare_mps_limits *limits;
};

/* One DEVICE=SIZE item of a memory limit list. */
static int mem_item(void *arg, const char *p, size_t len)
{
	struct mem_list *l = arg;
	char tok[512], *eq;
	uint64_t bytes;
	long dev;
	int rc;

	memcpy(tok, p, len); /* len < strlen(s) < sizeof(tok) */
	tok[len] = '\0';
	eq = strchr(tok, '=');
	if (!eq)
		return gpushare_fail(GPUSHARE_E_INVAL, "memory limit '%s' must be DEVICE=SIZE (e.g. 0=4G)", tok);
	*eq = '\0';
	rc = gpushare_parse_int(tok, 0, 15, &dev);
	if (rc)
		return gpushare_fail(GPUSHARE_E_INVAL, "device '%s' in memory limit is not an ordinal 0-15", tok);
	rc = gpushare_parse_size(eq + 1, &bytes);
	if (rc)
		return rc;
	if (l->seen & (1u << dev))
		return gpushare_fail(GPUSHARE_E_INVAL, "device %ld is given twice in memory limit '%s'", dev, l->s);
	l->seen |= 1u << dev;
	l->limits->mem_limit_bytes[dev] = bytes;
	if (dev + 1 > l->limits->n_mem_limits)
		l->limits->n_mem_limits = (int)dev + 1;
	return GPUSHARE_OK;
}

int gpushare_mps_parse_mem_limits(const char *s, int ndev, struct gpushare_mps_limits *limits)
{
	struct mem_list l = { s, 0, limits };
	char what[96];
	int rc;

	if (!s || !*s)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty memory limit");
	if (strlen(s) >= 512)
		return gpushare_fail(GPUSHARE_E_INVAL, "memory limit list '%.40s...' is too long", s);
	if (!strchr(s, '=') && !strchr(s, ',')) {
		uint64_t bytes;

		rc = gpushare_parse_size(s, &bytes);
		if (rc)
			return rc;
		if (ndev < 1 || ndev > 16)
			ndev = 1;
		for (int i = 0; i < ndev; i++)
			limits->mem_limit_bytes[i] = bytes;
		limits->n_mem_limits = ndev;
		return GPUSHARE_OK;
	}
	snprintf(what, sizeof(what), "memory limit '%.60s'", s);
	return gpushare_each_item_named(what, s, ',', mem_item, &l);
}

/* Apply each set limit with its setter, then read it back: setters print
 * nothing or an echo, so the getter is the only proof it took. */
int gpushare_mps_set(const struct gpushare_mps *m, pid_t server_pid, const struct gpushare_mps_limits *l)
{
	char cmd[128], size[32], *reply;
	int rc;

	if (l->thread_percentage > 0) {
		double got;

		if (server_pid > 0)
			snprintf(cmd, sizeof(cmd), "set_active_thread_percentage %d %g", (int)server_pid, l->thread_percentage);
		else
			snprintf(cmd, sizeof(cmd), "set_default_active_thread_percentage %g", l->thread_percentage);
		rc = command_setter(m, cmd);
		if (rc)
			return rc;
		if (server_pid > 0)
			snprintf(cmd, sizeof(cmd), "get_active_thread_percentage %d", (int)server_pid);
		else
			snprintf(cmd, sizeof(cmd), "get_default_active_thread_percentage");
		rc = gpushare_mps_command(m, cmd, &reply);
		if (rc)
			return rc;
		rc = gpushare_mps_parse_percentage(reply, &got);
		free(reply);
		if (rc)
			return rc;
		if (got < l->thread_percentage - 0.05 || got > l->thread_percentage + 0.05)
			return gpushare_fail(GPUSHARE_E_MPS_REPLY, "thread percentage set to %g but the daemon reports %g",
					     l->thread_percentage, got);
	}
	for (int dev = 0; dev < l->n_mem_limits; dev++) {
		char got[32];

		if (!l->mem_limit_bytes[dev])
			continue;
		rc = gpushare_format_mps_size(l->mem_limit_bytes[dev], size, sizeof(size));
		if (rc)
			return rc;
		if (server_pid > 0)
			snprintf(cmd, sizeof(cmd), "set_device_pinned_mem_limit %d %d %s", (int)server_pid, dev, size);
		else
			snprintf(cmd, sizeof(cmd), "set_default_device_pinned_mem_limit %d %s", dev, size);
		rc = command_setter(m, cmd);
		if (rc)
			return rc;
		if (server_pid > 0)
			snprintf(cmd, sizeof(cmd), "get_device_pinned_mem_limit %d %d", (int)server_pid, dev);
		else
			snprintf(cmd, sizeof(cmd), "get_default_device_pinned_mem_limit %d", dev);
		rc = gpushare_mps_command(m, cmd, &reply);
		if (rc)
			return rc;
		rc = gpushare_mps_parse_mem_limit(reply, got, sizeof(got));
		free(reply);
		if (rc)
			return rc;
		if (strcmp(got, size) != 0)
			return gpushare_fail(GPUSHARE_E_MPS_REPLY, "memory limit of device %d set to %s but the daemon reports '%s'",
					     dev, size, got);
	}
	if (l->priority >= 0) {
		int got;

		if (server_pid > 0)
			return gpushare_fail(GPUSHARE_E_INVAL, "client priority is a daemon default only; it cannot be set per server");
		snprintf(cmd, sizeof(cmd), "set_default_client_priority %d", l->priority);
		rc = command_setter(m, cmd);
		if (rc)
			return rc;
		rc = gpushare_mps_command(m, "get_default_client_priority", &reply);
		if (rc)
			return rc;
		rc = gpushare_mps_parse_priority(reply, &got);
		free(reply);
		if (rc)
			return rc;
		if (got != l->priority)
			return gpushare_fail(GPUSHARE_E_MPS_REPLY, "client priority set to %d but the daemon reports %d",
					     l->priority, got);
	}
	return GPUSHARE_OK;
}

/* Remove what a dead daemon left: its pid file and the sockets/files in the
 * pipe directory. Only entries of a private directory we own are touched;
 * subdirectories are removed when empty. */
int gpushare_mps_clean_stale(const struct gpushare_mps *m)
{
	pid_t pid;
	DIR *d;
	struct dirent *e;
	int dfd;

	if (gpushare_mps_state(m, &pid) == GPUSHARE_MPS_RUNNING)
		return gpushare_fail(GPUSHARE_E_BUSY, "MPS control daemon %d is running at '%s'", (int)pid, m->pipe_dir);
	d = opendir(m->pipe_dir);
	if (!d)
		return errno == ENOENT ? GPUSHARE_OK
				       : gpushare_fail(GPUSHARE_E_DIR, "cannot open '%s': %s", m->pipe_dir, strerror(errno));
	dfd = dirfd(d);
	while ((e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, MPS_LOCK_FILE))
			continue;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (st.st_uid != geteuid())
			continue;
		if (unlinkat(dfd, e->d_name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 && !S_ISDIR(st.st_mode)) {
			int err = errno;

			closedir(d);
			return gpushare_fail(GPUSHARE_E_DIR, "cannot remove stale '%s/%s': %s", m->pipe_dir, e->d_name,
					     strerror(err));
		}
	}
	closedir(d);
	return GPUSHARE_OK;
}

/* Run `control -d` with the daemon's environment. Its standard streams go to
 * /dev/null: the daemon it forks would otherwise hold our pipes open. The
 * direct child exits once the daemon has forked; it is reaped here. It runs
 * in a process group of its own (a Ctrl-C at gpushare's terminal must not
 * reach the daemon) that is not killed afterwards: the daemon lives on. */
static int spawn_daemon(const struct gpushare_mps *m, const char *path, const char *visible_devices)
{
	/* CUDA_VISIBLE_DEVICES of up to 64 GPUs' UUIDs (40 characters each). */
	char pipe_env[GPUSHARE_PATH_MAX + 32], log_env[GPUSHARE_PATH_MAX + 32], vis_env[64 * 41 + 32];
	char *env[4] = { NULL, NULL, NULL, NULL };
	char *argv[3] = { (char *)path, "-d", NULL };
	struct gpushare_child ch;
	char how[96];
	int rc;

	rc = control_env(m, pipe_env, sizeof(pipe_env), log_env, sizeof(log_env));
	if (rc)
		return rc;
	env[0] = pipe_env;
	env[1] = log_env;
	if (visible_devices && *visible_devices) {
		if ((size_t)snprintf(vis_env, sizeof(vis_env), "CUDA_VISIBLE_DEVICES=%s", visible_devices) >= sizeof(vis_env))
			return gpushare_fail(GPUSHARE_E_INVAL, "GPU list '%.40s...' is too long", visible_devices);
		env[2] = vis_env;
	}
	gpushare_child_init(&ch);
	ch.path = path;
	ch.argv = argv;
	ch.env_set = env;
	ch.in = ch.out = ch.err = GPUSHARE_CHILD_DEVNULL;
	ch.flags = GPUSHARE_CHILD_NO_PDEATHSIG;
	rc = gpushare_child_start(&ch);
	if (rc)
		return rc;
	if (gpushare_child_wait(&ch, (uint64_t)m->timeout_ms * 1000000ULL) != GPUSHARE_OK) {
		/* `-d` should return at once; a control program that stays is
		 * not daemonizing: stop it. */
		char last[600];

		gpushare_child_stop(&ch, 0);
		gpushare_child_release(&ch);
		return gpushare_fail(GPUSHARE_E_TIMEOUT, "'%s -d' did not return within %d ms%s", path, m->timeout_ms,
				     log_last_line(m, last, sizeof(last)));
	}
	gpushare_child_release(&ch);
	if (!gpushare_child_ok(ch.wstatus)) {
		char last[600];

		gpushare_child_describe(ch.wstatus, how, sizeof(how));
		return gpushare_fail(GPUSHARE_E_MPS_NOT_RUNNING, "'%s -d' %s%s", path, how,
				     log_last_line(m, last, sizeof(last)));
	}
	return GPUSHARE_OK;
}

static int mps_stop_locked(const struct gpushare_mps *m, bool force, struct gpushare_mps_stop_info *info);

/* "; DIR/control.log ends: 'A | B | C'" (its last three lines) for a
 * message: the message stays useful when the log's directory is removed
 * afterwards (a farm's or bench's run directory), so it never only points
 * to the file. An empty or unreadable log is said so. */
static const char *log_last_line(const struct gpushare_mps *m, char *buf, size_t len)
{
	char *text = NULL, quoted[400];
	size_t q = 0;

	buf[0] = '\0';
	quoted[0] = '\0';
	if (gpushare_mps_log_tail(m, 3, &text) == GPUSHARE_OK && text) {
		for (char *line = text; *line && q + 4 < sizeof(quoted);) {
			size_t n = strcspn(line, "\n");

			if (n) {
				int w = snprintf(quoted + q, sizeof(quoted) - q, "%s%.*s", q ? " | " : "",
						 (int)(n < 160 ? n : 160), line);

				q = w < 0 ? q : (size_t)w + q >= sizeof(quoted) ? sizeof(quoted) - 1 : q + (size_t)w;
			}
			line += n + (line[n] == '\n');
		}
		for (char *c = quoted; *c; c++) /* one line, whatever the log holds */
			if ((unsigned char)*c < 0x20)
				*c = ' ';
	}
	if (quoted[0]) {
		if (snprintf(buf, len, "; %s/control.log ends: '%s'", m->log_dir, quoted) >= (int)len)
			buf[len - 1] = '\0';
	} else if (snprintf(buf, len, "; %s/control.log was empty or could not be read", m->log_dir) >= (int)len) {
		buf[len - 1] = '\0';
	}
	free(text);
	gpushare_clear_error();
	return buf;
}

static int mps_start_locked(const struct gpushare_mps *m, const struct gpushare_mps_start_opts *o,
			    struct gpushare_mps_start_info *info)
{
	char path[GPUSHARE_PATH_MAX];
	enum gpushare_mps_state st;
	uint64_t deadline;
	pid_t pid;
	int rc;

	memset(info, 0, sizeof(*info));
	rc = gpushare_mps_find_control(m, path, sizeof(path));
	if (rc)
		return rc;
	rc = gpushare_private_dir(m->pipe_dir);
	if (!rc)
		rc = gpushare_private_dir(m->log_dir);
	if (rc)
		return rc;
	st = gpushare_mps_state(m, &pid);
	if (st == GPUSHARE_MPS_RUNNING) {
		rc = gpushare_mps_probe(m, &pid);
		if (rc)
			return gpushare_fail(rc, "MPS control daemon %d at '%s' is running but does not answer: %s",
					     (int)pid, m->pipe_dir, gpushare_errdetail());
		info->pid = pid;
		info->already_running = true;
		return GPUSHARE_OK;
	}
	if (st == GPUSHARE_MPS_STALE) {
		rc = gpushare_mps_clean_stale(m);
		if (rc)
			return rc;
		info->cleaned_stale = true;
	}
	/* `-d` and the wait for readiness each have the timeout: a cleaner
	 * after this process's death waits that long for the daemon. */
	deadline = gpushare_now_ns() + 2 * (uint64_t)m->timeout_ms * 1000000ULL;
	starting_mark(m, deadline);
	rc = spawn_daemon(m, path, o ? o->visible_devices : NULL);
	if (rc) {
		starting_clear(m);
		return rc;
	}
	/* Ready when the pid file names a live daemon that answers a query. */
	deadline = gpushare_now_ns() + (uint64_t)m->timeout_ms * 1000000ULL;
	for (;;) {
		if (gpushare_mps_state(m, &pid) == GPUSHARE_MPS_RUNNING && gpushare_mps_probe(m, &pid) == GPUSHARE_OK)
			break;
		if (gpushare_now_ns() > deadline)
		{
			char last[600];

			starting_clear(m);
			return gpushare_fail(GPUSHARE_E_TIMEOUT, "MPS control daemon at '%s' not ready within %d ms%s",
					     m->pipe_dir, m->timeout_ms, log_last_line(m, last, sizeof(last)));
		}
		sleep_poll();
	}
	starting_clear(m);
	info->pid = pid;
	if (o) {
		rc = gpushare_mps_set(m, 0, &o->limits);
		if (rc) {
			/* A daemon without the limits the caller asked for is
			 * not what was asked for: take it down again. */
			int saved = rc;
			char detail[512];

			snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
			mps_stop_locked(m, true, NULL);
			return gpushare_fail(saved, "%s (daemon stopped again)", detail);
		}
	}
	return GPUSHARE_OK;
}

static void status_init(struct gpushare_mps_status *st)
{
	memset(st, 0, sizeof(*st));
	st->default_thread_percentage = -1;
	st->default_priority = -1;
}

void gpushare_mps_status_release(struct gpushare_mps_status *st)
{
	for (size_t i = 0; i < st->n_servers; i++)
		free(st->servers[i].clients);
	free(st->servers);
	st->servers = NULL;
	st->n_servers = 0;
}

static int query_pids(const struct gpushare_mps *m, const char *cmd, pid_t **pids, size_t *n)
{
	char *reply;
	int rc = gpushare_mps_command(m, cmd, &reply);

	if (rc)
		return rc;
	rc = gpushare_mps_parse_pid_list(reply, pids, n);
	free(reply);
	return rc;
}

static int query_server(const struct gpushare_mps *m, int ndev, struct gpushare_mps_server *s)
{
	char cmd[96], *reply;
	pid_t *clients = NULL;
	size_t n = 0;
	int rc;

	s->uid = gpushare_pid_uid(s->pid);
	s->thread_percentage = -1;
	snprintf(cmd, sizeof(cmd), "get_server_status %d", (int)s->pid);
	rc = gpushare_mps_command(m, cmd, &reply);
	if (rc)
		return rc;
	rc = gpushare_mps_parse_server_status(reply, s->status, sizeof(s->status));
	free(reply);
	if (rc)
		return rc;
	snprintf(cmd, sizeof(cmd), "get_active_thread_percentage %d", (int)s->pid);
	if (gpushare_mps_command(m, cmd, &reply) == GPUSHARE_OK) {
		if (gpushare_mps_parse_percentage(reply, &s->thread_percentage))
			s->thread_percentage = -1;
		free(reply);
	}
	for (int dev = 0; dev < ndev && dev < 16; dev++) {
		snprintf(cmd, sizeof(cmd), "get_device_pinned_mem_limit %d %d", (int)s->pid, dev);
		if (gpushare_mps_command(m, cmd, &reply) != GPUSHARE_OK)
			break;
		if (gpushare_mps_parse_mem_limit(reply, s->mem_limit[dev], sizeof(s->mem_limit[dev])))
			s->mem_limit[dev][0] = '\0';
		free(reply);
		s->n_mem_limit = dev + 1;
	}
	snprintf(cmd, sizeof(cmd), "get_client_list %d", (int)s->pid);
	rc = query_pids(m, cmd, &clients, &n);
	if (rc)
		return rc;
	if (n) {
		s->clients = calloc(n, sizeof(*s->clients));
		if (!s->clients) {
			free(clients);
			return gpushare_fail(GPUSHARE_E_NOMEM, "client list");
		}
	}
	for (size_t i = 0; i < n; i++) {
		s->clients[i].pid = clients[i];
		gpushare_pid_cmdline(clients[i], s->clients[i].command, sizeof(s->clients[i].command));
	}
	s->n_clients = n;
	free(clients);
	return GPUSHARE_OK;
}

int gpushare_mps_status(const struct gpushare_mps *m, int ndev, struct gpushare_mps_status *st)
{
	pid_t *servers = NULL;
	size_t n = 0;
	char *reply, cmd[96];
	int rc;

	status_init(st);
	rc = gpushare_mps_probe(m, &st->daemon_pid);
	if (rc)
		return rc;
	if (gpushare_mps_command(m, "get_default_active_thread_percentage", &reply) == GPUSHARE_OK) {
		if (gpushare_mps_parse_percentage(reply, &st->default_thread_percentage))
			st->default_thread_percentage = -1;
		free(reply);
	}
	if (gpushare_mps_command(m, "get_default_client_priority", &reply) == GPUSHARE_OK) {
		if (gpushare_mps_parse_priority(reply, &st->default_priority))
			st->default_priority = -1;
		free(reply);
	}
	for (int dev = 0; dev < ndev && dev < 16; dev++) {
		snprintf(cmd, sizeof(cmd), "get_default_device_pinned_mem_limit %d", dev);
		if (gpushare_mps_command(m, cmd, &reply) != GPUSHARE_OK)
			break;
		if (gpushare_mps_parse_mem_limit(reply, st->default_mem_limit[dev], sizeof(st->default_mem_limit[dev])))
			st->default_mem_limit[dev][0] = '\0';
		free(reply);
		st->n_default_mem_limit = dev + 1;
	}
	rc = query_pids(m, "get_server_list", &servers, &n);
	if (rc)
		return rc;
	if (n) {
		st->servers = calloc(n, sizeof(*st->servers));
		if (!st->servers) {
			free(servers);
			return gpushare_fail(GPUSHARE_E_NOMEM, "server list");
		}
	}
	for (size_t i = 0; i < n; i++) {
		st->servers[i].pid = servers[i];
		st->n_servers = i + 1;
		rc = query_server(m, ndev, &st->servers[i]);
		if (rc) {
			free(servers);
			gpushare_mps_status_release(st);
			return rc;
		}
	}
	free(servers);
	return GPUSHARE_OK;
}

/* Are any of these processes still alive? */
static bool any_alive(const pid_t *pids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (gpushare_pid_alive(pids[i]))
			return true;
	}
	return false;
}

/* Wait until none of pids is alive, or the deadline passes. */
static bool wait_gone(const pid_t *pids, size_t n, uint64_t deadline)
{
	while (any_alive(pids, n)) {
		if (gpushare_now_ns() > deadline)
			return false;
		sleep_poll();
	}
	return true;
}

/*
 * Stopping. The real control program's `quit` does not return while
 * clients are attached (it waits for them), so without force an attached
 * client is reported and the daemon is left exactly as it was. With force,
 * clients are terminated through MPS first (their next CUDA call fails with
 * error 810); a client process that has not exited after a grace period
 * gets SIGTERM, then SIGKILL. Then `quit`, and a bounded wait until the
 * daemon and its servers are gone.
 */
static int mps_stop_locked(const struct gpushare_mps *m, bool force, struct gpushare_mps_stop_info *info)
{
	struct gpushare_mps_stop_info local;
	pid_t *servers = NULL, *clients = NULL, daemon_pid;
	size_t n_servers = 0, n_clients = 0;
	enum gpushare_mps_state st;
	uint64_t deadline, grace_ns;
	char *reply = NULL, list[160] = "";
	int rc;

	if (!info)
		info = &local;
	memset(info, 0, sizeof(*info));
	st = gpushare_mps_state(m, &daemon_pid);
	if (st == GPUSHARE_MPS_ABSENT)
		return GPUSHARE_OK;
	if (st == GPUSHARE_MPS_STALE)
		return gpushare_mps_clean_stale(m);
	info->pid = daemon_pid;
	info->was_running = true;
	deadline = gpushare_now_ns() + (uint64_t)m->timeout_ms * 1000000ULL;

	rc = query_pids(m, "get_server_list", &servers, &n_servers);
	if (rc)
		return rc;
	for (size_t i = 0; i < n_servers; i++) {
		char cmd[96];
		pid_t *sc = NULL, *grown;
		size_t nc = 0;

		snprintf(cmd, sizeof(cmd), "get_client_list %d", (int)servers[i]);
		if (query_pids(m, cmd, &sc, &nc) != GPUSHARE_OK)
			continue; /* the server may have exited meanwhile */
		grown = nc ? realloc(clients, (n_clients + nc) * sizeof(*clients)) : clients;
		if (nc && !grown) {
			free(sc);
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "client list");
			goto out;
		}
		clients = grown;
		for (size_t j = 0; j < nc; j++) {
			size_t l = strlen(list);

			clients[n_clients++] = sc[j];
			if (l < sizeof(list) - 16)
				snprintf(list + l, sizeof(list) - l, "%s%d", l ? ", " : "", (int)sc[j]);
			if (!force)
				continue;
			snprintf(cmd, sizeof(cmd), "terminate_client %d %d", (int)servers[i], (int)sc[j]);
			if (gpushare_mps_command(m, cmd, &reply) == GPUSHARE_OK) {
				if (gpushare_mps_check_terminate_reply(reply) == GPUSHARE_OK)
					info->clients_terminated++;
				free(reply);
			}
		}
		free(sc);
	}
	info->clients_attached = n_clients;
	if (n_clients && !force) {
		rc = gpushare_fail(GPUSHARE_E_BUSY,
				   "%zu client(s) attached to MPS daemon %d (pid %s); the daemon is left running: stop "
				   "them first, or use --force to terminate them", n_clients, (int)daemon_pid, list);
		goto out;
	}
	if (n_clients) {
		/* Terminated clients normally exit on their next CUDA call. */
		grace_ns = (uint64_t)m->timeout_ms * 1000000ULL / 2;
		if (grace_ns > 5000000000ULL)
			grace_ns = 5000000000ULL;
		if (!wait_gone(clients, n_clients, gpushare_now_ns() + grace_ns)) {
			for (size_t i = 0; i < n_clients; i++) {
				if (gpushare_pid_alive(clients[i]) && kill(clients[i], SIGTERM) == 0)
					info->clients_signalled++;
			}
			if (!wait_gone(clients, n_clients, gpushare_now_ns() + 2000000000ULL)) {
				for (size_t i = 0; i < n_clients; i++) {
					if (gpushare_pid_alive(clients[i]))
						kill(clients[i], SIGKILL);
				}
				wait_gone(clients, n_clients, gpushare_now_ns() + 1000000000ULL);
			}
		}
	}
	rc = gpushare_mps_command(m, "quit", &reply);
	free(reply);
	/* The control program may stay until the shutdown is done: a timeout
	 * here is not a failure, the wait below decides. */
	if (rc && rc != GPUSHARE_E_MPS_NOT_RUNNING && rc != GPUSHARE_E_TIMEOUT)
		goto out;
	rc = GPUSHARE_OK;
	if (deadline < gpushare_now_ns() + 2000000000ULL)
		deadline = gpushare_now_ns() + 2000000000ULL;
	while (gpushare_pid_alive(daemon_pid) || any_alive(servers, n_servers)) {
		if (gpushare_now_ns() > deadline) {
			char last[600];

			rc = gpushare_fail(GPUSHARE_E_TIMEOUT, "MPS daemon %d did not exit within %d ms%s", (int)daemon_pid,
					   m->timeout_ms, log_last_line(m, last, sizeof(last)));
			break;
		}
		sleep_poll();
	}
out:
	free(clients);
	free(servers);
	return rc;
}

int gpushare_mps_log_tail(const struct gpushare_mps *m, int n, char **text)
{
	char path[GPUSHARE_PATH_MAX + 32];
	char *buf = NULL, *start;
	size_t len = 0;
	int lines = 0, rc;

	*text = NULL;
	snprintf(path, sizeof(path), "%s/control.log", m->log_dir);
	/* A log of a long-lived daemon may be large: its end is enough. */
	rc = gpushare_read_file_tail(path, (size_t)1 << 20, &buf, &len);
	if (rc)
		return rc;
	/* Walk back over n newlines (ignoring a final one). */
	start = buf + len;
	if (start > buf && start[-1] == '\n')
		start--;
	while (start > buf && n > 0) {
		start--;
		if (*start == '\n' && ++lines == n) {
			start++;
			break;
		}
	}
	if (n <= 0)
		start = buf + len;
	*text = strdup(start);
	free(buf);
	return *text ? GPUSHARE_OK : gpushare_fail(GPUSHARE_E_NOMEM, "log");
}

/* One GPU (index or UUID) of the visible list: refused when Prohibited. */
static int mode_item(void *arg, const char *p, size_t len)
{
	bool *default_mode = arg;
	char tok[128];
	unsigned idx;
	int mode, rc;

	if (len >= sizeof(tok))
		return gpushare_fail(GPUSHARE_E_INVAL, "GPU '%.*s...' is too long a name", 40, p);
	memcpy(tok, p, len);
	tok[len] = '\0';
	rc = gpushare_gpu_find(tok, &idx);
	if (!rc)
		rc = gpushare_gpu_compute_mode(idx, &mode);
	if (rc)
		return rc;
	if (mode == GPUSHARE_COMPUTE_PROHIBITED)
		return gpushare_fail(GPUSHARE_E_PROHIBITED,
				     "GPU %u is in compute mode Prohibited: no CUDA process, MPS included, can run there",
				     idx);
	if (mode == GPUSHARE_COMPUTE_DEFAULT)
		*default_mode = true;
	return GPUSHARE_OK;
}

int gpushare_mps_check_compute_mode(const char *visible_devices, bool *default_mode)
{
	unsigned count = 0;
	int rc;

	*default_mode = false;
	rc = gpushare_nvml_open();
	if (rc)
		return rc;
	if (visible_devices && *visible_devices) {
		char what[96];

		snprintf(what, sizeof(what), "GPU list '%.60s'", visible_devices);
		rc = gpushare_each_item_named(what, visible_devices, ',', mode_item, default_mode);
	} else {
		rc = gpushare_gpu_count(&count);
		for (unsigned i = 0; !rc && i < count; i++) {
			char tok[16];
			int n = snprintf(tok, sizeof(tok), "%u", i);

			rc = mode_item(default_mode, tok, (size_t)n);
		}
	}
	gpushare_nvml_close();
	return rc;
}

/* ---- one starter or stopper at a time per pipe directory ---- */

/* Take the pipe directory's lock: concurrent starts would each see no
 * daemon and start one (all but one orphaned), and concurrent stops would
 * wait on each other's quit. A holder is bounded by its own timeout for the
 * daemon's start-up or exit, so waiting twice that (and a second) is enough
 * unless the holder hangs. */
static int mps_lock(const struct gpushare_mps *m, int *fd)
{
	char path[GPUSHARE_PATH_MAX + 32];
	uint64_t wait_ns = ((uint64_t)m->timeout_ms * 2 + 1000) * 1000000ULL;
	pid_t holder;
	int rc;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", m->pipe_dir, MPS_LOCK_FILE) >= sizeof(path))
		return gpushare_fail(GPUSHARE_E_DIR, "pipe directory '%s' is too long", m->pipe_dir);
	rc = gpushare_lock_acquire(path, wait_ns, fd, &holder);
	if (rc == GPUSHARE_E_BUSY)
		return gpushare_fail(GPUSHARE_E_TIMEOUT,
				     "another gpushare (pid %ld) is still starting or stopping the MPS daemon at '%s'",
				     (long)holder, m->pipe_dir);
	if (rc) {
		char detail[512];

		snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
		return gpushare_fail(GPUSHARE_E_DIR, "%s", detail);
	}
	return GPUSHARE_OK;
}

int gpushare_mps_start(const struct gpushare_mps *m, const struct gpushare_mps_start_opts *o,
		       struct gpushare_mps_start_info *info)
{
	char path[GPUSHARE_PATH_MAX];
	int fd, rc;

	memset(info, 0, sizeof(*info));
	/* The checks that need no lock first: their errors stay as they are. */
	rc = gpushare_mps_find_control(m, path, sizeof(path));
	if (!rc)
		rc = gpushare_private_dir(m->pipe_dir);
	if (!rc)
		rc = gpushare_private_dir(m->log_dir);
	if (!rc)
		rc = mps_lock(m, &fd);
	if (rc)
		return rc;
	rc = mps_start_locked(m, o, info);
	gpushare_lock_release(fd);
	return rc;
}

int gpushare_mps_stop(const struct gpushare_mps *m, bool force, struct gpushare_mps_stop_info *info)
{
	struct stat st;
	int fd, rc;

	if (info)
		memset(info, 0, sizeof(*info));
	/* No pipe directory: no daemon, and nothing to lock. */
	if (lstat(m->pipe_dir, &st) != 0 && errno == ENOENT)
		return GPUSHARE_OK;
	/* A daemon in a directory this user cannot write (another user's,
	 * stopped by root or refused by the daemon itself) is stopped unlocked. */
	rc = mps_lock(m, &fd);
	if (rc == GPUSHARE_E_DIR) {
		gpushare_clear_error();
		fd = -1;
	} else if (rc) {
		return rc;
	}
	rc = mps_stop_locked(m, force, info);
	gpushare_lock_release(fd);
	return rc;
}
