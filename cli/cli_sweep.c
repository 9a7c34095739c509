/*
 * What `gpushare sweep` and `gpushare tune` share on their command line:
 * the workload options that join the option table, the grid's axes
 * (--workers, --batch, --thread-percentage) and the workload options' values
 * set on the sweep's shapes.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gpushare/gpushare.h"
#include "gpushare/sweep.h"
#include "gpushare/workload.h"

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

int cli_sweep_other_option(struct cli_command_opts *co, const struct cli_parse *p, int opt, const char **values,
			   struct gpushare_sweep_config *s)
{
	int code;

	if (opt >= CLI_ID_EXTRA) {
		values[opt - CLI_ID_EXTRA] = p->arg;
		return EXIT_OK;
	}
	if ((code = cli_command_option(co, p, &s->bench)) == CLI_NOT_MINE)
		code = cli_openloop_option(p, &s->bench);
	return code;
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
