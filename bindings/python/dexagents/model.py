"""Models and harnesses written in Python (dexagents-harness(7)).

The library calls them for each RunModel Step on a runtime worker thread.
A plain function runs right there; an ``async def`` function runs on the
event loop of the :class:`~dexagents.AsyncRuntime` that uses the agent (else
in a private loop on the worker thread). The request functions that call
back into the library (live deltas, the stop flag, reads inside the
segment) must run on the worker thread (dexagents-threads(7)): called from
another thread, they are queued and the waiting worker thread runs them.
When the turn is stopped, :attr:`ModelRequest.cancelled` turns true and an
``async def`` function's task is cancelled (``asyncio.CancelledError``)."""
from __future__ import annotations

import asyncio
import inspect
import json
import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from ._native import enc, ffi, lib, span, take
from .errors import CODES, DexaError, error_for

_EFFECTS = {"read": 1, "idempotent_write": 2, "write": 3}
_FINISH = ("stop", "tool_calls", "length", "content_filter", "refusal", "other")
class _Unset:
    """The state of a reply that leaves the harness's state as it is."""

    def __repr__(self) -> str:
        return "UNSET"


_UNSET: Any = _Unset()
#: How often a waiting worker checks for a stop and queued requests (s).
_POLL = 0.05


@dataclass
class ProposedToolCall:
    """A tool call the model proposes: it leaves the segment and runs in its
    own Step. ``effect`` ("read", "idempotent_write", "write" or a
    :class:`~dexagents.ToolEffect`) and ``approval`` come from the
    framework's own tool metadata and win over the tool's own policy for this
    call; None keeps the tool's."""

    call_id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    effect: Union[str, int, None] = None
    approval: Optional[bool] = None


@dataclass
class ReplyItem:
    """One output item stored verbatim (any JSON value) with its display
    text, reasoning summary and the tool calls it carries."""

    item: Any
    text: str = ""
    reasoning: str = ""
    tool_calls: Sequence[ProposedToolCall] = ()


@dataclass
class Usage:
    """The tokens of one call: input (cached and cache writes included),
    output (reasoning included), and the cost in USD when known."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: Optional[float] = None


@dataclass
class ModelReply:
    """A model's or harness's answer. ``items`` are the output items; without
    them, ``text``, ``reasoning`` and ``tool_calls`` make one item
    ``{"type": "message", "role": "assistant", ...}``. ``finish_reason`` is
    one of stop, tool_calls, length, content_filter, refusal, other. A
    harness sets its ``state`` (any JSON value; None drops it; left unset it
    stays) and appends ``state_entries``. ``framework_tool_calls`` are the
    tools the framework ran itself inside the segment (dicts with call_id,
    name, arguments, status, output): each a segment_tool_call event with
    ran_by "framework" when the segment commits, at least once."""

    items: Optional[Sequence[ReplyItem]] = None
    text: str = ""
    reasoning: str = ""
    tool_calls: Sequence[ProposedToolCall] = ()
    usage: Optional[Usage] = None
    finish_reason: Optional[str] = None
    provider_finish_reason: Optional[str] = None
    state: Any = _UNSET
    state_entries: Sequence[Any] = ()
    framework_tool_calls: Sequence[Dict[str, Any]] = ()


class _Call:
    """One call in flight: the worker thread's side of the request."""

    def __init__(self, req: Any) -> None:
        self.req = req
        self.thread = threading.get_ident()
        self.ops: "queue.Queue[Any]" = queue.Queue()
        self.stopped = threading.Event()
        self.over = False

    def on_worker(self) -> bool:
        return threading.get_ident() == self.thread

    def run(self, fn: Callable[[], Any]) -> Any:
        """Runs fn on the worker thread: now when already there, else queued
        (the caller waits for its result)."""
        if self.on_worker():
            return fn()
        if self.over:
            raise error_for(CODES["DEXA_E_BAD_STATE"], "the model call is over")
        fut: "Future[Any]" = Future()
        self.ops.put((fn, fut))
        return fut.result()

    def drain(self, timeout: float) -> None:
        try:
            fn, fut = self.ops.get(timeout=timeout)
        except queue.Empty:
            return
        while True:
            try:
                fut.set_result(fn())
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                fut.set_exception(e)
            try:
                fn, fut = self.ops.get_nowait()
            except queue.Empty:
                return

    def poll_stop(self) -> bool:
        if not self.stopped.is_set() and lib.dexa_model_request_cancelled(self.req):
            self.stopped.set()
        return self.stopped.is_set()


class ModelRequest:
    """What a model or harness gets for one call: the request document
    (dexa_model_request_json(3)) as ``document`` and its members as
    attributes (``model``, ``session_id``, ``turn``, ``round``, ``attempt``,
    ``instructions``, ``messages``, ``tools``, ``summary``, ``harness``,
    ...), plus a harness's ``state`` and ``state_entries``, the new messages,
    the stop flag, live deltas and reads inside the segment."""

    def __init__(self, call: _Call, harness: bool) -> None:
        self._call = call
        req = call.req
        p, n = ffi.new("const char **"), ffi.new("size_t *")
        lib.dexa_model_request_json(req, p, n)
        self.document: Dict[str, Any] = json.loads(span(p[0], n[0]) or "{}")
        self.messages: List[Dict[str, Any]] = list(self.document.get("messages") or [])
        self.tools: List[Dict[str, Any]] = list(self.document.get("tools") or [])
        self.model: str = self.document.get("model", "")
        self.session_id: str = self.document.get("session_id", "")
        self.turn: int = self.document.get("turn", 0)
        self.round: int = self.document.get("round", 0)
        self.attempt: int = self.document.get("attempt", 1)
        self.instructions: str = self.document.get("instructions", "")
        self.summary: Optional[Dict[str, Any]] = self.document.get("summary")
        self.harness: Optional[Dict[str, Any]] = self.document.get("harness")
        #: The state the harness's last committed segment set (None: none).
        self.state: Any = None
        #: The entries appended to the state since, oldest first.
        self.state_entries: List[Any] = []
        #: Index of the first message new for the harness (0 for a model).
        self.first_new_message = 0
        if harness and lib.dexa_model_request_harness_state(req, p, n) == 0:
            text = span(p[0], n[0]) if p[0] != ffi.NULL else None
            self.state = json.loads(text) if text else None
            for i in range(lib.dexa_model_request_harness_entry_count(req)):
                if lib.dexa_model_request_harness_entry_at(req, i, p, n) == 0:
                    self.state_entries.append(json.loads(span(p[0], n[0]) or "null"))
            self.first_new_message = lib.dexa_model_request_first_new_message(req)

    def __getitem__(self, key: str) -> Any:
        return self.document[key]

    @property
    def new_messages(self) -> List[Dict[str, Any]]:
        """The messages stored since the harness's last committed segment."""
        return self.messages[self.first_new_message:]

    @property
    def cancelled(self) -> bool:
        """True once the turn was stopped (the host's stop reached the call)."""
        if self._call.on_worker():
            return self._call.poll_stop()
        return self._call.stopped.is_set()

    def emit_delta(self, text: str, kind: str = "text") -> None:
        """Sends a live delta ("text", or "reasoning" for a reasoning
        summary) to the session's event readers. Best effort."""
        k = {"text": 1, "reasoning": 2}[kind]
        data = enc(text)
        if self._call.on_worker():
            lib.dexa_model_request_emit_delta(self._call.req, k, data, len(data))
        elif not self._call.over:
            self._call.ops.put((lambda: lib.dexa_model_request_emit_delta(
                self._call.req, k, data, len(data)), Future()))

    def call_tool(self, name: str, arguments: Optional[Mapping[str, Any]] = None,
                  call_id: Optional[str] = None) -> Dict[str, Any]:
        """Runs one of the agent's read tools now, inside the segment (a
        harness with ``runs_reads``): returns {"status": "ok"|"error"|
        "cancelled", "output", "content"?, "code"?}. It runs at least once
        (again when the segment reruns) and is recorded as a
        segment_tool_call event. Raises BadStateError for a tool that must
        leave the segment, NotFoundError for a tool that is not offered."""
        cid = enc(call_id or "seg-%s-%s-%s" % (self.turn, self.round, name))
        args = enc(json.dumps(dict(arguments or {})))

        def run() -> Dict[str, Any]:
            out, n = ffi.new("char **"), ffi.new("size_t *")
            rc = lib.dexa_model_request_call_tool(self._call.req, cid, enc(name), args, len(args),
                                                  out, n)
            if rc != 0:
                raise error_for(rc, "call_tool %s" % name)
            return json.loads(take(out, n) or "{}")
        return self._call.run(run)

    async def acall_tool(self, name: str, arguments: Optional[Mapping[str, Any]] = None,
                         call_id: Optional[str] = None) -> Dict[str, Any]:
        """:meth:`call_tool` for a coroutine: awaits the worker thread."""
        return await asyncio.get_running_loop().run_in_executor(
            None, lambda: self.call_tool(name, arguments, call_id))


def error_code(e: BaseException) -> int:
    """The error code an exception stands for: a DexaError keeps its own; an
    error with ``retryable``/``is_retryable`` or an HTTP ``status_code``
    (429 rate limited, 408/409/5xx transient, 401/403 auth, other 4xx a model
    error) by it; a timeout is a timeout, a connection error transient;
    anything else a model error (the turn fails without retrying)."""
    if isinstance(e, DexaError):
        return e.code
    status = getattr(e, "status_code", None) or getattr(e, "status", None)
    if not isinstance(status, int):
        status = None
    retryable = getattr(e, "retryable", getattr(e, "is_retryable", None))
    if status == 429:
        return CODES["DEXA_E_RATE_LIMITED"]
    if retryable is True or (status is not None and (status in (408, 409) or status >= 500)):
        return CODES["DEXA_E_TRANSIENT"]
    if status in (401, 403):
        return CODES["DEXA_E_AUTH"]
    if isinstance(e, (TimeoutError, asyncio.TimeoutError)):
        return CODES["DEXA_E_TIMEOUT"]
    if isinstance(e, (ConnectionError, asyncio.CancelledError)):
        return CODES["DEXA_E_TRANSIENT"]
    return CODES["DEXA_E_MODEL"]


def _effect(v: Any) -> int:
    if v is None:
        return 0
    return _EFFECTS[v] if isinstance(v, str) else int(v)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        raise error_for(rc, "the reply's %s" % what)


def _reply_item(r: Any, it: ReplyItem) -> None:
    item = enc(json.dumps(it.item))
    _check(lib.dexa_model_reply_add_item(r, item, len(item)), "item")
    if it.text:
        t = enc(it.text)
        _check(lib.dexa_model_reply_add_text(r, t, len(t)), "text")
    if it.reasoning:
        t = enc(it.reasoning)
        _check(lib.dexa_model_reply_add_reasoning(r, t, len(t)), "reasoning")
    for c in it.tool_calls:
        args = enc(json.dumps(dict(c.arguments)))
        _check(lib.dexa_model_reply_add_tool_call(r, enc(c.call_id), enc(c.name), args, len(args)),
               "tool call %s" % c.call_id)
        effect = _effect(c.effect)
        approval = -1 if c.approval is None else int(bool(c.approval))
        if effect or approval != -1:
            _check(lib.dexa_model_reply_set_tool_policy(r, enc(c.call_id), effect, approval),
                   "tool policy of %s" % c.call_id)


def _apply(r: Any, reply: Union[ModelReply, Mapping[str, Any]]) -> None:
    """Writes reply into the library's reply (on the worker thread)."""
    if isinstance(reply, Mapping):
        reply = ModelReply(**reply)
    if not isinstance(reply, ModelReply):
        raise TypeError("a model must return a ModelReply or a mapping, not %r" % (reply,))
    items = reply.items
    if items is None:
        calls = list(reply.tool_calls)
        item: Dict[str, Any] = {"type": "message", "role": "assistant", "content": reply.text}
        if calls:
            item["tool_calls"] = [{"id": c.call_id, "name": c.name, "arguments": dict(c.arguments)}
                                  for c in calls]
        items = [ReplyItem(item, reply.text, reply.reasoning, calls)]
    for it in items:
        _reply_item(r, it)
    if reply.usage is not None:
        u = reply.usage
        cu = ffi.new("dexa_model_usage *")
        lib.dexa_model_usage_init(cu, ffi.sizeof("dexa_model_usage"))
        cu.input_tokens, cu.output_tokens = u.input_tokens, u.output_tokens
        cu.cached_input_tokens, cu.cache_write_tokens = u.cached_input_tokens, u.cache_write_tokens
        cu.reasoning_tokens = u.reasoning_tokens
        cu.cost_usd = -1.0 if u.cost_usd is None else float(u.cost_usd)
        _check(lib.dexa_model_reply_set_token_usage(r, cu), "usage")
    if reply.finish_reason is not None:
        if reply.finish_reason not in _FINISH:
            raise ValueError("finish_reason must be one of %s" % ", ".join(_FINISH))
        pr = enc(reply.provider_finish_reason) if reply.provider_finish_reason else ffi.NULL
        _check(lib.dexa_model_reply_set_finish_reason(r, enc(reply.finish_reason), pr),
               "finish reason")
    if reply.state is not _UNSET:
        st = enc(json.dumps(reply.state)) if reply.state is not None else None
        _check(lib.dexa_model_reply_set_harness_state(r, st if st else ffi.NULL,
                                                      len(st) if st else 0), "state")
    for e in reply.state_entries:
        t = enc(json.dumps(e))
        _check(lib.dexa_model_reply_add_harness_entry(r, t, len(t)), "state entry")
    for c in reply.framework_tool_calls:
        out = c.get("output", "")
        if out is None:
            out = ""
        elif not isinstance(out, str):
            out = json.dumps(out)
        t = enc(json.dumps({"call_id": c["call_id"], "name": c["name"],
                            "arguments": c.get("arguments", {}),
                            "status": c.get("status", "ok"), "output": out}))
        _check(lib.dexa_model_reply_add_framework_tool_call(r, t, len(t)), "framework tool call")


async def _with_stop(coro: Any, call: _Call) -> Any:
    """Runs coro in a private loop on the worker thread, cancelling it when
    the turn is stopped."""
    task = asyncio.ensure_future(coro)
    while not task.done():
        await asyncio.wait([task], timeout=_POLL)
        if not task.done() and call.poll_stop():
            task.cancel()
    return await task


def _wait_on_loop(coro: Any, loop: asyncio.AbstractEventLoop, call: _Call) -> Any:
    """Runs coro on loop (another thread) while this worker thread runs what
    it queues and watches for a stop."""
    fut = asyncio.run_coroutine_threadsafe(coro, loop)
    while not fut.done():
        call.drain(_POLL)
        if not fut.done() and call.poll_stop():
            fut.cancel()
    call.drain(0)
    return fut.result()


class _Host:
    """What the library calls back with: the functions and their agent."""

    def __init__(self, run: Callable[..., Any], summarize: Optional[Callable[..., Any]],
                 harness: bool) -> None:
        self.run = run
        self.summarize = summarize
        self.harness = harness
        self.agent: Any = None  # set by Agent: async functions run on its loop

    def call(self, which: int, req: Any, reply: Any) -> int:
        call = _Call(req)
        fn = self.summarize if which == 1 else self.run
        try:
            result = fn(ModelRequest(call, self.harness and which == 0))  # type: ignore[misc]
            if inspect.isawaitable(result):
                loop = getattr(self.agent, "_async_loop", None)
                if loop is not None and loop.is_running() and not loop.is_closed():
                    result = _wait_on_loop(result, loop, call)
                else:
                    result = asyncio.run(_with_stop(result, call))
            call.over = True
            _apply(reply, result)
            return 0
        except BaseException as e:  # noqa: BLE001 - the library never sees a Python exception
            call.over = True
            msg = enc("%s: %s" % (type(e).__name__, e))
            lib.dexa_model_reply_set_error(reply, msg, int(getattr(e, "retry_after_ms", 0) or 0))
            return error_code(e)


def _onerror(exc: Any, value: Any, tb: Any) -> None:
    return None


@ffi.callback("int(void *, const dexa_model_request *, dexa_model_reply *)",
              error=-305, onerror=_onerror)
def _run_trampoline(user: Any, req: Any, reply: Any) -> int:
    return ffi.from_handle(user).call(0, req, reply)


@ffi.callback("int(void *, const dexa_model_request *, dexa_model_reply *)",
              error=-305, onerror=_onerror)
def _summarize_trampoline(user: Any, req: Any, reply: Any) -> int:
    return ffi.from_handle(user).call(1, req, reply)


def _new_model(name: str, host: _Host, flags: int = 0) -> Any:
    """The library model of host, and the handle that keeps host alive."""
    handle = ffi.new_handle(host)
    out = ffi.new("dexa_model **")
    if host.harness:
        vt = ffi.new("dexa_harness_vtable *")
        lib.dexa_harness_vtable_init(vt, ffi.sizeof("dexa_harness_vtable"))
        vt.flags = flags
        vt.run_segment = _run_trampoline
        if host.summarize is not None:
            vt.summarize = _summarize_trampoline
        rc = lib.dexa_harness_new(out, enc(name), vt, handle)
    else:
        vt = ffi.new("dexa_model_vtable *")
        lib.dexa_model_vtable_init(vt, ffi.sizeof("dexa_model_vtable"))
        vt.generate = _run_trampoline
        rc = lib.dexa_model_new(out, enc(name), vt, handle)
    if rc != 0:
        raise error_for(rc, "model %r" % name)
    return out[0], handle
