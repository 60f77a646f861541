/* A harness's segment: RunModel's request and record for a framework
 * (dexagents-harness(7)). The request is a model request with the
 * framework's state, the messages new for it (only those when it owns its
 * transcript: it has the rest in its state), each tool's approval, and a
 * "harness" member; the record writes the framework's new state and how far
 * it has seen the session's messages, in the same result as its items, and
 * checks the session's active state against its limit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness.h"
#include "core/model_request.h"
#include "core/queue.h"
#include "util/json_span.h"

void dexa__segment_init(dexa__segment *s, const dexa_harness_vtable *vt) {
  memset(s, 0, sizeof *s);
  s->vt = vt;
  dexa__harness_reply_init(&s->hreply);
}

void dexa__segment_free(dexa__segment *s) {
  dexa__harness_reply_free(&s->hreply);
  dexa__buf_free(&s->state);
  dexa__buf_free(&s->entries);
  free(s->spans);
}

static int owns_transcript(const dexa__segment *s) {
  return (s->vt->flags & DEXA_HARNESS_OWNS_TRANSCRIPT) != 0;
}

int dexa__segment_compacts(const dexa__run *r) {
  return !owns_transcript(r->segment) && r->segment->vt->summarize != NULL;
}

/* The session's active state with the harness's state at harness_bytes:
 * messages and chunks, queued messages, and the framework's state. */
static int active_bytes(dexa__ctx *c, int64_t transcript_bytes, int64_t harness_bytes,
                        int64_t *total) {
  dexa__queue_state q = {0, 0};
  int rc = dexa__queue_state_load(c, &q);
  if (rc == DEXA_E_NOT_FOUND) rc = DEXA_OK;
  *total = transcript_bytes + harness_bytes + q.bytes;
  return rc;
}

static int check_limit(dexa__run *r, int64_t transcript_bytes, const char *when) {
  dexa__segment *s = r->segment;
  int64_t total, limit = r->c->agent->def.max_state_bytes;
  int rc = active_bytes(r->c, transcript_bytes, s->meta.bytes, &total);
  if (rc != DEXA_OK || total <= limit) return rc;
  s->over_limit = 1;
  snprintf(s->why, sizeof s->why,
           "the session's active state %s %lld bytes, over its limit of %lld (the harness's "
           "own state is %lld bytes%s): the session takes no more turns",
           when, (long long)total, (long long)limit, (long long)s->meta.bytes,
           owns_transcript(s) ? "; its transcript is its own, which Dex does not compact" : "");
  return DEXA_OK;
}

/* Owns its transcript: the messages after through_seq only, read one by one
 * (the framework has the older ones; the history is not scanned). */
static int splice_new(dexa__run *r, size_t *first_new) {
  dexa__transcript t;
  int rc = dexa__transcript_load(r->c, &t);
  int64_t from = r->segment->meta.through_seq + 1;
  if (from < t.first_seq) from = t.first_seq;
  *first_new = 0;
  for (int64_t seq = from; rc == DEXA_OK && seq < t.next_seq; seq++) {
    char key[48];
    const char *v;
    size_t n;
    dexa__message_key(key, sizeof key, seq);
    rc = dexa__attr_get(r->c, key, &v, &n);
    if (rc == DEXA_E_NOT_FOUND)
      rc = DEXA_OK; /* a seq never used */
    else if (rc == DEXA_OK)
      rc = dexa__model_request_splice(&r->req, v, n);
  }
  return rc;
}

typedef struct splice_all_ctx {
  dexa__run *r;
  size_t *first_new;
  int rc;
} splice_all_ctx;

static int splice_one(void *ctx, const char *key, size_t key_len, const char *value, size_t len) {
  splice_all_ctx *s = ctx;
  int64_t seq = 0;
  dexa__json_get_i64(value, len, "seq", &seq);
  if (seq > s->r->segment->meta.through_seq && *s->first_new > s->r->req.message_count)
    *s->first_new = s->r->req.message_count;
  s->rc = dexa__model_request_splice(&s->r->req, value, len);
  return s->rc;
}

/* A transcript that is ours: every retained message, as for a model call,
 * and the index of the first new one. */
static int splice_all(dexa__run *r, size_t *first_new) {
  *first_new = SIZE_MAX;
  splice_all_ctx s = {r, first_new, DEXA_OK};
  int rc = dexa__attr_scan(r->c, ATTR_MESSAGES, splice_one, &s);
  if (*first_new > r->req.message_count) *first_new = r->req.message_count;
  return s.rc != DEXA_OK ? s.rc : rc;
}

static void harness_member(const dexa__run *r, dexa__buf *b, size_t first_new) {
  const dexa__segment *s = r->segment;
  dexa__buf_puts(b, ",\"harness\":{\"name\":");
  dexa__buf_json_cstr(b, dexa_model_name(r->model));
  dexa__buf_printf(b,
                   ",\"segment\":%lld,\"owns_transcript\":%s,\"runs_reads\":%s,\"first_new\":%zu,"
                   "\"state_entries\":%zu}",
                   (long long)s->meta.segments + 1, owns_transcript(s) ? "true" : "false",
                   (s->vt->flags & DEXA_HARNESS_RUNS_READS) ? "true" : "false", first_new,
                   s->entry_count);
}

static void attach(dexa__run *r, size_t first_new) {
  dexa__segment *s = r->segment;
  dexa__harness_request *h = &s->hreq;
  h->flags = s->vt->flags;
  h->state = s->has_state ? s->state.data : NULL;
  h->state_len = s->has_state ? s->state.len : 0;
  h->entries = s->entries.data;
  h->spans = s->spans;
  h->entry_count = s->entry_count;
  h->first_new = first_new;
  h->call_tool = dexa__segment_call_tool;
  h->call_ctx = r;
  r->req.harness = h;
  r->reply.harness = &s->hreply;
}

int dexa__segment_request(dexa__run *r) {
  dexa__ctx *c = r->c;
  dexa__segment *s = r->segment;
  dexa__transcript t;
  int rc = dexa__harness_meta_load(c, dexa_model_name(r->model), &s->meta);
  if (rc == DEXA_OK) rc = dexa__transcript_load(c, &t);
  if (rc == DEXA_OK) rc = check_limit(r, t.bytes, "is");
  if (rc != DEXA_OK || s->over_limit) return rc;
  rc = dexa__harness_state_load(c, s);
  if (rc == DEXA_OK) rc = dexa__model_request_head(c, r->model, &r->state, r->round, &r->req);
  size_t first_new = 0;
  if (rc == DEXA_OK)
    rc = owns_transcript(s) ? splice_new(r, &first_new) : splice_all(r, &first_new);
  if (rc != DEXA_OK) return rc;
  dexa__buf members;
  dexa__buf_init(&members);
  harness_member(r, &members, first_new);
  rc = members.oom ? DEXA_E_NOMEM : dexa__model_request_tail(&r->req, &r->tools, members.data, 1);
  dexa__buf_free(&members);
  if (rc == DEXA_OK) attach(r, first_new);
  return rc;
}

int dexa__segment_run(dexa__run *r) {
  return r->segment->vt->run_segment(r->model->user_data, &r->req, &r->reply);
}

/* The tools the framework ran itself (dexa_model_reply_add_framework_tool_call),
 * each a segment_tool_call event in the segment's result. */
static int framework_calls(dexa__run *r) {
  const dexa__harness_reply *h = &r->segment->hreply;
  int rc = DEXA_OK;
  for (size_t i = 0; rc == DEXA_OK && i < h->ran_count; i++) {
    dexa__buf e;
    dexa__event_begin(r->c, &e, "segment_tool_call");
    dexa__buf_printf(&e, ",\"turn\":%lld,\"round\":%lld", (long long)r->turn, (long long)r->round);
    dexa__buf_append(&e, h->ran.data + h->ran_spans[i].off, h->ran_spans[i].len);
    dexa__buf_printf(&e, ",\"attempt\":%d", (int)r->c->call->attempt);
    rc = dexa__event_end(r->c, &e);
  }
  return rc;
}

int dexa__segment_record(dexa__run *r, const dexa__transcript *t) {
  /* The items just stored end at next_seq - 1; the seqs of the results of
   * their tool calls come after, so those are new for the next segment. */
  int rc = framework_calls(r);
  if (rc == DEXA_OK)
    rc = dexa__harness_state_store(r->c, dexa_model_name(r->model), r->segment, t->next_seq - 1);
  return rc == DEXA_OK ? check_limit(r, t->bytes, "reached") : rc;
}

static const char *approval_name(int approval) {
  return approval == DEXA_APPROVAL_REQUIRED ? "required" : "none";
}

int dexa__segment_policies(dexa__run *r, cJSON *calls) {
  cJSON *call;
  cJSON_ArrayForEach(call, calls) {
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(call, "call_id"));
    const dexa__tool_policy *p =
        id ? dexa__harness_reply_policy(&r->segment->hreply, id, strlen(id)) : NULL;
    if (!p) continue;
    if (p->effect != DEXA_TOOL_EFFECT_DEFAULT &&
        !cJSON_AddStringToObject(call, "effect", dexa__tool_effect_name(p->effect)))
      return DEXA_E_NOMEM;
    if (p->approval != DEXA_APPROVAL_DEFAULT &&
        !cJSON_AddStringToObject(call, "approval", approval_name(p->approval)))
      return DEXA_E_NOMEM;
  }
  return DEXA_OK;
}
