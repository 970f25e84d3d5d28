"""A cluster with the workload controllers' optional parts on: the built-in default scheduler binds plain pods, and
HPAs sync every 50 ms on a clock the tests can replace (``poll`` comes from the grove_sim conftest)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from grove_sim.cluster import nodes_from_flags
from grove_sim.server import SimOptions
from grove_sim.testing import SimCluster


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    """Four 8-GPU nodes (192 CPUs each) with the default scheduler."""
    options = SimOptions(
        nodes=nodes_from_flags(4, 8, "block=2,rack=4"),
        default_scheduler=True,
        hpa_controller=True,
        hpa_sync_period=0.05,
    )
    with SimCluster(options) as cluster:
        yield cluster
