/*
 * Unit tests of lib/metrics/metrics_http.c: the libmicrohttpd server of
 * GET /metrics: status codes (200, a landing page on /, 404, 405 with Allow, 413, 500 when the
 * producer fails), the content type, HEAD without a body, a taken port and
 * an address that is not this machine's; concurrent scrapes share a
 * collection, and no answer is older than its request.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"

static int produce_fixed(void *arg, char **text, size_t *len)
{
	(void)arg;
	*text = strdup("# HELP x X.\n# TYPE x gauge\nx 1\n");
	*len = strlen(*text);
	return GPUSHARE_OK;
}

/* One request over a fresh connection; returns the whole response. */
static char *http(uint16_t port, const char *request)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t cap = 65536, len = 0;
	char *out = calloc(1, cap);
	ssize_t n;

	assert_true(fd >= 0 && out);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, request, strlen(request)), (ssize_t)strlen(request));
	while ((n = read(fd, out + len, cap - len - 1)) > 0)
		len += (size_t)n;
	close(fd);
	return out;
}

static void test_server(void **state)
{
	struct gpushare_metrics_server *s, *t;
	char listen_at[32], *r;
	uint16_t port;

	(void)state;
	assert_int_equal(gpushare_metrics_server_start("127.0.0.1", 0, produce_fixed, NULL, &s), GPUSHARE_OK);
	port = gpushare_metrics_server_port(s);
	assert_true(port > 0);
	r = http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200"));
	assert_non_null(strstr(r, "Content-Type: text/plain; version=0.0.4; charset=utf-8"));
	assert_non_null(strstr(r, "\r\n\r\n# HELP x X.\n# TYPE x gauge\nx 1\n"));
	free(r);
	r = http(port, "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 404"));
	free(r);
	/* `/`: a landing page that links the metrics, node_exporter's way. */
	r = http(port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200"));
	assert_non_null(strstr(r, "Content-Type: text/html"));
	assert_non_null(strstr(r, "<a href=\"/metrics\">"));
	free(r);
	r = http(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc");
	assert_non_null(strstr(r, "HTTP/1.1 405"));
	assert_non_null(strstr(r, "Allow: GET, HEAD"));
	free(r);
	r = http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
	assert_non_null(strstr(r, "HTTP/1.1 413"));
	free(r);
	r = http(port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200"));
	assert_null(strstr(r, "x 1\n"));
	free(r);
	/* The same port again: taken. */
	assert_int_equal(gpushare_metrics_server_start("127.0.0.1", port, produce_fixed, NULL, &t),
			 GPUSHARE_E_ADDR_IN_USE);
	snprintf(listen_at, sizeof(listen_at), "127.0.0.1:%u", (unsigned)port);
	assert_non_null(strstr(gpushare_errdetail(), listen_at));
	assert_non_null(strstr(gpushare_errdetail(), "Address already in use"));
	assert_null(t);
	gpushare_metrics_server_stop(s);
	gpushare_metrics_server_stop(NULL);
	/* Not an address of this machine. */
	assert_int_equal(gpushare_metrics_server_start("192.0.2.1", 0, produce_fixed, NULL, &t), GPUSHARE_E_ADDR_IN_USE);
}

static int produce_failing(void *arg, char **text, size_t *len)
{
	int *calls = arg;

	(*calls)++;
	*text = NULL;
	*len = 0;
	return gpushare_fail(GPUSHARE_E_NOMEM, "no exposition this time");
}

/* A producer that fails: 500 with a one-line body, and the next scrape
 * asks it again (nothing is cached). */
static void test_server_producer_fails(void **state)
{
	struct gpushare_metrics_server *s;
	int calls = 0;
	char *r;

	(void)state;
	assert_int_equal(gpushare_metrics_server_start("127.0.0.1", 0, produce_failing, &calls, &s), GPUSHARE_OK);
	r = http(gpushare_metrics_server_port(s), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 500"));
	assert_non_null(strstr(r, "cannot produce the metrics\n"));
	free(r);
	r = http(gpushare_metrics_server_port(s), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 500"));
	free(r);
	assert_int_equal(calls, 2);
	gpushare_metrics_server_stop(s);
	gpushare_clear_error();
}

/* A slow producer: each collection takes 1 s and says which it was. */
static atomic_int slow_started;

static int produce_slow(void *arg, char **text, size_t *len)
{
	int n = atomic_fetch_add(&slow_started, 1) + 1;

	(void)arg;
	usleep(1000 * 1000);
	*text = malloc(32);
	snprintf(*text, 32, "collection %d\n", n);
	*len = strlen(*text);
	return GPUSHARE_OK;
}

/* A scrape from a thread (no cmocka asserts there): the collections
 * started before it was sent, and the collection that answered it. */
struct scrape {
	pthread_t t;
	uint16_t port;
	int started_before, answered_by;
	bool ok;
};

static void *scrape_main(void *arg)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	struct scrape *sc = arg;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(sc->port) };
	struct timeval tv = { .tv_sec = 60 };
	char out[4096];
	size_t len = 0;
	ssize_t n;
	const char *body;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return NULL;
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		sc->started_before = atomic_load(&slow_started);
		if (write(fd, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1)
			while (len < sizeof(out) - 1 && (n = read(fd, out + len, sizeof(out) - 1 - len)) > 0)
				len += (size_t)n;
	}
	close(fd);
	out[len] = '\0';
	body = strstr(out, "\r\n\r\ncollection ");
	sc->ok = strncmp(out, "HTTP/1.1 200", 12) == 0 && body && sscanf(body + 4, "collection %d", &sc->answered_by) == 1;
	return NULL;
}

/* Eight scrapes at once while collections take 1 s: they share
 * collections (each one collecting would take 8), and every answer comes
 * from a collection that started after its request was sent. A scrape
 * after them gets a new collection. */
static void test_server_shared_collection(void **state)
{
	struct gpushare_metrics_server *s;
	struct scrape sc[8], last;
	int i;

	(void)state;
	atomic_store(&slow_started, 0);
	assert_int_equal(gpushare_metrics_server_start("127.0.0.1", 0, produce_slow, NULL, &s), GPUSHARE_OK);
	for (i = 0; i < 8; i++) {
		sc[i] = (struct scrape){ .port = gpushare_metrics_server_port(s) };
		assert_int_equal(pthread_create(&sc[i].t, NULL, scrape_main, &sc[i]), 0);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(sc[i].t, NULL);
		assert_true(sc[i].ok);
		assert_true(sc[i].answered_by > sc[i].started_before);
	}
	/* Two when the eight arrive within the first collection, one more for
	 * each further second over which a busy machine spreads their
	 * arrivals; a server without sharing runs eight, whatever the timing. */
	assert_true(atomic_load(&slow_started) <= 6);
	last = (struct scrape){ .port = gpushare_metrics_server_port(s) };
	scrape_main(&last);
	assert_true(last.ok);
	assert_true(last.answered_by > last.started_before);
	gpushare_metrics_server_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server),
		cmocka_unit_test(test_server_producer_fails),
		cmocka_unit_test(test_server_shared_collection),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
