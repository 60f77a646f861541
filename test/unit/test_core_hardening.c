/* Hardening of the core and dispatch (issue 14): missing state, struct
 * sizes, single-attempt Steps dispatched again, strict RPC input, damaged
 * state, key lengths and result accessors. Each test drives dexa_dispatch
 * directly, over an empty state or the in-memory host's. */
#include <dexagents/dexagents.h>
#include <stdatomic.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "support/memhost.h"
#include "testing.h"

/* ---- an agent with a read tool and a write tool ---- */

static atomic_int write_calls;
static atomic_int last_attempt;

static int tool_fn(void *user, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  if (user) atomic_fetch_add(&write_calls, 1);
  atomic_store(&last_attempt, dexa_tool_invocation_attempt(inv));
  return dexa_tool_output_set_text(out, "done", 4, 0);
}

static dexa_agent *new_agent(void) {
  dexa_model *m = NULL;
  dexa_tool_source *tools = NULL;
  dexa_model_demo_new(&m, "mock/dex");
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "lookup", "Looks a thing up", NULL, DEXA_TOOL_READ,
                          DEXA_APPROVAL_NONE, tool_fn, NULL);
  dexa_function_tools_add(tools, "send_mail", "Sends mail", NULL, DEXA_TOOL_WRITE,
                          DEXA_APPROVAL_NONE, tool_fn, &write_calls);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  dexa_agent *a = NULL;
  dexa_agent_new(&a, &def, NULL, 0);
  dexa_model_free(m);
  dexa_tool_source_free(tools);
  return a;
}

/* ---- an empty state: every key is absent ---- */

static int empty_get(void *u, const char *k, size_t kl, const char **v, size_t *vl) {
  return DEXA_E_NOT_FOUND;
}

static int empty_scan(void *u, const char *p, size_t pl, dexa_attr_visit_fn visit, void *ctx) {
  return DEXA_OK;
}

static int dispatch_empty(const dexa_agent *a, int kind, const char *name, const char *input,
                          char **decision) {
  dexa_call call;
  dexa_call_init(&call, sizeof call);
  call.kind = kind;
  call.session_id = "s-empty";
  call.name = name;
  call.step_execution_id = kind == DEXA_CALL_RPC ? NULL : "X-1";
  call.input = input;
  call.input_len = input ? strlen(input) : 0;
  call.now_ms = 1700000000000;
  call.attr_get = empty_get;
  call.attr_scan = empty_scan;
  dexa_result *r = NULL;
  int rc = dexa_dispatch(&r, a, &call);
  const char *d;
  size_t n;
  *decision = NULL;
  if (dexa_result_decision(r, &d, &n) == DEXA_OK && d) *decision = strndup(d, n);
  dexa_result_free(r);
  return rc;
}

/* Fills the stack below the caller with images of a running turn 1, each
 * 8-byte shift in turn, so that a read of an uninitialised dexa__turn there
 * sees one. */
struct turn_image {
  int64_t turn;
  char status[16];
  char mode[16];
};

__attribute__((noinline)) static void prime_stack(int shift) {
  volatile unsigned char area[32768];
  struct turn_image img = {1, "running", "chat"};
  const unsigned char *p = (const unsigned char *)&img;
  for (size_t i = 0; i < sizeof area; i++)
    area[i] = p[(i + (size_t)shift * 8) % sizeof img];
  __asm__ volatile("" : : "r"(area) : "memory");
}

/* Item 1: a turn Step with AgentTurn absent ends its branch: it never reads
 * an uninitialised turn record. */
static void test_turn_steps_without_agent_turn_end_their_branch(void) {
  dexa_agent *a = new_agent();
  CHECK(a);
  static const char *steps[] = {"RunModel", "ResumeTurn", "ApplyTurnControl", "CompactContext",
                                "RecordTurnFailure"};
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    for (int shift = 0; shift < 5; shift++) {
      prime_stack(shift);
      char *d = NULL;
      int rc = dispatch_empty(a, DEXA_CALL_EXECUTE, steps[i], "{\"turn\":1,\"round\":1,\"calls\":1}", &d);
      if (rc != DEXA_OK || !d || strcmp(d, "{\"next\":[]}") != 0)
        fprintf(stderr, "    %s (shift %d): %s %s\n", steps[i], shift, dexa_error_name(rc),
                d ? d : "(no decision)");
      int ok = rc == DEXA_OK && d && strcmp(d, "{\"next\":[]}") == 0;
      free(d);
      if (!ok) dexa_agent_free(a);
      CHECK(ok);
    }
  }
  dexa_agent_free(a);
}

/* Item 3: a structure from a newer header whose unknown members are set is
 * refused; zero unknown members are fine. */
typedef struct newer_call {
  dexa_call call;
  int64_t future;
} newer_call;

typedef struct newer_def {
  dexa_agent_def def;
  int64_t future;
} newer_def;

static void test_larger_struct_size_with_set_tail_is_refused(void) {
  dexa_agent *a = new_agent();
  CHECK(a);
  newer_call n;
  CHECK_EQ_INT(dexa_call_init(&n.call, sizeof n), DEXA_OK);
  CHECK_EQ_INT(n.call.struct_size, sizeof n);
  CHECK_EQ_INT(n.future, 0);
  n.call.kind = DEXA_CALL_RPC;
  n.call.session_id = "s-none";
  n.call.name = "snapshot";
  n.call.input = "{}";
  n.call.input_len = 2;
  n.call.attr_get = empty_get;
  n.call.attr_scan = empty_scan;
  dexa_result *r = NULL;
  int zero_tail = dexa_dispatch(&r, a, &n.call);
  dexa_result_free(r);
  n.future = 7;
  int set_tail = dexa_dispatch(&r, a, &n.call);
  dexa_result_free(r);
  n.call.struct_size = 1u << 20; /* garbage: refused without reading it */
  int garbage = dexa_dispatch(&r, a, &n.call);
  dexa_result_free(r);
  dexa_agent_free(a);
  CHECK_EQ_INT(zero_tail, DEXA_E_NOT_FOUND); /* no such session: it got that far */
  CHECK_EQ_INT(set_tail, DEXA_E_STRUCT_SIZE);
  CHECK_EQ_INT(garbage, DEXA_E_STRUCT_SIZE);
  CHECK_EQ_INT(dexa_call_init(&n.call, 1u << 20), DEXA_E_STRUCT_SIZE);

  dexa_model *m = NULL;
  CHECK_EQ_INT(dexa_model_demo_new(&m, "mock/dex"), DEXA_OK);
  newer_def d;
  CHECK_EQ_INT(dexa_agent_def_init(&d.def, sizeof d), DEXA_OK);
  CHECK_EQ_INT(d.def.struct_size, sizeof d);
  d.def.models = &m;
  d.def.model_count = 1;
  dexa_agent *b = NULL;
  int ok = dexa_agent_new(&b, &d.def, NULL, 0);
  dexa_agent_free(b);
  d.future = 1;
  char err[200] = "";
  int refused = dexa_agent_new(&b, &d.def, err, sizeof err);
  dexa_model_free(m);
  CHECK_EQ_INT(ok, DEXA_OK);
  CHECK_EQ_INT(refused, DEXA_E_STRUCT_SIZE);
  CHECK(b == NULL);
  CHECK_CONTAINS(err, "larger");
}

/* Item 4: a second attempt of CallSingleAttemptTool never runs the write;
 * it records an unknown outcome. The first attempt runs it once. */
static void test_single_attempt_tool_dispatched_again_records_unknown_outcome(void) {
  dexa_agent *a = new_agent();
  CHECK(a);
  memhost *h = memhost_new(a, "s-once");
  CHECK_EQ_INT(memhost_start(h, NULL), DEXA_OK);
  memhost_run(h);
  CHECK_EQ_INT(memhost_rpc(h, "send_message", "{\"text\":\"/tool send_mail {}\"}", NULL), DEXA_OK);
  memhost_run_steps(h, 2); /* AwaitUserMessage, RunModel */
  CHECK_EQ_INT(memhost_pending(h, "CallSingleAttemptTool"), 1);
  const char *input =
      "{\"turn\":1,\"round\":1,\"seq\":3,\"call_id\":\"demo-t1r1c1\",\"name\":\"send_mail\","
      "\"source\":\"fns\",\"effect\":\"write\",\"arguments\":{}}";
  atomic_store(&write_calls, 0);
  atomic_store(&last_attempt, 0);
  dexa_result *r = NULL;
  int rc2 = memhost_dispatch(h, DEXA_CALL_EXECUTE, "CallSingleAttemptTool",
                             "CallSingleAttemptTool-1", 2, input, NULL, NULL, &r);
  char *json = NULL;
  dexa_result_json(&json, NULL, r);
  dexa_result_free(r);
  int calls_after_2 = atomic_load(&write_calls);
  int rc1 = memhost_dispatch(h, DEXA_CALL_EXECUTE, "CallSingleAttemptTool",
                             "CallSingleAttemptTool-1", 1, input, NULL, NULL, &r);
  dexa_result_free(r);
  memhost_free(h);
  dexa_agent_free(a);
  CHECK_EQ_INT(rc2, DEXA_OK);
  CHECK_EQ_INT(calls_after_2, 0);
  CHECK_CONTAINS(json, "unknown_outcome");
  CHECK_CONTAINS(json, "attempt 2 was dispatched");
  dexa_free(json);
  CHECK_EQ_INT(rc1, DEXA_OK);
  CHECK_EQ_INT(atomic_load(&write_calls), 1);
  CHECK_EQ_INT(atomic_load(&last_attempt), 1);
}

/* ---- Item 5: strict RPC input ---- */

static char *snapshot_of(memhost *h) {
  char *s = NULL;
  memhost_rpc(h, "snapshot", "{}", &s);
  return s;
}

/* Dispatches an RPC with raw input bytes (len may cover NULs). */
static int raw_rpc(memhost *h, const char *name, const char *input, size_t len, size_t *writes) {
  dexa_result *r = NULL;
  char *copy = input ? malloc(len + 1) : NULL;
  if (copy) {
    memcpy(copy, input, len);
    copy[len] = '\0';
  }
  /* memhost_dispatch takes NUL-terminated text: go through a call here. */
  int rc = memhost_dispatch_len(h, DEXA_CALL_RPC, name, copy, len, &r);
  *writes = dexa_result_write_count(r) + dexa_result_publish_count(r) + dexa_result_event_count(r);
  dexa_result_free(r);
  free(copy);
  return rc;
}

static void test_rpc_input_is_checked_strictly_and_changes_nothing(void) {
  dexa_agent *a = new_agent();
  CHECK(a);
  memhost *h = memhost_new(a, "s-strict");
  CHECK_EQ_INT(memhost_start(h, NULL), DEXA_OK);
  memhost_run(h);
  CHECK_EQ_INT(memhost_rpc(h, "send_message", "{\"text\":\"/ask name?\"}", NULL), DEXA_OK);
  memhost_run(h);
  CHECK_EQ_INT(memhost_rpc(h, "send_message", "{\"text\":\"queued\"}", NULL), DEXA_OK);
  char *before = snapshot_of(h);
  static const struct {
    const char *rpc, *input;
    size_t len; /* 0: strlen */
    int code;
  } cases[] = {
      {"send_message", "{\"text\":\"a\",\"bogus\":1}", 0, DEXA_E_INVALID_JSON},
      {"send_message", "{\"text\":\"a\",\"text\":\"b\"}", 0, DEXA_E_INVALID_JSON},
      {"send_message", "{\"text\":\"a\0b\"}", 15, DEXA_E_INVALID_JSON},
      {"send_message", "{\"text\":\"a\\u0000b\"}", 0, DEXA_E_INVALID_ARG},
      {"send_message", "{\"text\":\"a\xff\"}", 0, DEXA_E_INVALID_JSON},
      {"send_message", "{\"text\":\"a\xc0\xaf\"}", 0, DEXA_E_INVALID_JSON},
      {"send_message", "{\"text\":\"\xed\xa0\x80\"}", 0, DEXA_E_INVALID_JSON},
      {"send_message", "{\"text\":\"a\"}\0", 13, DEXA_E_INVALID_JSON},
      {"send_message", "{\"text\":\"a\"} x", 0, DEXA_E_INVALID_JSON},
      {"send_message", "{\"text\":\"a\x01\"}", 0, DEXA_E_INVALID_JSON},
      {"snapshot", NULL, 0, DEXA_E_INVALID_JSON},
      {"snapshot", "[]", 0, DEXA_E_INVALID_JSON},
      {"snapshot", "\"x\"", 0, DEXA_E_INVALID_JSON},
      {"snapshot", "{\"x\":1}", 0, DEXA_E_INVALID_JSON},
      {"cancel_turn", "null", 0, DEXA_E_INVALID_JSON},
      {"list_agent_messages", "{\"limit\":1.5}", 0, DEXA_E_INVALID_JSON},
      {"list_agent_messages", "{\"before_seq\":2.5}", 0, DEXA_E_INVALID_JSON},
      {"list_agent_messages", "{\"limit\":1e300}", 0, DEXA_E_INVALID_JSON},
      {"delete_message", "{\"message_id\":\"m2\",\"x\":null}", 0, DEXA_E_INVALID_JSON},
      {"steer", "{\"message_id\":\"m2\",\"force\":true}", 0, DEXA_E_INVALID_JSON},
      {"steer", "{\"message_id\":\"m99999999999999999999\"}", 0, DEXA_E_INVALID_JSON},
      {"answer_question", "{\"call_id\":\"demo-t1r1c1\",\"answer\":\"x\",\"y\":1}", 0,
       DEXA_E_INVALID_JSON},
      {"answer_question", "{\"call_id\":\"demo-t1r1c1\",\"answer\":7}", 0, DEXA_E_INVALID_JSON},
      {"resolve_approval", "{\"call_id\":\"c\",\"decision\":\"approve\",\"note\":3}", 0,
       DEXA_E_INVALID_JSON},
      {"execute_plan", "{\"revision\":1,\"now\":1}", 0, DEXA_E_INVALID_JSON},
      {"execute_plan", "{\"revision\":\"1\"}", 0, DEXA_E_INVALID_JSON},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    size_t len = cases[i].input ? (cases[i].len ? cases[i].len : strlen(cases[i].input)) : 0;
    size_t writes = 0;
    int rc = raw_rpc(h, cases[i].rpc, cases[i].input, len, &writes);
    if (rc != cases[i].code || writes) {
      fprintf(stderr, "    case %zu %s: %s (%zu writes), expected %s\n", i, cases[i].rpc,
              dexa_error_name(rc), writes, dexa_error_name(cases[i].code));
      bad++;
    }
  }
  char *after = snapshot_of(h);
  int same = before && after && strcmp(before, after) == 0;
  free(before);
  free(after);
  /* Well-formed inputs still work. */
  int ok1 = memhost_rpc(h, "list_agent_messages", "{\"limit\":2,\"before_seq\":3}", NULL);
  int ok2 = memhost_rpc(h, "answer_question", "{\"call_id\":\"demo-t1r1c1\",\"answer\":\"Ada\"}", NULL);
  memhost_free(h);
  dexa_agent_free(a);
  CHECK_EQ_INT(bad, 0);
  CHECK(same);
  CHECK_EQ_INT(ok1, DEXA_OK);
  CHECK_EQ_INT(ok2, DEXA_OK);
}

/* A recovery Step's recovery_error must be {"code":int,"message":string}. */
static void test_wrongly_typed_recovery_error_is_refused(void) {
  dexa_agent *a = new_agent();
  CHECK(a);
  memhost *h = memhost_new(a, "s-recovery");
  CHECK_EQ_INT(memhost_start(h, NULL), DEXA_OK);
  memhost_run(h);
  CHECK_EQ_INT(memhost_rpc(h, "send_message", "{\"text\":\"/tool send_mail {}\"}", NULL), DEXA_OK);
  memhost_run_steps(h, 2);
  const char *tool_input =
      "{\"turn\":1,\"round\":1,\"seq\":3,\"call_id\":\"demo-t1r1c1\",\"name\":\"send_mail\","
      "\"source\":\"fns\",\"effect\":\"write\",\"arguments\":{}}";
  static const char *bad[] = {"[1]", "{\"code\":\"x\",\"message\":\"m\"}",
                              "{\"code\":-201,\"message\":5}", "{\"code\":-201.5,\"message\":\"m\"}",
                              "not json", "{\"code\":-201,\"message\":\"m\"} x"};
  int wrong = 0;
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    static const char *steps[] = {"RecordToolOutcome", "RecordTurnFailure"};
    for (int k = 0; k < 2; k++) {
      dexa_result *r = NULL;
      int rc = memhost_dispatch(h, DEXA_CALL_EXECUTE, steps[k], "X-1", 1,
                                k ? "{\"turn\":1}" : tool_input, NULL, bad[i], &r);
      size_t w = dexa_result_write_count(r);
      dexa_result_free(r);
      if (rc != DEXA_E_INVALID_JSON || w) {
        fprintf(stderr, "    %s with %s: %s\n", steps[k], bad[i], dexa_error_name(rc));
        wrong++;
      }
    }
  }
  dexa_result *r = NULL;
  int good = memhost_dispatch(h, DEXA_CALL_EXECUTE, "RecordToolOutcome", "X-1", 1, tool_input,
                              NULL, "{\"code\":-201,\"message\":\"lost\"}", &r);
  dexa_result_free(r);
  memhost_free(h);
  dexa_agent_free(a);
  CHECK_EQ_INT(wrong, 0);
  CHECK_EQ_INT(good, DEXA_OK);
}

/* ---- Item 6: damaged stored values ---- */

static int rpc_err(memhost *h, const char *name, const char *input, char **errmsg) {
  dexa_result *r = NULL;
  int rc = memhost_dispatch_len(h, DEXA_CALL_RPC, name, input, strlen(input), &r);
  const char *resp;
  size_t n;
  dexa_result_response(r, &resp, &n);
  /* A successful response must be JSON. */
  if (rc == DEXA_OK && (!resp || !cJSON_ParseWithLength(resp, n))) rc = -99999;
  *errmsg = strdup(dexa_result_errmsg(r));
  dexa_result_free(r);
  return rc;
}

static void test_snapshot_and_paging_refuse_damaged_values(void) {
  dexa_agent *a = new_agent();
  CHECK(a);
  static const struct {
    const char *key, *value, *rpc;
  } cases[] = {
      {"AgentTurn", "{\"turn\":", "snapshot"},
      {"AgentPlan", "not json", "snapshot"},
      {"AgentMessages/00000000000000000001", "{\"seq\":1,", "snapshot"},
      {"AgentMessages/00000000000000000001", "{\"seq\":1} x", "list_agent_messages"},
      {"QueuedUserMessages/00000000000000000009", "[", "snapshot"},
      {"PendingToolCalls/c1", "{\"turn\"", "snapshot"},
      {"AgentContextSummary", "{,}", "snapshot"},
  };
  int wrong = 0;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    memhost *h = memhost_new(a, "s-damaged");
    memhost_start(h, NULL);
    memhost_run(h);
    memhost_rpc(h, "send_message", "{\"text\":\"hello\"}", NULL);
    memhost_run(h);
    memhost_put(h, cases[i].key, cases[i].value);
    char *msg = NULL;
    int rc = rpc_err(h, cases[i].rpc, "{}", &msg);
    if (rc != DEXA_E_CORRUPT || !strstr(msg, cases[i].key)) {
      fprintf(stderr, "    %s = %s: %s from %s (%s)\n", cases[i].key, cases[i].value,
              dexa_error_name(rc), cases[i].rpc, msg);
      wrong++;
    }
    free(msg);
    memhost_free(h);
  }
  dexa_agent_free(a);
  CHECK_EQ_INT(wrong, 0);
}

/* ---- Item 7: keys are read with their length ---- */

/* A host whose keys are not NUL-terminated: all keys live in one buffer,
 * each followed by digits that are not part of it. */
typedef struct packed {
  char *keys; /* key i at keys + off[i], len[i] bytes, then "7777" */
  size_t size, cap;
  size_t off[4096], len[4096];
  char *values[4096];
  int n;
} packed;

static void packed_add(void *ctx, const char *key, const char *value) {
  packed *p = ctx;
  size_t kl = strlen(key);
  if (p->n == 4096) return;
  if (p->size + kl + 4 > p->cap) {
    p->cap = (p->size + kl + 4) * 2;
    p->keys = realloc(p->keys, p->cap);
  }
  memcpy(p->keys + p->size, key, kl);
  memcpy(p->keys + p->size + kl, "7777", 4);
  p->off[p->n] = p->size;
  p->len[p->n] = kl;
  p->values[p->n++] = strdup(value);
  p->size += kl + 4;
}

static int packed_get(void *u, const char *k, size_t kl, const char **v, size_t *vl) {
  packed *p = u;
  for (int i = 0; i < p->n; i++)
    if (p->len[i] == kl && memcmp(p->keys + p->off[i], k, kl) == 0) {
      *v = p->values[i];
      *vl = strlen(*v);
      return DEXA_OK;
    }
  return DEXA_E_NOT_FOUND;
}

static int packed_scan(void *u, const char *prefix, size_t pl, dexa_attr_visit_fn visit, void *ctx) {
  packed *p = u; /* memhost_each gave the keys in order */
  for (int i = 0; i < p->n; i++) {
    if (p->len[i] < pl || memcmp(p->keys + p->off[i], prefix, pl) != 0) continue;
    int rc = visit(ctx, p->keys + p->off[i], p->len[i], p->values[i], strlen(p->values[i]));
    if (rc < 0) return rc;
    if (rc > 0) break;
  }
  return DEXA_OK;
}

static void packed_free(packed *p) {
  for (int i = 0; i < p->n; i++) free(p->values[i]);
  free(p->keys);
}

/* The result JSON of one call on the packed host (malloc'd). */
static char *packed_call(const dexa_agent *a, packed *p, int kind, const char *name,
                         const char *input) {
  dexa_call call;
  dexa_call_init(&call, sizeof call);
  call.kind = kind;
  call.session_id = "s-packed";
  call.name = name;
  call.step_execution_id = kind == DEXA_CALL_RPC ? NULL : "X-1";
  call.input = input;
  call.input_len = strlen(input);
  call.now_ms = 1700000000000;
  call.attr_user_data = p;
  call.attr_get = packed_get;
  call.attr_scan = packed_scan;
  dexa_result *r = NULL;
  dexa_dispatch(&r, a, &call);
  char *json = NULL;
  dexa_result_json(&json, NULL, r);
  dexa_result_free(r);
  return json;
}

static char *memhost_call(memhost *h, int kind, const char *name, const char *input) {
  dexa_result *r = NULL;
  memhost_dispatch(h, kind, name, "X-1", 1, input, NULL, NULL, &r);
  char *json = NULL;
  dexa_result_json(&json, NULL, r);
  dexa_result_free(r);
  return json;
}

static void test_keys_are_read_with_their_length(void) {
  dexa_model *m = NULL;
  dexa_model_demo_new(&m, "mock/dex");
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.context_window_tokens = 2500;
  dexa_agent *a = NULL;
  dexa_agent_new(&a, &def, NULL, 0);
  dexa_model_free(m);
  CHECK(a);
  memhost *h = memhost_new(a, "s-packed");
  memhost_start(h, NULL);
  memhost_run(h);
  char text[700];
  for (int i = 0; i < 12; i++) {
    snprintf(text, sizeof text, "{\"text\":\"turn %d %0500d\"}", i, i);
    memhost_rpc(h, "send_message", text, NULL);
    memhost_run(h);
  }
  memhost_rpc(h, "send_message", "{\"text\":\"queued while idle\"}", NULL);
  packed p;
  memset(&p, 0, sizeof p);
  memhost_each(h, packed_add, &p);
  static const struct {
    int kind;
    const char *name, *input;
  } calls[] = {
      {DEXA_CALL_RPC, "list_agent_messages", "{\"before_seq\":9,\"limit\":200}"},
      {DEXA_CALL_RPC, "list_agent_messages", "{\"before_seq\":3,\"limit\":200}"},
      {DEXA_CALL_RPC, "snapshot", "{}"},
      {DEXA_CALL_RPC, "delete_message", "{\"message_id\":\"m13\"}"},
      {DEXA_CALL_EXECUTE, "CompactContext", "{\"turn\":12,\"round\":1}"},
  };
  int differ = 0;
  for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
    char *want = memhost_call(h, calls[i].kind, calls[i].name, calls[i].input);
    char *got = packed_call(a, &p, calls[i].kind, calls[i].name, calls[i].input);
    if (!want || !got || strcmp(want, got) != 0 || strstr(want, "\"status\":0,") == NULL) {
      fprintf(stderr, "    %s %s:\n      memhost %.300s\n      packed  %.300s\n", calls[i].name,
              calls[i].input, want, got);
      differ++;
    }
    dexa_free(want);
    dexa_free(got);
  }
  packed_free(&p);
  memhost_free(h);
  dexa_agent_free(a);
  CHECK_EQ_INT(differ, 0);
}

/* ---- Item 8: result accessors do what their pages say ---- */

static void test_result_accessors_match_their_pages(void) {
  CHECK_STR(dexa_result_errmsg(NULL), "");
  CHECK_EQ_INT(dexa_result_status(NULL), DEXA_E_INVALID_ARG);
  char *out = (char *)"garbage";
  size_t len = 99;
  CHECK_EQ_INT(dexa_result_json(&out, &len, NULL), DEXA_E_INVALID_ARG);
  CHECK(out == NULL);
  CHECK_EQ_INT(len, 0);
  const char *doc = "garbage";
  len = 99;
  CHECK_EQ_INT(dexa_result_wait(NULL, &doc, &len), DEXA_E_INVALID_ARG);
  CHECK(doc == NULL && len == 0);
  /* A failed result: the status and its message, nothing else. */
  dexa_agent *a = new_agent();
  CHECK(a);
  dexa_result *r = NULL;
  char *d = NULL;
  int rc = dispatch_empty(a, DEXA_CALL_RPC, "snapshot", "{}", &d);
  CHECK_EQ_INT(rc, DEXA_E_NOT_FOUND);
  dexa_call call;
  dexa_call_init(&call, sizeof call);
  call.kind = DEXA_CALL_RPC;
  call.session_id = "s-none";
  call.name = "snapshot";
  call.input = "{}";
  call.input_len = 2;
  call.attr_get = empty_get;
  call.attr_scan = empty_scan;
  CHECK_EQ_INT(dexa_dispatch(&r, a, &call), DEXA_E_NOT_FOUND);
  dexa_agent_free(a);
  CHECK_CONTAINS(dexa_result_errmsg(r), "s-none");
  CHECK_EQ_INT(dexa_result_json(&out, &len, r), DEXA_OK);
  cJSON *j = cJSON_Parse(out);
  int status = cJSON_GetObjectItem(j, "status")->valueint;
  const char *error = cJSON_GetStringValue(cJSON_GetObjectItem(j, "error"));
  int error_ok = error && strstr(error, "s-none") != NULL;
  int empty = cJSON_GetArraySize(cJSON_GetObjectItem(j, "writes")) == 0 &&
              cJSON_IsNull(cJSON_GetObjectItem(j, "response"));
  cJSON_Delete(j);
  dexa_free(out);
  dexa_result_free(r);
  CHECK_EQ_INT(status, DEXA_E_NOT_FOUND);
  CHECK(error_ok);
  CHECK(empty);
  free(d);
  /* A successful result has "" for its message. */
  dexa_agent *b = new_agent();
  CHECK(b);
  call.kind = DEXA_CALL_EXECUTE;
  call.name = "StartAgentSession";
  call.step_execution_id = "StartAgentSession-1";
  call.input = "{\"settings\":{}}";
  call.input_len = strlen(call.input);
  dexa_result *ok = NULL;
  int f = dexa_dispatch(&ok, b, &call);
  dexa_agent_free(b);
  CHECK_EQ_INT(f, DEXA_OK);
  CHECK_STR(dexa_result_errmsg(ok), "");
  dexa_result_free(ok);
}

int main(void) {
  RUN(test_turn_steps_without_agent_turn_end_their_branch);
  RUN(test_larger_struct_size_with_set_tail_is_refused);
  RUN(test_single_attempt_tool_dispatched_again_records_unknown_outcome);
  RUN(test_rpc_input_is_checked_strictly_and_changes_nothing);
  RUN(test_wrongly_typed_recovery_error_is_refused);
  RUN(test_snapshot_and_paging_refuse_damaged_values);
  RUN(test_keys_are_read_with_their_length);
  RUN(test_result_accessors_match_their_pages);
  TEST_MAIN_END();
}
