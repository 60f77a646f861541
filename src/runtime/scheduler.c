/* Scheduling: new executions, the claim of due rows (ready Steps, timers,
 * expired leases) and running locked Steps inline in the write transaction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"

/* Rows handled per claim before giving the batch back to other writers. */
#define CLAIM_MAX_ROWS 64
/* Locked Steps an RPC runs right after it (dexa__run_session_locked). */
#define CASCADE_MAX 8

int dexa__enqueue(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                  const char *step_type, const char *input, size_t input_len,
                  const char *options, size_t options_len, const char *recovery_error,
                  size_t recovery_error_len, int64_t now) {
  const dexa__step_def *def = dexa__flow_step(&rt->desc, step_type);
  if (!def) return DEXA_E_UNKNOWN_STEP;
  dexa__step_opts o = def->opts;
  int rc = dexa__opts_overlay(&o, options, options_len);
  if (rc != DEXA_OK) return rc;
  char exec_id[DEXA__NAME_MAX + 24];
  dexa__step_row row = {0};
  /* The session's step order names the execution: unique in the session,
   * one counter for every Step type. */
  rc = c->ops->session_next_ord(c, sid, &row.ord);
  if (rc != DEXA_OK) return rc;
  snprintf(exec_id, sizeof exec_id, "%s-%lld", step_type, (long long)row.ord);
  row.session_id = (char *)sid;
  row.exec_id = exec_id;
  row.step_type = (char *)step_type;
  row.state = DEXA__STEP_READY;
  row.method = o.has_wait_for ? DEXA_CALL_WAIT_FOR : DEXA_CALL_EXECUTE;
  row.input = (char *)(input ? input : "null");
  row.input_len = input ? input_len : 4;
  row.options = (char *)options;
  row.options_len = options_len;
  row.recovery_error = (char *)recovery_error;
  row.recovery_error_len = recovery_error_len;
  row.due_ms = now;
  return c->ops->step_insert(c, &row);
}

void dexa__call_for_row(dexa_runtime *rt, dexa_call *call, const dexa__step_row *row,
                        int64_t now) {
  dexa_call_init(call, sizeof *call);
  call->kind = row->method;
  call->session_id = row->session_id;
  call->name = row->step_type;
  call->step_execution_id = row->exec_id;
  /* Lost workers are not attempts: the Step sees the attempt it runs. */
  call->attempt = row->attempt - row->lost_workers > 0 ? row->attempt - row->lost_workers : 1;
  call->input = row->input;
  call->input_len = row->input_len;
  if (row->method == DEXA_CALL_EXECUTE) {
    call->conditions = row->conditions;
    call->conditions_len = row->conditions_len;
  }
  call->recovery_error = row->recovery_error;
  call->recovery_error_len = row->recovery_error_len;
  call->now_ms = now;
  call->attr_get = dexa__reader_get;
  call->attr_scan = dexa__reader_scan;
  call->event_sink = dexa__delta_sink;
}

int dexa__dispatch_call(dexa_runtime *rt, const dexa_call *call, dexa_result **res) {
  *res = NULL;
  dexa__step_trace trace;
  dexa__trace_step_begin(rt, call, &trace);
  int rc = rt->dispatch(rt->dispatch_user, res, call);
  if (rc == DEXA_OK && !(*res && dexa_result_status(*res) == DEXA_OK))
    rc = *res ? dexa_result_status(*res) : DEXA_E_INTERNAL;
  dexa__trace_step_end(rt, call, *res, rc, &trace);
  return rc;
}

static const char *result_message(const dexa_result *res, int rc) {
  const char *m = res ? dexa_result_errmsg(res) : NULL;
  return m && *m ? m : dexa_strerror(rc);
}

/* After a failed apply the row in memory may be half-changed: reload it and
 * count the attempt. */
static int fail_inline(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row, int code,
                       const char *msg, int64_t retry_after, int64_t now) {
  int32_t attempt = row->attempt;
  char *sid = strdup(row->session_id), *exec = strdup(row->exec_id);
  int rc = sid && exec ? DEXA_OK : DEXA_E_NOMEM;
  dexa__step_row_free(row);
  if (rc == DEXA_OK) rc = c->ops->step_get(c, sid, exec, row);
  free(sid);
  free(exec);
  if (rc != DEXA_OK) return rc;
  row->attempt = attempt;
  return dexa__attempt_failed(rt, c, row, code, msg, retry_after, now);
}

int dexa__run_inline(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row, int64_t now,
                     int fail_hard, char *errmsg, size_t errmsg_size) {
  row->attempt++;
  row->started_ms = now;
  dexa__session_row s;
  int rc = c->ops->session_get(c, row->session_id, &s);
  if (rc != DEXA_OK) return rc;
  dexa__reader reader = {.rt = rt, .session_id = row->session_id, .conn = c};
  dexa__sink_ctx sink = {rt, row->session_id, s.event_seq};
  dexa__session_row_free(&s);
  dexa_call call;
  dexa__call_for_row(rt, &call, row, now);
  call.attr_user_data = &reader;
  call.sink_user_data = &sink;
  dexa_result *res = NULL;
  int drc = dexa__dispatch_call(rt, &call, &res);
  if (drc == DEXA_OK) drc = dexa__apply_step_result(rt, c, row, res, now);
  int fatal = drc == DEXA_E_IO || drc == DEXA_E_BUSY || drc == DEXA_E_CORRUPT;
  if (drc != DEXA_OK && errmsg) snprintf(errmsg, errmsg_size, "%s", result_message(res, drc));
  if (drc == DEXA_OK || fatal || fail_hard)
    rc = drc;
  else
    rc = fail_inline(rt, c, row, drc, result_message(res, drc),
                     res ? dexa_result_retry_after_ms(res) : 0, now);
  dexa_result_free(res);
  dexa__reader_free(&reader);
  return rc;
}

/* The session's first READY locked row that is due, moved into *out. */
static int first_due_locked(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                            int64_t now, dexa__step_row *out) {
  dexa__step_row *rows = NULL;
  size_t n = 0;
  int rc = c->ops->step_list(c, sid, DEXA__STEP_READY, &rows, &n);
  if (rc != DEXA_OK) return rc;
  rc = DEXA_E_NOT_FOUND;
  for (size_t i = 0; i < n && rc == DEXA_E_NOT_FOUND; i++) {
    dexa__step_opts o;
    if (rows[i].due_ms > now || dexa__row_opts(rt, &rows[i], &o) != DEXA_OK || !o.locked) continue;
    *out = rows[i];
    memset(&rows[i], 0, sizeof rows[i]);
    rc = DEXA_OK;
  }
  dexa__step_rows_free(rows, n);
  return rc;
}

int dexa__run_session_locked(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                             int64_t now) {
  if (c->ops->savepoint(c) != DEXA_OK) return DEXA_OK;
  int rc = DEXA_OK;
  for (int i = 0; i < CASCADE_MAX && rc == DEXA_OK; i++) {
    dexa__step_row row;
    rc = first_due_locked(rt, c, sid, now, &row);
    if (rc == DEXA_E_NOT_FOUND) {
      rc = DEXA_OK;
      break;
    }
    if (rc == DEXA_OK) rc = dexa__run_inline(rt, c, &row, now, 0, NULL, 0);
    dexa__step_row_free(&row);
  }
  /* Anything wrong: undo these runs only; the claim loop runs them later. */
  if (rc == DEXA_OK) return c->ops->release(c);
  char why[512];
  dexa__log(rt, DEXA_LOG_DEBUG, "locked-cascade",
            "session %s: its ready locked Steps could not run with the RPC (%s); a worker runs"
            " them",
            sid, dexa__store_error(rt, rc, why, sizeof why));
  return c->ops->rollback_to(c) == DEXA_OK ? DEXA_OK : rc;
}

static int claim_row(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row,
                     dexa__claim *cl, const dexa__step_opts *o) {
  int64_t now = cl->now;
  if (o->max_attempts == 1) cl->single = 1;
  row->attempt++;
  row->state = DEXA__STEP_RUNNING;
  row->started_ms = now;
  row->lease_until = now + (rt->lease_ms < o->timeout_ms ? rt->lease_ms : o->timeout_ms);
  row->due_ms = row->lease_until;
  int rc = dexa__row_set(&row->lease_owner, NULL, rt->worker_id, strlen(rt->worker_id));
  if (rc == DEXA_OK) rc = c->ops->step_update(c, row);
  dexa__session_row s = {0};
  if (rc == DEXA_OK) rc = c->ops->session_get(c, row->session_id, &s);
  /* The lease is committed before the method runs: that commit is what
   * makes a single-attempt Step run at most once. */
  dexa_task **slot = cl->task ? &cl->more->items[cl->more->count] : &cl->task;
  /* The task reads the session as this transaction leaves it: at this data
   * version or newer (the session cache, without asking the store). */
  if (rc == DEXA_OK) rc = dexa__task_new(rt, row, s.event_seq, s.data_ver, slot);
  if (rc == DEXA_OK && slot != &cl->task) cl->more->count++;
  dexa__session_row_free(&s);
  return rc;
}

static int handle_due(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row,
                      dexa__claim *cl) {
  char msg[160];
  dexa__touch_session(rt, row->session_id);
  switch (row->state) {
  case DEXA__STEP_WAITING:
    return dexa__wait_eval(rt, c, row, cl->now);
  case DEXA__STEP_RUNNING: {
    if (row->cancelled) return c->ops->step_delete(c, row->session_id, row->exec_id);
    /* A lease renewed up to the Step's deadline ran out of time; one that
     * expired before it was not renewed: its worker was lost. */
    dexa__step_opts o;
    if (dexa__row_opts(rt, row, &o) == DEXA_OK && o.timeout_ms > 0 &&
        row->lease_until < row->started_ms + o.timeout_ms)
      return dexa__attempt_lost(rt, c, row, cl->now);
    snprintf(msg, sizeof msg, "%s attempt %d timed out", row->exec_id,
             (int)dexa__failed_attempts(row));
    return dexa__attempt_failed(rt, c, row, DEXA_E_TIMEOUT, msg, 0, cl->now);
  }
  default: {
    dexa__step_opts o;
    /* Overrides were checked when enqueued; a bad one just keeps defaults. */
    (void)dexa__row_opts(rt, row, &o);
    /* A batch claim stops before a single-attempt Step: it must not wait
     * behind others once its attempt is counted. */
    if (!o.locked && cl->task && o.max_attempts == 1) {
      cl->stop = 1;
      return DEXA_OK;
    }
    if (!o.locked) return claim_row(rt, c, row, cl, &o);
    cl->ran++;
    return dexa__run_inline(rt, c, row, cl->now, 0, NULL, 0);
  }
  }
}

static int claim_full(const dexa__claim *cl) {
  if (!cl->task) return 0;
  int want = cl->more && cl->want > 1 ? cl->want : 1;
  return cl->stop || 1 + (cl->more ? cl->more->count : 0) >= want;
}

void dexa__claim_drop(dexa__claim *cl) {
  dexa__task_free(cl->task);
  cl->task = NULL;
  while (cl->more && cl->more->count) dexa__task_free(cl->more->items[--cl->more->count]);
}

/* After a claim found nothing more due: whether its commit may skip waking
 * another worker (dexa__claim.quiet). A claimer that took nothing looks
 * again itself when it is a worker (looks_again); one that took a task may
 * be busy with it for long, so a row falling due before a sleeping
 * worker's next look (a poll period) still needs a wake-up. */
static int nothing_due_soon(dexa_runtime *rt, dexa__store_conn *c, const dexa__claim *cl) {
  if (!cl->task) return cl->looks_again;
  int64_t next = DEXA__NO_DUE;
  if (c->ops->step_next_due(c, &next) != DEXA_OK) return 0;
  return next == DEXA__NO_DUE || next > cl->now + dexa__poll_ms(rt);
}

int dexa__claim_op(dexa_runtime *rt, dexa__store_conn *c, void *arg) {
  dexa__claim *cl = arg;
  /* A batch that runs again (group_commit.c) starts the claim afresh. */
  dexa__claim_drop(cl);
  cl->ran = 0;
  cl->stop = cl->single = cl->quiet = 0;
  cl->now = dexa__now(rt);
  for (int i = 0; i < CLAIM_MAX_ROWS && !claim_full(cl); i++) {
    dexa__step_row row;
    int rc = c->ops->step_first_due(c, cl->now, &row);
    if (rc == DEXA_E_NOT_FOUND) {
      cl->quiet = nothing_due_soon(rt, c, cl);
      break;
    }
    if (rc != DEXA_OK) return rc;
    rc = handle_due(rt, c, &row, cl);
    dexa__step_row_free(&row);
    if (rc != DEXA_OK) {
      dexa__claim_drop(cl);
      return rc;
    }
  }
  return DEXA_OK;
}
