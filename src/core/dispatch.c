/* dexa_dispatch: validates a call, routes it to its Step or RPC handler and
 * returns the handler's result. Keeps nothing between calls. */
#include <string.h>

#include "core/flow_table.h"
#include "flow/call.h"
#include "util/json_span.h"
#include "util/struct_size.h"

#define CALL_V1_SIZE DEXA__CALL_V1_SIZE

DEXA_EXTERN int dexa_call_init(dexa_call *call, size_t struct_size) {
  if (!call) return DEXA_E_INVALID_ARG;
  if (struct_size < CALL_V1_SIZE || struct_size > DEXA__STRUCT_SIZE_MAX) return DEXA_E_STRUCT_SIZE;
  memset(call, 0, struct_size);
  /* The caller's size: an older caller's structure ends before the members
   * it does not know, which then read as zero; a newer caller's members
   * this library does not know are refused by dexa_dispatch once set. */
  call->struct_size = (uint32_t)struct_size;
  call->attempt = 1;
  return DEXA_OK;
}

/* Returns NULL when the call is well formed, else what is wrong with it. */
static const char *call_problem(const dexa_call *call, int *code) {
  *code = DEXA_E_INVALID_ARG;
  if (call->struct_size < CALL_V1_SIZE) {
    *code = DEXA_E_STRUCT_SIZE;
    return "call->struct_size is smaller than dexa_call 1.0 (use dexa_call_init)";
  }
  if (!dexa__struct_tail_ok(call, call->struct_size, sizeof *call)) {
    *code = DEXA_E_STRUCT_SIZE;
    return "call->struct_size is larger than this library's dexa_call and the members it "
           "does not know are set (a newer header than the library)";
  }
  if (call->kind < DEXA_CALL_WAIT_FOR || call->kind > DEXA_CALL_RPC) return "unknown call kind";
  if (!call->session_id || !*call->session_id) return "session_id is empty";
  if (!call->name || !*call->name) return "name is empty";
  if (!call->attr_get || !call->attr_scan) return "the attribute reader callbacks are not set";
  if (call->attempt < 1) return "attempt must be at least 1";
  if (call->input_len && !call->input) return "input is NULL with a length";
  return NULL;
}

/* An RPC input is a client's: cap it before parsing (a message plus room
 * for the other members); Step inputs come from the library itself. */
static int input_too_large(const dexa__ctx *c) {
  const dexa_call *call = c->call;
  return call->kind == DEXA_CALL_RPC &&
         (int64_t)call->input_len > c->agent->def.max_message_bytes * 6 + 65536;
}

/* Parses the call's input into c->input (null when absent). */
static int parse_input(dexa__ctx *c) {
  const dexa_call *call = c->call;
  if (!call->input || call->input_len == 0) {
    c->input = cJSON_CreateNull();
    return c->input ? DEXA_OK : DEXA_E_NOMEM;
  }
  const char *end = NULL;
  c->input = cJSON_ParseWithLengthOpts(call->input, call->input_len, &end, 0);
  if (!c->input && dexa__json_validate(call->input, call->input_len) == 0)
    return dexa__result_fail(c->result, DEXA_E_NOMEM, NULL); /* valid: memory ran out */
  if (!c->input) return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "input is not valid JSON");
  const char *p = end;
  while (p < call->input + call->input_len && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
    p++;
  if (p != call->input + call->input_len)
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "input has text after the JSON value");
  return DEXA_OK;
}

static dexa__handler route(dexa__ctx *c) {
  const dexa_call *call = c->call;
  if (call->kind == DEXA_CALL_RPC) {
    const dexa__rpc_def *r = dexa__flow_find_rpc(call->name);
    if (!r) dexa__result_failf(c->result, DEXA_E_UNKNOWN_RPC, "unknown RPC \"%.100s\"", call->name);
    if (!r || dexa__rpc_input_check(c, r->name, r->fields) != DEXA_OK) return NULL;
    /* An ended session changes no more: only its reads still answer. */
    return r->read_only || dexa__require_not_ended(c) == DEXA_OK ? r->handler : NULL;
  }
  const dexa__step_def *s = dexa__flow_find_step(call->name);
  if (!s) {
    dexa__result_failf(c->result, DEXA_E_UNKNOWN_STEP, "unknown Step \"%.100s\"", call->name);
    return NULL;
  }
  dexa__step_options o;
  dexa__flow_step_options(c->agent, s->name, &o);
  if (call->kind == DEXA_CALL_WAIT_FOR && !o.has_wait_for) {
    dexa__result_failf(c->result, DEXA_E_INVALID_ARG, "Step %s has no WaitFor", s->name);
    return NULL;
  }
  return dexa__recovery_error_check(c) == DEXA_OK ? s->handler : NULL;
}

DEXA_EXTERN int dexa_dispatch(dexa_result **out, const dexa_agent *agent, const dexa_call *call) {
  if (!out) return DEXA_E_INVALID_ARG;
  *out = dexa__result_new();
  if (!*out) return DEXA_E_NOMEM;
  dexa__ctx c = {agent, call, *out, NULL};
  int code;
  if (!agent || !call) return dexa__result_fail(c.result, DEXA_E_INVALID_ARG, "agent or call is NULL");
  const char *problem = call_problem(call, &code);
  if (problem) return dexa__result_fail(c.result, code, problem);
  if (input_too_large(&c))
    return dexa__result_fail(c.result, DEXA_E_TOO_LARGE, "the RPC input is over its size limit");
  int rc = parse_input(&c);
  dexa__handler handler = rc == DEXA_OK ? route(&c) : NULL;
  if (handler) {
    rc = handler(&c);
    if (rc != DEXA_OK && c.result->status == DEXA_OK) dexa__result_fail(c.result, rc, NULL);
  }
  cJSON_Delete(c.input);
  return c.result->status;
}
