/* Integers out of cJSON numbers. cJSON keeps every number as a double;
 * casting one outside the range of the integer type is undefined, so every
 * integer read from JSON that may come from outside goes through here. */
#ifndef DEXA_UTIL_JSON_NUM_H
#define DEXA_UTIL_JSON_NUM_H

#include <cjson/cJSON.h>
#include <stdint.h>

/* 1 and *out when v is a number with an integer value within +-2^53 (exact
 * in a double), else 0 and *out untouched. */
int dexa__json_exact_int(const cJSON *v, int64_t *out);

#endif
