/* libFuzzer target: the model SSE parser. The first byte picks the size of
 * the pieces the rest is fed in (0: at once), so splits are fuzzed too.
 * Build with `make fuzz`; test/unit/test_model_fuzz_replay.c replays the
 * corpus in `make check`. */
#include <stddef.h>
#include <stdint.h>

#include "model/sse.h"

static int count_event(void *ctx, const char *event, const char *data, size_t len) {
  size_t *n = ctx;
  *n += len + (event[0] != '\0');
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t chunk = data[0] ? data[0] : size;
  const char *body = (const char *)data + 1;
  size_t n = size - 1, total = 0;
  dexa__sse_parser p;
  dexa__sse_parser_init(&p, count_event, &total);
  for (size_t off = 0; off < n; off += chunk)
    if (dexa__sse_parser_feed(&p, body + off, n - off < chunk ? n - off : chunk) != 0) break;
  dexa__sse_parser_finish(&p);
  dexa__sse_parser_free(&p);
  (void)dexa__utf8_valid(body, n);
  return 0;
}
