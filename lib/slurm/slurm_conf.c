/*
 * A Slurm configuration file as Slurm reads it: its Include lines replaced
 * by the files they name (include/gpushare/slurm.h), and the node's GPU
 * device files from its gres.conf (slurm_conf.h).
 *
 * Slurm's parser (src/common/parse_config.c, _parse_include_directive and
 * s_p_parse_file) takes a line that starts with "include" (any case) and
 * white space as the name of a file to parse in its place; a name that is
 * not absolute is taken from the directory of the file that includes it.
 * Slurm itself follows a loop until it fails; here a loop is refused, and a
 * file that cannot be read is named with the line that includes it.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gpushare/buf.h"
#include "gpushare/files.h"
#include "gpushare/gpushare.h"
#include "gpushare/slurm.h"
#include "slurm_conf.h"

#define CONF_MAX_BYTES (1 << 20)
#define CONF_MAX_DEPTH 16

struct conf_read {
	struct gpushare_buf out;
	char *open[CONF_MAX_DEPTH];   /* the files being read, outermost first (real paths) */
	size_t depth;
};

bool gpushare_slurm_include_line(const char *line, size_t n, char *name, size_t len)
{
	size_t i = 0, w;

	while (i < n && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (n - i < 8 || strncasecmp(line + i, "include", 7) || !isspace((unsigned char)line[i + 7]))
		return false;
	i += 7;
	while (i < n && isspace((unsigned char)line[i]))
		i++;
	for (w = i; w < n && !isspace((unsigned char)line[w]) && line[w] != '#'; w++)
		;
	if (w == i)
		return false;
	snprintf(name, len, "%.*s", (int)(w - i), line + i);
	return true;
}

static int read_one(struct conf_read *c, const char *path, const char *from, unsigned from_line)
{
	char real[PATH_MAX], *data = NULL;
	size_t len = 0;
	unsigned line_no = 0;
	int rc;

	if (c->depth == CONF_MAX_DEPTH)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' line %u: Include '%s' nests more than %d files deep", from,
				     from_line, path, CONF_MAX_DEPTH);
	if (!realpath(path, real)) {
		if (from)
			return gpushare_fail(GPUSHARE_E_IO, "'%s' line %u: Include '%s': %s", from, from_line, path,
					     strerror(errno));
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "'%s': %s", path, strerror(errno));
	}
	for (size_t i = 0; i < c->depth; i++) {
		if (!strcmp(c->open[i], real))
			return gpushare_fail(GPUSHARE_E_INVAL, "'%s' line %u: Include '%s' is a loop: '%s' is already "
					     "being read", from, from_line, path, real);
	}
	if ((rc = gpushare_read_file(path, CONF_MAX_BYTES, &data, &len))) {
		if (from)
			return gpushare_fail(GPUSHARE_E_IO, "'%s' line %u: Include '%s': %s", from, from_line, path,
					     gpushare_errdetail());
		return rc;
	}
	if (!(c->open[c->depth] = strdup(real))) {
		free(data);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	c->depth++;
	for (const char *l = data; *l && !rc;) {
		size_t n = strcspn(l, "\n");
		char name[PATH_MAX], full[PATH_MAX * 2];

		line_no++;
		if (gpushare_slurm_include_line(l, n, name, sizeof(name))) {
			const char *slash = strrchr(path, '/');

			if (name[0] == '/' || !slash)
				snprintf(full, sizeof(full), "%s", name);
			else
				snprintf(full, sizeof(full), "%.*s/%s", (int)(slash - path), path, name);
			rc = read_one(c, full, path, line_no);
		} else {
			rc = gpushare_buf_add(&c->out, l, n);
			if (!rc)
				rc = gpushare_buf_add(&c->out, "\n", 1);
		}
		l += n + (l[n] == '\n');
	}
	c->depth--;
	free(c->open[c->depth]);
	free(data);
	return rc;
}

int gpushare_slurm_conf_read(const char *path, char **text, size_t *len)
{
	struct conf_read c = { 0 };
	int rc = read_one(&c, path, NULL, 0);

	*text = NULL;
	*len = 0;
	if (!rc) {
		*len = c.out.len;
		if (!(*text = gpushare_buf_take(&c.out)))
			rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	gpushare_buf_release(&c.out);
	return rc;
}

/* ---- the node's GPUs in gres.conf (slurm_conf.h) ---- */

struct gres_files {
	struct gpushare_gres_gpu *gpu;
	size_t n, max;
	unsigned mig_parent, mig_caps[8];   /* a MultipleFiles= line's files */
	size_t n_caps;
	bool mig_has_parent;
	const char *node;
	char host[256];
	bool node_match;
};

/* Call fn for each name of a Slurm list: "a,b", "x[0-3,5]y". */
static void expand_list(const char *spec, void (*fn)(const char *name, void *ctx), void *ctx)
{
	char item[256], name[300];

	while (*spec) {
		size_t len = 0;
		int depth = 0;
		const char *lb, *rb;

		while (spec[len] && (depth || spec[len] != ',')) {
			depth += spec[len] == '[' ? 1 : spec[len] == ']' ? -1 : 0;
			len++;
		}
		if (len < sizeof(item)) {
			memcpy(item, spec, len);
			item[len] = '\0';
			lb = strchr(item, '[');
			rb = lb ? strchr(lb, ']') : NULL;
			if (!lb || !rb) {
				fn(item, ctx);
			} else {
				for (const char *r = lb + 1; r < rb;) {
					char *end;
					unsigned long a = strtoul(r, &end, 10), b = a;
					int width = (int)(end - r);

					if (end == r)
						break;
					if (*end == '-')
						b = strtoul(end + 1, &end, 10);
					for (unsigned long v = a; v <= b && v - a < GPUSHARE_GRES_MAX_FILES; v++) {
						snprintf(name, sizeof(name), "%.*s%0*lu%.*s", (int)(lb - item), item, width,
							 v, (int)strlen(rb + 1), rb + 1);
						fn(name, ctx);
					}
					if (*end != ',')
						break;
					r = end + 1;
				}
			}
		}
		spec += len;
		if (*spec == ',')
			spec++;
	}
}

static void match_node(const char *name, void *ctx)
{
	struct gres_files *g = ctx;

	if (!strcmp(name, g->node))
		g->node_match = true;
}

/* The number that ends name (/dev/nvidia2: 2); false when none. */
static bool trailing_number(const char *name, unsigned *v)
{
	size_t len = strlen(name), d = len;

	while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
		d--;
	if (d == len)
		return false;
	*v = (unsigned)strtoul(name + d, NULL, 10);
	return true;
}

/* /dev/nvidiaN is the GPU of minor N (the driver's naming). */
static void add_file(const char *name, void *ctx)
{
	struct gres_files *g = ctx;
	unsigned v;

	if (trailing_number(name, &v) && g->n < g->max)
		g->gpu[g->n++] = (struct gpushare_gres_gpu){ v, -1 };
}

/* A file of a MIG device's MultipleFiles= list: its parent GPU
 * (/dev/nvidiaN) or a capability (/dev/nvidia-caps/nvidia-capC). */
static void add_mig_file(const char *name, void *ctx)
{
	struct gres_files *g = ctx;
	const char *base = strrchr(name, '/');
	unsigned v;

	base = base ? base + 1 : name;
	if (!trailing_number(base, &v))
		return;
	if (!strncmp(base, "nvidia-cap", 10)) {
		if (g->n_caps < sizeof(g->mig_caps) / sizeof(g->mig_caps[0]))
			g->mig_caps[g->n_caps++] = v;
	} else if (strspn(base + 6, "0123456789") == strlen(base + 6) && !strncmp(base, "nvidia", 6)) {
		g->mig_parent = v;
		g->mig_has_parent = true;
	}
}

/* The GPU instance the driver gives capability minor cap of GPU parent:
 * the line "gpu<parent>/gi<G>/access <cap>" of its mig-minors file; -2 none. */
static int mig_instance(unsigned parent, const unsigned *caps, size_t n_caps)
{
	const char *path = getenv("GPUSHARE_MIG_MINORS");
	char line[128];
	int gi = -2;
	FILE *f = fopen(path && *path ? path : "/proc/driver/nvidia-caps/mig-minors", "re");

	if (!f)
		return -2;
	while (gi == -2 && fgets(line, sizeof(line), f)) {
		unsigned gpu, g, minor;
		char what[16];

		if (sscanf(line, "gpu%u/gi%u/%15s %u", &gpu, &g, what, &minor) != 4 || gpu != parent ||
		    strcmp(what, "access"))
			continue;
		for (size_t i = 0; i < n_caps; i++) {
			if (caps[i] == minor)
				gi = (int)g;
		}
	}
	fclose(f);
	return gi;
}

int gpushare_gres_gpus(struct gpushare_gres_gpu *gpus, size_t max, size_t *n)
{
	struct gres_files gf = { .gpu = gpus, .max = max }, *g = &gf;
	const char *conf = getenv("SLURM_CONF"), *slash;
	char path[GPUSHARE_PATH_MAX], *data = NULL, *line, *save = NULL;
	size_t len;
	int rc;

	*n = 0;
	g->node = getenv("SLURMD_NODENAME");
	if (!g->node || !*g->node) {
		memset(g->host, 0, sizeof(g->host));
		if (gethostname(g->host, sizeof(g->host) - 1) != 0)
			return GPUSHARE_OK;
		g->host[strcspn(g->host, ".")] = '\0';
		g->node = g->host;
	}
	if (!conf || !(slash = strrchr(conf, '/')) ||
	    (size_t)snprintf(path, sizeof(path), "%.*s/gres.conf", (int)(slash - conf), conf) >= sizeof(path) ||
	    access(path, F_OK) != 0)
		return GPUSHARE_OK;
	if ((rc = gpushare_slurm_conf_read(path, &data, &len)))
		return rc;
	for (line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *w, *wsave = NULL;
		const char *files = NULL, *multiple = NULL;
		bool gpu = false;

		line[strcspn(line, "#")] = '\0';
		g->node_match = true;
		for (w = strtok_r(line, " \t\r", &wsave); w; w = strtok_r(NULL, " \t\r", &wsave)) {
			if (!strncasecmp(w, "NodeName=", 9)) {
				g->node_match = false;
				expand_list(w + 9, match_node, g);
			} else if (!strncasecmp(w, "Name=", 5)) {
				gpu = !strcmp(w + 5, "gpu");
			} else if (!strncasecmp(w, "File=", 5)) {
				files = w + 5;
			} else if (!strncasecmp(w, "MultipleFiles=", 14)) {
				multiple = w + 14;
			}
		}
		if (gpu && files && g->node_match)
			expand_list(files, add_file, g);
		if (gpu && multiple && g->node_match && g->n < g->max) {
			g->n_caps = 0;
			g->mig_has_parent = false;
			expand_list(multiple, add_mig_file, g);
			if (g->mig_has_parent)
				g->gpu[g->n++] = (struct gpushare_gres_gpu){
					g->mig_parent, g->n_caps ? mig_instance(g->mig_parent, g->mig_caps, g->n_caps) : -1
				};
		}
	}
	free(data);
	*n = g->n;
	return GPUSHARE_OK;
}
