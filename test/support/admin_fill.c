/* admin_fill: see admin_fill.h. */
#include "support/admin_fill.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

dexa_agent *fill_agent(void) {
  dexa_model *m = NULL;
  dexa_agent *a = NULL;
  if (dexa_model_demo_new(&m, "mock/dex") != DEXA_OK) return NULL;
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  char err[256];
  dexa_agent_new(&a, &def, err, sizeof err);
  dexa_model_free(m);
  return a;
}

dexa_runtime *fill_runtime(const dexa_agent *a, const char *path) {
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = path;
  o.sqlite_synchronous = "normal";
  dexa_runtime *rt = NULL;
  char err[256];
  if (dexa_runtime_new(&rt, a, &o, err, sizeof err) != DEXA_OK) fprintf(stderr, "    %s\n", err);
  return rt;
}

static int send(dexa_runtime *rt, const char *sid, const char *text) {
  char in[512], *out = NULL;
  size_t n;
  snprintf(in, sizeof in, "{\"text\":\"%s\"}", text);
  int rc = dexa_runtime_call(rt, sid, "send_message", in, strlen(in), &out, &n);
  dexa_free(out);
  return rc == DEXA_OK ? dexa_runtime_run_ready(rt, NULL) : rc;
}

cJSON *fill_snapshot(dexa_runtime *rt, const char *sid) {
  char *out = NULL;
  size_t n;
  if (dexa_runtime_call(rt, sid, "snapshot", "{}", 2, &out, &n) != DEXA_OK) return NULL;
  cJSON *doc = cJSON_Parse(out);
  dexa_free(out);
  return doc;
}

/* The durable events (live deltas are this process's only). */
char *fill_events(dexa_runtime *rt, const char *sid) {
  char *out = NULL;
  size_t n;
  if (dexa_runtime_read_events(rt, sid, "", 1000, 0, &out, &n) != DEXA_OK) return NULL;
  cJSON *doc = cJSON_Parse(out), *list = cJSON_GetObjectItemCaseSensitive(doc, "events");
  dexa_free(out);
  for (cJSON *e = list ? list->child : NULL, *next; e; e = next) {
    next = e->next;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "live"))) cJSON_Delete(cJSON_DetachItemViaPointer(list, e));
  }
  out = cJSON_PrintUnformatted(doc);
  cJSON_Delete(doc);
  return out;
}

/* Two sessions: one idle after a turn, one waiting on a timer with a
 * message queued behind it (a live Step row, a channel message). */
int fill_sessions(dexa_runtime *rt) {
  int rc = dexa_runtime_start_session(rt, "s-one", NULL, 0, NULL, NULL);
  if (rc == DEXA_OK) rc = dexa_runtime_start_session(rt, "s-two", "{\"model\":\"mock/dex\"}", 20, NULL, NULL);
  if (rc == DEXA_OK) rc = dexa_runtime_run_ready(rt, NULL);
  if (rc == DEXA_OK) rc = send(rt, "s-one", "hello");
  if (rc == DEXA_OK) rc = send(rt, "s-two", "/wait 3600 tea");
  if (rc == DEXA_OK) rc = send(rt, "s-two", "after the tea");
  return rc;
}
