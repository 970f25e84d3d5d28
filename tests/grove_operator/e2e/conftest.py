"""Fixtures for the operator's end-to-end tests: CRDs applied to the module's sim, one operator per module."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from grove_runtime.client import KubeClient
from grove_sim.testing import SimCluster

from ._harness import OperatorThread
from ._webhooks import TOPOLOGY, apply, start_operator

CRDS = Path(__file__).resolve().parents[3] / "crds"


@pytest.fixture(scope="module")
def crds(sim: SimCluster, kubectl: Callable[..., Any]) -> SimCluster:
    """The sim with Grove's CRDs applied."""
    kubectl("apply", "-f", str(CRDS))
    return sim


@pytest.fixture(scope="module")
def operator(crds: SimCluster) -> Iterator[OperatorThread]:
    """One grove-operator for the whole module."""
    op = OperatorThread(crds.kubeconfig).start()
    try:
        yield op
    finally:
        op.kill()


@pytest.fixture
async def kube(crds: SimCluster, kube: KubeClient) -> KubeClient:
    """The shared test-side client (tests/conftest.py), once the CRDs are applied; `namespace` comes from there."""
    return kube


@pytest.fixture(scope="module")
def webhooks(crds: SimCluster, kubectl: Callable[..., Any]) -> Iterator[OperatorThread]:
    """One grove-operator serving its webhooks for the whole module, and the topology the test manifests name."""
    apply(kubectl, TOPOLOGY)
    operator = start_operator(crds.kubeconfig, kubectl)
    try:
        yield operator
    finally:
        operator.kill()
