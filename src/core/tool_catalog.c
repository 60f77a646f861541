/* The tools offered to one model call: built-in tools, then every tool
 * source's. A source that cannot list its tools is left out of this call
 * only; the next model call asks it again. */
#include "core/core.h"
#include "tools/tool_source.h"

int dexa__tool_catalog(dexa__ctx *c, dexa_tool_list *list) {
  const dexa_agent *a = c->agent;
  for (size_t i = 0; i < a->source_count; i++) {
    dexa_tool_source *s = a->sources[i];
    size_t mark = list->count;
    list->current_source = i;
    int rc = s->vt.list_tools(s->user_data, list);
    if (rc == DEXA_E_NOMEM) return rc;
    if (rc != DEXA_OK) dexa__tool_list_truncate(list, mark);
  }
  return DEXA_OK;
}
