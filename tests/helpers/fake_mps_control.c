/*
 * fake_mps_control: a stand-in for nvidia-cuda-mps-control, so the MPS
 * module and `gpushare mps` can be tested on machines without a GPU.
 *
 * It behaves like the R580 control program where gpushare depends on it:
 *  - `fake_mps_control -d` forks a daemon that writes
 *    $CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid, listens on a Unix
 *    socket `control` there and logs commands to
 *    $CUDA_MPS_LOG_DIRECTORY/control.log; the command itself returns at once.
 *  - without arguments it is a client: one command on standard input, the
 *    reply on standard output, exit status 0 even for "Unknown command".
 *    With no daemon it prints an error on stderr and exits 1.
 *  - servers start lazily: none until a client attaches; quit waits for
 *    attached clients to leave, then stops servers and exits.
 * Test-only commands: `fake_attach <pid>` attaches process <pid> as a client
 * (starting a server process first if none runs; while the server is in
 * fault it replies "807" and attaches nothing); `fake_fault <pid>` fakes a
 * fatal GPU fault of client <pid>, as Volta MPS handles one: server.log
 * names the client ("Client <pid> encountered a fatal GPU error"), the
 * server's status is FAULT, and the file "fault" in the pipe directory
 * (holding <pid>) tells the other clients (a stand-in client polls it) to
 * fail with the fault's error; once every client that was attached then
 * has exited, the server logs that it recreates its context, the file goes
 * and the status is ACTIVE again. `shutdown_server <pid>` stops a server.
 * Knobs (environment of the daemon): FAKE_MPS_START_FAIL=1 makes -d fail;
 * FAKE_MPS_READY_DELAY_MS delays the socket; FAKE_MPS_IGNORE_SET=1 makes
 * setters accept but not apply values; FAKE_MPS_NO_QUIT=1 ignores quit;
 * FAKE_MPS_STICKY_FAULT=1 keeps a faulted server in FAULT after its
 * clients have left (until shutdown_server);
 * FAKE_MPS_START_LOG=FILE appends "<daemon pid> <pipe dir>" to FILE at each
 * daemon start.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SERVERS 4
#define MAX_CLIENTS 64
#define NDEV 16

struct server {
	pid_t pid;
	double pct;
	char mem[NDEV][16];
	pid_t clients[MAX_CLIENTS];
	int n_clients;
	int fault;                 /* a fatal fault: until its sticky clients are gone */
	pid_t sticky[MAX_CLIENTS];
	int n_sticky;
};

static struct {
	char pipe_dir[256], log_dir[256];
	double default_pct;
	char default_mem[NDEV][16];
	int default_prio;
	struct server servers[MAX_SERVERS];
	int n_servers;
	int quitting;
	int ignore_set;
	int no_quit;
	int sticky_fault;
} st = { .default_pct = 100.0 };

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v && *v ? v : def;
}

static void logf_(const char *fmt, ...)
{
	char path[300];
	FILE *f;
	va_list ap;
	time_t t = time(NULL);
	struct tm tm;
	char ts[32];

	snprintf(path, sizeof(path), "%s/control.log", st.log_dir);
	f = fopen(path, "a");
	if (!f)
		return;
	gmtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(f, "[%s.000 Control %6d] ", ts, (int)getpid());
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

/* A line of server.log, as the server writes it. */
static void slogf(pid_t server, const char *fmt, ...)
{
	char path[300];
	FILE *f;
	va_list ap;
	time_t t = time(NULL);
	struct tm tm;
	char ts[32];

	snprintf(path, sizeof(path), "%s/server.log", st.log_dir);
	f = fopen(path, "a");
	if (!f)
		return;
	gmtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(f, "[%s.000 Other %6d] ", ts, (int)server);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static void fault_file(pid_t pid, int on)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/fault", st.pipe_dir);
	if (!on) {
		unlink(path);
		return;
	}
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
	}
}

/* A server in fault whose sticky clients have all exited serves again. */
static void recover_servers(void)
{
	for (int i = 0; i < st.n_servers; i++) {
		struct server *s = &st.servers[i];
		int alive = 0;

		if (!s->fault || st.sticky_fault)
			continue;
		for (int j = 0; j < s->n_sticky; j++)
			alive += kill(s->sticky[j], 0) == 0;
		if (alive)
			continue;
		slogf(s->pid, "Destroy server context on device 0");
		slogf(s->pid, "Creating server context on device 0");
		s->fault = 0;
		s->n_sticky = 0;
		s->n_clients = 0;
		fault_file(0, 0);
	}
}

static int sock_path(struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	return snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/control", st.pipe_dir) >= (int)sizeof(sa->sun_path) ? -1 : 0;
}

static int client_main(void)
{
	struct sockaddr_un sa;
	char buf[4096];
	size_t len = 0;
	ssize_t r;
	int fd;

	snprintf(st.pipe_dir, sizeof(st.pipe_dir), "%s", env_or("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"));
	while (len < sizeof(buf) - 1 && (r = read(0, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = '\0';
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || sock_path(&sa) || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "Cannot find MPS control daemon process\n");
		return 1;
	}
	if (write(fd, buf, len) != (ssize_t)len)
		return 1;
	shutdown(fd, SHUT_WR);
	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		if (fwrite(buf, 1, (size_t)r, stdout) != (size_t)r)
			return 1;
	}
	close(fd);
	return 0;
}

static struct server *find_server(pid_t pid)
{
	for (int i = 0; i < st.n_servers; i++) {
		if (st.servers[i].pid == pid)
			return &st.servers[i];
	}
	return NULL;
}

static struct server *start_server(void)
{
	struct server *s;
	pid_t pid;

	if (st.n_servers == MAX_SERVERS)
		return NULL;
	pid = fork();
	if (pid < 0)
		return NULL;
	if (pid == 0) {
		/* Drop the listening and client sockets: holding them would keep
		 * the client's reply open. */
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		for (;;)
			pause();
	}
	s = &st.servers[st.n_servers++];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->pct = st.default_pct;
	memcpy(s->mem, st.default_mem, sizeof(s->mem));
	logf_("Starting new server %d for user %d", (int)pid, (int)getuid());
	return s;
}

static int live_clients(void)
{
	int n = 0;

	for (int i = 0; i < st.n_servers; i++) {
		struct server *s = &st.servers[i];

		for (int j = 0; j < s->n_clients; j++) {
			if (kill(s->clients[j], 0) == 0)
				n++;
		}
	}
	return n;
}

static void stop_all_and_exit(void)
{
	char path[300];

	for (int i = 0; i < st.n_servers; i++) {
		logf_("Server %d exited with status 0", (int)st.servers[i].pid);
		kill(st.servers[i].pid, SIGTERM);
		waitpid(st.servers[i].pid, NULL, 0);
	}
	snprintf(path, sizeof(path), "%s/control", st.pipe_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/nvidia-cuda-mps-control.pid", st.pipe_dir);
	unlink(path);
	logf_("Exit");
	_exit(0);
}

static int parse_dev(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return (*s && !*end && v >= 0 && v < NDEV) ? (int)v : -1;
}

/* Handle one command; write the reply into out. */
static void handle(char *line, char *out, size_t len)
{
	char *argv[8] = { 0 };
	int argc = 0;
	char *save = NULL;
	struct server *s;

	out[0] = '\0';
	for (char *t = strtok_r(line, " \t\r\n", &save); t && argc < 8; t = strtok_r(NULL, " \t\r\n", &save))
		argv[argc++] = t;
	if (argc == 0)
		return;
	logf_("Cmd:%s", argv[0]);
	if (!strcmp(argv[0], "get_server_list")) {
		for (int i = 0; i < st.n_servers; i++)
			snprintf(out + strlen(out), len - strlen(out), "%d\n", (int)st.servers[i].pid);
	} else if (!strcmp(argv[0], "get_server_status") && argc == 2 && (s = find_server(atoi(argv[1])))) {
		snprintf(out, len, "%s\n", s->fault ? "FAULT" : "ACTIVE");
	} else if (!strcmp(argv[0], "shutdown_server") && argc == 2 && (s = find_server(atoi(argv[1])))) {
		slogf(s->pid, "Server has been notified to shutdown");
		kill(s->pid, SIGTERM);
		waitpid(s->pid, NULL, 0);
		if (s->fault)
			fault_file(0, 0);
		*s = st.servers[--st.n_servers];
	} else if (!strcmp(argv[0], "fake_fault") && argc == 2) {
		pid_t c = atoi(argv[1]);

		s = st.n_servers ? &st.servers[0] : NULL;
		if (!s) {
			snprintf(out, len, "1\n");
			return;
		}
		if (!s->fault) {
			s->fault = 1;
			s->n_sticky = 0;
			for (int j = 0; j < s->n_clients; j++)
				if (kill(s->clients[j], 0) == 0)
					s->sticky[s->n_sticky++] = s->clients[j];
			slogf(s->pid, "Client %d encountered a fatal GPU error: an illegal memory access was encountered (700)",
			      (int)c);
			fault_file(c, 1);
		}
		snprintf(out, len, "0\n");
	} else if (!strcmp(argv[0], "get_client_list") && argc == 2 && (s = find_server(atoi(argv[1])))) {
		for (int j = 0; j < s->n_clients; j++)
			snprintf(out + strlen(out), len - strlen(out), "%d\n", (int)s->clients[j]);
	} else if (!strcmp(argv[0], "terminate_client") && argc == 3 && (s = find_server(atoi(argv[1])))) {
		pid_t c = atoi(argv[2]);

		for (int j = 0; j < s->n_clients; j++) {
			if (s->clients[j] == c) {
				s->clients[j] = s->clients[--s->n_clients];
				snprintf(out, len, "0\n");
				return;
			}
		}
		snprintf(out, len, "1\n");
	} else if (!strcmp(argv[0], "get_default_active_thread_percentage")) {
		snprintf(out, len, "%.1f\n", st.default_pct);
	} else if (!strcmp(argv[0], "set_default_active_thread_percentage") && argc == 2) {
		if (!st.ignore_set)
			st.default_pct = atof(argv[1]);
	} else if (!strcmp(argv[0], "get_active_thread_percentage") && argc == 2 && (s = find_server(atoi(argv[1])))) {
		snprintf(out, len, "%.1f\n", s->pct);
	} else if (!strcmp(argv[0], "set_active_thread_percentage") && argc == 3 && (s = find_server(atoi(argv[1])))) {
		if (!st.ignore_set)
			s->pct = atof(argv[2]);
		snprintf(out, len, "%.1f\n", s->pct);
	} else if (!strcmp(argv[0], "get_default_device_pinned_mem_limit") && argc == 2 && parse_dev(argv[1]) >= 0) {
		snprintf(out, len, "%s\n", st.default_mem[parse_dev(argv[1])]);
	} else if (!strcmp(argv[0], "set_default_device_pinned_mem_limit") && argc == 3 && parse_dev(argv[1]) >= 0) {
		if (!st.ignore_set)
			snprintf(st.default_mem[parse_dev(argv[1])], 16, "%s", argv[2]);
	} else if (!strcmp(argv[0], "get_device_pinned_mem_limit") && argc == 3 && (s = find_server(atoi(argv[1]))) &&
		   parse_dev(argv[2]) >= 0) {
		snprintf(out, len, "%s\n", s->mem[parse_dev(argv[2])]);
	} else if (!strcmp(argv[0], "set_device_pinned_mem_limit") && argc == 4 && (s = find_server(atoi(argv[1]))) &&
		   parse_dev(argv[2]) >= 0) {
		if (!st.ignore_set)
			snprintf(s->mem[parse_dev(argv[2])], 16, "%s", argv[3]);
	} else if (!strcmp(argv[0], "get_default_client_priority")) {
		snprintf(out, len, "%d\n", st.default_prio);
	} else if (!strcmp(argv[0], "set_default_client_priority") && argc == 2 &&
		   (!strcmp(argv[1], "0") || !strcmp(argv[1], "1"))) {
		if (!st.ignore_set)
			st.default_prio = atoi(argv[1]);
	} else if (!strcmp(argv[0], "fake_attach") && argc == 2) {
		s = st.n_servers ? &st.servers[0] : start_server();
		if (s && s->fault) {
			snprintf(out, len, "807\n");
			return;
		}
		if (s && s->n_clients < MAX_CLIENTS)
			s->clients[s->n_clients++] = atoi(argv[1]);
		logf_("User did not send valid credentials");
	} else if (!strcmp(argv[0], "quit")) {
		if (!st.no_quit)
			st.quitting = 1;
	} else {
		snprintf(out, len, "Unknown command \"%s\"\n", argv[0]);
	}
}

static void daemon_loop(int lfd)
{
	for (;;) {
		char buf[1024], out[4096];
		size_t len = 0;
		ssize_t r;
		int cfd;
		fd_set rf;
		struct timeval tv = { 0, 50000 };

		recover_servers();
		if (st.quitting && live_clients() == 0)
			stop_all_and_exit();
		FD_ZERO(&rf);
		FD_SET(lfd, &rf);
		if (select(lfd + 1, &rf, NULL, NULL, &tv) <= 0)
			continue;
		cfd = accept(lfd, NULL, NULL);
		if (cfd < 0)
			continue;
		logf_("NEW UI");
		while (len < sizeof(buf) - 1 && (r = read(cfd, buf + len, sizeof(buf) - 1 - len)) > 0)
			len += (size_t)r;
		buf[len] = '\0';
		handle(buf, out, sizeof(out));
		if (write(cfd, out, strlen(out)) < 0)
			logf_("write failed");
		close(cfd);
		logf_("UI closed");
	}
}

static int daemon_main(void)
{
	struct sockaddr_un sa;
	char path[300];
	int ready[2], lfd, fd;
	pid_t pid;
	char c;

	snprintf(st.pipe_dir, sizeof(st.pipe_dir), "%s", env_or("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"));
	snprintf(st.log_dir, sizeof(st.log_dir), "%s", env_or("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps"));
	st.ignore_set = getenv("FAKE_MPS_IGNORE_SET") != NULL;
	st.no_quit = getenv("FAKE_MPS_NO_QUIT") != NULL;
	st.sticky_fault = getenv("FAKE_MPS_STICKY_FAULT") != NULL;
	if (getenv("FAKE_MPS_START_FAIL"))
		return 1;
	if (pipe(ready) != 0)
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0) {
		close(ready[1]);
		/* Like the real program: return once the daemon has forked. */
		return read(ready[0], &c, 1) == 1 ? 0 : 1;
	}
	close(ready[0]);
	setsid();
	pid = fork();
	if (pid < 0)
		_exit(1);
	if (pid > 0)
		_exit(0);
	if (chdir("/") != 0)
		_exit(1);
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	signal(SIGPIPE, SIG_IGN);
	snprintf(path, sizeof(path), "%s/nvidia-cuda-mps-control.pid", st.pipe_dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		_exit(1);
	dprintf(fd, "%d\n", (int)getpid());
	close(fd);
	logf_("Starting control daemon");
	if (getenv("FAKE_MPS_START_LOG")) {
		/* Count starts across daemons whose directories are gone. */
		fd = open(getenv("FAKE_MPS_START_LOG"), O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dprintf(fd, "%d %s\n", (int)getpid(), st.pipe_dir);
			close(fd);
		}
	}
	c = 1;
	if (write(ready[1], &c, 1) != 1)
		_exit(1);
	close(ready[1]);
	if (getenv("FAKE_MPS_READY_DELAY_MS"))
		usleep((useconds_t)atoi(getenv("FAKE_MPS_READY_DELAY_MS")) * 1000u);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lfd < 0 || sock_path(&sa))
		_exit(1);
	unlink(sa.sun_path);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 16) != 0)
		_exit(1);
	daemon_loop(lfd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-d") || !strcmp(argv[1], "--daemon")))
		return daemon_main();
	if (argc > 1) {
		fprintf(stderr, "fake_mps_control: unknown option '%s'\n", argv[1]);
		return 2;
	}
	return client_main();
}
