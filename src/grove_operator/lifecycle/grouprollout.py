"""Which replicas of a scaling group a rolling update recreates now: the pure half of `scalinggroup/lifecycle.py`.

A scaling-group replica is a multi-node gang (a leader and its workers, say) that only works on one template, so
it is never updated pod by pod: all its member PodCliques are deleted and recreated from the newest template. The
rule, for a scaling group of the PodCliqueSet replica being updated:

* old replicas that are not available (a member below its minAvailable Ready pods) serve nothing: all recreated
  at once;
* available ones are recreated one at a time, lowest index first, and only when nothing else of the group is down:
  no member PodClique being deleted, every other replica quiet (complete, every pod Ready), and the replica's lane
  lets the group act (`lane.lane_allows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grove_operator.lifecycle.lane import GroupReplica

__all__ = ["GroupPlan", "plan_group"]


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """One step of a scaling group's rolling update."""

    recreate_now: tuple[int, ...] = ()
    """Old replicas that are not available."""
    replace: int | None = None
    """The old available replica to recreate now."""
    old: int = 0
    """Replicas on an older template before this step (0: the scaling group is updated)."""
    waiting: str | None = None
    """Why the next available replica waits, when it does."""


def plan_group(replicas: Sequence[GroupReplica], *, turn: bool) -> GroupPlan:
    """The step for a scaling group whose replicas are `replicas`; `turn`: the lane lets it take one down."""
    old = [r for r in replicas if r.stale and not r.terminating]
    unavailable = tuple(r.index for r in old if not r.available)
    candidates = [r for r in old if r.available]
    if not candidates:
        return GroupPlan(unavailable, None, len(old))
    waiting: str | None = None
    if not turn:
        waiting = "an earlier PodClique or scaling group of the replica is still updating"
    elif unavailable or any(r.terminating for r in replicas):
        waiting = "replicas of the scaling group are still being recreated"
    chosen = min(candidates, key=lambda r: r.index)
    if waiting is None and not all(r.quiet for r in replicas if r is not chosen):
        waiting = "a replica of the scaling group is not fully Ready"
    if waiting is not None:
        return GroupPlan(unavailable, None, len(old), waiting)
    return GroupPlan((), chosen.index, len(old))
