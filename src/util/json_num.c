#include "util/json_num.h"

#define MAX_EXACT 9007199254740992.0 /* 2^53 */

int dexa__json_exact_int(const cJSON *v, int64_t *out) {
  if (!cJSON_IsNumber(v)) return 0;
  double d = v->valuedouble;
  /* The range test comes first and also refuses NaN: only then is the cast defined. */
  if (!(d >= -MAX_EXACT && d <= MAX_EXACT) || d != (double)(int64_t)d) return 0;
  *out = (int64_t)d;
  return 1;
}
