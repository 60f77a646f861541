/* Client operations: start a session, run an RPC under the session's lock,
 * list sessions. Each write is one group-commit operation, so it commits
 * entirely or not at all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "util/buf.h"
#include "util/json_span.h"

/* ---- start_session -------------------------------------------------------- */

typedef struct start_arg {
  const char *sid;
  const char *settings;
  size_t settings_len;
  char errmsg[256];
} start_arg;

static int start_op(dexa_runtime *rt, dexa__store_conn *c, void *arg) {
  start_arg *a = arg;
  dexa__touch_session(rt, a->sid);
  int64_t now = dexa__now(rt);
  int rc = c->ops->session_insert(c, a->sid, rt->desc.flow_type, now, a->settings,
                                  a->settings_len);
  if (rc != DEXA_OK) return rc;
  dexa__buf in;
  dexa__buf_init(&in);
  dexa__buf_puts(&in, "{\"settings\":");
  dexa__buf_append(&in, a->settings, a->settings_len);
  dexa__buf_putc(&in, '}');
  rc = in.oom ? DEXA_E_NOMEM
              : dexa__enqueue(rt, c, a->sid, rt->desc.start_step, in.data, in.len, NULL, 0,
                              NULL, 0, now);
  dexa__buf_free(&in);
  const dexa__step_def *def = dexa__flow_step(&rt->desc, rt->desc.start_step);
  if (rc != DEXA_OK || def->opts.has_wait_for) return rc;
  /* The start Step is locked and I/O-free: run it now, in this transaction,
   * so a session exists only together with its first state. */
  char exec_id[DEXA__NAME_MAX + 24];
  snprintf(exec_id, sizeof exec_id, "%s-1", rt->desc.start_step);
  dexa__step_row row;
  rc = c->ops->step_get(c, a->sid, exec_id, &row);
  if (rc == DEXA_OK) rc = dexa__run_inline(rt, c, &row, now, 1, a->errmsg, sizeof a->errmsg);
  dexa__step_row_free(&row);
  return rc;
}

static int id_out(const char *sid, char **out, size_t *out_len) {
  if (!out) return DEXA_OK; /* the caller named the session and needs no document */
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "{\"session_id\":");
  dexa__buf_json_cstr(&b, sid);
  dexa__buf_putc(&b, '}');
  size_t len = 0;
  *out = dexa__buf_steal(&b, &len);
  if (out_len) *out_len = len;
  return *out ? DEXA_OK : DEXA_E_NOMEM;
}

static int check_session_id(const char *sid) {
  size_t n = strlen(sid);
  if (n == 0 || n > 200) return DEXA_E_INVALID_ARG;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)sid[i] < 0x20) return DEXA_E_INVALID_ARG;
  return DEXA_OK;
}

DEXA_EXTERN int dexa_runtime_start_session(dexa_runtime *rt, const char *session_id,
                                           const char *settings_json, size_t settings_len,
                                           char **out, size_t *out_len) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (!rt || (!out && !session_id) || (session_id && check_session_id(session_id) != DEXA_OK))
    return DEXA_E_INVALID_ARG;
  char gen[35];
  start_arg a = {session_id, settings_json, settings_len, ""};
  if (!settings_json || settings_len == 0) {
    a.settings = "{}";
    a.settings_len = 2;
  } else {
    dexa__json_trim(&a.settings, &a.settings_len);
    if (dexa__json_validate(a.settings, a.settings_len) != 0 || a.settings_len == 0 ||
        a.settings[0] != '{') {
      dexa__set_errmsg(rt, "start_session: settings must be a JSON object");
      return DEXA_E_INVALID_JSON;
    }
  }
  if (!session_id) {
    int rc = dexa__random_session_id(gen);
    if (rc != DEXA_OK) return rc;
    a.sid = gen;
  }
  int rc = dexa__gc_run(rt, start_op, &a);
  if (rc != DEXA_OK) {
    char why[400];
    dexa__set_errmsg(rt, "start_session %s: %s", a.sid,
                     a.errmsg[0] ? a.errmsg : dexa__store_error(rt, rc, why, sizeof why));
    return rc;
  }
  return id_out(a.sid, out, out_len);
}

/* ---- RPCs ----------------------------------------------------------------- */

typedef struct rpc_arg {
  const char *sid;
  const char *name;
  const char *input;
  size_t input_len;
  int read_only;
  int interrupts;   /* the RPC tells the session's running tasks to end early */
  uint64_t running; /* out: the newest in-flight task's serial when it ran */
  dexa_result *res; /* out: the successful result */
  int64_t event_seq; /* out: newest durable event after the RPC */
  dexa__claim handoff; /* out: Steps claimed for idle workers */
  dexa__taskq handoff_more;
  char errmsg[512];
} rpc_arg;

static int rpc_run(dexa_runtime *rt, dexa__store_conn *c, rpc_arg *a, int apply) {
  int64_t now = dexa__now(rt);
  dexa__session_row s;
  int rc = c->ops->session_get(c, a->sid, &s);
  if (rc != DEXA_OK) return rc;
  if (!dexa__session_retained(rt, &s, now)) {
    snprintf(a->errmsg, sizeof a->errmsg,
             "session \"%.100s\" is no longer retained (it ended at %lld ms)", a->sid,
             (long long)s.active_ms);
    dexa__session_row_free(&s);
    return DEXA_E_NOT_FOUND;
  }
  if (s.status == DEXA__SESSION_ENDED && !a->read_only) {
    snprintf(a->errmsg, sizeof a->errmsg,
             "session \"%.100s\" has ended (at %lld ms): it takes no more messages or "
             "decisions; start a new session", a->sid, (long long)s.active_ms);
    dexa__session_row_free(&s);
    return DEXA_E_SESSION_ENDED;
  }
  dexa__reader reader = {.rt = rt, .session_id = a->sid, .conn = c};
  dexa__sink_ctx sink = {rt, a->sid, s.event_seq};
  a->event_seq = s.event_seq;
  dexa__session_row_free(&s);
  dexa_call call;
  dexa_call_init(&call, sizeof call);
  call.kind = DEXA_CALL_RPC;
  call.session_id = a->sid;
  call.name = a->name;
  call.attempt = 1;
  call.input = a->input;
  call.input_len = a->input_len;
  call.now_ms = now;
  call.attr_user_data = &reader;
  call.attr_get = dexa__reader_get;
  call.attr_scan = dexa__reader_scan;
  call.sink_user_data = &sink;
  call.event_sink = dexa__delta_sink;
  rc = dexa__dispatch_call(rt, &call, &a->res);
  dexa__reader_free(&reader);
  if (rc != DEXA_OK) {
    const char *m = a->res ? dexa_result_errmsg(a->res) : "";
    snprintf(a->errmsg, sizeof a->errmsg, "%s", m && *m ? m : dexa_strerror(rc));
    return rc;
  }
  if (!apply) return DEXA_OK;
  int published = 0;
  const char *doc = NULL;
  size_t len = 0;
  rc = dexa__apply_effects(rt, c, a->sid, a->res, &published);
  dexa_result_decision(a->res, &doc, &len);
  /* end_session ends the session: it then refuses changes
   * (DEXA_E_SESSION_ENDED); another RPC's "complete" completes it. */
  int32_t closed = strcmp(a->name, "end_session") == 0 ? DEXA__SESSION_ENDED : DEXA__SESSION_COMPLETED;
  if (rc == DEXA_OK) rc = dexa__apply_decision(rt, c, a->sid, doc, len, NULL, closed, now);
  if (rc == DEXA_OK && published) rc = dexa__wait_eval_session(rt, c, a->sid, now);
  if (rc == DEXA_OK) rc = c->ops->session_get(c, a->sid, &s);
  if (rc == DEXA_OK) a->event_seq = s.event_seq;
  if (rc == DEXA_OK) dexa__session_row_free(&s);
  if (rc != DEXA_OK) {
    char why[400];
    snprintf(a->errmsg, sizeof a->errmsg, "cannot apply %s: %s", a->name,
             dexa__store_error(rt, rc, why, sizeof why));
  }
  return rc;
}

static int rpc_op(dexa_runtime *rt, dexa__store_conn *c, void *arg) {
  rpc_arg *a = arg;
  dexa__touch_session(rt, a->sid);
  dexa_result_free(a->res); /* from an earlier run of a batch that ran again */
  a->res = NULL;
  if (a->interrupts) a->running = dexa__inflight_serial(rt);
  int rc = rpc_run(rt, c, arg, 1);
  int64_t now = dexa__now(rt);
  if (rc == DEXA_OK) rc = dexa__session_active(rt, c, a->sid, now);
  if (rc == DEXA_OK) rc = dexa__run_session_locked(rt, c, a->sid, now);
  if (rc == DEXA_OK) rc = dexa__claim_for_idle(rt, c, &a->handoff, &a->handoff_more);
  return rc;
}

/* Read-only RPCs run in a read transaction on a pooled connection. */
static int rpc_read(dexa_runtime *rt, rpc_arg *a) {
  dexa__store_conn *c = NULL;
  int rc = dexa__pool_acquire(rt, &c);
  if (rc != DEXA_OK) return rc;
  rc = c->ops->begin_read(c);
  if (rc == DEXA_OK) {
    rc = rpc_run(rt, c, a, 0);
    c->ops->rollback(c);
  }
  dexa__pool_release(rt, c);
  return rc;
}

/* The response, with "resume_token" added for the snapshot RPC. */
static int response_out(const rpc_arg *a, char **out, size_t *out_len) {
  const char *doc = NULL;
  size_t len = 0;
  dexa_result_response(a->res, &doc, &len);
  if (doc) dexa__json_trim(&doc, &len);
  if (!doc || len == 0) doc = "{}", len = 2;
  dexa__buf b;
  dexa__buf_init(&b);
  if (strcmp(a->name, "snapshot") == 0 && doc[0] == '{' && doc[len - 1] == '}') {
    char tok[64];
    dexa__token_format(tok, sizeof tok, a->sid, a->event_seq, 0);
    dexa__buf_append(&b, doc, len - 1);
    int empty = dexa__json_validate(doc, len) == 0 && len >= 2 &&
                strspn(doc + 1, " \t\r\n") == len - 2;
    dexa__buf_puts(&b, empty ? "\"resume_token\":" : ",\"resume_token\":");
    dexa__buf_json_cstr(&b, tok);
    dexa__buf_putc(&b, '}');
  } else {
    dexa__buf_append(&b, doc, len);
  }
  size_t n = 0;
  *out = dexa__buf_steal(&b, &n);
  if (out_len) *out_len = n;
  return *out ? DEXA_OK : DEXA_E_NOMEM;
}

DEXA_EXTERN int dexa_runtime_call(dexa_runtime *rt, const char *session_id, const char *rpc,
                                  const char *input_json, size_t input_len, char **out,
                                  size_t *out_len) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (!rt || !session_id || !rpc || !out) return DEXA_E_INVALID_ARG;
  rpc_arg a = {session_id, rpc, input_json, input_json ? input_len : 0, 0, 0, 0, NULL, 0,
               {NULL, 0, 0, NULL, 1, 0, 0, 0, 0}, {{NULL}, 0}, ""};
  const dexa__rpc_def *def = dexa__flow_rpc(&rt->desc, rpc);
  int rc = def ? DEXA_OK : DEXA_E_UNKNOWN_RPC;
  if (rc == DEXA_OK) a.interrupts = def->interrupts;
  if (rc == DEXA_OK) a.read_only = def->read_only;
  /* A claim for an idle worker that took every ready Step needs no other
   * worker woken: that worker is, once the commit is durable. */
  if (rc == DEXA_OK && def->read_only) rc = rpc_read(rt, &a);
  else if (rc == DEXA_OK) {
    rc = dexa__gc_run_claim(rt, rpc_op, &a, NULL, &a.handoff.quiet);
    dexa__hand_claim_over(rt, &a.handoff, rc == DEXA_OK);
  }
  /* Only once durable: a stop that did not commit stops nothing. */
  if (rc == DEXA_OK && a.interrupts) dexa__interrupt_session(rt, session_id, a.running);
  if (rc == DEXA_OK) rc = response_out(&a, out, out_len);
  if (rc != DEXA_OK) {
    char why[400];
    const char *msg = a.errmsg[0] ? a.errmsg : dexa__store_error(rt, rc, why, sizeof why);
    if (rc == DEXA_E_NOT_FOUND && !a.res && !a.errmsg[0]) msg = "no such session";
    if (rc == DEXA_E_UNKNOWN_RPC && !def) msg = "no such RPC";
    dexa__set_errmsg(rt, "%s %s: %s", rpc, session_id, msg);
    *out = dexa__error_doc(rc, msg, out_len);
  }
  dexa_result_free(a.res);
  return rc;
}

DEXA_EXTERN int dexa_runtime_end_session(dexa_runtime *rt, const char *session_id,
                                         const char *reason, char **out, size_t *out_len) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (!rt || !session_id) return DEXA_E_INVALID_ARG;
  dexa__buf in;
  dexa__buf_init(&in);
  dexa__buf_putc(&in, '{');
  if (reason) {
    dexa__buf_puts(&in, "\"reason\":");
    dexa__buf_json_cstr(&in, reason);
  }
  dexa__buf_putc(&in, '}');
  char *doc = NULL;
  size_t len = 0;
  int rc = in.oom ? DEXA_E_NOMEM
                  : dexa_runtime_call(rt, session_id, "end_session", in.data, in.len, &doc, &len);
  dexa__buf_free(&in);
  if (out) {
    *out = doc;
    if (out_len) *out_len = len;
  } else {
    dexa_free(doc);
  }
  return rc;
}

/* ---- the sweep's end of an idle session ------------------------------------ */

int dexa__session_retained(const dexa_runtime *rt, const dexa__session_row *s, int64_t now) {
  return s->status == DEXA__SESSION_RUNNING || rt->retention_ms <= 0 ||
         s->active_ms > now - rt->retention_ms;
}

int dexa__session_active(dexa_runtime *rt, dexa__store_conn *c, const char *sid, int64_t now) {
  return c->ops->session_touch(c, sid, now, rt->touch_step);
}

/* A flow without end_session (a host's own flow): closed by the runtime,
 * with the session_ended event of dexagents-events(7). */
static int close_idle(dexa_runtime *rt, dexa__store_conn *c, const char *sid, int64_t now) {
  int rc = dexa__session_close(rt, c, sid, DEXA__SESSION_ENDED, NULL);
  char ev[96];
  int n = snprintf(ev, sizeof ev, "{\"type\":\"session_ended\",\"at\":%lld,\"reason\":\"idle_timeout\"}",
                   (long long)now);
  if (rc == DEXA_OK) rc = dexa__event_append(rt, c, sid, ev, (size_t)n);
  return rc;
}

int dexa__end_idle_op(dexa_runtime *rt, dexa__store_conn *c, void *arg) {
  dexa__idle_arg *a = arg;
  a->ended = 0;
  a->errmsg[0] = '\0';
  dexa__touch_session(rt, a->sid);
  int64_t now = dexa__now(rt);
  dexa__session_row s;
  int rc = c->ops->session_get(c, a->sid, &s);
  if (rc == DEXA_E_NOT_FOUND) return DEXA_OK;
  if (rc != DEXA_OK) return rc;
  int idle = s.status == DEXA__SESSION_RUNNING && s.active_ms < a->cutoff;
  dexa__session_row_free(&s);
  if (!idle) return DEXA_OK; /* active again since it was listed */
  const dexa__rpc_def *def = dexa__flow_rpc(&rt->desc, "end_session");
  if (!def) {
    rc = close_idle(rt, c, a->sid, now);
    a->ended = rc == DEXA_OK;
    return rc;
  }
  static const char input[] = "{\"reason\":\"idle_timeout\"}";
  rpc_arg r = {a->sid, def->name, input, sizeof input - 1, 0, def->interrupts, 0, NULL, 0,
               {NULL, 0, 0, NULL, 1, 0, 0, 0, 0}, {{NULL}, 0}, ""};
  a->running = dexa__inflight_serial(rt);
  if (c->ops->savepoint(c) != DEXA_OK) return DEXA_E_IO;
  rc = rpc_run(rt, c, &r, 1);
  dexa_result_free(r.res);
  if (rc == DEXA_OK) {
    rc = c->ops->release(c);
  } else if (rc == DEXA_E_IO || rc == DEXA_E_BUSY || rc == DEXA_E_NOMEM) {
    c->ops->rollback_to(c);
  } else {
    /* The flow refused (its state is damaged, ...): the session still ends. */
    snprintf(a->errmsg, sizeof a->errmsg, "end_session: %.200s", r.errmsg);
    rc = c->ops->rollback_to(c);
    if (rc == DEXA_OK) rc = close_idle(rt, c, a->sid, now);
  }
  a->ended = rc == DEXA_OK;
  return rc;
}

/* ---- list_sessions -------------------------------------------------------- */

typedef struct list_ctx {
  dexa__buf *b;
  int32_t count;
  int64_t last_ms;
  char last_id[256];
} list_ctx;

static const char *status_name(int32_t s) {
  return s == DEXA__SESSION_COMPLETED ? "completed"
         : s == DEXA__SESSION_FAILED  ? "failed"
         : s == DEXA__SESSION_ENDED   ? "ended"
                                      : "running";
}

static int list_visit(void *ctx, const dexa__session_row *r) {
  list_ctx *l = ctx;
  dexa__buf_puts(l->b, l->count ? ",{\"session_id\":" : "{\"session_id\":");
  dexa__buf_json_cstr(l->b, r->session_id);
  dexa__buf_printf(l->b, ",\"created_ms\":%lld,\"flow_type\":", (long long)r->created_ms);
  dexa__buf_json_cstr(l->b, r->flow_type);
  dexa__buf_printf(l->b, ",\"status\":\"%s\",\"active_ms\":%lld}", status_name(r->status),
                   (long long)r->active_ms);
  l->count++;
  l->last_ms = r->created_ms;
  snprintf(l->last_id, sizeof l->last_id, "%s", r->session_id);
  return DEXA_OK;
}

/* Page cursor "<created_ms>.<session id>". */
static int parse_after(const char *after, int64_t *ms, const char **id) {
  char *end = NULL;
  long long v = strtoll(after, &end, 10);
  if (end == after || *end != '.' || v < 0) return DEXA_E_INVALID_ARG;
  *ms = v;
  *id = end + 1;
  return DEXA_OK;
}

DEXA_EXTERN int dexa_runtime_list_sessions(dexa_runtime *rt, const char *after, int32_t limit,
                                           char **out, size_t *out_len) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (!rt || !out || limit < 1 || limit > 1000) return DEXA_E_INVALID_ARG;
  int64_t before_ms = 0;
  const char *before_id = NULL;
  if (after && *after && parse_after(after, &before_ms, &before_id) != DEXA_OK)
    return DEXA_E_INVALID_ARG;
  dexa__store_conn *c = NULL;
  int rc = dexa__pool_acquire(rt, &c);
  if (rc != DEXA_OK) return rc;
  dexa__buf b;
  dexa__buf_init(&b);
  list_ctx l = {&b, 0, 0, ""};
  dexa__buf_puts(&b, "{\"sessions\":[");
  rc = c->ops->session_list(c, before_ms, before_id, limit, list_visit, &l);
  dexa__pool_release(rt, c);
  dexa__buf_puts(&b, "],\"next\":");
  if (l.count == limit) {
    char next[300];
    snprintf(next, sizeof next, "%lld.%s", (long long)l.last_ms, l.last_id);
    dexa__buf_json_cstr(&b, next);
  } else {
    dexa__buf_puts(&b, "null");
  }
  dexa__buf_putc(&b, '}');
  if (rc == DEXA_OK) *out = dexa__buf_steal(&b, out_len);
  if (rc == DEXA_OK && !*out) rc = DEXA_E_NOMEM;
  dexa__buf_free(&b);
  if (rc != DEXA_OK) {
    char why[400];
    dexa__set_errmsg(rt, "list_sessions: %s", dexa__store_error(rt, rc, why, sizeof why));
  }
  return rc;
}
