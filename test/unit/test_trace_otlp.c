/* The OTLP exporter's parts without a network: the protobuf writer, the
 * configuration from the OTEL_* variables, spans' bounds, the bounded queue
 * (a full queue drops and counts, never blocks) and retries on 429/503.
 * The export decoded with the official definitions is
 * test/integration/test_trace_export.c. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dexagents/dexagents.h"
#include "testing.h"
#include "trace/otlp.h"

static int bytes_are(const dexa__buf *b, const char *hex) {
  char got[512];
  size_t n = b->len < 250 ? b->len : 250;
  dexa__span_hex((const uint8_t *)b->data, n, got);
  if (strcmp(got, hex) == 0) return 1;
  fprintf(stderr, "    bytes %s, expected %s\n", got, hex);
  return 0;
}

static void pb_varints(void) {
  static const struct { uint64_t v; const char *hex; } cases[] = {
      {0, "00"}, {1, "01"}, {127, "7f"}, {128, "8001"}, {300, "ac02"},
      {16384, "808001"}, {UINT64_MAX, "ffffffffffffffffff01"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dexa__buf b;
    dexa__buf_init(&b);
    dexa__pb_varint(&b, cases[i].v);
    int ok = bytes_are(&b, cases[i].hex);
    dexa__buf_free(&b);
    CHECK(ok);
  }
}

static void pb_fields(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__pb_uint(&b, 1, 150);              /* 08 96 01 */
  dexa__pb_int(&b, 3, -1);                /* 18 + ten bytes */
  dexa__pb_string(&b, 2, "testing");      /* 12 07 74 65 73 74 69 6e 67 */
  dexa__pb_fixed64(&b, 7, 0x0102030405060708ull); /* 39 08 07 .. 01 */
  dexa__pb_double(&b, 4, 1.0);            /* 21 000000000000f03f */
  int ok = bytes_are(&b, "089601"
                         "18ffffffffffffffffff01"
                         "120774657374696e67"
                         "390807060504030201"
                         "21000000000000f03f");
  dexa__buf_free(&b);
  CHECK(ok);
}

/* Nested messages: the length is written after the content, in as few
 * bytes as it needs (1 byte up to 127, 2 past it), nested twice. */
static void pb_nested(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  size_t outer = dexa__pb_begin(&b, 1);
  size_t inner = dexa__pb_begin(&b, 2);
  dexa__pb_uint(&b, 1, 1);
  dexa__pb_end(&b, inner);
  dexa__pb_end(&b, outer);
  int ok = bytes_are(&b, "0a04" "12020801");
  dexa__buf_free(&b);
  CHECK(ok);

  dexa__buf_init(&b);
  char big[200];
  memset(big, 'a', sizeof big);
  outer = dexa__pb_begin(&b, 1);
  dexa__pb_bytes(&b, 1, big, sizeof big); /* 0a c801 + 200 bytes */
  dexa__pb_end(&b, outer);
  /* 0a, length 203 = cb 01, then 0a c8 01 and the bytes */
  CHECK_EQ_INT(b.len, 1 + 2 + 3 + 200);
  CHECK(!b.oom);
  CHECK_EQ_INT((unsigned char)b.data[0], 0x0a);
  CHECK_EQ_INT((unsigned char)b.data[1], 0xcb);
  CHECK_EQ_INT((unsigned char)b.data[2], 0x01);
  CHECK_EQ_INT((unsigned char)b.data[3], 0x0a);
  CHECK_EQ_INT((unsigned char)b.data[4], 0xc8);
  CHECK_EQ_INT((unsigned char)b.data[6], 'a');
  CHECK_EQ_INT((unsigned char)b.data[b.len - 1], 'a');
  dexa__buf_free(&b);
}

static dexa_span *test_span(const char *name) {
  dexa_span *s = dexa__span_new(name);
  if (!s) return NULL;
  memset(s->trace_id, 0x11, 16);
  memset(s->span_id, 0x22, 8);
  s->start_ns = 1000;
  s->end_ns = 2000;
  dexa__span_cstr(s, "k", "v");
  return s;
}

/* One span, encoded: the request's bytes are what opentelemetry-proto
 * says (ResourceSpans 1 > ScopeSpans 2 > Span 2 > trace_id 1, ...). */
static void pb_request(void) {
  dexa__otlp_config cfg;
  dexa__otlp_config_defaults(&cfg);
  dexa_span *s = test_span("n");
  CHECK(s);
  dexa__buf b;
  dexa__buf_init(&b);
  int rc = dexa__otlp_encode_pb(&b, &cfg, &s, 1);
  CHECK_EQ_INT(rc, DEXA_OK);
  char hex[1024];
  dexa__span_hex((const uint8_t *)b.data, b.len, hex);
  /* The span: 0a10 <16 x 11> 1208 <8 x 22> 2a01 6e 3001 39 e803.. 41 d007.. */
  CHECK_CONTAINS(hex, "0a1011111111111111111111111111111111"
                      "12082222222222222222"
                      "2a016e" "3001"
                      "39e803000000000000" "41d007000000000000"
                      "4a08" "0a016b" "1203" "0a0176"); /* attributes: KeyValue{k, AnyValue{"v"}} */
  CHECK_CONTAINS(hex, "0a0c6c6962646578616765" ); /* scope name "libdexagents" */
  CHECK_EQ_INT((unsigned char)b.data[0], 0x0a); /* resource_spans = 1 */
  dexa__buf_free(&b);
  dexa__buf_init(&b);
  rc = dexa__otlp_encode_json(&b, &cfg, &s, 1);
  CHECK_EQ_INT(rc, DEXA_OK);
  CHECK_CONTAINS(b.data, "\"traceId\":\"11111111111111111111111111111111\"");
  CHECK_CONTAINS(b.data, "\"startTimeUnixNano\":\"1000\"");
  CHECK_CONTAINS(b.data, "{\"key\":\"k\",\"value\":{\"stringValue\":\"v\"}}");
  dexa__buf_free(&b);
  dexa__span_free(s);
}

/* A span holds a bounded number of attributes and bytes: the rest is
 * counted as dropped, long text is cut (not inside a UTF-8 sequence). */
static void span_bounds(void) {
  dexa_span *s = dexa__span_new("bounded");
  CHECK(s);
  char key[32];
  for (int i = 0; i < DEXA__SPAN_MAX_ATTRS + 5; i++) {
    snprintf(key, sizeof key, "k%d", i);
    dexa__span_int(s, key, i);
  }
  CHECK_EQ_INT(dexa_span_attr_count(s), DEXA__SPAN_MAX_ATTRS);
  CHECK_EQ_INT(s->dropped_attrs, 5);
  dexa__span_free(s);

  s = dexa__span_new("cut");
  CHECK(s);
  char big[DEXA__SPAN_VALUE_MAX + 10];
  memset(big, 'x', sizeof big);
  memcpy(big + DEXA__SPAN_VALUE_MAX - 1, "\xc3\xa9", 2); /* an e-acute across the cut */
  dexa__span_str(s, "big", big, sizeof big);
  const char *text;
  size_t len;
  int32_t type;
  CHECK_EQ_INT(dexa_span_attr_at(s, 0, NULL, &type, &text, &len, NULL, NULL), DEXA_OK);
  CHECK_EQ_INT(type, DEXA_TRACE_STRING);
  CHECK_EQ_INT(len, DEXA__SPAN_VALUE_MAX - 1);
  CHECK_EQ_INT(dexa_span_attr_at(s, 1, NULL, NULL, NULL, NULL, NULL, NULL), DEXA_E_INVALID_ARG);
  CHECK_STR(dexa_span_name(s), "cut");
  dexa__span_free(s);
}

static void unset_otel(void) {
  static const char *const vars[] = {
      "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
      "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS",
      "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
      "OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
      "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

static const char *kv_get(const dexa__otlp_kv *l, size_t n, const char *k) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(l[i].key, k) == 0) return l[i].value;
  return NULL;
}

static void config_from_env(void) {
  dexa__otlp_config cfg;
  char why[200];
  unset_otel();
  CHECK_EQ_INT(dexa__otlp_config_from_env(&cfg, why, sizeof why), 0);
  CHECK_CONTAINS(why, "OTEL_EXPORTER_OTLP_ENDPOINT");

  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/", 1);
  setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b , x-other = 2,bad", 1);
  setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,deployment.environment=ci", 1);
  setenv("OTEL_BSP_MAX_QUEUE_SIZE", "10", 1);
  setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "50", 1); /* larger than the queue: clamped */
  setenv("OTEL_BSP_SCHEDULE_DELAY", "250", 1);
  setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "nonsense", 1);
  CHECK_EQ_INT(dexa__otlp_config_from_env(&cfg, why, sizeof why), 1);
  CHECK_STR(cfg.endpoint, "http://127.0.0.1:4318/v1/traces");
  CHECK_EQ_INT(cfg.json, 0);
  CHECK_STR(kv_get(cfg.headers, cfg.header_count, "api-key"), "a b");
  CHECK_STR(kv_get(cfg.headers, cfg.header_count, "x-other"), "2");
  CHECK_EQ_INT(cfg.header_count, 2);
  CHECK_STR(kv_get(cfg.resource, cfg.resource_count, "service.name"), "from-attrs");
  CHECK_STR(kv_get(cfg.resource, cfg.resource_count, "deployment.environment"), "ci");
  CHECK_STR(kv_get(cfg.resource, cfg.resource_count, "telemetry.sdk.name"), "libdexagents");
  CHECK_EQ_INT(cfg.max_queue, 10);
  CHECK_EQ_INT(cfg.max_batch, 10);
  CHECK_EQ_INT(cfg.schedule_delay_ms, 250);
  CHECK_EQ_INT(cfg.timeout_ms, 10000);
  dexa__otlp_config_free(&cfg);

  /* The traces variables win; OTEL_SERVICE_NAME wins over the attributes. */
  setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:9999/custom", 1);
  setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json", 1);
  setenv("OTEL_SERVICE_NAME", "svc", 1);
  CHECK_EQ_INT(dexa__otlp_config_from_env(&cfg, why, sizeof why), 1);
  CHECK_STR(cfg.endpoint, "http://collector:9999/custom");
  CHECK_EQ_INT(cfg.json, 1);
  CHECK_STR(kv_get(cfg.resource, cfg.resource_count, "service.name"), "svc");
  dexa__otlp_config_free(&cfg);

  setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc", 1);
  CHECK_EQ_INT(dexa__otlp_config_from_env(&cfg, why, sizeof why), 0);
  CHECK_CONTAINS(why, "grpc");
  unsetenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
  setenv("OTEL_TRACES_EXPORTER", "none", 1);
  CHECK_EQ_INT(dexa__otlp_config_from_env(&cfg, why, sizeof why), 0);
  setenv("OTEL_TRACES_EXPORTER", "console,otlp", 1);
  CHECK_EQ_INT(dexa__otlp_config_from_env(&cfg, why, sizeof why), 1);
  dexa__otlp_config_free(&cfg);
  setenv("OTEL_SDK_DISABLED", "TRUE", 1);
  CHECK_EQ_INT(dexa__otlp_config_from_env(&cfg, why, sizeof why), 0);
  CHECK_CONTAINS(why, "OTEL_SDK_DISABLED");
  unset_otel();
}

/* ---- a fake sender -------------------------------------------------------- */

typedef struct fake {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int entered;     /* sends begun */
  int gate_closed; /* sends wait while set */
  int fail_first;  /* the first N sends answer this status */
  long fail_status;
  int sends;
  size_t spans_bytes;
} fake;

static int fake_send(void *ctx, const char *body, size_t len, int64_t timeout_ms, long *status,
                     int64_t *retry_after_ms) {
  fake *f = ctx;
  pthread_mutex_lock(&f->mu);
  f->entered++;
  pthread_cond_broadcast(&f->cv);
  while (f->gate_closed) pthread_cond_wait(&f->cv, &f->mu);
  f->sends++;
  *status = f->sends <= f->fail_first ? f->fail_status : 200;
  *retry_after_ms = 0;
  f->spans_bytes += len;
  pthread_mutex_unlock(&f->mu);
  return DEXA_OK;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits (up to 60 s: a loaded machine) for the first send to begin. */
static int wait_entered(fake *f, int n) {
  int64_t deadline = now_ms() + 60000;
  pthread_mutex_lock(&f->mu);
  while (f->entered < n && now_ms() < deadline) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&f->cv, &f->mu, &ts);
  }
  int ok = f->entered >= n;
  pthread_mutex_unlock(&f->mu);
  return ok;
}

static dexa__otlp *fake_exporter(fake *f, size_t queue, size_t batch, int64_t delay_ms) {
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cv, NULL);
  dexa__otlp_config cfg;
  dexa__otlp_config_defaults(&cfg);
  cfg.max_queue = queue;
  cfg.max_batch = batch;
  cfg.schedule_delay_ms = delay_ms;
  cfg.initial_backoff_ms = 5;
  cfg.export_timeout_ms = 60000;
  dexa__otlp_sender s = {fake_send, NULL, f};
  dexa__otlp *x = NULL;
  if (dexa__otlp_new(&x, &cfg, s) != DEXA_OK) return NULL;
  return x;
}

/* While the collector hangs, the queue fills: further spans are dropped at
 * once and counted, and the count is readable; nothing waits. */
static void queue_full_drops(void) {
  fake f = {.gate_closed = 1};
  dexa__otlp *x = fake_exporter(&f, 4, 2, 60000);
  CHECK(x);
  dexa__otlp_enqueue(x, test_span("a"));
  dexa__otlp_enqueue(x, test_span("b")); /* a full batch: the thread takes both */
  CHECK(wait_entered(&f, 1));
  int refused = 0;
  for (int i = 0; i < 7; i++) refused += !dexa__otlp_enqueue(x, test_span("more")); /* 4 fit */
  CHECK_EQ_INT(refused, 3); /* the caller learns of each drop (the runtime logs it) */
  dexa__otlp_stats st;
  dexa__otlp_get_stats(x, &st);
  CHECK_EQ_INT(st.queued, 4);
  CHECK_EQ_INT(st.dropped, 3);
  CHECK_EQ_INT(st.exported, 0);
  pthread_mutex_lock(&f.mu);
  f.gate_closed = 0;
  pthread_cond_broadcast(&f.cv);
  pthread_mutex_unlock(&f.mu);
  CHECK_EQ_INT(dexa__otlp_flush(x, 60000), DEXA_OK);
  dexa__otlp_get_stats(x, &st);
  CHECK_EQ_INT(st.exported, 6);
  CHECK_EQ_INT(st.dropped, 3);
  CHECK_EQ_INT(st.queued, 0);
  CHECK_EQ_INT(f.sends, 3);
  dexa__otlp_free(x);
}

/* 503 and 429 are retried with backoff, a bounded number of times; a 400
 * is not retried. */
static void retries_bounded(void) {
  fake f = {.fail_first = 2, .fail_status = 503};
  dexa__otlp *x = fake_exporter(&f, 16, 16, 0);
  CHECK(x);
  dexa__otlp_enqueue(x, test_span("r"));
  CHECK_EQ_INT(dexa__otlp_flush(x, 60000), DEXA_OK);
  dexa__otlp_stats st;
  dexa__otlp_get_stats(x, &st);
  CHECK_EQ_INT(st.exported, 1);
  CHECK_EQ_INT(st.retries, 2);
  CHECK_EQ_INT(f.sends, 3);
  dexa__otlp_free(x);

  fake g = {.fail_first = 100, .fail_status = 429};
  x = fake_exporter(&g, 16, 16, 0);
  CHECK(x);
  dexa__otlp_enqueue(x, test_span("r"));
  CHECK_EQ_INT(dexa__otlp_flush(x, 60000), DEXA_OK);
  dexa__otlp_get_stats(x, &st);
  CHECK_EQ_INT(st.exported, 0);
  CHECK_EQ_INT(st.failed, 1);
  CHECK_EQ_INT(g.sends, 5); /* max_attempts */
  dexa__otlp_free(x);

  fake h = {.fail_first = 100, .fail_status = 400};
  x = fake_exporter(&h, 16, 16, 0);
  CHECK(x);
  dexa__otlp_enqueue(x, test_span("r"));
  CHECK_EQ_INT(dexa__otlp_flush(x, 60000), DEXA_OK);
  CHECK_EQ_INT(h.sends, 1);
  dexa__otlp_free(x);
}

/* dexa_runtime_trace_stats without an exporter says why. */
static void stats_without_exporter(void) {
  if (!dexa_build_has("sqlite")) SKIP("a runtime needs a store, and this build has none");
  unset_otel();
  dexa_model *m = NULL;
  CHECK_EQ_INT(dexa_model_demo_new(&m, "mock/dex"), DEXA_OK);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  dexa_agent *a = NULL;
  CHECK_EQ_INT(dexa_agent_new(&a, &def, NULL, 0), DEXA_OK);
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = ":memory:";
  dexa_runtime *rt = NULL;
  CHECK_EQ_INT(dexa_runtime_new(&rt, a, &o, NULL, 0), DEXA_OK);
  char *out = NULL;
  size_t len = 0;
  CHECK_EQ_INT(dexa_runtime_trace_stats(rt, &out, &len), DEXA_OK);
  CHECK_CONTAINS(out, "\"exporter\":\"none\"");
  CHECK_CONTAINS(out, "\"dropped\":0");
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_trace_stats(NULL, &out, &len), DEXA_E_INVALID_ARG);
  dexa_runtime_free(rt);
  dexa_agent_free(a);
  dexa_model_free(m);
}

int main(void) {
  RUN(pb_varints);
  RUN(pb_fields);
  RUN(pb_nested);
  RUN(pb_request);
  RUN(span_bounds);
  RUN(config_from_env);
  RUN(queue_full_drops);
  RUN(retries_bounded);
  RUN(stats_without_exporter);
  TEST_MAIN_END();
}
