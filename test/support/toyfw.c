/* toyfw: see toyfw.h. Test code: cJSON trees, no care for speed. */
#include "support/toyfw.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct toyfw {
  toyfw_options o;
  toyfw_stats stats;
} toyfw;

/* One segment: the request's numbers, the framework's list, what is new. */
typedef struct segment {
  toyfw *fw;
  const dexa_model_request *req;
  dexa_model_reply *reply;
  int turn, round, attempt, number;
  cJSON *list;  /* every item of its state: messages and filler */
  cJSON *added; /* the items this segment adds */
} segment;

static const char *str(const cJSON *o, const char *name) {
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
  return s ? s : "";
}

static int num(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsNumber(v) ? v->valueint : 0;
}

static int is_role(const cJSON *m, const char *role) { return strcmp(str(m, "role"), role) == 0; }

/* Moves the items of the JSON array text into list. */
static void take_items(cJSON *list, const char *json, size_t len) {
  cJSON *a = cJSON_ParseWithLength(json, len);
  while (cJSON_IsArray(a) && a->child)
    cJSON_AddItemToArray(list, cJSON_DetachItemViaPointer(a, a->child));
  cJSON_Delete(a);
}

/* Its own list: the state it set, then every entry it appended since. */
static void load_list(segment *s) {
  const char *json;
  size_t len;
  s->list = cJSON_CreateArray();
  dexa_model_request_harness_state(s->req, &json, &len);
  if (json) take_items(s->list, json, len);
  size_t n = dexa_model_request_harness_entry_count(s->req);
  for (size_t i = 0; i < n; i++)
    if (dexa_model_request_harness_entry_at(s->req, i, &json, &len) == DEXA_OK)
      take_items(s->list, json, len);
  pthread_mutex_lock(&s->fw->stats.mu);
  s->fw->stats.had_state = dexa_model_request_harness_state(s->req, &json, &len) == DEXA_OK && json;
  s->fw->stats.entries = n;
  pthread_mutex_unlock(&s->fw->stats.mu);
}

static void add(segment *s, cJSON *item) {
  cJSON_AddItemToArray(s->list, item);
  cJSON_AddItemToArray(s->added, cJSON_Duplicate(item, 1));
}

/* A stored Dex message in its own message format. */
static cJSON *convert(const cJSON *d) {
  cJSON *m = cJSON_CreateObject();
  if (is_role(d, "tool")) {
    cJSON_AddStringToObject(m, "role", "tool");
    cJSON_AddStringToObject(m, "id", str(d, "call_id"));
    cJSON_AddStringToObject(m, "name", str(d, "name"));
    cJSON_AddStringToObject(m, "status", str(d, "status"));
    cJSON_AddStringToObject(m, "content", str(d, "output"));
  } else {
    cJSON_AddStringToObject(m, "role", is_role(d, "user") ? "user" : "assistant");
    cJSON_AddStringToObject(m, "content", str(d, "text"));
  }
  return m;
}

/* Feeds itself only the new messages. */
static void take_new(segment *s) {
  size_t first = dexa_model_request_first_new_message(s->req);
  size_t count = dexa_model_request_message_count(s->req);
  char roles[256] = "";
  for (size_t i = first; i < count; i++) {
    const char *json;
    size_t len;
    dexa_model_request_message_at(s->req, i, &json, &len);
    cJSON *d = cJSON_ParseWithLength(json, len);
    if (is_role(d, "model")) { /* its own output: already in its list */
      cJSON_Delete(d);
      continue;
    }
    size_t k = strlen(roles);
    snprintf(roles + k, sizeof roles - k, "%s%s%s%s", k ? "," : "", str(d, "role"),
             is_role(d, "tool") ? ":" : "", is_role(d, "tool") ? str(d, "status") : "");
    add(s, convert(d));
    cJSON_Delete(d);
  }
  pthread_mutex_lock(&s->fw->stats.mu);
  s->fw->stats.new_count = (int)(count - first);
  s->fw->stats.request_messages = count;
  snprintf(s->fw->stats.new_roles, sizeof s->fw->stats.new_roles, "%s", roles);
  pthread_mutex_unlock(&s->fw->stats.mu);
}

static int messages_in(const cJSON *list) {
  int n = 0;
  const cJSON *m;
  cJSON_ArrayForEach(m, list) n += !is_role(m, "filler");
  return n;
}

static int last_index(const cJSON *list, const char *role) {
  int n = cJSON_GetArraySize(list);
  for (int i = n - 1; i >= 0; i--)
    if (is_role(cJSON_GetArrayItem(list, i), role)) return i;
  return -1;
}

/* The value of "key=" among a command's words, or NULL. */
static const char *option(char *const *words, int n, const char *key) {
  size_t kl = strlen(key);
  for (int i = 0; i < n; i++)
    if (strncmp(words[i], key, kl) == 0 && words[i][kl] == '=') return words[i] + kl + 1;
  return NULL;
}

static int effect_of(const char *name) {
  if (!name) return DEXA_TOOL_EFFECT_DEFAULT;
  if (!strcmp(name, "read")) return DEXA_TOOL_READ;
  if (!strcmp(name, "idempotent_write")) return DEXA_TOOL_IDEMPOTENT_WRITE;
  return DEXA_TOOL_WRITE;
}

static void add_call(cJSON *calls, const char *id, const char *name, cJSON *args, int effect,
                     int approval) {
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "id", id);
  cJSON_AddStringToObject(c, "name", name);
  cJSON_AddItemToObject(c, "args", args ? args : cJSON_CreateObject());
  cJSON_AddNumberToObject(c, "effect", effect);
  cJSON_AddNumberToObject(c, "approval", approval);
  cJSON_AddItemToArray(calls, c);
}

static void run_inner(segment *s, int i, const char *name, const char *args, char *summary,
                      size_t size) {
  char id[64], *out = NULL;
  size_t len;
  snprintf(id, sizeof id, "toy-t%d-r%d-i%d", s->turn, s->round, i);
  int rc = dexa_model_request_call_tool(s->req, id, name, args, strlen(args), &out, &len);
  cJSON *r = out ? cJSON_Parse(out) : NULL;
  size_t k = strlen(summary);
  snprintf(summary + k, size - k, "%s%s=%s:%s", k ? " | " : "", name,
           rc == DEXA_OK ? str(r, "status") : dexa_error_name(rc), str(r, "output"));
  pthread_mutex_lock(&s->fw->stats.mu);
  snprintf(s->fw->stats.inner, sizeof s->fw->stats.inner, "%s", out ? out : "");
  s->fw->stats.inner_rc = rc;
  pthread_mutex_unlock(&s->fw->stats.mu);
  cJSON_Delete(r);
  dexa_free(out);
}

static int blocked(segment *s) {
  if (s->fw->o.on_block) s->fw->o.on_block(s->fw->o.ctx);
  for (int waited = 0; waited < 60000; waited++) {
    if (dexa_model_request_cancelled(s->req)) {
      pthread_mutex_lock(&s->fw->stats.mu);
      s->fw->stats.cancelled_seen = 1;
      pthread_mutex_unlock(&s->fw->stats.mu);
      dexa_model_reply_set_error(s->reply, "stopped", 0);
      return DEXA_E_TRANSIENT;
    }
    usleep(1000);
  }
  return DEXA_OK;
}

/* Acts on the user's script; fills calls and text. */
static int act(segment *s, const char *script, cJSON *calls, char *text, size_t size) {
  char *copy = strdup(script), *save = NULL, inner[1024] = "";
  int ncalls = 0, ninner = 0, nran = 0, rc = DEXA_OK;
  for (char *line = strtok_r(copy, "\n", &save); line && rc == DEXA_OK;
       line = strtok_r(NULL, "\n", &save)) {
    char *words[8], *ws = NULL;
    int n = 0;
    for (char *w = strtok_r(line, " ", &ws); w && n < 8; w = strtok_r(NULL, " ", &ws))
      words[n++] = w;
    if (n == 0) continue;
    char id[64];
    snprintf(id, sizeof id, "toy-t%d-r%d-c%d", s->turn, s->round, ncalls + 1);
    if (!strcmp(words[0], "call") && n >= 2) {
      const char *ap = option(words, n, "approval");
      add_call(calls, id, words[1], n >= 3 && words[2][0] == '{' ? cJSON_Parse(words[2]) : NULL,
               effect_of(option(words, n, "effect")),
               ap ? (!strcmp(ap, "yes") ? DEXA_APPROVAL_REQUIRED : DEXA_APPROVAL_NONE)
                  : DEXA_APPROVAL_DEFAULT);
      ncalls++;
    } else if (!strcmp(words[0], "inner") && n >= 2) {
      run_inner(s, ++ninner, words[1], n >= 3 ? words[2] : "{}", inner, sizeof inner);
    } else if (!strcmp(words[0], "ask") && n >= 2) {
      cJSON *args = cJSON_CreateObject();
      cJSON_AddStringToObject(args, "prompt", words[1]);
      add_call(calls, id, "ask_user", args, DEXA_TOOL_EFFECT_DEFAULT, DEXA_APPROVAL_DEFAULT);
      ncalls++;
    } else if (!strcmp(words[0], "wait") && n >= 2) {
      cJSON *args = cJSON_CreateObject();
      cJSON_AddNumberToObject(args, "seconds", atoi(words[1]));
      add_call(calls, id, "durable_wait", args, DEXA_TOOL_EFFECT_DEFAULT, DEXA_APPROVAL_DEFAULT);
      ncalls++;
    } else if (!strcmp(words[0], "todos")) {
      add_call(calls, id, "write_todos",
               cJSON_Parse("{\"todos\":[{\"content\":\"one\",\"status\":\"pending\"},"
                           "{\"content\":\"two\",\"status\":\"pending\"}]}"),
               DEXA_TOOL_EFFECT_DEFAULT, DEXA_APPROVAL_DEFAULT);
      ncalls++;
    } else if (!strcmp(words[0], "ran") && n >= 3) {
      /* a tool it ran itself, inside the segment: recorded, not proposed */
      cJSON *r = cJSON_CreateObject();
      char rid[80];
      snprintf(rid, sizeof rid, "toy-t%d-r%d-f%d", s->turn, s->round, ++nran);
      cJSON_AddStringToObject(r, "call_id", rid);
      cJSON_AddStringToObject(r, "name", words[1]);
      cJSON_AddItemToObject(r, "arguments", words[2][0] == '{' ? cJSON_Parse(words[2]) : cJSON_CreateObject());
      cJSON_AddStringToObject(r, "output", n >= 4 ? words[3] : "");
      char *json = cJSON_PrintUnformatted(r);
      rc = dexa_model_reply_add_framework_tool_call(s->reply, json, strlen(json));
      free(json);
      cJSON_Delete(r);
    } else if (!strcmp(words[0], "block")) {
      rc = blocked(s);
    } else if (!strcmp(words[0], "grow") && n >= 2) {
      size_t bytes = (size_t)atol(words[1]);
      char *filler = malloc(bytes + 1);
      memset(filler, 'x', bytes);
      filler[bytes] = '\0';
      cJSON *f = cJSON_CreateObject();
      cJSON_AddStringToObject(f, "role", "filler");
      cJSON_AddStringToObject(f, "content", filler);
      add(s, f);
      free(filler);
    }
  }
  if (*inner)
    snprintf(text, size, "inner: %s", inner);
  else if (!ncalls)
    snprintf(text, size, "echo: %s", script);
  free(copy);
  return rc;
}

/* The results of the calls of the assistant message at a, once all are in. */
static void answer_results(segment *s, int a, char *text, size_t size) {
  const cJSON *calls = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(s->list, a), "calls");
  size_t k = (size_t)snprintf(text, size, "results:");
  const cJSON *c;
  cJSON_ArrayForEach(c, calls) {
    const cJSON *m;
    cJSON_ArrayForEach(m, s->list) {
      if (!is_role(m, "tool") || strcmp(str(m, "id"), str(c, "id")) != 0) continue;
      k += (size_t)snprintf(text + k, k < size ? size - k : 0, "%s %s=%s:%s",
                            c == calls->child ? "" : " |", str(m, "name"), str(m, "status"),
                            str(m, "content"));
    }
  }
}

/* The number after command word in the script, or 0. */
static int command_arg(const char *script, const char *word) {
  size_t n = strlen(word);
  for (const char *f = strstr(script, word); f; f = strstr(f + 1, word))
    if ((f == script || f[-1] == '\n') && f[n] == ' ') return atoi(f + n + 1);
  return 0;
}

/* Writes the reply: its assistant message verbatim, text, calls, policies. */
static int reply_with(segment *s, cJSON *calls, const char *text) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "role", "assistant");
  cJSON_AddStringToObject(m, "content", text);
  cJSON_AddItemToObject(m, "calls", cJSON_Duplicate(calls, 1));
  char *json = cJSON_PrintUnformatted(m);
  int rc = dexa_model_reply_add_item(s->reply, json, strlen(json));
  if (rc == DEXA_OK && *text) rc = dexa_model_reply_add_text(s->reply, text, strlen(text));
  const cJSON *c;
  cJSON_ArrayForEach(c, calls) {
    char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(c, "args"));
    if (rc == DEXA_OK)
      rc = dexa_model_reply_add_tool_call(s->reply, str(c, "id"), str(c, "name"), args,
                                          strlen(args));
    if (rc == DEXA_OK && (num(c, "effect") != DEXA_TOOL_EFFECT_DEFAULT ||
                          num(c, "approval") != DEXA_APPROVAL_DEFAULT))
      rc = dexa_model_reply_set_tool_policy(s->reply, str(c, "id"), num(c, "effect"),
                                            num(c, "approval"));
    free(args);
  }
  free(json);
  add(s, m);
  return rc;
}

/* Its new state: the whole list every fold_every-th segment, else the
 * items this segment added, appended. */
static int save(segment *s) {
  int fold = s->fw->o.fold_every > 0 && s->number % s->fw->o.fold_every == 0;
  char *json = cJSON_PrintUnformatted(fold ? s->list : s->added);
  int rc = fold ? dexa_model_reply_set_harness_state(s->reply, json, strlen(json))
                : dexa_model_reply_add_harness_entry(s->reply, json, strlen(json));
  free(json);
  return rc;
}

static int decide(segment *s) {
  int u = last_index(s->list, "user"), a = last_index(s->list, "assistant");
  const char *script = u >= 0 ? str(cJSON_GetArrayItem(s->list, u), "content") : "";
  char text[2048] = "";
  cJSON *calls = cJSON_CreateArray();
  int rc = DEXA_OK;
  usleep((useconds_t)command_arg(script, "sleep") * 1000);
  if (a < u) {
    rc = act(s, script, calls, text, sizeof text);
  } else {
    int linger = command_arg(script, "linger");
    if (linger && s->fw->o.on_linger) {
      s->fw->o.on_linger(s->fw->o.ctx);
      usleep((useconds_t)linger * 1000);
    }
    answer_results(s, a, text, sizeof text);
  }
  if (rc == DEXA_OK && s->attempt <= command_arg(script, "fail")) {
    dexa_model_reply_set_error(s->reply, "toy failure", 0);
    rc = DEXA_E_TRANSIENT;
  }
  if (rc == DEXA_OK && cJSON_GetArraySize(calls) == 0) {
    size_t k = strlen(text);
    snprintf(text + k, sizeof text - k, " [%d messages]", messages_in(s->list) + 1);
  }
  if (rc == DEXA_OK) rc = reply_with(s, calls, text);
  if (rc == DEXA_OK) rc = save(s);
  cJSON_Delete(calls);
  return rc;
}

static int run_segment(void *user, const dexa_model_request *req, dexa_model_reply *reply) {
  toyfw *fw = user;
  const char *json;
  size_t len;
  dexa_model_request_json(req, &json, &len);
  cJSON *r = cJSON_ParseWithLength(json, len);
  segment s = {fw,
               req,
               reply,
               num(r, "turn"),
               num(r, "round"),
               num(r, "attempt"),
               num(cJSON_GetObjectItemCaseSensitive(r, "harness"), "segment"),
               NULL,
               cJSON_CreateArray()};
  cJSON_Delete(r);
  pthread_mutex_lock(&fw->stats.mu);
  fw->stats.segments++;
  pthread_mutex_unlock(&fw->stats.mu);
  load_list(&s);
  take_new(&s);
  int rc = decide(&s);
  pthread_mutex_lock(&fw->stats.mu);
  fw->stats.messages = messages_in(s.list);
  pthread_mutex_unlock(&fw->stats.mu);
  cJSON_Delete(s.list);
  cJSON_Delete(s.added);
  return rc;
}

static int summarize(void *user, const dexa_model_request *req, dexa_model_reply *reply) {
  toyfw *fw = user;
  pthread_mutex_lock(&fw->stats.mu);
  fw->stats.summaries++;
  pthread_mutex_unlock(&fw->stats.mu);
  char text[64];
  snprintf(text, sizeof text, "summary of %zu messages", dexa_model_request_message_count(req));
  int rc = dexa_model_reply_add_item(reply, "{\"type\":\"summary\"}", 18);
  return rc == DEXA_OK ? dexa_model_reply_add_text(reply, text, strlen(text)) : rc;
}

static void destroy(void *user) {
  toyfw *fw = user;
  pthread_mutex_destroy(&fw->stats.mu);
  free(fw);
}

int toyfw_new(dexa_model **out, const char *name, const toyfw_options *options,
              toyfw_stats **stats) {
  toyfw *fw = calloc(1, sizeof *fw);
  if (!fw) return DEXA_E_NOMEM;
  if (options) fw->o = *options;
  pthread_mutex_init(&fw->stats.mu, NULL);
  dexa_harness_vtable vt;
  dexa_harness_vtable_init(&vt, sizeof vt);
  vt.flags = fw->o.flags;
  vt.run_segment = run_segment;
  vt.summarize = fw->o.summarize ? summarize : NULL;
  vt.destroy = destroy;
  int rc = dexa_harness_new(out, name, &vt, fw);
  if (rc != DEXA_OK) {
    destroy(fw);
    return rc;
  }
  if (stats) *stats = &fw->stats;
  return DEXA_OK;
}
