/* The segment's conversation with the CLI: its stream-json output (system,
 * assistant, user, result, transcript_mirror) and its control requests
 * (mcp_message for the "dex" server's tools, can_use_tool for each tool
 * call). Every call of a host tool is asked about (can_use_tool): a read
 * is allowed and runs inside through dexa_model_request_call_tool; the
 * first call that must leave is recorded and denied with an interrupt,
 * which ends the CLI's turn and so the segment; the next segment resumes
 * the session at that assistant message and hands the CLI the recorded
 * result, so the call never runs twice. A subagent's call that must leave
 * is denied (a subagent cannot be resumed mid-run). */
#include "harness/cc_segment.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dexagents/errors.h"

#define POLL_MS 100            /* how often a stop or the deadline is seen */
#define AFTER_RESULT_MS 30000  /* a CLI done with its turn exits in that time */

static const char *const subagent_denial =
    "This tool changes things outside the conversation, so it cannot run inside a subagent. "
    "Do not retry it here: finish the subagent's work and report back; the main conversation "
    "must call it.";
static const char *const leave_denial =
    "Paused: this call runs as its own durable step; its result comes next.";
static const char *const second_denial =
    "Not run: one call that changes things runs per step. Call it again if it is still needed.";

int64_t dexa__cc_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *str(const cJSON *o, const char *name) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
}

int dexa__cc_send(dexa__cc_segment *s, cJSON *doc) {
  if (!doc) return DEXA_E_NOMEM;
  char *text = cJSON_PrintUnformatted(doc);
  cJSON_Delete(doc);
  if (!text) return DEXA_E_NOMEM;
  size_t n = strlen(text);
  text[n] = '\n'; /* replaces the NUL: write n + 1 bytes */
  int rc = dexa__cc_proc_write(&s->proc, text, n + 1);
  free(text);
  return rc;
}

/* {"type":"control_response","response":{"subtype":"success",...}} */
static int respond(dexa__cc_segment *s, const char *request_id, cJSON *response) {
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddStringToObject(doc, "type", "control_response");
  cJSON *r = cJSON_AddObjectToObject(doc, "response");
  cJSON_AddStringToObject(r, "subtype", response ? "success" : "error");
  cJSON_AddStringToObject(r, "request_id", request_id ? request_id : "");
  if (response)
    cJSON_AddItemToObject(r, "response", response);
  else
    cJSON_AddStringToObject(r, "error", "not supported by this host");
  return dexa__cc_send(s, doc);
}

/* ---- tools/call: a read inside the segment ---- */

static cJSON *run_read(dexa__cc_segment *s, const cJSON *message) {
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(message, "id");
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(message, "params");
  const char *name = str(params, "name");
  const cJSON *tool = dexa__cc_tool_find(&s->tools, name);
  if (!tool || !dexa__cc_tool_runs_inside(tool))
    return dexa__cc_mcp_text_result(id, "This tool does not run here.", 1);
  char call_id[128];
  const char *use_id = str(cJSON_GetObjectItemCaseSensitive(params, "_meta"), "claudecode/toolUseId");
  snprintf(call_id, sizeof call_id, "%s", use_id ? use_id : "cc-read");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
  char *args_json = cJSON_IsObject(args) ? cJSON_PrintUnformatted(args) : strdup("{}");
  char *out = NULL;
  size_t out_len = 0;
  int rc = args_json ? dexa_model_request_call_tool(s->req, call_id, name, args_json,
                                                    strlen(args_json), &out, &out_len)
                     : DEXA_E_NOMEM;
  free(args_json);
  cJSON *doc = out ? cJSON_ParseWithLength(out, out_len) : NULL;
  dexa_free(out);
  const char *status = str(doc, "status");
  cJSON *r = rc == DEXA_OK
                 ? dexa__cc_mcp_text_result(id, str(doc, "output"), !status || strcmp(status, "ok"))
                 : dexa__cc_mcp_text_result(id, dexa_strerror(rc), 1);
  cJSON_Delete(doc);
  return r;
}

static int on_mcp_message(dexa__cc_segment *s, const char *request_id, const cJSON *req) {
  const cJSON *message = cJSON_GetObjectItemCaseSensitive(req, "message");
  const char *method = str(message, "method");
  const char *server = str(req, "server_name");
  if (!server || strcmp(server, DEXA__CC_SERVER) != 0) return respond(s, request_id, NULL);
  cJSON *answer = method && strcmp(method, "tools/call") == 0
                      ? run_read(s, message)
                      : dexa__cc_mcp_answer(&s->tools, message);
  cJSON *response = cJSON_CreateObject();
  cJSON_AddItemToObject(response, "mcp_response", answer);
  return respond(s, request_id, response);
}

/* ---- can_use_tool: allow, leave the segment, or deny ---- */

static cJSON *allow(const cJSON *input, const char *use_id) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "behavior", "allow");
  cJSON_AddItemToObject(r, "updatedInput",
                        input ? cJSON_Duplicate(input, 1) : cJSON_CreateObject());
  if (use_id) cJSON_AddStringToObject(r, "toolUseID", use_id);
  return r;
}

static cJSON *deny(const char *message, int interrupt, const char *use_id) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "behavior", "deny");
  cJSON_AddStringToObject(r, "message", message);
  if (interrupt) cJSON_AddBoolToObject(r, "interrupt", 1);
  if (use_id) cJSON_AddStringToObject(r, "toolUseID", use_id);
  return r;
}

static int record_leave(dexa__cc_segment *s, const char *use_id, const char *name,
                        const cJSON *input) {
  s->leave_id = strdup(use_id);
  s->leave_name = strdup(name);
  s->leave_args = input && cJSON_IsObject(input) ? cJSON_Duplicate(input, 1) : cJSON_CreateObject();
  return s->leave_id && s->leave_name && s->leave_args ? DEXA_OK : DEXA_E_NOMEM;
}

static int on_can_use_tool(dexa__cc_segment *s, const char *request_id, const cJSON *req) {
  const char *cli_name = str(req, "tool_name"), *use_id = str(req, "tool_use_id");
  const cJSON *input = cJSON_GetObjectItemCaseSensitive(req, "input");
  const char *name = dexa__cc_tool_dex_name(cli_name);
  const cJSON *tool = name ? dexa__cc_tool_find(&s->tools, name) : NULL;
  /* The CLI's own tools that the host allowed never ask. */
  if (!tool)
    return respond(s, request_id, deny("This tool is not allowed by the host.", 0, use_id));
  if (dexa__cc_tool_runs_inside(tool)) {
    if (use_id) cJSON_AddItemToObject(s->allowed, use_id, cJSON_CreateTrue());
    return respond(s, request_id, allow(input, use_id));
  }
  if (str(req, "agent_id")) return respond(s, request_id, deny(subagent_denial, 0, use_id));
  if (s->leave_id || !use_id) return respond(s, request_id, deny(second_denial, 0, use_id));
  int rc = record_leave(s, use_id, name, input);
  return rc == DEXA_OK ? respond(s, request_id, deny(leave_denial, 1, use_id)) : rc;
}

static int on_control_request(dexa__cc_segment *s, const cJSON *line) {
  const char *request_id = str(line, "request_id");
  const cJSON *req = cJSON_GetObjectItemCaseSensitive(line, "request");
  const char *subtype = str(req, "subtype");
  if (subtype && strcmp(subtype, "mcp_message") == 0) return on_mcp_message(s, request_id, req);
  if (subtype && strcmp(subtype, "can_use_tool") == 0) return on_can_use_tool(s, request_id, req);
  return respond(s, request_id, NULL);
}

/* ---- the CLI's messages ---- */

static int main_chain(const cJSON *line) {
  const cJSON *parent = cJSON_GetObjectItemCaseSensitive(line, "parent_tool_use_id");
  return !parent || cJSON_IsNull(parent);
}

static int keep_uuid(dexa__cc_segment *s, const cJSON *line) {
  const char *uuid = str(line, "uuid");
  if (!uuid) return DEXA_OK;
  free(s->last_uuid);
  s->last_uuid = strdup(uuid);
  return s->last_uuid ? DEXA_OK : DEXA_E_NOMEM;
}

static void emit_text(dexa__cc_segment *s, const cJSON *message) {
  const cJSON *block;
  cJSON_ArrayForEach(block, cJSON_GetObjectItemCaseSensitive(message, "content")) {
    const char *type = str(block, "type"), *text = str(block, "text");
    if (type && strcmp(type, "text") == 0 && text && *text)
      dexa_model_request_emit_delta(s->req, DEXA_DELTA_TEXT, text, strlen(text));
  }
}

static int on_assistant(dexa__cc_segment *s, const cJSON *line) {
  if (!main_chain(line)) return DEXA_OK;
  const cJSON *message = cJSON_GetObjectItemCaseSensitive(line, "message");
  if (!cJSON_IsObject(message)) return DEXA_OK;
  emit_text(s, message);
  cJSON *item = cJSON_CreateObject();
  cJSON_AddStringToObject(item, "uuid", str(line, "uuid") ? str(line, "uuid") : "");
  cJSON_AddItemToObject(item, "message", cJSON_Duplicate(message, 1));
  cJSON_AddItemToArray(s->items, item);
  return keep_uuid(s, line);
}

/* Tool results of the main conversation, kept for a resume at the
 * assistant message that asked for them: those of calls that ran (a read
 * we allowed, a CLI tool that succeeded), not the refusals the CLI writes
 * for the calls an interrupt cut off. */
static int on_user(dexa__cc_segment *s, const cJSON *line) {
  if (!main_chain(line)) return DEXA_OK;
  const cJSON *block;
  cJSON_ArrayForEach(block, cJSON_GetObjectItemCaseSensitive(
                                cJSON_GetObjectItemCaseSensitive(line, "message"), "content")) {
    const char *type = str(block, "type"), *id = str(block, "tool_use_id");
    if (!type || strcmp(type, "tool_result") != 0 || !id) continue;
    int is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(block, "is_error"));
    if (is_error && !cJSON_GetObjectItemCaseSensitive(s->allowed, id)) continue;
    cJSON *r = cJSON_CreateObject();
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(block, "content");
    cJSON_AddItemToObject(r, "content", content ? cJSON_Duplicate(content, 1) : cJSON_CreateString(""));
    cJSON_AddBoolToObject(r, "is_error", is_error);
    cJSON_DeleteItemFromObjectCaseSensitive(s->results, id);
    cJSON_AddItemToObject(s->results, id, r);
  }
  return keep_uuid(s, line);
}

static int on_result(dexa__cc_segment *s, const cJSON *line) {
  s->result_seen = 1;
  s->result_is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(line, "is_error"));
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(line, "api_error_status");
  s->api_status = cJSON_IsNumber(status) ? status->valueint : 0;
  const char *text = str(line, "result");
  const cJSON *errors = cJSON_GetObjectItemCaseSensitive(line, "errors");
  if (!text && cJSON_GetArraySize(errors) > 0) text = cJSON_GetStringValue(cJSON_GetArrayItem(errors, 0));
  if (!text) text = str(line, "subtype");
  snprintf(s->result_text, sizeof s->result_text, "%s", text ? text : "");
  const cJSON *usage = cJSON_GetObjectItemCaseSensitive(line, "usage");
  const cJSON *in = cJSON_GetObjectItemCaseSensitive(usage, "input_tokens");
  const cJSON *out = cJSON_GetObjectItemCaseSensitive(usage, "output_tokens");
  s->input_tokens += cJSON_IsNumber(in) ? (int64_t)in->valuedouble : 0;
  s->output_tokens += cJSON_IsNumber(out) ? (int64_t)out->valuedouble : 0;
  /* The turn is over: without input the CLI writes its last transcript
   * lines and exits. */
  dexa__cc_proc_close_input(&s->proc);
  return DEXA_OK;
}

/* Lines of the main session file; a subagent's own file is not needed to
 * resume the main conversation. */
static int on_mirror(dexa__cc_segment *s, const cJSON *line) {
  const char *path = str(line, "filePath");
  if (!path || !s->sid) return DEXA_OK;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(s->sid);
  if (strncmp(base, s->sid, n) != 0 || strcmp(base + n, ".jsonl") != 0) return DEXA_OK;
  const cJSON *entry;
  cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(line, "entries")) {
    char *text = cJSON_PrintUnformatted(entry);
    if (!text) return DEXA_E_NOMEM;
    dexa__buf_puts(&s->jsonl, text);
    dexa__buf_putc(&s->jsonl, '\n');
    free(text);
  }
  return s->jsonl.oom ? DEXA_E_NOMEM : DEXA_OK;
}

static int on_system(dexa__cc_segment *s, const cJSON *line) {
  const char *sid = str(line, "session_id");
  if (!sid || s->sid) return DEXA_OK;
  s->sid = strdup(sid);
  return s->sid ? DEXA_OK : DEXA_E_NOMEM;
}

static int on_line(dexa__cc_segment *s, const char *text, size_t len) {
  cJSON *line = cJSON_ParseWithLength(text, len);
  const char *type = str(line, "type");
  int rc = DEXA_OK;
  if (!type)
    rc = DEXA_OK; /* not ours to judge: the CLI may print other lines */
  else if (strcmp(type, "control_request") == 0)
    rc = on_control_request(s, line);
  else if (strcmp(type, "assistant") == 0)
    rc = on_assistant(s, line);
  else if (strcmp(type, "user") == 0)
    rc = on_user(s, line);
  else if (strcmp(type, "result") == 0)
    rc = on_result(s, line);
  else if (strcmp(type, "transcript_mirror") == 0)
    rc = on_mirror(s, line);
  else if (strcmp(type, "system") == 0)
    rc = on_system(s, line);
  cJSON_Delete(line);
  return rc;
}

int dexa__cc_segment_pump(dexa__cc_segment *s, int64_t deadline) {
  int rc = DEXA_OK;
  int64_t after_result = 0;
  for (;;) {
    if (dexa_model_request_cancelled(s->req)) {
      s->stopped = 1;
      break;
    }
    int64_t now = dexa__cc_now_ms();
    if (now >= deadline) {
      s->timed_out = 1;
      break;
    }
    if (s->result_seen && !after_result) after_result = now + AFTER_RESULT_MS;
    if (after_result && now >= after_result) break; /* it lingers: ended below */
    const char *text;
    size_t len;
    int r = dexa__cc_proc_read_line(&s->proc, POLL_MS, &text, &len);
    if (r == 0) continue;
    if (r < 0) {
      if (r == DEXA_E_TOO_LARGE) {
        snprintf(s->err, sizeof s->err, "the Claude Code CLI sent a line over the size limit");
        rc = DEXA_E_TOO_LARGE;
      }
      break; /* the end of its output */
    }
    rc = on_line(s, text, len);
    if (rc != DEXA_OK) {
      snprintf(s->err, sizeof s->err, "talking to the Claude Code CLI: %s", dexa_strerror(rc));
      break;
    }
  }
  /* A stop or a timeout ends it at once; a finished CLI has a moment to
   * exit by itself. */
  int64_t wait = s->stopped || s->timed_out || rc != DEXA_OK ? 0 : 5000;
  dexa__cc_proc_stop(&s->proc, wait, s->o->stop_grace_ms);
  return rc;
}
