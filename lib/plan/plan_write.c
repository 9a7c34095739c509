/*
 * gpushare plan: the writing every target shares (plan_internal.h), below
 * the targets' writers (plan_slurm.c, plan_yaml.c), which sit below the
 * decision and the target table (plan.c): comment lines that stay comments
 * in every format, the parts of the output, Kubernetes quantities.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "plan_internal.h"

int plan_comment(struct gpushare_buf *b, const char *text)
{
	const char *s = text;

	for (;;) {
		const char *e = strchr(s, '\n');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		int rc = gpushare_buf_add(b, n ? "# " : "#", n ? 2 : 1);

		for (size_t i = 0; !rc && i < n; i++) {
			const unsigned char *u = (const unsigned char *)s + i;
			char ch = *u < 0x20 || *u == 0x7f ? ' ' : s[i];

			/* YAML readers also end a line at U+0085, U+2028 and U+2029
			 * (UTF-8 C2 85, E2 80 A8, E2 80 A9): a space each, so no text
			 * (a shape, a path, a host) leaves the comment. */
			if (i + 1 < n && u[0] == 0xc2 && u[1] == 0x85) {
				ch = ' ';
				i += 1;
			} else if (i + 2 < n && u[0] == 0xe2 && u[1] == 0x80 && (u[2] == 0xa8 || u[2] == 0xa9)) {
				ch = ' ';
				i += 2;
			}
			rc = gpushare_buf_add(b, &ch, 1);
		}
		/* A backslash ending a line would continue it in slurm.conf. */
		if (!rc && n && s[n - 1] == '\\')
			rc = gpushare_buf_add(b, " ", 1);
		if (!rc)
			rc = gpushare_buf_add(b, "\n", 1);
		if (rc)
			return rc;
		if (!e)
			return 0;
		s = e + 1;
	}
}

int plan_output_add(struct gpushare_plan_output *out, const char *name, struct gpushare_buf *b)
{
	if (out->n_parts >= GPUSHARE_PLAN_MAX_PARTS)
		return gpushare_fail(GPUSHARE_E_INVAL, "too many parts");
	snprintf(out->parts[out->n_parts].name, sizeof(out->parts[0].name), "%s", name);
	out->parts[out->n_parts].len = b->len;
	out->parts[out->n_parts].text = gpushare_buf_take(b);
	if (!out->parts[out->n_parts].text)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	out->n_parts++;
	return 0;
}

void plan_quantity(unsigned long long bytes, char *buf, size_t len)
{
	static const char *const units[] = { "", "Ki", "Mi", "Gi", "Ti" };
	size_t u = 0;

	while (u + 1 < sizeof(units) / sizeof(units[0]) && bytes && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, "%llu%s", bytes, units[u]);
}
