/* The session flow's transitions (flow_transitions.c): the "transitions"
 * member of dexa_flow_describe. */
#ifndef DEXA_CORE_FLOW_TRANSITIONS_H
#define DEXA_CORE_FLOW_TRANSITIONS_H

#include "core/names.h"
#include "util/buf.h"

/* Appends {"steps":{NAME:{"next":[..],"publishes":[..],"waits"?:{"mode",
 * "conditions":[{"channel"}|{"timer":true}]}}},"rpcs":{NAME:{"publishes"}}}
 * to b. */
void dexa__flow_transitions_json(dexa__buf *b);

#endif
