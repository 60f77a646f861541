/* "openai/<model>": the OpenAI Responses API (POST {base}/responses),
 * stateless: store:false, with include ["reasoning.encrypted_content"] for
 * models that reason, and every output item of this client replayed
 * verbatim and in order as input (reasoning items with their encrypted
 * content, then function calls, then our function_call_output items, which
 * pair by call_id). prompt_cache_key is the session id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "model/provider.h"
#include "model/retry.h"
#include "model/transcript.h"
#include "util/json_span.h"

/* ---- request ------------------------------------------------------------- */

static void put_foreign_model(dexa__buf *b, const dexa__msg *m, int *first) {
  if (m->text && *m->text) {
    if (!*first) dexa__buf_putc(b, ',');
    *first = 0;
    dexa__buf_puts(b, "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":"
                      "\"output_text\",\"text\":");
    dexa__buf_json_cstr(b, m->text);
    dexa__buf_puts(b, ",\"annotations\":[]}]}");
  }
  const cJSON *c;
  cJSON_ArrayForEach(c, m->tool_calls) {
    if (!*first) dexa__buf_putc(b, ',');
    *first = 0;
    dexa__buf_puts(b, "{\"type\":\"function_call\",\"call_id\":");
    dexa__buf_json_cstr(b, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "call_id")));
    dexa__buf_puts(b, ",\"name\":");
    dexa__buf_json_cstr(b, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name")));
    dexa__buf_puts(b, ",\"arguments\":");
    dexa__put_arguments_string(b, cJSON_GetObjectItemCaseSensitive(c, "arguments"));
    dexa__buf_putc(b, '}');
  }
}

/* The parts of a user message: its text, then its attachments. */
static void put_user(dexa__buf *b, const dexa__msg *m) {
  dexa__buf_puts(b, "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":");
  dexa__buf_json_cstr(b, m->text ? m->text : "");
  dexa__buf_putc(b, '}');
  const cJSON *a;
  cJSON_ArrayForEach(a, m->attachments) {
    dexa__media md;
    dexa__media_of_attachment(a, &md);
    if (md.image) {
      dexa__buf_puts(b, ",{\"type\":\"input_image\",\"image_url\":");
      dexa__put_media_url(b, &md);
    } else if (md.url) {
      dexa__buf_puts(b, ",{\"type\":\"input_file\",\"file_url\":");
      dexa__buf_json_cstr(b, md.url);
    } else {
      dexa__buf_puts(b, ",{\"type\":\"input_file\",\"filename\":");
      dexa__buf_json_cstr(b, md.name ? md.name : "attachment");
      dexa__buf_puts(b, ",\"file_data\":");
      dexa__put_media_url(b, &md);
    }
    dexa__buf_putc(b, '}');
  }
  dexa__buf_puts(b, "]}");
}

/* A tool result; with images (MCP) its output is a list of parts. */
static void put_tool_result(dexa__buf *b, const dexa__msg *m) {
  dexa__media img[DEXA__MAX_TOOL_IMAGES];
  size_t n = dexa__tool_images(m, img, DEXA__MAX_TOOL_IMAGES);
  dexa__buf_puts(b, "{\"type\":\"function_call_output\",\"call_id\":");
  dexa__buf_json_cstr(b, m->call_id ? m->call_id : "");
  dexa__buf_puts(b, ",\"output\":");
  if (!n) {
    dexa__buf_json_cstr(b, m->output ? m->output : "");
  } else {
    dexa__buf_puts(b, "[{\"type\":\"input_text\",\"text\":");
    dexa__buf_json_cstr(b, m->output ? m->output : "");
    dexa__buf_putc(b, '}');
    for (size_t i = 0; i < n; i++) {
      dexa__buf_puts(b, ",{\"type\":\"input_image\",\"image_url\":");
      dexa__put_media_url(b, &img[i]);
      dexa__buf_putc(b, '}');
    }
    dexa__buf_putc(b, ']');
  }
  dexa__buf_putc(b, '}');
}

/* A reasoning item replays only with its encrypted content: with
 * store:false the API cannot find it by id. */
static int replayable_reasoning(const dexa__msg *m) {
  const char *v;
  size_t vl;
  return dexa__json_get(m->item, m->item_len, "encrypted_content", &v, &vl) == 0 && vl > 2;
}

static int put_input(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  dexa__buf_puts(b, ",\"input\":[");
  if (dexa__is_compaction(req)) {
    dexa__buf_puts(b, "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":");
    dexa__buf text;
    dexa__buf_init(&text);
    int rc = dexa__compaction_text(req, &text);
    dexa__buf_json_str(b, text.data ? text.data : "", text.len);
    dexa__buf_free(&text);
    dexa__buf_puts(b, "}]}]");
    return rc;
  }
  int first = 1;
  size_t count = dexa_model_request_message_count(req);
  for (size_t i = 0; i < count; i++) {
    dexa__msg m;
    int rc = dexa__msg_at(req, i, &m);
    if (rc != DEXA_OK) return rc;
    if (strcmp(m.role, "model") == 0) {
      static const char *const reasoning[] = {"reasoning", NULL};
      int native = dexa__msg_is_native(&m, cfg->name, cfg->provider->prefix);
      int is_reasoning = native && dexa__item_type_is(&m, reasoning);
      if (is_reasoning && (native == 1 || !replayable_reasoning(&m))) {
        /* another model's reasoning, or one without its encrypted content: dropped */
      } else if (native) {
        if (!first) dexa__buf_putc(b, ',');
        first = 0;
        dexa__buf_append(b, m.item, m.item_len); /* verbatim */
      } else {
        put_foreign_model(b, &m, &first);
      }
    } else {
      if (!first) dexa__buf_putc(b, ',');
      first = 0;
      if (strcmp(m.role, "tool") == 0) put_tool_result(b, &m);
      else put_user(b, &m);
    }
    dexa__msg_free(&m);
  }
  dexa__buf_putc(b, ']');
  return DEXA_OK;
}

static int put_tools(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  static const dexa__tool_shape shape = {"{\"type\":\"function\",\"name\":", ",\"parameters\":", "}"};
  /* The API's strict default is true: a tool says false unless it is sent strict. */
  dexa__tool_opts opts = {cfg->strict_tools ? ",\"strict\":true" : NULL, ",\"strict\":false", NULL};
  int count;
  int rc = dexa__put_tools_with(req, &shape, &opts, b, &count);
  if (rc != DEXA_OK || count == 0) return rc;
  dexa__buf_puts(b, ",\"tool_choice\":");
  dexa__buf_json_cstr(b, cfg->tool_choice ? cfg->tool_choice : "auto");
  dexa__buf_printf(b, ",\"parallel_tool_calls\":%s", cfg->parallel_tool_calls ? "true" : "false");
  return DEXA_OK;
}

/* "text":{"format":json_schema} for the session's output schema. */
static void put_output_schema(dexa__buf *b, const dexa_model_request *req) {
  cJSON *o = dexa__request_output_schema(req);
  if (!o) return;
  const char *name = dexa__jstr(o, "name");
  char *schema = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, "schema"));
  dexa__buf_puts(b, ",\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":");
  dexa__buf_json_cstr(b, name ? name : "output");
  dexa__buf_puts(b, ",\"schema\":");
  dexa__buf_puts(b, schema ? schema : "{}");
  dexa__buf_printf(b, ",\"strict\":%s}}",
                   cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "strict")) ? "false" : "true");
  if (!schema) b->oom = 1;
  cJSON_free(schema);
  cJSON_Delete(o);
}

/* Sampling, limits, reasoning and caching members. */
static void put_settings(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  dexa__buf_puts(b, ",\"store\":false");
  if (cfg->encrypted_reasoning) dexa__buf_puts(b, ",\"include\":[\"reasoning.encrypted_content\"]");
  dexa__buf_puts(b, ",\"stream\":true");
  if (cfg->reasoning_effort || cfg->reasoning_summary) {
    dexa__buf_puts(b, ",\"reasoning\":{");
    if (cfg->reasoning_effort) {
      dexa__buf_puts(b, "\"effort\":");
      dexa__buf_json_cstr(b, cfg->reasoning_effort);
      dexa__buf_putc(b, ',');
    }
    dexa__buf_puts(b, "\"summary\":");
    dexa__buf_json_cstr(b, cfg->reasoning_summary ? cfg->reasoning_summary : "auto");
    dexa__buf_putc(b, '}');
  }
  if (cfg->max_output_tokens > 0)
    dexa__buf_printf(b, ",\"max_output_tokens\":%lld", (long long)cfg->max_output_tokens);
  if (cfg->has_temperature) dexa__put_number(b, "temperature", cfg->temperature);
  if (cfg->has_top_p) dexa__put_number(b, "top_p", cfg->top_p);
  char sid[256];
  if (cfg->prompt_caching && dexa__request_session(req, sid, sizeof sid)) {
    dexa__buf_puts(b, ",\"prompt_cache_key\":");
    dexa__buf_json_cstr(b, sid);
  }
}

int dexa__openai_responses_body(const dexa__client_cfg *cfg, const dexa_model_request *req,
                                dexa__buf *b) {
  dexa__buf_puts(b, "{\"model\":");
  dexa__buf_json_cstr(b, cfg->model);
  dexa__buf sys;
  dexa__buf_init(&sys);
  int rc = dexa__system_text(req, &sys);
  if (rc == DEXA_OK && sys.len) {
    dexa__buf_puts(b, ",\"instructions\":");
    dexa__buf_json_str(b, sys.data, sys.len);
  }
  dexa__buf_free(&sys);
  int compaction = dexa__is_compaction(req);
  if (rc == DEXA_OK) rc = put_input(cfg, req, b);
  if (rc == DEXA_OK && !compaction) rc = put_tools(cfg, req, b);
  if (rc != DEXA_OK) return rc;
  if (!compaction) put_output_schema(b, req);
  put_settings(cfg, req, b);
  dexa__buf_putc(b, '}');
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

static int url(dexa__call *call, const char *base) {
  dexa__buf_puts(&call->url, base);
  dexa__buf_puts(&call->url, "/responses");
  return DEXA_OK;
}

/* ---- stream -------------------------------------------------------------- */

typedef struct out_item {
  int64_t index;
  char *json;
  size_t len;
} out_item;

typedef struct rs_state {
  dexa__decoder *d;
  out_item *items;
  size_t count, cap;
  int incomplete;
  char incomplete_reason[64];
  char *final_output; /* the terminal event's response.output, when no item.done came */
  size_t final_len;
} rs_state;

static void rs_init(void *state, dexa__decoder *d) { ((rs_state *)state)->d = d; }

static void rs_free(void *state) {
  rs_state *s = state;
  for (size_t i = 0; i < s->count; i++) free(s->items[i].json);
  free(s->items);
  free(s->final_output);
}

static int keep_item(rs_state *s, int64_t index, const char *json, size_t len) {
  if (s->count >= DEXA__MODEL_MAX_PARTS)
    return dexa__decoder_fail(s->d, DEXA_E_MODEL, "more than %d output items", DEXA__MODEL_MAX_PARTS);
  if (s->count == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 8;
    out_item *p = realloc(s->items, cap * sizeof *p);
    if (!p) return dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
    s->items = p;
    s->cap = cap;
  }
  char *copy = malloc(len + 1);
  if (!copy) return dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
  memcpy(copy, json, len);
  copy[len] = '\0';
  s->items[s->count++] = (out_item){index, copy, len};
  return DEXA_OK;
}

/* usage: input_tokens (with input_tokens_details.cached_tokens) and
 * output_tokens (with output_tokens_details.reasoning_tokens). */
static void set_usage(rs_state *s, const cJSON *response) {
  const cJSON *u = cJSON_GetObjectItemCaseSensitive(response, "usage");
  dexa_model_usage usage;
  dexa_model_usage_init(&usage, sizeof usage);
  if (!dexa__jcount(u, "input_tokens", &usage.input_tokens) ||
      !dexa__jcount(u, "output_tokens", &usage.output_tokens))
    return;
  dexa__jcount(cJSON_GetObjectItemCaseSensitive(u, "input_tokens_details"), "cached_tokens",
               &usage.cached_input_tokens);
  dexa__jcount(cJSON_GetObjectItemCaseSensitive(u, "output_tokens_details"), "reasoning_tokens",
               &usage.reasoning_tokens);
  dexa__usage_clamp(&usage);
  dexa_model_reply_set_token_usage(s->d->reply, &usage);
}

static int fail_with(rs_state *s, const cJSON *err, const char *what) {
  const char *code = dexa__jstr(err, "code");
  if (!code) code = dexa__jstr(err, "type");
  const char *msg = dexa__jstr(err, "message");
  return dexa__decoder_fail(s->d, dexa__retry_error_type_code(code), "%s: %.500s%s%.60s%s", what,
                            msg ? msg : "no message", code ? " (" : "", code ? code : "",
                            code ? ")" : "");
}

/* response.completed / .incomplete: keeps the output array span in case no
 * output_item.done came (some compatible servers send only this). */
static int terminal(rs_state *s, const cJSON *ev, const char *data, size_t len) {
  const cJSON *response = cJSON_GetObjectItemCaseSensitive(ev, "response");
  set_usage(s, response);
  /* Some servers end with response.completed whose status is incomplete. */
  const char *status = dexa__jstr(response, "status");
  if (status && !strcmp(status, "incomplete") && !s->incomplete) {
    const char *reason = dexa__jstr(cJSON_GetObjectItemCaseSensitive(response, "incomplete_details"), "reason");
    snprintf(s->incomplete_reason, sizeof s->incomplete_reason, "%s", reason ? reason : "max_output_tokens");
    s->incomplete = 1;
  }
  const char *rspan, *ospan;
  size_t rlen, olen;
  if (dexa__json_get(data, len, "response", &rspan, &rlen) == 0 &&
      dexa__json_get(rspan, rlen, "output", &ospan, &olen) == 0) {
    s->final_output = malloc(olen + 1);
    if (!s->final_output) return dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
    memcpy(s->final_output, ospan, olen);
    s->final_len = olen;
  }
  s->d->done = 1;
  return DEXA_OK;
}

static int rs_event(void *state, const char *event, const char *data, size_t len) {
  rs_state *s = state;
  if (s->d->done) return DEXA_OK; /* nothing counts after the terminal event */
  if (len == 6 && memcmp(data, "[DONE]", 6) == 0) return DEXA_OK;
  cJSON *ev = dexa__decoder_parse(s->d, data, len);
  if (!ev) return s->d->rc;
  const char *type = dexa__jstr(ev, "type");
  if (!type) type = event;
  int rc = DEXA_OK;
  const char *delta = dexa__jstr(ev, "delta");
  if (!strcmp(type, "response.output_text.delta") || !strcmp(type, "response.refusal.delta")) {
    if (delta) dexa__decoder_emit(s->d, DEXA_DELTA_TEXT, delta, strlen(delta));
  } else if (!strcmp(type, "response.reasoning_summary_text.delta") ||
             !strcmp(type, "response.reasoning_text.delta")) {
    if (delta) dexa__decoder_emit(s->d, DEXA_DELTA_REASONING, delta, strlen(delta));
  } else if (!strcmp(type, "response.output_item.done")) {
    const char *item;
    size_t item_len;
    int64_t idx;
    if (!dexa__jcount(ev, "output_index", &idx)) idx = (int64_t)s->count;
    if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(ev, "item")) ||
        dexa__json_get(data, len, "item", &item, &item_len) != 0)
      rc = dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "response.output_item.done without an item");
    else
      rc = keep_item(s, idx, item, item_len);
  } else if (!strcmp(type, "response.completed")) {
    rc = terminal(s, ev, data, len);
  } else if (!strcmp(type, "response.incomplete")) {
    const cJSON *details = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(ev, "response"), "incomplete_details");
    const char *reason = dexa__jstr(details, "reason");
    snprintf(s->incomplete_reason, sizeof s->incomplete_reason, "%s", reason ? reason : "unknown");
    s->incomplete = 1;
    rc = terminal(s, ev, data, len);
  } else if (!strcmp(type, "response.failed")) {
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(ev, "response"), "error");
    rc = fail_with(s, err, "response failed");
  } else if (!strcmp(type, "error")) {
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(ev, "error");
    rc = fail_with(s, cJSON_IsObject(err) ? err : ev, "stream error");
  } /* every other event (created, in_progress, deltas of hosted tools...) is ignored */
  cJSON_Delete(ev);
  return rc;
}

static int cmp_index(const void *a, const void *b) {
  const out_item *x = a, *y = b;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* Adds one output item and what it says to the reply. */
static int add_item(rs_state *s, const char *json, size_t len) {
  cJSON *item = cJSON_ParseWithLength(json, len);
  const char *type = dexa__jstr(item, "type");
  if (!type) {
    cJSON_Delete(item);
    return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "an output item without a type");
  }
  int rc = dexa_model_reply_add_item(s->d->reply, json, len);
  if (rc != DEXA_OK) dexa__decoder_fail(s->d, rc, "recording an output item");
  const cJSON *part;
  if (rc == DEXA_OK && !strcmp(type, "message")) {
    cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(item, "content")) {
      const char *t = dexa__jstr(part, "text");
      if (!t) t = dexa__jstr(part, "refusal");
      if (t && rc == DEXA_OK) rc = dexa_model_reply_add_text(s->d->reply, t, strlen(t));
    }
  } else if (rc == DEXA_OK && !strcmp(type, "reasoning")) {
    int n = 0;
    cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(item, "summary")) {
      const char *t = dexa__jstr(part, "text");
      if (t && n++) dexa_model_reply_add_reasoning(s->d->reply, "\n\n", 2);
      if (t && rc == DEXA_OK) rc = dexa_model_reply_add_reasoning(s->d->reply, t, strlen(t));
    }
  } else if (rc == DEXA_OK && !strcmp(type, "function_call")) {
    const char *args = dexa__jstr(item, "arguments");
    rc = dexa__decoder_tool_call(s->d, dexa__jstr(item, "call_id"), dexa__jstr(item, "name"), args,
                                 args ? strlen(args) : 0);
  }
  cJSON_Delete(item);
  if (rc != DEXA_OK) dexa__decoder_fail(s->d, rc, "recording an output item");
  return s->d->rc;
}

static int rs_end(void *state) {
  rs_state *s = state;
  if (!s->d->done)
    return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT,
                              "the stream ended before response.completed (truncated)");
  if (s->count == 0 && s->final_output) {
    size_t pos = 0;
    const char *el;
    size_t el_len;
    int r;
    while ((r = dexa__json_array_next(s->final_output, s->final_len, &pos, &el, &el_len)) == 1)
      if (keep_item(s, (int64_t)s->count, el, el_len) != DEXA_OK) return s->d->rc;
    if (r < 0) return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "a malformed response.output");
  }
  if (s->incomplete && s->count == 0)
    return dexa__decoder_fail(s->d, DEXA_E_MODEL, "the response is incomplete (%s) with no output",
                              s->incomplete_reason);
  if (s->count) qsort(s->items, s->count, sizeof *s->items, cmp_index);
  for (size_t i = 0; i < s->count; i++)
    if (add_item(s, s->items[i].json, s->items[i].len) != DEXA_OK) break;
  if (s->d->rc == DEXA_OK) {
    const char *why = !s->incomplete                                        ? NULL
                      : !strcmp(s->incomplete_reason, "content_filter") ? "content_filter"
                                                                        : "length";
    if (!why) why = dexa__decoder_call_count(s->d) ? "tool_calls" : "stop";
    dexa_model_reply_set_finish_reason(s->d->reply, why, s->incomplete ? s->incomplete_reason : "completed");
  }
  if (s->d->rc != DEXA_OK && s->incomplete)
    snprintf(s->d->err + strlen(s->d->err), sizeof s->d->err - strlen(s->d->err),
             " (the response is incomplete: %s)", s->incomplete_reason);
  return s->d->rc;
}

const dexa__stream_ops dexa__openai_responses_stream = {
    "openai-responses", sizeof(rs_state), rs_init, rs_event, rs_end, rs_free,
    DEXA__FRAMING_SSE, "text/event-stream"};

const dexa__provider dexa__openai_responses_provider = {
    "openai/", "https://api.openai.com/v1", "OPENAI_BASE_URL", "OPENAI_API_KEY", 1,
    DEXA__OPT_API_KEY | DEXA__OPT_REASONING_EFFORT | DEXA__OPT_REASONING_SUMMARY |
        DEXA__OPT_STRICT_TOOLS | DEXA__OPT_PROMPT_CACHING | DEXA__OPT_PARALLEL_TOOLS,
    0, 1, url, dexa__openai_responses_body, dexa__auth_bearer, &dexa__openai_responses_stream};
