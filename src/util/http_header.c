/* http_header: see http_header.h. */
#include "util/http_header.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

long dexa__retry_after_seconds(const char *line, size_t len, long max_s) {
  static const char name[] = "retry-after:";
  size_t k = sizeof name - 1;
  if (len <= k || strncasecmp(line, name, k) != 0) return -1;
  char v[32];
  size_t vl = len - k < sizeof v - 1 ? len - k : sizeof v - 1;
  memcpy(v, line + k, vl);
  v[vl] = '\0';
  char *end;
  long sec = strtol(v, &end, 10);
  while (*end == ' ' || *end == '\r' || *end == '\n') end++;
  return !*end && end != v && sec >= 0 && sec <= max_s ? sec : -1;
}
