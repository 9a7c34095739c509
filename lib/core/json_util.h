/* Internal JSON helpers shared by the writers of JSON documents. */
#ifndef GPUSHARE_JSON_UTIL_H
#define GPUSHARE_JSON_UTIL_H

#include <stdbool.h>

#include <cjson/cJSON.h>

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

#endif
