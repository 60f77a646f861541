/* execute_plan {"revision":R}: runs the reviewed plan. Refused for a stale
 * revision (DEXA_E_STALE_REVISION), a finished or missing plan, and while a
 * turn runs (DEXA_E_BAD_STATE). An active plan that stopped with unfinished
 * tasks can be executed again to continue it. */
#include <stdio.h>
#include <string.h>

#include "core/plan.h"
#include "core/queue.h"

int dexa__rpc_execute_plan(dexa__ctx *c) {
  int rc = dexa__require_session(c);
  if (rc != DEXA_OK) return rc;
  int64_t revision;
  if (dexa__input_i64(c, "revision", &revision) != DEXA_OK)
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "revision must be a number");
  dexa__plan p;
  rc = dexa__plan_load(c, &p);
  if (rc != DEXA_OK) return rc;
  if (!p.exists) return dexa__result_fail(c->result, DEXA_E_NOT_FOUND, "the session has no plan");
  if (p.revision != revision)
    return dexa__result_failf(c->result, DEXA_E_STALE_REVISION,
                              "revision %lld is stale; the plan is at revision %lld",
                              (long long)revision, (long long)p.revision);
  if (strcmp(p.status, "completed") == 0)
    return dexa__result_fail(c->result, DEXA_E_BAD_STATE, "the plan is already completed");
  dexa__turn t;
  rc = dexa__turn_load(c, &t);
  if (rc != DEXA_OK) return rc;
  if (strcmp(t.status, "running") == 0)
    return dexa__result_fail(c->result, DEXA_E_BAD_STATE, "a turn is running; execute the plan after it");
  char id[32], text[96];
  snprintf(text, sizeof text, "Execute the plan (revision %lld).", (long long)revision);
  rc = dexa__queue_add(c, text, NULL, 0, revision, id);
  if (rc == DEXA_OK) rc = dexa__plan_set_status(c, "active");
  if (rc != DEXA_OK) return rc;
  char resp[96];
  int n = snprintf(resp, sizeof resp, "{\"message_id\":\"%s\",\"revision\":%lld}", id,
                   (long long)revision);
  return dexa__result_set_response(c->result, resp, (size_t)n);
}
