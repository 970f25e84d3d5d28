"""The Deployment controller: one ReplicaSet per pod template, rolled out by strategy, and a status kubectl reads.

Each sync finds the ReplicaSet whose template (without its ``pod-template-hash`` label) equals the Deployment's —
creating ``<name>-<hash>`` if there is none, with the next ``deployment.kubernetes.io/revision`` — and takes one
step of the rollout (``grove_sim.controllers.workloads.rollout``); the ReplicaSet controller then creates and
deletes pods, whose changes bring the Deployment back here. ``kubectl rollout restart`` is a template change (an
annotation), so it rolls out like any other. Status carries what ``kubectl rollout status`` waits for
(``observedGeneration``, ``updatedReplicas``, ``availableReplicas``) and the ``Available``/``Progressing``
conditions. Old ReplicaSets scaled to zero beyond ``revisionHistoryLimit`` are deleted. Not simulated:
``minReadySeconds`` (a Ready pod is available at once), ``progressDeadlineSeconds`` (never exceeded), proportional
scaling of a mid-rollout resize (the rollout converges to the new size instead), adoption of orphaned ReplicaSets.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from grove_sim.controllers.events import EventRecorder
from grove_sim.controllers.workloads.owned import (
    PODS,
    REPLICASETS,
    active,
    available,
    controller_of,
    controller_ref,
    owned,
    scaled_count,
    template_hash,
    write_status,
)
from grove_sim.controllers.workloads.rollout import ReplicaSetSize, recreate_step, rolling_step
from grove_sim.controllers.workqueue import WorkQueue
from grove_sim.machinery import errors
from grove_sim.registry.core import Core, clone, now_rfc3339
from grove_sim.storage.store import Event

__all__ = ["DeploymentController"]

DEPLOYMENTS: Final = ("apps", "deployments")
HASH_LABEL: Final = "pod-template-hash"
REVISION: Final = "deployment.kubernetes.io/revision"
_log = logging.getLogger(__name__)
Key = tuple[str, str]


def _semantic(value: Any) -> Any:
    """The value with null fields and empty maps dropped: Go's typed decode makes ``null``, ``{}`` and an absent
    field the same (``kubectl rollout undo`` sends ``creationTimestamp: null``)."""
    if isinstance(value, dict):
        kept = {k: _semantic(v) for k, v in value.items() if v is not None}
        return {k: v for k, v in kept.items() if v != {}}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _without_hash(template: dict[str, Any]) -> dict[str, Any]:
    """``EqualIgnoreHash``'s view of a template: without the ``pod-template-hash`` label, semantically."""
    meta = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != HASH_LABEL}
    meta["labels"] = labels
    semantic: dict[str, Any] = _semantic({**template, "metadata": meta})
    return semantic


def _revision(obj: dict[str, Any]) -> int:
    try:
        return int((obj["metadata"].get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


class DeploymentController:
    """Reconciles every Deployment on its own queue; woken by its ReplicaSets and their pods."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._events = EventRecorder(core, "deployment-controller")
        self.queue: WorkQueue[Key] = WorkQueue("deployments", self._sync)
        core.store.add_listener(self._on_event)

    def _on_event(self, event: Event) -> None:
        meta = event.obj.get("metadata") or {}
        namespace = meta.get("namespace", "")
        if event.key == DEPLOYMENTS:
            self.queue.add((namespace, meta["name"]))
            return
        if event.key == PODS:
            owner_uid = controller_of(event.obj)
            ref = self._core.store.by_uid(owner_uid) if owner_uid else None
            rs = self._core.store.get(*ref) if ref is not None and ref[0] == REPLICASETS else None
            if rs is None:
                return
            meta = rs["metadata"]
        elif event.key != REPLICASETS:
            return
        for owner in meta.get("ownerReferences") or ():
            if isinstance(owner, dict) and owner.get("controller") and owner.get("kind") == "Deployment":
                self.queue.add((namespace, str(owner.get("name", ""))))

    # ---------------------------------------------------------------------------------------------------- sync

    def _sync(self, key: Key) -> None:
        deployment = self._core.store.get(DEPLOYMENTS, *key)
        if deployment is None or deployment["metadata"].get("deletionTimestamp"):
            return
        spec = deployment.get("spec") or {}
        template = spec.get("template") or {}
        replica_sets = sorted(
            owned(self._core, REPLICASETS, deployment), key=lambda rs: str(rs["metadata"].get("creationTimestamp"))
        )
        current = _without_hash(template)
        new = next(
            (rs for rs in replica_sets if _without_hash((rs.get("spec") or {}).get("template") or {}) == current), None
        )
        old = [rs for rs in replica_sets if rs is not new]
        sizes = {rs["metadata"]["name"]: self._size(rs) for rs in replica_sets}
        new_size = sizes[new["metadata"]["name"]] if new is not None else ReplicaSetSize("", 0, 0, 0)
        old_sizes = [sizes[rs["metadata"]["name"]] for rs in old]
        replicas = int(spec.get("replicas") or 0)
        recreate = (spec.get("strategy") or {}).get("type") == "Recreate"
        if spec.get("paused"):
            plan: dict[str, int] = {}
        elif recreate:
            plan = recreate_step(replicas, new_size if new is not None else None, old_sizes)
        else:
            surge, unavailable = self._bounds(spec, replicas)
            plan = rolling_step(replicas, surge, unavailable, new_size, old_sizes)
        if new is None and not spec.get("paused") and ("" in plan or not recreate):
            new = self._create_replica_set(deployment, old, plan.pop("", 0))
            if new is None:
                return
        elif new is not None and _revision(new) <= max((_revision(rs) for rs in old), default=0):
            new = self._bump_revision(new, old)
        by_name = {rs["metadata"]["name"]: rs for rs in replica_sets}
        for name, size in plan.items():
            if name in by_name:
                self._scale(deployment, by_name[name], size)
        self._clean_up(deployment, old)
        self._write_status(key, new)

    def _size(self, rs: dict[str, Any]) -> ReplicaSetSize:
        pods = owned(self._core, PODS, rs)
        return ReplicaSetSize(
            name=rs["metadata"]["name"],
            replicas=int((rs.get("spec") or {}).get("replicas") or 0),
            active=sum(1 for p in pods if active(p)),
            available=sum(1 for p in pods if available(p)),
            pods=len(pods),
        )

    @staticmethod
    def _bounds(spec: dict[str, Any], replicas: int) -> tuple[int, int]:
        """``MaxSurge``/``MaxUnavailable`` resolved against ``replicas`` (surge rounds up, unavailable down); both
        zero would deadlock, so unavailable becomes one, as upstream's ``ResolveFenceposts``."""
        rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
        surge = scaled_count(rolling.get("maxSurge", "25%"), replicas, round_up=True)
        unavailable = scaled_count(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        return surge, min(unavailable, replicas)

    # -------------------------------------------------------------------------------------------------- writes

    def _create_replica_set(
        self, deployment: dict[str, Any], old: list[dict[str, Any]], replicas: int
    ) -> dict[str, Any] | None:
        info = self._core.registry.get("apps", "v1", "replicasets")
        assert info is not None
        spec = deployment.get("spec") or {}
        template = clone(spec.get("template") or {})
        digest = template_hash(_without_hash(template))
        template_meta = template.setdefault("metadata", {})
        template_meta["labels"] = {**(template_meta.get("labels") or {}), HASH_LABEL: digest}
        selector = clone(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: digest}
        meta = deployment["metadata"]
        revision = max((_revision(rs) for rs in old), default=0) + 1
        body = {
            "metadata": {
                "name": f"{meta['name']}-{digest}",
                "labels": dict(template_meta["labels"]),
                "annotations": {REVISION: str(revision)},
                "ownerReferences": [controller_ref(deployment)],
            },
            "spec": {"replicas": replicas, "selector": selector, "template": template},
        }
        try:
            created = self._core.create(info, meta.get("namespace", ""), body)
        except errors.ApiError as exc:
            _log.warning("deployment %s: creating its replica set failed: %s", meta["name"], exc)
            return None
        self._events.emit(
            deployment,
            "Normal",
            "ScalingReplicaSet",
            f"Scaled up replica set {created['metadata']['name']} from 0 to {replicas}",
        )
        return created

    def _bump_revision(self, rs: dict[str, Any], old: list[dict[str, Any]]) -> dict[str, Any]:
        """A rollback makes an old template current again: it takes the next revision, as upstream."""
        info = self._core.registry.get("apps", "v1", "replicasets")
        assert info is not None
        new = clone(rs)
        annotations = new["metadata"].setdefault("annotations", {})
        annotations[REVISION] = str(max((_revision(o) for o in old), default=0) + 1)
        try:
            return self._core.replace(info, rs, new)
        except errors.ApiError:
            return rs

    def _scale(self, deployment: dict[str, Any], rs: dict[str, Any], replicas: int) -> None:
        info = self._core.registry.get("apps", "v1", "replicasets")
        assert info is not None
        before = int((rs.get("spec") or {}).get("replicas") or 0)
        current = self._core.store.get(REPLICASETS, rs["metadata"].get("namespace", ""), rs["metadata"]["name"])
        if current is None or before == replicas:
            return
        new = {**current, "spec": {**(current.get("spec") or {}), "replicas": replicas}}
        try:
            self._core.replace(info, current, new)
        except errors.ApiError as exc:
            _log.warning(
                "deployment %s: scaling %s failed: %s", deployment["metadata"]["name"], rs["metadata"]["name"], exc
            )
            return
        way = "up" if replicas > before else "down"
        message = f"Scaled {way} replica set {rs['metadata']['name']} from {before} to {replicas}"
        self._events.emit(deployment, "Normal", "ScalingReplicaSet", message)

    def _clean_up(self, deployment: dict[str, Any], old: list[dict[str, Any]]) -> None:
        """Delete the oldest drained ReplicaSets beyond ``revisionHistoryLimit``."""
        limit = int((deployment.get("spec") or {}).get("revisionHistoryLimit", 10) or 0)
        drained = [
            rs for rs in old
            if not int((rs.get("spec") or {}).get("replicas") or 0) and not owned(self._core, PODS, rs)
        ]  # fmt: skip
        info = self._core.registry.get("apps", "v1", "replicasets")
        assert info is not None
        for rs in sorted(drained, key=_revision)[: max(len(drained) - limit, 0)]:
            try:
                self._core.delete(info, rs["metadata"].get("namespace", ""), rs["metadata"]["name"], {})
            except errors.ApiError as exc:
                if exc.code != 404:
                    raise

    def _write_status(self, key: Key, new: dict[str, Any] | None) -> None:
        deployment = self._core.store.get(DEPLOYMENTS, *key)
        if deployment is None:
            return
        deployment = self._annotate_revision(deployment, new)
        spec = deployment.get("spec") or {}
        replicas = int(spec.get("replicas") or 0)
        all_pods: list[dict[str, Any]] = []
        new_pods: list[dict[str, Any]] = []
        for rs in owned(self._core, REPLICASETS, deployment):
            pods = [p for p in owned(self._core, PODS, rs) if active(p)]
            all_pods += pods
            if new is not None and rs["metadata"].get("uid") == new["metadata"].get("uid"):
                new_pods = pods
        ready = sum(1 for p in all_pods if available(p))
        status: dict[str, Any] = {
            "observedGeneration": int(deployment["metadata"].get("generation") or 0),
            "replicas": len(all_pods),
            "updatedReplicas": len(new_pods),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "unavailableReplicas": max(replicas - ready, 0),
        }
        status = {k: v for k, v in status.items() if v or k == "observedGeneration"}
        _, unavailable = self._bounds(spec, replicas)
        old_conditions = {c.get("type"): c for c in (deployment.get("status") or {}).get("conditions") or []}
        status["conditions"] = [
            self._condition(old_conditions, "Available", *self._available(ready, replicas - unavailable)),
            self._condition(
                old_conditions, "Progressing", *self._progress(new, len(new_pods), replicas, len(all_pods), ready)
            ),
        ]
        if deployment.get("status") == status:
            return
        write_status(self._core, deployment, status)

    def _annotate_revision(self, deployment: dict[str, Any], new: dict[str, Any] | None) -> dict[str, Any]:
        """The Deployment carries its current ReplicaSet's revision (``kubectl rollout history`` reads it)."""
        if new is None or not _revision(new) or _revision(deployment) == _revision(new):
            return deployment
        info = self._core.registry.get("apps", "v1", "deployments")
        assert info is not None
        meta = dict(deployment["metadata"])
        meta["annotations"] = {**(meta.get("annotations") or {}), REVISION: str(_revision(new))}
        try:
            return self._core.replace(info, deployment, {**deployment, "metadata": meta})
        except errors.ApiError as exc:
            if exc.code not in (404, 409):
                raise
            return deployment

    @staticmethod
    def _available(ready: int, minimum: int) -> tuple[str, str, str]:
        if ready >= minimum:
            return "True", "MinimumReplicasAvailable", "Deployment has minimum availability."
        return "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."

    @staticmethod
    def _progress(
        new: dict[str, Any] | None, updated: int, replicas: int, total: int, ready: int
    ) -> tuple[str, str, str]:
        name = new["metadata"]["name"] if new is not None else ""
        if new is not None and updated == replicas and total == replicas and ready == replicas:
            return "True", "NewReplicaSetAvailable", f'ReplicaSet "{name}" has successfully progressed.'
        return "True", "ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.'

    @staticmethod
    def _condition(
        old: dict[Any, dict[str, Any]], type_: str, status: str, reason: str, message: str
    ) -> dict[str, Any]:
        previous = old.get(type_)
        now = now_rfc3339()
        if previous is not None and (previous.get("status"), previous.get("reason"), previous.get("message")) == (
            status,
            reason,
            message,
        ):
            return previous
        transition = (
            previous.get("lastTransitionTime", now)
            if previous is not None and previous.get("status") == status
            else now
        )
        return {
            "type": type_,
            "status": status,
            "lastUpdateTime": now,
            "lastTransitionTime": transition,
            "reason": reason,
            "message": message,
        }
