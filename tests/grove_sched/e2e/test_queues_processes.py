"""KAI-style workloads on grove-sim with grove-operator and grove-scheduler as processes, driven by kubectl: the
KAI guide's disaggregated PodCliqueSet (schedulerName kai-scheduler, `kai.scheduler/queue: default-queue`, block
and rack constraints) applied unchanged next to KAI's default queues to one grove-scheduler serving
`grove-scheduler` and `kai-scheduler`: every gang placed, the constraints held, Events and metrics naming
`kai-scheduler`, the queue's status and `kubectl get queues` showing what it holds."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from grove_runtime.client import KubeClient
from grove_runtime.resources import NODES, PODS
from grove_sched.podgang_status import PODGANGS
from grove_sim.testing import SimCluster

from ...fixtures.net import fetch, free_port
from ...programs._proc import clean_env, running
from .conftest import ROOT, eventually

pytestmark = pytest.mark.slow

Obj = dict[str, Any]
KUBECTL = "/usr/bin/kubectl"
KAI = ROOT / "tests" / "fixtures" / "kai"


def kubectl(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([KUBECTL, *args], env=env, check=True, capture_output=True, text=True)
    return done.stdout


async def test_kai_disaggregated_example_runs_unchanged_with_default_queue(
    cluster: SimCluster, client: KubeClient, tmp_path: Path
) -> None:
    env = clean_env(tmp_path, KUBECONFIG=cluster.kubeconfig)
    kube_env = {**env, "KUBECACHEDIR": str(tmp_path / "cache")}
    port = free_port()
    kubectl(kube_env, "apply", "-f", str(ROOT / "examples" / "cluster-topology.yaml"))
    kubectl(kube_env, "apply", "-f", str(KAI / "queues.yaml"))
    async with (
        running("grove-operator", "--no-leader-elect", "--metrics-bind-address=0", env=env),
        running(
            "grove-scheduler",
            "--no-leader-elect",
            f"--metrics-bind-address=127.0.0.1:{port}",
            "--scheduler-name",
            "grove-scheduler",
            "--scheduler-name",
            "kai-scheduler",
            "--queue-status-interval",
            "0.2",
            env=env,
        ),  # fmt: skip
    ):
        kubectl(kube_env, "apply", "-f", str(KAI / "disaggregated.yaml"))

        async def all_bound() -> list[Obj] | None:
            pods = (await client.list(PODS, "default", label_selector="app.kubernetes.io/part-of=kai-disagg"))["items"]
            bound = [p for p in pods if p["spec"].get("nodeName")]
            return bound if len(pods) == 9 and len(bound) == 9 else None

        pods = await eventually(all_bound, limit=60)
        node_of = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods}
        nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in (await client.list(NODES))["items"]}

        def where(fragment: str, level: str) -> set[str]:
            return {nodes[node][f"topology.kubernetes.io/{level}"] for pod, node in node_of.items() if fragment in pod}

        base = [p for p in node_of if "-0-decode-1-" not in p]
        assert len({nodes[node_of[p]]["topology.kubernetes.io/block"] for p in base}) == 1  # one block per gang
        assert len(where("-prefill-", "rack")) == 1
        for replica in ("-0-decode-0-", "-0-decode-1-"):
            assert len(where(replica, "rack")) == 1
        for name in ("kai-disagg-0", "kai-disagg-0-decode-0"):
            gang = await client.get(PODGANGS, name, "default")
            assert gang["metadata"]["name"] == name

        async def queue_holds() -> str | None:
            text = kubectl(kube_env, "get", "queues")
            line = next((row for row in text.splitlines() if row.startswith("default-queue ")), "")
            return text if "20" in line.split() else None  # 2 x 4 (prefill) + 2 x (2 + 2 x 2) (decode)

        assert {p["spec"]["schedulerName"] for p in pods} == {"kai-scheduler"}
        events = json.loads(kubectl(kube_env, "get", "events", "-o", "json", "--field-selector", "reason=Scheduled"))
        assert {e["source"]["component"] for e in events["items"]} == {"kai-scheduler"}
        text = await asyncio.to_thread(fetch, f"http://127.0.0.1:{port}/metrics")
        assert 'grove_scheduler_pods_bound_total{scheduler_name="kai-scheduler"} 9.0' in text

        printed = await eventually(queue_holds, limit=30)
        assert "GPU-ALLOCATED" in printed
        parent = await asyncio.to_thread(kubectl, kube_env, "get", "queue", "default-parent-queue", "-o", "yaml")
        assert "allocatedGpus: 20" in parent
