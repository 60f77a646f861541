/* The strict check of client JSON. */
#include "util/json_input.h"

#include <string.h>

#include "dexagents/errors.h"
#include "util/json_span.h"
#include "util/utf8.h"

/* 1 when a string of the (valid) JSON text s escapes U+0000. */
static int escapes_nul(const char *s, size_t n) {
  int in_string = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"') {
      in_string = !in_string;
    } else if (in_string && s[i] == '\\') {
      if (i + 5 < n && s[i + 1] == 'u' && memcmp(s + i + 2, "0000", 4) == 0) return 1;
      i++; /* the escaped character (a quote among them) */
    }
  }
  return 0;
}

int dexa__json_input_check(const char *s, size_t n) {
  if (!s || dexa__json_validate(s, n) != 0 || !dexa__utf8_valid(s, n)) return DEXA_E_INVALID_JSON;
  return escapes_nul(s, n) ? DEXA_E_INVALID_ARG : DEXA_OK;
}
