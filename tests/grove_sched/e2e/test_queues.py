"""Queues through the API with the scheduler in-process: a gang naming a queue that does not exist waits and says
so; a queue at its limit gets nothing more; two teams with quotas 40/24 on a 64-GPU cluster, one of which took
every GPU while the other was idle: the other reclaims exactly its quota by whole gangs, and the queues' status
and metrics show it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grove_runtime.client import KubeClient
from grove_runtime.resources import PODS
from grove_sched.podgang_status import PODGANGS
from grove_sched.tenancy import QUEUES
from grove_sim.testing import SimCluster

from .conftest import bound_nodes, eventually, gang_pods, pod_body, running_scheduler

Obj = Mapping[str, Any]


def queue(name: str, quota: float, limit: float = -1) -> Obj:
    share = {"quota": quota, "limit": limit, "overQuotaWeight": 1}
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"resources": {"gpu": share}},
    }


async def queued_gang(client: KubeClient, name: str, team: str | None, pods: int = 1, gpus: int = 8) -> None:
    """A PodGang of `pods` pods of `gpus` GPUs, its pods labelled with the queue `team` (None: no label)."""
    names = [f"{name}-{i}" for i in range(pods)]
    for pod in names:
        body = pod_body(pod, name, gpus, gated=False)
        if team is not None:
            body["metadata"]["labels"]["kai.scheduler/queue"] = team
        await client.create(PODS, body)
    refs = [{"namespace": "default", "name": p} for p in names]
    await client.create(
        PODGANGS,
        {
            "apiVersion": "scheduler.grove.io/v1alpha1",
            "kind": "PodGang",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"podgroups": [{"name": "w", "podReferences": refs, "minReplicas": pods}]},
        },
    )


async def says(client: KubeClient, gang: str, words: str) -> str | None:
    """The PodScheduled=False message of one of the gang's pods, when it contains `words`."""
    for pod in await gang_pods(client, gang):
        for cond in (pod.get("status") or {}).get("conditions") or ():
            if cond.get("type") == "PodScheduled" and words in str(cond.get("message")):
                return str(cond["message"])
    return None


async def test_unknown_queue_and_limit_leave_the_gang_pending_with_a_reason(
    cluster: SimCluster, client: KubeClient
) -> None:
    await client.create(QUEUES, queue("team-a", 8, limit=16))
    async with running_scheduler(cluster.kubeconfig, queue_status_interval=0.1):
        await queued_gang(client, "lost", "no-such-team")
        await queued_gang(client, "a-0", "team-a", pods=2)
        await queued_gang(client, "a-1", "team-a")
        message = await eventually(lambda: says(client, "lost", "queue 'no-such-team' does not exist"))
        assert "kai.scheduler/queue" in message
        await eventually(lambda: says(client, "a-1", "queue 'team-a' would exceed its gpu limit 16"))
        assert len(await bound_nodes(client, "a-0")) == 2
        assert await bound_nodes(client, "a-1") == {}
        pg = await client.get(PODGANGS, "lost", "default")
        scheduled = [c for c in pg["status"]["conditions"] if c["type"] == "Scheduled"]
        assert scheduled[0]["status"] == "False"
        assert "no-such-team" in scheduled[0]["message"]
        await client.create(QUEUES, queue("no-such-team", 0))  # the queue appears: the gang is placed

        async def lost_bound() -> bool:
            return len(await bound_nodes(client, "lost")) == 1

        await eventually(lost_bound)


async def test_a_starved_team_reclaims_its_quota_by_whole_gangs(cluster: SimCluster, client: KubeClient) -> None:
    await client.create(QUEUES, queue("team-a", 40))
    await client.create(QUEUES, queue("team-b", 24))
    async with running_scheduler(cluster.kubeconfig, queue_status_interval=0.1) as app:
        for i in range(10):  # team a asks 80 GPUs while b is idle: it gets all 64
            await queued_gang(client, f"a-{i}", "team-a")

        async def bound(prefix: str, count: int) -> list[str]:
            gangs = [f"{prefix}-{i}" for i in range(count)]
            return [g for g in gangs if len(await bound_nodes(client, g)) == 1]

        async def a_has_all() -> bool:
            return len(await bound("a", 10)) == 8

        await eventually(a_has_all)
        for i in range(4):  # team b asks 32 GPUs, 8 above its quota
            await queued_gang(client, f"b-{i}", "team-b")

        async def b_has_quota() -> list[str] | None:
            found = await bound("b", 4)
            return found if len(found) == 3 else None

        await eventually(b_has_quota)

        async def a_at_quota() -> bool:
            return len(await bound("a", 10)) == 5 and not any(
                p["metadata"].get("deletionTimestamp") for p in (await client.list(PODS, "default"))["items"]
            )

        await eventually(a_at_quota)
        assert len(await bound("b", 4)) == 3  # b's fourth gang would take a below its fair share
        for i in range(10):  # every gang is whole or gone
            assert len(await gang_pods(client, f"a-{i}")) in (0, 1)

        async def status_shows_it() -> Obj | None:
            b = await client.get(QUEUES, "team-b")
            status = b.get("status") or {}
            return status if status.get("allocatedGpus") == 24 else None

        status = await eventually(status_shows_it)
        assert status["fairShareGpus"] == 24
        assert status["requestedGpus"] == 32
        assert status["pendingGangs"] == 1
        sample = app.metrics.registry.get_sample_value
        assert sample("grove_queue_allocated", {"queue": "team-a", "resource": "gpu"}) == 40
        assert sample("grove_queue_fair_share", {"queue": "team-b", "resource": "gpu"}) == 24
        assert sample("grove_queue_pending_gangs", {"queue": "team-b"}) == 1
