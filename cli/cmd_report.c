/*
 * gpushare report DIR: read the results file a sweep wrote in DIR and write
 * the report there (markdown, CSV, JSON, PNG/SVG plots, HTML). Also called
 * by `gpushare sweep` when it ends (cli_report_run()).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "gpushare/sweep.h"
#include "gpushare/util.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpushare report DIR [--slo-p99 MS] [--out OUTDIR] [-q]\n\n"
		   "Summarise the sweep whose results are in DIR/" GPUSHARE_SWEEP_RESULTS_FILE ": markdown tables\n"
		   "(strategies as rows, worker counts as columns), CSV and JSON summaries, PNG and SVG\n"
		   "plots, one self-contained HTML page and a recommendation.\n\n"
		   "  --slo-p99 MS     also pick the highest throughput with p99 under MS milliseconds\n"
		   "                   (a unit may be given: 500us, 2ms)\n"
		   "  --out OUTDIR     write the report there instead of DIR\n"
		   "  -q, --quiet      do not print the markdown report on stdout\n"
		   "  -h, --help       this help\n\n"
		   "Corrupt lines of the results file are reported with their line numbers and skipped.\n"
		   "Exit statuses: 0 ok, 2 bad option, 11 results missing, unreadable or empty, or the\n"
		   "report cannot be written. See gpushare-report(1).\n");
}

/* "5" (milliseconds) or a duration with its unit ("500us"). */
int cli_parse_slo(const char *s, double *seconds)
{
	uint64_t ns;
	char *end;
	double v;

	if (!s || !*s)
		return -1;
	v = strtod(s, &end);
	if (end != s && *end == '\0') {
		if (!(v > 0) || !isfinite(v))
			return -1;
		*seconds = v / 1e3;
		return 0;
	}
	if (gpushare_parse_duration(s, &ns) || ns == 0)
		return -1;
	*seconds = (double)ns / 1e9;
	return 0;
}

int cli_report_run(const char *dir, const char *out_dir, double slo_p99_seconds, int mode)
{
	char path[GPUSHARE_PATH_MAX + 64];
	struct gpushare_report r;
	int rc;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, GPUSHARE_SWEEP_RESULTS_FILE) >= sizeof(path))
		return cli_error(EXIT_USAGE, "report: path '%s' is too long", dir);
	rc = gpushare_report_load(path, &r);
	if (rc) {
		gpushare_report_release(&r);
		if (rc == GPUSHARE_E_NOT_FOUND)
			return cli_error(EXIT_IO, "report: no results file '%s' (is '%s' the --out of a sweep?)", path, dir);
		return cli_error(rc == GPUSHARE_E_NOMEM ? EXIT_FAILURE_GENERIC : EXIT_IO, "report: %s",
				 gpushare_errdetail());
	}
	for (size_t i = 0; i < r.n_bad_kept; i++)
		cli_warn("%s line %zu: %s; line skipped", path, r.bad[i].line, r.bad[i].reason);
	if (r.n_bad > r.n_bad_kept)
		cli_warn("%s: %zu more corrupt lines skipped", path, r.n_bad - r.n_bad_kept);
	if (r.n_runs == 0) {
		gpushare_report_release(&r);
		return cli_error(EXIT_IO, "report: '%s' holds no usable run", path);
	}
	rc = gpushare_report_cap_shapes(&r, GPUSHARE_REPORT_MAX_SHAPES);
	if (!rc && r.n_shapes_omitted)
		cli_warn("%s holds %zu workload shapes; the report covers the first %d (%zu runs of %zu more shapes left out)",
			 path, r.n_shapes_omitted + GPUSHARE_REPORT_MAX_SHAPES, GPUSHARE_REPORT_MAX_SHAPES, r.n_runs_omitted,
			 r.n_shapes_omitted);
	if (!rc)
		rc = gpushare_report_summarise(&r, slo_p99_seconds);
	if (!rc)
		rc = gpushare_report_write(&r, out_dir);
	if (rc) {
		int code = cli_error(rc == GPUSHARE_E_NOMEM ? EXIT_FAILURE_GENERIC : EXIT_IO, "report: %s",
				     gpushare_errdetail());

		gpushare_report_release(&r);
		return code;
	}
	if (mode == CLI_REPORT_MARKDOWN) {
		if (gpushare_report_write_markdown(&r, stdout))
			rc = GPUSHARE_E_IO;
	} else if (mode == CLI_REPORT_RECOMMENDATION) {
		if (gpushare_report_write_recommendation(&r, stdout))
			rc = GPUSHARE_E_IO;
	}
	if (mode != CLI_REPORT_SILENT)
		printf("report: %s/report.md, report.html, summary.csv, summary.json, plots/\n", out_dir);
	gpushare_report_release(&r);
	return cli_finish_stdout(rc ? EXIT_IO : EXIT_OK);
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "slo-p99", required_argument, NULL, 's' },
		{ "out", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *out = NULL;
	double slo = 0;
	bool quiet = false;
	int opt;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":hqo:s:", opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			return cli_finish_stdout(EXIT_OK);
		case 'q': quiet = true; break;
		case 'o': out = optarg; break;
		case 's':
			if (cli_parse_slo(optarg, &slo))
				return cli_error(EXIT_USAGE, "report: invalid --slo-p99 '%s' (expected milliseconds, e.g. 5 or 500us)",
						 optarg);
			break;
		default:
			return cli_usage_error("report", opt, optopt, argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_error(EXIT_USAGE, "report: no directory given (usage: gpushare report DIR)");
	if (optind + 1 < argc)
		return cli_error(EXIT_USAGE, "report: unexpected argument '%s'", argv[optind + 1]);
	if (!*argv[optind])
		return cli_error(EXIT_USAGE, "report: empty directory name");
	return cli_report_run(argv[optind], out ? out : argv[optind], slo,
			      quiet ? CLI_REPORT_SILENT : CLI_REPORT_MARKDOWN);
}
