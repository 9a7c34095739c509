/*
 * gpushare plan --for mig-parted: the MIG placement rules of the GPUs
 * MIG runs on, as data. A GPU's memory is eight slices; each profile takes
 * a number of them and may start only at some (NVIDIA's MIG user guide,
 * "A100/H100/H200 MIG profiles" and their placement tables), so a layout
 * of several instances fits only in some arrangements: two 3g.40gb fit
 * (slices 0-3 and 4-7), three do not, and mig-parted, which clears the GPU
 * before it creates the instances, would leave it empty. The device IDs
 * are the PCI ones mig-parted's device-filter matches (NVIDIA/mig-parted
 * deployments/systemd/config-default.yaml lists them per model).
 */
#include <stdio.h>
#include <string.h>

#include "gpushare/buf.h"
#include "gpushare/gpushare.h"
#include "plan_internal.h"

struct mig_profile {
	const char *name;
	unsigned size;          /* memory slices (of 8) */
	unsigned starts;        /* bit i: may start at slice i */
	unsigned compute;       /* compute slices (of 7) */
	unsigned max;           /* most per GPU (0: no other limit) */
};

struct mig_gpu {
	const char *model;                  /* for messages */
	const char *names[3];               /* words of the NVML name (plan_model_matches) */
	const char *device_ids[4];          /* mig-parted device-filter values */
	struct mig_profile profiles[8];
};

/* The placement of one family's profiles; a macro over the memory sizes
 * each family's names carry. */
#define MIG_FAMILY(g1, g1x2, g2, g3, g4, g7)                                                               \
	{ { g1, 1, 0x7f, 1, 0 }, { g1 "+me", 1, 0x7f, 1, 1 }, { g1x2, 2, 0x55, 1, 0 }, { g2, 2, 0x15, 2, 0 }, \
	  { g3, 4, 0x11, 3, 0 }, { g4, 4, 0x01, 4, 0 }, { g7, 8, 0x01, 7, 0 } }

static const struct mig_gpu mig_gpus[] = {
	{ "H100 80GB", { "H100 80GB", "H100 PCIe" }, { "0x233010DE", "0x233110DE" },
	  MIG_FAMILY("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb") },
	{ "H100 NVL", { "H100 NVL" }, { "0x232110DE" },
	  MIG_FAMILY("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb") },
	{ "H200", { "H200" }, { "0x233510DE", "0x233B10DE" },
	  MIG_FAMILY("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb") },
	{ "A100 80GB", { "A100-SXM4-80GB", "A100 80GB" }, { "0x20B210DE", "0x20B510DE" },
	  MIG_FAMILY("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb") },
	{ "A100 40GB", { "A100-SXM4-40GB", "A100-PCIE-40GB", "A100 40GB" }, { "0x20B010DE", "0x20B110DE", "0x20F110DE" },
	  MIG_FAMILY("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb") },
};

static const struct mig_gpu *gpu_of(const char *name)
{
	for (size_t i = 0; name && i < sizeof(mig_gpus) / sizeof(mig_gpus[0]); i++) {
		for (size_t k = 0; k < 3 && mig_gpus[i].names[k]; k++) {
			if (plan_model_matches(name, mig_gpus[i].names[k]))
				return &mig_gpus[i];
		}
	}
	return NULL;
}

static const struct mig_profile *profile_of(const struct mig_gpu *g, const char *name)
{
	for (size_t i = 0; i < 8 && g->profiles[i].name; i++) {
		if (!strcmp(g->profiles[i].name, name))
			return &g->profiles[i];
	}
	return NULL;
}

/* Whether instances inst[i..n) fit into the free slices (bit set: taken). */
static bool place(const struct mig_profile *const *inst, size_t i, size_t n, unsigned taken)
{
	if (i == n)
		return true;
	for (unsigned s = 0; s < 8; s++) {
		unsigned mask = ((1u << inst[i]->size) - 1) << s;

		if (!(inst[i]->starts & (1u << s)) || s + inst[i]->size > 8 || (taken & mask))
			continue;
		if (place(inst, i + 1, n, taken | mask))
			return true;
	}
	return false;
}

int plan_mig_check(const char *gpu_name, const struct plan_mig_layout *l, const char *const **device_ids)
{
	const struct mig_profile *inst[16];
	const struct mig_gpu *g = gpu_of(gpu_name);
	unsigned compute = 0;
	size_t n = 0;

	*device_ids = NULL;
	if (!g)
		return 0;
	for (size_t i = 0; i < l->n; i++) {
		const struct mig_profile *pr = profile_of(g, l->profile[i]);

		if (!pr)
			return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "the %s has no MIG profile '%s' (its 1g profile is %s)",
					     g->model, l->profile[i], g->profiles[0].name);
		if (pr->max && (unsigned)l->count[i] > pr->max)
			return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "the %s takes at most %u %s instance%s, not %d", g->model,
					     pr->max, pr->name, pr->max == 1 ? "" : "s", l->count[i]);
		for (int k = 0; k < l->count[i]; k++) {
			if (n == sizeof(inst) / sizeof(inst[0]))
				return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "the %s has at most 7 MIG instances, not %d or more",
						     g->model, (int)n + 1);
			inst[n++] = pr;
			compute += pr->compute;
		}
	}
	/* The largest first: the search stays short. */
	for (size_t i = 1; i < n; i++) {
		for (size_t k = i; k > 0 && inst[k]->size > inst[k - 1]->size; k--) {
			const struct mig_profile *t = inst[k];

			inst[k] = inst[k - 1];
			inst[k - 1] = t;
		}
	}
	if (compute > 7 || !place(inst, 0, n, 0)) {
		char text[160] = "";

		for (size_t i = 0; i < l->n; i++)
			gpushare_str_catf(text, sizeof(text), "%s%s x%d", i ? " + " : "", l->profile[i], l->count[i]);
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
				     "the layout %s cannot be placed on one %s: %s (its MIG placement rules), and "
				     "mig-parted would clear the GPU, then fail", text, g->model,
				     compute > 7 ? "it needs more than the 7 compute slices"
						 : "its instances do not fit the 8 memory slices at the starts each profile may use");
	}
	*device_ids = g->device_ids;
	return 0;
}
