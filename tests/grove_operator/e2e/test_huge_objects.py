"""One object cannot take the operator down (issue #13, 1).

A PodCliqueSet asking for 10^8 pods is valid by the CRD. The operator must refuse it visibly (`lastErrors` naming
the field, a Warning Event) without any work that grows with that number: its memory stays flat, other
PodCliqueSets keep reconciling, and the huge one still deletes (its finalizer is removed). The operator runs as
its own process so its resident memory can be read from /proc; every poll fails at once if it grows past a
headroom, so a regression fails fast instead of eating the machine's memory.
"""

from __future__ import annotations

import asyncio
import copy
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from grove_api import labels as glabels
from grove_operator.kinds import PODCLIQUES, PODCLIQUESETS
from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.resources import EVENTS, PODS
from grove_sim.testing import SimCluster

from ._harness import create_pcs, items, live_pods, load_sample, wait_for

T = TypeVar("T")
Obj = dict[str, Any]
AGG = "user-guide/01_core-concepts/single-node-aggregated.yaml"
HUGE = 100_000_000
HEADROOM_MIB = 150.0


def _status_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024.0
    raise AssertionError(f"{field} missing from /proc/{pid}/status")


def _named(pcs: Obj, name: str) -> Obj:
    out = copy.deepcopy(pcs)
    out["metadata"]["name"] = name
    return out


async def _last_error(kube: KubeClient, rt: Any, name: str, namespace: str) -> Obj | None:
    obj = await kube.get(rt, name, namespace)
    found = [e for e in (obj.get("status") or {}).get("lastErrors") or () if e["code"] == "ERR_INVALID_SPEC"]
    return found[0] if found else None


async def _warning(kube: KubeClient, namespace: str, name: str, reason: str) -> Obj | None:
    for event in await items(kube, EVENTS, namespace):
        if event["involvedObject"]["name"] == name and event["reason"] == reason and event["type"] == "Warning":
            return event
    return None


async def _gone(kube: KubeClient, name: str, namespace: str) -> bool:
    try:
        await kube.get(PODCLIQUESETS, name, namespace)
    except errors.NotFound:
        return True
    return False


async def test_podcliqueset_asking_for_huge_numbers_is_refused_without_growing_the_operator(
    crds: SimCluster, kube: KubeClient, namespace: str, kubectl: Callable[..., Any]
) -> None:
    """10^8 pods in a clique, 10^8 replicas, and a PodClique scaled to 10^8: each is reported, none is worked on,
    the operator's RSS stays within a headroom, a new PodCliqueSet is still served and the huge ones delete."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "grove_operator.cli", "--kubeconfig", crds.kubeconfig, "--no-leader-elect",
        "--health-port", "0", "--metrics-port", "0", "--namespace", namespace,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        sample = load_sample(AGG)
        await create_pcs(kube, namespace, _named(sample, "normal"))

        async def two_pods_of(pcs: str) -> bool:
            pods = await live_pods(kube, namespace)
            return len([p for p in pods if p["metadata"]["labels"].get(glabels.LABEL_PART_OF) == pcs]) == 2

        await wait_for(lambda: two_pods_of("normal"), "the normal PodCliqueSet's pods")
        limit = _status_mib(proc.pid, "VmRSS") + HEADROOM_MIB

        def flat(check: Callable[[], Awaitable[T | None]]) -> Callable[[], Awaitable[T | None]]:
            async def guarded() -> T | None:
                rss = _status_mib(proc.pid, "VmRSS")
                assert rss < limit, f"operator RSS {rss:.0f} MiB grew past {limit:.0f} MiB"
                return await check()

            return guarded

        in_clique = _named(sample, "huge-clique")
        in_clique["spec"]["template"]["cliques"][0]["spec"]["replicas"] = HUGE
        in_replicas = _named(sample, "huge-replicas")
        in_replicas["spec"]["replicas"] = HUGE
        for pcs in (in_clique, in_replicas):
            await create_pcs(kube, namespace, pcs)
        for name in ("huge-clique", "huge-replicas"):
            error = await wait_for(flat(lambda n=name: _last_error(kube, PODCLIQUESETS, n, namespace)), "lastErrors")
            assert "spec.replicas" in error["description"]
            assert "maximum of 100000" in error["description"]
            assert await wait_for(flat(lambda n=name: _warning(kube, namespace, n, "InvalidSpec")), "Warning Event")

        pclq = "normal-0-model-worker"
        kubectl("scale", "pclq", pclq, f"--replicas={HUGE}", "-n", namespace)
        error = await wait_for(flat(lambda: _last_error(kube, PODCLIQUES, pclq, namespace)), "PodClique lastErrors")
        assert "spec.replicas" in error["description"]

        await create_pcs(kube, namespace, _named(sample, "after"))
        await wait_for(flat(lambda: two_pods_of("after")), "a PodCliqueSet created after the huge ones")

        for name in ("huge-clique", "huge-replicas"):
            await kube.delete(PODCLIQUESETS, name, namespace)
        for name in ("huge-clique", "huge-replicas"):
            await wait_for(flat(lambda n=name: _gone(kube, n, namespace)), f"{name} deleted")
        pods = await items(kube, PODS, namespace)
        assert not [p for p in pods if p["metadata"]["labels"].get(glabels.LABEL_PART_OF, "").startswith("huge")]
        assert await two_pods_of("normal"), "the scaled PodClique was refused, not worked on"
        peak = _status_mib(proc.pid, "VmHWM")
        assert peak < limit, f"operator peak RSS {peak:.0f} MiB grew past {limit:.0f} MiB"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
