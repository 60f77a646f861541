/* Recording a tool call's result: the message at the seq reserved for it by
 * RunModel, a publish on the round's join channel (ResumeTurn counts them),
 * and the events. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"

void dexa__tool_results_channel(char *out, size_t n, int64_t turn, int64_t round) {
  snprintf(out, n, CHAN_TOOL_RESULTS "%lld-%lld", (long long)turn, (long long)round);
}

static void build_message(dexa__ctx *c, dexa__buf *m, int64_t turn, int64_t round, int64_t seq,
                          const dexa__tool_result *r) {
  dexa__buf_printf(m, "{\"seq\":%lld,\"turn\":%lld,\"round\":%lld,\"role\":\"tool\",\"call_id\":",
                   (long long)seq, (long long)turn, (long long)round);
  dexa__buf_json_cstr(m, r->call_id);
  dexa__buf_puts(m, ",\"name\":");
  dexa__buf_json_cstr(m, r->name);
  dexa__buf_puts(m, ",\"status\":");
  dexa__buf_json_cstr(m, r->status);
  dexa__buf_puts(m, ",\"output\":");
  dexa__buf_json_str(m, r->output ? r->output : "", r->output ? r->output_len : 0);
  if (r->content && r->content_len) {
    dexa__buf_puts(m, ",\"content\":");
    dexa__buf_append(m, r->content, r->content_len);
  }
  dexa__buf_printf(m, ",\"at\":%lld}", (long long)c->call->now_ms);
}

static int publish_done(dexa__ctx *c, int64_t turn, int64_t round, int64_t seq,
                        const dexa__tool_result *r, size_t bytes) {
  char channel[80];
  dexa__tool_results_channel(channel, sizeof channel, turn, round);
  dexa__buf p;
  dexa__buf_init(&p);
  dexa__buf_puts(&p, "{\"call_id\":");
  dexa__buf_json_cstr(&p, r->call_id);
  dexa__buf_printf(&p, ",\"seq\":%lld,\"bytes\":%zu}", (long long)seq, bytes);
  int rc = p.oom ? DEXA_E_NOMEM
                 : dexa__result_add_publish(c->result, channel, strlen(channel), p.data, p.len);
  dexa__buf_free(&p);
  return rc;
}

static int finished_event(dexa__ctx *c, const dexa__tool_result *r, int64_t seq) {
  dexa__buf e;
  dexa__event_begin(c, &e, "tool_call_finished");
  dexa__buf_puts(&e, ",\"call_id\":");
  dexa__buf_json_cstr(&e, r->call_id);
  dexa__buf_puts(&e, ",\"name\":");
  dexa__buf_json_cstr(&e, r->name);
  dexa__buf_puts(&e, ",\"status\":");
  dexa__buf_json_cstr(&e, r->status);
  dexa__buf_printf(&e, ",\"seq\":%lld", (long long)seq);
  return dexa__event_end(c, &e);
}

int dexa__tool_result_record(dexa__ctx *c, int64_t turn, int64_t round, int64_t seq,
                             const dexa__tool_result *r) {
  dexa__buf m;
  dexa__buf_init(&m);
  build_message(c, &m, turn, round, seq, r);
  int rc = DEXA_E_NOMEM;
  if (!m.oom) {
    char key[48];
    dexa__message_key(key, sizeof key, seq);
    rc = dexa__attr_put_raw(c, key, m.data, m.len);
  }
  if (rc == DEXA_OK && !r->unjoined) rc = publish_done(c, turn, round, seq, r, m.len);
  if (rc == DEXA_OK) rc = finished_event(c, r, seq);
  dexa__buf_free(&m);
  return rc;
}
