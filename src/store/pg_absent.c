/* The PostgreSQL store in a build without WITH_POSTGRES=1 (it is libpq's
 * client): a PostgreSQL URI or conninfo is recognized, so that opening it
 * is DEXA_E_UNSUPPORTED naming the option rather than a SQLite file. */
#include <stdio.h>
#include <string.h>

#include "dexagents/errors.h"
#include "store/store.h"

/* "keyword=value ..." starting with one of libpq's common keywords. */
int dexa__pg_is_conninfo(const char *uri) {
  static const char *const keywords[] = {"host",     "hostaddr", "port",    "dbname",
                                         "user",     "password", "service", "sslmode",
                                         "passfile", "options",  "application_name",
                                         "connect_timeout"};
  while (*uri == ' ' || *uri == '\t') uri++;
  for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++) {
    size_t n = strlen(keywords[i]);
    const char *p = uri + n;
    if (strncmp(uri, keywords[i], n) != 0) continue;
    while (*p == ' ') p++;
    if (*p == '=') return 1;
  }
  return 0;
}

int dexa__pg_open(dexa__store **out, const char *conninfo, const dexa__store_config *cfg,
                  char *errmsg, size_t errmsg_size) {
  *out = NULL;
  if (errmsg && errmsg_size)
    snprintf(errmsg, errmsg_size, "PostgreSQL store: built without WITH_POSTGRES=1");
  return DEXA_E_UNSUPPORTED;
}
