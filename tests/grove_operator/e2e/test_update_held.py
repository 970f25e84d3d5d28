"""A rolling update that cannot go on (its replacement pod cannot be scheduled) holds where it is: nothing else
goes down, gang termination is held off for the replica being updated however long its breach lasts, and the
`kubectl get pcs,pclq,pcsg` columns say exactly where the update stands. Uncordoned, it finishes.

The operator runs on a fake clock ten times as fast as real time, so a `terminationDelay` of 2 s is outlived many
times over while the test waits for the operator's time, not a sleep."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from grove_api import labels as glabels
from grove_operator import hashing
from grove_operator.kinds import PODCLIQUES, PODCLIQUESETS
from grove_operator.parsed import defaulted_podcliqueset
from grove_runtime.client import KubeClient
from grove_runtime.resources import EVENTS, PODS
from grove_sim.testing import SimCluster

from ._harness import OperatorThread, create_pcs, items, wait_for
from ._lifecycle import (
    IMAGE,
    PodObserver,
    cordon,
    fast_clock_operator,
    is_ready,
    operator_time_passes,
    running_scheduler,
    set_image,
    template_hash,
    workload,
)
from .test_rolling_update import V2, settled

Obj = dict[str, Any]
PODS_PER_REPLICA = 2 + 2 * 3


@pytest.fixture(scope="module")
def operator(crds: SimCluster) -> Iterator[OperatorThread]:
    """One grove-operator on a fake clock running at ten times real time."""
    yield from fast_clock_operator(crds.kubeconfig)


def table(kubectl: Callable[..., Any], *args: str) -> dict[str, dict[str, str]]:
    """`kubectl get ARGS` as printed: row name → column header → cell (cut at the headers' offsets, since a cell
    may be empty)."""
    header, *rows = kubectl("get", *args).stdout.splitlines()
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    cells = [[row[a:b].strip() for a, b in bounds] for row in rows]
    return {c[0]: dict(zip([header[a:b].strip() for a, b in bounds], c, strict=True)) for c in cells}


async def pods_of(kube: KubeClient, namespace: str, pclq: str) -> list[Obj]:
    """Live pods of PodClique `pclq`."""
    pods = await items(kube, PODS, namespace, f"{glabels.LABEL_PODCLIQUE}={pclq}")
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


async def test_an_update_that_cannot_go_on_holds_its_replica_without_gang_termination_and_says_where_it_is(
    operator: OperatorThread, crds: SimCluster, kube: KubeClient, namespace: str, kubectl: Callable[..., Any]
) -> None:
    """Two replicas of a worker clique (2 pods, minAvailable 2) and a scaling group, `terminationDelay: 2s`; nodes
    cordoned, then a new image: the update replaces one worker pod of replica 0 and its replacement stays Pending.
    For 30 s of the operator's time (fifteen delays) nothing else is deleted, no PodClique is rebuilt, the worker's
    breach reads Unknown/UpdateInProgress, and every column is true; uncordoned, the update ends on the new image
    without any gang termination."""
    body = workload("held", delay="2s", standalone=(("worker", 2, 2),))
    async with running_scheduler(crds.kubeconfig):
        await create_pcs(kube, namespace, body)
        await wait_for(lambda: settled(kube, namespace, "held", 2 * PODS_PER_REPLICA), "all pods Ready")
        uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await items(kube, PODCLIQUES, namespace)}
        await cordon(kube, True)
        try:
            async with PodObserver(kube, namespace) as observer:
                await set_image(kube, namespace, "held", V2)

                async def stuck() -> list[Obj] | None:
                    pods = await pods_of(kube, namespace, "held-0-worker")
                    return pods if {p["spec"]["containers"][0]["image"] for p in pods} == {V2, IMAGE} else None

                await wait_for(stuck, "one worker pod of replica 0 replaced by a Pending one")
                await operator_time_passes(operator, 30)
                assert [(r, ready) for r, _, ready in observer.deleted] == [(0, True)], "one Ready pod, nothing more"
                assert observer.violations == []

                after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await items(kube, PODCLIQUES, namespace)}
                assert after == uids, "no PodClique rebuilt or recreated while the update holds"
                events = [e for e in await items(kube, EVENTS, namespace) if e["involvedObject"]["name"] == "held"]
                assert not [e for e in events if e["reason"] == "GangTermination"]
                messages = " | ".join(e["message"] for e in events)
                assert "updating replica 0" in messages
                assert "updating replica 1" not in messages

                worker = await kube.get(PODCLIQUES, "held-0-worker", namespace)
                breach = next(c for c in worker["status"]["conditions"] if c["type"] == "MinAvailableBreached")
                assert (breach["status"], breach["reason"]) == ("Unknown", "UpdateInProgress")
                pcs = await kube.get(PODCLIQUESETS, "held", namespace)
                progress = pcs["status"]["updateProgress"]
                assert [c["replicaIndex"] for c in progress["currentlyUpdating"]] == [0]
                assert "updateEndedAt" not in progress

                assert table(kubectl, "pcs", "-n", namespace)["held"] | {"AGE": ""} == {
                    "NAME": "held",
                    "REPLICAS": "2",
                    "AVAILABLE": "1",
                    "UPDATED": "0",
                    "AGE": "",
                    "PCLQS-UPDATED": "0",
                    "PCLQS-TOTAL": "2",
                    "PCSGS-UPDATED": "0",
                    "PCSGS-TOTAL": "2",
                }, "replica 0 is below its minimum; neither replica runs only the new template"
                newest = hashing.clique_hashes(defaulted_podcliqueset(pcs).spec.template)
                pclqs = table(kubectl, "pclq", "-n", namespace)
                for name, row in pclqs.items():
                    pods = await pods_of(kube, namespace, name)
                    target = newest[name.rsplit("-", 1)[1]]
                    truth = (
                        len([p for p in pods if is_ready(p)]),
                        len([p for p in pods if template_hash(p) == target]),
                    )
                    assert (int(row["READY"]), int(row["UPDATED"])) == truth, (name, row)
                assert (pclqs["held-0-worker"]["READY"], pclqs["held-0-worker"]["UPDATED"]) == ("1", "1")
                pcsgs = table(kubectl, "pcsg", "-n", namespace)
                assert [(r["AVAILABLE"], r["UPDATED"]) for r in pcsgs.values()] == [("2", "0"), ("2", "0")]
        finally:
            await cordon(kube, False)
        await wait_for(lambda: settled(kube, namespace, "held", 2 * PODS_PER_REPLICA, V2), "update done", 120)
    events = [e for e in await items(kube, EVENTS, namespace) if e["reason"] == "GangTermination"]
    assert events == []
