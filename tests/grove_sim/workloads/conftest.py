"""A cluster with the workload controllers' optional parts on: the built-in default scheduler binds plain pods, and
HPAs sync every 50 ms on a clock the tests can replace."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from grove_sim.cluster import nodes_from_flags
from grove_sim.server import SimOptions
from grove_sim.testing import SimCluster

T = TypeVar("T")
Poll = Callable[..., Awaitable[Any]]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    """Four 8-GPU nodes (192 CPUs each) with the default scheduler."""
    options = SimOptions(nodes=nodes_from_flags(4, 8, "block=2,rack=4"), default_scheduler=True, hpa_sync_period=0.05)
    with SimCluster(options) as cluster:
        yield cluster


async def eventually(probe: Callable[[], Awaitable[T | None]], *, attempts: int = 500, delay: float = 0.02) -> T:
    """Poll ``probe`` until it returns something truthy; fail the test if it never does."""
    for _ in range(attempts):
        value = await probe()
        if value:
            return value
        await asyncio.sleep(delay)
    raise AssertionError("condition never became true")


@pytest.fixture
def poll() -> Poll:
    """The ``eventually`` polling helper."""
    return eventually
