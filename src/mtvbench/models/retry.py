"""One retry policy for every API backend: exponential backoff with full jitter,
``Retry-After`` honoured, bounded attempts."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


class RetryableError(Exception):
    """A transient failure (429, 5xx, timeout, connection). ``retry_after`` in seconds."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class FatalError(Exception):
    """A failure that another attempt will not fix (bad request, auth, unknown model)."""


@dataclass
class RetryPolicy:
    max_retries: int = 6
    base_s: float = 1.0
    cap_s: float = 60.0
    #: an upper bound on any server-requested wait, so a bad header cannot stall a run
    max_retry_after_s: float = 300.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = min(self.cap_s, self.base_s * (2 ** attempt)) * random.uniform(0.5, 1.0)
        if retry_after is not None:
            return max(min(retry_after, self.max_retry_after_s), backoff * 0.1)
        return backoff


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds; HTTP dates are ignored)."""
    if not headers:
        return None
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(key)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            continue
    return None


async def with_retries(fn: Callable[[], Awaitable[T]], policy: RetryPolicy) -> tuple[T, int]:
    """Call ``fn`` until it succeeds; return (result, attempts). Re-raises the last error."""
    attempt = 0
    while True:
        try:
            return await fn(), attempt + 1
        except RetryableError as e:
            if attempt >= policy.max_retries:
                raise
            await asyncio.sleep(policy.delay(attempt, e.retry_after))
            attempt += 1
