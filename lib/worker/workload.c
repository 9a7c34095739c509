/*
 * The built-in workloads' option tables and the validation of option values.
 * The command line and gpushare-worker both validate through here, so an
 * option the command line accepts is one the worker accepts, with the same
 * default.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "gpushare/workload.h"
#include "items.h"

#define N_OPTS(a) (sizeof(a) / sizeof((a)[0]))
#define US_PER_MIN 60000000L

static const struct gpushare_wl_option spin_opts[] = {
	{ .name = "request-us", .type = GPUSHARE_WL_DURATION, .def = "100us", .min = 0, .max = US_PER_MIN,
	  .help = "length of the CPU busy loop of one item (batch B: B times as long)" },
	{ .name = "fail-after", .type = GPUSHARE_WL_INT, .def = "0", .min = 0, .max = 1000000000L,
	  .help = "fail after this many requests, warm-up included (0: never); for tests" },
	{ .name = "fail-mode", .type = GPUSHARE_WL_CHOICE, .def = "error", .choices = "error,crash,hang",
	  .help = "how fail-after fails: report an error, crash (SIGSEGV) or hang" },
	{ .name = "init-fail", .type = GPUSHARE_WL_BOOL, .def = "off",
	  .help = "fail init as CUDA error 808 (too many MPS clients) would; for tests" },
	/* Slow and stalling workers, for the open-loop tests. */
	{ .name = "stall-after", .type = GPUSHARE_WL_INT, .def = "0", .min = 0, .max = 1000000000L,
	  .help = "worker stall-worker stalls once after this many requests, warm-up included (0: never)" },
	{ .name = "stall", .type = GPUSHARE_WL_DURATION, .def = "1s", .min = 0, .max = US_PER_MIN,
	  .help = "how long that one stall lasts (asleep, not spinning)" },
	{ .name = "stall-worker", .type = GPUSHARE_WL_INT, .def = "0", .min = 0, .max = 65535,
	  .help = "the worker (its index) that stalls" },
	{ .name = "slow-us", .type = GPUSHARE_WL_DURATION, .def = "0", .min = 0, .max = US_PER_MIN,
	  .help = "request length of worker slow-worker instead of request-us (0: no slow worker)" },
	{ .name = "slow-worker", .type = GPUSHARE_WL_INT, .def = "0", .min = 0, .max = 65535,
	  .help = "the worker (its index) that runs slow-us requests" },
	{ .name = "sleep", .type = GPUSHARE_WL_BOOL, .def = "off",
	  .help = "sleep through each request instead of spinning (a worker waiting on a device)" },
	{ .name = "by-threads", .type = GPUSHARE_WL_BOOL, .def = "off",
	  .help = "a request lasts 100/P times as long under CUDA_MPS_ACTIVE_THREAD_PERCENTAGE P (a kernel whose "
		  "speed follows its SM share); for tests" },
};

static const struct gpushare_wl_option matmul_opts[] = {
	{ .name = "size", .type = GPUSHARE_WL_INT, .def = "1024", .min = 16, .max = 65536,
	  .help = "matrix dimension used for m, n and k unless they are given" },
	{ .name = "m", .type = GPUSHARE_WL_INT, .def = "0", .min = 0, .max = 65536,
	  .help = "rows of A and C (0: size)" },
	{ .name = "n", .type = GPUSHARE_WL_INT, .def = "0", .min = 0, .max = 65536,
	  .help = "columns of B and C (0: size)" },
	{ .name = "k", .type = GPUSHARE_WL_INT, .def = "0", .min = 0, .max = 65536,
	  .help = "columns of A, rows of B (0: size)" },
	{ .name = "dtype", .type = GPUSHARE_WL_CHOICE, .def = "fp16", .choices = "fp16,bf16,fp32,tf32",
	  .help = "element type (tf32: fp32 storage, TF32 tensor-core math)" },
};

static const struct gpushare_wl_option tiny_opts[] = {
	{ .name = "kernels", .type = GPUSHARE_WL_INT, .def = "32", .min = 1, .max = 100000,
	  .help = "kernel launches per request" },
	{ .name = "threads", .type = GPUSHARE_WL_INT, .def = "128", .min = 32, .max = 1024,
	  .help = "threads per kernel (one block)" },
	{ .name = "iters", .type = GPUSHARE_WL_INT, .def = "0", .min = 0, .max = 1000000,
	  .help = "work per thread inside each kernel (0: empty kernels)" },
	{ .name = "fault-after", .type = GPUSHARE_WL_INT, .def = "0", .min = 0, .max = 1000000000,
	  .help = "worker 0 makes an illegal memory access in this request (0: never); for tests" },
};

static const struct gpushare_wl_option hybrid_opts[] = {
	{ .name = "cpu-us", .type = GPUSHARE_WL_DURATION, .def = "500us", .min = 0, .max = US_PER_MIN,
	  .help = "CPU busy time per request" },
	{ .name = "gpu-us", .type = GPUSHARE_WL_DURATION, .def = "500us", .min = 0, .max = US_PER_MIN,
	  .help = "GPU busy-kernel time per request (when gpu-size is 0)" },
	{ .name = "gpu-size", .type = GPUSHARE_WL_INT, .def = "0", .min = 0, .max = 65536,
	  .help = "matmul dimension for the GPU part (0: a timed busy kernel of gpu-us)" },
};

static const struct gpushare_wl_option transformer_opts[] = {
	{ .name = "layers", .type = GPUSHARE_WL_INT, .def = "12", .min = 1, .max = 48,
	  .help = "encoder layers" },
	{ .name = "hidden", .type = GPUSHARE_WL_INT, .def = "768", .min = 64, .max = 8192,
	  .help = "hidden size (a multiple of heads)" },
	{ .name = "heads", .type = GPUSHARE_WL_INT, .def = "12", .min = 1, .max = 64,
	  .help = "attention heads" },
	{ .name = "seq", .type = GPUSHARE_WL_INT, .def = "128", .min = 1, .max = 4096,
	  .help = "sequence length" },
	{ .name = "graph", .type = GPUSHARE_WL_BOOL, .def = "on",
	  .help = "replay the forward pass as a CUDA graph" },
};

static const struct gpushare_wl_desc workloads[] = {
	{ .name = "matmul", .summary = "dense matrix multiply (cuBLAS GEMM): compute bound",
	  .needs_gpu = true, .opts = matmul_opts, .n_opts = N_OPTS(matmul_opts) },
	{ .name = "tiny", .summary = "many tiny kernels: kernel-launch bound",
	  .needs_gpu = true, .opts = tiny_opts, .n_opts = N_OPTS(tiny_opts) },
	{ .name = "hybrid", .summary = "CPU work then GPU work per request: a GPU idle part of the time",
	  .needs_gpu = true, .opts = hybrid_opts, .n_opts = N_OPTS(hybrid_opts) },
	{ .name = "transformer", .summary = "transformer encoder inference (forward pass)",
	  .needs_gpu = true, .opts = transformer_opts, .n_opts = N_OPTS(transformer_opts) },
	{ .name = "spin", .summary = "CPU busy loop, no GPU: for tests and harness overhead",
	  .needs_gpu = false, .opts = spin_opts, .n_opts = N_OPTS(spin_opts) },
};

_Static_assert(N_OPTS(matmul_opts) <= GPUSHARE_WL_MAX_OPTS, "too many matmul options");
_Static_assert(N_OPTS(transformer_opts) <= GPUSHARE_WL_MAX_OPTS, "too many transformer options");

size_t gpushare_workloads(const struct gpushare_wl_desc **list)
{
	*list = workloads;
	return N_OPTS(workloads);
}

const struct gpushare_wl_desc *gpushare_workload_find(const char *name)
{
	size_t i;

	for (i = 0; name && i < N_OPTS(workloads); i++) {
		if (strcmp(workloads[i].name, name) == 0)
			return &workloads[i];
	}
	return NULL;
}

static int opt_index(const struct gpushare_wl_desc *d, const char *name)
{
	size_t i;

	for (i = 0; d && name && i < d->n_opts; i++) {
		if (strcmp(d->opts[i].name, name) == 0)
			return (int)i;
	}
	return -1;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "on", "true", "1", "yes" };
	static const char *const no[] = { "off", "false", "0", "no" };
	size_t i;

	for (i = 0; i < N_OPTS(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return GPUSHARE_OK;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return GPUSHARE_OK;
		}
	}
	return GPUSHARE_E_INVAL;
}

/* Find `s` in the comma-separated `choices`; on a match copy the canonical
 * spelling to buf. */
static bool find_choice(const char *choices, const char *s, char *buf, size_t len)
{
	size_t n;
	const char *c = gpushare_find_item(choices, ',', s, true, &n);

	if (!c || n >= len)
		return false;
	memcpy(buf, c, n);
	buf[n] = '\0';
	return true;
}

/* Put the option's name in front of the detail a parser left. */
static int prefix_detail(int rc, const struct gpushare_wl_option *o)
{
	char detail[256];

	snprintf(detail, sizeof(detail), "%s", gpushare_errdetail());
	return gpushare_fail(rc, "option '%s': %s", o->name, detail);
}

/* gpushare_parse_int() calls "abc" out of range; say what it is. */
static bool is_integer(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (!isdigit((unsigned char)*s))
		return false;
	while (isdigit((unsigned char)*s))
		s++;
	return *s == '\0';
}

/* The unit an option's name states ("request-us": "us"), or NULL. */
static const char *name_unit(const char *name)
{
	static const char *const units[] = { "ns", "us", "ms", "s" };
	const char *dash = strrchr(name, '-');

	for (size_t i = 0; dash && i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(dash + 1, units[i]))
			return units[i];
	}
	return NULL;
}

/* Whether value is a bare number (digits and a point, no unit). */
static bool bare_number(const char *value)
{
	const char *s = value;

	while (isdigit((unsigned char)*s) || *s == '.')
		s++;
	return *value && !*s;
}

/* The stored form of a workload duration: a bare number means the unit the
 * option's name states (`--request-us 200` is 200us, stored so); an option
 * whose name states none needs a unit ("100" would mean 100 seconds to
 * gpushare_parse_duration(), surely not what `--stall 100` meant). */
static int wl_duration_text(const struct gpushare_wl_option *o, const char *value, char *buf, size_t len)
{
	const char *unit = name_unit(o->name);
	int n;

	if (bare_number(value) && unit && strspn(value, "0.") != strlen(value)) /* "0" stays "0" */
		n = snprintf(buf, len, "%s%s", value, unit);
	else
		n = snprintf(buf, len, "%s", value);
	if (n < 0 || (size_t)n >= len)
		return gpushare_fail(GPUSHARE_E_INVAL, "option '%s': value '%.20s...' is too long", o->name, value);
	return GPUSHARE_OK;
}

static int parse_wl_duration(const struct gpushare_wl_option *o, const char *value, uint64_t *ns)
{
	int rc;

	if (bare_number(value) && !name_unit(o->name) && strspn(value, "0.") != strlen(value))
		return gpushare_fail(GPUSHARE_E_INVAL, "option '%s': '%s' needs a unit (e.g. %sus or %sms)", o->name, value, value, value);
	rc = gpushare_parse_duration(value, ns);
	if (rc)
		return prefix_detail(rc, o);
	if (o->max > 0 && (*ns < (uint64_t)o->min * 1000 || *ns > (uint64_t)o->max * 1000))
		return gpushare_fail(GPUSHARE_E_INVAL, "option '%s': '%s' is out of range (expected %ldus to %lds)",
				     o->name, value, o->min, o->max / 1000000);
	return GPUSHARE_OK;
}

/* Validate value for option o and write its stored form to buf. */
static int validate(const struct gpushare_wl_option *o, const char *value, char *buf, size_t len)
{
	uint64_t ns;
	long v;
	bool b;
	int rc, n;

	if (strlen(value) >= len)
		return gpushare_fail(GPUSHARE_E_INVAL, "option '%s': value '%.20s...' is too long", o->name, value);
	switch (o->type) {
	case GPUSHARE_WL_INT:
		if (!is_integer(value))
			return gpushare_fail(GPUSHARE_E_INVAL, "option '%s': '%s' is not a whole number", o->name, value);
		rc = gpushare_parse_int(value, o->min, o->max, &v);
		if (rc)
			return prefix_detail(rc, o);
		n = snprintf(buf, len, "%ld", v);
		return n > 0 && (size_t)n < len ? GPUSHARE_OK : GPUSHARE_E_INVAL;
	case GPUSHARE_WL_CHOICE:
		if (!find_choice(o->choices, value, buf, len))
			return gpushare_fail(GPUSHARE_E_INVAL, "option '%s': '%s' is not one of %s", o->name, value, o->choices);
		return GPUSHARE_OK;
	case GPUSHARE_WL_DURATION:
		rc = wl_duration_text(o, value, buf, len);
		if (!rc)
			rc = parse_wl_duration(o, buf, &ns);
		return rc;
	case GPUSHARE_WL_BOOL:
		if (parse_bool(value, &b))
			return gpushare_fail(GPUSHARE_E_INVAL, "option '%s': '%s' is not on/off, true/false, yes/no or 1/0", o->name, value);
		snprintf(buf, len, "%s", b ? "on" : "off");
		return GPUSHARE_OK;
	}
	return gpushare_fail(GPUSHARE_E_INVAL, "option '%s' has an unknown type %d", o->name, o->type);
}

int gpushare_wl_params_init(struct gpushare_wl_params *p, const struct gpushare_wl_desc *d)
{
	size_t i;
	int rc;

	memset(p, 0, sizeof(*p));
	if (!d)
		return gpushare_fail(GPUSHARE_E_INVAL, "no workload given");
	if (d->n_opts > GPUSHARE_WL_MAX_OPTS)
		return gpushare_fail(GPUSHARE_E_INVAL, "workload '%s' has too many options", d->name);
	p->desc = d;
	p->batch = 1;
	for (i = 0; i < d->n_opts; i++) {
		rc = validate(&d->opts[i], d->opts[i].def, p->values[i], sizeof(p->values[i]));
		if (rc)
			return gpushare_fail(rc, "workload '%s': bad default for option '%s'", d->name, d->opts[i].name);
	}
	return GPUSHARE_OK;
}

int gpushare_wl_params_set_unless_given(struct gpushare_wl_params *p, const char *label, const char *name,
					const char *value)
{
	int i = p->desc ? opt_index(p->desc, name) : -1;

	if (i < 0)
		return 0;
	if (p->given[i])
		return gpushare_fail(GPUSHARE_E_INVAL, "--%s is given twice: as an option and in workload '%s'", name,
				     label);
	return gpushare_wl_params_set(p, name, value) ? GPUSHARE_E_INVAL : 1;
}

int gpushare_wl_params_set(struct gpushare_wl_params *p, const char *name, const char *value)
{
	char buf[sizeof(p->values[0])];
	int i, rc;

	if (!p->desc)
		return gpushare_fail(GPUSHARE_E_INVAL, "workload parameters not initialised");
	i = opt_index(p->desc, name);
	if (i < 0)
		return gpushare_fail(GPUSHARE_E_NOT_FOUND, "workload '%s' has no option '%s'", p->desc->name, name ? name : "");
	if (!value)
		return gpushare_fail(GPUSHARE_E_INVAL, "option '%s' needs a value", name);
	rc = validate(&p->desc->opts[i], value, buf, sizeof(buf));
	if (rc)
		return rc;
	memcpy(p->values[i], buf, sizeof(buf));
	p->given[i] = true;
	return GPUSHARE_OK;
}

int gpushare_wl_params_check(const struct gpushare_wl_params *p)
{
	if (!p->desc)
		return gpushare_fail(GPUSHARE_E_INVAL, "workload parameters not initialised");
	if (p->batch < 1)
		return gpushare_fail(GPUSHARE_E_INVAL, "batch must be at least 1, not %ld", p->batch);
	if (strcmp(p->desc->name, "transformer") == 0) {
		long hidden = gpushare_wl_get_int(p, "hidden"), heads = gpushare_wl_get_int(p, "heads");

		if (heads < 1 || hidden % heads != 0)
			return gpushare_fail(GPUSHARE_E_INVAL, "transformer: hidden (%ld) must be a multiple of heads (%ld)", hidden, heads);
	}
	return GPUSHARE_OK;
}

const char *gpushare_wl_get(const struct gpushare_wl_params *p, const char *name)
{
	int i = opt_index(p->desc, name);

	return i < 0 ? "" : p->values[i];
}

long gpushare_wl_get_int(const struct gpushare_wl_params *p, const char *name)
{
	const char *s = gpushare_wl_get(p, name);
	long v = 0;

	if (!*s || gpushare_parse_int(s, -2147483647L - 1, 2147483647L, &v))
		return 0;
	return v;
}

uint64_t gpushare_wl_get_duration_ns(const struct gpushare_wl_params *p, const char *name)
{
	const char *s = gpushare_wl_get(p, name);
	uint64_t ns = 0;

	if (!*s || gpushare_parse_duration(s, &ns))
		return 0;
	return ns;
}

bool gpushare_wl_get_bool(const struct gpushare_wl_params *p, const char *name)
{
	bool b = false;

	if (parse_bool(gpushare_wl_get(p, name), &b))
		return false;
	return b;
}
