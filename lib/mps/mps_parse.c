/*
 * Parsing MPS control daemon replies. The control program exits 0 even for
 * an unknown command, so the reply text is the only signal; each parser
 * accepts exactly the shapes the daemon prints and rejects anything else
 * with GPUSHARE_E_MPS_REPLY and the reply quoted in the detail.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/gpushare.h"
#include "mps_parse.h"

char *gpushare_mps_trim(char *s)
{
	size_t n = strlen(s);

	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

static const char *skip_space(const char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	return s;
}

int gpushare_mps_reply_is_unknown(const char *reply)
{
	return strstr(reply, "Unknown command") != NULL;
}

static int bad_reply(const char *what, const char *reply)
{
	return gpushare_fail(GPUSHARE_E_MPS_REPLY, "unexpected reply to %s: '%.120s'", what, reply);
}

int gpushare_mps_parse_pid_list(const char *reply, pid_t **pids, size_t *n)
{
	const char *p = reply;
	pid_t *out = NULL;
	size_t cnt = 0, cap = 0;

	*pids = NULL;
	*n = 0;
	if (gpushare_mps_reply_is_unknown(reply))
		return bad_reply("a pid list query", reply);
	while (*(p = skip_space(p))) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v <= 0 || (*end && !isspace((unsigned char)*end))) {
			free(out);
			return bad_reply("a pid list query", reply);
		}
		if (cnt == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			pid_t *np = realloc(out, ncap * sizeof(*np));

			if (!np) {
				free(out);
				return gpushare_fail(GPUSHARE_E_NOMEM, "pid list");
			}
			out = np;
			cap = ncap;
		}
		out[cnt++] = (pid_t)v;
		p = end;
	}
	*pids = out;
	*n = cnt;
	return GPUSHARE_OK;
}

int gpushare_mps_parse_percentage(const char *reply, double *pct)
{
	const char *p = skip_space(reply);
	char *end;
	double v;

	errno = 0;
	v = strtod(p, &end);
	if (errno || end == p || *skip_space(end) || v < 0 || v > 100)
		return bad_reply("a thread percentage query", reply);
	*pct = v;
	return GPUSHARE_OK;
}

int gpushare_mps_parse_mem_limit(const char *reply, char *buf, size_t len)
{
	const char *p = skip_space(reply);
	size_t i = 0;

	if (gpushare_mps_reply_is_unknown(reply))
		return bad_reply("a memory limit query", reply);
	if (!*p) {
		buf[0] = '\0';
		return GPUSHARE_OK;
	}
	while (isdigit((unsigned char)p[i]))
		i++;
	if (i == 0)
		return bad_reply("a memory limit query", reply);
	if (p[i] == 'G' || p[i] == 'M' || p[i] == 'K' || p[i] == 'B')
		i++;
	if (*skip_space(p + i) || i + 1 > len)
		return bad_reply("a memory limit query", reply);
	memcpy(buf, p, i);
	buf[i] = '\0';
	if (strcmp(buf, "0") == 0)
		buf[0] = '\0'; /* 0 means no limit */
	return GPUSHARE_OK;
}

int gpushare_mps_parse_priority(const char *reply, int *prio)
{
	const char *p = skip_space(reply);

	if ((p[0] == '0' || p[0] == '1') && !*skip_space(p + 1)) {
		*prio = p[0] - '0';
		return GPUSHARE_OK;
	}
	return bad_reply("a client priority query", reply);
}

int gpushare_mps_parse_server_status(const char *reply, char *buf, size_t len)
{
	const char *p = skip_space(reply);
	size_t i = 0;

	while (isupper((unsigned char)p[i]) || p[i] == '_')
		i++;
	if (i == 0 || i + 1 > len || *skip_space(p + i))
		return bad_reply("get_server_status", reply);
	memcpy(buf, p, i);
	buf[i] = '\0';
	return GPUSHARE_OK;
}

int gpushare_mps_check_setter_reply(const char *reply)
{
	const char *p = skip_space(reply);

	if (!*p)
		return GPUSHARE_OK;
	if (gpushare_mps_reply_is_unknown(reply))
		return bad_reply("a setter", reply);
	/* An echo of the value: a number, optionally with a unit. */
	while (isdigit((unsigned char)*p) || *p == '.')
		p++;
	if (*p == 'G' || *p == 'M')
		p++;
	if (p != skip_space(reply) && !*skip_space(p))
		return GPUSHARE_OK;
	return bad_reply("a setter", reply);
}

int gpushare_mps_check_terminate_reply(const char *reply)
{
	const char *p = skip_space(reply);

	if (p[0] == '0' && !*skip_space(p + 1))
		return GPUSHARE_OK;
	return bad_reply("terminate_client", reply);
}
