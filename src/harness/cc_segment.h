/* One segment of a Claude Code turn: the CLI runs the turn until it ends
 * or a call must leave the segment (a write, a call that needs approval,
 * Dex's built-in tools); reads run inside through the request. Owned by
 * the thread running run_segment. */
#ifndef DEXA_HARNESS_CC_SEGMENT_H
#define DEXA_HARNESS_CC_SEGMENT_H

#include <cjson/cJSON.h>
#include <dexagents/harness.h>

#include "harness/cc_options.h"
#include "harness/cc_process.h"
#include "harness/cc_state.h"
#include "harness/cc_tools.h"
#include "util/buf.h"

typedef struct dexa__cc_segment {
  const dexa__cc_options *o;
  const dexa_model_request *req;
  cJSON *request; /* the request document, parsed */
  dexa__cc_tools tools;
  dexa__cc_state state; /* as the last committed segment left it */
  dexa__cc_proc proc;
  char *sid;      /* the Claude session id the CLI reported */
  char *last_uuid; /* the newest main-conversation message */
  dexa__buf jsonl; /* the session file's lines this segment added */
  cJSON *items;    /* main-conversation assistant messages: {"uuid","message"} */
  cJSON *results;  /* main-conversation tool results: id -> {"content","is_error"} */
  cJSON *allowed;  /* the ids of the calls allowed to run inside: id -> true */
  /* The call that leaves the segment (NULL: none). */
  char *leave_id;
  char *leave_name;
  cJSON *leave_args;
  /* The CLI's result message. */
  int result_seen;
  int result_is_error;
  int api_status;
  char result_text[512];
  int64_t input_tokens, output_tokens;
  int stopped, timed_out;
  char err[512];
} dexa__cc_segment;

/* Runs the CLI (already started in s->proc, initialize and the user
 * message sent) until its turn ends, the turn is stopped or the timeout
 * passes; the CLI is ended and reaped on return. Returns DEXA_OK (see
 * result_seen, stopped, timed_out) or an error with s->err set. */
int dexa__cc_segment_pump(dexa__cc_segment *s, int64_t deadline_ms);

/* Writes doc (taken: deleted here) to the CLI as one line. Returns
 * DEXA_OK, DEXA_E_IO or DEXA_E_NOMEM. */
int dexa__cc_send(dexa__cc_segment *s, cJSON *doc);

/* Starts the CLI for the segment (its session file already in dir) and
 * sends initialize and the user message. Returns DEXA_OK or an error with
 * s->err set (cc_launch.c). */
int dexa__cc_launch(dexa__cc_segment *s, const char *dir);

/* A new private directory for the CLI's config in out; DEXA_OK or
 * DEXA_E_IO. dexa__cc_remove_dir removes it with all it holds. */
int dexa__cc_private_dir(char *out, size_t n);
void dexa__cc_remove_dir(const char *dir);

/* Monotonic milliseconds. */
int64_t dexa__cc_now_ms(void);

#endif
