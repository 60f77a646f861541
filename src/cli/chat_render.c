/* Printing the chat: the session's events as they stream, and stored
 * messages on --resume. Events are best effort (the snapshot is the
 * truth): a model message whose text deltas did not come (a delta lost, or
 * a turn run by another process) is printed whole when it is appended, and
 * one whose deltas came is not printed again. */
#include <string.h>

#include "cli/cli.h"

static const char *str(const cJSON *o, const char *k) { return cli_str(o, k); }

static void close_reasoning(chat_render *r) {
  if (!r->reasoning_open) return;
  fputs(r->st->reset, stdout);
  fputc('\n', stdout);
  r->reasoning_open = 0;
}

static void open_line(chat_render *r) {
  close_reasoning(r);
  if (!r->line_open) printf("%sdex>%s ", r->st->model, r->st->reset);
  r->line_open = 1;
}

void chat_render_end_line(chat_render *r) {
  close_reasoning(r);
  if (r->line_open) fputc('\n', stdout);
  r->line_open = 0;
  fflush(stdout);
}

/* A line of its own, in a style. */
static void note(chat_render *r, const char *style, const char *text) {
  chat_render_end_line(r);
  printf("%s%s%s\n", style, text, r->st->reset);
}

/* A model message's text was streamed as deltas just before it: those
 * bytes are its own. A message with no text (a reasoning item or thinking
 * block stored before the answer) uses none of them, so the answer that
 * follows is not printed a second time. */
static void model_message(chat_render *r, const cJSON *m) {
  const char *text = str(m, "text");
  size_t n = strlen(text);
  if (n && r->delta_bytes == 0) { /* no delta came for it: print it whole */
    open_line(r);
    fputs(text, stdout);
  }
  if (n) r->delta_bytes = r->delta_bytes > n ? r->delta_bytes - n : 0;
  if (!strcmp(str(m, "finish_reason"), "length"))
    note(r, r->st->warn, "  [truncated: the answer was cut at the output token limit]");
}

static void tool_call(chat_render *r, const cJSON *e) {
  char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e, "arguments"));
  chat_render_end_line(r);
  printf("%s  -> tool call %s %s (%s)%s%s\n", r->st->tool, str(e, "name"), args ? args : "{}",
         str(e, "call_id"), !strcmp(str(e, "effect"), "write") ? " [write]" : "", r->st->reset);
  cJSON_free(args);
}

static void plan(chat_render *r, const cJSON *p) {
  char line[256];
  if (!cJSON_IsObject(p)) {
    note(r, r->st->dim, "(the plan was cleared)");
    return;
  }
  snprintf(line, sizeof line, "plan revision %lld (%s):", (long long)cli_num(p, "revision"),
           str(p, "status"));
  note(r, r->st->bold, line);
  const cJSON *t;
  cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(p, "todos")) {
    printf("  [%s] %s\n", str(t, "status"), str(t, "content"));
  }
}

static void delta(chat_render *r, const cJSON *e, int reasoning) {
  const char *text = str(e, "text");
  if (reasoning) {
    if (r->line_open) chat_render_end_line(r);
    if (!r->reasoning_open) printf("%s  thinking: ", r->st->dim);
    r->reasoning_open = 1;
    fputs(text, stdout);
    return;
  }
  open_line(r);
  fputs(text, stdout);
  r->delta_bytes += strlen(text);
}

static void ended(chat_render *r, const cJSON *e, const char *type) {
  char line[600];
  if (!strcmp(type, "turn_cancelled")) {
    note(r, r->st->warn, !strcmp(str(e, "action"), "steer") ? "(turn steered)" : "(turn stopped)");
  } else if (!strcmp(type, "turn_failed")) {
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(e, "error");
    snprintf(line, sizeof line, "turn failed: %s (%s)", str(err, "message"),
             dexa_error_name((int)cli_num(err, "code")));
    note(r, r->st->err, line);
  } else {
    chat_render_end_line(r);
  }
  r->turn_done = 1;
}

void chat_render_event(chat_render *r, const cJSON *e) {
  const char *type = str(e, "type");
  char line[600];
  if (!strcmp(type, "text_delta") || !strcmp(type, "reasoning_delta")) {
    delta(r, e, type[0] == 'r');
  } else if (!strcmp(type, "message_appended")) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
    if (!strcmp(str(m, "role"), "model")) model_message(r, m);
  } else if (!strcmp(type, "tool_call_proposed")) {
    tool_call(r, e);
  } else if (!strcmp(type, "tool_call_finished")) {
    snprintf(line, sizeof line, "  <- tool %s: %s", str(e, "name"), str(e, "status"));
    note(r, r->st->tool, line);
  } else if (!strcmp(type, "turn_finished") || !strcmp(type, "turn_cancelled") ||
             !strcmp(type, "turn_failed")) {
    ended(r, e, type);
  } else if (!strcmp(type, "turn_started")) {
    r->turn_done = 0;
  } else if (!strcmp(type, "timer_fired")) {
    note(r, r->st->dim, "  (timer fired)");
  } else if (!strcmp(type, "turn_control")) {
    note(r, r->st->dim, !strcmp(str(e, "action"), "steer")
                            ? "  (steer: the turn ends at its next safe point)"
                            : "  (stop: the turn ends at its next safe point)");
  } else if (!strcmp(type, "plan_updated")) {
    plan(r, cJSON_GetObjectItemCaseSensitive(e, "plan"));
  } else if (!strcmp(type, "compaction")) {
    note(r, r->st->dim, "  (older messages were summarized)");
  }
  fflush(stdout);
}

void chat_render_message(chat_render *r, const cJSON *m) {
  const char *role = str(m, "role");
  char line[1200];
  if (!strcmp(role, "user")) {
    snprintf(line, sizeof line, "%syou>%s %s", r->st->user, r->st->reset, str(m, "text"));
    note(r, "", line);
  } else if (!strcmp(role, "tool")) {
    snprintf(line, sizeof line, "  <- tool %s: %s: %.900s", str(m, "name"), str(m, "status"),
             str(m, "output"));
    note(r, r->st->tool, line);
  } else if (!strcmp(role, "model")) {
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(m, "tool_calls")) tool_call(r, c);
    r->delta_bytes = 0;
    model_message(r, m);
    chat_render_end_line(r);
  }
}
