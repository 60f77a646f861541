/* SQLite backend: sessions, attributes, channels and events. */
#include "store/sqlite_internal.h"

#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "store/value_pack.h"
#include "util/buf.h"

#define STMT(var, conn, id)                                                            \
  int rc = DEXA_OK;                                                                    \
  sqlite3_stmt *var = dexa__sq_stmt((sq_conn *)(conn), (id), &rc);                     \
  if (!var) return rc

static size_t slen(const char *s) { return strlen(s); }

/* Binds a session-data value: packed (value_pack.h) when that makes it
 * smaller, else as the JSON text it is. The packed bytes live in the
 * connection until the statement has run. */
static int bind_value(sq_conn *c, sqlite3_stmt *st, int i, const char *v, size_t n) {
  size_t bound = dexa__value_pack_bound(n);
  if (dexa__grow(&c->packbuf, &c->packcap, bound) != 0) return DEXA_E_NOMEM;
  size_t packed = dexa__value_pack(v, n, (unsigned char *)c->packbuf);
  if (packed == 0) return dexa__sq_text(st, i, v, n);
  return dexa__sq_blob(st, i, c->packbuf, packed);
}

/* Column col of a session-data row as the value it stands for, NUL-
 * terminated: the column's own text, or a packed value unpacked into *buf.
 * With copy set a plain value is copied into *buf too (the caller resets
 * the statement before the value is used). */
static int column_value(sqlite3_stmt *st, int col, int copy, char **buf, size_t *cap,
                        const char **v, size_t *n) {
  if (sqlite3_column_type(st, col) != SQLITE_BLOB && !copy) {
    const char *t = (const char *)sqlite3_column_text(st, col);
    *n = (size_t)sqlite3_column_bytes(st, col);
    *v = t ? t : "";
    return DEXA_OK;
  }
  const unsigned char *p = sqlite3_column_blob(st, col);
  size_t pn = (size_t)sqlite3_column_bytes(st, col);
  int packed = dexa__value_is_packed(p, pn);
  size_t len = pn;
  if (packed && dexa__value_unpacked_len(p, pn, &len) != DEXA_OK) return DEXA_E_CORRUPT;
  if (len > SIZE_MAX - DEXA__UNPACK_SLACK || dexa__grow(buf, cap, len + DEXA__UNPACK_SLACK) != 0) {
    return DEXA_E_NOMEM;
  }
  if (packed) {
    if (dexa__value_unpack(p, pn, *buf, len) != DEXA_OK) return DEXA_E_CORRUPT;
  } else if (len) {
    memcpy(*buf, p, len);
  }
  (*buf)[len] = '\0';
  *v = *buf;
  *n = len;
  return DEXA_OK;
}

int dexa__sq_session_insert(dexa__store_conn *c, const char *id, const char *flow_type,
                            int64_t created_ms, const char *settings, size_t settings_len) {
  STMT(st, c, SQ_SESSION_INSERT);
  BIND(rc, dexa__sq_text(st, 1, id, slen(id)));
  BIND(rc, dexa__sq_text(st, 2, flow_type, slen(flow_type)));
  BIND(rc, dexa__sq_int64(st, 3, created_ms));
  BIND(rc, dexa__sq_text(st, 4, settings, settings_len));
  if (rc == DEXA_OK) rc = dexa__sq_exec(st);
  if (rc == DEXA_OK && sqlite3_changes(((sq_conn *)c)->db) == 0) rc = DEXA_E_ALREADY_EXISTS;
  return rc;
}

static int fill_session(sqlite3_stmt *st, int first, dexa__session_row *out) {
  size_t unused;
  int rc = dexa__sq_col_dup(st, first, &out->flow_type, &unused);
  out->created_ms = sqlite3_column_int64(st, first + 1);
  out->status = sqlite3_column_int(st, first + 2);
  out->event_seq = sqlite3_column_int64(st, first + 3);
  out->active_ms = sqlite3_column_int64(st, first + 4);
  return rc;
}

/* The session's row as the open transaction sees it: from the memo, or
 * read now and kept there. */
static int memo_row(sq_conn *c, const char *id, dexa__memo_row **out) {
  *out = dexa__session_memo_find(&c->memo, id);
  if (*out) return (*out)->skey < 0 ? DEXA_E_NOT_FOUND : DEXA_OK; /* purged */
  STMT(st, c, SQ_SESSION_GET);
  BIND(rc, dexa__sq_text(st, 1, id, slen(id)));
  if (rc != DEXA_OK) return rc;
  int r = sqlite3_step(st);
  if (r == SQLITE_ROW) {
    const char *flow = (const char *)sqlite3_column_text(st, 0);
    dexa__memo_row row = {strdup(id), strdup(flow ? flow : ""), sqlite3_column_int64(st, 6),
                          sqlite3_column_int64(st, 1), sqlite3_column_int(st, 2),
                          sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 5),
                          sqlite3_column_int64(st, 4), 0, sqlite3_column_int64(st, 7)};
    *out = row.session_id && row.flow_type ? dexa__session_memo_add(&c->memo, &row) : NULL;
    if (!*out) {
      free(row.session_id);
      free(row.flow_type);
      rc = DEXA_E_NOMEM;
    }
  } else {
    rc = r == SQLITE_DONE ? DEXA_E_NOT_FOUND : dexa__sq_st_err(st, r);
  }
  sqlite3_reset(st);
  return rc;
}

int dexa__sq_session_write_counters(sq_conn *c) {
  for (size_t i = 0; i < c->memo.nrows; i++) {
    dexa__memo_row *row = &c->memo.rows[i];
    if (!row->dirty) continue;
    /* Undo-logged: a savepoint rolled back after this write undoes it. */
    if (dexa__session_memo_will_change(&c->memo, row) != 0) return DEXA_E_NOMEM;
    STMT(st, c, SQ_SESSION_SET_COUNTERS);
    BIND(rc, dexa__sq_text(st, 1, row->session_id, slen(row->session_id)));
    BIND(rc, dexa__sq_int64(st, 2, row->event_seq));
    BIND(rc, dexa__sq_int64(st, 3, row->step_ord));
    BIND(rc, dexa__sq_int64(st, 4, row->data_ver));
    if (rc == DEXA_OK) rc = dexa__sq_exec(st);
    if (rc != DEXA_OK) return rc;
    row->dirty = 0;
  }
  return DEXA_OK;
}

/* Ends an operation on the memo. Outside a write transaction nothing is
 * kept: a change is written at once and the next operation reads anew. */
static int settle(sq_conn *c, int rc) {
  if (c->writing) return rc;
  if (rc == DEXA_OK) rc = dexa__sq_session_write_counters(c);
  dexa__session_memo_clear(&c->memo);
  return rc;
}

/* Binds the session of a session_data statement: its id, and in a write
 * transaction its skey from the memo, which spares the statement its
 * lookup of the skey (sqlite.c: SKEY). */
static int bind_session(dexa__store_conn *c, sqlite3_stmt *st, const char *sid) {
  sq_conn *sc = (sq_conn *)c;
  int rc = dexa__sq_text(st, 1, sid, slen(sid));
  if (rc != DEXA_OK || !sc->writing) return rc;
  dexa__memo_row *row;
  rc = memo_row(sc, sid, &row);
  if (rc == DEXA_OK) BIND(rc, dexa__sq_int64(st, DEXA__SQ_SKEY_PARAM, row->skey));
  /* No such session: the statement finds no skey either. */
  return rc == DEXA_E_NOT_FOUND ? DEXA_OK : rc;
}

int dexa__sq_session_get(dexa__store_conn *c, const char *id, dexa__session_row *out) {
  sq_conn *sc = (sq_conn *)c;
  memset(out, 0, sizeof *out);
  dexa__memo_row *row;
  int rc = memo_row(sc, id, &row);
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
  return settle(sc, rc);
}

int dexa__sq_session_set_status(dexa__store_conn *c, const char *id, int32_t status) {
  sq_conn *sc = (sq_conn *)c;
  dexa__memo_row *row = dexa__session_memo_find(&sc->memo, id);
  if (row && dexa__session_memo_will_change(&sc->memo, row) != 0) return DEXA_E_NOMEM;
  STMT(st, c, SQ_SESSION_STATUS);
  BIND(rc, dexa__sq_text(st, 1, id, slen(id)));
  BIND(rc, dexa__sq_int(st, 2, status));
  if (rc == DEXA_OK) rc = dexa__sq_exec(st);
  if (rc == DEXA_OK && row) row->status = status;
  return rc;
}

/* The counters the memo holds for the caller to raise, undo-logged. */
static int counters(sq_conn *c, const char *id, dexa__memo_row **row) {
  int rc = memo_row(c, id, row);
  if (rc == DEXA_OK && dexa__session_memo_will_change(&c->memo, *row) != 0) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) (*row)->dirty = 1;
  return rc;
}

int dexa__sq_session_bump_events(dexa__store_conn *c, const char *id, int64_t n, int64_t *seq) {
  sq_conn *sc = (sq_conn *)c;
  dexa__memo_row *row;
  int rc = counters(sc, id, &row);
  if (rc == DEXA_OK) *seq = row->event_seq += n;
  return settle(sc, rc);
}

int dexa__sq_session_next_ord(dexa__store_conn *c, const char *id, int64_t *ord) {
  sq_conn *sc = (sq_conn *)c;
  dexa__memo_row *row;
  int rc = counters(sc, id, &row);
  if (rc == DEXA_OK) *ord = ++row->step_ord;
  return settle(sc, rc);
}

int dexa__sq_session_data_version(dexa__store_conn *c, const char *id, int64_t *ver) {
  sq_conn *sc = (sq_conn *)c;
  if (sc->writing) {
    dexa__memo_row *row;
    int rc = memo_row(sc, id, &row);
    if (rc == DEXA_OK) *ver = row->data_ver;
    return rc;
  }
  STMT(st, c, SQ_SESSION_DATA_VER);
  BIND(rc, dexa__sq_text(st, 1, id, slen(id)));
  if (rc != DEXA_OK) return rc;
  int r = sqlite3_step(st);
  if (r == SQLITE_ROW) *ver = sqlite3_column_int64(st, 0);
  rc = r == SQLITE_ROW ? DEXA_OK : (r == SQLITE_DONE ? DEXA_E_NOT_FOUND : dexa__sq_st_err(st, r));
  sqlite3_reset(st);
  return rc;
}

/* Before the transaction's first attribute write of a session: raises the
 * session's data version (store.h), which tells every cache in every
 * process that what it holds of the session is old. */
static int raise_data_version(sq_conn *c, const char *sid) {
  if (!dexa__write_log_needs_bump(&c->log, sid)) return DEXA_OK;
  dexa__memo_row *row;
  int rc = counters(c, sid, &row);
  if (rc == DEXA_OK) dexa__write_log_bumped(&c->log, sid, ++row->data_ver);
  return settle(c, rc);
}

int dexa__sq_session_list(dexa__store_conn *c, int64_t before_ms, const char *before_id,
                          int32_t limit, dexa__session_visit_fn visit, void *ctx) {
  /* The rows are read from the table: it must hold the memo's counters. */
  int written = dexa__sq_session_write_counters((sq_conn *)c);
  if (written != DEXA_OK) return written;
  STMT(st, c, before_id ? SQ_SESSION_LIST_AFTER : SQ_SESSION_LIST_FIRST);
  BIND(rc, dexa__sq_int(st, 1, limit));
  if (before_id) {
    BIND(rc, dexa__sq_int64(st, 2, before_ms));
    BIND(rc, dexa__sq_text(st, 3, before_id, slen(before_id)));
  }
  int r = SQLITE_DONE;
  while (rc == DEXA_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
    dexa__session_row row = {0};
    size_t unused;
    rc = dexa__sq_col_dup(st, 0, &row.session_id, &unused);
    if (rc == DEXA_OK) rc = fill_session(st, 1, &row);
    if (rc == DEXA_OK) rc = visit(ctx, &row);
    dexa__session_row_free(&row);
  }
  if (rc == DEXA_OK && r != SQLITE_DONE) rc = dexa__sq_st_err(st, r);
  sqlite3_reset(st);
  return rc;
}

/* Inside a write transaction that has not written sid's attributes yet,
 * the session cache may answer its reads: when it holds the session at
 * the version this transaction found, it holds what the transaction would
 * read (the write lock: nobody else wrote since; the cache only ever gets
 * committed versions). Every attribute write raises the version first
 * (raise_data_version), so an unraised version means none. An RPC and the
 * locked Steps it runs read a handful of attributes before they write. */
static dexa__session_cache *cache_for_read(sq_conn *c, const char *sid, int64_t *ver) {
  dexa__session_cache *cache = c->store->base.cache;
  dexa__memo_row *row;
  if (!cache || !c->writing || !dexa__write_log_needs_bump(&c->log, sid)) return NULL;
  if (memo_row(c, sid, &row) != DEXA_OK) return NULL;
  *ver = row->data_ver;
  return dexa__session_cache_holds(cache, sid, *ver) ? cache : NULL;
}

int dexa__sq_attr_get(dexa__store_conn *c, const char *sid, const char *key, size_t klen,
                      const char **val, size_t *vlen) {
  sq_conn *sc = (sq_conn *)c;
  int64_t ver;
  dexa__session_cache *cache = cache_for_read(sc, sid, &ver);
  if (cache) {
    int hit = dexa__session_cache_get(cache, sid, ver, key, klen, &sc->valbuf, &sc->valcap, val,
                                      vlen);
    if (hit != DEXA__CACHE_MISS) return hit;
  }
  STMT(st, c, SQ_ATTR_GET);
  rc = bind_session(c, st, sid);
  if (rc != DEXA_OK) return rc;
  BIND(rc, dexa__sq_blob(st, 2, key, klen));
  if (rc != DEXA_OK) return rc;
  int r = sqlite3_step(st);
  if (r == SQLITE_ROW) {
    /* Copied out so the statement can be reset at once: an open statement
     * would keep a read snapshot and pin the WAL. */
    rc = column_value(st, 0, 1, &sc->valbuf, &sc->valcap, val, vlen);
  } else {
    rc = r == SQLITE_DONE ? DEXA_E_NOT_FOUND : dexa__sq_st_err(st, r);
  }
  sqlite3_reset(st);
  return rc;
}

int dexa__sq_attr_put(dexa__store_conn *c, const char *sid, const char *key, size_t klen,
                      const char *val, size_t vlen) {
  sq_conn *sc = (sq_conn *)c;
  int rc = raise_data_version(sc, sid);
  if (rc != DEXA_OK) return rc;
  sqlite3_stmt *st = dexa__sq_stmt(sc, SQ_ATTR_PUT, &rc);
  if (!st) return rc;
  rc = bind_session(c, st, sid);
  BIND(rc, dexa__sq_blob(st, 2, key, klen));
  if (rc == DEXA_OK) rc = bind_value(sc, st, 3, val, vlen);
  if (rc == DEXA_OK) rc = dexa__sq_exec(st);
  if (rc == DEXA_OK) dexa__write_log_write(&sc->log, sid, key, klen, val, vlen);
  return rc;
}

int dexa__sq_attr_delete(dexa__store_conn *c, const char *sid, const char *key, size_t klen) {
  sq_conn *sc = (sq_conn *)c;
  int rc = raise_data_version(sc, sid);
  if (rc != DEXA_OK) return rc;
  sqlite3_stmt *st = dexa__sq_stmt(sc, SQ_ATTR_DELETE, &rc);
  if (!st) return rc;
  rc = bind_session(c, st, sid);
  BIND(rc, dexa__sq_blob(st, 2, key, klen));
  if (rc == DEXA_OK) rc = dexa__sq_exec(st);
  if (rc == DEXA_OK) dexa__write_log_write(&sc->log, sid, key, klen, NULL, 0);
  return rc;
}

/* The smallest key greater than every key with this prefix: the prefix with
 * its last non-0xFF byte incremented. 0 when there is none (all 0xFF). */
static size_t prefix_upper(const char *prefix, size_t plen, char *out) {
  memcpy(out, prefix, plen);
  while (plen > 0 && (unsigned char)out[plen - 1] == 0xFF) plen--;
  if (plen == 0) return 0;
  out[plen - 1] = (char)((unsigned char)out[plen - 1] + 1);
  return plen;
}

int dexa__sq_attr_scan(dexa__store_conn *c, const char *sid, const char *prefix, size_t plen,
                       dexa_attr_visit_fn visit, void *ctx) {
  sq_conn *sc = (sq_conn *)c;
  int64_t ver;
  dexa__session_cache *cache = cache_for_read(sc, sid, &ver);
  if (cache) {
    int hit = dexa__session_cache_scan(cache, sid, ver, prefix, plen, &sc->rowbuf, &sc->rowcap,
                                       visit, ctx);
    if (hit != DEXA__CACHE_MISS) return hit;
  }
  char *upper = malloc(plen + 1);
  if (!upper) return DEXA_E_NOMEM;
  size_t ulen = prefix_upper(prefix, plen, upper);
  int rc = DEXA_OK;
  sqlite3_stmt *st = dexa__sq_stmt((sq_conn *)c, ulen ? SQ_ATTR_SCAN_RANGE : SQ_ATTR_SCAN_FROM,
                                   &rc);
  if (!st) goto cleanup;
  rc = bind_session(c, st, sid);
  if (rc != DEXA_OK) goto cleanup;
  BIND(rc, dexa__sq_blob(st, 2, prefix, plen));
  if (ulen) BIND(rc, dexa__sq_blob(st, 3, upper, ulen));
  if (rc != DEXA_OK) goto cleanup;
  int r = SQLITE_DONE;
  while ((r = sqlite3_step(st)) == SQLITE_ROW) {
    const char *k = (const char *)sqlite3_column_blob(st, 0);
    size_t kn = (size_t)sqlite3_column_bytes(st, 0);
    const char *v;
    size_t vn;
    rc = column_value(st, 1, 0, &sc->rowbuf, &sc->rowcap, &v, &vn);
    if (rc != DEXA_OK) break;
    int vr = visit(ctx, k ? k : "", kn, v, vn);
    if (vr < 0) rc = vr;
    if (vr != 0) break;
  }
  if (rc == DEXA_OK && r != SQLITE_DONE && r != SQLITE_ROW) rc = dexa__sq_st_err(st, r);
  sqlite3_reset(st);
cleanup:
  free(upper);
  return rc;
}

int dexa__sq_chan_push(dexa__store_conn *c, const char *sid, const char *ch, size_t chlen,
                       const char *val, size_t vlen) {
  STMT(st, c, SQ_CHAN_PUSH);
  rc = bind_session(c, st, sid);
  BIND(rc, dexa__sq_blob(st, 2, ch, chlen));
  if (rc == DEXA_OK) rc = bind_value((sq_conn *)c, st, 3, val ? val : "null", val ? vlen : 4);
  return rc == DEXA_OK ? dexa__sq_exec(st) : rc;
}

int dexa__sq_chan_count(dexa__store_conn *c, const char *sid, const char *ch, size_t chlen,
                        int64_t *n) {
  STMT(st, c, SQ_CHAN_COUNT);
  rc = bind_session(c, st, sid);
  if (rc != DEXA_OK) return rc;
  BIND(rc, dexa__sq_blob(st, 2, ch, chlen));
  if (rc != DEXA_OK) return rc;
  int r = sqlite3_step(st);
  *n = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  rc = r == SQLITE_ROW ? DEXA_OK : dexa__sq_st_err(st, r);
  sqlite3_reset(st);
  return rc;
}

int dexa__sq_chan_take(dexa__store_conn *c, const char *sid, const char *ch, size_t chlen,
                       int64_t n, dexa__value_visit_fn visit, void *ctx) {
  sq_conn *sc = (sq_conn *)c;
  int64_t last = -1;
  {
    STMT(st, c, SQ_CHAN_PEEK);
    rc = bind_session(c, st, sid);
    BIND(rc, dexa__sq_blob(st, 2, ch, chlen));
    BIND(rc, dexa__sq_int64(st, 3, n));
    int r = SQLITE_DONE;
    while (rc == DEXA_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
      last = sqlite3_column_int64(st, 0);
      const char *v;
      size_t vn;
      rc = column_value(st, 1, 0, &sc->rowbuf, &sc->rowcap, &v, &vn);
      if (rc == DEXA_OK) rc = visit(ctx, last, v, vn);
    }
    if (rc == DEXA_OK && r != SQLITE_DONE) rc = dexa__sq_st_err(st, r);
    sqlite3_reset(st);
    if (rc != DEXA_OK || last < 0) return rc;
  }
  STMT(del, c, SQ_CHAN_DELETE_UPTO);
  rc = bind_session(c, del, sid);
  BIND(rc, dexa__sq_blob(del, 2, ch, chlen));
  BIND(rc, dexa__sq_int64(del, 3, last));
  return rc == DEXA_OK ? dexa__sq_exec(del) : rc;
}

int dexa__sq_event_append(dexa__store_conn *c, const char *sid, int64_t seq, const char *json,
                          size_t len) {
  STMT(st, c, SQ_EVENT_APPEND);
  rc = bind_session(c, st, sid);
  BIND(rc, dexa__sq_int64(st, 2, seq));
  if (rc == DEXA_OK) rc = bind_value((sq_conn *)c, st, 3, json, len);
  return rc == DEXA_OK ? dexa__sq_exec(st) : rc;
}

int dexa__sq_event_trim(dexa__store_conn *c, const char *sid, int64_t upto_seq) {
  STMT(st, c, SQ_EVENT_TRIM);
  rc = bind_session(c, st, sid);
  BIND(rc, dexa__sq_int64(st, 2, upto_seq));
  return rc == DEXA_OK ? dexa__sq_exec(st) : rc;
}

int dexa__sq_event_read(dexa__store_conn *c, const char *sid, int64_t after_seq, int32_t limit,
                        dexa__value_visit_fn visit, void *ctx) {
  sq_conn *sc = (sq_conn *)c;
  STMT(st, c, SQ_EVENT_READ);
  rc = bind_session(c, st, sid);
  BIND(rc, dexa__sq_int64(st, 2, after_seq));
  BIND(rc, dexa__sq_int(st, 3, limit));
  int r = SQLITE_DONE;
  while (rc == DEXA_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
    const char *v;
    size_t vn;
    rc = column_value(st, 1, 0, &sc->rowbuf, &sc->rowcap, &v, &vn);
    if (rc == DEXA_OK) rc = visit(ctx, sqlite3_column_int64(st, 0), v, vn);
  }
  if (rc == DEXA_OK && r != SQLITE_DONE) rc = dexa__sq_st_err(st, r);
  sqlite3_reset(st);
  return rc;
}

int dexa__sq_column_value(sqlite3_stmt *st, int col, char **buf, size_t *cap, const char **v,
                          size_t *n) {
  return column_value(st, col, 1, buf, cap, v, n);
}

/* ---- lifetime (store.h: session_touch, session_expired, session_purge) ---- */

int dexa__sq_session_touch(dexa__store_conn *c, const char *id, int64_t now, int64_t step) {
  sq_conn *sc = (sq_conn *)c;
  dexa__memo_row *row;
  int rc = memo_row(sc, id, &row);
  if (rc != DEXA_OK || (step > 0 && now - row->active_ms < step) || now == row->active_ms)
    return settle(sc, rc);
  if (dexa__session_memo_will_change(&sc->memo, row) != 0) return settle(sc, DEXA_E_NOMEM);
  sqlite3_stmt *st = dexa__sq_stmt(sc, SQ_SESSION_SET_ACTIVE, &rc);
  if (!st) return settle(sc, rc);
  dexa__sq_text(st, 1, id, slen(id));
  sqlite3_bind_int64(st, 2, now);
  rc = dexa__sq_exec(st);
  if (rc == DEXA_OK) row->active_ms = now;
  return settle(sc, rc);
}

int dexa__sq_session_expired(dexa__store_conn *c, int closed, int64_t before_ms, int32_t limit,
                             dexa__session_visit_fn visit, void *ctx) {
  int written = dexa__sq_session_write_counters((sq_conn *)c);
  if (written != DEXA_OK) return written;
  STMT(st, c, closed ? SQ_SESSION_EXPIRED_CLOSED : SQ_SESSION_EXPIRED_OPEN);
  sqlite3_bind_int64(st, 1, before_ms);
  sqlite3_bind_int(st, 2, limit);
  int r = SQLITE_DONE;
  while (rc == DEXA_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
    dexa__session_row row = {0};
    size_t unused;
    rc = dexa__sq_col_dup(st, 0, &row.session_id, &unused);
    if (rc == DEXA_OK) rc = fill_session(st, 1, &row);
    if (rc == DEXA_OK) rc = visit(ctx, &row);
    dexa__session_row_free(&row);
  }
  if (rc == DEXA_OK && r != SQLITE_DONE) rc = dexa__sq_err(r);
  sqlite3_reset(st);
  return rc;
}

static int exec_id_stmt(sq_conn *c, sq_stmt_id id, const char *sid, int64_t *changed) {
  int rc = DEXA_OK;
  sqlite3_stmt *st = dexa__sq_stmt(c, id, &rc);
  if (!st) return rc;
  dexa__sq_text(st, 1, sid, slen(sid));
  rc = dexa__sq_exec(st);
  if (changed) *changed = rc == DEXA_OK ? sqlite3_changes64(c->db) : 0;
  return rc;
}

int dexa__sq_session_purge(dexa__store_conn *c, const char *id, int64_t max_rows,
                           int64_t *deleted, int *gone) {
  sq_conn *sc = (sq_conn *)c;
  *deleted = 0;
  *gone = 0;
  if (!sc->writing) return DEXA_E_BAD_STATE;
  dexa__memo_row *row;
  int rc = memo_row(sc, id, &row);
  if (rc != DEXA_OK) return rc;
  int64_t skey = row->skey;
  /* Whatever a cache holds of it is stale from here: forgotten at commit
   * (no cached session has version -1), and its version raised for the
   * caches of other processes while rows remain. */
  dexa__write_log_bumped(&sc->log, id, 0);
  sqlite3_stmt *st = dexa__sq_stmt(sc, SQ_SESSION_PURGE_DATA, &rc);
  if (!st) return rc;
  sqlite3_bind_int64(st, 1, skey);
  sqlite3_bind_int64(st, 2, max_rows > 0 ? max_rows : 1);
  rc = dexa__sq_exec(st);
  if (rc != DEXA_OK) return rc;
  *deleted = sqlite3_changes64(sc->db);
  if (*deleted >= max_rows) {
    if (dexa__session_memo_will_change(&sc->memo, row) != 0) return DEXA_E_NOMEM;
    row->data_ver++;
    row->dirty = 1;
    return DEXA_OK;
  }
  int64_t steps = 0, sessions = 0;
  rc = exec_id_stmt(sc, SQ_SESSION_PURGE_STEPS, id, &steps);
  if (rc == DEXA_OK) rc = exec_id_stmt(sc, SQ_SESSION_DELETE, id, &sessions);
  if (rc != DEXA_OK) return rc;
  /* The memo must not write the counters of a row that is gone. */
  if (dexa__session_memo_will_change(&sc->memo, row) != 0) return DEXA_E_NOMEM;
  row->dirty = 0;
  row->skey = -1; /* gone: the transaction finds it no more */
  *deleted += steps + sessions;
  *gone = 1;
  return DEXA_OK;
}
