/*
 * Prometheus metrics: the text exposition format (version 0.0.4), a small
 * HTTP server for GET /metrics (libmicrohttpd), the GPU / MIG / process /
 * MPS collectors behind `gpushare exporter`. A benchmark's live view
 * (`gpushare bench --metrics-listen`) is built on them in gpushare/bench.h.
 *
 * Every metric, its type, labels and unit: docs/metrics.md.
 *
 * Usage (a standalone exporter):
 *   struct gpushare_metrics_system_opts o;      which MPS pipe dirs to look at
 *   gpushare_metrics_system_opts_init(&o);
 *   struct gpushare_metrics_server *srv;
 *   rc = gpushare_metrics_server_start("127.0.0.1", 9400, produce, arg, &srv);
 *   ... produce() calls gpushare_metrics_write_system(&buf, &o, ...) ...
 *   gpushare_metrics_server_stop(srv);
 */
#ifndef GPUSHARE_METRICS_H
#define GPUSHARE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpushare/buf.h"
#include "gpushare/hist.h"
#include "gpushare/region.h"
#include "gpushare/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bounds (le) of a request-duration histogram, +Inf not counted. */
#define GPUSHARE_METRICS_MAX_BUCKETS 64
/* What --metrics-listen / --listen accept: "PORT", "ADDR:PORT", "[V6]:PORT". */
#define GPUSHARE_METRICS_ADDR_MAX 128
/* Default port of `gpushare exporter`. */
#define GPUSHARE_METRICS_EXPORTER_PORT 9400
/* Per-connection bounds of the HTTP server. */
#define GPUSHARE_METRICS_CONN_TIMEOUT_S 10        /* silence (libmicrohttpd's timeout) */
#define GPUSHARE_METRICS_HEADER_TIMEOUT_S 5       /* a request head must be complete by then */
#define GPUSHARE_METRICS_CONN_MEMORY_BYTES (32 * 1024)
#define GPUSHARE_METRICS_MAX_CONNECTIONS 256      /* in all */
#define GPUSHARE_METRICS_MAX_PER_IP 128           /* from one client address */
/* Content type of the exposition. */
#define GPUSHARE_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* ---- configuration values ---- */

/* Parse "[ADDR:]PORT" ("9400", "127.0.0.1:9400", "[::1]:9400", "0.0.0.0:0").
 * The address defaults to 127.0.0.1; port 0 asks the kernel for a free one.
 * GPUSHARE_E_INVAL naming the problem. */
int gpushare_metrics_parse_listen(const char *s, char *addr, size_t addr_len, uint16_t *port);

/* The default latency ladder: 50 us to 60 s, about 3 buckets per decade
 * (1, 2.5, 5 x 10^k). Writes at most max values; returns how many. */
size_t gpushare_metrics_default_buckets(double *out, size_t max);

/* ---- the exposition writer ---- */

/* The exposition being written: its text (a failed append is remembered in
 * text.failed and reported by gpushare_metrics_buf_finish(), so writers
 * need not check every call). */
struct gpushare_metrics_buf {
	struct gpushare_buf text;
	/* A family header not written yet: it goes out with the family's
	 * first sample, so a family without samples leaves no trace. */
	const char *pend_name, *pend_type, *pend_help;
};

void gpushare_metrics_buf_init(struct gpushare_metrics_buf *b);
void gpushare_metrics_buf_release(struct gpushare_metrics_buf *b);
/* Hand the text over (caller frees *text). GPUSHARE_E_NOMEM if any append
 * failed; the buffer is empty afterwards either way. */
int gpushare_metrics_buf_finish(struct gpushare_metrics_buf *b, char **text, size_t *len);

/* A label: name (a valid label name) and value (any UTF-8; escaped). */
struct gpushare_metrics_label {
	const char *name;
	const char *value;
};

/* "# HELP name help\n# TYPE name type\n", written with the family's first
 * sample (a family without samples is left out). type: "gauge", "counter",
 * "histogram". The three strings must stay valid until the next family
 * call. Every sample of a family must follow its header before the next
 * header (the format requires a family's samples together). */
void gpushare_metrics_family(struct gpushare_metrics_buf *b, const char *name, const char *type, const char *help);

/* One sample line: name{labels} value. NaN and infinities are written as
 * NaN, +Inf, -Inf. */
void gpushare_metrics_sample(struct gpushare_metrics_buf *b, const char *name, const struct gpushare_metrics_label *l,
			     size_t n_labels, double value);
void gpushare_metrics_sample_u64(struct gpushare_metrics_buf *b, const char *name,
				 const struct gpushare_metrics_label *l, size_t n_labels, uint64_t value);

/* A histogram's samples (name_bucket for each le and +Inf, name_sum in
 * seconds, name_count) from a private copy of a log-linear histogram: the
 * count of bucket le is gpushare_hist_count_le(le in ns), which counts the
 * whole log-linear bucket holding le (so it may include values up to 1/64
 * above le). +Inf and _count are the sum of all buckets, so they agree. */
void gpushare_metrics_histogram(struct gpushare_metrics_buf *b, const char *name,
				const struct gpushare_metrics_label *l, size_t n_labels, const struct gpushare_hist *h,
				const double *le, size_t n_le);

/* The cumulative counts of a private histogram copy at each le (seconds):
 * cum[i] = gpushare_hist_count_le(le[i] in ns), kept non-decreasing; le
 * beyond the histogram's range counts everything. Returns the sum of all
 * buckets (le="+Inf"). */
uint64_t gpushare_metrics_hist_cum(const struct gpushare_hist *h, const double *le, size_t n_le, uint64_t *cum);

/* A histogram's samples from precomputed cumulative counts (cum[i] for le[i]). */
void gpushare_metrics_histogram_cum(struct gpushare_metrics_buf *b, const char *name,
				    const struct gpushare_metrics_label *l, size_t n_labels, const uint64_t *cum,
				    const double *le, size_t n_le, uint64_t count, double sum_seconds);

/* Shortest decimal text that reads back as v ("0.005", "1e-05", "+Inf"). */
void gpushare_metrics_format_double(double v, char *buf, size_t len);

/* ---- GPU, MIG, process and MPS collectors ---- */

#define GPUSHARE_METRICS_MAX_PIPE_DIRS 8

struct gpushare_metrics_system_opts {
	/* MPS pipe directories to report; 0 entries: gpushare's private one,
	 * $CUDA_MPS_PIPE_DIRECTORY and /tmp/nvidia-mps (as `gpushare info`). */
	char pipe_dirs[GPUSHARE_METRICS_MAX_PIPE_DIRS][GPUSHARE_PATH_MAX];
	int n_pipe_dirs;
	bool processes;                /* per-process GPU memory (exporter: yes) */
	bool clients;                  /* the accounted clients, gpushare_client_* (default: yes) */
	bool default_pipe_dirs;        /* with no pipe_dirs, survey the usual ones (init: yes) */
	int mps_timeout_ms;            /* bound of each control-program command */
};

void gpushare_metrics_system_opts_init(struct gpushare_metrics_system_opts *o);

/* Write the families gpushare_nvidia_driver_up, gpushare_gpu_*,
 * gpushare_mig_*, gpushare_process_* (with o->processes) and gpushare_mps_*.
 * Never fails for lack of a driver or daemon: those are reported as
 * gauges (driver up 0, daemon up 0). *driver_up (may be NULL) says whether
 * NVML answered. Thread-safe. */
int gpushare_metrics_write_system(struct gpushare_metrics_buf *b, const struct gpushare_metrics_system_opts *o,
				  bool *driver_up);

/* ---- the HTTP server ---- */

struct gpushare_metrics_server;

/* Produce the exposition for one scrape: *text is malloc'ed (the server
 * frees it). Called from the server's threads, possibly concurrently. */
typedef int (*gpushare_metrics_produce_fn)(void *arg, char **text, size_t *len);

/* Bind addr:port (GPUSHARE_E_ADDR_IN_USE with "cannot listen on ...: ..."
 * when taken or not bindable) and serve GET/HEAD /metrics from a thread per
 * connection (at most GPUSHARE_METRICS_MAX_CONNECTIONS, GPUSHARE_METRICS_MAX_PER_IP
 * from one address, each dropped after GPUSHARE_METRICS_CONN_TIMEOUT_S of
 * silence or when its request head is not complete after
 * GPUSHARE_METRICS_HEADER_TIMEOUT_S, its header buffer bounded by
 * GPUSHARE_METRICS_CONN_MEMORY_BYTES). Other paths: 404; other methods: 405
 * with Allow; a request with a body: 413. */
int gpushare_metrics_server_start(const char *addr, uint16_t port, gpushare_metrics_produce_fn fn, void *arg,
				  struct gpushare_metrics_server **out);

/* The port actually bound (useful with port 0). */
uint16_t gpushare_metrics_server_port(const struct gpushare_metrics_server *s);

/* Stop serving, wait for the connection threads, free. NULL is fine. */
void gpushare_metrics_server_stop(struct gpushare_metrics_server *s);

#ifdef __cplusplus
}
#endif
#endif
