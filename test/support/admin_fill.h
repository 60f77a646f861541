/* admin_fill: a demo agent and two sessions in a store, for the tests of
 * store administration (copy, check, vacuum) on either backend. */
#ifndef DEXA_TEST_ADMIN_FILL_H
#define DEXA_TEST_ADMIN_FILL_H

#include <cjson/cJSON.h>

#include "dexagents/dexagents.h"

/* The demo model with every built-in tool; NULL on failure. */
dexa_agent *fill_agent(void);
/* A runtime on the store at path (synchronous=normal); NULL on failure,
 * with why on stderr. */
dexa_runtime *fill_runtime(const dexa_agent *a, const char *path);
/* Two sessions: "s-one" idle after a turn, "s-two" waiting on a timer with
 * a message queued behind it (a live Step row, a channel message). */
int fill_sessions(dexa_runtime *rt);
/* The session's snapshot (NULL on failure); free with cJSON_Delete. */
cJSON *fill_snapshot(dexa_runtime *rt, const char *sid);
/* The session's durable events as JSON (live deltas left out); free with
 * cJSON_free. */
char *fill_events(dexa_runtime *rt, const char *sid);

#endif
