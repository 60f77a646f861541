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

/* Runs one call against the host's state without applying its result:
 * *out gets the result (free it with dexa_result_free). input, conditions
 * and recovery_error may be NULL. */
int memhost_dispatch(memhost *h, int kind, const char *name, const char *exec_id, int attempt,
                     const char *input, const char *conditions, const char *recovery_error,
                     dexa_result **out);
/* An RPC with input of input_len bytes (which may hold NULs), not applied. */
int memhost_dispatch_len(memhost *h, int kind, const char *name, const char *input,
                         size_t input_len, dexa_result **out);
/* Replaces dexa_dispatch for every call the host makes (NULL: back to
 * dexa_dispatch), so a test can watch or repeat calls. */
typedef int (*memhost_dispatch_fn)(void *user, dexa_result **out, const dexa_agent *agent,
                                   const dexa_call *call);
void memhost_set_dispatch(memhost *h, memhost_dispatch_fn fn, void *user);
/* Every attribute key written ("w <key>") and channel published
 * ("p <channel>") so far, once each, in order of first use. */
int memhost_name_count(const memhost *h);
const char *memhost_name_at(const memhost *h, int i);

/* Calls visit for every attribute, in key order. */
void memhost_each(const memhost *h, void (*visit)(void *ctx, const char *key, const char *value),
                  void *ctx);

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
