/*
 * Number formatting for people (include/gpushare/format.h): three
 * significant digits, units chosen so the number stays below 1000.
 */
#include <math.h>
#include <stdio.h>

#include "gpushare/format.h"

/* Digits after the point that give three significant digits for |v|. */
static int decimals(double v)
{
	double a = fabs(v);
	int d;

	if (a == 0)
		return 0;
	d = 2 - (int)floor(log10(a));
	return d < 0 ? 0 : d > 12 ? 12 : d;
}

/* v rounded to three significant digits. */
static double round3(double v)
{
	double p = pow(10, decimals(v));

	return round(v * p) / p;
}

const char *gpushare_fmt_sig(double v, char *buf, size_t len)
{
	int d;

	if (!isfinite(v)) {
		snprintf(buf, len, "-");
		return buf;
	}
	v = round3(v);
	d = decimals(v);
	snprintf(buf, len, "%.*f", d, v == 0 ? 0.0 : v);
	return buf;
}

struct unit {
	const char *name;
	double size;    /* in the base unit */
};

/* The largest unit (of n, ascending) in which |v| is at least 1 once
 * rounded, moving up when the rounded value reaches 1000. */
static const struct unit *pick(const struct unit *u, size_t n, double v)
{
	double a = fabs(v);
	size_t i = 0;

	while (i + 1 < n && a >= u[i + 1].size)
		i++;
	if (i + 1 < n && fabs(round3(v / u[i].size)) >= 1000)
		i++;
	return &u[i];
}

static const struct unit time_units[] = { { "ns", 1e-9 }, { "us", 1e-6 }, { "ms", 1e-3 }, { "s", 1 } };
static const struct unit si_units[] = { { "", 1 }, { "k", 1e3 }, { "M", 1e6 }, { "G", 1e9 }, { "T", 1e12 } };
static const struct unit byte_units[] = {
	{ "B", 1 }, { "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 }, { "TiB", 1099511627776.0 },
};
/* One unit each, for in_unit(): "1.5x", "42.1%" (of a value already in percent). */
static const struct unit times_unit[] = { { "x", 1 } };
static const struct unit percent_unit[] = { { "%", 1 } };
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* v in the unit of u (n, ascending) that pick() chooses: three significant
 * digits, sep, the unit's name; "-" when v is not finite. */
static const char *in_unit(double v, const struct unit *u, size_t n, const char *sep, char *buf, size_t len)
{
	char num[32];

	if (!isfinite(v)) {
		snprintf(buf, len, "-");
		return buf;
	}
	u = pick(u, n, v);
	snprintf(buf, len, "%s%s%s", gpushare_fmt_sig(v / u->size, num, sizeof(num)), sep, u->name);
	return buf;
}

const char *gpushare_fmt_seconds(double s, char *buf, size_t len)
{
	if (s == 0) {
		snprintf(buf, len, "0 s");
		return buf;
	}
	return in_unit(s, time_units, N(time_units), " ", buf, len);
}

const char *gpushare_fmt_si(double v, char *buf, size_t len)
{
	return in_unit(v, si_units, N(si_units), "", buf, len);
}

const char *gpushare_fmt_rate(double v, const char *unit, char *buf, size_t len)
{
	char n[32];

	if (!isfinite(v)) {
		snprintf(buf, len, "-");
		return buf;
	}
	snprintf(buf, len, "%s %s", gpushare_fmt_si(v, n, sizeof(n)), unit);
	return buf;
}

const char *gpushare_fmt_bytes(double b, char *buf, size_t len)
{
	return in_unit(b, byte_units, N(byte_units), " ", buf, len);
}

const char *gpushare_fmt_ratio(double r, char *buf, size_t len)
{
	return in_unit(r, times_unit, N(times_unit), "", buf, len);
}

const char *gpushare_fmt_percent(double fraction, char *buf, size_t len)
{
	return in_unit(fraction * 100, percent_unit, N(percent_unit), "", buf, len);
}

const char *gpushare_fmt_coverage(double fraction, char *buf, size_t len)
{
	double tenths;

	if (!isfinite(fraction)) {
		snprintf(buf, len, "-");
		return buf;
	}
	/* The small epsilon keeps 0.95 (stored as 0.94999...) at 95%. */
	tenths = floor(fraction * 1000 + 1e-7);
	if (fmod(tenths, 10) == 0)
		snprintf(buf, len, "%.0f%%", tenths / 10);
	else
		snprintf(buf, len, "%.1f%%", tenths / 10);
	return buf;
}

void gpushare_seconds_unit(double max_seconds, const char **name, double *scale)
{
	const struct unit *u = pick(time_units, N(time_units), isfinite(max_seconds) && max_seconds > 0 ? max_seconds : 1);

	*name = u->name;
	*scale = 1 / u->size;
}

void gpushare_si_unit(double max, const char **suffix, double *divisor)
{
	const struct unit *u = pick(si_units, N(si_units), isfinite(max) && max > 0 ? max : 1);

	*suffix = u->name;
	*divisor = u->size;
}
