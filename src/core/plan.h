/* AgentPlan, its revisions and states (draft, active, completed). */
#ifndef DEXA_CORE_PLAN_H
#define DEXA_CORE_PLAN_H

#include "core/core.h"

typedef struct dexa__plan {
  int exists;
  int64_t revision;
  char status[16];
} dexa__plan;

int dexa__plan_load(dexa__ctx *c, dexa__plan *p);
int dexa__plan_set_status(dexa__ctx *c, const char *status);
/* Runs write_todos: DEXA_OK and the new revision, DEXA_E_INVALID_ARG with
 * why (bad todos), or another error. */
int dexa__plan_write(dexa__ctx *c, const cJSON *args, const dexa__turn *turn, char *why, size_t n,
                     int64_t *revision);

#endif
