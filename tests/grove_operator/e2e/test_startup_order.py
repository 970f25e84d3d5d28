"""Startup ordering for real: grove-sim, the operator, the scheduler and the real `grove-initc` (grove-sim runs the
`grove-initc` image as the installed program). Ready takes a second after start (`ready_delay`), so a child's Ready
`lastTransitionTime` lies strictly after those of the parent pods it waited for (`order_violations`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from grove_api import labels as glabels
from grove_operator.initc.verify import order_violations, ready_since, startup_parents_of
from grove_runtime.client import KubeClient
from grove_runtime.resources import PODS, ROLES
from grove_sim.cluster import nodes_from_flags
from grove_sim.server import SimOptions
from grove_sim.testing import SimCluster, console_script

from ...fixtures import exec_probe
from ._harness import OperatorThread, create_pcs, live_pods, load_sample, wait_for

Obj = dict[str, Any]
LIMIT = 180.0
"""Seconds a whole startup may take on a loaded 2-core machine (a guard against hangs, not a measurement)."""


@pytest.fixture(scope="module")
def audit_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("audit") / "audit.log"


@pytest.fixture(scope="module")
def sim(audit_log: Path) -> Iterator[SimCluster]:
    """Overrides the shared cluster: the real grove-initc, a `gate` image to hold parents back, Ready one second
    after start, a short crash-loop backoff, and an audit log."""
    options = SimOptions(
        nodes=nodes_from_flags(4, 8, "block=2,rack=4"),
        exec_images={"grove-initc": console_script("grove-initc"), "gate": f"{sys.executable} {exec_probe.__file__}"},
        ready_delay=1.0,
        restart_backoff=0.2,
        max_restart_backoff=1.0,
        audit_log=str(audit_log),
    )
    with SimCluster(options) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def scheduler(crds: SimCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[bytes]]:
    """The real grove-scheduler process for the module."""
    log = tmp_path_factory.mktemp("sched") / "grove-scheduler.log"
    argv = [console_script("grove-scheduler"), "--kubeconfig", crds.kubeconfig, "--no-leader-elect",
            "--metrics-bind-address", "0", "--log-level", "WARNING"]  # fmt: skip
    with log.open("wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


Clique = tuple[str, int, int | None, list[str]]
"""(name, replicas, minAvailable or None, startsAfter)."""


def pcs_doc(name: str, startup: str, cliques: list[Clique], *, gate: Path | None = None, gated: str = "") -> Obj:
    """A PodCliqueSet of tiny pods; the clique named ``gated`` runs a `gate` init container that lets a pod start
    only once ``gate/open-<pod index>`` or ``gate/open`` exists."""
    template: list[Obj] = []
    for clique, replicas, min_available, after in cliques:
        pod_spec: Obj = {"containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": "10m"}}}]}
        if clique == gated and gate is not None:
            env = [{"name": "OUT", "value": str(gate)}, {"name": "MODE", "value": "gate"}]
            pod_spec["initContainers"] = [{"name": "gate", "image": "gate:1", "env": env}]
        spec: Obj = {"roleName": clique, "replicas": replicas, "podSpec": pod_spec}
        if min_available is not None:
            spec["minAvailable"] = min_available
        if after:
            spec["startsAfter"] = after
        template.append({"name": clique, "spec": spec})
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "template": {"cliqueStartupType": startup, "cliques": template}},
    }


def clique_of(pod: Obj) -> str:
    return str(pod["metadata"]["labels"][glabels.LABEL_PODCLIQUE])


async def all_ready(kube: KubeClient, namespace: str, count: int) -> list[Obj] | None:
    pods = await live_pods(kube, namespace)
    return pods if len(pods) == count and all(ready_since(p) for p in pods) else None


def kubectl_statuses(kubectl: Callable[..., Any], namespace: str) -> dict[str, str]:
    """Pod name → the STATUS column of `kubectl get pods`."""
    out = kubectl("get", "pods", "-n", namespace, "--no-headers").stdout
    return {line.split()[0]: line.split()[2] for line in out.splitlines() if line.strip()}


@pytest.mark.parametrize("startup", ["CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit"])
async def test_each_clique_becomes_ready_after_its_parents_with_full_minimums(
    operator: OperatorThread, scheduler: Any, kube: KubeClient, namespace: str, startup: str
) -> None:
    """A three-level chain (minAvailable = replicas): every pod Ready only after all pods of its parent."""
    explicit = startup.endswith("Explicit")
    cliques: list[Clique] = [
        ("lead", 2, None, []),
        ("mid", 2, None, ["lead"] if explicit else []),
        ("tail", 2, None, ["mid"] if explicit else []),
    ]
    await create_pcs(kube, namespace, pcs_doc("chain", startup, cliques))
    pods = await wait_for(lambda: all_ready(kube, namespace, 6), "all pods Ready", LIMIT)
    assert order_violations(pods) == []
    parents = {clique_of(p): startup_parents_of(p) for p in pods}
    assert parents == {"chain-0-lead": {}, "chain-0-mid": {"chain-0-lead": 2}, "chain-0-tail": {"chain-0-mid": 2}}
    ready = {c: [ready_since(p) for p in pods if clique_of(p) == f"chain-0-{c}"] for c in ("lead", "mid", "tail")}
    assert max(ready["lead"]) < min(ready["mid"])  # type: ignore[type-var]
    assert max(ready["mid"]) < min(ready["tail"])  # type: ignore[type-var]


async def test_a_smaller_minimum_lets_children_start_before_the_last_parent_pod(
    operator: OperatorThread, scheduler: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    """`lead` has 3 pods, minAvailable 2, and its third pod is held back: `mid` (after lead) and `tail` (after lead
    and mid) still start, each only after the minimum of every parent was Ready."""
    (tmp_path / "open-0").touch()
    (tmp_path / "open-1").touch()
    cliques: list[Clique] = [("lead", 3, 2, []), ("mid", 2, 1, ["lead"]), ("tail", 1, None, ["lead", "mid"])]
    doc = pcs_doc("partial", "CliqueStartupTypeExplicit", cliques, gate=tmp_path, gated="lead")
    await create_pcs(kube, namespace, doc)

    async def started() -> list[Obj] | None:
        pods = await live_pods(kube, namespace)
        ready = [p for p in pods if ready_since(p)]
        children = {"partial-0-mid", "partial-0-tail"}
        return pods if len(pods) == 6 and len(ready) == 5 and {clique_of(p) for p in ready} >= children else None

    pods = await wait_for(started, "everything but the held-back pod Ready", LIMIT)
    held = [p for p in pods if not ready_since(p)]
    assert [clique_of(p) for p in held] == ["partial-0-lead"]
    assert held[0]["metadata"]["labels"][glabels.LABEL_PODCLIQUE_POD_INDEX] == "2"
    assert order_violations(pods) == []
    assert {clique_of(p): startup_parents_of(p) for p in pods if clique_of(p) != "partial-0-lead"} == {
        "partial-0-mid": {"partial-0-lead": 2},
        "partial-0-tail": {"partial-0-lead": 2, "partial-0-mid": 1},
    }


async def test_any_order_pods_carry_no_wait(
    operator: OperatorThread, scheduler: Any, kube: KubeClient, namespace: str
) -> None:
    """AnyOrder: no pod gets the grove-initc init container, so nothing holds any pod back."""
    cliques: list[Clique] = [("lead", 2, None, []), ("mid", 2, None, []), ("tail", 2, None, [])]
    await create_pcs(kube, namespace, pcs_doc("free", "CliqueStartupTypeAnyOrder", cliques))
    pods = await wait_for(lambda: all_ready(kube, namespace, 6), "all pods Ready", LIMIT)
    assert all(not p["spec"].get("initContainers") for p in pods)


async def test_simple3_scaling_group_parents_and_scaled_gangs(
    operator: OperatorThread, scheduler: Any, kube: KubeClient, namespace: str, audit_log: Path
) -> None:
    """The worked example of grove-reference §3.5: group parents resolve to the base-gang replicas only, the
    scaled gang's replica waits only within its own gang, every pod Ready in order; and every request grove-initc
    made was within the PodCliqueSet's Role (get/list/watch pods of its namespace), with the mounted token."""
    await create_pcs(kube, namespace, load_sample("simple/simple3-explicit-startup-order.yaml"))
    pods = await wait_for(lambda: all_ready(kube, namespace, 23), "all 23 pods Ready", LIMIT)
    assert order_violations(pods) == []
    waits = {clique_of(p): startup_parents_of(p) for p in pods}
    base_members = {f"simple3-0-sga-{j}-{c}": 2 for j in (0, 1) for c in ("pcb", "pcc")}
    assert waits == {
        "simple3-0-pca": {},
        "simple3-0-sga-0-pcb": {"simple3-0-pca": 3},
        "simple3-0-sga-0-pcc": {"simple3-0-pca": 3},
        "simple3-0-sga-1-pcb": {"simple3-0-pca": 3},
        "simple3-0-sga-1-pcc": {"simple3-0-pca": 3},
        "simple3-0-sga-2-pcb": {},
        "simple3-0-sga-2-pcc": {},
        "simple3-0-sga-0-pcd": base_members,
        "simple3-0-sga-1-pcd": base_members,
        "simple3-0-sga-2-pcd": {"simple3-0-sga-2-pcb": 2, "simple3-0-sga-2-pcc": 2},
        "simple3-0-pce": base_members,
    }
    gangs = {clique_of(p): p["metadata"]["labels"][glabels.LABEL_PODGANG] for p in pods}
    assert gangs["simple3-0-sga-2-pcd"] == gangs["simple3-0-sga-2-pcb"] == "simple3-0-sga-0"

    user = f"system:serviceaccount:{namespace}:simple3"
    rules = (await kube.get(ROLES, "grove.io:pcs:simple3", namespace))["rules"]
    allowed = {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    every_call = [e for e in _audit(audit_log) if e["userAgent"] == "grove-initc"]
    assert all((e.get("objectRef") or {}).get("namespace") for e in every_call), "only namespaced requests"
    calls = [e for e in every_call if e["objectRef"]["namespace"] == namespace]
    assert {e["verb"] for e in calls} >= {"list", "watch"}
    for event in calls:
        ref = event["objectRef"]
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        assert event["user"]["username"] == user, event
        assert (ref["apiGroup"], resource, event["verb"]) in allowed, event


def _audit(path: Path) -> list[Obj]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_parent_that_never_becomes_ready_holds_the_child_until_it_does(
    crds: SimCluster,
    operator: OperatorThread,
    scheduler: Any,
    kube: KubeClient,
    namespace: str,
    kubectl: Callable[..., Any],
    tmp_path: Path,
) -> None:
    """While no `lead` pod can start, `mid` shows Init:0/1; killing its grove-initc (grove-sim restarts it) and
    restarting the operator change nothing; once `lead` starts, `mid` follows in order."""
    cliques: list[Clique] = [("lead", 1, None, []), ("mid", 2, None, ["lead"])]
    doc = pcs_doc("held", "CliqueStartupTypeExplicit", cliques, gate=tmp_path, gated="lead")
    await create_pcs(kube, namespace, doc)

    async def waiting() -> dict[str, str] | None:
        pods = await live_pods(kube, namespace)
        mids = [p for p in pods if clique_of(p) == "held-0-mid"]
        running = [p for p in mids if _initc_running(p)]
        return {p["metadata"]["name"]: _initc_pid(p) for p in running} if len(running) == 2 else None

    pids = await wait_for(waiting, "both mid pods waiting in grove-initc", LIMIT)
    statuses = kubectl_statuses(kubectl, namespace)
    assert [statuses[name] for name in sorted(pids)] == ["Init:0/1", "Init:0/1"]
    victim = sorted(pids)[0]
    with contextlib.suppress(ProcessLookupError):
        os.kill(int(pids[victim]), signal.SIGKILL)

    async def restarted() -> Obj | None:
        pod = await kube.get(PODS, victim, namespace)
        return pod if _initc_running(pod) and _init_restarts(pod) >= 1 else None

    await wait_for(restarted, "the killed grove-initc restarted", LIMIT)
    await asyncio.to_thread(operator.kill)
    fresh = OperatorThread(crds.kubeconfig).start()
    try:
        await asyncio.sleep(2.0)  # let the new operator reconcile; the children must still wait
        pods = await live_pods(kube, namespace)
        assert not [p for p in pods if clique_of(p) == "held-0-mid" and ready_since(p)]
        assert set(kubectl_statuses(kubectl, namespace).values()) <= {"Init:0/1", "Init:Error", "Init:CrashLoopBackOff"}
        (tmp_path / "open").touch()
        pods = await wait_for(lambda: all_ready(kube, namespace, 3), "all pods Ready once lead starts", LIMIT)
        assert order_violations(pods) == []
    finally:
        await asyncio.to_thread(fresh.kill)
        operator.start()


def _initc_status(pod: Obj) -> Obj:
    for status in (pod.get("status") or {}).get("initContainerStatuses") or ():
        if status["name"] == glabels.INIT_CONTAINER_NAME:
            return dict(status)
    return {}


def _initc_running(pod: Obj) -> bool:
    return "running" in (_initc_status(pod).get("state") or {})


def _initc_pid(pod: Obj) -> str:
    return str(_initc_status(pod)["containerID"]).removeprefix("grove-sim://")


def _init_restarts(pod: Obj) -> int:
    return int(_initc_status(pod).get("restartCount") or 0)
