/* Reading a model request for a provider: the request's head (instructions,
 * summary, plan, tools) and its stored messages one at a time, without
 * parsing the whole history. Shared by the three request builders. */
#ifndef DEXA_MODEL_TRANSCRIPT_H
#define DEXA_MODEL_TRANSCRIPT_H

#include <cjson/cJSON.h>

#include "dexagents/model.h"
#include "util/buf.h"

/* One stored message, parsed. Strings are borrowed from doc (or NULL). */
typedef struct dexa__msg {
  cJSON *doc;
  const char *role;  /* "user", "model", "tool" */
  const char *model; /* model messages: the client that wrote it */
  const char *text;
  const cJSON *tool_calls; /* [{"call_id","name","arguments":{..}}] */
  const char *item;  /* the provider item, verbatim from the stored text */
  size_t item_len;
  const char *call_id, *name, *status, *output; /* tool results */
  int64_t round;
} dexa__msg;

/* Parses message i of req. Returns DEXA_OK, DEXA_E_CORRUPT (not an object
 * with a role) or DEXA_E_NOMEM. */
int dexa__msg_at(const dexa_model_request *req, size_t i, dexa__msg *m);
void dexa__msg_free(dexa__msg *m);

/* 2 when m is a model message whose item this client wrote (same name);
 * 1 when another model of the same provider (same prefix) wrote it: its
 * item replays verbatim unless it is reasoning, which is bound to the model
 * that made it (the provider drops it); 0 when it must be translated from
 * its text and tool calls (another provider, the demo model). */
int dexa__msg_is_native(const dexa__msg *m, const char *client_name, const char *prefix);

/* 1 when the item's top-level "type" is one of the NULL-terminated types. */
int dexa__item_type_is(const dexa__msg *m, const char *const *types);

/* The system text: the request's instructions, then the compaction summary
 * (if any) under "Summary of the earlier conversation", then, in planning
 * and executing turns, the plan's todos under "Current plan". */
int dexa__system_text(const dexa_model_request *req, dexa__buf *out);

/* 1 for a compaction request ("purpose":"compaction"). */
int dexa__is_compaction(const dexa_model_request *req);

/* The compaction input: every message rendered as "[role] text" lines in
 * one user text, so any provider can summarize any transcript. */
int dexa__compaction_text(const dexa_model_request *req, dexa__buf *out);

/* The offered tools, parsed ([] when none). Caller frees with cJSON_Delete. */
int dexa__request_tools(const dexa_model_request *req, cJSON **tools);

/* How one provider spells an offered tool: open, the name, the description
 * (when there is one), params_key, the JSON Schema, close. */
typedef struct dexa__tool_shape {
  const char *open;       /* up to the name's value, e.g. {"type":"function","name": */
  const char *params_key; /* ,"parameters": or ,"input_schema": */
  const char *close;      /* what ends the tool, e.g. } */
} dexa__tool_shape;

/* Appends ,"tools":[...] with the request's tools in that shape; *count gets
 * how many (0: nothing was appended). */
int dexa__put_tools(const dexa_model_request *req, const dexa__tool_shape *shape, dexa__buf *b,
                    int *count);

/* Appends the tool call's arguments (a JSON object) as a JSON string
 * literal, as the OpenAI APIs want them. */
void dexa__put_arguments_string(dexa__buf *b, const cJSON *arguments);

#endif
