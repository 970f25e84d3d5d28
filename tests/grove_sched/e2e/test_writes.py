"""What grove-scheduler writes per gang, counted from outside through a watch: the binds, one Scheduled Event on
the PodGang (none per pod) and one PodGang status write that already carries the gang's outcome."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from grove_runtime.client import KubeClient
from grove_runtime.resources import EVENTS
from grove_sched.podgang_status import PODGANGS
from grove_sim.testing import SimCluster

from .conftest import RACK, SCHED, bound_nodes, eventually, make_gang, running_scheduler


async def _status_writes(kube: KubeClient, start: str, seen: list[dict[str, Any]]) -> None:
    """Append every PodGang version whose status differs from the one before (the status writes)."""
    last: dict[str, Any] = {}
    async with kube.watch(PODGANGS, "default", resource_version=start) as events:
        async for event in events:
            obj = event["object"]
            name = obj["metadata"]["name"]
            status = obj.get("status") or {}
            if status != last.get(name, {}):
                seen.append(obj)
            last[name] = status


async def test_a_gang_costs_its_binds_one_event_and_one_status_write(cluster: SimCluster, client: KubeClient) -> None:
    """A 4-pod gang: 4 binds, one Scheduled Event naming the PodGang, and one status write saying Running with its
    Scheduled condition and score. The old scheduler wrote a Scheduled Event per pod and the status as each state
    arrived (Starting, then Running). A long settle time makes the count independent of the kubelet's pace."""
    start = (await client.list(PODGANGS, "default"))["metadata"]["resourceVersion"]
    writes: list[dict[str, Any]] = []
    watcher = asyncio.ensure_future(_status_writes(client, start, writes))
    try:
        async with running_scheduler(cluster.kubeconfig, status_settle=3600.0):
            await make_gang(client, "solo", {"w": (4, 4, 2)}, required=RACK)
            await eventually(lambda: _phase_running(writes))
            assert len(await bound_nodes(client, "solo")) == 4
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    assert len(writes) == 1, [w.get("status") for w in writes]
    status = writes[0]["status"]
    assert status["phase"] == "Running"
    assert {c["type"]: c["status"] for c in status["conditions"]}["Scheduled"] == "True"
    assert 0.0 <= float(status["placementScore"]) <= 1.0
    events = (await client.list(EVENTS, "default"))["items"]
    ours = [e for e in events if e.get("reportingComponent") == SCHED]
    assert [(e["reason"], e["involvedObject"]["kind"]) for e in ours] == [("Scheduled", "PodGang")]


async def _phase_running(writes: list[dict[str, Any]]) -> bool:
    return any((w.get("status") or {}).get("phase") == "Running" for w in writes)
