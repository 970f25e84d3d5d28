"""What the pods of one PodClique say, read straight from the pod cache.

Why from pods and not from the PodClique status: a rolling update must know *now* whether a replacement is Ready
and whether any pod still runs an older template. The PodClique status says the same one reconcile later, and a
decision taken on it moves on one pod (or one replica) too early. Readiness is the pod's Ready condition and
nothing else: upstream #697 deleted every pod of a clique at once because a Ready pod carrying an old crash in its
container statuses was classified as unhealthy.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from grove_api import labels as glabels
from grove_operator.desired.layout import is_terminating
from grove_operator.desired.scalein import is_active, is_ready

__all__ = ["CliqueFacts", "clique_facts", "group_by_podclique", "is_scheduled", "template_hash_of"]

Obj = Mapping[str, Any]


def template_hash_of(obj: Obj) -> str | None:
    """The `grove.io/pod-template-hash` label of a pod or PodClique."""
    return ((obj.get("metadata") or {}).get("labels") or {}).get(glabels.LABEL_POD_TEMPLATE_HASH)


def is_scheduled(pod: Obj) -> bool:
    """The pod is bound to a node."""
    return bool((pod.get("spec") or {}).get("nodeName"))


@dataclass(frozen=True, slots=True)
class CliqueFacts:
    """Pod tallies of one PodClique against the newest template hash of its clique."""

    live: int = 0
    """Pods holding an index: not terminating, not finished."""
    ready: int = 0
    """Live pods whose Ready condition is True."""
    scheduled: int = 0
    """Live pods bound to a node."""
    old: int = 0
    """Live pods running another template than the newest."""
    terminating: int = 0
    """Pods going away (a deletion in flight)."""

    def available(self, min_available: int) -> bool:
        """At least `min_available` Ready pods."""
        return self.ready >= min_available

    def quiet(self, replicas: int) -> bool:
        """Nothing of the clique is down or going: none terminating, `replicas` pods all Ready."""
        return self.terminating == 0 and self.ready == self.live >= replicas


def clique_facts(pods: Iterable[Obj], target_hash: str | None) -> CliqueFacts:
    """Tally `pods` (one PodClique's) against `target_hash` (None: nothing counts as old)."""
    live = ready = scheduled = old = terminating = 0
    for pod in pods:
        if is_terminating(pod):
            terminating += 1
            continue
        if not is_active(pod):
            continue
        live += 1
        ready += is_ready(pod)
        scheduled += is_scheduled(pod)
        old += target_hash is not None and template_hash_of(pod) != target_hash
    return CliqueFacts(live, ready, scheduled, old, terminating)


def group_by_podclique(pods: Iterable[Obj]) -> dict[str, list[Obj]]:
    """Pods by the PodClique named in their `grove.io/podclique` label."""
    grouped: dict[str, list[Obj]] = defaultdict(list)
    for pod in pods:
        name = ((pod.get("metadata") or {}).get("labels") or {}).get(glabels.LABEL_PODCLIQUE)
        if name:
            grouped[name].append(pod)
    return grouped
