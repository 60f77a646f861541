#include "util/json_span.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void skip_ws(const char *s, size_t n, size_t *p) {
  while (*p < n && (s[*p] == ' ' || s[*p] == '\t' || s[*p] == '\n' || s[*p] == '\r')) (*p)++;
}

static int skip_string(const char *s, size_t n, size_t *p) {
  size_t i = *p + 1; /* past the opening quote */
  while (i < n) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"') {
      *p = i + 1;
      return 0;
    }
    if (c < 0x20) return -1;
    if (c == '\\') {
      if (i + 1 >= n) return -1;
      char e = s[i + 1];
      if (e == 'u') {
        if (i + 5 >= n) return -1;
        for (int k = 2; k < 6; k++) {
          char h = s[i + k];
          if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F')))
            return -1;
        }
        i += 6;
        continue;
      }
      if (!strchr("\"\\/bfnrt", e) || e == '\0') return -1;
      i += 2;
      continue;
    }
    i++;
  }
  return -1;
}

static int skip_number(const char *s, size_t n, size_t *p) {
  size_t i = *p;
  if (i < n && s[i] == '-') i++;
  if (i >= n) return -1;
  if (s[i] == '0') i++;
  else if (s[i] >= '1' && s[i] <= '9') while (i < n && s[i] >= '0' && s[i] <= '9') i++;
  else return -1;
  if (i < n && s[i] == '.') {
    i++;
    size_t d = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    if (i == d) return -1;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    size_t d = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    if (i == d) return -1;
  }
  *p = i;
  return 0;
}

static int skip_literal(const char *s, size_t n, size_t *p, const char *lit) {
  size_t l = strlen(lit);
  if (n - *p < l || memcmp(s + *p, lit, l) != 0) return -1;
  *p += l;
  return 0;
}

static int skip_value(const char *s, size_t n, size_t *p, int depth);

static int skip_container(const char *s, size_t n, size_t *p, int depth, char close) {
  if (depth >= DEXA__JSON_MAX_DEPTH) return -1;
  (*p)++;
  skip_ws(s, n, p);
  if (*p < n && s[*p] == close) {
    (*p)++;
    return 0;
  }
  for (;;) {
    if (close == '}') {
      skip_ws(s, n, p);
      if (*p >= n || s[*p] != '"' || skip_string(s, n, p) != 0) return -1;
      skip_ws(s, n, p);
      if (*p >= n || s[*p] != ':') return -1;
      (*p)++;
    }
    if (skip_value(s, n, p, depth + 1) != 0) return -1;
    skip_ws(s, n, p);
    if (*p >= n) return -1;
    if (s[*p] == close) {
      (*p)++;
      return 0;
    }
    if (s[*p] != ',') return -1;
    (*p)++;
  }
}

static int skip_value(const char *s, size_t n, size_t *p, int depth) {
  skip_ws(s, n, p);
  if (*p >= n) return -1;
  switch (s[*p]) {
  case '{': return skip_container(s, n, p, depth, '}');
  case '[': return skip_container(s, n, p, depth, ']');
  case '"': return skip_string(s, n, p);
  case 't': return skip_literal(s, n, p, "true");
  case 'f': return skip_literal(s, n, p, "false");
  case 'n': return skip_literal(s, n, p, "null");
  default: return skip_number(s, n, p);
  }
}

int dexa__json_skip(const char *s, size_t n, size_t *pos) {
  if (!s) return -1;
  return skip_value(s, n, pos, 0);
}

int dexa__json_validate(const char *s, size_t n) {
  size_t p = 0;
  if (dexa__json_skip(s, n, &p) != 0) return -1;
  skip_ws(s, n, &p);
  return p == n ? 0 : -1;
}

/* Compares the raw string literal at s[a..b) (quotes included) with key;
 * keys with escapes never match, which is fine for the library's own keys. */
static int key_equals(const char *s, size_t a, size_t b, const char *key) {
  size_t kl = strlen(key);
  return b - a == kl + 2 && memcmp(s + a + 1, key, kl) == 0;
}

int dexa__json_get(const char *s, size_t n, const char *key, const char **val, size_t *vlen) {
  size_t p = 0;
  skip_ws(s, n, &p);
  if (p >= n || s[p] != '{') return -1;
  p++;
  skip_ws(s, n, &p);
  if (p < n && s[p] == '}') return 1;
  for (;;) {
    skip_ws(s, n, &p);
    size_t ka = p;
    if (p >= n || s[p] != '"' || skip_string(s, n, &p) != 0) return -1;
    size_t kb = p;
    skip_ws(s, n, &p);
    if (p >= n || s[p] != ':') return -1;
    p++;
    skip_ws(s, n, &p);
    size_t va = p;
    if (skip_value(s, n, &p, 1) != 0) return -1;
    if (key_equals(s, ka, kb, key)) {
      *val = s + va;
      *vlen = p - va;
      return 0;
    }
    skip_ws(s, n, &p);
    if (p >= n) return -1;
    if (s[p] == '}') return 1;
    if (s[p] != ',') return -1;
    p++;
  }
}

int dexa__json_get_i64(const char *s, size_t n, const char *key, int64_t *out) {
  const char *v;
  size_t vl;
  int rc = dexa__json_get(s, n, key, &v, &vl);
  if (rc != 0) return rc;
  if (vl == 0 || vl > 20) return -1;
  char tmp[24];
  memcpy(tmp, v, vl);
  tmp[vl] = '\0';
  char *end;
  errno = 0;
  long long x = strtoll(tmp, &end, 10);
  if (*end != '\0' || errno == ERANGE) return -1; /* strtoll saturates out of range */
  *out = (int64_t)x;
  return 0;
}

void dexa__json_trim(const char **s, size_t *n) {
  while (*n && (**s == ' ' || **s == '\n' || **s == '\t' || **s == '\r')) {
    (*s)++;
    (*n)--;
  }
  while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\n' || (*s)[*n - 1] == '\t' ||
                (*s)[*n - 1] == '\r'))
    (*n)--;
}
