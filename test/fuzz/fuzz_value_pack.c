/* libFuzzer target: packed values (store/value_pack.c). The input is
 * unpacked as if it were a stored value (it must be refused or unpacked
 * within its buffers), then packed and unpacked again (it must come back
 * byte for byte). Build with `make fuzz`; test/unit/test_model_fuzz_replay.c
 * replays the corpus in `make check`. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "store/value_pack.h"

static void unpack_as_stored(const uint8_t *data, size_t size) {
  size_t len = 0;
  if (dexa__value_unpacked_len(data, size, &len) != DEXA_OK || len > (1u << 20)) return;
  char *out = malloc(len + DEXA__UNPACK_SLACK);
  if (!out) return;
  (void)dexa__value_unpack(data, size, out, len);
  free(out);
}

static void pack_round_trip(const uint8_t *data, size_t size) {
  unsigned char *packed = malloc(dexa__value_pack_bound(size));
  char *out = malloc(size + DEXA__UNPACK_SLACK);
  if (packed && out) {
    size_t pn = dexa__value_pack((const char *)data, size, packed);
    size_t len = 0;
    if (pn && (dexa__value_unpacked_len(packed, pn, &len) != DEXA_OK || len != size ||
               dexa__value_unpack(packed, pn, out, len) != DEXA_OK ||
               memcmp(out, data, size) != 0)) {
      abort();
    }
  }
  free(packed);
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unpack_as_stored(data, size);
  pack_round_trip(data, size);
  return 0;
}
