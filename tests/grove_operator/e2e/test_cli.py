"""The `grove-operator` binary: runs against grove-sim as its own process, serves metrics, stops on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys

import aiohttp
from prometheus_client import generate_latest

from grove_runtime.client import KubeClient
from grove_sim.testing import SimCluster

from ._harness import OperatorThread, create_pcs, live_pods, load_sample, wait_for

AGG = "user-guide/01_core-concepts/single-node-aggregated.yaml"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _get(url: str) -> str | None:
    try:
        async with aiohttp.ClientSession() as session, session.get(url) as resp:
            return await resp.text() if resp.status == 200 else None
    except aiohttp.ClientError:
        return None


async def test_binary_reconciles_serves_metrics_and_exits_cleanly(
    crds: SimCluster, kube: KubeClient, namespace: str
) -> None:
    """`grove-operator --kubeconfig` (with leader election) creates the pods, exposes grove_operator_* metrics and
    exits 0 on SIGTERM. (Without webhooks: a stopped operator's configurations would refuse this module's later
    creates; the binary's webhooks are tested in tests/programs/test_webhooks.py.)"""
    health, metrics = _free_port(), _free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "grove_operator.cli", "--kubeconfig", crds.kubeconfig, "--leader-elect",
        "--health-port", str(health), "--metrics-port", str(metrics), "--namespace", namespace,
        "--lease-namespace", namespace, "--no-webhooks",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        await create_pcs(kube, namespace, load_sample(AGG))

        async def two_pods() -> bool:
            return len(await live_pods(kube, namespace)) == 2

        await wait_for(two_pods, "pods created by the binary")
        assert await wait_for(lambda: _get(f"http://127.0.0.1:{health}/readyz"), "readyz") == "ok\n"
        text = await wait_for(lambda: _get(f"http://127.0.0.1:{metrics}/metrics"), "metrics")
        assert 'grove_operator_reconcile_total{controller="podcliqueset",result=' in text
        assert "grove_operator_workqueue_depth" in text
        assert "grove_operator_reconcile_duration_seconds_bucket" in text
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        code = proc.returncode
        stderr = err.decode()
    assert code == 0, stderr[-2000:]


async def test_in_process_metrics_count_reconciles_by_controller(
    crds: SimCluster, kube: KubeClient, namespace: str
) -> None:
    """The operator's registry counts reconciles per controller and result."""
    op = OperatorThread(crds.kubeconfig).start()
    try:
        await create_pcs(kube, namespace, load_sample(AGG))

        async def two_pods() -> bool:
            return len(await live_pods(kube, namespace)) == 2

        await wait_for(two_pods, "pods")
        assert op.app is not None
        registry = op.app.metrics.registry
        text = op.call(lambda: generate_latest(registry).decode())
        for controller in ("podcliqueset", "podclique", "podgang"):
            assert f'grove_operator_reconcile_total{{controller="{controller}"' in text
    finally:
        await asyncio.to_thread(op.kill)
