"""SIGTERM ends a run the way SIGINT (Ctrl-C) does, so a run stopped by a scheduler, ``kill`` or a container
runtime closes as cleanly as one that ends by itself.

:func:`run_main` runs the run's coroutine in an event loop of its own (as :func:`asyncio.run`) with one SIGTERM
handler: the first SIGTERM cancels the main task, as ``asyncio.run``'s own SIGINT handler does, so every
``finally`` on the run path runs (the calls in flight are cancelled, the backends are closed: Gemini's context
caches deleted or named, the Ray replicas and the Ray instance ended, the score files written), and the run
then ends with :class:`Terminated`; a second SIGTERM raises it at once. The command line turns
:class:`Terminated` into exit 143 with the same message as Ctrl-C's exit 130 (:mod:`mtvbench.cli.common`).
Steps that block the event loop (joining a Ray cluster) see it through :func:`interruptible`.
``kill -9`` cannot be handled by any process: what the run made on a provider's server waits for its TTL,
and the next run in the same directory deletes it (:mod:`mtvbench.run.store`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class Terminated(KeyboardInterrupt):
    """The process was sent SIGTERM: it stops as on Ctrl-C (exit 143 instead of 130)."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated


def run_main(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` where SIGTERM takes SIGINT's path (see the module doc). Outside the main thread
    (where no signal handler can be set) it is ``asyncio.run``."""
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(coro)
    box: dict[str, Any] = {}
    hits: list[int] = []

    async def main() -> T:
        box["task"], box["loop"] = asyncio.current_task(), asyncio.get_running_loop()
        return await coro

    def on_term(signum: int, frame: Any) -> None:
        hits.append(signum)
        task = box.get("task")
        if len(hits) > 1 or task is None or task.done():
            raise Terminated
        task.cancel()
        box["loop"].call_soon_threadsafe(lambda: None)  # wake the loop if it waits for I/O

    old = signal.signal(signal.SIGTERM, on_term)
    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if hits:
            raise Terminated from None
        raise
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT raises :class:`KeyboardInterrupt` and SIGTERM :class:`Terminated` in a step that blocks the event
    loop (joining a Ray cluster, starting replicas): the handlers of :func:`run_main` and ``asyncio.run`` only
    cancel the main task, which such a step never sees."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old_int, old_term = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    if old_int not in (None, signal.SIG_IGN):
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if old_term not in (None, signal.SIG_IGN):
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        if old_int not in (None, signal.SIG_IGN):
            signal.signal(signal.SIGINT, old_int)
        if old_term not in (None, signal.SIG_IGN):
            signal.signal(signal.SIGTERM, old_term)


__all__ = ["Terminated", "interruptible", "run_main"]
