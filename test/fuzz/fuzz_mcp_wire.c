/* libFuzzer target: the MCP wire decoders (JSON-RPC classification, the SSE
 * parser fed in pieces, header value encoding). The first byte picks the
 * decoder and the SSE chunk size. Build and run:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iinclude -Isrc \
 *     test/fuzz/fuzz_mcp_wire.c src/tools/mcp_wire.c src/util/buf.c -lcjson -o fuzz_mcp_wire
 *   ./fuzz_mcp_wire test/fuzz/corpus/fuzz_mcp_wire
 * test/unit/test_mcp_wire.c replays the corpus in `make check`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/mcp_internal.h"

static int fuzz_sse_event(void *ud, const dexa__sse_event *ev) {
  size_t *n = ud;
  dexa__rpc_msg m;
  if (dexa__rpc_parse(ev->data, ev->data_len, &m) == 0) dexa__rpc_msg_free(&m);
  *n += ev->data_len + strlen(ev->event) + (ev->id ? strlen(ev->id) : 0);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t mode = data[0];
  const char *s = (const char *)data + 1;
  size_t n = size - 1;
  if ((mode & 3) == 0) {
    dexa__rpc_msg m;
    if (dexa__rpc_parse(s, n, &m) == 0) {
      if (m.kind == DEXA__RPC_RESULT && !m.id[0]) __builtin_trap(); /* a result always has an id */
      dexa__rpc_msg_free(&m);
    }
  } else if ((mode & 3) == 3) {
    char *z = malloc(n + 1);
    if (!z) return 0;
    memcpy(z, s, n);
    z[n] = '\0';
    dexa__buf b;
    dexa__buf_init(&b);
    dexa__mcp_header_value(&b, z);
    for (size_t i = 0; i < b.len; i++)
      if (b.data[i] < 0x21 || b.data[i] > 0x7e) __builtin_trap(); /* always a plain header value */
    dexa__buf_free(&b);
    free(z);
  } else {
    size_t chunk = (size_t)(mode >> 2) + 1, total = 0;
    dexa__sse p;
    dexa__sse_init(&p, 4096, fuzz_sse_event, &total);
    for (size_t i = 0; i < n; i += chunk)
      if (dexa__sse_feed(&p, s + i, n - i < chunk ? n - i : chunk) != 0) break;
    dexa__sse_end(&p);
    dexa__sse_free(&p);
  }
  return 0;
}
