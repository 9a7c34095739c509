/*
 * Built-in workloads: their names, options and defaults. The command line
 * validates options against these tables and the worker executable
 * (gpushare-worker) uses the same tables, so both always agree.
 *
 * Options travel to the worker as "--opt name=value" pairs after validation.
 */
#ifndef GPUSHARE_WORKLOAD_H
#define GPUSHARE_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gpushare_wl_type {
	GPUSHARE_WL_INT,       /* whole number in [min, max] */
	GPUSHARE_WL_CHOICE,    /* one of `choices`, comma separated */
	GPUSHARE_WL_DURATION,  /* gpushare_parse_duration() */
	GPUSHARE_WL_BOOL,      /* on/off, true/false, 1/0, yes/no */
};

struct gpushare_wl_option {
	const char *name;      /* "size" (given as --size on the command line) */
	enum gpushare_wl_type type;
	const char *def;       /* default, as text */
	long min, max;         /* GPUSHARE_WL_INT; GPUSHARE_WL_DURATION: bounds in
				* microseconds when max > 0 */
	const char *choices;   /* GPUSHARE_WL_CHOICE: "fp16,bf16,fp32,tf32" */
	const char *help;
};

#define GPUSHARE_WL_MAX_OPTS 12

struct gpushare_wl_desc {
	const char *name;      /* "matmul" */
	const char *summary;
	bool needs_gpu;        /* false only for spin */
	const struct gpushare_wl_option *opts;
	size_t n_opts;
};

/* All built-in workloads, in display order. */
size_t gpushare_workloads(const struct gpushare_wl_desc **list);
const struct gpushare_wl_desc *gpushare_workload_find(const char *name);

/* A workload with its option values (defaults filled in). */
struct gpushare_wl_params {
	const struct gpushare_wl_desc *desc;
	char values[GPUSHARE_WL_MAX_OPTS][64];
	bool given[GPUSHARE_WL_MAX_OPTS];
	long batch;            /* items per request, >= 1 */
};

/* Fill defaults. */
int gpushare_wl_params_init(struct gpushare_wl_params *p, const struct gpushare_wl_desc *d);
/* Set option `name` to `value`, validating it. GPUSHARE_E_NOT_FOUND when the
 * workload has no such option; GPUSHARE_E_INVAL when the value is bad. */
int gpushare_wl_params_set(struct gpushare_wl_params *p, const char *name, const char *value);
/* An option given for every workload (--NAME VALUE) set on p, which must
 * not have it from its spec already (`label`, the spec, names it in the
 * refusal): 1 set, 0 p has no such option, else GPUSHARE_E_INVAL. */
int gpushare_wl_params_set_unless_given(struct gpushare_wl_params *p, const char *label, const char *name,
					const char *value);
/* Check what no single option can: relations between options (transformer:
 * hidden % heads == 0) and batch >= 1. Call after the last _set();
 * GPUSHARE_E_INVAL with a detail when the combination is invalid. */
int gpushare_wl_params_check(const struct gpushare_wl_params *p);
/* Read back values (after validation these cannot fail; the default is
 * returned for an unknown name). */
const char *gpushare_wl_get(const struct gpushare_wl_params *p, const char *name);
long gpushare_wl_get_int(const struct gpushare_wl_params *p, const char *name);
uint64_t gpushare_wl_get_duration_ns(const struct gpushare_wl_params *p, const char *name);
bool gpushare_wl_get_bool(const struct gpushare_wl_params *p, const char *name);

#ifdef __cplusplus
}
#endif
#endif
