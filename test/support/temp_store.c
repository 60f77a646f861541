/* temp_store (temp_store.h): SQLite or PostgreSQL stores (libpq) of tests.
 * test-needs: sqlite postgresql */
#include "support/temp_store.h"

#include <ctype.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dexagents/errors.h"

static const char *pg_base(void) {
  const char *s = getenv("DEXA_TEST_STORE");
  return s && *s && dexa__store_is_pg(s) ? s : NULL;
}

int temp_store_is_pg(void) { return pg_base() != NULL; }

static void quiet(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

/* Runs sql on the base database; prints why when it fails. */
static void pg_admin(const char *conninfo, const char *sql) {
  PGconn *db = PQconnectdb(conninfo);
  PQsetNoticeProcessor(db, quiet, NULL);
  if (PQstatus(db) != CONNECTION_OK) {
    fprintf(stderr, "    temp_store: %s", PQerrorMessage(db));
  } else {
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
      fprintf(stderr, "    temp_store: %s: %s", sql, PQerrorMessage(db));
    PQclear(r);
  }
  PQfinish(db);
}

/* The schema a PostgreSQL store path names (after "search_path="). */
static int pg_schema_of(const char *path, char *out, size_t n) {
  const char *p = strstr(path, "search_path%3D");
  size_t skip = 14;
  if (!p) {
    p = strstr(path, "search_path=");
    skip = 12;
  }
  if (!p) return 0;
  p += skip;
  size_t i = 0;
  while (i + 1 < n && (isalnum((unsigned char)p[i]) || p[i] == '_')) {
    out[i] = p[i];
    i++;
  }
  out[i] = '\0';
  return i > 0;
}

static void pg_drop(const char *conninfo, const char *schema) {
  char sql[300];
  snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", schema);
  pg_admin(conninfo, sql);
}

static void pg_path(char *buf, size_t n, const char *name) {
  const char *base = pg_base();
  char schema[128];
  size_t j = (size_t)snprintf(schema, sizeof schema, "t_");
  for (const char *p = name; *p && j + 24 < sizeof schema; p++)
    schema[j++] = isalnum((unsigned char)*p) ? (char)tolower((unsigned char)*p) : '_';
  snprintf(schema + j, sizeof schema - j, "_%ld", (long)getpid());
  pg_drop(base, schema);
  char sql[300];
  snprintf(sql, sizeof sql, "CREATE SCHEMA %s", schema);
  pg_admin(base, sql);
  if (strncmp(base, "postgres", 8) == 0)
    snprintf(buf, n, "%s%coptions=-csearch_path%%3D%s", base, strchr(base, '?') ? '&' : '?', schema);
  else
    snprintf(buf, n, "%s options=-csearch_path=%s", base, schema);
}

void temp_store_remove(const char *path) {
  char schema[128];
  if (dexa__store_is_pg(path)) {
    if (pg_schema_of(path, schema, sizeof schema)) pg_drop(path, schema);
    return;
  }
  static const char *const suffixes[] = {"", "-wal", "-shm"};
  for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
    char p[4200];
    snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
    unlink(p);
  }
}

void temp_store_path(char *buf, size_t n, const char *name) {
  if (pg_base()) {
    pg_path(buf, n, name);
    return;
  }
  const char *dir = getenv("TMPDIR");
  snprintf(buf, n, "%s/dexa-%s-%ld.db", dir && *dir ? dir : "/tmp", name, (long)getpid());
  temp_store_remove(buf);
}

int temp_side_open(temp_side *s, const char *path, size_t cache_bytes) {
  char err[256] = "";
  dexa__store_config cfg = {path, "normal", cache_bytes, NULL, NULL};
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
