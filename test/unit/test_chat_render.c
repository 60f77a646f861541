/* examples/chat's renderer on event sequences: an answer streamed as
 * deltas is printed once even when a reasoning item (no text) is stored
 * before it, text that came without deltas is printed whole, and a
 * truncated answer says so. The renderer is compiled in from the example;
 * its output goes to a temporary file. */
#include <stdio.h>
#include <unistd.h>

#include "../examples/chat/chat_render.c"
#include "testing.h"

/* Runs the events through a fresh renderer; returns what it printed. */
static char *render(const char *const *events, size_t n) {
  static char out[4096];
  char path[] = "/tmp/dexa-chat-render-XXXXXX";
  int fd = mkstemp(path);
  fflush(stdout);
  int saved = dup(1);
  dup2(fd, 1);
  chat_render r = {0, 0, 0};
  for (size_t i = 0; i < n; i++) chat_render_event(&r, events[i], strlen(events[i]));
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

static void answer_after_reasoning_is_printed_once(void) {
  const char *ev[] = {DELTA("Hel"), DELTA("lo."), MODEL(",\"reasoning\":\"thinking\""),
                      MODEL(",\"text\":\"Hello.\""), "{\"type\":\"turn_finished\",\"turn\":1}"};
  CHECK_STR(render(ev, 5), "dex> Hello.\n");
}

static void text_without_deltas_is_printed_whole(void) {
  const char *ev[] = {MODEL(",\"text\":\"First.\""), DELTA("Second."), MODEL(",\"text\":\"Second.\""),
                      "{\"type\":\"turn_finished\",\"turn\":1}"};
  CHECK_STR(render(ev, 4), "dex> First.Second.\n");
}

static void truncated_answer_says_so(void) {
  const char *ev[] = {DELTA("Once upon"), MODEL(",\"text\":\"Once upon\",\"finish_reason\":\"length\""),
                      "{\"type\":\"turn_finished\",\"turn\":1,\"finish_reason\":\"length\",\"truncated\":true}"};
  CHECK_STR(render(ev, 3), "dex> Once upon\n  [truncated: the answer was cut at the output token limit]\n");
}

int main(void) {
  RUN(answer_after_reasoning_is_printed_once);
  RUN(text_without_deltas_is_printed_whole);
  RUN(truncated_answer_says_so);
  TEST_MAIN_END();
}
