"""Which pods of a PodClique a rolling update deletes now: the pure half of `podclique/rollout.py`.

The rule, for a standalone PodClique of the PodCliqueSet replica being updated:

* pods on an older template that are not Ready (pending, starting, crash-looping, unknown) serve nothing: they all
  go at once;
* Ready ones go one at a time, oldest first, and only when nothing else of the clique is down: no pod terminating,
  at least `spec.replicas` pods live and every one of them Ready (the old Ready ones included), and the replica's
  lane lets this clique act (`lane.lane_allows`).

So a clique with room (`replicas > minAvailable`) never drops below `minAvailable` because of the update, and one
without room (the default, `minAvailable == replicas`) is short of exactly one pod while its replacement starts:
replacing a pod of such a clique cannot keep it at its minimum, and waiting would never finish. Readiness is the
Ready condition alone (upstream #697).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from grove_operator.desired.layout import is_terminating
from grove_operator.desired.scalein import is_active, is_ready
from grove_operator.lifecycle.facts import template_hash_of

__all__ = ["PodPlan", "plan_pods"]

Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PodPlan:
    """One step of a PodClique's rolling update."""

    delete_now: tuple[str, ...] = ()
    """Old-template pods that are not Ready."""
    replace: str | None = None
    """The old-template Ready pod to replace now (None: none may go yet, or none is left)."""
    old: int = 0
    """Live pods on an older template before this step (0: the PodClique is updated)."""
    waiting: str | None = None
    """Why the next Ready pod waits, when it does."""


def _age_key(pod: Obj) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))


def plan_pods(pods: Iterable[Obj], target_hash: str, replicas: int, *, turn: bool) -> PodPlan:
    """The step for a PodClique whose pods are `pods` (terminating ones included), whose newest template hash is
    `target_hash` and which wants `replicas` pods; `turn`: the lane lets it take a Ready pod down."""
    live: list[Obj] = []
    terminating = 0
    for pod in pods:
        if is_terminating(pod):
            terminating += 1
        elif is_active(pod):
            live.append(pod)
    old = [p for p in live if template_hash_of(p) != target_hash]
    unready_old = tuple(sorted(str(p["metadata"]["name"]) for p in old if not is_ready(p)))
    ready_old = sorted((p for p in old if is_ready(p)), key=_age_key)
    if not ready_old:
        return PodPlan(unready_old, None, len(old))
    waiting: str | None = None
    if not turn:
        waiting = "an earlier PodClique or scaling group of the replica is still updating"
    elif unready_old or terminating:
        waiting = "pods of the PodClique are still being replaced"
    elif len(live) < replicas:
        waiting = f"{len(live)} of {replicas} pods exist"
    elif not all(is_ready(p) for p in live):
        waiting = "a pod of the PodClique is not Ready"
    if waiting is not None:
        return PodPlan(unready_old, None, len(old), waiting)
    return PodPlan((), str(ready_old[0]["metadata"]["name"]), len(old))
