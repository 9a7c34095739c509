/*
 * Which GPUs a run uses: the --gpus value against the node's inventory and
 * CUDA_VISIBLE_DEVICES (gpu_select.h). bench, farm and exec choose their
 * GPUs here.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "gpu_select.h"
#include "items.h"

/* ---- GPUs ---- */

/* Find item (an index or a UUID or unique UUID prefix) in inv. Returns its
 * position, or <0 with the failure recorded; `what` names the source. */
static int find_gpu(const struct gpushare_gpu_ref *inv, size_t n_inv, const char *item, size_t len,
		    const char *what)
{
	char buf[128];
	int found = -1;

	if (len >= sizeof(buf))
		return gpushare_fail(GPUSHARE_E_INVAL, "%s: item too long", what);
	memcpy(buf, item, len);
	buf[len] = '\0';
	if (buf[0] >= '0' && buf[0] <= '9') {
		char *end;
		unsigned long idx;

		errno = 0;
		idx = strtoul(buf, &end, 10);
		if (errno || *end)
			return gpushare_fail(GPUSHARE_E_INVAL, "%s: '%s' is neither a GPU index nor a UUID", what, buf);
		for (size_t i = 0; i < n_inv; i++)
			if (inv[i].index == idx)
				return (int)i;
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "%s: there is no GPU %s", what, buf);
	}
	for (size_t i = 0; i < n_inv; i++) {
		if (!strcmp(inv[i].uuid, buf))
			return (int)i;
		if (len >= 8 && !strncmp(inv[i].uuid, buf, len)) {
			if (found >= 0)
				return gpushare_fail(GPUSHARE_E_INVAL, "%s: '%s' matches more than one GPU", what, buf);
			found = (int)i;
		}
	}
	if (found < 0)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "%s: there is no GPU '%s'", what, buf);
	return found;
}

struct gpu_list {
	const struct gpushare_gpu_ref *inv;
	size_t n_inv;
	const char *what;
	int *pos;
	size_t *n;
};

static int gpu_item(void *arg, const char *p, size_t len)
{
	struct gpu_list *l = arg;
	int k = find_gpu(l->inv, l->n_inv, p, len, l->what);

	if (k < 0)
		return k;
	for (size_t i = 0; i < *l->n; i++)
		if (l->pos[i] == k)
			return gpushare_fail(GPUSHARE_E_INVAL, "%s names GPU %u (%s) twice", l->what,
					     l->inv[k].index, l->inv[k].uuid);
	if (*l->n == l->n_inv)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s names more GPUs than there are", l->what);
	l->pos[(*l->n)++] = k;
	return GPUSHARE_OK;
}

/* Parse a comma-separated list into positions of inv; no duplicates. */
static int parse_list(const struct gpushare_gpu_ref *inv, size_t n_inv, const char *list, const char *what,
		      int *pos, size_t *n)
{
	struct gpu_list l = { inv, n_inv, what, pos, n };

	*n = 0;
	return gpushare_each_item_named(what, list, ',', gpu_item, &l);
}

int gpushare_gpu_select(const struct gpushare_gpu_ref *inv, size_t n_inv, const char *spec,
			 gpushare_getenv_fn getenv_fn, void *ctx, struct gpushare_gpu_ref *out, size_t *n_out)
{
	const char *cvd = getenv_fn(ctx, "CUDA_VISIBLE_DEVICES");
	int *allowed = NULL, *chosen = NULL;
	size_t n_allowed = 0, n_chosen = 0;
	char what[160];
	int rc = GPUSHARE_OK;

	*n_out = 0;
	if (n_inv == 0)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "no GPU found");
	allowed = calloc(n_inv, sizeof(int));
	chosen = calloc(n_inv, sizeof(int));
	if (!allowed || !chosen) {
		rc = gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
		goto out;
	}
	if (cvd) {
		snprintf(what, sizeof(what), "CUDA_VISIBLE_DEVICES='%.120s'", cvd);
		if (!*cvd || !strcmp(cvd, "NoDevFiles") || !strncmp(cvd, "-1", 2)) {
			rc = gpushare_fail(GPUSHARE_E_NOT_FOUND, "%s allows no GPU", what);
			goto out;
		}
		if ((rc = parse_list(inv, n_inv, cvd, what, allowed, &n_allowed)))
			goto out;
	} else {
		for (size_t i = 0; i < n_inv; i++)
			allowed[n_allowed++] = (int)i;
	}
	if (!spec || !strcmp(spec, "all")) {
		memcpy(chosen, allowed, n_allowed * sizeof(int));
		n_chosen = n_allowed;
	} else {
		char w[160];

		snprintf(w, sizeof(w), "--gpus '%.120s'", spec);
		if ((rc = parse_list(inv, n_inv, spec, w, chosen, &n_chosen)))
			goto out;
		for (size_t i = 0; i < n_chosen; i++) {
			bool ok = false;

			for (size_t k = 0; k < n_allowed; k++)
				ok = ok || allowed[k] == chosen[i];
			if (!ok) {
				rc = gpushare_fail(GPUSHARE_E_INVAL, "--gpus names GPU %u (%s), which %s does not allow",
						   inv[chosen[i]].index, inv[chosen[i]].uuid, what);
				goto out;
			}
		}
	}
	for (size_t i = 0; i < n_chosen; i++)
		out[i] = inv[chosen[i]];
	*n_out = n_chosen;
out:
	free(allowed);
	free(chosen);
	return rc;
}
