"""Pod indices converge when create responses are lost (issue #13, 3).

The operator talks to grove-sim through a proxy that performs 5% of the pod creations (seeded) but answers the
operator with a 500 or a dropped connection. The client retries such a create, so the API server ends up with two
pods of one index. Before the repair this ended, permanently and silently, with two pods sharing an index and
host name while another index was missing; now every index 0..replicas-1 must be held exactly once, host names
must be unique, and the repair must be told in a DuplicatePodIndex Event.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grove_api import labels as glabels
from grove_operator.config import OperatorConfig
from grove_runtime.client import KubeClient
from grove_runtime.resources import EVENTS
from grove_sim.testing import SimCluster

from ._faultproxy import FaultProxy
from ._harness import OperatorThread, create_pcs, ensure_namespace, items, live_pods, load_sample, wait_for

Obj = dict[str, Any]
AGG = "user-guide/01_core-concepts/single-node-aggregated.yaml"
PCS_REPLICAS = 3
PODS_PER_CLIQUE = 16
RATE = 0.05


@pytest.fixture(scope="module")
def proxy(crds: SimCluster) -> Iterator[FaultProxy]:
    """The lossy proxy in front of the module's sim."""
    with FaultProxy(crds.url, rate=RATE, seed=0) as lossy:
        yield lossy


@pytest.fixture(scope="module")
def lossy_operator(proxy: FaultProxy) -> Iterator[OperatorThread]:
    """An operator that reaches the API server only through the lossy proxy."""
    op = OperatorThread(proxy.kubeconfig, OperatorConfig(leader_elect=False, metrics_port=None, retry_interval=0.5))
    op.start()
    try:
        yield op
    finally:
        op.kill()


def _workload() -> Obj:
    pcs = load_sample(AGG)
    pcs["spec"]["replicas"] = PCS_REPLICAS
    pcs["spec"]["template"]["cliques"][0]["spec"]["replicas"] = PODS_PER_CLIQUE
    return pcs


def _index_problems(pods: list[Obj], pclqs: list[str]) -> list[str]:
    """Why the pods are not exactly indices 0..n-1 once each with unique host names (empty when they are)."""
    problems = []
    for pclq in pclqs:
        mine = [p for p in pods if p["metadata"]["labels"].get(glabels.LABEL_PODCLIQUE) == pclq]
        indices = sorted(int(p["metadata"]["labels"][glabels.LABEL_PODCLIQUE_POD_INDEX]) for p in mine)
        hosts = [p["spec"]["hostname"] for p in mine]
        if indices != list(range(PODS_PER_CLIQUE)):
            problems.append(f"{pclq}: indices {indices}")
        if len(set(hosts)) != len(hosts):
            problems.append(f"{pclq}: host names repeat")
    return problems


async def _converged(op: OperatorThread, proxy: FaultProxy, kube: KubeClient, namespace: str) -> list[str] | None:
    """The pods are right and stay right: no pod creation and no PodClique reconcile ran while they were read
    (a correct snapshot between a lost create and its retry would otherwise pass)."""
    assert op.app is not None
    controller = op.app.controllers["podclique"]

    def idle() -> bool:
        return controller.in_flight == 0 and len(controller.queue) == 0

    creates = proxy.selected
    if not op.call(idle):
        return None
    pods = await live_pods(kube, namespace)
    if not op.call(idle) or proxy.selected != creates:
        return None
    pclqs = [f"single-node-aggregated-{i}-model-worker" for i in range(PCS_REPLICAS)]
    problems = _index_problems(pods, pclqs)
    return None if problems else ["converged"]


async def _run_workload(op: OperatorThread, proxy: FaultProxy, kube: KubeClient, namespace: str) -> None:
    faults_before = proxy.faults
    await create_pcs(kube, namespace, _workload())
    await wait_for(lambda: _converged(op, proxy, kube, namespace), "every index held exactly once", limit=120)
    if proxy.faults > faults_before:
        events = [e for e in await items(kube, EVENTS, namespace) if e["reason"] == "DuplicatePodIndex"]
        assert events, "lost creates duplicated indices, and the repair must say so"
        assert all(e["type"] == "Warning" for e in events)


async def test_lost_create_responses_leave_every_index_exactly_once(
    lossy_operator: OperatorThread, proxy: FaultProxy, kube: KubeClient, namespace: str
) -> None:
    """With 5% of the pod creates answered by an error although performed, 48 pods still converge to indices
    0..15 once per PodClique, and the proxy did inject faults (else the test proves nothing)."""
    proxy.reseed(7)
    faults_before = proxy.faults
    await _run_workload(lossy_operator, proxy, kube, namespace)
    assert proxy.faults > faults_before


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
async def test_indices_converge_for_any_fault_seed(
    lossy_operator: OperatorThread, proxy: FaultProxy, kube: KubeClient, seed: int
) -> None:
    """Whichever creates are lost, indices converge (a few seeds; each example is a full workload)."""
    namespace = f"seed-{uuid.uuid4().hex[:8]}"
    await ensure_namespace(kube, namespace)
    proxy.reseed(seed)
    await _run_workload(lossy_operator, proxy, kube, namespace)
