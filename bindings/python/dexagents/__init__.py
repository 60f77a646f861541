"""Durable AI-agent sessions for Python: the bindings of libdexagents.

cffi in ABI mode over the C library ``libdexagents.so.1`` (or, on a Python
without cffi, the standard library's ctypes: the package has no required
dependency): nothing is compiled at install time. The library is loaded on first use (see
:mod:`dexagents._native` for where it is looked for; a missing library raises
:class:`LibraryNotFoundError` saying how to fix it).

Example::

    import dexagents as dx

    @dx.tool(effect=dx.ToolEffect.WRITE, approval=True,
             parameters={"type": "object", "properties": {"path": {"type": "string"}}})
    def save_file(args, call):
        "Saves a file."
        return "saved " + args["path"]

    agent = dx.Agent(dx.AgentDefinition(
        instructions="You are helpful.", models=["mock/dex"], tools=[save_file],
        built_in_tools=frozenset(dx.BuiltInTool)))
    with dx.Runtime(agent, store="sessions.db", workers=2) as rt:
        sid = rt.start_session()
        rt.send(sid, '/tool save_file {"path": "a.txt"}')
        rt.wait_idle(sid)
        rt.approve(sid, rt.snapshot(sid).pending[0].call_id)
        rt.wait_idle(sid)
        for ev in rt.events(sid):
            print(ev.token, ev.type)

asyncio: :class:`AsyncRuntime`. Host-driven mode (your engine stores the
state): :mod:`dexagents.host`.
"""
from __future__ import annotations

import json

from . import host
from ._native import LibraryNotFoundError, ffi, lib, load_library, s
from ._version import __version__
from .agent import (BUILTIN_ALL, BUILTIN_ASK_USER, BUILTIN_DURABLE_WAIT, BUILTIN_WRITE_TODOS,
                    Agent, AgentDefinition, BuiltInTool, Call, CompactionPolicy, McpToolSource,
                    Harness, Model, Tool, ToolCall, ToolEffect, ToolResult, tool)
from .model import (ModelReply, ModelRequest, ProposedToolCall, ReplyItem, Usage,
                    error_code)
from .aio import AsyncRuntime
from .errors import (CODES, OK, AlreadyExistsError, AuthError, BadStateError,
                     CallbackFailedError, CorruptError, DexaError, EmptyMessageError, ErrorClass,
                     FatalError, InternalError, InvalidArgumentError, InvalidJSONError,
                     InvalidResumeTokenError, IOFailedError, ModelError, NotFoundError,
                     NotPendingError, SessionEndedError, OutOfMemoryError, PermanentError, RateLimitedError,
                     ReentrantError, RuntimeClosedError, StaleRevisionError, StateLimitError,
                     StructSizeError, TimedOutError, TooLargeError, ToolError, TransientError,
                     UnknownKeyError, UnknownRPCError, UnknownStepError, UnsupportedError,
                     UsageError, BusyError, error_class, error_for, error_name,
                     exception_class, strerror)
from .host import (AttributeReader, CallKind, Consume, DictAttributes, Publish, RawJSON, Result,
                   StepCall, Task, TimerDue, Wait, WaitEvaluation, Write, evaluate_wait)
from .runtime import Runtime
from .types import (EVENT_TYPES, ContextSummary, Event, Message, MessagePage, PendingItem, Plan,
                    PlanExecution, QueuedMessage, Record, SendResult, SessionInfo, SessionPage,
                    SessionSettings, Snapshot, Todo, ToolCallRequest, Transcript, Turn,
                    TurnControl)

#: Tool effects as plain numbers (earlier names of :class:`ToolEffect`).
READ, IDEMPOTENT_WRITE, WRITE = ToolEffect.READ, ToolEffect.IDEMPOTENT_WRITE, ToolEffect.WRITE

# DEXA_E_NOT_FOUND = -106, ...: every error code by name.
globals().update(CODES)


def version() -> str:
    """The version of the loaded C library ("1.1.0")."""
    return s(lib.dexa_version())


def build_info() -> dict:
    """What the loaded C library contains (dexa_build_info(3)): ``{"version",
    "features": ["core", ..., "sqlite"], "options": {"WITH_HTTP": True, ...},
    "libraries": [...]}``. A library built with ``make MINIMAL=1`` has neither
    provider clients nor stores; their functions raise UnsupportedError."""
    return json.loads(s(lib.dexa_build_info()))


def build_has(feature: str) -> bool:
    """True when the loaded C library has feature ("http", "providers",
    "mcp-http", "connectors", "sqlite", "postgresql", "core", ...)."""
    return lib.dexa_build_has(feature.encode()) == 1


__all__ = [
    "__version__", "version", "build_info", "build_has", "load_library", "LibraryNotFoundError", "ffi", "lib", "host",
    # agent
    "Agent", "AgentDefinition", "BuiltInTool", "CompactionPolicy", "McpToolSource", "Model",
    "Harness", "ModelRequest", "ModelReply", "ReplyItem", "ProposedToolCall", "Usage", "error_code",
    "Tool", "ToolCall", "Call", "ToolEffect", "ToolResult", "tool", "READ", "IDEMPOTENT_WRITE",
    "WRITE", "BUILTIN_ASK_USER", "BUILTIN_DURABLE_WAIT", "BUILTIN_WRITE_TODOS", "BUILTIN_ALL",
    # runtimes
    "Runtime", "AsyncRuntime",
    # host-driven mode
    "AttributeReader", "CallKind", "DictAttributes", "Publish", "RawJSON", "Result", "StepCall",
    "Task", "Wait", "Write", "WaitEvaluation", "Consume", "TimerDue", "evaluate_wait",
    # typed documents
    "Record", "Snapshot", "SessionSettings", "Turn", "Transcript", "Plan", "Todo", "Message",
    "ToolCallRequest", "QueuedMessage", "PendingItem", "TurnControl", "ContextSummary",
    "MessagePage", "SendResult", "PlanExecution", "SessionInfo", "SessionPage", "Event",
    "EVENT_TYPES",
    # errors
    "OK", "CODES", "ErrorClass", "strerror", "error_name", "error_class", "error_for",
    "exception_class", "DexaError", "UsageError", "TransientError", "PermanentError",
    "FatalError", "InvalidArgumentError", "RuntimeClosedError", "StructSizeError",
    "InvalidJSONError", "UnknownStepError", "UnknownRPCError", "NotFoundError",
    "EmptyMessageError", "BadStateError", "UnknownKeyError", "InvalidResumeTokenError",
    "StaleRevisionError", "TooLargeError", "ReentrantError", "AlreadyExistsError",
    "UnsupportedError", "NotPendingError", "SessionEndedError", "TimedOutError", "BusyError", "IOFailedError",
    "RateLimitedError", "ModelError", "ToolError", "StateLimitError", "CallbackFailedError",
    "CorruptError", "AuthError", "OutOfMemoryError", "InternalError",
] + list(CODES)
