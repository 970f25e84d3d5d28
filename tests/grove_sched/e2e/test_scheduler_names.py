"""One grove-scheduler serving `kai-scheduler` too: the KAI guide's disaggregated PodCliqueSet (schedulerName
`kai-scheduler`, `kai.scheduler/queue` labels), applied unchanged with kubectl to grove-sim with grove-operator and
`grove-scheduler --scheduler-name grove-scheduler --scheduler-name kai-scheduler` as processes: every pod is placed,
the block and rack constraints hold, and the Events and metrics say `kai-scheduler`."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from grove_runtime.client import KubeClient
from grove_runtime.resources import NODES, PODS
from grove_sim.testing import SimCluster

from ...fixtures.net import fetch, free_port
from ...programs._proc import clean_env, running
from .conftest import BLOCK, RACK, ROOT, eventually

pytestmark = pytest.mark.slow

KUBECTL = "/usr/bin/kubectl"
FIXTURE = ROOT / "tests" / "fixtures" / "schedulers" / "kai-disaggregated.yaml"
PCS = "disaggregated-inference"


def kubectl(env: dict[str, str], *args: str) -> str:
    """Run kubectl; its standard output."""
    return subprocess.run([KUBECTL, *args], env=env, check=True, capture_output=True, text=True).stdout


async def test_kai_guide_podcliqueset_runs_unchanged(cluster: SimCluster, client: KubeClient, tmp_path: Path) -> None:
    env = clean_env(tmp_path, KUBECONFIG=cluster.kubeconfig)
    kube_env = {**env, "KUBECACHEDIR": str(tmp_path / "cache")}
    port = free_port()
    names = ["--scheduler-name", "grove-scheduler", "--scheduler-name", "kai-scheduler"]
    async with (
        running("grove-operator", "--no-leader-elect", "--metrics-bind-address=0", env=env),
        running("grove-scheduler", "--no-leader-elect", f"--metrics-bind-address=127.0.0.1:{port}", *names, env=env),
    ):
        kubectl(kube_env, "apply", "-f", str(FIXTURE))

        async def all_bound() -> list[dict[str, Any]] | None:
            pods = (await client.list(PODS, "default", label_selector=f"app.kubernetes.io/part-of={PCS}"))["items"]
            return pods if len(pods) == 10 and all(p["spec"].get("nodeName") for p in pods) else None

        pods = await eventually(all_bound, limit=60)
        assert {p["spec"]["schedulerName"] for p in pods} == {"kai-scheduler"}
        labels = {p["spec"]["nodeName"]: p for p in pods}
        nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in (await client.list(NODES))["items"]}
        assert len({nodes[name][BLOCK] for name in labels}) == 1
        for group in ("decoder", "prefill"):
            for replica in ("0", "1"):
                racks = {
                    nodes[p["spec"]["nodeName"]][RACK]
                    for p in pods
                    if p["metadata"]["labels"].get("grove.io/podcliquescalinggroup") == f"{PCS}-0-{group}"
                    and p["metadata"]["labels"].get("grove.io/podcliquescalinggroup-replica-index") == replica
                }
                assert len(racks) <= 1, (group, replica, racks)
        events = json.loads(kubectl(kube_env, "get", "events", "-o", "json", "--field-selector", "reason=Scheduled"))
        assert {e["source"]["component"] for e in events["items"]} == {"kai-scheduler"}
        text = await asyncio.to_thread(fetch, f"http://127.0.0.1:{port}/metrics")
        assert 'grove_scheduler_pods_bound_total{scheduler_name="kai-scheduler"} 10.0' in text
