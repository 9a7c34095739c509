/*
 * test_worker: a program for `gpushare bench -- CMD` tests. In request mode
 * it speaks the reporting protocol through include/gpushare/client.h, and
 * flags make it misbehave the ways real programs do; in job mode (--job)
 * each run sleeps and exits.
 *
 *   --request-us U     each request sleeps U microseconds (default 1000)
 *   --warmup N         requests before "ready" (default 2)
 *   --never-ready      say hello, then wait to be killed
 *   --no-hello         start with "ready" (a protocol error)
 *   --exit-after N     exit after N measured requests, with --exit-code
 *   --exit-code C      status for --exit-after / --exit-now / --fail-job (default 0)
 *   --exit-now         exit with --exit-code after hello, before ready
 *   --fail TEXT        with --exit-after: send "fail TEXT" first
 *   --garbage          after go: write binary garbage
 *   --flood            after go: write one endless line
 *   --ignore-stop      keep going after "stop" until killed
 *   --only-worker I    misbehave only as worker I (GPUSHARE_WORKER); others behave
 *   --env-out FILE     append "worker=... workers=... batch=... fd=... mode=... job=..."
 *   --job              job mode: sleep --request-us, exit 0 (or --exit-code
 *                      when GPUSHARE_JOB equals --fail-job)
 *   --fail-job J
 *   --v2               protocol version 2: take requests with next(), answer done()
 *   --slow-worker I    with --slow-us U: worker I's requests take U microseconds
 *   --bad-done         v2: answer every request with the wrong id
 *   --by-config        a speed known from the configuration (gpushare tune tests):
 *                      each request of GPUSHARE_BATCH items sleeps
 *                      (1 ms + 1 ms x batch) x (1 for 1 or 2 GPUSHARE_WORKERS, else 6);
 *                      items/s together: w1 b1 500, b4 800; w2 1000, 1600; w4 333, 533;
 *                      with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE P (mps-split) each
 *                      request also takes x(1 + |P - 50| / 50): fastest at 50%
 */
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/client.h"

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) != 0)
		;
}

static void env_out(const char *path)
{
	const char *names[] = { "GPUSHARE_WORKER", "GPUSHARE_WORKERS", "GPUSHARE_BATCH", "GPUSHARE_REPORT_FD",
				"GPUSHARE_MODE", "GPUSHARE_JOB", "CUDA_VISIBLE_DEVICES", "CUDA_MPS_PIPE_DIRECTORY",
				"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" };
	char line[1024];
	size_t len = 0;
	int fd;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = getenv(names[i]);

		len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s=%s", i ? " " : "", names[i],
					v ? v : "-");
		if (len >= sizeof(line) - 2)
			len = sizeof(line) - 2;
	}
	line[len++] = '\n';
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd < 0 || write(fd, line, len) != (ssize_t)len) {
		perror("test_worker: --env-out");
		exit(3);
	}
	close(fd);
}

int main(int argc, char **argv)
{
	enum { O_REQ = 256, O_WARM, O_NEVER, O_NOHELLO, O_EXIT_AFTER, O_EXIT_CODE, O_FAIL, O_GARBAGE, O_FLOOD,
	       O_IGNORE, O_ONLY, O_ENV, O_JOB, O_FAIL_JOB, O_EXIT_NOW, O_V2, O_SLOW_WORKER, O_SLOW_US, O_BAD_DONE,
	       O_BY_CONFIG };
	static const struct option opts[] = {
		{ "request-us", required_argument, NULL, O_REQ },
		{ "warmup", required_argument, NULL, O_WARM },
		{ "never-ready", no_argument, NULL, O_NEVER },
		{ "no-hello", no_argument, NULL, O_NOHELLO },
		{ "exit-after", required_argument, NULL, O_EXIT_AFTER },
		{ "exit-code", required_argument, NULL, O_EXIT_CODE },
		{ "fail", required_argument, NULL, O_FAIL },
		{ "garbage", no_argument, NULL, O_GARBAGE },
		{ "flood", no_argument, NULL, O_FLOOD },
		{ "ignore-stop", no_argument, NULL, O_IGNORE },
		{ "only-worker", required_argument, NULL, O_ONLY },
		{ "env-out", required_argument, NULL, O_ENV },
		{ "job", no_argument, NULL, O_JOB },
		{ "fail-job", required_argument, NULL, O_FAIL_JOB },
		{ "exit-now", no_argument, NULL, O_EXIT_NOW },
		{ "v2", no_argument, NULL, O_V2 },
		{ "slow-worker", required_argument, NULL, O_SLOW_WORKER },
		{ "slow-us", required_argument, NULL, O_SLOW_US },
		{ "bad-done", no_argument, NULL, O_BAD_DONE },
		{ "by-config", no_argument, NULL, O_BY_CONFIG },
		{ NULL, 0, NULL, 0 },
	};
	long request_us = 1000, warmup = 2, exit_after = -1, exit_code = 0, only = -1, fail_job = -1;
	long slow_worker = -1, slow_us = 0;
	bool v2 = false, bad_done = false;
	bool exit_now = false, never = false, no_hello = false, garbage = false, flood = false, ignore = false, job = false;
	const char *fail_text = NULL, *env_path = NULL;
	struct gpushare_client gs;
	long n = 0;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case O_REQ: request_us = atol(optarg); break;
		case O_WARM: warmup = atol(optarg); break;
		case O_NEVER: never = true; break;
		case O_NOHELLO: no_hello = true; break;
		case O_EXIT_AFTER: exit_after = atol(optarg); break;
		case O_EXIT_CODE: exit_code = atol(optarg); break;
		case O_FAIL: fail_text = optarg; break;
		case O_GARBAGE: garbage = true; break;
		case O_FLOOD: flood = true; break;
		case O_IGNORE: ignore = true; break;
		case O_ONLY: only = atol(optarg); break;
		case O_ENV: env_path = optarg; break;
		case O_JOB: job = true; break;
		case O_FAIL_JOB: fail_job = atol(optarg); break;
		case O_EXIT_NOW: exit_now = true; break;
		case O_V2: v2 = true; break;
		case O_SLOW_WORKER: slow_worker = atol(optarg); break;
		case O_SLOW_US: slow_us = atol(optarg); break;
		case O_BY_CONFIG:
			request_us = (1000 + 1000 * gpushare_client_env_long("GPUSHARE_BATCH", 1)) *
				     (gpushare_client_env_long("GPUSHARE_WORKERS", 1) <= 2 ? 1 : 6);
			if (getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")) {
				double pct = atof(getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));

				/* mps-split: fastest at 50%, x(1 + |P - 50| / 50) away from it. */
				request_us = (long)((double)request_us * (1 + (pct > 50 ? pct - 50 : 50 - pct) / 50));
			}
			break;
		case O_BAD_DONE: bad_done = true; break;
		default:
			fprintf(stderr, "test_worker: bad option\n");
			return 2;
		}
	}
	if (env_path)
		env_out(env_path);
	if (job) {
		const char *j = getenv("GPUSHARE_JOB");

		sleep_us(request_us);
		return j && fail_job >= 0 && atol(j) == fail_job ? (int)exit_code : 0;
	}
	if (only >= 0 && gpushare_client_env_long("GPUSHARE_WORKER", -1) != only) {
		exit_now = never = no_hello = garbage = flood = ignore = bad_done = false;
		exit_after = -1;
		fail_text = NULL;
	}
	if (no_hello) {
		/* Straight to "ready": a protocol error. */
		gs.fd = (int)gpushare_client_env_long("GPUSHARE_REPORT_FD", -1);
		if (gs.fd < 0 || write(gs.fd, "ready\n", 6) != 6)
			return 3;
		sleep_us(5000000);
		return 0;
	}
	if (slow_worker >= 0 && slow_us > 0 && gpushare_client_env_long("GPUSHARE_WORKER", -1) == slow_worker)
		request_us = slow_us;
	if (gpushare_client_init_version(&gs, v2 ? 2 : 1) != 0) {
		fprintf(stderr, "test_worker: GPUSHARE_REPORT_FD unusable\n");
		return 3;
	}
	if (exit_now)
		return (int)exit_code;
	for (long i = 0; i < warmup; i++)
		sleep_us(request_us);
	if (never) {
		for (;;)
			pause();
	}
	if (gpushare_client_ready(&gs) != 0)
		return 0;
	if (v2) {
		uint64_t id;

		while (gpushare_client_next(&gs, &id)) {
			sleep_us(request_us);
			gpushare_client_done(&gs, bad_done ? id + 1000 : id);
			if (++n == exit_after)
				return (int)exit_code;
		}
		gpushare_client_close(&gs);
		return 0;
	}
	while (gpushare_client_running(&gs) || ignore) {
		uint64_t t0 = gpushare_client_now_ns();

		if (garbage) {
			static const char junk[] = "span 12 \x01\xff\xfe garbage\n";

			(void)!write(gs.fd, junk, sizeof(junk) - 1);
		} else if (flood) {
			char buf[4096];

			memset(buf, 'x', sizeof(buf));
			if (write(gs.fd, buf, sizeof(buf)) < 0)
				sleep_us(1000);
			continue;
		}
		sleep_us(request_us);
		gpushare_client_report(&gs, t0, gpushare_client_now_ns());
		if (++n == exit_after) {
			if (fail_text) {
				gpushare_client_fail(&gs, fail_text);
				return exit_code ? (int)exit_code : 1;
			}
			return (int)exit_code;
		}
	}
	gpushare_client_close(&gs);
	return 0;
}
