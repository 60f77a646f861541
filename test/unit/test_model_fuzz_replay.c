/* Replays the corpus of the decoder fuzz targets: model streams and packed
 * store values (test/fuzz/corpus/<target>/)
 * through the same entry points libFuzzer calls, so `make check` (and its
 * ASan build) runs every input a fuzzing session kept. Each target's
 * LLVMFuzzerTestOneInput is included here under its own name.
 * test-needs: providers mcp-http */
#include <dirent.h>
#include <stdlib.h>

#include "testing.h"

#define LLVMFuzzerTestOneInput fuzz_value_pack_one
#include "fuzz/fuzz_value_pack.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_model_sse_one
#include "fuzz/fuzz_model_sse.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_model_openai_responses_one
#include "fuzz/fuzz_model_openai_responses.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_model_openai_chat_one
#include "fuzz/fuzz_model_openai_chat.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_model_anthropic_one
#include "fuzz/fuzz_model_anthropic.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_model_gemini_one
#include "fuzz/fuzz_model_gemini.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_model_bedrock_one
#include "fuzz/fuzz_model_bedrock.c"
#undef LLVMFuzzerTestOneInput

typedef int (*fuzz_fn)(const uint8_t *, size_t);

/* Runs every file of the target's corpus; returns how many (-1: no corpus). */
static int replay(const char *target, fuzz_fn fn) {
  char path[512];
  snprintf(path, sizeof path, "test/fuzz/corpus/%s", target);
  DIR *d = opendir(path);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char file[1024];
    snprintf(file, sizeof file, "%s/%s", path, e->d_name);
    FILE *f = fopen(file, "rb");
    if (!f) continue;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
    size_t got = buf ? fread(buf, 1, (size_t)len, f) : 0;
    fclose(f);
    fn(buf, got);
    free(buf);
    n++;
  }
  closedir(d);
  return n;
}

#define REPLAY_TEST(name)                                      \
  static void replay_##name(void) {                            \
    int n = replay(#name, name##_one);                         \
    CHECK(n > 0);                                              \
  }

REPLAY_TEST(fuzz_model_sse)
REPLAY_TEST(fuzz_model_openai_responses)
REPLAY_TEST(fuzz_model_openai_chat)
REPLAY_TEST(fuzz_model_anthropic)
REPLAY_TEST(fuzz_model_gemini)
REPLAY_TEST(fuzz_model_bedrock)
REPLAY_TEST(fuzz_value_pack)

/* Every input of every corpus also goes through every target: a decoder
 * fed another provider's stream must fail cleanly, never crash. */
static void cross_replay(void) {
  static const char *const names[] = {"fuzz_model_sse",       "fuzz_model_openai_responses",
                                      "fuzz_model_openai_chat", "fuzz_model_anthropic",
                                      "fuzz_model_gemini",      "fuzz_model_bedrock"};
  static const fuzz_fn fns[] = {fuzz_model_sse_one,         fuzz_model_openai_responses_one,
                                fuzz_model_openai_chat_one, fuzz_model_anthropic_one,
                                fuzz_model_gemini_one,      fuzz_model_bedrock_one};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) CHECK(replay(names[i], fns[j]) > 0);
}

int main(void) {
  RUN(replay_fuzz_model_sse);
  RUN(replay_fuzz_model_openai_responses);
  RUN(replay_fuzz_model_openai_chat);
  RUN(replay_fuzz_model_anthropic);
  RUN(replay_fuzz_model_gemini);
  RUN(replay_fuzz_model_bedrock);
  RUN(cross_replay);
  RUN(replay_fuzz_value_pack);
  TEST_MAIN_END();
}
