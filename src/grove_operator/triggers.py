"""Triggers: which object changes wake a reconciler (predicates) and whom they wake (map functions).

Why apart from the wiring: these are pure functions of objects, each the answer to "is this change worth a
reconcile?", and testable alone; the wiring only says which controller uses which.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grove_api import labels as glabels
from grove_runtime.keys import ObjectKey
from grove_runtime.predicates import Predicate, predicate

__all__ = [
    "CHILD_CHANGED",
    "GENERATION_HASH_CHANGED",
    "GENERATION_OR_DELETION",
    "MEMBER_CHANGED",
    "PCLQ_PRIMARY",
    "PCS_PRIMARY",
    "POD_CHANGED",
    "POD_LABELS_CHANGED",
    "POD_SET_CHANGED",
    "ROLLOUT_CHANGED",
    "SCHEDULED_CHANGED",
    "SPEC_OR_STATUS",
    "STATUS_ONLY",
    "TOKEN_FILLED",
    "member_to_pcs",
    "meta_of",
    "pod_to_pcs",
    "podgang_to_podcliques",
    "pods_to_podclique",
    "references_topology",
]

Obj = dict[str, Any]


def meta_of(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _changed(old: Obj, new: Obj, *paths: tuple[str, ...]) -> bool:
    for path in paths:
        a: Any = old
        b: Any = new
        for part in path:
            a = a.get(part) if isinstance(a, dict) else None
            b = b.get(part) if isinstance(b, dict) else None
        if a != b:
            return True
    return False


_GENERATION = ("metadata", "generation")
_DELETION = ("metadata", "deletionTimestamp")
_STATUS = ("status",)
_LABELS = ("metadata", "labels")
_TRIGGER = ("metadata", "annotations", glabels.ANNOTATION_RECONCILE_TRIGGER)

PCS_PRIMARY: Predicate = predicate(update=lambda o, n: _changed(o, n, _GENERATION, _DELETION, _TRIGGER))
"""PCS events worth a reconcile: spec changes, deletion, the reconcile-trigger annotation."""

SPEC_OR_STATUS: Predicate = predicate(update=lambda o, n: _changed(o, n, _GENERATION, _DELETION, _STATUS))
"""Child changes a parent folds into its own spec flow or status."""

GENERATION_OR_DELETION: Predicate = predicate(update=lambda o, n: _changed(o, n, _GENERATION, _DELETION))
"""Spec changes and deletion only."""

CHILD_CHANGED: Predicate = predicate(
    create=lambda _o: False, update=lambda o, n: _changed(o, n, _GENERATION, _DELETION)
)
"""A child's spec change or deletion, but not its creation: the owner creates its children itself, in a reconcile
that already accounted for them, and at 5,000 replicas each needless owner reconcile costs a pass over all."""

STATUS_ONLY: Predicate = predicate(
    create=lambda _o: False,
    update=lambda o, n: _changed(o, n, _STATUS) and not _changed(o, n, _GENERATION, _DELETION),
    delete=lambda _o: False,
)
"""Status changes that come without a spec change or deletion (those are GENERATION_OR_DELETION's)."""

PCLQ_PRIMARY: Predicate = predicate(update=lambda o, n: _changed(o, n, _GENERATION, _DELETION, _LABELS))
"""PodClique events for its own controller: spec, labels (gang membership) and deletion."""

POD_CHANGED: Predicate = predicate(
    update=lambda o, n: _changed(o, n, _STATUS, _DELETION, ("spec", "schedulingGates"), ("spec", "nodeName"))
)
"""Pod changes that affect PodClique status or gates (readiness, scheduling, gates, deletion)."""

POD_LABELS_CHANGED: Predicate = predicate(update=lambda o, n: _changed(o, n, _LABELS, _DELETION))
"""A pod's labels or deletion changed (what a label selector's count depends on)."""

TOKEN_FILLED: Predicate = predicate(update=lambda o, n: _changed(o, n, ("data", "token")), create=lambda _o: False)
"""The token controller populated the SA-token Secret."""

_ROLLOUT = (
    ("status", "updateProgress", "currentlyUpdating"),
    ("status", "updateProgress", "updateStartedAt"),
    ("status", "updateProgress", "updateEndedAt"),
    ("status", "currentGenerationHash"),
    ("spec", "updateStrategy"),
)

ROLLOUT_CHANGED: Predicate = predicate(
    create=lambda _o: False, update=lambda o, n: _changed(o, n, *_ROLLOUT), delete=lambda _o: False
)
"""A PodCliqueSet's rolling update moved (started, next replica, ended) or its strategy changed."""

GENERATION_HASH_CHANGED: Predicate = predicate(
    create=lambda _o: False,
    update=lambda o, n: _changed(o, n, ("status", "currentGenerationHash")),
    delete=lambda _o: False,
)
"""A PodCliqueSet's pod templates changed (once per template change, whatever the strategy)."""

MEMBER_CHANGED: Predicate = predicate(update=lambda o, n: _changed(o, n, _DELETION, ("status", "conditions")))
"""A scaling-group member appears, goes, or its conditions (breach, availability) move."""

POD_SET_CHANGED: Predicate = predicate(update=lambda o, n: _changed(o, n, _DELETION))
"""A pod appeared, went, or started terminating: what its PodGang's pod references are made of."""

SCHEDULED_CHANGED: Predicate = predicate(
    update=lambda o, n: _changed(o, n, ("status", "scheduledReplicas")), create=lambda _o: False
)
"""A PodClique's scheduled count moved (scaled gangs may now be released)."""


def pods_to_podclique(pod: Obj) -> Iterable[ObjectKey]:
    meta = meta_of(pod)
    name = (meta.get("labels") or {}).get(glabels.LABEL_PODCLIQUE)
    return (ObjectKey(str(meta.get("namespace") or ""), str(name)),) if name else ()


def pod_to_pcs(pod: Obj) -> Iterable[ObjectKey]:
    meta = meta_of(pod)
    name = (meta.get("labels") or {}).get(glabels.LABEL_PART_OF)
    return (ObjectKey(str(meta.get("namespace") or ""), str(name)),) if name else ()


def member_to_pcs(pclq: Obj) -> Iterable[ObjectKey]:
    meta = meta_of(pclq)
    labels = meta.get("labels") or {}
    if not labels.get(glabels.LABEL_PCSG) or not labels.get(glabels.LABEL_PART_OF):
        return ()
    return (ObjectKey(str(meta.get("namespace") or ""), str(labels[glabels.LABEL_PART_OF])),)


def podgang_to_podcliques(gang: Obj) -> Iterable[ObjectKey]:
    namespace = str(meta_of(gang).get("namespace") or "")
    groups = (gang.get("spec") or {}).get("podgroups") or ()
    return [ObjectKey(namespace, str(g["name"])) for g in groups if isinstance(g, dict) and g.get("name")]


def references_topology(pcs: Obj, topology: str) -> bool:
    template = (pcs.get("spec") or {}).get("template") or {}
    constraints = [template.get("topologyConstraint")]
    constraints += [c.get("topologyConstraint") for c in template.get("cliques") or () if isinstance(c, dict)]
    constraints += [g.get("topologyConstraint") for g in template.get("podCliqueScalingGroups") or ()]
    return any(isinstance(c, dict) and c.get("topologyName") == topology for c in constraints)
