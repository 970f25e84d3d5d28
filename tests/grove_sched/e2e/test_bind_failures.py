"""No partial gangs: a bind rejected by the server mid-gang, and recovery after a scheduler died mid-bind."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from grove_runtime.client import KubeClient
from grove_runtime.errors import NotFound
from grove_runtime.resources import NODES, PODS
from grove_sched.podgang_status import PODGANGS
from grove_sim.testing import SimCluster

from .conftest import RACK, bound_nodes, eventually, gang_pods, make_gang, running_scheduler, scheduled_condition


class DeleteBeforeBind:
    """Wraps the real client: right before binding `victim`, delete it through the API so the server rejects it."""

    def __init__(self, real: KubeClient, victim: str) -> None:
        self._real = real
        self.victim = victim
        self.binds: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    async def bind(
        self, namespace: str, pod: str, node: str, *, uid: str | None = None, fence: Callable[[], bool] | None = None
    ) -> None:
        self.binds.append(pod)
        if pod == self.victim:
            await self._real.delete(PODS, pod, namespace, grace_period_seconds=0)
        await self._real.bind(namespace, pod, node, uid=uid, fence=fence)


async def test_bind_rejected_mid_gang_rolls_back(cluster: SimCluster, client: KubeClient) -> None:
    """When the server rejects one bind of the minimum, the pods bound in that attempt are deleted: no partial gang."""
    wrapper = DeleteBeforeBind(client, "fail-w-2")
    async with running_scheduler(cluster.kubeconfig, client=wrapper, bind_concurrency=1):  # type: ignore[arg-type]
        await make_gang(client, "fail", {"w": (4, 4, 2)})

        async def reported() -> dict[str, Any] | None:
            cond = await scheduled_condition(client, "fail")
            return cond if cond is not None and "fail-w-2" in cond["message"] else None

        cond = await reported() or await eventually(reported)
        assert cond["status"] == "False"
        assert wrapper.binds[:2] == ["fail-w-0", "fail-w-1"]
        for _ in range(5):
            assert await bound_nodes(client, "fail") == {}
            await asyncio.sleep(0.05)


async def bind_by_hand(kube: KubeClient, pods: list[str], node: str) -> None:
    """What a scheduler killed mid-bind leaves behind: some pods of the gang bound."""
    for pod in pods:
        await kube.bind("default", pod, node)


async def test_recovery_completes_a_partially_bound_gang(cluster: SimCluster, client: KubeClient) -> None:
    """A gang left half bound is completed on start, in the rack its bound pods already occupy."""
    members = await make_gang(client, "half", {"w": (4, 4, 4)}, required=RACK)
    await bind_by_hand(client, members["w"][:2], "node-2")
    async with running_scheduler(cluster.kubeconfig) as app:

        async def done() -> dict[str, str] | None:
            nodes = await bound_nodes(client, "half")
            return nodes if len(nodes) == 4 else None

        nodes = await eventually(done)
        racks = {(await client.get(NODES, n))["metadata"]["labels"][RACK] for n in nodes.values()}
        assert racks == {(await client.get(NODES, "node-2"))["metadata"]["labels"][RACK]}
        assert app.runnable.recovery is not None
        assert [k.name for k in app.runnable.recovery.completed] == ["half"]


async def test_recovery_rolls_back_a_gang_that_no_longer_fits(cluster: SimCluster, client: KubeClient) -> None:
    """A half-bound gang whose rest cannot fit in its rack any more has its bound pods deleted on start."""
    members = await make_gang(client, "stuck", {"w": (4, 4, 4)}, required=RACK)
    await bind_by_hand(client, members["w"][:2], "node-2")
    for node in ("node-2", "node-3"):
        other = "node-3" if node == "node-2" else "node-2"
        await client.patch(NODES, other, {"spec": {"unschedulable": True}})
        await client.patch(NODES, node, {"spec": {"unschedulable": node == "node-3"}})
    async with running_scheduler(cluster.kubeconfig) as app:

        async def rolled_back() -> bool:
            names = {p["metadata"]["name"] for p in await gang_pods(client, "stuck")}
            return not (names & set(members["w"][:2]))

        await eventually(rolled_back)
        assert await bound_nodes(client, "stuck") == {}
        assert app.runnable.recovery is not None
        assert [k.name for k in app.runnable.recovery.rolled_back] == ["stuck"]


async def test_killed_mid_bind_and_restarted_leaves_no_partial_gang(cluster: SimCluster, client: KubeClient) -> None:
    """SIGKILL the scheduler process right after its first bind; after a restart the gang is whole or absent."""
    members = await make_gang(client, "kill", {"w": (8, 8, 8)}, ungate=False)
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost"}
    args = [sys.executable, "-m", "grove_sched", "--kubeconfig", cluster.kubeconfig, "--metrics-port", "0"]
    args += ["--no-leader-elect", "--bind-concurrency", "1", "--log-level", "WARNING"]
    proc = await asyncio.create_subprocess_exec(
        *args, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        for pod in members["w"]:
            await client.patch(PODS, pod, {"spec": {"schedulingGates": None}}, "default")

        async def first_bound() -> bool:
            return len(await bound_nodes(client, "kill")) >= 1

        await eventually(first_bound, interval=0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
    after_kill = len(await bound_nodes(client, "kill"))
    async with running_scheduler(cluster.kubeconfig):

        async def settled() -> bool:
            bound = len(await bound_nodes(client, "kill"))
            present = {p["metadata"]["name"] for p in await gang_pods(client, "kill")}
            return bound == 8 or (bound == 0 and present != set(members["w"]))

        await eventually(settled)
        bound = len(await bound_nodes(client, "kill"))
        assert bound in (0, 8), f"partial gang: {bound} of 8 bound (after the kill: {after_kill})"
        pg = await client.get(PODGANGS, "kill", "default")
        assert pg["metadata"]["name"] == "kill"


async def test_deleted_gang_pod_during_wait_is_harmless(cluster: SimCluster, client: KubeClient) -> None:
    """Deleting a pod of a waiting gang makes it malformed (reported), never crashes the scheduler."""
    async with running_scheduler(cluster.kubeconfig):
        members = await make_gang(client, "gone", {"w": (2, 2, 1)}, ungate=False)
        with contextlib.suppress(NotFound):
            await client.delete(PODS, members["w"][0], "default", grace_period_seconds=0)
        for pod in members["w"][1:]:
            await client.patch(PODS, pod, {"spec": {"schedulingGates": None}}, "default")
        cond = await eventually(lambda: scheduled_condition(client, "gone"))
        assert cond["reason"] == "InvalidPodGang"
        await make_gang(client, "after", {"w": (1, 1, 1)})

        async def after_bound() -> bool:
            return len(await bound_nodes(client, "after")) == 1

        await eventually(after_bound)
