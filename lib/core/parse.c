/*
 * Parsing of values users type: percentages, memory sizes, integers and
 * durations. Every failure names the value and what was expected.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gpushare/gpushare.h"
#include "gpushare/util.h"
#include "getenv_fn.h"
#include "items.h"

int gpushare_parse_percent(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s || isspace((unsigned char)*s))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a percentage (expected a number in (0, 100])", s ? s : "");
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || (*end && strcmp(end, "%")) || !isfinite(v))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a percentage (expected a number in (0, 100])", s);
	if (v <= 0.0 || v > 100.0)
		return gpushare_fail(GPUSHARE_E_INVAL, "percentage '%s' is out of range (expected a number in (0, 100])", s);
	*out = v;
	return GPUSHARE_OK;
}

int gpushare_parse_size(const char *s, uint64_t *bytes)
{
	static const struct { const char *name; unsigned shift; } units[] = {
		{ "", 0 }, { "B", 0 },
		{ "K", 10 }, { "KB", 10 }, { "KiB", 10 },
		{ "M", 20 }, { "MB", 20 }, { "MiB", 20 },
		{ "G", 30 }, { "GB", 30 }, { "GiB", 30 },
		{ "T", 40 }, { "TB", 40 }, { "TiB", 40 },
	};
	char *end;
	unsigned long long v;
	size_t i;

	if (!s || !isdigit((unsigned char)*s))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a memory size (expected e.g. 512M, 4G)", s ? s : "");
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return gpushare_fail(GPUSHARE_E_INVAL, "memory size '%s' is too large", s);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(end, units[i].name) == 0)
			break;
	}
	if (i == sizeof(units) / sizeof(units[0]))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a memory size (unknown unit '%s'; use K, M, G or T)", s, end);
	if (v == 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "memory size '%s' must be greater than zero", s);
	if (units[i].shift && v > (UINT64_MAX >> units[i].shift))
		return gpushare_fail(GPUSHARE_E_INVAL, "memory size '%s' is too large", s);
	*bytes = (uint64_t)v << units[i].shift;
	return GPUSHARE_OK;
}

int gpushare_format_mps_size(uint64_t bytes, char *buf, size_t len)
{
	const uint64_t mib = 1ULL << 20, gib = 1ULL << 30;
	int n;

	if (bytes < mib)
		return gpushare_fail(GPUSHARE_E_INVAL, "memory limit of %" PRIu64 " bytes is below the MPS minimum of 1M", bytes);
	if (bytes % gib == 0)
		n = snprintf(buf, len, "%" PRIu64 "G", bytes / gib);
	else
		n = snprintf(buf, len, "%" PRIu64 "M", bytes / mib);
	if (n < 0 || (size_t)n >= len)
		return gpushare_fail(GPUSHARE_E_INVAL, "buffer too small for a memory size");
	return GPUSHARE_OK;
}

int gpushare_parse_id(const char *what, const char *s, unsigned long max, unsigned long *out)
{
	const char *p;
	unsigned long v = 0;

	if (!s || !*s)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s is %s", what, s ? "empty" : "not set");
	for (p = s; *p; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (d > 9)
			return gpushare_fail(GPUSHARE_E_INVAL, "%s='%.40s' is not a number (digits only)", what, s);
		if (d > max || v > (max - d) / 10)
			return gpushare_fail(GPUSHARE_E_INVAL, "%s='%.40s' is out of range (at most %lu)", what, s, max);
		v = v * 10 + d;
	}
	*out = v;
	return GPUSHARE_OK;
}

int gpushare_env_number(gpushare_getenv_fn getenv_fn, void *ctx, const char *name, long min, long max, long *out)
{
	const char *v = getenv_fn(ctx, name);
	unsigned long x;
	int rc;

	if (!v)
		return 0;
	rc = gpushare_parse_id(name, v, max < 0 ? 0 : (unsigned long)max, &x);
	if (rc)
		return rc;
	if (min > 0 && x < (unsigned long)min)
		return gpushare_fail(GPUSHARE_E_INVAL, "%s='%.40s' is out of range (at least %ld)", name, v, min);
	*out = (long)x;
	return 1;
}

int gpushare_parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s || isspace((unsigned char)*s))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a whole number", s ? s : "");
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno == ERANGE || (v < min || v > max))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is out of range (expected %ld to %ld)", s, min, max);
	if (errno || *end)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a whole number", s);
	*out = v;
	return GPUSHARE_OK;
}

int gpushare_parse_duration(const char *s, uint64_t *ns)
{
	static const struct { const char *name; double mult; } units[] = {
		{ "", 1e9 }, { "s", 1e9 }, { "ns", 1.0 }, { "us", 1e3 },
		{ "ms", 1e6 }, { "m", 60e9 }, { "min", 60e9 }, { "h", 3600e9 },
	};
	char *end;
	double v;
	size_t i;

	if (!s || !*s || isspace((unsigned char)*s) || *s == '-')
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a duration (expected e.g. 500ms, 10s, 2m)", s ? s : "");
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a duration (expected e.g. 500ms, 10s, 2m)", s);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].name) == 0)
			break;
	}
	if (i == sizeof(units) / sizeof(units[0]))
		return gpushare_fail(GPUSHARE_E_INVAL, "'%s' is not a duration (unknown unit '%s'; use ns, us, ms, s, m or h)", s, end);
	v *= units[i].mult;
	if (v > 1e18)
		return gpushare_fail(GPUSHARE_E_INVAL, "duration '%s' is too long", s);
	*ns = (uint64_t)v;
	return GPUSHARE_OK;
}

int gpushare_each_item_named(const char *what, const char *s, char sep,
			     int (*item)(void *arg, const char *p, size_t len), void *arg)
{
	const char *p = s;

	if (!s || !*s)
		return what ? gpushare_fail(GPUSHARE_E_INVAL, "%s is empty", what)
			    : gpushare_fail(GPUSHARE_E_INVAL, "empty list");
	for (;;) {
		size_t len = strcspn(p, (const char[]){ sep, '\0' });
		int rc;

		if (len == 0)
			return what ? gpushare_fail(GPUSHARE_E_INVAL, "%s has an empty item", what)
				    : gpushare_fail(GPUSHARE_E_INVAL, "'%s' has an empty item", s);
		rc = item(arg, p, len);
		if (rc)
			return rc;
		p += len;
		if (!*p)
			break;
		p++;
		if (!*p)
			return what ? gpushare_fail(GPUSHARE_E_INVAL, "%s ends with '%c'", what, sep)
				    : gpushare_fail(GPUSHARE_E_INVAL, "'%s' ends with '%c'", s, sep);
	}
	return GPUSHARE_OK;
}

int gpushare_each_item(const char *s, char sep, int (*item)(void *arg, const char *p, size_t len), void *arg)
{
	return gpushare_each_item_named(NULL, s, sep, item, arg);
}

const char *gpushare_find_item(const char *list, char sep, const char *s, bool nocase, size_t *len)
{
	size_t n = strlen(s);

	for (const char *p = list; p && *p;) {
		size_t l = strcspn(p, (const char[]){ sep, '\0' });

		if (l == n && n > 0 && !(nocase ? strncasecmp(p, s, n) : strncmp(p, s, n))) {
			if (len)
				*len = l;
			return p;
		}
		p += l;
		if (*p)
			p++;
	}
	return NULL;
}
