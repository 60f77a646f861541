/* The JSON routes: GET settings, POST sessions, and the session routes that
 * map one to one onto session RPCs. A body is checked here (a JSON object
 * with only the route's fields, of their types) and a fresh RPC input is
 * built from it, so a malformed request never reaches the session. */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "util/json_num.h"
#include "http/http_internal.h"

typedef struct session_rpc {
  const char *method;
  const char *rest; /* the path after sessions/ID */
  const char *rpc;
  const field *fields;
  size_t field_count;
} session_rpc;

/* Settings a browser may choose besides the model (checked by the session's
 * start Step): what a truncated answer does, and structured output. */
static const field F_MODEL[] = {
    {"model", F_STR, 0}, {"on_truncation", F_STR, 0}, {"output_schema", F_OBJECT, 0}};
/* attachments: images and files, checked by send_message (dexagents-flow(7)). */
static const field F_SEND[] = {
    {"text", F_STR, 1}, {"plan_mode", F_BOOL, 0}, {"attachments", F_ARRAY, 0}};
static const field F_MESSAGE_ID[] = {{"message_id", F_STR, 1}};
static const field F_APPROVAL[] = {
    {"call_id", F_STR, 1}, {"decision", F_STR, 1}, {"note", F_STR, 0}};
/* ask_user takes an answer; a tool's question also a decline or a cancel
 * (action) and form fields (answer_question checks them against it). */
static const field F_ANSWER[] = {
    {"call_id", F_STR, 1}, {"answer", F_STR, 0}, {"action", F_STR, 0}, {"fields", F_OBJECT, 0}};
static const field F_REVISION[] = {{"revision", F_INT, 1}};
static const field F_END[] = {{"reason", F_STR, 0}};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const session_rpc SESSION_RPCS[] = {
    {"GET", "", "snapshot", NULL, 0},
    {"POST", "/messages", "send_message", F_SEND, N(F_SEND)},
    {"GET", "/messages", "list_agent_messages", NULL, 0},
    {"POST", "/queue/delete", "delete_message", F_MESSAGE_ID, N(F_MESSAGE_ID)},
    {"POST", "/queue/steer", "steer", F_MESSAGE_ID, N(F_MESSAGE_ID)},
    {"POST", "/stop", "cancel_turn", NULL, 0},
    {"POST", "/approvals", "resolve_approval", F_APPROVAL, N(F_APPROVAL)},
    {"POST", "/answers", "answer_question", F_ANSWER, N(F_ANSWER)},
    {"POST", "/plan/execute", "execute_plan", F_REVISION, N(F_REVISION)},
    {"POST", "/end", "end_session", F_END, N(F_END)},
};

static void bad_request(dexa__http_reply *reply, int code, const char *fmt, const char *name) {
  char msg[160];
  snprintf(msg, sizeof msg, fmt, name);
  dexa__http_error(reply, 400, code, msg);
}

static const field *find_field(const field *fields, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(fields[i].name, name) == 0) return &fields[i];
  return NULL;
}

static int type_ok(const cJSON *v, field_type t) {
  if (t == F_STR) return cJSON_IsString(v);
  if (t == F_BOOL) return cJSON_IsBool(v);
  if (t == F_ARRAY) return cJSON_IsArray(v);
  if (t == F_OBJECT) return cJSON_IsObject(v);
  int64_t n;
  return dexa__json_exact_int(v, &n);
}

/* 1 when a member before item has the same name. */
static int repeated(const cJSON *doc, const cJSON *item) {
  for (const cJSON *p = doc->child; p && p != item; p = p->next)
    if (strcmp(p->string, item->string) == 0) return 1;
  return 0;
}

cJSON *dexa__http_parse_body(const dexa__buf *body, const field *fields, size_t n,
                             dexa__http_reply *reply) {
  cJSON *doc = body ? cJSON_ParseWithLength(body->data, body->len) : cJSON_CreateObject();
  if (!cJSON_IsObject(doc)) {
    cJSON_Delete(doc);
    dexa__http_error(reply, 400, DEXA_E_INVALID_JSON, "the request body must be a JSON object");
    return NULL;
  }
  const cJSON *item;
  cJSON_ArrayForEach(item, doc) {
    const field *f = find_field(fields, n, item->string);
    if (f && repeated(doc, item)) {
      /* Two values for one field: which one counts would be a guess. */
      bad_request(reply, DEXA_E_INVALID_JSON, "field \"%s\" appears twice", item->string);
    } else if (!f) {
      bad_request(reply, DEXA_E_UNKNOWN_KEY, "unknown field \"%s\"", item->string);
    } else if (!type_ok(item, f->type)) {
      const char *fmt = f->type == F_STR      ? "\"%s\" must be a string"
                        : f->type == F_BOOL   ? "\"%s\" must be true or false"
                        : f->type == F_ARRAY  ? "\"%s\" must be an array"
                        : f->type == F_OBJECT ? "\"%s\" must be an object"
                                              : "\"%s\" must be an integer";
      bad_request(reply, DEXA_E_INVALID_JSON, fmt, f->name);
    } else {
      continue;
    }
    cJSON_Delete(doc);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    if (fields[i].required && !cJSON_GetObjectItemCaseSensitive(doc, fields[i].name)) {
      bad_request(reply, DEXA_E_INVALID_JSON, "\"%s\" is required", fields[i].name);
      cJSON_Delete(doc);
      return NULL;
    }
  }
  return doc;
}

static void reply_json(dexa__http_reply *reply, cJSON *doc) {
  char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
  cJSON_Delete(doc);
  if (!text) {
    dexa__http_error(reply, 500, DEXA_E_NOMEM, "out of memory");
    return;
  }
  free(reply->body);
  reply->status = 200;
  reply->len = strlen(text);
  reply->body = malloc(reply->len + 1);
  if (reply->body) memcpy(reply->body, text, reply->len + 1);
  else reply->len = 0;
  cJSON_free(text);
}

/* ---- settings and start ----------------------------------------------------- */

void dexa__http_settings(dexa_http_agent_routes *r, dexa__http_reply *reply) {
  size_t n = strlen(r->settings_doc);
  free(reply->body);
  reply->status = 200;
  reply->body = malloc(n + 1);
  reply->len = reply->body ? n : 0;
  if (reply->body) memcpy(reply->body, r->settings_doc, n + 1);
}

/* "<prefix><uuid v4>" from the routes' DRBG. */
static int new_session_id(dexa_http_agent_routes *r, char *out, size_t size) {
  unsigned char u[16];
  int rc = dexa__http_random(r, u, sizeof u);
  if (rc != DEXA_OK) return rc;
  u[6] = (unsigned char)((u[6] & 0x0f) | 0x40);
  u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
  snprintf(out, size,
           "%s%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           r->id_prefix, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
           u[11], u[12], u[13], u[14], u[15]);
  return DEXA_OK;
}

void dexa__http_start_session(dexa_http_agent_routes *r, const dexa__buf *body,
                              dexa__http_reply *reply) {
  cJSON *in = dexa__http_parse_body(body, F_MODEL, N(F_MODEL), reply);
  if (!in) return;
  const char *model = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, "model"));
  if (!model) model = r->models[0];
  int allowed = 0;
  for (size_t i = 0; i < r->model_count; i++) allowed |= strcmp(r->models[i], model) == 0;
  if (!allowed) {
    cJSON_Delete(in);
    dexa__http_error(reply, 400, DEXA_E_INVALID_ARG, "model must be one of the models in /settings");
    return;
  }
  /* Settings carry the model's name (the runtime's agent resolves it) and
   * the other checked fields as given. */
  dexa__buf settings;
  dexa__buf_init(&settings);
  dexa__buf_puts(&settings, "{\"model\":");
  dexa__buf_json_cstr(&settings, model);
  for (size_t i = 1; i < N(F_MODEL); i++) {
    char *v = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(in, F_MODEL[i].name));
    if (v) dexa__buf_printf(&settings, ",\"%s\":%s", F_MODEL[i].name, v);
    cJSON_free(v);
  }
  dexa__buf_putc(&settings, '}');
  cJSON_Delete(in);
  /* The server picks the id, so a caller cannot claim an existing session. */
  char id[160];
  int rc = settings.oom ? DEXA_E_NOMEM : new_session_id(r, id, sizeof id);
  if (rc == DEXA_OK)
    rc = dexa_runtime_start_session(r->rt, id, settings.data, settings.len, NULL, NULL);
  dexa__buf_free(&settings);
  char token[DEXA_HTTP_TOKEN_SIZE];
  if (rc == DEXA_OK) rc = dexa_http_token_sign(r->key, r->key_len, id, token, sizeof token);
  if (rc != DEXA_OK) {
    dexa__http_error(reply, dexa__http_status_of(rc) == 409 ? 500 : dexa__http_status_of(rc), rc,
                     dexa_error_class(rc) == DEXA_CLASS_USAGE ? "the session settings were refused"
                                                              : "the session could not be started");
    return;
  }
  cJSON *out = cJSON_CreateObject();
  cJSON_AddStringToObject(out, "session_id", id);
  cJSON_AddStringToObject(out, "session_token", token);
  reply_json(reply, out);
}

/* ---- session RPCs --------------------------------------------------------------- */

/* A query parameter as a non-negative integer: 1 when present and valid,
 * 0 when absent, -1 when malformed. */
static int query_i64(struct MHD_Connection *c, const char *name, int64_t *v) {
  const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
  if (!s) return 0;
  if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 15) return -1;
  errno = 0;
  *v = strtoll(s, NULL, 10);
  return errno ? -1 : 1;
}

/* GET messages?before_seq=N&limit=M: the input of list_agent_messages. */
static cJSON *older_messages_input(struct MHD_Connection *c, dexa__http_reply *reply) {
  int64_t before = 0, limit = 0;
  int hb = query_i64(c, "before_seq", &before), hl = query_i64(c, "limit", &limit);
  if (hb < 0 || hl < 0) {
    dexa__http_error(reply, 400, DEXA_E_INVALID_ARG,
                     "before_seq and limit must be non-negative integers");
    return NULL;
  }
  cJSON *in = cJSON_CreateObject();
  if (hb) cJSON_AddNumberToObject(in, "before_seq", (double)before);
  if (hl) cJSON_AddNumberToObject(in, "limit", (double)limit);
  return in;
}

static int session_exists(dexa_http_agent_routes *r, const char *session_id) {
  char *out = NULL;
  int rc = dexa_runtime_read_events(r->rt, session_id, "", 1, 0, &out, NULL);
  dexa_free(out);
  return rc != DEXA_E_NOT_FOUND;
}

void dexa__http_session_route(dexa_http_agent_routes *r, void *connection, const char *method,
                              const char *session_id, const char *rest, const dexa__buf *body,
                              dexa__http_reply *reply) {
  const session_rpc *route = NULL;
  const char *allow = NULL;
  for (size_t i = 0; i < N(SESSION_RPCS); i++) {
    if (strcmp(SESSION_RPCS[i].rest, rest) != 0) continue;
    if (strcmp(SESSION_RPCS[i].method, method) == 0) route = &SESSION_RPCS[i];
    else if (!allow) allow = SESSION_RPCS[i].method;
  }
  if (!route) {
    if (!allow) {
      dexa__http_error(reply, 404, DEXA_E_NOT_FOUND, "no such route");
      return;
    }
    /* /messages takes both; every other path one method. */
    dexa__http_error(reply, 405, DEXA_E_INVALID_ARG, "method not allowed on this route");
    reply->allow = strcmp(rest, "/messages") == 0 ? "GET, POST" : allow;
    return;
  }
  cJSON *in;
  if (strcmp(route->method, "GET") == 0)
    in = strcmp(route->rpc, "list_agent_messages") == 0 ? older_messages_input(connection, reply)
                                                          : cJSON_CreateObject();
  else
    in = dexa__http_parse_body(body, route->fields, route->field_count, reply);
  if (!in) return;
  char *input = cJSON_PrintUnformatted(in);
  cJSON_Delete(in);
  if (!input) {
    dexa__http_error(reply, 500, DEXA_E_NOMEM, "out of memory");
    return;
  }
  char *out = NULL;
  size_t len = 0;
  int rc = dexa_runtime_call(r->rt, session_id, route->rpc, input, strlen(input), &out, &len);
  cJSON_free(input);
  if (rc == DEXA_E_NOT_FOUND && strcmp(route->rpc, "snapshot") == 0) {
    dexa_free(out);
    dexa__http_error(reply, 404, rc, "the AI Agent session is missing or no longer retained");
    return;
  }
  if (rc == DEXA_E_NOT_FOUND && strcmp(route->rpc, "execute_plan") == 0 &&
      session_exists(r, session_id)) {
    /* No plan is a state of the session (409), not a missing resource. */
    dexa_free(out);
    dexa__http_error(reply, 409, DEXA_E_BAD_STATE, "the session has no plan to execute");
    return;
  }
  dexa__http_from_runtime(reply, rc, out, len);
}
