/*
 * Inside lib/plan/, in three tiers that call only downwards:
 *   plan.c        the decision, the target table, the comment block, JSON;
 *   plan_slurm.c  the targets' writers: Slurm's key=value lines only through
 *   plan_yaml.c   gpushare_slurm_line(), YAML only through libyaml's emitter;
 *   plan_write.c  what every writer shares: comment lines (plan_comment
 *                 prefixes every line with "# "), the output's parts, GPU
 *                 model names;
 *   plan_mig.c    the MIG placement rules (a data table), mig-parted's.
 * A writer gets the comment block ready made (`head`), so it needs nothing
 * of the decision's file. A writer is called only for a plan whose strategy
 * its target expresses (plan.c checks it by the strategy's capabilities).
 */
#ifndef GPUSHARE_PLAN_INTERNAL_H
#define GPUSHARE_PLAN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "gpushare/buf.h"
#include "gpushare/plan.h"

/* One Slurm key=value pair. */
struct gpushare_slurm_kv {
	const char *key;
	const char *value;
};

/* Whether Slurm's configuration parser reads value back as it is: not
 * empty, printable ASCII, no white space, no '#' (a comment), no quotes,
 * backslash or '='. */
bool gpushare_slurm_value_ok(const char *value);

/* Append one line "K1=V1 K2=V2 ..." to b. A key must be letters only, a
 * value gpushare_slurm_value_ok(): else GPUSHARE_E_INVAL naming the key
 * and why, and b is unchanged. */
int gpushare_slurm_line(struct gpushare_buf *b, const struct gpushare_slurm_kv *kv, size_t n);

/* The device-file expression of gres File= (--device-file), read by one
 * strict parser: a comma list of absolute paths of letters, digits and
 * "/_-.", each plain ("/dev/nvidia0") or with one list of indices at its end
 * ("/dev/nvidia[0-3]", "/dev/nvidia[0,2-3]"): decimal, 1 to 4 digits, no
 * sign or leading zero, ranges a-b with a <= b, ascending, no file named
 * twice, at most GPUSHARE_PLAN_DEVICE_FILES_MAX files of at most
 * GPUSHARE_PLAN_DEVICE_FILE_MAX bytes before the index. Returns the number
 * of files, or GPUSHARE_E_INVAL naming what is wrong. */
#define GPUSHARE_PLAN_DEVICE_FILES_MAX 128
#define GPUSHARE_PLAN_DEVICE_FILE_MAX 255
int plan_device_files_count(const char *expr);

/* Append text as comment lines: "# " and each line of text (empty lines
 * "#"). The one sanitiser of text that reaches a comment of every format
 * plan writes: invalid UTF-8 becomes U+FFFD; C0 and C1 controls other than
 * '\n', DEL, U+2028/U+2029, U+FEFF and U+FFFE/U+FFFF become spaces (a YAML
 * reader ends a line at some and refuses the others anywhere in a stream);
 * a line ending in a backslash gets a space after it (Slurm would continue
 * the line). Scalars go through libyaml's emitter, which escapes them. */
int plan_comment(struct gpushare_buf *b, const char *text);

/* The targets' writers. head: the comment block every output begins with
 * (what was measured, on which GPU, the gains with their intervals, the
 * warnings, the command that measured it), already in comment lines. */
int plan_render_slurm(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
		      struct gpushare_plan_output *out);

/* What slurm.conf needs: its keys (GresTypes, and for MPS the hooks), and
 * the Gres= of the nodes' one NodeName line. */
struct slurm_keys {
	char gres_types[32], gres[160];
	const char *prolog, *epilog, *prolog_flags;     /* NULL: none (shards) */
};

/* --slurm-conf: o->slurm_conf_text with k merged in (plan_slurm_merge.c):
 * *out the merged file, *diff the change; GPUSHARE_E_INVAL naming why it
 * cannot be merged. */
int plan_slurm_conf_merged(const struct gpushare_plan_options *o, const struct slurm_keys *k, const char *head,
			   const char *nodes, struct gpushare_buf *out, struct gpushare_buf *diff);
int plan_render_env(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
		    struct gpushare_plan_output *out);
int plan_render_device_plugin(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
			      struct gpushare_plan_output *out);
int plan_render_dra(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
		    struct gpushare_plan_output *out);
int plan_render_mig_parted(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
			   struct gpushare_plan_output *out);

/* Hand buffer b over as part `name` of out. */
int plan_output_add(struct gpushare_plan_output *out, const char *name, struct gpushare_buf *b);

/* Case-insensitive: whether the GPU called name is the model `model`:
 * equal, or model is a word of name ("H100" of "NVIDIA H100 80GB HBM3",
 * "A100" or "A100-SXM4-40GB" of "NVIDIA A100-SXM4-40GB"; words are separated
 * by spaces and '-'). */
bool plan_model_matches(const char *name, const char *model);

/* A MIG layout: count[i] instances of profile[i] per GPU. */
struct plan_mig_layout {
	const char *profile[8];
	int count[8];
	size_t n;
};

/* Check layout l against the MIG placement rules of the GPU called
 * gpu_name (plan_mig.c's table: A100, H100, H200): GPUSHARE_E_UNSUPPORTED
 * with the reason when a profile is not the GPU's or the instances cannot
 * be placed together. *device_ids: the GPU's PCI device IDs for
 * mig-parted's device-filter (NULL-terminated), or NULL when the table
 * does not know the GPU (then nothing is checked). */
int plan_mig_check(const char *gpu_name, const struct plan_mig_layout *l, const char *const **device_ids);

/* A Kubernetes quantity of bytes in binary units ("10Gi", "512Mi", "1536Ki"). */
void plan_quantity(unsigned long long bytes, char *buf, size_t len);

#endif
