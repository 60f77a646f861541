/* temp_store: file names for tests' store files. */
#ifndef DEXA_TEST_TEMP_STORE_H
#define DEXA_TEST_TEMP_STORE_H

#include <stddef.h>

/* Writes "$TMPDIR/dexa-<name>-<pid>.db" (/tmp without TMPDIR) into buf and
 * removes what an earlier run left there. */
void temp_store_path(char *buf, size_t n, const char *name);

/* Removes a SQLite store: the file and its -wal and -shm. */
void temp_store_remove(const char *path);

#endif
