"""Pod index assignment and scale-in victim order of a PodClique (grove-reference §2.1, §3.4).

Indices give pods stable host names, so new pods fill the lowest free indices (holes first). When a PodClique
shrinks, the pods that matter least go first: unassigned before pending before unknown before running, not-ready
before ready, outdated template before current, and newest first among equals.

An index held by two active pods (a create the API server performed although the client saw it fail, then
retried) must not stay that way: two pods would share a host name while another index stays missing. Of the
holders, the one scale-in would keep longest stays (the older one among equals) and the others are deleted, so
the freed slot is filled by the missing index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from grove_api import labels as glabels
from grove_operator.desired.layout import is_terminating

__all__ = ["duplicate_index_pods", "is_active", "is_ready", "lowest_free_indices", "pod_index", "scale_in_victims"]

_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def is_active(pod: Mapping[str, Any]) -> bool:
    """Not terminating and not finished: the pod still holds its index."""
    phase = (pod.get("status") or {}).get("phase")
    return not is_terminating(pod) and phase not in ("Succeeded", "Failed")


def is_ready(pod: Mapping[str, Any]) -> bool:
    """True when the pod's Ready condition is True."""
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pod_index(pod: Mapping[str, Any]) -> int | None:
    """The pod's index: the numeric suffix of its hostname, else its `grove.io/podclique-pod-index` label."""
    hostname = (pod.get("spec") or {}).get("hostname") or ""
    suffix = hostname.rpartition("-")[2]
    if suffix.isdigit():
        return int(suffix)
    label = ((pod.get("metadata") or {}).get("labels") or {}).get(glabels.LABEL_PODCLIQUE_POD_INDEX, "")
    return int(label) if label.isdigit() else None


def lowest_free_indices(pods: Iterable[Mapping[str, Any]], count: int) -> list[int]:
    """The `count` smallest indices not used by an active pod, in ascending order."""
    used = {idx for pod in pods if is_active(pod) and (idx := pod_index(pod)) is not None}
    free: list[int] = []
    candidate = 0
    while len(free) < count:
        if candidate not in used:
            free.append(candidate)
        candidate += 1
    return free


def _victim_key(pod: Mapping[str, Any], current_hash: str | None) -> tuple[int, int, int, int, str, str]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    metadata = pod.get("metadata") or {}
    assigned = 1 if spec.get("nodeName") else 0
    phase = _PHASE_RANK.get(status.get("phase", "Pending"), 0)
    ready = 1 if is_ready(pod) else 0
    updated = (
        1
        if current_hash is not None
        and (metadata.get("labels") or {}).get(glabels.LABEL_POD_TEMPLATE_HASH) == current_hash
        else 0
    )
    created = str(metadata.get("creationTimestamp") or "")
    return (assigned, phase, ready, updated, _invert(created), str(metadata.get("name", "")))


def _invert(text: str) -> str:
    """A key that sorts RFC 3339 timestamps newest first (character-wise complement)."""
    return "".join(chr(0x10FFFF - ord(ch)) for ch in text)


def scale_in_victims(pods: Iterable[Mapping[str, Any]], count: int, current_hash: str | None = None) -> list[str]:
    """Names of the `count` pods to delete first, skipping pods that are already terminating."""
    candidates = [p for p in pods if not is_terminating(p)]
    candidates.sort(key=lambda p: _victim_key(p, current_hash))
    return [p["metadata"]["name"] for p in candidates[: max(count, 0)]]


def duplicate_index_pods(pods: Iterable[Mapping[str, Any]], current_hash: str | None = None) -> list[Mapping[str, Any]]:
    """Active pods whose index another active pod holds, except the holder scale-in would delete last."""
    holders: dict[int, list[Mapping[str, Any]]] = {}
    for pod in pods:
        if is_active(pod) and (index := pod_index(pod)) is not None:
            holders.setdefault(index, []).append(pod)
    duplicates: list[Mapping[str, Any]] = []
    for same in holders.values():
        if len(same) > 1:
            same.sort(key=lambda p: _victim_key(p, current_hash))
            duplicates.extend(same[:-1])
    return duplicates
