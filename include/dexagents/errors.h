/* libdexagents: error codes.
 *
 * Every fallible function returns DEXA_OK (0) or a negative DEXA_E_* code.
 * The numbers never change and are never reused. The hundreds digit names
 * the class, so a host loop can decide without a table:
 *   -1xx usage      the request was wrong; do not retry it unchanged
 *   -2xx transient  retry later (the same request may succeed)
 *   -3xx permanent  the operation failed for good
 *   -9xx fatal      resources are exhausted or the library is inconsistent */
#ifndef DEXAGENTS_ERRORS_H
#define DEXAGENTS_ERRORS_H

#include "common.h"

DEXA_BEGIN_DECLS

typedef enum dexa_status {
  DEXA_OK = 0,

  /* usage */
  DEXA_E_INVALID_ARG = -101,        /* NULL handle or out of range argument */
  DEXA_E_STRUCT_SIZE = -102,        /* struct_size smaller than version 1.0 or unknown tail not zero */
  DEXA_E_INVALID_JSON = -103,       /* malformed or wrongly shaped JSON input */
  DEXA_E_UNKNOWN_STEP = -104,       /* no Step of that name in the flow */
  DEXA_E_UNKNOWN_RPC = -105,        /* no RPC of that name in the flow */
  DEXA_E_NOT_FOUND = -106,          /* no such session (or message, call) */
  DEXA_E_EMPTY_MESSAGE = -107,      /* a user message that is blank */
  DEXA_E_BAD_STATE = -108,          /* the session is not in a state that allows it */
  DEXA_E_UNKNOWN_KEY = -109,        /* a configuration key that is not known */
  DEXA_E_INVALID_RESUME_TOKEN = -110, /* an event resume token that is not valid */
  DEXA_E_STALE_REVISION = -111,     /* a plan revision that is not the current one */
  DEXA_E_TOO_LARGE = -112,          /* an input over its size limit */
  DEXA_E_REENTRANT = -113,          /* called from inside a callback of the same handle */
  DEXA_E_ALREADY_EXISTS = -114,     /* a session id that is taken */
  DEXA_E_UNSUPPORTED = -115,        /* a feature this build or store does not have */
  DEXA_E_NOT_PENDING = -116,        /* a decision or answer for something not waiting */
  DEXA_E_SESSION_ENDED = -117,      /* the session has ended: it takes no more changes (1.1) */

  /* transient */
  DEXA_E_TRANSIENT = -201,          /* a failure that may pass (model 5xx, reset) */
  DEXA_E_TIMEOUT = -202,            /* the operation ran out of time */
  DEXA_E_BUSY = -203,               /* the store or a lock is busy */
  DEXA_E_IO = -204,                 /* storage or network I/O failed */
  DEXA_E_RATE_LIMITED = -205,       /* the provider asked to slow down */

  /* permanent */
  DEXA_E_PERMANENT = -301,          /* a failure that will not pass by retrying */
  DEXA_E_MODEL = -302,              /* the model call failed for good */
  DEXA_E_TOOL = -303,               /* the tool call failed for good */
  DEXA_E_STATE_LIMIT = -304,        /* the session's active state would pass its limit */
  DEXA_E_CALLBACK_FAILED = -305,    /* a host callback returned an error */
  DEXA_E_CORRUPT = -306,            /* stored data is not what the library wrote */
  DEXA_E_AUTH = -307,               /* credentials missing or refused */

  /* fatal */
  DEXA_E_NOMEM = -901,              /* out of memory */
  DEXA_E_INTERNAL = -902            /* a bug in the library */
} dexa_status;

typedef enum dexa_error_class_t {
  DEXA_CLASS_OK = 0,
  DEXA_CLASS_USAGE = 1,
  DEXA_CLASS_TRANSIENT = 2,
  DEXA_CLASS_PERMANENT = 3,
  DEXA_CLASS_FATAL = 9
} dexa_error_class_t;

/* Static text describing code; "unknown error" for codes it does not know.
 * Never NULL, never allocates. Thread-safe. */
DEXA_EXTERN const char *dexa_strerror(int code);

/* The code's symbolic name ("DEXA_E_NOT_FOUND"), static text; "DEXA_E_UNKNOWN"
 * for codes it does not know. */
DEXA_EXTERN const char *dexa_error_name(int code);

/* The class of code: one of dexa_error_class_t (as int). */
DEXA_EXTERN int dexa_error_class(int code);

DEXA_END_DECLS

#endif
