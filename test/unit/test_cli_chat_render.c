/* The dexagents command's chat renderer (src/cli/chat_render.c) on event
 * sequences, as test_chat_render does for examples/chat: an answer
 * streamed as deltas is printed once even when a reasoning item or a
 * thinking block (a model message with no text) is stored before it, text
 * that came without deltas is printed whole, and a truncated answer says
 * so. Compiled in with the command's output helpers; no colours. */
#include <stdio.h>
#include <unistd.h>

#include "../src/cli/chat_render.c"
#include "../src/cli/output.c"
#include "testing.h"

static char *render(const char *const *events, size_t n) {
  static char out[4096];
  char path[] = "/tmp/dexa-cli-render-XXXXXX";
  int fd = mkstemp(path);
  fflush(stdout);
  int saved = dup(1);
  dup2(fd, 1);
  cli_style st;
  cli_style_init(&st, 0, stdout);
  chat_render r = {.st = &st};
  for (size_t i = 0; i < n; i++) {
    cJSON *e = cJSON_Parse(events[i]);
    chat_render_event(&r, e);
    cJSON_Delete(e);
  }
  chat_render_end_line(&r);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  lseek(fd, 0, SEEK_SET);
  ssize_t got = read(fd, out, sizeof out - 1);
  out[got > 0 ? got : 0] = '\0';
  close(fd);
  unlink(path);
  return out;
}

#define DELTA(t) "{\"type\":\"text_delta\",\"turn\":1,\"text\":\"" t "\"}"
#define MODEL(fields) "{\"type\":\"message_appended\",\"message\":{\"role\":\"model\"" fields "}}"
#define FINISHED "{\"type\":\"turn_finished\",\"turn\":1}"

static void answer_after_reasoning_is_printed_once(void) {
  const char *ev[] = {DELTA("Hello "), DELTA("world"), MODEL(",\"reasoning\":\"thinking\""),
                      MODEL(",\"text\":\"Hello world\""), FINISHED};
  CHECK_STR(render(ev, 5), "dex> Hello world\n");
}

static void text_without_deltas_is_printed_whole(void) {
  const char *ev[] = {MODEL(",\"text\":\"First.\""), DELTA("Second."),
                      MODEL(",\"text\":\"Second.\""), FINISHED};
  CHECK_STR(render(ev, 4), "dex> First.Second.\n");
}

static void truncated_answer_says_so(void) {
  const char *ev[] = {DELTA("Once upon"),
                      MODEL(",\"text\":\"Once upon\",\"finish_reason\":\"length\""), FINISHED};
  CHECK_STR(render(ev, 3),
            "dex> Once upon\n  [truncated: the answer was cut at the output token limit]\n");
}

int main(void) {
  RUN(answer_after_reasoning_is_printed_once);
  RUN(text_without_deltas_is_printed_whole);
  RUN(truncated_answer_says_so);
  TEST_MAIN_END();
}
