"""Wire-level helpers for :mod:`grove_runtime.client`: retry policy, JSON bodies and watch-line parsing.

Kept apart so the client module reads as the list of verbs; everything here is private to the client.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import tenacity

from grove_runtime import errors
from grove_runtime._json import loads
from grove_runtime.clock import Clock

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently to retry retryable failures (exponential with jitter, or Retry-After)."""

    attempts: int = 6
    initial: float = 0.2
    maximum: float = 10.0
    max_retry_after: float = 60.0


def retry_delay(policy: RetryPolicy, failed: int, exc: BaseException | None) -> float:
    """Seconds to wait after `failed` failed attempts, the last failing with `exc`: its Retry-After (capped), else
    exponential backoff with jitter (tenacity's `wait_exponential_jitter`)."""
    if isinstance(exc, errors.ApiError) and exc.retry_after is not None:
        return min(exc.retry_after, policy.max_retry_after)
    exponent = min(failed - 1, 62)
    return min(policy.initial * 2.0**exponent + random.uniform(0.0, policy.initial), policy.maximum)


def _wait(policy: RetryPolicy, failed_before: int) -> tenacity.wait.wait_base:
    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        return retry_delay(policy, state.attempt_number + failed_before, exc)

    return _FuncWait(wait)


class _FuncWait(tenacity.wait.wait_base):
    def __init__(self, fn: Any) -> None:
        self._fn = fn

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        return float(self._fn(retry_state))


def retrying(policy: RetryPolicy, clock: Clock, *, failed_before: int = 0) -> tenacity.AsyncRetrying:
    """Retry 429 (honouring Retry-After), 5xx and lost connections with exponential jitter, sleeping on ``clock``;
    `failed_before` attempts already failed outside it (they count against the policy's attempts and backoff)."""
    return tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception(errors.is_retryable),
        stop=tenacity.stop_after_attempt(max(policy.attempts - failed_before, 1)),
        wait=_wait(policy, failed_before),
        sleep=clock.sleep,
        reraise=True,
    )


async def read_json(resp: aiohttp.ClientResponse) -> Obj:
    """Read a response body: the parsed JSON object, or the mapped :class:`~grove_runtime.errors.ApiError`."""
    raw = await resp.read()
    if resp.status >= 300 or resp.status < 200:
        raise errors.error_for_status(resp.status, raw, retry_after=resp.headers.get("Retry-After"))
    if not raw:
        return {}
    parsed = loads(raw)
    return parsed if isinstance(parsed, dict) else {"items": parsed}


async def watch_events(resp: aiohttp.ClientResponse) -> AsyncIterator[Obj]:
    """Parse newline-delimited watch events; raise the mapped error for an ``ERROR`` event."""
    while True:
        try:
            line = await resp.content.readline()
        except (TimeoutError, aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
            raise errors.ConnectionLost(f"watch stream broken: {exc!r}") from exc
        if not line:
            return
        line = line.strip()
        if not line:
            continue
        try:
            event = loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "ERROR":
            status = event.get("object") or {}
            code = int(status.get("code") or 500) if isinstance(status, dict) else 500
            raise errors.error_for_status(code, status if isinstance(status, dict) else None)
        yield event
