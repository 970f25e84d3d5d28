"""Kill-and-restart: an operator cancelled at arbitrary points converges after restart, with no duplicates."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from grove_api import labels as glabels
from grove_operator.kinds import PODCLIQUES, PODCLIQUESCALINGGROUPS, PODGANGS
from grove_runtime.client import KubeClient
from grove_runtime.resources import EVENTS, PODS
from grove_sim.testing import SimCluster

from ._harness import OperatorThread, create_pcs, items, live_pods, load_sample, names, wait_for

Obj = dict[str, Any]
SAMPLE = "simple/simple3-explicit-startup-order.yaml"
REPLICAS = 3


@pytest.fixture
def operators(crds: SimCluster) -> Iterator[list[OperatorThread]]:
    """Operators started by the test; all killed at the end."""
    started: list[OperatorThread] = []
    try:
        yield started
    finally:
        for op in started:
            op.kill()


def _expected_pclqs() -> dict[str, int]:
    out: dict[str, int] = {}
    for i in range(REPLICAS):
        out[f"simple3-{i}-pca"] = 3
        out[f"simple3-{i}-pce"] = 2
        for j in range(3):
            for c in ("pcb", "pcc", "pcd"):
                out[f"simple3-{i}-sga-{j}-{c}"] = 2
    return out


@pytest.mark.parametrize("seed", [pytest.param(s, id=f"seed{s}") for s in (1, 2)])
async def test_killed_operator_converges_without_duplicates(
    crds: SimCluster, operators: list[OperatorThread], kube: KubeClient, namespace: str, seed: int
) -> None:
    """Cancelling the operator mid-reconcile several times never leaves duplicate pods, gangs or PodCliques."""
    rng = random.Random(seed)
    pcs = load_sample(SAMPLE)
    pcs["spec"]["replicas"] = REPLICAS
    await create_pcs(kube, namespace, pcs)
    for _ in range(5):
        op = OperatorThread(crds.kubeconfig).start()
        operators.append(op)
        await asyncio.sleep(rng.uniform(0.0, 0.4))
        await asyncio.to_thread(op.kill)

    operators.append(OperatorThread(crds.kubeconfig).start())
    expected = _expected_pclqs()
    total = sum(expected.values())
    gangs = sorted([f"simple3-{i}" for i in range(REPLICAS)] + [f"simple3-{i}-sga-0" for i in range(REPLICAS)])

    async def converged() -> list[Obj] | None:
        pods = await live_pods(kube, namespace)
        if len(pods) != total or await names(kube, PODGANGS, namespace) != gangs:
            return None
        refs = sum(len(g.get("podReferences") or ()) for pg in await items(kube, PODGANGS, namespace)
                   for g in pg["spec"]["podgroups"])  # fmt: skip
        return pods if refs == total else None

    pods = await wait_for(converged, "convergence after restarts")
    assert await names(kube, PODCLIQUES, namespace) == sorted(expected)
    assert await names(kube, PODCLIQUESCALINGGROUPS, namespace) == [f"simple3-{i}-sga" for i in range(REPLICAS)]
    per_pclq = Counter(p["metadata"]["labels"][glabels.LABEL_PODCLIQUE] for p in pods)
    assert dict(per_pclq) == expected
    hostnames = [p["spec"]["hostname"] for p in pods]
    assert len(hostnames) == len(set(hostnames)), "every pod index is used once"
    all_pods = await items(kube, PODS, namespace)
    assert len(all_pods) == total, "no surplus pod was ever left behind"
    events = await items(kube, EVENTS, namespace)
    assert not [e for e in events if e.get("reason") in ("PodDeleted", "PodGangDeleted", "PodCliqueDeleted")], (
        "convergence must not need to delete duplicates"
    )
