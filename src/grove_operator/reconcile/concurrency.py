"""Running many writes of one reconcile concurrently, a bounded number at a time.

Why: a 500-replica PodCliqueSet means a thousand writes; one at a time the reconcile waits for each round trip in
turn, all at once it floods the API server and the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import TypeVar

__all__ = ["WRITE_CONCURRENCY", "bounded", "bounded_settled"]

T = TypeVar("T")
WRITE_CONCURRENCY = 32


async def bounded(calls: Iterable[Callable[[], Awaitable[T]]], limit: int = WRITE_CONCURRENCY) -> list[T]:
    """Run `calls` concurrently, at most `limit` at a time; results in call order.

    Calls are factories, so nothing is created that a cancellation could leave un-awaited.
    """
    semaphore = asyncio.Semaphore(limit)

    async def one(call: Callable[[], Awaitable[T]]) -> T:
        async with semaphore:
            return await call()

    return list(await asyncio.gather(*(one(c) for c in calls)))


async def bounded_settled(
    calls: Iterable[Callable[[], Awaitable[T]]], limit: int = WRITE_CONCURRENCY
) -> list[T | Exception]:
    """`bounded`, but every call runs to its end and a failure is returned in its place instead of raised: for
    writes whose failures must each be accounted for (expectations given back), not just the first."""

    async def caught(call: Callable[[], Awaitable[T]]) -> T | Exception:
        try:
            return await call()
        except Exception as exc:  # returned, not swallowed: the caller accounts for it and raises
            return exc

    return await bounded([partial(caught, c) for c in calls], limit)
