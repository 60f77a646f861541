'use strict';
// Errors: one class per libdexagents error code, under one class per error
// class (usage, transient, permanent, fatal), all subclasses of DexaError.
// `code` is the DEXA_E_* name, `errno` the number (include/dexagents/errors.h;
// the numbers never change).

/** Every DEXA_E_* name and its number. */
const CODES = Object.freeze({
  DEXA_E_INVALID_ARG: -101, DEXA_E_STRUCT_SIZE: -102, DEXA_E_INVALID_JSON: -103,
  DEXA_E_UNKNOWN_STEP: -104, DEXA_E_UNKNOWN_RPC: -105, DEXA_E_NOT_FOUND: -106,
  DEXA_E_EMPTY_MESSAGE: -107, DEXA_E_BAD_STATE: -108, DEXA_E_UNKNOWN_KEY: -109,
  DEXA_E_INVALID_RESUME_TOKEN: -110, DEXA_E_STALE_REVISION: -111, DEXA_E_TOO_LARGE: -112,
  DEXA_E_REENTRANT: -113, DEXA_E_ALREADY_EXISTS: -114, DEXA_E_UNSUPPORTED: -115,
  DEXA_E_NOT_PENDING: -116, DEXA_E_SESSION_ENDED: -117, DEXA_E_TRANSIENT: -201, DEXA_E_TIMEOUT: -202, DEXA_E_BUSY: -203,
  DEXA_E_IO: -204, DEXA_E_RATE_LIMITED: -205, DEXA_E_PERMANENT: -301, DEXA_E_MODEL: -302,
  DEXA_E_TOOL: -303, DEXA_E_STATE_LIMIT: -304, DEXA_E_CALLBACK_FAILED: -305,
  DEXA_E_CORRUPT: -306, DEXA_E_AUTH: -307, DEXA_E_NOMEM: -901, DEXA_E_INTERNAL: -902,
});
const NAMES = new Map(Object.entries(CODES).map(([k, v]) => [v, k]));

/** The error classes: the hundreds digit of a code. */
const ErrorClass = Object.freeze({ OK: 0, USAGE: 1, TRANSIENT: 2, PERMANENT: 3, FATAL: 9 });

const errorName = (errno) => NAMES.get(errno) || 'DEXA_E_UNKNOWN';
function errorClass(errno) {
  const c = Math.floor(Math.abs(errno) / 100);
  return errno === 0 ? 0 : ([1, 2, 3, 9].includes(c) ? c : 9);
}

/** A failed libdexagents call. */
class DexaError extends Error {
  constructor(errno, message, document, options) {
    super(message || errorName(errno), options);
    this.name = new.target.name;
    this.code = errorName(errno);
    this.errno = errno;
    this.errorClass = errorClass(errno);
    if (document !== undefined && document !== null) this.document = document;
  }
}
class UsageError extends DexaError {}
class TransientError extends DexaError {}
class PermanentError extends DexaError {}
class FatalError extends DexaError {}

const classes = {
  DexaError, UsageError, TransientError, PermanentError, FatalError,
  InvalidArgumentError: class InvalidArgumentError extends UsageError {},
  StructSizeError: class StructSizeError extends UsageError {},
  InvalidJSONError: class InvalidJSONError extends UsageError {},
  UnknownStepError: class UnknownStepError extends UsageError {},
  UnknownRPCError: class UnknownRPCError extends UsageError {},
  NotFoundError: class NotFoundError extends UsageError {},
  EmptyMessageError: class EmptyMessageError extends UsageError {},
  BadStateError: class BadStateError extends UsageError {},
  UnknownKeyError: class UnknownKeyError extends UsageError {},
  InvalidResumeTokenError: class InvalidResumeTokenError extends UsageError {},
  StaleRevisionError: class StaleRevisionError extends UsageError {},
  TooLargeError: class TooLargeError extends UsageError {},
  ReentrantError: class ReentrantError extends UsageError {},
  AlreadyExistsError: class AlreadyExistsError extends UsageError {},
  UnsupportedError: class UnsupportedError extends UsageError {},
  NotPendingError: class NotPendingError extends UsageError {},
  SessionEndedError: class SessionEndedError extends UsageError {},
  TimedOutError: class TimedOutError extends TransientError {},
  BusyError: class BusyError extends TransientError {},
  IOFailedError: class IOFailedError extends TransientError {},
  RateLimitedError: class RateLimitedError extends TransientError {},
  ModelError: class ModelError extends PermanentError {},
  ToolError: class ToolError extends PermanentError {},
  StateLimitError: class StateLimitError extends PermanentError {},
  CallbackFailedError: class CallbackFailedError extends PermanentError {},
  CorruptError: class CorruptError extends PermanentError {},
  AuthError: class AuthError extends PermanentError {},
  OutOfMemoryError: class OutOfMemoryError extends FatalError {},
  InternalError: class InternalError extends FatalError {},
};
/** The runtime was closed before or during this call (DEXA_E_INVALID_ARG). */
classes.RuntimeClosedError = class RuntimeClosedError extends classes.InvalidArgumentError {};

const BY_CODE = new Map([
  [-101, 'InvalidArgumentError'], [-102, 'StructSizeError'], [-103, 'InvalidJSONError'],
  [-104, 'UnknownStepError'], [-105, 'UnknownRPCError'], [-106, 'NotFoundError'],
  [-107, 'EmptyMessageError'], [-108, 'BadStateError'], [-109, 'UnknownKeyError'],
  [-110, 'InvalidResumeTokenError'], [-111, 'StaleRevisionError'], [-112, 'TooLargeError'],
  [-113, 'ReentrantError'], [-114, 'AlreadyExistsError'], [-115, 'UnsupportedError'],
  [-116, 'NotPendingError'], [-117, 'SessionEndedError'], [-201, 'TransientError'], [-202, 'TimedOutError'],
  [-203, 'BusyError'], [-204, 'IOFailedError'], [-205, 'RateLimitedError'],
  [-301, 'PermanentError'], [-302, 'ModelError'], [-303, 'ToolError'],
  [-304, 'StateLimitError'], [-305, 'CallbackFailedError'], [-306, 'CorruptError'],
  [-307, 'AuthError'], [-901, 'OutOfMemoryError'], [-902, 'InternalError'],
].map(([n, c]) => [n, classes[c]]));
const BY_CLASS = { 1: UsageError, 2: TransientError, 3: PermanentError, 9: FatalError };

/** The error class for errno: the code's own, else its error class's. */
function exceptionClass(errno) {
  return BY_CODE.get(errno) || BY_CLASS[errorClass(errno)] || DexaError;
}

/** A new error of the right subclass. */
function errorFor(errno, message, document, options) {
  const Cls = exceptionClass(errno);
  return new Cls(errno, message, document, options);
}

/** Runs fn; an error the addon threw (code and errno) becomes a DexaError. */
function rethrow(fn) {
  try {
    return fn();
  } catch (e) {
    if (e && typeof e.errno === 'number' && !(e instanceof DexaError)) throw errorFor(e.errno, e.message);
    throw e;
  }
}

/** An error the addon threw or rejected with (code and errno) as a
 * DexaError; other errors as they are. */
function toDexa(e) {
  if (e && typeof e.errno === 'number' && !(e instanceof DexaError)) return errorFor(e.errno, e.message);
  return e;
}

const closed = () => new classes.RuntimeClosedError(CODES.DEXA_E_INVALID_ARG, 'the runtime is closed');

module.exports = { CODES, ErrorClass, errorName, errorClass, exceptionClass, errorFor, rethrow,
  toDexa, closed, classes, ...classes };
