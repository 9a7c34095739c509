/*
 * gpushare client: header-only C (and C++) side of the worker reporting
 * protocol (docs/protocol.md), for programs run as workers by
 * `gpushare bench -- CMD`. Copy this file into your project or include it;
 * it needs only POSIX.
 *
 *   struct gpushare_client gs;
 *   gpushare_client_init(&gs);              reads GPUSHARE_REPORT_FD
 *   ... load the model, warm up ...
 *   gpushare_client_ready(&gs);             waits for the start signal
 *   while (gpushare_client_running(&gs)) {
 *       uint64_t t0 = gpushare_client_now_ns();
 *       serve_one_request();
 *       gpushare_client_report(&gs, t0, gpushare_client_now_ns());
 *   }
 *
 * Version 2 (gpushare hands each request over; needed for open-loop load,
 * `gpushare bench --load open`, and fine under closed loop too):
 *
 *   gpushare_client_init_version(&gs, 2);
 *   ... load, warm up ...
 *   gpushare_client_ready(&gs);
 *   uint64_t id;
 *   while (gpushare_client_next(&gs, &id)) {     waits for "req ID"; false at stop
 *       serve_one_request();
 *       gpushare_client_done(&gs, id);
 *   }
 *
 * It says "hello 2" when gpushare speaks version 2 (GPUSHARE_PROTOCOL >= 2)
 * and falls back to version 1 otherwise: next() then runs the loop itself
 * and done() reports the span since next(). gpushare_client_init() stays
 * version 1, for programs written with running() and report().
 *
 * Outside gpushare (no GPUSHARE_REPORT_FD) every call succeeds and does
 * nothing, and gpushare_client_running() stays true: bound the loop
 * yourself then (gs.active tells which case holds).
 *
 * Not thread-safe: one client per process, used from one thread (or
 * guarded by the caller). Writes use MSG_NOSIGNAL, so a gpushare that went
 * away never kills the program with SIGPIPE; running() then turns false.
 */
#ifndef GPUSHARE_CLIENT_H
#define GPUSHARE_CLIENT_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSHARE_CLIENT_PROTOCOL 2   /* the highest version this client speaks */

struct gpushare_client {
	bool active;                   /* run by gpushare with a report endpoint */
	int fd;                        /* GPUSHARE_REPORT_FD, -1 when inactive */
	int worker, workers;           /* GPUSHARE_WORKER / GPUSHARE_WORKERS (0 / 1 alone) */
	long batch;                    /* GPUSHARE_BATCH, 0 when not set */
	long warmup_requests;          /* GPUSHARE_WARMUP_REQUESTS, -1 when not set */
	bool started;                  /* "go" received */
	bool stopped;                  /* "stop" received, or gpushare is gone */
	uint64_t measure_start_ns;     /* from "go"; CLOCK_MONOTONIC */
	uint64_t measure_end_ns;       /* from "go"; 0 when the window has no fixed end */
	char in[128];                  /* a partial line from gpushare */
	size_t in_len;
	int version;                   /* protocol spoken: 1, or 2 when gpushare offers it */
	bool has_req;                  /* v2: a "req ID" arrived and was not taken yet */
	uint64_t req_id;
	uint64_t next_id;              /* v1 fallback: ids of next() */
	uint64_t req_start_ns;         /* when next() handed the request out */
	/* Version 1 reports are batched: sent when GPUSHARE_CLIENT_FLUSH_NS has
	 * passed since the first one waiting, when the buffer is nearly full,
	 * before any other line, once stop is seen, and at close. */
	char out[4096];
	size_t out_len;
	uint64_t out_since_ns;         /* when the first waiting report was added */
	uint64_t polled_ns;            /* last look for "stop" (running()) */
};

#define GPUSHARE_CLIENT_FLUSH_NS 2000000ull  /* 2 ms */
#define GPUSHARE_CLIENT_POLL_NS 1000000ull   /* running() looks for stop every 1 ms */

static inline uint64_t gpushare_client_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline long gpushare_client_env_long(const char *name, long def)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return def;
	errno = 0;
	n = strtol(v, &end, 10);
	return errno || *end ? def : n;
}

/* Write whole lines; false when gpushare is gone (then stopped). */
static inline bool gpushare_client_send_raw(struct gpushare_client *c, const char *line, size_t len)
{
	size_t off = 0;

	if (!c->active)
		return true;
	while (off < len) {
		ssize_t n = send(c->fd, line + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			c->stopped = true;
			return false;
		}
		off += (size_t)n;
	}
	return true;
}

/* Send the reports waiting in the buffer. */
static inline bool gpushare_client_flush(struct gpushare_client *c)
{
	size_t len = c->out_len;

	c->out_len = 0;
	return len == 0 || gpushare_client_send_raw(c, c->out, len);
}

/* Write a whole line after the waiting reports. */
static inline bool gpushare_client_send(struct gpushare_client *c, const char *line, size_t len)
{
	return gpushare_client_flush(c) && gpushare_client_send_raw(c, line, len);
}

/* Read what gpushare sent; blocks up to timeout_ms (-1: until something). */
static inline void gpushare_client_poll(struct gpushare_client *c, int timeout_ms)
{
	struct pollfd p;
	char buf[128];
	ssize_t n;

	if (!c->active || c->stopped)
		return;
	p.fd = c->fd;
	p.events = POLLIN;
	p.revents = 0;
	if (poll(&p, 1, timeout_ms) <= 0)
		return;
	n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		c->stopped = true;     /* gpushare closed its end */
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		char *line = c->in;

		if (buf[i] != '\n') {
			if (c->in_len < sizeof(c->in) - 1)
				c->in[c->in_len++] = buf[i];
			continue;
		}
		c->in[c->in_len] = '\0';
		c->in_len = 0;
		if (!strncmp(line, "go", 2) && (line[2] == ' ' || line[2] == '\0')) {
			unsigned long long a = 0, b = 0;

			if (sscanf(line + 2, "%llu %llu", &a, &b) == 2) {
				c->measure_start_ns = a;
				c->measure_end_ns = b;
			}
			c->started = true;
		} else if (!strcmp(line, "stop")) {
			c->stopped = true;
		} else if (!strncmp(line, "req ", 4)) {
			char *end;
			unsigned long long id;

			errno = 0;
			id = strtoull(line + 4, &end, 10);
			if (!errno && end != line + 4 && *end == '\0') {
				c->req_id = id;
				c->has_req = true;
			}
		}
		/* Anything else: a later protocol version; ignored. */
	}
}

/* Read the environment and say hello, in the highest version up to `want`
 * that gpushare speaks (GPUSHARE_PROTOCOL). Returns 0 (also when not run by
 * gpushare: then inactive), or -1 when GPUSHARE_REPORT_FD is set but not
 * usable. */
static inline int gpushare_client_init_version(struct gpushare_client *c, int want)
{
	char hello[32];

	memset(c, 0, sizeof(*c));
	c->fd = (int)gpushare_client_env_long("GPUSHARE_REPORT_FD", -1);
	c->worker = (int)gpushare_client_env_long("GPUSHARE_WORKER", 0);
	c->workers = (int)gpushare_client_env_long("GPUSHARE_WORKERS", 1);
	c->batch = gpushare_client_env_long("GPUSHARE_BATCH", 0);
	c->warmup_requests = gpushare_client_env_long("GPUSHARE_WARMUP_REQUESTS", -1);
	if (c->fd < 0) {
		c->fd = -1;
		return getenv("GPUSHARE_REPORT_FD") && *getenv("GPUSHARE_REPORT_FD") ? -1 : 0;
	}
	c->active = true;
	/* Speak the highest version both sides know. */
	c->version = want >= 2 && gpushare_client_env_long("GPUSHARE_PROTOCOL", 1) >= 2 ? 2 : 1;
	snprintf(hello, sizeof(hello), "hello %d\n", c->version);
	return gpushare_client_send(c, hello, strlen(hello)) ? 0 : -1;
}

/* Version 1: the program runs its own loop (running(), report()). */
static inline int gpushare_client_init(struct gpushare_client *c)
{
	return gpushare_client_init_version(c, 1);
}

/* Warm-up is done: tell gpushare, then wait for every worker to be ready
 * and the start signal. Returns 0 to start measuring, 1 when gpushare said
 * stop instead (exit quietly then), -1 when gpushare is gone. */
static inline int gpushare_client_ready(struct gpushare_client *c)
{
	if (!c->active)
		return 0;
	if (!gpushare_client_send(c, "ready\n", 6))
		return -1;
	while (!c->started && !c->stopped)
		gpushare_client_poll(c, -1);
	return c->started && !c->stopped ? 0 : 1;
}

/* Whether to run another request: false once gpushare said stop (checked
 * without blocking). Always true when inactive. */
static inline bool gpushare_client_running(struct gpushare_client *c)
{
	uint64_t now;

	if (!c->active)
		return true;
	now = gpushare_client_now_ns();
	if (c->stopped || now - c->polled_ns >= GPUSHARE_CLIENT_POLL_NS) {
		c->polled_ns = now;
		gpushare_client_poll(c, 0);
	}
	if (c->stopped)
		gpushare_client_flush(c);
	return !c->stopped;
}

/* One request from start_ns to end_ns (gpushare_client_now_ns()). */
static inline int gpushare_client_report(struct gpushare_client *c, uint64_t start_ns, uint64_t end_ns)
{
	char line[64];
	int n;

	if (!c->active)
		return 0;
	n = snprintf(line, sizeof(line), "span %llu %llu\n", (unsigned long long)start_ns, (unsigned long long)end_ns);
	if (c->out_len == 0)
		c->out_since_ns = end_ns;
	memcpy(c->out + c->out_len, line, (size_t)n);
	c->out_len += (size_t)n;
	if (c->out_len > sizeof(c->out) - sizeof(line) || end_ns - c->out_since_ns >= GPUSHARE_CLIENT_FLUSH_NS ||
	    c->stopped)
		return gpushare_client_flush(c) ? 0 : -1;
	return 0;
}

/* The next request: true with its id in *id, false once gpushare said
 * stop (or is gone). Version 2 waits for gpushare to hand one over; version
 * 1 (and inactive) hands out the next number at once while running(). */
static inline bool gpushare_client_next(struct gpushare_client *c, uint64_t *id)
{
	if (c->active && c->version >= 2) {
		while (!c->has_req && !c->stopped)
			gpushare_client_poll(c, -1);
		if (!c->has_req)
			return false;
		c->has_req = false;
		*id = c->req_id;
	} else {
		if (!gpushare_client_running(c))
			return false;
		*id = c->next_id++;
	}
	c->req_start_ns = gpushare_client_now_ns();
	return true;
}

/* Request id is finished: "done ID" (version 2), or its span since next()
 * (version 1). */
static inline int gpushare_client_done(struct gpushare_client *c, uint64_t id)
{
	char line[48];
	int n;

	if (!c->active)
		return 0;
	if (c->version < 2)
		return gpushare_client_report(c, c->req_start_ns, gpushare_client_now_ns());
	n = snprintf(line, sizeof(line), "done %llu\n", (unsigned long long)id);
	return gpushare_client_send(c, line, (size_t)n) ? 0 : -1;
}

/* Text for error/fail: printable ASCII only, cut to fit one line. */
static inline int gpushare_client_say(struct gpushare_client *c, const char *word, const char *text)
{
	char line[220];
	size_t n;

	if (!c->active)
		return 0;
	n = (size_t)snprintf(line, sizeof(line) - 1, "%s %s", word, text ? text : "");
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] > 0x7e)
			line[i] = '?';
	}
	line[n++] = '\n';
	return gpushare_client_send(c, line, n) ? 0 : -1;
}

/* A request failed, the program goes on (counted as an error). */
static inline int gpushare_client_error(struct gpushare_client *c, const char *text)
{
	return gpushare_client_say(c, "error", text);
}

/* The program gives up: say why, then exit non-zero. */
static inline int gpushare_client_fail(struct gpushare_client *c, const char *text)
{
	return gpushare_client_say(c, "fail", text);
}

static inline void gpushare_client_close(struct gpushare_client *c)
{
	if (c->active) {
		gpushare_client_flush(c);
		close(c->fd);
	}
	c->active = false;
	c->fd = -1;
}

#ifdef __cplusplus
}
#endif
#endif
