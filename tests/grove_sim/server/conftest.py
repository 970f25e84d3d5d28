"""Fixtures for the API-server tests: polling helpers (the namespace and Widget CRD fixtures live one level up)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

T = TypeVar("T")


async def eventually(probe: Callable[[], Awaitable[T | None]], *, attempts: int = 200, delay: float = 0.02) -> T:
    """Poll ``probe`` until it returns something truthy; fail the test if it never does."""
    for _ in range(attempts):
        value = await probe()
        if value:
            return value
        await asyncio.sleep(delay)
    raise AssertionError("condition never became true")


async def until(probe: Any, limit: float = 60.0) -> Any:
    """Poll an async probe until it returns something truthy (the limit only guards against a hang)."""
    deadline = asyncio.get_running_loop().time() + limit
    while not (value := await probe()):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.05)
    return value


@pytest.fixture
def poll() -> Callable[..., Awaitable[Any]]:
    """The ``eventually`` polling helper."""
    return eventually
