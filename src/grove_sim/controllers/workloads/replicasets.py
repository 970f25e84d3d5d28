"""The ReplicaSet controller: as many active pods as ``spec.replicas``, and a status that counts them.

Pods are created from the template with ``generateName: <rs>-`` and a controller ownerReference (so garbage
collection removes them with the ReplicaSet); surplus pods are deleted in ``controller.ActivePods`` order —
unscheduled before scheduled, pending before running, not ready before ready, newest first — so a scale-down
keeps the pods that serve. Level-triggered on the ReplicaSet and on its pods.
"""

from __future__ import annotations

import logging
from typing import Any

from grove_sim.controllers.events import EventRecorder
from grove_sim.controllers.workloads.owned import (
    PODS,
    REPLICASETS,
    active,
    available,
    controller_ref,
    owned,
    write_status,
)
from grove_sim.controllers.workqueue import WorkQueue
from grove_sim.machinery import errors
from grove_sim.registry.core import Core
from grove_sim.storage.store import Event

__all__ = ["ReplicaSetController"]

_log = logging.getLogger(__name__)
Key = tuple[str, str]


def _deletion_order(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Which pods go first (``controller.ActivePods`` less-than, reduced to what the simulation has): unscheduled,
    then pending, then not ready; newest first among equals."""
    newest_first = sorted(pods, key=lambda p: str(p["metadata"].get("creationTimestamp", "")), reverse=True)

    def rank(pod: dict[str, Any]) -> tuple[int, int, int]:
        phase = {"Pending": 0, "Unknown": 1, "Running": 2}.get(str((pod.get("status") or {}).get("phase")), 0)
        return (1 if (pod.get("spec") or {}).get("nodeName") else 0, phase, 1 if available(pod) else 0)

    return sorted(newest_first, key=rank)


class ReplicaSetController:
    """Reconciles every ReplicaSet on its own queue."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._events = EventRecorder(core, "replicaset-controller")
        self.queue: WorkQueue[Key] = WorkQueue("replicasets", self._sync)
        core.store.add_listener(self._on_event)

    def _on_event(self, event: Event) -> None:
        meta = event.obj.get("metadata") or {}
        if event.key == REPLICASETS:
            self.queue.add((meta.get("namespace", ""), meta["name"]))
        elif event.key == PODS:
            for ref in meta.get("ownerReferences") or ():
                if isinstance(ref, dict) and ref.get("controller") and ref.get("kind") == "ReplicaSet":
                    self.queue.add((meta.get("namespace", ""), str(ref.get("name", ""))))

    def _sync(self, key: Key) -> None:
        rs = self._core.store.get(REPLICASETS, *key)
        if rs is None:
            return
        pods = [p for p in owned(self._core, PODS, rs) if active(p)]
        if not rs["metadata"].get("deletionTimestamp"):
            wanted = int((rs.get("spec") or {}).get("replicas") or 0)
            if len(pods) < wanted:
                pods += self._create(rs, wanted - len(pods))
            elif len(pods) > wanted:
                surplus = _deletion_order(pods)[: len(pods) - wanted]
                self._delete(rs, surplus)
                gone = {id(p) for p in surplus}
                pods = [p for p in pods if id(p) not in gone]
        self._write_status(rs, pods)

    def _create(self, rs: dict[str, Any], count: int) -> list[dict[str, Any]]:
        info = self._core.registry.get("", "v1", "pods")
        assert info is not None
        template = (rs.get("spec") or {}).get("template") or {}
        template_meta = template.get("metadata") or {}
        meta = rs["metadata"]
        created = []
        for _ in range(count):
            pod_meta: dict[str, Any] = {
                "generateName": f"{meta['name']}-",
                "labels": dict(template_meta.get("labels") or {}),
                "ownerReferences": [controller_ref(rs)],
            }
            if template_meta.get("annotations"):
                pod_meta["annotations"] = dict(template_meta["annotations"])
            try:
                pod = self._core.create(
                    info, meta.get("namespace", ""), {"metadata": pod_meta, "spec": template.get("spec") or {}}
                )
            except errors.ApiError as exc:
                self._events.emit(rs, "Warning", "FailedCreate", f"Error creating: {exc.message}")
                break
            created.append(pod)
            self._events.emit(rs, "Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}")
        return created

    def _delete(self, rs: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        info = self._core.registry.get("", "v1", "pods")
        assert info is not None
        for pod in pods:
            meta = pod["metadata"]
            try:
                self._core.delete(info, meta.get("namespace", ""), meta["name"], {})
            except errors.ApiError as exc:
                if exc.code != 404:
                    _log.warning("replicaset %s: deleting pod %s failed: %s", rs["metadata"]["name"], meta["name"], exc)
                continue
            self._events.emit(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")

    def _write_status(self, rs: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        spec = rs.get("spec") or {}
        labels = (spec.get("template") or {}).get("metadata", {}).get("labels") or {}
        status: dict[str, Any] = {
            "replicas": len(pods),
            "fullyLabeledReplicas": sum(
                1 for p in pods if labels.items() <= ((p["metadata"].get("labels") or {}).items())
            ),
            "readyReplicas": sum(1 for p in pods if available(p)),
            "availableReplicas": sum(1 for p in pods if available(p)),
            "observedGeneration": int(rs["metadata"].get("generation") or 0),
        }
        status = {k: v for k, v in status.items() if v or k in ("replicas", "observedGeneration")}
        current = self._core.store.get(REPLICASETS, rs["metadata"].get("namespace", ""), rs["metadata"]["name"])
        if current is None or current.get("status") == status:
            return
        write_status(self._core, current, status)
