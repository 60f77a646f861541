/* Store administration: dexa_store_check, dexa_store_vacuum and
 * dexa_store_copy, written against the store interface (store.h) only, so
 * they work for every backend that has its administration operations. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "dexagents/store.h"
#include "store/store.h"
#include "util/buf.h"

#define PROBLEMS_LISTED 100
#define EVENT_PAGE 1000

void dexa__session_dump_free(dexa__session_dump *d) {
  if (!d) return;
  dexa__session_row_free(&d->row);
  free(d->settings);
  memset(d, 0, sizeof *d);
}

static void set_err(char *errmsg, size_t n, const char *fmt, const char *a, const char *b) {
  if (errmsg && n) snprintf(errmsg, n, fmt, a, b);
}

/* The store named in a message: never with its password. */
static const char *shown(const char *uri, char *buf, size_t n) {
  return dexa_store_display_name(uri, buf, n) == DEXA_OK ? buf : "the store";
}

/* An open store and one connection on it. */
typedef struct side {
  dexa__store *store;
  dexa__store_conn *conn;
} side;

static int side_open(side *s, const char *uri, char *errmsg, size_t n) {
  memset(s, 0, sizeof *s);
  dexa__store_config cfg = {uri, "full", 0, NULL, NULL};
  char why[256] = "";
  int rc = dexa__store_open(&s->store, &cfg, why, sizeof why);
  if (rc == DEXA_OK) rc = s->store->ops->conn_open(s->store, &s->conn);
  char name[512];
  if (rc != DEXA_OK)
    set_err(errmsg, n, "store %s: %s", shown(uri, name, sizeof name), *why ? why : dexa_strerror(rc));
  return rc;
}

static void side_close(side *s) {
  if (s->conn) s->conn->ops->conn_close(s->conn);
  if (s->store) s->store->ops->close(s->store);
  memset(s, 0, sizeof *s);
}

static int has_admin(const dexa__store_ops *o) {
  return o->session_dump && o->session_restore && o->chan_scan && o->integrity_check && o->vacuum;
}

/* Every session id of a store, oldest last (session_list pages). */
typedef struct id_list {
  char **ids;
  size_t n, cap;
  int64_t last_ms;
  int oom;
} id_list;

static int collect_id(void *ctx, const dexa__session_row *row) {
  id_list *l = ctx;
  if (dexa__grow_array(&l->ids, l->n, &l->cap, sizeof *l->ids) != 0 ||
      !(l->ids[l->n] = strdup(row->session_id))) {
    l->oom = 1;
    return DEXA_E_NOMEM;
  }
  l->n++;
  l->last_ms = row->created_ms;
  return 0;
}

static int list_ids(dexa__store_conn *c, id_list *l) {
  memset(l, 0, sizeof *l);
  for (;;) {
    size_t before = l->n;
    const char *after = l->n ? l->ids[l->n - 1] : NULL;
    int rc = c->ops->session_list(c, l->last_ms, after, 1000, collect_id, l);
    if (rc != DEXA_OK) return rc;
    if (l->n - before < 1000) return DEXA_OK;
  }
}

static void ids_free(id_list *l) {
  for (size_t i = 0; i < l->n; i++) free(l->ids[i]);
  free(l->ids);
}

/* ---- check ------------------------------------------------------------------------------ */

typedef struct checker {
  const char *sid; /* the session being checked, or NULL */
  cJSON *problems;
  int64_t count, sessions, attributes, channel_messages, steps, events;
  int64_t last_seq, event_seq, step_ord;
} checker;

static void problem(checker *k, const char *what) {
  k->count++;
  if (cJSON_GetArraySize(k->problems) >= PROBLEMS_LISTED) return;
  cJSON *p = cJSON_CreateObject();
  if (k->sid) cJSON_AddStringToObject(p, "session_id", k->sid);
  cJSON_AddStringToObject(p, "problem", what);
  cJSON_AddItemToArray(k->problems, p);
}

static void report_cb(void *ctx, const char *what) { problem(ctx, what); }

static int is_json(const char *v, size_t n) {
  cJSON *x = cJSON_ParseWithLength(v, n);
  cJSON_Delete(x);
  return x != NULL;
}

static int check_attr(void *ctx, const char *key, size_t klen, const char *v, size_t n) {
  checker *k = ctx;
  k->attributes++;
  if (!is_json(v, n)) {
    char msg[300];
    snprintf(msg, sizeof msg, "attribute %.*s is not JSON", (int)(klen > 200 ? 200 : klen), key);
    problem(k, msg);
  }
  return 0;
}

static int check_chan(void *ctx, const char *ch, size_t chlen, int64_t seq, const char *v,
                      size_t n) {
  checker *k = ctx;
  k->channel_messages++;
  if (!is_json(v, n)) {
    char msg[300];
    snprintf(msg, sizeof msg, "message %lld of channel %.*s is not JSON", (long long)seq,
             (int)(chlen > 200 ? 200 : chlen), ch);
    problem(k, msg);
  }
  return 0;
}

static int check_event(void *ctx, int64_t seq, const char *v, size_t n) {
  checker *k = ctx;
  k->events++;
  char msg[200];
  cJSON *e = cJSON_ParseWithLength(v, n);
  if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "type"))) {
    snprintf(msg, sizeof msg, "event %lld is not an event document", (long long)seq);
    problem(k, msg);
  }
  cJSON_Delete(e);
  if (seq <= k->last_seq || seq > k->event_seq) {
    snprintf(msg, sizeof msg, "event %lld is out of order (after %lld, counter %lld)",
             (long long)seq, (long long)k->last_seq, (long long)k->event_seq);
    problem(k, msg);
  }
  k->last_seq = seq;
  return 0;
}

static void check_step(checker *k, const dexa__step_row *r) {
  char msg[400];
  const char *why = NULL;
  if (r->state < DEXA__STEP_READY || r->state > DEXA__STEP_RUNNING) why = "has no valid state";
  else if (r->method != DEXA_CALL_WAIT_FOR && r->method != DEXA_CALL_EXECUTE) why = "has no valid method";
  else if (r->attempt < 0) why = "has no valid attempt";
  else if (r->ord < 1 || r->ord > k->step_ord) why = "is beyond the session's step counter";
  else if (r->state == DEXA__STEP_RUNNING && !r->lease_owner) why = "runs without a lease owner";
  else if (r->state == DEXA__STEP_WAITING && !r->wait) why = "waits without a wait";
  else if ((r->input && !is_json(r->input, r->input_len)) ||
           (r->options && !is_json(r->options, r->options_len)) ||
           (r->wait && !is_json(r->wait, r->wait_len)) ||
           (r->conditions && !is_json(r->conditions, r->conditions_len)) ||
           (r->recovery_error && !is_json(r->recovery_error, r->recovery_error_len)))
    why = "holds text that is not JSON";
  if (!why) return;
  snprintf(msg, sizeof msg, "Step row %.100s (%.100s) %s", r->exec_id, r->step_type, why);
  problem(k, msg);
}

/* A part of a session the store cannot read back (a damaged value) is a
 * problem of the report, and the check goes on with the next part. */
static int readable(checker *k, int rc, const char *part) {
  if (rc != DEXA_E_CORRUPT) return rc;
  char msg[120];
  snprintf(msg, sizeof msg, "its %s cannot be read: a stored value is damaged", part);
  problem(k, msg);
  return DEXA_OK;
}

static int check_session(dexa__store_conn *c, checker *k, const char *sid) {
  dexa__session_dump d;
  k->sid = sid;
  k->sessions++;
  int rc = c->ops->session_dump(c, sid, &d);
  if (rc != DEXA_OK) return rc;
  k->event_seq = d.row.event_seq;
  k->step_ord = d.step_ord;
  k->last_seq = 0;
  if (d.row.status < DEXA__SESSION_RUNNING || d.row.status > DEXA__SESSION_ENDED)
    problem(k, "the session has no valid status");
  if (d.settings && !is_json(d.settings, d.settings_len)) problem(k, "its settings are not JSON");
  dexa__session_dump_free(&d);
  rc = readable(k, c->ops->attr_scan(c, sid, "", 0, check_attr, k), "attributes");
  if (rc == DEXA_OK) rc = readable(k, c->ops->chan_scan(c, sid, check_chan, k), "channel messages");
  dexa__step_row *rows = NULL;
  size_t n = 0;
  if (rc == DEXA_OK) rc = c->ops->step_list(c, sid, 0, &rows, &n);
  for (size_t i = 0; rc == DEXA_OK && i < n; i++) check_step(k, &rows[i]);
  k->steps += (int64_t)n;
  dexa__step_rows_free(rows, n);
  for (int64_t before = -1; rc == DEXA_OK && k->last_seq != before;) {
    before = k->last_seq;
    rc = readable(k, c->ops->event_read(c, sid, k->last_seq, EVENT_PAGE, check_event, k), "events");
  }
  k->sid = NULL;
  return rc;
}

static char *check_report(const checker *k) {
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddBoolToObject(doc, "ok", k->count == 0);
  cJSON_AddNumberToObject(doc, "sessions", (double)k->sessions);
  cJSON_AddNumberToObject(doc, "attributes", (double)k->attributes);
  cJSON_AddNumberToObject(doc, "channel_messages", (double)k->channel_messages);
  cJSON_AddNumberToObject(doc, "steps", (double)k->steps);
  cJSON_AddNumberToObject(doc, "events", (double)k->events);
  cJSON_AddNumberToObject(doc, "problem_count", (double)k->count);
  cJSON_AddItemReferenceToObject(doc, "problems", k->problems);
  char *text = cJSON_PrintUnformatted(doc);
  cJSON_Delete(doc);
  char *out = text ? strdup(text) : NULL;
  cJSON_free(text);
  return out;
}

DEXA_EXTERN int dexa_store_check(const char *uri, char **out, size_t *out_len, char *errmsg,
                                 size_t errmsg_size) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (errmsg && errmsg_size) errmsg[0] = '\0';
  if (!uri || !out) return DEXA_E_INVALID_ARG;
  char name[512];
  side s;
  int rc = side_open(&s, uri, errmsg, errmsg_size);
  checker k;
  memset(&k, 0, sizeof k);
  k.problems = cJSON_CreateArray();
  id_list ids = {NULL, 0, 0, 0, 0};
  if (rc == DEXA_OK && !has_admin(s.store->ops)) rc = DEXA_E_UNSUPPORTED;
  if (rc == DEXA_OK && !k.problems) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) rc = s.conn->ops->integrity_check(s.conn, report_cb, &k);
  /* The check reads every session in one read transaction: one state. */
  if (rc == DEXA_OK) rc = s.conn->ops->begin_read(s.conn);
  if (rc == DEXA_OK) {
    rc = list_ids(s.conn, &ids);
    for (size_t i = 0; rc == DEXA_OK && i < ids.n; i++) rc = check_session(s.conn, &k, ids.ids[i]);
    s.conn->ops->rollback(s.conn);
  }
  if (rc == DEXA_OK && !(*out = check_report(&k))) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK && out_len) *out_len = strlen(*out);
  if (rc == DEXA_OK && k.count) {
    rc = DEXA_E_CORRUPT;
    set_err(errmsg, errmsg_size, "the store has %s problem%s", k.count == 1 ? "one" : "several",
            k.count == 1 ? "" : "s");
  } else if (rc == DEXA_E_UNSUPPORTED && errmsg && !errmsg[0]) { /* not a store left out */
    set_err(errmsg, errmsg_size, "store %s: %s", shown(uri, name, sizeof name),
            "this store cannot be checked");
  } else if (rc != DEXA_OK && errmsg && !errmsg[0]) {
    set_err(errmsg, errmsg_size, "store %s: %s", shown(uri, name, sizeof name), dexa_strerror(rc));
  }
  ids_free(&ids);
  cJSON_Delete(k.problems);
  side_close(&s);
  return rc;
}

/* ---- vacuum -------------------------------------------------------------------------------- */

DEXA_EXTERN int dexa_store_vacuum(const char *uri, char **out, size_t *out_len, char *errmsg,
                                  size_t errmsg_size) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (errmsg && errmsg_size) errmsg[0] = '\0';
  if (!uri || !out) return DEXA_E_INVALID_ARG;
  char name[512];
  side s;
  int rc = side_open(&s, uri, errmsg, errmsg_size);
  int64_t before = 0, after = 0;
  if (rc == DEXA_OK && !s.store->ops->vacuum) rc = DEXA_E_UNSUPPORTED;
  if (rc == DEXA_OK) rc = s.store->ops->vacuum(s.store, &before, &after);
  if (rc == DEXA_OK) {
    char doc[96];
    snprintf(doc, sizeof doc, "{\"bytes_before\":%lld,\"bytes_after\":%lld}", (long long)before,
             (long long)after);
    if (!(*out = strdup(doc))) rc = DEXA_E_NOMEM;
    else if (out_len) *out_len = strlen(doc);
  }
  if (rc != DEXA_OK && errmsg && !errmsg[0])
    set_err(errmsg, errmsg_size, "store %s: %s", shown(uri, name, sizeof name), dexa_strerror(rc));
  side_close(&s);
  return rc;
}

/* ---- copy -------------------------------------------------------------------------------- */

typedef struct copier {
  dexa__store_conn *dst;
  const char *sid;
  int64_t attributes, channel_messages, steps, events, last_seq;
} copier;

static int copy_attr(void *ctx, const char *key, size_t klen, const char *v, size_t n) {
  copier *c = ctx;
  c->attributes++;
  return c->dst->ops->attr_put(c->dst, c->sid, key, klen, v, n);
}

/* Channel messages are pushed in FIFO order: the destination numbers them
 * anew, in the same order. */
static int copy_chan(void *ctx, const char *ch, size_t chlen, int64_t seq, const char *v,
                     size_t n) {
  (void)seq;
  copier *c = ctx;
  c->channel_messages++;
  return c->dst->ops->chan_push(c->dst, c->sid, ch, chlen, v, n);
}

static int copy_event(void *ctx, int64_t seq, const char *v, size_t n) {
  copier *c = ctx;
  c->events++;
  c->last_seq = seq;
  return c->dst->ops->event_append(c->dst, c->sid, seq, v, n);
}

/* One session: read in one read transaction of src, written in one write
 * transaction of dst. */
static int copy_session(side *src, side *dst, copier *cp, const char *sid) {
  dexa__store_conn *s = src->conn, *d = dst->conn;
  dexa__session_dump dump;
  dexa__step_row *rows = NULL;
  size_t n = 0;
  cp->sid = sid;
  int rc = s->ops->begin_read(s);
  if (rc != DEXA_OK) return rc;
  rc = s->ops->session_dump(s, sid, &dump);
  if (rc == DEXA_OK) {
    rc = d->ops->begin_write(d);
    if (rc == DEXA_OK) rc = d->ops->session_restore(d, &dump);
    if (rc == DEXA_OK) rc = s->ops->attr_scan(s, sid, "", 0, copy_attr, cp);
    if (rc == DEXA_OK) rc = s->ops->chan_scan(s, sid, copy_chan, cp);
    if (rc == DEXA_OK) rc = s->ops->step_list(s, sid, 0, &rows, &n);
    for (size_t i = 0; rc == DEXA_OK && i < n; i++) rc = d->ops->step_insert(d, &rows[i]);
    cp->steps += (int64_t)n;
    cp->last_seq = 0;
    for (int64_t before = -1; rc == DEXA_OK && cp->last_seq != before;) {
      before = cp->last_seq;
      rc = s->ops->event_read(s, sid, cp->last_seq, EVENT_PAGE, copy_event, cp);
    }
    if (rc == DEXA_OK) rc = d->ops->commit(d);
    else d->ops->rollback(d);
    if (rc == DEXA_OK && dst->store->sync_after_commit) rc = d->ops->sync(dst->store);
    dexa__step_rows_free(rows, n);
    dexa__session_dump_free(&dump);
  }
  s->ops->rollback(s);
  return rc;
}

/* The same store named twice (a copy into itself would find every
 * session there already, but say so plainly). */
static int same_store(const char *a, const char *b) {
  if (strncmp(a, "sqlite:", 7) == 0) a += 7;
  if (strncmp(b, "sqlite:", 7) == 0) b += 7;
  if (strcmp(a, ":memory:") == 0 || strcmp(b, ":memory:") == 0) return 0;
  char ra[PATH_MAX], rb[PATH_MAX];
  if (realpath(a, ra) && realpath(b, rb)) return strcmp(ra, rb) == 0;
  return strcmp(a, b) == 0;
}

static int already_there(side *dst, const id_list *ids, char *errmsg, size_t n) {
  for (size_t i = 0; i < ids->n; i++) {
    dexa__session_row row;
    int rc = dst->conn->ops->session_get(dst->conn, ids->ids[i], &row);
    if (rc == DEXA_OK) {
      dexa__session_row_free(&row);
      set_err(errmsg, n, "session %s is already in %s: nothing was copied", ids->ids[i],
              "the destination");
      return DEXA_E_ALREADY_EXISTS;
    }
    if (rc != DEXA_E_NOT_FOUND) return rc;
  }
  return DEXA_OK;
}

DEXA_EXTERN int dexa_store_copy(const char *src_uri, const char *dst_uri, char **out,
                                size_t *out_len, char *errmsg, size_t errmsg_size) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (errmsg && errmsg_size) errmsg[0] = '\0';
  if (!src_uri || !dst_uri || !out) return DEXA_E_INVALID_ARG;
  char name[512], name2[512];
  if (same_store(src_uri, dst_uri)) {
    set_err(errmsg, errmsg_size, "%s and %s are the same store", shown(src_uri, name, sizeof name),
            shown(dst_uri, name2, sizeof name2));
    return DEXA_E_INVALID_ARG;
  }
  side src = {NULL, NULL}, dst = {NULL, NULL};
  id_list ids = {NULL, 0, 0, 0, 0};
  copier cp;
  memset(&cp, 0, sizeof cp);
  int rc = side_open(&src, src_uri, errmsg, errmsg_size);
  if (rc == DEXA_OK) rc = side_open(&dst, dst_uri, errmsg, errmsg_size);
  if (rc == DEXA_OK && (!has_admin(src.store->ops) || !has_admin(dst.store->ops))) {
    rc = DEXA_E_UNSUPPORTED;
    set_err(errmsg, errmsg_size, "store %s or %s cannot be copied", shown(src_uri, name, sizeof name),
            shown(dst_uri, name2, sizeof name2));
  }
  if (rc == DEXA_OK) rc = list_ids(src.conn, &ids);
  if (rc == DEXA_OK) rc = already_there(&dst, &ids, errmsg, errmsg_size);
  cp.dst = dst.conn;
  /* Oldest first, so the destination's own numbering follows the source. */
  for (size_t i = ids.n; rc == DEXA_OK && i-- > 0;) {
    rc = copy_session(&src, &dst, &cp, ids.ids[i]);
    if (rc != DEXA_OK) set_err(errmsg, errmsg_size, "session %s: %s", ids.ids[i], dexa_strerror(rc));
  }
  if (rc == DEXA_OK) {
    char doc[256];
    snprintf(doc, sizeof doc,
             "{\"sessions\":%zu,\"attributes\":%lld,\"channel_messages\":%lld,\"steps\":%lld,"
             "\"events\":%lld}",
             ids.n, (long long)cp.attributes, (long long)cp.channel_messages, (long long)cp.steps,
             (long long)cp.events);
    if (!(*out = strdup(doc))) rc = DEXA_E_NOMEM;
    else if (out_len) *out_len = strlen(doc);
  } else if (errmsg && !errmsg[0]) {
    set_err(errmsg, errmsg_size, "copy: %s%s", dexa_strerror(rc), "");
  }
  ids_free(&ids);
  side_close(&dst);
  side_close(&src);
  return rc;
}
