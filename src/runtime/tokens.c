/* Resume tokens: "<session hash>.<seq>.<n>", opaque to clients. The hash
 * (FNV-1a, 32 bits) catches a token used with another session; seq is the
 * durable event sequence, n the live delta counter (0 for a durable event). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"

static uint32_t session_hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 16777619u;
  }
  return h;
}

void dexa__token_format(char *buf, size_t n, const char *sid, int64_t seq, int64_t dn) {
  snprintf(buf, n, "%08x.%lld.%lld", session_hash(sid), (long long)seq, (long long)dn);
}

/* A run of decimal digits (no sign, no leading junk), at most 18 of them. */
static int read_num(const char **p, int64_t *out) {
  const char *s = *p;
  int64_t v = 0;
  int digits = 0;
  while (*s >= '0' && *s <= '9' && digits < 18) {
    v = v * 10 + (*s - '0');
    s++;
    digits++;
  }
  if (!digits || (*s >= '0' && *s <= '9')) return -1;
  *p = s;
  *out = v;
  return 0;
}

int dexa__token_parse(const char *token, const char *sid, int64_t *seq, int64_t *dn) {
  char hash[9];
  if (strlen(token) < 12 || token[8] != '.') return DEXA_E_INVALID_RESUME_TOKEN;
  for (int i = 0; i < 8; i++) {
    char ch = token[i];
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return DEXA_E_INVALID_RESUME_TOKEN;
  }
  snprintf(hash, sizeof hash, "%08x", session_hash(sid));
  if (memcmp(token, hash, 8) != 0) return DEXA_E_INVALID_RESUME_TOKEN;
  const char *p = token + 9;
  if (read_num(&p, seq) != 0 || *p != '.') return DEXA_E_INVALID_RESUME_TOKEN;
  p++;
  if (read_num(&p, dn) != 0 || *p != '\0') return DEXA_E_INVALID_RESUME_TOKEN;
  return DEXA_OK;
}
