/* The in-process MCP server "dex": initialize, tools/list, ping. The tools
 * carry their effect as MCP annotations so the CLI runs reads in parallel
 * and shows writes as such; their policy is decided by the harness at
 * can_use_tool, not by the CLI. */
#include "harness/cc_tools.h"

#include <string.h>

#define MCP_PROTOCOL "2025-06-18"

const char *dexa__cc_tool_dex_name(const char *cli_name) {
  size_t n = strlen(DEXA__CC_PREFIX);
  return cli_name && strncmp(cli_name, DEXA__CC_PREFIX, n) == 0 && cli_name[n] ? cli_name + n
                                                                                : NULL;
}

static const char *str(const cJSON *o, const char *name) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
}

const cJSON *dexa__cc_tool_find(const dexa__cc_tools *t, const char *name) {
  const cJSON *tool;
  cJSON_ArrayForEach(tool, t->list) {
    const char *n = str(tool, "name");
    if (n && name && strcmp(n, name) == 0) return tool;
  }
  return NULL;
}

static int is_builtin(const char *name) {
  return strcmp(name, "ask_user") == 0 || strcmp(name, "durable_wait") == 0 ||
         strcmp(name, "write_todos") == 0;
}

/* A read that needs no approval runs inside the segment; a Connector's
 * tool never does, even a read: it leaves the segment for its own Step. */
int dexa__cc_tool_runs_inside(const cJSON *tool) {
  const char *name = str(tool, "name"), *effect = str(tool, "effect");
  return name && !is_builtin(name) && effect && strcmp(effect, "read") == 0 &&
         !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tool, "approval")) &&
         !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tool, "connector"));
}

static cJSON *tool_entry(const cJSON *tool) {
  cJSON *e = cJSON_CreateObject();
  const char *effect = str(tool, "effect");
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(tool, "parameters");
  cJSON_AddStringToObject(e, "name", str(tool, "name"));
  cJSON_AddStringToObject(e, "description", str(tool, "description") ? str(tool, "description") : "");
  cJSON_AddItemToObject(e, "inputSchema", cJSON_IsObject(params)
                                              ? cJSON_Duplicate(params, 1)
                                              : cJSON_Parse("{\"type\":\"object\"}"));
  cJSON *a = cJSON_AddObjectToObject(e, "annotations");
  int read = effect && strcmp(effect, "read") == 0;
  cJSON_AddBoolToObject(a, "readOnlyHint", read);
  cJSON_AddBoolToObject(a, "destructiveHint", effect && strcmp(effect, "write") == 0);
  cJSON_AddBoolToObject(a, "idempotentHint", read || (effect && strcmp(effect, "idempotent_write") == 0));
  return e;
}

static cJSON *reply_to(const cJSON *id) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "jsonrpc", "2.0");
  cJSON_AddItemToObject(r, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNumber(0));
  return r;
}

cJSON *dexa__cc_mcp_answer(const dexa__cc_tools *t, const cJSON *message) {
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(message, "id");
  const char *method = str(message, "method");
  cJSON *r = reply_to(id);
  if (!id || !method) { /* a notification (or a response): nothing to say */
    cJSON_AddObjectToObject(r, "result");
    return r;
  }
  if (strcmp(method, "initialize") == 0) {
    cJSON *res = cJSON_AddObjectToObject(r, "result");
    cJSON_AddStringToObject(res, "protocolVersion", MCP_PROTOCOL);
    cJSON_AddObjectToObject(cJSON_AddObjectToObject(res, "capabilities"), "tools");
    cJSON *info = cJSON_AddObjectToObject(res, "serverInfo");
    cJSON_AddStringToObject(info, "name", DEXA__CC_SERVER);
    cJSON_AddStringToObject(info, "version", "1");
  } else if (strcmp(method, "tools/list") == 0) {
    cJSON *tools = cJSON_AddArrayToObject(cJSON_AddObjectToObject(r, "result"), "tools");
    const cJSON *tool;
    cJSON_ArrayForEach(tool, t->list) if (str(tool, "name")) cJSON_AddItemToArray(tools, tool_entry(tool));
  } else if (strcmp(method, "ping") == 0) {
    cJSON_AddObjectToObject(r, "result");
  } else {
    cJSON *err = cJSON_AddObjectToObject(r, "error");
    cJSON_AddNumberToObject(err, "code", -32601);
    cJSON_AddStringToObject(err, "message", "method not found");
  }
  return r;
}

cJSON *dexa__cc_mcp_text_result(const cJSON *id, const char *text, int is_error) {
  cJSON *r = reply_to(id);
  cJSON *res = cJSON_AddObjectToObject(r, "result");
  cJSON *block = cJSON_CreateObject();
  cJSON_AddStringToObject(block, "type", "text");
  cJSON_AddStringToObject(block, "text", text ? text : "");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(res, "content"), block);
  if (is_error) cJSON_AddBoolToObject(res, "isError", 1);
  return r;
}
