/*
 * The option parser, the --help generator and the shell completion's
 * answers, all from the commands' option tables (cli/opt.h), and the one
 * table of exit statuses.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
#include "gpushare/workload.h"

/* Every status of enum cli_exit (cli/cli.h), with the commands that return
 * it; docs/cli.md's "Exit statuses" table says the same (tests/cli/test_options.sh). */
const struct cli_exit_row cli_exit_statuses[] = {
	{ EXIT_OK, "success", "all" },
	{ EXIT_FAILURE_GENERIC, "unexpected failure (a system call, out of memory)", "all" },
	{ EXIT_USAGE, "unknown command or option, bad option value", "all" },
	{ EXIT_NO_DRIVER, "no NVIDIA driver found", "info exporter bench sweep tune exec farm slurm" },
	{ EXIT_NO_MPS_BINARY, "nvidia-cuda-mps-control not found", "mps bench sweep tune exec farm slurm" },
	{ EXIT_MPS, "MPS daemon not running, not ready, bad reply, clients left", "mps bench sweep tune exec farm slurm" },
	{ EXIT_DIR, "unsafe or unusable directory", "mps bench sweep tune exec farm slurm" },
	{ EXIT_GPU, "the GPU refuses (compute mode Prohibited, unsupported, not found)", "info mps bench sweep tune exec farm slurm" },
	{ EXIT_WORKER, "a worker failed to start or run", "bench sweep tune farm check" },
	{ EXIT_MPS_MAX_CLIENTS, "too many MPS clients", "bench sweep tune" },
	{ EXIT_PARTIAL, "a worker failed mid-run; partial results were kept", "bench sweep tune" },
	{ EXIT_IO, "reading or writing a file failed", "all" },
	{ EXIT_TIMEOUT, "a bounded wait ran out", "mps bench sweep tune exec slurm" },
	{ EXIT_LISTEN, "the listen address is in use or cannot be bound", "exporter bench sweep farm" },
	{ EXIT_PLAN_REFUSED, "the results cannot support the asked plan", "plan" },
	{ EXIT_CHECK_FAILED, "a client attained a share outside the tolerance", "check" },
	{ EXIT_INTERRUPTED, "interrupted (SIGINT or SIGTERM)", "bench sweep tune farm" },
};
const size_t cli_n_exit_statuses = CLI_N(cli_exit_statuses);

/* Whether the space-separated list names word. */
static bool names(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *s = list; *s;) {
		size_t len = strcspn(s, " ");

		if (len == n && !strncmp(s, word, n))
			return true;
		s += len;
		s += strspn(s, " ");
	}
	return false;
}

/* ---- the parser ---- */

static void add(struct cli_parse *p, const struct cli_opt *o)
{
	for (size_t i = 0; i < p->n; i++) {
		if (!strcmp(p->longopts[i].name, o->long_name))
			return; /* the first table wins */
	}
	if (p->n == CLI_MAX_OPTS) {
		p->overflow = true;
		return;
	}
	p->table[p->n] = o;
	p->longopts[p->n++] = (struct option){ o->long_name, o->kind == CLI_FLAG ? no_argument : required_argument,
					       NULL, o->id };
	if (o->short_name) {
		size_t len = strlen(p->shortopts);

		if (len + 3 < sizeof(p->shortopts)) {
			p->shortopts[len++] = o->short_name;
			if (o->kind != CLI_FLAG)
				p->shortopts[len++] = ':';
			p->shortopts[len] = '\0';
		} else {
			p->overflow = true;
		}
	}
}

static const struct cli_opt help_opt = {
	.id = 'h', .short_name = 'h', .long_name = "help", .kind = CLI_FLAG, .help = "this help",
};

void cli_parse_init(struct cli_parse *p, const struct cli_cmd *cmd, int argc, char **argv)
{
	memset(p, 0, sizeof(*p));
	p->cmd = cmd;
	p->name = cmd->name;
	p->argc = argc;
	p->argv = argv;
	snprintf(p->shortopts, sizeof(p->shortopts), "%s:", cmd->stop_at_operand ? "+" : "");
	for (size_t g = 0; g < cmd->n_groups; g++) {
		for (size_t i = 0; i < cmd->groups[g].n; i++)
			add(p, &cmd->groups[g].opts[i]);
	}
	add(p, &help_opt);
	opterr = 0;
	optind = 0; /* glibc: start afresh */
}

bool cli_cmd_has_option(const struct cli_cmd *cmd, const char *name)
{
	if (!strcmp(name, "help"))
		return true;
	for (size_t g = 0; g < cmd->n_groups; g++) {
		for (size_t i = 0; i < cmd->groups[g].n; i++) {
			if (!strcmp(cmd->groups[g].opts[i].long_name, name))
				return true;
		}
	}
	return false;
}

bool cli_opt_applies(const struct cli_opt *o, const char *sub)
{
	return !o->only || names(o->only, sub);
}

const char *cli_parse_optname(const struct cli_parse *p)
{
	static char buf[80];

	if (p->opt) {
		snprintf(buf, sizeof(buf), "--%s", p->opt->long_name);
		return buf;
	}
	return p->argv[p->optind - 1];
}

/*
 * getopt_long answers '?' both for an unknown option and for a prefix that
 * several long options start with (--work: --workers, --workload). The
 * second is said as it is, with the candidates, rather than "unknown".
 * Returns whether arg was such a prefix (p->status is then set).
 */
static bool ambiguous(struct cli_parse *p, const char *arg)
{
	char list[512];
	size_t len, used = 0, n = 0;

	if (strncmp(arg, "--", 2) || !arg[2])
		return false;
	arg += 2;
	len = strcspn(arg, "=");
	list[0] = '\0';
	for (size_t i = 0; i < p->n; i++) {
		const char *name = p->longopts[i].name;

		if (strncmp(name, arg, len))
			continue;
		if (strlen(name) == len)
			return false; /* an exact name is never ambiguous */
		if (used < sizeof(list)) {
			int w = snprintf(list + used, sizeof(list) - used, "%s--%s", n ? ", " : "", name);

			used += w > 0 ? (size_t)w : 0;
		}
		n++;
	}
	if (n < 2)
		return false;
	p->status = cli_error(EXIT_USAGE, "%s: option '--%.*s' is ambiguous: it could be %s (see 'gpushare %s --help')",
			      p->name, (int)len, arg, list, p->name);
	return true;
}

int cli_parse_next(struct cli_parse *p)
{
	int c, idx = -1;

	/* The first call: the extra names join the table after the command's
	 * own options, which win over an extra one of the same name. */
	if (p->optind == 0) {
		if (p->n + p->n_extra > CLI_MAX_OPTS || p->overflow) {
			p->status = cli_error(EXIT_FAILURE_GENERIC, "%s: internal error: more than %d options", p->name,
					      CLI_MAX_OPTS);
			return -1;
		}
		for (size_t i = 0; i < p->n_extra; i++) {
			bool taken = false;

			for (size_t j = 0; j < p->n; j++)
				taken |= !strcmp(p->longopts[j].name, p->extra[i]);
			if (!taken) {
				p->table[p->n] = NULL;
				p->longopts[p->n++] = (struct option){ p->extra[i], required_argument, NULL,
								       CLI_ID_EXTRA + (int)i };
			}
		}
		p->longopts[p->n] = (struct option){ 0 };
		p->optind = 1;
	}
	c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts, &idx);
	p->optind = optind;
	p->opt = NULL;
	p->arg = optarg;
	if (c == -1)
		return 0;
	if (c == '?' && ambiguous(p, p->argv[optind - 1]))
		return -1;
	if (c == '?' || c == ':') {
		const char *name = p->argv[optind - 1];
		char full[80];

		if (p->cmd->name_options && idx >= 0) {
			snprintf(full, sizeof(full), "--%s", p->longopts[idx].name);
			name = full;
		}
		if (p->whose)
			p->status = cli_option_error(p->name, c, name, p->whose);
		else
			p->status = cli_usage_error(p->name, c, optopt, name);
		return -1;
	}
	if (c >= CLI_ID_EXTRA)
		return c;
	for (size_t i = 0; i < p->n; i++) {
		if (p->table[i] && p->table[i]->id == c) {
			p->opt = p->table[i];
			p->seen[i] = true;
			break;
		}
	}
	if (c == 'h') {
		p->status = cli_help_stdout(p->cmd);
		return -1;
	}
	/* An empty path is never meant: refused, never taken as "not given". */
	if (p->opt && (p->opt->kind == CLI_DIR || p->opt->kind == CLI_FILE) && optarg && !*optarg) {
		p->status = cli_error(EXIT_USAGE, "%s: %s: an empty path", p->name, cli_parse_optname(p));
		return -1;
	}
	if (p->opt && p->opt->kind == CLI_INT && !(p->opt->flags & CLI_RAW)) {
		if (cli_parse_whole(optarg, p->opt->min, p->opt->max, &p->num)) {
			p->status = cli_bad_value(p->name, cli_parse_optname(p), optarg);
			return -1;
		}
	}
	return c;
}

/* Where o's value goes in args: an exit status. */
static int bind(struct cli_parse *p, const struct cli_opt *o, void *args)
{
	char *at = (char *)args + o->off;

	switch (o->to) {
	case CLI_TO_TRUE: *(bool *)at = true; return EXIT_OK;
	case CLI_TO_INT: *(int *)at = (int)p->num; return EXIT_OK;
	case CLI_TO_UINT: *(unsigned *)at = (unsigned)p->num; return EXIT_OK;
	case CLI_TO_LONG: *(long *)at = p->num; return EXIT_OK;
	case CLI_TO_STR: *(const char **)at = p->arg; return EXIT_OK;
	case CLI_TO_CALL: return o->call(p, args);
	case CLI_TO_NONE: return EXIT_OK;
	case CLI_TO_LOOP: break;
	}
	return cli_error(EXIT_FAILURE_GENERIC, "%s: internal error: --%s has no place", p->name, o->long_name);
}

bool cli_parse_options(struct cli_parse *p, void *args)
{
	int c;

	while ((c = cli_parse_next(p)) > 0) {
		if (c >= CLI_ID_EXTRA) {
			p->extra_values[c - CLI_ID_EXTRA] = p->arg;
		} else if (p->sub && !cli_opt_applies(p->opt, p->sub)) {
			/* Named as the user knows it, by its full name. */
			p->status = cli_error(EXIT_USAGE, "%s: option '%s' does not apply here (see 'gpushare %s --help')",
					      p->name, cli_parse_optname(p), p->cmd->name);
			return false;
		} else if ((p->status = bind(p, p->opt, args)) != EXIT_OK) {
			return false;
		}
		if (p->each)
			p->each(p, args);
	}
	return c == 0;
}

bool cli_parse_given(const struct cli_parse *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++) {
		if (p->table[i] && !strcmp(p->table[i]->long_name, name))
			return p->seen[i];
	}
	return false;
}

/* ---- --help ---- */

#define HELP_COL 28    /* where the options' help starts */
#define HELP_WIDTH 80  /* columns the options' help is wrapped to */

#define NBSP '\x1f'  /* a space help_text() does not break at */

/* text from column col, wrapped at spaces to HELP_WIDTH (a '\n' in it is a
 * space too: the tables' texts are paragraphs); the cursor is at column at
 * (the first line starts there when it is past col). */
static void help_text(FILE *f, const char *text, int col, int at)
{
	char buf[1024], *s = buf;

	snprintf(buf, sizeof(buf), "%s", text);
	for (char *c = buf; *c; c++)
		*c = *c == '\n' ? ' ' : *c;
	do {
		int start = at > col ? at : col;
		size_t room = (size_t)(HELP_WIDTH - start > 24 ? HELP_WIDTH - start : 24), n = strlen(s);

		if (n > room) {
			size_t cut = room;

			while (cut > 0 && s[cut] != ' ')
				cut--;
			if (cut == 0) /* one long word: as it is */
				cut = strcspn(s, " ");
			n = cut;
		}
		fprintf(f, "%*s", start - at, "");
		for (size_t i = 0; i < n; i++)
			fputc(s[i] == NBSP ? ' ' : s[i], f);
		fputc('\n', f);
		at = 0;
		s += n;
		while (*s == ' ')
			s++;
	} while (*s);
}

static void help_option(FILE *f, const struct cli_opt *o)
{
	char left[96], help[1024];
	int n;
	char sh[8] = "";

	if (o->short_name)
		snprintf(sh, sizeof(sh), "-%c, ", o->short_name);
	n = snprintf(left, sizeof(left), "  %s--%s%s%s", sh, o->long_name, o->value_name ? " " : "",
		     o->value_name ? o->value_name : "");
	/* "(default X)" is not broken across lines. */
	if (o->def) {
		int len = snprintf(help, sizeof(help), "%s (default%c", o->help, NBSP);

		for (const char *d = o->def; *d && len + 2 < (int)sizeof(help); d++)
			help[len++] = *d == ' ' ? NBSP : *d;
		snprintf(help + len, sizeof(help) - (size_t)len, ")");
	} else {
		snprintf(help, sizeof(help), "%s", o->help);
	}
	fputs(left, f);
	if (n + 2 > HELP_COL) {
		fputs("  ", f);
		n += 2;
	}
	help_text(f, help, HELP_COL, n);
}

void cli_help_exit_statuses(FILE *f, const char *cmd, const struct cli_exit_note *notes, size_t n_notes)
{
	for (size_t i = 0; i < cli_n_exit_statuses; i++) {
		const struct cli_exit_row *r = &cli_exit_statuses[i];
		const char *meaning = r->meaning;

		if (cmd && strcmp(r->commands, "all") && !names(r->commands, cmd))
			continue;
		for (size_t j = 0; j < n_notes; j++) {
			if (notes[j].status == r->status)
				meaning = notes[j].meaning;
		}
		fprintf(f, "  %-4d %s\n", r->status, meaning);
	}
}

void cli_help(FILE *f, const struct cli_cmd *cmd)
{
	const char *title = NULL;
	char key[32];
	bool help_done = false;

	for (const char *s = cmd->usage; *s;) {
		size_t len = strcspn(s, "\n");

		fprintf(f, "%s%.*s\n", s == cmd->usage ? "usage: " : "       ", (int)len, s);
		s += len;
		if (*s)
			s++;
	}
	if (cmd->about)
		fprintf(f, "\n%s\n", cmd->about);
	for (size_t g = 0; g < cmd->n_groups; g++) {
		const struct cli_group *gr = &cmd->groups[g];

		if (gr->title && (!title || strcmp(gr->title, title))) {
			title = gr->title;
			fprintf(f, "\n%s:\n", title);
		}
		for (size_t i = 0; i < gr->n; i++)
			help_option(f, &gr->opts[i]);
		/* -h, --help ends the options under the first heading. */
		if (g + 1 == cmd->n_groups ||
		    (cmd->groups[g + 1].title && strcmp(cmd->groups[g + 1].title, cmd->groups[0].title ? cmd->groups[0].title : "")))
			if (title == cmd->groups[0].title && !help_done) {
				help_option(f, &help_opt);
				help_done = true;
			}
		if (gr->text)
			fprintf(f, "%s\n", gr->text);
	}
	if (!help_done) {
		fprintf(f, "\nOptions:\n");
		help_option(f, &help_opt);
	}
	if (cmd->epilog)
		fprintf(f, "\n%s\n", cmd->epilog);
	if (cmd->more_help)
		cmd->more_help(f);
	/* "farm status" returns what the table says of "farm-status". */
	snprintf(key, sizeof(key), "%s", cmd->name);
	for (char *s = key; *s; s++)
		*s = *s == ' ' ? '-' : *s;
	fprintf(f, "\nExit statuses:\n");
	if (cmd->exit_intro)
		fprintf(f, "%s\n", cmd->exit_intro);
	cli_help_exit_statuses(f, key, cmd->notes, cmd->n_notes);
	snprintf(key, sizeof(key), "%s", cmd->name);
	key[strcspn(key, " ")] = '\0';
	fprintf(f, "\nSee gpushare-%s(1).\n", key);
}

int cli_help_stdout(const struct cli_cmd *cmd)
{
	cli_help(stdout, cmd);
	return cli_finish_stdout(EXIT_OK);
}

/* ---- docs/cli.md ---- */

/* text in a Markdown table cell: '|' escaped, '<' and '*' not markup, one
 * line, runs of spaces one. */
static void md_text(FILE *f, const char *text)
{
	for (const char *s = text; *s; s++) {
		switch (*s) {
		case '|': fputs("\\|", f); break;
		case '<': fputs("&lt;", f); break;
		case '*': fputs("\\*", f); break;
		case '\n':
		case ' ':
			/* a run of spaces (a line break of the text) is one */
			if (s == text || (s[-1] != ' ' && s[-1] != '\n'))
				fputc(' ', f);
			break;
		default: fputc(*s, f);
		}
	}
}

/* "`-q`, `--quiet`", "`--gpu IDX\|UUID`" */
static void md_option(FILE *f, const struct cli_opt *o)
{
	fputs("| ", f);
	if (o->short_name)
		fprintf(f, "`-%c`, ", o->short_name);
	fprintf(f, "`--%s", o->long_name);
	if (o->value_name) {
		fputc(' ', f);
		md_text(f, o->value_name);
	}
	fputs("` | ", f);
	md_text(f, o->help);
	fputs(" | ", f);
	if (o->def) {
		bool words = strchr(o->def, ' ') != NULL;

		fputs(words ? "" : "`", f);
		md_text(f, o->def);
		fputs(words ? "" : "`", f);
	}
	fputs(" |\n", f);
}

void cli_doc(FILE *f, const struct cli_cmd *cmd)
{
	const char *title = cmd->n_groups ? cmd->groups[0].title : NULL;

	fprintf(f, "| option | meaning | default |\n| --- | --- | --- |\n");
	for (size_t g = 0; g < cmd->n_groups; g++) {
		const struct cli_group *gr = &cmd->groups[g];

		if (gr->title && (!title || strcmp(gr->title, title))) {
			title = gr->title;
			fputs("| **", f);
			md_text(f, title);
			fputs("** | | |\n", f);
		}
		for (size_t i = 0; i < gr->n; i++)
			md_option(f, &gr->opts[i]);
		if (gr->text) {
			const char *t = gr->text;

			fputs("| | ", f);
			t += strspn(t, " ");
			md_text(f, t);
			fputs(" | |\n", f);
		}
	}
	md_option(f, &help_opt);
}

void cli_doc_workloads(FILE *f)
{
	const struct gpushare_wl_desc *list;
	size_t n = gpushare_workloads(&list);

	fprintf(f, "| workload | option | meaning | default |\n| --- | --- | --- | --- |\n");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "| `%s` | | ", list[i].name);
		md_text(f, list[i].summary);
		fputs(" | |\n", f);
		for (size_t j = 0; j < list[i].n_opts; j++) {
			fprintf(f, "| | `--%s` | ", list[i].opts[j].name);
			md_text(f, list[i].opts[j].help);
			fputs(" | `", f);
			md_text(f, list[i].opts[j].def);
			fputs("` |\n", f);
		}
	}
}

/* ---- completion ---- */

const struct cli_cmd *cli_find_cmd(const char *name)
{
	for (size_t i = 0; i < cli_n_commands; i++) {
		const struct cli_cmd *c = cli_commands[i].cmd;

		if (!strcmp(c->name, name))
			return c;
		for (size_t k = 0; c->subs && c->subs[k]; k++) {
			if (!strcmp(c->subs[k]->name, name))
				return c->subs[k];
		}
	}
	return NULL;
}

static void print_words(const char *list)
{
	for (const char *s = list; *s;) {
		size_t len = strcspn(s, " ");

		if (len)
			printf("%.*s\n", (int)len, s);
		s += len;
		s += strspn(s, " ");
	}
}

static const char *kind_word(enum cli_kind k)
{
	switch (k) {
	case CLI_FLAG: return "flag";
	case CLI_INT: return "int";
	case CLI_DURATION: return "duration";
	case CLI_SIZE: return "size";
	case CLI_PERCENT: return "percent";
	case CLI_NUMBER: return "number";
	case CLI_STRING: return "string";
	case CLI_LIST: return "list";
	case CLI_ENUM: return "enum";
	case CLI_FILE: return "file";
	case CLI_DIR: return "dir";
	}
	return "string";
}

int cli_complete(int argc, char **argv)
{
	const struct cli_cmd *c = NULL;
	const char *what = argc > 0 ? argv[0] : "", *sub = NULL;
	char top[32];

	if (!strcmp(what, "commands") && argc == 1) {
		for (size_t i = 0; i < cli_n_commands; i++)
			printf("%s\n", cli_commands[i].cmd->name);
		return cli_finish_stdout(EXIT_OK);
	}
	if (argc >= 2 && !(c = cli_find_cmd(argv[1]))) {
		/* "mps start": the options of mps that apply to start. */
		snprintf(top, sizeof(top), "%s", argv[1]);
		top[strcspn(top, " ")] = '\0';
		sub = strchr(argv[1], ' ') ? strchr(argv[1], ' ') + 1 : NULL;
		c = cli_find_cmd(top);
		if (!c || !sub || !c->subcommands || !names(c->subcommands, sub))
			return cli_error(EXIT_USAGE, "--complete: unknown command '%s'", argv[1]);
	}
	if (!strcmp(what, "subcommands") && argc == 2) {
		if (c->subcommands)
			print_words(c->subcommands);
		return cli_finish_stdout(EXIT_OK);
	}
	if (!strcmp(what, "options") && argc == 2) {
		/* One a line: --name, then its kind ("flag", "int", "enum"...). */
		for (size_t g = 0; g < c->n_groups; g++) {
			for (size_t i = 0; i < c->groups[g].n; i++) {
				const struct cli_opt *o = &c->groups[g].opts[i];

				if (sub && !cli_opt_applies(o, sub))
					continue;
				printf("--%s %s\n", o->long_name, kind_word(o->kind));
				if (o->short_name)
					printf("-%c %s\n", o->short_name, kind_word(o->kind));
			}
		}
		printf("--help flag\n-h flag\n");
		return cli_finish_stdout(EXIT_OK);
	}
	if (!strcmp(what, "values") && argc == 3) {
		/* The first line is the kind; then the values, if a closed set. */
		const char *name = argv[2];

		for (size_t g = 0; g < c->n_groups; g++) {
			for (size_t i = 0; i < c->groups[g].n; i++) {
				const struct cli_opt *o = &c->groups[g].opts[i];

				if (strncmp(name, "--", 2) || strcmp(name + 2, o->long_name))
					continue;
				printf("%s\n", kind_word(o->kind));
				if (o->values && !strcmp(o->values, "@workloads")) {
					const struct gpushare_wl_desc *list;
					size_t n = gpushare_workloads(&list);

					for (size_t w = 0; w < n; w++)
						printf("%s\n", list[w].name);
				} else if (o->values) {
					print_words(o->values);
				}
				return cli_finish_stdout(EXIT_OK);
			}
		}
		return cli_error(EXIT_USAGE, "--complete: %s has no option '%s'", c->name, name);
	}
	return cli_error(EXIT_USAGE, "--complete: expected 'commands', 'subcommands CMD', 'options CMD' or 'values CMD --OPTION'");
}
