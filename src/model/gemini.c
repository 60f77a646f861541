/* "gemini/<model>" (the Gemini API) and "vertex/<model>" (Gemini on Vertex
 * AI): streamGenerateContent?alt=sse. Each part of a reply is stored as its
 * own item: a function call part exactly as received (with its
 * thoughtSignature), text and thought parts with their streamed pieces
 * joined (a piece that carries a thoughtSignature ends its part, and the
 * signature is kept as sent). On replay the consecutive parts of this
 * client form one "model" content, unchanged; tool results are
 * functionResponse parts of the next "user" content. Another model's parts
 * are translated from text and tool calls (thoughts dropped). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "model/provider.h"
#include "model/retry.h"
#include "model/token_command.h"
#include "model/transcript.h"
#include "util/json_span.h"

/* Call ids the decoder made up (the API gave none) start with this: they
 * are not sent back. */
#define MADE_UP_ID "call-t"

/* ---- request ------------------------------------------------------------- */

typedef struct contents {
  dexa__buf *b;
  const char *role; /* of the open content, NULL before the first */
  int parts;
  int ids;          /* the API takes function call ids (Gemini API, not Vertex) */
} contents;

static void open_role(contents *c, const char *role) {
  if (c->role && strcmp(c->role, role) == 0) {
    if (c->parts++) dexa__buf_putc(c->b, ',');
    return;
  }
  if (c->role) dexa__buf_puts(c->b, "]},");
  else if (strcmp(role, "model") == 0) /* the first content must be the user's */
    dexa__buf_puts(c->b, "{\"role\":\"user\",\"parts\":[{\"text\":\"(conversation continues)\"}]},");
  dexa__buf_printf(c->b, "{\"role\":\"%s\",\"parts\":[", role);
  c->role = role;
  c->parts = 1;
}

static int sendable_id(const contents *c, const char *id) {
  return c->ids && id && *id && strncmp(id, MADE_UP_ID, strlen(MADE_UP_ID)) != 0;
}

/* Another model's message: its text and its calls (a call of another model
 * has no thought signature; Gemini 3 would refuse it without this one). */
static void put_foreign(contents *c, const dexa__msg *m) {
  if (m->text && *m->text) {
    open_role(c, "model");
    dexa__buf_puts(c->b, "{\"text\":");
    dexa__buf_json_cstr(c->b, m->text);
    dexa__buf_putc(c->b, '}');
  }
  const cJSON *tc;
  cJSON_ArrayForEach(tc, m->tool_calls) {
    const char *id = dexa__jstr(tc, "call_id");
    char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(tc, "arguments"));
    open_role(c, "model");
    dexa__buf_puts(c->b, "{\"functionCall\":{\"name\":");
    dexa__buf_json_cstr(c->b, dexa__jstr(tc, "name"));
    if (sendable_id(c, id)) {
      dexa__buf_puts(c->b, ",\"id\":");
      dexa__buf_json_cstr(c->b, id);
    }
    dexa__buf_puts(c->b, ",\"args\":");
    dexa__buf_puts(c->b, args ? args : "{}");
    dexa__buf_puts(c->b, "},\"thoughtSignature\":\"skip_thought_signature_validator\"}");
    cJSON_free(args);
  }
}

static void put_inline(contents *c, const dexa__media *m) {
  open_role(c, "user");
  if (m->url) {
    dexa__buf_puts(c->b, "{\"fileData\":{\"mimeType\":");
    dexa__buf_json_cstr(c->b, m->media_type);
    dexa__buf_puts(c->b, ",\"fileUri\":");
    dexa__buf_json_cstr(c->b, m->url);
  } else {
    dexa__buf_puts(c->b, "{\"inlineData\":{\"mimeType\":");
    dexa__buf_json_cstr(c->b, m->media_type);
    dexa__buf_puts(c->b, ",\"data\":");
    dexa__buf_json_cstr(c->b, m->data);
  }
  dexa__buf_puts(c->b, "}}");
}

static int put_user(contents *c, const dexa__msg *m) {
  const cJSON *a;
  cJSON_ArrayForEach(a, m->attachments) {
    dexa__media md;
    dexa__media_of_attachment(a, &md);
    if (!*md.media_type)
      return dexa__body_refuse(c->b, "gemini/ and vertex/ need the media_type of a file given by URL");
    put_inline(c, &md);
  }
  open_role(c, "user");
  dexa__buf_puts(c->b, "{\"text\":");
  dexa__buf_json_cstr(c->b, m->text && *m->text ? m->text : "(empty)");
  dexa__buf_putc(c->b, '}');
  return DEXA_OK;
}

/* A functionResponse part (response {"output"} or {"error"}), then the
 * result's images as parts of the same content. */
static void put_tool_result(contents *c, const dexa__msg *m) {
  open_role(c, "user");
  dexa__buf_puts(c->b, "{\"functionResponse\":{\"name\":");
  dexa__buf_json_cstr(c->b, m->name ? m->name : "");
  if (sendable_id(c, m->call_id)) {
    dexa__buf_puts(c->b, ",\"id\":");
    dexa__buf_json_cstr(c->b, m->call_id);
  }
  int ok = !m->status || strcmp(m->status, "ok") == 0;
  dexa__buf_printf(c->b, ",\"response\":{\"%s\":", ok ? "output" : "error");
  dexa__buf_json_cstr(c->b, m->output ? m->output : "");
  dexa__buf_puts(c->b, "}}}");
  dexa__media img[DEXA__MAX_TOOL_IMAGES];
  size_t n = dexa__tool_images(m, img, DEXA__MAX_TOOL_IMAGES);
  for (size_t i = 0; i < n; i++) put_inline(c, &img[i]);
}

static int put_contents(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  dexa__buf_puts(b, "\"contents\":[");
  if (dexa__is_compaction(req)) {
    dexa__buf text;
    dexa__buf_init(&text);
    int rc = dexa__compaction_text(req, &text);
    dexa__buf_puts(b, "{\"role\":\"user\",\"parts\":[{\"text\":");
    dexa__buf_json_str(b, text.data ? text.data : "", text.len);
    dexa__buf_puts(b, "}]}]");
    dexa__buf_free(&text);
    return rc;
  }
  contents c = {b, NULL, 0, cfg->provider == &dexa__gemini_provider};
  int rc = DEXA_OK;
  size_t count = dexa_model_request_message_count(req);
  for (size_t i = 0; i < count && rc == DEXA_OK; i++) {
    dexa__msg m;
    rc = dexa__msg_at(req, i, &m);
    if (rc != DEXA_OK) break;
    if (strcmp(m.role, "model") == 0) {
      /* Signatures are bound to the model that made them: another model
       * of the provider gets the parts translated, like any other. */
      if (dexa__msg_is_native(&m, cfg->name, cfg->provider->prefix) == 2) {
        open_role(&c, "model");
        dexa__buf_append(b, m.item, m.item_len); /* verbatim */
      } else {
        put_foreign(&c, &m);
      }
    } else if (strcmp(m.role, "tool") == 0) {
      put_tool_result(&c, &m);
    } else {
      rc = put_user(&c, &m);
    }
    dexa__msg_free(&m);
  }
  if (rc != DEXA_OK) return rc;
  if (c.role) dexa__buf_puts(b, "]}");
  dexa__buf_putc(b, ']');
  return DEXA_OK;
}

static int put_tools(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  static const dexa__tool_shape shape = {"{\"name\":", ",\"parametersJsonSchema\":", "}"};
  dexa__buf tools;
  dexa__buf_init(&tools);
  int count;
  int rc = dexa__put_tools(req, &shape, &tools, &count);
  if (rc == DEXA_OK && count) {
    /* dexa__put_tools writes ,"tools":[...]; Gemini nests them once more. */
    dexa__buf_puts(b, ",\"tools\":[{\"functionDeclarations\":");
    dexa__buf_append(b, tools.data + 9, tools.len - 9);
    const char *mode = !cfg->tool_choice || !strcmp(cfg->tool_choice, "auto") ? "AUTO"
                       : !strcmp(cfg->tool_choice, "required")                  ? "ANY"
                                                                                : "NONE";
    dexa__buf_printf(b, "}],\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"%s\"}}", mode);
  }
  if (tools.oom) rc = DEXA_E_NOMEM;
  dexa__buf_free(&tools);
  return rc;
}

static void put_generation(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b,
                           int compaction) {
  dexa__buf_puts(b, ",\"generationConfig\":{\"candidateCount\":1");
  if (cfg->max_output_tokens > 0)
    dexa__buf_printf(b, ",\"maxOutputTokens\":%lld", (long long)cfg->max_output_tokens);
  if (cfg->has_temperature) dexa__put_number(b, "temperature", cfg->temperature);
  if (cfg->has_top_p) dexa__put_number(b, "topP", cfg->top_p);
  if (cfg->has_seed) dexa__buf_printf(b, ",\"seed\":%lld", (long long)cfg->seed);
  for (size_t i = 0; i < cfg->stop_count; i++) {
    dexa__buf_puts(b, i ? "," : ",\"stopSequences\":[");
    dexa__buf_json_cstr(b, cfg->stop[i]);
  }
  if (cfg->stop_count) dexa__buf_putc(b, ']');
  if (cfg->thinking_budget_tokens > 0)
    dexa__buf_printf(b, ",\"thinkingConfig\":{\"thinkingBudget\":%lld,\"includeThoughts\":true}",
                     (long long)cfg->thinking_budget_tokens);
  cJSON *o = compaction ? NULL : dexa__request_output_schema(req);
  if (o) {
    char *schema = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, "schema"));
    dexa__buf_puts(b, ",\"responseMimeType\":\"application/json\",\"responseJsonSchema\":");
    dexa__buf_puts(b, schema ? schema : "{}");
    if (!schema) b->oom = 1;
    cJSON_free(schema);
    cJSON_Delete(o);
  }
  dexa__buf_putc(b, '}');
}

static int build_body(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  dexa__buf_putc(b, '{');
  int compaction = dexa__is_compaction(req);
  int rc = put_contents(cfg, req, b);
  if (rc != DEXA_OK) return rc;
  dexa__buf sys;
  dexa__buf_init(&sys);
  rc = dexa__system_text(req, &sys);
  if (rc == DEXA_OK && sys.len) {
    dexa__buf_puts(b, ",\"systemInstruction\":{\"parts\":[{\"text\":");
    dexa__buf_json_str(b, sys.data, sys.len);
    dexa__buf_puts(b, "}]}");
  }
  dexa__buf_free(&sys);
  if (rc == DEXA_OK && !compaction) rc = put_tools(cfg, req, b);
  if (rc != DEXA_OK) return rc;
  put_generation(cfg, req, b, compaction);
  dexa__buf_putc(b, '}');
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

static void put_model_path(dexa__call *call) {
  dexa__buf_puts(&call->url, "/models/");
  dexa__url_escape(&call->url, call->cfg->model);
  dexa__buf_puts(&call->url, ":streamGenerateContent?alt=sse");
}

static int gemini_url(dexa__call *call, const char *base) {
  dexa__buf_puts(&call->url, base);
  dexa__buf_puts(&call->url, "/v1beta");
  put_model_path(call);
  return DEXA_OK;
}

static int vertex_url(dexa__call *call, const char *base) {
  const dexa__client_cfg *cfg = call->cfg;
  const char *project = cfg->project ? cfg->project : secure_getenv("GOOGLE_CLOUD_PROJECT");
  const char *location = cfg->location ? cfg->location : secure_getenv("GOOGLE_CLOUD_LOCATION");
  if (!location || !*location) location = "us-central1";
  if (!project || !*project) {
    snprintf(call->err, sizeof call->err, "no project (set GOOGLE_CLOUD_PROJECT or the project option)");
    return DEXA_E_AUTH;
  }
  if (base) dexa__buf_puts(&call->url, base);
  else if (!strcmp(location, "global")) dexa__buf_puts(&call->url, "https://aiplatform.googleapis.com");
  else dexa__buf_printf(&call->url, "https://%s-aiplatform.googleapis.com", location);
  dexa__buf_puts(&call->url, "/v1/projects/");
  dexa__url_escape(&call->url, project);
  dexa__buf_puts(&call->url, "/locations/");
  dexa__url_escape(&call->url, location);
  dexa__buf_puts(&call->url, "/publishers/google");
  put_model_path(call);
  return DEXA_OK;
}

static int gemini_auth(dexa__call *call) { return dexa__auth_key_header(call, "x-goog-api-key", ""); }

/* ---- stream -------------------------------------------------------------- */

/* A text or thought part being joined from its streamed pieces. */
typedef struct text_part {
  dexa__buf text;
  char *signature; /* JSON string literal as received, or NULL */
  int thought;
} text_part;

typedef struct part {
  int kind;        /* 0 text/thought (joined), 1 verbatim */
  text_part t;
  char *json;      /* verbatim parts */
  size_t len;
} part;

typedef struct gm_state {
  dexa__decoder *d;
  part *parts;
  size_t nparts, cap;
  int open;        /* the last part is a text part that takes more pieces */
  char finish[40];
  char block[40];  /* promptFeedback.blockReason */
  dexa_model_usage usage;
  int has_usage;
  size_t calls;
} gm_state;

static void gm_init(void *state, dexa__decoder *d) { ((gm_state *)state)->d = d; }

static void gm_free(void *state) {
  gm_state *s = state;
  for (size_t i = 0; i < s->nparts; i++) {
    dexa__buf_free(&s->parts[i].t.text);
    free(s->parts[i].t.signature);
    free(s->parts[i].json);
  }
  free(s->parts);
}

static part *new_part(gm_state *s, int kind) {
  if (s->nparts >= DEXA__MODEL_MAX_PARTS) {
    dexa__decoder_fail(s->d, DEXA_E_MODEL, "more than %d parts", DEXA__MODEL_MAX_PARTS);
    return NULL;
  }
  if (dexa__grow_array(&s->parts, s->nparts, &s->cap, sizeof *s->parts) != 0) {
    dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
    return NULL;
  }
  part *p = &s->parts[s->nparts++];
  memset(p, 0, sizeof *p);
  p->kind = kind;
  dexa__buf_init(&p->t.text);
  return p;
}

static char *copy_span(const char *s, size_t n) {
  char *c = malloc(n + 1);
  if (c) {
    memcpy(c, s, n);
    c[n] = '\0';
  }
  return c;
}

/* A streamed text piece: joined to the open part of its kind, or a new part. */
static int text_piece(gm_state *s, const cJSON *p, const char *span, size_t len) {
  const char *text = dexa__jstr(p, "text");
  int thought = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "thought"));
  part *cur = s->open && s->nparts ? &s->parts[s->nparts - 1] : NULL;
  if (!cur || cur->t.thought != thought) cur = new_part(s, 0);
  if (!cur) return s->d->rc;
  cur->t.thought = thought;
  dexa__buf_puts(&cur->t.text, text);
  dexa__decoder_emit(s->d, thought ? DEXA_DELTA_REASONING : DEXA_DELTA_TEXT, text, strlen(text));
  const char *sig;
  size_t sl;
  s->open = 1;
  if (dexa__json_get(span, len, "thoughtSignature", &sig, &sl) == 0) {
    free(cur->t.signature);
    if (!(cur->t.signature = copy_span(sig, sl))) return dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
    s->open = 0; /* a signed part ends here */
  }
  return cur->t.text.oom ? dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory") : DEXA_OK;
}

static int verbatim_part(gm_state *s, const cJSON *p, const char *span, size_t len) {
  if (cJSON_GetObjectItemCaseSensitive(p, "functionCall")) {
    if (s->calls++ >= DEXA__MODEL_MAX_PARTS)
      return dexa__decoder_fail(s->d, DEXA_E_MODEL, "too many function calls");
  }
  part *v = new_part(s, 1);
  if (!v) return s->d->rc;
  if (!(v->json = copy_span(span, len))) return dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
  v->len = len;
  s->open = 0;
  return DEXA_OK;
}

/* The parts of candidates[0].content, each with its span in data. */
static int take_parts(gm_state *s, const cJSON *ev, const char *data, size_t len) {
  const char *cands, *cand, *content, *parts, *el;
  size_t cl, cal, col, pl, el_len, pos = 0;
  if (dexa__json_get(data, len, "candidates", &cands, &cl) != 0) return DEXA_OK;
  if (dexa__json_array_next(cands, cl, &pos, &cand, &cal) != 1) return DEXA_OK;
  if (dexa__json_get(cand, cal, "content", &content, &col) != 0 ||
      dexa__json_get(content, col, "parts", &parts, &pl) != 0)
    return DEXA_OK;
  const cJSON *jparts = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ev, "candidates"), 0),
                                       "content"),
      "parts");
  const cJSON *p = jparts ? jparts->child : NULL;
  pos = 0;
  int r, rc = DEXA_OK;
  while (rc == DEXA_OK && p && (r = dexa__json_array_next(parts, pl, &pos, &el, &el_len)) == 1) {
    if (!cJSON_IsObject(p)) rc = dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "a part that is not an object");
    else if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(p, "text"))) rc = text_piece(s, p, el, el_len);
    else rc = verbatim_part(s, p, el, el_len);
    p = p->next;
  }
  return rc;
}

/* usageMetadata is cumulative: the newest holds. candidatesTokenCount
 * excludes the thoughts, which Gemini counts apart. */
static void take_usage(gm_state *s, const cJSON *u) {
  dexa_model_usage n;
  dexa_model_usage_init(&n, sizeof n);
  int64_t cands = 0, tool_prompt = 0;
  if (!dexa__jcount(u, "promptTokenCount", &n.input_tokens)) return;
  dexa__jcount(u, "toolUsePromptTokenCount", &tool_prompt);
  dexa__jcount(u, "candidatesTokenCount", &cands);
  dexa__jcount(u, "thoughtsTokenCount", &n.reasoning_tokens);
  dexa__jcount(u, "cachedContentTokenCount", &n.cached_input_tokens);
  n.input_tokens += tool_prompt;
  n.output_tokens = cands + n.reasoning_tokens;
  dexa__usage_clamp(&n);
  s->usage = n;
  s->has_usage = 1;
}

/* {"error":{"code","message","status"}} inside the stream. */
static int stream_error(gm_state *s, const cJSON *err) {
  const char *status = dexa__jstr(err, "status");
  const char *msg = dexa__jstr(err, "message");
  return dexa__decoder_fail(s->d, status ? dexa__retry_error_type_code(status) : DEXA_E_TRANSIENT,
                            "stream error: %.500s%s%.60s%s", msg ? msg : "no message",
                            status ? " (" : "", status ? status : "", status ? ")" : "");
}

static int gm_event(void *state, const char *event, const char *data, size_t len) {
  gm_state *s = state;
  cJSON *ev = dexa__decoder_parse(s->d, data, len);
  if (!ev) return s->d->rc;
  int rc = DEXA_OK;
  const cJSON *err = cJSON_GetObjectItemCaseSensitive(ev, "error");
  if (err) {
    rc = stream_error(s, err);
  } else {
    const cJSON *cand = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ev, "candidates"), 0);
    rc = take_parts(s, ev, data, len);
    const char *fin = dexa__jstr(cand, "finishReason");
    if (fin) {
      snprintf(s->finish, sizeof s->finish, "%s", fin);
      s->d->done = 1;
    }
    const char *block = dexa__jstr(cJSON_GetObjectItemCaseSensitive(ev, "promptFeedback"), "blockReason");
    if (block) {
      snprintf(s->block, sizeof s->block, "%s", block);
      s->d->done = 1;
    }
    take_usage(s, cJSON_GetObjectItemCaseSensitive(ev, "usageMetadata"));
  }
  cJSON_Delete(ev);
  return rc;
}

static int add_text_part(gm_state *s, part *p) {
  dexa__buf item;
  dexa__buf_init(&item);
  dexa__buf_puts(&item, "{\"text\":");
  dexa__buf_json_str(&item, p->t.text.data ? p->t.text.data : "", p->t.text.len);
  if (p->t.thought) dexa__buf_puts(&item, ",\"thought\":true");
  if (p->t.signature) {
    dexa__buf_puts(&item, ",\"thoughtSignature\":");
    dexa__buf_puts(&item, p->t.signature);
  }
  dexa__buf_putc(&item, '}');
  dexa_model_reply *r = s->d->reply;
  int rc = item.oom ? DEXA_E_NOMEM : dexa_model_reply_add_item(r, item.data, item.len);
  dexa__buf_free(&item);
  if (rc == DEXA_OK && p->t.text.len)
    rc = p->t.thought ? dexa_model_reply_add_reasoning(r, p->t.text.data, p->t.text.len)
                      : dexa_model_reply_add_text(r, p->t.text.data, p->t.text.len);
  return rc == DEXA_OK ? DEXA_OK : dexa__decoder_fail(s->d, rc, "recording a part");
}

static int add_verbatim(gm_state *s, part *p, size_t *ncall) {
  int rc = dexa_model_reply_add_item(s->d->reply, p->json, p->len);
  if (rc != DEXA_OK) return dexa__decoder_fail(s->d, rc, "recording a part");
  cJSON *o = cJSON_ParseWithLength(p->json, p->len);
  const cJSON *fc = cJSON_GetObjectItemCaseSensitive(o, "functionCall");
  if (fc) {
    char made[96];
    const char *id = dexa__jstr(fc, "id");
    if (!id || !*id) {
      snprintf(made, sizeof made, "%s-%zu", s->d->id_prefix, (*ncall)++);
      id = made;
    }
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(fc, "args");
    char *a = args ? cJSON_PrintUnformatted(args) : NULL;
    rc = dexa__decoder_tool_call(s->d, id, dexa__jstr(fc, "name"), a, a ? strlen(a) : 0);
    cJSON_free(a);
  }
  cJSON_Delete(o);
  return rc;
}

/* STOP (and with calls: tool_calls), MAX_TOKENS, the safety family. */
static const char *finish_of(const gm_state *s) {
  static const char *const filtered[] = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT",
                                         "SPII",   "IMAGE_SAFETY", NULL};
  const char *f = s->finish;
  if (!strcmp(f, "STOP")) return s->calls ? "tool_calls" : "stop";
  if (!strcmp(f, "MAX_TOKENS")) return "length";
  for (size_t i = 0; filtered[i]; i++)
    if (!strcmp(f, filtered[i])) return "content_filter";
  return s->calls ? "tool_calls" : "other";
}

static int gm_end(void *state) {
  gm_state *s = state;
  if (!s->d->done)
    return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "the stream ended before a finishReason (truncated)");
  if (s->block[0] && !s->nparts)
    return dexa__decoder_fail(s->d, DEXA_E_MODEL, "the prompt was blocked (%s)", s->block);
  if (!strcmp(s->finish, "MALFORMED_FUNCTION_CALL") && !s->nparts)
    return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "the model made a malformed function call");
  if (!s->nparts)
    return dexa__decoder_fail(s->d, DEXA_E_MODEL, "the model returned no output (finishReason %s)",
                              s->finish[0] ? s->finish : "none");
  size_t ncall = 0;
  for (size_t i = 0; i < s->nparts && s->d->rc == DEXA_OK; i++) {
    part *p = &s->parts[i];
    if (p->kind == 0) add_text_part(s, p);
    else add_verbatim(s, p, &ncall);
  }
  if (s->d->rc != DEXA_OK) return s->d->rc;
  if (s->has_usage) dexa_model_reply_set_token_usage(s->d->reply, &s->usage);
  dexa_model_reply_set_finish_reason(s->d->reply, finish_of(s), s->finish[0] ? s->finish : s->block);
  return DEXA_OK;
}

const dexa__stream_ops dexa__gemini_stream = {"gemini", sizeof(gm_state), gm_init, gm_event,
                                              gm_end,   gm_free,          DEXA__FRAMING_SSE,
                                              "text/event-stream"};

#define GEMINI_OPTIONS                                                                             \
  (DEXA__OPT_THINKING | DEXA__OPT_SEED | DEXA__OPT_STOP)

const dexa__provider dexa__gemini_provider = {
    "gemini/", "https://generativelanguage.googleapis.com", "GOOGLE_GEMINI_BASE_URL",
    "GEMINI_API_KEY", 1, GEMINI_OPTIONS | DEXA__OPT_API_KEY, 5, 0, gemini_url, build_body,
    gemini_auth, &dexa__gemini_stream};

const dexa__provider dexa__vertex_provider = {
    "vertex/", NULL, "GOOGLE_VERTEX_BASE_URL", NULL, 1, GEMINI_OPTIONS | DEXA__OPT_GOOGLE_CLOUD, 5, 0,
    vertex_url, build_body, dexa__auth_google_token, &dexa__gemini_stream};
