/* temp_store: file names for tests' store files, and a store opened on one
 * with a connection, as one process holds it. */
#ifndef DEXA_TEST_TEMP_STORE_H
#define DEXA_TEST_TEMP_STORE_H

#include <stddef.h>

#include "store/store.h"

/* Writes "$TMPDIR/dexa-<name>-<pid>.db" (/tmp without TMPDIR) into buf and
 * removes what an earlier run left there.
 *
 * With DEXA_TEST_STORE set to a PostgreSQL URI or conninfo (test/pg runs
 * the suites so), writes that conninfo with a search_path of a new empty
 * schema "t_<name>_<pid>" instead: the same tests then run on PostgreSQL,
 * each store in a schema of its own. */
void temp_store_path(char *buf, size_t n, const char *name);

/* Removes a store temp_store_path named: a SQLite file and its -wal and
 * -shm, or a PostgreSQL schema. */
void temp_store_remove(const char *path);

/* 1 when temp_store_path names PostgreSQL stores (DEXA_TEST_STORE). */
int temp_store_is_pg(void);

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
