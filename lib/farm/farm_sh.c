/*
 * Which shell-mode jobs the farm may run without the shell (farm_jobs.h,
 * gpushare_farm_jobs_direct()): a line that is one plain command means its
 * words, so the farm executes them itself and records the command's own
 * signal or refusal, where /bin/sh would report exit 128+N or 127.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "farm_jobs.h"
#include "gpushare/gpushare.h"

/* dash's and POSIX's builtins: a plain line must not start with one (its
 * program in PATH, if any, may differ: dash's echo reads backslashes). */
static bool is_sh_builtin(const char *w)
{
	static const char *const names[] = {
		".", ":", "[", "alias", "bg", "break", "cd", "chdir", "command", "continue", "echo", "eval", "exec",
		"exit", "export", "false", "fc", "fg", "getopts", "hash", "jobs", "kill", "local", "printf", "pwd",
		"read", "readonly", "return", "set", "shift", "source", "test", "times", "trap", "true", "type",
		"ulimit", "umask", "unalias", "unset", "wait",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(w, names[i]))
			return true;
	return false;
}

/* The line holds nothing the shell would expand or treat as syntax: out of
 * quotes only [A-Za-z0-9_./:,+@%=-], blanks and backslash escapes; in
 * double quotes no '$', '`' or '\' (what sh would expand or unescape
 * differently from nothing); single quotes hold anything. */
static bool sh_plain(const char *line)
{
	enum { OUT, SQ, DQ } q = OUT;

	for (const char *p = line; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (q == SQ) {
			if (c == '\'')
				q = OUT;
		} else if (q == DQ) {
			if (c == '"')
				q = OUT;
			else if (c == '$' || c == '`' || c == '\\')
				return false;
		} else if (c == '\\') {
			if (!p[1])
				return false;
			p++;            /* the next character is literal, as in sh */
		} else if (c == '\'') {
			q = SQ;
		} else if (c == '"') {
			q = DQ;
		} else if (!(isalnum(c) || c == ' ' || c == '\t' || strchr("_./:,+@%=-", c))) {
			return false;
		}
	}
	return q == OUT;
}

int gpushare_farm_jobs_direct(char *const argv[], char ***direct)
{
	char **v;
	size_t n;
	int rc;

	*direct = NULL;
	if (!argv[0] || strcmp(argv[0], "/bin/sh") || !argv[1] || strcmp(argv[1], "-c") || !argv[2] || argv[3] ||
	    !sh_plain(argv[2]))
		return GPUSHARE_OK;
	rc = gpushare_farm_jobs_split(argv[2], strlen(argv[2]), &v, &n);
	if (rc)
		return rc;
	/* An assignment (FOO=1 cmd) or a builtin first: the shell's business. */
	if (!n || strchr(v[0], '=') || is_sh_builtin(v[0])) {
		free(v);
		return GPUSHARE_OK;
	}
	*direct = v;
	return GPUSHARE_OK;
}
