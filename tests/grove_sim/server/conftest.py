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


@pytest.fixture
def poll() -> Callable[..., Awaitable[Any]]:
    """The ``eventually`` polling helper."""
    return eventually
