/* Host function tools of the AI Agent example.
 *
 *   clock      READ: the current UTC time. Runs at once, in CallTool
 *              (retried with backoff on a transient error).
 *   send_note  WRITE with DEXA_APPROVAL_REQUIRED: "sends" {"to","text"} by
 *              adding it to this process's outbox. It waits in
 *              AwaitToolApproval until the page's Approve (or Reject), then
 *              runs once in CallSingleAttemptTool: a crash during it is
 *              recorded as an unknown outcome and never repeated. The
 *              idempotency key lets a real recipient drop a duplicate.
 *
 * Both run on worker threads; several calls may run at once. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ai_agent.h"

typedef struct outbox {
  pthread_mutex_t mu;
  long sent;
} outbox;

static outbox g_outbox = {PTHREAD_MUTEX_INITIALIZER, 0};

static int clock_tool(void *user_data, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  (void)user_data;
  (void)inv;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char text[64];
  size_t n = strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return dexa_tool_output_set_text(out, text, n, 0);
}

static int send_note_tool(void *user_data, const dexa_tool_invocation *inv,
                          dexa_tool_output *out) {
  outbox *box = user_data;
  const char *args;
  size_t len;
  dexa_tool_invocation_arguments(inv, &args, &len);
  cJSON *a = cJSON_ParseWithLength(args, len);
  const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "text"));
  const char *to = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "to"));
  char msg[512];
  int n, is_error = 0;
  if (!text) {
    n = snprintf(msg, sizeof msg, "send_note needs {\"text\":\"...\"}");
    is_error = 1;
  } else {
    pthread_mutex_lock(&box->mu);
    long number = ++box->sent;
    pthread_mutex_unlock(&box->mu);
    n = snprintf(msg, sizeof msg, "note %ld sent to %s (key %s): %s", number, to ? to : "the team",
                 dexa_tool_invocation_idempotency_key(inv), text);
  }
  cJSON_Delete(a);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof msg) n = (int)sizeof msg - 1;
  return dexa_tool_output_set_text(out, msg, (size_t)n, is_error);
}

int ai_agent_tools_new(dexa_tool_source **out) {
  dexa_tool_source *src = NULL;
  int rc = dexa_function_tools_new(&src, "host");
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(src, "clock", "Returns the current UTC time.",
                                 "{\"type\":\"object\",\"properties\":{}}", DEXA_TOOL_READ,
                                 DEXA_APPROVAL_NONE, clock_tool, NULL);
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(
        src, "send_note", "Sends a short note to a person or the team (needs approval).",
        "{\"type\":\"object\",\"properties\":{\"to\":{\"type\":\"string\"},"
        "\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}",
        DEXA_TOOL_WRITE, DEXA_APPROVAL_REQUIRED, send_note_tool, &g_outbox);
  if (rc != DEXA_OK) {
    dexa_tool_source_free(src);
    src = NULL;
  }
  *out = src;
  return rc;
}
