/* Read tools run inside a harness's segment (dexa_model_request_call_tool),
 * for a framework that cannot stop after one model call. Only a tool whose
 * own effect is read and that needs no approval runs here: a write must
 * leave the segment, to run in its own Step at most once. A call here runs
 * at least once (again when the segment reruns) and is recorded as a
 * segment_tool_call event, durable with the segment's result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness.h"

/* The most output a segment_tool_call event keeps: the event tells what ran;
 * the framework's transcript keeps the whole result. */
#define EVENT_OUTPUT_MAX 16384

static void started_event(dexa__run *r, const char *call_id, const char *name) {
  dexa__buf e;
  dexa__event_begin(r->c, &e, "tool_call_started");
  dexa__buf_puts(&e, ",\"call_id\":");
  dexa__buf_json_cstr(&e, call_id);
  dexa__buf_puts(&e, ",\"name\":");
  dexa__buf_json_cstr(&e, name);
  dexa__buf_printf(&e, ",\"attempt\":%d,\"in_segment\":true}", (int)r->c->call->attempt);
  if (!e.oom) dexa__event_live(r->c, e.data, e.len);
  dexa__buf_free(&e);
}

typedef struct inner_call {
  const char *call_id;
  const char *name;
  const char *arguments;
  size_t arguments_len;
  const char *status;
  const char *output;
  size_t output_len;
  const dexa_tool_output *out; /* content, or NULL */
  int code;                    /* the tool's error code, or DEXA_OK */
} inner_call;

static int recorded_event(dexa__run *r, const inner_call *k) {
  size_t shown = k->output_len < EVENT_OUTPUT_MAX ? k->output_len : EVENT_OUTPUT_MAX;
  dexa__buf e;
  dexa__event_begin(r->c, &e, "segment_tool_call");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"round\":%lld,\"call_id\":", (long long)r->turn,
                   (long long)r->round);
  dexa__buf_json_cstr(&e, k->call_id);
  dexa__buf_puts(&e, ",\"name\":");
  dexa__buf_json_cstr(&e, k->name);
  dexa__buf_puts(&e, ",\"arguments\":");
  dexa__buf_append(&e, k->arguments, k->arguments_len);
  dexa__buf_puts(&e, ",\"status\":");
  dexa__buf_json_cstr(&e, k->status);
  dexa__buf_puts(&e, ",\"output\":");
  dexa__buf_json_str(&e, k->output ? k->output : "", shown);
  if (shown < k->output_len) dexa__buf_puts(&e, ",\"output_truncated\":true");
  dexa__buf_printf(&e, ",\"attempt\":%d", (int)r->c->call->attempt);
  return dexa__event_end(r->c, &e);
}

static int answer(const inner_call *k, char **out, size_t *out_len) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "{\"status\":");
  dexa__buf_json_cstr(&b, k->status);
  dexa__buf_puts(&b, ",\"output\":");
  dexa__buf_json_str(&b, k->output ? k->output : "", k->output_len);
  if (k->out && k->out->content.len) {
    dexa__buf_puts(&b, ",\"content\":");
    dexa__buf_append(&b, k->out->content.data, k->out->content.len);
  }
  if (k->code != DEXA_OK) dexa__buf_printf(&b, ",\"code\":%d", k->code);
  dexa__buf_putc(&b, '}');
  *out = dexa__buf_steal(&b, out_len);
  dexa__buf_free(&b);
  return *out ? DEXA_OK : DEXA_E_NOMEM;
}

/* Runs the tool; fills k with its result (output points into o or why). */
static int run_tool(dexa__run *r, const dexa__tool_def *def, inner_call *k, dexa_tool_output *o,
                    char *why, size_t why_size) {
  dexa__ctx *c = r->c;
  dexa_tool_source *s = c->agent->sources[def->source];
  char *args = strndup(k->arguments, k->arguments_len); /* NUL-terminated for the tool */
  if (!args) return DEXA_E_NOMEM;
  char key[512];
  snprintf(key, sizeof key, "%s:%s", c->call->session_id, k->call_id);
  dexa_tool_invocation inv = {.name = def->name,
                              .call_id = k->call_id,
                              .session_id = c->call->session_id,
                              .idempotency_key = key,
                              .arguments = args,
                              .arguments_len = k->arguments_len,
                              .attempt = c->call->attempt,
                              .call = c->call,
                              .effect = def->effect};
  started_event(r, k->call_id, def->name);
  int rc = s->vt.call_tool(s->user_data, &inv, o);
  free(args);
  if (rc == DEXA_OK && (o->text.oom || o->content.oom)) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK && o->asks) { /* no Step here to wait in */
    rc = DEXA_E_UNSUPPORTED;
    static const char why_ask[] =
        "the tool asks the person something, which a call inside a model segment cannot wait for";
    dexa_tool_output_set_text(o, why_ask, sizeof why_ask - 1, 1);
  }
  if (rc == DEXA_OK) {
    k->status = o->is_error ? "error" : "ok";
    k->output = o->text.data;
    k->output_len = o->text.len;
    k->out = o;
    return DEXA_OK;
  }
  if (rc == DEXA_E_NOMEM) return rc;
  snprintf(why, why_size, "the tool failed: %s", o->text.len ? o->text.data : dexa_strerror(rc));
  k->status = "error";
  k->output = why;
  k->output_len = strlen(why);
  k->code = rc;
  return DEXA_OK;
}

int dexa__segment_call_tool(void *ctx, const char *call_id, const char *name, const char *arguments,
                            size_t arguments_len, char **out, size_t *out_len) {
  dexa__run *r = ctx;
  const dexa__tool_def *def = dexa__tool_list_find(&r->tools, name, strlen(name));
  if (!def) return DEXA_E_NOT_FOUND;
  if (def->source == DEXA__BUILTIN_SOURCE || def->connector || def->effect != DEXA_TOOL_READ ||
      def->approval != DEXA_APPROVAL_NONE)
    return DEXA_E_BAD_STATE;
  inner_call k = {call_id, def->name, arguments, arguments_len, NULL, NULL, 0, NULL, DEXA_OK};
  if (dexa__call_cancelled(r->c->call)) {
    static const char stopped[] = "Not run: the turn was stopped.";
    k.status = "cancelled";
    k.output = stopped;
    k.output_len = sizeof stopped - 1;
    return answer(&k, out, out_len);
  }
  dexa_tool_output o;
  dexa__tool_output_init(&o);
  char why[300];
  int rc = run_tool(r, def, &k, &o, why, sizeof why);
  if (rc == DEXA_OK) rc = recorded_event(r, &k);
  if (rc == DEXA_OK) rc = answer(&k, out, out_len);
  dexa__tool_output_free(&o);
  return rc;
}
