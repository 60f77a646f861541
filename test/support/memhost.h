/* memhost: a small in-memory, single-threaded host of the dispatch ABI for
 * tests of the core. It interprets WaitFor/Execute, channels, timers (on a
 * test clock), parallel Steps, retries and recovery Steps, like a host's
 * engine would, and can lose a method's result to simulate a crash. */
#ifndef DEXA_TEST_MEMHOST_H
#define DEXA_TEST_MEMHOST_H

#include <dexagents/dexagents.h>

typedef struct memhost memhost;

memhost *memhost_new(const dexa_agent *agent, const char *session_id);
void memhost_free(memhost *h);

/* Runs StartAgentSession with settings (JSON or NULL). Returns its status. */
int memhost_start(memhost *h, const char *settings_json);
/* Runs an RPC and applies it; *response (may be NULL) gets a malloc'd copy. */
int memhost_rpc(memhost *h, const char *name, const char *input_json, char **response);
/* Runs every ready Step method until nothing is ready; returns how many ran. */
int memhost_run(memhost *h);
/* Runs at most max ready Step methods. */
int memhost_run_steps(memhost *h, int max);
/* Lost results: the next `count` methods of Step `step` run (their tools and
 * models are called) but their results are dropped, as when a worker dies
 * after the work and before the commit. */
void memhost_lose_results(memhost *h, const char *step, int count);
void memhost_advance(memhost *h, int64_t ms);

/* Attribute value (borrowed) or NULL. */
const char *memhost_attr(const memhost *h, const char *key);
/* Writes an attribute directly (NULL deletes), as another host might have. */
void memhost_put(memhost *h, const char *key, const char *value);
/* Number of attributes whose key starts with prefix. */
int memhost_count(const memhost *h, const char *prefix);
/* Number of pending Step executions of a type (NULL: all). */
int memhost_pending(const memhost *h, const char *step);
/* Durable events so far, joined as a JSON array (borrowed until next call). */
const char *memhost_events(memhost *h);
/* Live events (deltas) so far, joined as a JSON array. */
const char *memhost_live(memhost *h);
/* Number of dispatches of Step `step` (any method). */
int memhost_dispatches(const memhost *h, const char *step);
/* 1 after a Step without recovery ran out of attempts. */
int memhost_failed(const memhost *h);
/* What the calls' cancellation callback (dexa_call.cancelled) answers from
 * now on: a host's flag that the running turn was stopped. */
void memhost_set_cancelled(memhost *h, int cancelled);

#endif
