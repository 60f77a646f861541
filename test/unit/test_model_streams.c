/* Model clients without a network: the SSE parser, the three stream
 * decoders on captured-style transcripts (test/fixtures/model, whole and in
 * small pieces), hostile streams, the request bodies (a stored item is
 * replayed byte for byte; other clients' messages are translated; tool
 * results pair by call id), retry classification, options, and the HTTP
 * layer's timeout against a socket that never answers.
 * test-needs: providers */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dexagents/dexagents.h"
#include "iface/model.h"
#include "model/provider.h"
#include "model/retry.h"
#include "model/sse.h"
#include "model/stream.h"
#include "testing.h"

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)len + 1);
  if (b && fread(b, 1, (size_t)len, f) != (size_t)len) len = 0;
  if (b) b[len] = '\0';
  fclose(f);
  *n = (size_t)len;
  return b;
}

/* ---- SSE parser ---- */

typedef struct collected {
  char log[4096];
  int count;
} collected;

static int collect(void *ctx, const char *event, const char *data, size_t len) {
  collected *c = ctx;
  size_t n = strlen(c->log);
  snprintf(c->log + n, sizeof c->log - n, "[%s|%.*s]", event, (int)len, data);
  c->count++;
  return 0;
}

static const char SSE_TEXT[] = "\xEF\xBB\xBF: comment\r\nevent: a\r\ndata: one\r\ndata:two\r\n\r\n"
                               "data:  three\n\nevent: b\rdata: x\r\rid: 7\nretry: 10\n"
                               "data\n\nevent: ignored-without-data\n\ndata: tail-without-blank";

static void sse_parses_fields_and_line_ends(void) {
  collected c = {"", 0};
  dexa__sse_parser p;
  dexa__sse_parser_init(&p, collect, &c);
  CHECK_EQ_INT(dexa__sse_parser_feed(&p, SSE_TEXT, sizeof SSE_TEXT - 1), 0);
  CHECK_EQ_INT(dexa__sse_parser_finish(&p), 1); /* the unterminated event is dropped */
  dexa__sse_parser_free(&p);
  CHECK_STR(c.log, "[a|one\ntwo][| three][b|x][|]");
}

static void sse_same_events_at_every_split(void) {
  collected whole = {"", 0};
  dexa__sse_parser p;
  dexa__sse_parser_init(&p, collect, &whole);
  dexa__sse_parser_feed(&p, SSE_TEXT, sizeof SSE_TEXT - 1);
  dexa__sse_parser_free(&p);
  for (size_t cut = 1; cut < sizeof SSE_TEXT - 1; cut++) {
    collected c = {"", 0};
    dexa__sse_parser_init(&p, collect, &c);
    dexa__sse_parser_feed(&p, SSE_TEXT, cut);
    dexa__sse_parser_feed(&p, SSE_TEXT + cut, sizeof SSE_TEXT - 1 - cut);
    dexa__sse_parser_free(&p);
    if (strcmp(c.log, whole.log) != 0) fprintf(stderr, "    split at %zu: %s\n", cut, c.log);
    CHECK_STR(c.log, whole.log);
  }
  /* byte by byte */
  collected c = {"", 0};
  dexa__sse_parser_init(&p, collect, &c);
  for (size_t i = 0; i < sizeof SSE_TEXT - 1; i++) dexa__sse_parser_feed(&p, SSE_TEXT + i, 1);
  dexa__sse_parser_free(&p);
  CHECK_STR(c.log, whole.log);
}

static void sse_caps_line_length(void) {
  collected c = {"", 0};
  dexa__sse_parser p;
  dexa__sse_parser_init(&p, collect, &c);
  char *chunk = malloc(64 * 1024);
  memset(chunk, 'x', 64 * 1024);
  int rc = 0;
  for (int i = 0; i < 40 && rc == 0; i++) rc = dexa__sse_parser_feed(&p, chunk, 64 * 1024);
  CHECK(p.line.cap <= 2 * DEXA__SSE_MAX_LINE + 64);
  dexa__sse_parser_free(&p);
  free(chunk);
  CHECK_EQ_INT(rc, -1);
}

static void utf8_validation(void) {
  CHECK(dexa__utf8_valid("a\xC3\xA9\xE2\x98\x80\xF0\x9F\x98\x80", 10));
  CHECK(!dexa__utf8_valid("\xC3", 1));
  CHECK(!dexa__utf8_valid("\xC0\xAF", 2));         /* overlong */
  CHECK(!dexa__utf8_valid("\xED\xA0\x80", 3));     /* surrogate */
  CHECK(!dexa__utf8_valid("\xF4\x90\x80\x80", 4)); /* > U+10FFFF */
  CHECK(!dexa__utf8_valid("\xFF", 1));
}

/* ---- decoders on fixtures ---- */

typedef struct decoded {
  dexa_model_reply reply;
  dexa__decoder d;
  int rc;
} decoded;

static int decode(decoded *x, const dexa__stream_ops *ops, const char *body, size_t n, size_t chunk) {
  dexa__model_reply_init(&x->reply);
  dexa__decoder_init(&x->d, "test/model", NULL, &x->reply);
  x->rc = dexa__stream_run(ops, &x->d, body, n, chunk);
  if (x->rc != DEXA_OK) fprintf(stderr, "    decode: %s %s\n", dexa_error_name(x->rc), x->d.err);
  return x->rc;
}

static const char *item_text(const decoded *x, size_t i) { return dexa__buf_cstr(&x->reply.items[i].text); }

static void responses_tools_fixture(void) {
  size_t n;
  char *body = slurp("test/fixtures/model/openai_responses_tools.sse", &n);
  CHECK(body);
  static const size_t chunks[] = {0, 1, 7, 100};
  for (size_t k = 0; k < 4; k++) {
    decoded x;
    int rc = decode(&x, &dexa__openai_responses_stream, body, n, chunks[k]);
    int items = (int)x.reply.item_count;
    int ok = rc == DEXA_OK && items == 3 && x.reply.tool_call_count == 2 &&
             x.reply.input_tokens == 321 && x.reply.output_tokens == 54 &&
             strstr(body, x.reply.items[0].json) && /* stored verbatim */
             strstr(x.reply.items[0].json, "\"encrypted_content\":\"gAAAAABo-ENC+/==\"") &&
             !strcmp(dexa__buf_cstr(&x.reply.items[0].reasoning), "Need the weather and the time.") &&
             strstr(dexa__buf_cstr(&x.reply.items[1].tool_calls),
                    "{\"call_id\":\"call_w\",\"name\":\"get_weather\",\"arguments\":{\"location\":\"Paris\"}}") &&
             strstr(dexa__buf_cstr(&x.reply.items[2].tool_calls), "\"call_t\"");
    dexa__model_reply_free(&x.reply);
    if (!ok) fprintf(stderr, "    chunk %zu: items %d\n", chunks[k], items);
    CHECK(ok);
  }
  free(body);
}

static void responses_text_fixture(void) {
  size_t n;
  char *body = slurp("test/fixtures/model/openai_responses_text.sse", &n);
  CHECK(body);
  decoded x;
  CHECK_EQ_INT(decode(&x, &dexa__openai_responses_stream, body, n, 3), DEXA_OK);
  CHECK_EQ_INT(x.reply.item_count, 1);
  CHECK_STR(item_text(&x, 0), "Bonjour à Paris – ☀");
  CHECK(strstr(body, x.reply.items[0].json));
  CHECK_EQ_INT(x.reply.output_tokens, 7);
  dexa__model_reply_free(&x.reply);
  free(body);
}

static void chat_tools_fixture(void) {
  size_t n;
  char *body = slurp("test/fixtures/model/openai_chat_tools.sse", &n);
  CHECK(body);
  for (size_t chunk = 0; chunk < 12; chunk += 5) {
    decoded x;
    CHECK_EQ_INT(decode(&x, &dexa__openai_chat_stream, body, n, chunk), DEXA_OK);
    CHECK_EQ_INT(x.reply.item_count, 1);
    CHECK_EQ_INT(x.reply.tool_call_count, 2);
    CHECK_STR(x.reply.items[0].json,
              "{\"role\":\"assistant\",\"content\":\"Checking both.\",\"tool_calls\":["
              "{\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
              "\"arguments\":\"{\\\"location\\\":\\\"Paris\\\"}\"}},"
              "{\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"get_time\","
              "\"arguments\":\"{\\\"tz\\\":\\\"CET\\\"}\"}}]}");
    CHECK_STR(item_text(&x, 0), "Checking both.");
    CHECK_STR(dexa__buf_cstr(&x.reply.items[0].reasoning), "Two tools. ");
    CHECK_EQ_INT(x.reply.input_tokens, 88);
    CHECK_EQ_INT(x.reply.output_tokens, 21);
    dexa__model_reply_free(&x.reply);
  }
  free(body);
}

static void anthropic_thinking_fixture(void) {
  size_t n;
  char *body = slurp("test/fixtures/model/anthropic_thinking_tools.sse", &n);
  CHECK(body);
  for (size_t chunk = 0; chunk < 20; chunk += 9) {
    decoded x;
    CHECK_EQ_INT(decode(&x, &dexa__anthropic_stream, body, n, chunk), DEXA_OK);
    CHECK_EQ_INT(x.reply.item_count, 4);
    CHECK_STR(x.reply.items[0].json,
              "{\"type\":\"thinking\",\"thinking\":\"The user wants weather.\\nCall the tool. \","
              "\"signature\":\"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+/ZRxm==\"}");
    CHECK_STR(x.reply.items[1].json,
              "{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP\"}");
    CHECK_STR(x.reply.items[2].json, "{\"type\":\"text\",\"text\":\"Let me check that.\"}");
    CHECK_STR(x.reply.items[3].json,
              "{\"type\":\"tool_use\",\"id\":\"toolu_01\",\"name\":\"get_weather\",\"input\":"
              "{\"location\": \"Paris\"}}");
    CHECK_STR(dexa__buf_cstr(&x.reply.items[0].reasoning), "The user wants weather.\nCall the tool. ");
    CHECK_STR(item_text(&x, 2), "Let me check that.");
    CHECK_EQ_INT(x.reply.tool_call_count, 1);
    CHECK_EQ_INT(x.reply.input_tokens, 510);
    CHECK_EQ_INT(x.reply.output_tokens, 89);
    dexa__model_reply_free(&x.reply);
  }
  free(body);
}

/* ---- hostile and broken streams ---- */

static int run_text(const dexa__stream_ops *ops, const char *body, char *err, size_t errn) {
  decoded x;
  dexa__model_reply_init(&x.reply);
  dexa__decoder_init(&x.d, "t", NULL, &x.reply);
  int rc = dexa__stream_run(ops, &x.d, body, strlen(body), 0);
  snprintf(err, errn, "%s", x.d.err);
  dexa__model_reply_free(&x.reply);
  return rc;
}

static void truncated_streams_fail(void) {
  char err[800];
  const char *rs = "data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":"
                   "{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"hi\"}]}}\n\n";
  CHECK_EQ_INT(run_text(&dexa__openai_responses_stream, rs, err, sizeof err), DEXA_E_TRANSIENT);
  CHECK_CONTAINS(err, "truncated");
  const char *cc = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n";
  CHECK_EQ_INT(run_text(&dexa__openai_chat_stream, cc, err, sizeof err), DEXA_E_TRANSIENT);
  const char *an = "data: {\"type\":\"message_start\",\"message\":{}}\n\ndata: {\"type\":"
                   "\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
  CHECK_EQ_INT(run_text(&dexa__anthropic_stream, an, err, sizeof err), DEXA_E_TRANSIENT);
  /* a terminal event without its blank line is lost: still truncated */
  CHECK_EQ_INT(run_text(&dexa__anthropic_stream, "data: {\"type\":\"message_stop\"}", err, sizeof err),
               DEXA_E_TRANSIENT);
}

static void hostile_streams_fail_cleanly(void) {
  char err[800];
  CHECK_EQ_INT(run_text(&dexa__openai_chat_stream, "data: {\"choices\":[{\"delta\":{\"content\":\"\xC3\x28\"}}]}\n\n",
                        err, sizeof err), DEXA_E_MODEL);
  CHECK_CONTAINS(err, "UTF-8");
  char bomb[600] = "data: ";
  for (int i = 0; i < 300; i++) strcat(bomb, "[");
  strcat(bomb, "\n\n");
  CHECK_EQ_INT(run_text(&dexa__anthropic_stream, bomb, err, sizeof err), DEXA_E_TRANSIENT);
  CHECK_CONTAINS(err, "malformed JSON");
  CHECK_EQ_INT(run_text(&dexa__openai_responses_stream,
                        "data: {\"type\":\"response.output_item.done\",\"output_index\":0}\n\n", err, sizeof err),
               DEXA_E_TRANSIENT);
  CHECK_CONTAINS(err, "without an item");
  CHECK_EQ_INT(run_text(&dexa__anthropic_stream,
                        "data: {\"type\":\"content_block_delta\",\"index\":5,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
                        err, sizeof err), DEXA_E_TRANSIENT);
  CHECK_EQ_INT(run_text(&dexa__anthropic_stream,
                        "data: {\"type\":\"content_block_start\",\"index\":99999999,\"content_block\":{\"type\":\"text\"}}\n\n",
                        err, sizeof err), DEXA_E_TRANSIENT);
  CHECK_EQ_INT(run_text(&dexa__openai_chat_stream,
                        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1e9,\"id\":\"x\"}]}}]}\n\n",
                        err, sizeof err), DEXA_E_MODEL);
  CHECK_EQ_INT(run_text(&dexa__openai_chat_stream, "data: [1,2]\n\n", err, sizeof err), DEXA_E_TRANSIENT);
  /* tool arguments that are not an object */
  CHECK_EQ_INT(run_text(&dexa__openai_chat_stream,
                        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":"
                        "{\"name\":\"f\",\"arguments\":\"[1\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
                        err, sizeof err), DEXA_E_TRANSIENT);
  CHECK_CONTAINS(err, "not a JSON object");
  /* a huge line */
  size_t big = DEXA__SSE_MAX_LINE + 10;
  char *huge = malloc(big + 1);
  memset(huge, 'a', big);
  huge[big] = '\0';
  memcpy(huge, "data: ", 6);
  CHECK_EQ_INT(run_text(&dexa__openai_responses_stream, huge, err, sizeof err), DEXA_E_MODEL);
  free(huge);
}

static void unknown_events_are_ignored(void) {
  char err[800];
  CHECK_EQ_INT(run_text(&dexa__anthropic_stream,
                        "event: surprise\ndata: {\"type\":\"surprise\"}\n\n"
                        ": comment\n\n"
                        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
                        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"future_delta\",\"x\":1}}\n\n"
                        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n"
                        "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
                        "data: {\"type\":\"message_stop\"}\n\n",
                        err, sizeof err), DEXA_OK);
}

static void stream_errors_are_classified(void) {
  char err[800];
  CHECK_EQ_INT(run_text(&dexa__anthropic_stream,
                        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
                        err, sizeof err), DEXA_E_TRANSIENT);
  CHECK_CONTAINS(err, "Overloaded");
  CHECK_EQ_INT(run_text(&dexa__openai_responses_stream,
                        "data: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"slow down\"}\n\n",
                        err, sizeof err), DEXA_E_RATE_LIMITED);
  CHECK_EQ_INT(run_text(&dexa__openai_responses_stream,
                        "data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"invalid_prompt\",\"message\":\"bad prompt\"}}}\n\n",
                        err, sizeof err), DEXA_E_MODEL);
  CHECK_CONTAINS(err, "bad prompt");
  CHECK_EQ_INT(run_text(&dexa__openai_chat_stream, "data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n",
                        err, sizeof err), DEXA_E_TRANSIENT);
}

/* ---- request bodies ---- */

typedef struct fake_request {
  dexa_model_request req;
} fake_request;

/* A request with the given messages (JSON texts) and one tool. */
static void make_request(dexa_model_request *r, const char *const *msgs, size_t n) {
  dexa__model_request_init(r);
  dexa__buf_puts(&r->json, "{\"model\":\"x\",\"instructions\":\"Be brief.\",\"turn_mode\":\"executing\","
                           "\"plan\":{\"revision\":3,\"todos\":[{\"content\":\"Look\",\"status\":\"completed\"},"
                           "{\"content\":\"Report\",\"status\":\"pending\"}]},"
                           "\"summary\":{\"from_seq\":1,\"through_seq\":9,\"text\":\"Earlier: hello.\"},\"messages\":[");
  for (size_t i = 0; i < n; i++) {
    if (i) dexa__buf_putc(&r->json, ',');
    size_t off = r->json.len;
    dexa__buf_puts(&r->json, msgs[i]);
    dexa__model_request_add_message(r, off);
  }
  dexa__buf_puts(&r->json, "],\"tools\":[{\"name\":\"get_time\",\"description\":\"Time\","
                           "\"parameters\":{\"type\":\"object\",\"properties\":{}},\"effect\":\"read\"}]}");
}

static char *body_for(const dexa__provider *p, const char *name, const char *const *msgs, size_t n) {
  dexa__client_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.provider = cfg.wire = p;
  cfg.name = (char *)name;
  cfg.model = strchr(name, '/') + 1;
  cfg.parallel_tool_calls = 1;
  cfg.encrypted_reasoning = 1; /* as for a reasoning model */
  dexa_model_request r;
  make_request(&r, msgs, n);
  dexa__buf b;
  dexa__buf_init(&b);
  int rc = p->build_body(&cfg, &r, &b);
  dexa__model_request_free(&r);
  if (rc != DEXA_OK) {
    dexa__buf_free(&b);
    return NULL;
  }
  return dexa__buf_steal(&b, NULL);
}

/* Items with odd spacing, key order and escapes: only a verbatim copy keeps them. */
#define RS_ITEM "{ \"type\" : \"reasoning\",\"id\":\"rs_9\", \"summary\":[],\"encrypted_content\":\"x\\u002Fy==\" }"
#define FC_ITEM "{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"get_time\",\"arguments\":\"{}\" }"
#define TH_ITEM "{\"type\":\"thinking\",\"thinking\":\"hmm \\n\",\"signature\":\"S1g+/=\" }"
#define TU_ITEM "{\"type\":\"tool_use\",\"id\":\"call_1\",\"name\":\"get_time\",\"input\":{ }}"
#define CC_ITEM "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"arguments\":\"{}\"}}] }"
#define MSG(model, item) "{\"seq\":2,\"turn\":1,\"round\":1,\"role\":\"model\",\"model\":\"" model "\",\"item\":" item "}"
#define USER "{\"seq\":1,\"turn\":1,\"role\":\"user\",\"id\":\"m1\",\"text\":\"What time is it?\"}"
#define TOOL "{\"seq\":4,\"turn\":1,\"round\":1,\"role\":\"tool\",\"call_id\":\"call_1\",\"name\":\"get_time\",\"status\":\"ok\",\"output\":\"12:00\"}"

static void responses_replays_items_verbatim(void) {
  const char *msgs[] = {USER, MSG("openai/gpt-x", RS_ITEM), MSG("openai/gpt-x", FC_ITEM), TOOL};
  char *b = body_for(&dexa__openai_responses_provider, "openai/gpt-x", msgs, 4);
  CHECK(b);
  CHECK_CONTAINS(b, RS_ITEM "," FC_ITEM ",{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"12:00\"}");
  CHECK_CONTAINS(b, "\"store\":false,\"include\":[\"reasoning.encrypted_content\"]");
  CHECK_CONTAINS(b, "\"instructions\":\"Be brief.\\n\\nSummary of the earlier conversation:\\nEarlier: hello.");
  CHECK_CONTAINS(b, "Current plan (revision 3):\\n1. [completed] Look\\n2. [pending] Report");
  CHECK_CONTAINS(b, "\"tools\":[{\"type\":\"function\",\"name\":\"get_time\",\"description\":\"Time\"");
  free(b);
  /* Another OpenAI model: its encrypted reasoning is dropped, the call replays. */
  b = body_for(&dexa__openai_responses_provider, "openai/gpt-y", msgs, 4);
  CHECK(b);
  CHECK(!strstr(b, "rs_9"));
  CHECK_CONTAINS(b, "\"input_text\",\"text\":\"What time is it?\"}]}," FC_ITEM);
  free(b);
}

static void anthropic_replays_blocks_verbatim_in_one_message(void) {
  const char *msgs[] = {USER, MSG("anthropic/c-1", TH_ITEM), MSG("anthropic/c-1", TU_ITEM), TOOL};
  char *b = body_for(&dexa__anthropic_provider, "anthropic/c-1", msgs, 4);
  CHECK(b);
  CHECK_CONTAINS(b, "{\"role\":\"assistant\",\"content\":[" TH_ITEM "," TU_ITEM "]},{\"role\":\"user\","
                    "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"call_1\",\"content\":\"12:00\"}]}");
  CHECK_CONTAINS(b, "\"input_schema\":{\"type\":\"object\",\"properties\":{}}");
  free(b);
  /* Another Anthropic model's thinking is bound to it: dropped; the rest replays. */
  b = body_for(&dexa__anthropic_provider, "anthropic/c-2", msgs, 4);
  CHECK(b);
  CHECK(!strstr(b, "S1g+/="));
  CHECK_CONTAINS(b, "{\"role\":\"assistant\",\"content\":[" TU_ITEM "]}");
  free(b);
}

static void chat_replays_message_verbatim(void) {
  const char *msgs[] = {USER, MSG("openai-chat/m", CC_ITEM), TOOL};
  char *b = body_for(&dexa__openai_chat_provider, "openai-chat/m", msgs, 3);
  CHECK(b);
  CHECK_CONTAINS(b, CC_ITEM ",{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"12:00\"}");
  CHECK_CONTAINS(b, "{\"role\":\"system\",\"content\":\"Be brief.");
  free(b);
}

/* The demo model's messages (two call items of one round) become one
 * assistant message with both calls. */
static void foreign_messages_are_translated(void) {
  const char *msgs[] = {
      USER,
      "{\"seq\":2,\"turn\":1,\"round\":1,\"role\":\"model\",\"model\":\"mock/dex\",\"tool_calls\":[{\"call_id\":\"a\","
      "\"name\":\"get_time\",\"arguments\":{\"tz\":\"CET\"}}],\"item\":{\"type\":\"function_call\"}}",
      "{\"seq\":3,\"turn\":1,\"round\":1,\"role\":\"model\",\"model\":\"mock/dex\",\"tool_calls\":[{\"call_id\":\"b\","
      "\"name\":\"get_time\",\"arguments\":{}}],\"item\":{\"type\":\"function_call\"}}",
      "{\"seq\":4,\"turn\":1,\"round\":1,\"role\":\"tool\",\"call_id\":\"a\",\"name\":\"get_time\",\"status\":\"error\",\"output\":\"no\"}",
      "{\"seq\":5,\"turn\":1,\"round\":1,\"role\":\"tool\",\"call_id\":\"b\",\"name\":\"get_time\",\"status\":\"ok\",\"output\":\"12:00\"}",
      "{\"seq\":6,\"turn\":1,\"round\":2,\"role\":\"model\",\"model\":\"mock/dex\",\"text\":\"Noon.\",\"item\":{}}"};
  char *b = body_for(&dexa__openai_chat_provider, "openai-chat/m", msgs, 6);
  CHECK(b);
  CHECK_CONTAINS(b, "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"a\",\"type\":\"function\","
                    "\"function\":{\"name\":\"get_time\",\"arguments\":\"{\\\"tz\\\":\\\"CET\\\"}\"}},{\"id\":\"b\"");
  CHECK_CONTAINS(b, "{\"role\":\"assistant\",\"content\":\"Noon.\"}");
  free(b);
  b = body_for(&dexa__anthropic_provider, "anthropic/c", msgs, 6);
  CHECK(b);
  CHECK_CONTAINS(b, "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"a\",\"content\":\"no\",\"is_error\":true},"
                    "{\"type\":\"tool_result\",\"tool_use_id\":\"b\",\"content\":\"12:00\"}]}");
  free(b);
  b = body_for(&dexa__openai_responses_provider, "openai/g", msgs, 6);
  CHECK(b);
  CHECK_CONTAINS(b, "{\"type\":\"function_call\",\"call_id\":\"b\",\"name\":\"get_time\",\"arguments\":\"{}\"},"
                    "{\"type\":\"function_call_output\",\"call_id\":\"a\",\"output\":\"no\"}");
  free(b);
}

/* ---- retry classification, options, HTTP ---- */

static void retry_classification(void) {
  CHECK_EQ_INT(dexa__retry_status_code(429, -1, NULL), DEXA_E_RATE_LIMITED);
  CHECK_EQ_INT(dexa__retry_status_code(429, -1, "insufficient_quota"), DEXA_E_MODEL);
  CHECK_EQ_INT(dexa__retry_status_code(500, -1, NULL), DEXA_E_TRANSIENT);
  CHECK_EQ_INT(dexa__retry_status_code(529, -1, NULL), DEXA_E_TRANSIENT);
  CHECK_EQ_INT(dexa__retry_status_code(408, -1, NULL), DEXA_E_TRANSIENT);
  CHECK_EQ_INT(dexa__retry_status_code(401, -1, NULL), DEXA_E_AUTH);
  CHECK_EQ_INT(dexa__retry_status_code(403, -1, NULL), DEXA_E_AUTH);
  CHECK_EQ_INT(dexa__retry_status_code(400, -1, NULL), DEXA_E_MODEL);
  CHECK_EQ_INT(dexa__retry_status_code(404, -1, NULL), DEXA_E_MODEL);
  CHECK_EQ_INT(dexa__retry_status_code(500, 0, NULL), DEXA_E_MODEL);
  CHECK_EQ_INT(dexa__retry_status_code(400, 1, NULL), DEXA_E_TRANSIENT);
  CHECK_EQ_INT(dexa__retry_after_ms("2", NULL, 0), 2000);
  CHECK_EQ_INT(dexa__retry_after_ms("1.5", NULL, 0), 1500);
  CHECK_EQ_INT(dexa__retry_after_ms("2", "250", 0), 250);
  CHECK_EQ_INT(dexa__retry_after_ms("Wed, 21 Oct 2015 07:28:10 GMT", NULL, 1445412480), 10000);
  CHECK_EQ_INT(dexa__retry_after_ms("99999", NULL, 0), DEXA__RETRY_AFTER_MAX_MS);
  CHECK_EQ_INT(dexa__retry_after_ms("soon", NULL, 0), 0);
  char msg[256], code[64];
  const char *an = "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model: x\"}}";
  dexa__retry_error_message(an, strlen(an), "HTTP 404", msg, sizeof msg, code, sizeof code);
  CHECK_STR(msg, "HTTP 404: model: x");
  CHECK_STR(code, "not_found_error");
  dexa__retry_error_message("<html>bad gateway</html>", 24, "HTTP 502", msg, sizeof msg, code, sizeof code);
  CHECK_STR(msg, "HTTP 502: <html>bad gateway</html>");
}

static void client_options(void) {
  dexa_model *m = NULL;
  char err[256];
  const char *o = "{\"base_url\":\"http://127.0.0.1:1/v1/\",\"timeout_ms\":1000,\"reasoning_effort\":\"low\"}";
  CHECK_EQ_INT(dexa_model_client_new(&m, "openai/gpt-5-mini", o, strlen(o), err, sizeof err), DEXA_OK);
  CHECK_STR(dexa_model_name(m), "openai/gpt-5-mini");
  dexa_model_free(m);
  o = "{\"tiemout_ms\":1}";
  CHECK_EQ_INT(dexa_model_client_new(&m, "anthropic/c", o, strlen(o), err, sizeof err), DEXA_E_UNKNOWN_KEY);
  CHECK(m == NULL);
  CHECK_CONTAINS(err, "tiemout_ms");
  o = "{\"thinking_budget_tokens\":2048}";
  CHECK_EQ_INT(dexa_model_client_new(&m, "openai/g", o, strlen(o), err, sizeof err), DEXA_E_UNKNOWN_KEY);
  o = "{\"thinking_budget_tokens\":2048,\"tool_choice\":\"required\"}";
  CHECK_EQ_INT(dexa_model_client_new(&m, "anthropic/c", o, strlen(o), err, sizeof err), DEXA_E_INVALID_ARG);
  CHECK_CONTAINS(err, "thinking");
  o = "{\"timeout_ms\":-5}";
  CHECK_EQ_INT(dexa_model_client_new(&m, "openai-chat/m", o, strlen(o), err, sizeof err), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_model_client_new(&m, "cohere/x", NULL, 0, err, sizeof err), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_model_client_new(&m, "openai/", NULL, 0, err, sizeof err), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_model_client_new(&m, "openai/g", "[1]", 3, err, sizeof err), DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(dexa_model_client_new(&m, "mock/dex", "{\"x\":1}", 7, err, sizeof err), DEXA_E_UNKNOWN_KEY);
  CHECK_EQ_INT(dexa_model_client_new(&m, "mock/dex", "{}", 2, err, sizeof err), DEXA_OK);
  dexa_model_free(m);
}

static int call_once(dexa_model *m, dexa_model_reply *reply) {
  dexa_model_request r;
  const char *msgs[] = {USER};
  make_request(&r, msgs, 1);
  dexa__model_reply_init(reply);
  int rc = m->vt.generate(m->user_data, &r, reply);
  dexa__model_request_free(&r);
  return rc;
}

static void missing_key_is_auth_error(void) {
  dexa_model *m = NULL;
  const char *o = "{\"api_key_env\":\"DEXA_TEST_NO_SUCH_KEY\",\"base_url\":\"http://127.0.0.1:9/v1\"}";
  CHECK_EQ_INT(dexa_model_client_new(&m, "anthropic/c", o, strlen(o), NULL, 0), DEXA_OK);
  dexa_model_reply reply;
  int rc = call_once(m, &reply);
  int has = reply.error && strstr(reply.error, "DEXA_TEST_NO_SUCH_KEY");
  dexa__model_reply_free(&reply);
  dexa_model_free(m);
  CHECK_EQ_INT(rc, DEXA_E_AUTH);
  CHECK(has);
}

/* A listening socket that never answers: the call ends at timeout_ms. */
static void silent_server_times_out(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0 && listen(s, 4) == 0);
  getsockname(s, (struct sockaddr *)&a, &al);
  char o[160];
  snprintf(o, sizeof o, "{\"base_url\":\"http://127.0.0.1:%d/v1\",\"api_key\":\"k\",\"timeout_ms\":300}",
           ntohs(a.sin_port));
  dexa_model *m = NULL;
  CHECK_EQ_INT(dexa_model_client_new(&m, "openai/g", o, strlen(o), NULL, 0), DEXA_OK);
  dexa_model_reply reply;
  int rc = call_once(m, &reply);
  dexa__model_reply_free(&reply);
  dexa_model_free(m);
  close(s);
  CHECK_EQ_INT(rc, DEXA_E_TIMEOUT);
}

static void refused_connection_is_transient(void) {
  dexa_model *m = NULL;
  const char *o = "{\"base_url\":\"http://127.0.0.1:9/v1\"}";
  CHECK_EQ_INT(dexa_model_client_new(&m, "openai-chat/m", o, strlen(o), NULL, 0), DEXA_OK);
  dexa_model_reply reply;
  int rc = call_once(m, &reply);
  dexa__model_reply_free(&reply);
  dexa_model_free(m);
  CHECK_EQ_INT(rc, DEXA_E_TRANSIENT);
}

int main(void) {
  RUN(sse_parses_fields_and_line_ends);
  RUN(sse_same_events_at_every_split);
  RUN(sse_caps_line_length);
  RUN(utf8_validation);
  RUN(responses_tools_fixture);
  RUN(responses_text_fixture);
  RUN(chat_tools_fixture);
  RUN(anthropic_thinking_fixture);
  RUN(truncated_streams_fail);
  RUN(hostile_streams_fail_cleanly);
  RUN(unknown_events_are_ignored);
  RUN(stream_errors_are_classified);
  RUN(responses_replays_items_verbatim);
  RUN(anthropic_replays_blocks_verbatim_in_one_message);
  RUN(chat_replays_message_verbatim);
  RUN(foreign_messages_are_translated);
  RUN(retry_classification);
  RUN(client_options);
  RUN(missing_key_is_auth_error);
  RUN(silent_server_times_out);
  RUN(refused_connection_is_transient);
  TEST_MAIN_END();
}
