/* Failed and lost attempts, recovery Steps, cancellation and closing a
 * session.
 *
 * A timed-out attempt counts like a failed one. A lost worker (its lease
 * expired before the Step's timeout: the process crashed or was killed)
 * does not use up an attempt: the row's lost_workers counts it instead,
 * so failed attempts = attempt - lost_workers, and the Step runs again at
 * once, up to DEXA__MAX_LOST_WORKERS times; past that it fails with
 * "worker lost N times". A single-attempt Step (max_attempts 1) never
 * runs its method twice: its lost worker is a failed attempt, which its
 * recovery records as an unknown outcome. */
#include <stdio.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "util/buf.h"
#include "util/json_span.h"

static char *recovery_error_doc(int code, const char *message, size_t *len) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_printf(&b, "{\"code\":%d,\"message\":", code);
  dexa__buf_json_cstr(&b, message && *message ? message : dexa_strerror(code));
  dexa__buf_putc(&b, '}');
  return dexa__buf_steal(&b, len);
}

/* Copies a top-level member of the Step's input that names what the Step
 * works on ("turn", "call_id"), so a reader can tell which model or tool
 * call is retried without knowing the flow. */
static void copy_input_member(dexa__buf *b, const dexa__step_row *row, const char *key) {
  const char *v = NULL;
  size_t n = 0;
  if (!row->input || dexa__json_get(row->input, row->input_len, key, &v, &n) != 0) return;
  if (n == 0 || (v[0] != '"' && (v[0] < '0' || v[0] > '9'))) return;
  dexa__buf_printf(b, ",\"%s\":", key);
  dexa__buf_append(b, v, n);
}

/* The durable step_retrying event (dexagents-events(7)): the attempt that
 * runs next, of how many, after how long, and why the last one failed. */
static int retry_event(dexa_runtime *rt, dexa__store_conn *c, const dexa__step_row *row,
                       const dexa__step_opts *o, int code, const char *message, int64_t wait,
                       int64_t now) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_printf(&b, "{\"type\":\"step_retrying\",\"at\":%lld,\"step\":", (long long)now);
  dexa__buf_json_cstr(&b, row->step_type);
  dexa__buf_puts(&b, ",\"exec_id\":");
  dexa__buf_json_cstr(&b, row->exec_id);
  copy_input_member(&b, row, "turn");
  copy_input_member(&b, row, "call_id");
  dexa__buf_printf(&b, ",\"attempt\":%d,\"max_attempts\":%d,\"delay_ms\":%lld,"
                       "\"retry_at_ms\":%lld,",
                   (int)dexa__failed_attempts(row) + 1, (int)(o->max_attempts > 0 ? o->max_attempts : 0),
                   (long long)wait, (long long)(now + wait));
  if (row->lost_workers > 0) dexa__buf_printf(&b, "\"lost_workers\":%d,", (int)row->lost_workers);
  dexa__buf_printf(&b, "\"error\":{\"code\":%d,\"name\":", code);
  dexa__buf_json_cstr(&b, dexa_error_name(code));
  dexa__buf_puts(&b, ",\"message\":");
  dexa__buf_json_cstr(&b, message && *message ? message : dexa_strerror(code));
  dexa__buf_puts(&b, "}}");
  int rc = b.oom ? DEXA_E_NOMEM : dexa__event_append(rt, c, row->session_id, b.data, b.len);
  dexa__buf_free(&b);
  return rc;
}

int32_t dexa__failed_attempts(const dexa__step_row *row) {
  int32_t n = row->attempt - row->lost_workers;
  return n > 0 ? n : 0;
}

/* wait < 0: the backoff of the failed attempts. */
static int retry_later(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row,
                       const dexa__step_opts *o, int code, const char *message,
                       int64_t retry_after_ms, int64_t wait, int64_t now) {
  if (wait < 0)
    wait = retry_after_ms > 0 ? retry_after_ms : dexa__backoff_ms(o, dexa__failed_attempts(row));
  int rc = retry_event(rt, c, row, o, code, message, wait, now);
  if (rc != DEXA_OK) return rc;
  row->state = DEXA__STEP_READY;
  row->due_ms = now + wait;
  row->lease_until = 0;
  dexa__row_set(&row->lease_owner, NULL, NULL, 0);
  return c->ops->step_update(c, row);
}

static int recover(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row,
                   const char *recovery, int code, const char *message, int64_t now) {
  size_t elen = 0;
  char *err = recovery_error_doc(code, message, &elen);
  if (!err) return DEXA_E_NOMEM;
  int rc = dexa__enqueue(rt, c, row->session_id, recovery, row->input, row->input_len, NULL, 0,
                         err, elen, now);
  dexa_free(err);
  /* A recovery Step the flow does not know cannot run: the flow fails. */
  if (rc == DEXA_E_UNKNOWN_STEP)
    rc = dexa__session_close(rt, c, row->session_id, DEXA__SESSION_FAILED, NULL);
  return rc;
}

/* No more tries: the recovery Step, else the session fails. */
static int give_up(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row,
                   const dexa__step_opts *o, int code, const char *message, int64_t now) {
  int rc = c->ops->step_delete(c, row->session_id, row->exec_id);
  if (rc != DEXA_OK) return rc;
  if (o->recovery[0]) return recover(rt, c, row, o->recovery, code, message, now);
  return dexa__session_close(rt, c, row->session_id, DEXA__SESSION_FAILED, NULL);
}

static void row_opts_or_single(dexa_runtime *rt, const dexa__step_row *row, dexa__step_opts *o) {
  if (dexa__row_opts(rt, row, o) != DEXA_OK) o->max_attempts = 1, o->recovery[0] = '\0';
}

int dexa__attempt_failed(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row, int code,
                         const char *message, int64_t retry_after_ms, int64_t now) {
  if (row->cancelled) return c->ops->step_delete(c, row->session_id, row->exec_id);
  dexa__step_opts o;
  row_opts_or_single(rt, row, &o);
  if (o.max_attempts <= 0 || dexa__failed_attempts(row) < o.max_attempts)
    return retry_later(rt, c, row, &o, code, message, retry_after_ms, -1, now);
  return give_up(rt, c, row, &o, code, message, now);
}

int dexa__attempt_lost(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row, int64_t now) {
  if (row->cancelled) return c->ops->step_delete(c, row->session_id, row->exec_id);
  dexa__step_opts o;
  row_opts_or_single(rt, row, &o);
  char msg[320];
  if (o.max_attempts == 1) {
    snprintf(msg, sizeof msg,
             "%s attempt %d: its worker was lost (the lease expired); a single-attempt Step"
             " never runs again",
             row->exec_id, (int)row->attempt);
    return dexa__attempt_failed(rt, c, row, DEXA_E_TIMEOUT, msg, 0, now);
  }
  row->lost_workers++;
  if (row->lost_workers > DEXA__MAX_LOST_WORKERS) {
    snprintf(msg, sizeof msg,
             "%s: worker lost %d times (the lease expired during each of those attempts); at"
             " most %d lost workers are retried",
             row->exec_id, (int)row->lost_workers, DEXA__MAX_LOST_WORKERS);
    dexa__log(rt, DEXA_LOG_ERROR, "worker-lost-bound", "session %s: %s", row->session_id, msg);
    return give_up(rt, c, row, &o, DEXA_E_TIMEOUT, msg, now);
  }
  snprintf(msg, sizeof msg,
           "%s: worker lost %d time%s (the lease expired); run again, not counted as a failed"
           " attempt (at most %d lost workers are retried)",
           row->exec_id, (int)row->lost_workers, row->lost_workers == 1 ? "" : "s",
           DEXA__MAX_LOST_WORKERS);
  dexa__log(rt, DEXA_LOG_INFO, "worker-lost", "session %s: %s", row->session_id, msg);
  return retry_later(rt, c, row, &o, DEXA_E_TIMEOUT, msg, 0, 0, now);
}

/* Queued and waiting rows go; a running one is marked so that its result
 * (or its lease expiry) just deletes it. */
static int cancel_row(dexa__store_conn *c, dexa__step_row *row) {
  if (row->state != DEXA__STEP_RUNNING)
    return c->ops->step_delete(c, row->session_id, row->exec_id);
  row->cancelled = 1;
  return c->ops->step_update(c, row);
}

static int cancel_where(dexa__store_conn *c, const char *sid, const char *step_type,
                        const char *keep_exec) {
  dexa__step_row *rows = NULL;
  size_t n = 0;
  int rc = c->ops->step_list(c, sid, 0, &rows, &n);
  for (size_t i = 0; rc == DEXA_OK && i < n; i++) {
    if (keep_exec && strcmp(rows[i].exec_id, keep_exec) == 0) continue;
    if (step_type && strcmp(rows[i].step_type, step_type) != 0) continue;
    rc = cancel_row(c, &rows[i]);
  }
  dexa__step_rows_free(rows, n);
  return rc;
}

int dexa__cancel_type(dexa__store_conn *c, const char *sid, const char *step_type,
                      const char *keep_exec) {
  return cancel_where(c, sid, step_type, keep_exec);
}

int dexa__session_close(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                        int32_t status, const char *keep_exec) {
  int rc = c->ops->session_set_status(c, sid, status);
  if (rc == DEXA_OK) rc = cancel_where(c, sid, NULL, keep_exec);
  /* A closed session's active_ms is the time it closed: its retention
   * counts from there (sweep.c). */
  if (rc == DEXA_OK) rc = c->ops->session_touch(c, sid, dexa__now(rt), 0);
  return rc;
}
