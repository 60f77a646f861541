/* dexagents sessions list|start|show|events. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

static void when(char *buf, size_t n, int64_t ms) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, n, "%Y-%m-%d %H:%M:%SZ", &tm);
}

/* ---- list ---------------------------------------------------------------------------------- */

static int list(cli_app *a, long limit) {
  cJSON *all = cJSON_CreateArray();
  char *after = NULL;
  int rc = DEXA_OK;
  long count = 0;
  while (count < limit) {
    char *out = NULL;
    size_t len = 0;
    int32_t page = limit - count > 1000 ? 1000 : (int32_t)(limit - count);
    rc = dexa_runtime_list_sessions(a->rt, after, page, &out, &len);
    if (rc != DEXA_OK) break;
    cJSON *doc = cJSON_ParseWithLength(out, len);
    dexa_free(out);
    cJSON *s, *sessions = cJSON_GetObjectItemCaseSensitive(doc, "sessions");
    while (sessions && sessions->child) {
      s = cJSON_DetachItemFromArray(sessions, 0);
      cJSON_AddItemToArray(all, s);
      count++;
    }
    free(after);
    after = *cli_str(doc, "next") ? strdup(cli_str(doc, "next")) : NULL;
    cJSON_Delete(doc);
    if (!after) break;
  }
  free(after);
  if (rc != DEXA_OK) {
    cJSON_Delete(all);
    return cli_fail(&a->g, "sessions list", rc, NULL);
  }
  if (a->g.json) {
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddItemToObject(doc, "sessions", all);
    cli_print_tree(doc);
    return CLI_OK;
  }
  const cJSON *s;
  cJSON_ArrayForEach(s, all) {
    char w[32];
    when(w, sizeof w, cli_num(s, "created_ms"));
    printf("%s  %s  %s  %s\n", cli_str(s, "session_id"), w, cli_str(s, "flow_type"),
           cli_str(s, "status"));
  }
  printf("%ld session%s\n", count, count == 1 ? "" : "s");
  cJSON_Delete(all);
  return CLI_OK;
}

static int start(cli_app *a, const char *model, const char *id) {
  cJSON *settings = cJSON_CreateObject();
  if (model) cJSON_AddStringToObject(settings, "model", model);
  char *json = cJSON_PrintUnformatted(settings);
  cJSON_Delete(settings);
  char *out = NULL;
  size_t len = 0;
  int rc = dexa_runtime_start_session(a->rt, id, json, strlen(json), &out, &len);
  cJSON_free(json);
  if (rc != DEXA_OK) {
    int code = cli_fail(&a->g, "sessions start", rc, out);
    dexa_free(out);
    return code;
  }
  if (a->g.json) {
    cli_print_json(out ? out : "{}");
  } else {
    cJSON *doc = out ? cJSON_Parse(out) : NULL;
    printf("%s\n", doc ? cli_str(doc, "session_id") : id);
    cJSON_Delete(doc);
  }
  dexa_free(out);
  return CLI_OK;
}

/* ---- show ------------------------------------------------------------------------------------ */

void cli_show_pending(const cJSON *snap) {
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(snap, "pending")) {
    const char *kind = cli_str(p, "kind");
    char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(p, "arguments"));
    if (!strcmp(kind, "approval"))
      printf("waits for approval: %s %s (call %s)\n", cli_str(p, "name"), args ? args : "{}",
             cli_str(p, "call_id"));
    else if (!strcmp(kind, "question"))
      printf("waits for an answer: %s (call %s)\n", cli_str(p, "prompt"), cli_str(p, "call_id"));
    else if (!strcmp(kind, "timer"))
      printf("waits on a timer: %lld s, %s (call %s)\n", (long long)cli_num(p, "seconds"),
             cli_str(p, "reason"), cli_str(p, "call_id"));
    cJSON_free(args);
  }
}

static void show_text(const cJSON *snap, long messages) {
  const cJSON *sess = cJSON_GetObjectItemCaseSensitive(snap, "session");
  const cJSON *turn = cJSON_GetObjectItemCaseSensitive(snap, "turn");
  const cJSON *plan = cJSON_GetObjectItemCaseSensitive(snap, "plan"), *x;
  printf("session %s (model %s)\n", cli_str(snap, "session_id"), cli_str(sess, "model"));
  printf("turn %lld: %s (%s)\n", (long long)cli_num(turn, "turn"),
         *cli_str(turn, "status") ? cli_str(turn, "status") : "none", cli_str(turn, "mode"));
  if (cJSON_IsObject(plan)) {
    printf("plan revision %lld (%s)\n", (long long)cli_num(plan, "revision"), cli_str(plan, "status"));
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(plan, "todos")) {
      printf("  [%s] %s\n", cli_str(x, "status"), cli_str(x, "content"));
    }
  }
  cli_show_pending(snap);
  cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(snap, "queue")) {
    printf("queued %s%s: %s\n", cli_str(x, "id"),
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "steered")) ? " (steered)" : "",
           cli_str(x, "text"));
  }
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(snap, "messages");
  int n = cJSON_GetArraySize(msgs);
  for (int i = n > messages ? n - (int)messages : 0; i < n; i++) {
    const cJSON *m = cJSON_GetArrayItem(msgs, i);
    const char *role = cli_str(m, "role");
    if (!strcmp(role, "user")) printf("you> %s\n", cli_str(m, "text"));
    else if (!strcmp(role, "tool"))
      printf("  <- tool %s: %s: %s\n", cli_str(m, "name"), cli_str(m, "status"), cli_str(m, "output"));
    else if (*cli_str(m, "text")) printf("dex> %s\n", cli_str(m, "text"));
    else {
      const cJSON *c;
      cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(m, "tool_calls")) {
        char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(c, "arguments"));
        printf("  -> tool call %s %s (%s)\n", cli_str(c, "name"), args ? args : "{}",
               cli_str(c, "call_id"));
        cJSON_free(args);
      }
    }
  }
}

static int show(cli_app *a, const char *sid, long messages) {
  char *out = NULL;
  size_t len = 0;
  int rc = dexa_runtime_call(a->rt, sid, "snapshot", "{}", 2, &out, &len);
  if (rc != DEXA_OK) {
    int code = cli_fail(&a->g, "sessions show", rc, out);
    dexa_free(out);
    return code;
  }
  if (a->g.json) {
    cli_print_json(out);
  } else {
    cJSON *snap = cJSON_ParseWithLength(out, len);
    show_text(snap, messages);
    cJSON_Delete(snap);
  }
  dexa_free(out);
  return CLI_OK;
}

/* ---- events --------------------------------------------------------------------------------- */

static volatile sig_atomic_t g_interrupted;
static void on_signal(int sig) {
  (void)sig;
  g_interrupted = 1;
}

/* One line per event: its token, type and what it says in short. */
static void event_line(const cJSON *item) {
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(item, "event");
  const char *type = cli_str(e, "type");
  char detail[400] = "";
  if (!strcmp(type, "message_appended")) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
    snprintf(detail, sizeof detail, "%s: %.300s", cli_str(m, "role"), cli_str(m, "text"));
  } else if (!strcmp(type, "text_delta") || !strcmp(type, "reasoning_delta")) {
    snprintf(detail, sizeof detail, "%.300s", cli_str(e, "text"));
  } else if (*cli_str(e, "name")) {
    const char *status = cli_str(e, "status");
    snprintf(detail, sizeof detail, "%s %s%s%s", cli_str(e, "name"), cli_str(e, "call_id"),
             *status ? ": " : "", status);
  } else if (cJSON_GetObjectItemCaseSensitive(e, "turn")) {
    snprintf(detail, sizeof detail, "turn %lld%s%s", (long long)cli_num(e, "turn"),
             *cli_str(e, "action") ? " " : "", cli_str(e, "action"));
  }
  printf("%s  %s%s%s\n", cli_str(item, "token"), type, *detail ? "  " : "", detail);
}

static int events(cli_app *a, const char *sid, const char *from, int follow) {
  char *token = strdup(from ? from : "");
  cJSON *all = a->g.json && !follow ? cJSON_CreateArray() : NULL;
  int rc = DEXA_OK;
  if (follow) {
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
  }
  while (!g_interrupted) {
    char *out = NULL;
    size_t len = 0;
    rc = dexa_runtime_read_events(a->rt, sid, token, 1000, follow ? 500 : 0, &out, &len);
    if (rc != DEXA_OK) {
      int code = cli_fail(&a->g, "sessions events", rc, out);
      dexa_free(out);
      cJSON_Delete(all);
      free(token);
      return code;
    }
    cJSON *doc = cJSON_ParseWithLength(out, len);
    dexa_free(out);
    cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "events");
    int n = cJSON_GetArraySize(list);
    while (list && list->child) {
      cJSON *item = cJSON_DetachItemFromArray(list, 0);
      if (all) cJSON_AddItemToArray(all, item);
      else if (a->g.json) cli_print_tree(item);
      else {
        event_line(item);
        cJSON_Delete(item);
      }
    }
    fflush(stdout);
    free(token);
    token = strdup(cli_str(doc, "token"));
    cJSON_Delete(doc);
    if (!follow && n == 0) break;
  }
  if (all) {
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddItemToObject(doc, "events", all);
    cJSON_AddStringToObject(doc, "token", token ? token : "");
    cli_print_tree(doc);
  } else if (!a->g.json && !follow) {
    printf("token %s\n", token ? token : "");
  }
  free(token);
  return CLI_OK;
}

int cmd_sessions(int argc, char **argv) {
  cli_globals g = {NULL, NULL, 0, -1, NULL, NULL, NULL};
  const char *limit_s = NULL, *model = NULL, *id = NULL, *from = NULL, *msgs_s = NULL;
  int follow = 0;
  const cli_opt opts[] = {{"--limit", 1, &limit_s, NULL},  {"--model", 1, &model, NULL},
                          {"--id", 1, &id, NULL},          {"--from", 1, &from, NULL},
                          {"--follow", 0, NULL, &follow},  {"--messages", 1, &msgs_s, NULL},
                          {NULL, 0, NULL, NULL}};
  const char *pos[2];
  int npos;
  int rc = cli_parse(argc, argv, 2, &g, opts, pos, 2, &npos, "sessions");
  if (rc != CLI_OK) return rc;
  const char *what = npos ? pos[0] : "";
  long limit = 1000000, messages = 20;
  if (limit_s && cli_int("--limit", limit_s, 1000000, &limit) != CLI_OK) return CLI_USAGE;
  if (msgs_s && cli_int("--messages", msgs_s, 200, &messages) != CLI_OK) return CLI_USAGE;
  int needs_id = !strcmp(what, "show") || !strcmp(what, "events");
  if ((!needs_id && strcmp(what, "list") && strcmp(what, "start")) || (needs_id && npos != 2) ||
      (!needs_id && npos != 1)) {
    fprintf(stderr, "dexagents sessions: %s\n", npos ? "bad arguments" : "list, start, show or events?");
    cli_print_usage("sessions", stderr);
    return CLI_USAGE;
  }
  g.model = model; /* start --model: a model the allow-list may lack */
  cli_app a;
  rc = cli_app_open(&a, &g, 0);
  if (rc == CLI_OK) {
    if (!strcmp(what, "list")) rc = list(&a, limit);
    else if (!strcmp(what, "start")) rc = start(&a, model, id);
    else if (!strcmp(what, "show")) rc = show(&a, pos[1], messages);
    else rc = events(&a, pos[1], from, follow);
  }
  cli_app_close(&a);
  return rc;
}
