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
  const cJSON *attachments; /* user messages: [{type, media_type?, data|url, name?}] */
  const cJSON *content;     /* tool results: the tool's full result (MCP: {"content":[...]}) */
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
 * how many (0: nothing was appended). dexa__put_tools_with adds members
 * before each tool's close: strict_member when the schema qualifies
 * (dexa__schema_strict_ok), else nonstrict_member, and last_member on the
 * last tool. */
int dexa__put_tools(const dexa_model_request *req, const dexa__tool_shape *shape, dexa__buf *b,
                    int *count);

typedef struct dexa__tool_opts {
  const char *strict_member;    /* for a tool sent strict; NULL: never */
  const char *nonstrict_member; /* for the others (Responses: ,"strict":false), or NULL */
  const char *last_member;      /* added to the last tool (Anthropic cache_control), or NULL */
} dexa__tool_opts;
int dexa__put_tools_with(const dexa_model_request *req, const dexa__tool_shape *shape,
                         const dexa__tool_opts *opts, dexa__buf *b, int *count);

/* Appends the tool call's arguments (a JSON object) as a JSON string
 * literal, as the OpenAI APIs want them. */
void dexa__put_arguments_string(dexa__buf *b, const cJSON *arguments);

/* ---- media: a user message's attachments, a tool result's images ---- */

typedef struct dexa__media {
  int image;              /* 1: an image, 0: a file */
  const char *media_type; /* given, else guessed from the URL ("" when unknown) */
  const char *data;       /* base64, or NULL */
  const char *url;        /* or NULL */
  const char *name;       /* may be NULL */
} dexa__media;

/* The attachment a (a checked send_message attachment) as media. */
void dexa__media_of_attachment(const cJSON *a, dexa__media *m);

/* The images of a tool result (MCP image blocks of its content), at most
 * max; returns how many. */
size_t dexa__tool_images(const dexa__msg *m, dexa__media *out, size_t max);
#define DEXA__MAX_TOOL_IMAGES 8

/* Appends m as a JSON string: its URL, or a data: URL of its bytes. */
void dexa__put_media_url(dexa__buf *b, const dexa__media *m);

/* Decodes m's base64 data into out. DEXA_OK, DEXA_E_NOMEM, or
 * DEXA_E_CORRUPT for data that is not base64. */
int dexa__media_decode(const dexa__media *m, dexa__buf *out);

/* The subtype of m's media type ("png" of image/png), for APIs that want a
 * format; "" when there is none. */
const char *dexa__media_subtype(const dexa__media *m);

/* The session id of the request ("" if none), for prompt cache keys. */
int dexa__request_session(const dexa_model_request *req, char *out, size_t size);

/* The output schema of the session (settings output_schema), parsed, or
 * NULL. Caller frees with cJSON_Delete. */
cJSON *dexa__request_output_schema(const dexa_model_request *req);

/* 1 when a JSON Schema can be sent with strict:true (OpenAI, Anthropic):
 * every object has additionalProperties false and requires all its
 * properties. */
int dexa__schema_strict_ok(const cJSON *schema);

/* Appends ,"<key>":<v> with the shortest digits that read back as v
 * (0.9, not 0.90000000000000002). */
void dexa__put_number(dexa__buf *b, const char *key, double v);

/* Turn and round of the request (0 when absent), for made-up call ids. */
void dexa__request_turn_round(const dexa_model_request *req, int64_t *turn, int64_t *round);

#endif
