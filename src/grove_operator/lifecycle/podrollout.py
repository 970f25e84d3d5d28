"""Which pods of a PodClique a rolling update deletes now: the pure half of `podclique/rollout.py`.

The rule, for a standalone PodClique of the PodCliqueSet replica being updated:

* pods on an older template that are not Ready (pending, starting, crash-looping, unknown) serve nothing: they all
  go at once when the replica's lane lets this clique act;
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
from typing import Any

from grove_operator.desired.layout import is_terminating
from grove_operator.desired.scalein import is_active, is_ready
from grove_operator.lifecycle.facts import template_hash_of
from grove_operator.lifecycle.replacement import Member, Replacement, plan_replacement

__all__ = ["plan_pods"]

Obj = Mapping[str, Any]


def _member(pod: Obj, target_hash: str) -> Member[str]:
    meta = pod.get("metadata") or {}
    ready = is_ready(pod)
    return Member(
        key=str(meta.get("name") or ""),
        old=template_hash_of(pod) != target_hash,
        serving=ready,
        whole=ready,
        going=is_terminating(pod),
        order=(str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")),
    )


def plan_pods(pods: Iterable[Obj], target_hash: str, replicas: int, *, turn: bool) -> Replacement[str]:
    """The step for a PodClique whose pods are `pods` (terminating ones included), whose newest template hash is
    `target_hash` and which wants `replicas` pods; `turn`: the lane lets it take a Ready pod down. `at_once`: the
    old pods that are not Ready; `replace`: the Ready one to delete now."""
    members = [_member(p, target_hash) for p in pods if is_terminating(p) or is_active(p)]
    live = sum(1 for m in members if not m.going)
    shortfall = f"{live} of {replicas} pods exist" if live < replicas else None
    return plan_replacement(members, turn=turn, noun="pod", shortfall=shortfall)
