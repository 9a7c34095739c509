/*
 * What `gpushare sweep` and `gpushare tune` share on their command line:
 * the workload options that join the option table, the grid's axes
 * (--workers, --batch, --thread-percentage) and the workload options' values
 * set on the sweep's shapes.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "gpushare/gpushare.h"
#include "gpushare/sweep.h"
#include "gpushare/workload.h"
#include "gpushare/internal/sweep.h"

size_t cli_sweep_prescan(const struct cli_cmd *cmd, int argc, char **argv, const char **names, size_t max)
{
	size_t n = 0;

	for (int i = 1; i < argc; i++) {
		const char *v;
		char buf[512], *save = NULL, *item;

		if (!strcmp(argv[i], "--"))
			break;
		if (!(v = cli_workload_arg(argc, argv, &i)))
			continue;
		snprintf(buf, sizeof(buf), "%s", v);
		/* Each shape of the list, each workload of a mix A+B. */
		for (item = strtok_r(buf, ",+", &save); item; item = strtok_r(NULL, ",+", &save)) {
			const struct gpushare_wl_desc *d;

			item[strcspn(item, ":")] = '\0';
			d = gpushare_workload_find(item);
			for (size_t j = 0; d && j < d->n_opts; j++) {
				bool seen = false;

				seen |= cli_cmd_has_option(cmd, d->opts[j].name);
				for (size_t k = 0; k < n; k++)
					seen |= !strcmp(names[k], d->opts[j].name);
				if (!seen && n < max)
					names[n++] = d->opts[j].name;
			}
		}
	}
	return n;
}

int cli_sweep_axis_option(const char *cmd, int opt, const char *arg, struct gpushare_sweep_config *s)
{
	long vals[GPUSHARE_SWEEP_MAX_VALUES];
	size_t nv;

	switch (opt) {
	case OPT_WORKERS:
		if (gpushare_sweep_parse_int_list(arg, 1, GPUSHARE_BENCH_MAX_WORKERS, vals, &nv))
			return cli_bad_value(cmd, "--workers", arg);
		for (size_t i = 0; i < nv; i++)
			s->workers[i] = (int)vals[i];
		s->n_workers = nv;
		return EXIT_OK;
	case OPT_BATCH:
		if (gpushare_sweep_parse_int_list(arg, 1, 1L << 30, s->batches, &s->n_batches))
			return cli_bad_value(cmd, "--batch", arg);
		return EXIT_OK;
	case OPT_THREAD_PCT:
		if (gpushare_sweep_set_thread_pcts(s, arg))
			return cli_bad_value(cmd, "--thread-percentage", arg);
		return EXIT_OK;
	default:
		return CLI_NOT_MINE;
	}
}

int cli_sweep_axis_call(struct cli_parse *p, void *args)
{
	return cli_sweep_axis_option(p->name, p->opt->id, p->arg, ((struct cli_sweep_args *)args)->s);
}

int cli_sweep_shape_options(const char *cmd, struct gpushare_sweep_config *s, size_t n, const char **names,
			    const char **values)
{
	for (size_t i = 0; i < n; i++) {
		char name[80];

		if (!values[i])
			continue;
		snprintf(name, sizeof(name), "--%s", names[i]);
		if (gpushare_sweep_set_option(s, names[i], values[i]))
			return cli_bad_value(cmd, name, values[i]);
	}
	return EXIT_OK;
}

int cli_sweep_apply_command(const struct cli_command_opts *co, const char *cmd, int argc, char **argv,
			    bool workload_given, struct gpushare_sweep_config *s)
{
	int code;

	if ((code = cli_command_apply(co, cmd, argc, argv, workload_given, &s->bench)))
		return code;
	if (co->strategy_given) {
		memcpy(s->strategies, s->bench.strategies, s->bench.n_strategies * sizeof(s->strategies[0]));
		s->n_strategies = s->bench.n_strategies;
	}
	return EXIT_OK;
}

/* ---- --resume: the recorded options ---- */

#define MAX_PAIRS 256
#define MAX_WL_NAMES (GPUSHARE_WL_MAX_OPTS * 5)

struct opt_pair {
	const char *name;   /* long name */
	const char *value;  /* NULL: a flag */
};

struct opt_set {
	struct opt_pair pairs[MAX_PAIRS];
	size_t n;
	char **tail;        /* after "--": the command, or NULL */
	int n_tail;
};

/* The options of a command line of cmd (argv[0] its name), by long name. */
static int collect_options(const struct cli_cmd *cmd, int argc, char **argv, struct opt_set *o)
{
	const char *wl_names[MAX_WL_NAMES];
	size_t n_wl = cli_sweep_prescan(cmd, argc, argv, wl_names, MAX_WL_NAMES);
	struct cli_command_opts co;
	struct cli_parse p;
	int opt;

	memset(o, 0, sizeof(*o));
	cli_command_scan(&co, argc, argv);
	cli_parse_init(&p, cmd, co.opt_argc, argv);
	p.extra = wl_names;
	p.n_extra = n_wl;
	p.whose = "the workloads";
	while ((opt = cli_parse_next(&p)) > 0) {
		if (o->n == MAX_PAIRS)
			return cli_error(EXIT_USAGE, "%s: too many options", cmd->name);
		o->pairs[o->n].name = p.opt ? p.opt->long_name : wl_names[opt - CLI_ID_EXTRA];
		o->pairs[o->n++].value = p.arg;
	}
	if (opt < 0)
		return p.status;
	if (co.opt_argc < argc) {
		o->tail = argv + co.opt_argc + 1;
		o->n_tail = argc - co.opt_argc - 1;
	}
	return EXIT_OK;
}

static bool free_option(const struct cli_resume *r, const char *name)
{
	for (size_t i = 0; i < r->n_free; i++) {
		if (!strcmp(name, r->free_opts[i]))
			return true;
	}
	return false;
}

static const struct opt_pair *find_pair(const struct opt_set *o, const char *name)
{
	for (size_t i = o->n; i-- > 0;) {
		if (!strcmp(o->pairs[i].name, name))
			return &o->pairs[i];
	}
	return NULL;
}

/* The --out DIR of a command line that asks for --resume (not --help);
 * NULL otherwise. */
static const char *resume_asked(int argc, char **argv)
{
	const char *out = NULL;
	bool resume = false;

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return NULL;
		if (!strcmp(argv[i], "--resume"))
			resume = true;
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out = argv[i + 1];
		else if (!strncmp(argv[i], "--out=", 6))
			out = argv[i] + 6;
	}
	return resume && out && *out ? out : NULL;
}

int cli_resume(const struct cli_resume *r, int argc, char **argv)
{
	static struct opt_set now, was;
	const char *name = r->cmd->name, *out = resume_asked(argc, argv);
	char path[GPUSHARE_PATH_MAX + 64], **rec = NULL, **nargv, **names;
	size_t n_names = 0;
	int rc, nrec = 0, nargc = 0, code;

	if (!out)
		return r->run(argc, argv);   /* not a resume */
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", out, r->file) >= sizeof(path))
		return cli_error(EXIT_USAGE, "%s: --out '%s' is too long", name, out);
	rc = gpushare_sweep_recorded_argv(path, &rec);
	if (rc == GPUSHARE_E_NOT_FOUND && r->need_record) {
		char also[GPUSHARE_PATH_MAX + 64];
		struct stat st;

		/* Nothing to resume: a new run would mix its grid into what
		 * the directory holds, or start one the user did not ask for. */
		if (r->also_file && (size_t)snprintf(also, sizeof(also), "%s/%s", out, r->also_file) < sizeof(also) &&
		    stat(also, &st) == 0 && st.st_size > 0)
			return cli_error(EXIT_USAGE, "%s: --resume: '%s' holds runs but '%s' none: which %s they are of "
					 "cannot be told; give another --out", name, also, path, name);
		return cli_error(EXIT_USAGE, "%s: --resume: nothing recorded in '%s' (no run in '%s'); leave out "
				 "--resume to start a %s", name, out, path, name);
	}
	if (rc == GPUSHARE_E_NOT_FOUND) {
		gpushare_clear_error();
		return r->run(argc, argv); /* nothing recorded yet: a new one */
	}
	if (rc == GPUSHARE_E_INVAL)
		return cli_error(EXIT_USAGE, "%s: --resume: %s: which %s they are of cannot be told; give another --out",
				 name, gpushare_errdetail(), name);
	if (rc)
		return cli_error(EXIT_IO, "%s: --resume: %s", name, gpushare_errdetail());
	while (rec[nrec])
		nrec++;
	if (nrec < 2 || strcmp(rec[1], name)) {
		gpushare_sweep_argv_free(rec);
		return cli_error(EXIT_USAGE, "%s: --resume: '%s' was not recorded by gpushare %s", name, path, name);
	}
	if ((code = collect_options(r->cmd, argc, argv, &now)) ||
	    (code = collect_options(r->cmd, nrec - 1, rec + 1, &was))) {
		gpushare_sweep_argv_free(rec);
		return code;
	}
	for (size_t i = 0; i < now.n; i++) {
		const struct opt_pair *g = &now.pairs[i], *w = find_pair(&was, g->name);

		if (free_option(r, g->name))
			continue;
		if (!w || (g->value && (!w->value || strcmp(g->value, w->value)))) {
			code = cli_error(EXIT_USAGE, "%s: --resume: the %s recorded in '%s' ran %s --%s%s%s, this one asks for "
					 "--%s%s%s; leave it out to continue the recorded %s, or give another --out",
					 name, name, path, w ? "with" : "without", g->name, w && w->value ? " " : "",
					 w && w->value ? w->value : "", g->name, g->value ? " " : "", g->value ? g->value : "",
					 name);
			gpushare_sweep_argv_free(rec);
			return code;
		}
	}
	if (now.tail) {
		bool same = was.tail && was.n_tail == now.n_tail;

		for (int i = 0; same && i < now.n_tail; i++)
			same = !strcmp(was.tail[i], now.tail[i]);
		if (!same) {
			gpushare_sweep_argv_free(rec);
			return cli_error(EXIT_USAGE, "%s: --resume: the %s recorded in '%s' ran %s command; this one asks for "
					 "'%s ...'; leave it out to continue the recorded %s, or give another --out", name, name,
					 path, was.tail ? "another" : "no", now.tail[0], name);
		}
	}
	/* NAME, the recorded options that measure, the free ones given now, -- CMD */
	nargv = calloc(2 * (was.n + now.n) + (size_t)was.n_tail + 4, sizeof(*nargv));
	names = calloc(was.n + now.n + 1, sizeof(*names));
	if (!nargv || !names) {
		free(nargv);
		free(names);
		gpushare_sweep_argv_free(rec);
		return cli_fail(GPUSHARE_E_NOMEM, name);
	}
	nargv[nargc++] = argv[0];
	for (int pass = 0; pass < 2; pass++) {
		const struct opt_set *o = pass ? &now : &was;

		for (size_t i = 0; i < o->n; i++) {
			char *opt;

			if (free_option(r, o->pairs[i].name) != (pass == 1))
				continue;
			if (!(opt = malloc(strlen(o->pairs[i].name) + 3))) {
				code = cli_fail(GPUSHARE_E_NOMEM, name);
				goto out;
			}
			sprintf(opt, "--%s", o->pairs[i].name);
			names[n_names++] = opt;
			nargv[nargc++] = opt;
			if (o->pairs[i].value)
				nargv[nargc++] = (char *)o->pairs[i].value;
		}
	}
	if (was.tail) {
		nargv[nargc++] = "--";
		for (int i = 0; i < was.n_tail; i++)
			nargv[nargc++] = was.tail[i];
	}
	code = r->run(nargc, nargv);
out:
	for (size_t i = 0; i < n_names; i++)
		free(names[i]);
	free(names);
	free(nargv);
	gpushare_sweep_argv_free(rec);
	return code;
}
