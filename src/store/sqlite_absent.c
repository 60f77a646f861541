/* The SQLite store in a build without WITH_SQLITE=1: opening a store file
 * (or ":memory:") is DEXA_E_UNSUPPORTED naming the option. */
#include <stdio.h>

#include "dexagents/errors.h"
#include "store/store.h"

int dexa__sqlite_open(dexa__store **out, const char *path, int temporary,
                      const dexa__store_config *cfg, char *errmsg, size_t errmsg_size) {
  *out = NULL;
  if (errmsg && errmsg_size)
    snprintf(errmsg, errmsg_size, "SQLite store: built without WITH_SQLITE=1");
  return DEXA_E_UNSUPPORTED;
}
