/* The demo model ("mock/dex", "mock/dex-mini"): no credential, replies
 * computed from the request so every session feature can be tried:
 *   plain text                 echoed back, streamed in several deltas
 *   /model                     answers the session's model name
 *   /fail N                    fails while the RunModel attempt is <= N
 *   /tool NAME {json}          calls any tool (one call per line, in parallel)
 *   /ask PROMPT                ask_user with a text answer
 *   /choose PROMPT | A | B     ask_user with 2 to 8 choices
 *   /wait SECONDS REASON       durable_wait
 *   /plan-clear                write_todos with no tasks (clears the plan)
 *   a planning turn            drafts a 2-task plan with write_todos
 *   an executing turn          completes one task per model call
 *   compaction                 a deterministic summary of the messages
 * After tool results it answers with a summary of them. Stateless: the same
 * request always gets the same reply, in any process. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "iface/model.h"
#include "util/buf.h"

typedef struct demo_call {
  const dexa_model_request *req;
  dexa_model_reply *reply;
  cJSON *request_head; /* model, turn, round, attempt */
  cJSON *last;         /* the newest message */
} demo_call;

static int64_t head_i64(const demo_call *d, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(d->request_head, name);
  return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

static const char *head_str(const demo_call *d, const char *name) {
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d->request_head, name));
  return s ? s : "";
}

/* Streams text in three deltas, then records it as one message item. */
static int answer(demo_call *d, const char *text) {
  size_t n = strlen(text), a = n / 3, b = 2 * n / 3;
  while (a < n && ((unsigned char)text[a] & 0xC0) == 0x80) a++;
  while (b < n && ((unsigned char)text[b] & 0xC0) == 0x80) b++;
  dexa_model_request_emit_delta(d->req, DEXA_DELTA_TEXT, text, a);
  dexa_model_request_emit_delta(d->req, DEXA_DELTA_TEXT, text + a, b - a);
  dexa_model_request_emit_delta(d->req, DEXA_DELTA_TEXT, text + b, n - b);
  dexa__buf item;
  dexa__buf_init(&item);
  dexa__buf_puts(&item, "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":"
                        "\"output_text\",\"text\":");
  dexa__buf_json_cstr(&item, text);
  dexa__buf_puts(&item, "}]}");
  int rc = item.oom ? DEXA_E_NOMEM : dexa_model_reply_add_item(d->reply, item.data, item.len);
  if (rc == DEXA_OK) rc = dexa_model_reply_add_text(d->reply, text, n);
  dexa__buf_free(&item);
  return rc;
}

/* One "/tool NAME {json}" line; returns 1 when it was a well-formed call. */
static int tool_line(demo_call *d, const char *line, size_t len, int index, int *rc) {
  const char *p = line + 5, *end = line + len;
  while (p < end && *p == ' ') p++;
  const char *name = p;
  while (p < end && *p != ' ' && *p != '{') p++;
  size_t name_len = (size_t)(p - name);
  while (p < end && *p == ' ') p++;
  cJSON *args = p < end ? cJSON_ParseWithLength(p, (size_t)(end - p)) : cJSON_CreateObject();
  if (!name_len || name_len > 64 || !cJSON_IsObject(args)) {
    cJSON_Delete(args);
    return 0;
  }
  char nm[65], id[96];
  memcpy(nm, name, name_len);
  nm[name_len] = '\0';
  snprintf(id, sizeof id, "demo-t%lldr%lldc%d", (long long)head_i64(d, "turn"),
           (long long)head_i64(d, "round"), index);
  char *a = cJSON_PrintUnformatted(args);
  cJSON *item = cJSON_CreateObject();
  cJSON_AddStringToObject(item, "type", "function_call");
  cJSON_AddStringToObject(item, "call_id", id);
  cJSON_AddStringToObject(item, "name", nm);
  cJSON_AddStringToObject(item, "arguments", a ? a : "{}");
  char *text = cJSON_PrintUnformatted(item);
  *rc = (!a || !text) ? DEXA_E_NOMEM : dexa_model_reply_add_item(d->reply, text, strlen(text));
  if (*rc == DEXA_OK) *rc = dexa_model_reply_add_tool_call(d->reply, id, nm, a, strlen(a));
  cJSON_free(text);
  cJSON_free(a);
  cJSON_Delete(item);
  cJSON_Delete(args);
  return 1;
}

/* Every /tool line of text becomes a call; returns how many. */
static int tool_calls(demo_call *d, const char *text, int *rc) {
  int calls = 0;
  *rc = DEXA_OK;
  for (const char *line = text; *line && *rc == DEXA_OK;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    if (len >= 6 && strncmp(line, "/tool ", 6) == 0) calls += tool_line(d, line, len, calls + 1, rc);
    line += len + (nl ? 1 : 0);
  }
  return calls;
}

static int fail_command(demo_call *d, const char *text) {
  long n = strtol(text + 5, NULL, 10);
  int64_t attempt = head_i64(d, "attempt");
  if (attempt <= n) {
    char msg[96];
    snprintf(msg, sizeof msg, "demo model: /fail %ld (attempt %lld)", n, (long long)attempt);
    dexa_model_reply_set_error(d->reply, msg, 0);
    return DEXA_E_TRANSIENT;
  }
  char msg[96];
  snprintf(msg, sizeof msg, "Recovered: /fail %ld succeeded on attempt %lld.", n, (long long)attempt);
  return answer(d, msg);
}

/* Calls one tool with args (a cJSON object, consumed). */
static int call_tool(demo_call *d, const char *name, cJSON *args) {
  char *a = cJSON_PrintUnformatted(args);
  cJSON_Delete(args);
  if (!a) return DEXA_E_NOMEM;
  dexa__buf line;
  dexa__buf_init(&line);
  dexa__buf_printf(&line, "/tool %s %s", name, a);
  cJSON_free(a);
  int rc = DEXA_E_NOMEM;
  if (!line.oom && !tool_line(d, line.data, line.len, 1, &rc)) rc = DEXA_E_INTERNAL;
  dexa__buf_free(&line);
  return rc;
}

static char *trimmed(const char *s) {
  while (*s == ' ') s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\n')) n--;
  return strndup(s, n);
}

/* /choose PROMPT | A | B ... */
static int choose_command(demo_call *d, const char *text) {
  cJSON *args = cJSON_CreateObject(), *choices = cJSON_CreateArray();
  char *copy = strdup(text + 7), *save = NULL;
  int i = 0;
  for (char *part = strtok_r(copy, "|", &save); part; part = strtok_r(NULL, "|", &save), i++) {
    char *t = trimmed(part);
    if (i == 0) cJSON_AddStringToObject(args, "prompt", t);
    else cJSON_AddItemToArray(choices, cJSON_CreateString(t));
    free(t);
  }
  free(copy);
  cJSON_AddItemToObject(args, "choices", choices);
  return call_tool(d, "ask_user", args);
}

static int wait_command(demo_call *d, const char *text) {
  char *end;
  long seconds = strtol(text + 6, &end, 10);
  char *reason = trimmed(end);
  cJSON *args = cJSON_CreateObject();
  cJSON_AddNumberToObject(args, "seconds", (double)seconds);
  cJSON_AddStringToObject(args, "reason", reason);
  free(reason);
  return call_tool(d, "durable_wait", args);
}

static cJSON *todo(const char *content, const char *status) {
  cJSON *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "content", content);
  cJSON_AddStringToObject(t, "status", status);
  return t;
}

/* A planning turn: draft two tasks, then say so. */
static int plan_draft(demo_call *d, const char *role, const char *text) {
  if (strcmp(role, "user") != 0) return answer(d, "I drafted a plan with 2 tasks. Review it, then execute it.");
  char a[300], b[300];
  snprintf(a, sizeof a, "Look into: %.200s", text);
  snprintf(b, sizeof b, "Report on: %.200s", text);
  cJSON *args = cJSON_CreateObject(), *todos = cJSON_AddArrayToObject(args, "todos");
  cJSON_AddItemToArray(todos, todo(a, "pending"));
  cJSON_AddItemToArray(todos, todo(b, "pending"));
  return call_tool(d, "write_todos", args);
}

/* An executing turn: complete the first unfinished task per model call. */
static int plan_step(demo_call *d) {
  const cJSON *plan = cJSON_GetObjectItemCaseSensitive(d->request_head, "plan");
  cJSON *todos = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(plan, "todos"), 1);
  cJSON *t, *next = NULL;
  int total = 0;
  cJSON_ArrayForEach(t, todos) {
    total++;
    const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "status"));
    if (!next && st && strcmp(st, "completed") != 0) next = t;
  }
  if (!next) {
    cJSON_Delete(todos);
    char msg[96];
    snprintf(msg, sizeof msg, "Plan complete: all %d tasks are done.", total);
    return answer(d, msg);
  }
  cJSON_ReplaceItemInObjectCaseSensitive(next, "status", cJSON_CreateString("completed"));
  cJSON *args = cJSON_CreateObject();
  cJSON_AddItemToObject(args, "todos", todos);
  return call_tool(d, "write_todos", args);
}

/* A compaction request: a deterministic summary of what it covers. */
static int summarize(demo_call *d) {
  size_t count = dexa_model_request_message_count(d->req), users = 0, tools = 0;
  char last_user[160] = "";
  for (size_t i = 0; i < count; i++) {
    const char *m;
    size_t n;
    dexa_model_request_message_at(d->req, i, &m, &n);
    cJSON *msg = cJSON_ParseWithLength(m, n);
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "role"));
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "text"));
    if (role && !strcmp(role, "user")) {
      users++;
      snprintf(last_user, sizeof last_user, "%.150s", text ? text : "");
    }
    if (role && !strcmp(role, "tool")) tools++;
    cJSON_Delete(msg);
  }
  const cJSON *prev = cJSON_GetObjectItemCaseSensitive(d->request_head, "summary");
  const cJSON *through = cJSON_GetObjectItemCaseSensitive(prev, "through_seq");
  char msg[600];
  snprintf(msg, sizeof msg,
           "Summary of %zu messages (%zu from the user, %zu tool results)%s%lld. "
           "Last user message: \"%s\".",
           count, users, tools, cJSON_IsNumber(through) ? ", after the summary through message " : "",
           cJSON_IsNumber(through) ? (long long)through->valuedouble : 0LL, last_user);
  if (!cJSON_IsNumber(through)) {
    char *p = strstr(msg, "0. Last");
    if (p) memmove(p, p + 1, strlen(p));
  }
  return answer(d, msg);
}

static int reply_to_user(demo_call *d, const char *text) {
  if (strcmp(text, "/model") == 0) return answer(d, head_str(d, "model"));
  if (strncmp(text, "/fail ", 6) == 0) return fail_command(d, text);
  if (strncmp(text, "/truncate ", 10) == 0) { /* an answer cut at the output limit */
    int rc = answer(d, text + 10);
    return rc == DEXA_OK ? dexa_model_reply_set_finish_reason(d->reply, "length", "max_tokens") : rc;
  }
  if (strncmp(text, "/ask ", 5) == 0) {
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "prompt", text + 5);
    return call_tool(d, "ask_user", args);
  }
  if (strncmp(text, "/choose ", 8) == 0) return choose_command(d, text);
  if (strncmp(text, "/wait ", 6) == 0) return wait_command(d, text);
  if (strcmp(text, "/plan-clear") == 0) {
    cJSON *args = cJSON_CreateObject();
    cJSON_AddArrayToObject(args, "todos");
    return call_tool(d, "write_todos", args);
  }
  int rc;
  if (tool_calls(d, text, &rc) > 0 || rc != DEXA_OK) return rc;
  if (strncmp(text, "/tool", 5) == 0)
    return answer(d, "Usage: /tool NAME {\"json\":\"arguments\"} (one call per line).");
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "Local demo response: ");
  dexa__buf_puts(&b, text);
  rc = b.oom ? DEXA_E_NOMEM : answer(d, b.data);
  dexa__buf_free(&b);
  return rc;
}

/* Summarizes the tool results at the end of the request (the last round). */
static int reply_to_results(demo_call *d) {
  size_t count = dexa_model_request_message_count(d->req), first = count;
  while (first > 0) {
    const char *m;
    size_t n;
    dexa_model_request_message_at(d->req, first - 1, &m, &n);
    if (!memmem(m, n, "\"role\":\"tool\"", 13)) break;
    first--;
  }
  dexa__buf b;
  dexa__buf_init(&b);
  for (size_t i = first; i < count; i++) {
    const char *m;
    size_t n;
    dexa_model_request_message_at(d->req, i, &m, &n);
    cJSON *msg = cJSON_ParseWithLength(m, n);
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "name"));
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "status"));
    const char *out = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "output"));
    dexa__buf_printf(&b, "%sTool %s (%s): %s", i > first ? "\n" : "", name ? name : "?",
                     status ? status : "?", out ? out : "");
    cJSON_Delete(msg);
  }
  int rc = b.oom ? DEXA_E_NOMEM : answer(d, b.len ? b.data : "Done.");
  dexa__buf_free(&b);
  return rc;
}

/* The request's scalar members, parsed without the messages. */
static cJSON *request_head(const dexa_model_request *req) {
  const char *json;
  size_t len;
  dexa_model_request_json(req, &json, &len);
  const char *m = strstr(json, ",\"messages\":");
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_append(&b, json, m ? (size_t)(m - json) : len);
  if (m) dexa__buf_putc(&b, '}');
  cJSON *head = b.oom ? NULL : cJSON_ParseWithLength(b.data, b.len);
  dexa__buf_free(&b);
  return head;
}

static int demo_generate(void *user_data, const dexa_model_request *req, dexa_model_reply *reply) {
  (void)user_data;
  demo_call d = {req, reply, request_head(req), NULL};
  size_t count = dexa_model_request_message_count(req);
  int rc = DEXA_E_NOMEM;
  if (d.request_head && count) {
    const char *m;
    size_t n;
    dexa_model_request_message_at(req, count - 1, &m, &n);
    d.last = cJSON_ParseWithLength(m, n);
  }
  const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d.last, "role"));
  const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d.last, "text"));
  const char *mode = head_str(&d, "turn_mode");
  if (!d.request_head) rc = DEXA_E_NOMEM;
  else if (!strcmp(head_str(&d, "purpose"), "compaction")) rc = summarize(&d);
  else if (!role) rc = answer(&d, "Hello! Send a message to start.");
  else if (!strcmp(mode, "planning")) rc = plan_draft(&d, role, text ? text : "");
  else if (!strcmp(mode, "executing")) rc = plan_step(&d);
  else if (strcmp(role, "tool") == 0) rc = reply_to_results(&d);
  else if (strcmp(role, "user") == 0) rc = reply_to_user(&d, text ? text : "");
  else rc = answer(&d, "Done.");
  const char *json;
  size_t len;
  dexa_model_request_json(req, &json, &len);
  if (rc == DEXA_OK) dexa_model_reply_set_usage(reply, (int64_t)len / 4, 16);
  cJSON_Delete(d.last);
  cJSON_Delete(d.request_head);
  return rc;
}

DEXA_EXTERN int dexa_model_demo_new(dexa_model **out, const char *name) {
  if (!out) return DEXA_E_INVALID_ARG;
  *out = NULL;
  if (!name || strncmp(name, "mock/", 5) != 0 || !name[5]) return DEXA_E_INVALID_ARG;
  dexa_model_vtable vt;
  dexa_model_vtable_init(&vt, sizeof vt);
  vt.generate = demo_generate;
  return dexa_model_new(out, name, &vt, NULL);
}
