/* Tracing: a span per Step method the runtime dispatches, a model span
 * under RunModel, a tool span under the tool Steps and a turn span when a
 * turn ends, handed to the host's span callbacks and to the built-in OTLP
 * exporter (src/trace). Ids are derived (hashed), never random: the trace id from
 * the session id and the turn, so every Step of one turn shares a trace
 * whichever worker or process runs it, and the turn span's id the same
 * way, so each Step span names it as parent before it exists. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "trace/otlp.h"
#include "util/buf.h"
#include "util/json_span.h"

#define ATTRS_TURN "AgentTurn"
#define ATTRS_SESSION "AgentSession"

/* ---- ids ------------------------------------------------------------------ */

/* 64 bits of parts joined by NUL, for lane k: FNV-1a from a basis of its
 * own, then the splitmix64 finalizer so every input bit reaches every
 * output bit. Ids need to be stable and spread, not secret: a hash of our
 * own keeps tracing in every build, with or without mbedTLS. */
static uint64_t id_lane(const char *const *parts, size_t count, uint64_t k) {
  uint64_t h = 0xcbf29ce484222325ULL ^ (k * 0x9e3779b97f4a7c15ULL);
  for (size_t i = 0; i < count; i++) {
    for (const unsigned char *p = (const unsigned char *)parts[i];; p++) {
      h = (h ^ *p) * 0x100000001b3ULL;
      if (!*p) break;
    }
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

/* n bytes (8 or 16) of id for parts, big-endian lanes; never all zero. */
static void derive_id(uint8_t *out, size_t n, const char *const *parts, size_t count) {
  for (size_t lane = 0; lane * 8 < n; lane++) {
    uint64_t h = id_lane(parts, count, lane + 1);
    for (size_t b = 0; b < 8 && lane * 8 + b < n; b++) out[lane * 8 + b] = (uint8_t)(h >> (56 - 8 * b));
  }
  int zero = 1;
  for (size_t i = 0; i < n; i++) zero &= out[i] == 0;
  if (zero) out[n - 1] = 1;
}

static void turn_ids(const char *sid, int64_t turn, uint8_t trace_id[16], uint8_t turn_span[8]) {
  char t[24];
  snprintf(t, sizeof t, "%lld", (long long)turn);
  const char *tp[] = {"dexagents.trace", sid, t};
  derive_id(trace_id, 16, tp, 3);
  const char *sp[] = {"dexagents.turn", sid, t};
  derive_id(turn_span, 8, sp, 3);
}

static void step_span_id(const dexa_call *call, const char *what, uint8_t out[8]) {
  char a[48];
  snprintf(a, sizeof a, "%d.%d", (int)call->kind, (int)call->attempt);
  const char *p[] = {"dexagents.span", call->session_id,
                     call->step_execution_id ? call->step_execution_id : call->name, a, what};
  derive_id(out, 8, p, 5);
}

/* ---- small JSON readers --------------------------------------------------- */

/* A top-level string member of json copied into out ("" when absent). */
static void get_str(const char *json, size_t n, const char *key, char *out, size_t size) {
  const char *v;
  size_t vl;
  out[0] = '\0';
  if (!json || dexa__json_get(json, n, key, &v, &vl) != 0 || vl < 2 || v[0] != '"') return;
  cJSON *s = cJSON_ParseWithLength(v, vl);
  if (cJSON_IsString(s)) snprintf(out, size, "%s", s->valuestring);
  cJSON_Delete(s);
}

static int64_t get_i64(const char *json, size_t n, const char *key, int64_t dflt) {
  int64_t v;
  return json && dexa__json_get_i64(json, n, key, &v) == 0 ? v : dflt;
}

/* Reads the attribute key through the call's reader into a new string. */
static char *read_attr(const dexa_call *call, const char *key, size_t *len) {
  const char *v;
  size_t vl;
  if (!call->attr_get || call->attr_get(call->attr_user_data, key, strlen(key), &v, &vl) != DEXA_OK)
    return NULL;
  char *copy = malloc(vl + 1);
  if (!copy) return NULL;
  memcpy(copy, v, vl);
  copy[vl] = '\0';
  *len = vl;
  return copy;
}

/* ---- set-up --------------------------------------------------------------- */

static int tracing(const dexa_runtime *rt) {
  return rt->span_start || rt->span_end || rt->otlp;
}

int dexa__trace_open(dexa_runtime *rt, const dexa_runtime_options *o) {
  size_t need = offsetof(dexa_runtime_options, reserved1) + sizeof(int32_t);
  int off = 0;
  if (o && o->struct_size >= need) {
    rt->span_start = o->on_span_start;
    rt->span_end = o->on_span_end;
    rt->trace_user = o->trace_user_data;
    off = o->otlp_exporter_off;
  }
  if (off) {
    snprintf(rt->otlp_why, sizeof rt->otlp_why, "turned off in the runtime options");
    return DEXA_OK;
  }
  dexa__otlp_config cfg;
  int on = dexa__otlp_config_from_env(&cfg, rt->otlp_why, sizeof rt->otlp_why);
  if (on <= 0) return on == 0 ? DEXA_OK : on;
  dexa__otlp_sender sender;
  int rc = dexa__otlp_http_sender_new(&sender, &cfg);
  if (rc != DEXA_OK) {
    dexa__otlp_config_free(&cfg);
    if (rc == DEXA_E_UNSUPPORTED)
      snprintf(rt->otlp_why, sizeof rt->otlp_why, "the OTLP exporter needs libcurl: built without WITH_CURL=1");
    else
      snprintf(rt->otlp_why, sizeof rt->otlp_why, "cannot start the HTTP client: %s", dexa_strerror(rc));
    return DEXA_OK; /* tracing is never a reason not to run */
  }
  rc = dexa__otlp_new(&rt->otlp, &cfg, sender);
  if (rc != DEXA_OK)
    snprintf(rt->otlp_why, sizeof rt->otlp_why, "cannot start the exporter: %s", dexa_strerror(rc));
  return DEXA_OK;
}

void dexa__trace_flush(dexa_runtime *rt) {
  if (rt->otlp) (void)dexa__otlp_flush(rt->otlp, dexa__otlp_get_config(rt->otlp)->export_timeout_ms);
}

void dexa__trace_close(dexa_runtime *rt) {
  dexa__otlp_free(rt->otlp);
  rt->otlp = NULL;
}

/* The end of a span: the host's callback, then the exporter, which takes it. */
static void span_done(dexa_runtime *rt, dexa_span *s) {
  if (rt->span_end) rt->span_end(rt->trace_user, s);
  if (!rt->otlp) {
    dexa__span_free(s);
  } else if (!dexa__otlp_enqueue(rt->otlp, s)) {
    /* rate-limited by the log: one line per 10 s saying how many followed */
    dexa__log(rt, DEXA_LOG_WARNING, "otlp-drop",
              "tracing: a span was dropped: the OTLP exporter's queue is full (OTEL_BSP_MAX_QUEUE_SIZE)");
  }
}

/* ---- Step spans ----------------------------------------------------------- */

void dexa__trace_step_begin(dexa_runtime *rt, const dexa_call *call, dexa__step_trace *t) {
  memset(t, 0, sizeof *t);
  if (!tracing(rt) || call->kind == DEXA_CALL_RPC) return;
  size_t tl = 0;
  char *turn_json = read_attr(call, ATTRS_TURN, &tl);
  int64_t turn = get_i64(call->input, call->input_len, "turn", -1);
  char status[32];
  get_str(turn_json, tl, "status", status, sizeof status);
  int64_t current = get_i64(turn_json, tl, "turn", -1);
  if (turn < 0) /* between turns, a Step leads to the next one */
    turn = current < 0 ? 0 : strcmp(status, "running") == 0 ? current : current + 1;
  t->turn = turn;
  t->turn_since_ms =
      current == turn && strcmp(status, "running") == 0 ? get_i64(turn_json, tl, "since_ms", 0) : 0;
  free(turn_json);
  if (strcmp(call->name, "RunModel") == 0 && call->kind == DEXA_CALL_EXECUTE) {
    size_t sl = 0;
    char *session = read_attr(call, ATTRS_SESSION, &sl);
    get_str(session, sl, "model", t->model, sizeof t->model);
    free(session);
  }
  dexa_span *s = t->span = dexa__span_new(call->name);
  if (!s) return;
  uint8_t turn_span[8];
  turn_ids(call->session_id, turn, s->trace_id, turn_span);
  memcpy(s->parent_id, turn_span, 8);
  step_span_id(call, "step", s->span_id);
  s->start_ns = dexa__span_now_ns();
  dexa__span_cstr(s, "dexagents.session.id", call->session_id);
  dexa__span_int(s, "dexagents.turn", turn);
  dexa__span_cstr(s, "dexagents.step.type", call->name);
  dexa__span_cstr(s, "dexagents.step.method", call->kind == DEXA_CALL_WAIT_FOR ? "wait_for" : "execute");
  if (call->step_execution_id) dexa__span_cstr(s, "dexagents.step.execution_id", call->step_execution_id);
  dexa__span_int(s, "dexagents.step.attempt", call->attempt);
  int64_t round = get_i64(call->input, call->input_len, "round", -1);
  if (round >= 0) dexa__span_int(s, "dexagents.round", round);
  if (call->recovery_error) dexa__span_bool(s, "dexagents.step.recovery", 1);
  if (rt->span_start) rt->span_start(rt->trace_user, s);
}

/* The result's first event of type, or NULL. */
static const char *find_event(const dexa_result *res, const char *type, size_t *len) {
  size_t n = res ? dexa_result_event_count(res) : 0;
  for (size_t i = 0; i < n; i++) {
    const char *j;
    size_t jl;
    char ty[48];
    if (dexa_result_event_at(res, i, &j, &jl) != DEXA_OK) continue;
    get_str(j, jl, "type", ty, sizeof ty);
    if (strcmp(ty, type) == 0) {
      *len = jl;
      return j;
    }
  }
  return NULL;
}

static dexa_span *child_span(const dexa_call *call, const dexa_span *step, const char *name,
                             const char *what) {
  dexa_span *c = dexa__span_new(name);
  if (!c) return NULL;
  memcpy(c->trace_id, step->trace_id, 16);
  memcpy(c->parent_id, step->span_id, 8);
  step_span_id(call, what, c->span_id);
  c->start_ns = step->start_ns;
  c->end_ns = step->end_ns;
  return c;
}

/* The GenAI provider name (gen_ai.provider.name) of a client name's prefix. */
static const char *provider_of(const char *model, char *buf, size_t size) {
  static const char *const map[][2] = {
      {"openai", "openai"},       {"openai-chat", "openai"},    {"anthropic", "anthropic"},
      {"gemini", "gcp.gemini"},   {"vertex", "gcp.vertex_ai"},  {"bedrock", "aws.bedrock"},
      {"azure", "azure.ai.openai"}, {"mock", "dexagents.demo"}};
  const char *slash = strchr(model, '/');
  size_t n = slash ? (size_t)(slash - model) : 0;
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strlen(map[i][0]) == n && strncmp(model, map[i][0], n) == 0) return map[i][1];
  snprintf(buf, size, "%.*s", (int)(n ? n : strlen(model)), model);
  return buf;
}

static const char *model_id(const char *model) {
  const char *slash = strchr(model, '/');
  return slash && slash[1] ? slash + 1 : model;
}

typedef struct model_reply {
  char model[128];
  int64_t input_tokens, output_tokens;
  int have_usage;
  dexa__buf finish; /* a JSON array of the replies' finish reasons */
  int finish_count;
} model_reply;

/* Adds up the model messages RunModel writes (AgentMessages/<seq>). */
static void read_model_writes(const dexa_result *res, model_reply *m) {
  size_t n = res ? dexa_result_write_count(res) : 0;
  dexa__buf_puts(&m->finish, "[");
  for (size_t i = 0; i < n; i++) {
    const char *k, *v;
    size_t kl, vl;
    char role[16], fr[64];
    if (dexa_result_write_at(res, i, &k, &kl, &v, &vl) != DEXA_OK || !v) continue;
    if (kl < 14 || memcmp(k, "AgentMessages/", 14) != 0) continue;
    get_str(v, vl, "role", role, sizeof role);
    if (strcmp(role, "model") != 0) continue;
    if (!m->model[0]) get_str(v, vl, "model", m->model, sizeof m->model);
    get_str(v, vl, "finish_reason", fr, sizeof fr);
    if (fr[0]) {
      dexa__buf_puts(&m->finish, m->finish_count++ ? "," : "");
      dexa__buf_json_cstr(&m->finish, fr);
    }
    const char *u;
    size_t ul;
    if (dexa__json_get(v, vl, "usage", &u, &ul) == 0) {
      m->have_usage = 1;
      m->input_tokens += get_i64(u, ul, "input_tokens", 0);
      m->output_tokens += get_i64(u, ul, "output_tokens", 0);
    }
  }
  dexa__buf_puts(&m->finish, "]");
}

static void error_status(dexa_span *s, const dexa_result *res, int rc) {
  const char *msg = res ? dexa_result_errmsg(res) : NULL;
  dexa__span_set_status(s, DEXA_SPAN_ERROR, msg && *msg ? msg : dexa_strerror(rc));
  dexa__span_cstr(s, "error.type", dexa_error_name(rc));
}

static void model_span(dexa_runtime *rt, const dexa_call *call, const dexa__step_trace *t,
                       const dexa_result *res, int rc) {
  model_reply m = {0};
  dexa__buf_init(&m.finish);
  read_model_writes(rc == DEXA_OK ? res : NULL, &m);
  char request[128], from[128], pbuf[64];
  snprintf(request, sizeof request, "%s", t->model[0] ? t->model : m.model);
  size_t fl;
  const char *fb = find_event(res, "model_fallback", &fl);
  get_str(fb, fb ? fl : 0, "from", from, sizeof from);
  if (from[0]) snprintf(request, sizeof request, "%s", from);
  char name[160];
  snprintf(name, sizeof name, "chat %s", model_id(request));
  dexa_span *s = child_span(call, t->span, name, "model");
  if (s) {
    s->kind = DEXA_SPAN_CLIENT;
    const char *provider = provider_of(request[0] ? request : m.model, pbuf, sizeof pbuf);
    dexa__span_cstr(s, "gen_ai.operation.name", "chat");
    dexa__span_cstr(s, "gen_ai.provider.name", provider);
    dexa__span_cstr(s, "gen_ai.system", provider);
    if (request[0]) dexa__span_cstr(s, "gen_ai.request.model", model_id(request));
    if (m.model[0]) dexa__span_cstr(s, "gen_ai.response.model", model_id(m.model));
    if (m.have_usage) {
      dexa__span_int(s, "gen_ai.usage.input_tokens", m.input_tokens);
      dexa__span_int(s, "gen_ai.usage.output_tokens", m.output_tokens);
    }
    if (m.finish_count && !m.finish.oom)
      dexa__span_str_array(s, "gen_ai.response.finish_reasons", m.finish.data, m.finish.len);
    dexa__span_cstr(s, "dexagents.session.id", call->session_id);
    dexa__span_int(s, "dexagents.turn", t->turn);
    if (m.model[0]) dexa__span_cstr(s, "dexagents.model", m.model);
    if (rc != DEXA_OK) error_status(s, res, rc);
    if (rt->span_start) rt->span_start(rt->trace_user, s);
    span_done(rt, s);
  }
  dexa__buf_free(&m.finish);
}

static void tool_span(dexa_runtime *rt, const dexa_call *call, const dexa__step_trace *t,
                      const dexa_result *res, int rc) {
  char tool[128], call_id[128], effect[32], source[128], outcome[48], name[160];
  get_str(call->input, call->input_len, "name", tool, sizeof tool);
  get_str(call->input, call->input_len, "call_id", call_id, sizeof call_id);
  get_str(call->input, call->input_len, "effect", effect, sizeof effect);
  get_str(call->input, call->input_len, "source", source, sizeof source);
  size_t el;
  const char *fin = rc == DEXA_OK ? find_event(res, "tool_call_finished", &el) : NULL;
  get_str(fin, fin ? el : 0, "status", outcome, sizeof outcome);
  if (rc != DEXA_OK) snprintf(outcome, sizeof outcome, "error");
  else if (!outcome[0] && find_event(res, "question_asked", &el)) snprintf(outcome, sizeof outcome, "question");
  snprintf(name, sizeof name, "execute_tool %s", tool);
  dexa_span *s = child_span(call, t->span, name, "tool");
  if (!s) return;
  dexa__span_cstr(s, "gen_ai.operation.name", "execute_tool");
  dexa__span_cstr(s, "gen_ai.tool.name", tool);
  if (call_id[0]) dexa__span_cstr(s, "gen_ai.tool.call.id", call_id);
  dexa__span_cstr(s, "gen_ai.tool.type", "function");
  if (effect[0]) dexa__span_cstr(s, "dexagents.tool.effect", effect);
  if (source[0]) dexa__span_cstr(s, "dexagents.tool.source", source);
  if (outcome[0]) dexa__span_cstr(s, "dexagents.tool.outcome", outcome);
  dexa__span_cstr(s, "dexagents.session.id", call->session_id);
  dexa__span_int(s, "dexagents.turn", t->turn);
  if (rc != DEXA_OK) error_status(s, res, rc);
  else if (strcmp(outcome, "error") == 0 || strcmp(outcome, "unknown_outcome") == 0)
    dexa__span_set_status(s, DEXA_SPAN_ERROR, outcome);
  if (rt->span_start) rt->span_start(rt->trace_user, s);
  span_done(rt, s);
}

/* A turn that ended in this Step gets its span: from the turn's start
 * (AgentTurn.since_ms) to now, the root of the turn's trace. */
static void turn_span(dexa_runtime *rt, const dexa_call *call, const dexa__step_trace *t,
                      const dexa_result *res) {
  static const char *const ends[][2] = {
      {"turn_finished", "finished"}, {"turn_failed", "failed"}, {"turn_cancelled", "cancelled"}};
  for (size_t i = 0; i < 3; i++) {
    size_t el;
    const char *e = find_event(res, ends[i][0], &el);
    if (!e) continue;
    int64_t turn = get_i64(e, el, "turn", t->turn);
    dexa_span *s = dexa__span_new("turn");
    if (!s) return;
    uint8_t span_id[8];
    turn_ids(call->session_id, turn, s->trace_id, span_id);
    memcpy(s->span_id, span_id, 8);
    s->end_ns = t->span->end_ns;
    s->start_ns = turn == t->turn && t->turn_since_ms > 0 ? t->turn_since_ms * 1000000
                                                          : t->span->start_ns;
    if (s->start_ns > s->end_ns) s->start_ns = s->end_ns;
    dexa__span_cstr(s, "dexagents.session.id", call->session_id);
    dexa__span_int(s, "dexagents.turn", turn);
    dexa__span_cstr(s, "dexagents.turn.outcome", ends[i][1]);
    char fr[64];
    get_str(e, el, "finish_reason", fr, sizeof fr);
    if (fr[0]) dexa__span_cstr(s, "dexagents.turn.finish_reason", fr);
    const char *u;
    size_t ul;
    if (dexa__json_get(e, el, "usage", &u, &ul) == 0) {
      dexa__span_int(s, "gen_ai.usage.input_tokens", get_i64(u, ul, "input_tokens", 0));
      dexa__span_int(s, "gen_ai.usage.output_tokens", get_i64(u, ul, "output_tokens", 0));
      dexa__span_int(s, "dexagents.turn.model_calls", get_i64(u, ul, "calls", 0));
    }
    if (i == 1) dexa__span_set_status(s, DEXA_SPAN_ERROR, "the turn failed");
    if (rt->span_start) rt->span_start(rt->trace_user, s);
    span_done(rt, s);
    return;
  }
}

static const char *step_outcome(const dexa_call *call, const dexa_result *res, int rc) {
  if (rc != DEXA_OK) return "error";
  const char *w;
  size_t wl;
  if (call->kind == DEXA_CALL_WAIT_FOR && dexa_result_wait(res, &w, &wl) == DEXA_OK && w &&
      !(wl == 4 && memcmp(w, "null", 4) == 0))
    return "waiting";
  return "ok";
}

void dexa__trace_step_end(dexa_runtime *rt, const dexa_call *call, const dexa_result *res, int rc,
                          dexa__step_trace *t) {
  dexa_span *s = t->span;
  if (!s) return;
  t->span = NULL;
  s->end_ns = dexa__span_now_ns();
  const char *outcome = step_outcome(call, res, rc);
  dexa__span_cstr(s, "dexagents.step.outcome", outcome);
  if (rc != DEXA_OK) error_status(s, res, rc);
  else dexa__span_set_status(s, DEXA_SPAN_OK, NULL);
  t->span = s; /* children read its ids and times */
  if (call->kind == DEXA_CALL_EXECUTE) {
    if (strcmp(call->name, "RunModel") == 0) model_span(rt, call, t, res, rc);
    if (strcmp(call->name, "CallTool") == 0 || strcmp(call->name, "CallSingleAttemptTool") == 0)
      tool_span(rt, call, t, res, rc);
  }
  if (rc == DEXA_OK) turn_span(rt, call, t, res);
  t->span = NULL;
  span_done(rt, s);
}

/* ---- stats ---------------------------------------------------------------- */

DEXA_EXTERN int dexa_runtime_trace_stats(const dexa_runtime *rt, char **out, size_t *out_len) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (!rt || !out) return DEXA_E_INVALID_ARG;
  dexa__otlp_stats st;
  dexa__otlp_get_stats(rt->otlp, &st);
  const dexa__otlp_config *cfg = dexa__otlp_get_config(rt->otlp);
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_printf(&b, "{\"exporter\":\"%s\"", cfg ? "otlp" : "none");
  if (!cfg) {
    dexa__buf_puts(&b, ",\"reason\":");
    dexa__buf_json_cstr(&b, rt->otlp_why);
  } else {
    dexa__buf_puts(&b, ",\"endpoint\":");
    dexa__buf_json_cstr(&b, cfg->endpoint);
    dexa__buf_printf(&b, ",\"protocol\":\"%s\"", cfg->json ? "http/json" : "http/protobuf");
  }
  dexa__buf_printf(&b,
                   ",\"queued\":%lld,\"exported\":%lld,\"dropped\":%lld,\"failed\":%lld,"
                   "\"retries\":%lld}",
                   (long long)st.queued, (long long)st.exported, (long long)st.dropped,
                   (long long)st.failed, (long long)st.retries);
  if (b.oom) {
    dexa__buf_free(&b);
    return DEXA_E_NOMEM;
  }
  *out = dexa__buf_steal(&b, out_len);
  return DEXA_OK;
}
