/*
 * Recognising a fatal GPU fault under MPS (mps_fault.h): from a client's
 * error text and from the MPS server's log.
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "mps_fault.h"
#include "mps_parse.h"

#define ERR_TAIL (16 * 1024)
#define LOG_TAIL (256 * 1024)

/* Case-insensitive search in text[0..len) (not NUL-terminated). */
static const char *find_ci(const char *text, size_t len, const char *needle)
{
	size_t n = strlen(needle);

	for (size_t i = 0; n && i + n <= len; i++) {
		size_t k = 0;

		while (k < n && tolower((unsigned char)text[i + k]) == tolower((unsigned char)needle[k]))
			k++;
		if (k == n)
			return text + i;
	}
	return NULL;
}

/* A number in the text as an error code: not part of a longer number. */
static bool has_code(const char *text, size_t len, const char *code)
{
	size_t n = strlen(code);

	for (size_t i = 0; i + n <= len; i++) {
		if (memcmp(text + i, code, n) != 0)
			continue;
		if ((i > 0 && (isalnum((unsigned char)text[i - 1]) || text[i - 1] == '.')) ||
		    (i + n < len && isalnum((unsigned char)text[i + n])))
			continue;
		/* "error 700", "(700)", "code=700", "code 700", "700:" */
		if ((i > 0 && (text[i - 1] == '(' || text[i - 1] == '=' || text[i - 1] == '#')) ||
		    (i >= 6 && find_ci(text + i - 6, 6, "error ")) || (i >= 5 && find_ci(text + i - 5, 5, "code ")) ||
		    (i >= 7 && find_ci(text + i - 7, 7, "status ")))
			return true;
	}
	return false;
}

enum gpushare_mps_fault gpushare_mps_fault_text(const char *text, size_t len)
{
	static const char *const fatal[] = {
		"illegal memory access", "illegal address", "ILLEGAL_ADDRESS", "IllegalAddress",
		"hardware stack error", "HARDWARE_STACK_ERROR", "HardwareStackError",
		"illegal instruction", "ILLEGAL_INSTRUCTION", "IllegalInstruction",
		"misaligned address", "MISALIGNED_ADDRESS", "MisalignedAddress",
		"invalid address space", "INVALID_ADDRESS_SPACE", "InvalidAddressSpace",
		"invalid program counter", "INVALID_PC", "InvalidPc",
		"unspecified launch failure", "CUDA_ERROR_LAUNCH_FAILED", "cudaErrorLaunchFailure",
	};
	static const char *const fatal_codes[] = { "700", "714", "715", "716", "717", "718", "719" };
	static const char *const not_ready[] = { "MPS server is not ready", "MPS_SERVER_NOT_READY", "MpsServerNotReady",
						 "server not ready" };

	if (!text)
		return GPUSHARE_MPS_FAULT_NONE;
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		if (find_ci(text, len, fatal[i]))
			return GPUSHARE_MPS_FAULT_FATAL;
	for (size_t i = 0; i < sizeof(fatal_codes) / sizeof(fatal_codes[0]); i++)
		if (has_code(text, len, fatal_codes[i]))
			return GPUSHARE_MPS_FAULT_FATAL;
	for (size_t i = 0; i < sizeof(not_ready) / sizeof(not_ready[0]); i++)
		if (find_ci(text, len, not_ready[i]))
			return GPUSHARE_MPS_FAULT_NOT_READY;
	if (has_code(text, len, "807"))
		return GPUSHARE_MPS_FAULT_NOT_READY;
	return GPUSHARE_MPS_FAULT_NONE;
}

/* The last `max` bytes of path into a malloc'ed buffer; NULL when none. */
static char *read_tail(const char *path, size_t max, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	off_t from;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY);

	*len = 0;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
		goto out;
	from = st.st_size > (off_t)max ? st.st_size - (off_t)max : 0;
	buf = malloc((size_t)(st.st_size - from) + 1);
	if (!buf)
		goto out;
	r = pread(fd, buf, (size_t)(st.st_size - from), from);
	if (r <= 0) {
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[r] = '\0';
	*len = (size_t)r;
out:
	close(fd);
	return buf;
}

enum gpushare_mps_fault gpushare_mps_fault_file(const char *path)
{
	size_t len;
	char *text = read_tail(path, ERR_TAIL, &len);
	enum gpushare_mps_fault k = gpushare_mps_fault_text(text, len);

	free(text);
	return k;
}

/* Adds pid to pids[0..*n) unless there or full. */
static void add_pid(pid_t *pids, size_t max, size_t *n, long pid)
{
	if (pid <= 0 || pid > (long)0x3fffffff)
		return;
	for (size_t i = 0; i < *n; i++)
		if (pids[i] == (pid_t)pid)
			return;
	if (*n < max)
		pids[(*n)++] = (pid_t)pid;
}

/* The last 256 KiB of log_dir/server.log; NULL when there is none. */
static char *server_log(const char *log_dir, size_t *len)
{
	char path[GPUSHARE_PATH_MAX + 16];

	if (!log_dir || !*log_dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/server.log", log_dir);
	return read_tail(path, LOG_TAIL, len);
}

/* The text after a log line's "[date time Who  pid] " prefix. */
static const char *log_message(const char *line)
{
	const char *m = line[0] == '[' ? strchr(line, ']') : NULL;

	if (!m)
		return line;
	m++;
	while (*m == ' ')
		m++;
	return m;
}

/* A line that names a client as having caused a fatal fault: its pid, else 0. */
static long named_client(const char *line)
{
	size_t ll = strlen(line);
	const char *c = find_ci(line, ll, "client ");
	char *end;
	long pid;

	if (!c || !find_ci(line, ll, "fatal"))
		return 0;
	c += 7;
	if (!strncmp(c, "process ", 8))
		c += 8;
	if (!isdigit((unsigned char)*c))
		return 0;
	pid = strtol(c, &end, 10);
	return isalnum((unsigned char)*end) ? 0 : pid;
}

void gpushare_mps_fault_log_read(const char *log_dir, struct gpushare_mps_fault_log *log)
{
	const size_t max = GPUSHARE_MPS_FAULT_LOG_MAX;
	size_t len;
	char *text, *line, *save = NULL;
	bool in_sticky = false;

	memset(log, 0, sizeof(*log));
	if (!(text = server_log(log_dir, &len)))
		return;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *msg = log_message(line), *c;
		size_t ml = strlen(msg);
		char *end;
		long pid;

		add_pid(log->named, max, &log->n_named, named_client(line));
		if (find_ci(msg, ml, "fatal GPU error"))
			log->fatal = true;
		if (in_sticky) {
			/* the list: one pid alone per line */
			pid = strtol(msg, &end, 10);
			if (end != msg && *end == '\0') {
				add_pid(log->affected, max, &log->n_affected, pid);
				continue;
			}
			in_sticky = false;
		}
		if (find_ci(msg, ml, "have a sticky error set")) {
			in_sticky = true;
			continue;
		}
		if (find_ci(msg, ml, "torn down") && (c = find_ci(msg, ml, "{PID: ")) != NULL) {
			pid = strtol(c + 6, &end, 10);
			if (end != c + 6)
				add_pid(log->affected, max, &log->n_affected, pid);
		}
	}
	free(text);
}

bool gpushare_mps_fault_server(const struct gpushare_mps *m, bool shut)
{
	char *reply = NULL, cmd[64];
	pid_t *pids = NULL;
	size_t n = 0;
	bool faulted = false;

	if (gpushare_mps_command(m, "get_server_list", &reply) == GPUSHARE_OK &&
	    gpushare_mps_parse_pid_list(reply, &pids, &n) == GPUSHARE_OK) {
		for (size_t i = 0; i < n && (shut || !faulted); i++) {
			char *st = NULL;

			snprintf(cmd, sizeof(cmd), "get_server_status %d", (int)pids[i]);
			if (gpushare_mps_command(m, cmd, &st) == GPUSHARE_OK && st && strstr(st, "FAULT")) {
				faulted = true;
				if (shut) {
					char *r2 = NULL;

					snprintf(cmd, sizeof(cmd), "shutdown_server %d", (int)pids[i]);
					gpushare_mps_command(m, cmd, &r2);
					free(r2);
				}
			}
			free(st);
		}
	}
	free(reply);
	free(pids);
	gpushare_clear_error();
	return faulted;
}
