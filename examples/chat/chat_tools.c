/* Host function tools of the chat example.
 *
 *   clock  READ: returns the current UTC time. Safe to retry, so it runs in
 *          CallTool (retried with backoff on a transient error).
 *   note   WRITE: appends {"text":..} as one line to a file next to the
 *          store. Not idempotent, so it runs in CallSingleAttemptTool: one
 *          attempt; a crash during it is recorded as an unknown outcome and
 *          the line is never written twice. Each line carries the call's
 *          idempotency key so you can see which call wrote it.
 *
 * Both run on a worker thread; several calls may run at once. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "chat.h"

static int clock_tool(void *user_data, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  (void)user_data;
  (void)inv;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char text[96];
  size_t n = strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return dexa_tool_output_set_text(out, text, n, 0);
}

static int note_tool(void *user_data, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  const char *path = user_data;
  const char *args;
  size_t len;
  dexa_tool_invocation_arguments(inv, &args, &len);
  cJSON *a = cJSON_ParseWithLength(args, len);
  const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "text"));
  char msg[512];
  int n, is_error = 0;
  if (!text) {
    n = snprintf(msg, sizeof msg, "note needs {\"text\":\"...\"}");
    is_error = 1;
  } else {
    FILE *f = fopen(path, "a");
    if (!f || fprintf(f, "%s\t%s\n", dexa_tool_invocation_idempotency_key(inv), text) < 0) {
      n = snprintf(msg, sizeof msg, "cannot append to %s", path);
      is_error = 1;
    } else {
      n = snprintf(msg, sizeof msg, "noted in %s", path);
    }
    if (f && fclose(f) != 0 && !is_error) {
      n = snprintf(msg, sizeof msg, "cannot write %s", path);
      is_error = 1;
    }
  }
  cJSON_Delete(a);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof msg) n = (int)sizeof msg - 1;
  return dexa_tool_output_set_text(out, msg, (size_t)n, is_error);
}

int chat_tools_new(dexa_tool_source **out, const char *notes_path) {
  dexa_tool_source *src = NULL;
  int rc = dexa_function_tools_new(&src, "host");
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(src, "clock", "Returns the current UTC time.",
                                 "{\"type\":\"object\",\"properties\":{}}", DEXA_TOOL_READ,
                                 DEXA_APPROVAL_NONE, clock_tool, NULL);
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(src, "note", "Appends a line of text to the notes file.",
                                 "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":"
                                 "\"string\"}},\"required\":[\"text\"]}",
                                 DEXA_TOOL_WRITE, DEXA_APPROVAL_REQUIRED, note_tool,
                                 (void *)notes_path);
  if (rc != DEXA_OK) {
    dexa_tool_source_free(src);
    src = NULL;
  }
  *out = src;
  return rc;
}
