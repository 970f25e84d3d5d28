"""Operations: PodGang status coexisting with the operator's writes, metrics, leader election."""

from __future__ import annotations

from typing import Any

import aiohttp

from grove_runtime.client import KubeClient
from grove_runtime.keys import ObjectKey
from grove_runtime.leaderelection import LeaseSettings
from grove_runtime.resources import LEASES, NAMESPACES
from grove_sched.podgang_status import PODGANGS, PodGangStatusReconciler, ScheduledState, StatusBook
from grove_sim.testing import SimCluster

from .conftest import bound_nodes, eventually, make_gang, running_scheduler

INIT = {
    "type": "Initialized",
    "status": "True",
    "reason": "PodGangPodsCreated",
    "message": "all pods created",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


async def conditions(kube: KubeClient, gang: str) -> dict[str, dict[str, Any]]:
    pg = await kube.get(PODGANGS, gang, "default")
    return {c["type"]: c for c in (pg.get("status") or {}).get("conditions") or ()}


async def test_scheduled_condition_survives_operator_status_writes(cluster: SimCluster, client: KubeClient) -> None:
    """The operator's one-element merge patch wipes our condition; the scheduler restores it beside Initialized."""
    async with running_scheduler(cluster.kubeconfig):
        await make_gang(client, "st", {"w": (2, 2, 1)})

        async def scheduled() -> bool:
            return (await conditions(client, "st")).get("Scheduled", {}).get("status") == "True"

        await eventually(scheduled)
        await client.patch(
            PODGANGS, "st", {"status": {"phase": "Pending", "conditions": [INIT]}}, "default", subresource="status"
        )

        async def both() -> dict[str, dict[str, Any]] | None:
            found = await conditions(client, "st")
            return found if {"Initialized", "Scheduled"} <= set(found) else None

        found = await eventually(both)
        assert found["Initialized"] == {
            **INIT,
            **{k: found["Initialized"][k] for k in found["Initialized"] if k not in INIT},
        }
        assert found["Scheduled"]["status"] == "True"
        pg = await client.get(PODGANGS, "st", "default")
        assert pg["status"]["phase"] in ("Starting", "Running")


async def test_metrics_are_served(cluster: SimCluster, client: KubeClient) -> None:
    """`/metrics` exposes grove_scheduler_* series after a gang is bound."""
    async with running_scheduler(cluster.kubeconfig) as app:
        await make_gang(client, "m", {"w": (1, 1, 1)})

        async def bound() -> bool:
            return len(await bound_nodes(client, "m")) == 1

        await eventually(bound)
        assert app.manager.health is not None
        url = f"http://127.0.0.1:{app.manager.health.port}/metrics"
        async with aiohttp.ClientSession() as session, session.get(url) as resp:
            text = await resp.text()
        for name in (
            "grove_scheduler_gang_scheduling_duration_seconds_count",
            "grove_scheduler_solve_duration_seconds_count",
            "grove_scheduler_bind_duration_seconds_count",
            'grove_scheduler_schedule_attempts_total{result="scheduled",scheduler_name="grove-scheduler"}',
            "grove_scheduler_pending_gangs",
            "grove_scheduler_placement_score_count",
        ):
            assert name in text


async def test_leader_election_holds_the_lease(cluster: SimCluster, client: KubeClient) -> None:
    """With leader election on, the scheduler holds the grove-scheduler Lease while it schedules."""
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "grove-system"}})
    async with running_scheduler(
        cluster.kubeconfig, leader_elect=True, lease=LeaseSettings(name="grove-scheduler", identity="sched-a")
    ):
        lease = await client.get(LEASES, "grove-scheduler", "grove-system")
        assert lease["spec"]["holderIdentity"] == "sched-a"
        await make_gang(client, "le", {"w": (1, 1, 1)})

        async def bound() -> bool:
            return len(await bound_nodes(client, "le")) == 1

        await eventually(bound)


async def test_status_write_from_a_stale_cache_never_drops_initialized(cluster: SimCluster, client: KubeClient) -> None:
    """The scheduler decides from its cache; if the operator wrote `Initialized` after that read, the scheduler's
    conditions write must not replace the list without it: the version it read is a precondition, and the
    retry on fresh data keeps both conditions."""
    await make_gang(client, "stale", {"w": (1, 1, 1)}, ungate=False)
    stale = await client.get(PODGANGS, "stale", "default")
    init = {"status": {"phase": "Pending", "conditions": [INIT]}}
    await client.patch(PODGANGS, "stale", init, "default", subresource="status")
    book = StatusBook()
    key = ObjectKey("default", "stale")
    book.record(key, ScheduledState(False, "Unschedulable", "no node fits"))
    latest: dict[str, Any] = {"pg": stale}
    member = {"stale-w-0": {"metadata": {"name": "stale-w-0"}, "spec": {"schedulerName": "grove-scheduler"}}}
    reconciler = PodGangStatusReconciler(client, book, lambda _: latest["pg"], lambda _: member, "grove-scheduler")
    assert (await reconciler.reconcile(key)).requeue_after is not None  # conflict: retry on fresh data
    assert set(await conditions(client, "stale")) == {"Initialized"}
    latest["pg"] = await client.get(PODGANGS, "stale", "default")
    assert (await reconciler.reconcile(key)).requeue_after is None
    assert set(await conditions(client, "stale")) == {"Initialized", "Scheduled"}
