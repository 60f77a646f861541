/* A harness's durable state. The framework's own state is AgentHarnessState
 * (replaced whole when the harness sets it) plus AgentHarnessStateEntries/
 * (appended a few at a time, each written once), so a transcript that grows
 * every segment costs its growth, not a rewrite. AgentHarness says whose
 * state it is, how far the harness has seen the session's messages, and
 * the state's bytes, which count as active state against the state limit:
 *   {"harness":"<name>","segments":N,"through_seq":S,"first_entry":A,
 *    "next_entry":B,"bytes":N} */
#include <stdio.h>
#include <string.h>

#include "core/harness.h"

static int64_t member_i64(const cJSON *o, const char *name) {
  return dexa__json_int(cJSON_GetObjectItemCaseSensitive(o, name), 0);
}

int dexa__harness_meta_load(dexa__ctx *c, const char *name, dexa__harness_meta *m) {
  memset(m, 0, sizeof *m);
  cJSON *o;
  int rc = dexa__attr_get_json(c, ATTR_HARNESS, &o);
  if (rc != DEXA_OK || !o) return rc;
  const char *owner = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "harness"));
  m->first_entry = member_i64(o, "first_entry");
  m->next_entry = member_i64(o, "next_entry");
  m->bytes = member_i64(o, "bytes");
  m->foreign = !owner || strcmp(owner, name) != 0;
  if (!m->foreign) {
    m->segments = member_i64(o, "segments");
    m->through_seq = member_i64(o, "through_seq");
  }
  cJSON_Delete(o);
  return DEXA_OK;
}

int dexa__harness_state_bytes(dexa__ctx *c, int64_t *bytes) {
  cJSON *o;
  *bytes = 0;
  int rc = dexa__attr_get_json(c, ATTR_HARNESS, &o);
  if (rc == DEXA_OK && o) *bytes = member_i64(o, "bytes");
  cJSON_Delete(o);
  return rc;
}

static void entry_key(char *key, size_t n, int64_t i) {
  snprintf(key, n, ATTR_HARNESS_ENTRIES "%020lld", (long long)i);
}

static int collect_entry(void *ctx, const char *key, size_t key_len, const char *value,
                         size_t len) {
  dexa__segment *s = ctx;
  if (dexa__grow_array(&s->spans, s->entry_count, &s->entry_cap, sizeof *s->spans) != 0)
    return DEXA_E_NOMEM;
  s->spans[s->entry_count].off = s->entries.len;
  s->spans[s->entry_count].len = len;
  dexa__buf_append(&s->entries, value, len);
  if (s->entries.oom) return DEXA_E_NOMEM;
  s->entry_count++;
  return 0;
}

int dexa__harness_state_load(dexa__ctx *c, dexa__segment *s) {
  if (s->meta.foreign) return DEXA_OK;
  const char *v;
  size_t n;
  int rc = dexa__attr_get(c, ATTR_HARNESS_STATE, &v, &n);
  if (rc == DEXA_OK) {
    dexa__buf_append(&s->state, v, n);
    s->has_state = 1;
    if (s->state.oom) return DEXA_E_NOMEM;
  } else if (rc != DEXA_E_NOT_FOUND) {
    return rc;
  }
  return dexa__attr_scan(c, ATTR_HARNESS_ENTRIES, collect_entry, s);
}

/* Drops the stored state: the base and every entry. */
static int drop_state(dexa__ctx *c, dexa__harness_meta *m) {
  int rc = dexa__attr_delete(c, ATTR_HARNESS_STATE);
  for (int64_t i = m->first_entry; rc == DEXA_OK && i < m->next_entry; i++) {
    char key[64];
    entry_key(key, sizeof key, i);
    rc = dexa__attr_delete(c, key);
  }
  m->first_entry = m->next_entry;
  m->bytes = 0;
  return rc;
}

static int write_meta(dexa__ctx *c, const char *name, const dexa__harness_meta *m) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "{\"harness\":");
  dexa__buf_json_cstr(&b, name);
  dexa__buf_printf(&b,
                   ",\"segments\":%lld,\"through_seq\":%lld,\"first_entry\":%lld,"
                   "\"next_entry\":%lld,\"bytes\":%lld}",
                   (long long)m->segments, (long long)m->through_seq, (long long)m->first_entry,
                   (long long)m->next_entry, (long long)m->bytes);
  int rc = b.oom ? DEXA_E_NOMEM : dexa__attr_put_raw(c, ATTR_HARNESS, b.data, b.len);
  dexa__buf_free(&b);
  return rc;
}

int dexa__harness_state_store(dexa__ctx *c, const char *name, dexa__segment *s,
                              int64_t through_seq) {
  dexa__harness_meta *m = &s->meta;
  const dexa__harness_reply *h = &s->hreply;
  int rc = DEXA_OK;
  if (m->foreign || h->state_set) rc = drop_state(c, m);
  if (rc == DEXA_OK && h->state_set && h->has_state) {
    rc = dexa__attr_put_raw(c, ATTR_HARNESS_STATE, h->state.data, h->state.len);
    m->bytes += (int64_t)h->state.len;
  }
  for (size_t i = 0; rc == DEXA_OK && i < h->entry_count; i++) {
    char key[64];
    entry_key(key, sizeof key, m->next_entry++);
    rc = dexa__attr_put_raw(c, key, h->entries.data + h->spans[i].off, h->spans[i].len);
    m->bytes += (int64_t)h->spans[i].len;
  }
  m->foreign = 0;
  m->segments++;
  m->through_seq = through_seq;
  return rc == DEXA_OK ? write_meta(c, name, m) : rc;
}
