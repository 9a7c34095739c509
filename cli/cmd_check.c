/*
 * `gpushare check`: a conformance run (docs/accounting.md). Probe clients
 * run under the given shares, each loading libgpushare-account.so; a
 * client whose attained share is further from its promise (without limits:
 * its part of what the clients attained together) than the tolerance fails
 * the check (exit 15), named in the text or the JSON, as does a sharing that
 * cost more than --max-cost.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gpushare/account.h"
#include "gpushare/check.h"
#include "gpushare/gpushare.h"

struct check_args {
	const char *shares, *account_lib, *plan;
	int clients, seconds, warmup, tolerance, max_cost;
	bool json;
};
#define AT(field) CLI_AT(struct check_args, field)

static const struct cli_opt check_opts[] = {
	{ .id = OPT_SHARES, .long_name = "shares", .kind = CLI_LIST, .value_name = "LIST",
	  .help = "MPS limits: one client per share, in percent (25,75); each runs with "
		  "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE set to it",
	  .to = CLI_TO_STR, AT(shares) },
	{ .id = OPT_CLIENTS, .long_name = "clients", .kind = CLI_INT, .value_name = "N",
	  .help = "without --shares: N clients time-sliced (or MPS without limits), each promised 1/N",
	  .def = "2", .min = 1, .max = GPUSHARE_CHECK_MAX_CLIENTS, .to = CLI_TO_INT, AT(clients) },
	{ .id = OPT_PLAN, .long_name = "plan", .kind = CLI_DIR, .value_name = "DIR",
	  .help = "the shares of a plan directory (what gpushare plan wrote there): its strategy, clients per GPU and "
		  "MPS limit",
	  .to = CLI_TO_STR, AT(plan) },
	{ .id = OPT_TOLERANCE, .long_name = "tolerance", .kind = CLI_INT, .value_name = "POINTS",
	  .help = "how far, in share points, the attained share may be from the promise", .def = "5", .min = 0,
	  .max = 100, .to = CLI_TO_INT, AT(tolerance) },
	{ .id = OPT_MAX_COST, .long_name = "max-cost", .kind = CLI_INT, .value_name = "POINTS",
	  .help = "without MPS limits (time-slicing, MPS without limits): how far, in share points, the clients' "
		  "attained shares together may fall under the whole GPU (switching between time-sliced clients "
		  "costs GPU time none of them gets); each client is judged against its part of what they attained",
	  .def = "20", .min = 0, .max = 100, .to = CLI_TO_INT, AT(max_cost) },
	{ .id = OPT_SECONDS, .long_name = "seconds", .kind = CLI_INT, .value_name = "S",
	  .help = "measured length of each phase (the probe alone, then the clients together)", .def = "10", .min = 1,
	  .max = 3600, .to = CLI_TO_INT, AT(seconds) },
	{ .id = OPT_WARMUP_S, .long_name = "warmup", .kind = CLI_INT, .value_name = "S",
	  .help = "seconds each phase runs before it is measured (its clients start and reach a steady share)",
	  .def = "3", .min = 0, .max = 3600, .to = CLI_TO_INT, AT(warmup) },
	{ .id = OPT_ACCOUNT_LIB, .long_name = "account-lib", .kind = CLI_FILE, .value_name = "PATH",
	  .help = "the accounting library (default: $GPUSHARE_ACCOUNT_LIB, else the one installed beside gpushare)",
	  .to = CLI_TO_STR, AT(account_lib) },
	{ .id = OPT_JSON, .long_name = "json", .kind = CLI_FLAG, .help = "print the verdicts as one JSON document",
	  .to = CLI_TO_TRUE, AT(json) },
};

static const struct cli_group check_groups[] = { CLI_GROUP("Options", check_opts, NULL) };

const struct cli_cmd cli_check_cmd = {
	.name = "check",
	.usage = "gpushare check [--shares LIST | --clients N | --plan DIR] [--tolerance POINTS] [--max-cost POINTS]\n"
		 "                [--seconds S] [--warmup S] [--account-lib PATH] [--json] [-- PROBE [ARGS...]]",
	.about = "Check that each client of a sharing gets its share: run the probe alone, then as\n"
		 "clients under the shares, and compare the share each attained (its work rate, probe\n"
		 "kernels per second, shared over alone) with its promise. The probe is the built-in\n"
		 "gpushare-probe unless one is given after --.",
	.groups = check_groups,
	.n_groups = CLI_N(check_groups),
	.epilog = "Under MPS, start the daemon first (gpushare mps start); the clients attach to it.\n"
		  "\n"
		  "Examples:\n"
		  "  gpushare check --shares 25,75           MPS limits of 25 and 75%\n"
		  "  gpushare check --clients 2 --json       time-slicing, 1/2 each\n"
		  "  gpushare check --plan plan-dir          the plan's strategy and shares\n"
		  "  gpushare check --clients 2 -- ./probe   a site's own probe (accounting.md)",
	.notes = (const struct cli_exit_note[]){ { EXIT_CHECK_FAILED, "a client attained a share outside the "
									"tolerance, none was measured, or (without "
									"limits) the sharing cost more than --max-cost" },
						 { EXIT_WORKER, "the probe could not be run, or showed no kernel alone" } },
	.n_notes = 2,
};

/* The built-in probe: beside the binary, else in libexec as the worker. */
static const char *const probe_places[] = { "gpushare-probe", "../libexec/gpushare/gpushare-probe", NULL };

/* The first of rel (relative to this binary's directory) that exists, else
 * the first; returns whether one exists. */
static bool find_beside(const char *const *rel, char *buf, size_t len)
{
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	snprintf(buf, len, "%s", rel[0]);
	if (n <= 0)
		return false;
	self[n] = '\0';
	if (!(slash = strrchr(self, '/')))
		return false;
	slash[1] = '\0';
	for (size_t i = 0; rel[i]; i++) {
		int w = snprintf(buf, len, "%s%s", self, rel[i]);

		if (w > 0 && (size_t)w < len && access(buf, R_OK) == 0)
			return true;
	}
	/* A path that does not fit is no path: the bare name, looked up by the
	 * loader, instead of a cut one. */
	if ((size_t)snprintf(buf, len, "%s%s", self, rel[0]) >= len)
		snprintf(buf, len, "%s", rel[0]);
	return false;
}

static int parse_shares(const char *list, struct gpushare_check_opts *o)
{
	const char *s = list;

	o->n_clients = 0;
	while (*s) {
		char *end;
		double v = strtod(s, &end);
		if (end == s || !(v > 0 && v <= 100) || (*end && *end != ','))
			return cli_error(EXIT_USAGE, "check: invalid --shares '%s' (percentages in (0, 100], e.g. 25,75)",
					 list);
		if (o->n_clients >= GPUSHARE_CHECK_MAX_CLIENTS)
			return cli_error(EXIT_USAGE, "check: at most %d shares", GPUSHARE_CHECK_MAX_CLIENTS);
		o->shares[o->n_clients++] = v / 100.0;
		s = *end ? end + 1 : end;
	}
	return o->n_clients ? EXIT_OK : cli_error(EXIT_USAGE, "check: --shares is empty");
}

/* Which bound of a sharing without limits failed: "alone" (the clients
 * together beat the probe alone: it had not the whole GPU), "cost" (over
 * --max-cost), NULL when none did (or the clients had limits). */
static const char *sharing_failed(const struct gpushare_check_result *r)
{
	if (!r->fair || !r->cost_failed)
		return NULL;
	return r->cost < 0 ? "alone" : "cost";
}

static void print_text(const struct gpushare_check_result *r, double tol, double max_cost, const char *plan)
{
	const char *bad = sharing_failed(r);

	if (plan)
		printf("plan: %s\n", plan);
	printf("probe alone: %.1f kernels/s, mean kernel %.1f us", r->alone_rate, r->alone_kernel_ns / 1e3);
	if (r->sms > 0)
		printf(", %d SMs", r->sms);
	printf("\n%-7s %-8s %9s %9s %9s %8s %11s %8s  %s\n", "client", "pid", "promised", "expected", "attained", "error",
	       "by-kernel", "kernels", "verdict");
	for (int i = 0; i < r->n_clients; i++) {
		const struct gpushare_check_client *c = &r->c[i];
		char att[16] = "-", err[16] = "-", kt[16] = "-";
		if (c->v.attained >= 0) {
			snprintf(att, sizeof(att), "%.1f%%", c->v.attained * 100);
			snprintf(err, sizeof(err), "%+.1f", c->v.error * 100);
		}
		if (c->v.attained_kernel >= 0)
			snprintf(kt, sizeof(kt), "%.1f%%", c->v.attained_kernel * 100);
		printf("%-7d %-8d %8.1f%% %8.1f%% %9s %8s %11s %8llu  %s\n", i, (int)c->pid, c->v.promised * 100,
		       c->v.expected * 100, att, err, kt, c->kernels,
		       c->v.pass == 1 ? "pass" : c->v.pass == 0 ? "FAIL" : "unknown");
	}
	if (bad && strcmp(bad, "alone") == 0)
		printf("FAIL: the clients together attained %.1f%% of the probe alone against %.1f%% promised: more "
		       "than the whole GPU, so the probe alone did not have it (another load ran then)\n",
		       r->together * 100, (r->together + r->cost) * 100);
	else if (r->fair)
		printf("%s: the clients together attained %.1f%% of the probe alone against %.1f%% promised: the sharing "
		       "cost %.1f points (at most %.0f); each is expected its promise's part of what they attained\n",
		       bad ? "FAIL" : "sharing", r->together * 100, (r->together + r->cost) * 100,
		       r->cost * 100, max_cost * 100);
	if (r->others > 0)
		printf("unknown: %d other process%s (pid %d%s) ran on the GPU when the probe was to run alone; its "
		       "figure holds their load, so no share can be judged: run check on an idle GPU\n",
		       r->others, r->others == 1 ? "" : "es", (int)r->other_pid, r->others > 1 ? ", ..." : "");
	else
		printf("%s: %d of %d clients within %.0f points%s\n", r->failed ? "FAIL" : "pass",
		       r->n_clients - (r->failed - r->cost_failed), r->n_clients, tol * 100,
		       !bad ? "" : strcmp(bad, "alone") == 0 ? ", the probe alone had not the whole GPU"
							     : ", the sharing's cost over its bound");
}

static void print_json(const struct gpushare_check_result *r, double tol, double max_cost)
{
	printf("{\"pass\":%s,\"tolerance\":%.4f,\"alone_kernel_ns\":%.1f,\"alone_kernels_per_second\":%.3f,"
	       "\"sms\":%d,",
	       r->failed ? "false" : "true", tol, r->alone_kernel_ns, r->alone_rate, r->sms);
	if (r->fair)
		printf("\"sharing\":{\"together\":%.4f,\"cost\":%.4f,\"max_cost\":%.4f,\"pass\":%s},", r->together,
		       r->cost, max_cost, r->cost_failed ? "false" : "true");
	else
		printf("\"sharing\":null,");
	if (r->others >= 0)
		printf("\"other_processes\":%d,", r->others);
	else
		printf("\"other_processes\":null,");
	printf("\"clients\":[");
	for (int i = 0; i < r->n_clients; i++) {
		const struct gpushare_check_client *c = &r->c[i];
		printf("%s{\"client\":%d,\"pid\":%d,\"promised\":%.4f,\"expected\":%.4f,", i ? "," : "", i, (int)c->pid,
		       c->v.promised, c->v.expected);
		if (c->v.attained >= 0)
			printf("\"attained\":%.4f,\"error\":%.4f,", c->v.attained, c->v.error);
		else
			printf("\"attained\":null,\"error\":null,");
		if (c->v.attained_kernel >= 0)
			printf("\"attained_by_kernel_time\":%.4f,", c->v.attained_kernel);
		else
			printf("\"attained_by_kernel_time\":null,");
		if (c->rate >= 0)
			printf("\"kernels_per_second\":%.3f,", c->rate);
		printf("\"kernels\":%llu,\"verdict\":\"%s\"}", c->kernels,
		       c->v.pass == 1 ? "pass" : c->v.pass == 0 ? "fail" : "unknown");
	}
	printf("]}\n");
}

int cmd_check(int argc, char **argv)
{
	struct check_args a = { .clients = 0, .seconds = 10, .warmup = 3, .tolerance = 5, .max_cost = 20 }; /* clients 0: not given (2) */
	struct gpushare_check_opts o = { 0 };
	static struct gpushare_check_result r;
	struct cli_parse p;
	char lib[PATH_MAX], probe[PATH_MAX], plan[256] = "";
	char *builtin[] = { probe, NULL };
	const char *env = getenv("GPUSHARE_ACCOUNT_LIB"), *env_probe = getenv("GPUSHARE_PROBE");
	int rc;

	cli_parse_init(&p, &cli_check_cmd, argc, argv);
	if (!cli_parse_options(&p, &a))
		return p.status;
	if ((a.plan != NULL) + (a.shares != NULL) + (a.clients > 0) > 1)
		return cli_error(EXIT_USAGE, "check: give one of --shares, --clients and --plan");
	if (a.plan) {
		rc = gpushare_check_plan(a.plan, &o, plan, sizeof(plan));
		if (rc)
			return cli_error(rc == GPUSHARE_E_NOT_FOUND ? EXIT_USAGE : EXIT_PLAN_REFUSED, "%s",
					 gpushare_errdetail());
	} else if (a.shares) {
		if ((rc = parse_shares(a.shares, &o)) != EXIT_OK)
			return rc;
		o.limits = true;
	} else {
		o.n_clients = a.clients > 0 ? a.clients : 2;
		for (int i = 0; i < o.n_clients; i++)
			o.shares[i] = 1.0 / o.n_clients;
	}
	if (a.account_lib)
		snprintf(lib, sizeof(lib), "%s", a.account_lib);
	else if (env && *env)
		snprintf(lib, sizeof(lib), "%s", env);
	else if (gpushare_account_library(lib, sizeof(lib)) < 0)
		snprintf(lib, sizeof(lib), "libgpushare-account.so"); /* the loader's search */
	o.account_lib = lib;
	if (p.optind < argc) {
		o.probe = argv + p.optind;
	} else if (env_probe && *env_probe) {
		snprintf(probe, sizeof(probe), "%s", env_probe);
		o.probe = builtin;
	} else if (find_beside(probe_places, probe, sizeof(probe))) {
		o.probe = builtin;
	} else {
		return cli_error(EXIT_WORKER,
				 "check: no probe given and the built-in gpushare-probe is not installed (gpushare was "
				 "built without CUDA); give one after -- (the probe's contract: accounting.md in the documentation)");
	}
	o.tolerance = a.tolerance / 100.0;
	o.max_cost = a.max_cost / 100.0;
	o.seconds = a.seconds;
	o.warmup = a.warmup;
	rc = gpushare_check_run(&o, &r);
	if (rc == GPUSHARE_E_INVAL || rc == GPUSHARE_E_NOT_FOUND)
		return cli_error(EXIT_WORKER, "%s", gpushare_errdetail());
	if (rc)
		return cli_fail(rc, "check");
	if (a.json)
		print_json(&r, o.tolerance, o.max_cost);
	else
		print_text(&r, o.tolerance, o.max_cost, a.plan ? plan : NULL);
	rc = cli_finish_stdout(EXIT_OK);
	if (rc == EXIT_OK && r.failed) {
		for (int i = 0; i < r.n_clients; i++)
			if (r.c[i].v.pass == 0)
				cli_warn("check: client %d (pid %d) promised %.1f%% (expected %.1f%%) attained %.1f%%", i,
					 (int)r.c[i].pid, r.c[i].v.promised * 100, r.c[i].v.expected * 100,
					 r.c[i].v.attained * 100);
			else if (r.c[i].v.pass < 0)
				cli_warn("check: client %d (pid %d) promised %.1f%%: no kernel measured", i,
					 (int)r.c[i].pid, r.c[i].v.promised * 100);
		const char *bad = sharing_failed(&r);
		if (bad && strcmp(bad, "alone") == 0)
			cli_warn("check: the clients together attained %.1f%% of the GPU against %.1f%% promised: the "
				 "probe alone did not have the whole GPU", r.together * 100, (r.together + r.cost) * 100);
		else if (bad)
			cli_warn("check: the clients together attained %.1f%% of the GPU against %.1f%% promised: the "
				 "sharing cost %.1f points, over --max-cost %d", r.together * 100,
				 (r.together + r.cost) * 100, r.cost * 100, a.max_cost);
		rc = EXIT_CHECK_FAILED;
	}
	return rc;
}
