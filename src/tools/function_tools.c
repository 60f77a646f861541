/* Host function tools: a tool source whose tools are host callbacks (C
 * functions, cffi or N-API callbacks). Read-only once an agent uses it, so
 * worker threads list and call it without locks. */
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "iface/tool_source.h"
#include "util/json_span.h"

typedef struct function_tool {
  char *name;
  char *description;
  char *parameters;
  int effect;
  int approval;
  dexa_tool_fn fn;
  void *user_data;
} function_tool;

typedef struct function_tools {
  function_tool *tools;
  size_t count;
  size_t cap;
} function_tools;

static int list_tools(void *user_data, dexa_tool_list *list) {
  function_tools *ft = user_data;
  for (size_t i = 0; i < ft->count; i++) {
    const function_tool *t = &ft->tools[i];
    int rc = dexa_tool_list_add(list, t->name, t->description, t->parameters,
                                strlen(t->parameters), t->effect, t->approval);
    if (rc != DEXA_OK) return rc;
  }
  return DEXA_OK;
}

static int call_tool(void *user_data, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  function_tools *ft = user_data;
  for (size_t i = 0; i < ft->count; i++)
    if (strcmp(ft->tools[i].name, inv->name) == 0)
      return ft->tools[i].fn(ft->tools[i].user_data, inv, out);
  return dexa_tool_output_set_text(out, "unknown tool", 12, 1);
}

static void destroy(void *user_data) {
  function_tools *ft = user_data;
  for (size_t i = 0; i < ft->count; i++) {
    free(ft->tools[i].name);
    free(ft->tools[i].description);
    free(ft->tools[i].parameters);
  }
  free(ft->tools);
  free(ft);
}

DEXA_EXTERN int dexa_function_tools_new(dexa_tool_source **out, const char *name) {
  if (!out) return DEXA_E_INVALID_ARG;
  *out = NULL;
  function_tools *ft = calloc(1, sizeof *ft);
  if (!ft) return DEXA_E_NOMEM;
  dexa_tool_source_vtable vt;
  dexa_tool_source_vtable_init(&vt, sizeof vt);
  vt.list_tools = list_tools;
  vt.call_tool = call_tool;
  vt.destroy = destroy;
  int rc = dexa_tool_source_new(out, name, &vt, ft);
  if (rc != DEXA_OK) free(ft);
  return rc;
}

static int is_function_tools(const dexa_tool_source *s) { return s->vt.list_tools == list_tools; }

DEXA_EXTERN int dexa_function_tools_add(dexa_tool_source *source, const char *name,
                                        const char *description, const char *parameters_json,
                                        int effect, int approval, dexa_tool_fn fn,
                                        void *user_data) {
  if (!source || !is_function_tools(source) || !name || !fn) return DEXA_E_INVALID_ARG;
  if (atomic_load(&source->in_use)) return DEXA_E_BAD_STATE;
  /* Validate through a scratch list so the rules live in one place. */
  dexa_tool_list scratch;
  dexa__tool_list_init(&scratch);
  int rc = dexa_tool_list_add(&scratch, name, description, parameters_json,
                              parameters_json ? strlen(parameters_json) : 0, effect, approval);
  function_tools *ft = source->user_data;
  if (rc == DEXA_OK) {
    for (size_t i = 0; i < ft->count; i++)
      if (strcmp(ft->tools[i].name, name) == 0) rc = DEXA_E_ALREADY_EXISTS;
  }
  if (rc == DEXA_OK && ft->count == ft->cap) {
    size_t cap = ft->cap ? ft->cap * 2 : 8;
    function_tool *p = realloc(ft->tools, cap * sizeof *p);
    if (!p) rc = DEXA_E_NOMEM;
    else {
      ft->tools = p;
      ft->cap = cap;
    }
  }
  if (rc == DEXA_OK) {
    dexa__tool_def *d = &scratch.defs[0];
    function_tool *t = &ft->tools[ft->count++];
    t->name = d->name;
    t->description = d->description;
    t->parameters = d->parameters;
    t->effect = effect;
    t->approval = approval;
    t->fn = fn;
    t->user_data = user_data;
    scratch.count = 0; /* the strings now belong to the tool */
  }
  dexa__tool_list_free(&scratch);
  return rc;
}
