"""Lifecycle end-to-end helpers: the real scheduler on the test's loop, a workload, and a pod observer that checks
the rolling-update invariants at every pod event the API server sends.

The observer keeps the pods of a namespace from one list + watch, so it sees every state the API went through in
order. A *slot* is one pod position (PodClique, pod index) that was Ready when the observer started; a slot is down
while no live Ready pod fills it. At every event it checks: at most one standalone slot and at most one
scaling-group replica down per PodCliqueSet replica, and at most one PodCliqueSet replica with anything down.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from grove_api import labels as glabels
from grove_operator.kinds import PODCLIQUESETS
from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.clock import FakeClock
from grove_runtime.resources import NODES, PODS
from grove_sched.app import build as build_scheduler
from grove_sched.config import SchedulerConfig

from ._harness import OperatorThread, wait_for

Obj = dict[str, Any]
IMAGE = "registry.example.com/llm:1"


@contextlib.asynccontextmanager
async def running_scheduler(kubeconfig: str) -> AsyncIterator[None]:
    """grove-scheduler (no leader election, no listeners) as a task of the test's loop."""
    client = await KubeClient.from_kubeconfig(kubeconfig)
    config = SchedulerConfig(
        metrics_port=0, metrics_host="127.0.0.1", leader_elect=False, initial_backoff=0.05, max_backoff=0.5
    )
    app = build_scheduler(config, client)
    task = asyncio.get_running_loop().create_task(app.manager.run(handle_signals=False))
    try:
        yield
    finally:
        app.manager.stop()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await client.close()


def fast_clock_operator(kubeconfig: str, speed: float = 10) -> Iterator[OperatorThread]:
    """A grove-operator on a fake clock advanced `speed` times as fast as real time (for a module's `operator`
    fixture): "30 s of the operator's time" passes in 3 s while every timer, requeue and retry keeps running."""
    op = OperatorThread(kubeconfig, clock=FakeClock(), speed=speed).start()
    try:
        yield op
    finally:
        op.kill()


async def operator_time_passes(operator: OperatorThread, seconds: float) -> None:
    """Wait until `seconds` of the operator's own (simulated) time have passed."""
    assert operator.clock is not None
    clock = operator.clock
    start = operator.call(clock.monotonic)

    async def passed() -> bool:
        return operator.call(clock.monotonic) - start >= seconds

    await wait_for(passed, f"{seconds} s of the operator's time")


def _clique(name: str, replicas: int, min_available: int, image: str) -> Obj:
    container = {"name": "main", "image": image, "resources": {"requests": {"cpu": "100m"}}}
    pod_spec = {"containers": [container]}
    spec = {"roleName": name, "replicas": replicas, "minAvailable": min_available, "podSpec": pod_spec}
    return {"name": name, "spec": spec}


def workload(
    name: str,
    *,
    replicas: int = 2,
    strategy: str = "RollingRecreate",
    delay: str = "4h",
    image: str = IMAGE,
    group_replicas: int = 2,
    group_min: int = 1,
    standalone: tuple[tuple[str, int, int], ...] = (("router", 2, 1), ("worker", 2, 2)),
) -> Obj:
    """A PodCliqueSet of `replicas` replicas: standalone cliques (name, replicas, minAvailable) and a scaling group
    `inst` of a leader and two followers (a multi-node gang) with `group_replicas` replicas."""
    cliques = [_clique(n, r, m, image) for n, r, m in standalone]
    cliques += [_clique("leader", 1, 1, image), _clique("follower", 2, 2, image)]
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "updateStrategy": {"type": strategy},
            "template": {
                "terminationDelay": delay,
                "cliques": cliques,
                "podCliqueScalingGroups": [
                    {
                        "name": "inst",
                        "cliqueNames": ["leader", "follower"],
                        "replicas": group_replicas,
                        "minAvailable": group_min,
                    }
                ],
            },
        },
    }


async def set_image(kube: KubeClient, namespace: str, name: str, image: str) -> None:
    """Change the image of every clique of the PodCliqueSet (a template change)."""
    pcs = await kube.get(PODCLIQUESETS, name, namespace)
    cliques = pcs["spec"]["template"]["cliques"]
    for clique in cliques:
        for container in clique["spec"]["podSpec"]["containers"]:
            container["image"] = image
    await kube.patch(PODCLIQUESETS, name, {"spec": {"template": {"cliques": cliques}}}, namespace)


async def cordon(kube: KubeClient, unschedulable: bool) -> None:
    """Cordon (or uncordon) every node: new pods stay Pending."""
    for node in (await kube.list(NODES))["items"]:
        await kube.patch(NODES, node["metadata"]["name"], {"spec": {"unschedulable": unschedulable or None}})


def labels_of(pod: Obj) -> dict[str, str]:
    """The pod's labels."""
    return dict((pod.get("metadata") or {}).get("labels") or {})


def is_ready(pod: Obj) -> bool:
    """Ready condition True and not terminating."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def template_hash(pod: Obj) -> str:
    """The pod's template hash label."""
    return labels_of(pod).get(glabels.LABEL_POD_TEMPLATE_HASH, "")


Slot = tuple[str, str]


@dataclass
class PodObserver:
    """Every pod state of a namespace, in the API's order, with the invariants checked after each event."""

    kube: KubeClient
    namespace: str
    pods: dict[str, Obj] = field(default_factory=dict)
    slots: dict[Slot, Obj] = field(default_factory=dict)
    """Slot → labels of the pod that filled it when observation started."""
    deleted: list[tuple[int, str, bool]] = field(default_factory=list)
    """(PCS replica, pod, was Ready) of every pod seen going away, in order."""
    violations: list[str] = field(default_factory=list)
    max_down: dict[str, int] = field(default_factory=lambda: {"standalone": 0, "group": 0, "replicas": 0})
    events: int = 0
    _task: asyncio.Task[None] | None = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def __aenter__(self) -> PodObserver:
        self._task = asyncio.get_running_loop().create_task(self._run())
        await self._ready.wait()
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        listing = await self.kube.list(PODS, self.namespace)
        for pod in listing["items"]:
            self.pods[pod["metadata"]["name"]] = pod
            if is_ready(pod):
                labels = labels_of(pod)
                self.slots[(labels[glabels.LABEL_PODCLIQUE], labels[glabels.LABEL_PODCLIQUE_POD_INDEX])] = labels
        self._ready.set()
        version = listing["metadata"]["resourceVersion"]
        while True:
            try:
                async with self.kube.watch(PODS, self.namespace, resource_version=version) as stream:
                    async for event in stream:
                        obj = event.get("object") or {}
                        version = (obj.get("metadata") or {}).get("resourceVersion") or version
                        if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                            self._apply(str(event["type"]), obj)
            except errors.ApiError as exc:  # a watch that expired is resumed from the last version seen
                self.violations.append(f"watch failed: {exc}")
                return

    def _apply(self, kind: str, pod: Obj) -> None:
        self.events += 1
        name = pod["metadata"]["name"]
        previous = self.pods.get(name)
        going = kind == "DELETED" or bool(pod["metadata"].get("deletionTimestamp"))
        if going and previous is not None and not previous["metadata"].get("deletionTimestamp"):
            replica = int(labels_of(pod).get(glabels.LABEL_PCS_REPLICA_INDEX, "-1"))
            self.deleted.append((replica, name, is_ready(previous)))
        if kind == "DELETED":
            self.pods.pop(name, None)
        else:
            self.pods[name] = pod
        self._check()

    def down(self) -> list[Obj]:
        """Labels of the slots no live Ready pod fills now."""
        up = {
            (labels_of(p)[glabels.LABEL_PODCLIQUE], labels_of(p).get(glabels.LABEL_PODCLIQUE_POD_INDEX, ""))
            for p in self.pods.values()
            if is_ready(p)
        }
        return [labels for slot, labels in self.slots.items() if slot not in up]

    def _check(self) -> None:
        down = self.down()
        by_replica: dict[str, tuple[set[str], set[tuple[str, str]]]] = {}
        for labels in down:
            standalone, groups = by_replica.setdefault(labels[glabels.LABEL_PCS_REPLICA_INDEX], (set(), set()))
            if glabels.LABEL_PCSG in labels:
                groups.add((labels[glabels.LABEL_PCSG], labels[glabels.LABEL_PCSG_REPLICA_INDEX]))
            else:
                standalone.add(labels[glabels.LABEL_PODCLIQUE] + "/" + labels[glabels.LABEL_PODCLIQUE_POD_INDEX])
        for replica, (standalone, groups) in by_replica.items():
            self.max_down["standalone"] = max(self.max_down["standalone"], len(standalone))
            self.max_down["group"] = max(self.max_down["group"], len(groups))
            if len(standalone) > 1 or len(groups) > 1:
                self.violations.append(f"replica {replica}: down at once: {sorted(standalone)} {sorted(groups)}")
        self.max_down["replicas"] = max(self.max_down["replicas"], len(by_replica))
        if len(by_replica) > 1:
            self.violations.append(f"replicas down at once: {sorted(by_replica)}")

    def replica_order(self) -> list[int]:
        """PCS replicas in the order their pods were deleted, consecutive repeats collapsed."""
        order: list[int] = []
        for replica, _, _ in self.deleted:
            if not order or order[-1] != replica:
                order.append(replica)
        return order
