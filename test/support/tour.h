/* tour: one session that goes through every Step type and every RPC of the
 * agent session flow on the in-memory host (turns, parallel tools,
 * approvals, questions, timers, steer, stop, delete, plans, retries,
 * recovery Steps, compaction, snapshot and paging), for tests that must see
 * everything the flow does: the names it writes, allocation failures in
 * each call. */
#ifndef DEXA_TEST_TOUR_H
#define DEXA_TEST_TOUR_H

#include <dexagents/dexagents.h>

#include "support/memhost.h"

/* Called with 1 before and 0 after each of the tour's tool functions and
 * model calls runs (so a test can exempt them from what it injects). */
typedef void (*tour_tool_hook)(void *user, int entering);

/* The tour's agent: the demo model, a read tool, a write tool that needs
 * approval, a write tool that does not, a read tool that always fails
 * transiently; built-in tools, plan mode, a small context window. */
dexa_agent *tour_agent(tour_tool_hook hook, void *hook_user);

/* Runs the tour on h (a new memhost of tour_agent's agent); returns the
 * number of steps that did not go as expected (0: the whole tour ran) and
 * prints each one. */
int tour_run(memhost *h);

/* The RPC names tour_run calls, NULL-terminated. */
extern const char *const tour_rpcs[];

#endif
