/* What the host shares with every MCP source of a configuration: the token
 * store (its own through dexa_mcp_token_store_vtable, or the file store),
 * the sign-in redirect, the client name, and the log callback. A
 * configuration and each source made from it hold a reference, so the
 * sources keep working after the configuration is freed; what is set on
 * the configuration later reaches only sources made later (documented). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "tools/mcp_internal.h"

struct dexa__mcp_host {
  atomic_int refs;
  pthread_mutex_t mu; /* the file store: one writer per process at a time */
  char *redirect_uri;
  char *client_name;
  char *token_file; /* NULL: the default file, found when first used */
  dexa_mcp_token_store_vtable store;
  void *store_ud;
  int has_store;
  void (*log)(void *, int, const char *);
  void *log_ud;
};

dexa__mcp_host *dexa__mcp_host_new(void) {
  dexa__mcp_host *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  atomic_init(&h->refs, 1);
  pthread_mutex_init(&h->mu, NULL);
  return h;
}

dexa__mcp_host *dexa__mcp_host_ref(dexa__mcp_host *h) {
  if (h) atomic_fetch_add(&h->refs, 1);
  return h;
}

void dexa__mcp_host_unref(dexa__mcp_host *h) {
  if (!h || atomic_fetch_sub(&h->refs, 1) != 1) return;
  free(h->redirect_uri);
  free(h->client_name);
  free(h->token_file);
  pthread_mutex_destroy(&h->mu);
  free(h);
}

static int set_str(char **dst, const char *v) {
  char *d = v ? strdup(v) : NULL;
  if (v && !d) return DEXA_E_NOMEM;
  free(*dst);
  *dst = d;
  return DEXA_OK;
}

int dexa__mcp_host_set_auth(dexa__mcp_host *h, const dexa_mcp_auth_options *o) {
  if (o->redirect_uri && strncmp(o->redirect_uri, "http://", 7) && strncmp(o->redirect_uri, "https://", 8))
    return DEXA_E_INVALID_ARG;
  if (o->token_store && (o->token_store->struct_size < sizeof(dexa_mcp_token_store_vtable) ||
                         !o->token_store->get || !o->token_store->put))
    return DEXA_E_INVALID_ARG;
  int rc = set_str(&h->redirect_uri, o->redirect_uri);
  if (rc == DEXA_OK) rc = set_str(&h->client_name, o->client_name);
  if (rc == DEXA_OK) rc = set_str(&h->token_file, o->token_file);
  if (rc != DEXA_OK) return rc;
  h->has_store = o->token_store != NULL;
  if (o->token_store) h->store = *o->token_store;
  h->store_ud = o->token_store_user_data;
  return DEXA_OK;
}

void dexa__mcp_host_set_log(dexa__mcp_host *h, void (*log)(void *, int, const char *), void *ud) {
  h->log = log;
  h->log_ud = ud;
}

const char *dexa__mcp_host_redirect(const dexa__mcp_host *h) { return h ? h->redirect_uri : NULL; }

const char *dexa__mcp_host_client_name(const dexa__mcp_host *h) {
  return h && h->client_name ? h->client_name : "libdexagents";
}

void dexa__mcp_log(const dexa__mcp_host *h, int level, const char *fmt, ...) {
  if (!h || !h->log) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  /* One line: a server's message may hold line breaks. */
  for (char *p = line; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  h->log(h->log_ud, level, line);
}

/* The file store's path: the host's, or the default (kept once found). */
static const char *file_of(dexa__mcp_host *h) {
  if (!h->token_file) h->token_file = dexa__token_file_default();
  return h->token_file;
}

int dexa__mcp_store_get(dexa__mcp_host *h, const char *key, char **out) {
  *out = NULL;
  if (!h) return DEXA_E_UNSUPPORTED;
  if (h->has_store) {
    const char *v = NULL;
    size_t n = 0;
    int rc = h->store.get(h->store_ud, key, &v, &n);
    if (rc == DEXA_E_NOT_FOUND) return DEXA_OK;
    if (rc != DEXA_OK || !v) return DEXA_E_CALLBACK_FAILED;
    *out = strndup(v, n);
    return *out ? DEXA_OK : DEXA_E_NOMEM;
  }
  pthread_mutex_lock(&h->mu);
  const char *path = file_of(h);
  int rc = path ? dexa__token_file_get(path, key, out) : DEXA_E_UNSUPPORTED;
  pthread_mutex_unlock(&h->mu);
  return rc;
}

int dexa__mcp_store_put(dexa__mcp_host *h, const char *key, const char *value) {
  if (!h) return DEXA_E_UNSUPPORTED;
  if (h->has_store)
    return h->store.put(h->store_ud, key, value, value ? strlen(value) : 0) == DEXA_OK
               ? DEXA_OK
               : DEXA_E_CALLBACK_FAILED;
  pthread_mutex_lock(&h->mu);
  const char *path = file_of(h);
  int rc = path ? dexa__token_file_put(path, key, value) : DEXA_E_UNSUPPORTED;
  pthread_mutex_unlock(&h->mu);
  return rc;
}

/* ---- the ABI ---- */

DEXA_EXTERN int dexa_mcp_token_store_vtable_init(dexa_mcp_token_store_vtable *vtable,
                                                 size_t struct_size) {
  if (!vtable) return DEXA_E_INVALID_ARG;
  if (struct_size < sizeof(dexa_mcp_token_store_vtable)) return DEXA_E_STRUCT_SIZE;
  memset(vtable, 0, struct_size);
  vtable->struct_size = (uint32_t)sizeof(dexa_mcp_token_store_vtable);
  return DEXA_OK;
}

DEXA_EXTERN int dexa_mcp_auth_options_init(dexa_mcp_auth_options *options, size_t struct_size) {
  if (!options) return DEXA_E_INVALID_ARG;
  if (struct_size < sizeof(dexa_mcp_auth_options)) return DEXA_E_STRUCT_SIZE;
  memset(options, 0, struct_size);
  options->struct_size = (uint32_t)sizeof(dexa_mcp_auth_options);
  return DEXA_OK;
}

DEXA_EXTERN int dexa_mcp_config_set_auth(dexa_mcp_config *config,
                                         const dexa_mcp_auth_options *options) {
  if (!config || !options || !config->host) return DEXA_E_INVALID_ARG;
  if (options->struct_size < sizeof(dexa_mcp_auth_options)) return DEXA_E_STRUCT_SIZE;
  return dexa__mcp_host_set_auth(config->host, options);
}

DEXA_EXTERN int dexa_mcp_config_set_log(dexa_mcp_config *config,
                                        void (*log)(void *user_data, int level,
                                                    const char *message),
                                        void *user_data) {
  if (!config || !config->host) return DEXA_E_INVALID_ARG;
  dexa__mcp_host_set_log(config->host, log, user_data);
  return DEXA_OK;
}
