/* AgentPlan: write_todos replaces the whole plan and advances its revision.
 * A plan drafted in a planning turn waits for execute_plan(revision); an
 * active plan is carried out by later turns until every task is done. */
#include <stdio.h>
#include <string.h>

#include "core/plan.h"

#define MAX_TODOS 100

static int valid_status(const char *s) {
  return s && (!strcmp(s, "pending") || !strcmp(s, "in_progress") || !strcmp(s, "completed"));
}

/* Checks the todos; on a problem writes it to why and returns 0. */
static int todos_valid(const cJSON *todos, char *why, size_t n, int *all_done) {
  if (!cJSON_IsArray(todos)) {
    snprintf(why, n, "write_todos needs \"todos\": an array of {content, status}");
    return 0;
  }
  int count = 0;
  *all_done = 1;
  const cJSON *t;
  cJSON_ArrayForEach(t, todos) {
    const char *content = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "content"));
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "status"));
    if (!content || !*content || !valid_status(status)) {
      snprintf(why, n, "todo %d needs a non-empty content and a status of pending, "
                       "in_progress or completed", count + 1);
      return 0;
    }
    if (strcmp(status, "completed") != 0) *all_done = 0;
    if (++count > MAX_TODOS) {
      snprintf(why, n, "a plan has at most %d todos", MAX_TODOS);
      return 0;
    }
  }
  return 1;
}

int dexa__plan_load(dexa__ctx *c, dexa__plan *p) {
  memset(p, 0, sizeof *p);
  cJSON *o;
  int rc = dexa__attr_get_json(c, ATTR_PLAN, &o);
  if (rc != DEXA_OK || !o) return rc;
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "revision");
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "status"));
  p->exists = 1;
  p->revision = dexa__json_int(r, 0);
  snprintf(p->status, sizeof p->status, "%s", s ? s : "draft");
  cJSON_Delete(o);
  return DEXA_OK;
}

int dexa__plan_set_status(dexa__ctx *c, const char *status) {
  cJSON *o;
  int rc = dexa__attr_get_json(c, ATTR_PLAN, &o);
  if (rc != DEXA_OK) return rc;
  if (!o) return DEXA_E_NOT_FOUND;
  rc = dexa__json_set(o, "status", cJSON_CreateString(status));
  if (rc == DEXA_OK) rc = dexa__attr_put_json(c, ATTR_PLAN, o);
  cJSON_Delete(o);
  return rc;
}

static int plan_event(dexa__ctx *c, const char *plan_json) {
  dexa__buf e;
  dexa__event_begin(c, &e, "plan_updated");
  dexa__buf_puts(&e, ",\"plan\":");
  dexa__buf_puts(&e, plan_json ? plan_json : "null");
  return dexa__event_end(c, &e);
}

/* The status a written plan gets: a draft while planning, else active until
 * every task is completed. */
static const char *next_status(const dexa__turn *turn, int all_done) {
  if (strcmp(turn->mode, "planning") == 0) return "draft";
  return all_done ? "completed" : "active";
}

int dexa__plan_write(dexa__ctx *c, const cJSON *args, const dexa__turn *turn, char *why, size_t n,
                     int64_t *revision) {
  const cJSON *todos = cJSON_GetObjectItemCaseSensitive(args, "todos");
  int all_done;
  if (!todos_valid(todos, why, n, &all_done)) return DEXA_E_INVALID_ARG;
  dexa__plan old;
  int rc = dexa__plan_load(c, &old);
  if (rc != DEXA_OK) return rc;
  *revision = old.revision + 1;
  if (cJSON_GetArraySize(todos) == 0) { /* an empty list clears the plan */
    rc = dexa__attr_delete(c, ATTR_PLAN);
    return rc == DEXA_OK ? plan_event(c, NULL) : rc;
  }
  /* Built as text: one out-of-memory flag covers every member. */
  char *list = cJSON_PrintUnformatted(todos);
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_printf(&b, "{\"revision\":%lld,\"status\":\"%s\",\"todos\":", (long long)*revision,
                   next_status(turn, all_done));
  dexa__buf_puts(&b, list ? list : "");
  dexa__buf_printf(&b, ",\"turn\":%lld,\"updated_ms\":%lld}", (long long)turn->turn,
                   (long long)c->call->now_ms);
  rc = !list || b.oom ? DEXA_E_NOMEM : dexa__attr_put_raw(c, ATTR_PLAN, b.data, b.len);
  if (rc == DEXA_OK) rc = plan_event(c, b.data);
  cJSON_free(list);
  dexa__buf_free(&b);
  return rc;
}
