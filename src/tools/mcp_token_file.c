/* The default token store: one JSON object {"<key>": <record>, ...} in one
 * file, mode 0600 in a directory of mode 0700 (created when missing). A
 * write reads the file, changes one record and replaces the file by rename
 * under an exclusive flock on a ".lock" beside it, so processes on one
 * machine (a worker and the process that completes a sign-in) see each
 * other's records and never half a file. Records are small and few (one
 * per server, registration and sign-in in progress). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dexagents/errors.h"
#include "tools/mcp_internal.h"

#define MAX_FILE (4 * 1024 * 1024)

char *dexa__token_file_default(void) {
  const char *state = getenv("XDG_STATE_HOME");
  const char *home = getenv("HOME");
  dexa__buf b;
  dexa__buf_init(&b);
  if (state && state[0] == '/') dexa__buf_printf(&b, "%s/dexagents/mcp-tokens.json", state);
  else if (home && home[0] == '/') dexa__buf_printf(&b, "%s/.local/state/dexagents/mcp-tokens.json", home);
  else return NULL;
  dexa__buf_cstr(&b);
  return dexa__buf_steal(&b, NULL);
}

/* mkdir -p of the file's directory; new directories get mode 0700. */
static int make_dirs(const char *path) {
  char *dir = strdup(path);
  if (!dir) return DEXA_E_NOMEM;
  char *slash = strrchr(dir, '/');
  int rc = DEXA_OK;
  if (slash && slash != dir) {
    *slash = '\0';
    for (char *p = dir + 1; rc == DEXA_OK; p++) {
      if (*p != '/' && *p != '\0') continue;
      char keep = *p;
      *p = '\0';
      if (mkdir(dir, 0700) != 0 && errno != EEXIST) rc = DEXA_E_IO;
      *p = keep;
      if (!keep) break;
    }
  }
  free(dir);
  return rc;
}

static cJSON *read_all(const char *path, int *rc) {
  *rc = DEXA_OK;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) *rc = DEXA_E_IO;
    return *rc == DEXA_OK ? cJSON_CreateObject() : NULL;
  }
  dexa__buf b;
  dexa__buf_init(&b);
  char chunk[8192];
  ssize_t n;
  while ((n = read(fd, chunk, sizeof chunk)) > 0 && b.len < MAX_FILE) dexa__buf_append(&b, chunk, (size_t)n);
  close(fd);
  if (n < 0) *rc = DEXA_E_IO;
  else if (b.len >= MAX_FILE) *rc = DEXA_E_TOO_LARGE;
  else if (b.oom) *rc = DEXA_E_NOMEM;
  cJSON *doc = *rc == DEXA_OK ? (b.len ? cJSON_ParseWithLength(b.data, b.len) : cJSON_CreateObject()) : NULL;
  dexa__buf_free(&b);
  if (*rc == DEXA_OK && !cJSON_IsObject(doc)) *rc = DEXA_E_CORRUPT;
  if (*rc != DEXA_OK) {
    cJSON_Delete(doc);
    return NULL;
  }
  return doc;
}

/* Takes the lock file beside path; returns its descriptor or -1. */
static int lock_file(const char *path, int exclusive) {
  char lock[4096];
  if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock) return -1;
  int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int dexa__token_file_get(const char *path, const char *key, char **out) {
  *out = NULL;
  int lk = lock_file(path, 0);
  if (lk < 0 && errno != ENOENT) return DEXA_E_IO;
  int rc;
  cJSON *doc = read_all(path, &rc);
  if (lk >= 0) close(lk);
  if (rc != DEXA_OK) return rc;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);
  if (v) {
    *out = cJSON_PrintUnformatted(v);
    if (!*out) rc = DEXA_E_NOMEM;
  }
  cJSON_Delete(doc);
  return rc;
}

static int write_all(const char *path, const char *text) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp) return DEXA_E_INVALID_ARG;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return DEXA_E_IO;
  size_t len = strlen(text), off = 0;
  int rc = DEXA_OK;
  while (off < len && rc == DEXA_OK) {
    ssize_t n = write(fd, text + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) rc = DEXA_E_IO;
    else off += (size_t)n;
  }
  if (rc == DEXA_OK && (fchmod(fd, 0600) != 0 || fsync(fd) != 0)) rc = DEXA_E_IO;
  if (close(fd) != 0 && rc == DEXA_OK) rc = DEXA_E_IO;
  if (rc == DEXA_OK && rename(tmp, path) != 0) rc = DEXA_E_IO;
  if (rc != DEXA_OK) unlink(tmp);
  return rc;
}

int dexa__token_file_put(const char *path, const char *key, const char *value) {
  cJSON *rec = value ? cJSON_Parse(value) : NULL;
  if (value && !rec) return DEXA_E_INVALID_JSON;
  int rc = make_dirs(path);
  int lk = rc == DEXA_OK ? lock_file(path, 1) : -1;
  if (rc == DEXA_OK && lk < 0) rc = DEXA_E_IO;
  cJSON *doc = rc == DEXA_OK ? read_all(path, &rc) : NULL;
  if (rc == DEXA_OK) {
    cJSON_DeleteItemFromObjectCaseSensitive(doc, key);
    if (rec) {
      cJSON_AddItemToObject(doc, key, rec);
      rec = NULL;
    }
    char *text = cJSON_PrintUnformatted(doc);
    rc = text ? write_all(path, text) : DEXA_E_NOMEM;
    cJSON_free(text);
  }
  if (lk >= 0) close(lk);
  cJSON_Delete(doc);
  cJSON_Delete(rec);
  return rc;
}
