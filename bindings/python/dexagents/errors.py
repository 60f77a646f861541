"""Errors: one exception class per libdexagents error code, grouped under one
class per error class (usage, transient, permanent, fatal), all subclasses
of :class:`DexaError`. Where a Python built-in fits, the class derives from it
too, so ``except LookupError`` catches an unknown session
(:class:`NotFoundError`) and ``except ValueError`` a blank message
(:class:`EmptyMessageError`).

The numbers are those of ``include/dexagents/errors.h``; they never change.
"""
from __future__ import annotations

import enum
from typing import Any, Dict, Mapping, Optional, Type

from ._native import lib, s

OK = 0

#: Every DEXA_E_* name and its number.
CODES: Dict[str, int] = {
    "DEXA_E_INVALID_ARG": -101, "DEXA_E_STRUCT_SIZE": -102, "DEXA_E_INVALID_JSON": -103,
    "DEXA_E_UNKNOWN_STEP": -104, "DEXA_E_UNKNOWN_RPC": -105, "DEXA_E_NOT_FOUND": -106,
    "DEXA_E_EMPTY_MESSAGE": -107, "DEXA_E_BAD_STATE": -108, "DEXA_E_UNKNOWN_KEY": -109,
    "DEXA_E_INVALID_RESUME_TOKEN": -110, "DEXA_E_STALE_REVISION": -111,
    "DEXA_E_TOO_LARGE": -112, "DEXA_E_REENTRANT": -113, "DEXA_E_ALREADY_EXISTS": -114,
    "DEXA_E_UNSUPPORTED": -115, "DEXA_E_NOT_PENDING": -116, "DEXA_E_SESSION_ENDED": -117,
    "DEXA_E_TRANSIENT": -201,
    "DEXA_E_TIMEOUT": -202, "DEXA_E_BUSY": -203, "DEXA_E_IO": -204,
    "DEXA_E_RATE_LIMITED": -205, "DEXA_E_PERMANENT": -301, "DEXA_E_MODEL": -302,
    "DEXA_E_TOOL": -303, "DEXA_E_STATE_LIMIT": -304, "DEXA_E_CALLBACK_FAILED": -305,
    "DEXA_E_CORRUPT": -306, "DEXA_E_AUTH": -307, "DEXA_E_NOMEM": -901,
    "DEXA_E_INTERNAL": -902,
}


class ErrorClass(enum.IntEnum):
    """The class of an error code (``dexa_error_class``): its hundreds digit."""

    OK = 0
    USAGE = 1
    TRANSIENT = 2
    PERMANENT = 3
    FATAL = 9


def strerror(code: int) -> str:
    """The library's static description of ``code`` ("unknown error" when it
    does not know it)."""
    return s(lib.dexa_strerror(code))


def error_name(code: int) -> str:
    """The symbolic name of ``code`` ("DEXA_E_NOT_FOUND")."""
    return s(lib.dexa_error_name(code))


def error_class(code: int) -> ErrorClass:
    """The :class:`ErrorClass` of ``code``."""
    value = lib.dexa_error_class(code)
    try:
        return ErrorClass(value)
    except ValueError:
        return ErrorClass.FATAL


def _name_of(code: int) -> str:
    for name, number in CODES.items():
        if number == code:
            return name
    return "DEXA_E_UNKNOWN"


class DexaError(Exception):
    """A failed libdexagents call.

    Attributes: ``code`` (the negative DEXA_E_* number), ``name``
    ("DEXA_E_NOT_FOUND"), ``message`` (the handle's or the error document's
    message), ``document`` (the error document, when the call returned one)
    and ``error_class``. Construct one with :func:`error_for`, which picks the
    subclass of the code."""

    code: int
    name: str
    message: str
    document: Optional[Mapping[str, Any]]

    def __init__(self, code: int, message: str = "",
                 document: Optional[Mapping[str, Any]] = None) -> None:
        self.code = int(code)
        self.name = _name_of(self.code)
        self.message = message or _static_text(self.code)
        self.document = document
        super().__init__(self.message)

    def __str__(self) -> str:
        return "%s (%d): %s" % (self.name, self.code, self.message)

    def __reduce__(self) -> Any:
        return (type(self), (self.code, self.message, self.document))

    @property
    def error_class(self) -> ErrorClass:
        """The :class:`ErrorClass` of the code (usage, transient, ...)."""
        hundreds = abs(self.code) // 100
        return ErrorClass(hundreds) if hundreds in (1, 2, 3, 9) else ErrorClass.FATAL


def _static_text(code: int) -> str:
    # Without the library loaded (a closed handle, an import-time error) the
    # name still says what happened.
    try:
        return strerror(code)
    except ImportError:
        return _name_of(code)


class UsageError(DexaError):
    """The request was wrong (-1xx): do not retry it unchanged."""


class TransientError(DexaError):
    """A failure that may pass (-2xx): retrying later may succeed.
    Also DEXA_E_TRANSIENT itself."""


class PermanentError(DexaError):
    """The operation failed for good (-3xx). Also DEXA_E_PERMANENT itself."""


class FatalError(DexaError):
    """Resources are exhausted or the library is inconsistent (-9xx)."""


class InvalidArgumentError(UsageError, ValueError):
    """DEXA_E_INVALID_ARG: a NULL handle or an argument out of range."""


class RuntimeClosedError(InvalidArgumentError):
    """The runtime was closed before this call (DEXA_E_INVALID_ARG)."""


class StructSizeError(UsageError, ValueError):
    """DEXA_E_STRUCT_SIZE: a struct older than the library accepts."""


class InvalidJSONError(UsageError, ValueError):
    """DEXA_E_INVALID_JSON: malformed or wrongly shaped JSON input."""


class UnknownStepError(UsageError, LookupError):
    """DEXA_E_UNKNOWN_STEP: no Step of that name in the flow."""


class UnknownRPCError(UsageError, LookupError):
    """DEXA_E_UNKNOWN_RPC: no RPC of that name in the flow."""


class NotFoundError(UsageError, LookupError):
    """DEXA_E_NOT_FOUND: no such session (or queued message, call)."""


class EmptyMessageError(UsageError, ValueError):
    """DEXA_E_EMPTY_MESSAGE: a user message or answer that is blank."""


class BadStateError(UsageError):
    """DEXA_E_BAD_STATE: the session is not in a state that allows it."""


class UnknownKeyError(UsageError, ValueError):
    """DEXA_E_UNKNOWN_KEY: a configuration key that is not known."""


class InvalidResumeTokenError(UsageError, ValueError):
    """DEXA_E_INVALID_RESUME_TOKEN: not an event resume token of this session;
    reload the snapshot."""


class StaleRevisionError(UsageError):
    """DEXA_E_STALE_REVISION: a plan revision that is not the current one."""


class TooLargeError(UsageError, ValueError):
    """DEXA_E_TOO_LARGE: an input over its size limit."""


class ReentrantError(UsageError):
    """DEXA_E_REENTRANT: called from inside a callback of the same handle."""


class AlreadyExistsError(UsageError):
    """DEXA_E_ALREADY_EXISTS: a session id that is taken."""


class UnsupportedError(UsageError):
    """DEXA_E_UNSUPPORTED: a feature this build, store or agent does not have
    (plan mode not enabled, ...)."""


class NotPendingError(UsageError, LookupError):
    """DEXA_E_NOT_PENDING: a decision or answer for a call that is not
    waiting for one."""


class SessionEndedError(UsageError):
    """DEXA_E_SESSION_ENDED: the session has ended (end_session, or the
    runtime's idle timeout); it takes no more messages or decisions."""


class TimedOutError(TransientError, TimeoutError):
    """DEXA_E_TIMEOUT: the operation ran out of time (also a built-in
    TimeoutError)."""


class BusyError(TransientError):
    """DEXA_E_BUSY: the store or a lock is busy."""


class IOFailedError(TransientError):
    """DEXA_E_IO: storage or network I/O failed."""


class RateLimitedError(TransientError):
    """DEXA_E_RATE_LIMITED: the provider asked to slow down."""


class ModelError(PermanentError):
    """DEXA_E_MODEL: the model call failed for good."""


class ToolError(PermanentError):
    """DEXA_E_TOOL: the tool call failed for good."""


class StateLimitError(PermanentError):
    """DEXA_E_STATE_LIMIT: the session's active state would pass its limit."""


class CallbackFailedError(PermanentError):
    """DEXA_E_CALLBACK_FAILED: a host callback (an attribute reader, a tool)
    failed; the Python exception is chained as ``__cause__`` when there was
    one."""


class CorruptError(PermanentError):
    """DEXA_E_CORRUPT: stored data is not what the library wrote."""


class AuthError(PermanentError):
    """DEXA_E_AUTH: credentials missing or refused."""


class OutOfMemoryError(FatalError, MemoryError):
    """DEXA_E_NOMEM: out of memory."""


class InternalError(FatalError):
    """DEXA_E_INTERNAL: a bug in the library."""


_BY_CODE: Dict[int, Type[DexaError]] = {
    -101: InvalidArgumentError, -102: StructSizeError, -103: InvalidJSONError,
    -104: UnknownStepError, -105: UnknownRPCError, -106: NotFoundError,
    -107: EmptyMessageError, -108: BadStateError, -109: UnknownKeyError,
    -110: InvalidResumeTokenError, -111: StaleRevisionError, -112: TooLargeError,
    -113: ReentrantError, -114: AlreadyExistsError, -115: UnsupportedError,
    -116: NotPendingError, -117: SessionEndedError, -201: TransientError, -202: TimedOutError, -203: BusyError,
    -204: IOFailedError, -205: RateLimitedError, -301: PermanentError, -302: ModelError,
    -303: ToolError, -304: StateLimitError, -305: CallbackFailedError, -306: CorruptError,
    -307: AuthError, -901: OutOfMemoryError, -902: InternalError,
}
_BY_CLASS: Dict[int, Type[DexaError]] = {1: UsageError, 2: TransientError, 3: PermanentError,
                                         9: FatalError}


def exception_class(code: int) -> Type[DexaError]:
    """The exception class for ``code``: the code's own class, else its error
    class's (a code newer than this package), else :class:`DexaError`."""
    cls = _BY_CODE.get(int(code))
    if cls is None:
        cls = _BY_CLASS.get(abs(int(code)) // 100, DexaError)
    return cls


def error_for(code: int, message: str = "",
              document: Optional[Mapping[str, Any]] = None) -> DexaError:
    """A new exception of the right subclass for ``code``."""
    return exception_class(code)(code, message, document)


def check(rc: int, message: str = "") -> None:
    """Raises the exception of ``rc`` unless it is DEXA_OK."""
    if rc != OK:
        raise error_for(rc, message)
