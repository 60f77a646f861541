/* Bounded decimal parsing. */
#include "util/decimal.h"

int dexa__dec_i64(const char *s, size_t n, int64_t *out) {
  if (!s || n == 0 || n > 20) return -1;
  int64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    int d = s[i] - '0';
    if (v > (INT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}
