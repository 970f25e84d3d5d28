"""Informer events → scheduler cache updates, queue moves and PodGang status reconciles.

Why a module of its own: this is the scheduler's "QueueingHints" table, the one place that decides which
cluster change could make an unschedulable gang fit (node added, uncordoned or changed; a bound pod deleted or
finished → `queue.move_all`), which change concerns one gang only (its PodGang or one of its pods changed →
`queue.add`), and which change only needs the PodGang status recomputed (a gang member bound or started running,
or the operator's status write dropped our condition).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from grove_runtime.keys import ObjectKey
from grove_sched.gangs import GangKey, gang_key_of_pod, is_pending
from grove_sched.podspec import is_terminal
from grove_sched.scheduler import Scheduler
from grove_sched.source import creation_time

__all__ = ["NodeEvents", "PodEvents", "PodGangEvents", "PriorityClassEvents", "TopologyEvents"]

Obj = dict[str, Any]
StatusEnqueue = Callable[[ObjectKey], None]


def _gang_status_key(pod: Mapping[str, Any]) -> ObjectKey | None:
    key = gang_key_of_pod(pod)
    return None if key.single else ObjectKey(key.namespace, key.name)


class PodEvents:
    """Pods: capacity accounting, gang readiness, and PodGang phase."""

    def __init__(self, scheduler: Scheduler, status: StatusEnqueue) -> None:
        self._s = scheduler
        self._status = status

    def _maybe_queue(self, pod: Obj) -> None:
        if is_pending(pod, self._s.source.scheduler_name):
            key = gang_key_of_pod(pod)
            self._s.queue.add(key, self._s.source.gang_priority(key, pod), creation_time(pod))

    def on_add(self, obj: Obj) -> None:
        """A new pod: account it if bound, queue its gang if it is ready for us."""
        self._s.cache.pod_upserted(obj)
        self._maybe_queue(obj)
        key = _gang_status_key(obj)
        if key is not None:
            self._status(key)

    def on_update(self, old: Obj, new: Obj) -> None:
        """A changed pod: gates lifted → queue; finished → capacity freed; bound/running → gang status. A change of
        status alone (the scheduler's own PodScheduled write among them) does not queue the gang again."""
        self._s.cache.pod_upserted(new)
        if old.get("spec") != new.get("spec") or (old.get("metadata") or {}).get("labels") != (
            new.get("metadata") or {}
        ).get("labels"):
            self._maybe_queue(new)
        if is_terminal(new) and not is_terminal(old) and (new.get("spec") or {}).get("nodeName"):
            self._s.queue.move_all()
        old_status = ((old.get("spec") or {}).get("nodeName"), (old.get("status") or {}).get("phase"))
        new_status = ((new.get("spec") or {}).get("nodeName"), (new.get("status") or {}).get("phase"))
        key = _gang_status_key(new)
        if key is not None and old_status != new_status:
            self._status(key)

    def on_delete(self, obj: Obj) -> None:
        """A deleted pod frees capacity (wake unschedulable gangs) and may change its gang."""
        self._s.cache.pod_deleted(obj)
        if (obj.get("spec") or {}).get("nodeName"):
            self._s.queue.move_all()
        gang = gang_key_of_pod(obj)
        if gang.single:
            self._s.forget_gang(gang)
        else:
            self._status(ObjectKey(gang.namespace, gang.name))


class NodeEvents:
    """Nodes: any change of a node's schedulable shape may let a waiting gang fit."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._s = scheduler

    def _upsert(self, node: Obj) -> None:
        reason = self._s.cache.node_upserted(node)
        if reason is not None:
            self._s.node_set_aside(node, reason)

    def on_add(self, obj: Obj) -> None:
        """A new node: more capacity (unless it is set aside)."""
        self._upsert(obj)
        self._s.queue.move_all()

    def on_update(self, old: Obj, new: Obj) -> None:
        """Labels, allocatable, taints or cordon changed (heartbeats are ignored by the cache's equality check)."""
        self._upsert(new)
        if _shape(old) != _shape(new):
            self._s.queue.move_all()

    def on_delete(self, obj: Obj) -> None:
        """A node is gone."""
        self._s.cache.node_deleted(str(obj["metadata"]["name"]))


def _shape(node: Mapping[str, Any]) -> tuple[Any, ...]:
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    return (
        (node.get("metadata") or {}).get("labels"),
        spec.get("unschedulable"),
        spec.get("taints"),
        status.get("allocatable"),
    )


class PriorityClassEvents:
    """PriorityClasses: any change re-resolves the priorities of queued gangs."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._s = scheduler

    def on_add(self, obj: Obj) -> None:
        """A new class."""
        self._s.refresh_priorities()

    def on_update(self, old: Obj, new: Obj) -> None:
        """A changed value, or a class that became (or stopped being) the global default."""
        if (old.get("value"), old.get("globalDefault")) != (new.get("value"), new.get("globalDefault")):
            self._s.refresh_priorities()

    def on_delete(self, obj: Obj) -> None:
        """A removed class."""
        self._s.refresh_priorities()


class PodGangEvents:
    """PodGangs: a spec change may complete a gang; a status change may have dropped our condition."""

    def __init__(self, scheduler: Scheduler, status: StatusEnqueue) -> None:
        self._s = scheduler
        self._status = status

    def _queue(self, obj: Obj) -> None:
        meta = obj["metadata"]
        key = GangKey(str(meta.get("namespace", "")), str(meta["name"]))
        self._s.queue.add(key, self._s.source.gang_priority(key), creation_time(obj))

    def on_add(self, obj: Obj) -> None:
        """A new PodGang: try it (assembly decides whether it is ready)."""
        self._queue(obj)
        self._status(ObjectKey.of(obj))

    def on_update(self, old: Obj, new: Obj) -> None:
        """Spec changed → try again; status changed → re-check ours."""
        if old.get("spec") != new.get("spec"):
            self._queue(new)
        if old.get("status") != new.get("status"):
            self._status(ObjectKey.of(new))

    def on_delete(self, obj: Obj) -> None:
        """The gang is gone."""
        meta = obj["metadata"]
        self._s.forget_gang(GangKey(str(meta.get("namespace", "")), str(meta["name"])))


class TopologyEvents:
    """ClusterTopologyBindings: a changed hierarchy changes what the best placement is and may let a gang fit
    (a level key it lacked), so every waiting gang is tried again."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._s = scheduler

    def on_add(self, obj: Obj) -> None:
        """A new topology."""
        self._s.queue.move_all()

    def on_update(self, old: Obj, new: Obj) -> None:
        """Changed levels."""
        if old.get("spec") != new.get("spec"):
            self._s.queue.move_all()

    def on_delete(self, obj: Obj) -> None:
        """A removed topology: its gangs fall back (`grove_sched.topology`)."""
        self._s.queue.move_all()
