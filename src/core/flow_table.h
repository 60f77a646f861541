/* The session flow's table of Steps and RPCs: names, handlers and default
 * options. dexa_dispatch routes by it; dexa_flow_describe prints it. */
#ifndef DEXA_CORE_FLOW_TABLE_H
#define DEXA_CORE_FLOW_TABLE_H

#include "core/core.h"

typedef int (*dexa__handler)(dexa__ctx *c);

typedef struct dexa__step_options {
  int32_t max_attempts;
  int64_t initial_backoff_ms;
  double backoff_coefficient;
  int64_t max_backoff_ms;
  int64_t timeout_ms;
  const char *recovery; /* NULL: the flow fails after the last attempt */
  int has_wait_for;
  int locked;
} dexa__step_options;

typedef struct dexa__step_def {
  const char *name;
  dexa__handler handler;
} dexa__step_def;

typedef struct dexa__rpc_def {
  const char *name;
  dexa__handler handler;
  int read_only;
  /* 1: once committed, the session's running calls should end early (the
   * host raises their dexa_call.cancelled); the flow itself is unchanged. */
  int interrupts;
  const char *const *fields; /* the input members it takes (NULL-terminated) */
} dexa__rpc_def;

const dexa__step_def *dexa__flow_steps(size_t *count);
const dexa__rpc_def *dexa__flow_rpcs(size_t *count);
const dexa__step_def *dexa__flow_find_step(const char *name);
const dexa__rpc_def *dexa__flow_find_rpc(const char *name);
/* Fails the result unless the RPC input is one JSON object in UTF-8 of
 * fields only, each once, with no U+0000 (rpc_input.c). */
int dexa__rpc_input_check(dexa__ctx *c, const char *rpc, const char *const *fields);
/* Fails the result unless the call's recovery_error is absent or
 * {"code":<integer>,"message":<string>}. */
int dexa__recovery_error_check(dexa__ctx *c);

/* The default options of a Step for this agent. */
void dexa__flow_step_options(const dexa_agent *a, const char *step, dexa__step_options *o);

#endif
