"""Leadership through the API: a scheduler frozen past its lease binds nothing on waking, and a scheduler started
before its lease namespace exists waits for it, then leads."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from grove_runtime.client import KubeClient
from grove_runtime.errors import NotFound
from grove_runtime.leaderelection import LeaseSettings
from grove_runtime.resources import LEASES, NAMESPACES, PODS
from grove_sched.app import build
from grove_sched.config import SchedulerConfig
from grove_sched.podgang_status import PODGANGS
from grove_sim.testing import SimCluster

from .conftest import bound_nodes, eventually, make_gang, pod_body

LEASE = "grove-scheduler"
TIMINGS = ["--leader-elect-lease-duration", "2", "--leader-elect-renew-deadline", "1.5"]
TIMINGS += ["--leader-elect-retry-period", "0.5"]


async def create_gangs(kube: KubeClient, count: int, pods: int) -> None:
    """`count` PodGangs of `pods` ungated CPU-only pods each, every pod in the minimum."""
    for g in range(count):
        names = [f"g{g:03d}-w-{i}" for i in range(pods)]
        for name in names:
            await kube.create(PODS, pod_body(name, f"g{g:03d}", 0, gated=False))
        group = {
            "name": "w",
            "podReferences": [{"namespace": "default", "name": n} for n in names],
            "minReplicas": pods,
        }
        meta = {"name": f"g{g:03d}", "namespace": "default"}
        body = {
            "apiVersion": "scheduler.grove.io/v1alpha1",
            "kind": "PodGang",
            "metadata": meta,
            "spec": {"podgroups": [group]},
        }
        await kube.create(PODGANGS, body)


async def bound_pods(kube: KubeClient) -> set[str]:
    """Every pod the API shows bound."""
    pods = await kube.list(PODS, "default")
    return {p["metadata"]["name"] for p in pods["items"] if p["spec"].get("nodeName")}


async def holder(kube: KubeClient) -> str:
    """The Lease's holderIdentity ("" when there is no Lease yet)."""
    try:
        lease = await kube.get(LEASES, LEASE, "default")
    except NotFound:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


@contextlib.asynccontextmanager
async def scheduler_process(kubeconfig: str, log: Path, *extra: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """A `grove-scheduler` process electing on the Lease in `default` with 2 s leases; killed on the way out."""
    args = [sys.executable, "-m", "grove_sched", "--kubeconfig", kubeconfig, "--metrics-port", "0"]
    args += ["--lease-namespace", "default", *TIMINGS, *extra]
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost"}
    with log.open("w") as out:
        proc = await asyncio.create_subprocess_exec(*args, env=env, stdout=out, stderr=out)
    try:
        yield proc
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGCONT)
                proc.kill()
            await proc.wait()


@pytest.mark.slow
async def test_a_leader_frozen_past_its_lease_binds_nothing_on_waking(
    cluster: SimCluster, client: KubeClient, tmp_path: Path
) -> None:
    """SIGSTOP the leader while it binds a backlog of gangs, let the other candidate take the Lease, SIGCONT the
    first: it exits without one more bind. The other candidate serves another scheduler name, so every bind the
    API shows after the freeze could only have come from the frozen one."""
    await create_gangs(client, 60, 4)
    async with scheduler_process(cluster.kubeconfig, tmp_path / "a.log", "--bind-concurrency", "1") as first:

        async def first_binds() -> bool:  # the oldest gang goes first
            return bool(await bound_nodes(client, "g000")) and (await holder(client)).endswith(f"-{first.pid}")

        await eventually(first_binds, interval=0.01)
        async with scheduler_process(cluster.kubeconfig, tmp_path / "b.log", "--scheduler-name", "other") as second:
            # Hold the API server still for a moment, so the leader is parked on a request it has already sent
            # (not between its fence check and a send) when it is frozen; the server answers while it sleeps.
            stall = asyncio.ensure_future(asyncio.to_thread(cluster.call, lambda _server: time.sleep(0.6)))
            await asyncio.sleep(0.3)
            first.send_signal(signal.SIGSTOP)
            await stall

            async def second_leads() -> bool:
                return (await holder(client)).endswith(f"-{second.pid}")

            await eventually(second_leads, limit=90.0)  # the second process may start slowly on a busy machine
            before = await bound_pods(client)
            assert len(before) < 240, "the leader bound everything before it was frozen"
            first.send_signal(signal.SIGCONT)
            code = await asyncio.wait_for(first.wait(), 60)
            after = await bound_pods(client)
    log = (tmp_path / "a.log").read_text()
    assert code == 1, log
    assert "leadership lost" in log
    assert sorted(after - before) == [], log


async def test_a_scheduler_started_before_its_lease_namespace_waits_then_leads(
    cluster: SimCluster, client: KubeClient
) -> None:
    """No `grove-system` namespace yet: the scheduler does not die, it says once that it waits for the namespace,
    and it leads and schedules as soon as the namespace is created."""
    config = SchedulerConfig(
        metrics_port=0,
        metrics_host="127.0.0.1",
        lease=LeaseSettings(
            name="grove-scheduler", namespace="grove-system", lease_duration=1.0, renew_deadline=0.8, retry_period=0.05
        ),
    )
    app = build(config, client)
    with structlog.testing.capture_logs() as logs:
        task = asyncio.get_running_loop().create_task(app.manager.run(handle_signals=False))
        try:

            def waiting() -> list[dict[str, Any]]:
                return [e for e in logs if e["event"] == "waiting for the lease namespace to exist"]

            async def says_it_waits() -> bool:
                return bool(waiting()) or task.done()

            await eventually(says_it_waits)
            assert not task.done()
            assert not app.manager.started.is_set()
            await client.create(
                NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "grove-system"}}
            )

            async def leads() -> bool:
                return app.manager.started.is_set() or task.done()

            await eventually(leads)
            assert not task.done()
            assert len(waiting()) == 1
            await make_gang(client, "led", {"w": (2, 2, 1)})

            async def bound() -> bool:
                return len(await bound_nodes(client, "led")) == 2

            await eventually(bound)
        finally:
            app.manager.stop()
            await task
