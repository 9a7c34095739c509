/*
 * gpushare plan: the writing every target shares (plan_internal.h), below
 * the targets' writers (plan_slurm.c, plan_yaml.c), which sit below the
 * decision and the target table (plan.c): comment lines that stay comments
 * in every format, the parts of the output, Kubernetes quantities.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpushare/gpushare.h"
#include "gpushare/utf8.h"
#include "plan_internal.h"

/* Whether the character of UTF-8 bytes u[0..n) stays in a comment of every
 * format plan writes and every reader of it accepts: not a C0 or C1 control
 * (U+0085 and U+2028/U+2029 would also end the line for a YAML reader), not
 * U+FEFF (a byte order mark inside the stream) and not the non-characters
 * U+FFFE/U+FFFF, which libyaml, go-yaml and PyYAML refuse anywhere in a
 * stream, comments included. */
static bool comment_char_ok(const unsigned char *u, size_t n)
{
	if (n == 1)
		return u[0] >= 0x20 && u[0] != 0x7f;
	if (n == 2)
		return !(u[0] == 0xc2 && u[1] < 0xa0);
	if (n == 3)
		return !(u[0] == 0xe2 && u[1] == 0x80 && (u[2] == 0xa8 || u[2] == 0xa9)) &&
		       !(u[0] == 0xef && u[1] == 0xbb && u[2] == 0xbf) &&
		       !(u[0] == 0xef && u[1] == 0xbf && (u[2] == 0xbe || u[2] == 0xbf));
	return true;
}

int plan_comment(struct gpushare_buf *b, const char *text)
{
	/* Valid UTF-8 first (invalid bytes become U+FFFD), so each character
	 * below is whole. */
	char *valid = gpushare_utf8_dup(text);
	const char *s = valid;
	int rc = valid ? 0 : gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");

	while (!rc) {
		const char *e = strchr(s, '\n');
		size_t n = e ? (size_t)(e - s) : strlen(s);

		rc = gpushare_buf_add(b, n ? "# " : "#", n ? 2 : 1);
		for (size_t i = 0; !rc && i < n;) {
			const unsigned char *u = (const unsigned char *)s + i;
			size_t k = u[0] < 0x80 ? 1 : u[0] < 0xe0 ? 2 : u[0] < 0xf0 ? 3 : 4;

			/* Each character a reader would refuse, or read as a line
			 * break, is a space: no text (a shape, a path, a host) leaves
			 * the comment or makes the output unreadable. */
			rc = comment_char_ok(u, k) ? gpushare_buf_add(b, s + i, k) : gpushare_buf_add(b, " ", 1);
			i += k;
		}
		/* A backslash ending a line would continue it in slurm.conf. */
		if (!rc && n && s[n - 1] == '\\')
			rc = gpushare_buf_add(b, " ", 1);
		if (!rc)
			rc = gpushare_buf_add(b, "\n", 1);
		if (!e)
			break;
		s = e + 1;
	}
	free(valid);
	return rc;
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

bool plan_model_matches(const char *name, const char *model)
{
	size_t m = strlen(model);

	if (!m)
		return false;
	if (!strcasecmp(name, model))
		return true;
	for (const char *s = name; *s; s++) {
		if ((s == name || s[-1] == ' ' || s[-1] == '-') && !strncasecmp(s, model, m) &&
		    (s[m] == '\0' || s[m] == ' ' || s[m] == '-'))
			return true;
	}
	return false;
}
