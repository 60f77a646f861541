/* The Claude session kept in the Dex session's durable state: the CLI's
 * transcript (its session file, JSONL) and where the next segment resumes.
 * Each segment appends one harness entry
 *   {"v":1,"sid":..,"at":..,"pending":[{"id":..,"name":..,
 *    "result":<tool_result content>?,"is_error":bool?}],"jsonl":".."}
 * holding the transcript lines it added; the newest entry's sid, at and
 * pending are the ones in force. Before a segment the lines are written
 * back as the session file in a private directory, so a segment resumes
 * on any worker, process or machine. */
#ifndef DEXA_HARNESS_CC_STATE_H
#define DEXA_HARNESS_CC_STATE_H

#include <dexagents/harness.h>

#include "util/buf.h"

/* A tool_use of the assistant message that ended the last segment: the
 * next segment owes the model its tool_result. */
typedef struct dexa__cc_pending {
  char *id;
  char *name;
  char *result; /* the tool_result content (JSON) it already had, or NULL */
  int is_error;
} dexa__cc_pending;

typedef struct dexa__cc_state {
  char *sid; /* the Claude session id, or NULL before the first segment */
  char *at;  /* the transcript entry (uuid) the next segment resumes at */
  dexa__cc_pending *pending;
  size_t pending_count;
  dexa__buf jsonl; /* the whole session file */
} dexa__cc_state;

/* Reads the state of the request's harness. Returns DEXA_OK, DEXA_E_CORRUPT
 * (an entry this harness did not write) or DEXA_E_NOMEM. */
int dexa__cc_state_load(dexa__cc_state *s, const dexa_model_request *req);
void dexa__cc_state_free(dexa__cc_state *s);

/* Writes the session file under config_dir as the CLI looks for it
 * (projects/DEXA__CC_PROJECT/<sid>.jsonl). Returns DEXA_OK or DEXA_E_IO. */
int dexa__cc_state_materialize(const dexa__cc_state *s, const char *config_dir);

/* The project directory name the CLI is told to use
 * (CLAUDE_CODE_PROJECT_DIR_NAME), so the session file's place does not
 * depend on the working directory of the worker. */
#define DEXA__CC_PROJECT "dexagents"

/* Appends the entry of a segment to out (JSON). */
void dexa__cc_state_entry(dexa__buf *out, const char *sid, const char *at,
                          const dexa__cc_pending *pending, size_t pending_count,
                          const char *jsonl, size_t jsonl_len);

void dexa__cc_pending_free(dexa__cc_pending *p, size_t n);

#endif
