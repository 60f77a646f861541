/* The tools offered to one model call: built-in tools, then every tool
 * source's. A source that cannot list its tools is left out of this call
 * only; the next model call asks it again. A planning turn is offered
 * write_todos alone. */
#include <stdint.h>

#include "core/core.h"

static const char ask_user_schema[] =
    "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\",\"description\":"
    "\"The question\"},\"choices\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
    "\"minItems\":2,\"maxItems\":8,\"description\":\"Optional answers to pick from\"}},"
    "\"required\":[\"prompt\"]}";
static const char durable_wait_schema[] =
    "{\"type\":\"object\",\"properties\":{\"seconds\":{\"type\":\"integer\",\"minimum\":1},"
    "\"reason\":{\"type\":\"string\"}},\"required\":[\"seconds\"]}";
static const char write_todos_schema[] =
    "{\"type\":\"object\",\"properties\":{\"todos\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"object\",\"properties\":{\"content\":{\"type\":\"string\"},\"status\":{\"type\":"
    "\"string\",\"enum\":[\"pending\",\"in_progress\",\"completed\"]}},\"required\":"
    "[\"content\",\"status\"]}}},\"required\":[\"todos\"]}";

static int add_builtin(dexa_tool_list *list, const char *name, const char *description,
                       const char *schema, size_t schema_len) {
  list->current_source = DEXA__BUILTIN_SOURCE;
  return dexa_tool_list_add(list, name, description, schema, schema_len, DEXA_TOOL_READ,
                            DEXA_APPROVAL_NONE);
}

static int add_builtins(const dexa_agent *a, dexa_tool_list *list, int planning) {
  uint32_t b = a->def.builtin_tools;
  int rc = DEXA_OK;
  if ((b & DEXA_BUILTIN_WRITE_TODOS) || planning)
    rc = add_builtin(list, TOOL_WRITE_TODOS,
                     "Replace the plan: the whole list of tasks with their status.",
                     write_todos_schema, sizeof write_todos_schema - 1);
  if (planning) return rc;
  if (rc == DEXA_OK && (b & DEXA_BUILTIN_ASK_USER))
    rc = add_builtin(list, TOOL_ASK_USER,
                     "Ask the user a question and wait for the answer (text or one of choices).",
                     ask_user_schema, sizeof ask_user_schema - 1);
  if (rc == DEXA_OK && (b & DEXA_BUILTIN_DURABLE_WAIT))
    rc = add_builtin(list, TOOL_DURABLE_WAIT,
                     "Wait durably for a number of seconds before going on (survives restarts).",
                     durable_wait_schema, sizeof durable_wait_schema - 1);
  return rc;
}

int dexa__tool_catalog(dexa__ctx *c, dexa_tool_list *list, int planning) {
  const dexa_agent *a = c->agent;
  int rc = add_builtins(a, list, planning);
  if (rc != DEXA_OK || planning) return rc;
  for (size_t i = 0; i < a->source_count; i++) {
    dexa_tool_source *s = a->sources[i];
    size_t mark = list->count;
    list->current_source = i;
    list->current_connector = s->connector;
    rc = s->vt.list_tools(s->user_data, list);
    if (rc == DEXA_E_NOMEM) return rc;
    if (rc != DEXA_OK) dexa__tool_list_truncate(list, mark);
  }
  return DEXA_OK;
}
