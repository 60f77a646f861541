/* memhost: see memhost.h. Test code: simple arrays, linear searches. */
#include "support/memhost.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kv {
  char *key;
  char *value;
} kv;

typedef struct chan {
  char *name;
  char **values;
  int count;
} chan;

enum { PH_WAIT_FOR, PH_WAITING, PH_EXECUTE };

typedef struct step {
  char *type;
  char exec_id[96];
  char *input;
  int phase;
  char *wait;      /* the WaitFor's wait, evaluated by dexa_wait_evaluate */
  int64_t started; /* when it was set: its timers count from here */
  char *conditions;
  int attempt;
  char *recovery_error;
} step;

typedef struct counter {
  char *name;
  int n;
} counter;

struct memhost {
  const dexa_agent *agent;
  char *session;
  cJSON *desc;
  kv *attrs;
  int nattrs;
  chan *chans;
  int nchans;
  step *steps;
  int nsteps;
  counter *counters; /* per-type execution counters */
  int ncounters;
  counter *dispatched;
  int ndispatched;
  char *lose_step;
  int lose_count;
  int64_t now;
  int failed;
  int cancelled;
  cJSON *events;
  cJSON *live;
  char *events_text;
  memhost_dispatch_fn dispatch_fn;
  void *dispatch_user;
  char **names; /* "w <key>" / "p <channel>" */
  int nnames;
};

static void note_name(memhost *h, char kind, const char *name, size_t n) {
  for (int i = 0; i < h->nnames; i++)
    if (h->names[i][0] == kind && strlen(h->names[i] + 2) == n && memcmp(h->names[i] + 2, name, n) == 0)
      return;
  h->names = realloc(h->names, (size_t)(h->nnames + 1) * sizeof *h->names);
  char *e = malloc(n + 3);
  e[0] = kind;
  e[1] = ' ';
  memcpy(e + 2, name, n);
  e[n + 2] = '\0';
  h->names[h->nnames++] = e;
}

void memhost_set_dispatch(memhost *h, memhost_dispatch_fn fn, void *user) {
  h->dispatch_fn = fn;
  h->dispatch_user = user;
}

int memhost_name_count(const memhost *h) { return h->nnames; }

const char *memhost_name_at(const memhost *h, int i) {
  return i >= 0 && i < h->nnames ? h->names[i] : NULL;
}

static int counter_bump(counter **cs, int *n, const char *name) {
  for (int i = 0; i < *n; i++)
    if (strcmp((*cs)[i].name, name) == 0) return ++(*cs)[i].n;
  *cs = realloc(*cs, (size_t)(*n + 1) * sizeof **cs);
  (*cs)[*n].name = strdup(name);
  (*cs)[*n].n = 1;
  (*n)++;
  return 1;
}

memhost *memhost_new(const dexa_agent *agent, const char *session_id) {
  memhost *h = calloc(1, sizeof *h);
  h->agent = agent;
  h->session = strdup(session_id);
  char *d;
  size_t n;
  dexa_flow_describe(&d, &n, agent);
  h->desc = cJSON_Parse(d);
  dexa_free(d);
  h->now = 1700000000000;
  h->events = cJSON_CreateArray();
  h->live = cJSON_CreateArray();
  return h;
}

static void step_free(step *s) {
  free(s->type);
  free(s->input);
  free(s->wait);
  free(s->conditions);
  free(s->recovery_error);
}

void memhost_free(memhost *h) {
  if (!h) return;
  for (int i = 0; i < h->nattrs; i++) {
    free(h->attrs[i].key);
    free(h->attrs[i].value);
  }
  for (int i = 0; i < h->nchans; i++) {
    for (int j = 0; j < h->chans[i].count; j++) free(h->chans[i].values[j]);
    free(h->chans[i].values);
    free(h->chans[i].name);
  }
  for (int i = 0; i < h->nsteps; i++) step_free(&h->steps[i]);
  for (int i = 0; i < h->ncounters; i++) free(h->counters[i].name);
  for (int i = 0; i < h->ndispatched; i++) free(h->dispatched[i].name);
  for (int i = 0; i < h->nnames; i++) free(h->names[i]);
  free(h->names);
  free(h->counters);
  free(h->dispatched);
  free(h->attrs);
  free(h->chans);
  free(h->steps);
  free(h->lose_step);
  free(h->session);
  free(h->events_text);
  cJSON_Delete(h->desc);
  cJSON_Delete(h->events);
  cJSON_Delete(h->live);
  free(h);
}

/* ---- attributes ---- */

static int attr_find(const memhost *h, const char *key, size_t n, int *pos) {
  int lo = 0, hi = h->nattrs;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    size_t ml = strlen(h->attrs[mid].key);
    int c = memcmp(h->attrs[mid].key, key, ml < n ? ml : n);
    if (c == 0) c = ml < n ? -1 : ml > n ? 1 : 0;
    if (c == 0) {
      *pos = mid;
      return 1;
    }
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  *pos = lo;
  return 0;
}

static void attr_put(memhost *h, const char *key, size_t kl, const char *value, size_t vl) {
  int pos;
  int found = attr_find(h, key, kl, &pos);
  if (!value) {
    if (!found) return;
    free(h->attrs[pos].key);
    free(h->attrs[pos].value);
    memmove(&h->attrs[pos], &h->attrs[pos + 1], (size_t)(h->nattrs - pos - 1) * sizeof(kv));
    h->nattrs--;
    return;
  }
  if (found) {
    free(h->attrs[pos].value);
    h->attrs[pos].value = strndup(value, vl);
    return;
  }
  h->attrs = realloc(h->attrs, (size_t)(h->nattrs + 1) * sizeof(kv));
  memmove(&h->attrs[pos + 1], &h->attrs[pos], (size_t)(h->nattrs - pos) * sizeof(kv));
  h->attrs[pos].key = strndup(key, kl);
  h->attrs[pos].value = strndup(value, vl);
  h->nattrs++;
}

static int reader_get(void *user, const char *key, size_t kl, const char **v, size_t *vl) {
  memhost *h = user;
  int pos;
  if (!attr_find(h, key, kl, &pos)) return DEXA_E_NOT_FOUND;
  *v = h->attrs[pos].value;
  *vl = strlen(*v);
  return DEXA_OK;
}

static int reader_scan(void *user, const char *prefix, size_t pl, dexa_attr_visit_fn visit,
                       void *ctx) {
  memhost *h = user;
  int pos;
  attr_find(h, prefix, pl, &pos);
  for (int i = pos; i < h->nattrs; i++) {
    const kv *a = &h->attrs[i];
    if (strncmp(a->key, prefix, pl) != 0) break;
    int rc = visit(ctx, a->key, strlen(a->key), a->value, strlen(a->value));
    if (rc < 0) return rc;
    if (rc > 0) break;
  }
  return DEXA_OK;
}

const char *memhost_attr(const memhost *h, const char *key) {
  int pos;
  return attr_find(h, key, strlen(key), &pos) ? h->attrs[pos].value : NULL;
}

void memhost_each(const memhost *h, void (*visit)(void *ctx, const char *key, const char *value),
                  void *ctx) {
  for (int i = 0; i < h->nattrs; i++) visit(ctx, h->attrs[i].key, h->attrs[i].value);
}

void memhost_put(memhost *h, const char *key, const char *value) {
  attr_put(h, key, strlen(key), value, value ? strlen(value) : 0);
}

int memhost_count(const memhost *h, const char *prefix) {
  int n = 0;
  for (int i = 0; i < h->nattrs; i++) n += strncmp(h->attrs[i].key, prefix, strlen(prefix)) == 0;
  return n;
}

/* ---- channels ---- */

static chan *chan_get(memhost *h, const char *name) {
  for (int i = 0; i < h->nchans; i++)
    if (strcmp(h->chans[i].name, name) == 0) return &h->chans[i];
  h->chans = realloc(h->chans, (size_t)(h->nchans + 1) * sizeof(chan));
  chan *c = &h->chans[h->nchans++];
  memset(c, 0, sizeof *c);
  c->name = strdup(name);
  return c;
}

static void chan_push(memhost *h, const char *name, const char *value, size_t n) {
  chan *c = chan_get(h, name);
  c->values = realloc(c->values, (size_t)(c->count + 1) * sizeof(char *));
  c->values[c->count++] = strndup(value, n);
}

/* ---- steps ---- */

static const cJSON *step_options(memhost *h, const char *type) {
  const cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(h->desc, "steps")) {
    if (strcmp(cJSON_GetObjectItem(s, "name")->valuestring, type) == 0)
      return cJSON_GetObjectItem(s, "options");
  }
  return NULL;
}

static void add_step(memhost *h, const char *type, const char *input) {
  h->steps = realloc(h->steps, (size_t)(h->nsteps + 1) * sizeof(step));
  step *s = &h->steps[h->nsteps++];
  memset(s, 0, sizeof *s);
  s->type = strdup(type);
  s->input = strdup(input ? input : "{}");
  snprintf(s->exec_id, sizeof s->exec_id, "%s-%d", type,
           counter_bump(&h->counters, &h->ncounters, type));
  const cJSON *o = step_options(h, type);
  s->phase = cJSON_IsTrue(cJSON_GetObjectItem(o, "has_wait_for")) ? PH_WAIT_FOR : PH_EXECUTE;
}

static void remove_step(memhost *h, int i) {
  step_free(&h->steps[i]);
  memmove(&h->steps[i], &h->steps[i + 1], (size_t)(h->nsteps - i - 1) * sizeof(step));
  h->nsteps--;
}

static void apply_decision(memhost *h, const char *json, size_t n) {
  cJSON *d = cJSON_ParseWithLength(json, n);
  const cJSON *x;
  cJSON_ArrayForEach(x, cJSON_GetObjectItem(d, "cancel")) {
    for (int i = h->nsteps - 1; i >= 0; i--)
      if (strcmp(h->steps[i].type, x->valuestring) == 0) remove_step(h, i);
  }
  if (cJSON_IsTrue(cJSON_GetObjectItem(d, "complete"))) /* the flow is over */
    while (h->nsteps) remove_step(h, h->nsteps - 1);
  cJSON_ArrayForEach(x, cJSON_GetObjectItem(d, "next")) {
    char *in = cJSON_PrintUnformatted(cJSON_GetObjectItem(x, "input"));
    add_step(h, cJSON_GetObjectItem(x, "step")->valuestring, in);
    free(in);
  }
  cJSON_Delete(d);
}

static void apply_effects(memhost *h, const dexa_result *r) {
  for (size_t i = 0; i < dexa_result_write_count(r); i++) {
    const char *k, *v;
    size_t kl, vl;
    dexa_result_write_at(r, i, &k, &kl, &v, &vl);
    note_name(h, 'w', k, kl);
    attr_put(h, k, kl, v, vl);
  }
  for (size_t i = 0; i < dexa_result_publish_count(r); i++) {
    const char *k, *v;
    size_t kl, vl;
    dexa_result_publish_at(r, i, &k, &kl, &v, &vl);
    note_name(h, 'p', k, kl);
    char *name = strndup(k, kl);
    chan_push(h, name, v, vl);
    free(name);
  }
  for (size_t i = 0; i < dexa_result_event_count(r); i++) {
    const char *e;
    size_t el;
    dexa_result_event_at(r, i, &e, &el);
    cJSON_AddItemToArray(h->events, cJSON_ParseWithLength(e, el));
  }
}

static int cancelled_cb(void *user) { return ((memhost *)user)->cancelled; }

void memhost_set_cancelled(memhost *h, int cancelled) { h->cancelled = cancelled; }

static void sink(void *user, const char *json, size_t len) {
  memhost *h = user;
  cJSON_AddItemToArray(h->live, cJSON_ParseWithLength(json, len));
}

static int dispatch_n(memhost *h, int kind, const char *name, const char *exec_id, int attempt,
                      const char *input, size_t input_len, const char *conditions,
                      const char *recovery, dexa_result **out);

static int dispatch(memhost *h, int kind, const char *name, const char *exec_id, int attempt,
                    const char *input, const char *conditions, const char *recovery,
                    dexa_result **out) {
  return dispatch_n(h, kind, name, exec_id, attempt, input, input ? strlen(input) : 0,
                    conditions, recovery, out);
}

int memhost_dispatch_len(memhost *h, int kind, const char *name, const char *input,
                         size_t input_len, dexa_result **out) {
  return dispatch_n(h, kind, name, kind == DEXA_CALL_RPC ? NULL : "X-1", 1, input, input_len,
                    NULL, NULL, out);
}

static int dispatch_n(memhost *h, int kind, const char *name, const char *exec_id, int attempt,
                      const char *input, size_t input_len, const char *conditions,
                      const char *recovery, dexa_result **out) {
  dexa_call call;
  dexa_call_init(&call, sizeof call);
  call.kind = kind;
  call.session_id = h->session;
  call.name = name;
  call.step_execution_id = exec_id;
  call.attempt = attempt;
  call.input = input;
  call.input_len = input ? input_len : 0;
  call.conditions = conditions;
  call.conditions_len = conditions ? strlen(conditions) : 0;
  call.recovery_error = recovery;
  call.recovery_error_len = recovery ? strlen(recovery) : 0;
  call.now_ms = h->now;
  call.attr_user_data = h;
  call.attr_get = reader_get;
  call.attr_scan = reader_scan;
  call.sink_user_data = h;
  call.event_sink = sink;
  call.cancelled = cancelled_cb;
  call.cancel_user_data = h;
  if (kind != DEXA_CALL_RPC) counter_bump(&h->dispatched, &h->ndispatched, name);
  if (h->dispatch_fn) return h->dispatch_fn(h->dispatch_user, out, h->agent, &call);
  return dexa_dispatch(out, h->agent, &call);
}

int memhost_dispatch(memhost *h, int kind, const char *name, const char *exec_id, int attempt,
                     const char *input, const char *conditions, const char *recovery_error,
                     dexa_result **out) {
  return dispatch(h, kind, name, exec_id, attempt, input, conditions, recovery_error, out);
}

int memhost_start(memhost *h, const char *settings_json) {
  char input[1024];
  snprintf(input, sizeof input, "{\"settings\":%s}", settings_json ? settings_json : "{}");
  dexa_result *r;
  int rc = dispatch(h, DEXA_CALL_EXECUTE, "StartAgentSession", "StartAgentSession-1", 1, input,
                    NULL, NULL, &r);
  if (rc == DEXA_OK) {
    apply_effects(h, r);
    const char *d;
    size_t n;
    dexa_result_decision(r, &d, &n);
    if (d) apply_decision(h, d, n);
  }
  dexa_result_free(r);
  return rc;
}

int memhost_rpc(memhost *h, const char *name, const char *input_json, char **response) {
  dexa_result *r;
  int rc = dispatch(h, DEXA_CALL_RPC, name, NULL, 1, input_json, NULL, NULL, &r);
  if (response) *response = NULL;
  if (rc == DEXA_OK) {
    apply_effects(h, r);
    const char *d;
    size_t n;
    dexa_result_decision(r, &d, &n);
    if (d) apply_decision(h, d, n);
    dexa_result_response(r, &d, &n);
    if (response && d) *response = strndup(d, n);
  } else if (response) {
    *response = strdup(dexa_result_errmsg(r));
  }
  dexa_result_free(r);
  return rc;
}

static int chan_count(void *user, const char *name, size_t n, int64_t *count) {
  memhost *h = user;
  char *copy = strndup(name, n);
  *count = chan_get(h, copy)->count;
  free(copy);
  return DEXA_OK;
}

/* Evaluates a waiting step with dexa_wait_evaluate, as a host would; on
 * success fills s->conditions and consumes. */
static int wait_ready(memhost *h, step *s) {
  dexa_wait_state st;
  dexa_wait_state_init(&st, sizeof st);
  st.now_ms = h->now;
  st.started_ms = s->started;
  st.channel_user_data = h;
  st.channel_count = chan_count;
  char *out = NULL;
  if (dexa_wait_evaluate(&out, NULL, s->wait, strlen(s->wait), &st) != DEXA_OK) {
    fprintf(stderr, "memhost: bad wait %s\n", s->wait);
    h->failed = 1;
    return 0;
  }
  cJSON *answer = cJSON_Parse(out);
  dexa_free(out);
  if (!cJSON_IsTrue(cJSON_GetObjectItem(answer, "ready"))) {
    cJSON_Delete(answer);
    return 0;
  }
  cJSON *res = cJSON_CreateObject();
  cJSON_AddItemToObject(res, "fired", cJSON_DetachItemFromObject(answer, "fired"));
  cJSON *chans = cJSON_AddObjectToObject(res, "channels");
  const cJSON *t;
  cJSON_ArrayForEach(t, cJSON_GetObjectItem(answer, "consume")) {
    chan *ch = chan_get(h, cJSON_GetObjectItem(t, "channel")->valuestring);
    int take = cJSON_GetObjectItem(t, "count")->valueint;
    cJSON *vals = cJSON_AddArrayToObject(chans, cJSON_GetObjectItem(t, "id")->valuestring);
    for (int k = 0; k < take; k++) {
      cJSON_AddItemToArray(vals, cJSON_Parse(ch->values[k]));
      free(ch->values[k]);
    }
    memmove(ch->values, ch->values + take, (size_t)(ch->count - take) * sizeof(char *));
    ch->count -= take;
  }
  cJSON_Delete(answer);
  s->conditions = cJSON_PrintUnformatted(res);
  cJSON_Delete(res);
  return 1;
}

static void set_wait(memhost *h, step *s, const char *json, size_t n) {
  if (!json) {
    s->phase = PH_EXECUTE;
    return;
  }
  s->wait = strndup(json, n);
  s->started = h->now;
  s->phase = PH_WAITING;
}

/* A failed or lost attempt: retry, or the recovery Step, or the flow fails. */
static void attempt_failed(memhost *h, int i, int code, const char *msg) {
  step *s = &h->steps[i];
  const cJSON *o = step_options(h, s->type);
  int max = cJSON_GetObjectItem(o, "max_attempts")->valueint;
  if (s->attempt < max) return;
  const char *recovery = cJSON_GetStringValue(cJSON_GetObjectItem(o, "recovery"));
  if (!recovery) {
    h->failed = 1;
    remove_step(h, i);
    return;
  }
  cJSON *err = cJSON_CreateObject();
  cJSON_AddNumberToObject(err, "code", code);
  cJSON_AddStringToObject(err, "message", msg);
  char *e = cJSON_PrintUnformatted(err);
  cJSON_Delete(err);
  char *input = strdup(s->input);
  remove_step(h, i);
  add_step(h, recovery, input);
  h->steps[h->nsteps - 1].recovery_error = e;
  free(input);
}

static int run_one(memhost *h, int i) {
  step *s = &h->steps[i];
  int kind = s->phase == PH_WAIT_FOR ? DEXA_CALL_WAIT_FOR : DEXA_CALL_EXECUTE;
  s->attempt++;
  dexa_result *r;
  int rc = dispatch(h, kind, s->type, s->exec_id, s->attempt, s->input, s->conditions,
                    s->recovery_error, &r);
  s = &h->steps[i];
  if (h->lose_count > 0 && strcmp(h->lose_step, s->type) == 0) {
    h->lose_count--;
    attempt_failed(h, i, DEXA_E_TIMEOUT, "the worker running this attempt was lost");
  } else if (rc != DEXA_OK) {
    attempt_failed(h, i, rc, dexa_result_errmsg(r));
  } else if (kind == DEXA_CALL_WAIT_FOR) {
    apply_effects(h, r);
    const char *w;
    size_t n;
    dexa_result_wait(r, &w, &n);
    set_wait(h, s, w, n);
    s->attempt = 0;
  } else {
    apply_effects(h, r);
    const char *d;
    size_t n;
    dexa_result_decision(r, &d, &n);
    char *copy = d ? strndup(d, n) : NULL;
    remove_step(h, i);
    if (copy) apply_decision(h, copy, strlen(copy));
    free(copy);
  }
  dexa_result_free(r);
  return 1;
}

int memhost_run(memhost *h) { return memhost_run_steps(h, 100000); }

int memhost_run_steps(memhost *h, int max) {
  int ran = 0;
  for (int guard = 0; guard < max; guard++) {
    int found = -1;
    for (int i = 0; i < h->nsteps && found < 0; i++) {
      step *s = &h->steps[i];
      if (s->phase == PH_WAITING && wait_ready(h, s)) s->phase = PH_EXECUTE;
      if (s->phase != PH_WAITING) found = i;
    }
    if (found < 0) break;
    ran += run_one(h, found);
  }
  return ran;
}

void memhost_lose_results(memhost *h, const char *step_type, int count) {
  free(h->lose_step);
  h->lose_step = strdup(step_type);
  h->lose_count = count;
}

void memhost_advance(memhost *h, int64_t ms) { h->now += ms; }

int memhost_pending(const memhost *h, const char *type) {
  int n = 0;
  for (int i = 0; i < h->nsteps; i++) n += !type || strcmp(h->steps[i].type, type) == 0;
  return n;
}

const char *memhost_events(memhost *h) {
  free(h->events_text);
  h->events_text = cJSON_PrintUnformatted(h->events);
  return h->events_text;
}

const char *memhost_live(memhost *h) {
  free(h->events_text);
  h->events_text = cJSON_PrintUnformatted(h->live);
  return h->events_text;
}

int memhost_dispatches(const memhost *h, const char *step_type) {
  for (int i = 0; i < h->ndispatched; i++)
    if (strcmp(h->dispatched[i].name, step_type) == 0) return h->dispatched[i].n;
  return 0;
}

int memhost_failed(const memhost *h) { return h->failed; }
