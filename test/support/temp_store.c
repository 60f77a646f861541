/* temp_store (temp_store.h). */
#include "support/temp_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dexagents/errors.h"

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

int temp_side_open(temp_side *s, const char *path, size_t cache_bytes) {
  char err[256] = "";
  dexa__store_config cfg = {path, "normal", cache_bytes};
  memset(s, 0, sizeof *s);
  int rc = dexa__store_open(&s->store, &cfg, err, sizeof err);
  if (rc == DEXA_OK) rc = s->store->ops->conn_open(s->store, &s->conn);
  if (rc != DEXA_OK) fprintf(stderr, "    open %s: %s %s\n", path, dexa_strerror(rc), err);
  return rc;
}

void temp_side_close(temp_side *s) {
  if (s->conn) s->conn->ops->conn_close(s->conn);
  if (s->store) s->store->ops->close(s->store);
  memset(s, 0, sizeof *s);
}
