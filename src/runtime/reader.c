/* The attribute reader handed to dexa_dispatch. Inside a write transaction
 * (locked steps, RPCs) it reads through that transaction. Otherwise it
 * reads the session cache (store/session_cache.h), once it has made sure,
 * at its first read, that the cache holds the session at the version the
 * task's claim saw or at the store's current one (loading it if not). What
 * the cache cannot answer, a pooled read connection does (WAL: never
 * blocks the writer), each callback as its own statement, so a long model
 * call pins no snapshot. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "store/session_cache.h"
#include "util/buf.h"

int dexa__pool_acquire(dexa_runtime *rt, dexa__store_conn **out) {
  pthread_mutex_lock(&rt->pool_mu);
  dexa__store_conn *c = rt->pool_count ? rt->pool[--rt->pool_count] : NULL;
  pthread_mutex_unlock(&rt->pool_mu);
  if (c) {
    *out = c;
    return DEXA_OK;
  }
  return rt->store->ops->conn_open(rt->store, out);
}

void dexa__pool_release(dexa_runtime *rt, dexa__store_conn *c) {
  pthread_mutex_lock(&rt->pool_mu);
  if (rt->pool_count == rt->pool_cap) {
    size_t cap = rt->pool_cap ? rt->pool_cap * 2 : 8;
    dexa__store_conn **p = realloc(rt->pool, cap * sizeof *p);
    if (!p) {
      pthread_mutex_unlock(&rt->pool_mu);
      c->ops->conn_close(c);
      return;
    }
    rt->pool = p;
    rt->pool_cap = cap;
  }
  rt->pool[rt->pool_count++] = c;
  pthread_mutex_unlock(&rt->pool_mu);
}

static int copy_out(dexa__reader *r, const char *v, size_t n, const char **value,
                    size_t *value_len) {
  if (dexa__grow(&r->buf, &r->cap, n + 1) != 0) return DEXA_E_NOMEM;
  if (n) memcpy(r->buf, v, n);
  r->buf[n] = '\0';
  *value = r->buf;
  *value_len = n;
  return DEXA_OK;
}

/* A pooled reader's first read. A claimed task knows the data version its
 * claim saw; when the cache holds that version or a newer one (it does
 * after this process wrote the session last), nothing is read. Otherwise
 * one indexed read gives the session's version, and the whole session is
 * read only when the cache lacks that. */
static void open_view(dexa__reader *r) {
  if (r->view != 0) return;
  r->view = -1;
  dexa__session_cache *cache = r->rt->store->cache;
  if (!cache) return;
  if (r->claimed_ver > 0 && dexa__session_cache_holds(cache, r->session_id, r->claimed_ver)) {
    r->ver = r->claimed_ver;
    r->view = 1;
    return;
  }
  dexa__store_conn *c = NULL;
  char why[512];
  int rc = dexa__pool_acquire(r->rt, &c);
  if (rc == DEXA_OK) {
    rc = dexa__session_cache_load(cache, c, r->session_id, &r->ver);
    if (rc == DEXA_OK) r->view = 1;
    dexa__pool_release(r->rt, c);
  }
  if (rc != DEXA_OK)
    dexa__log(r->rt, DEXA_LOG_WARNING, "cache-load",
              "session %s: cannot load the session cache: %s; reading the store instead",
              r->session_id, dexa__store_error(r->rt, rc, why, sizeof why));
}

int dexa__reader_get(void *user, const char *key, size_t key_len, const char **value,
                     size_t *value_len) {
  dexa__reader *r = user;
  if (!key || !value || !value_len) return DEXA_E_INVALID_ARG;
  if (r->conn)
    return r->conn->ops->attr_get(r->conn, r->session_id, key, key_len, value, value_len);
  open_view(r);
  int rc = DEXA__CACHE_MISS;
  if (r->view == 1)
    rc = dexa__session_cache_get(r->rt->store->cache, r->session_id, r->ver, key, key_len,
                                 &r->buf, &r->cap, value, value_len);
  if (rc != DEXA__CACHE_MISS) return rc;
  dexa__store_conn *c = NULL;
  rc = dexa__pool_acquire(r->rt, &c);
  if (rc != DEXA_OK) return rc;
  const char *v = NULL;
  size_t n = 0;
  rc = c->ops->attr_get(c, r->session_id, key, key_len, &v, &n);
  if (rc == DEXA_OK) rc = copy_out(r, v, n, value, value_len);
  dexa__pool_release(r->rt, c);
  return rc;
}

int dexa__reader_scan(void *user, const char *prefix, size_t prefix_len,
                      dexa_attr_visit_fn visit, void *visit_ctx) {
  dexa__reader *r = user;
  if (!visit || (!prefix && prefix_len)) return DEXA_E_INVALID_ARG;
  if (!prefix) prefix = "";
  if (r->conn)
    return r->conn->ops->attr_scan(r->conn, r->session_id, prefix, prefix_len, visit, visit_ctx);
  open_view(r);
  int rc = DEXA__CACHE_MISS;
  if (r->view == 1)
    rc = dexa__session_cache_scan(r->rt->store->cache, r->session_id, r->ver, prefix, prefix_len,
                                  &r->scanbuf, &r->scancap, visit, visit_ctx);
  if (rc != DEXA__CACHE_MISS) return rc;
  dexa__store_conn *c = NULL;
  rc = dexa__pool_acquire(r->rt, &c);
  if (rc != DEXA_OK) return rc;
  rc = c->ops->attr_scan(c, r->session_id, prefix, prefix_len, visit, visit_ctx);
  dexa__pool_release(r->rt, c);
  return rc;
}

void dexa__reader_free(dexa__reader *r) {
  free(r->buf);
  free(r->scanbuf);
  r->buf = r->scanbuf = NULL;
  r->cap = r->scancap = 0;
  r->view = 0;
}
