"""Slow-start batches (1, 2, 4, ...) of concurrent calls that stop at the first failed batch (upstream's
`utils.RunConcurrentlyWithSlowStart`).

Why: a PodClique may need hundreds of pods created or ungated. One by one, the reconcile waits for each round
trip in turn; all at once, a request the API server will refuse (a quota, a webhook, a bad template) is refused
hundreds of times. Doubling batches get both: a failing request costs one call, a working one reaches full
concurrency after a few round trips.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["SlowStartResult", "run_slow_start"]

T = TypeVar("T")


@dataclass
class SlowStartResult(Generic[T]):
    """What a slow-start run did: results of the calls that succeeded, errors of those that failed, and how many
    calls were never started because an earlier batch failed."""

    succeeded: list[T] = field(default_factory=list)
    failed: list[BaseException] = field(default_factory=list)
    skipped: int = 0


async def run_slow_start(
    calls: Sequence[Callable[[], Awaitable[T]]], *, initial_batch: int = 1, max_batch: int = 500
) -> SlowStartResult[T]:
    """Run `calls` in doubling concurrent batches; after a batch with a failure, start no more.

    Calls are factories, so nothing is created that is never awaited. Cancellation of the caller propagates (a
    cancelled call is re-raised after its batch has finished).
    """
    out: SlowStartResult[T] = SlowStartResult()
    batch = max(1, initial_batch)
    start = 0
    while start < len(calls):
        chunk = calls[start : start + batch]
        start += len(chunk)
        results = await asyncio.gather(*(call() for call in chunk), return_exceptions=True)
        for result in results:
            if isinstance(result, asyncio.CancelledError):
                raise result
            if isinstance(result, BaseException):
                out.failed.append(result)
            else:
                out.succeeded.append(result)
        if out.failed:
            out.skipped = len(calls) - start
            break
        batch = min(batch * 2, max_batch)
    return out
