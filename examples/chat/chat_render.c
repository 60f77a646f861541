/* Printing the session: live events while a turn runs, stored messages on
 * --resume. Events are best effort (the snapshot is the truth), so when a
 * model message arrives without the text deltas that should have preceded
 * it (a delta lost, or a turn resumed in another process), its stored text
 * is printed instead. A truncated answer (finish_reason length) says so. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "chat.h"

static const char *str(const cJSON *obj, const char *name) {
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, name));
  return s ? s : "";
}

static void open_line(chat_render *r) {
  if (!r->line_open) fputs("dex> ", stdout);
  r->line_open = 1;
}

void chat_render_end_line(chat_render *r) {
  if (r->line_open) fputc('\n', stdout);
  r->line_open = 0;
  fflush(stdout);
}

/* "  -> name {args}" for each tool call of a model message. */
static void print_calls(chat_render *r, const cJSON *calls) {
  const cJSON *c;
  cJSON_ArrayForEach(c, calls) {
    char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(c, "arguments"));
    chat_render_end_line(r);
    printf("  -> tool call %s %s (%s)\n", str(c, "name"), args ? args : "{}", str(c, "call_id"));
    cJSON_free(args);
  }
}

/* A model message's text was streamed as deltas just before it: those
 * bytes are its own (a reply's reasoning item, which has no text, uses
 * none of them). Text that came without deltas is printed whole. */
static void model_message(chat_render *r, const cJSON *m) {
  const char *text = str(m, "text");
  size_t n = strlen(text);
  if (n && r->delta_bytes == 0) { /* no delta came for it: print it whole */
    open_line(r);
    fputs(text, stdout);
  }
  if (n) r->delta_bytes = r->delta_bytes > n ? r->delta_bytes - n : 0;
  if (strcmp(str(m, "finish_reason"), "length") == 0) {
    chat_render_end_line(r);
    printf("  [truncated: the answer was cut at the output token limit]\n");
  }
}

void chat_render_event(chat_render *r, const char *event_json, size_t len) {
  cJSON *e = cJSON_ParseWithLength(event_json, len);
  const char *type = str(e, "type");
  if (strcmp(type, "text_delta") == 0) {
    const char *text = str(e, "text");
    open_line(r);
    fputs(text, stdout);
    r->delta_bytes += strlen(text);
  } else if (strcmp(type, "message_appended") == 0) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
    if (strcmp(str(m, "role"), "model") == 0) model_message(r, m);
  } else if (strcmp(type, "tool_call_proposed") == 0) {
    cJSON *calls = cJSON_CreateArray();
    cJSON_AddItemReferenceToArray(calls, e);
    print_calls(r, calls);
    cJSON_Delete(calls);
  } else if (strcmp(type, "tool_call_finished") == 0) {
    chat_render_end_line(r);
    printf("  <- tool %s: %s\n", str(e, "name"), str(e, "status"));
  } else if (strcmp(type, "turn_finished") == 0) {
    chat_render_end_line(r);
    r->delta_bytes = 0;
    r->turn_done = 1;
  } else if (strcmp(type, "turn_cancelled") == 0) {
    chat_render_end_line(r);
    printf("(turn %s)\n", strcmp(str(e, "action"), "steer") == 0 ? "steered" : "stopped");
    r->turn_done = 1;
  } else if (strcmp(type, "timer_fired") == 0) {
    chat_render_end_line(r);
    printf("  (timer fired)\n");
  } else if (strcmp(type, "turn_failed") == 0) {
    chat_render_end_line(r);
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(e, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
    printf("turn failed: %s (%s)\n", str(err, "message"),
           cJSON_IsNumber(code) ? dexa_error_name(code->valueint) : "?");
    r->turn_done = 1;
  }
  fflush(stdout);
  cJSON_Delete(e);
}

void chat_render_message(const char *message_json, size_t len) {
  cJSON *m = cJSON_ParseWithLength(message_json, len);
  const char *role = str(m, "role");
  if (strcmp(role, "user") == 0) {
    printf("you> %s\n", str(m, "text"));
  } else if (strcmp(role, "model") == 0) {
    chat_render r = {0, 0, 0};
    model_message(&r, m);
    chat_render_end_line(&r);
  } else if (strcmp(role, "tool") == 0) {
    printf("  <- tool %s: %s: %s\n", str(m, "name"), str(m, "status"), str(m, "output"));
  } else {
    printf("[%s] %.*s\n", *role ? role : "?", (int)len, message_json);
  }
  cJSON_Delete(m);
}
