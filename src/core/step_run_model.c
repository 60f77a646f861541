/* RunModel: one model call. Builds the input from durable state, streams
 * deltas live, stores every output item verbatim, and routes each tool call
 * to its own Step (in parallel) joined by ResumeTurn; a reply without tool
 * calls ends the turn. A transient failure is retried by the host; after the
 * last attempt, or at once for a permanent failure, RecordTurnFailure runs.
 * Its start and its end are safe boundaries for a steer or stop
 * (ApplyTurnControl); when the input nears the context window,
 * CompactContext runs first. A harness (dexagents-harness(7)) runs one
 * segment of its framework instead of the model call (harness_segment.c). */
#include <stdio.h>
#include <string.h>

#include "core/harness.h"
#include "core/model_fallback.h"
#include "core/model_request.h"
#include "core/settings.h"
#include "core/usage.h"
#include "util/json_span.h"

typedef dexa__run run;

static int decide_turn_step(run *r, const char *step) {
  char input[80];
  snprintf(input, sizeof input, "{\"turn\":%lld,\"round\":%lld}", (long long)r->turn,
           (long long)r->round);
  return dexa__decide_next(r->c, step, input);
}

static void emit_delta(void *ctx, int kind, const char *text, size_t len) {
  run *r = ctx;
  dexa__buf e;
  dexa__event_begin(r->c, &e, kind == DEXA_DELTA_TEXT ? "text_delta" : "reasoning_delta");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"text\":", (long long)r->turn);
  dexa__buf_json_str(&e, text, len);
  dexa__buf_putc(&e, '}');
  if (!e.oom) dexa__event_live(r->c, e.data, e.len);
  dexa__buf_free(&e);
}

static int fail_turn(run *r, int code, const char *message, const char *why) {
  dexa__buf in;
  dexa__buf_init(&in);
  dexa__buf_printf(&in, "{\"turn\":%lld,\"round\":%lld,\"error\":{\"code\":%d,\"message\":",
                   (long long)r->turn, (long long)r->round, code);
  dexa__buf_json_cstr(&in, message);
  if (why) dexa__buf_printf(&in, ",\"finish_reason\":\"%s\"", why);
  dexa__buf_puts(&in, "}}");
  int rc = in.oom ? DEXA_E_NOMEM : dexa__decide_next(r->c, STEP_RECORD_TURN_FAILURE, in.data);
  dexa__buf_free(&in);
  return rc;
}

/* The host says the turn was stopped, or a stop waits for a boundary: a
 * call that ends then ends the turn as a Stop does, whatever it returned. */
static int stopped(run *r) {
  char action[16];
  int rc;
  if (dexa__call_cancelled(r->c->call)) return 1;
  return dexa__control_pending(r->c, r->turn, action, &rc) && strcmp(action, "cancel") == 0;
}

static int call_cancelled(void *ctx) {
  run *r = ctx;
  return dexa__call_cancelled(r->c->call);
}

/* A failed model call: transient ones go back to the host for a retry,
 * anything else fails the turn now (retrying cannot help). */
static int model_failed(run *r, int code) {
  if (stopped(r)) return decide_turn_step(r, STEP_APPLY_TURN_CONTROL);
  const char *msg = r->reply.error ? r->reply.error : dexa_strerror(code);
  int cls = dexa_error_class(code);
  if (cls == DEXA_CLASS_TRANSIENT || cls == DEXA_CLASS_FATAL) {
    dexa__result_failf(r->c->result, code, "model %s: %s", dexa_model_name(r->model), msg);
    r->c->result->retry_after_ms = r->reply.retry_after_ms;
    return code;
  }
  return fail_turn(r, code, msg, NULL);
}

/* Why the model stopped: the client's word, else what the reply shows. */
static const char *finish_reason(const dexa_model_reply *reply) {
  if (reply->finish_reason[0]) return reply->finish_reason;
  return reply->tool_call_count ? "tool_calls" : "stop";
}

static void build_model_message(run *r, dexa__buf *m, int64_t seq, size_t i) {
  const dexa__reply_item *it = &r->reply.items[i];
  dexa__buf_puts(m, "{\"seq\":");
  dexa__buf_json_i64(m, seq);
  dexa__buf_puts(m, ",\"turn\":");
  dexa__buf_json_i64(m, r->turn);
  dexa__buf_puts(m, ",\"round\":");
  dexa__buf_json_i64(m, r->round);
  dexa__buf_puts(m, ",\"role\":\"model\",\"model\":");
  dexa__buf_json_cstr(m, dexa_model_name(r->model));
  dexa__buf_puts(m, ",\"at\":");
  dexa__buf_json_i64(m, r->c->call->now_ms);
  if (it->text.len) {
    dexa__buf_puts(m, ",\"text\":");
    dexa__buf_json_str(m, it->text.data, it->text.len);
  }
  if (it->reasoning.len) {
    dexa__buf_puts(m, ",\"reasoning\":");
    dexa__buf_json_str(m, it->reasoning.data, it->reasoning.len);
  }
  if (it->tool_call_count) {
    dexa__buf_puts(m, ",\"tool_calls\":[");
    dexa__buf_append(m, it->tool_calls.data, it->tool_calls.len);
    dexa__buf_putc(m, ']');
  }
  dexa__buf_puts(m, ",\"finish_reason\":\"");
  dexa__buf_puts(m, finish_reason(&r->reply));
  dexa__buf_putc(m, '"');
  if (r->reply.provider_finish_reason[0])
    dexa__buf_printf(m, ",\"provider_finish_reason\":\"%s\"", r->reply.provider_finish_reason);
  if (r->reply.has_usage && i + 1 == r->reply.item_count) {
    dexa__buf_puts(m, ",\"usage\":");
    dexa__usage_put(m, &r->reply);
  }
  dexa__buf_puts(m, ",\"item\":");
  dexa__buf_append(m, it->json, it->json_len); /* verbatim */
  dexa__buf_putc(m, '}');
}

static int store_items(run *r, dexa__transcript *t) {
  int rc = DEXA_OK;
  dexa__buf m;
  dexa__buf_init(&m);
  for (size_t i = 0; i < r->reply.item_count && rc == DEXA_OK; i++) {
    dexa__buf_reset(&m);
    int64_t seq = t->next_seq++;
    build_model_message(r, &m, seq, i);
    if (m.oom) rc = DEXA_E_NOMEM;
    if (rc == DEXA_OK) rc = dexa__message_put(r->c, t, seq, m.data, m.len);
    if (rc == DEXA_OK) rc = dexa__event_message(r->c, m.data, m.len);
  }
  dexa__buf_free(&m);
  return rc;
}

static int finish_turn(run *r) {
  int rc = dexa__turn_set(r->c, r->turn, "idle", r->state.mode, NULL);
  const char *why = finish_reason(&r->reply);
  dexa__buf e;
  dexa__event_begin(r->c, &e, "turn_finished");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"finish_reason\":\"%s\"", (long long)r->turn, why);
  if (strcmp(why, "length") == 0) dexa__buf_puts(&e, ",\"truncated\":true");
  if (rc == DEXA_OK) rc = dexa__usage_put_turn(r->c, r->turn, &e);
  if (rc == DEXA_OK) rc = dexa__event_end(r->c, &e);
  else dexa__buf_free(&e);
  if (rc == DEXA_OK) rc = dexa__decide_next(r->c, STEP_AWAIT_USER_MESSAGE, NULL);
  return rc;
}

/* All tool calls of the reply as one JSON array. */
static cJSON *reply_calls(const dexa_model_reply *reply) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_putc(&b, '[');
  int first = 1;
  for (size_t i = 0; i < reply->item_count; i++) {
    const dexa__reply_item *it = &reply->items[i];
    if (!it->tool_call_count) continue;
    if (!first) dexa__buf_putc(&b, ',');
    dexa__buf_append(&b, it->tool_calls.data, it->tool_calls.len);
    first = 0;
  }
  dexa__buf_putc(&b, ']');
  cJSON *calls = b.oom ? NULL : cJSON_ParseWithLength(b.data, b.len);
  dexa__buf_free(&b);
  return calls;
}

/* Stores the reply; a steer or stop that came in meanwhile cancels its
 * calls (none has started) and ends the turn through ApplyTurnControl. */
static int record_reply(run *r) {
  dexa__transcript t;
  char action[16];
  int rc = dexa__transcript_load(r->c, &t);
  if (rc == DEXA_OK) rc = store_items(r, &t);
  if (rc == DEXA_OK && r->segment) rc = dexa__segment_record(r, &t);
  if (rc == DEXA_OK) rc = dexa__usage_add(r->c, r->turn, &r->reply);
  if (rc != DEXA_OK) return rc;
  if (strcmp(finish_reason(&r->reply), "length") == 0 && dexa__settings_fail_on_truncation(r->c, &rc)) {
    if (rc == DEXA_OK) rc = dexa__transcript_store(r->c, &t);
    return rc != DEXA_OK ? rc
                         : fail_turn(r, DEXA_E_MODEL, "the answer was cut at the output token limit",
                                     "length");
  }
  if (rc != DEXA_OK) return rc;
  if (r->segment && r->segment->over_limit) {
    rc = dexa__transcript_store(r->c, &t);
    return rc == DEXA_OK ? fail_turn(r, DEXA_E_STATE_LIMIT, r->segment->why, NULL) : rc;
  }
  int control =
      dexa__control_pending(r->c, r->turn, action, &rc) || dexa__call_cancelled(r->c->call);
  if (rc != DEXA_OK) return rc;
  cJSON *calls = r->reply.tool_call_count ? reply_calls(&r->reply) : NULL;
  if (r->reply.tool_call_count && !calls) return DEXA_E_NOMEM;
  if (calls && r->segment) rc = dexa__segment_policies(r, calls);
  dexa__decision d;
  dexa__decision_init(&d);
  if (calls && rc == DEXA_OK)
    rc = dexa__route_tool_calls(r->c, &r->tools, calls, &r->state, r->round, &t, &d, control);
  cJSON_Delete(calls);
  if (rc == DEXA_OK) rc = dexa__transcript_store(r->c, &t);
  if (rc == DEXA_OK && (control || !calls)) {
    dexa__buf_free(&d.b);
    return control ? decide_turn_step(r, STEP_APPLY_TURN_CONTROL) : finish_turn(r);
  }
  if (rc == DEXA_OK) return dexa__decision_commit(r->c, &d);
  dexa__buf_free(&d.b);
  return rc;
}

/* When the summary (if any) was written: usage measured before it counted
 * messages that are summarized now. */
static int64_t summary_time(const dexa_model_request *req) {
  const char *sum;
  size_t n;
  int64_t at = 0;
  if (dexa__json_get(req->json.data, req->json.len, "summary", &sum, &n) == 0)
    dexa__json_get_i64(sum, n, "at", &at);
  return at;
}

/* Tokens of the next model input: the provider's own count from the newest
 * model call since the last compaction (its input plus output tokens) plus
 * about a token per 4 bytes of what came after it; never less than the
 * request's bytes / 4. */
static int64_t estimate_tokens(const dexa_model_request *req) {
  int64_t by_bytes = (int64_t)(req->json.len / 4), since = summary_time(req);
  size_t after = 0;
  for (size_t i = req->message_count; i-- > 0;) {
    const char *m = req->json.data + req->messages[i].off, *u;
    size_t n = req->messages[i].len, ul;
    int64_t in = 0, out = 0, at = 0;
    if (dexa__json_get(m, n, "usage", &u, &ul) == 0) {
      dexa__json_get_i64(m, n, "at", &at);
      if (at < since) break; /* measured before the summary: stale */
      dexa__json_get_i64(u, ul, "input_tokens", &in);
      dexa__json_get_i64(u, ul, "output_tokens", &out);
      int64_t by_usage = in + out + (int64_t)(after / 4);
      return by_usage > by_bytes ? by_usage : by_bytes;
    }
    after += n;
  }
  return by_bytes;
}

/* 1 when the request nears the context window and compaction may help. */
static int needs_compaction(run *r) {
  const dexa_agent_def *def = &r->c->agent->def;
  if (def->context_window_tokens <= 0 || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r->c->input, "compacted")))
    return 0;
  if (r->segment && !dexa__segment_compacts(r)) return 0;
  return estimate_tokens(&r->req) * 100 >= def->context_window_tokens * def->compaction_threshold_pct;
}

static int call_model(run *r) {
  int planning = strcmp(r->state.mode, "planning") == 0;
  int rc = dexa__tool_catalog(r->c, &r->tools, planning);
  if (rc == DEXA_OK)
    rc = r->segment ? dexa__segment_request(r)
                    : dexa__model_request_build(r->c, r->model, &r->state, r->round, &r->tools,
                                                &r->req);
  if (rc != DEXA_OK) return rc;
  if (r->segment && r->segment->over_limit)
    return fail_turn(r, DEXA_E_STATE_LIMIT, r->segment->why, NULL);
  if (needs_compaction(r)) {
    char input[96];
    snprintf(input, sizeof input, "{\"turn\":%lld,\"round\":%lld,\"compacted\":true}",
             (long long)r->turn, (long long)r->round);
    return dexa__decide_next(r->c, STEP_COMPACT_CONTEXT, input);
  }
  r->req.emit = emit_delta;
  r->req.emit_ctx = r;
  r->req.cancelled = call_cancelled;
  r->req.cancel_ctx = r;
  if (r->segment) {
    rc = dexa__segment_run(r);
    if (rc == DEXA_OK && r->reply.oom) rc = DEXA_E_NOMEM;
    if (rc == DEXA_OK && r->reply.item_count == 0) {
      dexa_model_reply_set_error(&r->reply, "the model returned no output", 0);
      rc = DEXA_E_TRANSIENT;
    }
  } else {
    rc = dexa__model_generate(r->c, r->turn, r->round, &r->model, &r->req, &r->reply);
  }
  if (rc != DEXA_OK) return model_failed(r, rc);
  return record_reply(r);
}

int dexa__step_run_model(dexa__ctx *c) {
  run r;
  memset(&r, 0, sizeof r);
  r.c = c;
  if (dexa__input_i64(c, "turn", &r.turn) != DEXA_OK ||
      dexa__input_i64(c, "round", &r.round) != DEXA_OK)
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "RunModel needs turn and round");
  int rc;
  if (!dexa__turn_is_running(c, r.turn, &r.state, &rc))
    return rc != DEXA_OK ? rc : dexa__result_set_decision(c->result, "{\"next\":[]}", 11);
  char action[16];
  if (dexa__control_pending(c, r.turn, action, &rc)) return decide_turn_step(&r, STEP_APPLY_TURN_CONTROL);
  if (rc != DEXA_OK) return rc;
  rc = dexa__session_model(c, &r.model);
  if (rc != DEXA_OK) return rc;
  dexa__tool_list_init(&r.tools);
  dexa__model_request_init(&r.req);
  dexa__model_reply_init(&r.reply);
  dexa__segment seg;
  if (r.model->harness) {
    dexa__segment_init(&seg, r.model->harness);
    r.segment = &seg;
  }
  rc = call_model(&r);
  r.reply.harness = NULL; /* the segment's part is freed with it */
  if (r.segment) dexa__segment_free(r.segment);
  dexa__model_reply_free(&r.reply);
  dexa__model_request_free(&r.req);
  dexa__tool_list_free(&r.tools);
  return rc;
}
