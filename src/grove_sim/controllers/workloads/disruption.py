"""The disruption controller: each PodDisruptionBudget's status, which the eviction subresource enforces.

As kube-controller-manager's ``disruption`` controller: ``expectedPods`` is the number of selected pods for an
integer ``minAvailable``, otherwise the sum of their controllers' desired replicas (read through each controller's
``/scale`` view, so a Deployment, a ReplicaSet or any custom resource declaring the subresource counts; a pod
without such a controller counts as itself); ``currentHealthy`` counts the selected Ready pods not being deleted;
``desiredHealthy`` follows from ``minAvailable`` (percentages round up) or ``maxUnavailable``; and
``disruptionsAllowed`` is what healthy pods exceed it by. Evictions recorded in ``disruptedPods`` count as gone
until the pod is deleted or two minutes pass, so two evictions cannot spend one disruption.
"""

from __future__ import annotations

import calendar
import time
from typing import Any, Final

from grove_sim.controllers.workloads.owned import PODS, available, controller_of, scaled_count, write_status
from grove_sim.controllers.workqueue import WorkQueue
from grove_sim.registry.core import Core, now_rfc3339
from grove_sim.registry.eviction import selects
from grove_sim.registry.subresources import get_scale
from grove_sim.storage.store import Event

__all__ = ["DisruptionController"]

PDBS: Final = ("policy", "poddisruptionbudgets")
_DISRUPTION_TIMEOUT: Final = 120.0
Key = tuple[str, str]


def _age(stamp: str) -> float:
    try:
        return time.time() - calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return _DISRUPTION_TIMEOUT


class DisruptionController:
    """Keeps every budget's status current on its own queue; woken by budgets and by pods of their namespace."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self.queue: WorkQueue[Key] = WorkQueue("disruption", self._sync)
        core.store.add_listener(self._on_event)

    def _on_event(self, event: Event) -> None:
        meta = event.obj.get("metadata") or {}
        namespace = meta.get("namespace", "")
        if event.key == PDBS:
            self.queue.add((namespace, meta["name"]))
        elif event.key == PODS:
            for pdb in self._core.store.list(PDBS, namespace):
                if selects(pdb, event.obj) or (event.old is not None and selects(pdb, event.old)):
                    self.queue.add((namespace, pdb["metadata"]["name"]))

    def _sync(self, key: Key) -> None:
        pdb = self._core.store.get(PDBS, *key)
        if pdb is None:
            return
        pods = [p for p in self._core.store.list(PODS, key[0]) if selects(pdb, p)]
        spec = pdb.get("spec") or {}
        minimum, maximum = spec.get("minAvailable"), spec.get("maxUnavailable")
        expected = len(pods) if isinstance(minimum, int) and not isinstance(minimum, bool) else self._expected(pods)
        disrupted = {
            name: stamp
            for name, stamp in ((pdb.get("status") or {}).get("disruptedPods") or {}).items()
            if _age(str(stamp)) < _DISRUPTION_TIMEOUT
            and any(p["metadata"]["name"] == name and not p["metadata"].get("deletionTimestamp") for p in pods)
        }
        healthy = sum(1 for p in pods if available(p) and p["metadata"]["name"] not in disrupted)
        if minimum is not None:
            desired = scaled_count(minimum, expected, round_up=True)
        elif maximum is not None:
            desired = max(expected - scaled_count(maximum, expected, round_up=True), 0)
        else:
            desired = expected
        allowed = max(healthy - desired, 0)
        status: dict[str, Any] = {
            "observedGeneration": int(pdb["metadata"].get("generation") or 0),
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "conditions": [self._condition(pdb, allowed > 0)],
        }
        if disrupted:
            status["disruptedPods"] = disrupted
        if pdb.get("status") == status:
            return
        write_status(self._core, pdb, status)
        if disrupted:
            self.queue.add_after(key, _DISRUPTION_TIMEOUT)

    def _expected(self, pods: list[dict[str, Any]]) -> int:
        """The desired replicas of the selected pods' controllers (``getExpectedScale``)."""
        total = 0
        seen: set[str] = set()
        for pod in pods:
            uid = controller_of(pod)
            scale = self._scale_of(uid) if uid else None
            if scale is None:
                total += 1
                continue
            owner_uid, replicas = scale
            if owner_uid not in seen:
                seen.add(owner_uid)
                total += replicas
        return total

    def _scale_of(self, uid: str) -> tuple[str, int] | None:
        """The (uid, desired replicas) of the object with this uid, going up from a ReplicaSet to its Deployment."""
        store = self._core.store
        for _ in range(2):
            ref = store.by_uid(uid)
            owner = store.get(*ref) if ref is not None else None
            if owner is None:
                return None
            parent = controller_of(owner)
            parent_ref = store.by_uid(parent) if parent else None
            if parent_ref is not None and parent_ref[0] == ("apps", "deployments") and parent is not None:
                uid = parent
                continue
            info = self._core.registry.by_key(ref[0]) if ref is not None else None
            if info is None or info.scale is None:
                return None
            return uid, int(get_scale(info, owner)["spec"]["replicas"])
        return None

    @staticmethod
    def _condition(pdb: dict[str, Any], allowed: bool) -> dict[str, Any]:
        status, reason = ("True", "SufficientPods") if allowed else ("False", "InsufficientPods")
        for condition in (pdb.get("status") or {}).get("conditions") or ():
            if condition.get("type") == "DisruptionAllowed" and condition.get("status") == status:
                return dict(condition)
        return {
            "type": "DisruptionAllowed",
            "status": status,
            "reason": reason,
            "message": "",
            "observedGeneration": int(pdb["metadata"].get("generation") or 0),
            "lastTransitionTime": now_rfc3339(),
        }
