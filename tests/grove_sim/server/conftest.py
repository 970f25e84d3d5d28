"""Polling helpers of the API-server tests (the ``poll`` fixture and ``eventually`` live one level up)."""

from __future__ import annotations

import asyncio
from typing import Any

from ..conftest import eventually

__all__ = ["eventually", "until"]


async def until(probe: Any, limit: float = 60.0) -> Any:
    """Poll an async probe until it returns something truthy (the limit only guards against a hang)."""
    deadline = asyncio.get_running_loop().time() + limit
    while not (value := await probe()):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.05)
    return value
