/*
 * gpushare plan --for slurm and --for env: Slurm's key=value lines through
 * one writer that refuses what Slurm's parser would misread, a job script,
 * and the CUDA_MPS_* environment block.
 *
 * Slurm reads gres.conf and slurm.conf as KEY=VALUE words separated by
 * white space, '#' starting a comment; quotes are taken specially. A value
 * with a space, '#', '=', a quote, a backslash or a control character would
 * be cut or misread, so the writer refuses it instead of writing it.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpushare/gpushare.h"
#include "gpushare/strategy.h"
#include "plan_internal.h"

bool gpushare_slurm_value_ok(const char *value)
{
	if (!value || !*value)
		return false;
	for (const unsigned char *s = (const unsigned char *)value; *s; s++) {
		if (*s <= 0x20 || *s >= 0x7f || *s == '#' || *s == '=' || *s == '"' || *s == '\'' || *s == '\\')
			return false;
	}
	return true;
}

static const char *why_not(const char *v)
{
	if (!v || !*v)
		return "it is empty";
	for (const unsigned char *s = (const unsigned char *)v; *s; s++) {
		if (*s == ' ' || *s == '\t')
			return "it holds white space";
		if (*s == '\n' || *s == '\r')
			return "it holds a line break";
		if (*s == '#')
			return "it holds '#', which starts a comment";
		if (*s == '=')
			return "it holds '='";
		if (*s == '"' || *s == '\'' || *s == '\\')
			return "it holds a quote or a backslash";
		if (*s < 0x20 || *s >= 0x7f)
			return "it holds a control or non-ASCII character";
	}
	return "";
}

int gpushare_slurm_line(struct gpushare_buf *b, const struct gpushare_slurm_kv *kv, size_t n)
{
	struct gpushare_buf line = { 0 };
	int rc = 0;

	if (!n)
		return gpushare_fail(GPUSHARE_E_INVAL, "an empty Slurm line");
	for (size_t i = 0; i < n; i++) {
		const char *k = kv[i].key;

		if (!k || !*k)
			return gpushare_fail(GPUSHARE_E_INVAL, "a Slurm key is empty");
		for (const char *c = k; *c; c++) {
			if (!isalpha((unsigned char)*c))
				return gpushare_fail(GPUSHARE_E_INVAL, "Slurm key '%.40s' is not letters only", k);
		}
		if (!gpushare_slurm_value_ok(kv[i].value))
			return gpushare_fail(GPUSHARE_E_INVAL, "Slurm value of %s '%.80s' cannot be written: %s", k,
					     kv[i].value ? kv[i].value : "", why_not(kv[i].value));
	}
	for (size_t i = 0; !rc && i < n; i++)
		rc = gpushare_buf_addf(&line, "%s%s=%s", i ? " " : "", kv[i].key, kv[i].value);
	if (!rc)
		rc = gpushare_buf_addf(&line, "\n");
	if (!rc)
		rc = gpushare_buf_add(b, line.s, line.len);
	gpushare_buf_release(&line);
	return rc;
}

/* One name of a device-file expression: a path of letters, digits and
 * "/_-.", absolute, with no empty, "." or ".." component and no '/' at its
 * end. */
static bool device_path_ok(const char *s, size_t n)
{
	if (!n || s[0] != '/' || s[n - 1] == '/')
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!isalnum(c) && !strchr("/_-.", c))
			return false;
		if (c == '/' && i + 1 < n && s[i + 1] == '/')
			return false;
		if (c == '/' && i + 1 < n && s[i + 1] == '.' &&
		    (i + 2 == n || s[i + 2] == '/' || (s[i + 2] == '.' && (i + 3 == n || s[i + 3] == '/'))))
			return false;
	}
	return true;
}

/* A decimal index at *p: no sign, no leading zero, at most
 * PLAN_DEVICE_INDEX_DIGITS digits; -1 when there is none. */
#define PLAN_DEVICE_INDEX_DIGITS 4
static long device_index(const char **p)
{
	const char *s = *p;
	long v = 0;
	size_t n = 0;

	while (isdigit((unsigned char)s[n])) {
		if (++n > PLAN_DEVICE_INDEX_DIGITS)
			return -1;
		v = v * 10 + (s[n - 1] - '0');
	}
	if (!n || (n > 1 && s[0] == '0'))
		return -1;
	*p = s + n;
	return v;
}

/* Append name NUL to names unless it is there already: false then. */
static int device_name_add(struct gpushare_buf *names, const char *name, bool *dup)
{
	for (size_t at = 0; at < names->len; at += strlen(names->s + at) + 1) {
		if (!strcmp(names->s + at, name)) {
			*dup = true;
			return 0;
		}
	}
	return gpushare_buf_add(names, name, strlen(name) + 1);
}

static int device_expr_fail(const char *expr, const char *why)
{
	return gpushare_fail(GPUSHARE_E_INVAL, "--device-file '%.80s' %s", expr, why);
}

int plan_device_files_count(const char *expr)
{
	struct gpushare_buf names = { 0 };
	const char *s = expr;
	long n = 0;
	int rc = 0;

	if (!expr || !*expr)
		return device_expr_fail("", "is empty");
	while (!rc) {
		size_t plen = strcspn(s, "[,");
		char name[GPUSHARE_PLAN_DEVICE_FILE_MAX + 8];
		bool dup = false;

		if (plen > GPUSHARE_PLAN_DEVICE_FILE_MAX)
			rc = device_expr_fail(expr, "names a path too long");
		else if (!device_path_ok(s, plen) || (s[plen] == '[' && s[plen - 1] == '/'))
			rc = device_expr_fail(expr, "is not a list of absolute device paths (letters, digits and /_-. "
						    "only), each with at most one [a-b,c] list of indices at its end");
		else if (s[plen] != '[') {    /* a plain name */
			snprintf(name, sizeof(name), "%.*s", (int)plen, s);
			rc = device_name_add(&names, name, &dup);
			n++;
		} else {                      /* NAME[a-b,c,...] */
			const char *p = s + plen + 1;
			long last = -1;

			for (;;) {
				long a = device_index(&p), b = a;

				if (a < 0) {
					rc = device_expr_fail(expr, "holds an index that is not a number of 1 to 4 digits "
								    "without sign or leading zero");
					break;
				}
				if (*p == '-') {
					p++;
					b = device_index(&p);
					if (b < 0) {
						rc = device_expr_fail(expr, "holds a range whose end is not a number of 1 to 4 "
									    "digits without sign or leading zero");
						break;
					}
					if (b < a) {
						rc = device_expr_fail(expr, "holds a range that ends before it starts");
						break;
					}
				}
				if (a <= last) {
					rc = device_expr_fail(expr, "lists its indices out of order or twice");
					break;
				}
				last = b;
				for (long i = a; !rc && !dup && i <= b; i++) {
					if (++n > GPUSHARE_PLAN_DEVICE_FILES_MAX) {
						rc = device_expr_fail(expr, "names too many files");
						break;
					}
					snprintf(name, sizeof(name), "%.*s%ld", (int)plen, s, i);
					rc = device_name_add(&names, name, &dup);
				}
				if (rc || dup || *p != ',')
					break;
				p++;
			}
			if (!rc && !dup && *p != ']')
				rc = device_expr_fail(expr, "has a '[' without its ']', or text inside it that is not "
							    "indices and ranges");
			plen = (size_t)(p + 1 - s);
		}
		if (!rc && dup)
			rc = device_expr_fail(expr, "names a file twice");
		if (!rc && n > GPUSHARE_PLAN_DEVICE_FILES_MAX)
			rc = device_expr_fail(expr, "names too many files");
		if (rc)
			break;
		s += plen;
		if (!*s)
			break;
		if (*s != ',' || !s[1]) {
			rc = device_expr_fail(expr, "has text after a ']', or an empty name after a ','");
			break;
		}
		s++;
	}
	gpushare_buf_release(&names);
	return rc ? rc : (int)n;
}

/* The device files of G GPUs: "/dev/nvidia0" or "/dev/nvidia[0-3]", or
 * --device-file, which must be a device-file expression naming G files. */
static int device_files(const struct gpushare_plan_options *o, char *out, size_t len)
{
	int g = o->gpus_per_node > 0 ? o->gpus_per_node : 1;
	int n;

	if (!o->device_file) {
		if (g > 1)
			snprintf(out, len, "/dev/nvidia[0-%d]", g - 1);
		else
			snprintf(out, len, "/dev/nvidia0");
		return GPUSHARE_OK;
	}
	if (!gpushare_slurm_value_ok(o->device_file))
		return gpushare_fail(GPUSHARE_E_INVAL, "Slurm value of File '%.80s' cannot be written: %s", o->device_file,
				     why_not(o->device_file));
	n = plan_device_files_count(o->device_file);
	if (n < 0)
		return n;
	if ((size_t)snprintf(out, len, "%s", o->device_file) >= len)
		return gpushare_fail(GPUSHARE_E_INVAL, "--device-file '%.40s...' is too long", o->device_file);
	if (n != g)
		return gpushare_fail(GPUSHARE_E_INVAL, "--device-file '%s' names %d file%s for %d GPU%s per node "
				     "(--gpus-per-node)", o->device_file, n, n == 1 ? "" : "s", g, g == 1 ? "" : "s");
	return GPUSHARE_OK;
}

/* Time-slicing is shared as Slurm's shards, MPS as its mps gres. */
static bool shards(const struct gpushare_plan *p)
{
	return !gpushare_strategy_uses_mps(p->strategy);
}

/* The mps units (percent of one GPU's SMs, Count=100 per GPU) each worker
 * asks for to get the measured share: the runs' own per-client share
 * (mps-split), else the even split 100/K (mps without limits). */
static int mps_units_per_worker(const struct gpushare_plan *p)
{
	int u = p->thread_percentage >= 1 ? p->thread_percentage : 100 / p->workers;

	return u < 1 ? 1 : u;
}

/* The share gres of G GPUs: K shards or 100 mps units per GPU. */
static int share_count(const struct gpushare_plan *p, int g)
{
	return shards(p) ? p->workers * g : 100 * g;
}

/* The one check of a word that reaches a shell script or an environment
 * file: one a shell, docker --env-file and systemd all read as it is (no
 * quoting needed): letters, digits and _ . / : = , + @ -. */
static bool shell_word_ok(const char *v)
{
	if (!v || !*v)
		return false;
	for (const unsigned char *s = (const unsigned char *)v; *s; s++) {
		if (!isalnum(*s) && !strchr("_./:=,+@-", *s))
			return false;
	}
	return true;
}

static int shell_word_check(const char *what, const char *v)
{
	if (!shell_word_ok(v))
		return gpushare_fail(GPUSHARE_E_INVAL, "%s '%.80s' would need quoting: use letters, digits and _./:=,+@- only",
				     what, v ? v : "");
	return GPUSHARE_OK;
}

/* A script's start: its interpreter line (shell) and the plan's head. */
static int script_start(struct gpushare_buf *b, const char *shell, const char *head)
{
	int rc = gpushare_buf_addf(b, "#!%s\n", shell);

	if (!rc)
		rc = gpushare_buf_add(b, head, strlen(head));
	return rc;
}

#define HOOK_PROLOG "gpushare-prolog.sh"
#define HOOK_EPILOG "gpushare-epilog.sh"

/* Where the hooks are installed and what they run. */
struct hooks {
	char prolog[GPUSHARE_PLAN_DEVICE_FILE_MAX + 32], epilog[GPUSHARE_PLAN_DEVICE_FILE_MAX + 32];
	const char *gpushare;
};

static int hooks_of(const struct gpushare_plan_options *o, struct hooks *h)
{
	const char *dir = o->hook_dir ? o->hook_dir : GPUSHARE_PLAN_HOOK_DIR;
	int rc;

	h->gpushare = o->gpushare_path ? o->gpushare_path : GPUSHARE_PLAN_GPUSHARE_PATH;
	if (dir[0] != '/' || strlen(dir) > GPUSHARE_PLAN_DEVICE_FILE_MAX)
		return gpushare_fail(GPUSHARE_E_INVAL, "--hook-dir '%.80s' is not an absolute path of at most %d bytes", dir,
				     GPUSHARE_PLAN_DEVICE_FILE_MAX);
	if (h->gpushare[0] != '/')
		return gpushare_fail(GPUSHARE_E_INVAL, "--gpushare-path '%.80s' is not an absolute path (slurmd runs the "
				     "hooks with no PATH)", h->gpushare);
	rc = shell_word_check("--gpushare-path", h->gpushare);
	if (!rc)
		rc = shell_word_check("--hook-dir", dir);
	snprintf(h->prolog, sizeof(h->prolog), "%s%s" HOOK_PROLOG, dir, dir[strlen(dir) - 1] == '/' ? "" : "/");
	snprintf(h->epilog, sizeof(h->epilog), "%s%s" HOOK_EPILOG, dir, dir[strlen(dir) - 1] == '/' ? "" : "/");
	return rc;
}

static int gres_conf(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
		     const char *nodes, struct gpushare_buf *b)
{
	bool shard = shards(p);
	int g = o->gpus_per_node;
	char files[512], count[32];
	struct gpushare_slurm_kv gpu[4], share[5];
	size_t n = 0;
	int rc;

	rc = device_files(o, files, sizeof(files));
	if (!rc)
		rc = gpushare_buf_add(b, head, strlen(head));
	if (!rc)
		rc = plan_comment(b, shard ? "\ngres.conf: each GPU as K shards; a job asking --gres=shard:1 gets one,\n"
					     "and K such jobs run on one GPU at once (time-sliced, as measured)."
					   : "\ngres.conf: each GPU as 100 mps units (percent of its SMs) for jobs that ask\n"
					     "--gres=mps:N under the MPS daemon gpushare slurm prolog starts (job-mps.sh);\n"
					     "job.sh takes a whole GPU instead and runs its own MPS daemon (gpushare farm).");
	if (!rc && g > 1)
		rc = plan_comment(b, "Flags=all_sharing: jobs of the shared gres go to every GPU of the node (Slurm's\n"
				     "default for a shared gres, one_sharing, puts them all on one).");
	if (rc)
		return rc;
	gpu[n++] = (struct gpushare_slurm_kv){ "NodeName", nodes };
	gpu[n++] = (struct gpushare_slurm_kv){ "Name", "gpu" };
	if (p->gres_type[0])
		gpu[n++] = (struct gpushare_slurm_kv){ "Type", p->gres_type };
	gpu[n++] = (struct gpushare_slurm_kv){ "File", files };
	rc = gpushare_slurm_line(b, gpu, n);
	if (rc)
		return rc;
	snprintf(count, sizeof(count), "%d", share_count(p, g));
	n = 0;
	share[n++] = (struct gpushare_slurm_kv){ "NodeName", nodes };
	share[n++] = (struct gpushare_slurm_kv){ "Name", shard ? "shard" : "mps" };
	share[n++] = (struct gpushare_slurm_kv){ "Count", count };
	share[n++] = (struct gpushare_slurm_kv){ "File", files };
	if (g > 1)
		share[n++] = (struct gpushare_slurm_kv){ "Flags", "all_sharing" };
	return gpushare_slurm_line(b, share, n);
}

static void slurm_keys_of(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const struct hooks *h,
			  struct slurm_keys *k)
{
	bool shard = shards(p);
	int g = o->gpus_per_node;

	memset(k, 0, sizeof(*k));
	snprintf(k->gres_types, sizeof(k->gres_types), "gpu,%s", shard ? "shard" : "mps");
	if (p->gres_type[0])
		snprintf(k->gres, sizeof(k->gres), "gpu:%s:%d,%s:%d", p->gres_type, g, shard ? "shard" : "mps",
			 share_count(p, g));
	else
		snprintf(k->gres, sizeof(k->gres), "gpu:%d,%s:%d", g, shard ? "shard" : "mps", share_count(p, g));
	if (!shard) {
		k->prolog = h->prolog;
		k->epilog = h->epilog;
		k->prolog_flags = "Alloc";
	}
}

static int slurm_conf_fragment(const struct slurm_keys *k, const char *head, const char *nodes, struct gpushare_buf *b)
{
	struct gpushare_buf t = { 0 };
	int rc;

	/* Gres= is checked as a Slurm value although it is written in a comment. */
	rc = gpushare_slurm_line(&t, (struct gpushare_slurm_kv[]){ { "NodeName", nodes }, { "Gres", k->gres } }, 2);
	gpushare_buf_release(&t);
	if (!rc)
		rc = gpushare_buf_add(b, head, strlen(head));
	if (!rc)
		rc = plan_comment(b, "\nslurm.conf: the lines to add. The nodes keep their one NodeName line: add the\n"
				     "Gres= below to it (a second NodeName line for a node stops slurmctld and slurmd:\n"
				     "\"Duplicated NodeHostName\"), or let gpushare merge it all:\n"
				     "  gpushare plan DIR --for slurm --slurm-conf /etc/slurm/slurm.conf --out DIR2");
	if (!rc)
		rc = gpushare_buf_addf(b, "#   NodeName=%s ... Gres=%s\n", nodes, k->gres);
	if (!rc)
		rc = gpushare_slurm_line(b, &(struct gpushare_slurm_kv){ "GresTypes", k->gres_types }, 1);
	if (!rc && k->prolog)
		rc = plan_comment(b, "The hooks: one MPS daemon per GPU and user for gres/mps jobs, started when the\n"
				     "job is allocated (PrologFlags=Alloc), stopped after its last job.");
	if (!rc && k->prolog)
		rc = gpushare_slurm_line(b, &(struct gpushare_slurm_kv){ "Prolog", k->prolog }, 1);
	if (!rc && k->epilog)
		rc = gpushare_slurm_line(b, &(struct gpushare_slurm_kv){ "Epilog", k->epilog }, 1);
	if (!rc && k->prolog_flags)
		rc = gpushare_slurm_line(b, &(struct gpushare_slurm_kv){ "PrologFlags", k->prolog_flags }, 1);
	return rc;
}

/* The job script: K array elements of one shard each (timeslice), or one
 * job per GPU running K slots under gpushare's own MPS daemon. */
static int job_script(const struct gpushare_plan *p, const char *head, struct gpushare_buf *b)
{
	bool shard = shards(p);
	const char *s = gpushare_strategy_name(p->strategy);
	int k = p->workers, rc;

	rc = shell_word_check("the strategy", s);
	if (!rc)
		rc = script_start(b, "/bin/bash", head);
	if (rc)
		return rc;
	if (shard) {
		rc = plan_comment(b, "\nK array elements, each on one shard: K of them share a GPU. Each element runs\n"
				     "its share of the job list (gpushare farm reads SLURM_ARRAY_TASK_*). To resume,\n"
				     "resubmit with the same FARM_DIR (the default names the job id, which changes).\n"
				     "  sbatch job.sh JOBFILE [FARM_DIR]");
		if (!rc)
			rc = gpushare_buf_addf(b,
					       "#SBATCH --job-name=gpushare-shard\n"
					       "#SBATCH --array=0-%d\n"
					       "#SBATCH --ntasks=1\n"
					       "#SBATCH --gres=shard:1\n"
					       "set -euo pipefail\n"
					       "JOBS=$(realpath \"${1:?usage: sbatch job.sh JOBFILE [FARM_DIR]}\")\n"
					       "FARM_DIR=$(realpath -m \"${2:-farm-${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}}\")\n"
					       "GPUSHARE=${GPUSHARE:-gpushare}\n"
					       "d=$FARM_DIR/shard-${SLURM_ARRAY_TASK_ID:-0}\n"
					       "mkdir -p \"$FARM_DIR\"\n"
					       "if [ -e \"$d/journal.jsonl\" ]; then\n"
					       "\texec \"$GPUSHARE\" farm --resume \"$d\" --slots 1 --strategy %s \"$JOBS\"\n"
					       "else\n"
					       "\texec \"$GPUSHARE\" farm --dir \"$d\" --slots 1 --strategy %s \"$JOBS\"\n"
					       "fi\n",
					       k - 1, s, s);
		return rc;
	}
	rc = plan_comment(b, "\nOne job per GPU: gpushare farm runs K jobs at once on it under its own MPS\n"
			     "daemon. To resume, resubmit with the same FARM_DIR (the default names the job\n"
			     "id, which changes).\n"
			     "  sbatch job.sh JOBFILE [FARM_DIR]");
	if (!rc)
		rc = gpushare_buf_addf(b,
				       "#SBATCH --job-name=gpushare-%s\n"
				       "#SBATCH --ntasks=1\n"
				       "#SBATCH --gres=gpu:1\n"
				       "set -euo pipefail\n"
				       "JOBS=$(realpath \"${1:?usage: sbatch job.sh JOBFILE [FARM_DIR]}\")\n"
				       "d=$(realpath -m \"${2:-farm-$SLURM_JOB_ID}\")\n"
				       "GPUSHARE=${GPUSHARE:-gpushare}\n"
				       "if [ -e \"$d/journal.jsonl\" ]; then\n"
				       "\texec \"$GPUSHARE\" farm --resume \"$d\" --slots %d --strategy %s \"$JOBS\"\n"
				       "else\n"
				       "\texec \"$GPUSHARE\" farm --dir \"$d\" --slots %d --strategy %s \"$JOBS\"\n"
				       "fi\n",
				       s, k, s, k, s);
	return rc;
}

/* The gres/mps way: G array elements (one per GPU of a node), each a job
 * of K workers asking K x U mps units, under the MPS daemon the prolog
 * started for its GPU and user; gpushare farm splits the job's share among
 * its K slots (mps-split: U each, as measured). */
static int job_script_mps(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
			  struct gpushare_buf *b)
{
	const char *s = gpushare_strategy_name(p->strategy);
	int k = p->workers, u = mps_units_per_worker(p), g = o->gpus_per_node, units = k * u, rc;
	char text[640];

	if (units > 100)
		units = 100;
	rc = shell_word_check("the strategy", s);
	if (!rc)
		rc = script_start(b, "/bin/bash", head);
	if (rc)
		return rc;
	snprintf(text, sizeof(text),
		 "\nThe gres/mps way: %d array element%s (one per GPU of a node), each a job of\n"
		 "%d workers under the MPS daemon gpushare slurm prolog started for its GPU and\n"
		 "user. Each worker gets %d mps units (%d%% of the GPU's SMs, as measured), so a\n"
		 "job asks --gres=mps:%d; Flags=all_sharing in gres.conf spreads the jobs over\n"
		 "the GPUs. To resume, resubmit with the same FARM_DIR.\n"
		 "  sbatch job-mps.sh JOBFILE [FARM_DIR]",
		 g, g == 1 ? "" : "s", k, u, u, units);
	rc = plan_comment(b, text);
	if (!rc)
		rc = gpushare_buf_addf(b,
				       "#SBATCH --job-name=gpushare-mps\n"
				       "#SBATCH --array=0-%d\n"
				       "#SBATCH --ntasks=1\n"
				       "#SBATCH --gres=mps:%d\n"
				       "set -euo pipefail\n"
				       "JOBS=$(realpath \"${1:?usage: sbatch job-mps.sh JOBFILE [FARM_DIR]}\")\n"
				       "FARM_DIR=$(realpath -m \"${2:-farm-${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}}\")\n"
				       "GPUSHARE=${GPUSHARE:-gpushare}\n"
				       "d=$FARM_DIR/mps-${SLURM_ARRAY_TASK_ID:-0}\n"
				       "mkdir -p \"$FARM_DIR\"\n"
				       "if [ -e \"$d/journal.jsonl\" ]; then\n"
				       "\texec \"$GPUSHARE\" farm --resume \"$d\" --slots %d --strategy %s \"$JOBS\"\n"
				       "else\n"
				       "\texec \"$GPUSHARE\" farm --dir \"$d\" --slots %d --strategy %s \"$JOBS\"\n"
				       "fi\n",
				       g - 1, units, k, s, k, s);
	return rc;
}

/* A hook: Slurm's Prolog=/Epilog= name a program, without arguments. */
static int hook_script(const struct hooks *h, const char *which, const char *head, struct gpushare_buf *b)
{
	char text[256];
	int rc;

	snprintf(text, sizeof(text), "\nslurmd runs this as root (%s= in slurm.conf); install it executable at the\n"
				     "path slurm.conf names, on every node.", which);
	rc = script_start(b, "/bin/sh", head);
	if (!rc)
		rc = plan_comment(b, text);
	if (!rc)
		rc = gpushare_buf_addf(b, "exec %s slurm %s\n", h->gpushare, which[0] == 'P' ? "prolog" : "epilog");
	return rc;
}

int plan_render_slurm(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
		      struct gpushare_plan_output *out)
{
	struct gpushare_buf b = { 0 }, d = { 0 };
	const char *nodes = o->nodes ? o->nodes : p->host;
	struct slurm_keys k;
	struct hooks h;
	int rc;

	if (!nodes || !*nodes)
		return gpushare_fail(GPUSHARE_E_INVAL, "the results name no host: give the node names with --nodes");
	if (o->gpus_per_node < 1)
		return gpushare_fail(GPUSHARE_E_INVAL, "--gpus-per-node must be at least 1");
	rc = hooks_of(o, &h);
	if (rc)
		return rc;
	slurm_keys_of(o, p, &h, &k);
	rc = gres_conf(o, p, head, nodes, &b);
	if (!rc)
		rc = plan_output_add(out, "gres.conf", &b);
	if (!rc && o->slurm_conf_text) {
		rc = plan_slurm_conf_merged(o, &k, head, nodes, &b, &d);
		if (!rc)
			rc = plan_output_add(out, "slurm.conf", &b);
		if (!rc)
			rc = plan_output_add(out, "slurm.conf.diff", &d);
	} else if (!rc) {
		rc = slurm_conf_fragment(&k, head, nodes, &b);
		if (!rc)
			rc = plan_output_add(out, "slurm.conf", &b);
	}
	if (!rc)
		rc = job_script(p, head, &b);
	if (!rc)
		rc = plan_output_add(out, "job.sh", &b);
	if (!rc && !shards(p)) {
		rc = job_script_mps(o, p, head, &b);
		if (!rc)
			rc = plan_output_add(out, "job-mps.sh", &b);
		if (!rc)
			rc = hook_script(&h, "Prolog", head, &b);
		if (!rc)
			rc = plan_output_add(out, HOOK_PROLOG, &b);
		if (!rc)
			rc = hook_script(&h, "Epilog", head, &b);
		if (!rc)
			rc = plan_output_add(out, HOOK_EPILOG, &b);
	}
	gpushare_buf_release(&b);
	gpushare_buf_release(&d);
	return rc;
}

static int env_line(struct gpushare_buf *b, const char *key, const char *value)
{
	int rc = shell_word_check(key, value);

	return rc ? rc : gpushare_buf_addf(b, "%s=%s\n", key, value);
}

int plan_render_env(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
		    struct gpushare_plan_output *out)
{
	struct gpushare_buf b = { 0 };
	bool mps = gpushare_strategy_uses_mps(p->strategy);
	char v[64];
	int rc;

	rc = gpushare_buf_add(&b, head, strlen(head));
	if (!rc && !mps)
		rc = gpushare_buf_addf(&b, "#\n# Time-slicing needs no variable: run %d processes per GPU with no MPS daemon\n"
					   "# answering (leave CUDA_MPS_PIPE_DIRECTORY unset).\n", p->workers);
	else if (!rc)
		rc = gpushare_buf_addf(&b, "#\n# For each of the %d MPS clients per GPU (a container's env_file, a Ray actor's\n"
					   "# runtime_env env_vars, or 'set -a; . FILE' in a batch script).\n", p->workers);
	if (!rc && o->mps_pipe_dir && mps)
		rc = env_line(&b, "CUDA_MPS_PIPE_DIRECTORY", o->mps_pipe_dir);
	if (!rc && p->thread_percentage) {
		snprintf(v, sizeof(v), "%d", p->thread_percentage);
		rc = env_line(&b, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", v);
	}
	if (!rc && p->mem_limit_bytes) {
		/* Per device ordinal as the client sees it: device 0. In MiB. */
		snprintf(v, sizeof(v), "0=%lluM", (unsigned long long)((p->mem_limit_bytes + (1 << 20) - 1) >> 20));
		rc = env_line(&b, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", v);
	}
	if (!rc)
		rc = plan_output_add(out, "gpushare.env", &b);
	gpushare_buf_release(&b);
	return rc;
}
