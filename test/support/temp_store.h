/* temp_store: file names for tests' store files, and a store opened on one
 * with a connection, as one process holds it. */
#ifndef DEXA_TEST_TEMP_STORE_H
#define DEXA_TEST_TEMP_STORE_H

#include <stddef.h>

#include "store/store.h"

/* Writes "$TMPDIR/dexa-<name>-<pid>.db" (/tmp without TMPDIR) into buf and
 * removes what an earlier run left there. */
void temp_store_path(char *buf, size_t n, const char *name);

/* Removes a SQLite store: the file and its -wal and -shm. */
void temp_store_remove(const char *path);

typedef struct temp_side {
  dexa__store *store;
  dexa__store_conn *conn;
} temp_side;

/* Opens the store at path (synchronous=normal, a session cache of
 * cache_bytes, 0 for none) and a connection; on failure prints why. */
int temp_side_open(temp_side *s, const char *path, size_t cache_bytes);
/* Closes both (either may be NULL) and empties s. */
void temp_side_close(temp_side *s);

#endif
