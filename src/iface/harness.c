/* Harness handles and the harness parts of a segment's request and reply. */
#include "iface/harness.h"

#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "dexagents/tools.h"
#include "util/json_span.h"

#include <cjson/cJSON.h>

#define KNOWN_FLAGS ((uint32_t)(DEXA_HARNESS_OWNS_TRANSCRIPT | DEXA_HARNESS_RUNS_READS))

DEXA_EXTERN int dexa_harness_vtable_init(dexa_harness_vtable *vtable, size_t struct_size) {
  if (!vtable) return DEXA_E_INVALID_ARG;
  if (struct_size < sizeof(dexa_harness_vtable)) return DEXA_E_STRUCT_SIZE;
  memset(vtable, 0, struct_size);
  vtable->struct_size = (uint32_t)sizeof(dexa_harness_vtable);
  return DEXA_OK;
}

/* The model generate of a harness without summarize: never called by
 * RunModel (compaction is off for it), refused if a stale decision asks. */
static int no_summary(void *user_data, const dexa_model_request *request, dexa_model_reply *reply) {
  dexa_model_reply_set_error(reply, "this harness does not summarize for compaction", 0);
  return DEXA_E_MODEL;
}

DEXA_EXTERN int dexa_harness_new(dexa_model **out, const char *name,
                                 const dexa_harness_vtable *vtable, void *user_data) {
  if (!out) return DEXA_E_INVALID_ARG;
  *out = NULL;
  if (!name || !*name || !vtable || !vtable->run_segment) return DEXA_E_INVALID_ARG;
  if (vtable->struct_size < sizeof(dexa_harness_vtable)) return DEXA_E_STRUCT_SIZE;
  if (vtable->flags & ~KNOWN_FLAGS) return DEXA_E_INVALID_ARG;
  dexa_harness_vtable *copy = malloc(sizeof *copy);
  if (!copy) return DEXA_E_NOMEM;
  *copy = *vtable;
  copy->struct_size = (uint32_t)sizeof *copy;
  /* A harness is a model whose generate is its summarize (compaction calls
   * generate); RunModel calls run_segment instead. */
  dexa_model_vtable mvt;
  dexa_model_vtable_init(&mvt, sizeof mvt);
  mvt.generate = vtable->summarize ? vtable->summarize : no_summary;
  mvt.destroy = vtable->destroy;
  int rc = dexa_model_new(out, name, &mvt, user_data);
  if (rc != DEXA_OK) {
    free(copy);
    return rc;
  }
  (*out)->harness = copy;
  return DEXA_OK;
}

/* ---- request ---- */

static const dexa__harness_request *harness_of(const dexa_model_request *request) {
  return request ? request->harness : NULL;
}

DEXA_EXTERN int dexa_model_request_harness_state(const dexa_model_request *request,
                                                 const char **json, size_t *len) {
  if (!request || !json || !len) return DEXA_E_INVALID_ARG;
  const dexa__harness_request *h = harness_of(request);
  *json = h ? h->state : NULL;
  *len = h && h->state ? h->state_len : 0;
  return DEXA_OK;
}

DEXA_EXTERN size_t dexa_model_request_harness_entry_count(const dexa_model_request *request) {
  const dexa__harness_request *h = harness_of(request);
  return h ? h->entry_count : 0;
}

DEXA_EXTERN int dexa_model_request_harness_entry_at(const dexa_model_request *request, size_t index,
                                                    const char **json, size_t *len) {
  const dexa__harness_request *h = harness_of(request);
  if (!h || !json || !len || index >= h->entry_count) return DEXA_E_INVALID_ARG;
  *json = h->entries + h->spans[index].off;
  *len = h->spans[index].len;
  return DEXA_OK;
}

DEXA_EXTERN size_t dexa_model_request_first_new_message(const dexa_model_request *request) {
  const dexa__harness_request *h = harness_of(request);
  return h ? h->first_new : 0;
}

static int is_object(const char *s, size_t n) {
  const char *p = s;
  size_t l = n;
  dexa__json_trim(&p, &l);
  return l > 0 && p[0] == '{' && dexa__json_validate(p, l) == 0;
}

DEXA_EXTERN int dexa_model_request_call_tool(const dexa_model_request *request, const char *call_id,
                                             const char *name, const char *arguments_json,
                                             size_t arguments_len, char **out, size_t *out_len) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  const dexa__harness_request *h = harness_of(request);
  if (!h || !h->call_tool || !out || !call_id || !*call_id || !name || !*name)
    return DEXA_E_INVALID_ARG;
  if (!arguments_json) {
    arguments_json = "{}";
    arguments_len = 2;
  }
  if (!is_object(arguments_json, arguments_len)) return DEXA_E_INVALID_JSON;
  if (!(h->flags & DEXA_HARNESS_RUNS_READS)) return DEXA_E_BAD_STATE;
  return h->call_tool(h->call_ctx, call_id, name, arguments_json, arguments_len, out, out_len);
}

/* ---- reply ---- */

void dexa__harness_reply_init(dexa__harness_reply *r) { memset(r, 0, sizeof *r); }

void dexa__harness_reply_free(dexa__harness_reply *r) {
  dexa__buf_free(&r->state);
  dexa__buf_free(&r->entries);
  free(r->spans);
  for (size_t i = 0; i < r->policy_count; i++) free(r->policies[i].call_id);
  free(r->policies);
  dexa__buf_free(&r->ran);
  free(r->ran_spans);
  memset(r, 0, sizeof *r);
}

DEXA_EXTERN int dexa_model_reply_set_harness_state(dexa_model_reply *reply, const char *json,
                                                   size_t len) {
  if (!reply || !reply->harness || (!json && len)) return DEXA_E_INVALID_ARG;
  if (json && dexa__json_validate(json, len) != 0) return DEXA_E_INVALID_JSON;
  dexa__harness_reply *h = reply->harness;
  dexa__buf_reset(&h->state);
  dexa__buf_reset(&h->entries);
  h->entry_count = 0;
  h->state_set = 1;
  h->has_state = json != NULL;
  if (json) dexa__buf_append(&h->state, json, len);
  return h->state.oom ? DEXA_E_NOMEM : DEXA_OK;
}

DEXA_EXTERN int dexa_model_reply_add_harness_entry(dexa_model_reply *reply, const char *json,
                                                   size_t len) {
  if (!reply || !reply->harness || !json) return DEXA_E_INVALID_ARG;
  if (dexa__json_validate(json, len) != 0) return DEXA_E_INVALID_JSON;
  dexa__harness_reply *h = reply->harness;
  if (dexa__grow_array(&h->spans, h->entry_count, &h->entry_cap, sizeof *h->spans) != 0)
    return DEXA_E_NOMEM;
  size_t off = h->entries.len;
  dexa__buf_append(&h->entries, json, len);
  if (h->entries.oom) return DEXA_E_NOMEM;
  h->spans[h->entry_count].off = off;
  h->spans[h->entry_count].len = len;
  h->entry_count++;
  return DEXA_OK;
}

/* 1 when the reply has a tool call call_id: each call in an item's list is
 * an object that starts with its "call_id" member, written by
 * dexa_model_reply_add_tool_call. */
static int has_call(const dexa_model_reply *reply, const char *call_id) {
  dexa__buf needle;
  dexa__buf_init(&needle);
  dexa__buf_puts(&needle, "{\"call_id\":");
  dexa__buf_json_cstr(&needle, call_id);
  dexa__buf_putc(&needle, ',');
  int found = 0;
  for (size_t i = 0; !needle.oom && !found && i < reply->item_count; i++) {
    const dexa__buf *b = &reply->items[i].tool_calls;
    found = b->len && memmem(b->data, b->len, needle.data, needle.len) != NULL;
  }
  dexa__buf_free(&needle);
  return found;
}

const dexa__tool_policy *dexa__harness_reply_policy(const dexa__harness_reply *r,
                                                    const char *call_id, size_t call_len) {
  for (size_t i = 0; r && i < r->policy_count; i++)
    if (strlen(r->policies[i].call_id) == call_len &&
        memcmp(r->policies[i].call_id, call_id, call_len) == 0)
      return &r->policies[i];
  return NULL;
}

DEXA_EXTERN int dexa_model_reply_set_tool_policy(dexa_model_reply *reply, const char *call_id,
                                                 int effect, int approval) {
  if (!reply || !reply->harness || !call_id || !*call_id) return DEXA_E_INVALID_ARG;
  if (effect < DEXA_TOOL_EFFECT_DEFAULT || effect > DEXA_TOOL_WRITE) return DEXA_E_INVALID_ARG;
  if (approval < DEXA_APPROVAL_DEFAULT || approval > DEXA_APPROVAL_REQUIRED)
    return DEXA_E_INVALID_ARG;
  if (!has_call(reply, call_id)) return DEXA_E_NOT_FOUND;
  dexa__harness_reply *h = reply->harness;
  dexa__tool_policy *p =
      (dexa__tool_policy *)dexa__harness_reply_policy(h, call_id, strlen(call_id));
  if (!p) {
    char *id = strdup(call_id);
    if (!id || dexa__grow_array(&h->policies, h->policy_count, &h->policy_cap, sizeof *p) != 0) {
      free(id);
      return DEXA_E_NOMEM;
    }
    p = &h->policies[h->policy_count++];
    p->call_id = id;
  }
  p->effect = effect;
  p->approval = approval;
  return DEXA_OK;
}

/* The most output a framework's segment_tool_call event keeps, as for a
 * read run inside the segment. */
#define RAN_OUTPUT_MAX 16384

static int nonempty_string(const cJSON *v) {
  return cJSON_IsString(v) && v->valuestring[0] != '\0';
}

DEXA_EXTERN int dexa_model_reply_add_framework_tool_call(dexa_model_reply *reply,
                                                         const char *json, size_t len) {
  if (!reply || !reply->harness || !json) return DEXA_E_INVALID_ARG;
  if (dexa__json_validate(json, len) != 0) return DEXA_E_INVALID_JSON;
  cJSON *doc = cJSON_ParseWithLength(json, len);
  if (!doc) return DEXA_E_NOMEM;
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(doc, "call_id");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(doc, "name");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(doc, "arguments");
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(doc, "status");
  const cJSON *output = cJSON_GetObjectItemCaseSensitive(doc, "output");
  const char *st = status ? cJSON_GetStringValue(status) : "ok";
  int ok = cJSON_IsObject(doc) && nonempty_string(id) && nonempty_string(name) &&
           (!output || cJSON_IsString(output) || cJSON_IsNull(output)) && st &&
           (!strcmp(st, "ok") || !strcmp(st, "error") || !strcmp(st, "cancelled"));
  if (!ok) {
    cJSON_Delete(doc);
    return DEXA_E_INVALID_ARG;
  }
  dexa__harness_reply *h = reply->harness;
  if (dexa__grow_array(&h->ran_spans, h->ran_count, &h->ran_cap, sizeof *h->ran_spans) != 0) {
    cJSON_Delete(doc);
    return DEXA_E_NOMEM;
  }
  size_t off = h->ran.len;
  dexa__buf *b = &h->ran;
  dexa__buf_puts(b, ",\"call_id\":");
  dexa__buf_json_cstr(b, id->valuestring);
  dexa__buf_puts(b, ",\"name\":");
  dexa__buf_json_cstr(b, name->valuestring);
  dexa__buf_puts(b, ",\"arguments\":");
  char *a = args ? cJSON_PrintUnformatted(args) : NULL;
  dexa__buf_puts(b, a ? a : "{}");
  free(a);
  dexa__buf_puts(b, ",\"status\":");
  dexa__buf_json_cstr(b, st);
  const char *text = cJSON_IsString(output) ? output->valuestring : "";
  size_t tl = strlen(text), shown = tl < RAN_OUTPUT_MAX ? tl : RAN_OUTPUT_MAX;
  dexa__buf_puts(b, ",\"output\":");
  dexa__buf_json_str(b, text, shown);
  if (shown < tl) dexa__buf_puts(b, ",\"output_truncated\":true");
  dexa__buf_puts(b, ",\"ran_by\":\"framework\"");
  cJSON_Delete(doc);
  if (b->oom) return DEXA_E_NOMEM;
  h->ran_spans[h->ran_count].off = off;
  h->ran_spans[h->ran_count].len = b->len - off;
  h->ran_count++;
  return DEXA_OK;
}
