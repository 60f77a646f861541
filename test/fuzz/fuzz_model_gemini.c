/* libFuzzer target: the gemini stream decoder behind the SSE parser, on a
 * fresh reply. The first byte picks the size of the pieces the rest is fed
 * in (0: at once). Build with `make fuzz`; the corpus is replayed by
 * test/unit/test_model_fuzz_replay.c in `make check`. */
#include <stddef.h>
#include <stdint.h>

#include "iface/model.h"
#include "model/stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  dexa_model_reply reply;
  dexa__decoder d;
  dexa__model_reply_init(&reply);
  dexa__decoder_init(&d, "fuzz", NULL, &reply);
  dexa__stream_run(&dexa__gemini_stream, &d, (const char *)data + 1, size - 1, data[0]);
  dexa__model_reply_free(&reply);
  return 0;
}
