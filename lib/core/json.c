/* The JSON writing helpers (json.h): one dialect for every document. */
#include <math.h>
#include <stdlib.h>

#include "gpushare/gpushare.h"
#include "gpushare/stats.h"
#include "gpushare/utf8.h"

#include "json.h"

bool gpushare_json_add(cJSON *o, const char *k, cJSON *v)
{
	char *fixed = NULL;
	bool ok;

	if (!v)
		return false;
	if (!o) {
		cJSON_Delete(v);
		return false;
	}
	if (!k) {
		ok = cJSON_IsArray(o) && cJSON_AddItemToArray(o, v);
	} else if (gpushare_utf8_valid(k)) {
		ok = cJSON_IsObject(o) && cJSON_AddItemToObject(o, k, v);
	} else {
		fixed = gpushare_utf8_dup(k);
		ok = fixed && cJSON_IsObject(o) && cJSON_AddItemToObject(o, fixed, v);
		free(fixed);
	}
	if (!ok)
		cJSON_Delete(v);
	return ok;
}

cJSON *gpushare_json_number(double v)
{
	return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

cJSON *gpushare_json_string(const char *s)
{
	char *fixed;
	cJSON *v;

	if (!s)
		return cJSON_CreateNull();
	if (gpushare_utf8_valid(s))
		return cJSON_CreateString(s);
	fixed = gpushare_utf8_dup(s);
	v = fixed ? cJSON_CreateString(fixed) : NULL;
	free(fixed);
	return v;
}

bool gpushare_json_num(cJSON *o, const char *k, double v)
{
	return gpushare_json_add(o, k, gpushare_json_number(v));
}

bool gpushare_json_num_if(cJSON *o, const char *k, double v, bool known)
{
	return gpushare_json_add(o, k, known ? gpushare_json_number(v) : cJSON_CreateNull());
}

bool gpushare_json_int(cJSON *o, const char *k, long long v)
{
	return gpushare_json_add(o, k, cJSON_CreateNumber((double)v));
}

bool gpushare_json_int_known(cJSON *o, const char *k, long long v)
{
	return gpushare_json_num_if(o, k, (double)v, v != GPUSHARE_UNKNOWN);
}

bool gpushare_json_u64_known(cJSON *o, const char *k, uint64_t v)
{
	return gpushare_json_num_if(o, k, (double)v, v != GPUSHARE_UNKNOWN_U64);
}

bool gpushare_json_str(cJSON *o, const char *k, const char *s)
{
	return gpushare_json_add(o, k, gpushare_json_string(s));
}

bool gpushare_json_str_or_null(cJSON *o, const char *k, const char *s)
{
	return gpushare_json_str(o, k, s && *s ? s : NULL);
}

bool gpushare_json_bool(cJSON *o, const char *k, bool b)
{
	return gpushare_json_add(o, k, cJSON_CreateBool(b));
}

bool gpushare_json_null(cJSON *o, const char *k)
{
	return gpushare_json_add(o, k, cJSON_CreateNull());
}

cJSON *gpushare_json_obj(cJSON *o, const char *k)
{
	cJSON *v = cJSON_CreateObject();

	return gpushare_json_add(o, k, v) ? v : NULL;
}

cJSON *gpushare_json_arr(cJSON *o, const char *k)
{
	cJSON *v = cJSON_CreateArray();

	return gpushare_json_add(o, k, v) ? v : NULL;
}

char *gpushare_json_print(const cJSON *doc, bool pretty)
{
	if (!doc)
		return NULL;
	return gpushare_utf8_fix(pretty ? cJSON_Print(doc) : cJSON_PrintUnformatted(doc));
}

char *gpushare_json_finish(cJSON *doc, bool ok, bool pretty)
{
	char *text = ok ? gpushare_json_print(doc, pretty) : NULL;

	cJSON_Delete(doc);
	return text;
}

bool gpushare_json_compare_method(cJSON *o, const struct gpushare_comparison *c)
{
	return gpushare_json_str(o, "method", gpushare_method_name(c->method)) &&
	       gpushare_json_num(o, "gm_ratio", c->gm_ratio) && gpushare_json_num(o, "t_lo", c->t_lo) &&
	       gpushare_json_num(o, "t_hi", c->t_hi) && gpushare_json_num(o, "t_df", c->t_df) &&
	       gpushare_json_num(o, "p_value", c->p_value) &&
	       gpushare_json_str(o, "order_verdict", gpushare_verdict_name(c->order_verdict)) &&
	       gpushare_json_num(o, "order_confidence", c->order_confidence);
}

bool gpushare_json_get_u64(const cJSON *o, const char *k, uint64_t max, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	uint64_t u;

	/* (double)UINT64_MAX rounds up to 2^64, which no uint64_t holds. */
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble >= 0x1p64 ||
	    v->valuedouble != floor(v->valuedouble))
		return false;
	u = (uint64_t)v->valuedouble;
	if (u > max)
		return false;
	*out = u;
	return true;
}

bool gpushare_json_get_int(const cJSON *o, const char *k, long long lo, long long hi, long long *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	long long n;

	/* Within (-2^63, 2^63) the conversion is defined. */
	if (!cJSON_IsNumber(v) || !(v->valuedouble > -0x1p63) || !(v->valuedouble < 0x1p63) ||
	    v->valuedouble != floor(v->valuedouble))
		return false;
	n = (long long)v->valuedouble;
	if (n < lo || n > hi)
		return false;
	*out = n;
	return true;
}
