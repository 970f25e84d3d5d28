"""Workloads written for koord-scheduler, run by `grove-scheduler --scheduler-name koord-scheduler` with
grove-operator, both as processes against grove-sim, driven by kubectl: a PodCliqueSet with
`scheduling.koordinator.sh/gang-timeout` that cannot fit shows `Scheduled=False` reason `GangTimeout` and a
`GangTimeout` Event once its timeout (2 s here, on the real clock) has passed; one with
`scheduling.koordinator.sh/network-topology-zone` lands in that rack."""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from grove_runtime.client import KubeClient
from grove_runtime.clock import FakeClock
from grove_runtime.errors import NotFound
from grove_runtime.resources import NODES, PODS
from grove_sched.podgang_status import PODGANGS
from grove_sim.testing import SimCluster

from ...programs._proc import clean_env, running
from .conftest import RACK, eventually, make_gang, running_scheduler, scheduled_condition

pytestmark = pytest.mark.slow

KUBECTL = "/usr/bin/kubectl"
Obj = dict[str, Any]


def kubectl(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    """Run kubectl; its standard output."""
    return subprocess.run([KUBECTL, *args], env=env, input=stdin, check=True, capture_output=True, text=True).stdout


def koord_pcs(name: str, annotations: dict[str, str], pods: int, gpus: int) -> Obj:
    """A PodCliqueSet for koord-scheduler: one clique of `pods` pods of `gpus` GPUs each."""
    container = {
        "name": "main",
        "image": "registry.example.com/infer:1.0",
        "resources": {"requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}},
    }
    clique = {
        "name": "w",
        "spec": {
            "roleName": "worker",
            "replicas": pods,
            "podSpec": {"schedulerName": "koord-scheduler", "containers": [container]},
        },
    }
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"replicas": 1, "template": {"cliques": [clique]}},
    }


async def test_gang_timeout_and_zone(cluster: SimCluster, client: KubeClient, tmp_path: Path) -> None:
    env = clean_env(tmp_path, KUBECONFIG=cluster.kubeconfig)
    kube_env = {**env, "KUBECACHEDIR": str(tmp_path / "cache")}
    nodes = (await client.list(NODES))["items"]
    last_rack = max(n["metadata"]["labels"][RACK] for n in nodes)
    async with (
        running("grove-operator", "--no-leader-elect", "--metrics-bind-address=0", env=env),
        running(
            "grove-scheduler", "--no-leader-elect", "--metrics-bind-address=0",
            "--scheduler-name", "grove-scheduler", "--scheduler-name", "koord-scheduler", env=env,
        ),
    ):  # fmt: skip
        too_big = koord_pcs("too-big", {"scheduling.koordinator.sh/gang-timeout": "2s"}, pods=9, gpus=8)
        zoned = koord_pcs("zoned", {"scheduling.koordinator.sh/network-topology-zone": f"{RACK}={last_rack}"}, 2, 4)
        kubectl(
            kube_env,
            "apply",
            "-f",
            "-",
            stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": [too_big, zoned]}),
        )

        seen: list[object] = []

        async def timed_out() -> Obj | None:
            with contextlib.suppress(NotFound):
                cond = await scheduled_condition(client, "too-big-0")
                seen[:] = [cond]
                return cond if cond is not None and cond.get("reason") == "GangTimeout" else None
            return None

        try:
            cond = await eventually(timed_out, limit=60)
        except AssertionError as err:  # say what the gang showed instead (a guard against hangs, not a timing)
            pods = kubectl(kube_env, "get", "pods", "-l", "app.kubernetes.io/part-of=too-big", "--no-headers")
            raise AssertionError(f"{err}; Scheduled condition: {seen}; pods:\n{pods}") from err
        assert cond["status"] == "False"
        assert "gang-timeout of 2s" in cond["message"]
        events = json.loads(kubectl(kube_env, "get", "events", "-o", "json", "--field-selector", "reason=GangTimeout"))
        kinds = {e["involvedObject"]["kind"] for e in events["items"]}
        assert kinds == {"PodGang", "Pod"}
        assert {e["source"]["component"] for e in events["items"]} == {"koord-scheduler"}

        async def zoned_bound() -> list[Obj] | None:
            pods = (await client.list(PODS, "default", label_selector="app.kubernetes.io/part-of=zoned"))["items"]
            return pods if len(pods) == 2 and all(p["spec"].get("nodeName") for p in pods) else None

        racks = {n["metadata"]["name"]: n["metadata"]["labels"][RACK] for n in nodes}
        assert {racks[p["spec"]["nodeName"]] for p in await eventually(zoned_bound, limit=60)} == {last_rack}


async def test_gang_timeout_of_30s_on_a_fake_clock(cluster: SimCluster, client: KubeClient) -> None:
    """The acceptance's 30 s: a gang that cannot fit, annotated `gang-timeout: 30s`, is Unschedulable until the
    scheduler's (fake) clock has moved 30 s, then GangTimeout; no wall time passes."""
    clock = FakeClock()
    async with running_scheduler(cluster.kubeconfig, clock=clock, unschedulable_flush=300.0):
        pods = await make_gang(client, "huge", {"w": (9, 9, 8)}, ungate=False)
        annotation = {"metadata": {"annotations": {"scheduling.koordinator.sh/gang-timeout": "30s"}}}
        await client.patch(PODGANGS, "huge", annotation, "default")
        for name in pods["w"]:
            await client.patch(PODS, name, {"spec": {"schedulingGates": None}}, "default")

        async def reason() -> str | None:
            cond = await scheduled_condition(client, "huge")
            return str(cond.get("reason")) if cond is not None else None

        assert await eventually(reason) == "Unschedulable"
        await eventually(lambda: _armed(clock))
        clock.advance(30.0)

        async def timed_out() -> bool:
            return await reason() == "GangTimeout"

        assert await eventually(timed_out)


async def _armed(clock: FakeClock) -> bool:
    """The gang-timeout timer sleeps on the fake clock, 30 s ahead (the queue's flush is set to 300 s)."""
    return any(abs(delay - 30.0) < 1e-6 for delay in clock.pending_delays())
