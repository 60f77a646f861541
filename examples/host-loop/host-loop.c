/* host-loop: the smallest host of the dispatch ABI.
 *
 * libdexagents' core keeps no state between calls: a host stores the
 * session's attributes, channels and Step queue, and calls dexa_dispatch
 * once per Step method or RPC. This program is such a host, in memory and
 * on one thread, to show everything a host (a Dex worker, another engine)
 * has to do:
 *   1. register the flow: dexa_flow_describe tells which Steps have a WaitFor;
 *   2. fill a dexa_call: kind, names, input, time, attribute reader callbacks;
 *   3. apply a result atomically: attribute writes (NULL value = delete),
 *      channel publishes, durable events, then the wait or the decision;
 *   4. evaluate waits with dexa_wait_evaluate (channel counts, the clock)
 *      and hand the consumed messages to Execute;
 *   5. retry failed attempts, then run the recovery Step;
 *   6. claim a single-attempt Step durably before running it, and record an
 *      unknown outcome (its recovery Step) when a claimed one comes back;
 *   7. answer pending calls (PendingToolCalls/<id>) with their RPCs.
 * It runs a "hello" turn, a "/tool clock {}" turn, a one-second durable
 * wait and a write that needs approval, and prints the transcript. With
 * --lose-write it plays a crash right after the write's claim: the write's
 * result is lost and the host records an unknown outcome instead of running
 * it again. (Leases and durability are the embedded runtime's job; see
 * src/runtime.) */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* ---- the host's state: attributes (sorted by key), channels, Steps ------ */
typedef struct kv { char *key, *value; } kv;
typedef struct step {
  char *type, *input, *conditions, *recovery_error;
  char exec_id[96];
  int attempt;
  char *wait;         /* non-NULL while the Step waits for its conditions */
  int64_t wait_since; /* when the wait was stored: its timers count from it */
  int has_wait_for;   /* WaitFor still to run */
  int claimed;        /* a single-attempt Step's durable claim: it has started */
} step;
typedef struct host {
  const dexa_agent *agent;
  cJSON *flow;        /* dexa_flow_describe */
  kv attrs[256];      /* a real host uses its database; 256 is plenty here */
  int nattrs;
  cJSON *channels;    /* {"name":[message, ...]} */
  step steps[32];
  int nsteps, exec_counter;
  int lose_write;     /* --lose-write: play a crash after a write's claim */
} host;

static int64_t now_ms(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static int attr_index(const host *h, const char *key, size_t n, int *found) {
  int i = 0;
  for (; i < h->nattrs; i++) {
    int c = strncmp(h->attrs[i].key, key, n);
    if (c == 0 && h->attrs[i].key[n] == '\0') { *found = 1; return i; }
    if (c > 0 || (c == 0 && h->attrs[i].key[n] != '\0')) break;
  }
  *found = 0;
  return i;
}

/* dexa_attr_get_fn: the value stays ours; it is borrowed until the next call. */
static int attr_get(void *user, const char *key, size_t key_len, const char **value,
                    size_t *value_len) {
  host *h = user;
  int found, i = attr_index(h, key, key_len, &found);
  if (!found) return DEXA_E_NOT_FOUND;
  *value = h->attrs[i].value;
  *value_len = strlen(*value);
  return DEXA_OK;
}

/* dexa_attr_scan_fn: every key with the prefix, ascending. */
static int attr_scan(void *user, const char *prefix, size_t prefix_len, dexa_attr_visit_fn visit,
                     void *ctx) {
  host *h = user;
  for (int i = 0; i < h->nattrs; i++) {
    if (strncmp(h->attrs[i].key, prefix, prefix_len) != 0) continue;
    const kv *a = &h->attrs[i];
    int rc = visit(ctx, a->key, strlen(a->key), a->value, strlen(a->value));
    if (rc != 0) return rc < 0 ? rc : DEXA_OK; /* 1: stop early */
  }
  return DEXA_OK;
}

static void attr_put(host *h, const char *key, size_t kl, const char *value, size_t vl) {
  int found, i = attr_index(h, key, kl, &found);
  if (found) free(h->attrs[i].value);
  if (found && !value) { /* delete */
    free(h->attrs[i].key);
    memmove(&h->attrs[i], &h->attrs[i + 1], (size_t)(--h->nattrs - i) * sizeof(kv));
    return;
  }
  if (!value) return;
  if (!found) {
    if (h->nattrs == 256) { fprintf(stderr, "host-loop: attribute table full\n"); exit(1); }
    memmove(&h->attrs[i + 1], &h->attrs[i], (size_t)(h->nattrs++ - i) * sizeof(kv));
    h->attrs[i].key = strndup(key, kl);
  }
  h->attrs[i].value = strndup(value, vl);
}

/* ---- Steps --------------------------------------------------------------- */
static const cJSON *step_options(const host *h, const char *type) {
  const cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(h->flow, "steps"))
    if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(s, "name")), type) == 0)
      return cJSON_GetObjectItem(s, "options");
  return NULL;
}

static void add_step(host *h, const char *type, const char *input, const char *recovery_error) {
  step *s = &h->steps[h->nsteps++];
  memset(s, 0, sizeof *s);
  s->type = strdup(type);
  s->input = strdup(input);
  s->recovery_error = recovery_error ? strdup(recovery_error) : NULL;
  snprintf(s->exec_id, sizeof s->exec_id, "%s-%d", type, ++h->exec_counter);
  s->has_wait_for = cJSON_IsTrue(cJSON_GetObjectItem(step_options(h, type), "has_wait_for"));
}

static void remove_step(host *h, int i) {
  step *s = &h->steps[i];
  free(s->type), free(s->input), free(s->conditions), free(s->recovery_error), free(s->wait);
  memmove(s, s + 1, (size_t)(--h->nsteps - i) * sizeof(step));
}

/* dexa_channel_count_fn: how many messages a channel holds. */
static int channel_count(void *user, const char *channel, size_t len, int64_t *count) {
  host *h = user;
  char *name = strndup(channel, len);
  *count = cJSON_GetArraySize(cJSON_GetObjectItem(h->channels, name));
  free(name);
  return DEXA_OK;
}

/* dexa_wait_evaluate says whether the wait is satisfied and what it
 * consumes; the host takes those messages and hands them to Execute. It
 * also says when the next timer is due (*next_due, 0 when none). */
static int wait_ready(host *h, step *s, int64_t *next_due) {
  dexa_wait_state st;
  dexa_wait_state_init(&st, sizeof st);
  st.now_ms = now_ms();
  st.started_ms = s->wait_since;
  st.channel_user_data = h;
  st.channel_count = channel_count;
  char *out = NULL;
  if (dexa_wait_evaluate(&out, NULL, s->wait, strlen(s->wait), &st) != DEXA_OK) return 0;
  cJSON *answer = cJSON_Parse(out);
  dexa_free(out);
  const cJSON *due = cJSON_GetObjectItem(answer, "next_due_ms");
  if (cJSON_IsNumber(due) && (!*next_due || (int64_t)due->valuedouble < *next_due))
    *next_due = (int64_t)due->valuedouble;
  if (!cJSON_IsTrue(cJSON_GetObjectItem(answer, "ready"))) {
    cJSON_Delete(answer);
    return 0;
  }
  /* Execute's conditions: {"fired":[..],"channels":{"<id>":[messages]}} */
  cJSON *res = cJSON_CreateObject(), *got = cJSON_CreateObject();
  cJSON_AddItemToObject(res, "fired", cJSON_DetachItemFromObject(answer, "fired"));
  cJSON_AddItemToObject(res, "channels", got);
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(answer, "consume")) {
    cJSON *ch = cJSON_GetObjectItem(h->channels, cJSON_GetStringValue(cJSON_GetObjectItem(c, "channel")));
    int take = cJSON_GetObjectItem(c, "count")->valueint;
    cJSON *list = cJSON_AddArrayToObject(got, cJSON_GetStringValue(cJSON_GetObjectItem(c, "id")));
    while (take-- > 0) cJSON_AddItemToArray(list, cJSON_DetachItemFromArray(ch, 0));
  }
  s->conditions = cJSON_PrintUnformatted(res);
  cJSON_Delete(res);
  cJSON_Delete(answer);
  free(s->wait);
  s->wait = NULL;
  return 1;
}

/* ---- dispatch and apply ---------------------------------------------------- */
static int dispatch(host *h, int kind, const char *name, const step *s, const char *input,
                    dexa_result **out) {
  dexa_call call;
  dexa_call_init(&call, sizeof call);
  call.kind = kind;
  call.session_id = "s-host-loop";
  call.name = name;
  call.step_execution_id = s ? s->exec_id : NULL;
  call.attempt = s ? s->attempt : 1;
  call.input = input;
  call.input_len = strlen(input);
  if (s && s->conditions) call.conditions = s->conditions, call.conditions_len = strlen(s->conditions);
  if (s && s->recovery_error) call.recovery_error = s->recovery_error, call.recovery_error_len = strlen(s->recovery_error);
  call.now_ms = now_ms();
  call.attr_user_data = h;
  call.attr_get = attr_get;
  call.attr_scan = attr_scan;
  return dexa_dispatch(out, h->agent, &call);
}

/* Everything of one result, applied together (a real host: one transaction). */
static void apply(host *h, const dexa_result *r) {
  const char *k, *v, *j;
  size_t kl, vl, jl;
  for (size_t i = 0; i < dexa_result_write_count(r); i++) {
    dexa_result_write_at(r, i, &k, &kl, &v, &vl);
    attr_put(h, k, kl, v, vl);
  }
  for (size_t i = 0; i < dexa_result_publish_count(r); i++) {
    dexa_result_publish_at(r, i, &k, &kl, &v, &vl);
    char *name = strndup(k, kl);
    if (!cJSON_GetObjectItem(h->channels, name)) cJSON_AddArrayToObject(h->channels, name);
    cJSON_AddItemToArray(cJSON_GetObjectItem(h->channels, name), cJSON_ParseWithLength(v, vl));
    free(name);
  }
  for (size_t i = 0; i < dexa_result_event_count(r); i++) { /* a host appends these to AgentEvents */
    dexa_result_event_at(r, i, &j, &jl);
    printf("  event %.*s\n", (int)(jl > 110 ? 110 : jl), j);
  }
  dexa_result_decision(r, &j, &jl);
  cJSON *d = j ? cJSON_ParseWithLength(j, jl) : NULL;
  const cJSON *x;
  cJSON_ArrayForEach(x, cJSON_GetObjectItem(d, "cancel"))
    for (int i = h->nsteps - 1; i >= 0; i--)
      if (strcmp(h->steps[i].type, x->valuestring) == 0) remove_step(h, i);
  cJSON_ArrayForEach(x, cJSON_GetObjectItem(d, "next")) {
    char *in = cJSON_PrintUnformatted(cJSON_GetObjectItem(x, "input"));
    add_step(h, cJSON_GetStringValue(cJSON_GetObjectItem(x, "step")), in, NULL);
    free(in);
  }
  cJSON_Delete(d);
}

static int max_attempts(const host *h, const char *type) {
  return cJSON_GetObjectItem(step_options(h, type), "max_attempts")->valueint;
}

/* After the last failed attempt, the recovery Step runs with the error. */
static void give_up(host *h, int i, int code, const char *why) {
  const char *recovery = cJSON_GetStringValue(cJSON_GetObjectItem(step_options(h, h->steps[i].type), "recovery"));
  char err[512];
  snprintf(err, sizeof err, "{\"code\":%d,\"message\":\"%s\"}", code, why);
  if (recovery) add_step(h, recovery, h->steps[i].input, err);
  remove_step(h, i);
}

/* Runs one method of Step i: WaitFor (stores the wait) or Execute (removes
 * the Step and applies its decision). A failed attempt is retried up to
 * max_attempts, then the recovery Step runs with the error. */
static void run_step(host *h, int i) {
  step *s = &h->steps[i];
  int kind = s->has_wait_for ? DEXA_CALL_WAIT_FOR : DEXA_CALL_EXECUTE;
  int single = kind == DEXA_CALL_EXECUTE && max_attempts(h, s->type) == 1;
  if (single && s->claimed) {
    /* Claimed before, and no result recorded: it may have run. Never run
     * it again; its recovery Step records an unknown outcome. */
    printf("%-22s was claimed and lost its result: unknown outcome\n", s->exec_id);
    give_up(h, i, DEXA_E_TIMEOUT, "the worker running this attempt was lost");
    return;
  }
  if (single) {
    s->claimed = 1; /* a real host commits and syncs this claim first */
    printf("%-22s claimed (durably, before it runs)\n", s->exec_id);
  }
  s->attempt++;
  dexa_result *r = NULL;
  int rc = dispatch(h, kind, s->type, s, s->input, &r);
  printf("%-22s %-8s attempt %d: %s\n", s->exec_id, kind == DEXA_CALL_WAIT_FOR ? "WaitFor" : "Execute",
         s->attempt, rc == DEXA_OK ? "ok" : dexa_result_errmsg(r));
  if (single && h->lose_write) { /* --lose-write: the process "died" here */
    h->lose_write = 0;
    printf("%-22s result lost (a crash after the claim)\n", s->exec_id);
  } else if (rc != DEXA_OK) {
    if (s->attempt >= max_attempts(h, s->type)) give_up(h, i, rc, "attempts ran out");
  } else if (kind == DEXA_CALL_WAIT_FOR) {
    const char *w;
    size_t wl;
    apply(h, r);
    dexa_result_wait(r, &w, &wl);
    s->has_wait_for = 0, s->attempt = 0;
    s->wait = w ? strndup(w, wl) : NULL;
    s->wait_since = now_ms();
  } else {
    remove_step(h, i); /* before apply: the decision may add Steps */
    apply(h, r);
  }
  dexa_result_free(r);
}

/* Runs Steps until every one waits for something that is not there; a
 * wait on a timer is slept out (a real host sets a durable timer). */
static void run_until_idle(host *h) {
  for (;;) {
    int progress = 0;
    int64_t next_due = 0;
    for (int i = 0; i < h->nsteps && !progress; i++)
      if (!h->steps[i].wait || wait_ready(h, &h->steps[i], &next_due)) run_step(h, i), progress = 1;
    if (progress) continue;
    if (!next_due) return;
    int64_t ms = next_due - now_ms();
    if (ms > 0) usleep((useconds_t)(ms * 1000));
  }
}

static void rpc(host *h, const char *name, const char *json) {
  dexa_result *r = NULL;
  printf("\n>> %s %s\n", name, json);
  if (dispatch(h, DEXA_CALL_RPC, name, NULL, json, &r) == DEXA_OK) apply(h, r);
  else printf("%s: %s\n", name, dexa_result_errmsg(r));
  dexa_result_free(r);
  run_until_idle(h);
}

/* Pending calls wait for a person: PendingToolCalls/<call id> holds the
 * call and its "kind" (approval, question, timer). Approve every one. */
static void approve_pending(host *h) {
  for (int i = 0; i < h->nattrs; i++) {
    if (strncmp(h->attrs[i].key, "PendingToolCalls/", 17) != 0) continue;
    cJSON *p = cJSON_Parse(h->attrs[i].value);
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(p, "kind"));
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(p, "call_id"));
    printf("pending %s: %s of %s\n", id, kind, cJSON_GetStringValue(cJSON_GetObjectItem(p, "name")));
    char in[256];
    snprintf(in, sizeof in, "{\"call_id\":\"%s\",\"decision\":\"approve\"}", id);
    int approval = kind && strcmp(kind, "approval") == 0;
    cJSON_Delete(p);
    if (approval) {
      rpc(h, "resolve_approval", in);
      i = -1; /* the attributes changed: look again */
    }
  }
}

static void send_message(host *h, const char *text) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "text", text);
  char *json = cJSON_PrintUnformatted(in);
  rpc(h, "send_message", json);
  cJSON_Delete(in);
  free(json);
}

static int clock_tool(void *user, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  char now[64];
  time_t t = time(NULL);
  size_t n = strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  return dexa_tool_output_set_text(out, now, n, 0);
}

/* A write that must not run twice (CallSingleAttemptTool), approved first. */
static int stamp_tool(void *user, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  int *stamps = user;
  (*stamps)++;
  return dexa_tool_output_set_text(out, "stamped", 7, 0);
}

int main(int argc, char **argv) {
  int stamps = 0;
  dexa_model *model = NULL;
  dexa_tool_source *tools = NULL;
  dexa_agent *agent = NULL;
  char err[256] = "";
  dexa_model_demo_new(&model, "mock/dex");
  dexa_function_tools_new(&tools, "host");
  dexa_function_tools_add(tools, "clock", "Returns the current UTC time.", NULL, DEXA_TOOL_READ,
                          DEXA_APPROVAL_NONE, clock_tool, NULL);
  dexa_function_tools_add(tools, "stamp", "Stamps the document (a write).", NULL, DEXA_TOOL_WRITE,
                          DEXA_APPROVAL_REQUIRED, stamp_tool, &stamps);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &model;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  def.builtin_tools = DEXA_BUILTIN_DURABLE_WAIT;
  int rc = dexa_agent_new(&agent, &def, err, sizeof err);
  dexa_model_free(model); /* the agent holds its own references */
  dexa_tool_source_free(tools);
  if (rc != DEXA_OK) {
    fprintf(stderr, "host-loop: %s: %s\n", dexa_strerror(rc), err);
    return 1;
  }
  host h = {agent, NULL, {{0}}, 0, cJSON_CreateObject(), {{0}}, 0, 0, 0};
  h.lose_write = argc > 1 && strcmp(argv[1], "--lose-write") == 0;
  char *flow;
  size_t flow_len;
  dexa_flow_describe(&flow, &flow_len, agent); /* 1. register the flow */
  h.flow = cJSON_ParseWithLength(flow, flow_len);
  const char *start = cJSON_GetStringValue(cJSON_GetObjectItem(h.flow, "start_step"));
  add_step(&h, start, "{\"settings\":{}}", NULL);
  dexa_free(flow);
  run_until_idle(&h);
  send_message(&h, "hello");
  send_message(&h, "/tool clock {}");
  send_message(&h, "/wait 1 a short pause");
  send_message(&h, "/tool stamp {}");
  approve_pending(&h);
  printf("\nstamp ran %d time(s)\n", stamps);

  printf("\ntranscript (AgentMessages):\n");
  for (int i = 0; i < h.nattrs; i++) {
    if (strncmp(h.attrs[i].key, "AgentMessages/", 14) != 0) continue;
    cJSON *m = cJSON_Parse(h.attrs[i].value);
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItem(m, "role"));
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(m, "text"));
    const char *out = cJSON_GetStringValue(cJSON_GetObjectItem(m, "output"));
    char *calls = cJSON_PrintUnformatted(cJSON_GetObjectItem(m, "tool_calls"));
    printf("  %-5s %s%s\n", role ? role : "?", text ? text : out ? out : "",
           text || out || !calls ? "" : calls);
    free(calls);
    cJSON_Delete(m);
  }
  while (h.nsteps) remove_step(&h, 0);
  for (int i = 0; i < h.nattrs; i++) free(h.attrs[i].key), free(h.attrs[i].value);
  cJSON_Delete(h.channels);
  cJSON_Delete(h.flow);
  dexa_agent_free(agent);
  return 0;
}
