/* The MCP wire decoders: JSON-RPC classification (ids, errors without ids,
 * batches refused), the SSE parser (fields, comments, CRLF, split feeds,
 * retry, the size limit), Mcp-Name header values; and a replay of the fuzz
 * corpus (test/fuzz/corpus/fuzz_mcp_wire) through the libFuzzer target. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testing.h"
#include "../fuzz/fuzz_mcp_wire.c"

static int parse(const char *s, dexa__rpc_msg *m) { return dexa__rpc_parse(s, strlen(s), m); }

static void test_rpc_messages_are_classified(void) {
  dexa__rpc_msg m;
  CHECK_EQ_INT(parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", &m), 0);
  CHECK_EQ_INT(m.kind, DEXA__RPC_RESULT);
  CHECK_STR(m.id, "7");
  dexa__rpc_msg_free(&m);
  CHECK_EQ_INT(parse("{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"method\":\"ping\"}", &m), 0);
  CHECK_EQ_INT(m.kind, DEXA__RPC_REQUEST);
  CHECK_STR(m.id, "s:7"); /* a string id never matches the number 7 */
  dexa__rpc_msg_free(&m);
  CHECK_EQ_INT(parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}", &m), 0);
  CHECK_EQ_INT(m.kind, DEXA__RPC_NOTIFICATION);
  dexa__rpc_msg_free(&m);
  CHECK_EQ_INT(parse("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"parse\"}}", &m), 0);
  CHECK_EQ_INT(m.kind, DEXA__RPC_ERROR);
  CHECK_EQ_INT(m.error_code, -32700);
  CHECK_STR(m.id, "");
  dexa__rpc_msg_free(&m);
  const char *bad[] = {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]", "{\"jsonrpc\":\"1.0\",\"id\":1,\"result\":{}}",
                       "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"result\":{}}", "{\"jsonrpc\":\"2.0\",\"result\":{}}",
                       "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1}}",
                       "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"message\":\"no code\"}}",
                       "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", "not json", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    CHECK_EQ_INT(parse(bad[i], &m), -1);
    CHECK_EQ_INT(m.kind, DEXA__RPC_INVALID);
  }
}

typedef struct got {
  char text[2048];
  int events;
} got;

static int on_ev(void *ud, const dexa__sse_event *ev) {
  got *g = ud;
  size_t n = strlen(g->text);
  snprintf(g->text + n, sizeof g->text - n, "[%s|%s|%.*s]", ev->event, ev->id ? ev->id : "-",
           (int)ev->data_len, ev->data);
  g->events++;
  return 0;
}

static void feed_split(dexa__sse *p, const char *s, size_t chunk) {
  for (size_t i = 0, n = strlen(s); i < n; i += chunk) dexa__sse_feed(p, s + i, n - i < chunk ? n - i : chunk);
}

static void test_sse_fields_in_any_split(void) {
  const char *stream = ": hello\r\nid: p0\r\nretry: 2000\r\ndata:\r\n\r\nevent: message\nid: p1\n"
                       "data: {\"a\":\ndata: 1}\n\ndata: x\rdata:y\r\rdata: lost without blank line";
  for (size_t chunk = 1; chunk < 8; chunk++) {
    got g = {"", 0};
    dexa__sse p;
    dexa__sse_init(&p, 1 << 20, on_ev, &g);
    feed_split(&p, stream, chunk);
    dexa__sse_end(&p);
    CHECK_STR(g.text, "[|p0|][message|p1|{\"a\":\n1}][|-|x\ny]");
    CHECK_EQ_INT(p.retry_ms, 2000);
    CHECK_STR(p.last_id, "p1");
    dexa__sse_free(&p);
  }
}

static void test_sse_event_over_the_limit_fails(void) {
  got g = {"", 0};
  dexa__sse p;
  dexa__sse_init(&p, 64, on_ev, &g);
  char big[200];
  memset(big, 'x', sizeof big);
  CHECK_EQ_INT(dexa__sse_feed(&p, "data: ", 6), 0);
  CHECK_EQ_INT(dexa__sse_feed(&p, big, sizeof big), -1);
  CHECK_EQ_INT(dexa__sse_feed(&p, "\n\n", 2), -1);
  CHECK_EQ_INT(g.events, 0);
  dexa__sse_free(&p);
}

static void test_header_values_plain_or_base64(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__mcp_header_value(&b, "get-sum");
  CHECK_STR(dexa__buf_cstr(&b), "get-sum");
  dexa__buf_reset(&b);
  dexa__mcp_header_value(&b, "h\xc3\xa9llo");
  CHECK_STR(dexa__buf_cstr(&b), "=?base64?aMOpbGxv?=");
  dexa__buf_reset(&b);
  dexa__mcp_header_value(&b, "a b");
  CHECK_STR(dexa__buf_cstr(&b), "=?base64?YSBi?=");
  dexa__buf_reset(&b);
  dexa__mcp_header_value(&b, "=?base64?x?=");
  CHECK_STR(dexa__buf_cstr(&b), "=?base64?PT9iYXNlNjQ/eD89?=");
  dexa__buf_free(&b);
}

static void test_fuzz_corpus_replays(void) {
  const char *dirname = "test/fuzz/corpus/fuzz_mcp_wire";
  DIR *d = opendir(dirname);
  CHECK(d);
  int files = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dirname, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    files++;
  }
  closedir(d);
  CHECK(files >= 5);
}

int main(void) {
  RUN(test_rpc_messages_are_classified);
  RUN(test_sse_fields_in_any_split);
  RUN(test_sse_event_over_the_limit_fails);
  RUN(test_header_values_plain_or_base64);
  RUN(test_fuzz_corpus_replays);
  TEST_MAIN_END();
}
