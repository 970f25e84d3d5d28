"""Fixtures for the program tests: the module's simulated cluster with the Grove CRDs installed."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from grove_sim.testing import SimCluster

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(sim: SimCluster, kubectl: Callable[..., subprocess.CompletedProcess[str]]) -> SimCluster:
    """The module's simulated cluster with the Grove CRDs, so both programs' caches can sync."""
    kubectl("apply", "-f", str(ROOT / "crds"))
    return sim


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port held by a listening socket for the duration of the test."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])
