"""The Events the scheduler records, in one place so their reasons and wording stay consistent.

Why: `kubectl describe` is where people look first. `FailedScheduling` (Warning) goes on every pod of the gang
and on the PodGang with the placement's reasons; `Preempted` (Warning) on a victim gang's PodGang and pods names
the preemptor and why, `Preempting` (Normal) on the preemptor's PodGang and pods lists its victims; `Scheduled`
(Normal) goes once per gang on its PodGang, naming every pod's node (`kubectl describe podgang` shows where the
gang went; a pod shows its node in `spec.nodeName`), and on the pod itself for a pod that is a gang of its own,
with kube-scheduler's message; `InvalidNodeResources` (Warning) on a Node the scheduler sets aside because it
cannot account its allocatable; `GangTimeout` (Warning) on a gang not placed within its Koordinator
`gang-timeout`; `DefragmentationPlan` (Normal) on a gang's PodGang (on the pod of a gang of one) naming the
gangs whose move would let it fit (`--defrag-report`). Recording is best effort (the runtime `EventRecorder`
logs API failures).

A scheduler serving several names (`--scheduler-name` repeated) reports each object's Events as the name it
addressed (`reportingComponent` / `source.component`): a pod by its `schedulerName`, a PodGang by its
`grove.io/scheduler-name` label; anything else as the first name.

One `Scheduled` Event per gang, not per pod: every Event is an API write that every Event watcher decodes again;
at one per pod they were the third write per bound pod after the bind and the kubelet's status, and dropping them
cut the scheduler's CPU by a fifth. A failure is still reported on every pod, where a person looks for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from grove_api.labels import LABEL_SCHEDULER_NAME

__all__ = [
    "DEFRAGMENTATION_PLAN",
    "FAILED_SCHEDULING",
    "GANG_TIMEOUT",
    "INVALID_NODE_RESOURCES",
    "PREEMPTED",
    "PREEMPTING",
    "SCHEDULED",
    "EventSink",
    "GangEvents",
    "assigned_message",
]

FAILED_SCHEDULING = "FailedScheduling"
GANG_TIMEOUT = "GangTimeout"
DEFRAGMENTATION_PLAN = "DefragmentationPlan"
PREEMPTED = "Preempted"
PREEMPTING = "Preempting"
SCHEDULED = "Scheduled"
INVALID_NODE_RESOURCES = "InvalidNodeResources"
_POD = {"apiVersion": "v1", "kind": "Pod"}
_NODE = {"apiVersion": "v1", "kind": "Node"}
_PODGANG = {"apiVersion": "scheduler.grove.io/v1alpha1", "kind": "PodGang"}


class EventSink(Protocol):
    """What `grove_runtime.events.EventRecorder` offers."""

    async def normal(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        """Record a Normal event."""
        ...

    async def warning(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        """Record a Warning event."""
        ...


def _typed(obj: Mapping[str, Any], kind: Mapping[str, str]) -> dict[str, Any]:
    """Objects from list responses lack apiVersion/kind; the Event's involvedObject needs them."""
    return {**obj, **kind}


class GangEvents:
    """Records the scheduler's Events through an `EventSink` (`by_name`: one per served scheduler name)."""

    def __init__(self, sink: EventSink, by_name: Mapping[str, EventSink] | None = None) -> None:
        self._sink = sink
        self._by_name = dict(by_name or {})

    def sink_for(self, obj: Mapping[str, Any] | None) -> EventSink:
        """The recorder of the scheduler name `obj` addressed (a pod's `schedulerName`, a PodGang's label)."""
        if obj is None or not self._by_name:
            return self._sink
        name = (obj.get("spec") or {}).get("schedulerName")
        if name is None:
            name = ((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_SCHEDULER_NAME)
        return self._by_name.get(str(name), self._sink)

    async def failed(
        self, podgang: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]], reasons: Iterable[str]
    ) -> None:
        """FailedScheduling on the PodGang and each pod, with every reason."""
        message = "; ".join(reasons) or "the gang could not be placed"
        await self._all(podgang, pods, FAILED_SCHEDULING, message, warning=True)

    async def gang_timeout(
        self, podgang: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]], message: str
    ) -> None:
        """GangTimeout on a gang's PodGang and pods: not placed within its gang-timeout."""
        await self._all(podgang, pods, GANG_TIMEOUT, message, warning=True)

    async def preempted(
        self, podgang: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]], message: str
    ) -> None:
        """Preempted on a victim gang's PodGang and pods."""
        await self._all(podgang, pods, PREEMPTED, message, warning=True)

    async def preempting(
        self, podgang: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]], message: str
    ) -> None:
        """Preempting on the preemptor's PodGang and pods."""
        await self._all(podgang, pods, PREEMPTING, message, warning=False)

    async def defragmentation_plan(
        self, podgang: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]], message: str
    ) -> None:
        """DefragmentationPlan on the gang's PodGang, or on its pod when it is a gang of one."""
        await self._all(podgang, () if podgang is not None else pods, DEFRAGMENTATION_PLAN, message, warning=False)

    async def _all(
        self, podgang: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]], reason: str, message: str,
        *, warning: bool,
    ) -> None:  # fmt: skip
        def record(obj: Mapping[str, Any]) -> Any:
            sink = self.sink_for(obj)
            return (sink.warning if warning else sink.normal)(obj, reason, message)

        calls = [record(_typed(p, _POD)) for p in pods]
        if podgang is not None:
            calls.append(record(_typed(podgang, _PODGANG)))
        await asyncio.gather(*calls)

    async def node_set_aside(self, node: Mapping[str, Any], reason: str) -> None:
        """InvalidNodeResources on a Node no pod is placed on until it changes."""
        message = f"no pod is placed on this node until it changes: {reason}"
        await self._sink.warning(_typed(node, _NODE), INVALID_NODE_RESOURCES, message)

    async def scheduled(
        self, podgang: Mapping[str, Any] | None, pods: Mapping[str, Mapping[str, Any]], assignments: Mapping[str, str]
    ) -> None:
        """One Scheduled Event: on the PodGang, naming every pod's node (`assigned_message`); for a gang of one pod
        without a PodGang, on the pod: "Successfully assigned ns/pod to node"."""
        if podgang is not None:
            meta = podgang.get("metadata") or {}
            gang = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
            await self.sink_for(podgang).normal(
                _typed(podgang, _PODGANG), SCHEDULED, assigned_message(gang, assignments)
            )
            return
        for name, node in sorted(assignments.items()):
            pod = pods.get(name)
            if pod is not None:
                ns = (pod.get("metadata") or {}).get("namespace", "")
                await self.sink_for(pod).normal(
                    _typed(pod, _POD), SCHEDULED, f"Successfully assigned {ns}/{name} to {node}"
                )


def assigned_message(gang: str, assignments: Mapping[str, str], limit: int = 1024) -> str:
    """ "Successfully assigned ns/gang's 4 pod(s) to 2 node(s): node-a (p-0, p-1), node-b (p-2, p-3)", nodes and
    pods in name order, within an Event message's 1,024 characters: cut at a whole node ("and N more node(s)"),
    or inside the first node's pods ("and N more") when that node alone is too long."""
    by_node: dict[str, list[str]] = {}
    for pod, node in sorted(assignments.items()):
        by_node.setdefault(node, []).append(pod)
    message = f"Successfully assigned {gang}'s {len(assignments)} pod(s) to {len(by_node)} node(s): "
    nodes = sorted(by_node.items())
    for i, (node, names) in enumerate(nodes):
        part = f"{', ' if i else ''}{node} ({', '.join(names)})"
        more = f", and {len(nodes) - i - 1} more node(s)" if i < len(nodes) - 1 else ""
        if len(message) + len(part) + len(more) <= limit:
            message += part
            continue
        if i:
            return message + f", and {len(nodes) - i} more node(s)"
        shown: list[str] = []
        for k, name in enumerate(names):
            tail = f", and {len(names) - k} more){more}"
            if len(message) + len(f"{node} ({', '.join([*shown, name])}") + len(tail) > limit:
                return message + f"{node} ({', '.join(shown)}" + tail
            shown.append(name)
    return message[:limit]
