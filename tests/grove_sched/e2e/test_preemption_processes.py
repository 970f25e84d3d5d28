"""The acceptance scenario with grove-sim, grove-operator and grove-scheduler as processes, driven by kubectl:
low-priority PodCliqueSets fill the cluster, a high-priority one preempts exactly one whole gang and binds; the
victim's pods, recreated by the operator, wait (none is left running) and say why."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import yaml

from grove_runtime.client import KubeClient
from grove_runtime.resources import PODS
from grove_sim.testing import SimCluster

from ...programs._proc import clean_env, running
from .conftest import eventually

Obj = dict[str, Any]
KUBECTL = "/usr/bin/kubectl"
LOW = ("batch-a", "batch-b", "batch-c", "batch-d")


def pcs(name: str, priority_class: str) -> Obj:
    """A PodCliqueSet of one clique of two 8-GPU pods."""
    container = {
        "name": "main",
        "image": "registry.example.com/grove/echo:1.0",
        "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}},
    }
    clique = {"name": "w", "spec": {"roleName": "worker", "replicas": 2, "podSpec": {"containers": [container]}}}
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": 1, "template": {"priorityClassName": priority_class, "cliques": [clique]}},
    }


def priority_class(name: str, value: int) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def kubectl_apply(env: dict[str, str], *objects: Obj) -> None:
    document = yaml.safe_dump_all(objects)
    subprocess.run([KUBECTL, "apply", "-f", "-"], input=document, env=env, check=True, capture_output=True, text=True)


async def kubectl_get_pods(env: dict[str, str], selector: str) -> str:
    """`kubectl get pods -l selector` as printed."""
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "get", "pods", "-l", selector, "--no-headers",
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def bound_by_pcs(client: KubeClient) -> dict[str, dict[str, str]]:
    """PodCliqueSet → {pod uid: node} of its bound, live pods."""
    out: dict[str, dict[str, str]] = {}
    for pod in (await client.list(PODS, "default"))["items"]:
        owner = pod["metadata"].get("labels", {}).get("app.kubernetes.io/part-of", "")
        if pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp"):
            out.setdefault(owner, {})[pod["metadata"]["uid"]] = pod["spec"]["nodeName"]
    return out


async def test_high_priority_podcliqueset_preempts_one_whole_gang(
    cluster: SimCluster, client: KubeClient, tmp_path: Path
) -> None:
    env = clean_env(tmp_path, KUBECONFIG=cluster.kubeconfig)
    kube_env = {**env, "KUBECACHEDIR": str(tmp_path / "cache")}
    async with (
        running("grove-operator", "--no-leader-elect", "--metrics-bind-address=0", env=env),
        running("grove-scheduler", "--no-leader-elect", "--metrics-bind-address=0", env=env) as scheduler,
    ):
        kubectl_apply(kube_env, priority_class("batch", 10), priority_class("inference", 1000))
        kubectl_apply(kube_env, *(pcs(name, "batch") for name in LOW))

        async def full() -> dict[str, dict[str, str]] | None:
            found = await bound_by_pcs(client)
            return found if all(len(found.get(name, {})) == 2 for name in LOW) else None

        before = await eventually(full, limit=120)
        kubectl_apply(kube_env, pcs("serving", "inference"))

        async def serving_bound() -> dict[str, dict[str, str]] | None:
            found = await bound_by_pcs(client)
            return found if len(found.get("serving", {})) == 2 else None

        after = await eventually(serving_bound, limit=120)
        await scheduler.event("preempting")
        untouched = [name for name in LOW if after.get(name) == before[name]]
        evicted = [name for name in LOW if name not in untouched]
        assert len(untouched) == 3
        assert len(evicted) == 1
        assert after.get(evicted[0], {}) == {}  # no victim pod left running: the gang went whole

        async def victim_says_why() -> str | None:
            pods = await client.list(PODS, "default", label_selector=f"app.kubernetes.io/part-of={evicted[0]}")
            for pod in pods["items"]:
                for cond in (pod.get("status") or {}).get("conditions") or ():
                    if cond.get("type") == "PodScheduled" and cond.get("reason") == "Unschedulable":
                        return str(cond.get("message"))
            return None

        assert "preemption cannot help" in await eventually(victim_says_why, limit=120)
        pods = await kubectl_get_pods(kube_env, f"app.kubernetes.io/part-of={evicted[0]}")
        assert "SchedulingGated" not in pods
        assert "Pending" in pods
