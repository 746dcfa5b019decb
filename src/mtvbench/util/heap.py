"""The garbage collector during a long run of many small calls.

Python's full collections walk every object that can hold a reference, and while they do, the event loop
(and every call in flight with it) stands still: with the modules, a dataset and a plan in memory, one
full pass takes up to hundreds of ms on a busy machine, several times per run. The rule: what exists
when the calls start lives as long as they run, so it is moved out of the collector's reach for that
time (:func:`gc.freeze`) and handed back after (:func:`gc.unfreeze`); what the calls make is collected
as usual.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def long_lived() -> Iterator[None]:
    """The objects that exist now are left out of the collector's passes until the block ends."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No collection at all inside the block (what it lets go is freed by reference counting; a reference cycle
    waits until the block ends): for a block that makes and keeps hundreds of thousands of records, where every
    pass the collector makes walks all of them again and finds nothing to free."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


__all__ = ["collector_paused", "long_lived"]
