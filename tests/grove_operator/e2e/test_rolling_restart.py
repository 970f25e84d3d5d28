"""A rolling update survives the operator being killed at random moments: it resumes from the API state alone
(status.updateProgress, the pods) and keeps its invariants across restarts."""

from __future__ import annotations

import asyncio
import random

from grove_runtime.client import KubeClient
from grove_sim.testing import SimCluster

from ._harness import OperatorThread, create_pcs, live_pods, wait_for
from ._history import History, untrue_counters
from ._lifecycle import PodObserver, running_scheduler, set_image, workload
from .test_rolling_update import PODS_PER_REPLICA, V2, settled


async def restarted(kubeconfig: str, old: OperatorThread) -> OperatorThread:
    """Kill `old` wherever it is (mid-reconcile included) and start a fresh operator, off the test's loop."""
    await asyncio.to_thread(old.kill)
    return await asyncio.to_thread(OperatorThread(kubeconfig).start)


async def test_an_operator_killed_at_random_moments_resumes_the_update_from_the_api(
    crds: SimCluster, kube: KubeClient, namespace: str
) -> None:
    """Four kills at random moments during the update: it still takes one thing down at a time, one replica after
    the other, replaces every old pod exactly once, never writes a count that is not true and ends on the new
    template."""
    operator = await asyncio.to_thread(OperatorThread(crds.kubeconfig).start)
    try:
        async with running_scheduler(crds.kubeconfig):
            await create_pcs(kube, namespace, workload("resume"))
            await wait_for(lambda: settled(kube, namespace, "resume", 2 * PODS_PER_REPLICA), "all pods Ready")
            before = {p["metadata"]["name"] for p in await live_pods(kube, namespace)}
            rng = random.Random(16)
            async with PodObserver(kube, namespace) as observer, History(kube, namespace) as history:
                await set_image(kube, namespace, "resume", V2)
                for _ in range(4):
                    await asyncio.sleep(rng.uniform(0.05, 0.6))  # picks the moment of the kill; asserts nothing
                    operator = await restarted(crds.kubeconfig, operator)
                await wait_for(
                    lambda: settled(kube, namespace, "resume", 2 * PODS_PER_REPLICA, V2), "update resumed", 120
                )
            assert observer.violations == []
            assert untrue_counters(history, "resume") == [], "no status claimed more than was true, across restarts"
            assert observer.replica_order() == [0, 1]
            assert sorted(name for _, name, _ in observer.deleted) == sorted(before), "each old pod replaced once"
    finally:
        await asyncio.to_thread(operator.kill)
