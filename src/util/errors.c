/* Error names, texts and classes: the public table of DEXA_E_* codes. */
#include "dexagents/errors.h"

#include <stddef.h>

typedef struct error_entry {
  int code;
  const char *name;
  const char *text;
} error_entry;

static const error_entry errors[] = {
  {DEXA_OK, "DEXA_OK", "success"},
  {DEXA_E_INVALID_ARG, "DEXA_E_INVALID_ARG", "invalid argument"},
  {DEXA_E_STRUCT_SIZE, "DEXA_E_STRUCT_SIZE", "unsupported struct size"},
  {DEXA_E_INVALID_JSON, "DEXA_E_INVALID_JSON", "invalid JSON input"},
  {DEXA_E_UNKNOWN_STEP, "DEXA_E_UNKNOWN_STEP", "unknown step type"},
  {DEXA_E_UNKNOWN_RPC, "DEXA_E_UNKNOWN_RPC", "unknown RPC"},
  {DEXA_E_NOT_FOUND, "DEXA_E_NOT_FOUND", "not found"},
  {DEXA_E_EMPTY_MESSAGE, "DEXA_E_EMPTY_MESSAGE", "empty message"},
  {DEXA_E_BAD_STATE, "DEXA_E_BAD_STATE", "not allowed in the current state"},
  {DEXA_E_UNKNOWN_KEY, "DEXA_E_UNKNOWN_KEY", "unknown configuration key"},
  {DEXA_E_INVALID_RESUME_TOKEN, "DEXA_E_INVALID_RESUME_TOKEN", "invalid resume token"},
  {DEXA_E_STALE_REVISION, "DEXA_E_STALE_REVISION", "stale plan revision"},
  {DEXA_E_TOO_LARGE, "DEXA_E_TOO_LARGE", "input too large"},
  {DEXA_E_REENTRANT, "DEXA_E_REENTRANT", "reentrant call from a callback"},
  {DEXA_E_ALREADY_EXISTS, "DEXA_E_ALREADY_EXISTS", "already exists"},
  {DEXA_E_UNSUPPORTED, "DEXA_E_UNSUPPORTED", "unsupported"},
  {DEXA_E_NOT_PENDING, "DEXA_E_NOT_PENDING", "nothing pending for that id"},
  {DEXA_E_SESSION_ENDED, "DEXA_E_SESSION_ENDED", "the session has ended"},
  {DEXA_E_TRANSIENT, "DEXA_E_TRANSIENT", "transient failure"},
  {DEXA_E_TIMEOUT, "DEXA_E_TIMEOUT", "timed out"},
  {DEXA_E_BUSY, "DEXA_E_BUSY", "busy"},
  {DEXA_E_IO, "DEXA_E_IO", "input/output error"},
  {DEXA_E_RATE_LIMITED, "DEXA_E_RATE_LIMITED", "rate limited"},
  {DEXA_E_PERMANENT, "DEXA_E_PERMANENT", "permanent failure"},
  {DEXA_E_MODEL, "DEXA_E_MODEL", "model call failed"},
  {DEXA_E_TOOL, "DEXA_E_TOOL", "tool call failed"},
  {DEXA_E_STATE_LIMIT, "DEXA_E_STATE_LIMIT", "session state limit reached"},
  {DEXA_E_CALLBACK_FAILED, "DEXA_E_CALLBACK_FAILED", "host callback failed"},
  {DEXA_E_CORRUPT, "DEXA_E_CORRUPT", "stored data is corrupt"},
  {DEXA_E_AUTH, "DEXA_E_AUTH", "authentication failed"},
  {DEXA_E_NOMEM, "DEXA_E_NOMEM", "out of memory"},
  {DEXA_E_INTERNAL, "DEXA_E_INTERNAL", "internal error"},
};

static const error_entry *find(int code) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == code) return &errors[i];
  return NULL;
}

DEXA_EXTERN const char *dexa_strerror(int code) {
  const error_entry *e = find(code);
  return e ? e->text : "unknown error";
}

DEXA_EXTERN const char *dexa_error_name(int code) {
  const error_entry *e = find(code);
  return e ? e->name : "DEXA_E_UNKNOWN";
}

DEXA_EXTERN int dexa_error_class(int code) {
  if (code == 0) return DEXA_CLASS_OK;
  if (code <= -100 && code > -200) return DEXA_CLASS_USAGE;
  if (code <= -200 && code > -300) return DEXA_CLASS_TRANSIENT;
  if (code <= -300 && code > -400) return DEXA_CLASS_PERMANENT;
  return DEXA_CLASS_FATAL;
}
