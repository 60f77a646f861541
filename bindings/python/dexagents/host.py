"""Host-driven mode: your engine stores the session's state and calls the
library once per Step method or RPC (dexa_dispatch(3)).

The cycle of a host (see examples/host-loop for one in C):

1. register the flow from :meth:`Agent.describe` (Step types, which have a
   WaitFor, their retry and timeout options, attributes, channels, RPCs);
2. for each Step method or RPC, build a :class:`StepCall` and call
   :func:`dispatch` with an :class:`AttributeReader` over your state;
3. apply the :class:`Result` atomically: attribute writes (None deletes),
   channel publishes, durable events, then the wait (WaitFor) or the
   decision (Execute, RPC); a failed Step (``not result.ok``) is retried
   per its options, then its recovery Step runs;
4. evaluate each wait against your channels and timers, and hand the
   consumed messages and fired timers to Execute as ``conditions``.

Step 4 is the host's job today: :attr:`Result.wait` returns the wait as a
typed :class:`Wait`. A helper of the C library that evaluates a wait against
the host's state is being added; it will be bound here as
``Wait.evaluate(...)`` (the hook is :class:`Wait`), so a host in Python need
not re-implement the rules of <dexagents/flow.h>.

With the embedded runtime as the host, :meth:`Runtime.poll
<dexagents.Runtime.poll>` claims a ready Step as a :class:`Task` whose call
reads the runtime's store; :meth:`Task.dispatch` runs it and
:meth:`Runtime.complete <dexagents.Runtime.complete>` applies the result.
"""
from __future__ import annotations

import enum
import json
import time
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, MutableMapping,
                    Optional, Protocol, Tuple)


from ._native import enc, ffi, lib, s, span, take
from .errors import OK, check, error_for

DEXA_E_NOT_FOUND = -106
DEXA_E_CALLBACK_FAILED = -305


class CallKind(enum.IntEnum):
    """What a :class:`StepCall` runs: a Step's WaitFor or Execute, or an RPC."""

    WAIT_FOR = 1
    EXECUTE = 2
    RPC = 3


@dataclass
class StepCall:
    """One Step method or RPC invocation (dexa_call). ``input``,
    ``conditions`` and ``recovery_error`` are JSON values (or :class:`RawJSON`
    to pass text unchanged); ``now_ms`` defaults to the current time.
    ``step_execution_id`` ("RunModel-7") is unique in the session; None for
    RPCs. ``attempt`` is 1-based."""

    kind: CallKind
    session_id: str
    name: str
    step_execution_id: Optional[str] = None
    attempt: int = 1
    input: Any = None
    conditions: Any = None
    recovery_error: Any = None
    now_ms: Optional[int] = None


@dataclass(frozen=True)
class RawJSON:
    """JSON text passed to the library as it is (no re-encoding)."""

    text: str


def _json_text(value: Any) -> Optional[bytes]:
    if value is None:
        return None
    if isinstance(value, RawJSON):
        return enc(value.text)
    return enc(json.dumps(value))


class AttributeReader(Protocol):
    """What :func:`dispatch` reads the session's attributes through. Values
    are JSON text, exactly as the library wrote them (store them as text)."""

    def get(self, key: str) -> Optional[str]:
        """The JSON text of ``key``, or None when it is absent."""
        ...

    def scan(self, prefix: str) -> Iterable[Tuple[str, str]]:
        """Every (key, JSON text) whose key starts with ``prefix``, in
        ascending (bytewise UTF-8) key order."""
        ...


class DictAttributes(MutableMapping[str, str]):
    """An :class:`AttributeReader` over a dict of key -> JSON text, with
    :meth:`apply` to apply a result's writes: the state of a small in-memory
    host, or a cache in front of a real one."""

    def __init__(self, data: Optional[Mapping[str, str]] = None) -> None:
        """Starts with a copy of ``data``."""
        self._data: Dict[str, str] = dict(data or {})

    def get(self, key: str, default: Optional[str] = None) -> Optional[str]:  # type: ignore[override]
        """The JSON text of ``key`` (``default`` when absent)."""
        return self._data.get(key, default)

    def scan(self, prefix: str) -> Iterator[Tuple[str, str]]:
        """(key, JSON text) pairs whose key starts with ``prefix``, in
        bytewise key order."""
        keys = sorted((k for k in self._data if k.startswith(prefix)), key=lambda k: k.encode())
        for k in keys:
            yield k, self._data[k]

    def apply(self, result: "Result") -> None:
        """Applies ``result``'s attribute writes (None deletes)."""
        for w in result.writes:
            if w.value is None:
                self._data.pop(w.key, None)
            else:
                self._data[w.key] = w.value

    def __getitem__(self, key: str) -> str:
        return self._data[key]

    def __setitem__(self, key: str, value: str) -> None:
        self._data[key] = value

    def __delitem__(self, key: str) -> None:
        del self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


@dataclass(frozen=True)
class Write:
    """An attribute write: the key and its new JSON text (None deletes it)."""

    key: str
    value: Optional[str]


@dataclass(frozen=True)
class Publish:
    """A channel publish: the channel and the message's JSON text."""

    channel: str
    value: str


@dataclass(frozen=True)
class Condition:
    """One condition of a :class:`Wait`: a channel holding at least ``min``
    messages (consuming up to ``max``, all when None), or a timer of
    ``timer_ms`` from when the wait began. ``id`` names it in the condition
    results handed to Execute."""

    id: str
    channel: Optional[str] = None
    min: Optional[int] = None
    max: Optional[int] = None
    timer_ms: Optional[int] = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Wait:
    """What a WaitFor returned: ``mode`` "any" (the first ready condition,
    timers first, then channels, wins and alone consumes) or "all", and its
    conditions. ``raw`` is the JSON object of <dexagents/flow.h>.

    Evaluating it against the host's channels and timers is the host's job
    for now; the C library's wait evaluator will be bound here as
    ``evaluate`` once it exists."""

    mode: str
    conditions: List[Condition]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> "Wait":
        """The typed view of a wait document."""
        conds = [Condition(id=str(c.get("id", "")), channel=c.get("channel"), min=c.get("min"),
                           max=c.get("max"), timer_ms=c.get("timer_ms"), raw=c)
                 for c in raw.get("conditions", []) if isinstance(c, Mapping)]
        return cls(mode=str(raw.get("mode", "any")), conditions=conds, raw=raw)


class Result:
    """What one :func:`dispatch` returned (dexa_result); nothing in it is
    applied by the library. Frees the C result when collected or closed
    (``with`` closes it).

    ``status`` is DEXA_OK (0) or the error; a failed Step has no writes,
    publishes or decision, and the host retries it per the Step's options
    (after ``retry_after_ms`` when it is not 0)."""

    def __init__(self, handle: Any) -> None:
        """Takes ownership of a ``dexa_result *``."""
        self._h: Any = ffi.gc(handle, lib.dexa_result_free)

    def _handle(self) -> Any:
        if self._h is None:
            raise ValueError("the result was closed")
        return self._h

    def close(self) -> None:
        """Frees the C result now (also done when the object is collected)."""
        h, self._h = self._h, None
        if h is not None:
            ffi.release(h)

    def __enter__(self) -> "Result":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def status(self) -> int:
        """DEXA_OK (0) or a negative DEXA_E_* code."""
        return int(lib.dexa_result_status(self._handle()))

    @property
    def ok(self) -> bool:
        """True when the status is DEXA_OK."""
        return self.status == OK

    @property
    def error(self) -> str:
        """What went wrong ("" when ok)."""
        return s(lib.dexa_result_errmsg(self._handle()))

    @property
    def retry_after_ms(self) -> int:
        """For a failed Step: how long to wait before the next attempt (0: use
        the Step's backoff)."""
        return int(lib.dexa_result_retry_after_ms(self._handle()))

    def raise_for_status(self) -> None:
        """Raises the :class:`~dexagents.DexaError` subclass of the status
        unless it is DEXA_OK."""
        if not self.ok:
            raise error_for(self.status, self.error)

    def _pairs(self, count: Callable[[Any], int], at: Callable[..., int]) -> List[Tuple[str, Optional[str]]]:
        h = self._handle()
        out = []
        k, kl = ffi.new("const char **"), ffi.new("size_t *")
        v, vl = ffi.new("const char **"), ffi.new("size_t *")
        for i in range(count(h)):
            check(at(h, i, k, kl, v, vl))
            out.append((span(k[0], kl[0]) or "", span(v[0], vl[0])))
        return out

    @property
    def writes(self) -> List[Write]:
        """Attribute writes, in the order to apply them."""
        return [Write(k, v) for k, v in self._pairs(lib.dexa_result_write_count,
                                                    lib.dexa_result_write_at)]

    @property
    def publishes(self) -> List[Publish]:
        """Channel publishes, in order."""
        return [Publish(k, v or "null") for k, v in self._pairs(lib.dexa_result_publish_count,
                                                               lib.dexa_result_publish_at)]

    @property
    def events(self) -> List[str]:
        """Durable events (JSON text each) to append to the session's
        AgentEvents stream, in order (dexagents-events(7))."""
        h = self._handle()
        p, n = ffi.new("const char **"), ffi.new("size_t *")
        out = []
        for i in range(lib.dexa_result_event_count(h)):
            check(lib.dexa_result_event_at(h, i, p, n))
            out.append(span(p[0], n[0]) or "null")
        return out

    def _doc(self, fn: Callable[..., int]) -> Any:
        p, n = ffi.new("const char **"), ffi.new("size_t *")
        check(fn(self._handle(), p, n))
        text = span(p[0], n[0])
        return json.loads(text) if text else None

    @property
    def wait(self) -> Optional[Wait]:
        """The wait of a WaitFor, or None (Execute may run at once)."""
        doc = self._doc(lib.dexa_result_wait)
        return Wait.from_json(doc) if isinstance(doc, Mapping) else None

    @property
    def decision(self) -> Optional[Dict[str, Any]]:
        """The decision of an Execute or RPC ({"next": [...], "complete",
        "cancel"}), or None."""
        return self._doc(lib.dexa_result_decision)

    @property
    def response(self) -> Any:
        """An RPC's response document, or None."""
        return self._doc(lib.dexa_result_response)

    def to_json(self) -> Dict[str, Any]:
        """The whole result as one document (dexa_result_json(3))."""
        p, n = ffi.new("char **"), ffi.new("size_t *")
        check(lib.dexa_result_json(p, n, self._handle()))
        return json.loads(take(p, n) or "{}")

    def __repr__(self) -> str:
        if self._h is None:
            return "Result(closed)"
        return "Result(status=%d, writes=%d, publishes=%d, events=%d)" % (
            self.status, lib.dexa_result_write_count(self._h),
            lib.dexa_result_publish_count(self._h), lib.dexa_result_event_count(self._h))


# ---- dispatch ---------------------------------------------------------------


class _CallContext:
    """The reader, the sink and what must stay alive during one dispatch."""

    __slots__ = ("reader", "on_event", "last", "error")

    def __init__(self, reader: Any, on_event: Optional[Callable[[Dict[str, Any]], None]]) -> None:
        self.reader = reader
        self.on_event = on_event
        self.last: Any = None  # the value handed out last: borrowed until the next read
        self.error: Optional[BaseException] = None


def _fail(ctx: _CallContext, e: BaseException) -> int:
    if ctx.error is None:
        ctx.error = e
    return DEXA_E_CALLBACK_FAILED


@ffi.callback("int(void *, const char *, size_t, const char **, size_t *)",
              error=DEXA_E_CALLBACK_FAILED)
def _attr_get(user_data: Any, key: Any, key_len: int, value: Any, value_len: Any) -> int:
    ctx: _CallContext = ffi.from_handle(user_data)
    try:
        text = ctx.reader.get(ffi.unpack(key, key_len).decode("utf-8"))
        if text is None:
            return DEXA_E_NOT_FOUND
        data = enc(text)
        ctx.last = ffi.new("char[]", data)
        value[0] = ctx.last
        value_len[0] = len(data)
        return OK
    except BaseException as e:  # noqa: BLE001 - re-raised after the dispatch
        return _fail(ctx, e)


@ffi.callback("int(void *, const char *, size_t, dexa_attr_visit_fn, void *)",
              error=DEXA_E_CALLBACK_FAILED)
def _attr_scan(user_data: Any, prefix: Any, prefix_len: int, visit: Any, visit_ctx: Any) -> int:
    ctx: _CallContext = ffi.from_handle(user_data)
    try:
        for k, v in ctx.reader.scan(ffi.unpack(prefix, prefix_len).decode("utf-8")):
            kb, vb = enc(k), enc(v)
            rc = visit(visit_ctx, kb, len(kb), vb, len(vb))
            if rc > 0:
                break
            if rc < 0:
                return rc
        return OK
    except BaseException as e:  # noqa: BLE001
        return _fail(ctx, e)


@ffi.callback("void(void *, const char *, size_t)")
def _event_sink(user_data: Any, text: Any, n: int) -> None:
    ctx: _CallContext = ffi.from_handle(user_data)
    if ctx.on_event is None:
        return
    try:
        ctx.on_event(json.loads(ffi.unpack(text, n).decode("utf-8")))
    except BaseException as e:  # noqa: BLE001 - a live event is best effort
        _fail(ctx, e)


@ffi.callback("int(void *)", error=0)
def _stop_flag(user_data: Any) -> int:
    return 1 if ffi.from_handle(user_data)() else 0


def _stopper(stop: Any) -> Optional[Callable[[], bool]]:
    """A stop (a threading.Event or a callable returning a bool) as a callable."""
    if stop is None:
        return None
    if hasattr(stop, "is_set"):
        return stop.is_set
    if not callable(stop):
        raise TypeError("stop must be a threading.Event or a callable")
    return stop


def _run_dispatch(agent: Any, call_ptr: Any, ctx: Optional[_CallContext]) -> "Result":
    out = ffi.new("dexa_result **")
    rc = lib.dexa_dispatch(out, agent._h, call_ptr)
    if ctx is not None and ctx.error is not None and rc == DEXA_E_CALLBACK_FAILED:
        if out[0] != ffi.NULL:
            lib.dexa_result_free(out[0])
        raise error_for(rc, "a callback raised %s: %s" % (type(ctx.error).__name__, ctx.error)) \
            from ctx.error
    if out[0] == ffi.NULL:
        raise error_for(rc, "dispatch failed")
    return Result(out[0])


def dispatch(agent: Any, call: StepCall, attributes: AttributeReader, *,
             on_event: Optional[Callable[[Dict[str, Any]], None]] = None,
             stop: Any = None) -> Result:
    """Runs ``call`` on ``agent`` (dexa_dispatch(3)) with ``attributes`` as
    the session's state and returns its :class:`Result`, also when the Step
    failed (check :attr:`Result.ok`). ``on_event`` receives live events (text
    deltas, ...) as dicts, on this thread, during the call. ``stop`` (a
    threading.Event, or a callable returning True) is set when the host
    learns that the call's turn was stopped: a running model call or harness
    segment sees it (dexa_call.cancelled, dexa_model_request_cancelled).
    Tools of the agent run on this thread. An exception raised by the reader
    is raised again (as the ``__cause__`` of a
    :class:`~dexagents.CallbackFailedError`); a call the library refuses
    before it runs raises its error."""
    ctx = _CallContext(attributes, on_event)
    handle = ffi.new_handle(ctx)
    c = ffi.new("dexa_call *")
    check(lib.dexa_call_init(c, ffi.sizeof("dexa_call")))
    keep = []

    def text(value: Any) -> Tuple[Any, int]:
        data = _json_text(value)
        if data is None:
            return ffi.NULL, 0
        buf = ffi.new("char[]", data)
        keep.append(buf)
        return buf, len(data)

    def cstr(value: Optional[str]) -> Any:
        if value is None:
            return ffi.NULL
        buf = ffi.new("char[]", enc(value))
        keep.append(buf)
        return buf

    c.kind = int(call.kind)
    c.session_id = cstr(call.session_id)
    c.name = cstr(call.name)
    c.step_execution_id = cstr(call.step_execution_id)
    c.attempt = call.attempt
    c.input, c.input_len = text(call.input)
    c.conditions, c.conditions_len = text(call.conditions)
    c.recovery_error, c.recovery_error_len = text(call.recovery_error)
    c.now_ms = call.now_ms if call.now_ms is not None else int(time.time() * 1000)
    c.attr_user_data = handle
    stopper = _stopper(stop)
    if stopper is not None:
        stop_handle = ffi.new_handle(stopper)
        keep.append(stop_handle)
        c.cancelled = _stop_flag
        c.cancel_user_data = stop_handle
    c.attr_get = _attr_get
    c.attr_scan = _attr_scan
    c.sink_user_data = handle
    c.event_sink = _event_sink
    return _run_dispatch(agent, c, ctx)


class Task:
    """A Step method the embedded runtime claimed for you
    (:meth:`Runtime.poll <dexagents.Runtime.poll>`). ``call`` describes it;
    :meth:`dispatch` runs it with the runtime's store as the attribute reader.
    Hand the result to :meth:`Runtime.complete <dexagents.Runtime.complete>`
    (or give the task back with :meth:`Runtime.abandon
    <dexagents.Runtime.abandon>`); every task must end one of those ways."""

    def __init__(self, runtime: Any, handle: Any) -> None:
        """Wraps a ``dexa_task *`` of ``runtime``."""
        self._runtime = runtime
        self._h: Any = handle
        c = lib.dexa_task_call(handle)
        self.call = StepCall(
            kind=CallKind(c.kind), session_id=s(c.session_id), name=s(c.name),
            step_execution_id=s(c.step_execution_id) if c.step_execution_id != ffi.NULL else None,
            attempt=int(c.attempt), input=_parse(span(c.input, c.input_len)),
            conditions=_parse(span(c.conditions, c.conditions_len)),
            recovery_error=_parse(span(c.recovery_error, c.recovery_error_len)),
            now_ms=int(c.now_ms))

    def _handle(self) -> Any:
        if self._h is None:
            raise ValueError("the task was completed or abandoned")
        return self._h

    def _take(self) -> Any:
        h, self._h = self._handle(), None
        return h

    @property
    def done(self) -> bool:
        """True once completed or abandoned."""
        return self._h is None

    def dispatch(self, *, on_event: Optional[Callable[[Dict[str, Any]], None]] = None,
                 stop: Any = None) -> Result:
        """Runs the task's call on the runtime's agent, reading the store.
        ``on_event`` receives live events; when None, they go to the
        runtime's event readers as they do for worker threads. ``stop`` (a
        threading.Event or a callable) tells a running model call that its
        turn was stopped (see :func:`dispatch`)."""
        call = lib.dexa_task_call(self._handle())
        stopper = _stopper(stop)
        if on_event is None and stopper is None:
            return _run_dispatch(self._runtime.agent, call, None)
        ctx = _CallContext(None, on_event)
        handle = ffi.new_handle(ctx)
        copy = ffi.new("dexa_call *")
        ffi.memmove(copy, call, ffi.sizeof("dexa_call"))
        # The library's call may be a newer, longer struct: the copy is ours.
        copy.struct_size = ffi.sizeof("dexa_call")
        if on_event is not None:
            copy.sink_user_data = handle
            copy.event_sink = _event_sink
        if stopper is not None:
            stop_handle = ffi.new_handle(stopper)
            copy.cancelled = _stop_flag
            copy.cancel_user_data = stop_handle
        return _run_dispatch(self._runtime.agent, copy, ctx)

    def __repr__(self) -> str:
        return "Task(%s %s %s attempt %d%s)" % (
            self.call.session_id, self.call.kind.name, self.call.step_execution_id or self.call.name,
            self.call.attempt, ", done" if self.done else "")


def _parse(text: Optional[str]) -> Any:
    return json.loads(text) if text else None


