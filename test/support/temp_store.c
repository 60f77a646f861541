/* temp_store (temp_store.h). */
#include "support/temp_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void temp_store_remove(const char *path) {
  static const char *const suffixes[] = {"", "-wal", "-shm"};
  for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
    char p[4200];
    snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
    unlink(p);
  }
}

void temp_store_path(char *buf, size_t n, const char *name) {
  const char *dir = getenv("TMPDIR");
  snprintf(buf, n, "%s/dexa-%s-%ld.db", dir && *dir ? dir : "/tmp", name, (long)getpid());
  temp_store_remove(buf);
}
