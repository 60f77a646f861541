/* Waits: parsing and planning (see wait.h). */
#include "flow/wait.h"

#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "util/json_num.h"
#include "util/json_span.h"

static int int_member(const cJSON *o, const char *k, int64_t dflt, int64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!v || cJSON_IsNull(v)) {
    *out = dflt;
    return DEXA_OK;
  }
  if (!dexa__json_exact_int(v, out) || *out < 0) return DEXA_E_INVALID_JSON;
  return DEXA_OK;
}

/* One condition: a channel with min and max, or a timer with timer_ms (the
 * WaitFor's form) or deadline_ms (a stored form). */
static int read_cond(const cJSON *o, int64_t start, dexa__wait_cond *c) {
  memset(c, 0, sizeof *c);
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
  const cJSON *ch = cJSON_GetObjectItemCaseSensitive(o, "channel");
  if (!cJSON_IsObject(o) || !cJSON_IsString(id)) return DEXA_E_INVALID_JSON;
  c->id = id->valuestring;
  if (cJSON_IsString(ch)) {
    c->channel = ch->valuestring;
    int rc = int_member(o, "min", 1, &c->min);
    if (rc == DEXA_OK) rc = int_member(o, "max", -1, &c->max);
    if (rc == DEXA_OK && c->max >= 0 && c->max < c->min) rc = DEXA_E_INVALID_JSON;
    return rc;
  }
  if (ch) return DEXA_E_INVALID_JSON;
  if (int_member(o, "deadline_ms", -1, &c->deadline) != DEXA_OK) return DEXA_E_INVALID_JSON;
  c->timer_ms = -1;
  if (c->deadline >= 0) return DEXA_OK;
  if (int_member(o, "timer_ms", -1, &c->timer_ms) != DEXA_OK || c->timer_ms < 0)
    return DEXA_E_INVALID_JSON;
  c->deadline = start > INT64_MAX - c->timer_ms ? INT64_MAX : start + c->timer_ms;
  return DEXA_OK;
}

static int is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }

static int only_space(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!is_space(s[i])) return 0;
  return 1;
}

/* No wait at all: "", white space or null. */
static int is_empty(const char *json, size_t len) {
  while (len && is_space(*json)) json++, len--;
  while (len && is_space(json[len - 1])) len--;
  return len == 0 || (len == 4 && memcmp(json, "null", 4) == 0);
}

int dexa__wait_parse(dexa__wait *w, const char *json, size_t len, int64_t start_ms) {
  memset(w, 0, sizeof *w);
  if (!json || is_empty(json, len)) json = "{}", len = 2;
  const char *end = NULL;
  w->root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
  if (!w->root) /* cJSON says NULL for bad text and for no memory alike */
    return dexa__json_validate(json, len) == 0 ? DEXA_E_NOMEM : DEXA_E_INVALID_JSON;
  if (!cJSON_IsObject(w->root) || !only_space(end, (size_t)(json + len - end)))
    return DEXA_E_INVALID_JSON;
  const cJSON *mode = cJSON_GetObjectItemCaseSensitive(w->root, "mode");
  if (mode && !cJSON_IsString(mode)) return DEXA_E_INVALID_JSON;
  w->all = !mode || strcmp(mode->valuestring, "all") == 0;
  if (mode && !w->all && strcmp(mode->valuestring, "any") != 0) return DEXA_E_INVALID_JSON;
  const cJSON *conds = cJSON_GetObjectItemCaseSensitive(w->root, "conditions");
  if (conds && !cJSON_IsArray(conds) && !cJSON_IsNull(conds)) return DEXA_E_INVALID_JSON;
  int n = cJSON_IsArray(conds) ? cJSON_GetArraySize(conds) : 0;
  w->conds = calloc(n ? (size_t)n : 1, sizeof *w->conds);
  if (!w->conds) return DEXA_E_NOMEM;
  for (const cJSON *o = n ? conds->child : NULL; o; o = o->next) {
    int rc = read_cond(o, start_ms, &w->conds[w->n]);
    if (rc != DEXA_OK) return rc;
    for (size_t j = 0; j < w->n; j++) /* ids name the results: unique */
      if (strcmp(w->conds[j].id, w->conds[w->n].id) == 0) return DEXA_E_INVALID_JSON;
    w->n++;
  }
  return DEXA_OK;
}

void dexa__wait_free(dexa__wait *w) {
  cJSON_Delete(w->root);
  free(w->conds);
  memset(w, 0, sizeof *w);
}

static int same_channel(const dexa__wait_cond *a, const dexa__wait_cond *b) {
  return a->channel && b->channel && strcmp(a->channel, b->channel) == 0;
}

/* "all": every timer fired and every channel's minimums fit its queue;
 * then the remaining messages go out in declaration order. */
static int plan_all(dexa__wait *w) {
  for (size_t i = 0; i < w->n; i++) {
    dexa__wait_cond *c = &w->conds[i];
    if (!c->channel && !c->fired) return 0;
    if (!c->channel) continue;
    int64_t need = 0;
    for (size_t j = 0; j < w->n; j++)
      if (same_channel(c, &w->conds[j])) need += w->conds[j].min;
    if (c->count < need) return 0;
  }
  for (size_t i = 0; i < w->n; i++) {
    dexa__wait_cond *c = &w->conds[i];
    if (!c->channel) continue;
    int64_t avail = c->count;
    for (size_t j = 0; j < w->n; j++)
      if (same_channel(c, &w->conds[j])) avail -= j < i ? w->conds[j].take : w->conds[j].min;
    int64_t extra = c->max < 0 ? avail : (c->max - c->min < avail ? c->max - c->min : avail);
    c->take = c->min + (extra > 0 ? extra : 0);
  }
  return 1;
}

/* "any": the first ready candidate, timers first; its index + 1, or 0. */
static size_t plan_any(dexa__wait *w) {
  for (size_t i = 0; i < w->n; i++)
    if (!w->conds[i].channel && w->conds[i].fired) return i + 1;
  for (size_t i = 0; i < w->n; i++) {
    dexa__wait_cond *c = &w->conds[i];
    if (!c->channel || c->count < c->min) continue;
    c->take = c->max < 0 || c->count < c->max ? c->count : c->max;
    return i + 1;
  }
  return 0;
}

int dexa__wait_plan(dexa__wait *w, size_t *winner) {
  for (size_t i = 0; i < w->n; i++) w->conds[i].take = 0;
  *winner = SIZE_MAX;
  if (w->n == 0) return 1;
  if (w->all) return plan_all(w);
  size_t any = plan_any(w);
  if (!any) return 0;
  *winner = any - 1;
  return 1;
}

int dexa__wait_consumes(const dexa__wait *w, size_t winner, size_t i) {
  return w->conds[i].channel && (winner == SIZE_MAX || winner == i);
}

int64_t dexa__wait_next_due(const dexa__wait *w) {
  int64_t due = INT64_MAX;
  for (size_t i = 0; i < w->n; i++)
    if (!w->conds[i].channel && !w->conds[i].fired && w->conds[i].deadline < due)
      due = w->conds[i].deadline;
  return due;
}
