/* dexa_store_display_name: a store URI fit for logs and messages. A
 * PostgreSQL URI or conninfo may carry a password (user:password@host,
 * ?password=..., password=... in key/value form); everything else of it
 * is kept, so an operator still sees which server, database and user.
 * Pure text: it works in every build, with or without libpq. */
#include <stdio.h>
#include <string.h>

#include "dexagents/errors.h"
#include "dexagents/store.h"
#include "util/buf.h"

static int is_uri(const char *s) {
  return strncmp(s, "postgresql://", 13) == 0 || strncmp(s, "postgres://", 11) == 0;
}

/* A URI: the password of the authority (between "user:" and "@") and
 * any "password" query parameter are left out. */
static void uri_without_password(dexa__buf *b, const char *s) {
  const char *auth = strstr(s, "://") + 3;
  size_t auth_len = strcspn(auth, "/?#");
  const char *at = memchr(auth, '@', auth_len);
  dexa__buf_append(b, s, (size_t)(auth - s));
  if (at) {
    const char *colon = memchr(auth, ':', (size_t)(at - auth));
    dexa__buf_append(b, auth, (size_t)((colon ? colon : at) - auth));
    auth_len -= (size_t)(at - auth);
    auth = at;
  }
  dexa__buf_append(b, auth, auth_len);
  const char *rest = auth + auth_len;
  const char *q = strchr(rest, '?');
  if (!q) {
    dexa__buf_puts(b, rest);
    return;
  }
  dexa__buf_append(b, rest, (size_t)(q - rest));
  char sep = '?';
  for (const char *p = q + 1; *p;) {
    size_t n = strcspn(p, "&#");
    if (!(n >= 9 && strncmp(p, "password=", 9) == 0)) {
      dexa__buf_putc(b, sep);
      dexa__buf_append(b, p, n);
      sep = '&';
    }
    p += n;
    if (*p == '#') {
      dexa__buf_puts(b, p);
      break;
    }
    if (*p == '&') p++;
  }
}

/* Key/value conninfo: "key = value" pairs, a value bare or in single
 * quotes with backslash escapes; the password pair is left out. */
static void conninfo_without_password(dexa__buf *b, const char *s) {
  const char *p = s;
  int first = 1;
  while (*p) {
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (!*p) break;
    const char *start = p;
    while (*p && *p != '=' && *p != ' ' && *p != '\t') p++;
    size_t key_len = (size_t)(p - start);
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '=') p++;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '\'') {
      for (p++; *p && *p != '\''; p++)
        if (*p == '\\' && p[1]) p++;
      if (*p) p++;
    } else {
      while (*p && *p != ' ' && *p != '\t' && *p != '\n') p++;
    }
    if (key_len == 8 && strncmp(start, "password", 8) == 0) continue;
    if (!first) dexa__buf_puts(b, " ");
    dexa__buf_append(b, start, (size_t)(p - start));
    first = 0;
  }
}

DEXA_EXTERN int dexa_store_display_name(const char *uri, char *buf, size_t n) {
  if (!uri || !buf || n == 0) return DEXA_E_INVALID_ARG;
  dexa__buf b;
  dexa__buf_init(&b);
  if (is_uri(uri))
    uri_without_password(&b, uri);
  else if (strchr(uri, '='))
    conninfo_without_password(&b, uri);
  else
    dexa__buf_puts(&b, uri); /* a file path: nothing secret in it */
  int rc = b.oom ? DEXA_E_NOMEM : DEXA_OK;
  snprintf(buf, n, "%s", b.data ? b.data : "");
  dexa__buf_free(&b);
  return rc;
}
