/* Tool routing: every call of a reply becomes its own Step, chosen by the
 * tool's effect and approval policy, and ResumeTurn joins them. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tools/tool_source.h"

static const char *step_for(const dexa__tool_def *def) {
  if (def->approval == DEXA_APPROVAL_REQUIRED) return STEP_AWAIT_TOOL_APPROVAL;
  return def->effect == DEXA_TOOL_WRITE ? STEP_CALL_SINGLE_ATTEMPT_TOOL : STEP_CALL_TOOL;
}

/* The input every Step of a call gets: enough to run it and record its
 * result without reading the history. */
static void call_input(dexa__buf *b, const dexa_agent *a, const dexa__tool_def *def,
                       const char *call_id, const char *args, int64_t turn, int64_t round,
                       int64_t seq) {
  dexa__buf_printf(b, "{\"turn\":%lld,\"round\":%lld,\"seq\":%lld,\"call_id\":", (long long)turn,
                   (long long)round, (long long)seq);
  dexa__buf_json_cstr(b, call_id);
  dexa__buf_puts(b, ",\"name\":");
  dexa__buf_json_cstr(b, def->name);
  dexa__buf_puts(b, ",\"source\":");
  dexa__buf_json_cstr(b, a->sources[def->source]->name);
  dexa__buf_puts(b, ",\"effect\":");
  dexa__buf_json_cstr(b, dexa__tool_effect_name(def->effect));
  dexa__buf_puts(b, ",\"arguments\":");
  dexa__buf_puts(b, args);
  dexa__buf_putc(b, '}');
}

static int proposed_event(dexa__ctx *c, const char *call_id, const char *name, const char *args,
                          const char *step) {
  dexa__buf e;
  dexa__event_begin(c, &e, "tool_call_proposed");
  dexa__buf_puts(&e, ",\"call_id\":");
  dexa__buf_json_cstr(&e, call_id);
  dexa__buf_puts(&e, ",\"name\":");
  dexa__buf_json_cstr(&e, name);
  dexa__buf_puts(&e, ",\"arguments\":");
  dexa__buf_puts(&e, args);
  dexa__buf_puts(&e, ",\"step\":");
  dexa__buf_json_cstr(&e, step);
  return dexa__event_end(c, &e);
}

static int seen_before(const cJSON *calls, const cJSON *upto, const char *call_id) {
  for (const cJSON *x = calls->child; x && x != upto; x = x->next) {
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "call_id"));
    if (id && strcmp(id, call_id) == 0) return 1;
  }
  return 0;
}

static int reject_call(dexa__ctx *c, const char *call_id, const char *name, const char *why,
                       int64_t turn, int64_t round, int64_t seq) {
  dexa__tool_result r = {call_id, name, "error", why, strlen(why), NULL, 0};
  return dexa__tool_result_record(c, turn, round, seq, &r);
}

static int route_one(dexa__ctx *c, const dexa_tool_list *tools, const cJSON *calls,
                     const cJSON *call, int64_t turn, int64_t round, int64_t seq,
                     dexa__decision *d) {
  const char *call_id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(call, "call_id"));
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(call, "name"));
  if (!call_id || !name) return DEXA_E_INTERNAL;
  if (seen_before(calls, call, call_id))
    return reject_call(c, call_id, name, "the model repeated a call id in one reply", turn, round, seq);
  const dexa__tool_def *def = dexa__tool_list_find(tools, name, strlen(name));
  if (!def) {
    char why[160];
    snprintf(why, sizeof why, "unknown tool \"%.64s\": it is not offered to this session", name);
    return reject_call(c, call_id, name, why, turn, round, seq);
  }
  char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(call, "arguments"));
  if (!args) return DEXA_E_NOMEM;
  const char *step = step_for(def);
  dexa__buf in;
  dexa__buf_init(&in);
  call_input(&in, c->agent, def, call_id, args, turn, round, seq);
  dexa__decision_next(d, step, in.data, in.len);
  int rc = in.oom ? DEXA_E_NOMEM : proposed_event(c, call_id, name, args, step);
  dexa__buf_free(&in);
  cJSON_free(args);
  return rc;
}

int dexa__route_tool_calls(dexa__ctx *c, const dexa_tool_list *tools, const cJSON *calls,
                           int64_t turn, int64_t round, dexa__transcript *t, dexa__decision *d) {
  int n = 0;
  for (const cJSON *call = calls->child; call; call = call->next, n++) {
    int rc = route_one(c, tools, calls, call, turn, round, t->next_seq++, d);
    if (rc != DEXA_OK) return rc;
  }
  char join[96];
  snprintf(join, sizeof join, "{\"turn\":%lld,\"round\":%lld,\"calls\":%d}", (long long)turn,
           (long long)round, n);
  dexa__decision_next(d, STEP_RESUME_TURN, join, strlen(join));
  return d->b.oom ? DEXA_E_NOMEM : DEXA_OK;
}
