"""Fixtures for the program tests: the module's simulated cluster with the Grove CRDs installed."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from grove_sim.testing import SimCluster

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(sim: SimCluster, kubectl: Callable[..., subprocess.CompletedProcess[str]]) -> SimCluster:
    """The module's simulated cluster with the Grove CRDs, so both programs' caches can sync."""
    kubectl("apply", "-f", str(ROOT / "crds"))
    return sim
