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
#include "gpushare/internal/bench.h"

const struct cli_opt cli_openloop_opts[] = {
	{ .id = CLI_OPEN_LOAD, CLI_OPEN, .long_name = "load", .kind = CLI_ENUM, .value_name = "closed|open",
	  .help = "closed (default): each worker runs requests back to back; open: gpushare schedules arrivals and hands them out; "
	  "latency counts from the scheduled arrival", .values = "closed open" },
	{ .id = CLI_OPEN_ARRIVAL, CLI_OPEN, .long_name = "arrival", .kind = CLI_ENUM, .value_name = "poisson|uniform",
	  .help = "gaps between arrivals", .def = "poisson", .values = "poisson uniform" },
	{ .id = CLI_OPEN_SEED, CLI_OPEN, .long_name = "seed", .kind = CLI_INT, .value_name = "S",
	  .help = "seed of the Poisson schedule", .def = "1", .max = 9223372036854775807L },
	{ .id = CLI_OPEN_DISPATCH, CLI_OPEN, .long_name = "dispatch", .kind = CLI_ENUM,
	  .value_name = "shared|round-robin",
	  .help = "one queue for all workers (default), or one each", .values = "shared round-robin" },
	{ .id = CLI_OPEN_DRAIN, CLI_OPEN, .long_name = "drain", .kind = CLI_DURATION, .value_name = "D",
	  .help = "after the window, serve the backlog this long at most", .def = "the window, 1s to 10s" },
};
_Static_assert(CLI_N(cli_openloop_opts) == CLI_N_OPENLOOP_OPTS, "CLI_N_OPENLOOP_OPTS");

const struct cli_opt cli_peak_opts[] = {
	{ .id = CLI_OPEN_FIND_PEAK, CLI_OPEN, .long_name = "find-peak", .kind = CLI_FLAG,
	  .help = "search the highest rate within --slo, per strategy, starting at --rate" },
	{ .id = CLI_OPEN_SLO, CLI_OPEN, .long_name = "slo", .kind = CLI_STRING, .value_name = "pNN=D",
	  .help = "the bound, e.g. p99=50ms (any percentile)" },
	{ .id = CLI_OPEN_RESOLUTION, CLI_OPEN, .long_name = "resolution", .kind = CLI_NUMBER, .value_name = "F",
	  .help = "stop when the peak is known within F", .def = "0.05" },
	{ .id = CLI_OPEN_TAIL_SAMPLES, CLI_OPEN, .long_name = "tail-samples", .kind = CLI_INT, .value_name = "K",
	  .help = "each step offers at least K/(1-q) requests", .def = "100", .min = 1, .max = 1000000 },
	{ .id = CLI_OPEN_RATE_MAX, CLI_OPEN, .long_name = "rate-max", .kind = CLI_NUMBER, .value_name = "R",
	  .help = "never try more than R per second", .def = "1e7" },
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
		return cli_error(EXIT_USAGE, "%s: invalid --rate '%s': expected arrivals per second, a number above 0 and at most 1e9",
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
			return cli_error(EXIT_USAGE, "%s: invalid --rate '%s': '%s' is not a number of arrivals per second above 0 and at most 1e9",
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
			return cli_error(EXIT_USAGE, "%s: invalid --rate-max '%s': expected arrivals per second, above 0 and at most 1e9",
					 cmd, arg);
		return EXIT_OK;
	}
	return CLI_NOT_MINE;
}

int cli_openloop_call(struct cli_parse *p, void *args)
{
	return cli_openloop_option(p, ((struct cli_run_args *)args)->c);
}
