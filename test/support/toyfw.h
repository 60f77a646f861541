/* toyfw: a toy agent framework behind the harness contract, for tests. It
 * behaves like a real framework: it keeps its own message list as its state
 * (the harness state plus appended entries), feeds itself only the messages
 * that are new for it, proposes tool calls and consumes their recorded
 * results. What it does in a turn is scripted by the user message, one
 * command per line:
 *   call NAME ARGS [effect=read|idempotent_write|write] [approval=yes|no]
 *                     proposes a tool call (all call lines in one reply)
 *   inner NAME ARGS   runs a read tool inside the segment first
 *   ran NAME ARGS OUT reports a tool it ran itself inside the segment
 *                     (dexa_model_reply_add_framework_tool_call)
 *   ask PROMPT        proposes ask_user
 *   wait SECONDS      proposes durable_wait
 *   todos             proposes write_todos (two tasks)
 *   fail N            the first N attempts of each segment fail (transient)
 *   block             waits inside the segment until the turn is stopped
 *   sleep MS          sleeps at the start of each segment
 *   linger MS         in a segment that answers results, calls on_linger and
 *                     sleeps (to be killed there); nothing without on_linger
 *   grow BYTES        appends that much filler to its state
 * Anything else is answered "echo: <text>". Once the results of its calls
 * are back it answers "results: NAME=STATUS:OUTPUT | ... [N messages]",
 * N being the length of its own message list, so a test sees the state
 * carried over (across workers and processes). */
#ifndef DEXA_TEST_TOYFW_H
#define DEXA_TEST_TOYFW_H

#include <dexagents/dexagents.h>
#include <pthread.h>

typedef struct toyfw_options {
  uint32_t flags; /* dexa_harness_flag values */
  int fold_every; /* set the whole state every N-th segment (0: only append) */
  int summarize;  /* offer summarize (Dex compaction) */
  /* Called once when a segment blocks ("block"), e.g. to stop the turn. */
  void (*on_block)(void *ctx);
  void *ctx;
  /* Called when a segment lingers ("linger"); lingering is off without it. */
  void (*on_linger)(void *ctx);
} toyfw_options;

/* What the framework saw; read it between dispatches. */
typedef struct toyfw_stats {
  pthread_mutex_t mu;
  int segments;            /* run_segment calls, attempts included */
  int summaries;           /* summarize calls */
  int messages;            /* length of its message list after the last segment */
  int new_count;           /* new messages of the last segment */
  char new_roles[256];     /* their roles and statuses, e.g. "tool:ok,tool:rejected" */
  char inner[512];         /* the last inner call's result document */
  int inner_rc;            /* and its return code */
  size_t request_messages; /* messages in the last request */
  int had_state;           /* the last request carried a set state */
  size_t entries;          /* and this many appended entries */
  int cancelled_seen;      /* a blocked segment saw the stop */
} toyfw_stats;

/* Creates the framework as a harness named name; *stats lives as long as the
 * harness (until its last reference is released). Returns DEXA_OK or the
 * code of dexa_harness_new. */
int toyfw_new(dexa_model **out, const char *name, const toyfw_options *options,
              toyfw_stats **stats);

#endif
