/* PostgreSQL backend: sessions, attributes, channels and events.
 *
 * A write transaction reads each session's row once, locked (FOR UPDATE),
 * into its session memo (session_memo.h) and writes the counters it raised
 * once, before COMMIT, as the SQLite backend does; the lock is what makes
 * the counters safe when other processes write the same session. */
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "store/pg_internal.h"
#include "store/value_pack.h"
#include "util/buf.h"

#include <pthread.h>

int dexa__pg_touch(pg_conn *c, const char *sid) {
  if (!c->writing) return DEXA_OK;
  for (size_t i = c->ntouched; i > 0; i--)
    if (strcmp(c->touched[i - 1], sid) == 0) return DEXA_OK;
  if (dexa__grow_array(&c->touched, c->ntouched, &c->touched_cap, sizeof *c->touched) != 0)
    return DEXA_E_NOMEM;
  char *copy = strdup(sid);
  if (!copy) return DEXA_E_NOMEM;
  c->touched[c->ntouched++] = copy;
  return DEXA_OK;
}

/* Binds a session-data value: packed (value_pack.h) when that makes it
 * smaller, else its bytes as they are. */
static int bind_value(pg_conn *c, pg_params *p, const char *v, size_t n) {
  if (dexa__grow(&c->packbuf, &c->packcap, dexa__value_pack_bound(n)) != 0) return DEXA_E_NOMEM;
  size_t packed = dexa__value_pack(v, n, (unsigned char *)c->packbuf);
  if (packed == 0)
    dexa__pg_p_bytes(p, v, n);
  else
    dexa__pg_p_bytes(p, c->packbuf, packed);
  return DEXA_OK;
}

/* A session-data value as the JSON it stands for, NUL-terminated: libpq's
 * own copy, or a packed value unpacked into the connection's buffer. */
int dexa__pg_column_value(pg_conn *c, const PGresult *r, int row, int col, const char **v,
                          size_t *n) {
  const unsigned char *p = (const unsigned char *)PQgetvalue(r, row, col);
  size_t pn = (size_t)PQgetlength(r, row, col);
  if (!dexa__value_is_packed(p, pn)) {
    *v = (const char *)p; /* libpq ends every value with a NUL */
    *n = pn;
    return DEXA_OK;
  }
  size_t len = 0;
  if (dexa__value_unpacked_len(p, pn, &len) != DEXA_OK) return DEXA_E_CORRUPT;
  if (len > SIZE_MAX - DEXA__UNPACK_SLACK || dexa__grow(&c->buf, &c->cap, len + DEXA__UNPACK_SLACK) != 0)
    return DEXA_E_NOMEM;
  if (dexa__value_unpack(p, pn, c->buf, len) != DEXA_OK) return DEXA_E_CORRUPT;
  c->buf[len] = '\0';
  *v = c->buf;
  *n = len;
  return DEXA_OK;
}

/* ---- the transaction's attributes ---------------------------------------------
 * A write transaction holds its sessions' row locks, and every writer of a
 * session's attributes takes that lock first: what it read of them stays
 * true until it commits, except for its own writes, which update these
 * entries. So each attribute is read at most once per transaction, and the
 * keys write transactions keep reading (the store's hot keys, learned as
 * they are asked for) come with the session's lock in the same round trip.
 * A savepoint rolled back forgets them all (they are read again). */

void dexa__pg_txattr_clear(pg_conn *c) {
  for (size_t i = 0; i < c->ntxa; i++) {
    free(c->txa[i].key);
    free(c->txa[i].val);
  }
  c->ntxa = 0;
}

static pg_txattr *txattr_find(pg_conn *c, int64_t skey, const char *key, size_t klen) {
  for (size_t i = 0; i < c->ntxa; i++) {
    pg_txattr *a = &c->txa[i];
    if (a->skey == skey && a->klen == klen && memcmp(a->key, key, klen) == 0) return a;
  }
  return NULL;
}

/* Records key's value (val NULL: none). Out of memory: forgets the entry
 * (it is read again), never keeps a wrong one. */
static void txattr_set(pg_conn *c, int64_t skey, const char *key, size_t klen, const char *val,
                       size_t vlen) {
  pg_txattr *a = txattr_find(c, skey, key, klen);
  char *copy = NULL;
  if (val) {
    copy = malloc(vlen + 1);
    if (copy) {
      memcpy(copy, val, vlen);
      copy[vlen] = '\0';
    }
  }
  if (val && !copy) {
    if (a) {
      free(a->key);
      free(a->val);
      *a = c->txa[--c->ntxa];
    }
    return;
  }
  if (a) {
    free(a->val);
    a->val = copy;
    a->vlen = vlen;
    return;
  }
  char *k = malloc(klen ? klen : 1);
  if (!k || dexa__grow_array(&c->txa, c->ntxa, &c->txa_cap, sizeof *c->txa) != 0) {
    free(k);
    free(copy);
    return;
  }
  memcpy(k, key, klen);
  c->txa[c->ntxa++] = (pg_txattr){skey, k, klen, copy, vlen};
}

/* Notes a key a write transaction read that it had not fetched. */
static void hot_learn(pg_store *s, const char *key, size_t klen) {
  if (klen == 0 || klen > PG_HOT_KEY_MAX) return;
  pthread_mutex_lock(&s->hot_mu);
  int have = 0;
  for (int i = 0; i < s->nhot && !have; i++)
    have = s->hot_len[i] == klen && memcmp(s->hot[i], key, klen) == 0;
  if (!have && s->nhot < PG_HOT_KEYS && (s->hot[s->nhot] = malloc(klen))) {
    memcpy(s->hot[s->nhot], key, klen);
    s->hot_len[s->nhot++] = klen;
  }
  pthread_mutex_unlock(&s->hot_mu);
}

/* The hot keys as a text[] literal of hex strings into b; 0 when none. */
static int hot_keys(pg_store *s, dexa__buf *b) {
  static const char hex[] = "0123456789abcdef";
  pthread_mutex_lock(&s->hot_mu);
  int n = s->nhot;
  dexa__buf_putc(b, '{');
  for (int i = 0; i < n; i++) {
    if (i) dexa__buf_putc(b, ',');
    for (size_t j = 0; j < s->hot_len[i]; j++) {
      unsigned char ch = (unsigned char)s->hot[i][j];
      dexa__buf_putc(b, hex[ch >> 4]);
      dexa__buf_putc(b, hex[ch & 15]);
    }
  }
  dexa__buf_putc(b, '}');
  dexa__buf_putc(b, '\0');
  pthread_mutex_unlock(&s->hot_mu);
  return b->oom ? 0 : n;
}

/* Takes the prefetch's rows; the hot keys it did not return do not exist. */
static void prefetch_take(pg_conn *c, int64_t skey, const PGresult *r) {
  pg_store *s = c->store;
  for (int i = 0; i < PQntuples(r); i++) {
    const char *v;
    size_t vn;
    if (dexa__pg_column_value(c, r, i, 1, &v, &vn) != DEXA_OK) continue;
    txattr_set(c, skey, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0), v, vn);
  }
  pthread_mutex_lock(&s->hot_mu);
  for (int i = 0; i < s->nhot; i++)
    if (!txattr_find(c, skey, s->hot[i], s->hot_len[i]))
      txattr_set(c, skey, s->hot[i], s->hot_len[i], NULL, 0);
  pthread_mutex_unlock(&s->hot_mu);
}

/* ---- sessions ----------------------------------------------------------------- */

int dexa__pg_session_insert(dexa__store_conn *base, const char *id, const char *flow_type,
                            int64_t created_ms, const char *settings, size_t settings_len) {
  pg_conn *c = (pg_conn *)base;
  pg_params p = {0};
  dexa__pg_p_text(&p, id);
  dexa__pg_p_text(&p, flow_type);
  dexa__pg_p_int(&p, created_ms);
  dexa__pg_p_bytes(&p, settings, settings_len);
  int64_t n = 0;
  int rc = dexa__pg_exec(c, PG_SESSION_INSERT, &p, &n);
  if (rc == DEXA_OK && n == 0) rc = DEXA_E_ALREADY_EXISTS;
  if (rc == DEXA_OK) rc = dexa__pg_touch(c, id);
  return rc;
}

/* Reads the session's row (locked in a write transaction) into a new memo
 * row. */
static int read_row(pg_conn *c, const char *id, dexa__memo_row *row) {
  pg_params p = {0};
  dexa__pg_p_text(&p, id);
  int rc;
  PGresult *r = NULL, *pre = NULL;
  dexa__buf keys;
  dexa__buf_init(&keys);
  if (c->writing && c->pipe && hot_keys(c->store, &keys) > 0) {
    pg_params q = {0};
    dexa__pg_p_text(&q, id);
    dexa__pg_p_bytes(&q, keys.data, keys.len - 1);
    q.fmt[1] = 0; /* the array literal is text */
    rc = dexa__pg_run2(c, PG_SESSION_LOCK, &p, PG_ATTR_PREFETCH, &q, &r, &pre);
  } else {
    r = dexa__pg_run(c, c->writing ? PG_SESSION_LOCK : PG_SESSION_GET, &p, &rc);
  }
  dexa__buf_free(&keys);
  if (!r) return rc;
  if (PQntuples(r) == 0) {
    PQclear(r);
    if (pre) PQclear(pre);
    return DEXA_E_NOT_FOUND;
  }
  *row = (dexa__memo_row){strdup(id), strdup(PQgetvalue(r, 0, 0)), dexa__pg_int(r, 0, 6),
                          dexa__pg_int(r, 0, 1), (int32_t)dexa__pg_int(r, 0, 2),
                          dexa__pg_int(r, 0, 3), dexa__pg_int(r, 0, 5),
                          dexa__pg_int(r, 0, 4), 0, dexa__pg_int(r, 0, 7)};
  PQclear(r);
  if (pre) {
    prefetch_take(c, row->skey, pre);
    PQclear(pre);
  }
  return DEXA_OK;
}

int dexa__pg_memo_row(pg_conn *c, const char *sid, dexa__memo_row **out) {
  *out = dexa__session_memo_find(&c->memo, sid);
  if (*out) return (*out)->skey < 0 ? DEXA_E_NOT_FOUND : DEXA_OK; /* purged */
  dexa__memo_row row;
  int rc = read_row(c, sid, &row);
  if (rc != DEXA_OK) return rc;
  *out = row.session_id && row.flow_type ? dexa__session_memo_add(&c->memo, &row) : NULL;
  if (!*out) {
    free(row.session_id);
    free(row.flow_type);
    return DEXA_E_NOMEM;
  }
  return DEXA_OK;
}

int dexa__pg_lock_session(pg_conn *c, const char *sid) {
  if (!c->writing) return DEXA_OK;
  dexa__memo_row *row;
  return dexa__pg_memo_row(c, sid, &row);
}

int dexa__pg_write_counters(pg_conn *c) {
  for (size_t i = 0; i < c->memo.nrows; i++) {
    dexa__memo_row *row = &c->memo.rows[i];
    if (!row->dirty) continue;
    if (dexa__session_memo_will_change(&c->memo, row) != 0) return DEXA_E_NOMEM;
    pg_params p = {0};
    dexa__pg_p_text(&p, row->session_id);
    dexa__pg_p_int(&p, row->event_seq);
    dexa__pg_p_int(&p, row->step_ord);
    dexa__pg_p_int(&p, row->data_ver);
    int rc = dexa__pg_exec(c, PG_SESSION_SET_COUNTERS, &p, NULL);
    if (rc != DEXA_OK) return rc;
    row->dirty = 0;
  }
  return DEXA_OK;
}

/* Ends an operation on the memo: outside a write transaction nothing is
 * kept (changes are written at once). */
static int settle(pg_conn *c, int rc) {
  if (c->writing) return rc;
  if (rc == DEXA_OK) rc = dexa__pg_write_counters(c);
  dexa__session_memo_clear(&c->memo);
  return rc;
}

int dexa__pg_session_get(dexa__store_conn *base, const char *id, dexa__session_row *out) {
  pg_conn *c = (pg_conn *)base;
  memset(out, 0, sizeof *out);
  dexa__memo_row *row;
  int rc = dexa__pg_memo_row(c, id, &row);
  if (rc == DEXA_OK) {
    out->session_id = strdup(id);
    out->flow_type = strdup(row->flow_type);
    out->created_ms = row->created_ms;
    out->status = row->status;
    out->event_seq = row->event_seq;
    out->data_ver = row->data_ver;
    out->active_ms = row->active_ms;
    if (!out->session_id || !out->flow_type) rc = DEXA_E_NOMEM;
  }
  if (rc != DEXA_OK) dexa__session_row_free(out);
  return settle(c, rc);
}

int dexa__pg_session_set_status(dexa__store_conn *base, const char *id, int32_t status) {
  pg_conn *c = (pg_conn *)base;
  int rc = dexa__pg_lock_session(c, id);
  if (rc != DEXA_OK) return rc;
  dexa__memo_row *row = dexa__session_memo_find(&c->memo, id);
  if (row && dexa__session_memo_will_change(&c->memo, row) != 0) return DEXA_E_NOMEM;
  pg_params p = {0};
  dexa__pg_p_text(&p, id);
  dexa__pg_p_int(&p, status);
  rc = dexa__pg_exec(c, PG_SESSION_STATUS, &p, NULL);
  if (rc == DEXA_OK && row) row->status = status;
  if (rc == DEXA_OK) rc = dexa__pg_touch(c, id);
  return rc;
}

/* The counters the memo holds for the caller to raise, undo-logged. */
static int counters(pg_conn *c, const char *id, dexa__memo_row **row) {
  int rc = dexa__pg_memo_row(c, id, row);
  if (rc == DEXA_OK && dexa__session_memo_will_change(&c->memo, *row) != 0) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) (*row)->dirty = 1;
  if (rc == DEXA_OK) rc = dexa__pg_touch(c, id);
  return rc;
}

int dexa__pg_session_bump_events(dexa__store_conn *base, const char *id, int64_t n,
                                 int64_t *seq) {
  pg_conn *c = (pg_conn *)base;
  dexa__memo_row *row;
  int rc = counters(c, id, &row);
  if (rc == DEXA_OK) *seq = row->event_seq += n;
  return settle(c, rc);
}

int dexa__pg_session_next_ord(dexa__store_conn *base, const char *id, int64_t *ord) {
  pg_conn *c = (pg_conn *)base;
  dexa__memo_row *row;
  int rc = counters(c, id, &row);
  if (rc == DEXA_OK) *ord = ++row->step_ord;
  return settle(c, rc);
}

int dexa__pg_session_data_version(dexa__store_conn *base, const char *id, int64_t *ver) {
  pg_conn *c = (pg_conn *)base;
  if (c->writing) {
    dexa__memo_row *row;
    int rc = dexa__pg_memo_row(c, id, &row);
    if (rc == DEXA_OK) *ver = row->data_ver;
    return rc;
  }
  pg_params p = {0};
  dexa__pg_p_text(&p, id);
  int rc;
  PGresult *r = dexa__pg_run(c, PG_SESSION_DATA_VER, &p, &rc);
  if (!r) return rc;
  rc = PQntuples(r) ? DEXA_OK : DEXA_E_NOT_FOUND;
  if (rc == DEXA_OK) *ver = dexa__pg_int(r, 0, 0);
  PQclear(r);
  return rc;
}

/* Before the transaction's first attribute write of a session: raises its
 * data version, which tells every cache in every process that what it
 * holds of the session is old. */
static int raise_data_version(pg_conn *c, const char *sid) {
  if (!dexa__write_log_needs_bump(&c->log, sid)) return DEXA_OK;
  dexa__memo_row *row;
  int rc = counters(c, sid, &row);
  if (rc == DEXA_OK) dexa__write_log_bumped(&c->log, sid, ++row->data_ver);
  return settle(c, rc);
}

/* Visits the session rows of r (session_id, flow_type, created_ms, status,
 * event_seq, active_ms, as the listing statements select them) and clears r. */
static int visit_session_rows(PGresult *r, dexa__session_visit_fn visit, void *ctx) {
  int rc = DEXA_OK;
  for (int i = 0; rc == DEXA_OK && i < PQntuples(r); i++) {
    dexa__session_row row = {0};
    rc = dexa__pg_dup(r, i, 0, &row.session_id, NULL);
    if (rc == DEXA_OK) rc = dexa__pg_dup(r, i, 1, &row.flow_type, NULL);
    row.created_ms = dexa__pg_int(r, i, 2);
    row.status = (int32_t)dexa__pg_int(r, i, 3);
    row.event_seq = dexa__pg_int(r, i, 4);
    row.active_ms = dexa__pg_int(r, i, 5);
    if (rc == DEXA_OK) rc = visit(ctx, &row);
    dexa__session_row_free(&row);
  }
  PQclear(r);
  return rc;
}

int dexa__pg_session_list(dexa__store_conn *base, int64_t before_ms, const char *before_id,
                          int32_t limit, dexa__session_visit_fn visit, void *ctx) {
  pg_conn *c = (pg_conn *)base;
  int rc = c->writing ? dexa__pg_write_counters(c) : DEXA_OK;
  if (rc != DEXA_OK) return rc;
  pg_params p = {0};
  dexa__pg_p_int(&p, limit);
  if (before_id) {
    dexa__pg_p_int(&p, before_ms);
    dexa__pg_p_text(&p, before_id);
  }
  PGresult *r = dexa__pg_run(c, before_id ? PG_SESSION_LIST_AFTER : PG_SESSION_LIST_FIRST, &p, &rc);
  return r ? visit_session_rows(r, visit, ctx) : rc;
}

/* ---- session data --------------------------------------------------------------- */

/* The first two parameters of an attrs, channel_msgs or events statement: the session id and,
 * in a write transaction, its skey from the memo (which also locks the
 * session); NULL lets the statement look it up. */
static int bind_session(pg_conn *c, pg_params *p, const char *sid) {
  dexa__pg_p_text(p, sid);
  if (!c->writing) {
    dexa__pg_p_null(p);
    return DEXA_OK;
  }
  dexa__memo_row *row;
  int rc = dexa__pg_memo_row(c, sid, &row);
  if (rc == DEXA_OK) dexa__pg_p_int(p, row->skey);
  return rc;
}

int dexa__pg_attr_get(dexa__store_conn *base, const char *sid, const char *key, size_t klen,
                      const char **val, size_t *vlen) {
  pg_conn *c = (pg_conn *)base;
  pg_params p = {0};
  int rc = bind_session(c, &p, sid);
  if (rc != DEXA_OK) return rc;
  int64_t skey = 0;
  if (c->writing) {
    skey = dexa__session_memo_find(&c->memo, sid)->skey;
    pg_txattr *a = txattr_find(c, skey, key, klen);
    if (a) {
      if (!a->val) return DEXA_E_NOT_FOUND;
      *val = a->val;
      *vlen = a->vlen;
      return DEXA_OK;
    }
    hot_learn(c->store, key, klen);
  }
  dexa__pg_p_bytes(&p, key, klen);
  PGresult *r = dexa__pg_run(c, PG_ATTR_GET, &p, &rc);
  if (!r) return rc;
  if (PQntuples(r) == 0) {
    PQclear(r);
    if (c->writing) txattr_set(c, skey, key, klen, NULL, 0);
    return DEXA_E_NOT_FOUND;
  }
  rc = dexa__pg_column_value(c, r, 0, 0, val, vlen);
  if (rc == DEXA_OK && c->writing) txattr_set(c, skey, key, klen, *val, *vlen);
  /* The value stays in the result until the next call on c. */
  if (c->held) PQclear(c->held);
  c->held = r;
  return rc;
}

int dexa__pg_attr_put(dexa__store_conn *base, const char *sid, const char *key, size_t klen,
                      const char *val, size_t vlen) {
  pg_conn *c = (pg_conn *)base;
  int rc = raise_data_version(c, sid);
  pg_params p = {0};
  if (rc == DEXA_OK) rc = bind_session(c, &p, sid);
  if (rc != DEXA_OK) return rc;
  dexa__pg_p_bytes(&p, key, klen);
  rc = bind_value(c, &p, val, vlen);
  if (rc == DEXA_OK) rc = dexa__pg_exec(c, PG_ATTR_PUT, &p, NULL);
  if (rc == DEXA_OK) dexa__write_log_write(&c->log, sid, key, klen, val, vlen);
  if (rc == DEXA_OK && c->writing)
    txattr_set(c, dexa__session_memo_find(&c->memo, sid)->skey, key, klen, val, vlen);
  return rc;
}

int dexa__pg_attr_delete(dexa__store_conn *base, const char *sid, const char *key, size_t klen) {
  pg_conn *c = (pg_conn *)base;
  int rc = raise_data_version(c, sid);
  pg_params p = {0};
  if (rc == DEXA_OK) rc = bind_session(c, &p, sid);
  if (rc != DEXA_OK) return rc;
  dexa__pg_p_bytes(&p, key, klen);
  rc = dexa__pg_exec(c, PG_ATTR_DELETE, &p, NULL);
  if (rc == DEXA_OK) dexa__write_log_write(&c->log, sid, key, klen, NULL, 0);
  if (rc == DEXA_OK && c->writing)
    txattr_set(c, dexa__session_memo_find(&c->memo, sid)->skey, key, klen, NULL, 0);
  return rc;
}

/* The smallest key greater than every key with this prefix; 0 when there
 * is none (all 0xFF). */
static size_t prefix_upper(const char *prefix, size_t plen, char *out) {
  memcpy(out, prefix, plen);
  while (plen > 0 && (unsigned char)out[plen - 1] == 0xFF) plen--;
  if (plen == 0) return 0;
  out[plen - 1] = (char)((unsigned char)out[plen - 1] + 1);
  return plen;
}

int dexa__pg_attr_scan(dexa__store_conn *base, const char *sid, const char *prefix, size_t plen,
                       dexa_attr_visit_fn visit, void *ctx) {
  pg_conn *c = (pg_conn *)base;
  char *upper = malloc(plen + 1);
  if (!upper) return DEXA_E_NOMEM;
  size_t ulen = prefix_upper(prefix, plen, upper);
  pg_params p = {0};
  PGresult *r = NULL;
  int rc = bind_session(c, &p, sid);
  if (rc != DEXA_OK) goto cleanup;
  dexa__pg_p_bytes(&p, prefix, plen);
  if (ulen) dexa__pg_p_bytes(&p, upper, ulen);
  r = dexa__pg_run(c, ulen ? PG_ATTR_SCAN_RANGE : PG_ATTR_SCAN_FROM, &p, &rc);
  if (!r) goto cleanup;
  for (int i = 0; i < PQntuples(r); i++) {
    const char *v;
    size_t vn;
    rc = dexa__pg_column_value(c, r, i, 1, &v, &vn);
    if (rc != DEXA_OK) break;
    int vr = visit(ctx, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0), v, vn);
    if (vr < 0) rc = vr;
    if (vr != 0) break;
  }
cleanup:
  if (r) PQclear(r);
  free(upper);
  return rc;
}

int dexa__pg_chan_push(dexa__store_conn *base, const char *sid, const char *ch, size_t chlen,
                       const char *val, size_t vlen) {
  pg_conn *c = (pg_conn *)base;
  pg_params p = {0};
  int rc = bind_session(c, &p, sid);
  if (rc != DEXA_OK) return rc;
  dexa__pg_p_bytes(&p, ch, chlen);
  rc = bind_value(c, &p, val ? val : "null", val ? vlen : 4);
  if (rc == DEXA_OK) rc = dexa__pg_exec(c, PG_CHAN_PUSH, &p, NULL);
  if (rc == DEXA_OK) rc = dexa__pg_touch(c, sid);
  return rc;
}

int dexa__pg_chan_count(dexa__store_conn *base, const char *sid, const char *ch, size_t chlen,
                        int64_t *n) {
  pg_conn *c = (pg_conn *)base;
  pg_params p = {0};
  *n = 0;
  int rc = bind_session(c, &p, sid);
  if (rc != DEXA_OK) return rc;
  dexa__pg_p_bytes(&p, ch, chlen);
  PGresult *r = dexa__pg_run(c, PG_CHAN_COUNT, &p, &rc);
  if (!r) return rc;
  *n = dexa__pg_int(r, 0, 0);
  PQclear(r);
  return DEXA_OK;
}

int dexa__pg_chan_take(dexa__store_conn *base, const char *sid, const char *ch, size_t chlen,
                       int64_t n, dexa__value_visit_fn visit, void *ctx) {
  pg_conn *c = (pg_conn *)base;
  pg_params p = {0};
  int rc = bind_session(c, &p, sid);
  if (rc != DEXA_OK) return rc;
  dexa__pg_p_bytes(&p, ch, chlen);
  dexa__pg_p_int(&p, n);
  PGresult *r = dexa__pg_run(c, PG_CHAN_TAKE, &p, &rc);
  if (!r) return rc;
  for (int i = 0; rc == DEXA_OK && i < PQntuples(r); i++) {
    const char *v;
    size_t vn;
    rc = dexa__pg_column_value(c, r, i, 1, &v, &vn);
    if (rc == DEXA_OK) rc = visit(ctx, dexa__pg_int(r, i, 0), v, vn);
  }
  if (rc == DEXA_OK && PQntuples(r) > 0) rc = dexa__pg_touch(c, sid);
  PQclear(r);
  return rc;
}

int dexa__pg_event_append(dexa__store_conn *base, const char *sid, int64_t seq, const char *json,
                          size_t len) {
  pg_conn *c = (pg_conn *)base;
  pg_params p = {0};
  int rc = bind_session(c, &p, sid);
  if (rc != DEXA_OK) return rc;
  dexa__pg_p_int(&p, seq);
  rc = bind_value(c, &p, json, len);
  return rc == DEXA_OK ? dexa__pg_exec(c, PG_EVENT_APPEND, &p, NULL) : rc;
}

/* ---- event batches ---------------------------------------------------------
 * The events of one result share a row keyed by the last one's seq: a row
 * costs a 24-byte tuple header, its key columns and an index entry, more
 * than a typical event's packed JSON. Its value: PG_EVENT_BATCH_TAG, then
 * 1 and the payload packed (value_pack.h) or 0 and the payload as it is;
 * the payload is each event's length (LEB128) and JSON in seq order. */

static void put_varint(dexa__buf *b, size_t v) {
  while (v >= 0x80) {
    dexa__buf_putc(b, (char)(0x80 | (v & 0x7F)));
    v >>= 7;
  }
  dexa__buf_putc(b, (char)v);
}

int dexa__pg_event_append_batch(dexa__store_conn *base, const char *sid, int64_t last_seq,
                                const char *const *json, const size_t *len, size_t n) {
  pg_conn *c = (pg_conn *)base;
  dexa__buf pay, val;
  dexa__buf_init(&pay);
  dexa__buf_init(&val);
  for (size_t i = 0; i < n; i++) {
    put_varint(&pay, len[i]);
    dexa__buf_append(&pay, json[i], len[i]);
  }
  pg_params p = {0};
  int rc = pay.oom ? DEXA_E_NOMEM : bind_session(c, &p, sid);
  size_t packed = 0;
  if (rc == DEXA_OK && dexa__grow(&c->packbuf, &c->packcap, dexa__value_pack_bound(pay.len)) != 0)
    rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) packed = dexa__value_pack(pay.data, pay.len, (unsigned char *)c->packbuf);
  dexa__buf_putc(&val, (char)PG_EVENT_BATCH_TAG);
  dexa__buf_putc(&val, packed ? 1 : 0);
  dexa__buf_append(&val, packed ? c->packbuf : pay.data, packed ? packed : pay.len);
  if (rc == DEXA_OK && val.oom) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) {
    dexa__pg_p_int(&p, last_seq);
    dexa__pg_p_bytes(&p, val.data, val.len);
    rc = dexa__pg_exec(c, PG_EVENT_APPEND, &p, NULL);
  }
  dexa__buf_free(&pay);
  dexa__buf_free(&val);
  return rc;
}

static int get_varint(const unsigned char **p, const unsigned char *end, size_t *v) {
  size_t r = 0;
  for (int shift = 0; *p < end && shift < 63; shift += 7) {
    unsigned char b = *(*p)++;
    r |= (size_t)(b & 0x7F) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return DEXA_OK;
    }
  }
  return DEXA_E_CORRUPT;
}

/* The batch's payload in c's buffer (with room for a NUL after it). */
static int batch_payload(pg_conn *c, const unsigned char *v, size_t n, size_t *len) {
  if (n < 2 || v[1] > 1) return DEXA_E_CORRUPT;
  size_t need = n - 2;
  if (v[1] == 1 && dexa__value_unpacked_len(v + 2, n - 2, &need) != DEXA_OK) return DEXA_E_CORRUPT;
  if (need > SIZE_MAX - DEXA__UNPACK_SLACK - 1 ||
      dexa__grow(&c->buf, &c->cap, need + DEXA__UNPACK_SLACK + 1) != 0)
    return DEXA_E_NOMEM;
  if (v[1] == 1 && dexa__value_unpack(v + 2, n - 2, c->buf, need) != DEXA_OK) return DEXA_E_CORRUPT;
  if (v[1] == 0) memcpy(c->buf, v + 2, need);
  c->buf[need] = '\0';
  *len = need;
  return DEXA_OK;
}

/* The number of events of a payload; CORRUPT when it does not parse. */
static int batch_count(const char *buf, size_t len, int64_t *count) {
  const unsigned char *p = (const unsigned char *)buf, *end = p + len;
  *count = 0;
  while (p < end) {
    size_t el;
    if (get_varint(&p, end, &el) != DEXA_OK || el > (size_t)(end - p)) return DEXA_E_CORRUPT;
    p += el;
    (*count)++;
  }
  return *count > 0 ? DEXA_OK : DEXA_E_CORRUPT;
}

int dexa__pg_value_check(pg_conn *c, const PGresult *r, int row, int col) {
  const unsigned char *v = (const unsigned char *)PQgetvalue(r, row, col);
  size_t n = (size_t)PQgetlength(r, row, col), len = 0;
  const char *json;
  if (n == 0 || v[0] != PG_EVENT_BATCH_TAG) return dexa__pg_column_value(c, r, row, col, &json, &len);
  int64_t count = 0;
  int rc = batch_payload(c, v, n, &len);
  return rc == DEXA_OK ? batch_count(c->buf, len, &count) : rc;
}

int dexa__pg_event_row(pg_conn *c, const PGresult *r, int row, int64_t after, int64_t *budget,
                       dexa__value_visit_fn visit, void *ctx) {
  int64_t last = dexa__pg_int(r, row, 0);
  const unsigned char *v = (const unsigned char *)PQgetvalue(r, row, 1);
  size_t n = (size_t)PQgetlength(r, row, 1);
  if (n == 0 || v[0] != PG_EVENT_BATCH_TAG) {
    const char *json;
    size_t jn;
    int rc = dexa__pg_column_value(c, r, row, 1, &json, &jn);
    if (rc != DEXA_OK || last <= after || *budget <= 0) return rc;
    (*budget)--;
    return visit(ctx, last, json, jn);
  }
  size_t len = 0;
  int64_t count = 0;
  int rc = batch_payload(c, v, n, &len);
  if (rc == DEXA_OK) rc = batch_count(c->buf, len, &count);
  const unsigned char *p = (const unsigned char *)c->buf, *end = p + len;
  for (int64_t seq = last - count + 1; rc == DEXA_OK && p < end && *budget > 0; seq++) {
    size_t el = 0;
    get_varint(&p, end, &el); /* batch_count parsed them all */
    const char *json = (const char *)p;
    p += el;
    if (seq <= after) continue;
    /* Visitors get NUL-terminated JSON: the next length's byte is put back. */
    char keep = *(char *)p;
    *(char *)p = '\0';
    (*budget)--;
    rc = visit(ctx, seq, json, el);
    *(char *)p = keep;
  }
  return rc;
}

int dexa__pg_event_trim(dexa__store_conn *base, const char *sid, int64_t upto_seq) {
  pg_conn *c = (pg_conn *)base;
  pg_params p = {0};
  int rc = bind_session(c, &p, sid);
  if (rc != DEXA_OK) return rc;
  dexa__pg_p_int(&p, upto_seq);
  return dexa__pg_exec(c, PG_EVENT_TRIM, &p, NULL);
}

int dexa__pg_event_read(dexa__store_conn *base, const char *sid, int64_t after_seq, int32_t limit,
                        dexa__value_visit_fn visit, void *ctx) {
  pg_conn *c = (pg_conn *)base;
  pg_params p = {0};
  int rc = bind_session(c, &p, sid);
  if (rc != DEXA_OK) return rc;
  dexa__pg_p_int(&p, after_seq);
  dexa__pg_p_int(&p, limit);
  PGresult *r = dexa__pg_run(c, PG_EVENT_READ, &p, &rc);
  if (!r) return rc;
  int64_t budget = limit; /* rows of a batch hold several events */
  for (int i = 0; rc == DEXA_OK && i < PQntuples(r) && budget > 0; i++)
    rc = dexa__pg_event_row(c, r, i, after_seq, &budget, visit, ctx);
  PQclear(r);
  return rc;
}

/* ---- lifetime (store.h: session_touch, session_expired, session_purge) ---- */

int dexa__pg_session_touch(dexa__store_conn *base, const char *id, int64_t now, int64_t step) {
  pg_conn *c = (pg_conn *)base;
  dexa__memo_row *row;
  int rc = dexa__pg_memo_row(c, id, &row);
  if (rc != DEXA_OK || (step > 0 && now - row->active_ms < step) || now == row->active_ms)
    return settle(c, rc);
  if (dexa__session_memo_will_change(&c->memo, row) != 0) return settle(c, DEXA_E_NOMEM);
  pg_params p = {0};
  dexa__pg_p_text(&p, id);
  dexa__pg_p_int(&p, now);
  rc = dexa__pg_exec(c, PG_SESSION_SET_ACTIVE, &p, NULL);
  if (rc == DEXA_OK) row->active_ms = now;
  return settle(c, rc);
}

int dexa__pg_session_expired(dexa__store_conn *base, int closed, int64_t before_ms,
                             int32_t limit, dexa__session_visit_fn visit, void *ctx) {
  pg_conn *c = (pg_conn *)base;
  int rc = c->writing ? dexa__pg_write_counters(c) : DEXA_OK;
  if (rc != DEXA_OK) return rc;
  pg_params p = {0};
  dexa__pg_p_int(&p, before_ms);
  dexa__pg_p_int(&p, limit);
  PGresult *r = dexa__pg_run(c, closed ? PG_SESSION_EXPIRED_CLOSED : PG_SESSION_EXPIRED_OPEN,
                             &p, &rc);
  return r ? visit_session_rows(r, visit, ctx) : rc;
}

static int exec_id_stmt(pg_conn *c, pg_stmt_id id, const char *sid, int64_t *changed) {
  pg_params p = {0};
  dexa__pg_p_text(&p, sid);
  return dexa__pg_exec(c, id, &p, changed);
}

/* Deletes up to max rows of the session's data, table after table
 * (attributes, channel messages, events); *deleted: how many. */
static int purge_data(pg_conn *c, int64_t skey, int64_t max, int64_t *deleted) {
  static const pg_stmt_id tables[] = {PG_SESSION_PURGE_DATA, PG_SESSION_PURGE_CHANS,
                                      PG_SESSION_PURGE_EVENTS};
  int rc = DEXA_OK;
  for (size_t i = 0; rc == DEXA_OK && i < 3 && *deleted < max; i++) {
    pg_params p = {0};
    int64_t n = 0;
    dexa__pg_p_int(&p, skey);
    dexa__pg_p_int(&p, max - *deleted);
    rc = dexa__pg_exec(c, tables[i], &p, &n);
    *deleted += n;
  }
  return rc;
}

int dexa__pg_session_purge(dexa__store_conn *base, const char *id, int64_t max_rows,
                           int64_t *deleted, int *gone) {
  pg_conn *c = (pg_conn *)base;
  *deleted = 0;
  *gone = 0;
  if (!c->writing) return DEXA_E_BAD_STATE;
  dexa__memo_row *row;
  int rc = dexa__pg_memo_row(c, id, &row); /* locks the session's row */
  if (rc != DEXA_OK) return rc;
  /* What any cache holds of it is stale: forgotten at commit (no cached
   * session has version -1); other processes see its version raised. */
  dexa__write_log_bumped(&c->log, id, 0);
  rc = purge_data(c, row->skey, max_rows > 0 ? max_rows : 1, deleted);
  if (rc != DEXA_OK) return rc;
  if (*deleted >= max_rows) {
    if (dexa__session_memo_will_change(&c->memo, row) != 0) return DEXA_E_NOMEM;
    row->data_ver++;
    row->dirty = 1;
    return dexa__pg_touch(c, id);
  }
  int64_t steps = 0, sessions = 0;
  rc = exec_id_stmt(c, PG_SESSION_PURGE_STEPS, id, &steps);
  if (rc == DEXA_OK) rc = exec_id_stmt(c, PG_SESSION_DELETE, id, &sessions);
  if (rc != DEXA_OK) return rc;
  if (dexa__session_memo_will_change(&c->memo, row) != 0) return DEXA_E_NOMEM;
  row->dirty = 0;
  row->skey = -1; /* gone: the transaction finds it no more */
  *deleted += steps + sessions;
  *gone = 1;
  return dexa__pg_touch(c, id);
}
