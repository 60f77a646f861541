// ESM entry: the same objects as the CommonJS entry (index.js).
import dx from './index.js';

export default dx;
export const {
  version, buildInfo, buildHas, loadLibrary, LibraryNotFoundError, Model, Harness, Tool, tool, ToolResult, ToolEffect,
  BuiltInTool, McpToolSource, Agent, Runtime, Event, runtimeOptions, CallKind,
  MemoryAttributes, Result, Task, RawJSON, WaitEvaluation, dispatch, evaluateWait, CODES,
  ErrorClass, errorName, errorClass,
  exceptionClass, errorFor, strerror, errorCode, DexaError, UsageError, TransientError, PermanentError,
  FatalError, InvalidArgumentError, StructSizeError, InvalidJSONError, UnknownStepError,
  UnknownRPCError, NotFoundError, EmptyMessageError, BadStateError, UnknownKeyError,
  InvalidResumeTokenError, StaleRevisionError, TooLargeError, ReentrantError,
  AlreadyExistsError, UnsupportedError, NotPendingError, SessionEndedError, TimedOutError, BusyError,
  IOFailedError, RateLimitedError, ModelError, ToolError, StateLimitError, CallbackFailedError,
  CorruptError, AuthError, OutOfMemoryError, InternalError, RuntimeClosedError, READ,
  IDEMPOTENT_WRITE, WRITE, BUILTIN_ASK_USER, BUILTIN_DURABLE_WAIT, BUILTIN_WRITE_TODOS,
  BUILTIN_ALL, DEXA_E_INVALID_ARG, DEXA_E_STRUCT_SIZE, DEXA_E_INVALID_JSON,
  DEXA_E_UNKNOWN_STEP, DEXA_E_UNKNOWN_RPC, DEXA_E_NOT_FOUND, DEXA_E_EMPTY_MESSAGE,
  DEXA_E_BAD_STATE, DEXA_E_UNKNOWN_KEY, DEXA_E_INVALID_RESUME_TOKEN, DEXA_E_STALE_REVISION,
  DEXA_E_TOO_LARGE, DEXA_E_REENTRANT, DEXA_E_ALREADY_EXISTS, DEXA_E_UNSUPPORTED,
  DEXA_E_NOT_PENDING, DEXA_E_SESSION_ENDED, DEXA_E_TRANSIENT, DEXA_E_TIMEOUT, DEXA_E_BUSY, DEXA_E_IO,
  DEXA_E_RATE_LIMITED, DEXA_E_PERMANENT, DEXA_E_MODEL, DEXA_E_TOOL, DEXA_E_STATE_LIMIT,
  DEXA_E_CALLBACK_FAILED, DEXA_E_CORRUPT, DEXA_E_AUTH, DEXA_E_NOMEM, DEXA_E_INTERNAL,
} = dx;
