/* Internal JSON helpers shared by the writers of JSON documents. */
#ifndef GPUSHARE_JSON_UTIL_H
#define GPUSHARE_JSON_UTIL_H

#include <math.h>
#include <stdbool.h>

#include <cjson/cJSON.h>

#include "gpushare/stats.h"

/* Add v under k; false (and v freed) when v is NULL or cannot be added. */
static inline bool gpushare_json_add(cJSON *o, const char *k, cJSON *v)
{
	if (!v)
		return false;
	if (!cJSON_AddItemToObject(o, k, v)) {
		cJSON_Delete(v);
		return false;
	}
	return true;
}

static inline bool gpushare_json_num_or_null(cJSON *o, const char *k, double v)
{
	return isfinite(v) ? cJSON_AddNumberToObject(o, k, v) != NULL : cJSON_AddNullToObject(o, k) != NULL;
}

/* The method of a comparison and both its rules: "method", the t test's
 * "gm_ratio", "t_lo", "t_hi", "t_df", "p_value" and the order-statistic
 * rule's "order_verdict", "order_confidence" (null where unknown). */
static inline bool gpushare_json_add_method(cJSON *o, const struct gpushare_comparison *c)
{
	return cJSON_AddStringToObject(o, "method", gpushare_method_name(c->method)) &&
	       gpushare_json_num_or_null(o, "gm_ratio", c->gm_ratio) && gpushare_json_num_or_null(o, "t_lo", c->t_lo) &&
	       gpushare_json_num_or_null(o, "t_hi", c->t_hi) && gpushare_json_num_or_null(o, "t_df", c->t_df) &&
	       gpushare_json_num_or_null(o, "p_value", c->p_value) &&
	       cJSON_AddStringToObject(o, "order_verdict", gpushare_verdict_name(c->order_verdict)) &&
	       gpushare_json_num_or_null(o, "order_confidence", c->order_confidence);
}

#endif
