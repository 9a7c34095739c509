/*
 * The open-loop options that bench and sweep share (--load, --rate,
 * --arrival, --seed, --dispatch, --drain, --find-peak, --slo, --resolution,
 * --tail-samples, --rate-max): their parsing into a bench configuration and
 * their table (cli/opt.h). docs/bench.md, "Open-loop load", says what they mean.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpushare/bench.h"
#include "gpushare/gpushare.h"
#include "gpushare/util.h"

const struct cli_opt cli_openloop_opts[] = {
	{ CLI_OPEN_LOAD, 0, "load", CLI_ENUM, "closed|open",
	  "closed (default): each worker runs requests back to back;\nopen: gpushare schedules arrivals and hands them out;\n"
	  "latency counts from the scheduled arrival", NULL, 0, 0, "closed open", 0 },
	{ CLI_OPEN_ARRIVAL, 0, "arrival", CLI_ENUM, "poisson|uniform", "gaps between arrivals", "poisson", 0, 0,
	  "poisson uniform", 0 },
	{ CLI_OPEN_SEED, 0, "seed", CLI_INT, "S", "seed of the Poisson schedule", "1", 0, 9223372036854775807L, NULL, 0 },
	{ CLI_OPEN_DISPATCH, 0, "dispatch", CLI_ENUM, "shared|round-robin", "one queue for all workers (default), or one each",
	  NULL, 0, 0, "shared round-robin", 0 },
	{ CLI_OPEN_DRAIN, 0, "drain", CLI_DURATION, "D", "after the window, serve the backlog this long at most",
	  "the window, 1s to 10s", 0, 0, NULL, 0 },
};
_Static_assert(CLI_N(cli_openloop_opts) == CLI_N_OPENLOOP_OPTS, "CLI_N_OPENLOOP_OPTS");

const struct cli_opt cli_peak_opts[] = {
	{ CLI_OPEN_FIND_PEAK, 0, "find-peak", CLI_FLAG, NULL, "search the highest rate within --slo, per strategy,\nstarting at --rate",
	  NULL, 0, 0, NULL, 0 },
	{ CLI_OPEN_SLO, 0, "slo", CLI_STRING, "pNN=D", "the bound, e.g. p99=50ms (any percentile)", NULL, 0, 0, NULL, 0 },
	{ CLI_OPEN_RESOLUTION, 0, "resolution", CLI_NUMBER, "F", "stop when the peak is known within F", "0.05", 0, 0, NULL, 0 },
	{ CLI_OPEN_TAIL_SAMPLES, 0, "tail-samples", CLI_INT, "K", "each step offers at least K/(1-q) requests", "100", 1,
	  1000000, NULL, 0 },
	{ CLI_OPEN_RATE_MAX, 0, "rate-max", CLI_NUMBER, "R", "never try more than R per second", "1e7", 0, 0, NULL, 0 },
};
_Static_assert(CLI_N(cli_peak_opts) == CLI_N_PEAK_OPTS, "CLI_N_PEAK_OPTS");

static int parse_positive(const char *s, double max, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -1;
	v = strtod(s, &end);
	if (*end || end == s || !isfinite(v) || !(v > 0) || v > max || strchr(s, 'x') || strchr(s, 'X'))
		return -1;
	*out = v;
	return 0;
}

int cli_openloop_rate(const char *cmd, const char *arg, double *rate)
{
	if (parse_positive(arg, 1e9, rate))
		return cli_error(EXIT_USAGE, "%s: invalid --rate '%s': expected arrivals per second, a number above 0",
				 cmd, arg);
	return EXIT_OK;
}

int cli_openloop_rate_list(const char *cmd, const char *arg, double *out, size_t max, size_t *n)
{
	char buf[1024], *save = NULL, *item;
	size_t len = arg ? strlen(arg) : 0;

	*n = 0;
	if (len == 0 || len >= sizeof(buf) || arg[0] == ',' || arg[len - 1] == ',' || strstr(arg, ",,"))
		return cli_error(EXIT_USAGE, "%s: invalid --rate '%s': expected a comma list of arrivals per second", cmd,
				 arg ? arg : "");
	snprintf(buf, sizeof(buf), "%s", arg);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		double v;

		if (*n == max)
			return cli_error(EXIT_USAGE, "%s: --rate '%s' has more than %zu rates", cmd, arg, max);
		if (parse_positive(item, 1e9, &v))
			return cli_error(EXIT_USAGE, "%s: invalid --rate '%s': '%s' is not a number of arrivals per second above 0",
					 cmd, arg, item);
		for (size_t i = 0; i < *n; i++) {
			if (out[i] == v)
				return cli_error(EXIT_USAGE, "%s: invalid --rate '%s': %s is listed twice", cmd, arg, item);
		}
		out[(*n)++] = v;
	}
	return EXIT_OK;
}

int cli_openloop_option(const struct cli_parse *p, struct gpushare_bench_config *c)
{
	const char *cmd = p->name, *arg = p->arg;
	uint64_t ns;

	switch (p->opt ? p->opt->id : 0) {
	case CLI_OPEN_LOAD:
		if (gpushare_load_parse(arg, &c->load))
			return cli_bad_value(cmd, "--load", arg);
		return EXIT_OK;
	case CLI_OPEN_RATE:
		return cli_openloop_rate(cmd, arg, &c->rate);
	case CLI_OPEN_ARRIVAL:
		if (gpushare_arrival_parse(arg, &c->arrival))
			return cli_bad_value(cmd, "--arrival", arg);
		return EXIT_OK;
	case CLI_OPEN_SEED:
		c->seed = (uint64_t)p->num;
		return EXIT_OK;
	case CLI_OPEN_DISPATCH:
		if (gpushare_dispatch_parse(arg, &c->dispatch))
			return cli_bad_value(cmd, "--dispatch", arg);
		return EXIT_OK;
	case CLI_OPEN_DRAIN:
		if (gpushare_parse_duration(arg, &ns) || ns == 0)
			return cli_error(EXIT_USAGE, "%s: invalid --drain '%s': expected a duration above zero (2s)", cmd, arg);
		c->drain_ns = ns;
		return EXIT_OK;
	case CLI_OPEN_FIND_PEAK:
		c->find_peak = true;
		return EXIT_OK;
	case CLI_OPEN_SLO:
		if (gpushare_slo_parse(arg, &c->slo_quantile, &c->slo_ns))
			return cli_bad_value(cmd, "--slo", arg);
		return EXIT_OK;
	case CLI_OPEN_RESOLUTION: {
		double f;

		if (parse_positive(arg, 1, &f) || f < 0.001)
			return cli_error(EXIT_USAGE, "%s: invalid --resolution '%s': expected a fraction from 0.001 to 1 (0.05 = 5%%)",
					 cmd, arg);
		c->resolution = f;
		return EXIT_OK;
	}
	case CLI_OPEN_TAIL_SAMPLES:
		c->tail_samples = (unsigned)p->num;
		return EXIT_OK;
	case CLI_OPEN_RATE_MAX:
		if (parse_positive(arg, 1e9, &c->rate_max))
			return cli_error(EXIT_USAGE, "%s: invalid --rate-max '%s': expected arrivals per second, above 0", cmd, arg);
		return EXIT_OK;
	}
	return CLI_NOT_MINE;
}
