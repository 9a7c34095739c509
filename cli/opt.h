/*
 * Options as data, in the manner of git's parse-options: each command
 * describes its options in tables of struct cli_opt (names, value kind, range,
 * allowed values, value name, default, help, and where the value goes: a
 * field of the command's argument struct or a callback), and one parser
 * walks argv against them (getopt_long underneath), so that a command is its
 * table, one cli_parse_options(), the checks of the combination, the run.
 * The same tables give the command's --help (usage, options, exit statuses),
 * so its man page, the shell completion (`gpushare --complete ...`,
 * completion/) and the option tables of docs/cli.md (`gpushare --doc CMD`,
 * scripts/gen_cli_doc.py), so none of them can drift apart.
 *
 * Exit statuses have one table too (cli_exit_statuses[]): each status with
 * its meaning and the commands that return it; a command's --help lists the
 * rows that name it.
 */
#ifndef GPUSHARE_CLI_OPT_H
#define GPUSHARE_CLI_OPT_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The value an option takes. FLAG takes none; INT is a whole number written
 * as digits only within [min, max], checked by the parser (p->num); the other
 * kinds reach the command as text, checked there, and say what the value is
 * for --help and the shell completion. */
enum cli_kind {
	CLI_FLAG,
	CLI_INT,
	CLI_DURATION,  /* 500ms, 10s, 2m */
	CLI_SIZE,      /* 4G, 512M */
	CLI_PERCENT,   /* (0, 100], a trailing % allowed */
	CLI_NUMBER,    /* a decimal number */
	CLI_STRING,
	CLI_LIST,      /* comma list; values: its items when they are a closed set */
	CLI_ENUM,      /* one of values */
	CLI_FILE,      /* a file name (completion offers files) */
	CLI_DIR,       /* a directory (completion offers directories) */
};

/* Where cli_parse_options() puts an option's value (struct cli_opt.to), in
 * the manner of git's OPT_BOOL, OPT_INTEGER, OPT_STRING and OPT_CALLBACK:
 * at the offset .off of the argument struct the command hands it (CLI_AT()),
 * or through .call. */
enum cli_to {
	CLI_TO_LOOP,   /* no binding: for a caller of cli_parse_next() alone (sweep's and
			* tune's --resume compare the options, they bind none) */
	CLI_TO_TRUE,   /* a bool, set true (a flag) */
	CLI_TO_INT,    /* an int, from p->num (CLI_INT) */
	CLI_TO_UINT,   /* an unsigned, from p->num (CLI_INT) */
	CLI_TO_LONG,   /* a long, p->num (CLI_INT) */
	CLI_TO_STR,    /* a const char *, the value as given (the last one given wins) */
	CLI_TO_CALL,   /* .call(p, args) parses the value and stores it; an exit status */
	CLI_TO_NONE,   /* read before the parse (a prescan): nothing to store */
};

/* .off of a field of the command's argument struct T: { .to = CLI_TO_INT, CLI_AT(T, workers) }. */
#define CLI_AT(T, field) .off = offsetof(T, field)

struct cli_parse;

/* struct cli_opt.flags */
enum {
	CLI_RAW = 1,  /* CLI_INT checked by the command (its own message), not the parser */
};

/* Every option's id, for the commands' switch statements: the short option's
 * letter, or one of these (one enum, so that ids of tables joined in one
 * command never collide). The CLI_OPT_* and CLI_OPEN_* runs are the options
 * bench and sweep share (cli/util.c, cli/cli_openloop.c). */
enum cli_opt_id {
	CLI_ID_FIRST = 256,
	/* shared by bench and sweep (cli_command_option()) */
	CLI_OPT_FIRST,
	CLI_OPT_MODE = CLI_OPT_FIRST, CLI_OPT_JOBS, CLI_OPT_WARMUP, CLI_OPT_GPU, CLI_OPT_MPS_PIPE_DIR,
	CLI_OPT_METRICS_LISTEN, CLI_OPT_METRICS_BUCKETS, CLI_OPT_STRATEGY, CLI_OPT_DURATION, CLI_OPT_REQUESTS,
	CLI_OPT_WARMUP_REQUESTS, CLI_OPT_START_TIMEOUT, CLI_OPT_REPEATS, CLI_OPT_TARGET_NOISE, CLI_OPT_MAX_REPEATS,
	CLI_OPT_GPUS, CLI_OPT_PRELOAD,
	CLI_OPT_END,
	/* open-loop, shared by bench and sweep (cli_openloop_option()) */
	CLI_OPEN_FIRST = CLI_OPT_END,
	CLI_OPEN_LOAD = CLI_OPEN_FIRST, CLI_OPEN_RATE, CLI_OPEN_ARRIVAL, CLI_OPEN_SEED, CLI_OPEN_DISPATCH,
	CLI_OPEN_DRAIN, CLI_OPEN_FIND_PEAK, CLI_OPEN_SLO, CLI_OPEN_RESOLUTION, CLI_OPEN_TAIL_SAMPLES,
	CLI_OPEN_RATE_MAX,
	CLI_OPEN_END,
	/* the commands' own */
	CLI_OWN_FIRST = CLI_OPEN_END,
	OPT_WORKLOAD = CLI_OWN_FIRST, OPT_BATCH, OPT_WORKERS, OPT_THREAD_PCT, OPT_MEM_LIMIT, OPT_PRIORITY,
	OPT_CEILING, OPT_JSON, OPT_CSV, OPT_OUT, OPT_RESUME, OPT_SLO_P99, OPT_NO_REPORT, OPT_LISTEN, OPT_ONCE,
	OPT_PIPE_DIR, OPT_NO_PROCESSES, OPT_LOG_DIR, OPT_TIMEOUT, OPT_FORCE, OPT_LOG, OPT_SERVER, OPT_GPUS,
	OPT_STRATEGY, OPT_BIND, OPT_RANKS_PER_GPU, OPT_DRY_RUN, OPT_DIR, OPT_SLOTS, OPT_MAX_SLOTS,
	OPT_MEM_PER_JOB, OPT_RETRIES, OPT_SHARD, OPT_ARGS, OPT_RANGE, OPT_SHELL, OPT_NO_SHELL, OPT_RERUN_FAILED, OPT_MPS_PIPE_DIR,
	OPT_METRICS_LISTEN, OPT_HPC_JOB_MAPPING_DIR, OPT_STATE_DIR, OPT_BUDGET, OPT_FAILED,
	OPT_WATCH, OPT_COUNT, OPT_QUERY, OPT_FORMAT, OPT_HALT, OPT_TAG,
	OPT_NAMESPACE,
	OPT_SHARES, OPT_CLIENTS, OPT_TOLERANCE, OPT_SECONDS, OPT_ACCOUNT_LIB, OPT_PLAN, OPT_ACCOUNT, OPT_WARMUP_S,
	OPT_FRESH_WORKERS, OPT_MAX_COST, OPT_NO_ACCOUNT,
	/* a name of cli_parse.extra (workload options): CLI_ID_EXTRA + its index */
	CLI_ID_EXTRA = 10000,
};

struct cli_opt {
	int id;                 /* what the parser returns: the short letter or an enum cli_opt_id */
	char short_name;        /* 0: none */
	const char *long_name;
	enum cli_kind kind;
	const char *value_name; /* "D", "LIST"; NULL for a flag */
	const char *help;       /* a paragraph: --help wraps it */
	const char *def;        /* the default in words, or NULL; --help adds "(default DEF)" */
	long min, max;          /* CLI_INT */
	const char *values;     /* CLI_ENUM, CLI_LIST: the allowed values, space-separated;
				 * "@workloads": the workloads' names */
	unsigned flags;         /* CLI_RAW */
	const char *only;       /* the subcommands it applies to, space-separated; NULL: all */
	enum cli_to to;         /* where its value goes (cli_parse_options()) */
	size_t off;             /* CLI_TO_TRUE ... CLI_TO_STR: the field's offset in the args */
	int (*call)(struct cli_parse *p, void *args); /* CLI_TO_CALL */
};

/* Options under one heading of --help; several groups may share a heading
 * (title NULL: the previous group's). text follows the group's options. */
struct cli_group {
	const char *title;
	const struct cli_opt *opts;
	size_t n;
	const char *text;
};

/* A status's meaning for one command where it says more than the table's. */
struct cli_exit_note {
	int status;
	const char *meaning;
};

/* One command (or subcommand: "farm status"). */
struct cli_cmd {
	const char *name;             /* "bench", "farm status" */
	const char *usage;            /* the usage lines, '\n' between them */
	const char *about;            /* what it does, before the options */
	const struct cli_group *groups;
	size_t n_groups;
	const char *subcommands;      /* space-separated words after the name ("start stop ..."), or NULL */
	const char *epilog;           /* text after the options, or NULL */
	void (*more_help)(FILE *f);   /* more text after the epilog (generated), or NULL */
	const char *exit_intro;       /* a line before the exit statuses, or NULL */
	const struct cli_exit_note *notes;
	size_t n_notes;
	bool name_options;            /* errors name a recognised option by its full name */
	bool stop_at_operand;         /* options end at the first operand (exec) */
	const struct cli_cmd *const *subs; /* subcommands with tables of their own ("farm status"), NULL-ended */
};

/* One row of the command table: gpushare <name> runs fn; summary is its
 * line in `gpushare --help`. */
struct cli_command {
	const struct cli_cmd *cmd;
	int (*fn)(int argc, char **argv);
	const char *summary;
};
/* The command table (cli/main.c), in the order of `gpushare --help`: the
 * dispatch, `gpushare help CMD`, the command list and the completion's
 * commands all read it. */
extern const struct cli_command cli_commands[];
extern const size_t cli_n_commands;
/* The command (or subcommand: "farm status") called name, or NULL. */
const struct cli_cmd *cli_find_cmd(const char *name);

#define CLI_N(a) (sizeof(a) / sizeof((a)[0]))
#define CLI_GROUP(title, arr, text) { title, arr, CLI_N(arr), text }

/* The exit statuses: code, meaning, and the commands that return it
 * ("all", or command names separated by spaces). */
struct cli_exit_row {
	int status;
	const char *meaning;
	const char *commands;
};
extern const struct cli_exit_row cli_exit_statuses[];
extern const size_t cli_n_exit_statuses;

/* The commands' tables (cli/cmd_*.c), for the command table. */
extern const struct cli_cmd cli_info_cmd, cli_mps_cmd, cli_bench_cmd, cli_sweep_cmd, cli_report_cmd,
	cli_exporter_cmd, cli_check_cmd, cli_farm_cmd, cli_farm_status_cmd, cli_exec_cmd, cli_plan_cmd, cli_slurm_cmd, cli_tune_cmd,
	cli_version_cmd;

/* The option groups bench and sweep share (cli/util.c, cli/cli_openloop.c);
 * the sizes are checked where they are defined. */
#define CLI_N_RUN_OPTS 9
#define CLI_N_PROGRAM_OPTS 3
#define CLI_N_METRICS_OPTS 2
#define CLI_N_OPENLOOP_OPTS 5
#define CLI_N_PEAK_OPTS 5
extern const struct cli_opt cli_run_opts[CLI_N_RUN_OPTS];         /* --strategy ... --mps-pipe-dir */
extern const struct cli_opt cli_program_opts[CLI_N_PROGRAM_OPTS]; /* --mode, --jobs, --preload */
extern const struct cli_opt cli_metrics_opts[CLI_N_METRICS_OPTS]; /* --metrics-listen, --metrics-buckets */
extern const struct cli_opt cli_openloop_opts[CLI_N_OPENLOOP_OPTS]; /* --load ... --drain, less --rate */
extern const struct cli_opt cli_peak_opts[CLI_N_PEAK_OPTS];       /* --find-peak ... --rate-max */

#define CLI_MAX_OPTS 128

/* The parser's state; cli_parse_init(), then cli_parse_next() until it
 * returns 0 (no more options: p->optind is the first operand) or < 0 (stop:
 * --help was printed, or an error; exit with p->status). */
struct cli_parse {
	const struct cli_cmd *cmd;
	const char *name;             /* in messages; default cmd->name */
	int argc;                     /* options end here (before a "--" the command keeps) */
	char **argv;
	const char *const *extra;     /* more long options with a value (workload options) */
	size_t n_extra;
	const char *whose;            /* "workload 'matmul'": an unknown long option is not one of whose */
	const char **extra_values;    /* cli_parse_options(): extra[i]'s value into extra_values[i] */
	const char *sub;              /* cli_parse_options(): the subcommand; an option that does not
				       * apply to it (struct cli_opt.only) is refused */
	/* cli_parse_options(): called after each option is stored, or NULL */
	void (*each)(struct cli_parse *p, void *args);
	/* each option found */
	const struct cli_opt *opt;    /* NULL for an extra one */
	const char *arg;              /* its value (NULL for a flag) */
	long num;                     /* CLI_INT: the value */
	int optind;
	int status;
	/* private */
	struct option longopts[CLI_MAX_OPTS + 1];
	const struct cli_opt *table[CLI_MAX_OPTS];
	char shortopts[64];
	size_t n;
	bool seen[CLI_MAX_OPTS];      /* table[i] was given */
	bool overflow;                /* the tables do not fit: an internal error */
};

void cli_parse_init(struct cli_parse *p, const struct cli_cmd *cmd, int argc, char **argv);
/* Whether one of cmd's options is called name. */
bool cli_cmd_has_option(const struct cli_cmd *cmd, const char *name);
/* The id of the next option (> 0), 0 at the end, < 0 to stop with p->status. */
int cli_parse_next(struct cli_parse *p);
/* Every option of argv, each stored where its table entry says (struct
 * cli_opt.to) in args, whose start the shared tables' callbacks read as a
 * struct cli_run_args (cli/cli.h); an extra one's value into
 * p->extra_values (which must be set when p->extra is). true when the
 * command goes on (p->optind is the first operand); false to stop with
 * p->status (--help was printed, or an error). A bad value stops the parse
 * at that option, so the first bad one in argv is the one reported. */
bool cli_parse_options(struct cli_parse *p, void *args);
/* Whether the option called name (long name) was given. */
bool cli_parse_given(const struct cli_parse *p, const char *name);
/* Whether o applies to the subcommand sub (struct cli_opt.only). */
bool cli_opt_applies(const struct cli_opt *o, const char *sub);
/* "--name" of the option just found. */
const char *cli_parse_optname(const struct cli_parse *p);

/* The --help text of cmd. */
void cli_help(FILE *f, const struct cli_cmd *cmd);
/* cli_help() on stdout; an exit status (EXIT_IO when stdout failed). */
int cli_help_stdout(const struct cli_cmd *cmd);
/* The exit status rows of cmd ("all" rows and those naming it) to f. */
void cli_help_exit_statuses(FILE *f, const char *cmd, const struct cli_exit_note *notes, size_t n_notes);

/* cmd's options as a Markdown table, for docs/cli.md: `gpushare --doc CMD`
 * (hidden), which scripts/gen_cli_doc.py runs. */
void cli_doc(FILE *f, const struct cli_cmd *cmd);
/* The workloads and their options as a Markdown table: `gpushare --doc workloads`. */
void cli_doc_workloads(FILE *f);

/* `gpushare --complete ...` (argv after "--complete"): the words the shell
 * completion offers, one a line. Returns an exit status. */
int cli_complete(int argc, char **argv);

#endif
