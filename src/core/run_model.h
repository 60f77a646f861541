/* The state of one RunModel execution, shared by the model call
 * (step_run_model.c) and a harness's segment (harness_segment.c). */
#ifndef DEXA_CORE_RUN_MODEL_H
#define DEXA_CORE_RUN_MODEL_H

#include "core/core.h"

struct dexa__segment;

typedef struct dexa__run {
  dexa__ctx *c;
  const dexa_model *model;
  int64_t turn;
  int64_t round;
  dexa__turn state;
  dexa_tool_list tools;
  dexa_model_request req;
  dexa_model_reply reply;
  struct dexa__segment *segment; /* a harness's segment, or NULL for a model call */
} dexa__run;

#endif
