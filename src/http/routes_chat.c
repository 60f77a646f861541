/* POST sessions/ID/chat: the Vercel AI SDK's UI message stream protocol, so
 * an app using useChat (@ai-sdk/react) or the ai package's Chat can use
 * the session as its backend (DefaultChatTransport with this URL and the
 * X-Agent-Session-Token header).
 *
 * The request is the transport's body: {"id","messages","trigger",
 * "messageId"?, "plan_mode"?}. The session keeps its own history, so only
 * the last message counts: a user message whose text parts are sent with
 * send_message. The answer is that message's turn as Server-Sent Events
 * with one JSON chunk per "data:" line and "data: [DONE]" at the end
 * (header x-vercel-ai-ui-message-stream: v1):
 *
 *   turn_started                start (messageId "turn-N"), start-step
 *   text_delta / reasoning_delta text-start/-delta/-end, reasoning-*
 *   message_appended (model)    closes the part; text that no delta
 *                               carried is sent then
 *   tool_call_proposed          tool-input-available (dynamic: true)
 *   tool_call_finished          tool-output-available, tool-output-error,
 *                               tool-output-denied (rejected)
 *   awaiting approval           data-approval (id = call id), updated in
 *                               place when resolved
 *   question_asked / answered   data-question, likewise
 *   timer_set / fired           data-timer, likewise
 *   plan_updated                data-plan (id "plan")
 *   step_retrying               data-retry (transient)
 *   turn_finished               finish-step, finish (stop)
 *   turn_failed                 error (the message), finish (error)
 *   turn_cancelled              abort, finish (other)
 *
 * Approvals and answers go through the existing routes; the stream stays
 * open until the turn ends (heartbeat comments meanwhile). A message that
 * waits in the queue streams once its turn starts; deleted, the stream
 * aborts. The client leaving does not stop the turn (POST stop does). */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "http/http_internal.h"
#include "util/json_span.h"

#define UI_STREAM_HEADER "x-vercel-ai-ui-message-stream"

typedef struct chat_call {
  char *id;
  cJSON *approval; /* the data of its data-approval part, NULL if none */
} chat_call;

typedef struct chat {
  char *message_id; /* the queued message this stream answers */
  int64_t turn;     /* 0 until its turn started */
  int part_n;       /* ids of text and reasoning parts */
  char text_id[24], reasoning_id[24];
  dexa__buf text; /* what the deltas of the current model message said */
  int step_done;  /* a tool result came: the next model output is a new step */
  chat_call *calls;
  size_t ncalls, cap;
} chat;

static void chat_free(void *p) {
  chat *c = p;
  if (!c) return;
  for (size_t i = 0; i < c->ncalls; i++) {
    free(c->calls[i].id);
    cJSON_Delete(c->calls[i].approval);
  }
  free(c->calls);
  free(c->message_id);
  dexa__buf_free(&c->text);
  free(c);
}

static chat_call *find_call(chat *c, const char *id) {
  for (size_t i = 0; id && i < c->ncalls; i++)
    if (strcmp(c->calls[i].id, id) == 0) return &c->calls[i];
  return NULL;
}

static chat_call *add_call(chat *c, const char *id) {
  if (c->ncalls == c->cap && dexa__grow_array(&c->calls, c->ncalls, &c->cap, sizeof *c->calls) != 0)
    return NULL;
  chat_call *call = &c->calls[c->ncalls];
  call->approval = NULL;
  if (!(call->id = strdup(id))) return NULL;
  c->ncalls++;
  return call;
}

/* ---- chunks ---------------------------------------------------------------------- */

/* Appends "data: <chunk>\n\n" and deletes the chunk. */
static void emit(dexa__buf *out, cJSON *chunk) {
  char *s = chunk ? cJSON_PrintUnformatted(chunk) : NULL;
  cJSON_Delete(chunk);
  if (!s) {
    out->oom = 1;
    return;
  }
  dexa__buf_puts(out, "data: ");
  dexa__buf_puts(out, s);
  dexa__buf_puts(out, "\n\n");
  cJSON_free(s);
}

static cJSON *chunk_of(const char *type) {
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "type", type);
  return c;
}

static void emit_simple(dexa__buf *out, const char *type, const char *key, const char *value) {
  cJSON *c = chunk_of(type);
  if (key) cJSON_AddStringToObject(c, key, value);
  emit(out, c);
}

static const char *str(const cJSON *o, const char *key) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static cJSON *dup_item(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull();
}

static void close_text(chat *c, dexa__buf *out) {
  if (c->text_id[0]) emit_simple(out, "text-end", "id", c->text_id);
  c->text_id[0] = '\0';
}

static void close_reasoning(chat *c, dexa__buf *out) {
  if (c->reasoning_id[0]) emit_simple(out, "reasoning-end", "id", c->reasoning_id);
  c->reasoning_id[0] = '\0';
}

/* A model output after tool results belongs to the next step (the AI SDK's
 * step is one model call and the tool calls it made). */
static void next_step_if_due(chat *c, dexa__buf *out) {
  if (!c->step_done) return;
  emit(out, chunk_of("finish-step"));
  emit(out, chunk_of("start-step"));
  c->step_done = 0;
}

static void text_delta(chat *c, dexa__buf *out, const char *delta, size_t n) {
  if (!n) return;
  close_reasoning(c, out);
  next_step_if_due(c, out);
  if (!c->text_id[0]) {
    snprintf(c->text_id, sizeof c->text_id, "text-%d", ++c->part_n);
    emit_simple(out, "text-start", "id", c->text_id);
  }
  cJSON *ch = chunk_of("text-delta");
  cJSON_AddStringToObject(ch, "id", c->text_id);
  char *d = strndup(delta, n);
  cJSON_AddStringToObject(ch, "delta", d ? d : "");
  free(d);
  emit(out, ch);
  dexa__buf_append(&c->text, delta, n);
}

static void reasoning_delta(chat *c, dexa__buf *out, const char *delta) {
  if (!delta || !*delta) return;
  close_text(c, out);
  next_step_if_due(c, out);
  if (!c->reasoning_id[0]) {
    snprintf(c->reasoning_id, sizeof c->reasoning_id, "reasoning-%d", ++c->part_n);
    emit_simple(out, "reasoning-start", "id", c->reasoning_id);
  }
  cJSON *ch = chunk_of("reasoning-delta");
  cJSON_AddStringToObject(ch, "id", c->reasoning_id);
  cJSON_AddStringToObject(ch, "delta", delta);
  emit(out, ch);
}

/* A stored model message: what its deltas did not carry (deltas are best
 * effort) is sent now, then its parts close. */
static void model_message(chat *c, dexa__buf *out, const cJSON *msg) {
  const char *text = str(msg, "text");
  size_t have = c->text.len, n = text ? strlen(text) : 0;
  if (text && n > have && (have == 0 || memcmp(text, c->text.data, have) == 0))
    text_delta(c, out, text + have, n - have);
  close_text(c, out);
  close_reasoning(c, out);
  dexa__buf_reset(&c->text);
}

/* ---- tool calls and data parts --------------------------------------------------------- */

static void tool_input(chat *c, dexa__buf *out, const cJSON *ev) {
  const char *id = str(ev, "call_id"), *name = str(ev, "name");
  if (!id || !name || find_call(c, id)) return;
  close_text(c, out);
  close_reasoning(c, out);
  next_step_if_due(c, out);
  if (!add_call(c, id)) {
    out->oom = 1;
    return;
  }
  cJSON *ch = chunk_of("tool-input-available");
  cJSON_AddStringToObject(ch, "toolCallId", id);
  cJSON_AddStringToObject(ch, "toolName", name);
  cJSON_AddItemToObject(ch, "input", dup_item(ev, "arguments"));
  cJSON_AddBoolToObject(ch, "dynamic", 1);
  emit(out, ch);
}

static void data_part(dexa__buf *out, const char *type, const char *id, cJSON *data) {
  cJSON *ch = chunk_of(type);
  if (id) cJSON_AddStringToObject(ch, "id", id);
  cJSON_AddItemToObject(ch, "data", data);
  emit(out, ch);
}

static void approval(chat *c, dexa__buf *out, const cJSON *ev, const char *status) {
  const char *id = str(ev, "call_id");
  chat_call *call = find_call(c, id);
  if (!call) return;
  if (!call->approval) {
    call->approval = cJSON_CreateObject();
    cJSON_AddStringToObject(call->approval, "callId", id);
    cJSON_AddItemToObject(call->approval, "toolName", dup_item(ev, "name"));
    cJSON_AddItemToObject(call->approval, "input", dup_item(ev, "arguments"));
    cJSON_AddStringToObject(call->approval, "status", "pending");
  }
  if (status) {
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(ev, "decision");
    const char *decision = str(d, "decision"), *note = str(d, "note");
    cJSON_ReplaceItemInObject(call->approval, "status",
                              cJSON_CreateString(decision && strcmp(decision, "approve") == 0
                                                     ? "approved"
                                                     : "rejected"));
    if (note) cJSON_AddStringToObject(call->approval, "note", note);
  }
  data_part(out, "data-approval", id, cJSON_Duplicate(call->approval, 1));
}

static void question(dexa__buf *out, const cJSON *ev, int answered) {
  /* A tool's own question (asked_by "tool") may carry form fields, a page
   * to open (a sign-in) and its purpose; its answer an action. */
  static const char *const asked[] = {"choices", "fields", "url", "purpose", "asked_by"};
  cJSON *d = cJSON_CreateObject();
  cJSON_AddItemToObject(d, "callId", dup_item(ev, "call_id"));
  if (!answered) {
    cJSON_AddItemToObject(d, "prompt", dup_item(ev, "prompt"));
    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++)
      if (cJSON_GetObjectItemCaseSensitive(ev, asked[i]))
        cJSON_AddItemToObject(d, strcmp(asked[i], "asked_by") ? asked[i] : "askedBy",
                              dup_item(ev, asked[i]));
  } else {
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(ev, "decision");
    cJSON_AddItemToObject(d, "answer", dup_item(dec, "answer"));
    if (cJSON_GetObjectItemCaseSensitive(dec, "action"))
      cJSON_AddItemToObject(d, "action", dup_item(dec, "action"));
    if (cJSON_GetObjectItemCaseSensitive(dec, "fields"))
      cJSON_AddItemToObject(d, "fields", dup_item(dec, "fields"));
  }
  cJSON_AddStringToObject(d, "status", answered ? "answered" : "pending");
  data_part(out, "data-question", str(ev, "call_id"), d);
}

static void timer(dexa__buf *out, const cJSON *ev, int fired) {
  cJSON *d = cJSON_CreateObject();
  cJSON_AddItemToObject(d, "callId", dup_item(ev, "call_id"));
  if (!fired) {
    cJSON_AddItemToObject(d, "seconds", dup_item(ev, "seconds"));
    cJSON_AddItemToObject(d, "firesAtMs", dup_item(ev, "fires_at_ms"));
    cJSON_AddItemToObject(d, "reason", dup_item(ev, "reason"));
  }
  cJSON_AddStringToObject(d, "status", fired ? "fired" : "waiting");
  data_part(out, "data-timer", str(ev, "call_id"), d);
}

static void retrying(dexa__buf *out, const cJSON *ev) {
  cJSON *d = cJSON_CreateObject();
  cJSON_AddItemToObject(d, "step", dup_item(ev, "step"));
  if (cJSON_GetObjectItemCaseSensitive(ev, "call_id"))
    cJSON_AddItemToObject(d, "callId", dup_item(ev, "call_id"));
  cJSON_AddItemToObject(d, "attempt", dup_item(ev, "attempt"));
  cJSON_AddItemToObject(d, "maxAttempts", dup_item(ev, "max_attempts"));
  cJSON_AddItemToObject(d, "delayMs", dup_item(ev, "delay_ms"));
  cJSON_AddItemToObject(d, "message",
                        dup_item(cJSON_GetObjectItemCaseSensitive(ev, "error"), "message"));
  cJSON *ch = chunk_of("data-retry");
  cJSON_AddItemToObject(ch, "data", d);
  cJSON_AddBoolToObject(ch, "transient", 1);
  emit(out, ch);
}

/* The stored result message of a call (list_agent_messages at its seq). */
static cJSON *result_message(dexa__pump *p, const cJSON *ev) {
  const cJSON *seq = cJSON_GetObjectItemCaseSensitive(ev, "seq");
  if (!cJSON_IsNumber(seq)) return NULL;
  char in[96], *doc = NULL;
  size_t len = 0;
  snprintf(in, sizeof in, "{\"before_seq\":%lld,\"limit\":1}", (long long)seq->valuedouble + 1);
  int rc = dexa_runtime_call(dexa__pump_routes(p)->rt, dexa__pump_session(p),
                             "list_agent_messages", in, strlen(in), &doc, &len);
  cJSON *d = rc == DEXA_OK ? cJSON_ParseWithLength(doc, len) : NULL;
  dexa_free(doc);
  cJSON *msgs = cJSON_GetObjectItemCaseSensitive(d, "messages");
  cJSON *m = cJSON_GetArrayItem(msgs, 0);
  cJSON *out = m && cJSON_GetObjectItemCaseSensitive(m, "seq") &&
                       cJSON_GetObjectItemCaseSensitive(m, "seq")->valuedouble == seq->valuedouble
                   ? cJSON_DetachItemFromArray(msgs, 0)
                   : NULL;
  cJSON_Delete(d);
  return out;
}

static void tool_output(chat *c, dexa__pump *p, dexa__buf *out, const cJSON *ev) {
  const char *id = str(ev, "call_id"), *status = str(ev, "status");
  if (!id || !status) return;
  if (!find_call(c, id)) tool_input(c, out, ev); /* its proposal was not seen */
  cJSON *msg = result_message(p, ev);
  cJSON *output = msg ? cJSON_DetachItemFromObjectCaseSensitive(msg, "output") : NULL;
  cJSON_Delete(msg);
  cJSON *ch;
  if (strcmp(status, "ok") == 0) {
    ch = chunk_of("tool-output-available");
    cJSON_AddItemToObject(ch, "output", output ? output : cJSON_CreateNull());
    output = NULL;
  } else if (strcmp(status, "rejected") == 0) {
    ch = chunk_of("tool-output-denied");
  } else {
    ch = chunk_of("tool-output-error");
    char *printed = output && !cJSON_IsString(output) ? cJSON_PrintUnformatted(output) : NULL;
    const char *text = cJSON_IsString(output) ? output->valuestring : printed ? printed : status;
    char why[160];
    if (strcmp(status, "error") != 0 && text == status) {
      snprintf(why, sizeof why, "the call ended: %s", status);
      text = why;
    }
    cJSON_AddStringToObject(ch, "errorText", text);
    cJSON_free(printed);
  }
  cJSON_Delete(output);
  cJSON_AddStringToObject(ch, "toolCallId", id);
  emit(out, ch);
  c->step_done = 1;
}

/* ---- the turn ------------------------------------------------------------------------------ */

static int took_our_message(const chat *c, const cJSON *ev) {
  const cJSON *id;
  cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(ev, "message_ids")) {
    if (cJSON_IsString(id) && strcmp(id->valuestring, c->message_id) == 0) return 1;
  }
  return 0;
}

static void start(chat *c, dexa__pump *p, dexa__buf *out, int64_t turn) {
  c->turn = turn;
  cJSON *ch = chunk_of("start");
  char mid[48];
  snprintf(mid, sizeof mid, "turn-%lld", (long long)turn);
  cJSON_AddStringToObject(ch, "messageId", mid);
  cJSON *meta = cJSON_AddObjectToObject(ch, "messageMetadata");
  cJSON_AddStringToObject(meta, "sessionId", dexa__pump_session(p));
  cJSON_AddNumberToObject(meta, "turn", (double)turn);
  emit(out, ch);
  emit(out, chunk_of("start-step"));
}

/* The end of the stream: the parts close, then finish and [DONE]. */
static int finish(chat *c, dexa__buf *out, const char *reason, const char *error,
                  const char *abort_reason) {
  close_text(c, out);
  close_reasoning(c, out);
  if (error) emit_simple(out, "error", "errorText", error);
  if (abort_reason) emit_simple(out, "abort", "reason", abort_reason);
  emit(out, chunk_of("finish-step"));
  emit_simple(out, "finish", "finishReason", reason);
  dexa__buf_puts(out, "data: [DONE]\n\n");
  return 1;
}

/* Before the turn starts: only whether it starts or the message goes. */
static int before_turn(chat *c, dexa__pump *p, const char *type, const cJSON *ev,
                       dexa__buf *out) {
  if (strcmp(type, "turn_started") == 0 && took_our_message(c, ev)) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev, "turn");
    start(c, p, out, cJSON_IsNumber(t) ? (int64_t)t->valuedouble : 1);
  } else if (strcmp(type, "queue_changed") == 0 && str(ev, "id") &&
             strcmp(str(ev, "id"), c->message_id) == 0) {
    start(c, p, out, 0);
    return finish(c, out, "other", NULL, "the queued message was deleted");
  }
  return DEXA_OK;
}

static int chat_map(void *ctx, dexa__pump *p, const cJSON *item, dexa__buf *out) {
  chat *c = ctx;
  const cJSON *ev = cJSON_GetObjectItemCaseSensitive(item, "event");
  const char *type = str(ev, "type");
  if (!type) return DEXA_OK;
  if (!c->turn) return before_turn(c, p, type, ev, out);
  if (strcmp(type, "text_delta") == 0) {
    const char *t = str(ev, "text");
    if (t) text_delta(c, out, t, strlen(t));
  } else if (strcmp(type, "reasoning_delta") == 0) {
    reasoning_delta(c, out, str(ev, "text"));
  } else if (strcmp(type, "message_appended") == 0) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(ev, "message");
    if (str(m, "role") && strcmp(str(m, "role"), "model") == 0) model_message(c, out, m);
  } else if (strcmp(type, "tool_call_proposed") == 0) {
    tool_input(c, out, ev);
  } else if (strcmp(type, "tool_call_awaiting_approval") == 0) {
    approval(c, out, ev, NULL);
  } else if (strcmp(type, "approval_resolved") == 0) {
    approval(c, out, ev, "resolved");
  } else if (strcmp(type, "question_asked") == 0 || strcmp(type, "question_answered") == 0) {
    question(out, ev, strcmp(type, "question_answered") == 0);
  } else if (strcmp(type, "timer_set") == 0 || strcmp(type, "timer_fired") == 0) {
    timer(out, ev, strcmp(type, "timer_fired") == 0);
  } else if (strcmp(type, "tool_call_finished") == 0) {
    tool_output(c, p, out, ev);
  } else if (strcmp(type, "plan_updated") == 0) {
    data_part(out, "data-plan", "plan", dup_item(ev, "plan"));
  } else if (strcmp(type, "step_retrying") == 0) {
    retrying(out, ev);
  } else if (strcmp(type, "turn_finished") == 0) {
    return finish(c, out, "stop", NULL, NULL);
  } else if (strcmp(type, "turn_failed") == 0) {
    const char *msg = str(cJSON_GetObjectItemCaseSensitive(ev, "error"), "message");
    return finish(c, out, "error", msg ? msg : "the turn failed", NULL);
  } else if (strcmp(type, "turn_cancelled") == 0) {
    const char *action = str(ev, "action");
    return finish(c, out, "other", NULL,
                  action && strcmp(action, "steer") == 0 ? "steered" : "stopped");
  }
  return out->oom ? DEXA_E_NOMEM : DEXA_OK;
}

/* ---- the request -------------------------------------------------------------------------- */

static const field F_CHAT[] = {{"id", F_STR, 0},      {"messages", F_ARRAY, 1},
                               {"trigger", F_STR, 0}, {"messageId", F_STR, 0},
                               {"plan_mode", F_BOOL, 0}};

/* The text of the last message, which must be the user's: its text parts
 * joined by blank lines. NULL with reply set otherwise. */
static char *last_user_text(const cJSON *in, dexa__http_reply *reply) {
  const char *trigger = str(in, "trigger");
  if (trigger && strcmp(trigger, "submit-message") != 0) {
    dexa__http_error(reply, 400, DEXA_E_INVALID_ARG,
                     "only trigger \"submit-message\" is supported: the session keeps its history");
    return NULL;
  }
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(in, "messages");
  const cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
  const char *role = str(last, "role");
  dexa__buf b;
  dexa__buf_init(&b);
  const cJSON *part;
  cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(last, "parts")) {
    const char *t = str(part, "type"), *text = str(part, "text");
    if (!t || strcmp(t, "text") != 0 || !text) continue;
    if (b.len) dexa__buf_puts(&b, "\n\n");
    dexa__buf_puts(&b, text);
  }
  if (!role || strcmp(role, "user") != 0 || b.len == 0) {
    dexa__buf_free(&b);
    dexa__http_error(reply, 400, DEXA_E_INVALID_ARG,
                     "the last message must be a user message with a text part");
    return NULL;
  }
  return dexa__buf_steal(&b, NULL);
}

/* The snapshot's resume token: the stream starts there, so no event of
 * the message's turn can be missed. */
static char *head_token(dexa_http_agent_routes *r, const char *sid, int *rc) {
  char *doc = NULL;
  size_t len = 0;
  *rc = dexa_runtime_call(r->rt, sid, "snapshot", "{}", 2, &doc, &len);
  const char *v = NULL;
  size_t n = 0;
  char *tok = NULL;
  if (*rc == DEXA_OK && dexa__json_get(doc, len, "resume_token", &v, &n) == 0 && n >= 2)
    tok = strndup(v + 1, n - 2);
  if (*rc == DEXA_OK && !tok) *rc = DEXA_E_INTERNAL;
  dexa_free(doc);
  return tok;
}

/* send_message with the text; its message id, or NULL with reply set. */
static char *send_text(dexa_http_agent_routes *r, const char *sid, const char *text,
                       int plan_mode, dexa__http_reply *reply) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "text", text);
  if (plan_mode) cJSON_AddBoolToObject(in, "plan_mode", 1);
  char *json = cJSON_PrintUnformatted(in);
  cJSON_Delete(in);
  char *out = NULL, *id = NULL;
  size_t len = 0;
  int rc = json ? dexa_runtime_call(r->rt, sid, "send_message", json, strlen(json), &out, &len)
                : DEXA_E_NOMEM;
  cJSON_free(json);
  if (rc != DEXA_OK) {
    dexa__http_from_runtime(reply, rc, out, len);
    return NULL;
  }
  const char *v = NULL;
  size_t n = 0;
  if (dexa__json_get(out, len, "message_id", &v, &n) == 0 && n >= 2) id = strndup(v + 1, n - 2);
  dexa_free(out);
  if (!id) dexa__http_error(reply, 500, DEXA_E_INTERNAL, "send_message gave no message id");
  return id;
}

void dexa__http_chat(dexa_http_agent_routes *r, void *connection, const char *session_id,
                     const dexa__buf *body, dexa__http_reply *reply) {
  cJSON *in = dexa__http_parse_body(body, F_CHAT, sizeof F_CHAT / sizeof F_CHAT[0], reply);
  if (!in) return;
  char *text = last_user_text(in, reply), *token = NULL;
  int plan = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(in, "plan_mode"));
  cJSON_Delete(in);
  if (!text) return;
  int rc = DEXA_OK;
  token = head_token(r, session_id, &rc);
  chat *c = token ? calloc(1, sizeof *c) : NULL;
  if (!token) {
    dexa__http_error(reply, dexa__http_status_of(rc), rc,
                     rc == DEXA_E_NOT_FOUND ? "the AI Agent session is missing" : dexa_strerror(rc));
  } else if (!c) {
    dexa__http_error(reply, 500, DEXA_E_NOMEM, "out of memory");
  } else {
    dexa__buf_init(&c->text);
    c->message_id = send_text(r, session_id, text, plan, reply);
    if (!c->message_id) {
      chat_free(c);
    } else if (dexa__pump_open(r, connection, session_id, token, NULL, chat_map, c, chat_free,
                               reply) == DEXA_OK) {
      MHD_add_response_header(reply->stream, UI_STREAM_HEADER, "v1");
    }
  }
  free(text);
  free(token);
}
