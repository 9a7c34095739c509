/*
 * The Prometheus text exposition format, version 0.0.4: a growing buffer,
 * family headers, samples with escaped labels, histograms computed from
 * gpushare's log-linear histograms; and the parsing of the two values a user
 * gives (a listen address and a bucket list).
 *
 * Format rules this writer keeps (and tests/unit/metrics/test_metrics.c checks with
 * promtool): lines end in "\n", the last one included; HELP text escapes
 * backslash and newline; label values escape backslash, double quote and
 * newline; a family's samples follow its HELP/TYPE lines together; buckets
 * are cumulative with le ascending and a final le="+Inf" equal to _count.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "gpushare/metrics.h"
#include "gpushare/internal/metrics.h"
#include "items.h"

/* ---- the buffer (gpushare/buf.h) ---- */

void gpushare_metrics_buf_init(struct gpushare_metrics_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void gpushare_metrics_buf_release(struct gpushare_metrics_buf *b)
{
	gpushare_buf_release(&b->text);
	gpushare_metrics_buf_init(b);
}

static void put(struct gpushare_metrics_buf *b, const char *s, size_t n)
{
	gpushare_buf_add(&b->text, s, n);
}

static void puts_(struct gpushare_metrics_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void putf(struct gpushare_metrics_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(struct gpushare_metrics_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (gpushare_buf_vaddf(&b->text, fmt, ap))
		b->text.failed = true; /* a bad format too: the text is incomplete */
	va_end(ap);
}

int gpushare_metrics_buf_finish(struct gpushare_metrics_buf *b, char **text, size_t *len)
{
	if (b->text.failed) {
		gpushare_metrics_buf_release(b);
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot build the metrics exposition");
	}
	*len = b->text.len;
	*text = gpushare_buf_take(&b->text);
	gpushare_metrics_buf_init(b);
	if (!*text)
		return gpushare_fail(GPUSHARE_E_NOMEM, "cannot build the metrics exposition");
	return GPUSHARE_OK;
}

/* ---- escaping and numbers ---- */

/* HELP text: \ and newline; label values also ". */
static void put_escaped(struct gpushare_metrics_buf *b, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			puts_(b, "\\\\");
		else if (*s == '\n')
			puts_(b, "\\n");
		else if (quote && *s == '"')
			puts_(b, "\\\"");
		else
			put(b, s, 1);
	}
}

void gpushare_metrics_format_double(double v, char *buf, size_t len)
{
	if (isnan(v)) {
		snprintf(buf, len, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	/* Whole numbers as integers (counts, bytes, hertz), others as the
	 * shortest of %.1g .. %.17g that reads back exactly. */
	if (v == floor(v) && fabs(v) < 1e15) {
		snprintf(buf, len, "%.0f", v);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

static void put_labels(struct gpushare_metrics_buf *b, const struct gpushare_metrics_label *l, size_t n,
		       const char *le)
{
	if (n == 0 && !le)
		return;
	puts_(b, "{");
	for (size_t i = 0; i < n; i++) {
		putf(b, "%s%s=\"", i ? "," : "", l[i].name);
		put_escaped(b, l[i].value ? l[i].value : "", true);
		puts_(b, "\"");
	}
	if (le)
		putf(b, "%sle=\"%s\"", n ? "," : "", le);
	puts_(b, "}");
}

/* ---- families and samples ---- */

void gpushare_metrics_family(struct gpushare_metrics_buf *b, const char *name, const char *type, const char *help)
{
	b->pend_name = name;
	b->pend_type = type;
	b->pend_help = help;
}

static void flush_family(struct gpushare_metrics_buf *b)
{
	if (!b->pend_name)
		return;
	putf(b, "# HELP %s ", b->pend_name);
	put_escaped(b, b->pend_help, false);
	putf(b, "\n# TYPE %s %s\n", b->pend_name, b->pend_type);
	b->pend_name = NULL;
}

void gpushare_metrics_sample(struct gpushare_metrics_buf *b, const char *name, const struct gpushare_metrics_label *l,
			     size_t n_labels, double value)
{
	char num[40];

	gpushare_metrics_format_double(value, num, sizeof(num));
	flush_family(b);
	puts_(b, name);
	put_labels(b, l, n_labels, NULL);
	putf(b, " %s\n", num);
}

void gpushare_metrics_sample_u64(struct gpushare_metrics_buf *b, const char *name,
				 const struct gpushare_metrics_label *l, size_t n_labels, uint64_t value)
{
	flush_family(b);
	puts_(b, name);
	put_labels(b, l, n_labels, NULL);
	putf(b, " %llu\n", (unsigned long long)value);
}

void gpushare_metrics_histogram_cum(struct gpushare_metrics_buf *b, const char *name,
				    const struct gpushare_metrics_label *l, size_t n_labels, const uint64_t *cum,
				    const double *le, size_t n_le, uint64_t count, double sum_seconds)
{
	char metric[160], num[40];

	snprintf(metric, sizeof(metric), "%s_bucket", name);
	flush_family(b);
	for (size_t i = 0; i < n_le; i++) {
		gpushare_metrics_format_double(le[i], num, sizeof(num));
		puts_(b, metric);
		put_labels(b, l, n_labels, num);
		putf(b, " %llu\n", (unsigned long long)cum[i]);
	}
	puts_(b, metric);
	put_labels(b, l, n_labels, "+Inf");
	putf(b, " %llu\n", (unsigned long long)count);
	snprintf(metric, sizeof(metric), "%s_sum", name);
	gpushare_metrics_sample(b, metric, l, n_labels, sum_seconds);
	snprintf(metric, sizeof(metric), "%s_count", name);
	gpushare_metrics_sample_u64(b, metric, l, n_labels, count);
}

uint64_t gpushare_metrics_hist_cum(const struct gpushare_hist *h, const double *le, size_t n_le, uint64_t *cum)
{
	uint64_t total = 0;

	for (size_t i = 0; i < GPUSHARE_HIST_BUCKETS; i++)
		total += h->buckets[i];
	for (size_t i = 0; i < n_le; i++) {
		double ns = le[i] * 1e9;

		/* le beyond the histogram's range holds everything. */
		cum[i] = ns >= 0x1p62 ? total : gpushare_hist_count_le(h, (uint64_t)llround(ns));
		if (i > 0 && cum[i] < cum[i - 1])
			cum[i] = cum[i - 1];
	}
	return total;
}

void gpushare_metrics_histogram(struct gpushare_metrics_buf *b, const char *name,
				const struct gpushare_metrics_label *l, size_t n_labels, const struct gpushare_hist *h,
				const double *le, size_t n_le)
{
	uint64_t cum[GPUSHARE_METRICS_MAX_BUCKETS], total;

	if (n_le > GPUSHARE_METRICS_MAX_BUCKETS)
		n_le = GPUSHARE_METRICS_MAX_BUCKETS;
	total = gpushare_metrics_hist_cum(h, le, n_le, cum);
	gpushare_metrics_histogram_cum(b, name, l, n_labels, cum, le, n_le, total, (double)h->sum_ns / 1e9);
}

/* ---- parsing ---- */

int gpushare_metrics_parse_listen(const char *s, char *addr, size_t addr_len, uint16_t *port)
{
	const char *colon, *p;
	char host[GPUSHARE_METRICS_ADDR_MAX];
	long v;

	if (!s || !*s)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty listen address (expected [ADDR:]PORT)");
	if (strlen(s) >= GPUSHARE_METRICS_ADDR_MAX)
		return gpushare_fail(GPUSHARE_E_INVAL, "listen address too long");
	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':')
			return gpushare_fail(GPUSHARE_E_INVAL, "'%s': expected [IPV6]:PORT", s);
		snprintf(host, sizeof(host), "%.*s", (int)(end - s - 1), s + 1);
		p = end + 2;
	} else if ((colon = strrchr(s, ':'))) {
		if (strchr(s, ':') != colon)
			return gpushare_fail(GPUSHARE_E_INVAL, "'%s': write an IPv6 address in brackets, [::1]:PORT", s);
		snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
		p = colon + 1;
	} else {
		snprintf(host, sizeof(host), "127.0.0.1");
		p = s;
	}
	if (!host[0])
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s': empty address before the port", s);
	if (!*p || strspn(p, "0123456789") != strlen(p) || strlen(p) > 5)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s': the port must be a number 0..65535", s);
	v = strtol(p, NULL, 10);
	if (v > 65535)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s': the port must be a number 0..65535", s);
	if (strlen(host) >= addr_len)
		return gpushare_fail(GPUSHARE_E_INVAL, "listen address too long");
	/* Only an address (or localhost): a name would be looked up, and a
	 * malformed one must be refused here, not by a resolver. */
	{
		unsigned char buf[sizeof(struct in6_addr)];

		if (strcmp(host, "localhost") != 0 && inet_pton(AF_INET, host, buf) != 1 &&
		    inet_pton(AF_INET6, host, buf) != 1)
			return gpushare_fail(GPUSHARE_E_INVAL,
					     "'%s': '%s' is not an IP address (e.g. 127.0.0.1, 0.0.0.0, [::1]) or localhost", s,
					     host);
	}
	snprintf(addr, addr_len, "%s", host);
	*port = (uint16_t)v;
	return GPUSHARE_OK;
}

struct bucket_list {
	double *out;
	size_t k;
};

/* One upper bound in seconds: positive, finite, above the one before. */
static int bucket_item(void *arg, const char *p, size_t len)
{
	struct bucket_list *l = arg;
	char *end;
	double v;

	errno = 0;
	v = strtod(p, &end);
	if (end != p + len || errno == ERANGE)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%.*s' is not a number of seconds", (int)len, p);
	if (!isfinite(v) || v <= 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "bucket '%.*s' must be positive and finite (+Inf is implied)",
				     (int)len, p);
	if (l->k > 0 && v <= l->out[l->k - 1])
		return gpushare_fail(GPUSHARE_E_INVAL, "buckets must increase: '%.*s' after %g", (int)len, p,
				     l->out[l->k - 1]);
	if (l->k >= GPUSHARE_METRICS_MAX_BUCKETS)
		return gpushare_fail(GPUSHARE_E_INVAL, "more than %d buckets", GPUSHARE_METRICS_MAX_BUCKETS);
	l->out[l->k++] = v;
	return GPUSHARE_OK;
}

int gpushare_metrics_parse_buckets(const char *s, double *out, size_t *n)
{
	struct bucket_list l = { out, 0 };
	char what[96];
	int rc;

	if (!s || !*s)
		return gpushare_fail(GPUSHARE_E_INVAL, "empty bucket list");
	snprintf(what, sizeof(what), "bucket list '%.60s'", s);
	rc = gpushare_each_item_named(what, s, ',', bucket_item, &l);
	if (!rc)
		*n = l.k;
	return rc;
}

size_t gpushare_metrics_default_buckets(double *out, size_t max)
{
	/* 50 us .. 60 s: GPU requests run from tens of microseconds (tiny
	 * kernels) to seconds (large batches under heavy sharing). */
	static const double ladder[] = {
		0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
		0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
	};
	size_t n = sizeof(ladder) / sizeof(ladder[0]);

	if (n > max)
		n = max;
	memcpy(out, ladder, n * sizeof(*out));
	return n;
}
