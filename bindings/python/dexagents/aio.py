"""asyncio: :class:`AsyncRuntime`, the embedded runtime with awaitable
operations, ``async for`` over events and ``async def`` tools running on the
event loop.

Each blocking library call runs on a short-lived thread of its own, never on
the loop's default executor, so any number of waiting event readers leave
``run_in_executor`` and ``asyncio.to_thread`` free. Cancelling an awaiting
task returns at once; the library call behind it ends within a second.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any, AsyncIterator, Callable, List, Mapping, Optional, Tuple, TypeVar

from .agent import Agent
from .host import Result, Task
from .runtime import Runtime
from .types import Event, MessagePage, PlanExecution, SendResult, SessionPage, Snapshot

T = TypeVar("T")


async def run_blocking(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Runs ``fn(*args, **kwargs)`` on a new daemon thread and awaits its
    result (or exception) without blocking the event loop."""
    loop = asyncio.get_running_loop()
    fut: "asyncio.Future[T]" = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if fut.cancelled():
            return
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)

    def run() -> None:
        value: Any
        try:
            value = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - handed to the awaiting task
            ok, value = False, e
        else:
            ok = True
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:  # the loop was closed meanwhile
            pass

    threading.Thread(target=run, name="dexagents-call", daemon=True).start()
    return await fut


class AsyncRuntime:
    """The embedded runtime for asyncio: the same operations as
    :class:`~dexagents.Runtime`, each awaitable, and :meth:`events` as an
    async iterator. The agent's ``async def`` tools run on the event loop
    this runtime is used from (its worker threads wait for them); plain
    tools run on the worker threads. Use ``async with`` or ``await
    close()``."""

    def __init__(self, agent: Agent, store: str = ":memory:", workers: int = 2,
                 **options: Any) -> None:
        """Opens the store and starts the workers like
        :class:`~dexagents.Runtime` (same options)."""
        self.runtime = Runtime(agent, store, workers, **options)
        self.agent = agent
        self._bind_loop()

    def _bind_loop(self) -> None:
        try:
            self.agent._async_loop = asyncio.get_running_loop()
        except RuntimeError:  # made outside a coroutine: bound on first use
            pass

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        self.agent._async_loop = asyncio.get_running_loop()
        return await run_blocking(fn, *args, **kwargs)

    async def __aenter__(self) -> "AsyncRuntime":
        self._bind_loop()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self, timeout: Optional[float] = None) -> None:
        """Closes the runtime (see :meth:`Runtime.close
        <dexagents.Runtime.close>`); with ``timeout``, raises
        :class:`~dexagents.TimedOutError` after it and goes on closing in the
        background."""
        await self._run(self.runtime.close, timeout)

    @property
    def closed(self) -> bool:
        """True once closing began."""
        return self.runtime.closed

    async def start_session(self, session_id: Optional[str] = None, model: Optional[str] = None,
                            settings: Optional[Mapping[str, Any]] = None) -> str:
        """See :meth:`Runtime.start_session <dexagents.Runtime.start_session>`."""
        return await self._run(self.runtime.start_session, session_id, model, settings)

    async def call(self, session_id: str, rpc: str,
                   payload: Optional[Mapping[str, Any]] = None) -> Any:
        """See :meth:`Runtime.call <dexagents.Runtime.call>`."""
        return await self._run(self.runtime.call, session_id, rpc, payload)

    async def send(self, session_id: str, text: str, plan_mode: bool = False) -> SendResult:
        """See :meth:`Runtime.send <dexagents.Runtime.send>`."""
        return await self._run(self.runtime.send, session_id, text, plan_mode)

    async def snapshot(self, session_id: str) -> Snapshot:
        """See :meth:`Runtime.snapshot <dexagents.Runtime.snapshot>`."""
        return await self._run(self.runtime.snapshot, session_id)

    async def messages(self, session_id: str, before_seq: Optional[int] = None,
                       limit: Optional[int] = None) -> MessagePage:
        """See :meth:`Runtime.messages <dexagents.Runtime.messages>`."""
        return await self._run(self.runtime.messages, session_id, before_seq, limit)

    async def delete(self, session_id: str, message_id: str) -> Any:
        """See :meth:`Runtime.delete <dexagents.Runtime.delete>`."""
        return await self._run(self.runtime.delete, session_id, message_id)

    async def steer(self, session_id: str, message_id: str) -> Any:
        """See :meth:`Runtime.steer <dexagents.Runtime.steer>`."""
        return await self._run(self.runtime.steer, session_id, message_id)

    async def stop_turn(self, session_id: str) -> Any:
        """See :meth:`Runtime.stop_turn <dexagents.Runtime.stop_turn>`."""
        return await self._run(self.runtime.stop_turn, session_id)

    cancel_turn = stop_turn

    async def end_session(self, session_id: str, reason: Optional[str] = None) -> Any:
        """See :meth:`Runtime.end_session <dexagents.Runtime.end_session>`."""
        return await self._run(self.runtime.end_session, session_id, reason)

    async def approve(self, session_id: str, call_id: str, note: Optional[str] = None) -> Any:
        """See :meth:`Runtime.approve <dexagents.Runtime.approve>`."""
        return await self._run(self.runtime.approve, session_id, call_id, note)

    async def reject(self, session_id: str, call_id: str, note: Optional[str] = None) -> Any:
        """See :meth:`Runtime.reject <dexagents.Runtime.reject>`."""
        return await self._run(self.runtime.reject, session_id, call_id, note)

    async def answer(self, session_id: str, call_id: str, answer: str) -> Any:
        """See :meth:`Runtime.answer <dexagents.Runtime.answer>`."""
        return await self._run(self.runtime.answer, session_id, call_id, answer)

    async def execute_plan(self, session_id: str, revision: int) -> PlanExecution:
        """See :meth:`Runtime.execute_plan <dexagents.Runtime.execute_plan>`."""
        return await self._run(self.runtime.execute_plan, session_id, revision)

    async def list_sessions(self, after: Optional[str] = None, limit: int = 100) -> SessionPage:
        """See :meth:`Runtime.list_sessions <dexagents.Runtime.list_sessions>`."""
        return await self._run(self.runtime.list_sessions, after, limit)

    async def read_events(self, session_id: str, resume_token: str = "", max_events: int = 100,
                          timeout: Optional[float] = 0.0) -> Tuple[List[Event], str]:
        """See :meth:`Runtime.read_events <dexagents.Runtime.read_events>`."""
        return await self._run(self.runtime.read_events, session_id, resume_token, max_events,
                               timeout)

    async def events(self, session_id: str, resume_token: str = "", *, follow: bool = False,
                     timeout: Optional[float] = None,
                     live: bool = True) -> AsyncIterator[Event]:
        """``async for`` over the session's events, as :meth:`Runtime.events
        <dexagents.Runtime.events>`: without ``follow`` the events there are
        now; with it, more as they come (forever, or until none came for
        ``timeout`` seconds)."""
        token = resume_token or ""
        wait = timeout if follow else 0.0
        remaining = wait
        while True:
            # A long wait in slices of a second: a cancelled reader's
            # thread ends soon after.
            chunk = 1.0 if remaining is None else min(remaining, 1.0)
            evs, nxt = await self._run(self.runtime.read_events, session_id, token, 100, chunk)
            token = nxt or token
            for ev in evs:
                if live or not ev.live:
                    yield ev
            if evs:
                remaining = wait
                continue
            if remaining is not None:
                remaining -= chunk
                if remaining <= 0:
                    return

    async def wait_idle(self, session_id: str, timeout: Optional[float] = None) -> None:
        """See :meth:`Runtime.wait_idle <dexagents.Runtime.wait_idle>`."""
        await self._run(self.runtime.wait_idle, session_id, timeout)

    async def run_ready(self) -> int:
        """See :meth:`Runtime.run_ready <dexagents.Runtime.run_ready>`."""
        return await self._run(self.runtime.run_ready)

    async def poll(self, timeout: Optional[float] = 0.0) -> Optional[Task]:
        """See :meth:`Runtime.poll <dexagents.Runtime.poll>`."""
        return await self._run(self.runtime.poll, timeout)

    async def dispatch(self, task: Task) -> Result:
        """Runs a polled task's call on a thread of its own (async tools run
        on this loop) and returns its result."""
        return await self._run(task.dispatch)

    async def complete(self, task: Task, result: Optional[Result]) -> None:
        """See :meth:`Runtime.complete <dexagents.Runtime.complete>`."""
        await self._run(self.runtime.complete, task, result)

    async def abandon(self, task: Task) -> None:
        """See :meth:`Runtime.abandon <dexagents.Runtime.abandon>`."""
        await self._run(self.runtime.abandon, task)
