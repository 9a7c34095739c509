/*
 * The HTTP side of the metrics: GET /metrics over libmicrohttpd.
 *
 * One thread per connection (MHD_USE_THREAD_PER_CONNECTION), so a slow
 * producer or a silent client never holds up another scrape. Bounded:
 * at most GPUSHARE_METRICS_MAX_CONNECTIONS connections in all and
 * GPUSHARE_METRICS_MAX_PER_IP from one address, each dropped after
 * GPUSHARE_METRICS_CONN_TIMEOUT_S seconds without progress, with a request
 * buffer of GPUSHARE_METRICS_CONN_MEMORY_BYTES (a larger request head is
 * refused by libmicrohttpd with 431/414). libmicrohttpd's timeout restarts
 * with every byte, so a client trickling its request head a byte at a time
 * would keep its connection forever: a watchdog thread closes a connection
 * whose request head is not complete GPUSHARE_METRICS_HEADER_TIMEOUT_S
 * seconds after it began. A request body is never read: other methods get
 * 405 and a GET or HEAD announcing a body gets 413.
 *
 * Scrapes that arrive while a collection runs share the next one instead of
 * queueing one each (collect_shared): collections run one at a time, and a
 * request is answered by the first collection that started after it
 * arrived, so an answer is never older than its request and any number of
 * concurrent scrapes cost at most two collections (the one under way and
 * the next). A collection that is slow (MPS daemons that answer slowly on
 * a loaded machine) then no longer piles up requests behind it.
 *
 * The listening socket is made here, not by libmicrohttpd, so a taken port
 * gives the kernel's own reason (EADDRINUSE) and port 0 can be asked for.
 * The server's threads start with SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE blocked: the
 * caller's thread keeps its signals.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "gpushare/gpushare.h"
#include "gpushare/files.h"
#include "gpushare/metrics.h"
#include "gpushare/util.h"
#include "gpushare/internal/metrics.h"

/* One open connection, for the header deadline. */
struct conn_watch {
	struct conn_watch *prev, *next;
	int fd;
	uint64_t head_start_ns;       /* when the request head began */
	bool in_request;              /* the head is complete; the answer is under way */
	bool closed;                  /* shut down by the watchdog */
};

struct gpushare_metrics_server {
	struct MHD_Daemon *daemon;
	uint16_t port;
	gpushare_metrics_produce_fn fn;
	void *arg;
	pthread_mutex_t lock;         /* guards conns and stop */
	pthread_cond_t wake;
	struct conn_watch conns;      /* list head */
	bool stop;
	bool watchdog_started;
	pthread_t watchdog;
	/* The last collection, shared by the requests that waited for it. */
	pthread_mutex_t collect_lock; /* one collection at a time; guards the fields below */
	char *last;                   /* its text (UTF-8 fixed); NULL none or failed */
	size_t last_len;
	uint64_t last_start_ns;       /* when it started */
};

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct gpushare_metrics_server *s = cls;
	struct conn_watch *w = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		w = calloc(1, sizeof(*w));
		if (!w || !ci) {
			free(w);
			return;  /* unwatched: still bounded by the idle timeout */
		}
		w->fd = ci->connect_fd;
		w->head_start_ns = gpushare_now_ns();
		pthread_mutex_lock(&s->lock);
		w->next = s->conns.next;
		w->prev = &s->conns;
		s->conns.next->prev = w;
		s->conns.next = w;
		pthread_mutex_unlock(&s->lock);
		*socket_context = w;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && w) {
		pthread_mutex_lock(&s->lock);
		w->prev->next = w->next;
		w->next->prev = w->prev;
		pthread_mutex_unlock(&s->lock);
		free(w);
		*socket_context = NULL;
	}
}

static struct conn_watch *watch_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* A request answered: a kept-alive connection's next head has its own deadline. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct gpushare_metrics_server *s = cls;
	struct conn_watch *w = watch_of(conn);

	(void)con_cls;
	(void)toe;
	if (!w)
		return;
	pthread_mutex_lock(&s->lock);
	w->in_request = false;
	w->head_start_ns = gpushare_now_ns();
	pthread_mutex_unlock(&s->lock);
}

/* Close connections whose request head is overdue. shutdown() wakes the
 * connection's thread with end-of-file and libmicrohttpd closes it. */
static void *watchdog_main(void *arg)
{
	struct gpushare_metrics_server *s = arg;
	uint64_t limit = (uint64_t)GPUSHARE_METRICS_HEADER_TIMEOUT_S * 1000000000ull;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		struct timespec ts;
		uint64_t now = gpushare_now_ns();

		for (struct conn_watch *w = s->conns.next; w != &s->conns; w = w->next) {
			if (!w->in_request && !w->closed && now - w->head_start_ns > limit) {
				shutdown(w->fd, SHUT_RDWR);
				w->closed = true;
			}
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&s->wake, &s->lock, &ts);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static const char not_found[] = "not found; metrics are at /metrics\n";
/* `/`: a page for a person who opens the address in a browser, as
 * node_exporter serves one. */
static const char landing[] = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>gpushare exporter</title></head>\n"
			      "<body><h1>gpushare exporter</h1>\n<p><a href=\"/metrics\">Metrics</a></p></body></html>\n";
static const char not_allowed[] = "method not allowed; use GET\n";
static const char too_large[] = "a request to /metrics carries no body\n";
static const char failed[] = "cannot produce the metrics\n";

static enum MHD_Result reply_typed(struct MHD_Connection *conn, unsigned status, const char *text, bool allow,
				   const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_static(struct MHD_Connection *conn, unsigned status, const char *text, bool allow)
{
	return reply_typed(conn, status, text, allow, "text/plain; charset=utf-8");
}

static bool has_body(struct MHD_Connection *conn)
{
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);

	return te != NULL || (cl && strspn(cl, "0") != strlen(cl));
}

/* One collection: the producer's text, made valid UTF-8 (label values such
 * as process names may hold any bytes; the exposition format is UTF-8). */
static int collect(struct gpushare_metrics_server *s, char **text, size_t *len)
{
	char *t = NULL, *fixed;
	size_t n = 0;

	if (s->fn(s->arg, &t, &n) != GPUSHARE_OK || !t)
		return GPUSHARE_E_SYS;
	if (memchr(t, '\0', n) == NULL) {
		fixed = malloc(n + 1);
		if (!fixed) {
			free(t);
			return GPUSHARE_E_NOMEM;
		}
		memcpy(fixed, t, n);
		fixed[n] = '\0';
		free(t);
		t = gpushare_utf8_fix(fixed);
		if (!t)
			return GPUSHARE_E_NOMEM;
		n = strlen(t);
	}
	*text = t;
	*len = n;
	return GPUSHARE_OK;
}

/* The answer to a request that arrived at `arrived`: the last collection if
 * it started after that, else a new one (which later arrivals then share).
 * The caller owns the copy in *text. */
static int collect_shared(struct gpushare_metrics_server *s, char **text, size_t *len)
{
	uint64_t arrived = gpushare_now_ns();
	int rc = GPUSHARE_OK;

	pthread_mutex_lock(&s->collect_lock);
	if (!s->last || s->last_start_ns < arrived) {
		uint64_t start = gpushare_now_ns();
		char *t;
		size_t n;

		free(s->last);
		s->last = NULL;
		rc = collect(s, &t, &n);
		if (!rc) {
			s->last = t;
			s->last_len = n;
			s->last_start_ns = start;
		}
	}
	if (!rc) {
		*text = malloc(s->last_len + 1);
		if (*text) {
			memcpy(*text, s->last, s->last_len + 1);
			*len = s->last_len;
		} else {
			rc = GPUSHARE_E_NOMEM;
		}
	}
	pthread_mutex_unlock(&s->collect_lock);
	return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct gpushare_metrics_server *s = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *text = NULL;
	size_t len = 0;

	(void)version;
	(void)upload_data;
	{
		struct conn_watch *w = watch_of(conn);

		if (w) {
			pthread_mutex_lock(&s->lock);
			w->in_request = true;
			pthread_mutex_unlock(&s->lock);
		}
	}
	/* A refusal is decided on the first call, before any body is read:
	 * libmicrohttpd then closes the connection instead of reading it. */
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply_static(conn, MHD_HTTP_METHOD_NOT_ALLOWED, not_allowed, true);
	if (has_body(conn))
		return reply_static(conn, MHD_HTTP_CONTENT_TOO_LARGE, too_large, false);
	/* A GET or HEAD without a body is answered on the second call, once
	 * libmicrohttpd has the whole request: an answer queued on the first
	 * call closes the connection (Connection: close), and a scraper would
	 * connect anew for every scrape instead of keeping it alive. */
	if (!*con_cls) {
		*con_cls = s;
		return MHD_YES;
	}
	if (!strcmp(url, "/"))
		return reply_typed(conn, MHD_HTTP_OK, landing, false, "text/html; charset=utf-8");
	if (strcmp(url, "/metrics") != 0)
		return reply_static(conn, MHD_HTTP_NOT_FOUND, not_found, false);
	if (collect_shared(s, &text, &len) != GPUSHARE_OK)
		return reply_static(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, failed, false);
	r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, GPUSHARE_METRICS_CONTENT_TYPE);
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static void server_free(struct gpushare_metrics_server *s)
{
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->collect_lock);
	pthread_cond_destroy(&s->wake);
	free(s->last);
	free(s);
}

static int listen_socket(const char *addr, uint16_t port, int *fd_out, uint16_t *bound)
{
	struct addrinfo hints, *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char portbuf[8];
	int fd, one = 1, e, g;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	/* Addresses only: a name would need a lookup (docs/metrics.md). */
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV | (strcmp(addr, "localhost") ? AI_NUMERICHOST : 0);
	snprintf(portbuf, sizeof(portbuf), "%u", (unsigned)port);
	g = getaddrinfo(addr, portbuf, &hints, &res);
	if (g != 0)
		return gpushare_fail(GPUSHARE_E_ADDR_IN_USE, "cannot listen on %s:%u: %s", addr, (unsigned)port,
				     gai_strerror(g));
	fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
	if (fd < 0) {
		e = errno;
		freeaddrinfo(res);
		return gpushare_fail(GPUSHARE_E_SYS, "socket: %s", strerror(e));
	}
	/* Allows a restart while old connections sit in TIME_WAIT; Linux still
	 * refuses a port another socket listens on. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 64) != 0) {
		e = errno;
		close(fd);
		freeaddrinfo(res);
		return gpushare_fail(GPUSHARE_E_ADDR_IN_USE, "cannot listen on %s:%u: %s", addr, (unsigned)port,
				     strerror(e));
	}
	freeaddrinfo(res);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET)
			*bound = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			*bound = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	*fd_out = fd;
	return GPUSHARE_OK;
}

static gpushare_metrics_listen_fn listen_notice;
static void *listen_notice_arg;

int gpushare_metrics_server_start(const char *addr, uint16_t port, gpushare_metrics_produce_fn fn, void *arg,
				  struct gpushare_metrics_server **out)
{
	struct gpushare_metrics_server *s;
	sigset_t block, old;
	int fd = -1, rc;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot allocate the metrics server");
	s->fn = fn;
	s->arg = arg;
	s->port = port;
	s->conns.next = s->conns.prev = &s->conns;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->collect_lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	rc = listen_socket(addr, port, &fd, &s->port);
	if (rc) {
		server_free(s);
		return rc;
	}
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	sigaddset(&block, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL,
				     on_request, s,
				     MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)GPUSHARE_METRICS_MAX_CONNECTIONS,
				     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)GPUSHARE_METRICS_MAX_PER_IP,
				     MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				     MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)GPUSHARE_METRICS_CONN_TIMEOUT_S,
				     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)GPUSHARE_METRICS_CONN_MEMORY_BYTES,
				     MHD_OPTION_END);
	if (s->daemon)
		s->watchdog_started = pthread_create(&s->watchdog, NULL, watchdog_main, s) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->daemon || !s->watchdog_started) {
		if (s->daemon)
			MHD_stop_daemon(s->daemon);
		else
			close(fd);
		server_free(s);
		return gpushare_fail(GPUSHARE_E_SYS, "cannot start the HTTP server on %s:%u (libmicrohttpd)", addr,
				     (unsigned)port);
	}
	*out = s;
	if (listen_notice)
		listen_notice(addr, s->port, listen_notice_arg);
	return GPUSHARE_OK;
}

void gpushare_metrics_set_listen_notice(gpushare_metrics_listen_fn fn, void *arg)
{
	listen_notice = fn;
	listen_notice_arg = arg;
}

uint16_t gpushare_metrics_server_port(const struct gpushare_metrics_server *s)
{
	return s ? s->port : 0;
}

void gpushare_metrics_server_stop(struct gpushare_metrics_server *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->watchdog, NULL);
	MHD_stop_daemon(s->daemon);  /* joins the threads, closes the socket */
	server_free(s);
}
