/*
 * gpushare report DIR: read the results file a sweep wrote in DIR and write
 * the report there (markdown, CSV, JSON, PNG/SVG plots, HTML). Also called
 * by `gpushare sweep` when it ends (cli_report_run()).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "gpushare/sweep.h"
#include "gpushare/utf8.h"
#include "gpushare/util.h"

/* Where report's options go. */
struct report_args {
	const char *out;
	double slo_seconds;
	bool quiet;
};

static int set_slo_p99(struct cli_parse *p, void *args)
{
	if (cli_parse_slo(p->arg, &((struct report_args *)args)->slo_seconds))
		return cli_error(EXIT_USAGE, "report: invalid --slo-p99 '%s' (expected milliseconds, e.g. 5 or 500us)",
				 p->arg);
	return EXIT_OK;
}

static const struct cli_opt report_opts[] = {
	{ .id = 's', .short_name = 's', .long_name = "slo-p99", .kind = CLI_STRING, .value_name = "MS",
	  .help = "also pick the highest throughput with p99 under MS milliseconds (a unit may be given: 500us, 2ms)",
	  .to = CLI_TO_CALL, .call = set_slo_p99 },
	{ .id = 'o', .short_name = 'o', .long_name = "out", .kind = CLI_DIR, .value_name = "OUTDIR",
	  .help = "write the report there instead of DIR",
	  .to = CLI_TO_STR, CLI_AT(struct report_args, out) },
	{ .id = 'q', .short_name = 'q', .long_name = "quiet", .kind = CLI_FLAG,
	  .help = "do not print the markdown report on stdout",
	  .to = CLI_TO_TRUE, CLI_AT(struct report_args, quiet) },
};

static const struct cli_group report_groups[] = { CLI_GROUP("Options", report_opts, NULL) };

const struct cli_cmd cli_report_cmd = {
	.name = "report",
	.usage = "gpushare report DIR [--slo-p99 MS] [--out OUTDIR] [-q]",
	.about = "Summarise the sweep whose results are in DIR/" GPUSHARE_SWEEP_RESULTS_FILE ": markdown tables\n"
		 "(strategies as rows, worker counts as columns), CSV and JSON summaries, PNG and SVG\n"
		 "plots, one self-contained HTML page and a recommendation.",
	.groups = report_groups,
	.n_groups = CLI_N(report_groups),
	.epilog = "Corrupt lines of the results file are reported with their line numbers and skipped.\n"
		  "\n"
		  "Examples:\n"
		  "  gpushare report results/             rewrite results/report.md, report.html, plots/\n"
		  "  xdg-open results/report.html",
	.notes = (const struct cli_exit_note[]){ { EXIT_IO, "results missing, unreadable or empty, or the report cannot be "
							     "written" } },
	.n_notes = 1,
};

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
	if (mode == CLI_REPORT_MARKDOWN || mode == CLI_REPORT_RECOMMENDATION) {
		/* Shapes, hosts and errors are recorded text: through the
		 * terminal sanitiser. */
		FILE *t = gpushare_utf8_term_stream(stdout);

		if (!t)
			rc = GPUSHARE_E_NOMEM;
		else if (mode == CLI_REPORT_MARKDOWN ? gpushare_report_write_markdown(&r, t)
						     : gpushare_report_write_recommendation(&r, t))
			rc = GPUSHARE_E_IO;
		if (t && fclose(t) != 0)
			rc = GPUSHARE_E_IO;
	}
	if (mode != CLI_REPORT_SILENT)
		printf("report: %s/report.md, report.html, summary.csv, summary.json, plots/\n", out_dir);
	gpushare_report_release(&r);
	return cli_finish_stdout(rc ? EXIT_IO : EXIT_OK);
}

int cmd_report(int argc, char **argv)
{
	struct cli_parse p;
	struct report_args a = { .out = NULL };
	int first;

	cli_parse_init(&p, &cli_report_cmd, argc, argv);
	if (!cli_parse_options(&p, &a))
		return p.status;
	first = p.optind;
	if (first >= argc)
		return cli_error(EXIT_USAGE, "report: no directory given (usage: gpushare report DIR)");
	if (first + 1 < argc)
		return cli_error(EXIT_USAGE, "report: unexpected argument '%s'", argv[first + 1]);
	if (!*argv[first])
		return cli_error(EXIT_USAGE, "report: empty directory name");
	return cli_report_run(argv[first], a.out ? a.out : argv[first], a.slo_seconds,
			      a.quiet ? CLI_REPORT_SILENT : CLI_REPORT_MARKDOWN);
}
