/* dexa_call across versions: a caller compiled against an older header
 * passes a smaller struct_size, and the members it does not have read as
 * zero. */
#ifndef DEXA_FLOW_CALL_H
#define DEXA_FLOW_CALL_H

#include <stddef.h>

#include "dexagents/flow.h"

/* The size of the 1.0 structure: everything up to event_sink. */
#define DEXA__CALL_V1_SIZE offsetof(dexa_call, cancelled)

/* 1 when the caller's structure holds member (it was compiled with it). */
#define DEXA__CALL_HAS(call, member)                                                    \
  ((call)->struct_size >= offsetof(dexa_call, member) + sizeof((call)->member))

/* 1 when the host asked the running method to end early (its cancelled
 * callback said so), else 0; a NULL call, an older structure or a NULL
 * callback is never cancelled. */
int dexa__call_cancelled(const dexa_call *call);

#endif
