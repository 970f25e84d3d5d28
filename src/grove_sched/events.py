"""The Events the scheduler records, in one place so their reasons and wording stay consistent.

Why: `kubectl describe pod` is where people look first. `FailedScheduling` (Warning) goes on every pod of the gang
and on the PodGang with the placement's reasons;
`Preempted` (Warning) on a victim gang's PodGang and pods names the preemptor and why, `Preempting` (Normal) on the
preemptor's PodGang and pods lists its victims; `Scheduled` (Normal) on each pod says where it went, with the
same message kube-scheduler uses; `InvalidNodeResources` (Warning) on a Node the scheduler sets aside because it
cannot account its allocatable. Recording is best effort (the runtime `EventRecorder` logs API failures).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

__all__ = [
    "FAILED_SCHEDULING",
    "INVALID_NODE_RESOURCES",
    "PREEMPTED",
    "PREEMPTING",
    "SCHEDULED",
    "EventSink",
    "GangEvents",
]

FAILED_SCHEDULING = "FailedScheduling"
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
    """Records the scheduler's Events through an `EventSink`."""

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink

    async def failed(
        self, podgang: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]], reasons: Iterable[str]
    ) -> None:
        """FailedScheduling on the PodGang and each pod, with every reason."""
        message = "; ".join(reasons) or "the gang could not be placed"
        await self._all(podgang, pods, FAILED_SCHEDULING, message, warning=True)

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

    async def _all(
        self, podgang: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]], reason: str, message: str,
        *, warning: bool,
    ) -> None:  # fmt: skip
        record = self._sink.warning if warning else self._sink.normal
        calls = [record(_typed(p, _POD), reason, message) for p in pods]
        if podgang is not None:
            calls.append(record(_typed(podgang, _PODGANG), reason, message))
        await asyncio.gather(*calls)

    async def node_set_aside(self, node: Mapping[str, Any], reason: str) -> None:
        """InvalidNodeResources on a Node no pod is placed on until it changes."""
        message = f"no pod is placed on this node until it changes: {reason}"
        await self._sink.warning(_typed(node, _NODE), INVALID_NODE_RESOURCES, message)

    async def scheduled(self, pods: Mapping[str, Mapping[str, Any]], assignments: Mapping[str, str]) -> None:
        """Scheduled on each bound pod: "Successfully assigned ns/pod to node"."""
        calls = []
        for name, node in sorted(assignments.items()):
            pod = pods.get(name)
            if pod is not None:
                ns = (pod.get("metadata") or {}).get("namespace", "")
                calls.append(
                    self._sink.normal(_typed(pod, _POD), SCHEDULED, f"Successfully assigned {ns}/{name} to {node}")
                )
        await asyncio.gather(*calls)
