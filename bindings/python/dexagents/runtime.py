"""The embedded runtime (dexa_runtime_new(3)): an agent's sessions on a
durable store, run by worker threads or driven by the host (poll, dispatch,
complete). Every client operation of the session flow is a method."""
from __future__ import annotations

import json
import threading
import time
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

from . import _lifecycle
from ._native import enc, ffi, lib, s, take
from .agent import Agent
from .errors import OK, RuntimeClosedError, TimedOutError, error_for
from .host import Result, Task
from .types import (Event, MessagePage, PlanExecution, SendResult, SessionPage, Snapshot)

DEXA_E_TIMEOUT = -202
_FOREVER_MS = 1 << 62
# How long one blocking C call may last. On the main thread it bounds how
# late Ctrl-C is seen (a signal handler runs only between Python bytecodes);
# on other threads how long close() waits for an operation to notice it.
_SLICE_MAIN_MS = 200
_SLICE_OTHER_MS = 1000


def _ms(timeout: Optional[float], timeout_ms: Optional[int] = None) -> int:
    """A timeout in seconds (None: forever), or the deprecated milliseconds,
    as ms."""
    if timeout_ms is not None:
        warnings.warn("timeout_ms= is deprecated: pass timeout= in seconds",
                      DeprecationWarning, stacklevel=3)
        return max(0, int(timeout_ms))
    if timeout is None:
        return _FOREVER_MS
    return max(0, int(timeout * 1000))


class _Guard:
    """Keeps the C runtime alive while calls use it: close() waits for the
    calls in flight (each at most one slice long) before freeing it."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.cv = threading.Condition()
        self.busy = 0
        self.closing = False
        self.closer: Optional[threading.Thread] = None

    @contextmanager
    def use(self) -> Iterator[Any]:
        with self.cv:
            if self.closing:
                raise RuntimeClosedError(-101, "the runtime is closed")
            self.busy += 1
        try:
            yield self.handle
        finally:
            with self.cv:
                self.busy -= 1
                if self.busy == 0:
                    self.cv.notify_all()

    def wait_idle(self) -> None:
        with self.cv:
            while self.busy:
                self.cv.wait()


def _log_onerror(exc: Any, value: Any, tb: Any) -> None:
    return None


@ffi.callback("void(void *, int32_t, const char *)", onerror=_log_onerror)
def _log_trampoline(user: Any, level: int, message: Any) -> None:
    ffi.from_handle(user)(int(level), ffi.string(message).decode("utf-8", "replace"))


class Runtime:
    """The embedded runtime of ``agent`` on ``store`` (":memory:", a SQLite
    path, "sqlite:PATH"), with ``workers`` worker threads (0: none; drive it
    with :meth:`run_ready` or :meth:`poll`).

    Options (None keeps the library's default, see
    dexa_runtime_options_init(3)): ``lease_ms`` (10000), ``worker_id``
    ("<host>-<pid>"), ``events_retained`` (10000 per session),
    ``sqlite_synchronous`` ("full" or "normal"), ``session_cache_bytes``
    (64 MiB; 0 turns the cache off), ``session_idle_timeout_ms`` (30 days;
    0 never ends an idle session), ``session_retention_ms`` (7 days; 0
    keeps ended sessions), ``sweep_interval_ms`` (60000; 0: no automatic
    sweep). ``log``: a callable ``log(level,
    message)`` that receives the errors the runtime handles itself (level
    1 error, 2 warning, 3 info, 4 debug; see dexa_runtime_new(3)); it is
    called from the runtime's threads, must return quickly, must not call
    this runtime, and its exceptions are ignored. ``exit_timeout`` bounds
    how long the interpreter's exit waits for this runtime's running tools
    (seconds).

    Failures raise the :class:`~dexagents.DexaError` subclass of their code,
    with the error document's message. Blocking calls release the GIL, so
    worker threads run Python tools meanwhile, and on the main thread they
    wake every 200 ms, so Ctrl-C interrupts them. Close the runtime (or use
    ``with``) when done; one left open is closed at exit."""

    def __init__(self, agent: Agent, store: str = ":memory:", workers: int = 2, *,
                 lease_ms: Optional[int] = None, worker_id: Optional[str] = None,
                 events_retained: Optional[int] = None,
                 sqlite_synchronous: Optional[str] = None,
                 session_cache_bytes: Optional[int] = None,
                 session_idle_timeout_ms: Optional[int] = None,
                 session_retention_ms: Optional[int] = None,
                 sweep_interval_ms: Optional[int] = None,
                 log: Optional[Callable[[int, str], Any]] = None,
                 exit_timeout: float = 5.0) -> None:
        """Opens the store (creating it when missing) and starts ``workers``
        worker threads."""
        self.agent = agent  # the agent (and its tools) outlive the C runtime
        self.exit_timeout = float(exit_timeout)
        o = ffi.new("dexa_runtime_options *")
        self._check(lib.dexa_runtime_options_init(o, ffi.sizeof("dexa_runtime_options")))
        keep = []

        def cstr(v: str) -> Any:
            c = ffi.new("char[]", enc(v))
            keep.append(c)
            return c
        o.store = cstr(store)
        if sqlite_synchronous is not None:
            o.sqlite_synchronous = cstr(sqlite_synchronous)
        if worker_id is not None:
            o.worker_id = cstr(worker_id)
        if lease_ms is not None:
            o.lease_ms = lease_ms
        if events_retained is not None:
            o.events_retained = events_retained
        if session_cache_bytes is not None:
            o.session_cache_bytes = session_cache_bytes
        if session_idle_timeout_ms is not None:
            o.session_idle_timeout_ms = session_idle_timeout_ms
        if session_retention_ms is not None:
            o.session_retention_ms = session_retention_ms
        if sweep_interval_ms is not None:
            o.sweep_interval_ms = sweep_interval_ms
        # Kept as long as this object: the C runtime may log until it is freed.
        self._log_handle = None
        if log is not None:
            if not callable(log):
                raise TypeError("log must be callable(level, message)")
            self._log_handle = ffi.new_handle(log)
            o.log = _log_trampoline
            o.log_user_data = self._log_handle
        out = ffi.new("dexa_runtime **")
        err = ffi.new("char[512]")
        self._check(lib.dexa_runtime_new(out, agent._h, o, err, 512), s(err))
        self._guard = _Guard(out[0])
        _lifecycle.register(self)
        if workers:
            self.start(workers)

    # ---- lifecycle -------------------------------------------------------

    def start(self, workers: int = 2) -> None:
        """Starts ``workers`` worker threads (1..256)."""
        with self._guard.use() as h:
            self._rc(h, lib.dexa_runtime_start(h, workers))

    def stop(self) -> None:
        """Stops the worker threads, letting each finish its current Step."""
        with self._guard.use() as h:
            self._rc(h, lib.dexa_runtime_stop(h))

    @property
    def closed(self) -> bool:
        """True once :meth:`close` began."""
        return self._guard.closing

    def _close_async(self) -> Optional[threading.Thread]:
        g = self._guard
        with g.cv:
            if g.closing:
                return g.closer
            g.closing = True
            agent = self.agent  # alive until the C runtime is gone

            def free() -> None:
                g.wait_idle()
                lib.dexa_runtime_free(g.handle)  # joins the workers (GIL released)
                _lifecycle.unregister(self)
                del agent_ref[:]
            agent_ref = [agent, self._log_handle]  # both outlive the C runtime
            g.closer = _lifecycle.close_in_background(free, "dexagents-close")
            return g.closer

    def close(self, timeout: Optional[float] = None) -> None:
        """Closes the runtime: new calls raise
        :class:`~dexagents.RuntimeClosedError`, waits in progress end, the
        worker threads finish their current Steps, and the store is closed.
        With ``timeout`` (seconds), waits at most that long and then raises
        :class:`~dexagents.TimedOutError` while the close goes on in the
        background (a tool is still running: its Step is resumed by the next
        process, like after a crash). Calling it again waits again."""
        t = self._close_async()
        if t is None:
            return
        t.join(timeout)
        if t.is_alive():
            raise TimedOutError(DEXA_E_TIMEOUT, "the runtime did not close within %gs: a Step "
                                "(a tool) is still running; it closes in the background"
                                % (timeout or 0))

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._close_async()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass

    # ---- helpers ---------------------------------------------------------

    @staticmethod
    def _check(rc: int, message: str = "") -> None:
        if rc != OK:
            raise error_for(rc, message)

    @staticmethod
    def _rc(h: Any, rc: int) -> None:
        if rc != OK:
            raise error_for(rc, s(lib.dexa_runtime_errmsg(h)))

    @staticmethod
    def _doc(h: Any, rc: int, p: Any, n: Any) -> Any:
        text = take(p, n)
        doc = json.loads(text) if text else None
        if rc != OK:
            msg = ""
            if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
                msg = doc["error"].get("message", "")
            raise error_for(rc, msg or s(lib.dexa_runtime_errmsg(h)), doc)
        return doc

    def _blocking(self, call: Callable[[Any, int], Tuple[int, bool]], total_ms: int) -> int:
        """Runs ``call(handle, slice_ms) -> (rc, done)`` in slices until it is
        done or ``total_ms`` passed; returns the last rc."""
        main = threading.current_thread() is threading.main_thread()
        slice_ms = _SLICE_MAIN_MS if main else _SLICE_OTHER_MS
        deadline = time.monotonic() + total_ms / 1000.0
        while True:
            remaining = total_ms if total_ms >= _FOREVER_MS else \
                max(0, int((deadline - time.monotonic()) * 1000))
            chunk = min(remaining, slice_ms)
            with self._guard.use() as h:
                rc, done = call(h, chunk)
            if done or remaining <= chunk:
                return rc

    # ---- client operations -------------------------------------------------

    def start_session(self, session_id: Optional[str] = None, model: Optional[str] = None,
                      settings: Optional[Mapping[str, Any]] = None) -> str:
        """Starts a session and returns its id (the runtime picks
        "s-<32 hex>" when ``session_id`` is None). ``model`` names one of the
        agent's models (an unknown name gets the default)."""
        st = dict(settings or {})
        if model:
            st["model"] = model
        text = enc(json.dumps(st)) if st else ffi.NULL
        p, n = ffi.new("char **"), ffi.new("size_t *")
        with self._guard.use() as h:
            rc = lib.dexa_runtime_start_session(
                h, enc(session_id) if session_id else ffi.NULL, text,
                len(text) if st else 0, p, n)
            doc = self._doc(h, rc, p, n)
        return doc["session_id"] if doc else str(session_id)

    def call(self, session_id: str, rpc: str, payload: Optional[Mapping[str, Any]] = None) -> Any:
        """Runs the session RPC ``rpc`` with ``payload`` and returns its
        response document as the library wrote it (dexagents-flow(7))."""
        text = enc(json.dumps(payload if payload is not None else {}))
        p, n = ffi.new("char **"), ffi.new("size_t *")
        with self._guard.use() as h:
            rc = lib.dexa_runtime_call(h, enc(session_id), enc(rpc), text, len(text), p, n)
            return self._doc(h, rc, p, n)

    def send(self, session_id: str, text: str, plan_mode: bool = False) -> SendResult:
        """Sends a user message: it starts a turn, or waits in the queue while
        one runs. ``plan_mode`` makes it a planning turn."""
        payload: Dict[str, Any] = {"text": text}
        if plan_mode:
            payload["plan_mode"] = True
        return SendResult.from_json(self.call(session_id, "send_message", payload))

    def snapshot(self, session_id: str) -> Snapshot:
        """The durable view of the session (the truth; events are best
        effort)."""
        return Snapshot.from_json(self.call(session_id, "snapshot"))

    def messages(self, session_id: str, before_seq: Optional[int] = None,
                 limit: Optional[int] = None) -> MessagePage:
        """A page of older messages (oldest first) before ``before_seq``
        (limit 1..200, default 50)."""
        payload: Dict[str, Any] = {}
        if before_seq is not None:
            payload["before_seq"] = before_seq
        if limit is not None:
            payload["limit"] = limit
        return MessagePage.from_json(self.call(session_id, "list_agent_messages", payload))

    def delete(self, session_id: str, message_id: str) -> Any:
        """Deletes a queued message (:class:`~dexagents.NotFoundError` when it
        is not queued)."""
        return self.call(session_id, "delete_message", {"message_id": message_id})

    def steer(self, session_id: str, message_id: str) -> Any:
        """Steers a queued message: the running turn ends at its next safe
        Step boundary and a new one starts with every steered message."""
        return self.call(session_id, "steer", {"message_id": message_id})

    def stop_turn(self, session_id: str) -> Any:
        """Stop (cancel_turn): ends the running turn without a new one."""
        return self.call(session_id, "cancel_turn")

    cancel_turn = stop_turn

    def end_session(self, session_id: str, reason: Optional[str] = None) -> Any:
        """Ends the session for good (end_session): running Steps are
        cancelled and waits end; later changes raise
        :class:`~dexagents.SessionEndedError`, reads answer until the
        retention passes."""
        return self.call(session_id, "end_session", {} if reason is None else {"reason": reason})

    def _resolve(self, session_id: str, call_id: str, decision: str,
                 note: Optional[str]) -> Any:
        payload = {"call_id": call_id, "decision": decision}
        if note is not None:
            payload["note"] = note
        return self.call(session_id, "resolve_approval", payload)

    def approve(self, session_id: str, call_id: str, note: Optional[str] = None) -> Any:
        """Approves a call waiting for approval (with an optional note)."""
        return self._resolve(session_id, call_id, "approve", note)

    def reject(self, session_id: str, call_id: str, note: Optional[str] = None) -> Any:
        """Rejects a call waiting for approval; the note is the model's
        result."""
        return self._resolve(session_id, call_id, "reject", note)

    def answer(self, session_id: str, call_id: str, answer: str) -> Any:
        """Answers an ask_user question (one of its choices, when it has
        some)."""
        return self.call(session_id, "answer_question", {"call_id": call_id, "answer": answer})

    def execute_plan(self, session_id: str, revision: int) -> PlanExecution:
        """Runs the reviewed plan of ``revision``
        (:class:`~dexagents.StaleRevisionError` for another revision)."""
        return PlanExecution.from_json(self.call(session_id, "execute_plan",
                                                 {"revision": revision}))

    def list_sessions(self, after: Optional[str] = None, limit: int = 100) -> SessionPage:
        """Sessions, newest first; pass the page's ``next`` as ``after`` for
        the next page."""
        p, n = ffi.new("char **"), ffi.new("size_t *")
        with self._guard.use() as h:
            rc = lib.dexa_runtime_list_sessions(h, enc(after) if after else ffi.NULL, limit,
                                                p, n)
            return SessionPage.from_json(self._doc(h, rc, p, n))

    # ---- events ------------------------------------------------------------

    def read_events(self, session_id: str, resume_token: str = "", max_events: int = 100,
                    timeout: Optional[float] = 0.0, *,
                    timeout_ms: Optional[int] = None) -> Tuple[List[Event], str]:
        """One read: the events after ``resume_token`` ("" from the oldest
        retained), waiting up to ``timeout`` seconds (None: until one comes)
        for the first one, and the token to resume after the last one. An
        unknown token raises :class:`~dexagents.InvalidResumeTokenError`
        (reload the snapshot)."""
        total = _ms(timeout, timeout_ms)
        result: List[Any] = [[], resume_token or ""]

        def read(h: Any, ms: int) -> Tuple[int, bool]:
            p, n = ffi.new("char **"), ffi.new("size_t *")
            rc = lib.dexa_runtime_read_events(h, enc(session_id), enc(resume_token or ""),
                                              max_events, ms, p, n)
            doc = self._doc(h, rc, p, n)
            result[0] = [Event.parse(e["token"], e["event"], e.get("live", False))
                         for e in doc["events"]]
            result[1] = doc["token"]
            return rc, bool(result[0])
        self._blocking(read, total)
        return result[0], result[1]

    def events(self, session_id: str, resume_token: str = "", *, follow: bool = False,
               timeout: Optional[float] = None, live: bool = True,
               timeout_ms: Optional[int] = None) -> Iterator[Event]:
        """Iterates over the session's events after ``resume_token`` (""
        from the oldest retained); each :class:`~dexagents.Event` has
        ``.token`` to resume there. Without ``follow`` it yields the events
        there are now and stops, without waiting. With ``follow`` it waits for
        more: forever, or until none came for ``timeout`` seconds (leave the
        loop to stop earlier). ``live=False`` leaves out the live deltas."""
        token = resume_token or ""
        if timeout_ms is not None:
            warnings.warn("timeout_ms= is deprecated: pass timeout= in seconds",
                          DeprecationWarning, stacklevel=2)
            timeout = timeout_ms / 1000.0
        wait = timeout if follow else 0.0
        while True:
            evs, nxt = self.read_events(session_id, token, 100, wait)
            for ev in evs:
                if live or not ev.live:
                    yield ev
            if nxt:
                token = nxt
            if not evs:
                return

    # ---- driving -------------------------------------------------------------

    def wait_idle(self, session_id: str, timeout: Optional[float] = None, *,
                  timeout_ms: Optional[int] = None) -> None:
        """Waits until the session has no Step ready or running (it waits for
        a message, an approval, an answer or a timer); forever when
        ``timeout`` (seconds) is None, else raises
        :class:`~dexagents.TimedOutError` after it."""
        sid = enc(session_id)

        def wait(h: Any, ms: int) -> Tuple[int, bool]:
            rc = lib.dexa_runtime_wait_idle(h, sid, ms)
            return rc, rc != DEXA_E_TIMEOUT
        rc = self._blocking(wait, _ms(timeout, timeout_ms))
        if rc != OK:
            with self._guard.use() as h:
                self._rc(h, rc)

    def run_ready(self) -> int:
        """Runs ready Steps on this thread until none is ready now (timers in
        the future are not waited for); returns how many ran."""
        ran = ffi.new("int32_t *")
        with self._guard.use() as h:
            self._rc(h, lib.dexa_runtime_run_ready(h, ran))
        return int(ran[0])

    def poll(self, timeout: Optional[float] = 0.0) -> Optional[Task]:
        """Host-driven: claims one ready Step method, waiting up to
        ``timeout`` seconds (None: until one is ready), and returns it as a
        :class:`~dexagents.host.Task`, or None when none became ready.
        Dispatch it (``task.dispatch()``), then :meth:`complete` it."""
        total = _ms(timeout)
        out = ffi.new("dexa_task **")

        def poll(h: Any, ms: int) -> Tuple[int, bool]:
            rc = lib.dexa_runtime_poll(h, out, ms)
            return rc, rc != DEXA_E_TIMEOUT
        rc = self._blocking(poll, total)
        if rc == DEXA_E_TIMEOUT:
            return None
        with self._guard.use() as h:
            self._rc(h, rc)
        return Task(self, out[0])

    def complete(self, task: Task, result: Optional[Result]) -> None:
        """Applies ``result`` to the store in one transaction and releases
        the task (None: the attempt failed without a result, as after a
        crash). A failed result schedules a retry or the recovery Step.
        Raises :class:`~dexagents.TimedOutError` when the lease was lost (the
        result was dropped: another attempt owns the Step)."""
        with self._guard.use() as h:
            t = task._take()
            rc = lib.dexa_runtime_complete(h, t, result._handle() if result is not None
                                           else ffi.NULL)
            self._rc(h, rc)

    def abandon(self, task: Task) -> None:
        """Gives a claimed task back without a result: it is retried once its
        lease ends, as after a crash."""
        with self._guard.use() as h:
            lib.dexa_task_abandon(h, task._take())

    @property
    def errmsg(self) -> str:
        """The last error message of this runtime (any thread's)."""
        with self._guard.use() as h:
            return s(lib.dexa_runtime_errmsg(h))
