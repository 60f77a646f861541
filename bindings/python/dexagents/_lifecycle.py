"""The interpreter's exit: open runtimes are closed with a bounded wait, so a
tool that blocks never keeps the process from exiting.

At exit (atexit, after non-daemon threads were joined) every open runtime is
closed at once on its own daemon thread; the exit waits for them at most the
longest ``exit_timeout`` of those runtimes, then goes on. A Step whose tool
was still running is resumed by the next process on the same store, like
after a crash (a single-attempt write is then recorded as unknown_outcome).
Tool calls that start after the exit began get an error result saying so,
without running.
"""
from __future__ import annotations

import atexit
import threading
import time
import weakref
from typing import Any, Callable, List

_exiting = threading.Event()
_open: "weakref.WeakSet[Any]" = weakref.WeakSet()
_open_lock = threading.Lock()


def exiting() -> bool:
    """True once the interpreter began to exit."""
    return _exiting.is_set()


def register(runtime: Any) -> None:
    """Remembers an open runtime (weakly) for the exit."""
    with _open_lock:
        _open.add(runtime)


def unregister(runtime: Any) -> None:
    """Forgets a runtime that was closed."""
    with _open_lock:
        _open.discard(runtime)


def close_in_background(free: Callable[[], None], name: str) -> threading.Thread:
    """Runs ``free`` (a blocking close) on a new daemon thread and returns it:
    a daemon thread never holds up the interpreter's exit."""
    t = threading.Thread(target=free, name=name, daemon=True)
    t.start()
    return t


@atexit.register
def _close_open_runtimes() -> None:
    _exiting.set()
    with _open_lock:
        runtimes = list(_open)
    pending: List[threading.Thread] = []
    deadline = 0.0
    for rt in runtimes:
        try:
            t = rt._close_async()
        except Exception:  # noqa: BLE001 - the exit goes on whatever happens
            continue
        if t is not None:
            pending.append(t)
            deadline = max(deadline, float(rt.exit_timeout))
    end = time.monotonic() + deadline
    for t in pending:
        t.join(max(0.0, end - time.monotonic()))
