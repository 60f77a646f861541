/* The attribute reader handed to dexa_dispatch. Inside a write transaction
 * (locked steps, RPCs) it reads through that transaction; otherwise each
 * callback borrows a pooled read connection (WAL: never blocks the writer)
 * and runs as its own statement, so a long model call pins no snapshot. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"

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
  if (n + 1 > r->cap) {
    char *nb = realloc(r->buf, n + 1);
    if (!nb) return DEXA_E_NOMEM;
    r->buf = nb;
    r->cap = n + 1;
  }
  if (n) memcpy(r->buf, v, n);
  r->buf[n] = '\0';
  *value = r->buf;
  *value_len = n;
  return DEXA_OK;
}

int dexa__reader_get(void *user, const char *key, size_t key_len, const char **value,
                     size_t *value_len) {
  dexa__reader *r = user;
  if (!key || !value || !value_len) return DEXA_E_INVALID_ARG;
  if (r->conn)
    return r->conn->ops->attr_get(r->conn, r->session_id, key, key_len, value, value_len);
  dexa__store_conn *c = NULL;
  int rc = dexa__pool_acquire(r->rt, &c);
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
  dexa__store_conn *c = NULL;
  int rc = dexa__pool_acquire(r->rt, &c);
  if (rc != DEXA_OK) return rc;
  rc = c->ops->attr_scan(c, r->session_id, prefix, prefix_len, visit, visit_ctx);
  dexa__pool_release(r->rt, c);
  return rc;
}

void dexa__reader_free(dexa__reader *r) {
  free(r->buf);
  r->buf = NULL;
  r->cap = 0;
}
