/*
 * Unit tests of lib/metrics/metrics_http.c: the libmicrohttpd server of
 * GET /metrics: status codes (200, 404, 405 with Allow, 413, 500 when the
 * producer fails), the content type, HEAD without a body, a taken port and
 * an address that is not this machine's.
 */
#include <setjmp.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server),
		cmocka_unit_test(test_server_producer_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
