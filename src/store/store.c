/* Store selection by URI and the row helpers every backend shares. */
#include "store/store.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dexagents/errors.h"

/* Guards every store's cause: errors are rare, one lock is enough. */
static pthread_mutex_t cause_mu = PTHREAD_MUTEX_INITIALIZER;
/* A cause older than this is not given for a new error of the same code. */
#define CAUSE_FRESH_MS 60000

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void dexa__store_note(dexa__store *s, int rc, const char *fmt, ...) {
  if (!s) return;
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&cause_mu);
  vsnprintf(s->cause, sizeof s->cause, fmt, ap);
  s->cause_rc = rc;
  s->cause_ms = mono_ms();
  pthread_mutex_unlock(&cause_mu);
  va_end(ap);
}

void dexa__store_note_clear(dexa__store *s) {
  pthread_mutex_lock(&cause_mu);
  s->cause_rc = 0;
  pthread_mutex_unlock(&cause_mu);
}

int dexa__store_cause(dexa__store *s, int rc, char *buf, size_t n) {
  int found = 0;
  pthread_mutex_lock(&cause_mu);
  if (s->cause_rc != 0 && s->cause_rc == rc && mono_ms() - s->cause_ms < CAUSE_FRESH_MS) {
    snprintf(buf, n, "%s", s->cause);
    found = 1;
  }
  pthread_mutex_unlock(&cause_mu);
  return found ? DEXA_OK : DEXA_E_NOT_FOUND;
}

void dexa__store_log(dexa__store *s, int32_t level, const char *kind, const char *fmt, ...) {
  if (!s || !s->log) return;
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  s->log(s->log_ctx, level, kind, msg);
}

int dexa__store_is_pg(const char *uri) {
  if (!uri) return 0;
  if (strncmp(uri, "postgresql://", 13) == 0 || strncmp(uri, "postgres://", 11) == 0) return 1;
  /* key/value conninfo ("host=... dbname=..."): a file name never has it */
  return strchr(uri, '=') && dexa__pg_is_conninfo(uri);
}

int dexa__row_set(char **slot, size_t *slot_len, const char *s, size_t n) {
  free(*slot);
  *slot = NULL;
  if (slot_len) *slot_len = 0;
  if (!s) return DEXA_OK;
  char *p = malloc(n + 1);
  if (!p) return DEXA_E_NOMEM;
  if (n) memcpy(p, s, n);
  p[n] = '\0';
  *slot = p;
  if (slot_len) *slot_len = n;
  return DEXA_OK;
}

void dexa__step_row_free(dexa__step_row *r) {
  if (!r) return;
  free(r->session_id);
  free(r->exec_id);
  free(r->step_type);
  free(r->input);
  free(r->options);
  free(r->wait);
  free(r->conditions);
  free(r->recovery_error);
  free(r->lease_owner);
  memset(r, 0, sizeof *r);
}

void dexa__step_rows_free(dexa__step_row *rows, size_t n) {
  for (size_t i = 0; i < n; i++) dexa__step_row_free(&rows[i]);
  free(rows);
}

void dexa__session_row_free(dexa__session_row *r) {
  if (!r) return;
  free(r->session_id);
  free(r->flow_type);
  memset(r, 0, sizeof *r);
}

/* ":memory:" must be shared by the writer and the reader connections, so it
 * is a private file in the temporary directory, removed at close. */
static int temp_path(char *buf, size_t n) {
  const char *dir = getenv("TMPDIR");
  snprintf(buf, n, "%s/dexagents-XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp(buf);
  if (fd < 0) return DEXA_E_IO;
  close(fd);
  return DEXA_OK;
}

int dexa__store_open(dexa__store **out, const dexa__store_config *cfg, char *errmsg,
                     size_t errmsg_size) {
  *out = NULL;
  const char *uri = cfg->uri && *cfg->uri ? cfg->uri : "dexagents.db";
  if (cfg->synchronous && strcmp(cfg->synchronous, "full") != 0 &&
      strcmp(cfg->synchronous, "normal") != 0) {
    if (errmsg) snprintf(errmsg, errmsg_size, "sqlite_synchronous must be full or normal");
    return DEXA_E_INVALID_ARG;
  }
  if (dexa__store_is_pg(uri)) return dexa__pg_open(out, uri, cfg, errmsg, errmsg_size);
  if (strncmp(uri, "sqlite:", 7) == 0) uri += 7;
  if (strcmp(uri, ":memory:") == 0) {
    char path[4096];
    if (temp_path(path, sizeof path) != DEXA_OK) {
      if (errmsg) snprintf(errmsg, errmsg_size, "cannot create a temporary store file");
      return DEXA_E_IO;
    }
    dexa__store_config private_cfg = *cfg;
    private_cfg.synchronous = "normal";
    int rc = dexa__sqlite_open(out, path, 1, &private_cfg, errmsg, errmsg_size);
    if (rc != DEXA_OK) unlink(path);
    return rc;
  }
  return dexa__sqlite_open(out, uri, 0, cfg, errmsg, errmsg_size);
}
