/* The Claude Code harness: each RunModel Step runs the Claude Code CLI for
 * one segment of a turn (see dexagents-claude-code(7)). This file runs a
 * segment: the session file written back into a private directory, the
 * CLI started (cc_launch.c) and spoken to (cc_segment.c), then what the
 * CLI did turned into the reply: its assistant messages verbatim with
 * their text, the call that leaves the segment, usage, and the transcript
 * lines appended to the harness state. */
#include <cjson/cJSON.h>
#include <dexagents/harness.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dexagents/errors.h"
#include "harness/cc_options.h"
#include "harness/cc_segment.h"

typedef struct cc_harness {
  dexa__cc_options o;
} cc_harness;

static const char *str(const cJSON *o, const char *name) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* ---- the reply ---- */

static int has_tool_use(const cJSON *message, const char *id) {
  const cJSON *b;
  cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(message, "content")) {
    const char *bid = str(b, "id");
    if (bid && strcmp(bid, id) == 0) return 1;
  }
  return 0;
}

static int add_item(dexa_model_reply *reply, const cJSON *message) {
  char *json = cJSON_PrintUnformatted(message);
  if (!json) return DEXA_E_NOMEM;
  int rc = dexa_model_reply_add_item(reply, json, strlen(json));
  free(json);
  const cJSON *b;
  cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(message, "content")) {
    const char *type = str(b, "type"), *text = str(b, "text");
    if (rc == DEXA_OK && type && strcmp(type, "text") == 0 && text && *text)
      rc = dexa_model_reply_add_text(reply, text, strlen(text));
  }
  return rc;
}

static int add_items(const dexa__cc_segment *s, dexa_model_reply *reply) {
  int rc = DEXA_OK, added = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, s->items) {
    const cJSON *message = cJSON_GetObjectItemCaseSensitive(item, "message");
    if (rc == DEXA_OK) rc = add_item(reply, message);
    added++;
    if (rc != DEXA_OK || !s->leave_id || !has_tool_use(message, s->leave_id)) continue;
    char *args = cJSON_PrintUnformatted(s->leave_args);
    rc = args ? dexa_model_reply_add_tool_call(reply, s->leave_id, s->leave_name, args, strlen(args))
              : DEXA_E_NOMEM;
    free(args);
  }
  if (rc == DEXA_OK && !added) { /* the CLI answered without a message */
    static const char empty[] = "{\"role\":\"assistant\",\"content\":[]}";
    rc = dexa_model_reply_add_item(reply, empty, sizeof empty - 1);
    if (rc == DEXA_OK && *s->result_text && !s->result_is_error)
      rc = dexa_model_reply_add_text(reply, s->result_text, strlen(s->result_text));
  }
  return rc;
}

/* The tool_uses of the assistant message that holds the leaving call (the
 * CLI writes one transcript entry per content block, all with the
 * message's id): the next segment owes each a result, and resumes at the
 * last of them. */
static int leave_pending(const dexa__cc_segment *s, dexa__cc_pending **out, size_t *count,
                         const char **at) {
  const char *msg_id = NULL;
  const cJSON *item;
  cJSON_ArrayForEach(item, s->items) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(item, "message");
    if (has_tool_use(m, s->leave_id)) msg_id = str(m, "id");
  }
  size_t n = 0, cap = 0;
  dexa__cc_pending *p = NULL;
  cJSON_ArrayForEach(item, s->items) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(item, "message");
    const char *id = str(m, "id");
    if (!msg_id || !id || strcmp(id, msg_id) != 0) continue;
    *at = str(item, "uuid");
    const cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m, "content")) {
      const char *type = str(b, "type"), *use = str(b, "id");
      if (!type || strcmp(type, "tool_use") != 0 || !use) continue;
      if (dexa__grow_array(&p, n, &cap, sizeof *p) != 0) goto oom;
      memset(&p[n], 0, sizeof *p);
      dexa__cc_pending *d = &p[n++];
      const cJSON *r = strcmp(use, s->leave_id) ? cJSON_GetObjectItemCaseSensitive(s->results, use) : NULL;
      d->id = strdup(use);
      d->name = strdup(str(b, "name") ? str(b, "name") : "");
      if (!d->id || !d->name) goto oom;
      if (r) {
        d->result = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(r, "content"));
        d->is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "is_error"));
        if (!d->result) goto oom;
      }
    }
  }
  *out = p;
  *count = n;
  return DEXA_OK;
oom:
  dexa__cc_pending_free(p, n);
  return DEXA_E_NOMEM;
}

static int save_state(const dexa__cc_segment *s, dexa_model_reply *reply) {
  dexa__cc_pending *pending = NULL;
  size_t count = 0;
  const char *at = s->last_uuid ? s->last_uuid : s->state.at;
  int rc = s->leave_id ? leave_pending(s, &pending, &count, &at) : DEXA_OK;
  if (rc != DEXA_OK) return rc;
  dexa__buf e;
  dexa__buf_init(&e);
  dexa__cc_state_entry(&e, s->sid ? s->sid : s->state.sid, at, pending, count, s->jsonl.data,
                       s->jsonl.len);
  rc = e.oom ? DEXA_E_NOMEM : dexa_model_reply_add_harness_entry(reply, e.data, e.len);
  dexa__buf_free(&e);
  dexa__cc_pending_free(pending, count);
  return rc;
}

/* A failed turn of the CLI (no call left the segment): the API's status
 * says whether another attempt may help. */
static int failure_code(const dexa__cc_segment *s) {
  switch (s->api_status) {
  case 401:
  case 403:
    return DEXA_E_AUTH;
  case 429:
    return DEXA_E_RATE_LIMITED;
  case 400:
  case 404:
  case 413:
    return DEXA_E_MODEL;
  default:
    return DEXA_E_TRANSIENT;
  }
}

static int finish(dexa__cc_segment *s, dexa_model_reply *reply, int rc) {
  char msg[700], tail[256];
  if (rc != DEXA_OK) {
    dexa_model_reply_set_error(reply, s->err, 0);
    return rc;
  }
  if (s->stopped) {
    dexa_model_reply_set_error(reply, "claude-code: the turn was stopped", 0);
    return DEXA_E_TRANSIENT;
  }
  if (s->timed_out) {
    snprintf(msg, sizeof msg, "claude-code: the segment ran past %lld ms", (long long)s->o->timeout_ms);
    dexa_model_reply_set_error(reply, msg, 0);
    return DEXA_E_TIMEOUT;
  }
  if (!s->result_seen) {
    dexa__cc_proc_stderr_tail(&s->proc, tail, sizeof tail);
    snprintf(msg, sizeof msg, "claude-code: the CLI ended without finishing its turn%s%s",
             *tail ? ": " : "", tail);
    dexa_model_reply_set_error(reply, msg, 0);
    return DEXA_E_TRANSIENT;
  }
  if (s->result_is_error && !s->leave_id) {
    snprintf(msg, sizeof msg, "claude-code: %s", s->result_text);
    dexa_model_reply_set_error(reply, msg, 0);
    return failure_code(s);
  }
  rc = add_items(s, reply);
  if (rc == DEXA_OK) rc = dexa_model_reply_set_usage(reply, s->input_tokens, s->output_tokens);
  if (rc == DEXA_OK) rc = save_state(s, reply);
  return rc;
}

static int run_segment(void *user, const dexa_model_request *req, dexa_model_reply *reply) {
  cc_harness *h = user;
  int64_t deadline = dexa__cc_now_ms() + h->o.timeout_ms;
  dexa__cc_segment s;
  memset(&s, 0, sizeof s);
  s.o = &h->o;
  s.req = req;
  s.proc.in_fd = s.proc.out_fd = s.proc.err_fd = -1;
  dexa__buf_init(&s.jsonl);
  dexa__buf_init(&s.proc.out);
  s.items = cJSON_CreateArray();
  s.results = cJSON_CreateObject();
  s.allowed = cJSON_CreateObject();
  char dir[4096] = "";
  const char *json;
  size_t len;
  dexa_model_request_json(req, &json, &len);
  s.request = cJSON_ParseWithLength(json, len);
  s.tools.list = cJSON_GetObjectItemCaseSensitive(s.request, "tools");
  int rc = s.request && s.items && s.results && s.allowed ? dexa__cc_state_load(&s.state, req) : DEXA_E_NOMEM;
  if (rc != DEXA_OK) {
    snprintf(s.err, sizeof s.err, "claude-code: reading the session's state: %s", dexa_strerror(rc));
    goto cleanup;
  }
  rc = dexa__cc_private_dir(dir, sizeof dir);
  if (rc == DEXA_OK) rc = dexa__cc_state_materialize(&s.state, dir);
  if (rc != DEXA_OK) {
    snprintf(s.err, sizeof s.err, "claude-code: writing the session file: %s", dexa_strerror(rc));
    goto cleanup;
  }
  rc = dexa__cc_launch(&s, dir);
  if (rc == DEXA_OK) rc = dexa__cc_segment_pump(&s, deadline);
cleanup:
  dexa__cc_proc_stop(&s.proc, 0, h->o.stop_grace_ms);
  rc = finish(&s, reply, rc);
  dexa__cc_remove_dir(dir);
  cJSON_Delete(s.request);
  cJSON_Delete(s.items);
  cJSON_Delete(s.results);
  cJSON_Delete(s.allowed);
  cJSON_Delete(s.leave_args);
  free(s.leave_id);
  free(s.leave_name);
  free(s.sid);
  free(s.last_uuid);
  dexa__buf_free(&s.jsonl);
  dexa__cc_state_free(&s.state);
  return rc;
}

static void destroy(void *user) {
  cc_harness *h = user;
  dexa__cc_options_free(&h->o);
  free(h);
}

DEXA_EXTERN int dexa_harness_claude_code_new(dexa_model **out, const char *name,
                                             const char *options_json, size_t options_len,
                                             char *errmsg, size_t errmsg_size) {
  if (errmsg && errmsg_size) errmsg[0] = '\0';
  if (!out) return DEXA_E_INVALID_ARG;
  *out = NULL;
  if (!name || !*name) {
    if (errmsg && errmsg_size) snprintf(errmsg, errmsg_size, "claude-code: no name");
    return DEXA_E_INVALID_ARG;
  }
  cc_harness *h = calloc(1, sizeof *h);
  if (!h) return DEXA_E_NOMEM;
  int rc = dexa__cc_options_parse(&h->o, options_json, options_len, errmsg, errmsg_size);
  if (rc != DEXA_OK) {
    free(h);
    return rc;
  }
  dexa_harness_vtable vt;
  dexa_harness_vtable_init(&vt, sizeof vt);
  vt.flags = DEXA_HARNESS_OWNS_TRANSCRIPT | DEXA_HARNESS_RUNS_READS;
  vt.run_segment = run_segment;
  vt.destroy = destroy;
  rc = dexa_harness_new(out, name, &vt, h);
  if (rc != DEXA_OK) destroy(h);
  return rc;
}
