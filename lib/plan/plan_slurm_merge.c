/*
 * --slurm-conf (docs/plan.md): the site's slurm.conf with the plan merged
 * in, and the change as a unified diff. Every line the merge does not
 * change is kept byte for byte, Include lines too; the files they name are
 * read as Slurm reads them (gpushare_slurm_conf_read) and may set none of
 * the keys the merge writes, which it writes into the given file only.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpushare/buf.h"
#include "gpushare/gpushare.h"
#include "gpushare/slurm.h"
#include "plan_internal.h"

/* ---- --slurm-conf: the site's slurm.conf with the plan merged in ---- */

/* The merge's output and its unified diff (hunks without context). */
struct merge {
	struct gpushare_buf out, diff;
	size_t old_line, new_line;   /* lines written so far of each */
};

/* Whether line (len n) sets key: "Key=" at its start, case-insensitive
 * (Slurm's keys are), after white space. *value: what follows '='. */
static bool line_sets(const char *line, size_t n, const char *key, const char **value)
{
	size_t k = strlen(key);

	while (n && (*line == ' ' || *line == '\t')) {
		line++;
		n--;
	}
	if (n <= k || strncasecmp(line, key, k) || line[k] != '=')
		return false;
	if (value)
		*value = line + k + 1;
	return true;
}

/* The value of a line's first word: up to white space or the end. */
static size_t word_len(const char *v, size_t n)
{
	size_t i = 0;

	while (i < n && v[i] != ' ' && v[i] != '\t' && v[i] != '#')
		i++;
	return i;
}

static int merge_keep(struct merge *m, const char *line, size_t n)
{
	m->old_line++;
	m->new_line++;
	return gpushare_buf_add(&m->out, line, n);
}

/* Replace the old line with text (ending in '\n'; "" removes it) or,
 * line NULL, insert text. */
static int merge_change(struct merge *m, const char *line, size_t n, const char *text)
{
	size_t added = 0;
	int rc;

	for (const char *c = text; *c; c++)
		added += *c == '\n';
	if (line)
		rc = gpushare_buf_addf(&m->diff, "@@ -%zu,1 +%zu,%zu @@\n-%.*s", m->old_line + 1, m->new_line + (added ? 1 : 0),
				       added, (int)n, line);
	else
		rc = gpushare_buf_addf(&m->diff, "@@ -%zu,0 +%zu,%zu @@\n", m->old_line, m->new_line + 1, added);
	if (!rc && line && (!n || line[n - 1] != '\n'))
		rc = gpushare_buf_addf(&m->diff, "\n\\ No newline at end of file\n");
	for (const char *c = text; !rc && *c;) {
		const char *e = strchr(c, '\n');

		rc = gpushare_buf_addf(&m->diff, "+%.*s\n", (int)(e - c), c);
		c = e + 1;
	}
	if (!rc)
		rc = gpushare_buf_add(&m->out, text, strlen(text));
	m->old_line += line ? 1 : 0;
	m->new_line += added;
	return rc;
}

/* GresTypes= of the site with the plan's types added (a comma list). */
static void merge_list(const char *site, size_t n, const char *add, char *out, size_t len)
{
	snprintf(out, len, "%.*s", (int)n, site);
	for (const char *a = add; *a;) {
		size_t an = strcspn(a, ",");
		bool have = false;

		for (const char *s = out; *s;) {
			size_t sn = strcspn(s, ",");

			if (sn == an && !strncasecmp(s, a, an))
				have = true;
			s += sn + (s[sn] == ',');
		}
		if (!have)
			gpushare_str_catf(out, len, "%s%.*s", *out ? "," : "", (int)an, a);
		a += an + (a[an] == ',');
	}
}

/* An Include line of the site's file (its line line_no): the files it
 * names, read as Slurm reads them (a relative name from the directory of
 * the site's file), may set none of the keys the merge writes. */
static int check_include(const struct gpushare_plan_options *o, const struct slurm_keys *k, const char *nodes,
			 const char *name, unsigned line_no)
{
	const char *conf = o->slurm_conf_name ? o->slurm_conf_name : "slurm.conf", *slash = strrchr(conf, '/');
	static const char *const keys[] = { "GresTypes", "Prolog", "Epilog", "PrologFlags" };
	char path[8192], *text = NULL;
	size_t len;
	int rc;

	if (name[0] == '/' || !slash)
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - conf), conf, name);
	if ((rc = gpushare_slurm_conf_read(path, &text, &len))) {
		char why[700];

		snprintf(why, sizeof(why), "%s", gpushare_errdetail());
		return gpushare_fail(GPUSHARE_E_INVAL, "--slurm-conf '%s' line %u: Include '%s': %s", conf, line_no, name,
				     why);
	}
	for (const char *l = text; *l && !rc;) {
		size_t n = strcspn(l, "\n");
		const char *v, *set = NULL;

		if (line_sets(l, n, "NodeName", &v) && word_len(v, n - (size_t)(v - l)) == strlen(nodes) &&
		    !strncmp(v, nodes, strlen(nodes)))
			set = "NodeName";
		for (size_t i = 0; !set && i < sizeof(keys) / sizeof(keys[0]); i++) {
			if ((i == 0 || k->prolog) && line_sets(l, n, keys[i], NULL))
				set = keys[i];
		}
		if (set)
			rc = gpushare_fail(GPUSHARE_E_INVAL, "--slurm-conf '%s' line %u: Include '%s' sets %s= (\"%.*s\"), "
					   "which the merge writes into '%s' only: move that line into '%s', or merge by "
					   "hand", conf, line_no, name, set, (int)(n < 120 ? n : 120), l, conf, conf);
		l += n + (l[n] == '\n');
	}
	free(text);
	return rc;
}

int plan_slurm_conf_merged(const struct gpushare_plan_options *o, const struct slurm_keys *k, const char *head,
			   const char *nodes, struct gpushare_buf *out, struct gpushare_buf *diff)
{
	const char *text = o->slurm_conf_text, *name = o->slurm_conf_name ? o->slurm_conf_name : "slurm.conf";
	struct merge m = { 0 };
	bool seen_types = false, seen_prolog = false, seen_epilog = false, seen_flags = false;
	size_t node_lines = 0, first_node = 0;
	unsigned line_no = 0;
	int rc = 0;

	/* First pass: what the site has; the refusals before anything is written. */
	for (const char *l = text; *l && !rc;) {
		size_t n = strcspn(l, "\n");
		const char *v;
		char inc[4096];

		line_no++;
		if (gpushare_slurm_include_line(l, n, inc, sizeof(inc)))
			rc = check_include(o, k, nodes, inc, line_no);
		else if (n && l[n - 1] == '\\')
			rc = gpushare_fail(GPUSHARE_E_INVAL, "--slurm-conf '%s': a line continued with '\\' cannot be merged; "
					   "join it first", name);
		else if (line_sets(l, n, "NodeName", &v) && word_len(v, n - (size_t)(v - l)) == strlen(nodes) &&
			 !strncmp(v, nodes, strlen(nodes)))
			node_lines++;
		else if (k->prolog && line_sets(l, n, "Prolog", &v) &&
			 (word_len(v, n - (size_t)(v - l)) != strlen(k->prolog) || strncmp(v, k->prolog, strlen(k->prolog))))
			rc = gpushare_fail(GPUSHARE_E_INVAL, "--slurm-conf '%s' has its own Prolog=%.*s: call '%s' from it, "
					   "or give --hook-dir", name, (int)word_len(v, n - (size_t)(v - l)), v, k->prolog);
		else if (k->epilog && line_sets(l, n, "Epilog", &v) &&
			 (word_len(v, n - (size_t)(v - l)) != strlen(k->epilog) || strncmp(v, k->epilog, strlen(k->epilog))))
			rc = gpushare_fail(GPUSHARE_E_INVAL, "--slurm-conf '%s' has its own Epilog=%.*s: call '%s' from it, "
					   "or give --hook-dir", name, (int)word_len(v, n - (size_t)(v - l)), v, k->epilog);
		l += n + (l[n] == '\n');
	}
	if (!rc && node_lines > 1)
		rc = gpushare_fail(GPUSHARE_E_INVAL, "--slurm-conf '%s' has %zu NodeName=%s lines: one per node (Slurm "
				   "stops at \"Duplicated NodeHostName\")", name, node_lines, nodes);
	else if (!rc && !node_lines)
		rc = gpushare_fail(GPUSHARE_E_INVAL, "--slurm-conf '%s' has no line NodeName=%s: define the nodes (CPUs, "
				   "memory) first, with the node list --nodes gives", name, nodes);
	if (!rc) {
		/* What the merge adds to the node's line goes through the one
		 * writer's check; the site's own words are kept as they are. */
		struct gpushare_buf t = { 0 };

		rc = gpushare_slurm_line(&t, (struct gpushare_slurm_kv[]){ { "NodeName", nodes }, { "Gres", k->gres } }, 2);
		gpushare_buf_release(&t);
	}
	if (rc)
		return rc;
	/* Named slurm.conf on both sides (a path given may hold any byte):
	 * `patch FILE <slurm.conf.diff`, or `patch <slurm.conf.diff` beside it. */
	rc = gpushare_buf_addf(&m.diff, "--- slurm.conf\n+++ slurm.conf\n");
	if (!rc)
		rc = merge_change(&m, NULL, 0, head);
	for (const char *l = text; *l && !rc;) {
		size_t n = strcspn(l, "\n"), full = n + (l[n] == '\n');
		const char *v;
		char list[128];

		if (line_sets(l, n, "GresTypes", &v) || (k->prolog_flags && line_sets(l, n, "PrologFlags", &v))) {
			bool types = line_sets(l, n, "GresTypes", NULL);
			struct gpushare_buf nl = { 0 };

			merge_list(v, word_len(v, n - (size_t)(v - l)), types ? k->gres_types : k->prolog_flags, list,
				   sizeof(list));
			*(types ? &seen_types : &seen_flags) = true;
			rc = gpushare_slurm_line(&nl, &(struct gpushare_slurm_kv){ types ? "GresTypes" : "PrologFlags", list }, 1);
			if (!rc)
				rc = nl.len - 1 == n && !strncmp(nl.s, l, n) ? merge_keep(&m, l, full)
									     : merge_change(&m, l, full, nl.s);
			gpushare_buf_release(&nl);
		} else if (line_sets(l, n, "NodeName", &v) && word_len(v, n - (size_t)(v - l)) == strlen(nodes) &&
			   !strncmp(v, nodes, strlen(nodes))) {
			struct gpushare_buf nl = { 0 };
			bool gres = false;

			first_node = first_node ? first_node : m.new_line + 1;
			/* The node's words, its Gres= replaced by the plan's. */
			for (size_t i = 0; !rc && i < n;) {
				size_t w;

				while (i < n && (l[i] == ' ' || l[i] == '\t'))
					i++;
				if (i >= n || l[i] == '#')
					break;
				w = word_len(l + i, n - i);
				if (w > 5 && !strncasecmp(l + i, "Gres=", 5)) {
					rc = gpushare_buf_addf(&nl, "%sGres=%s", nl.len ? " " : "", k->gres);
					gres = true;
				} else {
					rc = gpushare_buf_addf(&nl, "%s%.*s", nl.len ? " " : "", (int)w, l + i);
				}
				i += w;
			}
			if (!rc && !gres)
				rc = gpushare_buf_addf(&nl, " Gres=%s", k->gres);
			if (!rc)
				rc = gpushare_buf_addf(&nl, "\n");
			if (!rc)
				rc = merge_change(&m, l, full, gpushare_buf_str(&nl));
			gpushare_buf_release(&nl);
		} else {
			/* Our own hooks, already there, stay; the keys missing
			 * go before the first NodeName line. */
			if (k->prolog && line_sets(l, n, "Prolog", NULL))
				seen_prolog = true;
			if (k->epilog && line_sets(l, n, "Epilog", NULL))
				seen_epilog = true;
			if (!first_node && line_sets(l, n, "NodeName", &v) && !seen_types) {
				struct gpushare_buf add = { 0 };

				rc = gpushare_slurm_line(&add, &(struct gpushare_slurm_kv){ "GresTypes", k->gres_types }, 1);
				seen_types = true;
				if (!rc)
					rc = merge_change(&m, NULL, 0, gpushare_buf_str(&add));
				gpushare_buf_release(&add);
			}
			if (!rc)
				rc = merge_keep(&m, l, full);
		}
		l += full;
	}
	/* The keys the site has not: at the end (Slurm reads them anywhere). */
	if (!rc && (!seen_types || (k->prolog && (!seen_prolog || !seen_epilog || !seen_flags)))) {
		struct gpushare_buf add = { 0 };

		if (m.out.len && m.out.s[m.out.len - 1] != '\n')
			rc = gpushare_buf_add(&m.out, "\n", 1);
		if (!rc && !seen_types)
			rc = gpushare_slurm_line(&add, &(struct gpushare_slurm_kv){ "GresTypes", k->gres_types }, 1);
		if (!rc && k->prolog && !seen_prolog)
			rc = gpushare_slurm_line(&add, &(struct gpushare_slurm_kv){ "Prolog", k->prolog }, 1);
		if (!rc && k->epilog && !seen_epilog)
			rc = gpushare_slurm_line(&add, &(struct gpushare_slurm_kv){ "Epilog", k->epilog }, 1);
		if (!rc && k->prolog_flags && !seen_flags)
			rc = gpushare_slurm_line(&add, &(struct gpushare_slurm_kv){ "PrologFlags", k->prolog_flags }, 1);
		if (!rc)
			rc = merge_change(&m, NULL, 0, gpushare_buf_str(&add));
		gpushare_buf_release(&add);
	}
	if (!rc) {
		*out = m.out;
		*diff = m.diff;
		return GPUSHARE_OK;
	}
	gpushare_buf_release(&m.out);
	gpushare_buf_release(&m.diff);
	return rc;
}

