/* libdexagents: the agent definition.
 *
 * An agent is immutable once created and may be shared by any number of
 * threads: dexa_dispatch reads it and keeps no per-session state. */
#ifndef DEXAGENTS_AGENT_H
#define DEXAGENTS_AGENT_H

#include "common.h"

DEXA_BEGIN_DECLS

/* Built-in tools, combined with | in dexa_agent_def.builtin_tools. */
typedef enum dexa_builtin_tool {
  DEXA_BUILTIN_ASK_USER = 1,
  DEXA_BUILTIN_DURABLE_WAIT = 2,
  DEXA_BUILTIN_WRITE_TODOS = 4,
  DEXA_BUILTIN_ALL = 7
} dexa_builtin_tool;

/* The agent definition: a size-versioned struct. Initialize with
 * dexa_agent_def_init (which sets every default below), then set fields.
 * New fields are only ever appended. */
typedef struct dexa_agent_def {
  uint32_t struct_size;
  int32_t reserved0;
  const char *flow_type;          /* default "AgentSession" */
  const char *instructions;       /* the system prompt; default "" */
  dexa_model *const *models;      /* allow-list; the first is the default; at least one */
  size_t model_count;
  dexa_tool_source *const *tool_sources; /* may be NULL with count 0 */
  size_t tool_source_count;
  uint32_t builtin_tools;         /* dexa_builtin_tool flags; default 0 */
  int32_t plan_mode_enabled;      /* default 0 */
  /* Compaction: 0 turns it off. */
  int64_t context_window_tokens;
  int32_t compaction_threshold_pct; /* compact when input nears this share; default 85 */
  int32_t compaction_keep_pct;    /* share of the window kept unsummarized; default 10 */
  int64_t retention_messages;     /* summarized messages kept; default 2000 */
  int32_t keep_full_transcript;   /* 1: retention never deletes; default 0 */
  int32_t run_model_max_attempts; /* default 3 */
  int64_t run_model_timeout_ms;   /* default 900000 (15 min) */
  int32_t tool_max_attempts;      /* CallTool attempts; default 5 */
  int32_t reserved1;
  int64_t tool_timeout_ms;        /* default 600000 (10 min) */
  int64_t max_state_bytes;        /* active state per session; default 64 MiB */
  int64_t max_message_bytes;      /* one user message; default 1 MiB */
} dexa_agent_def;

/* Sets struct_size and every default. struct_size must be at least the 1.0
 * size. Returns DEXA_OK, DEXA_E_INVALID_ARG or DEXA_E_STRUCT_SIZE. */
DEXA_EXTERN int dexa_agent_def_init(dexa_agent_def *def, size_t struct_size);

/* Creates an agent from def (copied; models and tool sources get a new
 * reference each). Returns DEXA_OK, DEXA_E_INVALID_ARG (no model, duplicate
 * model or source name, bad limit), DEXA_E_STRUCT_SIZE or DEXA_E_NOMEM; on
 * error *out is NULL and, when errmsg is not NULL, errmsg receives a
 * NUL-terminated message (at most errmsg_size bytes). */
DEXA_EXTERN int dexa_agent_new(dexa_agent **out, const dexa_agent_def *def,
                               char *errmsg, size_t errmsg_size);

/* Releases the agent. NULL is a no-op. Do not free an agent that a runtime
 * still uses. */
DEXA_EXTERN void dexa_agent_free(dexa_agent *agent);

/* The flow type, borrowed until the agent is freed. */
DEXA_EXTERN const char *dexa_agent_flow_type(const dexa_agent *agent);

DEXA_END_DECLS

#endif
