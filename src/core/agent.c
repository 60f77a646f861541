/* The agent definition: defaults, validation and the immutable agent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "util/struct_size.h"

/* Size of the 1.0 struct: the smallest struct_size accepted. */
#define AGENT_DEF_V1_SIZE sizeof(dexa_agent_def)

DEXA_EXTERN int dexa_agent_def_init(dexa_agent_def *def, size_t struct_size) {
  if (!def) return DEXA_E_INVALID_ARG;
  if (struct_size < AGENT_DEF_V1_SIZE) return DEXA_E_STRUCT_SIZE;
  if (struct_size > DEXA__STRUCT_SIZE_MAX) return DEXA_E_STRUCT_SIZE;
  memset(def, 0, struct_size);
  /* The caller's size: members of a newer header stay zero unless set,
   * and dexa_agent_new refuses them once set. */
  def->struct_size = (uint32_t)struct_size;
  def->compaction_threshold_pct = 85;
  def->compaction_keep_pct = 10;
  def->retention_messages = 2000;
  def->run_model_max_attempts = 3;
  def->run_model_timeout_ms = 15 * 60 * 1000;
  def->tool_max_attempts = 5;
  def->tool_timeout_ms = 10 * 60 * 1000;
  def->max_state_bytes = (int64_t)64 << 20;
  def->max_message_bytes = (int64_t)1 << 20;
  return DEXA_OK;
}

static void set_err(char *errmsg, size_t n, const char *msg) {
  if (errmsg && n) snprintf(errmsg, n, "%s", msg);
}

/* Returns NULL when def is acceptable, else why not. */
/* 1 when every fallback a model names is one of the agent's models. */
static int fallbacks_known(const dexa_agent_def *def) {
  for (size_t i = 0; i < def->model_count; i++)
    for (size_t f = 0; f < def->models[i]->fallback_count; f++) {
      int found = 0;
      for (size_t j = 0; j < def->model_count; j++)
        found |= strcmp(def->models[i]->fallbacks[f], def->models[j]->name) == 0;
      if (!found) return 0;
    }
  return 1;
}

static const char *def_problem(const dexa_agent_def *def) {
  if (!def->models || def->model_count == 0) return "an agent needs at least one model";
  for (size_t i = 0; i < def->model_count; i++) {
    if (!def->models[i]) return "a model handle is NULL";
    for (size_t j = 0; j < i; j++)
      if (strcmp(def->models[i]->name, def->models[j]->name) == 0)
        return "two models have the same name";
  }
  if (!fallbacks_known(def)) return "a model names a fallback that is not one of the agent's models";
  if (def->tool_source_count && !def->tool_sources) return "tool_sources is NULL";
  for (size_t i = 0; i < def->tool_source_count; i++) {
    if (!def->tool_sources[i]) return "a tool source handle is NULL";
    for (size_t j = 0; j < i; j++)
      if (strcmp(def->tool_sources[i]->name, def->tool_sources[j]->name) == 0)
        return "two tool sources have the same name";
  }
  if (def->builtin_tools & ~(uint32_t)DEXA_BUILTIN_ALL) return "unknown built-in tool flag";
  if (def->context_window_tokens < 0) return "context_window_tokens is negative";
  if (def->compaction_threshold_pct < 1 || def->compaction_threshold_pct > 100)
    return "compaction_threshold_pct must be 1..100";
  if (def->compaction_keep_pct < 0 || def->compaction_keep_pct >= def->compaction_threshold_pct)
    return "compaction_keep_pct must be 0..threshold-1";
  if (def->run_model_max_attempts < 1 || def->tool_max_attempts < 1)
    return "attempts must be at least 1";
  if (def->run_model_timeout_ms < 1 || def->tool_timeout_ms < 1) return "timeouts must be positive";
  if (def->max_state_bytes < 1024 || def->max_message_bytes < 1 ||
      def->max_message_bytes > def->max_state_bytes)
    return "bad state or message limit";
  if (def->retention_messages < 0) return "retention_messages is negative";
  return NULL;
}

DEXA_EXTERN int dexa_agent_new(dexa_agent **out, const dexa_agent_def *def, char *errmsg,
                               size_t errmsg_size) {
  if (!out) return DEXA_E_INVALID_ARG;
  *out = NULL;
  if (!def) {
    set_err(errmsg, errmsg_size, "def is NULL");
    return DEXA_E_INVALID_ARG;
  }
  if (def->struct_size < AGENT_DEF_V1_SIZE) {
    set_err(errmsg, errmsg_size, "def->struct_size is smaller than dexa_agent_def 1.0");
    return DEXA_E_STRUCT_SIZE;
  }
  if (!dexa__struct_tail_ok(def, def->struct_size, sizeof *def)) {
    set_err(errmsg, errmsg_size,
            "def->struct_size is larger than this library's dexa_agent_def and members it "
            "does not know are set");
    return DEXA_E_STRUCT_SIZE;
  }
  const char *problem = def_problem(def);
  if (problem) {
    set_err(errmsg, errmsg_size, problem);
    return DEXA_E_INVALID_ARG;
  }
  dexa_agent *a = calloc(1, sizeof *a);
  if (!a) goto nomem;
  /* Only what the caller's structure holds: an older caller's is shorter. */
  memcpy(&a->def, def, def->struct_size < sizeof *def ? def->struct_size : sizeof *def);
  a->def.models = NULL;
  a->def.tool_sources = NULL;
  a->flow_type = strdup(def->flow_type && *def->flow_type ? def->flow_type
                                                          : DEXA_FLOW_TYPE_DEFAULT);
  a->instructions = strdup(def->instructions ? def->instructions : "");
  a->models = calloc(def->model_count, sizeof *a->models);
  a->sources = calloc(def->tool_source_count + 1, sizeof *a->sources);
  if (!a->flow_type || !a->instructions || !a->models || !a->sources) goto nomem;
  for (size_t i = 0; i < def->model_count; i++) a->models[a->model_count++] = dexa__model_ref(def->models[i]);
  for (size_t i = 0; i < def->tool_source_count; i++) {
    dexa_tool_source *s = def->tool_sources[i];
    atomic_store(&s->in_use, 1);
    a->sources[a->source_count++] = dexa__tool_source_ref(s);
  }
  *out = a;
  return DEXA_OK;
nomem:
  dexa_agent_free(a);
  set_err(errmsg, errmsg_size, "out of memory");
  return DEXA_E_NOMEM;
}

DEXA_EXTERN void dexa_agent_free(dexa_agent *agent) {
  if (!agent) return;
  for (size_t i = 0; i < agent->model_count; i++) dexa__model_unref(agent->models[i]);
  for (size_t i = 0; i < agent->source_count; i++) dexa__tool_source_unref(agent->sources[i]);
  free(agent->models);
  free(agent->sources);
  free(agent->flow_type);
  free(agent->instructions);
  free(agent);
}

DEXA_EXTERN const char *dexa_agent_flow_type(const dexa_agent *agent) {
  return agent ? agent->flow_type : NULL;
}
