"""The first API's CRDs are optional: `grove-operator` on a cluster with only upstream's CRDs syncs its caches, turns
the `grove.dynamo.ai/v1` controllers off (saying so once) and reconciles PodCliqueSets as usual."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from grove_runtime.client import KubeClient
from grove_sim.cluster import nodes_from_flags
from grove_sim.testing import SimCluster

from ._harness import create_pcs, live_pods, load_sample, wait_for

CRDS = Path(__file__).resolve().parents[3] / "crds"
AGG = "user-guide/01_core-concepts/single-node-aggregated.yaml"


@pytest.fixture(scope="module")
def upstream_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimCluster]:
    """A cluster of its own with the grove.io and scheduler.grove.io CRDs, not grove.dynamo.ai's."""
    with SimCluster(nodes=nodes_from_flags(2, 8, "")) as sim:
        env = dict(os.environ, KUBECONFIG=sim.kubeconfig, KUBECACHEDIR=str(tmp_path_factory.mktemp("kubecache")))
        upstream = [str(f) for f in sorted(CRDS.glob("*.yaml")) if not f.name.startswith("grove.dynamo.ai_")]
        subprocess.run(["kubectl", "apply", *(a for f in upstream for a in ("-f", f))], env=env, check=True)
        yield sim


async def test_operator_without_the_first_apis_crds_runs_upstreams(upstream_only: SimCluster) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "grove_operator.cli", "--kubeconfig", upstream_only.kubeconfig, "--no-leader-elect",
        "--health-port", "0", "--metrics-port", "0", "--no-webhooks",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    kube = await KubeClient.from_kubeconfig(upstream_only.kubeconfig)
    try:
        await create_pcs(kube, "default", load_sample(AGG))

        async def two_pods() -> bool:
            return len(await live_pods(kube, "default")) == 2

        await wait_for(two_pods, "pods of a PodCliqueSet on a cluster without the first API")
    finally:
        await kube.close()
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    logs = err.decode()
    assert proc.returncode == 0, logs[-2000:]
    assert logs.count("first API not installed") == 1, logs[-2000:]
